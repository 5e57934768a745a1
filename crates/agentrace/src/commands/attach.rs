//! `agentrace attach`: follows a run's log as it grows and prints its events,
//! child-work record changes (§6) and warnings as they land, until the run's
//! session is over or Ctrl-C; on a finished run it prints the whole story and
//! exits. It waits on file notifications (`notify`), never by busy polling;
//! the records and the session's end come from the same run book `status`
//! and the server fold with (`session_ended`, see
//! [`agentrace_core::book`]), the
//! warnings from the same detectors `show` and `check` run (§8), judged again
//! after each read and when a time-based one asks to be.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use agentrace_core::book::Changes;
use agentrace_core::childwork::ChildWorkChange;
use agentrace_core::model::{Envelope, RunId, ThreadId, Warning};
use agentrace_core::warnings::WarningConfig;
use agentrace_store::{Home, RunFold};
use anyhow::Context as _;
use clap::Args;
use notify::Watcher as _;
use serde::Serialize;

use crate::warning_config::WarningArgs;
use crate::output::Out;
use crate::render;

/// How long to wait for a notification before looking at the file anyway
/// (a safety net for file systems that drop notifications, not a poll loop).
const RECHECK: Duration = Duration::from_secs(5);

/// `agentrace attach` arguments.
#[derive(Debug, Args)]
pub struct AttachArgs {
    /// Run id, a unique prefix of one (or of an imported run's Codex thread or Claude session id), or `latest`.
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

/// How long a line left half written when the run ended is waited for, and
/// how long the log of a session seen at work must be still after its end.
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
    // Changes only: the follower opens the log on each wake, and an open
    // that woke it again kept it reading a still log at most of a core.
    let mut watcher = agentrace_store::watching::changes_watcher(move |event: notify::Result<notify::Event>| {
        if agentrace_store::watching::may_change(&event, &watched) {
            let _ = sender.send(Wake::File);
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

    let config = crate::warning_config::config(home, &args.warnings)?;
    let mut follower = Follower::new(id, path, args.json, config, home.prices());
    let mut hinted = false;
    // Whether this follow saw the session at work: its end is then waited
    // out (`SETTLE` of stillness) for the lines an agent writes after it.
    let mut saw_live = false;
    loop {
        follower.read_new(out)?;
        let recheck = follower.detect(out)?;
        if !hinted {
            hinted = true;
            if let Some(hint) = crate::commands::status::unfollowed_hint(home, follower.fold.book()) {
                out.flush()?;
                eprintln!("{hint}");
            }
        }
        if follower.fold.book().session_over() {
            // A line still being written when the run ended (the rest of
            // the write that ended it) is waited for, a little, not lost.
            let settle = std::time::Instant::now();
            while follower.partial() && settle.elapsed() < SETTLE {
                if let Ok(Wake::Interrupt) | Err(mpsc::RecvTimeoutError::Disconnected) = wakes.recv_timeout(SETTLE / 10) {
                    break;
                }
                follower.read_new(out)?;
            }
            // An agent writes a few lines after its last turn (Claude Code
            // its Stop hook's summary, the last prompt, its cost), imported
            // a moment after the end: the follow ends once the log has been
            // still for `SETTLE`, as `watch` tells an end, or it left them
            // out. A run over when attached is the whole story already.
            if saw_live {
                out.flush()?;
                match wakes.recv_timeout(SETTLE) {
                    Ok(Wake::File) => continue,
                    Err(mpsc::RecvTimeoutError::Timeout) | Ok(Wake::Interrupt) | Err(mpsc::RecvTimeoutError::Disconnected) => {}
                }
            }
            follower.end(out)?;
            return Ok(ExitCode::SUCCESS);
        }
        saw_live = true;
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
        // No one reads on (`attach RUN | head -3`): ended at the next wake,
        // at most `RECHECK` later, not at a write a quiet run may never
        // cause.
        if out.reader_gone() {
            return Ok(ExitCode::SUCCESS);
        }
    }
}

/// The reading side: the log's fold (the core's run book, through the
/// store's [`RunFold`]), read on from the last whole line folded.
struct Follower {
    path: PathBuf,
    json: bool,
    fold: RunFold,
    config: WarningConfig,
    /// Every warning printed, by code and thread: each is printed once.
    printed: Vec<(String, Option<ThreadId>)>,
}

impl Follower {
    fn new(id: RunId, path: PathBuf, json: bool, config: WarningConfig, prices: std::sync::Arc<agentrace_core::prices::PriceBook>) -> Self {
        Self {
            path,
            json,
            fold: RunFold::priced(id, prices),
            config,
            printed: Vec::new(),
        }
    }

    /// True when the log has bytes past the last whole line folded (a line
    /// still being written).
    fn partial(&self) -> bool {
        std::fs::metadata(&self.path).is_ok_and(|meta| meta.len() > self.fold.offset())
    }

    /// Reads what was appended since the last call and prints it.
    fn read_new(&mut self, out: &mut Out) -> anyhow::Result<()> {
        let before = self.fold.offset();
        if std::fs::metadata(&self.path).is_ok_and(|meta| meta.len() < before) {
            anyhow::bail!("{} shrank while attached", self.path.display());
        }
        let mut failed = Ok(());
        let json = self.json;
        let config = &self.config;
        let printed = &mut self.printed;
        let followed = self
            .fold
            .follow_each(&self.path, |envelope, changes, _| {
                if failed.is_ok() {
                    failed = print_envelope(out, json, envelope)
                        .and_then(|()| print_changes(out, json, config, printed, changes));
                }
            })
            .with_context(|| format!("reading {}", self.path.display()))?;
        failed?;
        if !followed.skipped.is_empty() {
            render::skipped_warning(&self.path, &followed.skipped);
        }
        Ok(())
    }

    /// The session is over: the detectors judge the run as it ended, then
    /// the follow ends (the book settled the live records already).
    fn end(&mut self, out: &mut Out) -> anyhow::Result<()> {
        self.detect(out)?;
        out.flush()?;
        Ok(())
    }

    /// Prints the warnings `show` would list now that were not printed yet;
    /// says in how many milliseconds a time-based detector wants to judge
    /// again.
    fn detect(&mut self, out: &mut Out) -> anyhow::Result<Option<u64>> {
        if self.fold.state().last_sequence() == 0 {
            return Ok(None);
        }
        let (view, recheck) = self
            .fold
            .checked_view(&self.config, Some(crate::clock::now()));
        for warning in &view.warnings {
            print_warning(out, self.json, &mut self.printed, warning)?;
        }
        Ok(recheck)
    }
}

/// Prints `warning` unless one of its code and thread was printed.
fn print_warning(
    out: &mut Out,
    json: bool,
    printed: &mut Vec<(String, Option<ThreadId>)>,
    warning: &Warning,
) -> anyhow::Result<()> {
    let key = (warning.code.clone(), warning.thread_id.clone());
    if printed.contains(&key) {
        return Ok(());
    }
    printed.push(key);
    if json {
        out.json(&Item::Warning { warning })?;
    } else {
        out.line(crate::commands::status::warning_line(warning))?;
    }
    Ok(())
}

fn print_envelope(out: &mut Out, json: bool, envelope: &Envelope) -> anyhow::Result<()> {
    if json {
        let mut shown = envelope.clone();
        shown.raw = None;
        shown.raw_ref = None;
        out.json(&Item::Envelope { envelope: &shown })?;
    } else {
        render::event_line(out, envelope)?;
    }
    Ok(())
}

/// Prints an envelope's record changes, then the warnings it raised as
/// they happen (allowed codes left out); the detectors' come with
/// [`Follower::detect`].
fn print_changes(
    out: &mut Out,
    json: bool,
    config: &WarningConfig,
    printed: &mut Vec<(String, Option<ThreadId>)>,
    changes: Changes,
) -> anyhow::Result<()> {
    for change in &changes.records {
        if json {
            out.json(&Item::Change(change))?;
        } else {
            out.line(crate::commands::status::change_line(change))?;
        }
    }
    for warning in config.filter(changes.warnings) {
        print_warning(out, json, printed, &warning)?;
    }
    Ok(())
}
