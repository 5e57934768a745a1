//! The §8 detectors: for each code, a run that fires it and one that does
//! not, built from envelopes and folded the way every reader folds a log.

use agentrace_core::model::{
    Actor, AgentStatus, Confidence, Envelope, Event, EventBody, FinalMessageConfidence,
    IncompleteReason, Role, RunId, Severity, ThreadId, Timestamp, TokenUsage, TurnId, Warning,
    LOG_VERSION,
};
use agentrace_core::state::{FinalActors, RunState};
use agentrace_core::state::{CostStatus, RunView};
use agentrace_core::warnings::{
    budget_exceeded, budget_unchecked, detect, done_source_not_root, empty_result, helper_policy_violation,
    helper_result_used_as_done, lost_turn, orphan_child, replayed_history, silent_agent,
    unattributed_done, unknown_actor_events, with_detected, ArtifactRule, Check, Evidence,
    BudgetPer, HelperRule, RunFacts, WarningConfig,
};

const ROOT: &str = "root-thread";
const HELPER: &str = "helper-thread";
const T0: i64 = 1_795_993_400_000;

fn root() -> Actor {
    Actor {
        thread_id: Some(ThreadId::from(ROOT)),
        role: Role::Root,
        parent_thread_id: None,
        label: "Main".to_owned(),
        depth: Some(0),
        confidence: Confidence::Provider,
        reason: None,
    }
}

fn helper() -> Actor {
    Actor {
        thread_id: Some(ThreadId::from(HELPER)),
        role: Role::Helper,
        parent_thread_id: Some(ThreadId::from(ROOT)),
        label: "Ash [worker]".to_owned(),
        depth: Some(1),
        confidence: Confidence::Provider,
        reason: None,
    }
}

fn stranger() -> Actor {
    Actor {
        thread_id: Some(ThreadId::from("stranger-thread")),
        role: Role::Unknown,
        parent_thread_id: None,
        label: "Unknown actor".to_owned(),
        depth: None,
        confidence: Confidence::Provider,
        reason: Some("thread not in registry".to_owned()),
    }
}

/// A run log under construction: each event gets the next sequence and a
/// time one second after the previous one.
struct Log(Vec<Envelope>);

impl Log {
    fn new() -> Self {
        Log(Vec::new())
    }

    fn push(mut self, actor: Actor, event: Event) -> Self {
        let sequence = self.0.len() as u64 + 1;
        self.0.push(Envelope {
            version: LOG_VERSION,
            timestamp: Timestamp::from_millis(T0 + 1000 * sequence as i64),
            sequence,
            run_id: RunId::from("run-test"),
            direction: None,
            actor,
            event: EventBody::Known(event),
            raw: None,
            raw_ref: None,
            raw_unavailable: None,
        });
        self
    }

    fn turn(self, actor: Actor, turn: &str) -> Self {
        self.push(
            actor,
            Event::TurnStarted {
                turn_id: TurnId::from(turn),
                root_turn_id: None,
            },
        )
    }

    fn turn_end(self, actor: Actor, turn: &str) -> Self {
        self.push(
            actor,
            Event::TurnCompleted {
                last_message: None,
                turn_id: TurnId::from(turn),
                status: "completed".to_owned(),
                error: None,
                duration_ms: None,
                usage: None,
            },
        )
    }

    fn say(self, actor: Actor, role: &str, text: &str) -> Self {
        self.push(
            actor,
            Event::Message {
                role: role.to_owned(),
                phase: None,
                text: text.to_owned(),
                item_id: None,
                turn_id: None,
            },
        )
    }

    fn tool(self, actor: Actor, kind: &str, name: &str) -> Self {
        self.push(
            actor,
            Event::ToolUse {
                process_id: None,
                tool_kind: kind.to_owned(),
                name: name.to_owned(),
                input: String::new(),
                item_id: None,
                turn_id: None,
            },
        )
    }

    fn spawn(self) -> Self {
        self.push(
            root(),
            Event::AgentSpawned {
                parent_thread_id: ThreadId::from(ROOT),
                child_thread_id: ThreadId::from(HELPER),
                prompt: Some("do the thing".to_owned()),
                model: None,
                reasoning_effort: None,
                via: "spawnAgent".to_owned(),
            },
        )
    }

    fn helper_done(self, result: &str) -> Self {
        self.helper_ended(result, FinalMessageConfidence::Stated)
    }

    fn helper_ended(self, result: &str, confidence: FinalMessageConfidence) -> Self {
        self.push(
            root(),
            Event::AgentCompleted {
                thread_id: ThreadId::from(HELPER),
                parent_thread_id: Some(ThreadId::from(ROOT)),
                result: Some(result.to_owned()),
                status: AgentStatus::Completed,
                result_confidence: confidence,
            },
        )
    }

    fn done(self, result: &str, source: Actor) -> Self {
        let thread = source.thread_id.clone();
        self.push(
            source.clone(),
            Event::Done {
                result: Some(result.to_owned()),
                source_thread_id: thread,
                source_role: Some(source.role),
                source_item_id: None,
            },
        )
    }

    /// Root spawns a helper that works and ends with `helper_answer`.
    fn with_helper(helper_answer: &str) -> Self {
        Log::new()
            .turn(root(), "t-root")
            .say(root(), "user", "Build the site and summarise it")
            .spawn()
            .turn(helper(), "t-helper")
            .say(helper(), "user", "do the thing")
            .say(helper(), "assistant", helper_answer)
            .turn_end(helper(), "t-helper")
            .helper_done(helper_answer)
    }

    /// Folds the log as readers do; returns what detectors read.
    fn facts(&self) -> (agentrace_core::state::RunView, Evidence) {
        let mut finals = FinalActors::default();
        for envelope in &self.0 {
            finals.observe(envelope);
        }
        let mut state = RunState::new(RunId::from("run-test"));
        let mut evidence = Evidence::default();
        for envelope in &self.0 {
            let mut envelope = envelope.clone();
            finals.apply(&mut envelope);
            state.apply(&envelope);
            evidence.apply(&envelope);
        }
        (state.view(), evidence)
    }

    fn check(
        &self,
        detector: agentrace_core::warnings::Detector,
        config: &WarningConfig,
        now: Option<i64>,
    ) -> Check {
        let (view, evidence) = self.facts();
        detector(
            &RunFacts {
                view: &view,
                evidence: &evidence,
                now: now.map(Timestamp::from_millis),
            },
            config,
        )
    }
}

fn warn(
    code: &str,
    severity: Severity,
    message: &str,
    sequence: Option<u64>,
    thread: Option<&str>,
) -> Check {
    Check::Warn(vec![Warning {
        code: code.to_owned(),
        severity,
        message: message.to_owned(),
        event_sequence: sequence,
        thread_id: thread.map(ThreadId::from),
    }])
}

fn finished_by_root() -> Log {
    Log::with_helper("CHILD DONE: three pages built")
        .say(root(), "assistant", "All done: the site has three pages.")
        .turn_end(root(), "t-root")
        .done("All done: the site has three pages.", root())
}

#[test]
fn a_result_from_the_root_is_not_done_source_not_root() {
    let config = WarningConfig::default();
    assert_eq!(
        finished_by_root().check(done_source_not_root, &config, None),
        Check::Ok
    );
}

#[test]
fn a_result_from_a_helper_is_done_source_not_root_at_error_level() {
    let log = Log::with_helper("CHILD DONE").done("CHILD DONE", helper());
    assert_eq!(
        log.check(done_source_not_root, &WarningConfig::default(), None),
        warn(
            "done_source_not_root",
            Severity::Error,
            "the run's result came from a helper (Ash [worker]), not from the root",
            None,
            Some(HELPER)
        )
    );
}

#[test]
fn a_root_answer_that_copies_a_helper_word_for_word_is_helper_result_used_as_done() {
    let log = Log::with_helper("CHILD DONE: three pages built")
        .say(root(), "assistant", "CHILD DONE: three pages built")
        .turn_end(root(), "t-root")
        .done("CHILD DONE: three pages built", root());
    assert_eq!(
        log.check(helper_result_used_as_done, &WarningConfig::default(), None),
        warn(
            "helper_result_used_as_done",
            Severity::Error,
            "the run's result is word for word the final message of Ash [worker]",
            None,
            Some(HELPER)
        )
    );
}

#[test]
fn a_root_answer_that_copies_a_report_only_its_spawner_received_is_helper_result_used_as_done() {
    // Claude stream-json: the helper's own text never arrives, only the
    // report in the root's tool_result (`derived`).
    let log = Log::new()
        .turn(root(), "t-root")
        .spawn()
        .turn(helper(), "t-helper")
        .turn_end(helper(), "t-helper")
        .helper_ended(
            "CHILD DONE: three pages built",
            FinalMessageConfidence::Derived,
        )
        .say(root(), "assistant", "CHILD DONE: three pages built")
        .turn_end(root(), "t-root")
        .done("CHILD DONE: three pages built", root());
    assert_eq!(
        log.check(helper_result_used_as_done, &WarningConfig::default(), None),
        warn(
            "helper_result_used_as_done",
            Severity::Error,
            "the run's result is word for word the final message of Ash [worker]",
            None,
            Some(HELPER)
        )
    );
}

#[test]
fn a_root_answer_of_its_own_is_not_helper_result_used_as_done() {
    let config = WarningConfig::default();
    assert_eq!(
        finished_by_root().check(helper_result_used_as_done, &config, None),
        Check::Ok
    );
}

#[test]
fn a_done_run_whose_answer_is_not_the_roots_is_unattributed_done() {
    let log = Log::with_helper("CHILD DONE").done("CHILD DONE", stranger());
    assert_eq!(
        log.check(unattributed_done, &WarningConfig::default(), None),
        warn(
            "unattributed_done",
            Severity::Error,
            "the run ended done but its answer cannot be attributed to the root",
            None,
            None
        )
    );
}

#[test]
fn a_done_run_answered_by_the_root_is_not_unattributed_done() {
    let config = WarningConfig::default();
    assert_eq!(
        finished_by_root().check(unattributed_done, &config, None),
        Check::Ok
    );
}

#[test]
fn messages_of_an_unknown_actor_are_counted_in_unknown_actor_events() {
    let log = finished_by_root()
        .say(stranger(), "assistant", "who am I")
        .tool(stranger(), "command", "shell");
    assert_eq!(
        log.check(unknown_actor_events, &WarningConfig::default(), None),
        warn(
            "unknown_actor_events",
            Severity::Warning,
            "2 message/tool events of unknown actor",
            None,
            None
        )
    );
}

#[test]
fn a_run_where_every_message_has_an_owner_has_no_unknown_actor_events() {
    let config = WarningConfig::default();
    assert_eq!(
        finished_by_root().check(unknown_actor_events, &config, None),
        Check::Ok
    );
}

fn build_must_change_files() -> WarningConfig {
    WarningConfig {
        expect_artifacts: vec![ArtifactRule {
            tool_kind: None,
            at_least: None,
            when_prompt_contains: Some("BUILD".to_owned()),
            description: Some("a build must change files".to_owned()),
        }],
        ..WarningConfig::default()
    }
}

#[test]
fn a_build_that_changed_no_files_is_empty_result() {
    assert_eq!(
        finished_by_root().check(empty_result, &build_must_change_files(), None),
        warn(
            "empty_result",
            Severity::Warning,
            "a build must change files: the run made 0",
            None,
            None
        )
    );
}

#[test]
fn a_build_whose_helper_changed_a_file_is_not_empty_result() {
    let log = Log::with_helper("CHILD DONE")
        .tool(helper(), "file_change", "apply_patch")
        .done("Built.", root());
    assert_eq!(
        log.check(empty_result, &build_must_change_files(), None),
        Check::Ok
    );
}

#[test]
fn an_expectation_for_another_kind_of_prompt_does_not_apply() {
    let config = WarningConfig {
        expect_artifacts: vec![ArtifactRule {
            when_prompt_contains: Some("deploy".to_owned()),
            ..ArtifactRule::default()
        }],
        ..WarningConfig::default()
    };
    assert_eq!(
        finished_by_root().check(empty_result, &config, None),
        Check::Ok
    );
}

fn helpers_must_not_write_files() -> WarningConfig {
    WarningConfig {
        helper_rules: vec![HelperRule {
            tool_kind: Some("file_change".to_owned()),
            tool_name: None,
            helper_label: None,
            description: Some("helpers must not write files".to_owned()),
        }],
        ..WarningConfig::default()
    }
}

#[test]
fn a_helper_that_writes_a_file_against_the_rules_is_helper_policy_violation() {
    let log = Log::with_helper("CHILD DONE")
        .tool(helper(), "file_change", "apply_patch")
        .tool(helper(), "file_change", "apply_patch");
    assert_eq!(
        log.check(
            helper_policy_violation,
            &helpers_must_not_write_files(),
            None
        ),
        warn(
            "helper_policy_violation",
            Severity::Warning,
            "helpers must not write files: Ash [worker] called file_change `apply_patch` (2×)",
            Some(9),
            Some(HELPER)
        )
    );
}

#[test]
fn the_root_writing_files_is_no_helper_policy_violation() {
    let log = Log::with_helper("CHILD DONE")
        .tool(helper(), "command", "shell")
        .tool(root(), "file_change", "apply_patch");
    assert_eq!(
        log.check(
            helper_policy_violation,
            &helpers_must_not_write_files(),
            None
        ),
        Check::Ok
    );
}

#[test]
fn a_helper_calling_an_mcp_tool_matches_a_rule_by_name_prefix() {
    let config = WarningConfig {
        helper_rules: vec![HelperRule {
            tool_name: Some("mcp__".to_owned()),
            ..HelperRule::default()
        }],
        ..WarningConfig::default()
    };
    let log = Log::with_helper("CHILD DONE").tool(helper(), "mcp", "mcp__github__create_issue");
    assert_eq!(
        log.check(helper_policy_violation, &config, None),
        warn(
            "helper_policy_violation",
            Severity::Warning,
            "a helper called a tool its rules forbid: Ash [worker] called mcp `mcp__github__create_issue` (1×)",
            Some(9),
            Some(HELPER)
        )
    );
}

/// The root waits on a helper that is still running; the helper's last
/// envelope is sequence 5 (T0 + 5 s).
fn helper_still_running() -> Log {
    Log::new()
        .turn(root(), "t-root")
        .say(root(), "user", "Build the site")
        .spawn()
        .turn(helper(), "t-helper")
        .tool(helper(), "command", "sleep 1000")
}

#[test]
fn a_live_helper_quiet_for_longer_than_the_limit_is_silent_agent() {
    let now = T0 + 5_000 + 301_000;
    assert_eq!(
        helper_still_running().check(silent_agent, &WarningConfig::default(), Some(now)),
        warn(
            "silent_agent",
            Severity::Warning,
            "Ash [worker] is running but has shown no activity for 301 s",
            None,
            Some(HELPER)
        )
    );
}

#[test]
fn a_live_helper_quiet_for_less_than_the_limit_asks_to_be_checked_again_when_it_would_be_silent() {
    let now = T0 + 5_000 + 60_000;
    assert_eq!(
        helper_still_running().check(silent_agent, &WarningConfig::default(), Some(now)),
        Check::RecheckAfter(240_000)
    );
}

/// Of two live helpers, the one quiet past the limit is `silent_agent` and
/// the other, quiet for less, is still judged again when it would be: the
/// report kept no time to look again once one was found, so `watch
/// --on-warning` told of the second only when a new line came (a stuck
/// session writes none).
#[test]
fn a_silent_helper_does_not_keep_a_quiet_one_from_being_judged_again_when_it_would_be_silent() {
    const SECOND: &str = "helper-thread-2";
    let second = Actor {
        thread_id: Some(ThreadId::from(SECOND)),
        label: "Bo [worker]".to_owned(),
        ..helper()
    };
    let log = helper_still_running()
        .push(
            root(),
            Event::AgentSpawned {
                parent_thread_id: ThreadId::from(ROOT),
                child_thread_id: ThreadId::from(SECOND),
                prompt: Some("do the other thing".to_owned()),
                model: None,
                reasoning_effort: None,
                via: "spawnAgent".to_owned(),
            },
        )
        .turn(second.clone(), "t-helper-2")
        .tool(second, "command", "sleep 1000");
    let (view, evidence) = log.facts();
    let report = detect(
        &RunFacts {
            view: &view,
            evidence: &evidence,
            now: Some(Timestamp::from_millis(T0 + 5_000 + 301_000)),
        },
        &WarningConfig::default(),
    );
    let silent: Vec<(String, Option<ThreadId>)> = report
        .warnings
        .into_iter()
        .filter(|warning| warning.code == "silent_agent")
        .map(|warning| (warning.message, warning.thread_id))
        .collect();
    assert_eq!(
        (silent, report.recheck_after_ms),
        (
            vec![(
                "Ash [worker] is running but has shown no activity for 301 s".to_owned(),
                Some(ThreadId::from(HELPER))
            )],
            Some(2_000)
        )
    );
}

#[test]
fn a_finished_helper_is_never_silent_agent() {
    let now = T0 + 10_000_000;
    let config = WarningConfig::default();
    assert_eq!(
        finished_by_root().check(silent_agent, &config, Some(now)),
        Check::Ok
    );
}

#[test]
fn a_thread_nothing_links_to_a_spawner_is_orphan_child() {
    let log = finished_by_root().say(stranger(), "assistant", "hello");
    assert_eq!(
        log.check(orphan_child, &WarningConfig::default(), None),
        warn(
            "orphan_child",
            Severity::Warning,
            "thread stranger-thread has no known spawner: nothing links it to a spawner",
            None,
            Some("stranger-thread")
        )
    );
}

/// While the run goes on a thread's spawner may yet be seen (a live Codex
/// stream names a child a moment before its spawn ends): no orphan yet.
/// Once its session ended, mid-turn as a crash leaves it, nothing can spawn
/// any more, and the thread no spawner links is `orphan_child`.
#[test]
fn a_thread_no_spawner_links_is_orphan_child_once_its_session_ended_even_mid_turn() {
    let log = Log::new().turn(root(), "t-root").say(root(), "user", "Build the site").say(stranger(), "assistant", "hello");
    let (mut view, evidence) = log.facts();
    let judged = |view: &RunView| orphan_child(&RunFacts { view, evidence: &evidence, now: None }, &WarningConfig::default());
    let while_running = judged(&view);
    view.run.session_ended = true;
    assert_eq!(
        (while_running, judged(&view)),
        (
            Check::Ok,
            warn(
                "orphan_child",
                Severity::Warning,
                "thread stranger-thread has no known spawner: nothing links it to a spawner",
                None,
                Some("stranger-thread")
            )
        )
    );
}

#[test]
fn a_spawned_helper_is_not_orphan_child() {
    let config = WarningConfig::default();
    assert_eq!(
        finished_by_root().check(orphan_child, &config, None),
        Check::Ok
    );
}

#[test]
fn a_helper_turn_still_open_when_the_run_ended_is_lost_turn() {
    let log = helper_still_running()
        .say(root(), "assistant", "Giving up on the helper.")
        .turn_end(root(), "t-root")
        .done("Giving up on the helper.", root());
    assert_eq!(
        log.check(lost_turn, &WarningConfig::default(), None),
        warn(
            "lost_turn",
            Severity::Warning,
            "turn t-helper of Ash [worker] started and never ended",
            Some(4),
            Some(HELPER)
        )
    );
}

#[test]
fn a_live_run_with_an_open_turn_has_no_lost_turn_yet() {
    let config = WarningConfig::default();
    assert_eq!(
        helper_still_running().check(lost_turn, &config, None),
        Check::Ok
    );
}

#[test]
fn a_helper_repeating_its_parents_messages_is_replayed_history() {
    let log = Log::new()
        .turn(root(), "t-root")
        .say(root(), "user", "Build the site and summarise it")
        .spawn()
        .turn(helper(), "t-helper")
        .say(helper(), "user", "Build the site and summarise it");
    assert_eq!(
        log.check(replayed_history, &WarningConfig::default(), None),
        warn(
            "replayed_history",
            Severity::Info,
            "Ash [worker] repeats its parent's history (its copy of those messages is not the child's own work)",
            Some(5),
            Some(HELPER)
        )
    );
}

#[test]
fn a_helper_with_its_own_messages_has_no_replayed_history() {
    let config = WarningConfig::default();
    assert_eq!(
        finished_by_root().check(replayed_history, &config, None),
        Check::Ok
    );
}

#[test]
fn allowed_codes_are_hidden_and_denied_codes_become_errors() {
    let log = finished_by_root().say(stranger(), "assistant", "hello");
    let (view, evidence) = log.facts();
    let config = WarningConfig {
        allow: ["orphan_child".to_owned()].into(),
        deny: ["unknown_actor_events".to_owned()].into(),
        ..WarningConfig::default()
    };
    let report = detect(
        &RunFacts {
            view: &view,
            evidence: &evidence,
            now: None,
        },
        &config,
    );
    assert_eq!(
        report.warnings,
        vec![Warning {
            code: "unknown_actor_events".to_owned(),
            severity: Severity::Error,
            message: "1 message/tool event of unknown actor".to_owned(),
            event_sequence: None,
            thread_id: None,
        }]
    );
}

#[test]
fn detected_warnings_join_the_views_warnings_and_its_count() {
    let log = Log::with_helper("CHILD DONE")
        .turn_end(root(), "t-root")
        .done("CHILD DONE", helper());
    let (view, evidence) = log.facts();
    let (view, recheck) = with_detected(view, &evidence, None, &WarningConfig::default());
    let codes: Vec<&str> = view.warnings.iter().map(|w| w.code.as_str()).collect();
    assert_eq!(
        (codes, view.run.warning_count, recheck),
        (
            vec![
                "done_source_not_root",
                "helper_result_used_as_done",
                "unattributed_done"
            ],
            3,
            None
        )
    );
}

#[test]
fn the_config_file_shape_reads_back() {
    let text = r#"{"allow":["orphan_child"],"deny":["lost_turn"],"silentAfterSecs":60,
        "helperRules":[{"toolKind":"mcp","description":"helpers must not call MCP tools"}],
        "expectArtifacts":[{"whenPromptContains":"build","atLeast":2}],
        "maxCost":0.25,"maxTokens":100000,"budgetPer":"agent"}"#;
    let config: WarningConfig = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        config,
        WarningConfig {
            allow: ["orphan_child".to_owned()].into(),
            deny: ["lost_turn".to_owned()].into(),
            silent_after_secs: Some(60),
            helper_rules: vec![HelperRule {
                tool_kind: Some("mcp".to_owned()),
                description: Some("helpers must not call MCP tools".to_owned()),
                ..HelperRule::default()
            }],
            expect_artifacts: vec![ArtifactRule {
                when_prompt_contains: Some("build".to_owned()),
                at_least: Some(2),
                ..ArtifactRule::default()
            }],
            max_cost: Some(0.25),
            max_tokens: Some(100_000),
            budget_per: Some(BudgetPer::Agent),
        }
    );
}


// Budgets: the figures are set on the folded view (the fold's pricing has
// tests of its own), so each test reads as the numbers it judges.

/// `total` tokens, all of them input.
fn tokens(total: u64) -> Option<TokenUsage> {
    Some(TokenUsage {
        input_tokens: total,
        total_tokens: total,
        ..TokenUsage::default()
    })
}

/// A finished run of $0.4210 and 9,000 tokens: the root's own $0.3000 and
/// 6,000 tokens, its helper's $0.1210 and 3,000; none known to be missing
/// (the log reports no usage, so the fold marks its agents `noUsageReported`).
fn priced_run() -> (RunView, Evidence) {
    let (mut view, evidence) = finished_by_root().facts();
    view.run.tokens = tokens(9000);
    view.run.cost = Some(0.4210);
    view.run.cost_status = CostStatus::Exact;
    view.run.incomplete = Vec::new();
    let root = &mut view.agents[0];
    root.tokens = tokens(6000);
    root.cost = Some(0.3);
    root.cost_status = CostStatus::Exact;
    root.incomplete = Vec::new();
    let helper = &mut root.children[0];
    helper.tokens = tokens(3000);
    helper.cost = Some(0.1210);
    helper.cost_status = CostStatus::Exact;
    helper.incomplete = Vec::new();
    (view, evidence)
}

fn judge(
    (view, evidence): &(RunView, Evidence),
    detector: agentrace_core::warnings::Detector,
    config: &WarningConfig,
) -> Check {
    detector(
        &RunFacts {
            view,
            evidence,
            now: None,
        },
        config,
    )
}

fn budget(max_cost: Option<f64>, max_tokens: Option<u64>, per: Option<BudgetPer>) -> WarningConfig {
    WarningConfig {
        max_cost,
        max_tokens,
        budget_per: per,
        ..WarningConfig::default()
    }
}

fn warnings(found: &[(&str, Severity, &str, Option<&str>)]) -> Check {
    Check::Warn(
        found
            .iter()
            .map(|(code, severity, message, thread)| Warning {
                code: (*code).to_owned(),
                severity: *severity,
                message: (*message).to_owned(),
                event_sequence: None,
                thread_id: thread.map(ThreadId::from),
            })
            .collect(),
    )
}

#[test]
fn a_run_that_cost_more_than_its_budget_is_budget_exceeded() {
    assert_eq!(
        judge(&priced_run(), budget_exceeded, &budget(Some(0.25), None, None)),
        warn(
            "budget_exceeded",
            Severity::Error,
            "run run-test cost $0.4210 is over the budget of $0.25",
            None,
            None
        )
    );
}

#[test]
fn a_run_within_both_budgets_raises_no_budget_warning() {
    let run = priced_run();
    let config = budget(Some(1.0), Some(9000), None);
    assert_eq!(
        (
            judge(&run, budget_exceeded, &config),
            judge(&run, budget_unchecked, &config)
        ),
        (Check::Ok, Check::Ok)
    );
}

#[test]
fn a_run_over_both_budgets_gets_one_warning_that_names_both() {
    assert_eq!(
        judge(&priced_run(), budget_exceeded, &budget(Some(0.25), Some(5000), Some(BudgetPer::Run))),
        warn(
            "budget_exceeded",
            Severity::Error,
            "run run-test cost $0.4210 is over the budget of $0.25, and used 9000 tokens, over the budget of 5000 tokens",
            None,
            None
        )
    );
}

#[test]
fn per_agent_budgets_judge_each_agent_by_its_own_cost_not_its_subtrees() {
    let run = priced_run();
    // The root's subtree cost $0.4210, but its own requests $0.3000: a
    // limit of $0.35 holds for every agent and fails the run.
    assert_eq!(
        (
            judge(&run, budget_exceeded, &budget(Some(0.25), None, Some(BudgetPer::Agent))),
            judge(&run, budget_exceeded, &budget(Some(0.35), None, Some(BudgetPer::Agent))),
            judge(&run, budget_exceeded, &budget(Some(0.35), None, Some(BudgetPer::Run))),
        ),
        (
            warn(
                "budget_exceeded",
                Severity::Error,
                "agent Main (thread root-thread) cost $0.3000 is over the budget of $0.25",
                None,
                Some(ROOT)
            ),
            Check::Ok,
            warn(
                "budget_exceeded",
                Severity::Error,
                "run run-test cost $0.4210 is over the budget of $0.35",
                None,
                None
            ),
        )
    );
}

#[test]
fn per_agent_token_budgets_name_every_agent_over_them() {
    assert_eq!(
        judge(&priced_run(), budget_exceeded, &budget(None, Some(2000), Some(BudgetPer::Agent))),
        warnings(&[
            (
                "budget_exceeded",
                Severity::Error,
                "agent Main (thread root-thread) used 6000 tokens, over the budget of 2000 tokens",
                Some(ROOT)
            ),
            (
                "budget_exceeded",
                Severity::Error,
                "agent Ash [worker] (thread helper-thread) used 3000 tokens, over the budget of 2000 tokens",
                Some(HELPER)
            ),
        ])
    );
}

#[test]
fn a_floor_over_the_budget_is_exceeded_at_least() {
    let mut run = priced_run();
    run.0.run.cost_status = CostStatus::Floor;
    run.0.run.incomplete = vec![IncompleteReason::MissingFinalUsage];
    assert_eq!(
        judge(&run, budget_exceeded, &budget(Some(0.25), Some(5000), None)),
        warn(
            "budget_exceeded",
            Severity::Error,
            "run run-test cost at least $0.4210 is over the budget of $0.25, and used at least 9000 tokens, over the budget of 5000 tokens",
            None,
            None
        )
    );
}

#[test]
fn a_floor_under_the_budget_cannot_confirm_it() {
    let mut run = priced_run();
    run.0.run.cost_status = CostStatus::Floor;
    run.0.run.incomplete = vec![IncompleteReason::MissingFinalUsage];
    let config = budget(Some(1.0), Some(10_000), None);
    assert_eq!(
        (
            judge(&run, budget_exceeded, &config),
            judge(&run, budget_unchecked, &config)
        ),
        (
            Check::Ok,
            warn(
                "budget_unchecked",
                Severity::Warning,
                "run run-test cost at least $0.4210 is under the budget of $1.00, but some of its tokens have no price or are missing, so it cannot be confirmed, and used at least 9000 tokens, under the budget of 10000 tokens, but some of its tokens are missing, so it cannot be confirmed",
                None,
                None
            )
        )
    );
}

#[test]
fn an_unknown_cost_is_a_budget_that_cannot_be_checked_never_a_pass_or_a_zero() {
    let mut run = priced_run();
    run.0.run.cost = None;
    run.0.run.cost_status = CostStatus::Unknown;
    let config = budget(Some(0.25), None, None);
    assert_eq!(
        (
            judge(&run, budget_exceeded, &config),
            judge(&run, budget_unchecked, &config)
        ),
        (
            Check::Ok,
            warn(
                "budget_unchecked",
                Severity::Warning,
                "run run-test cost is unknown (nothing could be priced), so the budget of $0.25 cannot be checked",
                None,
                None
            )
        )
    );
}

#[test]
fn an_unknown_cost_still_fails_a_token_budget_it_passed() {
    let mut run = priced_run();
    run.0.run.cost = None;
    run.0.run.cost_status = CostStatus::Unknown;
    let config = budget(Some(0.25), Some(5000), None);
    assert_eq!(
        (
            judge(&run, budget_exceeded, &config),
            judge(&run, budget_unchecked, &config)
        ),
        (
            warn(
                "budget_exceeded",
                Severity::Error,
                "run run-test used 9000 tokens, over the budget of 5000 tokens",
                None,
                None
            ),
            warn(
                "budget_unchecked",
                Severity::Warning,
                "run run-test cost is unknown (nothing could be priced), so the budget of $0.25 cannot be checked",
                None,
                None
            )
        )
    );
}

#[test]
fn without_limits_no_budget_is_judged_even_on_an_unknown_cost() {
    let mut run = priced_run();
    run.0.run.cost = None;
    run.0.run.cost_status = CostStatus::Unknown;
    let config = WarningConfig::default();
    assert_eq!(
        (
            judge(&run, budget_exceeded, &config),
            judge(&run, budget_unchecked, &config)
        ),
        (Check::Ok, Check::Ok)
    );
}

#[test]
fn an_agent_that_made_no_requests_is_within_any_budget() {
    let (mut view, evidence) = priced_run();
    view.agents[0].children[0].tokens = None;
    view.agents[0].children[0].cost = Some(0.0);
    let config = budget(Some(0.0), Some(0), Some(BudgetPer::Agent));
    let found = judge(&(view, evidence), budget_exceeded, &config);
    let threads = match &found {
        Check::Warn(found) => found.iter().map(|w| w.thread_id.clone()).collect(),
        _ => Vec::new(),
    };
    assert_eq!(threads, vec![Some(ThreadId::from(ROOT))]);
}

#[test]
fn an_allowed_budget_code_is_not_raised_and_the_other_still_is() {
    let mut run = priced_run();
    run.0.run.cost = None;
    run.0.run.cost_status = CostStatus::Unknown;
    let config = WarningConfig {
        allow: ["budget_exceeded".to_owned()].into(),
        ..budget(Some(0.25), Some(5000), None)
    };
    let report = detect(
        &RunFacts {
            view: &run.0,
            evidence: &run.1,
            now: None,
        },
        &config,
    );
    let codes: Vec<&str> = report.warnings.iter().map(|w| w.code.as_str()).collect();
    assert_eq!(codes, vec!["budget_unchecked"]);
}
