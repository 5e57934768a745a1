//! The attribution and provenance rules (§3, §4), one test per rule, each on
//! a small hand-made frame list shaped like the real captures.

use agentrace_core::model::{
    AgentStatus, Confidence, Envelope, Event, EventBody, FinalMessageConfidence, Role, RunStatus,
    ThreadId,
};
use serde_json::{json, Value};

use super::support::{finalized, lines, record};

const ROOT: &str = "root-thread";
const CHILD: &str = "child-thread";
const GRANDCHILD: &str = "grandchild-thread";

fn at(ms: i64) -> i64 {
    1_795_993_408_000 + ms
}

fn thread_started(thread: &str) -> Value {
    json!({"method":"thread/started","params":{"thread":{"id":thread,"source":"vscode","parentThreadId":null}},"emittedAtMs":at(1)})
}

fn status(thread: &str, kind: &str) -> Value {
    json!({"method":"thread/status/changed","params":{"threadId":thread,"status":{"type":kind}},"emittedAtMs":at(2)})
}

fn turn_started(thread: &str, turn: &str) -> Value {
    json!({"method":"turn/started","params":{"threadId":thread,"turn":{"id":turn,"items":[],"status":"inProgress"}},"emittedAtMs":at(3)})
}

fn turn_completed(thread: &str, turn: &str, status: &str) -> Value {
    json!({"method":"turn/completed","params":{"threadId":thread,"turn":{"id":turn,"items":[],"status":status,"error":null}},"emittedAtMs":at(9)})
}

fn message(thread: &str, turn: &str, id: &str, text: &str, phase: Option<&str>) -> Value {
    json!({"method":"item/completed","params":{"threadId":thread,"turnId":turn,"item":{"type":"agentMessage","id":id,"text":text,"phase":phase}},"emittedAtMs":at(5)})
}

fn spawn_completed(parent: &str, turn: &str, child: &str) -> Value {
    json!({"method":"item/completed","params":{"threadId":parent,"turnId":turn,"item":{"type":"collabAgentToolCall","id":format!("call-spawn-{child}"),"tool":"spawnAgent","status":"completed","senderThreadId":parent,"receiverThreadIds":[child],"prompt":"do the thing","model":"mock-model","reasoningEffort":"medium","agentsStates":{}}},"emittedAtMs":at(4)})
}

fn activity(parent: &str, turn: &str, child: &str, path: &str, kind: &str) -> Value {
    json!({"method":"item/completed","params":{"threadId":parent,"turnId":turn,"item":{"type":"subAgentActivity","id":format!("act-{kind}-{child}"),"kind":kind,"agentThreadId":child,"agentPath":path,"model":"m"}},"emittedAtMs":at(4)})
}

fn thread_read(child: &str, parent: &str, nickname: &str, role: Option<&str>) -> Value {
    json!({"id":7,"result":{"thread":{"id":child,"parentThreadId":parent,"agentNickname":nickname,"agentRole":role,
        "source":{"subAgent":{"thread_spawn":{"parent_thread_id":parent,"depth":1,"agent_path":null,"agent_nickname":nickname,"agent_role":role}}}}}})
}

fn run(frames: &[Value]) -> (agentrace_core::Recorder, Vec<Envelope>) {
    record(&lines(frames))
}

fn events(envelopes: &[Envelope]) -> Vec<&Event> {
    envelopes.iter().filter_map(|e| e.event.known()).collect()
}

fn actor_of_sequence(envelopes: &[Envelope], sequence: u64) -> agentrace_core::Actor {
    finalized(envelopes)
        .into_iter()
        .find(|e| e.sequence == sequence)
        .map(|e| e.actor)
        .unwrap_or_else(|| panic!("no sequence {sequence}"))
}

/// A V1 child: status change, then the spawn item that links it.
fn v1_run() -> Vec<Value> {
    vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        status(CHILD, "idle"),
        spawn_completed(ROOT, "rt1", CHILD),
        turn_started(CHILD, "ct1"),
        message(CHILD, "ct1", "msg_1", "CHILD DONE", None),
        turn_completed(CHILD, "ct1", "completed"),
        message(ROOT, "rt1", "msg_2", "ROOT DONE", None),
        turn_completed(ROOT, "rt1", "completed"),
    ]
}

#[test]
fn a_child_that_speaks_before_its_link_is_corrected_once_the_link_arrives() {
    let (_, envelopes) = run(&v1_run());
    // Sequence 1 is run_started; the child's status change is line 3 → sequence 4.
    let as_written = &envelopes[3];
    assert_eq!(as_written.actor.role, Role::Unknown);
    assert_eq!(as_written.actor.thread_id, Some(ThreadId::from(CHILD)));
    assert_eq!(
        as_written.actor.reason.as_deref(),
        Some("thread not in registry")
    );
    let corrected = actor_of_sequence(&envelopes, 4);
    assert_eq!(
        corrected,
        agentrace_core::Actor {
            thread_id: Some(ThreadId::from(CHILD)),
            role: Role::Helper,
            parent_thread_id: Some(ThreadId::from(ROOT)),
            label: "Helper 1".to_owned(),
            depth: Some(1),
            confidence: Confidence::Provider,
            reason: None,
        }
    );
    let corrections: Vec<_> = events(&envelopes)
        .into_iter()
        .filter(|e| matches!(e, Event::ActorResolved { .. }))
        .collect();
    assert_eq!(corrections.len(), 1, "one correction for one late link");
}

#[test]
fn an_unlinked_thread_stays_unknown_and_is_never_guessed_a_child() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        turn_started("stranger", "st1"),
        message("stranger", "st1", "m1", "who am I", None),
        turn_completed(ROOT, "rt1", "completed"),
    ];
    let (recorder, envelopes) = run(&frames);
    let actor = actor_of_sequence(&envelopes, 5);
    assert_eq!(actor.role, Role::Unknown);
    assert_eq!(actor.thread_id, Some(ThreadId::from("stranger")));
    let view = recorder.state().view();
    assert_eq!(view.run.counts.unknown_actor, 1);
    let stranger = view
        .agents
        .iter()
        .find(|a| a.thread_id.as_str() == "stranger");
    assert_eq!(stranger.map(|a| a.role), Some(Role::Unknown));
}

#[test]
fn a_second_thread_started_on_the_connection_is_another_root_not_a_helper() {
    let frames = vec![
        thread_started(ROOT),
        thread_started("other-root"),
        turn_started("other-root", "ot1"),
        message("other-root", "ot1", "m1", "other answer", None),
        turn_completed("other-root", "ot1", "completed"),
    ];
    let (recorder, envelopes) = run(&frames);
    let actor = actor_of_sequence(&envelopes, 5);
    assert_eq!(actor.role, Role::Root);
    assert_eq!(actor.label, "Main 2");
    let state = recorder.state();
    assert_eq!(state.root_thread_id(), Some(&ThreadId::from(ROOT)));
    assert_eq!(
        state.status(),
        RunStatus::Running,
        "another root's turn does not end this run"
    );
}

#[test]
fn frames_without_a_thread_id_are_unknown_and_not_counted_as_unattributed_messages() {
    let mut frames = v1_run();
    frames.insert(2, json!({"method":"account/rateLimits/updated","params":{"rateLimits":{}},"emittedAtMs":at(2)}));
    let (recorder, envelopes) = run(&frames);
    let actor = actor_of_sequence(&envelopes, 4);
    assert_eq!(actor, agentrace_core::Actor::unknown("no thread id"));
    assert_eq!(recorder.state().view().run.counts.unknown_actor, 0);
}

#[test]
fn item_ids_that_repeat_across_threads_are_kept_apart() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        spawn_completed(ROOT, "rt1", CHILD),
        turn_started(CHILD, "ct1"),
        message(ROOT, "rt1", "msg_1", "ROOT ANSWER", None),
        message(CHILD, "ct1", "msg_1", "CHILD ANSWER", None),
        turn_completed(CHILD, "ct1", "completed"),
        turn_completed(ROOT, "rt1", "completed"),
    ];
    let (recorder, _) = run(&frames);
    let view = recorder.state().view();
    assert_eq!(view.run.result.as_deref(), Some("ROOT ANSWER"));
    assert_eq!(
        view.agents[0].children[0].final_message.as_deref(),
        Some("CHILD ANSWER")
    );
}

#[test]
fn a_helper_turn_completed_never_ends_the_run() {
    let mut frames = v1_run();
    frames.truncate(7);
    let (recorder, envelopes) = run(&frames);
    assert_eq!(recorder.state().status(), RunStatus::Running);
    assert!(!events(&envelopes)
        .iter()
        .any(|e| matches!(e, Event::Done { .. })));
}

#[test]
fn a_helper_final_message_never_becomes_the_result() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        spawn_completed(ROOT, "rt1", CHILD),
        turn_started(CHILD, "ct1"),
        message(CHILD, "ct1", "m1", "HELPER SUMMARY", Some("final_answer")),
        turn_completed(CHILD, "ct1", "completed"),
        turn_completed(ROOT, "rt1", "completed"),
    ];
    let (recorder, _) = run(&frames);
    let run = recorder.state().summary();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.result, None);
    assert_eq!(run.result_source, None);
}

#[test]
fn commentary_is_never_the_answer_and_final_answer_wins_over_null_phase() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        message(ROOT, "rt1", "m1", "the answer", Some("final_answer")),
        message(ROOT, "rt1", "m2", "null phase later", None),
        message(ROOT, "rt1", "m3", "just commentary", Some("commentary")),
        turn_completed(ROOT, "rt1", "completed"),
    ];
    let (recorder, _) = run(&frames);
    let run = recorder.state().summary();
    assert_eq!(run.result.as_deref(), Some("the answer"));
    assert_eq!(
        run.result_source
            .and_then(|s| s.item_id)
            .map(|i| i.0)
            .as_deref(),
        Some("m1")
    );
}

#[test]
fn an_interrupted_or_failed_root_turn_gives_no_result_and_says_which() {
    for (status, expected) in [
        ("interrupted", RunStatus::Interrupted),
        ("failed", RunStatus::Failed),
    ] {
        let frames = vec![
            thread_started(ROOT),
            turn_started(ROOT, "rt1"),
            message(ROOT, "rt1", "m1", "partial", None),
            turn_completed(ROOT, "rt1", status),
        ];
        let (recorder, _) = run(&frames);
        let run = recorder.state().summary();
        assert_eq!((run.status, run.result), (expected, None), "{status}");
    }
}

#[test]
fn the_result_comes_from_the_root_turn_that_ended_last() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        message(ROOT, "rt1", "m1", "first answer", None),
        turn_completed(ROOT, "rt1", "completed"),
        turn_started(ROOT, "rt2"),
        message(ROOT, "rt2", "m2", "second answer", None),
        turn_completed(ROOT, "rt2", "completed"),
    ];
    let (recorder, _) = run(&frames);
    assert_eq!(
        recorder.state().summary().result.as_deref(),
        Some("second answer")
    );
}

#[test]
fn a_grandchild_has_depth_two_and_its_task_path_as_label() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        status(GRANDCHILD, "idle"),
        activity(CHILD, "ct1", GRANDCHILD, "/root/child_a/child_g", "started"),
        activity(ROOT, "rt1", CHILD, "/root/child_a", "started"),
    ];
    let (recorder, envelopes) = run(&frames);
    let actor = actor_of_sequence(&envelopes, 4);
    assert_eq!(actor.depth, Some(2));
    assert_eq!(actor.label, "/root/child_a/child_g");
    assert_eq!(actor.parent_thread_id, Some(ThreadId::from(CHILD)));
    let view = recorder.state().view();
    assert_eq!(
        view.agents[0].children[0].children[0].thread_id.as_str(),
        GRANDCHILD
    );
}

#[test]
fn a_conflicting_link_keeps_the_first_and_warns() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        spawn_completed(ROOT, "rt1", CHILD),
        spawn_completed(ROOT, "rt1", "other"),
        activity("other", "x", CHILD, "/root/x", "started"),
    ];
    let (recorder, _) = run(&frames);
    let warnings = recorder.state().warnings();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].code, "link_conflict");
    assert_eq!(recorder.state().view().agents[0].children.len(), 2);
}

#[test]
fn a_link_that_would_make_a_cycle_is_refused() {
    let frames = vec![
        thread_started(ROOT),
        activity(CHILD, "ct1", GRANDCHILD, "/g", "started"),
        activity(GRANDCHILD, "gt1", CHILD, "/c", "started"),
    ];
    let (recorder, _) = run(&frames);
    let codes: Vec<_> = recorder
        .state()
        .warnings()
        .iter()
        .map(|w| w.code.clone())
        .collect();
    assert_eq!(codes, vec!["link_cycle".to_owned()]);
}

#[test]
fn a_spawn_link_naming_a_root_keeps_it_a_root_and_warns() {
    let frames = vec![
        thread_started(ROOT),
        thread_started("second-root"),
        spawn_completed(ROOT, "rt1", "second-root"),
    ];
    let (recorder, envelopes) = run(&frames);
    let codes: Vec<_> = recorder
        .state()
        .warnings()
        .iter()
        .map(|w| w.code.clone())
        .collect();
    assert_eq!(codes, vec!["link_conflict".to_owned()]);
    assert_eq!(actor_of_sequence(&envelopes, 3).role, Role::Root);
}

#[test]
fn a_v1_nickname_and_role_from_thread_read_relabel_every_event_of_the_helper() {
    let mut frames = v1_run();
    frames.push(thread_read(CHILD, ROOT, "Ranger", Some("explorer")));
    let (_, envelopes) = run(&frames);
    for envelope in finalized(&envelopes) {
        if envelope.actor.thread_id == Some(ThreadId::from(CHILD)) {
            assert_eq!(envelope.actor.label, "Ranger [explorer]");
        }
    }
}

#[test]
fn spawn_wait_and_completion_become_lifecycle_events() {
    let frames = vec![
        thread_started(ROOT),
        turn_started(ROOT, "rt1"),
        spawn_completed(ROOT, "rt1", CHILD),
        json!({"method":"item/started","params":{"threadId":ROOT,"turnId":"rt1","item":{"type":"collabAgentToolCall","id":"w1","tool":"wait","status":"inProgress","senderThreadId":ROOT,"receiverThreadIds":[CHILD],"agentsStates":{}}}}),
        json!({"method":"item/completed","params":{"threadId":ROOT,"turnId":"rt1","item":{"type":"collabAgentToolCall","id":"w1","tool":"wait","status":"failed","senderThreadId":ROOT,"receiverThreadIds":[CHILD],"agentsStates":{CHILD:{"status":"errored","message":"boom"}}}}}),
    ];
    let (recorder, envelopes) = run(&frames);
    let lifecycle: Vec<&Event> = events(&envelopes)
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                Event::AgentSpawned { .. }
                    | Event::AgentWaitStarted { .. }
                    | Event::AgentCompleted { .. }
            )
        })
        .collect();
    assert_eq!(
        lifecycle,
        vec![
            &Event::AgentSpawned {
                parent_thread_id: ThreadId::from(ROOT),
                child_thread_id: ThreadId::from(CHILD),
                prompt: Some("do the thing".to_owned()),
                model: Some("mock-model".to_owned()),
                reasoning_effort: Some("medium".to_owned()),
                via: "spawnAgent".to_owned(),
            },
            &Event::AgentWaitStarted {
                parent_thread_id: ThreadId::from(ROOT),
                child_thread_ids: vec![ThreadId::from(CHILD)],
            },
            &Event::AgentCompleted {
                thread_id: ThreadId::from(CHILD),
                parent_thread_id: Some(ThreadId::from(ROOT)),
                result: Some("boom".to_owned()),
                status: AgentStatus::Failed,
                result_confidence: FinalMessageConfidence::Stated,
            },
        ]
    );
    for envelope in &envelopes {
        if matches!(
            envelope.event,
            EventBody::Known(
                Event::AgentSpawned { .. }
                    | Event::AgentWaitStarted { .. }
                    | Event::AgentCompleted { .. }
            )
        ) {
            assert!(envelope.raw.is_none(), "derived events carry no raw");
        }
    }
    assert_eq!(
        recorder.state().view().agents[0].children[0].status,
        AgentStatus::Failed
    );
}

#[test]
fn unknown_methods_and_item_types_are_kept_raw_and_counted() {
    let frames = vec![
        thread_started(ROOT),
        json!({"method":"brand/new/method","params":{"threadId":ROOT}}),
        json!({"method":"item/started","params":{"threadId":ROOT,"turnId":"t","item":{"type":"hologram","id":"h1"}}}),
        json!([1, 2, 3]),
    ];
    let (recorder, envelopes) = run(&frames);
    let counts = recorder.state().summary().counts;
    assert_eq!((counts.unknown_frames, counts.undecoded_lines), (3, 0));
    assert_eq!(envelopes.iter().filter(|e| e.raw.is_some()).count(), 4);
}

#[test]
fn garbage_invalid_utf8_a_torn_last_line_and_a_huge_line_are_counted_and_the_rest_kept() {
    let mut input = lines(&[thread_started(ROOT), turn_started(ROOT, "rt1")]);
    input.extend_from_slice(b"this is not json\n");
    input.extend_from_slice(b"{\"method\":\"x\xff\xfe\"}\n");
    let huge = vec![b'a'; agentrace_core::lines::MAX_LINE_BYTES + 10];
    input.extend_from_slice(&huge);
    input.push(b'\n');
    input.extend(lines(&[
        message(ROOT, "rt1", "m1", "still here", None),
        turn_completed(ROOT, "rt1", "completed"),
    ]));
    input.extend_from_slice(b"{\"method\":\"turn/comp");
    let (recorder, envelopes) = record(&input);
    let run = recorder.state().summary();
    assert_eq!(run.counts.undecoded_lines, 4);
    assert_eq!(run.result.as_deref(), Some("still here"));
    let reasons: Vec<String> = events(&envelopes)
        .into_iter()
        .filter_map(|e| match e {
            Event::Unknown {
                reason, raw_base64, ..
            } => Some(format!("{reason} base64={}", raw_base64.is_some())),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 4);
    assert!(reasons[0].starts_with("invalid JSON"), "{reasons:?}");
    assert!(
        reasons[1].starts_with("invalid UTF-8") && reasons[1].ends_with("base64=true"),
        "{reasons:?}"
    );
    assert!(
        reasons[2].starts_with(&format!("line too long ({} bytes)", huge.len())),
        "{reasons:?}"
    );
    assert!(reasons[3].starts_with("invalid JSON"), "{reasons:?}");
}

/// The events of every frame (derived ones left out), in order.
fn frame_events(envelopes: &[Envelope]) -> Vec<Event> {
    envelopes
        .iter()
        .filter(|envelope| envelope.raw.is_some())
        .filter_map(|envelope| envelope.event.known().cloned())
        .collect()
}

#[test]
fn thread_search_partial_new_in_codex_0_171_is_a_notice_owned_by_nobody() {
    let (_, envelopes) = run(&[json!({"method":"thread/search/partial","params":{"searchId":"s-1","threads":[{"id":ROOT}]},"emittedAtMs":1_795_993_408_000_i64})]);
    let frame = envelopes
        .iter()
        .find(|envelope| envelope.raw.is_some())
        .unwrap_or_else(|| panic!("no frame"));
    assert_eq!(
        (frame.event.known().cloned(), frame.actor.thread_id.clone()),
        (
            Some(Event::Notice {
                method: "thread/search/partial".to_owned(),
                message: None,
                item_id: None,
            }),
            None
        )
    );
}

#[test]
fn events_carry_the_facts_the_child_work_reducer_once_read_from_raw() {
    let frames = vec![
        thread_started(ROOT),
        json!({"method":"item/started","params":{"threadId":ROOT,"turnId":"t1","item":{"type":"commandExecution","id":"call-1","command":"sleep 9","status":"inProgress","processId":"4242"}}}),
        json!({"method":"item/commandExecution/terminalInteraction","params":{"threadId":ROOT,"turnId":"t1","itemId":"call-1","processId":"4242","stdin":""}}),
        json!({"method":"item/completed","params":{"threadId":ROOT,"turnId":"t1","item":{"type":"collabAgentToolCall","id":"call-2","tool":"closeAgent","status":"completed","senderThreadId":ROOT,"receiverThreadIds":[CHILD],"agentsStates":{}}}}),
        json!({"method":"item/completed","params":{"threadId":ROOT,"turnId":"t1","item":{"type":"subAgentActivity","id":"a-1","kind":"interrupted","agentThreadId":CHILD,"agentPath":"/root/c"}}}),
        json!({"method":"turn/completed","params":{"threadId":ROOT,"turn":{"id":"t1","status":"completed","items":[
            {"type":"agentMessage","id":"m1","text":"the answer","phase":"final_answer"},
            {"type":"agentMessage","id":"m2","text":"aside","phase":"commentary"}]}}}),
        json!({"id":9,"result":{"thread":{"id":CHILD,"turns":[{"id":"t-lost","status":"interrupted","completedAt":null},{"id":"t-done","status":"interrupted","completedAt":7}]}}}),
    ];
    let (_, envelopes) = run(&frames);
    let events = frame_events(&envelopes);
    assert_eq!(
        events[1..],
        [
            Event::ToolUse {
                tool_kind: "command".to_owned(),
                name: "shell".to_owned(),
                input: "sleep 9".to_owned(),
                item_id: Some("call-1".into()),
                turn_id: Some("t1".into()),
                process_id: Some("4242".to_owned()),
            },
            Event::Notice {
                method: "item/commandExecution/terminalInteraction".to_owned(),
                message: None,
                item_id: Some("call-1".into()),
            },
            Event::ToolResult {
                tool_kind: "agent".to_owned(),
                name: "closeAgent".to_owned(),
                status: Some("completed".to_owned()),
                exit_code: None,
                duration_ms: None,
                output: String::new(),
                item_id: Some("call-2".into()),
                turn_id: Some("t1".into()),
                receiver_thread_ids: vec![ThreadId::from(CHILD)],
            },
            Event::ItemCompleted {
                item_type: "subAgentActivity".to_owned(),
                item_id: Some("a-1".into()),
                turn_id: Some("t1".into()),
                status: None,
                activity_kind: Some("interrupted".to_owned()),
                agent_thread_id: Some(ThreadId::from(CHILD)),
            },
            Event::TurnCompleted {
                turn_id: "t1".into(),
                status: "completed".to_owned(),
                error: None,
                duration_ms: None,
                usage: None,
                last_message: Some("the answer".to_owned()),
            },
            Event::Response {
                request_id: json!(9),
                method: None,
                error: None,
                unfinished_turn_ids: vec!["t-lost".into()],
                model: None,
                service_tier: None,
            },
        ]
    );
}

#[test]
fn a_notification_whose_time_is_not_an_integer_is_still_read_at_the_observed_time() {
    let (_, envelopes) = run(&[json!({"method":"thread/status/changed","params":{"threadId":ROOT,"status":{"type":"idle"}},"emittedAtMs":1.5})]);
    let frame = envelopes
        .iter()
        .find(|envelope| envelope.raw.is_some())
        .unwrap_or_else(|| panic!("no frame"));
    assert_eq!(
        (frame.event.known().cloned(), frame.timestamp.millis()),
        (
            Some(Event::Status {
                status: "idle".to_owned(),
                waiting_on_approval: false,
                waiting_on_user_input: false,
            }),
            super::support::T0
        )
    );
}
