//! `agentrace run claude`: starts the real `claude -p --output-format
//! stream-json --verbose`, records its stdout line by line as it arrives
//! (with the live view on stderr), drains the hook inputs its session sent,
//! prints the root's final answer, and exits like `run codex`: 0 done, 1
//! failed, 130 interrupted. Ctrl-C is passed to the CLI, which ends its
//! query and prints an `error_during_execution` result.

use crate::agent_process::{signal_group, spawn_reader, stop, Message};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use agentrace_core::lines::LineAssembler;
use agentrace_core::model::RunStatus;
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_store::{validate_run_id, Home, RunLock};
use anyhow::{bail, Context as _};
use clap::Args;

use crate::recording::{Clock, Recording, Setup};
use crate::commands::hook::{drain_spool, RUN_ID_ENV};
use crate::clock::now;
use crate::run_ids::new_run_id;
use crate::output::Out;

/// How long the CLI gets to end its query after Ctrl-C.
const INTERRUPT_GRACE: Duration = Duration::from_secs(10);
/// How long the CLI gets to exit after its stdout closed.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// How long quiet output waits before the recording keeps its cadence
/// (writes what is queued, the record when due): well inside the writer's
/// 250 ms record window.
const IDLE_TICK: Duration = Duration::from_millis(50);

/// Arguments of `agentrace run claude`.
#[derive(Debug, Args)]
pub struct RunClaudeArgs {
    #[command(flatten)]
    secrets: crate::secrets::KeepSecretsArg,
    /// The claude CLI to start (default: `AGENTRACE_CLAUDE`, else `claude` on PATH).
    #[arg(long, env = "AGENTRACE_CLAUDE")]
    claude: Option<PathBuf>,
    /// Model (`claude --model`).
    #[arg(long)]
    model: Option<String>,
    /// Working directory of the session (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Permission mode (`claude --permission-mode`, e.g. `bypassPermissions`).
    #[arg(long)]
    permission_mode: Option<String>,
    /// One more argument for the claude CLI (repeatable), e.g.
    /// `--claude-arg=--forward-subagent-text`.
    #[arg(long = "claude-arg", value_name = "ARG", allow_hyphen_values = true)]
    claude_args: Vec<String>,
    /// Id for the new run (default: `run-<ulid>`).
    #[arg(long)]
    run_id: Option<String>,
    /// No live view on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// The prompt (everything after `--`).
    #[arg(last = true, required = true, value_name = "PROMPT")]
    prompt: Vec<String>,
}

/// Runs `agentrace run claude`.
pub fn run(home: &Home, args: RunClaudeArgs, out: &mut Out) -> anyhow::Result<ExitCode> {
    args.secrets.apply();
    let id = match &args.run_id {
        Some(text) => validate_run_id(text)?,
        None => new_run_id(),
    };
    if home.exists(&id) {
        bail!("run {id} already exists; pick another --run-id");
    }
    let lock = RunLock::acquire(home, &id, Duration::ZERO)?
        .with_context(|| format!("run {id} is being recorded by another agentrace"))?;
    let claude = args
        .claude
        .clone()
        .unwrap_or_else(|| PathBuf::from("claude"));
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let mut command = Command::new(&claude);
    command.arg("-p").arg(args.prompt.join(" ")).args([
        "--output-format",
        "stream-json",
        "--verbose",
    ]);
    if let Some(model) = &args.model {
        command.arg("--model").arg(model);
    }
    if let Some(mode) = &args.permission_mode {
        command.arg("--permission-mode").arg(mode);
    }
    command
        .args(&args.claude_args)
        .current_dir(&cwd)
        // Hooks the user installed (`agentrace hook`) land in this run.
        .env(RUN_ID_ENV, id.as_str())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // Its own process group: Ctrl-C reaches agentrace, which passes it
        // on and keeps recording until the CLI has printed its result.
        .process_group(0);
    let mut child = command.spawn().with_context(|| {
        format!(
            "cannot start {}\nhint: install Claude Code (npm package @anthropic-ai/claude-code), or pass --claude PATH",
            claude.display()
        )
    })?;
    let (sender, receiver) = mpsc::channel();
    let stdout = child.stdout.take().context("claude has no stdout")?;
    spawn_reader(stdout, sender.clone());
    // A second handler cannot be installed in one process; one run per process.
    let _ = ctrlc::set_handler(move || {
        let _ = sender.send(Message::Interrupt);
    });

    let mut setup = Setup::new(Format::ClaudeStream).clock(Clock::Wall);
    if !args.quiet {
        setup = setup.view();
    }
    let mut recording = Recording::open(home, &id, &setup, now)?;
    if !args.quiet {
        eprintln!("recording {id} (claude, pid {})", child.id());
    }
    let mut assembler = LineAssembler::default();
    let interrupted = pump(&mut recording, &mut assembler, &receiver, &child)?;
    if let Some(line) = assembler.finish() {
        recording.line(&SourcePart::Main, &line)?;
    }
    let exit = stop(&mut child, EXIT_GRACE);
    drain_spool(home, &id, &mut recording)?;
    if recording.recorder().state().status() == RunStatus::Running {
        let status = exit.map_or_else(|| "no exit status".to_owned(), |status| status.to_string());
        let error = if interrupted {
            format!("interrupted; claude ended ({status}) before its root turn did")
        } else {
            format!("claude exited ({status}) before its root turn ended")
        };
        recording.abort(error, interrupted)?;
    }
    let reason = if interrupted {
        agentrace_core::model::SessionEndReason::Closed
    } else {
        agentrace_core::model::SessionEndReason::Exit
    };
    let summary = recording.finish(Some(reason))?.summary;
    drop(lock);
    crate::live::tell_end(out, &id, &summary)
}

/// Records stdout until it closes; true when the user interrupted.
fn pump(
    recording: &mut Recording,
    assembler: &mut LineAssembler,
    receiver: &Receiver<Message>,
    child: &Child,
) -> anyhow::Result<bool> {
    let mut interrupted_at: Option<Instant> = None;
    loop {
        let message = match interrupted_at {
            Some(at) => {
                let left = INTERRUPT_GRACE.saturating_sub(at.elapsed());
                match receiver.recv_timeout(left) {
                    Ok(message) => message,
                    Err(RecvTimeoutError::Timeout) => {
                        // It did not end in time: end it.
                        signal_group(child, nix::sys::signal::Signal::SIGKILL);
                        return Ok(true);
                    }
                    Err(RecvTimeoutError::Disconnected) => return Ok(true),
                }
            }
            // Quiet output (a tool running, the model thinking) still keeps
            // the writer's cadence: what was queued is written, the record
            // brought up to date.
            None => match receiver.recv_timeout(IDLE_TICK) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    recording.settle()?;
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(false),
            },
        };
        match message {
            Message::Stdout(chunk) => {
                for line in assembler.push(&chunk) {
                    recording.line(&SourcePart::Main, &line)?;
                }
            }
            Message::StdoutClosed => return Ok(interrupted_at.is_some()),
            Message::Interrupt => {
                if interrupted_at.is_none() {
                    interrupted_at = Some(Instant::now());
                    signal_group(child, nix::sys::signal::Signal::SIGINT);
                } else {
                    // A second Ctrl-C: stop waiting.
                    signal_group(child, nix::sys::signal::Signal::SIGKILL);
                    return Ok(true);
                }
            }
        }
    }
}
