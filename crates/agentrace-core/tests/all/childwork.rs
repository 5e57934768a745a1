//! The child-work reducer (§6): each of the nine rules as a named test, the
//! Codex frame table case by case, and the properties (live equals replay,
//! any split gives the same records).

use agentrace_core::childwork::{
    fold, ChangeKind, ChildWork, ChildWorkChange, ChildWorkKind, ChildWorkRecord, ChildWorkState,
    Outcome, WaitingOn,
};
use agentrace_core::model::{Envelope, RunId};
use proptest::prelude::*;
use serde_json::{json, Value};

use super::support::{lines, record, record_chunks};

const ROOT: &str = "root-thread";
const CHILD: &str = "child-thread";
const OTHER: &str = "other-thread";

const BASE: i64 = 1_795_993_408_000;

/// Gives every notification its own time, 10 ms apart, in list order.
fn stamp(frames: Vec<Value>) -> Vec<Value> {
    frames
        .into_iter()
        .enumerate()
        .map(|(index, mut frame)| {
            if frame.get("method").is_some() {
                let offset = i64::try_from(index).unwrap_or(0) * 10;
                frame["emittedAtMs"] = json!(BASE + offset);
            }
            frame
        })
        .collect()
}

fn thread_started(thread: &str) -> Value {
    json!({"method":"thread/started","params":{"thread":{"id":thread,"source":"vscode","parentThreadId":null}}})
}

fn status(thread: &str, kind: &str, flags: &[&str]) -> Value {
    json!({"method":"thread/status/changed","params":{"threadId":thread,"status":{"type":kind,"activeFlags":flags}}})
}

fn turn_started(thread: &str, turn: &str) -> Value {
    json!({"method":"turn/started","params":{"threadId":thread,"turn":{"id":turn,"items":[],"status":"inProgress"}}})
}

fn turn_completed(thread: &str, turn: &str, status: &str) -> Value {
    json!({"method":"turn/completed","params":{"threadId":thread,"turn":{"id":turn,"items":[],"status":status,"error":null}}})
}

fn message(thread: &str, turn: Option<&str>, id: &str, text: &str) -> Value {
    json!({"method":"item/completed","params":{"threadId":thread,"turnId":turn,"item":{"type":"agentMessage","id":id,"text":text,"phase":null}}})
}

fn spawn(parent: &str, turn: &str, child: &str) -> Value {
    json!({"method":"item/completed","params":{"threadId":parent,"turnId":turn,"item":{"type":"collabAgentToolCall","id":format!("call-spawn-{child}"),"tool":"spawnAgent","status":"completed","senderThreadId":parent,"receiverThreadIds":[child],"prompt":"review the parser","model":"m","reasoningEffort":"medium","agentsStates":{}}}})
}

fn close_agent(parent: &str, turn: &str, child: &str) -> Value {
    json!({"method":"item/completed","params":{"threadId":parent,"turnId":turn,"item":{"type":"collabAgentToolCall","id":"call-close","tool":"closeAgent","status":"completed","senderThreadId":parent,"receiverThreadIds":[child],"prompt":null,"agentsStates":{child:{"status":"running","message":null}}}}})
}

fn activity(parent: &str, turn: &str, child: &str, kind: &str) -> Value {
    json!({"method":"item/completed","params":{"threadId":parent,"turnId":turn,"item":{"type":"subAgentActivity","id":format!("act-{kind}-{child}"),"kind":kind,"agentThreadId":child,"agentPath":"/root/child_a"}}})
}

fn command(thread: &str, turn: &str, id: &str, text: &str, process: Option<&str>) -> Value {
    json!({"method":"item/started","params":{"threadId":thread,"turnId":turn,"item":{"type":"commandExecution","id":id,"command":text,"processId":process,"source":"unifiedExecStartup","status":"inProgress"}}})
}

fn command_done(thread: &str, turn: &str, id: &str, status: &str, exit: Option<i64>) -> Value {
    json!({"method":"item/completed","params":{"threadId":thread,"turnId":turn,"item":{"type":"commandExecution","id":id,"command":"x","status":status,"exitCode":exit}}})
}

fn patch_started(thread: &str, turn: &str, id: &str, path: &str) -> Value {
    json!({"method":"item/started","params":{"threadId":thread,"turnId":turn,"item":{"type":"fileChange","id":id,"changes":[{"path":path}],"status":"inProgress"}}})
}

fn patch_done(thread: &str, turn: &str, id: &str) -> Value {
    json!({"method":"item/completed","params":{"threadId":thread,"turnId":turn,"item":{"type":"fileChange","id":id,"changes":[],"status":"completed"}}})
}

fn usage(thread: &str, turn: &str, total: u64) -> Value {
    let breakdown = json!({"totalTokens":total,"inputTokens":total,"cachedInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0});
    json!({"method":"thread/tokenUsage/updated","params":{"threadId":thread,"turnId":turn,"tokenUsage":{"total":breakdown,"last":breakdown}}})
}

fn error(thread: &str, turn: Option<&str>, will_retry: bool) -> Value {
    json!({"method":"error","params":{"threadId":thread,"turnId":turn,"error":{"message":"stream disconnected before completion","codexErrorInfo":"other"},"willRetry":will_retry}})
}

/// A V1 run whose child is linked and running turn `ct1`.
fn running_child() -> Vec<Value> {
    vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        status(CHILD, "idle", &[]),
        spawn(ROOT, "rt1", CHILD),
        turn_started(CHILD, "ct1"),
    ]
}

fn with(mut frames: Vec<Value>, more: Vec<Value>) -> Vec<Value> {
    frames.extend(more);
    frames
}

fn envelopes(frames: Vec<Value>) -> Vec<Envelope> {
    record(&lines(&stamp(frames))).1
}

/// Every change of `frames`, then those of the session end when `ended`.
fn changes(frames: Vec<Value>, ended: bool) -> (ChildWork, Vec<ChildWorkChange>) {
    let envelopes = envelopes(frames);
    fold(&envelopes, ended)
}

fn records(frames: Vec<Value>, ended: bool) -> Vec<ChildWorkRecord> {
    changes(frames, ended).0.records()
}

/// The facts a reader looks at, as one comparable value.
#[derive(Debug, PartialEq)]
struct Seen {
    id: String,
    state: ChildWorkState,
    waiting_on: Option<WaitingOn>,
    generation: u32,
    run_id: String,
    operation: Option<String>,
    last_message: Option<String>,
    total_tokens: Option<u64>,
    outcome: Option<Outcome>,
    parent: Option<String>,
    previous: Vec<(u32, String, Outcome)>,
}

fn seen(records: &[ChildWorkRecord]) -> Vec<Seen> {
    records
        .iter()
        .map(|record| Seen {
            id: record.child_work_id.to_string(),
            state: record.state,
            waiting_on: record.waiting_on,
            generation: record.generation,
            run_id: record.run_id.clone(),
            operation: record
                .operation
                .as_ref()
                .map(|operation| format!("{}: {}", operation.tool_name, operation.input)),
            last_message: record.last_message.clone(),
            total_tokens: record.total_tokens,
            outcome: record.outcome,
            parent: record
                .parent_child_work_id
                .as_ref()
                .map(ToString::to_string),
            previous: record
                .previous_invocations
                .iter()
                .map(|previous| {
                    (
                        previous.generation,
                        previous.run_id.clone(),
                        previous.outcome,
                    )
                })
                .collect(),
        })
        .collect()
}

fn child(state: ChildWorkState, run_id: &str) -> Seen {
    Seen {
        id: format!("agent:{CHILD}"),
        state,
        waiting_on: None,
        generation: 1,
        run_id: run_id.to_owned(),
        operation: None,
        last_message: None,
        total_tokens: None,
        outcome: None,
        parent: None,
        previous: Vec::new(),
    }
}

fn ended(run_id: &str, outcome: Outcome) -> Seen {
    Seen {
        outcome: Some(outcome),
        ..child(ChildWorkState::Ended, run_id)
    }
}

fn kinds(changes: &[ChildWorkChange]) -> Vec<(ChangeKind, String)> {
    changes
        .iter()
        .map(|change| (change.change, change.record.child_work_id.to_string()))
        .collect()
}

// ---- The nine rules of §6 ----

#[test]
fn rule_1_the_first_ending_of_a_run_wins_and_later_endings_change_nothing() {
    let (reducer, all) = changes(
        with(
            running_child(),
            vec![
                error(CHILD, Some("ct1"), false),
                turn_completed(CHILD, "ct1", "completed"),
                close_agent(ROOT, "rt1", CHILD),
            ],
        ),
        true,
    );
    assert_eq!(
        seen(&reducer.records()),
        vec![ended("ct1", Outcome::Failed)]
    );
    assert_eq!(
        kinds(&all),
        vec![
            (ChangeKind::Admitted, format!("agent:{CHILD}")),
            (ChangeKind::Ended, format!("agent:{CHILD}")),
        ]
    );
}

#[test]
fn rule_2_facts_of_one_run_never_leak_into_the_next() {
    let records = records(
        with(
            running_child(),
            vec![
                message(CHILD, Some("ct1"), "m1", "first answer"),
                turn_completed(CHILD, "ct1", "completed"),
                turn_started(CHILD, "ct2"),
                // Late facts of the first run, fenced by its turn id.
                message(CHILD, Some("ct1"), "m1b", "late first-run text"),
                usage(CHILD, "ct1", 900),
                command(CHILD, "ct1", "c-old", "ls", None),
                // A fact naming no turn belongs to the current run.
                message(CHILD, None, "m2", "second answer"),
            ],
        ),
        false,
    );
    assert_eq!(
        seen(&records),
        vec![Seen {
            generation: 2,
            last_message: Some("second answer".to_owned()),
            previous: vec![(1, "ct1".to_owned(), Outcome::Succeeded)],
            ..child(ChildWorkState::Working, "ct2")
        }]
    );
    assert_eq!(
        records[0].previous_invocations[0].last_message.as_deref(),
        Some("first answer")
    );
}

#[test]
fn rule_3_a_child_whose_turn_ended_before_its_announcement_gets_a_settled_record_and_reowns_its_work(
) {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        status(CHILD, "idle", &[]),
        turn_started(CHILD, "ct1"),
        command(CHILD, "ct1", "c-bg", "sleep 60", Some("4242")),
        message(CHILD, Some("ct1"), "m1", "started the server"),
        turn_completed(CHILD, "ct1", "completed"),
        spawn(ROOT, "rt1", CHILD),
    ];
    let (reducer, all) = changes(frames, false);
    assert_eq!(
        seen(&reducer.records()),
        vec![
            Seen {
                id: format!("command:{CHILD}:c-bg"),
                parent: Some(format!("agent:{CHILD}")),
                ..child(ChildWorkState::Working, "c-bg")
            },
            Seen {
                last_message: Some("started the server".to_owned()),
                ..ended("ct1", Outcome::Succeeded)
            },
        ]
    );
    // The command was admitted ownerless, then re-owned; the child was
    // admitted already ended.
    assert_eq!(
        kinds(&all),
        vec![
            (ChangeKind::Admitted, format!("command:{CHILD}:c-bg")),
            (ChangeKind::Admitted, format!("agent:{CHILD}")),
            (ChangeKind::Updated, format!("command:{CHILD}:c-bg")),
        ]
    );
    assert_eq!(all[0].record.parent_child_work_id, None);
}

#[test]
fn rule_4_re_deriving_an_unchanged_state_emits_nothing() {
    let once = changes(running_child(), false).1;
    let twice = changes(
        with(
            running_child(),
            vec![
                spawn(ROOT, "rt1", CHILD),
                turn_started(CHILD, "ct1"),
                status(CHILD, "active", &[]),
            ],
        ),
        false,
    )
    .1;
    assert_eq!(
        kinds(&once),
        vec![(ChangeKind::Admitted, format!("agent:{CHILD}"))]
    );
    assert_eq!(twice, once);
}

#[test]
fn rule_5_a_primary_root_turn_ending_settles_nothing() {
    let records = records(
        with(
            running_child(),
            vec![turn_completed(ROOT, "rt1", "interrupted")],
        ),
        false,
    );
    assert_eq!(seen(&records), vec![child(ChildWorkState::Working, "ct1")]);
}

#[test]
fn rule_6_usage_that_arrives_after_a_definite_ending_is_dropped() {
    let records = records(
        with(
            running_child(),
            vec![
                usage(CHILD, "ct1", 100),
                turn_completed(CHILD, "ct1", "completed"),
                usage(CHILD, "ct1", 250),
            ],
        ),
        false,
    );
    assert_eq!(
        seen(&records),
        vec![Seen {
            total_tokens: Some(100),
            ..ended("ct1", Outcome::Succeeded)
        }]
    );
}

#[test]
fn rule_7_ended_records_are_kept_up_to_a_bound_oldest_trimmed_first_live_ones_never() {
    let mut frames = vec![thread_started(ROOT), turn_started(ROOT, "rt1")];
    for index in 0..4 {
        let thread = format!("child-{index}");
        frames.push(spawn(ROOT, "rt1", &thread));
        frames.push(turn_started(&thread, &format!("t{index}")));
    }
    for index in 0..3 {
        frames.push(turn_completed(
            &format!("child-{index}"),
            &format!("t{index}"),
            "completed",
        ));
    }
    let mut reducer = ChildWork::with_ended_bound(2);
    for envelope in envelopes(frames) {
        reducer.apply(&envelope);
    }
    let ids: Vec<String> = reducer
        .records()
        .iter()
        .map(|record| format!("{} {:?}", record.child_work_id, record.state))
        .collect();
    assert_eq!(
        ids,
        vec![
            "agent:child-1 Ended",
            "agent:child-2 Ended",
            "agent:child-3 Working"
        ]
    );
    assert_eq!(ChildWork::new().records(), Vec::new());
    assert_eq!(agentrace_core::childwork::DEFAULT_ENDED_BOUND, 32);
}

#[test]
fn rule_8_claude_subagents_and_background_shells_map_onto_the_same_reducer() {
    // Foreground subagent: admitted at its Agent tool_use, ends at the
    // matching tool_result.
    let fg = claude_records("single_fg");
    assert_eq!(
        fg.iter()
            .map(|r| (r.kind, r.state, r.generation, r.outcome))
            .collect::<Vec<_>>(),
        vec![(
            ChildWorkKind::Agent,
            ChildWorkState::Ended,
            1,
            Some(Outcome::Succeeded)
        )]
    );
    assert!(fg[0].last_message.is_some(), "{fg:?}");
    // A background shell task is a command record.
    let shell = claude_records("bg_shell_task");
    assert_eq!(
        shell
            .iter()
            .map(|r| (r.kind, r.state, r.outcome, r.label.clone()))
            .collect::<Vec<_>>(),
        vec![(
            ChildWorkKind::Command,
            ChildWorkState::Ended,
            Some(Outcome::Succeeded),
            "Background sleep then echo".to_owned()
        )]
    );
    // A background subagent ends at its task notification.
    let bg = claude_records("single_bg");
    assert_eq!(
        bg.iter()
            .map(|r| (r.kind, r.state, r.outcome))
            .collect::<Vec<_>>(),
        vec![(
            ChildWorkKind::Agent,
            ChildWorkState::Ended,
            Some(Outcome::Succeeded)
        )]
    );
}

#[test]
fn rule_9_the_end_of_input_settles_live_runs_and_an_unended_run_is_kept_unknown() {
    let (reducer, all) = changes(
        with(running_child(), vec![turn_started(CHILD, "ct2")]),
        true,
    );
    assert_eq!(
        seen(&reducer.records()),
        vec![Seen {
            generation: 2,
            previous: vec![(1, "ct1".to_owned(), Outcome::Unknown)],
            ..ended("ct2", Outcome::Unknown)
        }]
    );
    assert_eq!(
        all.last().map(|change| change.change),
        Some(ChangeKind::Settled)
    );
}

// ---- The Codex table, case by case ----

#[test]
fn a_follow_up_turn_reopens_the_same_record_as_the_next_generation() {
    let (reducer, all) = changes(
        with(
            running_child(),
            vec![
                message(CHILD, Some("ct1"), "m1", "CHILD A DONE"),
                usage(CHILD, "ct1", 500),
                turn_completed(CHILD, "ct1", "completed"),
                turn_started(CHILD, "ct2"),
                message(CHILD, Some("ct2"), "m2", "SECOND DONE"),
                turn_completed(CHILD, "ct2", "completed"),
            ],
        ),
        true,
    );
    assert_eq!(
        seen(&reducer.records()),
        vec![Seen {
            generation: 2,
            last_message: Some("SECOND DONE".to_owned()),
            // The turn's end states the thread's running total.
            total_tokens: Some(500),
            previous: vec![(1, "ct1".to_owned(), Outcome::Succeeded)],
            ..ended("ct2", Outcome::Succeeded)
        }]
    );
    let previous = &reducer.records()[0].previous_invocations[0];
    assert_eq!(
        (previous.last_message.as_deref(), previous.total_tokens),
        (Some("CHILD A DONE"), Some(500))
    );
    let kinds: Vec<ChangeKind> = all.iter().map(|change| change.change).collect();
    assert_eq!(
        kinds,
        vec![
            ChangeKind::Admitted,
            ChangeKind::Updated,
            ChangeKind::Updated,
            ChangeKind::Ended,
            ChangeKind::Updated,
            ChangeKind::Updated,
            ChangeKind::Ended,
        ]
    );
}

#[test]
fn a_child_waiting_on_approval_is_waiting_then_working_again() {
    let frames = with(
        running_child(),
        vec![status(CHILD, "active", &["waitingOnApproval"])],
    );
    assert_eq!(
        seen(&records(frames.clone(), false)),
        vec![Seen {
            waiting_on: Some(WaitingOn::Approval),
            ..child(ChildWorkState::Waiting, "ct1")
        }]
    );
    let cleared = with(frames, vec![status(CHILD, "active", &[])]);
    assert_eq!(
        seen(&records(cleared, false)),
        vec![child(ChildWorkState::Working, "ct1")]
    );
    let user = with(
        running_child(),
        vec![
            status(CHILD, "active", &["waitingOnUserInput"]),
            turn_completed(CHILD, "ct1", "completed"),
        ],
    );
    assert_eq!(
        seen(&records(user, false)),
        vec![ended("ct1", Outcome::Succeeded)]
    );
}

#[test]
fn a_child_whose_stream_failed_ends_failed() {
    let frames = with(
        running_child(),
        vec![
            status(CHILD, "systemError", &[]),
            error(CHILD, Some("ct1"), true),
            error(CHILD, None, false),
            turn_completed(CHILD, "ct1", "failed"),
        ],
    );
    assert_eq!(
        seen(&records(frames, false)),
        vec![ended("ct1", Outcome::Failed)]
    );
}

#[test]
fn a_system_error_status_leaves_the_turn_running() {
    let frames = with(
        running_child(),
        vec![
            status(CHILD, "systemError", &[]),
            error(CHILD, Some("ct1"), true),
            // An error naming another (finished) turn ends nothing here.
            error(CHILD, Some("ct0"), false),
        ],
    );
    assert_eq!(
        seen(&records(frames, false)),
        vec![child(ChildWorkState::Working, "ct1")]
    );
}

#[test]
fn the_running_tool_is_the_operation_and_an_older_open_call_shows_again() {
    let frames = with(
        running_child(),
        vec![
            command(CHILD, "ct1", "c1", "npm test", None),
            patch_started(CHILD, "ct1", "p1", "src/lib.rs"),
        ],
    );
    let operation = |frames: Vec<Value>| {
        records(frames, false)[0]
            .operation
            .as_ref()
            .map(|operation| format!("{}: {}", operation.tool_name, operation.input))
    };
    assert_eq!(
        operation(frames.clone()),
        Some("apply_patch: src/lib.rs".to_owned())
    );
    let newer_closed = with(frames, vec![patch_done(CHILD, "ct1", "p1")]);
    assert_eq!(
        operation(newer_closed.clone()),
        Some("Bash: npm test".to_owned())
    );
    let all_closed = with(
        newer_closed,
        vec![command_done(CHILD, "ct1", "c1", "completed", Some(0))],
    );
    assert_eq!(operation(all_closed), None);
}

#[test]
fn a_persistent_command_is_owned_by_the_child_that_launched_it_and_ends_with_its_exit() {
    let frames = with(
        running_child(),
        vec![
            command(CHILD, "ct1", "c-bg", "npm run dev", Some("71723")),
            message(CHILD, Some("ct1"), "m1", "server started"),
            turn_completed(CHILD, "ct1", "completed"),
        ],
    );
    let live = records(frames.clone(), false);
    assert_eq!(
        seen(&live),
        vec![
            Seen {
                last_message: Some("server started".to_owned()),
                ..ended("ct1", Outcome::Succeeded)
            },
            Seen {
                id: format!("command:{CHILD}:c-bg"),
                parent: Some(format!("agent:{CHILD}")),
                ..child(ChildWorkState::Working, "c-bg")
            },
        ]
    );
    assert_eq!(
        (live[1].kind, live[1].label.as_str()),
        (ChildWorkKind::Command, "npm run dev")
    );
    // Its completion arrives under the turn that already ended.
    for (status, exit, outcome) in [
        ("completed", Some(0), Outcome::Succeeded),
        ("completed", None, Outcome::Succeeded),
        ("failed", Some(1), Outcome::Failed),
        ("completed", Some(2), Outcome::Failed),
        ("declined", None, Outcome::Cancelled),
    ] {
        let done = with(
            frames.clone(),
            vec![command_done(CHILD, "ct1", "c-bg", status, exit)],
        );
        assert_eq!(
            records(done, true)[1].outcome,
            Some(outcome),
            "{status} {exit:?}"
        );
    }
}

#[test]
fn a_command_that_ends_inside_its_call_is_no_record_and_the_roots_own_has_no_owner() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        command(ROOT, "rt1", "c-quick", "ls", Some("1")),
        command_done(ROOT, "rt1", "c-quick", "completed", Some(0)),
        command(ROOT, "rt1", "c-bg", "tail -f log", Some("2")),
        message(ROOT, Some("rt1"), "m", "watching"),
    ];
    assert_eq!(
        seen(&records(frames, false)),
        vec![Seen {
            id: format!("command:{ROOT}:c-bg"),
            ..child(ChildWorkState::Working, "c-bg")
        }]
    );
}

#[test]
fn session_end_settles_live_records_unknown_and_keeps_ended_ones() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        spawn(ROOT, "rt1", CHILD),
        turn_started(CHILD, "ct1"),
        spawn(ROOT, "rt1", OTHER),
        turn_started(OTHER, "ot1"),
        turn_completed(OTHER, "ot1", "interrupted"),
    ];
    let (reducer, all) = changes(frames, true);
    assert_eq!(
        reducer
            .records()
            .iter()
            .map(|record| (record.provider_id.clone(), record.state, record.outcome))
            .collect::<Vec<_>>(),
        vec![
            (
                CHILD.to_owned(),
                ChildWorkState::Ended,
                Some(Outcome::Unknown)
            ),
            (
                OTHER.to_owned(),
                ChildWorkState::Ended,
                Some(Outcome::Cancelled)
            ),
        ]
    );
    assert_eq!(
        kinds(&all[all.len() - 1..]),
        vec![(ChangeKind::Settled, format!("agent:{CHILD}"))]
    );
}

#[test]
fn closing_or_interrupting_a_running_child_cancels_it() {
    let closed = with(running_child(), vec![close_agent(ROOT, "rt1", CHILD)]);
    assert_eq!(
        seen(&records(closed, false)),
        vec![ended("ct1", Outcome::Cancelled)]
    );
    let interrupted = with(
        running_child(),
        vec![activity(ROOT, "rt1", CHILD, "interrupted")],
    );
    assert_eq!(
        seen(&records(interrupted, false)),
        vec![ended("ct1", Outcome::Cancelled)]
    );
    let thread_closed = with(
        running_child(),
        vec![json!({"method":"thread/closed","params":{"threadId":CHILD}})],
    );
    assert_eq!(
        seen(&records(thread_closed, false)),
        vec![ended("ct1", Outcome::Unknown)]
    );
}

#[test]
fn a_turn_the_host_lost_in_a_restart_ends_unknown_with_a_lost_turn_warning() {
    let frames = with(
        running_child(),
        vec![
            json!({"jsonrpc":"2.0","id":5,"method":"thread/turns/list","params":{"threadId":CHILD}}),
            json!({"id":5,"result":{"data":[{"id":"ct1","status":"interrupted","error":null,"completedAt":null,"durationMs":null,"items":[]}]}}),
        ],
    );
    // The request goes to the server; mark it so the response is named.
    let mut input = Vec::new();
    let stamped = stamp(frames);
    let mut recorder = agentrace_core::Recorder::new(
        RunId::from("run-test"),
        agentrace_core::recorder::Format::CodexAppServer,
    );
    input.extend(recorder.start(agentrace_core::model::Timestamp::from_millis(BASE)));
    for (index, frame) in stamped.iter().enumerate() {
        let bytes = serde_json::to_vec(frame).unwrap_or_default();
        let direction = if frame.get("params").is_some() && frame.get("id").is_some() {
            Some(agentrace_core::model::Direction::ToServer)
        } else {
            Some(agentrace_core::model::Direction::FromServer)
        };
        input.extend(recorder.push(&agentrace_core::InputLine {
            bytes: &bytes,
            line_number: u64::try_from(index + 1).unwrap_or(0),
            observed_at: agentrace_core::model::Timestamp::from_millis(BASE),
            direction,
            truncated_from: None,
        }));
    }
    let (reducer, _) = fold(&input, false);
    assert_eq!(
        seen(&reducer.records()),
        vec![ended("ct1", Outcome::Unknown)]
    );
    assert_eq!(
        reducer
            .warnings()
            .iter()
            .map(|warning| (
                warning.code.as_str(),
                warning.thread_id.clone().map(|t| t.0)
            ))
            .collect::<Vec<_>>(),
        vec![("lost_turn", Some(CHILD.to_owned()))]
    );
}

#[test]
fn a_record_serializes_as_the_documented_json() {
    let records = records(
        with(
            running_child(),
            vec![command(CHILD, "ct1", "c1", "npm test", None)],
        ),
        false,
    );
    let value = serde_json::to_value(&records[0]).unwrap_or_default();
    assert_eq!(
        value,
        json!({
            "childWorkId": "agent:child-thread",
            "kind": "agent",
            "provider": "codex",
            "providerId": "child-thread",
            "label": "Helper 1",
            "description": "review the parser",
            "state": "working",
            "generation": 1,
            "runId": "ct1",
            "operation": {"toolName": "Bash", "input": "npm test", "basis": "open", "startedAt": "2026-11-29T23:03:28.050Z"},
            "startedAt": "2026-11-29T23:03:28.040Z",
            "updatedAt": "2026-11-29T23:03:28.050Z",
            "previousInvocations": []
        })
    );
}

// ---- Claude ----

fn claude_records(name: &str) -> Vec<ChildWorkRecord> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/claude")
        .join(name)
        .join("stream.jsonl");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut recorder = agentrace_core::Recorder::new(
        RunId::from("run-test"),
        agentrace_core::recorder::Format::ClaudeStream,
    );
    let mut envelopes = recorder.start(agentrace_core::model::Timestamp::from_millis(BASE));
    for (index, line) in bytes.split(|byte| *byte == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        envelopes.extend(recorder.push(&agentrace_core::InputLine {
            bytes: line,
            line_number: u64::try_from(index + 1).unwrap_or(0),
            observed_at: agentrace_core::model::Timestamp::from_millis(BASE),
            direction: None,
            truncated_from: None,
        }));
    }
    envelopes.extend(recorder.finish());
    fold(&envelopes, true).0.records()
}

// ---- Properties ----

fn frame() -> impl Strategy<Value = Value> {
    let thread = prop_oneof![Just("t-root"), Just("t-a"), Just("t-b")];
    let other = prop_oneof![Just("t-a"), Just("t-b"), Just("t-c")];
    let turn = prop_oneof![Just("u1"), Just("u2"), Just("u3")];
    let ending = prop_oneof![Just("completed"), Just("interrupted"), Just("failed")];
    (0..12u8, thread, other, turn, ending, "[a-z ]{0,8}").prop_map(
        |(kind, thread, other, turn, status_text, text)| match kind {
            0 => thread_started(thread),
            1 => turn_started(thread, turn),
            2 => turn_completed(thread, turn, status_text),
            3 => message(thread, Some(turn), "m", &text),
            4 => spawn(thread, turn, other),
            5 => activity(thread, turn, other, "started"),
            6 => status(thread, "active", &["waitingOnApproval"]),
            7 => command(thread, turn, "c", &text, Some("9")),
            8 => command_done(thread, turn, "c", status_text, Some(0)),
            9 => usage(thread, turn, 42),
            10 => error(thread, Some(turn), false),
            _ => patch_started(thread, turn, "p", &text),
        },
    )
}

/// The log as a reader gets it back: every envelope through JSON.
fn through_the_log(envelopes: &[Envelope]) -> Vec<Envelope> {
    envelopes
        .iter()
        .map(|envelope| {
            let line = serde_json::to_string(envelope).unwrap_or_default();
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn live_records_equal_the_records_of_the_replayed_log(
        frames in proptest::collection::vec(frame(), 0..40),
        ended in any::<bool>(),
    ) {
        let live = envelopes(frames);
        let (live_reducer, live_changes) = fold(&live, ended);
        let (replayed, replayed_changes) = fold(&through_the_log(&live), ended);
        prop_assert_eq!(live_changes, replayed_changes);
        prop_assert_eq!(live_reducer.records(), replayed.records());
    }

    /// A reducer read back from its snapshot (its JSON) at any point goes
    /// on as the one that never stopped: what it keeps unsaved (each
    /// parent's children, which rule 3 re-owns work by) is made again.
    #[test]
    fn a_reducer_resumed_from_its_snapshot_anywhere_gives_the_same_changes(
        frames in proptest::collection::vec(frame(), 0..40),
        at in any::<prop::sample::Index>(),
        ended in any::<bool>(),
    ) {
        let envelopes = envelopes(frames);
        let (straight, straight_changes) = fold(&envelopes, ended);
        let cut = at.index(envelopes.len() + 1);
        let (before, mut changes) = fold(&envelopes[..cut], false);
        let mut resumed: ChildWork = serde_json::from_value(serde_json::to_value(&before).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
        for envelope in &envelopes[cut..] {
            changes.extend(resumed.apply(envelope));
        }
        if ended {
            if let Some(last) = envelopes.last() {
                changes.extend(resumed.end_session(last.timestamp));
            }
        }
        prop_assert_eq!(changes, straight_changes);
        prop_assert_eq!(resumed.records(), straight.records());
    }

    #[test]
    fn any_split_of_the_input_gives_the_same_records(
        frames in proptest::collection::vec(frame(), 0..30),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let input = lines(&stamp(frames));
        let whole = fold(&record(&input).1, true).0.records();
        let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(input.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut from = 0;
        for point in points {
            chunks.push(&input[from..point]);
            from = point;
        }
        chunks.push(&input[from..]);
        let split = fold(&record_chunks(&chunks).1, true).0.records();
        prop_assert_eq!(whole, split);
    }
}

#[test]
fn a_reducer_snapshot_from_before_legacy_logs_were_told_apart_is_not_read() {
    // Without the flag a snapshot of a legacy log's fold would resume as if
    // the log carried its facts on its events: refused, so the store folds
    // the log again.
    let mut value = serde_json::to_value(ChildWork::new()).unwrap_or_default();
    let kept = serde_json::from_value::<ChildWork>(value.clone()).is_ok();
    if let Some(object) = value.as_object_mut() {
        object.remove("legacy");
    }
    assert_eq!((kept, serde_json::from_value::<ChildWork>(value).is_ok()), (true, false));
}

/// A root gets no record, so no one reads its earlier runs: the reducer
/// stays the same size however many turns the root takes. It kept each
/// one with its last message, which made a 60 MB transcript's snapshot
/// (15,000 turns) 19 MB. A child's earlier runs stay in its record.
#[test]
fn a_roots_turns_leave_the_reducer_no_bigger_while_a_childs_earlier_runs_stay_in_its_record() {
    let session = |turns: usize| {
        let mut frames = running_child();
        frames.extend([
            turn_completed(CHILD, "ct1", "completed"),
            turn_started(CHILD, "ct2"),
            turn_completed(CHILD, "ct2", "completed"),
            turn_completed(ROOT, "rt1", "completed"),
        ]);
        // Ids of one length, and generations of two digits: the sizes
        // compared differ only by what is kept per turn.
        for turn in 0..turns {
            let id = format!("rt{turn:05}");
            frames.push(turn_started(ROOT, &id));
            frames.push(message(ROOT, Some(&id), &format!("m{turn:05}"), &"a".repeat(1000)));
            frames.push(turn_completed(ROOT, &id, "completed"));
        }
        let (work, _) = changes(frames, false);
        let size = serde_json::to_vec(&work).map(|bytes| bytes.len()).unwrap_or_default();
        (size, seen(&work.records()))
    };
    let (few, few_records) = session(20);
    assert_eq!(
        few_records.iter().map(|record| record.previous.clone()).collect::<Vec<_>>(),
        vec![vec![(1, "ct1".to_owned(), Outcome::Succeeded)]]
    );
    assert_eq!(session(90), (few, few_records));
}
