//! Every capture's Codex rollout files replayed as one session: the agent
//! tree, the root's answer, the replayed prefix of forked children, and
//! per-thread tokens equal to what the live app-server stream reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentrace_core::model::{Event, EventBody, RunId, Timestamp, TokenUsage};
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_core::{Envelope, InputLine, Recorder};
use serde_json::Value;

use super::support::record;

/// A capture: `<scenario>` (Codex 0.169) or `codex-0.171/<scenario>`.
pub(super) fn capture(name: &str) -> PathBuf {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    if name.contains('/') {
        fixtures.join(name)
    } else {
        fixtures.join("codex").join(name)
    }
}

pub(super) fn rollout_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "jsonl") {
                files.push(path);
            }
        }
    }
    // Parents before children: by spawn depth, then by name.
    let depth = |path: &PathBuf| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let first: Value = serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap_or_default();
        first["payload"]["source"]["subagent"]["thread_spawn"]["depth"].as_u64().unwrap_or(0)
    };
    files.sort_by_key(|path| (depth(path), path.clone()));
    files
}

fn record_rollouts(name: &str) -> (Recorder, Vec<Envelope>) {
    record_rollouts_as(name, &|line| line.to_vec())
}

/// [`record_rollouts`] with every line first passed through `line_as`.
fn record_rollouts_as(name: &str, line_as: &dyn Fn(&[u8]) -> Vec<u8>) -> (Recorder, Vec<Envelope>) {
    let mut recorder = Recorder::new(RunId::from("run-test"), Format::CodexRollout);
    let mut envelopes = recorder.start(Timestamp::from_millis(0));
    for (number, path) in rollout_files(&capture(name).join("rollouts")).iter().enumerate() {
        let text = std::fs::read(path).unwrap_or_default();
        for (index, line) in text.split(|byte| *byte == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let line = line_as(line);
            envelopes.extend(recorder.push_part(
                &SourcePart::File { number: number as u32 },
                &InputLine {
                    bytes: &line,
                    line_number: index as u64 + 1,
                    observed_at: Timestamp::from_millis(0),
                    direction: None,
                    truncated_from: None,
                },
            ));
        }
    }
    envelopes.extend(recorder.finish());
    (recorder, envelopes)
}

/// Each thread's last `thread/tokenUsage/updated` total in the live stream.
fn stream_tokens(name: &str) -> BTreeMap<String, u64> {
    let input = std::fs::read(capture(name).join("server.jsonl")).unwrap_or_default();
    let (_, envelopes) = record(&input);
    let mut totals = BTreeMap::new();
    for envelope in envelopes {
        if let (EventBody::Known(Event::Usage { total, .. }), Some(thread)) = (&envelope.event, &envelope.actor.thread_id) {
            totals.insert(thread.to_string(), total.total_tokens);
        }
    }
    totals
}

fn rollout_tokens(agents: &[agentrace_core::state::AgentNode], out: &mut BTreeMap<String, u64>) {
    for agent in agents {
        if let Some(TokenUsage { total_tokens, .. }) = agent.tokens {
            out.insert(agent.thread_id.to_string(), total_tokens);
        }
        rollout_tokens(&agent.children, out);
    }
}

fn check(name: &str) {
    let (recorder, envelopes) = record_rollouts(name);
    let view = recorder.state().view();
    let live = {
        let input = std::fs::read(capture(name).join("server.jsonl")).unwrap_or_default();
        record(&input).0.state().view()
    };
    // The same tree and answer as the live stream showed.
    assert_eq!(view.run.root_thread_id, live.run.root_thread_id, "{name}: root");
    if live.run.status == agentrace_core::model::RunStatus::Done {
        assert_eq!(view.run.result, live.run.result, "{name}: result");
    }
    fn shape(agents: &[agentrace_core::state::AgentNode], out: &mut Vec<(String, Option<String>, Option<u32>)>) {
        for agent in agents {
            out.push((agent.thread_id.to_string(), agent.parent_thread_id.as_ref().map(|p| p.to_string()), agent.depth));
            shape(&agent.children, out);
        }
    }
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    shape(&view.agents, &mut ours);
    shape(&live.agents, &mut theirs);
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs, "{name}: tree");
    // Tokens per thread equal the live stream's (replayed history counted once).
    let mut tokens = BTreeMap::new();
    rollout_tokens(&view.agents, &mut tokens);
    assert_eq!(tokens, stream_tokens(name), "{name}: tokens per thread");
    // Nothing replayed is attributed to anyone.
    for envelope in &envelopes {
        if matches!(envelope.event, EventBody::Known(Event::Replayed { .. })) {
            assert_eq!(envelope.actor.thread_id, None, "{name}: {}", envelope.sequence);
        }
    }
    insta::assert_json_snapshot!(format!("rollout_{}", name.replace('/', "_")), view);
}

macro_rules! rollout_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check($name);
            }
        )*
    };
}

rollout_tests! {
    rollout_real_model_basic => "real_model_basic",
    rollout_real_model_nested => "real_model_nested",
    rollout_v1_approval => "v1_approval",
    rollout_v1_background_exec => "v1_background_exec",
    rollout_v1_basic => "v1_basic",
    rollout_v1_child_error_http500 => "v1_child_error_http500",
    rollout_v1_followup => "v1_followup",
    rollout_v1_parallel => "v1_parallel",
    rollout_v1_roles => "v1_roles",
    rollout_v2_basic => "v2_basic",
    rollout_v2_child_error_http500 => "v2_child_error_http500",
    rollout_v2_interrupt_agent => "v2_interrupt_agent",
    rollout_0_171_real_model_basic => "codex-0.171/real_model_basic",
    rollout_0_171_real_model_nested => "codex-0.171/real_model_nested",
    rollout_0_171_v1_approval => "codex-0.171/v1_approval",
    rollout_0_171_v1_background_exec => "codex-0.171/v1_background_exec",
    rollout_0_171_v1_basic => "codex-0.171/v1_basic",
    rollout_0_171_v1_child_error_http500 => "codex-0.171/v1_child_error_http500",
    rollout_0_171_v1_followup => "codex-0.171/v1_followup",
    rollout_0_171_v1_parallel => "codex-0.171/v1_parallel",
    rollout_0_171_v1_roles => "codex-0.171/v1_roles",
    rollout_0_171_v2_basic => "codex-0.171/v2_basic",
    rollout_0_171_v2_child_error_http500 => "codex-0.171/v2_child_error_http500",
    rollout_0_171_v2_interrupt_agent => "codex-0.171/v2_interrupt_agent",
}

/// The child-work records of a session read from its rollouts, the
/// session ended at the end of its files: a unified-exec command whose
/// process outlived its call (`Process running with session ID N`, fed by
/// `write_stdin` until `Process exited with code 0`) is a `command` record
/// under the helper that launched it, from its call to its exit.
#[test]
fn the_rollouts_of_a_background_exec_give_the_command_record_of_its_helper() {
    for name in ["v1_background_exec", "codex-0.171/v1_background_exec"] {
        let (_, envelopes) = record_rollouts(name);
        let (reducer, _) = agentrace_core::childwork::fold(&envelopes, true);
        insta::assert_json_snapshot!(
            format!("rollout_childwork_{}", name.replace('/', "_")),
            serde_json::json!({"records": reducer.records(), "warnings": reducer.warnings()})
        );
    }
}

/// A background command that exits non-zero ended `failed`, as the live
/// stream's exit code says, whichever line of the rollout tells it first:
/// the command's own `item_completed` (Codex 0.169 and 0.171 write one), or
/// else the `write_stdin` output that saw the process exit (a rollout with
/// no such item), at that line's time.
#[test]
fn a_background_command_that_exits_non_zero_reads_failed_whichever_rollout_line_says_it() {
    use agentrace_core::childwork::{fold, ChildWorkKind, ChildWorkRecord, Outcome};
    let commands = |envelopes: &[Envelope]| -> Vec<ChildWorkRecord> {
        fold(envelopes, true)
            .0
            .records()
            .into_iter()
            .filter(|record| record.kind == ChildWorkKind::Command)
            .collect()
    };
    let exited_zero = commands(&record_rollouts("v1_background_exec").1);
    assert_eq!(
        exited_zero.iter().map(|record| record.outcome).collect::<Vec<_>>(),
        [Some(Outcome::Succeeded)]
    );
    let mut seen = Vec::new();
    for without_item in [false, true] {
        let (_, envelopes) = record_rollouts_as("v1_background_exec", &|line| {
            let text = String::from_utf8_lossy(line)
                .replace("Process exited with code 0", "Process exited with code 3")
                .replace("\"exit_code\":0", "\"exit_code\":3");
            let text = if without_item {
                text.replace("\"type\":\"CommandExecution\"", "\"type\":\"SomeOtherItem\"")
            } else {
                text
            };
            text.into_bytes()
        });
        seen.push(commands(&envelopes));
    }
    let failed_at = |at: &str| -> Vec<ChildWorkRecord> {
        let at = Timestamp::parse(at);
        exited_zero
            .iter()
            .map(|record| ChildWorkRecord {
                outcome: Some(Outcome::Failed),
                updated_at: at.unwrap_or(record.updated_at),
                ended_at: at,
                ..record.clone()
            })
            .collect()
    };
    assert_eq!(
        seen,
        [
            // The command's `item_completed`, at the exit.
            failed_at("2026-11-29T23:22:22.861Z"),
            // The `write_stdin` output that saw it exit, 3 ms later.
            failed_at("2026-11-29T23:22:22.864Z"),
        ]
    );
}

#[test]
fn a_forked_childs_copied_prefix_is_replayed_not_its_own() {
    for name in ["v2_basic", "codex-0.171/v2_basic"] {
        let (recorder, envelopes) = record_rollouts(name);
        let replayed = envelopes
            .iter()
            .filter(|e| matches!(e.event, EventBody::Known(Event::Replayed { .. })))
            .count();
        // v2_basic's child file: lines 2–15 copy the root's history.
        let warnings: Vec<&str> = recorder.state().warnings().iter().map(|w| w.code.as_str()).collect();
        assert_eq!((replayed, warnings), (14, vec!["replayed_history"]), "{name}");
    }
}

#[test]
fn a_rollout_line_without_what_is_never_read_gives_the_same_events_and_run() {
    for scenario in ["real_model_nested", "v1_basic", "v1_parallel", "v1_roles", "v2_basic", "v2_interrupt_agent"] {
        for name in [scenario.to_owned(), format!("codex-0.171/{scenario}")] {
        let name = name.as_str();
        let (full_recorder, full) = record_rollouts(name);
        let (lean_recorder, lean) = record_rollouts_as(name, &|line| {
            agentrace_core::rollout::lean_line(line).map(String::into_bytes).unwrap_or_else(|| line.to_vec())
        });
        let events = |envelopes: &[Envelope]| -> Vec<(Option<String>, String)> {
            envelopes
                .iter()
                .map(|e| (e.actor.thread_id.as_ref().map(ToString::to_string), serde_json::to_string(&e.event).unwrap_or_default()))
                .collect()
        };
        assert_eq!(events(&lean), events(&full), "{name}");
        assert_eq!(
            serde_json::to_value(lean_recorder.state().view()).unwrap_or_default(),
            serde_json::to_value(full_recorder.state().view()).unwrap_or_default(),
            "{name}"
        );
        // The lean first line is a fraction of the line.
        let first = rollout_files(&capture(name).join("rollouts")).into_iter().next().unwrap_or_default();
        let text = std::fs::read(first).unwrap_or_default();
        let line = text.split(|byte| *byte == b'\n').next().unwrap_or_default();
        let lean = agentrace_core::rollout::lean_line(line).unwrap_or_default();
        assert!(lean.len() * 4 < line.len(), "{name}: {} of {}", lean.len(), line.len());
        }
    }
}

/// Every agent's status and final message read from its rollout, by thread,
/// with the run's status: what a user's imported history says of how each
/// agent ended.
fn endings(view: &agentrace_core::state::RunView) -> (String, BTreeMap<String, (String, Option<String>)>) {
    fn walk(agents: &[agentrace_core::state::AgentNode], out: &mut BTreeMap<String, (String, Option<String>)>) {
        for agent in agents {
            out.insert(agent.thread_id.to_string(), (agent.status.as_str().to_owned(), agent.final_message.clone()));
            walk(&agent.children, out);
        }
    }
    let mut out = BTreeMap::new();
    walk(&view.agents, &mut out);
    (view.run.status.as_str().to_owned(), out)
}

/// A helper whose model call failed ends its rollout with a `task_complete`
/// that carries the error (Codex 0.169 and 0.171 alike): read from the
/// files, it ended `failed` with that error, as the live app-server stream
/// of the same session said, and the root that answered anyway is `done`.
#[test]
fn a_helper_whose_model_call_failed_reads_failed_from_its_rollout_as_it_did_live() {
    for name in [
        "v1_child_error_http500",
        "v2_child_error_http500",
        "codex-0.171/v1_child_error_http500",
        "codex-0.171/v2_child_error_http500",
    ] {
        let (recorder, _) = record_rollouts(name);
        let input = std::fs::read(capture(name).join("server.jsonl")).unwrap_or_default();
        let live = record(&input).0.state().view();
        let (run_status, agents) = endings(&recorder.state().view());
        let failed: Vec<(String, Option<String>)> = agents.values().filter(|(status, _)| status != "completed").cloned().collect();
        assert_eq!(
            (run_status.as_str(), agents.clone(), failed),
            (
                "done",
                endings(&live).1,
                vec![(
                    "failed".to_owned(),
                    Some("We\u{2019}re currently experiencing high demand, which may cause temporary errors.".to_owned())
                )]
            ),
            "{name}"
        );
    }
}
