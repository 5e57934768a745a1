//! A `codex exec --json` stream (`fixtures/codex-exec/v2_parallel`, a real
//! Codex 0.171 capture) with its session's rollouts joined, as
//! `agentrace run codex --exec` and `ingest --format codex-exec` record it:
//! every helper from its rollout alone (`derived`), each thread's tokens
//! those of the rollouts read alone, the root's answer from the stream, and
//! nothing of the root's own rollout counted twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentrace_core::model::{Confidence, Event, EventBody, RunId, Timestamp};
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_core::state::{AgentNode, RunState};
use agentrace_core::{Envelope, InputLine, Recorder};
use serde_json::Value;

fn capture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex-exec/v2_parallel")
}

/// The rollouts, the root's first, then by spawn depth and name.
fn rollouts() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![capture().join("codex-home/sessions")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    let depth = |path: &PathBuf| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let first: Value =
            serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap_or_default();
        first["payload"]["source"]["subagent"]["thread_spawn"]["depth"]
            .as_u64()
            .unwrap_or(0)
    };
    files.sort_by_key(|path| (depth(path), path.clone()));
    files
}

fn feed(recorder: &mut Recorder, part: &SourcePart, path: &Path, out: &mut Vec<Envelope>) {
    feed_at(recorder, part, path, out, &|_| Timestamp::from_millis(0));
}

/// [`feed`], each line stamped with `stamp(its index)` as the shell
/// stamps a line whose frame carries no time.
fn feed_at(
    recorder: &mut Recorder,
    part: &SourcePart,
    path: &Path,
    out: &mut Vec<Envelope>,
    stamp: &dyn Fn(usize) -> Timestamp,
) {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for (index, line) in text.split(|byte| *byte == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        out.extend(recorder.push_part(
            part,
            &InputLine {
                bytes: line,
                line_number: index as u64 + 1,
                observed_at: stamp(index),
                direction: None,
                truncated_from: None,
            },
        ));
    }
}

fn record(format: Format, stream: bool) -> (Recorder, Vec<Envelope>) {
    record_stamped(format, stream, &|_| Timestamp::from_millis(0))
}

/// [`record`], the stream's lines stamped by `stamp`.
fn record_stamped(
    format: Format,
    stream: bool,
    stamp: &dyn Fn(usize) -> Timestamp,
) -> (Recorder, Vec<Envelope>) {
    let mut recorder = Recorder::new(RunId::from("run-test"), format);
    let mut envelopes = recorder.start(Timestamp::from_millis(0));
    if stream {
        feed_at(
            &mut recorder,
            &SourcePart::Main,
            &capture().join("exec.jsonl"),
            &mut envelopes,
            stamp,
        );
    }
    for (number, path) in rollouts().iter().enumerate() {
        feed(
            &mut recorder,
            &SourcePart::File {
                number: number as u32,
            },
            path,
            &mut envelopes,
        );
    }
    envelopes.extend(recorder.finish());
    (recorder, envelopes)
}

/// An agent as compared: label, derived or not, total tokens, final message.
type Row = (String, bool, Option<u64>, Option<String>);

/// Each agent's [`Row`], by thread.
fn agents(nodes: &[AgentNode], out: &mut BTreeMap<String, Row>) {
    for node in nodes {
        out.insert(
            node.thread_id.to_string(),
            (
                node.label.clone(),
                node.confidence == Some(Confidence::Derived),
                node.tokens.map(|tokens| tokens.total_tokens),
                node.final_message.clone(),
            ),
        );
        agents(&node.children, out);
    }
}

#[test]
fn every_helper_comes_from_its_rollout_with_the_tokens_the_rollouts_alone_give() {
    let (joined, envelopes) = record(Format::CodexExec, true);
    let (alone, _) = record(Format::CodexRollout, false);
    let (view, rollout_view) = (joined.state().view(), alone.state().view());
    let mut got = BTreeMap::new();
    agents(&view.agents, &mut got);
    let mut expected = BTreeMap::new();
    agents(&rollout_view.agents, &mut expected);
    // The same tree, tokens and final messages as the rollouts read alone;
    // only the helpers are derived.
    for (thread, row) in &mut expected {
        row.1 = Some(thread.as_str())
            != rollout_view
                .run
                .root_thread_id
                .as_ref()
                .map(|root| root.as_str());
    }
    assert_eq!(got, expected);
    assert_eq!(got.values().filter(|row| row.1).count(), 2);
    assert_eq!(
        (view.run.status, view.run.result.as_deref(), view.run.tokens),
        (
            rollout_view.run.status,
            rollout_view.run.result.as_deref(),
            rollout_view.run.tokens
        )
    );
    // One answer, the stream's; one of each root message.
    let done: Vec<&Envelope> = envelopes
        .iter()
        .filter(|envelope| matches!(envelope.event, EventBody::Known(Event::Done { .. })))
        .collect();
    assert_eq!(done.len(), 1);
    assert!(done[0].raw.is_none() && done[0].actor.confidence == Confidence::Provider);
    let root_messages = envelopes
        .iter()
        .filter(|envelope| envelope.actor.thread_id == view.run.root_thread_id)
        .filter(|envelope| matches!(&envelope.event, EventBody::Known(Event::Message { role, .. }) if role == "assistant"))
        .count();
    assert_eq!(root_messages, 1);
    // Every line of every file is in exactly one envelope's frame.
    let lines: usize = std::iter::once(capture().join("exec.jsonl"))
        .chain(rollouts())
        .map(|path| {
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .count()
        })
        .sum();
    assert_eq!(
        envelopes
            .iter()
            .filter(|envelope| envelope.raw.is_some())
            .count(),
        lines
    );
    // The log folds back to the recorder's state.
    let mut replayed = RunState::new(RunId::from("run-test"));
    for envelope in &envelopes {
        replayed.apply(envelope);
    }
    assert_eq!(replayed.view(), view);
}

/// A saved stream carries no time (each line stamped alike, here 0): its
/// answer was given at that stamp and the run ended the moment it began.
/// Its one answer is now given when the root's rollout ended the turn
/// (01:18:13.301Z), in place of that rollout line's notice. A stream read
/// live is stamped as it comes (here from 01:18:12.800Z, 10 ms a line):
/// its answer keeps the time it came, right after its `turn.completed`.
#[test]
fn a_saved_streams_answer_is_dated_by_the_roots_rollout_and_a_live_streams_keeps_its_time() {
    let answers = |stamp: &dyn Fn(usize) -> Timestamp| {
        let (recorder, envelopes) = record_stamped(Format::CodexExec, true, stamp);
        let done: Vec<(u64, String)> = envelopes
            .iter()
            .filter(|envelope| matches!(envelope.event, EventBody::Known(Event::Done { .. })))
            .map(|envelope| (envelope.sequence, envelope.timestamp.to_string()))
            .collect();
        let run = recorder.state().view().run;
        (done, run.ended_at.map(|at| at.to_string()), run.counts.events)
    };
    let live_start = 1_796_174_292_800;
    assert_eq!(
        (
            answers(&|_| Timestamp::from_millis(0)),
            answers(&|index| Timestamp::from_millis(live_start + 10 * index as i64)),
        ),
        (
            (
                vec![(52, "2026-12-02T01:18:13.301Z".to_owned())],
                Some("2026-12-02T01:18:13.301Z".to_owned()),
                118,
            ),
            (
                vec![(11, "2026-12-02T01:18:12.880Z".to_owned())],
                Some("2026-12-02T01:18:12.880Z".to_owned()),
                119,
            ),
        )
    );
}
