//! `agentrace attach`: follows a run's log as it grows and prints its events,
//! child-work record changes (§6) and warnings as they land, until the run's
//! session is over or Ctrl-C; on a finished run it prints the whole story and
//! exits. It waits on file notifications (`notify`), never by busy polling;
//! the records come from the same core reducer `status` replays with, the
//! warnings from the same detectors `show` and `check` run (§8), judged again
//! after each read and when a time-based one asks to be.

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use agentrace_core::childwork::{ChangeKind, ChildWork, ChildWorkChange};
use agentrace_core::model::{Envelope, RunId, ThreadId, Timestamp, Warning};
use agentrace_core::state::RunState;
use agentrace_core::warnings::{checked, Evidence, WarningConfig};
use agentrace_store::{Home, LogReader};
use anyhow::Context as _;
use clap::Args;
use notify::Watcher as _;
use serde::Serialize;

use crate::check::WarningArgs;
use crate::output::Out;
use crate::render;
use crate::status::{line, session_over};

/// How long to wait for a notification before looking at the file anyway
/// (a safety net for file systems that drop notifications, not a poll loop).
const RECHECK: Duration = Duration::from_secs(5);

/// `agentrace attach` arguments.
#[derive(Debug, Args)]
pub struct AttachArgs {
    /// Run id, a unique prefix of one, or `latest`.
    run: String,
    /// Print JSON Lines: `{"envelope": {...}}`, `{"change": "...", "record":
    /// {...}}` and `{"warning": {...}}`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    warnings: WarningArgs,
}

/// One line of `attach --json`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Item<'a> {
    /// A log envelope, as written.
    Envelope {
        /// The envelope.
        envelope: &'a Envelope,
    },
    /// A record change: the same shape as `status --changes`.
    Change(&'a ChildWorkChange),
    /// A warning: the child-work reducer's (`lost_turn`) or a detector's.
    Warning {
        /// The warning.
        warning: &'a Warning,
    },
}

/// How long a line left half written when the run ended is waited for.
const SETTLE: Duration = Duration::from_secs(2);

/// Why the follower woke up.
enum Wake {
    /// The log (or its folder) changed.
    File,
    /// Ctrl-C.
    Interrupt,
}

/// Runs `agentrace attach`.
pub fn run(home: &Home, args: &AttachArgs, out: &mut Out) -> anyhow::Result<ExitCode> {
    let id = home.resolve(&args.run)?;
    let path = home.log_path(&id);
    let (sender, wakes) = mpsc::channel();
    let interrupt = sender.clone();
    // Ctrl-C ends the follow, not the run; a second handler cannot be set,
    // which only matters when attach runs twice in one process (tests).
    let _ = ctrlc::set_handler(move || {
        let _ = interrupt.send(Wake::Interrupt);
    });
    let watched = path.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            if event.paths.iter().any(|changed| changed == &watched) || event.paths.is_empty() {
                let _ = sender.send(Wake::File);
            }
        }
    })
    .context("watching the run log for changes")?;
    // The folder, not the file: a log replaced by rename is still seen.
    let folder = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    watcher
        .watch(&folder, notify::RecursiveMode::NonRecursive)
        .with_context(|| format!("watching {}", folder.display()))?;

    let config = crate::check::config(home, &args.warnings)?;
    let mut follower = Follower::new(id, path, args.json, config);
    loop {
        follower.read_new(out)?;
        let recheck = follower.detect(out)?;
        if session_over(&follower.state) {
            // A line still being written when the run ended (the rest of
            // the write that ended it) is waited for, a little, not lost.
            let settle = std::time::Instant::now();
            while !follower.partial.is_empty() && settle.elapsed() < SETTLE {
                if let Ok(Wake::Interrupt) | Err(mpsc::RecvTimeoutError::Disconnected) = wakes.recv_timeout(SETTLE / 10) {
                    break;
                }
                follower.read_new(out)?;
            }
            follower.end(out)?;
            return Ok(ExitCode::SUCCESS);
        }
        out.flush()?;
        // A time-based detector (`silent_agent`) may fire with no new line.
        let wait = recheck.map_or(RECHECK, |ms| RECHECK.min(Duration::from_millis(ms.max(100))));
        match wakes.recv_timeout(wait) {
            Ok(Wake::File) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(Wake::Interrupt) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                out.flush()?;
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}

/// The reading side: bytes of the log past `offset`, whole lines only.
struct Follower {
    id: RunId,
    path: PathBuf,
    json: bool,
    offset: u64,
    partial: Vec<u8>,
    state: RunState,
    reducer: ChildWork,
    warnings_shown: usize,
    /// What the detectors read beside the state.
    evidence: Evidence,
    config: WarningConfig,
    /// Every warning printed, by code and thread: each is printed once.
    printed: Vec<(String, Option<ThreadId>)>,
    last: Option<Timestamp>,
}

impl Follower {
    fn new(id: RunId, path: PathBuf, json: bool, config: WarningConfig) -> Self {
        Self {
            state: RunState::new(id.clone()),
            id,
            path,
            json,
            offset: 0,
            partial: Vec::new(),
            reducer: ChildWork::new(),
            warnings_shown: 0,
            evidence: Evidence::default(),
            config,
            printed: Vec::new(),
            last: None,
        }
    }

    /// Reads what was appended since the last call and prints it.
    fn read_new(&mut self, out: &mut Out) -> anyhow::Result<()> {
        let mut file =
            File::open(&self.path).with_context(|| format!("opening {}", self.path.display()))?;
        let length = file.metadata()?.len();
        if length < self.offset {
            anyhow::bail!("{} shrank while attached", self.path.display());
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        file.take(length - self.offset).read_to_end(&mut bytes)?;
        self.offset = length;
        self.partial.extend(bytes);
        // A line still being written waits for its newline.
        let Some(end) = self.partial.iter().rposition(|byte| *byte == b'\n') else {
            return Ok(());
        };
        let whole: Vec<u8> = self.partial.drain(..=end).collect();
        let mut reader = LogReader::new(whole.as_slice()).with_run_id(self.id.clone());
        for envelope in &mut reader {
            let envelope = envelope?;
            self.state.apply(&envelope);
            self.evidence.apply(&envelope);
            let changes = self.reducer.apply(&envelope);
            self.last = Some(envelope.timestamp);
            self.print_envelope(out, &envelope)?;
            self.print_changes(out, &changes)?;
        }
        if !reader.skipped().is_empty() {
            render::skipped_warning(&self.path, reader.skipped());
        }
        Ok(())
    }

    /// The session is over: live records settle, the detectors judge the
    /// run as it ended, then the follow ends.
    fn end(&mut self, out: &mut Out) -> anyhow::Result<()> {
        if let Some(at) = self.last {
            let changes = self.reducer.end_session(at);
            self.print_changes(out, &changes)?;
        }
        self.detect(out)?;
        out.flush()?;
        Ok(())
    }

    /// Prints the warnings `show` would list now that were not printed yet;
    /// says in how many milliseconds a time-based detector wants to judge
    /// again.
    fn detect(&mut self, out: &mut Out) -> anyhow::Result<Option<u64>> {
        if self.last.is_none() {
            return Ok(None);
        }
        let (view, recheck) = checked(
            self.state.view(),
            self.reducer.warnings(),
            &self.evidence,
            Some(crate::check::now()),
            &self.config,
        );
        for warning in &view.warnings {
            self.print_warning(out, warning)?;
        }
        Ok(recheck)
    }

    /// Prints `warning` unless one of its code and thread was printed.
    fn print_warning(&mut self, out: &mut Out, warning: &Warning) -> anyhow::Result<()> {
        let key = (warning.code.clone(), warning.thread_id.clone());
        if self.printed.contains(&key) {
            return Ok(());
        }
        self.printed.push(key);
        if self.json {
            out.json(&Item::Warning { warning })?;
        } else {
            out.line(format!("  {:<8} {}: {}", crate::check::severity_word(warning.severity), warning.code, warning.message))?;
        }
        Ok(())
    }

    fn print_envelope(&mut self, out: &mut Out, envelope: &Envelope) -> anyhow::Result<()> {
        if self.json {
            let mut shown = envelope.clone();
            shown.raw = None;
            shown.raw_ref = None;
            out.json(&Item::Envelope { envelope: &shown })?;
        } else {
            render::event_line(out, envelope)?;
        }
        Ok(())
    }

    fn print_changes(&mut self, out: &mut Out, changes: &[ChildWorkChange]) -> anyhow::Result<()> {
        for change in changes {
            if self.json {
                out.json(&Item::Change(change))?;
            } else {
                let word = match change.change {
                    ChangeKind::Admitted => "admitted",
                    ChangeKind::Updated => "updated",
                    ChangeKind::Ended => "ended",
                    ChangeKind::Settled => "settled",
                };
                // The age as it was when the change happened, not as of today.
                let at = change.record.updated_at;
                out.line(format!("  {word:<8} {}", line(&change.record, "", 0, at)))?;
            }
        }
        // The reducer's own warnings as they happen, beside the change
        // that raised them (allowed codes left out).
        let fresh: Vec<Warning> = self.reducer.warnings()[self.warnings_shown..].to_vec();
        self.warnings_shown += fresh.len();
        for warning in self.config.filter(fresh) {
            self.print_warning(out, &warning)?;
        }
        Ok(())
    }
}
