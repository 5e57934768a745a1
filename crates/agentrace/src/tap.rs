//! `agentrace tap -- <command>`: a transparent stdio proxy for any
//! app-server client. Bytes pass through unchanged and in order, and a copy
//! goes to the recorder on its own thread through a bounded queue: when the
//! recorder falls behind, the copy is dropped and counted, never the traffic.

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};

use agentrace_core::model::{Direction, RunId, RunStatus, Source};
use agentrace_store::{validate_run_id, Home};
use anyhow::{bail, Context as _};
use clap::Args;

use crate::ingest::new_run_id;
use crate::live::LiveRun;

/// Chunks the recorder may lag behind before copies are dropped.
const QUEUE_CHUNKS: usize = 4096;
/// Read size of each pump.
const CHUNK_BYTES: usize = 64 * 1024;

/// Arguments of `agentrace tap`.
#[derive(Debug, Args)]
pub struct TapArgs {
    #[command(flatten)]
    secrets: crate::secrets::KeepSecretsArg,
    /// Id for the new run (default: `run-<ulid>`).
    #[arg(long)]
    run_id: Option<String>,
    /// Show the live view on stderr (off by default: the tap stays invisible).
    #[arg(long)]
    live: bool,
    /// When the session ends, send the run as OTLP spans to this base
    /// endpoint (no value: OTEL_EXPORTER_OTLP_ENDPOINT); a failed send is
    /// only a warning.
    #[arg(long, value_name = "ENDPOINT", num_args = 0..=1, default_missing_value = "")]
    otlp: Option<String>,
    /// The server command and its arguments (everything after `--`).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// What the pumps tell the recorder.
enum Note {
    /// A copy of some traffic.
    Copy(Copy),
    /// The session is over: record what came before and stop.
    End,
}

/// A copy of some traffic for the recorder.
struct Copy {
    direction: Direction,
    bytes: Vec<u8>,
    /// Bytes of this direction dropped just before this chunk.
    gap: u64,
}

/// Forwards `source` to `sink` and offers each chunk to the recorder.
fn pump(
    mut source: impl Read,
    mut sink: impl Write,
    direction: Direction,
    copies: SyncSender<Note>,
) {
    let mut buffer = vec![0u8; CHUNK_BYTES];
    let mut gap = 0u64;
    loop {
        let read = match source.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // Copied for the recorder before it is forwarded: the other side's
        // answer can then never be queued before what it answers (recorded
        // after forwarding, a reply echoed at once was sometimes recorded
        // first, and a response would precede its request in the log).
        let copy = Copy {
            direction,
            bytes: buffer[..read].to_vec(),
            gap,
        };
        match copies.try_send(Note::Copy(copy)) {
            Ok(()) => gap = 0,
            Err(TrySendError::Full(Note::Copy(copy))) => gap += copy.bytes.len() as u64,
            Err(TrySendError::Full(Note::End) | TrySendError::Disconnected(_)) => gap = 0,
        }
        if sink.write_all(&buffer[..read]).and_then(|()| sink.flush()).is_err() {
            break;
        }
    }
    if gap > 0 {
        // Make the loss visible even when nothing followed it.
        let _ = copies.send(Note::Copy(Copy {
            direction,
            bytes: Vec::new(),
            gap,
        }));
    }
}

fn record(mut live: LiveRun, notes: Receiver<Note>) -> anyhow::Result<LiveRun> {
    let mut skipping = [false, false];
    for note in notes {
        let copy = match note {
            Note::Copy(copy) => copy,
            Note::End => break,
        };
        let index = usize::from(copy.direction == Direction::FromServer);
        let mut bytes = &copy.bytes[..];
        if copy.gap > 0 {
            live.gap(copy.direction, copy.gap)?;
            skipping[index] = true;
        }
        if skipping[index] {
            // Resume at the next whole line: a line with a hole in it would
            // read as garbage, or worse, as a different frame.
            match bytes.iter().position(|byte| *byte == b'\n') {
                Some(end) => {
                    live.gap(copy.direction, end as u64 + 1)?;
                    bytes = &bytes[end + 1..];
                    skipping[index] = false;
                }
                None => {
                    live.gap(copy.direction, bytes.len() as u64)?;
                    continue;
                }
            }
        }
        live.bytes(copy.direction, bytes)?;
    }
    Ok(live)
}

/// Runs `agentrace tap`.
pub fn run(home: &Home, args: TapArgs) -> anyhow::Result<ExitCode> {
    args.secrets.apply();
    let id: RunId = match &args.run_id {
        Some(text) => validate_run_id(text)?,
        None => new_run_id(),
    };
    if home.exists(&id) {
        bail!("run {id} already exists; pick another --run-id");
    }
    let Some((program, rest)) = args.command.split_first() else {
        bail!("nothing to tap: give the server command after `--`");
    };
    let live = LiveRun::create(home, &id, Source::CodexTap, args.live)?;
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let child_stdin = child.stdin.take().context("the server has no stdin")?;
    let child_stdout = child.stdout.take().context("the server has no stdout")?;
    let (sender, receiver) = mpsc::sync_channel::<Note>(QUEUE_CHUNKS);
    let end = sender.clone();
    let recorder = std::thread::spawn(move || record(live, receiver));
    let to_server = sender.clone();
    // Not joined: a client that keeps its stdin open must not keep the tap alive
    // after the server exits. When the client closes stdin, the pump ends and
    // drops the server's stdin, which forwards the close.
    std::thread::spawn(move || pump(std::io::stdin().lock(), child_stdin, Direction::ToServer, to_server));
    let from_server = std::thread::spawn(move || {
        pump(child_stdout, std::io::stdout().lock(), Direction::FromServer, sender)
    });
    let _ = from_server.join();
    // The server closed its stdout: the client sees the end now, not after
    // the recorder caught up.
    close_stdout();
    let status = child.wait().context("cannot wait for the server")?;
    // The stdin pump may still hold a sender (a client that keeps stdin
    // open), so the recorder is told the session ended instead of waiting
    // for every sender to go.
    let _ = end.send(Note::End);
    let live = match recorder.join() {
        Ok(result) => result?,
        Err(_) => bail!("the recorder thread failed"),
    };
    let code = finish(live, &id, status)?;
    if let Some(endpoint) = &args.otlp {
        crate::export::export_after_run(home, &id, endpoint);
    }
    Ok(code)
}

/// Closes our stdout so the client reads end-of-file while recording ends.
fn close_stdout() {
    let _ = std::io::stdout().lock().flush();
    // Point fd 1 at /dev/null instead of closing it: later writes (there
    // should be none) then go nowhere instead of to a reused descriptor.
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
    }
}

fn finish(mut live: LiveRun, id: &RunId, status: std::process::ExitStatus) -> anyhow::Result<ExitCode> {
    if live.state().status() == RunStatus::Running && live.state().root_turn_running() {
        live.abort(
            format!("the tapped server exited ({status}) before the root turn ended"),
            false,
        )?;
    }
    live.finish(agentrace_core::model::SessionEndReason::TapClosed)?;
    let _ = id;
    let code = match status.code() {
        Some(code) => code,
        None => {
            use std::os::unix::process::ExitStatusExt as _;
            128 + status.signal().unwrap_or(0)
        }
    };
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
