//! `agentrace run codex`: drives the real `codex app-server` over stdio
//! (initialize, thread/start, turn/start), records every line of both
//! directions as it arrives, answers approvals by policy, and ends when the
//! root's turn ends. Ctrl-C interrupts the root turn, then ends the server.

use crate::agent_process::{spawn_reader, stop, Message};
use std::collections::VecDeque;
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{ChildStdin, Command, ExitCode, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentrace_core::model::{Direction, RunStatus, Source};
use agentrace_store::{validate_run_id, Home};
use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::run_ids::new_run_id;
use crate::recording::{Recording, Setup};
use crate::output::Out;

/// How long the server gets to end the root turn after `turn/interrupt`.
const INTERRUPT_GRACE: Duration = Duration::from_secs(10);
/// How long the server gets to exit after its stdin closes.
const EXIT_GRACE: Duration = Duration::from_secs(3);
/// Lines of the server's stderr kept for error reports.
const STDERR_TAIL: usize = 20;

/// Arguments of `agentrace run codex`.
#[derive(Debug, Args)]
pub struct RunCodexArgs {
    #[command(flatten)]
    secrets: crate::secrets::KeepSecretsArg,
    /// The codex CLI to start (default: `AGENTRACE_CODEX`, else `codex` on PATH).
    #[arg(long, env = "AGENTRACE_CODEX")]
    codex: Option<PathBuf>,
    /// Model for the thread (`thread/start` `model`).
    #[arg(long)]
    model: Option<String>,
    /// Codex configuration override, passed to `codex app-server -c` (repeatable).
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    config: Vec<String>,
    /// How to answer the server's approval requests (each answer is recorded).
    #[arg(long, value_enum, default_value_t = Approval::Deny)]
    approval: Approval,
    /// When Codex asks for approval (`thread/start` `approvalPolicy`, e.g.
    /// `untrusted`, `on-request`, `never`; default: your Codex config).
    #[arg(long, value_name = "POLICY")]
    approval_policy: Option<String>,
    /// Sandbox of the thread (`thread/start` `sandbox`, e.g. `read-only`,
    /// `workspace-write`, `danger-full-access`; default: your Codex config).
    #[arg(long, value_name = "MODE")]
    sandbox: Option<String>,
    /// Working directory of the thread (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Id for the new run (default: `run-<ulid>`).
    #[arg(long)]
    run_id: Option<String>,
    /// No live view on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// When the run ends, send it as OTLP spans to this base endpoint (no
    /// value: OTEL_EXPORTER_OTLP_ENDPOINT); a failed send is only a warning.
    #[arg(long, value_name = "ENDPOINT", num_args = 0..=1, default_missing_value = "")]
    otlp: Option<String>,
    /// Run `codex exec --json` (headless, as in CI) instead of driving
    /// `codex app-server`: its stdout is recorded live, then the rollouts
    /// of its session are joined in, so every helper is known. Nothing
    /// answers approvals then: `--approval` and `--approval-policy` are
    /// refused with it.
    #[arg(long, conflicts_with_all = ["approval_policy", "approval"])]
    exec: bool,
    /// With `--exec`: the `CODEX_HOME` codex runs with and its rollouts are
    /// read from (default: CODEX_HOME, else ~/.codex).
    #[arg(long, value_name = "DIR", requires = "exec")]
    codex_home: Option<PathBuf>,
    /// With `--exec`: pass `--skip-git-repo-check` (run outside a Git
    /// repository).
    #[arg(long, requires = "exec")]
    skip_git_repo_check: bool,
    /// The prompt (everything after `--`).
    #[arg(last = true, required = true, value_name = "PROMPT")]
    prompt: Vec<String>,
}

/// Approval policy of a driven run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Approval {
    /// Decline every approval request.
    Deny,
    /// Accept every approval request.
    Accept,
}

/// The request ids agentrace uses with the server.
const INITIALIZE: i64 = 1;
const THREAD_START: i64 = 2;
const TURN_START: i64 = 3;
const TURN_INTERRUPT: i64 = 4;

struct Driver {
    live: Recording,
    stdin: Option<ChildStdin>,
    approval: Approval,
    pending: Vec<u8>,
    thread_id: Option<String>,
    turn_id: Option<String>,
    failure: Option<String>,
}

impl Driver {
    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.live.bytes(Direction::ToServer, &line)?;
        if let Some(stdin) = &mut self.stdin {
            // A server that already closed its stdin shows up as its exit.
            if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
                self.stdin = None;
            }
        }
        Ok(())
    }

    /// Records server output and reacts to whole lines.
    fn stdout(&mut self, chunk: &[u8], params: &TurnRequest) -> anyhow::Result<()> {
        self.live.bytes(Direction::FromServer, chunk)?;
        self.pending.extend_from_slice(chunk);
        while let Some(end) = self.pending.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            if let Ok(message) = serde_json::from_slice::<Value>(&line) {
                self.react(&message, params)?;
            }
        }
        Ok(())
    }

    fn react(&mut self, message: &Value, params: &TurnRequest) -> anyhow::Result<()> {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            if !id.is_null() {
                let answer = match method {
                    "item/commandExecution/requestApproval"
                    | "item/fileChange/requestApproval"
                    | "execCommandApproval"
                    | "applyPatchApproval" => {
                        let decision = match (self.approval, method) {
                            (Approval::Accept, "execCommandApproval" | "applyPatchApproval") => {
                                "approved"
                            }
                            (Approval::Deny, "execCommandApproval" | "applyPatchApproval") => {
                                "denied"
                            }
                            (Approval::Accept, _) => "accept",
                            (Approval::Deny, _) => "decline",
                        };
                        json!({"id": id, "result": {"decision": decision}})
                    }
                    other => json!({"id": id, "error": {"code": -32601,
                        "message": format!("agentrace run codex does not answer {other}")}}),
                };
                self.send(&answer)?;
            }
            return Ok(());
        }
        let Some(number) = id.as_i64() else {
            return Ok(());
        };
        if let Some(error) = message.get("error") {
            let text = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            if number != TURN_INTERRUPT {
                self.failure = Some(format!("codex app-server refused request {number}: {text}"));
            }
            return Ok(());
        }
        let result = message.get("result").cloned().unwrap_or(Value::Null);
        match number {
            INITIALIZE => {
                self.send(&json!({"method": "initialized"}))?;
                let mut start = json!({"cwd": params.cwd});
                if let Some(model) = &params.model {
                    start["model"] = json!(model);
                }
                if let Some(policy) = &params.approval_policy {
                    start["approvalPolicy"] = json!(policy);
                }
                if let Some(sandbox) = &params.sandbox {
                    start["sandbox"] = json!(sandbox);
                }
                self.send(&json!({"id": THREAD_START, "method": "thread/start", "params": start}))?;
            }
            THREAD_START => {
                let thread = result
                    .pointer("/thread/id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let Some(thread) = thread else {
                    self.failure = Some("thread/start answered without a thread id".to_owned());
                    return Ok(());
                };
                self.thread_id = Some(thread.clone());
                self.send(
                    &json!({"id": TURN_START, "method": "turn/start", "params": {
                        "threadId": thread,
                        "input": [{"type": "text", "text": params.prompt}],
                    }}),
                )?;
            }
            TURN_START => {
                self.turn_id = result
                    .pointer("/turn/id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            _ => {}
        }
        Ok(())
    }

    fn interrupt(&mut self) -> anyhow::Result<bool> {
        match (&self.thread_id, &self.turn_id) {
            (Some(thread), Some(turn)) => {
                let request = json!({"id": TURN_INTERRUPT, "method": "turn/interrupt",
                    "params": {"threadId": thread, "turnId": turn}});
                self.send(&request)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

struct TurnRequest {
    prompt: String,
    cwd: String,
    model: Option<String>,
    approval_policy: Option<String>,
    sandbox: Option<String>,
}

fn spawn_stderr_tail(
    mut stream: impl std::io::Read + Send + 'static,
) -> Arc<Mutex<VecDeque<String>>> {
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let keep = Arc::clone(&tail);
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let mut buffer = [0u8; 8192];
        while let Ok(read) = stream.read(&mut buffer) {
            if read == 0 {
                break;
            }
            text.extend_from_slice(&buffer[..read]);
            while let Some(end) = text.iter().position(|byte| *byte == b'\n') {
                let line: Vec<u8> = text.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line).trim_end().to_owned();
                if let Ok(mut tail) = keep.lock() {
                    tail.push_back(line);
                    while tail.len() > STDERR_TAIL {
                        tail.pop_front();
                    }
                }
            }
        }
    });
    tail
}

/// Runs `agentrace run codex`.
pub fn run(home: &Home, args: RunCodexArgs, out: &mut Out) -> anyhow::Result<ExitCode> {
    args.secrets.apply();
    if args.exec {
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let request = crate::commands::run_codex_exec::ExecRequest {
            codex: args.codex.clone().unwrap_or_else(|| PathBuf::from("codex")),
            cwd,
            codex_home: args.codex_home.clone(),
            model: args.model.as_deref(),
            sandbox: args.sandbox.as_deref(),
            config: &args.config,
            skip_git_repo_check: args.skip_git_repo_check,
            prompt: args.prompt.join(" "),
            run_id: args.run_id.as_deref(),
            quiet: args.quiet,
            otlp: args.otlp.as_deref(),
        };
        return crate::commands::run_codex_exec::run(home, request, out);
    }
    let id = match &args.run_id {
        Some(text) => validate_run_id(text)?,
        None => new_run_id(),
    };
    if home.exists(&id) {
        bail!("run {id} already exists; pick another --run-id");
    }
    let codex = args.codex.clone().unwrap_or_else(|| PathBuf::from("codex"));
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let mut command = Command::new(&codex);
    command.arg("app-server");
    for pair in &args.config {
        command.arg("-c").arg(pair);
    }
    command
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: Ctrl-C reaches agentrace, which interrupts
        // the turn properly instead of the terminal killing the server.
        .process_group(0);
    let mut child = command.spawn().with_context(|| {
        format!(
            "cannot start {} app-server\nhint: install it with `npm install -g @openai/codex`, or pass --codex PATH",
            codex.display()
        )
    })?;
    let (sender, receiver) = mpsc::channel();
    let stdout = child.stdout.take().context("the server has no stdout")?;
    let stderr = child.stderr.take().context("the server has no stderr")?;
    spawn_reader(stdout, sender.clone());
    let stderr_tail = spawn_stderr_tail(stderr);
    let interrupt_sender = sender.clone();
    // A second handler cannot be installed in one process; tests run one per process.
    let _ = ctrlc::set_handler(move || {
        let _ = interrupt_sender.send(Message::Interrupt);
    });
    drop(sender);

    let setup = Setup::live(agentrace_core::recorder::Format::CodexAppServer, Source::CodexRun, !args.quiet);
    let live = Recording::create(home, &id, &setup, crate::clock::now(), None)?;
    if !args.quiet {
        eprintln!("recording {id} (codex app-server, pid {})", child.id());
    }
    let params = TurnRequest {
        prompt: args.prompt.join(" "),
        cwd: cwd.to_string_lossy().into_owned(),
        model: args.model.clone(),
        approval_policy: args.approval_policy.clone(),
        sandbox: args.sandbox.clone(),
    };
    let mut driver = Driver {
        live,
        stdin: child.stdin.take(),
        approval: args.approval,
        pending: Vec::new(),
        thread_id: None,
        turn_id: None,
        failure: None,
    };
    driver.send(&json!({"id": INITIALIZE, "method": "initialize", "params": {
        "clientInfo": {"name": "agentrace", "title": "agentrace", "version": env!("CARGO_PKG_VERSION")},
        "capabilities": {"experimentalApi": true},
    }}))?;
    let outcome = drive(&mut driver, &receiver, &params)?;
    // The root turn is over (or the session is): close stdin, let the server
    // go, and keep recording whatever it still prints.
    driver.stdin = None;
    let exit = stop(
        &mut child,
        if outcome == Outcome::Ended {
            EXIT_GRACE
        } else {
            Duration::ZERO
        },
    );
    while let Ok(message) = receiver.recv_timeout(Duration::from_millis(200)) {
        match message {
            Message::Stdout(chunk) => driver.stdout(&chunk, &params)?,
            Message::StdoutClosed => break,
            Message::Interrupt => {}
        }
    }
    let tail = stderr_tail
        .lock()
        .map(|tail| tail.iter().cloned().collect::<Vec<_>>().join("\n"))
        .unwrap_or_default();
    match outcome {
        Outcome::Ended => {}
        Outcome::ServerGone => {
            let status = exit
                .map(|status| status.to_string())
                .unwrap_or_else(|| "unknown status".to_owned());
            driver.live.abort(
                format!(
                    "codex app-server exited ({status}) before the root turn ended{}",
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!("; its stderr ended with:\n{tail}")
                    }
                ),
                false,
            )?;
        }
        Outcome::Refused => {
            let failure = driver.failure.clone().unwrap_or_default();
            driver.live.abort(failure, false)?;
        }
        Outcome::Abandoned => {
            driver.live.abort(
                "interrupted by the user; the server did not end the turn in time".to_owned(),
                true,
            )?;
        }
    }
    // The user giving up is agentrace closing the session; any other end
    // is the server's exit (after the turn, or before it).
    let reason = match outcome {
        Outcome::Abandoned => agentrace_core::model::SessionEndReason::Closed,
        Outcome::Ended | Outcome::ServerGone | Outcome::Refused => {
            agentrace_core::model::SessionEndReason::Exit
        }
    };
    let summary = driver.live.finish(Some(reason))?.summary;
    if let Some(endpoint) = &args.otlp {
        crate::commands::export::export_after_run(home, &id, endpoint);
    }
    crate::live::tell_end(out, &id, &summary)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The root turn ended.
    Ended,
    /// The server closed its stdout first.
    ServerGone,
    /// The server refused a request we needed.
    Refused,
    /// The user interrupted and the server did not end the turn in time.
    Abandoned,
}

fn drive(
    driver: &mut Driver,
    receiver: &Receiver<Message>,
    params: &TurnRequest,
) -> anyhow::Result<Outcome> {
    let mut interrupt_deadline: Option<Instant> = None;
    loop {
        if driver.live.state().status() != RunStatus::Running {
            return Ok(Outcome::Ended);
        }
        if driver.failure.is_some() {
            return Ok(Outcome::Refused);
        }
        let timeout = interrupt_deadline
            .map(|deadline| deadline.saturating_duration_since(Instant::now()))
            // Idle wake-ups let the writer's timers run (a status change
            // held back by the record's 250 ms window, the log's sync).
            .unwrap_or(Duration::from_millis(250));
        match receiver.recv_timeout(timeout) {
            Ok(Message::Stdout(chunk)) => driver.stdout(&chunk, params)?,
            Ok(Message::StdoutClosed) | Err(RecvTimeoutError::Disconnected) => {
                return Ok(Outcome::ServerGone)
            }
            Ok(Message::Interrupt) => {
                if interrupt_deadline.is_some() {
                    // A second Ctrl-C: stop waiting.
                    return Ok(Outcome::Abandoned);
                }
                eprintln!("interrupting the root turn (Ctrl-C again to stop at once)");
                if driver.interrupt()? {
                    interrupt_deadline = Some(Instant::now() + INTERRUPT_GRACE);
                } else {
                    return Ok(Outcome::Abandoned);
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                driver.live.settle()?;
                if interrupt_deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    return Ok(Outcome::Abandoned);
                }
            }
        }
    }
}
