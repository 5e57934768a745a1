//! Every real Codex capture in `fixtures/codex` is a row: replay it, snapshot
//! the `show --json` view, and check attribution and provenance against the
//! frames themselves.

use std::path::PathBuf;

use agentrace_core::model::{Confidence, Envelope, Event, EventBody, Role};
use serde_json::Value;

use super::support::{finalized, record};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/codex")
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

fn check(name: &str) {
    let input = fixture(name);
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
    insta::assert_json_snapshot!(name, view);
}

macro_rules! fixture_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check($name);
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

#[test]
fn every_capture_in_the_fixtures_folder_has_a_row() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex");
    let source = include_str!("fixtures.rs");
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{e}")) {
        let entry = entry.unwrap_or_else(|e| panic!("{e}"));
        if entry.path().join("server.jsonl").exists() {
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                source.contains(&format!("=> \"{name}\"")),
                "capture {name} has no row"
            );
        }
    }
}
