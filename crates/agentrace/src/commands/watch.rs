//! `agentrace watch`: follows the sessions Codex and Claude Code write as
//! they write them (`$CODEX_HOME/sessions`, `$CLAUDE_CONFIG_DIR/projects`)
//! and imports what their files gain, through the same incremental import
//! as `import` (so a watched session ends exactly as an import of its
//! finished files makes it). Owns the watching (`notify`: inotify, else its
//! polling watcher) and when to import; never how a session is read (the
//! import's).

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agentrace_core::model::{RunId, SessionEndReason, Severity, Timestamp, Warning};
use agentrace_core::state::RunSummary;
use agentrace_store::watching::{changes_watcher, is_change};
use agentrace_store::Home;
use serde::Serialize;
use anyhow::Context as _;
use clap::Args;

use crate::commands::import::{ImportArgs, Scope};
use crate::output::Out;

/// Arguments of `agentrace watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Codex home to follow (`sessions/`; default: `$CODEX_HOME`, else
    /// `~/.codex`).
    #[arg(long, value_name = "DIR")]
    codex_home: Option<PathBuf>,
    /// Claude Code config dir to follow (`projects/`; default:
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    #[arg(long, value_name = "DIR")]
    claude_dir: Option<PathBuf>,
    /// Nothing on stderr but warnings and errors.
    #[arg(long, short)]
    quiet: bool,
    /// Watch by polling, as where inotify cannot be used (for tests).
    #[arg(long, hide = true)]
    poll: bool,
    /// Run CMD (with `sh -c`) when a session ends: its root is done and no
    /// child is still working. The run id and a summary are in its
    /// environment (`AGENTRACE_RUN_ID`, `AGENTRACE_STATUS`,
    /// `AGENTRACE_SUMMARY`, …) and `{"event": "end", "run": {…}}` on its stdin.
    #[arg(long, value_name = "CMD")]
    on_end: Option<String>,
    /// Run CMD (with `sh -c`) once per error-level warning of a watched
    /// session (`AGENTRACE_WARNING_CODE`, `AGENTRACE_WARNING_MESSAGE` beside
    /// the run's; `{"event": "warning", "run": {…}, "warning": {…}}` on stdin).
    #[arg(long, value_name = "CMD")]
    on_warning: Option<String>,
    /// A session whose files have not grown for this many seconds while
    /// something in it is live (its root's turn, a child, a command) ends:
    /// `session_ended` (reason `idle`) is appended and its live records
    /// settle `unknown`. Should it grow again, it is read again.
    #[arg(long, value_name = "SECONDS", default_value_t = crate::commands::import::DEFAULT_IDLE_LIMIT)]
    idle_limit: u64,
    /// Print one JSON object per line instead: `{"event": "run", "run":
    /// {…}}` for each run recorded or changed, `{"event": "idle", "run":
    /// {…}}` for one the idle limit ended, and the notices the commands get
    /// on stdin: `{"event": "end", …}` once per session that ends and
    /// `{"event": "warning", …}` once per error-level warning.
    #[arg(long)]
    json: bool,
}

/// Why the loop woke up.
pub enum Wake {
    /// Something under a followed folder changed: these files were written
    /// to, or (`None`) anything may have changed (a file made, removed or
    /// renamed, events lost, an error of the watcher).
    Changed(Option<Vec<PathBuf>>),
    /// The records of these runs were written (in the home's runs folder):
    /// by this follower's import, or by another process's (another
    /// follower holding the lease, an `import`, a watch that ended a
    /// session idle), which this follower's own import then finds done.
    Recorded(Vec<RunId>),
    /// Ctrl-C.
    Interrupt,
}

/// How long changes are gathered before an import (an agent writes a few
/// lines, in a few files, at once), and at most how long a stream of
/// changes holds the import back.
const GATHER: Duration = Duration::from_millis(50);
const GATHER_AT_MOST: Duration = Duration::from_millis(250);

/// How often the polling watcher looks, where inotify cannot be used.
const POLL_EVERY: Duration = Duration::from_secs(1);

/// The watcher in use: it watches while it lives.
#[expect(dead_code, reason = "held, never read: dropping it ends the watching")]
enum Watching {
    Native(notify::RecommendedWatcher),
    /// The polling watcher of the followed folders, and the poll of the
    /// runs folder's records.
    Polling(notify::PollWatcher, Option<RecordsPolling>),
}

/// A thread that polls a home's runs folder every [`POLL_EVERY`] and
/// sends [`Wake::Recorded`] with the runs whose records were written: a
/// polling follower's way to hear of another process's import (inotify
/// tells a native one). It stops when dropped.
struct RecordsPolling {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl RecordsPolling {
    fn start(runs: &std::path::Path, sender: mpsc::Sender<Wake>) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let mut poll = agentrace_store::watching::RecordsPoll::new(runs);
        std::thread::spawn(move || loop {
            std::thread::sleep(POLL_EVERY);
            if stopped.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            let changed = poll.changed();
            if !changed.is_empty() && sender.send(Wake::Recorded(changed)).is_err() {
                return;
            }
        });
        Self { stop }
    }
}

impl Drop for RecordsPolling {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Runs `agentrace watch` until Ctrl-C.
pub fn run(home: &Home, args: &WatchArgs, out: &mut Out) -> anyhow::Result<ExitCode> {
    // A session idle past the limit by now had ended before the watch
    // began (no news); one that reaches it later is this watch's to end
    // and tell (see `first_pass`).
    let began = crate::clock::now();
    let import = ImportArgs::quiet_of(args.codex_home.clone(), args.claude_dir.clone()).with_idle_limit(args.idle_limit);
    let follower = Follower::start(home, &import, args.poll)?;
    if let Some(warning) = follower.fallback() {
        eprintln!("{warning}");
    } else if !args.quiet {
        let how = if follower.polling() { "by" } else { "with" };
        eprintln!("watching {} {how} {}; Ctrl-C ends", follower.folders(), follower.mode());
    }
    let stopper = follower.stopper();
    // Ctrl-C ends the watch; a second handler cannot be set, which only
    // matters when a process sets two (tests).
    let _ = ctrlc::set_handler(move || stopper.stop());
    let mut notifier = Notifier::new(args);
    // What the files hold already (what had ended when the watch began is
    // no news), then what they gain.
    let (changed, mut idle) = first_pass(home, (&import, began), &follower, args.json, out)?;
    notifier.baseline(home, &changed);
    loop {
        let within = [idle.next_due(), notifier.rechecks.next_due(), notifier.ends.next_due()].into_iter().flatten().min();
        let next = follower.next_within(within);
        // The home's files as they are now: this watch runs for days, and
        // what it imports, ends and judges after a file changed is priced
        // and judged by the new one.
        let home = &crate::home_files::read(home)?;
        match next {
            Next::Changed(scope) => {
                let changed = follower.imported(|| pass(home, (&import, &follower.resumes), &scope, args.json, out))?;
                let changed = others_said(home, &follower, changed, args.json, out)?;
                notifier.notify(home, &changed, out)?;
                idle.saw(home, &changed);
            }
            Next::Recorded => {
                let changed = others_said(home, &follower, Vec::new(), args.json, out)?;
                notifier.notify(home, &changed, out)?;
                idle.saw(home, &changed);
            }
            Next::Stopped => {
                // An end still settling is told as the run is now rather
                // than never.
                notifier.tell_settled_ends(home, true, out)?;
                return Ok(ExitCode::SUCCESS);
            }
            Next::Quiet => {}
        }
        for id in idle.due() {
            if end_idle(home, &id, &follower.resumes)? {
                // Its record, written back, is no news.
                follower.passed_on(home, &id);
                if let Some(run) = home.list_these_runs([id.clone()])?.first() {
                    say_run(out, args.json, "idle", run, "idle")?;
                }
                out.flush()?;
                notifier.notify(home, std::slice::from_ref(&id), out)?;
            }
        }
        // A helper gone quiet: judged when the detector asked, with no
        // line written to wake the watch.
        let due = notifier.rechecks.due();
        notifier.notify(home, &due, out)?;
        notifier.tell_settled_ends(home, false, out)?;
    }
}

/// The watch's first pass: an import of everything the files hold, then
/// each session it leaves live followed until it reaches the idle limit.
/// Returns the runs it recorded or changed (and those others did since)
/// and the limit's deadlines.
///
/// Which sessions the import ends itself (idle past the limit: over before
/// the watch began, no news) is judged at `began`, the moment the watch
/// began, never by the clock when the pass reads them. Judged by the
/// clock, a session whose files reached the limit between the two (a pass
/// a few hundred milliseconds late, on a loaded machine) was ended by the
/// import and taken for one over before the watch began: printed as a
/// `run`, no `idle`, its end never told; a pass a moment sooner left it
/// to the watch, which ended and told it. Now the pass leaves it open and
/// it is followed with its due time already past: the loop ends it as it
/// ends every session that reaches the limit while it watches.
fn first_pass(home: &Home, (import, began): (&ImportArgs, Timestamp), follower: &Follower, json: bool, out: &mut Out) -> anyhow::Result<(Vec<RunId>, IdleLimit)> {
    let judged = import.clone().with_idle_judged_at(began);
    let changed = follower.imported(|| pass(home, (&judged, &follower.resumes), &Scope::Everything, json, out))?;
    let changed = follower.with_others(home, changed);
    let mut idle = IdleLimit::new(Duration::from_secs(import.idle_limit()));
    idle.saw_at_start(home, &changed);
    // A session an earlier import left open (read while its files were
    // young) and which the first pass found unchanged: no change will come
    // to say it went still, so it is followed until its files have been
    // still for the limit.
    follower.track_open(home, &Scope::Everything)?;
    idle.saw_open(home, &follower.open_sessions());
    Ok((changed, idle))
}

/// What [`Follower::next_within`] saw.
pub enum Next {
    /// Something changed (gathered): what to import.
    Changed(Scope),
    /// Only runs' records changed (another process imported or ended
    /// them): nothing to import; [`Follower::with_others`] says which.
    Recorded,
    /// Nothing, for the time given.
    Quiet,
    /// The follower was stopped.
    Stopped,
}

/// When each of some sessions is due (to be ended idle, to be judged
/// again): what the watch waits for besides the files' changes.
#[derive(Default)]
struct Deadlines(HashMap<RunId, Instant>);

impl Deadlines {
    fn set(&mut self, id: &RunId, at: Instant) {
        self.0.insert(id.clone(), at);
    }

    fn forget(&mut self, id: &RunId) {
        self.0.remove(id);
    }

    /// How long until the next is due (none: nothing to wait for).
    fn next_due(&self) -> Option<Duration> {
        self.0.values().map(|due| due.saturating_duration_since(Instant::now())).min()
    }

    /// Those due now, forgotten.
    fn due(&mut self) -> Vec<RunId> {
        let now = Instant::now();
        let due: Vec<RunId> = self.0.iter().filter(|(_, at)| **at <= now).map(|(id, _)| id.clone()).collect();
        for id in &due {
            self.0.remove(id);
        }
        due
    }
}

/// The idle limit: when each live session reaches it, counted from when
/// it was last seen to change.
struct IdleLimit {
    limit: Duration,
    live: Deadlines,
}

impl IdleLimit {
    fn new(limit: Duration) -> Self {
        Self { limit, live: Deadlines::default() }
    }

    /// `changed` changed now: each still live is followed for the limit,
    /// each over is not.
    fn saw(&mut self, home: &Home, changed: &[RunId]) {
        for id in changed {
            match home.fold_run(id) {
                Ok(fold) if live(fold.book()) => self.live.set(id, Instant::now() + self.limit),
                _ => self.live.forget(id),
            }
        }
    }

    /// The first pass: of what it read, only sessions written to within
    /// the limit are followed (one idle longer had ended before the watch
    /// began, and is not the watch's to end).
    fn saw_at_start(&mut self, home: &Home, changed: &[RunId]) {
        let limit = i64::try_from(self.limit.as_millis()).unwrap_or(i64::MAX);
        let now = crate::clock::now().millis();
        let recent: Vec<RunId> = changed
            .iter()
            .filter(|id| {
                home.fold_run(id).ok().and_then(|fold| fold.state().summary().updated_at).is_some_and(|at| now - at.millis() < limit)
            })
            .cloned()
            .collect();
        self.saw(home, &recent);
    }

    /// Sessions an import left open, each with when (milliseconds since the
    /// epoch) its files will have been still for the limit: each still
    /// live and not followed already is followed until then.
    fn saw_open(&mut self, home: &Home, open: &[(RunId, i64)]) {
        let now = crate::clock::now().millis();
        for (id, due) in open {
            if self.live.0.contains_key(id) || !home.fold_run(id).is_ok_and(|fold| live(fold.book())) {
                continue;
            }
            let after = Duration::from_millis(u64::try_from(due.saturating_sub(now)).unwrap_or(0));
            self.live.set(id, Instant::now() + after);
        }
    }

    /// How long until the next session reaches the limit (none followed:
    /// no limit to wait for).
    fn next_due(&self) -> Option<Duration> {
        self.live.next_due()
    }

    /// The sessions at the limit, no longer followed.
    fn due(&mut self) -> Vec<RunId> {
        self.live.due()
    }
}

/// True until the session is over by the run book's rule, which `top` and
/// `status` share: its root's turn or a child is live (a background child
/// after its root's turn ended, which only its own end or `session_ended`
/// settles), and no `session_ended` was the last word.
fn live(book: &agentrace_core::book::RunBook) -> bool {
    !book.session_over()
}

/// Ends an idle session: `session_ended` (idle) appended to its log, its
/// record rewritten, and the import told it is no longer open; false when
/// it is over already (nothing to end).
fn end_idle(home: &Home, id: &RunId, resumes: &crate::commands::import::Resumes) -> anyhow::Result<bool> {
    if !live(home.fold_run(id)?.book()) {
        return Ok(false);
    }
    let mut writer = home.append_run(id)?;
    let envelope: agentrace_core::Envelope = serde_json::from_value(serde_json::json!({
        "version": agentrace_core::model::LOG_VERSION,
        "timestamp": crate::clock::now(),
        "sequence": writer.next_sequence(),
        "runId": id,
        "actor": agentrace_core::model::Actor::unknown("agentrace"),
        "event": {"type": "session_ended", "reason": SessionEndReason::Idle.as_str()},
    }))?;
    writer.append(std::slice::from_ref(&envelope))?;
    writer.sync()?;
    let fold = home.fold_run(id)?;
    let mut summary = fold.state().summary();
    summary.counts.skipped_log_lines = fold.skipped();
    writer.write_record(&summary)?;
    crate::commands::import::ended_outside_an_import(home, id, resumes)?;
    Ok(true)
}

/// `--on-end` / `--on-warning` (and their notices printed by `--json`):
/// what has fired, so each fires once.
struct Notifier {
    on_end: Option<String>,
    on_warning: Option<String>,
    /// The notices are printed too.
    json: bool,
    /// Sessions whose end has fired (or had come before the watch began),
    /// with the run's `endedAt` then: a session at work again (a new
    /// prompt, a `--resume`) ends anew, at another time, and that end is
    /// news too, though the watch may never see it at work (the whole new
    /// turn read in one pass).
    ended: HashMap<RunId, Option<agentrace_core::model::Timestamp>>,
    /// Error warnings that have fired (or were there before), by run, code
    /// and thread.
    warned: HashSet<(RunId, String, Option<String>)>,
    /// Live sessions a time-based detector wants judged again, and when: a
    /// helper that goes quiet writes nothing that would wake the watch.
    rechecks: Deadlines,
    /// Sessions over whose end is not told yet, and when it is: once their
    /// files have been still for [`END_SETTLES`].
    ends: Deadlines,
}

/// How long a session that is over must go without a change before its
/// end is told: an agent writes a few lines after its last turn (Claude
/// Code its Stop hook's summary, the last prompt, its cost), each a change
/// of the run, and the end comes after the session's last `run`, carrying
/// the same run.
const END_SETTLES: Duration = Duration::from_secs(2);

/// What a session's files say of it now, for the notifications.
struct Seen {
    run: RunSummary,
    /// Its root is done and no child works on.
    over: bool,
    /// What fires: error-level warnings, and a helper gone quiet past the
    /// limit (`silent_agent`: maybe stuck).
    errors: Vec<Warning>,
    /// When a time-based detector wants to judge it again.
    recheck: Option<Duration>,
}

impl Notifier {
    fn new(args: &WatchArgs) -> Self {
        Self {
            on_end: args.on_end.clone(),
            on_warning: args.on_warning.clone(),
            json: args.json,
            ended: HashMap::new(),
            warned: HashSet::new(),
            rechecks: Deadlines::default(),
            ends: Deadlines::default(),
        }
    }

    /// Keeps when `id` is to be judged again, while it is live.
    fn recheck(&mut self, id: &RunId, seen: &Seen) {
        match seen.recheck.filter(|_| !seen.over && self.warnings_wanted()) {
            Some(after) => self.rechecks.set(id, Instant::now() + after),
            None => self.rechecks.forget(id),
        }
    }

    fn wanted(&self) -> bool {
        self.on_end.is_some() || self.warnings_wanted()
    }

    fn warnings_wanted(&self) -> bool {
        self.on_warning.is_some() || self.json
    }

    /// Reads a run as the notifications judge it: by the home's warning
    /// config, as the import judged its record.
    fn see(&self, home: &Home, id: &RunId) -> Option<Seen> {
        // From the log's snapshot: a whole fold of a long session's log at
        // every pass cost more than the pass.
        let fold = home.fold_run(id).ok()?;
        let (view, recheck) = fold.checked_view(home.warnings(), Some(crate::clock::now()));
        // A background child may still be at work after its root's turn ended.
        let over = !live(fold.book());
        let errors = view
            .warnings
            .into_iter()
            .filter(|warning| warning.severity == Severity::Error || warning.code == "silent_agent")
            .collect();
        Some(Seen { run: view.run, over, errors, recheck: recheck.map(Duration::from_millis) })
    }

    /// The first pass: sessions already over, and warnings already there,
    /// are not news.
    fn baseline(&mut self, home: &Home, changed: &[RunId]) {
        if !self.wanted() {
            return;
        }
        for id in changed {
            let Some(seen) = self.see(home, id) else { continue };
            self.recheck(id, &seen);
            if seen.over {
                self.ended.insert(id.clone(), seen.run.ended_at);
            }
            for warning in seen.errors {
                self.warned.insert((id.clone(), warning.code, warning.thread_id.map(|thread| thread.0)));
            }
        }
    }

    /// Fires what `changed` brought (its command run, its notice printed
    /// under `--json`): an end once per session, a warning once per error.
    fn notify(&mut self, home: &Home, changed: &[RunId], out: &mut Out) -> anyhow::Result<()> {
        if !self.wanted() {
            return Ok(());
        }
        for id in changed {
            let Some(seen) = self.see(home, id) else { continue };
            self.recheck(id, &seen);
            if self.warnings_wanted() {
                for warning in &seen.errors {
                    let key = (id.clone(), warning.code.clone(), warning.thread_id.clone().map(|thread| thread.0));
                    if self.warned.insert(key) {
                        self.tell(Notice { event: "warning", run: &seen.run, warning: Some(warning) }, out)?;
                    }
                }
            }
            // Told once the session has been over and still for a moment
            // (each change puts it off): see `END_SETTLES`.
            if (self.on_end.is_some() || self.json) && seen.over && !self.told_end(id, &seen) {
                self.ends.set(id, Instant::now() + END_SETTLES);
            } else {
                self.ends.forget(id);
            }
        }
        out.flush()?;
        Ok(())
    }

    /// Tells the end of each session that has been over and still for
    /// [`END_SETTLES`] (`all`: of every one waiting, when the watch stops),
    /// with its run as it is now; once per session.
    fn tell_settled_ends(&mut self, home: &Home, all: bool, out: &mut Out) -> anyhow::Result<()> {
        let due = if all { std::mem::take(&mut self.ends).0.into_keys().collect() } else { self.ends.due() };
        for id in due {
            let Some(seen) = self.see(home, &id) else { continue };
            if seen.over && !self.told_end(&id, &seen) {
                self.ended.insert(id.clone(), seen.run.ended_at);
                self.tell(Notice { event: "end", run: &seen.run, warning: None }, out)?;
            }
        }
        out.flush()?;
        Ok(())
    }

    /// Whether the end `seen` shows (its `endedAt`) has been told.
    fn told_end(&self, id: &RunId, seen: &Seen) -> bool {
        self.ended.get(id).is_some_and(|ended_at| *ended_at == seen.run.ended_at)
    }

    /// One notice: to its command, and printed under `--json`.
    fn tell(&self, notice: Notice<'_>, out: &mut Out) -> anyhow::Result<()> {
        let command = match notice.warning {
            Some(_) => &self.on_warning,
            None => &self.on_end,
        };
        if let Some(command) = command {
            fire(command, &notice);
        }
        if self.json {
            out.json(&notice)?;
        }
        Ok(())
    }
}

/// `{"event", "run", "warning"?}` on a notification command's stdin, and
/// each line `--json` prints.
#[derive(Clone, Copy, Serialize)]
struct Notice<'a> {
    event: &'a str,
    run: &'a RunSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<&'a Warning>,
}

/// `AGENTRACE_SUMMARY`: `<run id> done: <result>`, `<run id> ended
/// mid-turn, no answer` for a session that ended with its root's turn open
/// (its status stays the root's, `running`: nothing is at work), or the
/// warning's message.
fn summary(run: &RunSummary, warning: Option<&Warning>) -> String {
    let result = run.result.as_deref().map(|result| format!(": {}", crate::render::one_line(result, 120)));
    match warning {
        Some(warning) => format!("{}: {} ({})", run.id, warning.message, warning.code),
        None if run.session_ended => format!("{} ended mid-turn{}", run.id, result.unwrap_or_else(|| ", no answer".to_owned())),
        None => format!("{} {}{}", run.id, run.status.as_str(), result.unwrap_or_default()),
    }
}

/// Runs a notification command without waiting for it (a slow one must
/// not hold the watch back); a command that cannot start is a warning.
fn fire(command: &str, notice: &Notice<'_>) {
    let Notice { event, run, warning } = *notice;
    let json = serde_json::to_vec(notice).unwrap_or_default();
    let summary = summary(run, warning);
    let mut child = Command::new("sh");
    child
        .arg("-c")
        .arg(command)
        .env("AGENTRACE_EVENT", event)
        .env("AGENTRACE_RUN_ID", run.id.as_str())
        .env("AGENTRACE_PROVIDER", run.provider.as_str())
        .env("AGENTRACE_STATUS", run.status.as_str())
        .env("AGENTRACE_SUMMARY", summary)
        .stdin(Stdio::piped());
    if let Some(warning) = warning {
        child
            .env("AGENTRACE_WARNING_CODE", &warning.code)
            .env("AGENTRACE_WARNING_MESSAGE", &warning.message);
    }
    match child.spawn() {
        Ok(mut child) => {
            let stdin = child.stdin.take();
            // Fed and reaped on a thread of its own.
            std::thread::spawn(move || {
                if let Some(mut stdin) = stdin {
                    let _ = stdin.write_all(&json);
                }
                let _ = child.wait();
            });
        }
        Err(error) => eprintln!("warning: cannot run the --on-{event} command `{command}`: {error}"),
    }
}

/// Follows the provider folders: each [`Follower::next`] returns once
/// something under them changed (changes gathered a moment, as an agent
/// writes a few lines in a few files at once), with what to import. Shared
/// by `watch`, `top` and `serve --watch` (through [`Follower::follow`]), so
/// each sees a session the same way.
pub struct Follower {
    watching: Watching,
    /// The lease that lets an import trust the catalog, when this follower
    /// holds it (set once the native watcher runs: polling may miss a
    /// change for a second, so a polling follower never claims one).
    lease: std::sync::Arc<std::sync::OnceLock<Lease>>,
    wakes: mpsc::Receiver<Wake>,
    sender: mpsc::Sender<Wake>,
    folders: String,
    mode: String,
    fallback: Option<String>,
    /// Runs whose records were written since the last pass (see
    /// [`Wake::Recorded`]).
    recorded: std::cell::RefCell<std::collections::BTreeSet<RunId>>,
    /// Each run's record as this follower last passed it on (its length
    /// and modification time): a record written by another process is
    /// news once, this follower's own is none.
    reported: std::cell::RefCell<HashMap<RunId, Option<(u64, std::time::SystemTime)>>>,
    /// The sessions an import left open, each with its files and when
    /// (milliseconds since the epoch) they will have been still for the
    /// idle limit, by provider and key.
    open: std::cell::RefCell<HashMap<(String, String), OpenSession>>,
    /// The idle limit, in seconds.
    idle_limit: u64,
    /// The sessions a pass read on and left open, read on by the next
    /// from where it stopped (not fed again from their start).
    resumes: crate::commands::import::Resumes,
}

/// A session an import left open (read while its files were young): it is
/// read on once its files have been still for the idle limit, and ended
/// then, though no change of theirs comes to wake the follower.
struct OpenSession {
    run: RunId,
    files: Vec<PathBuf>,
    /// When its files will have been still for the idle limit, in
    /// milliseconds since the epoch.
    due: i64,
}

/// How long after its files reach the idle limit an open session is read
/// on (their modification times are the import's, to the nanosecond; the
/// clock's milliseconds must be past them), and how long a session still
/// open after its reading waits for the next (no pass in a loop).
const OPEN_MARGIN_MS: i64 = 50;
const OPEN_AGAIN_MS: i64 = 1_000;

/// Ends a [`Follower`]'s wait, from another thread or a signal handler.
#[derive(Clone)]
pub struct Stopper(mpsc::Sender<Wake>);

impl Stopper {
    /// The follower's next [`Follower::next`] returns `None` (and
    /// [`Follower::next_within`] [`Next::Stopped`]).
    pub fn stop(&self) {
        let _ = self.0.send(Wake::Interrupt);
    }
}

impl Follower {
    /// Starts watching the folders `import` reads: with inotify, or by
    /// polling where inotify cannot be used (or `poll` asks for it). With
    /// inotify it takes `home`'s follower lease when no other follower
    /// holds it.
    pub fn start(home: &Home, import: &ImportArgs, poll: bool) -> anyhow::Result<Self> {
        let folders = import.followed_folders();
        if folders.is_empty() {
            anyhow::bail!(
                "no Codex home or Claude config dir to follow\nhint: pass --codex-home DIR or --claude-dir DIR, or set CODEX_HOME / CLAUDE_CONFIG_DIR"
            );
        }
        let (sender, wakes) = mpsc::channel();
        let lease = std::sync::Arc::new(std::sync::OnceLock::new());
        // The records others write are news too (a polling follower looks
        // at the runs folder's stamp each second).
        let runs = Some(home.make_runs_dir()?);
        let (watching, fallback) = watch(&folders, runs.as_deref(), &sender, poll, &lease)?;
        if let (Watching::Native(_), Some(about)) = (&watching, import.followed_as()) {
            if let Some(taken) = agentrace_store::FollowerLease::take(home, &about)? {
                let _ = lease.set(Lease::new(taken));
            }
        }
        let mode = match &watching {
            Watching::Native(_) => "inotify".to_owned(),
            Watching::Polling(..) => format!("polling every {} s", POLL_EVERY.as_secs()),
        };
        Ok(Self {
            watching,
            lease,
            wakes,
            sender,
            folders: folders.iter().map(|folder| folder.display().to_string()).collect::<Vec<_>>().join(", "),
            mode,
            fallback,
            recorded: std::cell::RefCell::default(),
            reported: std::cell::RefCell::default(),
            open: std::cell::RefCell::default(),
            idle_limit: import.idle_limit(),
            resumes: crate::commands::import::Resumes::default(),
        })
    }

    /// The folders followed, for a message.
    pub fn folders(&self) -> &str {
        &self.folders
    }

    /// `inotify` or `polling every 1 s`.
    pub fn mode(&self) -> &str {
        &self.mode
    }

    /// Why inotify could not be used, as a warning to print, when it was
    /// not asked away.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// True when it polls (inotify could not be used, or was asked away).
    pub fn polling(&self) -> bool {
        matches!(self.watching, Watching::Polling(..))
    }

    /// Runs `pass` (an import of what changed); once it succeeds with no
    /// change told meanwhile, the lease says every change is imported.
    fn imported<T>(&self, pass: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
        let before = self.lease.get().map(Lease::changes);
        let result = pass();
        if let (Ok(_), Some(lease), Some(before)) = (&result, self.lease.get(), before) {
            lease.current_unless_told_since(before);
        }
        result
    }

    /// Imports until stopped: everything first, then each time what changed
    /// (everything again after a pass that failed: a pass of what changed
    /// would leave what the failed one did not read until its session
    /// grew again). `each` is given every pass's result; following ends
    /// when it returns false. For `top` and `serve --watch`; `watch` runs
    /// its own loop, which also ends idle sessions.
    pub fn follow(&self, home: &Home, import: &ImportArgs, mut each: impl FnMut(anyhow::Result<Vec<RunId>>) -> bool) {
        let mut scope = Some(Scope::Everything);
        loop {
            let result = match &scope {
                // The home's files as they are now (see `run`).
                Some(scope) => self
                    .imported(|| crate::commands::import::import_following(&crate::home_files::read(home)?, import, scope, &self.resumes))
                    .and_then(|changed| {
                        self.track_open(home, scope)?;
                        Ok(changed)
                    }),
                None => Ok(Vec::new()),
            };
            let failed = result.is_err();
            let result = result.map(|changed| self.with_others(home, changed));
            // Only this follower's own records written back: nothing new.
            let nothing = scope.is_none() && result.as_ref().is_ok_and(Vec::is_empty);
            if !nothing && !each(result) {
                return;
            }
            scope = loop {
                let next = match self.next_within(self.open_next_due()) {
                    Next::Changed(next) => Some(next),
                    Next::Recorded => None,
                    Next::Quiet => match self.open_due() {
                        Some(due) => Some(due),
                        None => continue,
                    },
                    Next::Stopped => return,
                };
                break if failed { Some(Scope::Everything) } else { next };
            };
        }
    }

    /// Keeps which sessions the import left open after a pass of `scope`
    /// (a whole pass: every one; else those of the files written), and
    /// when each is to be read on.
    pub fn track_open(&self, home: &Home, scope: &Scope) -> anyhow::Result<()> {
        let catalog = crate::catalog::open(home)?;
        let mut open = self.open.borrow_mut();
        let sessions: Vec<(String, String)> = match scope {
            Scope::Everything | Scope::Newest(_) => {
                open.clear();
                catalog.open_import_sessions()?
            }
            Scope::Written(paths) => {
                let mut sessions = Vec::new();
                for path in paths {
                    sessions.extend(catalog.import_sessions_of(&path.to_string_lossy())?);
                }
                sessions
            }
        };
        let now = crate::clock::now().millis();
        let limit = i64::try_from(self.idle_limit.saturating_mul(1_000)).unwrap_or(i64::MAX);
        for key in sessions {
            match catalog.import_session(&key.0, &key.1)? {
                Some(session) if session.open => {
                    let last = session.files.values().map(|file| i64::try_from(file.modified_ns / 1_000_000).unwrap_or(i64::MAX)).max().unwrap_or(now);
                    let due = last.saturating_add(limit).saturating_add(OPEN_MARGIN_MS);
                    // Still open past its time (its reading did not end
                    // it): tried again a moment later, not in a loop.
                    let due = if due <= now { now + OPEN_AGAIN_MS } else { due };
                    let files = session.files.into_keys().map(PathBuf::from).collect();
                    open.insert(key, OpenSession { run: RunId::from(session.run_id), files, due });
                }
                _ => {
                    open.remove(&key);
                }
            }
        }
        Ok(())
    }

    /// The sessions the import left open, each with when its files will
    /// have been still for the idle limit (milliseconds since the epoch).
    pub fn open_sessions(&self) -> Vec<(RunId, i64)> {
        self.open.borrow().values().map(|session| (session.run.clone(), session.due)).collect()
    }

    /// How long until the next open session is to be read on (none: no
    /// session is open).
    fn open_next_due(&self) -> Option<Duration> {
        let now = crate::clock::now().millis();
        let due = self.open.borrow().values().map(|session| session.due).min()?;
        Some(Duration::from_millis(u64::try_from(due.saturating_sub(now)).unwrap_or(0)))
    }

    /// The files of the open sessions due now, to be read on (and put off
    /// a moment, should the pass fail); `None` when none is due.
    fn open_due(&self) -> Option<Scope> {
        let now = crate::clock::now().millis();
        let mut files = std::collections::BTreeSet::new();
        for session in self.open.borrow_mut().values_mut().filter(|session| session.due <= now) {
            files.extend(session.files.iter().cloned());
            session.due = now + OPEN_AGAIN_MS;
        }
        (!files.is_empty()).then_some(Scope::Written(files))
    }

    /// Run `id` was passed on as its record is now (this follower wrote
    /// it outside a pass: a watch's idle end).
    pub fn passed_on(&self, home: &Home, id: &RunId) {
        self.reported.borrow_mut().insert(id.clone(), record_stamp(home, id));
    }

    /// `changed` (the runs this follower's pass recorded or changed), then
    /// each run whose record another process wrote since this follower
    /// last passed it on: with two followers on one home, the one that
    /// imports a change first is the only one whose import says so.
    pub fn with_others(&self, home: &Home, mut changed: Vec<RunId>) -> Vec<RunId> {
        let stamp = |id: &RunId| record_stamp(home, id);
        let recorded = std::mem::take(&mut *self.recorded.borrow_mut());
        let mut reported = self.reported.borrow_mut();
        for id in &changed {
            reported.insert(id.clone(), stamp(id));
        }
        for id in recorded {
            if changed.contains(&id) {
                continue;
            }
            let now = stamp(&id);
            // Gone since (a run removed), or as passed on already.
            if now.is_none() || reported.get(&id) == Some(&now) {
                continue;
            }
            reported.insert(id.clone(), now);
            changed.push(id);
        }
        changed
    }

    /// What ends the following.
    pub fn stopper(&self) -> Stopper {
        Stopper(self.sender.clone())
    }

    /// The next change (gathered), waiting at most `within` (none: as long
    /// as it takes).
    pub fn next_within(&self, within: Option<Duration>) -> Next {
        let first = match within {
            None => self.wakes.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            Some(within) => self.wakes.recv_timeout(within),
        };
        match first {
            Err(mpsc::RecvTimeoutError::Timeout) => Next::Quiet,
            Ok(Wake::Interrupt) | Err(mpsc::RecvTimeoutError::Disconnected) => Next::Stopped,
            Ok(wake) => self.gather(wake),
        }
    }

    /// After a change (`first`): the changes that follow it within
    /// [`GATHER`] (for at most [`GATHER_AT_MOST`]), as what to import
    /// ([`Next::Recorded`] when only records changed).
    fn gather(&self, first: Wake) -> Next {
        let started = Instant::now();
        let mut scope = None;
        if !self.take(first, &mut scope) {
            return Next::Stopped;
        }
        loop {
            match self.wakes.recv_timeout(GATHER) {
                Ok(wake) => {
                    if !self.take(wake, &mut scope) {
                        return Next::Stopped;
                    }
                    if started.elapsed() >= GATHER_AT_MOST {
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Next::Stopped,
            }
        }
        match scope {
            Some(scope) => Next::Changed(scope),
            None => Next::Recorded,
        }
    }

    /// Adds `wake` to what is gathered; false when it stops the follower.
    fn take(&self, wake: Wake, scope: &mut Option<Scope>) -> bool {
        match wake {
            Wake::Changed(written) => {
                let gathered = scope.take().unwrap_or_else(|| Scope::Written(std::collections::BTreeSet::new()));
                *scope = Some(widened(gathered, written));
                true
            }
            Wake::Recorded(ids) => {
                self.recorded.borrow_mut().extend(ids);
                true
            }
            Wake::Interrupt => false,
        }
    }
}

/// `scope` with the files of one more change (`None`: anything may have
/// changed, so everything is imported).
fn widened(scope: Scope, written: Option<Vec<PathBuf>>) -> Scope {
    match (scope, written) {
        (Scope::Written(mut files), Some(written)) => {
            files.extend(written);
            Scope::Written(files)
        }
        _ => Scope::Everything,
    }
}

/// A follower's lease and the changes it was told of: each change marks it
/// not current at once (from the watcher's thread), and a pass marks it
/// current only when none came since the pass began; one lock orders the
/// two, so a change told between the check and the mark is never lost.
struct Lease {
    lease: agentrace_store::FollowerLease,
    told: std::sync::Mutex<u64>,
    /// The watcher failed once (a folder it could not watch, say: out of
    /// inotify watches): changes may go untold from then on, so the lease
    /// never says current again.
    failed: std::sync::atomic::AtomicBool,
}

impl Lease {
    fn new(lease: agentrace_store::FollowerLease) -> Self {
        Self { lease, told: std::sync::Mutex::new(0), failed: std::sync::atomic::AtomicBool::new(false) }
    }

    /// The watcher failed: see [`Lease::failed`].
    fn watcher_failed(&self) {
        self.failed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.told();
    }

    /// A change was told.
    fn told(&self) {
        if let Ok(mut told) = self.told.lock() {
            *told += 1;
            // Unwritten, an import would trust a catalog a change is missing
            // from; said, and the lease is let go of.
            if let Err(error) = self.lease.mark(false) {
                eprintln!("warning: {error}");
            }
        }
    }

    /// How many changes were told so far.
    fn changes(&self) -> u64 {
        self.told.lock().map(|told| *told).unwrap_or(u64::MAX)
    }

    fn current_unless_told_since(&self, before: u64) {
        if let Ok(told) = self.told.lock() {
            if *told == before && !self.failed.load(std::sync::atomic::Ordering::SeqCst) {
                let _ = self.lease.mark(true);
            }
        }
    }
}

/// The files an event says were written to; `None` when it says something
/// else may have changed: a file or folder made, removed or renamed (only a
/// whole import finds where a new one goes), events lost (`Rescan`), or an
/// event with no path.
fn written_by(event: &notify::Event) -> Option<Vec<PathBuf>> {
    use notify::event::ModifyKind;
    let writes = matches!(event.kind, notify::EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Metadata(_) | ModifyKind::Any));
    (writes && !event.paths.is_empty() && !event.need_rescan()).then(|| event.paths.clone())
}

/// Starts watching `folders` (recursively), each change sent on `sender`:
/// with inotify, or by polling where inotify cannot be used (not there, or
/// out of watches); then with the warning to print.
fn watch(
    folders: &[PathBuf],
    runs: Option<&std::path::Path>,
    sender: &mpsc::Sender<Wake>,
    poll: bool,
    lease: &std::sync::Arc<std::sync::OnceLock<Lease>>,
) -> anyhow::Result<(Watching, Option<String>)> {
    let handler = {
        let sender = sender.clone();
        let lease = lease.clone();
        let runs = runs.map(std::path::Path::to_path_buf);
        move |event: notify::Result<notify::Event>| {
            // A file of the runs folder is no change to the agents' folders
            // (the lease is not about it): the records among them name
            // runs another process may have imported or ended.
            if let (Some(runs), Ok(event)) = (&runs, &event) {
                if !event.paths.is_empty() && event.paths.iter().all(|path| path.parent() == Some(runs.as_path())) {
                    let recorded = recorded_runs(event);
                    if !recorded.is_empty() {
                        let _ = sender.send(Wake::Recorded(recorded));
                    }
                    return;
                }
            }
            // Opening and reading a file (the import itself does) is no
            // change: the polling watcher is not asked for changes only.
            if is_change(&event) {
                match (lease.get(), &event) {
                    (Some(lease), Err(_)) => lease.watcher_failed(),
                    (Some(lease), Ok(_)) => lease.told(),
                    (None, _) => {}
                }
                let _ = sender.send(Wake::Changed(event.as_ref().ok().and_then(written_by)));
            }
        }
    };
    let native = if poll {
        Err(anyhow::anyhow!("polling was asked for"))
    } else {
        changes_watcher(handler.clone())
            .map_err(anyhow::Error::from)
            .and_then(|mut watcher| {
                watch_all(&mut watcher, folders)?;
                if let Some(runs) = runs {
                    use notify::Watcher as _;
                    watcher.watch(runs, notify::RecursiveMode::NonRecursive).with_context(|| format!("watching {}", runs.display()))?;
                }
                Ok(watcher)
            })
    };
    match native {
        Ok(watcher) => Ok((Watching::Native(watcher), None)),
        Err(error) => {
            let config = notify::Config::default().with_poll_interval(POLL_EVERY);
            let mut watcher = notify::PollWatcher::new(handler, config).context("starting the polling watcher")?;
            watch_all(&mut watcher, folders)?;
            let records = runs.map(|runs| RecordsPolling::start(runs, sender.clone()));
            let warning = (!poll).then(|| {
                format!(
                    "warning: cannot watch with inotify ({error:#}); polling every {} s instead\nhint: raise fs.inotify.max_user_watches if it ran out of watches",
                    POLL_EVERY.as_secs()
                )
            });
            Ok((Watching::Polling(watcher, records), warning))
        }
    }
}

/// Run `id`'s record's length and modification time (`None`: no record).
fn record_stamp(home: &Home, id: &RunId) -> Option<(u64, std::time::SystemTime)> {
    std::fs::metadata(home.record_path(id)).ok().and_then(|metadata| Some((metadata.len(), metadata.modified().ok()?)))
}

/// The runs whose records an event of the runs folder says were written
/// (made, renamed into place, or written to): `<id>.json` files.
fn recorded_runs(event: &notify::Event) -> Vec<RunId> {
    use notify::event::{ModifyKind, RenameMode};
    let written = matches!(
        event.kind,
        notify::EventKind::Create(_)
            | notify::EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any | ModifyKind::Name(RenameMode::To | RenameMode::Both | RenameMode::Any))
    );
    if !written {
        return Vec::new();
    }
    event
        .paths
        .iter()
        .filter_map(|path| path.file_name()?.to_str()?.strip_suffix(".json"))
        .filter_map(|id| agentrace_store::validate_run_id(id).ok())
        .collect()
}

fn watch_all(watcher: &mut dyn notify::Watcher, folders: &[PathBuf]) -> anyhow::Result<()> {
    for folder in folders {
        watcher
            .watch(folder, notify::RecursiveMode::Recursive)
            .with_context(|| format!("watching {}", folder.display()))?;
    }
    Ok(())
}

/// Prints `run`: as `{"event", "run"}` under `--json`, else as
/// `<run id> <what>`.
fn say_run(out: &mut Out, json: bool, event: &str, run: &RunSummary, what: &str) -> anyhow::Result<()> {
    if json {
        out.json(&Notice { event, run, warning: None })
    } else {
        Ok(out.line(format!("{} {what}", run.id))?)
    }
}

/// A run's status as the text line says it: the root's (SPEC §4), then
/// whether the session is not where that word leaves it, by the record's
/// `helpersWorking` and `sessionEnded` (the book's): `done (helpers
/// working)` while a helper works after the root's turn ended (a bare
/// `done` read as the session's end), `running (ended mid-turn)` once a
/// session ended with its root's turn open (nothing of it is at work). The
/// root's word comes first, as it did, for a script that reads it.
fn status_said(run: &RunSummary) -> String {
    if run.helpers_working {
        format!("{} (helpers working)", run.status.as_str())
    } else if run.session_ended {
        format!("{} (ended mid-turn)", run.status.as_str())
    } else {
        run.status.as_str().to_owned()
    }
}

/// `changed` (what this watch's pass recorded or changed, printed by it)
/// and the runs whose records another process wrote since, each printed
/// as the pass prints its own.
fn others_said(home: &Home, follower: &Follower, changed: Vec<RunId>, json: bool, out: &mut Out) -> anyhow::Result<Vec<RunId>> {
    let own = changed.len();
    let changed = follower.with_others(home, changed);
    let Some(others) = changed.get(own..).filter(|others| !others.is_empty()) else {
        return Ok(changed);
    };
    for run in home.list_these_runs(others.iter().cloned())? {
        say_run(out, json, "run", &run, &status_said(&run))?;
    }
    out.flush()?;
    Ok(changed)
}

/// One import of what changed; prints each run it recorded or changed
/// (`<run id> <status>`, or its notice as JSON) and returns their ids. A
/// last line still being written is left for the next pass.
fn pass(home: &Home, (import, resumes): (&ImportArgs, &crate::commands::import::Resumes), scope: &Scope, json: bool, out: &mut Out) -> anyhow::Result<Vec<RunId>> {
    let changed = crate::commands::import::import_following(home, import, scope, resumes)?;
    if changed.is_empty() {
        return Ok(changed);
    }
    for run in home.list_these_runs(changed.iter().cloned())? {
        say_run(out, json, "run", &run, &status_said(&run))?;
    }
    out.flush()?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(status: &str, result: Option<&str>, session_ended: bool) -> RunSummary {
        let mut run = serde_json::json!({
            "id": "run-x", "provider": "codex", "source": "codex-rollout", "status": status,
            "rootThreadId": null, "result": result, "resultSource": null, "error": null,
            "startedAt": null, "updatedAt": null, "endedAt": null,
            "counts": {"events": 0, "unknownActor": 0, "undecodedLines": 0, "unknownFrames": 0, "skippedLogLines": 0, "droppedBytes": 0},
            "tokens": null, "warningCount": 0
        });
        if session_ended {
            run["sessionEnded"] = serde_json::Value::Bool(true);
        }
        serde_json::from_value(run).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A session that ended with its root's turn open (idle past the limit,
    /// a crash) is told as ended mid-turn, as `runs` lists it: its summary
    /// read `<id> running`, for a session nothing is at work in.
    #[test]
    fn the_end_of_a_session_that_ended_mid_turn_is_told_as_such() {
        let told = [
            summary(&run_of("running", None, true), None),
            summary(&run_of("running", Some("the first answer"), true), None),
            summary(&run_of("done", Some("the answer"), false), None),
        ];
        assert_eq!(told, ["run-x ended mid-turn, no answer", "run-x ended mid-turn: the first answer", "run-x done: the answer"]);
    }

    /// A session an import left open whose files reach the idle limit
    /// after the watch began but before its first pass reads them (a pass
    /// a few hundred milliseconds late, on a loaded machine) is the
    /// watch's to end and tell, as when the pass comes sooner: the pass
    /// leaves it open and the watch follows it, due at once. When the pass
    /// judged the limit by the clock, its import ended the session, and
    /// the watch took it for one over before it began (printed as a `run`,
    /// no `idle`, its end never told). Every moment is given (the files'
    /// stamps, the earlier import's, the watch's start), none waited for.
    #[test]
    #[expect(clippy::disallowed_methods, reason = "the test writes the Codex home it imports, outside the agentrace home")]
    fn a_session_reaching_the_idle_limit_after_the_watch_began_is_the_watchs_to_end_however_late_its_first_pass() {
        const LIMIT: u64 = 30;
        let root = "01a2298c-93ba-7001-9862-9fd03c21f5d4";
        let name = format!("2026/11/29/rollout-2026-11-29T23-03-28-{root}.jsonl");
        let fixture = std::fs::read_to_string(agentrace_testkit::files::fixtures().join("codex/v1_basic/rollouts").join(&name)).unwrap_or_else(|e| panic!("{e}"));
        // Through the user's prompt: the root's turn is open, the session live.
        let lines: String = fixture.split_inclusive('\n').take(8).collect();
        let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = sources.path().join("codex/sessions").join(&name);
        std::fs::create_dir_all(path.parent().unwrap_or_else(|| panic!("no folder"))).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(sources.path().join("claude")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&path, lines).unwrap_or_else(|e| panic!("{e}"));
        // Written a minute ago: the files reached the limit 30 s ago.
        let written = std::time::SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options().append(true).open(&path).and_then(|file| file.set_modified(written)).unwrap_or_else(|e| panic!("{e}"));
        let written = i64::try_from(written.duration_since(std::time::UNIX_EPOCH).unwrap_or_else(|e| panic!("{e}")).as_millis()).unwrap_or_else(|e| panic!("{e}"));
        let after = |seconds: i64| Timestamp::from_millis(written + seconds * 1_000);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        let import = ImportArgs::quiet_of(Some(sources.path().join("codex")), Some(sources.path().join("claude"))).with_idle_limit(LIMIT);
        // An import 10 s after the files were written left the session open.
        let earlier = crate::commands::import::import_in(&home, &import.clone().with_idle_judged_at(after(10)), crate::sources::session_feed::TornLines::Feed, &Scope::Everything)
            .unwrap_or_else(|e| panic!("{e}"));
        let id = RunId::from(format!("codex-{root}"));
        assert_eq!(earlier, std::slice::from_ref(&id));
        let live_now = || live(home.fold_run(&id).unwrap_or_else(|e| panic!("{e}")).book());
        assert!(live_now());

        // The watch began 20 s after the files were written, 10 s before
        // they reached the limit; its first pass runs now, 30 s past it.
        let follower = Follower::start(&home, &import, false).unwrap_or_else(|e| panic!("{e}"));
        let mut out = Out::new();
        let (changed, idle) = first_pass(&home, (&import, after(20)), &follower, false, &mut out).unwrap_or_else(|e| panic!("{e}"));
        let followed: Vec<RunId> = idle.live.0.keys().cloned().collect();
        // Due at once: its time is past (a session still open past its time
        // is read again a moment later, see `Follower::track_open`).
        let due_at_once = idle.next_due().is_some_and(|due| due <= Duration::from_millis(u64::try_from(OPEN_AGAIN_MS).unwrap_or(0)));
        assert_eq!((changed, live_now(), followed, due_at_once), (Vec::new(), true, vec![id], true));
    }

    /// A change told marks the lease not current at once; a pass marks it
    /// current only when no change was told since it began.
    #[test]
    fn a_pass_marks_the_lease_current_only_when_no_change_came_while_it_ran() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        let taken = agentrace_store::FollowerLease::take(&home, "about").unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("not taken"));
        let lease = Lease::new(taken);
        let current = || home.follower().map(|state| state.current);
        assert_eq!(current(), Some(false), "not current before a first pass");
        let before = lease.changes();
        lease.current_unless_told_since(before);
        assert_eq!(current(), Some(true));
        // A change told while a pass ran: that pass leaves it not current.
        let before = lease.changes();
        lease.told();
        assert_eq!(current(), Some(false));
        lease.current_unless_told_since(before);
        assert_eq!(current(), Some(false));
        // The next pass, with nothing told meanwhile, makes it current.
        let before = lease.changes();
        lease.current_unless_told_since(before);
        assert_eq!(current(), Some(true));
        // Once the watcher failed, never again.
        lease.watcher_failed();
        assert_eq!(current(), Some(false));
        let before = lease.changes();
        lease.current_unless_told_since(before);
        assert_eq!(current(), Some(false));
    }
}
