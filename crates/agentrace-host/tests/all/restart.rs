//! Every read across a fake host restart (§7: running turns are lost and
//! read `interrupted`, threads read `notLoaded`, connections drop, finished
//! turns stay).

use agentrace_host::fake::{SubagentSpec, TurnPlan};
use agentrace_host::{AgentStatus, FindOptions, HostError};

use super::support::{root_with_running_turn, spawn_for};

#[tokio::test]
async fn a_restart_drops_the_connection_as_a_transport_failure() {
    let (host, root, _) = root_with_running_turn();
    let reader = host.connect_host().await.unwrap();
    host.restart();
    let error = reader.read_agent(&root).await.unwrap_err();
    assert!(
        matches!(&error, HostError::Closed { reason, .. } if reason == "the host restarted"),
        "{error:?}"
    );
}

#[tokio::test]
async fn after_a_restart_threads_read_not_loaded_and_lost_turns_interrupted() {
    let (host, root, root_turn) = root_with_running_turn();
    let finished = spawn_for(&host, &root, "call_1", Some("build/t1"));
    let running = host
        .spawn(&SubagentSpec {
            plan: TurnPlan::running("ignored"),
            ..SubagentSpec::new(&root, "call_2", "crw-flow-op: test/t1\nGo.", "never")
        })
        .unwrap();
    host.restart();
    let reader = host.connect_host().await.unwrap();
    let statuses = (
        reader.read_agent(&root).await.unwrap().status,
        reader.read_agent(&finished).await.unwrap().status,
        reader.read_agent(&running.thread_id).await.unwrap().status,
    );
    assert_eq!(
        statuses,
        (
            AgentStatus::NotLoaded,
            AgentStatus::NotLoaded,
            AgentStatus::NotLoaded
        )
    );
    let lost_root = reader.turns(&root, 0, true).await.unwrap().remove(0);
    let lost_child = reader
        .turns(&running.thread_id, 0, false)
        .await
        .unwrap()
        .remove(0);
    let kept_child = reader.turns(&finished, 0, false).await.unwrap().remove(0);
    assert_eq!(
        (
            lost_root.id.as_str(),
            lost_root.status.as_str(),
            lost_root.items.len(),
            lost_child.status.as_str(),
            lost_child.answered,
            kept_child.status.as_str(),
            kept_child.final_text.as_deref(),
        ),
        (
            root_turn.as_str(),
            "interrupted",
            3,
            "interrupted",
            false,
            "completed",
            Some("done"),
        )
    );
    // A lost turn never ended: its update time is its start.
    let full_read = reader
        .client()
        .request(
            "thread/turns/list",
            serde_json::json!({"threadId": running.thread_id}),
        )
        .await
        .unwrap();
    let lost = &full_read["data"][0];
    assert_eq!(
        (
            lost["completedAt"].clone(),
            lost["durationMs"].clone(),
            lost_child.updated_at
        ),
        (
            serde_json::Value::Null,
            serde_json::Value::Null,
            lost["startedAt"].as_i64()
        )
    );
}

#[tokio::test]
async fn spawns_are_still_found_after_a_restart() {
    let (host, root, _) = root_with_running_turn();
    let child = spawn_for(&host, &root, "call_1", Some("build/t1"));
    host.restart();
    let reader = host.connect_host().await.unwrap();
    let found = reader
        .find_by_marker(&root, "build/t1", &FindOptions::default())
        .await
        .unwrap();
    assert_eq!(found.spawn.map(|spawn| spawn.thread_id), Some(child));
}

#[tokio::test]
async fn the_status_of_lost_turns_can_be_set() {
    let (host, root, _) = root_with_running_turn();
    host.set_lost_turn_status("inProgress");
    host.restart();
    let reader = host.connect_host().await.unwrap();
    let view = reader.turns(&root, 1, false).await.unwrap().remove(0);
    assert_eq!(view.status, "inProgress");
}

#[tokio::test]
async fn a_turn_after_a_restart_loads_the_thread_again() {
    let (host, root, _) = root_with_running_turn();
    host.restart();
    host.run_turn(&root, &TurnPlan::answering("again", "back"))
        .unwrap();
    let reader = host.connect_host().await.unwrap();
    let agent = reader.read_agent(&root).await.unwrap();
    let newest = reader.turns(&root, 1, false).await.unwrap().remove(0);
    assert_eq!(
        (agent.status, newest.final_text.as_deref()),
        (AgentStatus::Idle, Some("back"))
    );
}
