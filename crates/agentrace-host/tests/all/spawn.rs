//! `find_by_marker`: every row of the §7 table against the fake host.

use std::fs;
use std::path::Path;

use agentrace_host::fake::{FakeHost, ThreadSpec, TurnPlan};
use agentrace_host::{
    FindOptions, HostError, Op, Spawn, SpawnSearch, SpawnWarning, Via, WarningCode,
};
use serde_json::json;

use super::support::{root_with_running_turn, spawn_for};

fn op(text: &str) -> Op {
    agentrace_host::parse_op(text).unwrap()
}

fn write_ledger(dir: &Path, owner: &str, lines: &[serde_json::Value]) {
    let decisions = dir.join("decisions");
    fs::create_dir_all(&decisions).unwrap();
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    fs::write(decisions.join(format!("{owner}.jsonl")), text).unwrap();
}

fn options(dir: &Path) -> FindOptions {
    FindOptions {
        ledger_dir: Some(dir.to_owned()),
        ..FindOptions::default()
    }
}

fn warning(code: WarningCode, message: &str, tool_use_id: Option<&str>) -> SpawnWarning {
    SpawnWarning {
        code,
        message: message.to_owned(),
        tool_use_id: tool_use_id.map(str::to_owned),
    }
}

#[tokio::test]
async fn an_allowed_decision_naming_the_op_ties_the_spawn_by_the_ledger() {
    let (host, root, turn) = root_with_running_turn();
    let child = spawn_for(&host, &root, "call_1", None);
    let dir = tempfile::tempdir().unwrap();
    write_ledger(
        dir.path(),
        &root,
        &[json!({"tool_use_id": "call_1", "decision": "allow", "op": "build/t1-a1"})],
    );
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1-a1", &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(
        found,
        SpawnSearch {
            op: op("build/t1-a1"),
            spawn: Some(Spawn {
                thread_id: child,
                tool_use_id: "call_1".to_owned(),
                turn_id: turn,
                via: Via::Ledger,
                ledger_op: Some(op("build/t1-a1")),
                prompt_op: None,
            }),
            others: vec![],
            window_ended: false,
            warnings: vec![],
        }
    );
}

#[tokio::test]
async fn a_ledger_op_that_differs_from_the_prompt_wins_with_a_warning() {
    let (host, root, _) = root_with_running_turn();
    let child = spawn_for(&host, &root, "call_1", Some("other/t1"));
    let dir = tempfile::tempdir().unwrap();
    write_ledger(
        dir.path(),
        &root,
        &[json!({"tool_use_id": "call_1", "decision": "allow", "op": "build/t1"})],
    );
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1", &options(dir.path()))
        .await
        .unwrap();
    let by_prompt = reader
        .find_by_marker(&root, "other/t1", &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(
        (
            found.spawn.map(|spawn| (spawn.thread_id, spawn.via)),
            found.warnings
        ),
        (
            Some((child, Via::Ledger)),
            vec![warning(
                WarningCode::LedgerOpDiffers,
                "the ledger ties spawn call_1 to build/t1, its prompt names other/t1",
                Some("call_1")
            )]
        )
    );
    // The ledger tied it to build/t1, so it is not other/t1's spawn.
    assert_eq!(by_prompt.spawn, None);
}

#[tokio::test]
async fn an_allowed_decision_without_an_op_lets_the_prompt_decide() {
    let (host, root, _) = root_with_running_turn();
    let child = spawn_for(&host, &root, "call_1", Some("build/t2-a3"));
    let dir = tempfile::tempdir().unwrap();
    write_ledger(
        dir.path(),
        &root,
        &[json!({"tool_use_id": "call_1", "decision": "allow"})],
    );
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t2-a3", &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(
        (
            found.spawn.map(|spawn| (spawn.thread_id, spawn.via)),
            found.warnings
        ),
        (Some((child, Via::Prompt)), vec![])
    );
}

#[tokio::test]
async fn a_spawn_no_ledger_line_covers_is_unrecorded_with_no_ledger_line() {
    let (host, root, _) = root_with_running_turn();
    let child = spawn_for(&host, &root, "call_1", Some("build/t1"));
    let dir = tempfile::tempdir().unwrap();
    write_ledger(
        dir.path(),
        &root,
        &[json!({"tool_use_id": "call_other", "decision": "allow", "op": "build/t1"})],
    );
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1", &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(
        (
            found.spawn.map(|spawn| (spawn.thread_id, spawn.via)),
            found.warnings
        ),
        (
            Some((child, Via::Unrecorded)),
            vec![warning(
                WarningCode::NoLedgerLine,
                "no ledger line covers spawn call_1",
                Some("call_1")
            )]
        )
    );
}

#[tokio::test]
async fn a_spawn_the_hook_refused_is_still_found_with_refused_decision() {
    let (host, root, _) = root_with_running_turn();
    let child = spawn_for(&host, &root, "call_1", Some("build/t1"));
    let dir = tempfile::tempdir().unwrap();
    write_ledger(
        dir.path(),
        &root,
        &[json!({"tool_use_id": "call_1", "decision": "deny", "op": "build/t1"})],
    );
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1", &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(
        (
            found.spawn.map(|spawn| (spawn.thread_id, spawn.via)),
            found.warnings
        ),
        (
            Some((child, Via::Unrecorded)),
            vec![warning(
                WarningCode::RefusedDecision,
                "the hook refused spawn call_1, yet it ran",
                Some("call_1")
            )]
        )
    );
}

#[tokio::test]
async fn an_unreadable_ledger_leaves_the_prompts_to_decide() {
    let (host, root, _) = root_with_running_turn();
    let child = spawn_for(&host, &root, "call_1", Some("build/t1"));
    let dir = tempfile::tempdir().unwrap();
    // The ledger path is a directory: it exists and cannot be read.
    fs::create_dir_all(dir.path().join("decisions").join(format!("{root}.jsonl"))).unwrap();
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1", &options(dir.path()))
        .await
        .unwrap();
    let codes: Vec<WarningCode> = found.warnings.iter().map(|warning| warning.code).collect();
    assert_eq!(
        (found.spawn.map(|spawn| (spawn.thread_id, spawn.via)), codes),
        (
            Some((child, Via::Unrecorded)),
            vec![WarningCode::LedgerUnreadable]
        )
    );
}

#[tokio::test]
async fn undecodable_ledger_lines_are_skipped_with_ledger_unreadable() {
    let (host, root, _) = root_with_running_turn();
    let child = spawn_for(&host, &root, "call_1", None);
    let dir = tempfile::tempdir().unwrap();
    let decisions = dir.path().join("decisions");
    fs::create_dir_all(&decisions).unwrap();
    let path = decisions.join(format!("{root}.jsonl"));
    fs::write(
        &path,
        "{broken\n{\"tool_use_id\":\"call_1\",\"decision\":\"allow\",\"op\":\"build/t1\"}\n",
    )
    .unwrap();
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1", &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(
        (found.spawn.map(|spawn| (spawn.thread_id, spawn.via)), found.warnings),
        (
            Some((child, Via::Ledger)),
            vec![warning(
                WarningCode::LedgerUnreadable,
                &format!(
                    "the decision ledger is unreadable ({}: line(s) 1 do not decode and were skipped); prompts decide",
                    path.display()
                ),
                None
            )]
        )
    );
}

#[tokio::test]
async fn several_spawns_give_the_newest_ledger_tied_one_and_the_rest_in_others() {
    let (host, root, _) = root_with_running_turn();
    let oldest_tied = spawn_for(&host, &root, "call_1", Some("build/t1"));
    let newest_tied = spawn_for(&host, &root, "call_2", Some("build/t1"));
    let untied = spawn_for(&host, &root, "call_3", Some("build/t1"));
    let dir = tempfile::tempdir().unwrap();
    write_ledger(
        dir.path(),
        &root,
        &[
            json!({"tool_use_id": "call_1", "decision": "allow", "op": "build/t1"}),
            json!({"tool_use_id": "call_2", "decision": "allow"}),
            json!({"tool_use_id": "call_3", "decision": "deny"}),
        ],
    );
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1", &options(dir.path()))
        .await
        .unwrap();
    let order: Vec<(String, Via)> = found
        .spawn
        .iter()
        .chain(found.others.iter())
        .map(|spawn| (spawn.thread_id.clone(), spawn.via))
        .collect();
    let codes: Vec<WarningCode> = found.warnings.iter().map(|warning| warning.code).collect();
    assert_eq!(
        order,
        vec![
            (newest_tied, Via::Prompt),
            (oldest_tied, Via::Ledger),
            (untied, Via::Unrecorded)
        ]
    );
    assert_eq!(
        codes,
        vec![WarningCode::RefusedDecision, WarningCode::SeveralSpawns]
    );
}

#[tokio::test]
async fn nothing_found_with_older_turns_than_the_window_warns_window_ended() {
    let host = FakeHost::new();
    let root = host.start_thread(&ThreadSpec::default());
    host.run_turn(&root, &TurnPlan::answering("first", "ok"))
        .unwrap();
    spawn_for(&host, &root, "call_old", Some("build/t1"));
    for index in 0..3 {
        host.run_turn(&root, &TurnPlan::answering(&format!("later {index}"), "ok"))
            .unwrap();
    }
    let reader = host.connect_host().await.unwrap();
    let narrow = FindOptions {
        ledger_dir: None,
        window: 3,
    };
    let missed = reader
        .find_by_marker(&root, "build/t1", &narrow)
        .await
        .unwrap();
    assert_eq!(
        (missed.spawn, missed.window_ended, missed.warnings),
        (
            None,
            true,
            vec![warning(
                WarningCode::WindowEnded,
                "no spawn in the owner's 3 most recent turns names build/t1, and it has older turns",
                None
            )]
        )
    );
    let wide = FindOptions {
        ledger_dir: None,
        window: 4,
    };
    let found = reader
        .find_by_marker(&root, "build/t1", &wide)
        .await
        .unwrap();
    assert_eq!(
        (
            found.spawn.map(|spawn| spawn.tool_use_id),
            found.window_ended
        ),
        (Some("call_old".to_owned()), false)
    );
}

#[tokio::test]
async fn a_found_spawn_still_says_the_window_ended_without_warning_about_it() {
    let host = FakeHost::new();
    let root = host.start_thread(&ThreadSpec::default());
    host.run_turn(&root, &TurnPlan::answering("first", "ok"))
        .unwrap();
    host.run_turn(&root, &TurnPlan::answering("second", "ok"))
        .unwrap();
    spawn_for(&host, &root, "call_1", Some("build/t1"));
    let reader = host.connect_host().await.unwrap();
    let window = FindOptions {
        ledger_dir: None,
        window: 1,
    };
    let found = reader
        .find_by_marker(&root, "build/t1", &window)
        .await
        .unwrap();
    let codes: Vec<WarningCode> = found.warnings.iter().map(|warning| warning.code).collect();
    assert_eq!(
        (found.spawn.is_some(), found.window_ended, codes),
        (true, true, vec![WarningCode::NoLedgerLine])
    );
}

#[tokio::test]
async fn a_spawn_that_created_no_thread_is_skipped_with_no_receiver() {
    let (host, root, _) = root_with_running_turn();
    host.spawn_without_thread(&root, "call_1", "crw-flow-op: build/t1\nGo.")
        .unwrap();
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1", &FindOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (found.spawn, found.warnings),
        (
            None,
            vec![warning(
                WarningCode::NoReceiver,
                "spawn call_1 names build/t1 but created no thread; skipped",
                Some("call_1")
            )]
        )
    );
}

#[tokio::test]
async fn an_op_that_is_not_an_operation_is_an_input_error() {
    let (host, root, _) = root_with_running_turn();
    let reader = host.connect_host().await.unwrap();
    let error = reader
        .find_by_marker(&root, "build/t01", &FindOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, HostError::InvalidOp(text) if text == "build/t01"),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_owner_the_host_lacks_is_not_found() {
    let host = FakeHost::new();
    let reader = host.connect_host().await.unwrap();
    let error = reader
        .find_by_marker("01b00000-dead", "build/t1", &FindOptions::default())
        .await
        .unwrap_err();
    assert!(error.is_not_found(), "{error:?}");
}

#[tokio::test]
async fn an_owner_answered_without_items_is_searched_through_the_items_list() {
    let (host, root, _) = root_with_running_turn();
    let child = spawn_for(&host, &root, "call_1", Some("build/t1"));
    host.answer_full_as(&root, "notLoaded");
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1", &FindOptions::default())
        .await
        .unwrap();
    assert_eq!(found.spawn.map(|spawn| spawn.thread_id), Some(child));
}
