//! Suspicious-run detectors (§8): small pure functions over a run's view and
//! the evidence folded from its envelopes. Each returns [`Check::Ok`],
//! [`Check::Warn`] or [`Check::RecheckAfter`] (time-based detectors such as
//! `silent_agent` are re-evaluated on a timer, not only on new events). They
//! never read the clock: the caller passes `now`.
//!
//! Codes may be allowed (hidden) or denied (raised to error level) by the
//! CLI (`-A code`, `-W code`) and by a config file ([`WarningConfig`]);
//! `empty_result`, `helper_policy_violation` and the budget codes
//! (`budget_exceeded`, `budget_unchecked`) fire only on user rules.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash as _, Hasher as _};

use serde::{Deserialize, Serialize};

use crate::model::{
    AgentStatus, Envelope, Event, EventBody, Role, RunStatus, Severity, ThreadId, Timestamp,
    Warning,
};
use crate::state::{AgentNode, RunSummary, RunView};

mod budget;

pub use budget::{budget_exceeded, budget_unchecked, BudgetPer};

/// The result of a detector takes at most this many message hashes per
/// thread into account: a replay repeats the parent's history from its start,
/// and the bound keeps memory proportional to agents, not to events.
const HASHED_MESSAGES_PER_THREAD: usize = 256;

/// The longest first user message kept per thread (for `empty_result` rules).
const KEPT_PROMPT_CHARS: usize = 4096;

/// Shorter messages ("OK", "Done.") repeat by chance, not by replay.
const REPLAY_MIN_CHARS: usize = 16;

/// Default seconds without activity before a live child is `silent_agent`.
pub const DEFAULT_SILENT_AFTER_SECS: u64 = 300;

/// Every detector code of §8, in the order they are evaluated.
pub const DETECTOR_CODES: [&str; 12] = [
    "done_source_not_root",
    "helper_result_used_as_done",
    "unattributed_done",
    "unknown_actor_events",
    "empty_result",
    "helper_policy_violation",
    "silent_agent",
    "orphan_child",
    "lost_turn",
    "replayed_history",
    "budget_exceeded",
    "budget_unchecked",
];

/// The codes an attributor raises as it reads (not a detector's): a child
/// linked to two spawners, a link refused because it would make a cycle.
pub const ATTRIBUTOR_CODES: [&str; 2] = ["link_conflict", "link_cycle"];

/// Every code a run's warnings may carry: [`DETECTOR_CODES`], then
/// [`ATTRIBUTOR_CODES`].
pub fn known_codes() -> impl Iterator<Item = &'static str> {
    DETECTOR_CODES.into_iter().chain(ATTRIBUTOR_CODES)
}

/// True for a code a run's warnings may carry ([`known_codes`]).
pub fn is_known_code(code: &str) -> bool {
    known_codes().any(|known| known == code)
}

/// The codes judged only when a run is read, against the clock
/// (`silent_agent`: a live helper quiet past the limit). A run's record is
/// written without a clock, so it never carries them, and a list of runs,
/// which filters on the records, can never keep to them: `check`, `show`
/// and the API's run judge them.
pub const READ_TIME_CODES: [&str; 1] = ["silent_agent"];

/// True for a code a list of runs can keep to: a known code
/// ([`is_known_code`]) a record may carry (not one of [`READ_TIME_CODES`]).
pub fn is_listable_code(code: &str) -> bool {
    is_known_code(code) && !READ_TIME_CODES.contains(&code)
}

/// Every code a list of runs can keep to ([`is_listable_code`]), in
/// [`known_codes`] order.
pub fn listable_codes() -> impl Iterator<Item = &'static str> {
    known_codes().filter(|code| !READ_TIME_CODES.contains(code))
}

/// What one detector says about a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Nothing suspicious.
    Ok,
    /// Suspicious: these warnings.
    Warn(Vec<Warning>),
    /// Nothing yet, but the answer may change with time alone: evaluate
    /// again after this many milliseconds.
    RecheckAfter(u64),
    /// These warnings, and more may come with time alone (a second helper
    /// quiet, not yet past the limit): evaluate again after this many
    /// milliseconds.
    WarnThenRecheckAfter(Vec<Warning>, u64),
}

/// Facts a view does not hold, folded from the envelopes (per thread, so
/// memory grows with agents and tools, never with events). Serializable for
/// a store's snapshot of a long run's fold (a cache, not a contract).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    threads: BTreeMap<ThreadId, ThreadEvidence>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct ThreadEvidence {
    last_activity: Option<Timestamp>,
    open_turn: Option<(String, u64)>,
    /// `(tool kind, tool name)` → `(calls, first sequence)`.
    #[serde(with = "crate::pairs")]
    tools: BTreeMap<(String, String), (u64, u64)>,
    first_user_message: Option<String>,
    message_hashes: Vec<u64>,
    replayed: Option<u64>,
}

impl Evidence {
    /// When `thread` was last heard from: its last envelope's time (what
    /// `silent_agent` counts a helper's quiet from).
    pub fn last_activity(&self, thread: &ThreadId) -> Option<Timestamp> {
        self.threads.get(thread).and_then(|evidence| evidence.last_activity)
    }

    /// Folds one envelope in (corrections need not be applied: facts are
    /// kept by thread id, roles are read from the view).
    pub fn apply(&mut self, envelope: &Envelope) {
        let Some(thread) = envelope.actor.thread_id.clone() else {
            return;
        };
        // Whether this message repeats one of the parent's, decided before
        // this thread's entry changes, and only for a message that could be
        // a replay: gathering the parent's hashes for every envelope cost
        // more than the rest of a run's fold together.
        let repeats_parent = match &envelope.event {
            EventBody::Known(Event::Message { text, .. })
                if text.trim().chars().count() >= REPLAY_MIN_CHARS
                    && self
                        .threads
                        .get(&thread)
                        .is_none_or(|evidence| evidence.replayed.is_none()) =>
            {
                let hash = text_hash(text);
                envelope
                    .actor
                    .parent_thread_id
                    .as_ref()
                    .and_then(|parent| self.threads.get(parent))
                    .is_some_and(|evidence| evidence.message_hashes.contains(&hash))
            }
            EventBody::Known(_) | EventBody::Foreign(_) => false,
        };
        let evidence = self.threads.entry(thread).or_default();
        evidence.last_activity = Some(envelope.timestamp);
        let EventBody::Known(event) = &envelope.event else {
            return;
        };
        match event {
            Event::TurnStarted { turn_id, .. } => {
                evidence.open_turn = Some((turn_id.0.clone(), envelope.sequence));
            }
            Event::TurnCompleted { .. } => evidence.open_turn = None,
            Event::ToolUse {
                tool_kind, name, ..
            } => {
                let entry = evidence
                    .tools
                    .entry((tool_kind.clone(), name.clone()))
                    .or_insert((0, envelope.sequence));
                entry.0 += 1;
            }
            Event::Message { role, text, .. } => {
                if role == "user" && evidence.first_user_message.is_none() {
                    evidence.first_user_message =
                        Some(text.chars().take(KEPT_PROMPT_CHARS).collect());
                }
                let hash = text_hash(text);
                if repeats_parent {
                    evidence.replayed = Some(envelope.sequence);
                }
                if evidence.message_hashes.len() < HASHED_MESSAGES_PER_THREAD {
                    evidence.message_hashes.push(hash);
                }
            }
            Event::RunStarted { .. } | Event::Reasoning { .. } | Event::ItemStarted { .. } | Event::ItemCompleted { .. } | Event::Delta { .. } | Event::ToolResult { .. } | Event::Usage { .. } | Event::Status { .. } | Event::ThreadStarted { .. } | Event::AgentSpawned { .. } | Event::AgentWaitStarted { .. } | Event::AgentCompleted { .. } | Event::ActorResolved { .. } | Event::ServerRequest { .. } | Event::ClientRequest { .. } | Event::Response { .. } | Event::Error { .. } | Event::Notice { .. } | Event::Warning { .. } | Event::Done { .. } | Event::Failed { .. } | Event::Interrupted { .. } | Event::Replayed { .. } | Event::ModelSelected { .. } | Event::Dropped { .. } | Event::SessionEnded { .. } | Event::Unknown { .. } => {}
        }
    }
}

fn text_hash(text: &str) -> u64 {
    // SipHash with fixed keys: the same on every run, no randomness in the core.
    let mut hasher = DefaultHasher::new();
    text.trim().hash(&mut hasher);
    hasher.finish()
}

/// How a code is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Hidden.
    Allow,
    /// Raised to error level (fails `agentrace check`).
    Deny,
}

/// A user rule for `helper_policy_violation`: helpers (all, or those whose
/// label contains `helperLabel`) must not call tools of `toolKind` whose name
/// starts with `toolName`. An absent field matches anything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelperRule {
    /// `command`, `file_change`, `mcp`, `web_search`, `agent`, `other`.
    #[serde(default)]
    pub tool_kind: Option<String>,
    /// A prefix of the tool name (`mcp__github__`, `apply_patch`, …).
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Only helpers whose label contains this text.
    #[serde(default)]
    pub helper_label: Option<String>,
    /// Said in the warning, e.g. "helpers must not write files".
    #[serde(default)]
    pub description: Option<String>,
}

/// A user expectation for `empty_result`: a finished run (only those whose
/// root prompt contains `whenPromptContains`, if set) must make at least
/// `atLeast` tool calls of `toolKind` (default `file_change`, 1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArtifactRule {
    /// The tool kind that produces the artifact (default `file_change`).
    #[serde(default)]
    pub tool_kind: Option<String>,
    /// How many calls at least (default 1).
    #[serde(default)]
    pub at_least: Option<u64>,
    /// Applies only when the root's first user message contains this text
    /// (case-insensitive).
    #[serde(default)]
    pub when_prompt_contains: Option<String>,
    /// Said in the warning, e.g. "a build must change files".
    #[serde(default)]
    pub description: Option<String>,
}

/// Detector configuration: the config file's shape (JSON) and what the CLI
/// flags add to it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WarningConfig {
    /// Codes to hide.
    #[serde(default)]
    pub allow: BTreeSet<String>,
    /// Codes raised to error level.
    #[serde(default)]
    pub deny: BTreeSet<String>,
    /// Seconds without activity before a live child is silent (default 300).
    #[serde(default)]
    pub silent_after_secs: Option<u64>,
    /// Rules for `helper_policy_violation`.
    #[serde(default)]
    pub helper_rules: Vec<HelperRule>,
    /// Expectations for `empty_result`.
    #[serde(default)]
    pub expect_artifacts: Vec<ArtifactRule>,
    /// The most a run (or each agent, see `budgetPer`) may cost, US dollars
    /// (`budget_exceeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// The most tokens a run (or each agent) may use (`budget_exceeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// What `maxCost` and `maxTokens` hold: the run's totals (default) or
    /// each agent's own figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_per: Option<BudgetPer>,
}

impl WarningConfig {
    /// This config with `allow` and `deny` on top, as the command line's
    /// `-A` and `-W` put them: a flag's deny beats the config's allow and
    /// a flag's allow its deny.
    pub fn with_flags(mut self, allow: &[String], deny: &[String]) -> Self {
        for code in allow {
            self.deny.remove(code);
            self.allow.insert(code.clone());
        }
        for code in deny {
            self.allow.remove(code);
            self.deny.insert(code.clone());
        }
        self
    }

    /// The level a code gets: the last word wins, `deny` over `allow` when
    /// both name it (failing a CI job loudly beats hiding a problem).
    pub fn level(&self, code: &str) -> Option<Level> {
        if self.deny.contains(code) {
            Some(Level::Deny)
        } else if self.allow.contains(code) || self.allow.contains("all") {
            Some(Level::Allow)
        } else {
            None
        }
    }

    /// `summary` as a list of runs shows it: the codes this configuration
    /// allows are not counted. A record that names no codes (written before
    /// they were kept) keeps its count.
    pub fn listed(&self, mut summary: RunSummary) -> RunSummary {
        if !summary.warning_codes.is_empty() {
            summary
                .warning_codes
                .retain(|code| self.level(code) != Some(Level::Allow));
            summary.note_codes.retain(|code| self.level(code) != Some(Level::Allow));
            summary.warning_count = summary.warning_codes.len();
        }
        summary
    }

    /// Applies allow/deny to warnings (from detectors or the attributor).
    pub fn filter(&self, warnings: Vec<Warning>) -> Vec<Warning> {
        warnings
            .into_iter()
            .filter_map(|mut warning| match self.level(&warning.code) {
                Some(Level::Allow) => None,
                Some(Level::Deny) => {
                    warning.severity = Severity::Error;
                    Some(warning)
                }
                None => Some(warning),
            })
            .collect()
    }
}

/// What a detector reads.
#[derive(Debug, Clone, Copy)]
pub struct RunFacts<'a> {
    /// `{run, agents, warnings}` with final actors.
    pub view: &'a RunView,
    /// Facts folded from the envelopes.
    pub evidence: &'a Evidence,
    /// The time to judge at (for `silent_agent`); none for a finished file.
    pub now: Option<Timestamp>,
}

/// All detectors' findings, before allow/deny.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The warnings raised.
    pub warnings: Vec<Warning>,
    /// The soonest a time-based detector wants to be evaluated again, in ms.
    pub recheck_after_ms: Option<u64>,
}

/// A detector: a pure function of the facts and the configuration.
pub type Detector = fn(&RunFacts<'_>, &WarningConfig) -> Check;

/// Every detector with its code, in [`DETECTOR_CODES`] order.
pub fn detectors() -> [(&'static str, Detector); 12] {
    [
        ("done_source_not_root", done_source_not_root),
        ("helper_result_used_as_done", helper_result_used_as_done),
        ("unattributed_done", unattributed_done),
        ("unknown_actor_events", unknown_actor_events),
        ("empty_result", empty_result),
        ("helper_policy_violation", helper_policy_violation),
        ("silent_agent", silent_agent),
        ("orphan_child", orphan_child),
        ("lost_turn", lost_turn),
        ("replayed_history", replayed_history),
        ("budget_exceeded", budget_exceeded),
        ("budget_unchecked", budget_unchecked),
    ]
}

/// Runs every detector, then applies the configuration to their findings.
/// Allowed codes are not evaluated at all.
pub fn detect(facts: &RunFacts<'_>, config: &WarningConfig) -> Report {
    let mut report = Report::default();
    for (code, detector) in detectors() {
        if config.level(code) == Some(Level::Allow) {
            continue;
        }
        match detector(facts, config) {
            Check::Ok => {}
            Check::Warn(warnings) => report.warnings.extend(warnings),
            Check::RecheckAfter(ms) => {
                report.recheck_after_ms = Some(report.recheck_after_ms.map_or(ms, |s| s.min(ms)));
            }
            Check::WarnThenRecheckAfter(warnings, ms) => {
                report.warnings.extend(warnings);
                report.recheck_after_ms = Some(report.recheck_after_ms.map_or(ms, |s| s.min(ms)));
            }
        }
    }
    report.warnings = config.filter(report.warnings);
    report
}

/// Adds to `warnings` those of `more` it does not hold yet: one per code
/// and thread (the child-work reducer and the detectors may both see a lost
/// turn, say).
pub fn add_warnings(warnings: &mut Vec<Warning>, more: impl IntoIterator<Item = Warning>) {
    for warning in more {
        let known = warnings
            .iter()
            .any(|w| w.code == warning.code && w.thread_id == warning.thread_id);
        if !known {
            warnings.push(warning);
        }
    }
}

/// `{run, agents, warnings}` as `show` gives it: the view's warnings
/// (raised while recording), then the child-work reducer's (`child_work`)
/// and the detectors' it does not hold yet, with `config` applied (see
/// [`with_detected`]).
pub fn checked(
    mut view: RunView,
    child_work: &[Warning],
    evidence: &Evidence,
    now: Option<Timestamp>,
    config: &WarningConfig,
) -> (RunView, Option<u64>) {
    add_warnings(&mut view.warnings, child_work.iter().cloned());
    with_detected(view, evidence, now, config)
}

/// The view's warnings (raised while recording) followed by the detectors'
/// findings, with the configuration applied to both; `run.warningCount`
/// follows. The JSON shape of the view does not change.
pub fn with_detected(
    mut view: RunView,
    evidence: &Evidence,
    now: Option<Timestamp>,
    config: &WarningConfig,
) -> (RunView, Option<u64>) {
    let report = detect(
        &RunFacts {
            view: &view,
            evidence,
            now,
        },
        config,
    );
    let recorded = std::mem::take(&mut view.warnings);
    let mut warnings = config.filter(recorded);
    add_warnings(&mut warnings, report.warnings);
    view.run.warning_count = warnings.len();
    view.run.warning_codes = warnings.iter().map(|warning| warning.code.clone()).collect();
    view.run.note_codes = crate::state::note_codes(&warnings);
    view.warnings = warnings;
    (view, report.recheck_after_ms)
}

fn warning(code: &str, severity: Severity, message: String) -> Warning {
    Warning {
        code: code.to_owned(),
        severity,
        message,
        event_sequence: None,
        thread_id: None,
    }
}

/// Every agent of the tree, depth first.
fn all_agents(agents: &[AgentNode]) -> Vec<&AgentNode> {
    let mut out = Vec::new();
    let mut stack: Vec<&AgentNode> = agents.iter().rev().collect();
    while let Some(node) = stack.pop() {
        out.push(node);
        stack.extend(node.children.iter().rev());
    }
    out
}

fn is_root(facts: &RunFacts<'_>, thread: &ThreadId) -> bool {
    all_agents(&facts.view.agents)
        .iter()
        .any(|node| &node.thread_id == thread && node.role == Role::Root)
}

fn label_of<'a>(facts: &'a RunFacts<'_>, thread: &ThreadId) -> &'a str {
    all_agents(&facts.view.agents)
        .into_iter()
        .find(|node| &node.thread_id == thread)
        .map_or("an unknown thread", |node| node.label.as_str())
}

/// `done_source_not_root`: the terminal result's source is a helper or unknown.
pub fn done_source_not_root(facts: &RunFacts<'_>, _config: &WarningConfig) -> Check {
    let run = &facts.view.run;
    let Some(source) = &run.result_source else {
        return Check::Ok;
    };
    if run.result.is_none() || source.role == Some(Role::Root) {
        return Check::Ok;
    }
    let who = match source.role {
        Some(Role::Helper) => "a helper",
        _ => "an agent of unknown role",
    };
    let mut warning = warning(
        "done_source_not_root",
        Severity::Error,
        format!(
            "the run's result came from {who} ({}), not from the root",
            source
                .thread_id
                .as_ref()
                .map_or("no thread", |thread| label_of(facts, thread))
        ),
    );
    warning.thread_id = source.thread_id.clone();
    Check::Warn(vec![warning])
}

/// `helper_result_used_as_done`: the result text equals a helper's final message.
pub fn helper_result_used_as_done(facts: &RunFacts<'_>, _config: &WarningConfig) -> Check {
    let Some(result) = facts.view.run.result.as_deref().map(str::trim) else {
        return Check::Ok;
    };
    if result.is_empty() {
        return Check::Ok;
    }
    let found: Vec<Warning> = all_agents(&facts.view.agents)
        .into_iter()
        .filter(|node| node.role != Role::Root)
        .filter(|node| node.final_message.as_deref().map(str::trim) == Some(result))
        .map(|node| {
            let mut warning = warning(
                "helper_result_used_as_done",
                Severity::Error,
                format!(
                    "the run's result is word for word the final message of {}",
                    node.label
                ),
            );
            warning.thread_id = Some(node.thread_id.clone());
            warning
        })
        .collect();
    if found.is_empty() {
        Check::Ok
    } else {
        Check::Warn(found)
    }
}

/// `unattributed_done`: the run ended done with no attributable root answer.
pub fn unattributed_done(facts: &RunFacts<'_>, _config: &WarningConfig) -> Check {
    let run = &facts.view.run;
    if run.status != RunStatus::Done {
        return Check::Ok;
    }
    let from_root = run.result.is_some()
        && run.result_source.as_ref().is_some_and(|source| {
            source.role == Some(Role::Root)
                && source
                    .thread_id
                    .as_ref()
                    .is_some_and(|thread| is_root(facts, thread))
        });
    if from_root {
        return Check::Ok;
    }
    let message = if run.result.is_none() {
        "the run ended done but the root gave no final answer".to_owned()
    } else {
        "the run ended done but its answer cannot be attributed to the root".to_owned()
    };
    Check::Warn(vec![warning("unattributed_done", Severity::Error, message)])
}

/// `unknown_actor_events`: message or tool events whose actor is unknown.
pub fn unknown_actor_events(facts: &RunFacts<'_>, _config: &WarningConfig) -> Check {
    let count = facts.view.run.counts.unknown_actor;
    if count == 0 {
        return Check::Ok;
    }
    let plural = if count == 1 { "" } else { "s" };
    Check::Warn(vec![warning(
        "unknown_actor_events",
        Severity::Warning,
        format!("{count} message/tool event{plural} of unknown actor"),
    )])
}

/// `empty_result`: a finished run that an [`ArtifactRule`] expected to
/// produce artifacts produced too few.
pub fn empty_result(facts: &RunFacts<'_>, config: &WarningConfig) -> Check {
    if facts.view.run.status == RunStatus::Running || config.expect_artifacts.is_empty() {
        return Check::Ok;
    }
    let prompt = facts
        .view
        .run
        .root_thread_id
        .as_ref()
        .and_then(|root| facts.evidence.threads.get(root))
        .and_then(|evidence| evidence.first_user_message.as_deref())
        .unwrap_or("")
        .to_lowercase();
    let mut found = Vec::new();
    for rule in &config.expect_artifacts {
        if let Some(needle) = &rule.when_prompt_contains {
            if !prompt.contains(&needle.to_lowercase()) {
                continue;
            }
        }
        let kind = rule.tool_kind.as_deref().unwrap_or("file_change");
        let at_least = rule.at_least.unwrap_or(1);
        let made: u64 = facts
            .evidence
            .threads
            .values()
            .flat_map(|evidence| evidence.tools.iter())
            .filter(|((tool_kind, _), _)| tool_kind == kind)
            .map(|(_, (calls, _))| calls)
            .sum();
        if made < at_least {
            let why = rule
                .description
                .clone()
                .unwrap_or_else(|| format!("expected at least {at_least} `{kind}` call(s)"));
            found.push(warning(
                "empty_result",
                Severity::Warning,
                format!("{why}: the run made {made}"),
            ));
        }
    }
    if found.is_empty() {
        Check::Ok
    } else {
        Check::Warn(found)
    }
}

/// `helper_policy_violation`: a helper called a tool a [`HelperRule`] forbids.
pub fn helper_policy_violation(facts: &RunFacts<'_>, config: &WarningConfig) -> Check {
    let mut found = Vec::new();
    for node in all_agents(&facts.view.agents) {
        if node.role != Role::Helper {
            continue;
        }
        let Some(evidence) = facts.evidence.threads.get(&node.thread_id) else {
            continue;
        };
        for rule in &config.helper_rules {
            if rule
                .helper_label
                .as_ref()
                .is_some_and(|label| !node.label.contains(label.as_str()))
            {
                continue;
            }
            let hit = evidence.tools.iter().find(|((kind, name), _)| {
                rule.tool_kind.as_ref().is_none_or(|k| k == kind)
                    && rule
                        .tool_name
                        .as_ref()
                        .is_none_or(|n| name.starts_with(n.as_str()))
            });
            if let Some(((kind, name), (calls, first))) = hit {
                let why = rule
                    .description
                    .clone()
                    .unwrap_or_else(|| "a helper called a tool its rules forbid".to_owned());
                let mut warning = warning(
                    "helper_policy_violation",
                    Severity::Warning,
                    format!("{why}: {} called {kind} `{name}` ({calls}×)", node.label),
                );
                warning.thread_id = Some(node.thread_id.clone());
                warning.event_sequence = Some(*first);
                found.push(warning);
                break;
            }
        }
    }
    if found.is_empty() {
        Check::Ok
    } else {
        Check::Warn(found)
    }
}

/// `silent_agent`: a live child with no activity for the configured time.
/// While live children are quiet but not yet silent, asks to be evaluated
/// again when the first of them would be.
pub fn silent_agent(facts: &RunFacts<'_>, config: &WarningConfig) -> Check {
    let Some(now) = facts.now else {
        return Check::Ok;
    };
    // A helper at work after its root's turn ended (Claude's
    // `run_in_background`) can be stuck as well as one under a running
    // root: the session is not over while it works.
    if facts.view.run.status != RunStatus::Running && !facts.view.run.helpers_working {
        return Check::Ok;
    }
    // A session that ended with its root's turn open has no live child:
    // its helpers are not silent but gone (`lost_turn` and the settled
    // records say so), and each reading of it called them silent longer.
    if facts.view.run.session_ended {
        return Check::Ok;
    }
    let limit_ms = i64::try_from(
        config
            .silent_after_secs
            .unwrap_or(DEFAULT_SILENT_AFTER_SECS)
            .saturating_mul(1000),
    )
    .unwrap_or(i64::MAX);
    let mut found = Vec::new();
    let mut soonest: Option<u64> = None;
    for node in all_agents(&facts.view.agents) {
        if node.role == Role::Root || node.status != AgentStatus::Running {
            continue;
        }
        let Some(last) = facts
            .evidence
            .threads
            .get(&node.thread_id)
            .and_then(|evidence| evidence.last_activity)
        else {
            continue;
        };
        let quiet_ms = now.millis().saturating_sub(last.millis());
        if quiet_ms >= limit_ms {
            let mut warning = warning(
                "silent_agent",
                Severity::Warning,
                format!(
                    "{} is running but has shown no activity for {} s",
                    node.label,
                    quiet_ms / 1000
                ),
            );
            warning.thread_id = Some(node.thread_id.clone());
            found.push(warning);
        } else {
            let left = u64::try_from(limit_ms - quiet_ms).unwrap_or(0);
            soonest = Some(soonest.map_or(left, |s| s.min(left)));
        }
    }
    // A helper found silent must not keep a quieter one from being judged
    // when it would be: a stuck session writes no line to wake a follower.
    match (found.is_empty(), soonest) {
        (false, Some(ms)) => Check::WarnThenRecheckAfter(found, ms),
        (false, None) => Check::Warn(found),
        (true, Some(ms)) => Check::RecheckAfter(ms),
        (true, None) => Check::Ok,
    }
}

/// `orphan_child`: a thread that is neither a root nor linked to a known
/// spawner, once nothing can spawn any more.
pub fn orphan_child(facts: &RunFacts<'_>, _config: &WarningConfig) -> Check {
    // A live Codex stream names a child's thread a moment before the spawn
    // that made it: while an agent may still spawn, its spawner may yet be
    // seen, and a warning raised now would vanish with the next line. A
    // session that ended (mid-turn too: a crash) spawns nothing more.
    let run = &facts.view.run;
    if (run.status == RunStatus::Running && !run.session_ended) || run.helpers_working {
        return Check::Ok;
    }
    let found: Vec<Warning> = facts
        .view
        .agents
        .iter()
        .filter(|node| node.role != Role::Root)
        .map(|node| {
            let why = match (&node.role, &node.parent_thread_id) {
                (Role::Helper, Some(parent)) => format!("its spawner {parent} was never seen"),
                _ => "nothing links it to a spawner".to_owned(),
            };
            let mut warning = warning(
                "orphan_child",
                Severity::Warning,
                format!("thread {} has no known spawner: {why}", node.thread_id),
            );
            warning.thread_id = Some(node.thread_id.clone());
            warning
        })
        .collect();
    if found.is_empty() {
        Check::Ok
    } else {
        Check::Warn(found)
    }
}

/// `lost_turn`: a turn that never ended although the run did (host restart,
/// crash).
pub fn lost_turn(facts: &RunFacts<'_>, _config: &WarningConfig) -> Check {
    // A helper at work after its root's turn ended (Claude's
    // `run_in_background`) is working, not lost: the session goes on until
    // it ends, and a warning raised now would vanish then.
    if facts.view.run.status == RunStatus::Running || facts.view.run.helpers_working {
        return Check::Ok;
    }
    let found: Vec<Warning> = facts
        .evidence
        .threads
        .iter()
        .filter_map(|(thread, evidence)| {
            let (turn, sequence) = evidence.open_turn.as_ref()?;
            let mut warning = warning(
                "lost_turn",
                Severity::Warning,
                format!(
                    "turn {turn} of {} started and never ended",
                    label_of(facts, thread)
                ),
            );
            warning.thread_id = Some(thread.clone());
            warning.event_sequence = Some(*sequence);
            Some(warning)
        })
        .collect();
    if found.is_empty() {
        Check::Ok
    } else {
        Check::Warn(found)
    }
}

/// `replayed_history`: a child's messages repeat its parent's history
/// (a transcript that replays the parent's conversation).
pub fn replayed_history(facts: &RunFacts<'_>, _config: &WarningConfig) -> Check {
    let found: Vec<Warning> = facts
        .evidence
        .threads
        .iter()
        .filter_map(|(thread, evidence)| {
            let sequence = evidence.replayed?;
            let mut warning = warning(
                "replayed_history",
                Severity::Info,
                format!(
                    "{} repeats its parent's history (its copy of those messages is not the child's own work)",
                    label_of(facts, thread)
                ),
            );
            warning.thread_id = Some(thread.clone());
            warning.event_sequence = Some(sequence);
            Some(warning)
        })
        .collect();
    if found.is_empty() {
        Check::Ok
    } else {
        Check::Warn(found)
    }
}
