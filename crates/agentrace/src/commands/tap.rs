//! `agentrace tap -- <command>`: a transparent stdio proxy for any
//! app-server client. Bytes pass through unchanged and in order, and a copy
//! goes to the recorder on its own thread through a queue that never makes
//! the traffic wait: copies are held in memory up to [`MEMORY_BYTES`], then
//! spilled to an unlinked file up to [`SPILL_BYTES`], and only past that (a
//! full disk, a recorder that truly cannot keep up) dropped and counted.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt as _;
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use agentrace_core::model::{Direction, RunId, RunStatus, Source};
use agentrace_store::{validate_run_id, Home};
use anyhow::{bail, Context as _};
use clap::Args;

use crate::run_ids::new_run_id;
use crate::recording::{Recording, Setup};

/// Bytes of copies held in memory before they spill to a file: a second of
/// a 60 MB/s flood, so a recorder that keeps up on average never spills.
pub const MEMORY_BYTES: usize = 64 * 1024 * 1024;
/// Bytes of copies spilled before further copies are dropped and counted.
pub const SPILL_BYTES: u64 = 8 * 1024 * 1024 * 1024;
/// Read size of each pump.
const CHUNK_BYTES: usize = 64 * 1024;
/// Spilled bytes read back in one go.
const READ_BACK_BYTES: u64 = 1024 * 1024;
/// How long the recorder idles before it lets the writer's timers run (the
/// record's 250 ms, the log's 1 s sync).
const IDLE_TICK: Duration = Duration::from_millis(100);

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

/// A copy of some traffic for the recorder.
struct Copy {
    direction: Direction,
    bytes: Vec<u8>,
    /// Bytes of this direction dropped just before this chunk.
    gap: u64,
}

/// What [`Queue::offer`] did.
struct Offered {
    /// The copy was queued (else dropped, to be counted).
    kept: bool,
    /// The queue was empty: the recorder may be asleep.
    wake: bool,
}

/// A copy waiting in the spill file.
struct Spilled {
    direction: Direction,
    offset: u64,
    len: u64,
    gap: u64,
}

/// The copies between the pumps and the recorder, oldest first: those in
/// memory, then those spilled (once one copy spills, every later one does
/// until the recorder has read the file back, so order holds).
#[derive(Default)]
struct Queued {
    memory: VecDeque<Copy>,
    memory_bytes: usize,
    /// Created at the first spill, unlinked at once.
    spill: Option<Arc<File>>,
    spilled: VecDeque<Spilled>,
    /// Where the next spilled copy goes.
    spill_end: u64,
    /// Spilled bytes not yet read back.
    spill_bytes: u64,
    /// The most ever waiting, for `AGENTRACE_TAP_STATS`.
    peak_bytes: u64,
    /// The session is over: later copies are refused (not counted).
    ended: bool,
}

/// The queue itself: the pumps offer, the recorder takes.
struct Queue {
    queued: Mutex<Queued>,
    ready: Condvar,
    /// The home whose store makes the spill file ([`Home::create_spill`]).
    home: Home,
    /// [`MEMORY_BYTES`] and [`SPILL_BYTES`] (smaller in tests).
    memory_limit: usize,
    spill_limit: u64,
}

/// What the recorder took from the queue.
enum Taken {
    /// Copies, oldest first (none: it idled [`IDLE_TICK`]).
    Copies(Vec<Copy>),
    /// The session ended and every copy before the end was taken.
    End,
}

impl Queue {
    fn new(home: Home) -> Self {
        Self::with_limits(home, MEMORY_BYTES, SPILL_BYTES)
    }

    fn with_limits(home: Home, memory_limit: usize, spill_limit: u64) -> Self {
        Self {
            queued: Mutex::new(Queued::default()),
            ready: Condvar::new(),
            home,
            memory_limit,
            spill_limit,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queued> {
        // A panicked pump leaves the queue as it was: keep using it.
        self.queued.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Offers a copy of `bytes`; `kept` is false when it was dropped
    /// (memory and spill full, or the spill file unwritable). Never waits on
    /// the recorder: the lock is only held to push, or to write to the page
    /// cache. The recorder is woken by [`Queue::wake`] when `wake` says so,
    /// after the chunk was forwarded: woken here, it would compete for the
    /// CPU with the forwarding it must never slow.
    fn offer(&self, direction: Direction, bytes: &[u8], gap: u64) -> Offered {
        let copy = (bytes.len() <= self.memory_limit).then(|| bytes.to_vec());
        let mut queued = self.lock();
        if queued.ended {
            return Offered { kept: true, wake: false };
        }
        let was_empty = queued.memory.is_empty() && queued.spilled.is_empty();
        let in_memory = queued.spilled.is_empty()
            && (bytes.is_empty() || queued.memory_bytes + bytes.len() <= self.memory_limit);
        let kept = match copy {
            Some(copy) if in_memory => {
                queued.memory_bytes += copy.len();
                queued.memory.push_back(Copy {
                    direction,
                    bytes: copy,
                    gap,
                });
                true
            }
            _ => self.spill(&mut queued, direction, bytes, gap),
        };
        if kept {
            let waiting = queued.memory_bytes as u64 + queued.spill_bytes;
            queued.peak_bytes = queued.peak_bytes.max(waiting);
        }
        Offered {
            kept,
            wake: kept && was_empty,
        }
    }

    /// Wakes the recorder (see [`Queue::offer`]).
    fn wake(&self) {
        self.ready.notify_one();
    }

    fn spill(&self, queued: &mut Queued, direction: Direction, bytes: &[u8], gap: u64) -> bool {
        let len = bytes.len() as u64;
        if queued.spill_bytes + len > self.spill_limit {
            return false;
        }
        if queued.spill.is_none() {
            match self.home.create_spill() {
                Ok(file) => queued.spill = Some(Arc::new(file)),
                Err(_) => return false,
            }
        }
        let Some(file) = &queued.spill else {
            return false;
        };
        let offset = queued.spill_end;
        if file.write_all_at(bytes, offset).is_err() {
            // A full disk: the copy is dropped and counted, the traffic goes on.
            return false;
        }
        queued.spill_end += len;
        queued.spill_bytes += len;
        queued.spilled.push_back(Spilled {
            direction,
            offset,
            len,
            gap,
        });
        true
    }

    /// Ends the session: copies offered from now on are refused.
    fn end(&self) {
        self.lock().ended = true;
        self.ready.notify_one();
    }

    /// Takes every copy in memory, or else up to [`READ_BACK_BYTES`] of
    /// spilled ones, waiting up to [`IDLE_TICK`] for some.
    fn take(&self) -> std::io::Result<Taken> {
        let mut queued = self.lock();
        if queued.memory.is_empty() && queued.spilled.is_empty() {
            if queued.ended {
                return Ok(Taken::End);
            }
            queued = self
                .ready
                .wait_timeout(queued, IDLE_TICK)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
        if !queued.memory.is_empty() {
            queued.memory_bytes = 0;
            return Ok(Taken::Copies(queued.memory.drain(..).collect()));
        }
        let mut notes = Vec::new();
        let mut len = 0;
        while let Some(note) = queued.spilled.front() {
            if !notes.is_empty() && len + note.len > READ_BACK_BYTES {
                break;
            }
            len += note.len;
            notes.extend(queued.spilled.pop_front());
        }
        let Some(file) = queued.spill.clone() else {
            return Ok(Taken::Copies(Vec::new()));
        };
        let Some(first) = notes.first() else {
            return Ok(Taken::Copies(Vec::new()));
        };
        let start = first.offset;
        drop(queued);
        // Read outside the lock: the pumps only ever write past these bytes.
        let mut bytes = vec![0; len as usize];
        file.read_exact_at(&mut bytes, start)?;
        let mut queued = self.lock();
        queued.spill_bytes -= len;
        if queued.spilled.is_empty() {
            // Read back to the end: the file starts over (and gives its
            // blocks back).
            queued.spill_end = 0;
            let _ = file.set_len(0);
        }
        drop(queued);
        let mut copies = Vec::with_capacity(notes.len());
        let mut rest = &bytes[..];
        for note in notes {
            let (this, after) = rest.split_at(note.len as usize);
            rest = after;
            copies.push(Copy {
                direction: note.direction,
                bytes: this.to_vec(),
                gap: note.gap,
            });
        }
        Ok(Taken::Copies(copies))
    }
}

/// Forwards `source` to `sink` and offers each chunk to the recorder.
fn pump(mut source: impl Read, mut sink: impl Write, direction: Direction, queue: &Queue) {
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
        let offered = queue.offer(direction, &buffer[..read], gap);
        if offered.kept {
            gap = 0;
        } else {
            gap += read as u64;
        }
        let forwarded = sink.write_all(&buffer[..read]).and_then(|()| sink.flush());
        if offered.wake {
            queue.wake();
        }
        if forwarded.is_err() {
            break;
        }
    }
    if gap > 0 {
        // Make the loss visible even when nothing followed it (an empty
        // copy is always kept).
        queue.offer(direction, &[], gap);
        queue.wake();
    }
}

fn record(mut live: Recording, queue: &Queue) -> anyhow::Result<Recording> {
    let mut skipping = [false, false];
    loop {
        let copies = match queue.take().context("cannot read back the tap's spill file")? {
            Taken::Copies(copies) => copies,
            Taken::End => break,
        };
        for copy in copies {
            record_copy(&mut live, &mut skipping, &copy)?;
            live.tick()?;
        }
        // Everything queued was taken: write it as one batch.
        live.settle()?;
    }
    if std::env::var_os("AGENTRACE_TAP_STATS").is_some() {
        let peak = queue.lock().peak_bytes;
        // A benchmark's probe (scripts/bench-record), on stderr like the
        // live view.
        let _ = writeln!(std::io::stderr(), "agentrace tap: peak queue {peak} bytes");
    }
    Ok(live)
}

fn record_copy(live: &mut Recording, skipping: &mut [bool; 2], copy: &Copy) -> anyhow::Result<()> {
    let index = usize::from(copy.direction == Direction::FromServer);
    let mut bytes = &copy.bytes[..];
    if copy.gap > 0 {
        live.gap(copy.direction, copy.gap)?;
        skipping[index] = true;
    }
    if skipping[index] {
        // Resume at the next whole line: a line with a hole in it would
        // read as garbage, or worse, as a different frame.
        match memchr::memchr(b'\n', bytes) {
            Some(end) => {
                live.gap(copy.direction, end as u64 + 1)?;
                bytes = &bytes[end + 1..];
                skipping[index] = false;
            }
            None => {
                live.gap(copy.direction, bytes.len() as u64)?;
                return Ok(());
            }
        }
    }
    live.queue_bytes(copy.direction, bytes)
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
    let setup = Setup::live(agentrace_core::recorder::Format::CodexAppServer, Source::CodexTap, args.live);
    // The server is started before the run is made, as `run codex` and
    // `run claude` do: a command that cannot start leaves no run (it left
    // one `running` for ever, with no session end to say otherwise).
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let live = match Recording::create(home, &id, &setup, crate::clock::now(), None) {
        Ok(live) => live,
        Err(error) => {
            // Nothing would record what it says: stop it rather than leave
            // it reading a stdin that no one forwards.
            let _ = child.kill();
            let _ = child.wait();
            return Err(error);
        }
    };
    let child_stdin = child.stdin.take().context("the server has no stdin")?;
    let child_stdout = child.stdout.take().context("the server has no stdout")?;
    let queue = Arc::new(Queue::new(home.clone()));
    let recorder = std::thread::spawn({
        let queue = Arc::clone(&queue);
        move || record(live, &queue)
    });
    // Not joined: a client that keeps its stdin open must not keep the tap alive
    // after the server exits. When the client closes stdin, the pump ends and
    // drops the server's stdin, which forwards the close.
    std::thread::spawn({
        let queue = Arc::clone(&queue);
        move || pump(std::io::stdin().lock(), child_stdin, Direction::ToServer, &queue)
    });
    let from_server = std::thread::spawn({
        let queue = Arc::clone(&queue);
        move || pump(child_stdout, std::io::stdout().lock(), Direction::FromServer, &queue)
    });
    let _ = from_server.join();
    // The server closed its stdout: the client sees the end now, not after
    // the recorder caught up.
    close_stdout();
    let status = child.wait().context("cannot wait for the server")?;
    // The stdin pump may still hold a sender (a client that keeps stdin
    // open), so the recorder is told the session ended instead of waiting
    // for every sender to go.
    queue.end();
    let live = match recorder.join() {
        Ok(result) => result?,
        Err(_) => bail!("the recorder thread failed"),
    };
    let code = finish(live, &id, status)?;
    if let Some(endpoint) = &args.otlp {
        crate::commands::export::export_after_run(home, &id, endpoint);
    }
    Ok(code)
}

/// Closes our stdout so the client reads end-of-file while recording ends.
#[expect(clippy::disallowed_methods, reason = "opens /dev/null, no file of the home")]
fn close_stdout() {
    let _ = std::io::stdout().lock().flush();
    // Point fd 1 at /dev/null instead of closing it: later writes (there
    // should be none) then go nowhere instead of to a reused descriptor.
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
    }
}

fn finish(mut live: Recording, id: &RunId, status: std::process::ExitStatus) -> anyhow::Result<ExitCode> {
    if live.state().status() == RunStatus::Running && live.state().root_turn_running() {
        live.abort(
            format!("the tapped server exited ({status}) before the root turn ended"),
            false,
        )?;
    }
    live.finish(Some(agentrace_core::model::SessionEndReason::TapClosed))?;
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

#[cfg(test)]
mod tests {
    use agentrace_store::Home;

    use super::{Direction, Queue, Taken};

    /// What the recorder takes next, as (direction, text) pairs.
    fn take(queue: &Queue) -> Vec<(Direction, String)> {
        match queue.take().unwrap_or_else(|e| panic!("{e}")) {
            Taken::Copies(copies) => copies
                .into_iter()
                .map(|copy| (copy.direction, String::from_utf8_lossy(&copy.bytes).into_owned()))
                .collect(),
            Taken::End => panic!("the queue ended"),
        }
    }

    #[test]
    fn copies_past_the_memory_limit_spill_to_a_file_and_come_back_in_order() {
        let directory = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let queue = Queue::with_limits(Home::at(directory.path()), 8, 1024);
        let offers = [
            (Direction::FromServer, "aaaa"),
            (Direction::FromServer, "bbbbbbbb"),
            (Direction::ToServer, "cc"),
        ];
        let kept: Vec<bool> = offers
            .iter()
            .map(|(direction, text)| queue.offer(*direction, text.as_bytes(), 0).kept)
            .collect();

        let from_memory = take(&queue);
        let from_the_file = take(&queue);
        let after = queue.offer(Direction::FromServer, b"dd", 0).kept;
        let from_memory_again = take(&queue);

        assert_eq!(kept, vec![true, true, true]);
        assert_eq!(from_memory, vec![(Direction::FromServer, "aaaa".to_owned())]);
        assert_eq!(
            from_the_file,
            vec![
                (Direction::FromServer, "bbbbbbbb".to_owned()),
                (Direction::ToServer, "cc".to_owned()),
            ]
        );
        assert!(after);
        assert_eq!(from_memory_again, vec![(Direction::FromServer, "dd".to_owned())]);
    }

    #[test]
    fn a_copy_past_the_spill_limit_is_dropped_and_the_end_is_taken_last() {
        let directory = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let queue = Queue::with_limits(Home::at(directory.path()), 4, 4);
        let kept: Vec<bool> = ["aaaa", "bbbb", "cc"]
            .iter()
            .map(|text| queue.offer(Direction::FromServer, text.as_bytes(), 0).kept)
            .collect();
        queue.end();

        let first = take(&queue);
        let second = take(&queue);
        let last = queue.take().unwrap_or_else(|e| panic!("{e}"));

        assert_eq!(kept, vec![true, true, false]);
        assert_eq!(first, vec![(Direction::FromServer, "aaaa".to_owned())]);
        assert_eq!(second, vec![(Direction::FromServer, "bbbb".to_owned())]);
        assert!(matches!(last, Taken::End));
    }
}
