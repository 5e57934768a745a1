//! `agentrace run codex --exec`: runs the real `codex exec --json` (the
//! headless Codex of CI jobs), records its stdout live, and once it exits
//! joins the rollouts of that run's session from the `CODEX_HOME` codex
//! used: the stream is the root's alone, so every helper, its tree, tokens
//! and final message come from those files (see [`agentrace_core::exec`]).
//! `ingest --format codex-exec` joins the same files to a saved stream.
//! Ctrl-C interrupts codex (SIGINT to its process group), then waits a
//! bounded time.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use agentrace_core::model::{Direction, RunStatus, SessionEndReason, Source};
use agentrace_core::recorder::Format;
use agentrace_store::{validate_run_id, Home};
use anyhow::{bail, Context as _};
use std::os::unix::process::CommandExt as _;

use crate::agent_process::{signal_group, spawn_reader, stop, Message};
use crate::sources::rollouts::RolloutHead;
use crate::recording::{Recording, Setup};
use crate::output::Out;
use crate::run_ids::new_run_id;

/// How long codex gets to end after Ctrl-C.
const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

/// What `run codex --exec` was asked to do.
pub struct ExecRequest<'a> {
    /// The codex CLI.
    pub codex: PathBuf,
    /// The folder codex works in.
    pub cwd: PathBuf,
    /// `CODEX_HOME` for codex and for the rollouts (default: codex's own).
    pub codex_home: Option<PathBuf>,
    /// `--model`.
    pub model: Option<&'a str>,
    /// `--sandbox`.
    pub sandbox: Option<&'a str>,
    /// `-c KEY=VALUE` overrides.
    pub config: &'a [String],
    /// Pass `--skip-git-repo-check`.
    pub skip_git_repo_check: bool,
    /// The prompt.
    pub prompt: String,
    /// The run id, when given.
    pub run_id: Option<&'a str>,
    /// No live view.
    pub quiet: bool,
    /// `--otlp`.
    pub otlp: Option<&'a str>,
}

/// The Codex home codex uses: the one given, else `CODEX_HOME`, else
/// `~/.codex`.
pub fn codex_home_of(given: Option<&Path>) -> Option<PathBuf> {
    given.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("CODEX_HOME")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|value| !value.is_empty())
                    .map(|home| PathBuf::from(home).join(".codex"))
            })
    })
}

/// The rollouts of the session whose root is `root` (the root's first,
/// then its children's, parents first); none when the home holds no
/// rollout of it.
pub fn session_rollouts(codex_home: &Path, root: &str) -> anyhow::Result<Vec<RolloutHead>> {
    for session in crate::sources::codex_sessions::codex_sessions(codex_home)? {
        let (session_root, files) = session?;
        if session_root == root {
            return Ok(files);
        }
    }
    Ok(Vec::new())
}

/// Runs `agentrace run codex --exec`.
pub fn run(home: &Home, request: ExecRequest<'_>, out: &mut Out) -> anyhow::Result<ExitCode> {
    let id = match request.run_id {
        Some(text) => validate_run_id(text)?,
        None => new_run_id(),
    };
    if home.exists(&id) {
        bail!("run {id} already exists; pick another --run-id");
    }
    let mut command = Command::new(&request.codex);
    command.arg("exec").arg("--json");
    if request.skip_git_repo_check {
        command.arg("--skip-git-repo-check");
    }
    if let Some(model) = request.model {
        command.arg("--model").arg(model);
    }
    if let Some(sandbox) = request.sandbox {
        command.arg("--sandbox").arg(sandbox);
    }
    for pair in request.config {
        command.arg("-c").arg(pair);
    }
    if let Some(dir) = &request.codex_home {
        command.env("CODEX_HOME", dir);
    }
    command
        .arg("--")
        .arg(&request.prompt)
        .current_dir(&request.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // codex exec prints its progress there; it is the user's to read.
        .stderr(Stdio::inherit())
        // Its own process group: Ctrl-C reaches agentrace, which passes it
        // on and keeps recording until codex has ended.
        .process_group(0);
    let mut child = command.spawn().with_context(|| {
        format!(
            "cannot start {} exec\nhint: install it with `npm install -g @openai/codex`, or pass --codex PATH",
            request.codex.display()
        )
    })?;
    let (sender, receiver) = mpsc::channel();
    let stdout = child.stdout.take().context("codex exec has no stdout")?;
    spawn_reader(stdout, sender.clone());
    let interrupt_sender = sender.clone();
    let _ = ctrlc::set_handler(move || {
        let _ = interrupt_sender.send(Message::Interrupt);
    });
    drop(sender);
    let setup = Setup::live(Format::CodexExec, Source::CodexExec, !request.quiet);
    let mut live = Recording::create(home, &id, &setup, crate::clock::now(), None)?;
    if !request.quiet {
        eprintln!("recording {id} (codex exec, pid {})", child.id());
    }
    let mut interrupted_at: Option<Instant> = None;
    loop {
        let timeout = Duration::from_millis(250);
        match receiver.recv_timeout(timeout) {
            Ok(Message::Stdout(chunk)) => live.bytes(Direction::FromServer, &chunk)?,
            Ok(Message::StdoutClosed) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(Message::Interrupt) => {
                if interrupted_at.is_some() {
                    break;
                }
                eprintln!("interrupting codex exec (Ctrl-C again to stop at once)");
                signal_group(&child, nix::sys::signal::Signal::SIGINT);
                interrupted_at = Some(Instant::now());
            }
            Err(RecvTimeoutError::Timeout) => {
                live.settle()?;
                if interrupted_at.is_some_and(|at| at.elapsed() >= INTERRUPT_GRACE) {
                    break;
                }
            }
        }
    }
    let exit = stop(&mut child, Duration::from_secs(3));
    // Codex has ended, its rollouts are whole: join them.
    let root = live
        .state()
        .summary()
        .root_thread_id
        .map(|thread| thread.to_string());
    let codex_home = codex_home_of(request.codex_home.as_deref());
    match (&root, &codex_home) {
        (Some(root), Some(dir)) => {
            let files = session_rollouts(dir, root)?;
            if files.is_empty() {
                eprintln!(
                    "warning: no rollout of thread {root} under {}: helpers and the root's tokens are not known\nhint: pass --codex-home DIR, the CODEX_HOME codex used",
                    dir.display()
                );
            }
            live.join_rollouts(&files)?;
        }
        (Some(_), None) => {
            eprintln!("warning: no Codex home (neither --codex-home, CODEX_HOME nor HOME): helpers are not known");
        }
        (None, _) => {}
    }
    if live.state().status() == RunStatus::Running {
        let status = exit
            .map(|status| status.to_string())
            .unwrap_or_else(|| "unknown status".to_owned());
        if interrupted_at.is_some() {
            live.abort("interrupted by the user".to_owned(), true)?;
        } else {
            live.abort(
                format!("codex exec exited ({status}) before its turn ended"),
                false,
            )?;
        }
    }
    let summary = live.finish(Some(SessionEndReason::Exit))?.summary;
    if let Some(endpoint) = request.otlp {
        crate::commands::export::export_after_run(home, &id, endpoint);
    }
    crate::live::tell_end(out, &id, &summary)
}
