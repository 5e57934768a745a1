//! Shared set-ups for the fake-host tests.

use agentrace_host::fake::{FakeHost, SubagentSpec, ThreadSpec, TurnPlan};

/// A host with one root thread whose first turn is still running.
pub fn root_with_running_turn() -> (FakeHost, String, String) {
    let host = FakeHost::new();
    let root = host.start_thread(&ThreadSpec::default());
    let turn = host
        .run_turn(&root, &TurnPlan::running("[[ROOT]] delegate"))
        .unwrap();
    (host, root, turn)
}

/// Spawns a subagent of `owner` for the marker `op` (None: a plain prompt).
pub fn spawn_for(host: &FakeHost, owner: &str, tool_use_id: &str, op: Option<&str>) -> String {
    let prompt = match op {
        Some(op) => format!("crw-flow-op: {op}\nDo the step."),
        None => "Do something.".to_owned(),
    };
    host.spawn(&SubagentSpec::new(owner, tool_use_id, &prompt, "done"))
        .unwrap()
        .thread_id
}
