//! Every real capture (Codex app-server output, Claude Code stdout) is a row:
//! replay it through the recorder, fold its envelopes with the child-work
//! reducer, end the session at the end of the input (§6 rule 9), and
//! snapshot the final records and warnings. Each row also checks that the
//! records replayed from the written log equal the live ones.

use std::path::{Path, PathBuf};

use agentrace_core::childwork::{fold, ChildWorkState};
use agentrace_core::model::Envelope;
use serde_json::json;

use super::support::{as_legacy, record, record_claude, without_raw};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A Claude capture's stdout: `stream.jsonl` (and a `--resume` of it), or
/// the Agent SDK's yielded messages.
fn claude_envelopes(dir: &Path) -> Vec<Envelope> {
    let stream = dir.join("stream.jsonl");
    let bytes = if stream.exists() {
        let mut bytes = read(&stream);
        let resumed = dir.join("stream_resume.jsonl");
        if resumed.exists() {
            bytes.extend(read(&resumed));
        }
        bytes
    } else {
        read(&dir.join("sdk_messages.jsonl"))
    };
    record_claude(&bytes)
}

fn check(name: &str, envelopes: &[Envelope]) {
    let (reducer, changes) = fold(envelopes, true);
    let records = reducer.records();
    // Live equals replay: the same envelopes read back from the log.
    let replayed: Vec<Envelope> = envelopes
        .iter()
        .map(|envelope| {
            let line = serde_json::to_string(envelope).unwrap_or_default();
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{name}: {e}"))
        })
        .collect();
    let (again, again_changes) = fold(&replayed, true);
    assert_eq!(again.records(), records, "{name}: replay differs");
    assert_eq!(again_changes, changes, "{name}: replayed changes differ");
    // The reducer reads events only: the same log without its frames (an
    // import that references its source) gives the same records.
    let frameless: Vec<Envelope> = envelopes.iter().map(without_raw).collect();
    let (_, frameless_changes) = fold(&frameless, true);
    assert_eq!(frameless_changes, changes, "{name}: changes differ without raw");
    // A log written before events carried those facts folds as it did: the
    // facts come from its frames.
    let legacy: Vec<Envelope> = envelopes.iter().map(as_legacy).collect();
    let (_, legacy_changes) = fold(&legacy, true);
    assert_eq!(legacy_changes, changes, "{name}: a legacy log's changes differ");
    // At the end of the input nothing is live any more.
    for record in &records {
        assert_eq!(record.state, ChildWorkState::Ended, "{name}: {record:?}");
    }
    // The last change of every record is the record as it ends.
    for record in &records {
        let last = changes
            .iter()
            .rev()
            .find(|change| change.record.child_work_id == record.child_work_id)
            .map(|change| &change.record);
        assert_eq!(last, Some(record), "{name}: changes end at the record");
    }
    insta::assert_json_snapshot!(
        format!("childwork_{name}"),
        json!({"records": records, "warnings": reducer.warnings()})
    );
}

fn codex(name: &str) {
    let input = read(&root().join("codex").join(name).join("server.jsonl"));
    let envelopes = record(&input).1;
    check(&format!("codex_{name}"), &envelopes);
}

/// The same scenario captured with Codex 0.171.0 (`fixtures/codex-0.171`).
fn codex_0_171(name: &str) {
    let input = read(&root().join("codex-0.171").join(name).join("server.jsonl"));
    let envelopes = record(&input).1;
    check(&format!("codex-0.171_{name}"), &envelopes);
}

fn claude(name: &str) {
    let envelopes = claude_envelopes(&root().join("claude").join(name));
    check(&format!("claude_{name}"), &envelopes);
}

macro_rules! rows {
    ($($test:ident => $kind:ident $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                $kind($name);
            }
        )*
    };
}

rows! {
    codex_probe_unknown_thread_ids => codex "probe_unknown_thread_ids",
    codex_real_model_basic => codex "real_model_basic",
    codex_real_model_nested => codex "real_model_nested",
    codex_v1_approval => codex "v1_approval",
    codex_v1_approval_delayed => codex "v1_approval_delayed",
    codex_v1_background_exec => codex "v1_background_exec",
    codex_v1_basic => codex "v1_basic",
    codex_v1_child_error_http500 => codex "v1_child_error_http500",
    codex_v1_followup => codex "v1_followup",
    codex_v1_interrupt_child_driver => codex "v1_interrupt_child_driver",
    codex_v1_parallel => codex "v1_parallel",
    codex_v1_restart_mid_child => codex "v1_restart_mid_child",
    codex_v1_roles => codex "v1_roles",
    codex_v2_basic => codex "v2_basic",
    codex_v2_child_error_http500 => codex "v2_child_error_http500",
    codex_v2_interrupt_agent => codex "v2_interrupt_agent",
    codex_0_171_probe_unknown_thread_ids => codex_0_171 "probe_unknown_thread_ids",
    codex_0_171_real_model_basic => codex_0_171 "real_model_basic",
    codex_0_171_real_model_nested => codex_0_171 "real_model_nested",
    codex_0_171_v1_approval => codex_0_171 "v1_approval",
    codex_0_171_v1_approval_delayed => codex_0_171 "v1_approval_delayed",
    codex_0_171_v1_background_exec => codex_0_171 "v1_background_exec",
    codex_0_171_v1_basic => codex_0_171 "v1_basic",
    codex_0_171_v1_child_error_http500 => codex_0_171 "v1_child_error_http500",
    codex_0_171_v1_followup => codex_0_171 "v1_followup",
    codex_0_171_v1_interrupt_child_driver => codex_0_171 "v1_interrupt_child_driver",
    codex_0_171_v1_parallel => codex_0_171 "v1_parallel",
    codex_0_171_v1_restart_mid_child => codex_0_171 "v1_restart_mid_child",
    codex_0_171_v1_roles => codex_0_171 "v1_roles",
    codex_0_171_v2_basic => codex_0_171 "v2_basic",
    codex_0_171_v2_child_error_http500 => codex_0_171 "v2_child_error_http500",
    codex_0_171_v2_interrupt_agent => codex_0_171 "v2_interrupt_agent",
    claude_bash_then_agent_fg => claude "bash_then_agent_fg",
    claude_bg_shell_task => claude "bg_shell_task",
    claude_followup_same_subagent => claude "followup_same_subagent",
    claude_nested_fg => claude "nested_fg",
    claude_parallel_bg => claude "parallel_bg",
    claude_parallel_fg => claude "parallel_fg",
    claude_parallel_fg_forward_text => claude "parallel_fg_forward_text",
    claude_resumed_session => claude "resumed_session",
    claude_sdk_single_bg => claude "sdk_single_bg",
    claude_single_bg => claude "single_bg",
    claude_single_fg => claude "single_fg",
    claude_single_fg_partial => claude "single_fg_partial",
    claude_subagent_tool_error_fg => claude "subagent_tool_error_fg",
    claude_v1_0_128_parallel_explore_missing => claude "v1.0.128_parallel_explore_missing",
    claude_v1_0_128_single => claude "v1.0.128_single",
    claude_v2_0_77_single => claude "v2.0.77_single",
    claude_v2_1_197_parallel => claude "v2.1.197_parallel",
    claude_v2_1_197_single => claude "v2.1.197_single",
}

#[test]
fn every_capture_has_a_child_work_row() {
    let source = include_str!("childwork_fixtures.rs");
    for (folder, kind, marker) in [
        ("codex", "codex", "server.jsonl"),
        ("codex-0.171", "codex_0_171", "server.jsonl"),
        ("claude", "claude", ""),
    ] {
        for entry in std::fs::read_dir(root().join(folder)).unwrap_or_else(|e| panic!("{e}")) {
            let entry = entry.unwrap_or_else(|e| panic!("{e}"));
            let is_capture = if marker.is_empty() {
                entry.path().join("stream.jsonl").exists()
                    || entry.path().join("sdk_messages.jsonl").exists()
            } else {
                entry.path().join(marker).exists()
            };
            if is_capture {
                let name = entry.file_name().to_string_lossy().into_owned();
                assert!(
                    source.contains(&format!("=> {kind} \"{name}\"")),
                    "{kind} capture {name} has no child-work row"
                );
            }
        }
    }
}
