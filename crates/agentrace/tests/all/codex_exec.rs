//! `codex exec --json` runs: a saved stream (`fixtures/codex-exec`, a real
//! capture of Codex 0.171) ingested and joined with its rollouts, its exit
//! codes, and what a recorded run must hold (shared with the live tests in
//! `live_codex`, which run the real `codex exec`).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::support::Cli;

const ROOT_ANSWER: &str = "ROOT DONE: final answer from the root agent.";

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex-exec/v2_parallel")
}

/// Each rollout's thread and its last `token_count` total, as the
/// `tokens` of `show --json` spell them.
pub fn rollout_tokens(codex_home: &Path) -> std::collections::BTreeMap<String, Value> {
    let mut found = std::collections::BTreeMap::new();
    let mut stack = vec![codex_home.join("sessions")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
            let lines: Vec<Value> = text
                .lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect();
            let thread = lines[0]["payload"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let last = lines
                .iter()
                .rev()
                .find_map(|line| {
                    line["payload"]["info"]["total_token_usage"]
                        .as_object()
                        .cloned()
                })
                .unwrap_or_else(|| panic!("no token_count in {}", path.display()));
            found.insert(
                thread,
                json!({
                    "inputTokens": last["input_tokens"],
                    "cachedInputTokens": last["cached_input_tokens"],
                    "outputTokens": last["output_tokens"],
                    "reasoningOutputTokens": last["reasoning_output_tokens"],
                    "totalTokens": last["total_tokens"],
                }),
            );
        }
    }
    found
}

/// (label, role, status, final message, confidence, tokens) of every agent, tree order.
fn exec_agents(view: &Value) -> Vec<(String, String, String, String, String, Value)> {
    let mut rows = Vec::new();
    let mut stack: Vec<&Value> = view["agents"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .collect();
    while let Some(node) = stack.pop() {
        let tokens = &node["tokens"];
        rows.push((
            node["label"].as_str().unwrap_or_default().to_owned(),
            node["role"].as_str().unwrap_or_default().to_owned(),
            node["status"].as_str().unwrap_or_default().to_owned(),
            node["finalMessage"].as_str().unwrap_or_default().to_owned(),
            node["confidence"].as_str().unwrap_or("provider").to_owned(),
            json!({
                "inputTokens": tokens["inputTokens"],
                "cachedInputTokens": tokens["cachedInputTokens"],
                "outputTokens": tokens["outputTokens"],
                "reasoningOutputTokens": tokens["reasoningOutputTokens"],
                "totalTokens": tokens["totalTokens"],
            }),
        ));
        stack.extend(node["children"].as_array().into_iter().flatten().rev());
    }
    rows
}

/// What a recorded `codex exec` run must hold: the root and both helpers,
/// each helper `derived` (its rollout alone names it), with its final
/// message, and every agent's tokens those of its own rollout.
pub fn check_exec_run(view: &Value, codex_home: &Path, answer: &str) {
    let tokens = rollout_tokens(codex_home);
    let root = view["run"]["rootThreadId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let child = |label: &str| -> String {
        view["agents"][0]["children"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|node| node["label"] == label)
            .and_then(|node| node["threadId"].as_str())
            .unwrap_or_else(|| panic!("no helper {label}: {view:#}"))
            .to_owned()
    };
    let (a, b) = (child("/root/child_a"), child("/root/child_b"));
    assert_eq!(tokens.len(), 3, "one rollout per thread: {tokens:?}");
    assert_eq!(
        exec_agents(view),
        vec![
            (
                "Main".to_owned(),
                "root".to_owned(),
                "completed".to_owned(),
                answer.to_owned(),
                "provider".to_owned(),
                tokens[&root].clone()
            ),
            (
                "/root/child_a".to_owned(),
                "helper".to_owned(),
                "completed".to_owned(),
                "CHILD A DONE (v2)".to_owned(),
                "derived".to_owned(),
                tokens[&a].clone()
            ),
            (
                "/root/child_b".to_owned(),
                "helper".to_owned(),
                "completed".to_owned(),
                "CHILD B DONE (v2)".to_owned(),
                "derived".to_owned(),
                tokens[&b].clone()
            ),
        ]
    );
    assert_eq!(view["run"]["status"], "done");
    assert_eq!(view["run"]["source"], "codex-exec");
    assert_eq!(view["run"]["result"], answer);
    assert_eq!(view["run"]["resultSource"]["threadId"], root.as_str());
    // Each V2 child's rollout starts with a copy of the root's history,
    // counted once (in the root).
    let warnings: Vec<(Value, Value)> = view["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|warning| (warning["code"].clone(), warning["threadId"].clone()))
        .collect();
    let mut expected = vec![
        (json!("replayed_history"), json!(a)),
        (json!("replayed_history"), json!(b)),
    ];
    expected.sort_by_key(|pair| pair.1.to_string());
    let mut warnings = warnings;
    warnings.sort_by_key(|pair| pair.1.to_string());
    assert_eq!(warnings, expected, "{view:#}");
}

#[test]
fn the_captured_exec_stream_is_detected_joined_to_its_rollouts_and_shown_as_the_snapshot_shows() {
    let cli = Cli::new();
    let home = fixture().join("codex-home");
    let home_arg = home.to_string_lossy().into_owned();
    let output = cli.run(&[
        "ingest",
        "--codex-home",
        &home_arg,
        "--quiet",
        "--run-id",
        "exec",
        &fixture().join("exec.jsonl").to_string_lossy(),
    ]);
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned()
        ),
        (Some(0), "exec\n".to_owned()),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let view: Value = serde_json::from_str(&cli.ok(&["show", "exec", "--json"]))
        .unwrap_or_else(|e| panic!("{e}"));
    check_exec_run(&view, &home, ROOT_ANSWER);
    insta::assert_snapshot!("codex_exec_show", cli.ok(&["show", "exec"]));
}

#[test]
fn a_failed_exec_turn_fails_the_ingest_as_it_failed_the_run() {
    let cli = Cli::new();
    let text =
        std::fs::read_to_string(fixture().join("exec.jsonl")).unwrap_or_else(|e| panic!("{e}"));
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("{\"type\":\"turn.completed\""),
        "the capture changed; update this test"
    );
    let failed = text.replace(
        last,
        r#"{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}"#,
    );
    let path = cli.home.path().join("failed.jsonl");
    std::fs::write(&path, failed).unwrap_or_else(|e| panic!("{e}"));
    let home = fixture().join("codex-home").to_string_lossy().into_owned();
    let output = cli.run(&[
        "ingest",
        "--format",
        "codex-exec",
        "--codex-home",
        &home,
        "--quiet",
        "--run-id",
        "failed",
        &path.to_string_lossy(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let view: Value = serde_json::from_str(&cli.ok(&["show", "failed", "--json"]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (
            &view["run"]["status"],
            &view["run"]["error"],
            &view["run"]["result"]
        ),
        (
            &json!("failed"),
            &json!("stream disconnected before completion"),
            &Value::Null
        )
    );
}

#[test]
fn an_exec_stream_without_its_codex_home_keeps_the_root_and_its_streams_tokens_and_says_so() {
    let cli = Cli::new();
    let empty = cli.home.path().join("empty-codex-home");
    std::fs::create_dir_all(&empty).unwrap_or_else(|e| panic!("{e}"));
    let empty_arg = empty.to_string_lossy().into_owned();
    let output = cli.run(&[
        "ingest",
        "--codex-home",
        &empty_arg,
        "--quiet",
        "--run-id",
        "alone",
        &fixture().join("exec.jsonl").to_string_lossy(),
    ]);
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: no rollout of thread 01a23454-a69d-72a2-a962-73f0917fed4f under"),
        "{stderr}"
    );
    let view: Value = serde_json::from_str(&cli.ok(&["show", "alone", "--json"]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(view["agents"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        (
            &view["agents"][0]["label"],
            &view["agents"][0]["children"],
            &view["agents"][0]["tokens"]["inputTokens"],
            &view["agents"][0]["tokens"]["outputTokens"]
        ),
        (&json!("Main"), &json!([]), &json!(39628), &json!(76))
    );
}

/// A saved `codex exec --json` stream carries no time: each of its lines
/// was stamped with the session's start, so the run ended the moment it
/// began (`show`: "ended 01:18:12.733Z (0.0 s)", `runs` and `diff` 0 s).
/// It now ends when the root's rollout ended its turn, with the stream's
/// one answer (its result and item), given then in place of the rollout's
/// own ending (a notice), so the run has one event fewer.
#[test]
fn a_saved_exec_stream_ends_when_its_roots_rollout_ended_the_turn_not_when_it_began() {
    let cli = Cli::new();
    let home = fixture().join("codex-home");
    cli.ingest(
        &fixture().join("exec.jsonl"),
        &["--codex-home", &home.to_string_lossy(), "--quiet", "--run-id", "exec"],
    );
    let view: Value = serde_json::from_str(&cli.ok(&["show", "exec", "--json"]))
        .unwrap_or_else(|e| panic!("{e}"));
    let run = &view["run"];
    let compared: Value = serde_json::from_str(&cli.ok(&["diff", "exec", "exec", "--json"]))
        .unwrap_or_else(|e| panic!("{e}"));
    let show = cli.ok(&["show", "exec"]);
    let done: Vec<String> = cli
        .ok(&["events", "exec"])
        .lines()
        .filter(|line| line.contains("DONE: ROOT DONE"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        (
            run["startedAt"].clone(),
            run["endedAt"].clone(),
            run["status"].clone(),
            run["resultSource"].clone(),
            run["counts"]["events"].clone(),
            compared["a"]["figures"]["durationMs"].clone(),
            show.lines().nth(4).map(str::to_owned),
            done,
        ),
        (
            json!("2026-12-02T01:18:12.733Z"),
            json!("2026-12-02T01:18:13.301Z"),
            json!("done"),
            json!({"threadId": "01a23454-a69d-72a2-a962-73f0917fed4f", "role": "root", "itemId": "item_3"}),
            json!(119),
            json!(568),
            Some("time      started 2026-12-02T01:18:12.733Z, ended 2026-12-02T01:18:13.301Z (0.6 s)".to_owned()),
            vec!["   118  2026-12-02T01:18:13.301Z  Main                  DONE: ROOT DONE: final answer from the root agent.".to_owned()],
        )
    );
}

/// Nothing answers approvals in `codex exec`: `run codex --exec --approval
/// accept` was taken and passed over without a word, as if the answers
/// would be given. It is refused, as `--approval-policy` with it is.
#[test]
fn approval_answers_with_exec_are_a_usage_error() {
    let cli = Cli::new();
    let refused = |flags: &[&str]| {
        let mut args = vec!["run", "codex", "--exec"];
        args.extend_from_slice(flags);
        args.extend(["--", "hi"]);
        let output = cli.run(&args);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status.code(), stderr.lines().next().unwrap_or_default().to_owned())
    };
    assert_eq!(
        [refused(&["--approval", "accept"]), refused(&["--approval-policy", "never"])],
        [
            (Some(2), "error: the argument '--exec' cannot be used with '--approval <APPROVAL>'".to_owned()),
            (Some(2), "error: the argument '--exec' cannot be used with '--approval-policy <POLICY>'".to_owned()),
        ]
    );
}

/// Regression: `ingest` of a `codex exec` run's log fed every frame as an
/// app-server stream, so the replay had no root and 110 unknown frames
/// (the joined rollout lines were not told apart from the stream). The
/// replay is the run as recorded, down to `show --json`.
#[test]
fn ingest_of_a_codex_exec_runs_log_attributes_it_as_the_recording_did() {
    let (recorded, replayed) = (Cli::new(), Cli::new());
    let home = fixture().join("codex-home");
    recorded.ok(&[
        "ingest",
        "--codex-home",
        &home.to_string_lossy(),
        "--quiet",
        "--run-id",
        "exec",
        &fixture().join("exec.jsonl").to_string_lossy(),
    ]);
    let log = recorded.home.path().join("runs/exec.jsonl");
    let output = replayed.run(&["ingest", "--quiet", "--run-id", "exec", &log.to_string_lossy()]);
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned()),
        (Some(0), String::new())
    );
    let show = |cli: &Cli| -> Value {
        serde_json::from_str(&cli.ok(&["show", "exec", "--json"])).unwrap_or_else(|e| panic!("{e}"))
    };
    assert_eq!(show(&replayed), show(&recorded));
}
