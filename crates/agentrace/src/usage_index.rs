//! The usage index: each run's agent tree with its own tokens and costs
//! ([`UsageTree`]), the session `usage` reports of it ([`SessionUsage`]),
//! both as `import` keeps them in the catalog and `usage` reads them back
//! instead of folding the log, the token counters its rows are made of,
//! and the trees priced again when the price book changed. It never folds
//! a run beside the run book (a tree is made of the book's [`RunView`])
//! and never prints: the `usage` command reports.

use agentrace_core::model::{IncompleteReason, Provider, RunId, Timestamp, TokenUsage};
use agentrace_core::state::{judge_cost, AgentNode, CostStatus, HourTokens, ModelTokens, OutsideUsage, RunView};
use std::collections::BTreeMap;

use agentrace_core::state::hour_start;
use agentrace_store::catalog::{KeptUsage, LogStampRow, UsageHead, UsageRow};
use agentrace_store::{Catalog, Home, Packed};
use serde::{Deserialize, Serialize};

/// Why figures miss tokens, as a set small enough to copy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reasons(u8);

const REASONS: [IncompleteReason; 5] = [
    IncompleteReason::MissingFinalUsage,
    IncompleteReason::NoUsageReported,
    IncompleteReason::UnreadableLine,
    IncompleteReason::InheritedHistory,
    IncompleteReason::Other,
];

impl Reasons {
    pub(crate) fn of(reasons: &[IncompleteReason]) -> Self {
        let mut set = Self::default();
        for reason in reasons {
            set.insert(*reason);
        }
        set
    }

    fn insert(&mut self, reason: IncompleteReason) {
        if let Some(bit) = REASONS.iter().position(|known| *known == reason) {
            self.0 |= 1 << bit;
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0 == 0
    }

    fn iter(self) -> impl Iterator<Item = IncompleteReason> {
        REASONS.into_iter().enumerate().filter(move |(bit, _)| self.0 & (1 << bit) != 0).map(|(_, reason)| reason)
    }
}

impl Serialize for Reasons {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Reasons {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::of(&Vec::<IncompleteReason>::deserialize(deserializer)?))
    }
}

/// Token counters, ccusage's convention, with their cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    /// Input tokens, cache reads and writes excluded.
    pub input_tokens: u64,
    /// Cache reads.
    pub cached_input_tokens: u64,
    /// Cache writes.
    pub cache_creation_tokens: u64,
    /// Output tokens as reported.
    pub output_tokens: u64,
    /// Reasoning tokens (part of the output for Codex).
    pub reasoning_tokens: u64,
    /// Total as the provider reports it.
    pub total_tokens: u64,
    /// Cost in US dollars of every priced request; `null` when nothing
    /// could be priced (never a silent zero).
    pub cost: Option<f64>,
    /// How complete `cost` is: `exact`, `floor` or `unknown`.
    pub cost_status: CostStatus,
    /// Tokens of requests no price was found for.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_tokens: u64,
    /// Why the tokens miss some, when they do.
    #[serde(default, skip_serializing_if = "Reasons::is_empty")]
    pub incomplete: Reasons,
}

/// Whether a count is 0: a count serde leaves out of a JSON answer then
/// (`unpricedTokens`, `import --json`'s `leftOut`).
pub(crate) fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Nothing counted: no token, so exactly $0 (as `judge_cost` has it). A
/// total of no rows (a window with no request) said `"cost": null` with
/// `"costStatus": "exact"`, a figure that contradicts its own status.
impl Default for Counters {
    fn default() -> Self {
        Self {
            input_tokens: 0,
            cached_input_tokens: 0,
            cache_creation_tokens: 0,
            output_tokens: 0,
            reasoning_tokens: 0,
            total_tokens: 0,
            cost: Some(0.0),
            cost_status: CostStatus::Exact,
            unpriced_tokens: 0,
            incomplete: Reasons::default(),
        }
    }
}

impl Counters {
    pub(crate) fn of(part: &ModelTokens) -> Self {
        Self::of_figures(&part.tokens, part.cost, part.unpriced_tokens)
    }

    pub(crate) fn of_hour(hour: &HourTokens) -> Self {
        Self::of_figures(&hour.tokens, hour.cost, hour.unpriced_tokens)
    }

    fn of_figures(usage: &TokenUsage, cost: f64, unpriced_tokens: u64) -> Self {
        let input_tokens = usage
            .input_tokens
            .saturating_sub(usage.cached_input_tokens)
            .saturating_sub(usage.cache_creation_input_tokens);
        let mut counters = Self {
            input_tokens,
            cached_input_tokens: usage.cached_input_tokens,
            cache_creation_tokens: usage.cache_creation_input_tokens,
            output_tokens: usage.output_tokens,
            reasoning_tokens: usage.reasoning_output_tokens,
            total_tokens: usage.total_tokens,
            cost: Some(cost),
            cost_status: CostStatus::Exact,
            unpriced_tokens,
            incomplete: Reasons::default(),
        };
        counters.settle();
        counters
    }

    /// Marks the figures as missing tokens for `reasons`.
    pub(crate) fn missing(&mut self, reasons: Reasons) {
        self.incomplete.0 |= reasons.0;
        self.settle();
    }

    /// Derives `cost` and `costStatus` from what was priced.
    fn settle(&mut self) {
        let priced_any = self.total_tokens > self.unpriced_tokens;
        let short = self.unpriced_tokens > 0 || !self.incomplete.is_empty();
        (self.cost, self.cost_status) = judge_cost(self.cost.unwrap_or(0.0), priced_any, short);
    }

    pub(crate) fn add(&mut self, other: &Counters) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_creation_tokens += other.cache_creation_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.total_tokens += other.total_tokens;
        self.unpriced_tokens += other.unpriced_tokens;
        self.incomplete.0 |= other.incomplete.0;
        // What was priced adds up; whether the sum is exact, a floor or
        // unknown (nothing priced) follows from the counts, as for one row.
        self.cost = Some(self.cost.unwrap_or(0.0) + other.cost.unwrap_or(0.0));
        self.settle();
    }
}

/// One agent's usage.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentUsage {
    /// Thread / agent id.
    pub thread_id: String,
    /// Label.
    pub label: String,
    /// Spawner.
    pub parent_thread_id: Option<String>,
    /// Model, when known.
    pub model: Option<String>,
    /// Its own tokens.
    pub own: Counters,
    /// Its own and every descendant's.
    pub subtree: Counters,
    /// Its own by model (one part per model it used), for `--by model`.
    #[serde(skip)]
    pub by_model: Vec<(Option<String>, Counters)>,
}

/// One session's usage.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionUsage {
    /// `codex` or `claude`.
    pub provider: String,
    /// Codex: the root thread id; Claude: the session id.
    pub session_id: String,
    /// The run it was recorded as, when recorded.
    pub run_id: Option<String>,
    /// When it started.
    pub started_at: Option<Timestamp>,
    /// Its working folder (the project of `--by project`), when known.
    pub cwd: Option<String>,
    /// Counters of all its agents and of what is outside the tree.
    #[serde(flatten)]
    pub counters: Counters,
    /// Per agent, in tree order.
    pub agents: Vec<AgentUsage>,
    /// Tokens of no agent: `startup` (Claude's warmup agents) and
    /// `unattributed`, each with its counters.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outside_tree: Vec<OutsideRow>,
    /// Its tokens by agent, model and UTC hour of the requests, for the
    /// groupings by time, project and model.
    #[serde(skip)]
    pub hours: Vec<HourRow>,
}

impl SessionUsage {
    /// Each model's part of each agent, then of the rows outside the tree.
    pub fn model_parts(&self) -> impl Iterator<Item = &(Option<String>, Counters)> {
        self.agents
            .iter()
            .flat_map(|agent| &agent.by_model)
            .chain(self.outside_tree.iter().flat_map(|row| &row.by_model))
    }

    /// The tokens no price was found for, by model (`unknown` for none).
    pub fn unpriced(&self) -> BTreeMap<String, u64> {
        let mut unpriced = BTreeMap::new();
        for (model, counters) in self.model_parts() {
            if counters.unpriced_tokens > 0 {
                *unpriced.entry(model.clone().unwrap_or_else(|| "unknown".to_owned())).or_default() += counters.unpriced_tokens;
            }
        }
        unpriced
    }
}

/// What a session's report sums, kept before its text (see
/// [`Kept::of`]): what `usage --json` needs of a kept session besides the
/// text it writes as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportSums {
    /// When the session started (what `--since` and `--until` look at).
    pub started_at: Option<Timestamp>,
    /// Its counters.
    pub counters: Counters,
    /// The tokens no price was found for, by model.
    pub unpriced: BTreeMap<String, u64>,
}

/// A session's report as it is kept: its sums, then its compact JSON,
/// each on a line of its own.
pub fn split_report(kept: &str) -> Option<(ReportSums, &str)> {
    let (sums, report) = kept.split_once('\n')?;
    Some((sonic_rs::from_str(sums).ok()?, report))
}

/// One agent's (or the outside rows') tokens with one model in one UTC
/// hour.
#[derive(Debug, Clone)]
pub struct HourRow {
    /// The model.
    pub model: Option<String>,
    /// The hour's start; `None` when unknown (figures that say only that
    /// tokens are missing, of a session of unknown start).
    pub hour: Option<Timestamp>,
    /// Its counters (with the reasons its agent and session miss tokens).
    pub counters: Counters,
}

/// Tokens outside the agent tree, as `usage` reports them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutsideRow {
    /// `startup` or `unattributed`.
    pub label: String,
    /// Its counters.
    #[serde(flatten)]
    pub counters: Counters,
    /// By model, for `--by model`.
    #[serde(skip)]
    pub by_model: Vec<(Option<String>, Counters)>,
}

/// The hour rows of parts, each with `reasons`; a part kept without
/// hours, or an agent without parts (whose figures only say tokens are
/// missing), counts at `start`'s hour.
fn hour_rows(parts: &[ModelTokens], model: Option<&String>, reasons: Reasons, start: Option<Timestamp>, rows: &mut Vec<HourRow>) {
    let start = start.map(hour_start);
    let mut row = |model: Option<&String>, hour: Option<Timestamp>, mut counters: Counters| {
        counters.missing(reasons);
        rows.push(HourRow { model: model.cloned(), hour, counters });
    };
    if parts.is_empty() {
        if !reasons.is_empty() {
            row(model, start, Counters::default());
        }
        return;
    }
    for part in parts {
        if part.hours.is_empty() {
            row(part.model.as_ref(), start, Counters::of(part));
        }
        for hour in &part.hours {
            row(part.model.as_ref(), Some(hour.hour), Counters::of_hour(hour));
        }
    }
}

fn walk(node: &UsageNode, out: &mut Vec<AgentUsage>, hours: &mut Vec<HourRow>, start: Option<Timestamp>) -> Counters {
    hour_rows(&node.tokens_by_model, node.model.as_ref(), Reasons::of(&node.incomplete), start, hours);
    let by_model = by_model(node);
    let mut own = Counters::default();
    for (_, counters) in &by_model {
        own.add(counters);
    }
    own.missing(Reasons::of(&node.incomplete));
    // As `show` and the API give it (its subtree still adds what its
    // children cost).
    (own.cost, own.cost_status) = agentrace_core::state::cost_once_used(node.tokens, || (own.cost, own.cost_status));
    let index = out.len();
    out.push(AgentUsage {
        thread_id: node.thread_id.clone(),
        label: node.label.clone(),
        parent_thread_id: node.parent_thread_id.clone(),
        model: node.model.clone(),
        own,
        subtree: own,
        by_model,
    });
    let mut subtree = own;
    for child in &node.children {
        subtree.add(&walk(child, out, hours, start));
    }
    out[index].subtree = subtree;
    subtree
}

/// An agent's own counters by model, each part priced by its own model as
/// the fold priced it.
fn by_model(node: &UsageNode) -> Vec<(Option<String>, Counters)> {
    let mut parts: Vec<(Option<String>, Counters)> = node
        .tokens_by_model
        .iter()
        .map(|part| (part.model.clone(), Counters::of(part)))
        .collect();
    if parts.is_empty() {
        // No tokens: an agent whose usage is missing still says so.
        let mut none = Counters::default();
        none.missing(Reasons::of(&node.incomplete));
        parts.push((node.model.clone(), none));
    } else if !node.incomplete.is_empty() {
        for (_, counters) in &mut parts {
            counters.missing(Reasons::of(&node.incomplete));
        }
    }
    parts
}

/// Whether any agent of `agents` (or under them) reported usage.
fn reported_usage(agents: &[UsageNode]) -> bool {
    agents.iter().any(|agent| agent.tokens.is_some() || !agent.tokens_by_model.is_empty() || reported_usage(&agent.children))
}

/// The session `usage` reports of `tree`, recorded as run `run_id`.
pub fn session(tree: &UsageTree, run_id: Option<&RunId>) -> SessionUsage {
    let mut agents = Vec::new();
    let mut hours = Vec::new();
    let mut counters = Counters::default();
    for node in &tree.agents {
        counters.add(&walk(node, &mut agents, &mut hours, tree.started_at));
    }
    for outside in &tree.outside_tree {
        hour_rows(&outside.tokens_by_model, None, Reasons::default(), tree.started_at, &mut hours);
    }
    let session_reasons = Reasons::of(&tree.incomplete);
    if !session_reasons.is_empty() {
        for row in &mut hours {
            row.counters.missing(session_reasons);
        }
        if hours.is_empty() {
            hour_rows(&[], None, session_reasons, tree.started_at, &mut hours);
        }
    }
    let outside_tree: Vec<OutsideRow> = tree
        .outside_tree
        .iter()
        .map(|outside| {
            let by_model: Vec<(Option<String>, Counters)> = outside
                .tokens_by_model
                .iter()
                .map(|part| (part.model.clone(), Counters::of(part)))
                .collect();
            let mut row = Counters::default();
            for (_, part) in &by_model {
                row.add(part);
            }
            OutsideRow {
                label: outside.label.clone(),
                counters: row,
                by_model,
            }
        })
        .collect();
    for row in &outside_tree {
        counters.add(&row.counters);
    }
    counters.missing(Reasons::of(&tree.incomplete));
    // A session none of whose agents reported usage (its only model call
    // failed) costs what its run does, unknown: `$0 exact` read as free
    // where `show` and `runs` say `$?`.
    if !reported_usage(&tree.agents) && tree.outside_tree.is_empty() {
        (counters.cost, counters.cost_status) =
            agentrace_core::state::cost_once_used(None::<TokenUsage>, || (counters.cost, counters.cost_status));
    }
    SessionUsage {
        provider: tree.provider.as_str().to_owned(),
        session_id: tree.session_id.clone(),
        run_id: run_id.map(|id| id.to_string()),
        started_at: tree.started_at,
        cwd: tree.cwd.clone(),
        counters,
        agents,
        outside_tree,
        hours,
    }
}

/// What `usage` needs of one run: its agent tree with each agent's own
/// tokens. `import` keeps it in the usage index so that `usage` reads a
/// few hundred bytes instead of folding the whole log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTree {
    /// The log's length and modification time when this was written; any
    /// other means the log moved on (a live run continued, a run rebuilt)
    /// and this copy is stale.
    pub log: LogStamp,
    /// The provider.
    pub provider: Provider,
    /// Codex: the root thread id; Claude: the session id; else the run id.
    pub session_id: String,
    /// When the run started.
    pub started_at: Option<Timestamp>,
    /// The session's working folder, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The shape it was written in ([`TREE_FORMAT`]); a tree of another
    /// (older ones kept no hours) is folded again.
    #[serde(default)]
    pub format: u32,
    /// The agent tree.
    pub agents: Vec<UsageNode>,
    /// Tokens outside the tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_tree: Vec<OutsideUsage>,
    /// Why the run's tokens miss some, beyond what its agents say (a torn
    /// or unreadable line).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<IncompleteReason>,
    /// The price book its costs come from; a tree priced by another is
    /// folded again.
    #[serde(default)]
    pub prices: String,
}

/// The shape of [`UsageTree`] `usage` reads: 1 added the hours of each
/// part and the working folder; 2 kept the session's report beside it,
/// both packed; 3 gave an agent that reported no usage no cost (it said
/// an exact $0 where `show` said unknown), so a report kept before is
/// folded again.
pub(crate) const TREE_FORMAT: u32 = 3;

/// One agent of a [`UsageTree`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageNode {
    /// Thread / agent id.
    pub thread_id: String,
    /// Label.
    pub label: String,
    /// Spawner.
    pub parent_thread_id: Option<String>,
    /// Model, when known.
    pub model: Option<String>,
    /// Its own tokens.
    pub tokens: Option<TokenUsage>,
    /// Its own tokens by model (one part per model, costs included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens_by_model: Vec<ModelTokens>,
    /// Why its tokens miss some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<IncompleteReason>,
    /// The agents it spawned.
    pub children: Vec<UsageNode>,
}

impl UsageNode {
    /// Its own tokens and those of every agent under it: what its
    /// session's `totalTokens` adds up (no price is needed to count them).
    pub(crate) fn total_tokens(&self) -> u64 {
        let own: u64 = if self.tokens_by_model.is_empty() {
            self.tokens.map_or(0, |tokens| tokens.total_tokens)
        } else {
            self.tokens_by_model.iter().map(|part| part.tokens.total_tokens).sum()
        };
        own + self.children.iter().map(UsageNode::total_tokens).sum::<u64>()
    }

    fn of(node: &AgentNode) -> Self {
        // The fold's parts, hours included; a view read back has none, and
        // with one model its own figures are its one part.
        let tokens_by_model = match (&node.usage_parts[..], &node.tokens_by_model[..], node.tokens) {
            ([_, ..], _, _) => node.usage_parts.clone(),
            // No tokens at all (a reply the CLI wrote itself when the model
            // could not be reached) is no part: it was one of 0 tokens
            // under `unknown`, a model nobody used, in `--by model`.
            ([], [], Some(tokens)) if tokens == TokenUsage::default() => Vec::new(),
            ([], [], Some(tokens)) => vec![ModelTokens {
                model: node.model.clone(),
                tokens,
                cost: node.cost.unwrap_or(0.0),
                unpriced_tokens: node.unpriced_tokens,
                hours: Vec::new(),
            }],
            ([], parts, _) => parts.to_vec(),
        };
        Self {
            thread_id: node.thread_id.to_string(),
            label: node.label.clone(),
            parent_thread_id: node.parent_thread_id.as_ref().map(|id| id.to_string()),
            model: node.model.clone(),
            tokens: node.tokens,
            tokens_by_model,
            incomplete: node.incomplete.clone(),
            children: node.children.iter().map(Self::of).collect(),
        }
    }
}

impl UsageTree {
    /// The usage of a run's view, for its log as stamped `log`, priced by
    /// the book named `prices`.
    pub fn of(view: &RunView, log: LogStamp, prices: &str) -> Self {
        let id = view.run.id.as_str();
        // An imported Claude run is named after its session; its root thread
        // id is the main agent's, which is not the session id users know.
        let session_id = match id.strip_prefix("claude-") {
            Some(session) => session.to_owned(),
            None => view
                .run
                .root_thread_id
                .as_ref()
                .map(|thread| thread.to_string())
                .unwrap_or_else(|| id.to_owned()),
        };
        let mut incomplete: Vec<IncompleteReason> = Vec::new();
        if view.run.counts.undecoded_lines > 0 || view.run.counts.skipped_log_lines > 0 {
            incomplete.push(IncompleteReason::UnreadableLine);
        }
        Self {
            log,
            provider: view.run.provider,
            session_id,
            started_at: view.run.started_at,
            cwd: view.usage.cwd.clone(),
            format: TREE_FORMAT,
            agents: view.agents.iter().map(UsageNode::of).collect(),
            // The fold's, hours included (a view read back has only the
            // summary's).
            outside_tree: if view.usage.outside_tree.is_empty() {
                view.run.outside_tree.clone()
            } else {
                view.usage.outside_tree.clone()
            },
            incomplete,
            prices: prices.to_owned(),
        }
    }
}

/// A log's length and modification time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogStamp {
    /// Length in bytes.
    pub bytes: u64,
    /// Modification time, nanoseconds since the Unix epoch (0 when unknown).
    pub modified_ns: u64,
}

impl From<LogStamp> for LogStampRow {
    fn from(stamp: LogStamp) -> Self {
        Self { bytes: stamp.bytes, modified_ns: stamp.modified_ns }
    }
}

impl From<LogStampRow> for LogStamp {
    fn from(stamp: LogStampRow) -> Self {
        Self { bytes: stamp.bytes, modified_ns: stamp.modified_ns }
    }
}

impl LogStamp {
    /// The stamp of run `id`'s log now.
    pub(crate) fn of(home: &Home, id: &RunId) -> Option<Self> {
        agentrace_store::catalog::log_stamp(&home.log_path(id)).map(Self::from)
    }
}

/// Rebuilds the kept usage trees whose costs come from another price book
/// than this binary's (a new database, or trees kept before costs were
/// priced per request), or that are of an older shape (kept by an older
/// agentrace), from their runs' logs, each folded once, one at a time, so
/// that `usage` after import reads costs it can trust without folding
/// those logs on every call. The catalog's `meta` names the book and shape
/// it was last checked against, so the check runs once.
pub fn reprice_kept_usage(home: &Home, catalog: &Catalog, quiet: bool) -> anyhow::Result<()> {
    let book = home.prices();
    // The marker names the book and the tree's shape it was checked for.
    let checked = format!("{} format {TREE_FORMAT}", book.id());
    if catalog.meta("usage_prices")?.as_deref() == Some(checked.as_str()) {
        return Ok(());
    }
    let (mut repriced, mut reshaped) = (false, false);
    catalog.begin()?;
    for listed in catalog.usage_listing()? {
        // The head says how the tree was priced: a tree already priced by
        // this book is not read.
        if listed.head.as_ref().is_none_or(|head| head.prices == book.id() && head.format == TREE_FORMAT) {
            continue;
        }
        let old = catalog.usage_tree(&listed.id)?.and_then(|packed| packed.unpack("usage tree").ok());
        let Some(old) = old.and_then(|json| sonic_rs::from_str::<UsageTree>(&json).ok()) else {
            continue;
        };
        let run = RunId::from(listed.id.as_str());
        let Some(log) = LogStamp::of(home, &run) else { continue };
        // Said once each: a new price book, or only a new shape.
        let priced = listed.head.as_ref().is_some_and(|head| head.prices == book.id());
        if !quiet && !priced && !repriced {
            eprintln!("note: pricing the imported runs again with {} (once)", book.id());
        } else if !quiet && priced && !reshaped {
            eprintln!("note: keeping the imported runs' usage as this agentrace reads it (once)");
        }
        (repriced, reshaped) = (repriced || !priced, reshaped || priced);
        let view = home.load_run(&run)?.view();
        let mut tree = UsageTree::of(&view, log, book.id());
        // A Claude session's folder is kept with its usage alone.
        if tree.cwd.is_none() {
            tree.cwd = old.cwd;
        }
        keep_tree(catalog, &run, &tree)?;
    }
    catalog.set_meta("usage_prices", &checked)?;
    catalog.commit()?;
    Ok(())
}

/// Keeps run `id`'s usage tree in the catalog, with its report and its
/// usage rows (per agent, model and hour) for those who query the catalog
/// themselves.
pub fn keep_tree(catalog: &Catalog, id: &RunId, tree: &UsageTree) -> anyhow::Result<()> {
    Kept::of(id, tree)?.put(catalog, id)
}

/// A run's usage as the catalog keeps it, made ready to be put (on any
/// thread: the catalog's writer only puts it).
pub struct Kept {
    tree: Packed,
    report: Packed,
    head: UsageHead,
    project: Option<String>,
    rows: Vec<UsageRow>,
}

impl Kept {
    /// Run `id`'s usage, of `tree`: the tree, and its session as
    /// `usage --json` reports it (compact; the report indents it), after a
    /// line of what the report sums of it, so that `usage` after an import
    /// writes each session without reading it.
    pub fn of(id: &RunId, tree: &UsageTree) -> anyhow::Result<Self> {
        let session = session(tree, Some(id));
        let sums = ReportSums { started_at: session.started_at, counters: session.counters, unpriced: session.unpriced() };
        let mut report = serde_json::to_string(&sums)?;
        report.push('\n');
        report.push_str(&serde_json::to_string(&session)?);
        let total_tokens = tree.agents.iter().map(UsageNode::total_tokens).sum();
        Ok(Self {
            tree: Packed::pack(&serde_json::to_string(tree)?),
            report: Packed::pack(&report),
            head: UsageHead {
                log: tree.log.into(),
                prices: tree.prices.clone(),
                format: tree.format,
                provider: tree.provider.as_str().to_owned(),
                session_id: tree.session_id.clone(),
                total_tokens,
            },
            project: tree.cwd.clone(),
            rows: usage_rows(tree),
        })
    }

    /// Puts it in `catalog` as run `id`'s.
    pub fn put(&self, catalog: &Catalog, id: &RunId) -> anyhow::Result<()> {
        let usage = KeptUsage { tree: &self.tree, report: &self.report, head: &self.head, project: self.project.as_deref(), rows: &self.rows };
        catalog.put_usage(id.as_str(), &usage)?;
        Ok(())
    }
}

/// The usage rows of `tree`: per agent (and outside the tree), model and
/// hour.
fn usage_rows(tree: &UsageTree) -> Vec<UsageRow> {
    let mut rows = Vec::new();
    fn parts_rows(thread: Option<&str>, label: &str, parts: &[ModelTokens], rows: &mut Vec<UsageRow>) {
        for part in parts {
            let hours: Vec<(Option<i64>, TokenUsage, f64, u64)> = if part.hours.is_empty() {
                vec![(None, part.tokens, part.cost, part.unpriced_tokens)]
            } else {
                part.hours.iter().map(|hour| (Some(hour.hour.0), hour.tokens, hour.cost, hour.unpriced_tokens)).collect()
            };
            for (hour, tokens, cost, unpriced) in hours {
                let counters = Counters::of_figures(&tokens, cost, unpriced);
                rows.push(UsageRow {
                    thread_id: thread.map(str::to_owned),
                    label: label.to_owned(),
                    model: part.model.clone(),
                    hour,
                    input_tokens: counters.input_tokens,
                    cached_input_tokens: counters.cached_input_tokens,
                    cache_creation_tokens: counters.cache_creation_tokens,
                    output_tokens: counters.output_tokens,
                    reasoning_tokens: counters.reasoning_tokens,
                    total_tokens: counters.total_tokens,
                    cost,
                    unpriced_tokens: unpriced,
                });
            }
        }
    }
    fn nodes(node: &UsageNode, rows: &mut Vec<UsageRow>) {
        parts_rows(Some(&node.thread_id), &node.label, &node.tokens_by_model, rows);
        for child in &node.children {
            nodes(child, rows);
        }
    }
    for node in &tree.agents {
        nodes(node, &mut rows);
    }
    for outside in &tree.outside_tree {
        parts_rows(None, &outside.label, &outside.tokens_by_model, &mut rows);
    }
    rows
}

/// The usage index as an import writes it: the usage trees of the runs it
/// records, in the catalog.
pub struct UsageIndex;

impl UsageIndex {
    /// The usage of run `id` as the catalog keeps it, for its log as it is
    /// now, with the log's stamp: made on any thread, put by
    /// [`Kept::put`]. `None` for a run whose log cannot be stat'ed: it
    /// keeps its old tree, which no longer matches the log and is then not
    /// used.
    pub fn of(home: &Home, id: &RunId, view: &RunView) -> anyhow::Result<Option<(LogStamp, Kept)>> {
        let Some(log) = LogStamp::of(home, id) else {
            return Ok(None);
        };
        Ok(Some((log, Kept::of(id, &UsageTree::of(view, log, home.prices().id()))?)))
    }
}
