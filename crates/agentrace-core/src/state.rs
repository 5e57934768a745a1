//! Run state: the fold of a run's envelopes, and the views every surface
//! shows (`show`, the run record, the API). Built only from envelopes, so the
//! live recorder and a reader of the written log get the same state.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::model::{
    is_zero, Actor, AgentStatus, Envelope, Event, EventBody, FinalMessageConfidence, IncompleteReason,
    ItemId, Provider, Role, RunId, RunStatus, Source, ThreadId, Timestamp, TokenUsage, Warning,
    WARMUP_LABEL,
};
use crate::prices::{PriceBook, Request};

/// Per-thread facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ThreadStats {
    actor: Actor,
    first_sequence: u64,
    event_count: u64,
    tool_count: u64,
    message_or_tool_count: u64,
    status: AgentStatus,
    /// Stated by the provider: the run's result, a child's ending.
    final_message: Option<String>,
    last_message: Option<String>,
    /// Taken from what the spawner received; used only when the thread has
    /// no stated final message and no message of its own.
    #[serde(default)]
    reported_message: Option<String>,
    prompt: Option<String>,
    model: Option<String>,
    /// The service tier its requests run on, as the provider last said it
    /// for the thread (a usage that names its own wins).
    #[serde(default)]
    service_tier: Option<String>,
    tokens: Option<TokenUsage>,
    /// `tokens` by the model in use when each part was reported.
    #[serde(default)]
    tokens_by_model: Vec<ModelTokens>,
    /// The provider's running total as last reported, kept when it is not
    /// `tokens` (a live child's total that included inherited history).
    #[serde(default)]
    reported: Option<TokenUsage>,
    /// Why `tokens` misses tokens, as the thread's last usage said.
    #[serde(default)]
    incomplete: BTreeSet<IncompleteReason>,
    /// A live total included history inherited from the parent.
    #[serde(default)]
    inherited: bool,
    /// Some envelope of it had `provider` confidence (else the agent is
    /// known by inference alone).
    #[serde(default)]
    stated: bool,
}

/// What prices one reported total: the request's time, service tier and
/// the run's price book.
struct Pricing<'a> {
    provider: Provider,
    at: Timestamp,
    service_tier: Option<&'a str>,
    book: &'a PriceBook,
}

impl ThreadStats {
    /// Takes `total` as the thread's reported token total: the part added
    /// since the last report is one request, priced by the model in use now
    /// (a model switched mid-session prices each part by its own model).
    /// A helper's first report that exceeds its own last response carries
    /// its parent's history (a live forked child): only `last` counts.
    fn count_tokens(&mut self, total: TokenUsage, last: Option<TokenUsage>, pricing: &Pricing<'_>) {
        let added = match (self.tokens, last) {
            (None, Some(last)) if self.actor.role == Role::Helper && total.total_tokens > last.total_tokens => {
                self.inherited = true;
                self.tokens = Some(last);
                last
            }
            (Some(counted), _) if self.inherited => {
                let added = total.minus(&self.reported.unwrap_or_default());
                self.tokens = Some(counted.add(&added));
                added
            }
            // The thread's figure is the provider's total, even where it
            // went down (a query's final usage replacing its snapshots).
            (counted, _) => {
                self.tokens = Some(total);
                total.minus(&counted.unwrap_or_default())
            }
        };
        self.reported = self.inherited.then_some(total);
        add_request(&mut self.tokens_by_model, self.model.as_deref(), &added, last, pricing);
    }
}

/// Adds one request to the part of its model, priced on its own: the
/// response's own usage when the report gives it and it is the part added,
/// else the part added.
fn add_request(
    parts: &mut Vec<ModelTokens>,
    model: Option<&str>,
    added: &TokenUsage,
    last: Option<TokenUsage>,
    pricing: &Pricing<'_>,
) {
    if *added == TokenUsage::default() {
        return;
    }
    let priced = model.and_then(|model| {
        pricing.book.price(&Request {
            provider: pricing.provider,
            model,
            at: pricing.at,
            service_tier: pricing.service_tier,
            tokens: last.as_ref().filter(|last| *last == added).unwrap_or(added),
        })
    });
    let part = match parts.iter().position(|part| part.model.as_deref() == model) {
        Some(index) => &mut parts[index],
        None => {
            parts.push(ModelTokens {
                model: model.map(str::to_owned),
                tokens: TokenUsage::default(),
                cost: 0.0,
                unpriced_tokens: 0,
                hours: Vec::new(),
            });
            let last = parts.len() - 1;
            &mut parts[last]
        }
    };
    part.tokens = part.tokens.add(added);
    match priced {
        Some(cost) => part.cost += cost,
        None => part.unpriced_tokens += added.total_tokens,
    }
    let hour = part.hour_of(pricing.at);
    hour.tokens = hour.tokens.add(added);
    match priced {
        Some(cost) => hour.cost += cost,
        None => hour.unpriced_tokens += added.total_tokens,
    }
}

/// Milliseconds in an hour.
const HOUR_MS: i64 = 3_600_000;

/// The start of the UTC hour `at` falls in.
pub fn hour_start(at: Timestamp) -> Timestamp {
    Timestamp(at.0.div_euclid(HOUR_MS) * HOUR_MS)
}

impl ModelTokens {
    /// The bucket of the hour `at` falls in, made when new. Requests come
    /// mostly in time order, so the last bucket is tried first; the list
    /// stays sorted, and grows with hours, not requests.
    fn hour_of(&mut self, at: Timestamp) -> &mut HourTokens {
        let hour = hour_start(at);
        let index = match self.hours.last() {
            Some(last) if last.hour == hour => self.hours.len() - 1,
            Some(last) if last.hour < hour => {
                self.hours.push(HourTokens::empty(hour));
                self.hours.len() - 1
            }
            _ => match self.hours.binary_search_by_key(&hour, |bucket| bucket.hour) {
                Ok(index) => index,
                Err(index) => {
                    self.hours.insert(index, HourTokens::empty(hour));
                    index
                }
            },
        };
        &mut self.hours[index]
    }

    /// The same part without its hours (what `show` presents).
    fn without_hours(&self) -> Self {
        Self {
            model: self.model.clone(),
            tokens: self.tokens,
            cost: self.cost,
            unpriced_tokens: self.unpriced_tokens,
            hours: Vec::new(),
        }
    }
}

/// The tokens and cost of one part's requests in one UTC hour: what
/// `usage` groups by day, week, month and 5-hour block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HourTokens {
    /// The start of the hour (UTC).
    pub hour: Timestamp,
    /// Tokens of the requests in it.
    pub tokens: TokenUsage,
    /// The cost of its priced requests, US dollars.
    #[serde(default)]
    pub cost: f64,
    /// Tokens of its requests no price was found for.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_tokens: u64,
}

impl HourTokens {
    fn empty(hour: Timestamp) -> Self {
        Self {
            hour,
            tokens: TokenUsage::default(),
            cost: 0.0,
            unpriced_tokens: 0,
        }
    }
}

/// The tokens an agent used with one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelTokens {
    /// The model (none for tokens reported before any model was named).
    pub model: Option<String>,
    /// Its tokens.
    pub tokens: TokenUsage,
    /// The cost of its priced requests, US dollars.
    #[serde(default)]
    pub cost: f64,
    /// Tokens of requests no price was found for.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_tokens: u64,
    /// The same by UTC hour of the request, in time order (kept by the
    /// fold and the usage index; `show` leaves them out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hours: Vec<HourTokens>,
}

/// How complete a cost figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CostStatus {
    /// Every token was priced and none is known to be missing.
    #[default]
    Exact,
    /// The figure is at least this: some tokens have no price, or some are
    /// known to be missing.
    Floor,
    /// Nothing could be priced.
    Unknown,
}

/// A cost figure and how complete it is: `None` when nothing could be
/// priced (never a silent zero).
pub fn cost_figure(parts: &[ModelTokens], incomplete: bool) -> (Option<f64>, CostStatus) {
    // A fold from +0.0: `Sum` of no f64 is -0.0, which prints as `-0.0`.
    let priced = parts.iter().fold(0.0, |sum, part| sum + part.cost);
    let priced_any = parts
        .iter()
        .any(|part| part.tokens.total_tokens > part.unpriced_tokens);
    let unpriced = parts.iter().any(|part| part.unpriced_tokens > 0);
    judge_cost(priced, priced_any, unpriced || incomplete)
}

/// The cost of what reported `tokens` (a run, an agent): `judged` once any
/// usage came, else none (`null`, `unknown`): nothing is priced then, and
/// `$0 exact` would read as a free run or agent.
pub fn cost_once_used<T>(tokens: Option<T>, judged: impl FnOnce() -> (Option<f64>, CostStatus)) -> (Option<f64>, CostStatus) {
    match tokens {
        Some(_) => judged(),
        None => (None, CostStatus::Unknown),
    }
}

/// The one rule for how complete a cost is: nothing priced while tokens
/// are unpriced or missing is `unknown` (no figure at all); some priced
/// is a `floor` when anything is short, else `exact`.
pub fn judge_cost(priced: f64, priced_any: bool, short: bool) -> (Option<f64>, CostStatus) {
    match (priced_any, short) {
        (false, true) => (None, CostStatus::Unknown),
        (true, true) => (Some(priced), CostStatus::Floor),
        (_, false) => (Some(priced), CostStatus::Exact),
    }
}

impl RunSummary {
    /// Its warnings but the info-level notes ([`RunSummary::note_codes`]):
    /// what the run list's WARN and `top` count.
    pub fn problem_count(&self) -> usize {
        self.warning_count.saturating_sub(self.note_codes.len())
    }

    /// Its root at work: `running`, and its session not ended (a run that
    /// stopped mid-turn, a crash or a kill, stays `running`, but nothing
    /// will end it: [`RunSummary::session_ended`]).
    pub fn at_work(&self) -> bool {
        self.status == RunStatus::Running && !self.session_ended
    }

    /// How long it took, in milliseconds: from its first envelope to its
    /// root's end, or to its last envelope while it has none. The one
    /// figure every surface shows (`show`, the run list and the catalog's
    /// `duration_ms`, `diff` and the compare page); lines logged after the
    /// root's end (the session's end, late responses) do not lengthen it.
    pub fn duration_ms(&self) -> Option<i64> {
        let start = self.started_at?;
        let end = self.ended_at.or(self.updated_at)?;
        Some(end.millis() - start.millis())
    }
}

impl AgentNode {
    /// Its cost once it made a request (a figure and how complete it is);
    /// `None` before: a cost of $0 then would read as a free agent.
    pub fn cost_once_requested(&self) -> Option<(Option<f64>, CostStatus)> {
        self.tokens.map(|_| (self.cost, self.cost_status))
    }
}

/// Every agent of a tree, parents before their children.
pub fn every_agent(agents: &[AgentNode]) -> Vec<&AgentNode> {
    let mut all = Vec::new();
    let mut stack: Vec<&AgentNode> = agents.iter().rev().collect();
    while let Some(agent) = stack.pop() {
        all.push(agent);
        stack.extend(agent.children.iter().rev());
    }
    all
}

/// True when an agent of the tree has `name` as its thread id or its
/// label (exact, as `show` prints it): what `events --actor` and the API's
/// `actor=` take beside `main`, `helpers` and `unknown`.
pub fn names_an_agent(agents: &[AgentNode], name: &str) -> bool {
    every_agent(agents).iter().any(|agent| agent.label == name || agent.thread_id.as_str() == name)
}

/// The codes of the info-level warnings among `warnings`, in order
/// ([`RunSummary::note_codes`]).
pub fn note_codes(warnings: &[Warning]) -> Vec<String> {
    warnings.iter().filter(|warning| warning.severity == crate::model::Severity::Info).map(|warning| warning.code.clone()).collect()
}

/// Tokens that belong to no agent of the tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutsideUsage {
    /// `startup` (Claude Code's warmup agents) or `unattributed`.
    pub label: String,
    /// Its tokens by model.
    pub tokens_by_model: Vec<ModelTokens>,
}

/// Usage reported by no thread, by its actor's reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct OutsideStats {
    label: String,
    reported: TokenUsage,
    tokens_by_model: Vec<ModelTokens>,
}

/// The price book a fold prices with: shared, never serialized (a restored
/// snapshot prices with the database unless told otherwise).
#[derive(Debug, Clone)]
struct Book(Arc<PriceBook>);

impl Default for Book {
    fn default() -> Self {
        Self(PriceBook::shared_database())
    }
}

impl PartialEq for Book {
    fn eq(&self, other: &Self) -> bool {
        self.0.id() == other.0.id()
    }
}

/// The state of one run, folded from its envelopes. Serializable so a store
/// can keep a snapshot of a long run's fold (an internal cache, not a
/// contract: its shape changes with the fold).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    run_id: RunId,
    provider: Provider,
    source: Source,
    root_thread_id: Option<ThreadId>,
    status: RunStatus,
    result: Option<String>,
    result_source: Option<ResultSource>,
    error: Option<String>,
    started_at: Option<Timestamp>,
    updated_at: Option<Timestamp>,
    ended_at: Option<Timestamp>,
    events: u64,
    last_sequence: u64,
    undecoded_lines: u64,
    unknown_frames: u64,
    unowned_message_or_tool: u64,
    dropped_bytes: u64,
    threads: BTreeMap<ThreadId, ThreadStats>,
    warnings: Vec<Warning>,
    /// Usage of no thread, by its actor's reason.
    #[serde(default)]
    outside: BTreeMap<String, OutsideStats>,
    /// The session's working folder, as its start or its root thread named
    /// it.
    #[serde(default)]
    cwd: Option<String>,
    /// The trace context the run was started in.
    #[serde(default)]
    traceparent: Option<String>,
    /// Set by the run book, which knows the child work: the root's turn
    /// ended yet the session goes on (see [`RunSummary::helpers_working`]).
    #[serde(default)]
    helpers_working: bool,
    /// Set by the run book, which knows the session: the root's turn never
    /// ended, yet the session did (see [`RunSummary::session_ended`]).
    #[serde(default)]
    session_ended: bool,
    #[serde(skip)]
    book: Book,
}

/// Who produced the run result (§4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultSource {
    /// The thread.
    pub thread_id: Option<ThreadId>,
    /// Its role.
    pub role: Option<Role>,
    /// The message item.
    pub item_id: Option<ItemId>,
}

/// Honest counts of a run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Envelopes in the log.
    pub events: u64,
    /// Message and tool events whose actor role is unknown.
    pub unknown_actor: u64,
    /// Input lines that were not decodable (bad JSON, bad UTF-8, too long).
    pub undecoded_lines: u64,
    /// Decodable frames of an unknown method or item type (kept raw).
    pub unknown_frames: u64,
    /// Torn or unreadable lines of the log file itself, skipped by the reader.
    pub skipped_log_lines: u64,
    /// Bytes a live recorder fell behind on and did not record.
    pub dropped_bytes: u64,
}

/// The run as `show --json`, the run record and the API present it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// Run id.
    pub id: RunId,
    /// Provider.
    pub provider: Provider,
    /// Source.
    pub source: Source,
    /// Status.
    pub status: RunStatus,
    /// The primary root thread.
    pub root_thread_id: Option<ThreadId>,
    /// The root's final answer (§4).
    pub result: Option<String>,
    /// Who produced it.
    pub result_source: Option<ResultSource>,
    /// The provider's error, for a failed or interrupted run.
    pub error: Option<String>,
    /// First envelope time.
    pub started_at: Option<Timestamp>,
    /// Last envelope time.
    pub updated_at: Option<Timestamp>,
    /// When the root's last turn ended.
    pub ended_at: Option<Timestamp>,
    /// Counts.
    pub counts: Counts,
    /// Tokens of every thread added up (per-thread totals do not overlap),
    /// and those outside the tree (`outsideTree`).
    pub tokens: Option<TokenUsage>,
    /// The cost of every priced request, US dollars; `null` when nothing
    /// could be priced.
    #[serde(default)]
    pub cost: Option<f64>,
    /// How complete `cost` is.
    #[serde(default)]
    pub cost_status: CostStatus,
    /// Why the run's tokens miss some, when they do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<IncompleteReason>,
    /// Tokens that belong to no agent of the tree (Claude's startup warmup
    /// agents, replies of unknown owner): counted, never dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_tree: Vec<OutsideUsage>,
    /// Number of warnings.
    pub warning_count: usize,
    /// The code of each warning `warningCount` counts, so that a list of
    /// runs can hide the codes a configuration allows without reading the
    /// logs. A record lists what `show` lists, but for `silent_agent`,
    /// which needs a clock, and the rule codes (`empty_result`,
    /// `helper_policy_violation`, `budget_exceeded`, `budget_unchecked`)
    /// of rules given to one command only: the home's `warnings.json`
    /// judges the record.
    /// Absent when there are none (and in records written before it
    /// existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warning_codes: Vec<String>,
    /// The W3C trace context (`traceparent`) the run was recorded in, when
    /// one was given: an OTLP export puts the run's spans in that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// True while the root's turn has ended (`status` is not `running`) but
    /// the session's work goes on: a helper or background command still at
    /// work, or its report on its way to the root, which will answer it in
    /// a new turn (Claude Code's background agents). What keeps the run
    /// book's `session_over` false, as `top`, `status` and the viewer judge
    /// a session. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub helpers_working: bool,
    /// True when `status` is `running` (the root's turn never ended) but
    /// the session has ended: its provider exited, its input ended, its
    /// tap closed, or an import found its files still past the idle limit.
    /// Nothing is at work: `running` is where the run stopped (a crash, a
    /// kill, a capture cut short), not what it does now. A new turn of the
    /// session (a resumed one) makes it false again. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub session_ended: bool,
    /// The codes of `warningCodes` that are info-level notes (such as
    /// `replayed_history`: how a child's copy of its parent's history was
    /// counted; nothing went wrong), once each a note. The run list's WARN
    /// leaves them out. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub note_codes: Vec<String>,
}

/// One agent of the tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentNode {
    /// Thread id.
    pub thread_id: ThreadId,
    /// Role.
    pub role: Role,
    /// Label.
    pub label: String,
    /// Spawner.
    pub parent_thread_id: Option<ThreadId>,
    /// Depth (root 0), when known.
    pub depth: Option<u32>,
    /// Status of its last turn.
    pub status: AgentStatus,
    /// The spawn message.
    pub prompt: Option<String>,
    /// The model it ran.
    pub model: Option<String>,
    /// Envelopes attributed to it.
    pub event_count: u64,
    /// Tool calls it made.
    pub tool_count: u64,
    /// Its own token total (children not included).
    pub tokens: Option<TokenUsage>,
    /// Its own tokens by model, when it used more than one (else `model`
    /// and `tokens` say it all, and this is empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens_by_model: Vec<ModelTokens>,
    /// The cost of its own priced requests, US dollars; `null` when
    /// nothing could be priced.
    #[serde(default)]
    pub cost: Option<f64>,
    /// How complete `cost` is.
    #[serde(default)]
    pub cost_status: CostStatus,
    /// Tokens of its own requests no price was found for.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_tokens: u64,
    /// Why its tokens miss some, when they do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<IncompleteReason>,
    /// Its final message: stated by the provider (the run's result, a
    /// child's ending), else its last message, else (Claude stream-json,
    /// whose foreground helpers forward no text) the report its spawner
    /// received in the `Agent`/`Task` tool_result.
    pub final_message: Option<String>,
    /// How `finalMessage` is known: `stated` (the agent's own words) or
    /// `derived` (the spawner's tool_result); absent when there is no final
    /// message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_message_confidence: Option<FinalMessageConfidence>,
    /// `derived` when the agent is known only by inference, not by a frame
    /// of the provider's stream that names it (a `codex exec` helper
    /// recovered from its rollout alone, a Claude helper linked by hook
    /// order); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<crate::model::Confidence>,
    /// The agents it spawned.
    pub children: Vec<AgentNode>,
    /// Its own tokens by model, each part with its hours (for `usage`;
    /// not part of the output).
    #[serde(skip)]
    pub usage_parts: Vec<ModelTokens>,
}

/// `show --json`: `{run, agents, warnings}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    /// The run.
    pub run: RunSummary,
    /// The agent tree (roots first, then threads nobody linked).
    pub agents: Vec<AgentNode>,
    /// Warnings.
    pub warnings: Vec<Warning>,
    /// What `usage` reads beside the tree (not part of the output).
    #[serde(skip)]
    pub usage: UsageFacts,
}

/// What `usage` needs of a run that `show` does not present.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageFacts {
    /// The session's working folder, when known.
    pub cwd: Option<String>,
    /// Tokens outside the tree, each part with its hours.
    pub outside_tree: Vec<OutsideUsage>,
}

impl RunState {
    /// An empty run.
    pub fn new(run_id: RunId) -> Self {
        Self {
            run_id,
            provider: Provider::Unknown,
            source: Source::Legacy,
            root_thread_id: None,
            status: RunStatus::Running,
            result: None,
            result_source: None,
            error: None,
            started_at: None,
            updated_at: None,
            ended_at: None,
            events: 0,
            last_sequence: 0,
            undecoded_lines: 0,
            unknown_frames: 0,
            unowned_message_or_tool: 0,
            dropped_bytes: 0,
            threads: BTreeMap::new(),
            warnings: Vec::new(),
            outside: BTreeMap::new(),
            cwd: None,
            traceparent: None,
            helpers_working: false,
            session_ended: false,
            book: Book::default(),
        }
    }

    /// The same run priced by `book` (a user's price file) instead of the
    /// database alone.
    pub fn with_prices(mut self, book: Arc<PriceBook>) -> Self {
        self.book = Book(book);
        self
    }

    /// The run's id.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The id of the price book it prices with (see [`PriceBook::id`]).
    pub fn prices_id(&self) -> &str {
        self.book.0.id()
    }

    /// The price book it prices with.
    pub fn prices(&self) -> Arc<PriceBook> {
        Arc::clone(&self.book.0)
    }

    /// The last sequence applied.
    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// The run status.
    pub fn status(&self) -> RunStatus {
        self.status
    }

    /// The provider whose lines it folds.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The primary root.
    pub fn root_thread_id(&self) -> Option<&ThreadId> {
        self.root_thread_id.as_ref()
    }

    /// The actor of the primary root, as last seen.
    pub fn root_actor(&self) -> Option<&Actor> {
        self.root_thread_id
            .as_ref()
            .and_then(|root| self.threads.get(root))
            .map(|stats| &stats.actor)
    }

    /// True while the primary root has a turn started and not ended.
    pub fn root_turn_running(&self) -> bool {
        self.root_thread_id
            .as_ref()
            .and_then(|root| self.threads.get(root))
            .is_some_and(|stats| stats.status == AgentStatus::Running)
    }

    /// Warnings so far.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Folds one envelope in.
    pub fn apply(&mut self, envelope: &Envelope) {
        self.events += 1;
        self.last_sequence = envelope.sequence;
        self.started_at.get_or_insert(envelope.timestamp);
        self.updated_at = Some(envelope.timestamp);
        let event = match &envelope.event {
            EventBody::Known(event) => event,
            EventBody::Foreign(_) => {
                self.touch(&envelope.actor, envelope.sequence);
                return;
            }
        };
        if let Event::ActorResolved { thread_id, actor } = event {
            self.note_root(actor);
            let stats = self.stats(thread_id, actor, envelope.sequence);
            stats.actor = actor.clone();
            stats.event_count += 1;
            return;
        }
        self.note_root(&envelope.actor);
        self.touch(&envelope.actor, envelope.sequence);
        let thread = envelope.actor.thread_id.clone();
        if event.is_message_or_tool() {
            match &thread {
                Some(thread) => self.with(thread, |stats| stats.message_or_tool_count += 1),
                None => self.unowned_message_or_tool += 1,
            }
        }
        match event {
            Event::RunStarted {
                provider,
                source,
                cwd,
                traceparent,
                ..
            } => {
                self.provider = *provider;
                self.source = *source;
                if cwd.is_some() {
                    self.cwd = cwd.clone();
                }
                if traceparent.is_some() {
                    self.traceparent = traceparent.clone();
                }
            }
            Event::ThreadStarted { thread_id, cwd, model } => {
                // The root's folder is the session's; a helper's counts only
                // until the root names one (a helper can work elsewhere).
                if let Some(cwd) = cwd.as_ref().filter(|_| self.cwd.is_none() || envelope.actor.role == Role::Root) {
                    self.cwd = Some(cwd.clone());
                }
                // The model its start names prices its tokens, as a later
                // `model_selected` would.
                if let Some(model) = model {
                    self.with(thread_id, |stats| stats.model = Some(model.clone()));
                }
            }
            // A started thread's settings: its model, and its tier (none is
            // the default one).
            Event::Response { model: Some(model), service_tier, .. } => {
                if let Some(thread) = &thread {
                    self.with(thread, |stats| {
                        stats.model = Some(model.clone());
                        stats.service_tier = service_tier.clone();
                    });
                }
            }
            Event::ToolUse { .. } => {
                if let Some(thread) = &thread {
                    self.with(thread, |stats| stats.tool_count += 1);
                }
            }
            Event::Message {
                role, phase, text, ..
            } if role == "assistant" && phase.as_deref() != Some("commentary") => {
                if let Some(thread) = &thread {
                    self.with(thread, |stats| stats.last_message = Some(text.clone()));
                }
            }
            Event::TurnStarted { .. } => {
                if let Some(thread) = &thread {
                    self.with(thread, |stats| stats.status = AgentStatus::Running);
                    if self.root_thread_id.as_ref() == Some(thread) {
                        self.status = RunStatus::Running;
                        self.ended_at = None;
                    }
                }
            }
            Event::TurnCompleted { status, usage, .. } => {
                if let Some(thread) = &thread {
                    let status = match status.as_str() {
                        "completed" => AgentStatus::Completed,
                        "interrupted" => AgentStatus::Interrupted,
                        _ => AgentStatus::Failed,
                    };
                    let book = Arc::clone(&self.book.0);
                    let pricing = Pricing {
                        provider: self.provider,
                        at: envelope.timestamp,
                        service_tier: None,
                        book: &book,
                    };
                    self.with(thread, |stats| {
                        stats.status = status;
                        if let Some(usage) = usage {
                            stats.count_tokens(*usage, None, &pricing);
                        }
                    });
                }
            }
            Event::Usage {
                total,
                last,
                model,
                service_tier,
                incomplete,
                ..
            } => {
                let book = Arc::clone(&self.book.0);
                let pricing = Pricing {
                    provider: self.provider,
                    at: envelope.timestamp,
                    service_tier: service_tier.as_deref(),
                    book: &book,
                };
                match &thread {
                    Some(thread) => self.with(thread, |stats| {
                        if model.is_some() && stats.model.is_none() {
                            stats.model = model.clone();
                        }
                        // The thread's tier, copied (it is borrowed beside
                        // the stats it prices) only when the usage names none.
                        let thread_tier = pricing.service_tier.is_none().then(|| stats.service_tier.clone()).flatten();
                        let pricing = Pricing { service_tier: pricing.service_tier.or(thread_tier.as_deref()), ..pricing };
                        stats.count_tokens(*total, *last, &pricing);
                        stats.incomplete = incomplete.iter().copied().collect();
                    }),
                    None => self.count_outside(&envelope.actor, *total, *last, model.as_deref(), &pricing),
                }
            }
            Event::AgentSpawned {
                child_thread_id,
                prompt,
                model,
                ..
            } => {
                let stats = self.stats(
                    child_thread_id,
                    &placeholder(child_thread_id),
                    envelope.sequence,
                );
                if stats.prompt.is_none() {
                    stats.prompt = prompt.clone();
                }
                if stats.model.is_none() {
                    stats.model = model.clone();
                }
            }
            Event::AgentCompleted {
                thread_id,
                result,
                status,
                result_confidence,
                ..
            } => {
                let stats = self.stats(thread_id, &placeholder(thread_id), envelope.sequence);
                stats.status = *status;
                if result.is_some() {
                    match result_confidence {
                        FinalMessageConfidence::Stated => stats.final_message = result.clone(),
                        FinalMessageConfidence::Derived => {
                            stats.reported_message = result.clone();
                        }
                    }
                }
            }
            Event::Done {
                result,
                source_thread_id,
                source_role,
                source_item_id,
            } => {
                self.status = RunStatus::Done;
                self.result = result.clone();
                self.error = None;
                self.result_source = result.as_ref().map(|_| ResultSource {
                    thread_id: source_thread_id.clone(),
                    role: *source_role,
                    item_id: source_item_id.clone(),
                });
                self.ended_at = Some(envelope.timestamp);
                if let Some(source) = source_thread_id {
                    self.with(source, |stats| stats.final_message = result.clone());
                }
            }
            Event::Failed { error, .. } => {
                self.status = RunStatus::Failed;
                self.result = None;
                self.result_source = None;
                self.error = error.clone();
                self.ended_at = Some(envelope.timestamp);
            }
            Event::Interrupted { error, .. } => {
                self.status = RunStatus::Interrupted;
                self.result = None;
                self.result_source = None;
                self.error = error.clone();
                self.ended_at = Some(envelope.timestamp);
            }
            Event::Warning { warning } => {
                let known = self
                    .warnings
                    .iter()
                    .any(|w| w.code == warning.code && w.thread_id == warning.thread_id);
                if !known {
                    self.warnings.push(warning.clone());
                }
            }
            Event::Dropped { bytes, .. } => self.dropped_bytes += bytes,
            Event::ModelSelected { model, service_tier, .. } => {
                if let Some(thread) = &thread {
                    self.with(thread, |stats| {
                        stats.model = Some(model.clone());
                        if service_tier.is_some() {
                            stats.service_tier = service_tier.clone();
                        }
                    });
                }
            }
            Event::Unknown { kind, .. } => {
                if kind == crate::model::UNDECODABLE {
                    self.undecoded_lines += 1;
                } else {
                    self.unknown_frames += 1;
                }
            }
            Event::Message { .. } | Event::Reasoning { .. } | Event::ItemStarted { .. } | Event::ItemCompleted { .. } | Event::Delta { .. } | Event::ToolResult { .. } | Event::Status { .. } | Event::AgentWaitStarted { .. } | Event::ActorResolved { .. } | Event::ServerRequest { .. } | Event::ClientRequest { .. } | Event::Response { .. } | Event::Error { .. } | Event::Notice { .. } | Event::Replayed { .. } | Event::SessionEnded { .. } => {}
        }
    }

    /// The session ended (`session_ended`): each agent whose turn is still
    /// open settles [`AgentStatus::Unknown`], as its child-work record does
    /// (the run book's rule; the run's status stays the root's, SPEC §4).
    pub(crate) fn settle_open_turns(&mut self) {
        for stats in self.threads.values_mut() {
            if stats.status == AgentStatus::Running {
                stats.status = AgentStatus::Unknown;
            }
        }
    }

    /// Usage no thread reported, kept under its actor's reason: the
    /// warmup agents' as `startup`, any other as `unattributed`.
    fn count_outside(
        &mut self,
        actor: &Actor,
        total: TokenUsage,
        last: Option<TokenUsage>,
        model: Option<&str>,
        pricing: &Pricing<'_>,
    ) {
        let label = if actor.label == WARMUP_LABEL {
            "startup"
        } else {
            "unattributed"
        };
        let key = actor.reason.clone().unwrap_or_else(|| actor.label.clone());
        let stats = self.outside.entry(key).or_insert_with(|| OutsideStats {
            label: label.to_owned(),
            reported: TokenUsage::default(),
            tokens_by_model: Vec::new(),
        });
        let added = total.minus(&stats.reported);
        stats.reported = total;
        add_request(&mut stats.tokens_by_model, model, &added, last, pricing);
    }

    /// Tokens outside the tree, one entry per label, each model's part
    /// added up.
    fn outside_tree(&self) -> Vec<OutsideUsage> {
        let mut by_label: BTreeMap<&str, Vec<ModelTokens>> = BTreeMap::new();
        for stats in self.outside.values() {
            let parts = by_label.entry(stats.label.as_str()).or_default();
            for part in &stats.tokens_by_model {
                match parts.iter_mut().find(|kept| kept.model == part.model) {
                    Some(kept) => {
                        kept.tokens = kept.tokens.add(&part.tokens);
                        kept.cost += part.cost;
                        kept.unpriced_tokens += part.unpriced_tokens;
                        for hour in &part.hours {
                            let bucket = kept.hour_of(hour.hour);
                            bucket.tokens = bucket.tokens.add(&hour.tokens);
                            bucket.cost += hour.cost;
                            bucket.unpriced_tokens += hour.unpriced_tokens;
                        }
                    }
                    None => parts.push(part.clone()),
                }
            }
        }
        by_label
            .into_iter()
            .filter(|(_, parts)| !parts.is_empty())
            .map(|(label, tokens_by_model)| OutsideUsage {
                label: label.to_owned(),
                tokens_by_model,
            })
            .collect()
    }

    /// Why a thread's tokens miss some: what its last usage said, an
    /// inherited live total, or a helper that worked with no usage at all.
    /// A reason of the thread's own; the run adds its unreadable lines.
    fn thread_incomplete(stats: &ThreadStats) -> Vec<IncompleteReason> {
        let mut reasons = stats.incomplete.clone();
        if stats.inherited {
            reasons.insert(IncompleteReason::InheritedHistory);
        }
        // It completed (a background subagent in stream-json shows only its
        // notifications) yet no source reports its usage. Its status, not
        // its messages: a reader of usage alone passes messages over.
        if stats.actor.role == Role::Helper && stats.tokens.is_none() && stats.status == AgentStatus::Completed {
            reasons.insert(IncompleteReason::NoUsageReported);
        }
        reasons.into_iter().collect()
    }

    fn note_root(&mut self, actor: &Actor) {
        if self.root_thread_id.is_none() && actor.role == Role::Root {
            self.root_thread_id = actor.thread_id.clone();
        }
    }

    fn touch(&mut self, actor: &Actor, sequence: u64) {
        let Some(thread) = &actor.thread_id else {
            return;
        };
        let touched = |stats: &mut ThreadStats| {
            stats.event_count += 1;
            stats.stated |= actor.confidence == crate::model::Confidence::Provider;
        };
        // Every event touches its thread, mostly one already known with the
        // same actor: looked up by reference and compared, where `entry`
        // and an assignment cloned the id and the actor's strings each time.
        match self.threads.get_mut(thread) {
            Some(stats) => {
                if stats.actor != *actor {
                    stats.actor.clone_from(actor);
                }
                touched(stats);
            }
            None => touched(self.stats(thread, actor, sequence)),
        }
    }

    fn stats(&mut self, thread: &ThreadId, actor: &Actor, sequence: u64) -> &mut ThreadStats {
        self.threads
            .entry(thread.clone())
            .or_insert_with(|| ThreadStats {
                actor: actor.clone(),
                first_sequence: sequence,
                event_count: 0,
                tool_count: 0,
                message_or_tool_count: 0,
                status: AgentStatus::Pending,
                final_message: None,
                last_message: None,
                reported_message: None,
                prompt: None,
                model: None,
                service_tier: None,
                tokens: None,
                tokens_by_model: Vec::new(),
                reported: None,
                incomplete: BTreeSet::new(),
                inherited: false,
                stated: false,
            })
    }

    fn with(&mut self, thread: &ThreadId, change: impl FnOnce(&mut ThreadStats)) {
        if let Some(stats) = self.threads.get_mut(thread) {
            change(stats);
        }
    }

    /// Counts, with `unknownActor` computed from final actors.
    pub fn counts(&self) -> Counts {
        let unknown_threads: u64 = self
            .threads
            .values()
            .filter(|stats| stats.actor.role == Role::Unknown)
            .map(|stats| stats.message_or_tool_count)
            .sum();
        Counts {
            events: self.events,
            unknown_actor: self.unowned_message_or_tool + unknown_threads,
            undecoded_lines: self.undecoded_lines,
            unknown_frames: self.unknown_frames,
            skipped_log_lines: 0,
            dropped_bytes: self.dropped_bytes,
        }
    }

    /// The run summary.
    pub fn summary(&self) -> RunSummary {
        let outside_tree = self.outside_tree();
        let outside_tokens = outside_tree
            .iter()
            .flat_map(|usage| &usage.tokens_by_model)
            .map(|part| part.tokens);
        let tokens = self
            .threads
            .values()
            .filter_map(|stats| stats.tokens)
            .chain(outside_tokens)
            .reduce(|a, b| a.add(&b));
        let mut incomplete: BTreeSet<IncompleteReason> = self
            .threads
            .values()
            .flat_map(Self::thread_incomplete)
            .collect();
        if self.undecoded_lines > 0 {
            incomplete.insert(IncompleteReason::UnreadableLine);
        }
        let parts: Vec<ModelTokens> = self
            .threads
            .values()
            .flat_map(|stats| stats.tokens_by_model.iter().cloned())
            .chain(outside_tree.iter().flat_map(|usage| usage.tokens_by_model.iter().cloned()))
            .collect();
        // A run no usage reached (a hook's inputs, a session before its
        // first request) has no cost yet, as an agent without usage.
        let (cost, cost_status) = cost_once_used(tokens, || cost_figure(&parts, !incomplete.is_empty()));
        RunSummary {
            id: self.run_id.clone(),
            provider: self.provider,
            source: self.source,
            status: self.status,
            root_thread_id: self.root_thread_id.clone(),
            result: self.result.clone(),
            result_source: self.result_source.clone(),
            error: self.error.clone(),
            started_at: self.started_at,
            updated_at: self.updated_at,
            ended_at: self.ended_at,
            counts: self.counts(),
            tokens,
            cost,
            cost_status,
            incomplete: incomplete.into_iter().collect(),
            outside_tree: outside_tree
                .iter()
                .map(|usage| OutsideUsage {
                    label: usage.label.clone(),
                    tokens_by_model: usage
                        .tokens_by_model
                        .iter()
                        .map(ModelTokens::without_hours)
                        .collect(),
                })
                .collect(),
            warning_count: self.warnings.len(),
            warning_codes: self.warnings.iter().map(|warning| warning.code.clone()).collect(),
            note_codes: note_codes(&self.warnings),
            traceparent: self.traceparent.clone(),
            helpers_working: self.helpers_working,
            session_ended: self.session_ended,
        }
    }

    /// Whether the session goes on after the root's turn ended, as the run
    /// book (which holds the child work) judges it.
    pub(crate) fn set_helpers_working(&mut self, working: bool) {
        self.helpers_working = working;
    }

    /// Whether the session ended with the root's turn still open, as the
    /// run book (which holds the session) judges it.
    pub(crate) fn set_session_ended(&mut self, ended: bool) {
        self.session_ended = ended;
    }

    /// What one thread's requests cost so far, as its agent node gives it;
    /// `None` before it reported usage.
    pub fn thread_cost(&self, thread: &ThreadId) -> Option<(Option<f64>, CostStatus)> {
        let stats = self.threads.get(thread)?;
        if stats.tokens_by_model.is_empty() {
            return None;
        }
        let incomplete = Self::thread_incomplete(stats);
        Some(cost_figure(&stats.tokens_by_model, !incomplete.is_empty()))
    }

    /// The agent tree: roots (primary first), then threads nobody linked.
    pub fn agents(&self) -> Vec<AgentNode> {
        let mut children: BTreeMap<&ThreadId, Vec<&ThreadId>> = BTreeMap::new();
        let mut top: Vec<&ThreadId> = Vec::new();
        for (thread, stats) in &self.threads {
            match &stats.actor.parent_thread_id {
                Some(parent)
                    if stats.actor.role == Role::Helper && self.threads.contains_key(parent) =>
                {
                    children.entry(parent).or_default().push(thread);
                }
                _ => top.push(thread),
            }
        }
        let order = |thread: &&ThreadId| {
            let stats = &self.threads[*thread];
            let rank = match stats.actor.role {
                Role::Root => 0,
                Role::Helper => 1,
                Role::Unknown => 2,
            };
            (rank, stats.first_sequence)
        };
        top.sort_by_key(order);
        for list in children.values_mut() {
            list.sort_by_key(|thread| self.threads[*thread].first_sequence);
        }
        let mut visiting = Vec::new();
        top.into_iter()
            .map(|thread| self.node(thread, &children, &mut visiting))
            .collect()
    }

    fn node(
        &self,
        thread: &ThreadId,
        children: &BTreeMap<&ThreadId, Vec<&ThreadId>>,
        visiting: &mut Vec<ThreadId>,
    ) -> AgentNode {
        let stats = &self.threads[thread];
        visiting.push(thread.clone());
        let mut kids = Vec::new();
        for child in children.get(thread).into_iter().flatten() {
            // A cycle cannot pass the registry, but a hand-edited log could hold one.
            if !visiting.contains(child) {
                kids.push(self.node(child, children, visiting));
            }
        }
        visiting.pop();
        let incomplete = Self::thread_incomplete(stats);
        let (cost, cost_status) = cost_once_used(stats.tokens, || cost_figure(&stats.tokens_by_model, !incomplete.is_empty()));
        // The agent's own words win over the report its spawner received,
        // whichever source came first.
        let final_message = stats
            .final_message
            .as_ref()
            .or(stats.last_message.as_ref())
            .map(|text| (text, FinalMessageConfidence::Stated))
            .or_else(|| {
                stats
                    .reported_message
                    .as_ref()
                    .map(|text| (text, FinalMessageConfidence::Derived))
            });
        AgentNode {
            thread_id: thread.clone(),
            role: stats.actor.role,
            label: stats.actor.label.clone(),
            parent_thread_id: stats.actor.parent_thread_id.clone(),
            depth: stats.actor.depth,
            status: stats.status,
            prompt: stats.prompt.clone(),
            model: stats.model.clone(),
            event_count: stats.event_count,
            tool_count: stats.tool_count,
            tokens: stats.tokens,
            tokens_by_model: if stats.tokens_by_model.len() > 1 {
                stats
                    .tokens_by_model
                    .iter()
                    .map(ModelTokens::without_hours)
                    .collect()
            } else {
                Vec::new()
            },
            cost,
            cost_status,
            unpriced_tokens: stats.tokens_by_model.iter().map(|part| part.unpriced_tokens).sum(),
            incomplete,
            final_message: final_message.map(|(text, _)| text.clone()),
            final_message_confidence: final_message.map(|(_, confidence)| confidence),
            confidence: (!stats.stated && stats.actor.confidence == crate::model::Confidence::Derived)
                .then_some(crate::model::Confidence::Derived),
            children: kids,
            usage_parts: stats.tokens_by_model.clone(),
        }
    }

    /// The session's working folder, as its start or its root thread named
    /// it (the run's project).
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// `{run, agents, warnings}`.
    pub fn view(&self) -> RunView {
        RunView {
            run: self.summary(),
            agents: self.agents(),
            warnings: self.warnings.clone(),
            usage: UsageFacts {
                cwd: self.cwd.clone(),
                outside_tree: self.outside_tree(),
            },
        }
    }
}

/// The actor of a thread known only from another thread's event.
fn placeholder(thread: &ThreadId) -> Actor {
    Actor {
        thread_id: Some(thread.clone()),
        role: Role::Unknown,
        parent_thread_id: None,
        label: crate::model::UNKNOWN_LABEL.to_owned(),
        depth: None,
        confidence: crate::model::Confidence::Provider,
        reason: Some("thread not in registry".to_owned()),
    }
}

/// The final actor of each corrected thread: the last `actor_resolved` of it.
/// Readers apply it to every envelope of that thread ([`FinalActors::apply`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FinalActors {
    #[serde(serialize_with = "in_key_order")]
    actors: HashMap<ThreadId, Actor>,
}

/// A hash map written in key order: its own order changes from process to
/// process, and a snapshot of one log differed from run to run.
fn in_key_order<S: serde::Serializer>(map: &HashMap<ThreadId, Actor>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_map(map.iter().collect::<BTreeMap<_, _>>())
}

impl FinalActors {
    /// Notes an envelope (only corrections matter).
    pub fn observe(&mut self, envelope: &Envelope) {
        if let EventBody::Known(Event::ActorResolved { thread_id, actor }) = &envelope.event {
            self.actors.insert(thread_id.clone(), actor.clone());
        }
    }

    /// Replaces the envelope's actor with its thread's final actor.
    pub fn apply(&self, envelope: &mut Envelope) {
        if let Some(thread) = &envelope.actor.thread_id {
            if let Some(actor) = self.actors.get(thread) {
                envelope.actor = actor.clone();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The final actors are written in thread order, whatever order their
    /// hash map keeps (it changes from process to process).
    #[test]
    fn final_actors_are_written_in_thread_order() {
        let mut finals = FinalActors::default();
        let ids = ["f", "b", "d", "a", "e", "c", "h", "g"];
        for id in ids {
            finals.actors.insert(ThreadId::from(id), Actor::unknown(id));
        }
        let written: serde_json::Value = serde_json::to_value(&finals).unwrap_or_else(|e| panic!("{e}"));
        let order: Vec<&str> = written["actors"]
            .as_object()
            .map(|actors| actors.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(order, ["a", "b", "c", "d", "e", "f", "g", "h"]);
    }
}
