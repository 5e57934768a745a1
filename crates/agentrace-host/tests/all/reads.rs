//! `read_agent`, `turns` and `interrupt` against the fake host.

use agentrace_host::fake::{FakeHost, Step, SubagentSpec, ThreadSpec, TurnEnd, TurnPlan};
use agentrace_host::{AgentInfo, AgentStatus, ErrorInfo, HostError, Op};
use serde_json::json;

use super::support::root_with_running_turn;

#[tokio::test]
async fn a_running_subagent_reads_as_the_real_host_shows_one() {
    let (host, root, _) = root_with_running_turn();
    let spec = SubagentSpec {
        role: Some("explorer".to_owned()),
        effort: Some("high".to_owned()),
        plan: TurnPlan::running("ignored"),
        ..SubagentSpec::new(&root, "call_1", "Look around.", "done")
    };
    let child = host.spawn(&spec).unwrap().thread_id;
    let reader = host.connect_host().await.unwrap();
    let agent = reader.read_agent(&child).await.unwrap();
    assert_eq!(
        agent,
        AgentInfo {
            thread_id: child.clone(),
            parent_thread_id: Some(root.clone()),
            model: "mock-model".to_owned(),
            effort: "high".to_owned(),
            cwd: "/home/dev/work".to_owned(),
            agent_role: Some("explorer".to_owned()),
            status: AgentStatus::Active,
            rollout_path: Some(format!(
                "/home/dev/.codex/sessions/2026/11/29/rollout-2026-11-29T00-00-00-{child}.jsonl"
            )),
            thread_source: Some("subagent".to_owned()),
            nickname: Some("Dewey".to_owned()),
            cli_version: "0.169.0".to_owned(),
        }
    );
}

#[tokio::test]
async fn a_finished_subagent_reads_not_loaded_unless_kept_loaded() {
    let (host, root, _) = root_with_running_turn();
    let gone = host
        .spawn(&SubagentSpec::new(&root, "call_1", "A", "done"))
        .unwrap()
        .thread_id;
    let kept = host
        .spawn(&SubagentSpec {
            stay_loaded: true,
            ..SubagentSpec::new(&root, "call_2", "B", "done")
        })
        .unwrap()
        .thread_id;
    let reader = host.connect_host().await.unwrap();
    let statuses = (
        reader.read_agent(&gone).await.unwrap().status,
        reader.read_agent(&kept).await.unwrap().status,
        reader.read_agent(&root).await.unwrap().status,
    );
    assert_eq!(
        statuses,
        (
            AgentStatus::NotLoaded,
            AgentStatus::Idle,
            AgentStatus::Active
        )
    );
}

#[tokio::test]
async fn a_root_reads_with_no_parent_and_an_empty_effort() {
    let host = FakeHost::new();
    let root = host.start_thread(&ThreadSpec::default());
    let reader = host.connect_host().await.unwrap();
    let agent = reader.read_agent(&root).await.unwrap();
    assert_eq!(
        (
            agent.parent_thread_id,
            agent.effort,
            agent.thread_source,
            agent.nickname,
            agent.status
        ),
        (None, String::new(), None, None, AgentStatus::Idle)
    );
}

#[tokio::test]
async fn reading_an_unknown_thread_is_not_found() {
    let host = FakeHost::new();
    let reader = host.connect_host().await.unwrap();
    let error = reader.read_agent("01b00000-dead").await.unwrap_err();
    let turns_error = reader.turns("01b00000-dead", 0, false).await.unwrap_err();
    assert!(matches!(error, HostError::NotFound { .. }), "{error:?}");
    assert!(turns_error.is_not_found(), "{turns_error:?}");
}

#[tokio::test]
async fn read_agent_json_has_exactly_the_contract_fields() {
    let (host, root, _) = root_with_running_turn();
    let child = host
        .spawn(&SubagentSpec::new(&root, "call_1", "A", "done"))
        .unwrap()
        .thread_id;
    let reader = host.connect_host().await.unwrap();
    let agent = reader.read_agent(&child).await.unwrap();
    let value = serde_json::to_value(&agent).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        vec![
            "threadId",
            "parentThreadId",
            "model",
            "effort",
            "cwd",
            "agentRole",
            "status",
            "rolloutPath",
            "threadSource",
            "nickname",
            "cliVersion"
        ]
    );
    assert_eq!(value["status"], json!("notLoaded"));
}

/// A thread with `count` finished turns; turn i asks "q<i>" and answers "a<i>".
fn thread_with_turns(host: &FakeHost, count: usize) -> (String, Vec<String>) {
    let thread = host.start_thread(&ThreadSpec::default());
    let turns = (1..=count)
        .map(|index| {
            host.run_turn(
                &thread,
                &TurnPlan::answering(&format!("q{index}"), &format!("a{index}")),
            )
            .unwrap()
        })
        .collect();
    (thread, turns)
}

#[tokio::test]
async fn turns_come_newest_first_paged_until_the_limit() {
    let host = FakeHost::new();
    host.set_page_sizes(2, 2);
    let (thread, ids) = thread_with_turns(&host, 5);
    let reader = host.connect_host().await.unwrap();
    let every: Vec<String> = reader
        .turns(&thread, 0, false)
        .await
        .unwrap()
        .into_iter()
        .map(|turn| turn.id)
        .collect();
    let three: Vec<String> = reader
        .turns(&thread, 3, false)
        .await
        .unwrap()
        .into_iter()
        .map(|turn| turn.id)
        .collect();
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(every, newest_first);
    assert_eq!(three, newest_first[..3].to_vec());
    // Limit 0 paged three times at the host's page size of two.
    let pages = host
        .requests_seen()
        .iter()
        .filter(|(method, params)| method == "thread/turns/list" && params.get("limit").is_none())
        .count();
    assert_eq!(pages, 3);
}

#[tokio::test]
async fn a_summary_turn_gives_marker_answer_and_times() {
    let host = FakeHost::new();
    let thread = host.start_thread(&ThreadSpec::default());
    let plan = TurnPlan {
        user_text: "crw-flow-op: review/t2-a1\nReview it.".to_owned(),
        client_id: None,
        steps: vec![
            Step::message("looking", Some("commentary")),
            Step::Command {
                command: "ls".to_owned(),
                output: "a\n".to_owned(),
                exit_code: 0,
            },
            Step::message("LGTM", Some("final_answer")),
        ],
        end: TurnEnd::Complete,
    };
    let turn = host.run_turn(&thread, &plan).unwrap();
    let reader = host.connect_host().await.unwrap();
    let mut views = reader.turns(&thread, 1, false).await.unwrap();
    let view = views.remove(0);
    assert_eq!(
        (
            view.id.as_str(),
            view.status.as_str(),
            view.items_view.as_str(),
            view.first_user_text.as_deref(),
            view.marker.clone(),
            view.final_text.as_deref(),
            view.final_phase.as_deref(),
            view.answered,
            view.error_info.clone(),
            view.read_error.clone(),
            view.items.len(),
        ),
        (
            turn.as_str(),
            "completed",
            "summary",
            Some("crw-flow-op: review/t2-a1\nReview it."),
            Some(Op {
                call: "review".to_owned(),
                turn: 2,
                attempt: 1
            }),
            Some("LGTM"),
            Some("final_answer"),
            true,
            None,
            None,
            2,
        )
    );
    // updatedAt is the completion time: after the start, in seconds.
    let full = reader.turns(&thread, 1, true).await.unwrap().remove(0);
    assert_eq!((full.items_view.as_str(), full.items.len()), ("full", 4));
    assert_eq!(full.updated_at, view.updated_at);
}

#[tokio::test]
async fn a_client_id_that_is_an_operation_is_the_marker_before_the_first_line() {
    let host = FakeHost::new();
    let thread = host.start_thread(&ThreadSpec::default());
    let plan = TurnPlan {
        client_id: Some("from-client/t1".to_owned()),
        ..TurnPlan::answering("crw-flow-op: from-text/t9", "ok")
    };
    host.run_turn(&thread, &plan).unwrap();
    let not_an_op = TurnPlan {
        client_id: Some("client-123".to_owned()),
        ..TurnPlan::answering("crw-flow-op: from-text/t9", "ok")
    };
    host.run_turn(&thread, &not_an_op).unwrap();
    let reader = host.connect_host().await.unwrap();
    let markers: Vec<Option<String>> = reader
        .turns(&thread, 0, false)
        .await
        .unwrap()
        .into_iter()
        .map(|turn| turn.marker.map(|op| op.to_string()))
        .collect();
    assert_eq!(
        markers,
        vec![
            Some("from-text/t9".to_owned()),
            Some("from-client/t1".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_failed_turn_carries_its_error_variant_and_no_answer() {
    let host = FakeHost::new();
    let thread = host.start_thread(&ThreadSpec::default());
    let plan = TurnPlan {
        end: TurnEnd::Fail {
            message: "high demand".to_owned(),
            variant: "internalServerError".to_owned(),
        },
        ..TurnPlan::running("go")
    };
    host.run_turn(&thread, &plan).unwrap();
    let reader = host.connect_host().await.unwrap();
    let view = reader.turns(&thread, 0, false).await.unwrap().remove(0);
    assert_eq!(
        (
            view.status.as_str(),
            view.answered,
            view.final_text,
            view.error_info
        ),
        (
            "failed",
            false,
            None,
            Some(ErrorInfo {
                message: "high demand".to_owned(),
                variant: Some("internalServerError".to_owned())
            })
        )
    );
    assert_eq!(
        reader.read_agent(&thread).await.unwrap().status,
        AgentStatus::SystemError
    );
}

#[tokio::test]
async fn a_full_read_answered_without_items_is_completed_with_the_items_list() {
    for view in ["summary", "notLoaded"] {
        let host = FakeHost::new();
        host.set_page_sizes(25, 2);
        let (thread, _) = thread_with_turns(&host, 2);
        host.answer_full_as(&thread, view);
        let reader = host.connect_host().await.unwrap();
        let turns = reader.turns(&thread, 0, true).await.unwrap();
        let shapes: Vec<(String, usize, Option<String>, Option<String>)> = turns
            .into_iter()
            .map(|turn| {
                (
                    turn.items_view,
                    turn.items.len(),
                    turn.final_text,
                    turn.read_error,
                )
            })
            .collect();
        assert_eq!(
            shapes,
            vec![
                ("full".to_owned(), 2, Some("a2".to_owned()), None),
                ("full".to_owned(), 2, Some("a1".to_owned()), None),
            ],
            "answered as {view}"
        );
    }
}

#[tokio::test]
async fn a_failed_completion_marks_the_turn_unreadable_and_keeps_what_it_had() {
    let host = FakeHost::new();
    let (thread, _) = thread_with_turns(&host, 1);
    host.answer_full_as(&thread, "summary");
    host.fail_items_list(&thread, true);
    let reader = host.connect_host().await.unwrap();
    let view = reader.turns(&thread, 0, true).await.unwrap().remove(0);
    assert_eq!(
        (
            view.items_view.as_str(),
            view.items.len(),
            view.final_text.as_deref(),
            view.read_error.as_deref()
        ),
        (
            "summary",
            2,
            Some("a1"),
            Some(format!("thread/items/list: the host answered error -32603: fake: the items of {thread} cannot be read").as_str())
        )
    );
}

#[tokio::test]
async fn interrupting_a_running_turn_ends_it_interrupted() {
    let (host, root, turn) = root_with_running_turn();
    let reader = host.connect_host().await.unwrap();
    let acknowledgement = reader.interrupt(&root, &turn).await.unwrap();
    let view = reader.turns(&root, 1, false).await.unwrap().remove(0);
    assert_eq!(
        (acknowledgement, view.status.as_str()),
        (json!({}), "interrupted")
    );
    let unknown = reader.interrupt("01b00000-dead", &turn).await.unwrap_err();
    assert!(unknown.is_not_found(), "{unknown:?}");
}
