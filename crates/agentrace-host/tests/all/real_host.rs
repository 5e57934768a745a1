//! The reads against the real `codex app-server` (the pinned 0.171 CLI) over
//! a `CODEX_HOME` holding a capture's rollouts, checked against the answers
//! the capture recorded. No model request is made: the config points the
//! provider at a dead loopback port.

use std::fs;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentrace_host::client::{ClientOptions, Endpoint, StdioCommand};
use agentrace_host::{
    tokens, AgentInfo, AgentStatus, FindOptions, Host, HostError, Spawn, TurnView, Via,
};
use agentrace_wire::codex::{ThreadReadResult, TurnsListResult};
use serde_json::{json, Value};
use tempfile::TempDir;

/// A thread id no capture has.
const UNKNOWN_THREAD: &str = "01a2298c-dead-7000-8000-00000000beef";

/// A capture: `<scenario>` (Codex 0.169) or `codex-0.171/<scenario>`.
fn fixture(capture: &str) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    if capture.contains('/') {
        fixtures.join(capture)
    } else {
        fixtures.join("codex").join(capture)
    }
}

/// A private CODEX_HOME holding one capture's rollouts under
/// `sessions/YYYY/MM/DD/`, with the capture's config pointed at a dead port.
struct CodexHome {
    dir: TempDir,
    capture: String,
}

impl CodexHome {
    fn new(capture: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        agentrace_testkit::files::copy_dir(
            &fixture(capture).join("rollouts"),
            &dir.path().join("sessions"),
        );
        let config = fs::read_to_string(fixture(capture).join("config.toml")).unwrap();
        let config: String = config
            .lines()
            .map(|line| {
                if line.starts_with("base_url") {
                    // Port 9 (discard) on loopback: nothing listens there, so
                    // a model request, were one made, fails at once.
                    "base_url = \"http://127.0.0.1:9/v1\"".to_owned()
                } else {
                    line.to_owned()
                }
            })
            .map(|line| line + "\n")
            .collect();
        fs::write(dir.path().join("config.toml"), config).unwrap();
        CodexHome {
            dir,
            capture: capture.to_owned(),
        }
    }

    fn command(&self) -> StdioCommand {
        StdioCommand {
            program: agentrace_testkit::agents::codex(),
            args: Vec::new(),
            env: vec![
                (
                    "CODEX_HOME".to_owned(),
                    self.dir.path().display().to_string(),
                ),
                ("MOCK_API_KEY".to_owned(), "sk-unused".to_owned()),
            ],
        }
    }

    fn options() -> ClientOptions {
        ClientOptions {
            timeout: Duration::from_secs(60),
            ..ClientOptions::default()
        }
    }

    /// The capture's thread ids, from its rollout file names.
    fn threads(&self) -> Vec<String> {
        let mut threads: Vec<String> = rollouts(&fixture(&self.capture).join("rollouts"))
            .iter()
            .map(|path| {
                let name = path.file_stem().unwrap().to_str().unwrap();
                name[name.len() - 36..].to_owned()
            })
            .collect();
        threads.sort();
        threads
    }

    fn rollout(&self, thread: &str) -> PathBuf {
        rollouts(&self.dir.path().join("sessions"))
            .into_iter()
            .find(|path| path.to_str().unwrap().ends_with(&format!("{thread}.jsonl")))
            .unwrap()
    }

    /// A host over stdio whose thread history is loaded. Bare rollouts give
    /// `thread/read` but not `thread/turns/list` (that reads the history
    /// store, filled while a thread runs or when it is resumed), so one
    /// server resumes every thread first, as a user's own CODEX_HOME would
    /// already hold it; the reads then run on a fresh server, where every
    /// thread is `notLoaded` as after a restart.
    async fn fresh_host(&self) -> Host {
        let endpoint = Endpoint::Stdio(self.command());
        let loader = Host::connect(&endpoint, Self::options()).await.unwrap();
        for thread in self.threads() {
            loader
                .client()
                .request(
                    "thread/resume",
                    json!({"threadId": thread, "excludeTurns": true}),
                )
                .await
                .unwrap();
        }
        loader.shutdown().await;
        Host::connect(&endpoint, Self::options()).await.unwrap()
    }
}

fn rollouts(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(rollouts(&path));
        } else if path
            .extension()
            .is_some_and(|extension| extension == "jsonl")
        {
            found.push(path);
        }
    }
    found
}

/// Every (params, result) the capture's servers gave for `method`, the
/// last server's first: after a restart it is the one whose view a fresh
/// server shares.
fn recorded(capture: &str, method: &str) -> Vec<(Value, Value)> {
    let text = fs::read_to_string(fixture(capture).join("app_server_transcript.jsonl")).unwrap();
    let mut servers: Vec<Vec<(Value, Value)>> = vec![Vec::new()];
    let mut requests = std::collections::HashMap::new();
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        // Ids restart on a second server.
        if line["dir"] == "note" && line["raw"].as_str().unwrap().contains("second app-server") {
            servers.push(Vec::new());
            requests.clear();
        }
        let message = &line["msg"];
        match line["dir"].as_str() {
            Some("c2s") if message["method"] == method => {
                requests.insert(message["id"].to_string(), message["params"].clone());
            }
            Some("s2c") if message.get("method").is_none() => {
                if let (Some(params), Some(result)) = (
                    requests.remove(&message["id"].to_string()),
                    message.get("result"),
                ) {
                    servers.last_mut().unwrap().push((params, result.clone()));
                }
            }
            _ => {}
        }
    }
    servers.into_iter().rev().flatten().collect()
}

/// What the capture's `thread/read` (no turns) said of `thread`, as read now
/// on a fresh server: not loaded, with the rollout where this home keeps it.
fn recorded_agent(home: &CodexHome, thread: &str) -> AgentInfo {
    let (_, result) = recorded(&home.capture, "thread/read")
        .into_iter()
        .find(|(params, _)| params["threadId"] == thread && params["includeTurns"] == false)
        .unwrap();
    let read: ThreadReadResult = serde_json::from_value(result).unwrap();
    AgentInfo {
        status: AgentStatus::NotLoaded,
        rollout_path: Some(home.rollout(thread).display().to_string()),
        ..AgentInfo::from_thread(read.thread)
    }
}

/// What the capture's `thread/turns/list` of `view` said of `thread`, newest
/// first.
fn recorded_turns(capture: &str, thread: &str, view: &str) -> Vec<TurnView> {
    let (_, result) = recorded(capture, "thread/turns/list")
        .into_iter()
        .find(|(params, _)| params["threadId"] == thread && params["itemsView"] == view)
        .unwrap();
    let mut page: TurnsListResult = serde_json::from_value(result).unwrap();
    page.data.reverse();
    page.data.into_iter().map(TurnView::from_turn).collect()
}

/// Every read of every thread of `capture` agrees with what it recorded.
async fn reads_agree_with_the_capture(capture: &str) {
    let home = CodexHome::new(capture);
    let host = home.fresh_host().await;
    for thread in home.threads() {
        assert_eq!(
            host.read_agent(&thread).await.unwrap(),
            recorded_agent(&home, &thread),
            "{capture} read_agent {thread}"
        );
        assert_eq!(
            host.turns(&thread, 0, false).await.unwrap(),
            recorded_turns(capture, &thread, "summary"),
            "{capture} summary turns {thread}"
        );
        assert_eq!(
            host.turns(&thread, 0, true).await.unwrap(),
            recorded_turns(capture, &thread, "full"),
            "{capture} full turns {thread}"
        );
    }
    host.shutdown().await;
}

#[tokio::test]
async fn reads_of_v1_basic_agree_with_the_capture() {
    reads_agree_with_the_capture("v1_basic").await;
}

#[tokio::test]
async fn reads_of_v1_roles_agree_with_the_capture() {
    reads_agree_with_the_capture("v1_roles").await;
}

#[tokio::test]
async fn reads_of_a_nested_v2_run_agree_with_the_capture() {
    reads_agree_with_the_capture("real_model_nested").await;
}

#[tokio::test]
async fn reads_of_a_failed_child_agree_with_the_capture() {
    reads_agree_with_the_capture("v1_child_error_http500").await;
}

#[tokio::test]
async fn reads_of_a_child_with_two_turns_agree_with_the_capture() {
    reads_agree_with_the_capture("v1_followup").await;
}

#[tokio::test]
async fn reads_of_the_0_171_captures_agree_with_them() {
    for scenario in [
        "v1_basic",
        "v1_roles",
        "real_model_nested",
        "v1_child_error_http500",
        "v1_followup",
    ] {
        reads_agree_with_the_capture(&format!("codex-0.171/{scenario}")).await;
    }
}

#[tokio::test]
async fn the_v1_basic_child_reads_as_recorded_field_by_field() {
    let home = CodexHome::new("v1_basic");
    let host = home.fresh_host().await;
    let child = "01a2298c-947a-75b0-8b49-6a2e1016272b";
    let agent = host.read_agent(child).await.unwrap();
    let turns = host.turns(child, 0, false).await.unwrap();
    host.shutdown().await;
    assert_eq!(
        agent,
        AgentInfo {
            thread_id: child.to_owned(),
            parent_thread_id: Some("01a2298c-93ba-7001-9862-9fd03c21f5d4".to_owned()),
            model: "mock-model".to_owned(),
            effort: String::new(),
            cwd: "/home/dev/codexcap/work".to_owned(),
            agent_role: None,
            status: AgentStatus::NotLoaded,
            rollout_path: Some(home.rollout(child).display().to_string()),
            thread_source: Some("subagent".to_owned()),
            nickname: Some("Dewey".to_owned()),
            cli_version: "0.169.0".to_owned(),
        }
    );
    let turn = &turns[0];
    assert_eq!(
        (
            turns.len(),
            turn.id.as_str(),
            turn.status.as_str(),
            turn.final_text.as_deref(),
            turn.final_phase.as_deref(),
            turn.answered,
            turn.updated_at,
        ),
        (
            1,
            "01a2298c-9482-75b0-af59-8e97762cca2a",
            "completed",
            Some("CHILD A DONE: the command printed hello-from-child-A."),
            None,
            true,
            Some(1_795_993_409),
        )
    );
}

#[tokio::test]
async fn turns_cut_by_a_restart_read_interrupted_without_an_end() {
    let home = CodexHome::new("v1_restart_mid_child");
    let host = home.fresh_host().await;
    let child = "01a2299e-453c-7ff1-872f-8672e1e4bf2e";
    let turns = host.turns(child, 0, true).await.unwrap();
    host.shutdown().await;
    assert_eq!(
        turns
            .iter()
            .map(|turn| (turn.status.as_str(), turn.answered, turn.items.len()))
            .collect::<Vec<_>>(),
        vec![("interrupted", false, 1)]
    );
    assert_eq!(turns, recorded_turns("v1_restart_mid_child", child, "full"));
}

#[tokio::test]
async fn tokens_of_each_rollout_match_the_last_usage_the_server_sent() {
    for capture in ["v1_basic", "codex-0.171/v1_basic"] {
    let home = CodexHome::new(capture);
    let server = fs::read_to_string(fixture(capture).join("server.jsonl")).unwrap();
    for thread in home.threads() {
        let last_total = server
            .lines()
            .rev()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .find(|message| {
                message["method"] == "thread/tokenUsage/updated"
                    && message["params"]["threadId"] == thread
            })
            .unwrap()["params"]["tokenUsage"]["total"]
            .clone();
        let read = tokens(&home.rollout(&thread)).unwrap();
        let total = read.total.clone().unwrap();
        assert_eq!(
            (
                read.measured,
                total["total_tokens"].clone(),
                total["input_tokens"].clone(),
                total["output_tokens"].clone()
            ),
            (
                true,
                last_total["totalTokens"].clone(),
                last_total["inputTokens"].clone(),
                last_total["outputTokens"].clone()
            ),
            "{capture} {thread}"
        );
    }
    }
}

#[tokio::test]
async fn the_real_host_says_not_found_for_a_thread_it_does_not_have() {
    let home = CodexHome::new("v1_basic");
    let host = Host::connect(&Endpoint::Stdio(home.command()), CodexHome::options())
        .await
        .unwrap();
    let read = host.read_agent(UNKNOWN_THREAD).await.unwrap_err();
    let turns = host.turns(UNKNOWN_THREAD, 0, false).await.unwrap_err();
    let interrupt = host
        .interrupt(UNKNOWN_THREAD, UNKNOWN_THREAD)
        .await
        .unwrap_err();
    let find = host
        .find_by_marker(UNKNOWN_THREAD, "build/t1", &FindOptions::default())
        .await
        .unwrap_err();
    host.shutdown().await;
    assert_eq!(
        [read, turns, interrupt, find].map(|error| error.to_string()),
        [
            format!("thread/read: the host has no such thread: thread not loaded: {UNKNOWN_THREAD}"),
            format!("thread/turns/list: the host has no such thread: thread not loaded: {UNKNOWN_THREAD}"),
            format!("turn/interrupt: the host has no such thread: thread not found: {UNKNOWN_THREAD}"),
            format!("thread/turns/list: the host has no such thread: thread not loaded: {UNKNOWN_THREAD}"),
        ]
    );
}

#[tokio::test]
async fn find_by_marker_joins_a_ledger_with_the_real_spawn_item() {
    let home = CodexHome::new("v1_basic");
    let root = "01a2298c-93ba-7001-9862-9fd03c21f5d4";
    let ledger = tempfile::tempdir().unwrap();
    fs::create_dir_all(ledger.path().join("decisions")).unwrap();
    fs::write(
        ledger
            .path()
            .join("decisions")
            .join(format!("{root}.jsonl")),
        "{\"tool_use_id\":\"call_0004\",\"decision\":\"allow\",\"op\":\"child-a/t1-a1\"}\n",
    )
    .unwrap();
    let host = home.fresh_host().await;
    let options = FindOptions {
        ledger_dir: Some(ledger.path().to_owned()),
        ..FindOptions::default()
    };
    let found = host
        .find_by_marker(root, "child-a/t1-a1", &options)
        .await
        .unwrap();
    host.shutdown().await;
    assert_eq!(
        (
            found.spawn,
            found.others,
            found.window_ended,
            found.warnings
        ),
        (
            Some(Spawn {
                thread_id: "01a2298c-947a-75b0-8b49-6a2e1016272b".to_owned(),
                tool_use_id: "call_0004".to_owned(),
                turn_id: "01a2298c-93e0-7120-b32c-8bc5a72c4c3c".to_owned(),
                via: Via::Ledger,
                ledger_op: agentrace_host::parse_op("child-a/t1-a1"),
                prompt_op: None,
            }),
            vec![],
            false,
            vec![]
        )
    );
}

/// A `codex app-server` listening on `listen`, killed when dropped.
struct Listening {
    child: std::process::Child,
}

impl Listening {
    fn start(home: &CodexHome, listen: &str, extra: &[&str]) -> Self {
        let command = home.command();
        let child = std::process::Command::new(&command.program)
            .args(["app-server", "--listen", listen])
            .args(extra)
            .envs(command.env.iter().map(|(key, value)| (key, value)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        Listening { child }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        // The launcher and its native child share the group we made.
        let group =
            rustix::process::Pid::from_raw(i32::try_from(self.child.id()).unwrap()).unwrap();
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = self.child.wait();
    }
}

/// Connects until the server listens (bounded: 60 tries, 250 ms apart).
async fn connect_when_up(endpoint: &Endpoint) -> Result<Host, HostError> {
    let mut last = None;
    for _ in 0..60 {
        match Host::connect(endpoint, CodexHome::options()).await {
            Ok(host) => return Ok(host),
            Err(error @ HostError::Connect { .. }) => last = Some(error),
            Err(other) => return Err(other),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(last.unwrap())
}

fn free_loopback_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn the_websocket_transport_reads_with_the_capability_token_and_is_refused_without() {
    let home = CodexHome::new("v1_basic");
    let token_file = home.dir.path().join("ws-token");
    fs::write(&token_file, "token-for-the-test").unwrap();
    let url = format!("ws://127.0.0.1:{}", free_loopback_port());
    let token_path = token_file.display().to_string();
    let _server = Listening::start(
        &home,
        &url,
        &[
            "--ws-auth",
            "capability-token",
            "--ws-token-file",
            &token_path,
        ],
    );
    let endpoint = Endpoint::WebSocket {
        url: url.clone(),
        token: Some("token-for-the-test".to_owned()),
    };
    let host = connect_when_up(&endpoint).await.unwrap();
    let child = "01a2298c-947a-75b0-8b49-6a2e1016272b";
    let agent = host.read_agent(child).await.unwrap();
    host.shutdown().await;
    assert_eq!(
        (agent.thread_id.as_str(), agent.nickname.as_deref()),
        (child, Some("Dewey"))
    );
    let wrong = Endpoint::WebSocket {
        url,
        token: Some("wrong".to_owned()),
    };
    let refused = Host::connect(&wrong, CodexHome::options())
        .await
        .unwrap_err();
    assert!(matches!(refused, HostError::Connect { .. }), "{refused:?}");
}

#[tokio::test]
async fn the_unix_socket_transport_reads_the_same_agent() {
    let home = CodexHome::new("v1_basic");
    let socket = home.dir.path().join("app.sock");
    let _server = Listening::start(&home, &format!("unix://{}", socket.display()), &[]);
    let host = connect_when_up(&Endpoint::Unix(socket)).await.unwrap();
    let child = "01a2298c-947a-75b0-8b49-6a2e1016272b";
    let agent = host.read_agent(child).await.unwrap();
    host.shutdown().await;
    assert_eq!(agent, recorded_agent(&home, child));
}
