//! `agentrace host …`: the output contract of the session host verbs, with
//! `read-agent` run against the real `codex app-server` over a capture's
//! rollouts.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use super::support::Cli;

const V1_BASIC_ROOT: &str = "01a2298c-93ba-7001-9862-9fd03c21f5d4";
const V1_BASIC_CHILD: &str = "01a2298c-947a-75b0-8b49-6a2e1016272b";

fn capture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/codex")
        .join(name)
}

fn child_rollout(root: &Path) -> PathBuf {
    root.join(format!(
        "2026/11/29/rollout-2026-11-29T23-03-28-{V1_BASIC_CHILD}.jsonl"
    ))
}

fn stdout_json(output: &std::process::Output) -> Value {
    assert!(
        output.status.success(),
        "failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("stdout is not JSON: {e}"))
}

/// A CODEX_HOME holding v1_basic's rollouts, its provider on a dead port.
fn codex_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let day = home.path().join("sessions/2026/11/29");
    fs::create_dir_all(&day).unwrap_or_else(|e| panic!("mkdir: {e}"));
    let rollouts = capture_dir("v1_basic").join("rollouts/2026/11/29");
    for entry in fs::read_dir(&rollouts).unwrap_or_else(|e| panic!("read_dir: {e}")) {
        let entry = entry.unwrap_or_else(|e| panic!("entry: {e}"));
        fs::copy(entry.path(), day.join(entry.file_name())).unwrap_or_else(|e| panic!("copy: {e}"));
    }
    let config = fs::read_to_string(capture_dir("v1_basic").join("config.toml"))
        .unwrap_or_else(|e| panic!("config: {e}"));
    let config: String = config
        .lines()
        .map(|line| {
            if line.starts_with("base_url") {
                "base_url = \"http://127.0.0.1:9/v1\"\n".to_owned()
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    fs::write(home.path().join("config.toml"), config).unwrap_or_else(|e| panic!("write: {e}"));
    home
}

fn host_command(cli: &Cli, codex_home: &Path, args: &[&str]) -> std::process::Output {
    let codex = agentrace_testkit::agents::codex();
    cli.command(args)
        .env("CODEX_HOME", codex_home)
        .env("AGENTRACE_CODEX", codex)
        .env("MOCK_API_KEY", "sk-unused")
        .output()
        .unwrap_or_else(|e| panic!("cannot run agentrace: {e}"))
}

/// The `read-agent --json` contract, read back strictly.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AgentJson {
    thread_id: String,
    parent_thread_id: Option<String>,
    model: String,
    effort: String,
    cwd: String,
    agent_role: Option<String>,
    status: String,
    rollout_path: Option<String>,
    thread_source: Option<String>,
    nickname: Option<String>,
    cli_version: String,
}

#[test]
fn host_marker_json_prints_the_operation_or_null() {
    let cli = Cli::new();
    let found = stdout_json(&cli.run(&[
        "host",
        "marker",
        "--json",
        "crw-flow-op: build/t2-a1  \nDo it.",
    ]));
    let plain = stdout_json(&cli.run(&["host", "marker", "--json", "crw-flow-op: build/t2"]));
    let none = stdout_json(&cli.run(&["host", "marker", "--json", "crw-flow-op: build/t02"]));
    assert_eq!(
        (found, plain, none),
        (
            json!({"op": {"call": "build", "turn": 2, "attempt": 1}}),
            json!({"op": {"call": "build", "turn": 2, "attempt": 0}}),
            json!({"op": null})
        )
    );
    assert_eq!(cli.ok(&["host", "marker", "hello"]), "no operation\n");
}

#[test]
fn host_tokens_json_prints_the_last_total_as_written_or_unmeasured() {
    let cli = Cli::new();
    let rollout = child_rollout(&capture_dir("v1_basic").join("rollouts"));
    let text = fs::read_to_string(&rollout).unwrap_or_else(|e| panic!("rollout: {e}"));
    let last_total = text
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["payload"]["type"] == "token_count" && !line["payload"]["info"].is_null())
        .map(|line| line["payload"]["info"]["total_token_usage"].clone())
        .unwrap_or_else(|| panic!("the capture has a token count"));
    let path = rollout.display().to_string();
    let measured = stdout_json(&cli.run(&["host", "tokens", "--json", &path]));
    let missing =
        stdout_json(&cli.run(&["host", "tokens", "--json", "/nonexistent/rollout.jsonl"]));
    assert_eq!(
        (measured, missing),
        (
            json!({"measured": true, "total": last_total}),
            json!({"measured": false})
        )
    );
}

#[test]
fn host_read_agent_json_prints_the_contract_fields_from_the_real_host() {
    let cli = Cli::new();
    let home = codex_home();
    let output = host_command(
        &cli,
        home.path(),
        &["host", "read-agent", "--json", V1_BASIC_CHILD],
    );
    let agent: AgentJson = serde_json::from_value(stdout_json(&output))
        .unwrap_or_else(|e| panic!("not the contract shape: {e}"));
    assert_eq!(
        agent,
        AgentJson {
            thread_id: V1_BASIC_CHILD.to_owned(),
            parent_thread_id: Some(V1_BASIC_ROOT.to_owned()),
            model: "mock-model".to_owned(),
            effort: String::new(),
            cwd: "/home/dev/codexcap/work".to_owned(),
            agent_role: None,
            status: "notLoaded".to_owned(),
            rollout_path: Some(
                child_rollout(&home.path().join("sessions"))
                    .display()
                    .to_string()
            ),
            thread_source: Some("subagent".to_owned()),
            nickname: Some("Dewey".to_owned()),
            cli_version: "0.169.0".to_owned(),
        }
    );
}

#[test]
fn host_read_agent_of_a_thread_the_host_lacks_exits_3() {
    let cli = Cli::new();
    let home = codex_home();
    let unknown = "01a2298c-dead-7000-8000-00000000beef";
    let output = host_command(&cli, home.path(), &["host", "read-agent", unknown]);
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
            output.stdout.is_empty()
        ),
        (
            Some(3),
            format!(
                "error: thread/read: the host has no such thread: thread not loaded: {unknown}\n"
            ),
            true
        )
    );
}

#[test]
fn host_failures_exit_1_and_usage_errors_exit_2() {
    let cli = Cli::new();
    let bad_endpoint = cli.run(&["host", "read-agent", "--connect", "ftp://x", V1_BASIC_CHILD]);
    let missing_program = cli.run(&[
        "host",
        "read-agent",
        "--codex",
        "/nonexistent/codex",
        V1_BASIC_CHILD,
    ]);
    let usage = cli.run(&["host", "turns"]);
    assert_eq!(
        (
            bad_endpoint.status.code(),
            String::from_utf8_lossy(&bad_endpoint.stderr).into_owned(),
            missing_program.status.code(),
            usage.status.code()
        ),
        (
            Some(1),
            "error: `ftp://x` is not an endpoint (expected stdio, unix://PATH or ws://HOST:PORT)\n"
                .to_owned(),
            Some(1),
            Some(2)
        )
    );
}
