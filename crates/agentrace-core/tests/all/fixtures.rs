//! Every real Codex capture in `fixtures/codex` (0.169) and
//! `fixtures/codex-0.171` is a row: replay it, snapshot the `show --json`
//! view, and check attribution and provenance against the frames
//! themselves. The two versions' captures of one scenario must attribute
//! alike.

use std::path::PathBuf;

use agentrace_core::model::{Confidence, Envelope, Event, EventBody, Role};
use serde_json::Value;

use super::support::{finalized, record};

/// The Codex versions captured, by fixture folder: 0.169.0, 0.171.0.
const VERSIONS: [&str; 2] = ["codex", "codex-0.171"];

fn fixture_in(folder: &str, name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(folder)
        .join(name)
        .join("server.jsonl");
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn raw_value(envelope: &Envelope) -> Option<Value> {
    envelope
        .raw
        .as_ref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
}

/// The root's final answer of its last ended turn, computed from the frames
/// alone: the last `final_answer` agentMessage of that turn, else the last
/// null-phase one.
fn expected_root_answer(frames: &[Value], root: &str) -> Option<String> {
    let mut last_turn = None;
    for frame in frames {
        if frame["method"] == "turn/completed" && frame["params"]["threadId"] == root {
            last_turn = frame["params"]["turn"]["id"].as_str().map(str::to_owned);
        }
    }
    let turn = last_turn?;
    let messages: Vec<&Value> = frames
        .iter()
        .filter(|frame| {
            frame["method"] == "item/completed"
                && frame["params"]["threadId"] == root
                && frame["params"]["turnId"] == turn.as_str()
                && frame["params"]["item"]["type"] == "agentMessage"
        })
        .map(|frame| &frame["params"]["item"])
        .collect();
    messages
        .iter()
        .rev()
        .find(|item| item["phase"] == "final_answer")
        .or_else(|| messages.iter().rev().find(|item| item["phase"].is_null()))
        .and_then(|item| item["text"].as_str().map(str::to_owned))
}

fn check(folder: &str, name: &str) {
    let input = fixture_in(folder, name);
    let (recorder, envelopes) = record(&input);
    let finals = finalized(&envelopes);
    let view = recorder.state().view();

    // Every frame that names its thread is attributed to that thread, by the provider.
    let mut frames = Vec::new();
    for envelope in &finals {
        let Some(frame) = raw_value(envelope) else {
            continue;
        };
        if let Some(thread) = frame["params"]["threadId"].as_str() {
            assert_eq!(
                envelope.actor.thread_id.as_ref().map(|id| id.as_str()),
                Some(thread),
                "{name}: sequence {} attributed to the wrong thread",
                envelope.sequence
            );
            assert_eq!(
                envelope.actor.confidence,
                Confidence::Provider,
                "{name}: {}",
                envelope.sequence
            );
        }
        frames.push(frame);
    }
    // Lossless: one raw per non-blank input line, in order.
    let input_lines: Vec<&[u8]> = input
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .collect();
    let raws: Vec<&str> = envelopes
        .iter()
        .filter_map(|e| e.raw.as_ref().map(|r| r.get()))
        .collect();
    assert_eq!(
        raws.len(),
        input_lines.len(),
        "{name}: one envelope raw per input line"
    );
    for (raw, line) in raws.iter().zip(&input_lines) {
        assert_eq!(
            raw.as_bytes(),
            line.trim_ascii(),
            "{name}: raw differs from input"
        );
    }
    // The run ends at the root's turn/completed, never a child's.
    let root = view.run.root_thread_id.clone().map(|id| id.0);
    for (index, envelope) in finals.iter().enumerate() {
        let terminal = matches!(
            envelope.event,
            EventBody::Known(Event::Done { .. } | Event::Failed { .. } | Event::Interrupted { .. })
        );
        if terminal {
            let cause = finals[..index]
                .iter()
                .rev()
                .find(|previous| previous.raw.is_some())
                .and_then(raw_value)
                .unwrap_or(Value::Null);
            assert_eq!(
                cause["method"], "turn/completed",
                "{name}: a terminal event follows a turn/completed"
            );
            assert_eq!(
                cause["params"]["threadId"].as_str(),
                root.as_deref(),
                "{name}: only the root's turn ends the run"
            );
            assert_eq!(envelope.actor.role, Role::Root);
        }
    }
    // The result is the root's own final answer.
    if let Some(root) = &root {
        let expected = expected_root_answer(&frames, root);
        if view.run.status == agentrace_core::model::RunStatus::Done {
            assert_eq!(view.run.result, expected, "{name}: result");
            if view.run.result.is_some() {
                let source = view
                    .run
                    .result_source
                    .clone()
                    .unwrap_or_else(|| panic!("{name}: no source"));
                assert_eq!(source.role, Some(Role::Root));
                assert_eq!(
                    source.thread_id.map(|id| id.0).as_deref(),
                    Some(root.as_str())
                );
            }
        } else {
            assert_eq!(view.run.result, None, "{name}: no result unless done");
        }
    }
    if folder == VERSIONS[0] {
        insta::assert_json_snapshot!(name, view);
    } else {
        insta::assert_json_snapshot!(format!("{folder}_{name}"), view);
    }
}

macro_rules! fixture_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check(VERSIONS[0], $name);
            }
        )*
    };
}

fixture_tests! {
    probe_unknown_thread_ids => "probe_unknown_thread_ids",
    real_model_basic => "real_model_basic",
    real_model_nested => "real_model_nested",
    v1_approval => "v1_approval",
    v1_approval_delayed => "v1_approval_delayed",
    v1_background_exec => "v1_background_exec",
    v1_basic => "v1_basic",
    v1_child_error_http500 => "v1_child_error_http500",
    v1_followup => "v1_followup",
    v1_interrupt_child_driver => "v1_interrupt_child_driver",
    v1_parallel => "v1_parallel",
    v1_restart_mid_child => "v1_restart_mid_child",
    v1_roles => "v1_roles",
    v2_basic => "v2_basic",
    v2_child_error_http500 => "v2_child_error_http500",
    v2_interrupt_agent => "v2_interrupt_agent",
}

macro_rules! fixture_tests_0_171 {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check(VERSIONS[1], $name);
            }
        )*
    };
}

fixture_tests_0_171! {
    codex_0_171_probe_unknown_thread_ids => "probe_unknown_thread_ids",
    codex_0_171_real_model_basic => "real_model_basic",
    codex_0_171_real_model_nested => "real_model_nested",
    codex_0_171_v1_approval => "v1_approval",
    codex_0_171_v1_approval_delayed => "v1_approval_delayed",
    codex_0_171_v1_background_exec => "v1_background_exec",
    codex_0_171_v1_basic => "v1_basic",
    codex_0_171_v1_child_error_http500 => "v1_child_error_http500",
    codex_0_171_v1_followup => "v1_followup",
    codex_0_171_v1_interrupt_child_driver => "v1_interrupt_child_driver",
    codex_0_171_v1_parallel => "v1_parallel",
    codex_0_171_v1_restart_mid_child => "v1_restart_mid_child",
    codex_0_171_v1_roles => "v1_roles",
    codex_0_171_v2_basic => "v2_basic",
    codex_0_171_v2_child_error_http500 => "v2_child_error_http500",
    codex_0_171_v2_interrupt_agent => "v2_interrupt_agent",
}

/// The scenarios both versions captured.
fn scenarios() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")))
        .filter(|entry| entry.path().join("server.jsonl").exists())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_capture_in_the_fixtures_folders_has_a_row() {
    let source = include_str!("fixtures.rs");
    for folder in VERSIONS {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(folder);
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{e}")) {
            let entry = entry.unwrap_or_else(|e| panic!("{e}"));
            if entry.path().join("server.jsonl").exists() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let row = if folder == VERSIONS[0] {
                    format!(" => \"{name}\"")
                } else {
                    format!("codex_0_171_{name} => \"{name}\"")
                };
                assert!(source.contains(&row), "{folder} capture {name} has no row");
            }
        }
    }
}

/// A V1 child's label is a nickname Codex draws at random; the role in
/// brackets, a V2 task path and `Main` are not noise.
fn label_shape(label: &str) -> String {
    if label == "Main" || label.starts_with('/') {
        return label.to_owned();
    }
    match label.split_once(" [") {
        Some((_, role)) => format!("<nickname> [{role}"),
        None => "<nickname>".to_owned(),
    }
}

/// A text with the wall times it quotes (`216 seconds`: a tool's output the
/// scripted child echoes) blanked: timestamps are noise.
fn without_wall_times(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" seconds") {
        let before = &rest[..at];
        let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.').len();
        out.push_str(&before[..before.len() - digits]);
        out.push_str(if digits > 0 { "<n> seconds" } else { " seconds" });
        rest = &rest[at + " seconds".len()..];
    }
    out.push_str(rest);
    out
}

/// An agent of the tree as both versions must attribute it: everything but
/// the documented noise (nicknames, token counts, timestamps, racy order of
/// siblings). Tokens count as attributed or not; their sums are checked per
/// version.
fn agent_shape(agent: &Value) -> Value {
    let mut children: Vec<Value> = agent["children"]
        .as_array()
        .map(|children| children.iter().map(agent_shape).collect())
        .unwrap_or_default();
    children.sort_by_key(Value::to_string);
    serde_json::json!({
        "role": agent["role"],
        "label": agent["label"].as_str().map(label_shape),
        "depth": agent["depth"],
        "status": agent["status"],
        "prompt": agent["prompt"],
        "model": agent["model"],
        "toolCount": agent["toolCount"],
        "hasTokens": agent["tokens"]["totalTokens"].as_u64().is_some_and(|total| total > 0),
        "costStatus": agent["costStatus"],
        "finalMessage": agent["finalMessage"].as_str().map(without_wall_times),
        "finalMessageConfidence": agent["finalMessageConfidence"],
        "children": children,
    })
}

/// The sum of the tree's token totals.
fn tree_tokens(agents: &Value) -> u64 {
    agents
        .as_array()
        .map(|agents| {
            agents
                .iter()
                .map(|agent| {
                    agent["tokens"]["totalTokens"].as_u64().unwrap_or(0) + tree_tokens(&agent["children"])
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A run as both versions must attribute it.
fn attributed(folder: &str, name: &str) -> Value {
    let (recorder, _) = record(&fixture_in(folder, name));
    let view = serde_json::to_value(recorder.state().view()).unwrap_or_default();
    let run = &view["run"];
    let root = run["rootThreadId"].clone();
    // Token attribution: every token of the run is some agent's (or counted
    // as unattributed), in each version alike.
    let attributed_tokens = tree_tokens(&view["agents"]);
    let mut warnings: Vec<Value> = view["warnings"]
        .as_array()
        .map(|warnings| {
            warnings
                .iter()
                .map(|warning| {
                    serde_json::json!({
                        "code": warning["code"],
                        "severity": warning["severity"],
                        "aboutRoot": warning["threadId"] == root,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    warnings.sort_by_key(Value::to_string);
    let mut agents: Vec<Value> = view["agents"]
        .as_array()
        .map(|agents| agents.iter().map(agent_shape).collect())
        .unwrap_or_default();
    agents.sort_by_key(Value::to_string);
    serde_json::json!({
        "status": run["status"],
        "result": run["result"],
        "resultFromRoot": run["resultSource"]["threadId"] == root && run["resultSource"]["role"] == "root",
        "error": run["error"],
        "unknownActor": run["counts"]["unknownActor"],
        "undecodedLines": run["counts"]["undecodedLines"],
        "unknownFrames": run["counts"]["unknownFrames"],
        "costStatus": run["costStatus"],
        "tokensAllAttributed": attributed_tokens == run["tokens"]["totalTokens"].as_u64().unwrap_or(0),
        "agents": agents,
        "warnings": warnings,
    })
}

#[test]
fn both_codex_versions_attribute_every_scenario_alike() {
    let names = scenarios();
    assert_eq!(names.len(), 16, "the 0.169 scenarios");
    for name in names {
        let old = attributed(VERSIONS[0], &name);
        let new = attributed(VERSIONS[1], &name);
        assert_eq!(new, old, "{name}: 0.171 attributes otherwise than 0.169");
    }
}
