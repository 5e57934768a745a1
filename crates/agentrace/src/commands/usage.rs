//! `agentrace usage`: tokens and cost per run (session), per agent (its own
//! and its subtree's), per model, per day, ISO week and month of the
//! requests, per project (the session's working folder) and per 5-hour
//! billing block. Reads the recorded runs, or
//! the provider folders straight (`--codex-home`, `--claude-dir`) without
//! writing anything. Replayed history is never counted: the attribution
//! already left it out.
//!
//! Token fields follow ccusage's convention so totals compare:
//! `inputTokens` excludes cache reads and writes, `cachedInputTokens` are
//! cache reads, `cacheCreationTokens` cache writes, `outputTokens` as
//! reported (Codex output includes reasoning), `reasoningTokens`
//! informational, `totalTokens` as the provider reports the total.
//!
//! Costs come from the fold (each request priced on its own by
//! [`agentrace_core::prices`]); this module adds them up and says how
//! complete they are (`costStatus`, `incomplete`, `unpricedModels`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agentrace_core::days;
use agentrace_core::model::{RunId, Timestamp};
use agentrace_core::prices::PriceBook;
use agentrace_core::recorder::Format;
use agentrace_core::state::CostStatus;
use agentrace_core::Recorder;
use agentrace_store::catalog::{LogStampRow, UsageHead, UsageListed};
use agentrace_store::{Catalog, Home, Packed};
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::sources::claude_ingest::{claude_cwd, claude_start, feed_claude, sessions_by_project, FoundSession as FoundClaude};
use crate::sources::codex_sessions::{codex_sessions_said, CodexSessions};
use crate::sources::rollouts::{codex_start, feed_rollouts, RolloutHead};
use crate::output::Out;
use crate::day_range::DayArg;
use crate::zone::Zone;
use crate::usage_index::{keep_tree, session, split_report, AgentUsage, Counters, HourRow, LogStamp, SessionUsage, UsageNode, UsageTree, TREE_FORMAT};

/// Arguments of `agentrace usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Group by run (session), agent, model, day, week, month, project
    /// or block (5-hour billing window).
    #[arg(long, value_enum, default_value_t = By::Run)]
    pub by: By,
    /// Count from this day (of `--tz`, included): requests by their time
    /// for the groupings by model, day, week, month, project and block;
    /// sessions by their start for `--by run` and `--by agent`. The day is
    /// `YYYY-MM-DD`, `YYYYMMDD`, `today`, `yesterday`, `7d` (days ago) or
    /// `2w` (weeks ago).
    #[arg(long, value_name = "D", value_parser = crate::day_range::parse_day)]
    pub since: Option<DayArg>,
    /// Count up to this day (of `--tz`, included), as `--since`.
    #[arg(long, value_name = "D", value_parser = crate::day_range::parse_day)]
    pub until: Option<DayArg>,
    /// The time zone of the days, weeks and months: `UTC`, `local` (this
    /// machine's), a name like `Europe/Paris`, or an offset like `+05:30`.
    /// Default: `$AGENTRACE_TZ`, else UTC.
    #[arg(long, value_name = "ZONE", value_parser = crate::zone::parse_zone)]
    pub tz: Option<Zone>,
    /// Each day, week, month, project or block also split by model (a
    /// `models` object in each group with `--json`; rows under it in the
    /// table), as ccusage's `--breakdown`.
    #[arg(long)]
    pub breakdown: bool,
    /// Only the sessions of this provider (recorded, or read from its
    /// folder only).
    #[arg(long, value_enum)]
    pub provider: Option<crate::commands::runs::ProviderArg>,
    /// Read this Codex home straight (nothing is recorded).
    #[arg(long, value_name = "DIR")]
    pub codex_home: Option<PathBuf>,
    /// Read this Claude Code config dir straight (nothing is recorded).
    #[arg(long, value_name = "DIR")]
    pub claude_dir: Option<PathBuf>,
    /// Prices per million tokens by model, JSON (see the README); they
    /// override and extend the price database.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Runs to count (default: every recorded run).
    pub runs: Vec<String>,
}

impl UsageArgs {
    /// The zone of its days and times: `--tz`, else `AGENTRACE_TZ`'s.
    pub fn zone(&self) -> &Zone {
        crate::zone::given_or_env(self.tz.as_ref())
    }
}

/// Grouping of `usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum By {
    /// One row per run (session), with its agents.
    Run,
    /// One row per agent.
    Agent,
    /// One row per model.
    Model,
    /// One row per day of the requests (of `--tz`, UTC unless told).
    Day,
    /// One row per ISO week (`YYYY-Www`, of `--tz`) of the requests.
    Week,
    /// One row per month (`YYYY-MM`, of `--tz`) of the requests.
    Month,
    /// One row per project: the session's working folder.
    Project,
    /// One row per 5-hour billing block, as ccusage's `blocks` makes them.
    Block,
}

/// Milliseconds in a billing block.
const BLOCK_MS: i64 = 5 * 3_600_000;

/// The days `--since` and `--until` leave in, as times: from `since`
/// (included) to the end of `until`.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    since: Option<Timestamp>,
    until: Option<Timestamp>,
}

impl Window {
    /// From the start of `--since`'s day to the end of `--until`'s, in
    /// `--tz`.
    fn of(args: &UsageArgs) -> anyhow::Result<Self> {
        let crate::day_range::Range { since, until } = crate::day_range::range(args.since.as_ref(), args.until.as_ref(), args.zone())?;
        Ok(Self { since, until })
    }

    fn is_open(&self) -> bool {
        self.since.is_none() && self.until.is_none()
    }

    /// Whether a time falls in it; an unknown time only when it is open.
    /// An hour's bucket is in when its start is: usage is kept by UTC hour,
    /// and a day begins on an hour but in a zone of a half or quarter hour's
    /// offset (`--tz`), where the hour around midnight counts on the day it
    /// began.
    fn holds(&self, at: Option<Timestamp>) -> bool {
        match at {
            None => self.is_open(),
            Some(at) => self.since.is_none_or(|since| at >= since) && self.until.is_none_or(|until| at < until),
        }
    }
}

/// The book every fold of a command prices with: a `--prices` file's,
/// else the home's (its `prices.json`, or the database alone).
pub fn load_prices(home: &Home, file: Option<&PathBuf>) -> anyhow::Result<Arc<PriceBook>> {
    match file {
        // Over the database the home prices by (a newer one it keeps).
        Some(file) => Ok(agentrace_store::prices::read_price_file(file, home.prices().data().cloned())?),
        None => Ok(home.prices()),
    }
}

/// The head of a listed run's kept usage when it still matches its log
/// (stamped `log` now), checked without reading the tree. The log is
/// stat'ed, not trusted to be as the catalog last saw it: a finished run's
/// log rewritten in place leaves its folder's stamp as it was, which is
/// all [`Catalog::sync`] looks at then.
fn fresh_head<'l>(listed: &'l UsageListed, log: Option<LogStamp>, prices: &str) -> Option<&'l UsageHead> {
    let log = LogStampRow::from(log?);
    listed.head.as_ref().filter(|head| head.log == log && head.prices == prices && head.format == TREE_FORMAT)
}

/// One session found in the provider folders.
enum FoundSession {
    /// A Codex session: its root's id and its rollouts.
    Codex(String, Vec<RolloutHead>),
    Claude(FoundClaude),
}

/// The sessions in the provider folders, Codex first, in the folders'
/// order, each made as it is asked for (a Codex session's rollouts are
/// unpacked or merged then).
fn found_in_folders(args: &UsageArgs) -> anyhow::Result<impl Iterator<Item = anyhow::Result<FoundSession>>> {
    use crate::commands::runs::ProviderArg;
    // `--provider` reads the other provider's folder not at all.
    let codex_home = args.codex_home.as_ref().filter(|_| args.provider != Some(ProviderArg::Claude));
    let claude_dir = args.claude_dir.as_ref().filter(|_| args.provider != Some(ProviderArg::Codex));
    let codex = match codex_home {
        Some(dir) => {
            if !dir.is_dir() {
                eprintln!("warning: {} is not a folder; no Codex session is read from it", dir.display());
            }
            let (sessions, headless, unreadable) = codex_sessions_said(dir)?;
            for why in &headless {
                eprintln!("warning: {why}; the rollout is left out of this report (a child of it is counted as a session of its own)");
            }
            for why in &unreadable {
                eprintln!("warning: {why}; the rollouts in it are left out of this report");
            }
            sessions
        }
        None => CodexSessions::default(),
    };
    // A project folder at a time.
    // A folder (or transcript) that is not there is said, as for Codex
    // and as `import` says it, not an error: `--claude-dir` of a typo
    // exited 1 where `--codex-home` of one warned.
    let claude = match claude_dir {
        Some(dir) if !dir.exists() => {
            eprintln!("warning: {} is not a folder; no Claude Code session is read from it", dir.display());
            None
        }
        Some(dir) => Some(sessions_by_project(dir)?),
        None => None,
    };
    let claude = claude.into_iter().flatten().flat_map(|project| match project {
        Ok(sessions) => sessions.into_iter().map(|found| Ok(FoundSession::Claude(found))).collect::<Vec<_>>(),
        Err(error) => vec![Err(error)],
    });
    let codex = codex.map(|session| session.map(|(root, files)| FoundSession::Codex(root, files)));
    Ok(codex.chain(claude))
}

/// How many sessions are attributed at once when the report is streamed:
/// enough to keep every core busy, few enough that memory stays flat.
const STREAM_CHUNK: usize = 256;

/// Attributes sessions straight from provider folders, in memory, on
/// every core (sessions are independent; the order stays the folders'),
/// with how many were left out (a file of each unreadable).
fn attribute(found: &[FoundSession], prices: &Arc<PriceBook>) -> anyhow::Result<(Vec<SessionUsage>, u64)> {
    let attributed = crate::parallel::map(found, |found| attribute_or_left_out(found, prices))?;
    let left_out = attributed.iter().filter(|session| session.is_none()).count() as u64;
    Ok((attributed.into_iter().flatten().collect(), left_out))
}

/// [`attribute_one`], or `None` for a session with a file that cannot be
/// read (unreadable, gone since it was listed), said on stderr: one such
/// file stopped the whole report (exit 1), as it stopped an import.
fn attribute_or_left_out(found: &FoundSession, prices: &Arc<PriceBook>) -> anyhow::Result<Option<SessionUsage>> {
    match attribute_one(found, prices) {
        Ok(session) => Ok(Some(session)),
        Err(error) if error.chain().any(|cause| cause.is::<std::io::Error>()) => {
            let (provider, key) = match found {
                FoundSession::Codex(root, _) => ("Codex", root.as_str()),
                FoundSession::Claude(found) => ("Claude", found.session_id()),
            };
            eprintln!("warning: {error:#}; the {provider} session {key} is left out of this report (its tokens are not counted)");
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Attributes one session found in the folders, in memory.
fn attribute_one(found: &FoundSession, prices: &Arc<PriceBook>) -> anyhow::Result<SessionUsage> {
    // Nothing is stored, so redacting secrets would be wasted work.
    match found {
        FoundSession::Codex(root, files) => {
            let mut recorder = Recorder::new(RunId::from(format!("codex-{root}")), Format::CodexRollout)
                .for_usage()
                .with_prices(Arc::clone(prices));
            let _ = recorder.start(codex_start(files));
            feed_rollouts(&mut recorder, files, &mut |_| Ok(()))?;
            Ok(session(&UsageTree::of(&recorder.state().view(), LogStamp::default(), prices.id()), None))
        }
        FoundSession::Claude(found) => {
            let files = &found.files()?;
            let mut recorder =
                Recorder::new(RunId::from(format!("claude-{}", files.session_id)), Format::ClaudeTranscript)
                    .for_usage()
                    .with_prices(Arc::clone(prices));
            // The session's start, read once: the recorder starts at it and
            // the feed gives it to lines that name no time.
            let start = claude_start(files);
            let _ = recorder.start(start);
            feed_claude(&mut recorder, files, start, &mut |_| Ok(()))?;
            // The folder the root's lines named (its `thread_started`); a
            // session whose lines name none is looked up in its first lines,
            // as `import` does: never read twice.
            let mut view = recorder.state().view();
            if view.usage.cwd.is_none() {
                view.usage.cwd = claude_cwd(files);
            }
            let mut tree = UsageTree::of(&view, LogStamp::default(), prices.id());
            tree.session_id = files.session_id.clone();
            Ok(session(&tree, None))
        }
    }
}

/// The `--json --by run` report of sessions, written as they come (a
/// chunk at a time): the sessions of a large history are never held
/// together, so memory does not grow with it. Each of `items` (a session
/// found, a run's tree read) is made into its session on the pool, which
/// serializes it there too ([`WrittenSession`]; `None` leaves it out),
/// while the next chunk of items is taken and the chunk before written.
/// The totals, written last, are summed on the way, in the sessions'
/// order. A session that cannot be read ends the report with that error
/// (after the sessions before it).
struct StreamedReport<I, W> {
    items: std::cell::RefCell<Option<I>>,
    work: W,
    chunk: usize,
    totals: std::cell::Cell<Counters>,
    unpriced: std::cell::RefCell<Unpriced>,
}

impl<T, I, W> StreamedReport<I, W>
where
    T: Send + Sync,
    I: Iterator<Item = anyhow::Result<T>>,
    W: Fn(&T) -> anyhow::Result<Option<WrittenSession>> + Sync,
{
    fn of(items: I, work: W, chunk: usize) -> Self {
        Self {
            items: std::cell::RefCell::new(Some(items)),
            work,
            chunk,
            totals: std::cell::Cell::new(Counters::default()),
            unpriced: std::cell::RefCell::new(Unpriced::default()),
        }
    }
}

/// A session of the streamed report, serialized where it was made (on a
/// worker): serializing every session on the thread that writes the
/// report was as long as reading them on all cores. What the report sums
/// is kept beside it.
struct WrittenSession {
    counters: Counters,
    unpriced: Unpriced,
    /// The session as the report's pretty JSON has it, at its depth.
    json: String,
}

/// How deep a session sits in the report: `{"sessions": [here]}`.
const SESSION_DEPTH: usize = 2;

impl WrittenSession {
    fn of(session: &SessionUsage) -> anyhow::Result<Self> {
        Ok(Self {
            counters: session.counters,
            unpriced: Unpriced(session.unpriced()),
            json: crate::output::pretty_fragment(session, SESSION_DEPTH)?,
        })
    }

    /// `session`, when `window` holds its start (the groupings of whole
    /// sessions place each by its start).
    fn in_window(session: &SessionUsage, window: &Window) -> anyhow::Result<Option<Self>> {
        window.holds(session.started_at).then(|| Self::of(session)).transpose()
    }

    /// A session of `kept`, its report as the catalog keeps it (see
    /// [`crate::usage_index::Kept::of`]): `Some(None)` when `window` leaves
    /// it out, `None` when it does not read.
    fn of_kept(kept: &str, window: &Window) -> Option<Option<Self>> {
        let (sums, report) = split_report(kept)?;
        if !window.holds(sums.started_at) {
            return Some(None);
        }
        Some(Some(Self {
            counters: sums.counters,
            unpriced: Unpriced(sums.unpriced),
            json: crate::output::pretty_from_compact(report, SESSION_DEPTH),
        }))
    }
}

/// Tokens no price was found for, by model.
#[derive(Debug, Default)]
struct Unpriced(BTreeMap<String, u64>);

impl Unpriced {
    fn note_row(&mut self, row: &HourRow) {
        self.add(row.model.as_ref(), row.counters.unpriced_tokens);
    }

    fn note(&mut self, session: &SessionUsage) {
        self.merge(Unpriced(session.unpriced()));
    }

    fn add(&mut self, model: Option<&String>, tokens: u64) {
        if tokens > 0 {
            *self.0.entry(model.cloned().unwrap_or_else(|| "unknown".to_owned())).or_default() += tokens;
        }
    }

    /// Adds `other`'s tokens (a session's, noted where it was made).
    fn merge(&mut self, other: Unpriced) {
        for (model, tokens) in other.0 {
            *self.0.entry(model).or_default() += tokens;
        }
    }

    /// Says on stderr which models had no price: their cost is missing
    /// from every figure that includes them. Where nothing of `totals`
    /// was priced no cost is shown at all (`?`), which is no floor.
    fn warn(&self, totals: &Counters) {
        let shown = match totals.cost_status {
            CostStatus::Unknown => "nothing was priced, so no cost is shown",
            CostStatus::Exact | CostStatus::Floor => "cost shown is a floor",
        };
        for (model, tokens) in &self.0 {
            eprintln!("warning: no price for {model} ({}); {shown}", crate::render::count(*tokens, "token", "tokens"));
        }
        if !self.0.is_empty() {
            eprintln!("hint: `agentrace prices` lists the prices found; prices.json in the agentrace home prices the others (see the README)");
        }
    }
}

impl Serialize for Unpriced {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Row<'a> {
            model: &'a str,
            tokens: u64,
        }
        serializer.collect_seq(self.0.iter().map(|(model, tokens)| Row { model, tokens: *tokens }))
    }
}

impl<T, I, W> StreamedReport<I, W>
where
    T: Send + Sync,
    I: Iterator<Item = anyhow::Result<T>>,
    W: Fn(&T) -> anyhow::Result<Option<WrittenSession>> + Sync,
{
    /// Writes the report as pretty JSON, the sessions as they are made:
    /// byte for byte what serializing it whole with serde_json's pretty
    /// layout writes (a test compares them). Written here rather than
    /// through serde, whose only way to take a fragment whole
    /// (`RawValue`) parses each one again to check it: a seventh of the
    /// command's CPU after an import.
    /// `left_out` counts the sessions the work left out (a file of each
    /// unreadable), read once every session is made: `leftOut` after the
    /// totals when there are some.
    fn write_to(&self, out: &mut dyn std::io::Write, left_out: &std::sync::atomic::AtomicU64) -> anyhow::Result<()> {
        out.write_all(b"{\n  \"sessions\": [")?;
        let mut first = true;
        let items = self.items.borrow_mut().take().into_iter().flatten();
        crate::parallel::map_streamed(items, self.chunk, &self.work, |session| -> anyhow::Result<()> {
            let Some(session) = session? else {
                return Ok(());
            };
            let mut totals = self.totals.get();
            totals.add(&session.counters);
            self.totals.set(totals);
            self.unpriced.borrow_mut().merge(session.unpriced);
            out.write_all(if first { b"\n    " } else { b",\n    " })?;
            out.write_all(session.json.as_bytes())?;
            first = false;
            Ok(())
        })?;
        if !first {
            out.write_all(b"\n  ")?;
        }
        out.write_all(b"],\n  \"totals\": ")?;
        out.write_all(crate::output::pretty_fragment(&self.totals.get(), 1)?.as_bytes())?;
        out.write_all(b",\n  \"unpricedModels\": ")?;
        out.write_all(crate::output::pretty_fragment(&*self.unpriced.borrow(), 1)?.as_bytes())?;
        let left_out = left_out.load(std::sync::atomic::Ordering::Relaxed);
        if left_out > 0 {
            out.write_all(format!(",\n  \"leftOut\": {left_out}").as_bytes())?;
        }
        out.write_all(b"\n}\n")?;
        Ok(())
    }
}

/// Each session counted once: a session recorded live and imported
/// (`run codex` or `ingest`, then `import` of its rollouts), or ingested
/// twice, is in several runs, and summing them counted its tokens twice.
/// The run with the most tokens stands for it (the most complete record),
/// in the place of the session's first run; each such choice is said on
/// stderr.
fn once_per_session(runs: Vec<Recorded>) -> Vec<Recorded> {
    let mut kept: Vec<Recorded> = Vec::with_capacity(runs.len());
    let mut at: std::collections::HashMap<(String, String), usize> = std::collections::HashMap::new();
    for run in runs {
        let key = (run.place.provider.clone(), run.place.session_id.clone());
        let Some(&index) = at.get(&key) else {
            at.insert(key, kept.len());
            kept.push(run);
            continue;
        };
        count_once(&mut kept[index], run, |run| (&run.place.provider, &run.place.session_id, run.id.as_str(), run.place.total_tokens));
    }
    kept
}

/// What [`count_once`] reads of a run: its provider, session, run id and
/// total tokens.
type RunOf<T> = for<'r> fn(&'r T) -> (&'r str, &'r str, &'r str, u64);

/// Of two runs of one session, leaves in `counted` the one with the most
/// tokens (the one already there on a tie), and says so on stderr.
fn count_once<T>(counted: &mut T, mut other: T, of: RunOf<T>) {
    if of(&other).3 > of(counted).3 {
        std::mem::swap(counted, &mut other);
    }
    let ((provider, session, kept, _), (_, _, other, _)) = (of(counted), of(&other));
    eprintln!("note: {provider} session {session} is recorded by runs {kept} and {other}; counted once, from {kept}");
}

/// A recorded run as `usage` first lists it: what placing it in the report
/// takes. Its usage is read again once its place is known (or kept, when
/// folded from its log), so the runs' trees are never held together.
struct Recorded {
    id: RunId,
    place: Place,
    usage: RecordedUsage,
}

/// What places a run in the report: when it started, its session (a
/// session in several runs is counted once, from the run with the most
/// tokens).
struct Place {
    provider: String,
    session_id: String,
    total_tokens: u64,
}

impl Place {
    fn of(tree: &UsageTree) -> Self {
        Self {
            provider: tree.provider.as_str().to_owned(),
            session_id: tree.session_id.clone(),
            total_tokens: tree.agents.iter().map(UsageNode::total_tokens).sum(),
        }
    }

    fn of_head(head: &UsageHead) -> Self {
        Self {
            provider: head.provider.clone(),
            session_id: head.session_id.clone(),
            total_tokens: head.total_tokens,
        }
    }
}

/// Where a recorded run's usage is.
enum RecordedUsage {
    /// In the catalog, at the run's row when the listing said it.
    Kept(Option<i64>),
    /// Folded from its log (not kept, or kept for another state of it).
    Folded(Box<UsageTree>),
}

impl Recorded {
    /// The run's session, its usage read from `catalog` when kept.
    fn session(self, catalog: &Catalog, home: &Home, prices: &Arc<PriceBook>) -> anyhow::Result<SessionUsage> {
        self.tree(catalog)?.session(home, prices)
    }

    /// The run's usage tree, read from `catalog` when kept (as its packed
    /// text: the catalog is read here, the text unpacked and parsed where
    /// [`ReadTree::session`] is called).
    fn tree(self, catalog: &Catalog) -> anyhow::Result<ReadTree> {
        let tree = match self.usage {
            RecordedUsage::Kept(row) => {
                let packed = match row {
                    Some(row) => catalog.usage_tree_at(row, self.id.as_str())?,
                    None => catalog.usage_tree(self.id.as_str())?,
                };
                packed.map_or(TreeOf::Gone, TreeOf::Kept)
            }
            RecordedUsage::Folded(tree) => TreeOf::Tree(tree),
        };
        Ok(ReadTree { id: self.id, tree })
    }

    /// The run's session as `usage --json` reports it, read from
    /// `catalog` when kept (else its tree, as [`Recorded::tree`] reads it).
    fn report(self, catalog: &Catalog) -> anyhow::Result<ReadTree> {
        if let RecordedUsage::Kept(row) = &self.usage {
            let packed = match row {
                Some(row) => catalog.usage_report_at(*row, self.id.as_str())?,
                None => catalog.usage_report(self.id.as_str())?,
            };
            if let Some(packed) = packed {
                return Ok(ReadTree { id: self.id, tree: TreeOf::Report(packed) });
            }
        }
        self.tree(catalog)
    }
}

/// A recorded run's usage as read from the catalog or folded.
struct ReadTree {
    id: RunId,
    tree: TreeOf,
}

enum TreeOf {
    /// Its kept tree.
    Kept(Packed),
    /// Its kept report.
    Report(Packed),
    /// Folded from its log.
    Tree(Box<UsageTree>),
    /// Kept when it was listed, gone from the catalog since.
    Gone,
}

impl ReadTree {
    /// The run's session. What was kept of it and no longer reads (gone
    /// since it was listed, or damaged) is folded from its log: the
    /// catalog is derived data, never a reason to fail.
    fn session(&self, home: &Home, prices: &Arc<PriceBook>) -> anyhow::Result<SessionUsage> {
        let kept = match &self.tree {
            TreeOf::Tree(tree) => return Ok(session(tree, Some(&self.id))),
            TreeOf::Kept(packed) => packed.unpack("usage tree").ok().and_then(|json| sonic_rs::from_str::<UsageTree>(&json).ok()),
            TreeOf::Report(_) | TreeOf::Gone => None,
        };
        let tree = match kept {
            Some(tree) => tree,
            None => UsageTree::of(&home.load_run_with(&self.id, Arc::clone(prices))?.view(), LogStamp::default(), prices.id()),
        };
        Ok(session(&tree, Some(&self.id)))
    }

    /// The run's session as the streamed report writes it, `None` when
    /// `window` leaves it out. A kept report is written as it is kept,
    /// indented, never parsed: its sums are read from the line before it.
    fn written(&self, window: &Window, home: &Home, prices: &Arc<PriceBook>) -> anyhow::Result<Option<WrittenSession>> {
        if let TreeOf::Report(packed) = &self.tree {
            if let Some(written) = packed.unpack("usage report").ok().and_then(|text| WrittenSession::of_kept(&text, window)) {
                return Ok(written);
            }
        }
        WrittenSession::in_window(&self.session(home, prices)?, window)
    }
}

/// Recorded runs, each made as it is asked for.
type RecordedRuns = Box<dyn Iterator<Item = anyhow::Result<Recorded>>>;

/// The recorded runs `usage` reports (those named, else every run: newest
/// first, as `agentrace runs` lists them), one per session, as they are
/// asked for; with the catalog their usage is read from.
fn recorded_runs(home: &Home, args: &UsageArgs, prices: &Arc<PriceBook>) -> anyhow::Result<(RecordedRuns, Catalog)> {
    let catalog = crate::catalog::synced(home)?;
    let provider = args.provider.map(|provider| agentrace_core::model::Provider::from(provider).as_str());
    if args.runs.is_empty() {
        let runs = every_run(home, &catalog, prices, provider)?;
        // The trees are then read one by one in one read transaction.
        catalog.begin_read()?;
        return Ok((runs, catalog));
    }
    let mut runs = Vec::with_capacity(args.runs.len());
    for run in &args.runs {
        let id = home.resolve(run)?;
        let listed = catalog.usage_listed(id.as_str())?;
        let stamp = LogStamp::of(home, &id);
        runs.push(recorded(home, &catalog, (id, stamp), listed.as_ref(), prices)?);
    }
    runs.retain(|run| provider.is_none_or(|provider| run.place.provider == provider));
    let runs = once_per_session(runs);
    catalog.begin_read()?;
    Ok((Box::new(runs.into_iter().map(Ok)), catalog))
}

/// Run `id` as `usage` lists it: its usage from the catalog when kept for
/// its log as it is, else folded from its log (and kept, when priced by
/// the database alone, so the next `usage` need not fold it again).
fn recorded(home: &Home, catalog: &Catalog, (id, stamp): (RunId, Option<LogStamp>), listed: Option<&UsageListed>, prices: &Arc<PriceBook>) -> anyhow::Result<Recorded> {
    Ok(match listed.and_then(|listed| fresh_head(listed, stamp, prices.id())) {
        Some(head) => Recorded {
            id,
            place: Place::of_head(head),
            usage: RecordedUsage::Kept(listed.map(|listed| listed.row)),
        },
        None => {
            let log = stamp.unwrap_or_default();
            let tree = UsageTree::of(&home.load_run_with(&id, Arc::clone(prices))?.view(), log, prices.id());
            let place = Place::of(&tree);
            if prices.id() == home.prices().id() && log.bytes > 0 {
                // Best effort: a catalog another process holds only means
                // folding again next time.
                if keep_tree(catalog, &id, &tree).is_ok() {
                    return Ok(Recorded { id, place, usage: RecordedUsage::Kept(listed.map(|listed| listed.row)) });
                }
            }
            Recorded {
                id,
                place,
                usage: RecordedUsage::Folded(Box::new(tree)),
            }
        }
    })
}

/// Every recorded run, newest first, one per session (as
/// [`once_per_session`] chooses), listed from the catalog. What is held
/// per run is its place (id, time, session, tokens), a few dozen bytes:
/// 50,000 runs hold a few MB.
fn every_run(home: &Home, catalog: &Catalog, prices: &Arc<PriceBook>, provider: Option<&str>) -> anyhow::Result<RecordedRuns> {
    let listing = catalog.usage_listing()?;
    if listing.is_empty() {
        eprintln!(
            "hint: no runs are recorded in {} yet: `agentrace import` records your Codex and Claude sessions, or read them straight with `agentrace usage --codex-home DIR --claude-dir DIR`",
            home.root().display()
        );
    }
    // Each log's stamp is a stat: thousands, on every core, each by name
    // through the runs folder's handle (none when there is no folder, so
    // no log).
    let folder = home.runs_folder();
    let stamps = crate::parallel::map_small(&listing, |listed| {
        let folder = folder.as_ref()?;
        folder.log_stamp(&RunId::from(listed.id.as_str())).map(LogStamp::from)
    });
    let mut runs = Vec::with_capacity(listing.len());
    catalog.begin()?;
    for (listed, stamp) in listing.into_iter().zip(stamps) {
        let id = RunId::from(listed.id.as_str());
        match recorded(home, catalog, (id.clone(), stamp), Some(&listed), prices) {
            // Only `--provider`'s, when given.
            Ok(run) if provider.is_some_and(|provider| run.place.provider != provider) => {}
            Ok(run) => runs.push(run),
            // Deleted since the catalog was synced: no longer a run.
            Err(_) if !home.log_path(&id).exists() => continue,
            Err(error) => {
                let _ = catalog.commit();
                return Err(error);
            }
        }
    }
    catalog.commit()?;
    Ok(Box::new(once_per_session(runs).into_iter().map(Ok)))
}

/// Every session `args` names (recorded runs, or the folders straight),
/// priced by `prices`.
pub fn sessions(home: &Home, args: &UsageArgs, prices: &Arc<PriceBook>) -> anyhow::Result<Vec<SessionUsage>> {
    Ok(sessions_counted(home, args, prices)?.0)
}

/// [`sessions`], with how many sessions straight from the folders were
/// left out (a file of each unreadable; recorded runs leave none out).
fn sessions_counted(home: &Home, args: &UsageArgs, prices: &Arc<PriceBook>) -> anyhow::Result<(Vec<SessionUsage>, u64)> {
    if args.codex_home.is_some() || args.claude_dir.is_some() {
        attribute(&found_in_folders(args)?.collect::<anyhow::Result<Vec<_>>>()?, prices)
    } else {
        let (runs, catalog) = recorded_runs(home, args, prices)?;
        Ok((runs.map(|run| run?.session(&catalog, home, prices)).collect::<anyhow::Result<_>>()?, 0))
    }
}

/// `report` with `leftOut` after its members when sessions were left out,
/// as `--json` by run has it: a grouping's report looked whole when only
/// stderr said a session was missing from it.
fn with_left_out(mut report: serde_json::Value, left_out: u64) -> serde_json::Value {
    if let (Some(members), true) = (report.as_object_mut(), left_out > 0) {
        members.insert("leftOut".to_owned(), left_out.into());
    }
    report
}

/// Runs `agentrace usage`.
pub fn run(home: &Home, args: &UsageArgs, out: &mut Out) -> anyhow::Result<()> {
    anyhow::ensure!(
        !args.breakdown || matches!(args.by, By::Day | By::Week | By::Month | By::Project | By::Block),
        "--breakdown splits a day, week, month, project or block by model: use it with --by day, week, month, project or block (--by model is one row per model, --by run and --by agent give each agent's own)"
    );
    let prices = load_prices(home, args.prices.as_ref())?;
    let straight = args.codex_home.is_some() || args.claude_dir.is_some();
    // Recorded runs counted while an import still brings them in: said, so
    // a partial total is not taken for the whole.
    if !straight && home.background_import().is_some() {
        eprintln!("{}", crate::commands::runs::IMPORT_AT_WORK);
    }
    if straight {
        // While the folders are listed: on the first request priced, the
        // other worker waited for it (15 to 20 ms here).
        crate::home_files::warm_prices_beside(Arc::clone(&prices));
    }
    let window = Window::of(args)?;
    if args.json && args.by == By::Run {
        let (unpriced, totals) = if straight {
            let left_out = std::sync::atomic::AtomicU64::new(0);
            let report = StreamedReport::of(
                found_in_folders(args)?,
                |found| match attribute_or_left_out(found, &prices)? {
                    Some(session) => WrittenSession::in_window(&session, &window),
                    None => {
                        left_out.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        Ok(None)
                    }
                },
                STREAM_CHUNK,
            );
            report.write_to(out.writer(), &left_out)?;
            (report.unpriced.take(), report.totals.get())
        } else {
            let (runs, catalog) = recorded_runs(home, args, &prices)?;
            // The catalog is read on this thread; the reports are unpacked
            // and laid out (or the trees parsed and serialized) on the pool.
            let trees = runs.map(|run| run?.report(&catalog));
            let report = StreamedReport::of(trees, |tree| tree.written(&window, home, &prices), STREAM_CHUNK);
            report.write_to(out.writer(), &std::sync::atomic::AtomicU64::new(0))?;
            (report.unpriced.take(), report.totals.get())
        };
        unpriced.warn(&totals);
        return Ok(());
    }
    let (mut sessions, left_out) = sessions_counted(home, args, &prices)?;
    if matches!(args.by, By::Run | By::Agent) {
        sessions.retain(|session| window.holds(session.started_at));
    }
    let mut totals = Counters::default();
    let mut unpriced = Unpriced::default();
    for session in &sessions {
        totals.add(&session.counters);
        unpriced.note(session);
    }
    match args.by {
        By::Run => {
            // The table (`--json` is streamed above): each session, then
            // its agents under it (indented by depth) with their own
            // counters and, for a spawner, the total of its subtree; then
            // what is outside its tree.
            let rows = sessions.iter().flat_map(|session| {
                let depth = depths(&session.agents);
                let head = (format!("{} {}", session.provider, session.session_id), session.counters, None);
                let outside = session
                    .outside_tree
                    .iter()
                    .map(|row| (format!("  {} (outside the tree)", row.label), row.counters, None));
                std::iter::once(head)
                    .chain(session.agents.iter().map(move |agent| {
                        let indent = "  ".repeat(1 + depth.get(agent.thread_id.as_str()).copied().unwrap_or(0));
                        let spawner = session.agents.iter().any(|other| other.parent_thread_id.as_deref() == Some(agent.thread_id.as_str()));
                        (format!("{indent}{}", agent.label), agent.own, spawner.then_some(agent.subtree.total_tokens))
                    }))
                    .chain(outside)
            });
            counters_table(out, "SESSION / AGENT (own tokens)", rows, &totals, true)?;
        }
        By::Agent => {
            let rows: Vec<serde_json::Value> = sessions
                .iter()
                .flat_map(|s| s.agents.iter().map(move |a| serde_json::json!({"sessionId": s.session_id, "provider": s.provider, "agent": a})))
                .collect();
            let outside: Vec<serde_json::Value> = sessions
                .iter()
                .flat_map(|s| s.outside_tree.iter().map(move |row| serde_json::json!({"sessionId": s.session_id, "provider": s.provider, "outside": row})))
                .collect();
            if args.json {
                out.json_pretty(&with_left_out(serde_json::json!({"agents": rows, "outsideTree": outside, "totals": totals, "unpricedModels": unpriced}), left_out))?;
            } else {
                let rows = sessions.iter().flat_map(|s| {
                    s.agents
                        .iter()
                        .map(|a| (format!("{} {}", a.label, a.thread_id), a.own))
                        .chain(s.outside_tree.iter().map(|row| (format!("{} {}", row.label, s.session_id), row.counters)))
                });
                table(out, "AGENT", rows, &totals)?;
            }
        }
        By::Model | By::Day | By::Week | By::Month | By::Project => {
            // From the hours of the requests, so that `--since`/`--until`
            // cut by request time and each cost is the sum of its
            // requests' own.
            let key = |session: &SessionUsage, row: &HourRow| -> String {
                let unknown = || "unknown".to_owned();
                match args.by {
                    By::Model => row.model.clone().unwrap_or_else(unknown),
                    By::Project => session.cwd.clone().unwrap_or_else(unknown),
                    By::Day => row.hour.map_or_else(unknown, |hour| days::day_of(hour, &args.zone().tz)),
                    By::Week => row.hour.map_or_else(unknown, |hour| days::week_of(hour, &args.zone().tz)),
                    By::Month => row.hour.map_or_else(unknown, |hour| days::month_of(hour, &args.zone().tz)),
                    By::Run | By::Agent | By::Block => unknown(),
                }
            };
            let mut groups: BTreeMap<String, Group> = BTreeMap::new();
            let (mut totals, mut unpriced) = (Counters::default(), Unpriced::default());
            for session in &sessions {
                for row in session.hours.iter().filter(|row| window.holds(row.hour)) {
                    groups.entry(key(session, row)).or_default().add(row, args.breakdown);
                    totals.add(&row.counters);
                    unpriced.note_row(row);
                }
            }
            let (json_key, title) = match args.by {
                By::Model => ("models", "MODEL"),
                By::Day => ("days", "DAY"),
                By::Week => ("weeks", "WEEK"),
                By::Month => ("months", "MONTH"),
                By::Project | By::Run | By::Agent | By::Block => ("projects", "PROJECT"),
            };
            if args.json {
                out.json_pretty(&with_left_out(serde_json::json!({json_key: groups, "totals": totals, "unpricedModels": unpriced}), left_out))?;
            } else {
                table(out, title, groups.iter().flat_map(|(name, group)| group.rows(name.clone())), &totals)?;
            }
            unpriced.warn(&totals);
            return Ok(());
        }
        By::Block => {
            let (mut hours, mut unpriced) = (BTreeMap::<Timestamp, Group>::new(), Unpriced::default());
            for row in sessions.iter().flat_map(|session| &session.hours) {
                if let Some(hour) = row.hour.filter(|hour| window.holds(Some(*hour))) {
                    hours.entry(hour).or_default().add(row, args.breakdown);
                    unpriced.note_row(row);
                }
            }
            let blocks = blocks(hours);
            let mut totals = Counters::default();
            for block in &blocks {
                totals.add(&block.group.counters);
            }
            if args.json {
                out.json_pretty(&with_left_out(serde_json::json!({"blocks": blocks, "totals": totals, "unpricedModels": unpriced}), left_out))?;
            } else {
                let zone = &args.zone().tz;
                let rows = blocks.iter().flat_map(|block| block.group.rows(format!("{} .. {}", days::minute_of(block.start_at, zone), days::minute_of(block.end_at, zone))));
                table(out, &format!("BLOCK ({})", args.zone().name), rows, &totals)?;
            }
            unpriced.warn(&totals);
            return Ok(());
        }
    }
    unpriced.warn(&totals);
    Ok(())
}

/// One 5-hour billing block.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    /// Its start: its first request's time, floored to the hour (UTC).
    pub start_at: Timestamp,
    /// Five hours after its start.
    pub end_at: Timestamp,
    /// Its requests' counters (and, with `--breakdown`, by model).
    #[serde(flatten)]
    pub group: Group,
}

/// The counters of one group of requests (a day, a project, a block…),
/// and with `--breakdown` those of each model in it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Group {
    /// Its requests' counters.
    #[serde(flatten)]
    pub counters: Counters,
    /// By model (`unknown` when a request named none); only with
    /// `--breakdown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<BTreeMap<String, Counters>>,
}

impl Group {
    /// Adds an hour row's requests; `by_model` keeps them by model too.
    fn add(&mut self, row: &HourRow, by_model: bool) {
        self.counters.add(&row.counters);
        if by_model {
            let model = row.model.clone().unwrap_or_else(|| "unknown".to_owned());
            self.models.get_or_insert_with(BTreeMap::new).entry(model).or_default().add(&row.counters);
        }
    }

    /// Adds another group (the hours of a block).
    fn merge(&mut self, other: &Group) {
        self.counters.add(&other.counters);
        for (model, counters) in other.models.iter().flatten() {
            self.models.get_or_insert_with(BTreeMap::new).entry(model.clone()).or_default().add(counters);
        }
    }

    /// Its table rows: itself named `name`, then each model indented
    /// under it.
    fn rows(&self, name: String) -> impl Iterator<Item = (String, Counters)> + '_ {
        std::iter::once((name, self.counters)).chain(self.models.iter().flatten().map(|(model, counters)| (format!("  {model}"), *counters)))
    }
}

/// The billing blocks of hours in time order, as ccusage's `blocks` makes
/// them: a block starts at its first request's hour and lasts five hours;
/// a request at or after its end starts the next. (ccusage also starts one
/// after a gap of over five hours since the last request, which a block
/// that starts at its first request's hour has always ended by then.)
fn blocks(hours: BTreeMap<Timestamp, Group>) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    for (hour, group) in hours {
        match blocks.last_mut() {
            Some(block) if hour < block.end_at => block.group.merge(&group),
            _ => blocks.push(Block {
                start_at: hour,
                end_at: Timestamp(hour.0 + BLOCK_MS),
                group,
            }),
        }
    }
    blocks
}

/// Each agent's depth under its session's root(s).
fn depths(agents: &[AgentUsage]) -> std::collections::HashMap<&str, usize> {
    let parents: std::collections::HashMap<&str, &str> = agents
        .iter()
        .filter_map(|agent| Some((agent.thread_id.as_str(), agent.parent_thread_id.as_deref()?)))
        .collect();
    agents
        .iter()
        .map(|agent| {
            let mut depth = 0;
            let mut at = agent.thread_id.as_str();
            // Bounded: a cycle in bad input must not loop.
            while let Some(parent) = parents.get(at).filter(|_| depth < agents.len()) {
                depth += 1;
                at = parent;
            }
            (agent.thread_id.as_str(), depth)
        })
        .collect()
}

/// `name` on one line within `width` characters, its leading indentation
/// kept.
fn indented(name: &str, width: usize) -> String {
    let text = name.trim_start();
    let indent = &name[..name.len() - text.len()];
    let width = width.saturating_sub(indent.len());
    // A folder (a project) keeps its end, which names it.
    let count = text.chars().count();
    if text.starts_with('/') && count > width {
        let tail: String = text.chars().skip(count - width).collect();
        return format!("{indent}…{tail}");
    }
    format!("{indent}{}", crate::render::one_line(text, width))
}

/// One row per group, then the totals.
fn table(
    out: &mut Out,
    title: &str,
    rows: impl Iterator<Item = (String, Counters)>,
    totals: &Counters,
) -> anyhow::Result<()> {
    counters_table(out, title, rows.map(|(name, counters)| (name, counters, None)), totals, false)
}

/// A cost as a table shows it: `≥` before a floor, `?` when nothing
/// could be priced.
pub fn cost_cell(counters: &Counters) -> String {
    match (counters.cost, counters.cost_status) {
        (None, _) | (_, CostStatus::Unknown) => "?".to_owned(),
        (Some(cost), CostStatus::Floor) => format!("≥{cost:.4}"),
        (Some(cost), CostStatus::Exact) => format!("{cost:.4}"),
    }
}

/// The rows, then the totals; with `subtree_column`, a last column holds
/// the subtree total of a spawning agent.
fn counters_table(
    out: &mut Out,
    title: &str,
    rows: impl Iterator<Item = (String, Counters, Option<u64>)>,
    totals: &Counters,
    subtree_column: bool,
) -> anyhow::Result<()> {
    let subtree_title = if subtree_column { "SUBTREE" } else { "" };
    // On a terminal the names' column gives way so the figures fit the
    // window (a name cut to `n` characters ends with one more, `…`), but
    // for the sessions of `--by run`, whose ids are not cut; piped, the
    // fixed layout.
    let terminal = crate::output::terminal_columns().filter(|_| !subtree_column);
    let (width, cut) = terminal.map_or((60, 60), |columns| {
        let width = columns.saturating_sub(5 * 13 + 11).clamp(title.chars().count().max(20), 60);
        (width, width - 1)
    });
    out.line(
        format!(
            "{:<width$} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}",
            title, "INPUT", "CACHED", "CACHE-WRITE", "OUTPUT", "TOTAL", "COST $", subtree_title
        )
        .trim_end(),
    )?;
    let mut line = |name: &str, c: &Counters, subtree: Option<u64>| {
        out.line(
            format!(
                "{:<width$} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}",
                indented(name, cut),
                c.input_tokens,
                c.cached_input_tokens,
                c.cache_creation_tokens,
                c.output_tokens,
                c.total_tokens,
                cost_cell(c),
                subtree.map(|total| total.to_string()).unwrap_or_default()
            )
            .trim_end(),
        )
    };
    for (name, counters, subtree) in rows {
        line(&name, &counters, subtree)?;
    }
    line("TOTAL", totals, None)?;
    Ok(())
}

/// The viewer's `/usage` page (`GET /api/usage`): what `agentrace usage`
/// counts over every recorded run, in the shapes its charts draw. The
/// same sessions and hour rows as `usage --by day` / `--by model` (so the
/// same numbers), grouped per day by provider and by model, with the runs
/// and the agent labels that cost most.
pub fn charts(home: &Home, zone: &Zone) -> anyhow::Result<serde_json::Value> {
    // The home's price file as it is now: `serve` runs for days.
    let home = &crate::home_files::read(home)?;
    let args = UsageArgs {
        tz: Some(zone.clone()),
        breakdown: false,
        json: true,
        by: By::Day,
        since: None,
        until: None,
        provider: None,
        codex_home: None,
        claude_dir: None,
        prices: None,
        runs: Vec::new(),
    };
    let prices = home.prices();
    let sessions = sessions(home, &args, &prices)?;
    let unknown = || "unknown".to_owned();
    // day → provider / model → counters, from the requests' hours.
    let mut by_provider: BTreeMap<String, BTreeMap<String, Counters>> = BTreeMap::new();
    let mut by_model: BTreeMap<String, BTreeMap<String, Counters>> = BTreeMap::new();
    let mut days: BTreeMap<String, Counters> = BTreeMap::new();
    let mut totals = Counters::default();
    let mut labels: BTreeMap<String, (Counters, u64)> = BTreeMap::new();
    for session in &sessions {
        for row in &session.hours {
            let day = row.hour.map_or_else(unknown, |hour| days::day_of(hour, &args.zone().tz));
            by_provider.entry(day.clone()).or_default().entry(session.provider.clone()).or_default().add(&row.counters);
            by_model.entry(day.clone()).or_default().entry(row.model.clone().unwrap_or_else(unknown)).or_default().add(&row.counters);
            days.entry(day).or_default().add(&row.counters);
            totals.add(&row.counters);
        }
        for agent in &session.agents {
            let entry = labels.entry(agent.label.clone()).or_default();
            entry.0.add(&agent.own);
            entry.1 += 1;
        }
    }
    let cost_of = |counters: &Counters| counters.cost.unwrap_or(0.0);
    let mut runs: Vec<&SessionUsage> = sessions.iter().collect();
    runs.sort_by(|a, b| cost_of(&b.counters).total_cmp(&cost_of(&a.counters)).then(b.counters.total_tokens.cmp(&a.counters.total_tokens)));
    let mut agents: Vec<(String, (Counters, u64))> = labels.into_iter().collect();
    agents.sort_by(|a, b| cost_of(&b.1 .0).total_cmp(&cost_of(&a.1 .0)).then(b.1 .0.total_tokens.cmp(&a.1 .0.total_tokens)));
    let top = 10;
    Ok(serde_json::json!({
        "days": days.iter().map(|(day, counters)| serde_json::json!({
            "day": day,
            "totals": counters,
            "providers": by_provider.get(day),
            "models": by_model.get(day),
        })).collect::<Vec<_>>(),
        "topRuns": runs.iter().take(top).map(|session| serde_json::json!({
            "runId": session.run_id,
            "provider": session.provider,
            "sessionId": session.session_id,
            "startedAt": session.started_at,
            "counters": session.counters,
        })).collect::<Vec<_>>(),
        "topAgents": agents.iter().take(top).map(|(label, (counters, count))| serde_json::json!({
            "label": label,
            "agents": count,
            "counters": counters,
        })).collect::<Vec<_>>(),
        "totals": totals,
    }))
}

#[cfg(test)]
mod tests {
    use agentrace_testkit::files::{copy_dir, fixtures};

    use super::*;

    /// The streamed report is the report of all sessions at once, whatever
    /// the size of the chunks it is attributed in (totals included).
    #[test]
    fn the_streamed_report_is_the_whole_report_whatever_the_chunks() {
        let fixtures = fixtures();
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for capture in ["v1_basic", "v2_basic", "real_model_nested"] {
            copy_dir(&fixtures.join("codex").join(capture).join("rollouts"), &home.path().join("codex/sessions"));
        }
        for capture in ["nested_fg", "parallel_bg", "v2.0.77_single"] {
            copy_dir(&fixtures.join("claude").join(capture).join("home_claude"), &home.path().join("claude"));
        }
        let args = UsageArgs {
            tz: Some(crate::zone::Zone::utc()),
            breakdown: false,
            json: true,
            by: By::Run,
            since: None,
            until: None,
            provider: None,
            codex_home: Some(home.path().join("codex")),
            claude_dir: Some(home.path().join("claude")),
            prices: None,
            runs: Vec::new(),
        };
        let prices = PriceBook::shared_database();
        let found = found_in_folders(&args)
            .and_then(Iterator::collect::<anyhow::Result<Vec<_>>>)
            .unwrap_or_else(|e| panic!("{e}"));
        let (sessions, _) = attribute(&found, &prices).unwrap_or_else(|e| panic!("{e}"));
        let mut totals = Counters::default();
        for session in &sessions {
            totals.add(&session.counters);
        }
        let mut unpriced = Unpriced::default();
        for session in &sessions {
            unpriced.note(session);
        }
        let whole = serde_json::json!({"sessions": sessions, "totals": totals, "unpricedModels": unpriced});
        assert!(found.len() >= 6, "{}", found.len());
        // Typed, as `run` writes it whole: the streamed report must read
        // the same byte for byte.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Report<'a> {
            sessions: &'a [SessionUsage],
            totals: &'a Counters,
            unpriced_models: &'a Unpriced,
        }
        let pretty = serde_json::to_string_pretty(&Report { sessions: &sessions, totals: &totals, unpriced_models: &unpriced });
        let pretty = pretty.unwrap_or_else(|e| panic!("{e}"));
        for chunk in [1, 2, 4, STREAM_CHUNK] {
            let found = found_in_folders(&args).unwrap_or_else(|e| panic!("{e}"));
            let report = StreamedReport::of(found, |found| WrittenSession::of(&attribute_one(found, &prices)?).map(Some), chunk);
            let mut streamed = Vec::new();
            report.write_to(&mut streamed, &std::sync::atomic::AtomicU64::new(0)).unwrap_or_else(|e| panic!("{e}"));
            let streamed = String::from_utf8(streamed).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(serde_json::from_str::<serde_json::Value>(&streamed).ok(), Some(whole.clone()), "chunks of {chunk}");
            assert_eq!(streamed, format!("{pretty}\n"), "chunks of {chunk}");
        }
        // No session at all: empty lists, as serde_json writes them.
        let report = StreamedReport::of(std::iter::empty::<anyhow::Result<SessionUsage>>(), |session| WrittenSession::of(session).map(Some), 1);
        let mut streamed = Vec::new();
        report.write_to(&mut streamed, &std::sync::atomic::AtomicU64::new(0)).unwrap_or_else(|e| panic!("{e}"));
        let none = serde_json::to_string_pretty(&Report { sessions: &[], totals: &Counters::default(), unpriced_models: &Unpriced::default() });
        assert_eq!(String::from_utf8(streamed).ok(), none.ok().map(|none| format!("{none}\n")));
    }
}
