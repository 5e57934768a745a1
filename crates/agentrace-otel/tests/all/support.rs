//! Test support: record a fixture capture, outline a trace for people.

use std::fmt::Write as _;

use agentrace_core::lines::LineAssembler;
use agentrace_core::model::{Envelope, RunId, Timestamp};
use agentrace_core::recorder::Format;
use agentrace_core::state::{FinalActors, RunView};
use agentrace_core::{InputLine, RunState};
use agentrace_otel::spans::{AttributeValue, RunTrace};

/// A fixed observation time for frames that carry none.
pub const T0: i64 = 1_795_993_400_000;

/// The bytes of `fixtures/codex/<name>/server.jsonl`.
pub fn fixture(name: &str) -> Vec<u8> {
    fixture_in("codex", name)
}

/// The bytes of `fixtures/<folder>/<name>/server.jsonl` (`codex` holds the
/// 0.169 captures, `codex-0.171` the same scenarios with 0.171).
pub fn fixture_in(folder: &str, name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../fixtures/{folder}/{name}/server.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Records app-server stdout as the run `run_id`: envelopes with final
/// actors applied, as readers see them.
pub fn record(run_id: &str, input: &[u8]) -> Vec<Envelope> {
    let mut recorder = Recorder::new(run_id);
    let mut envelopes = recorder.inner.start(Timestamp::from_millis(T0));
    let mut assembler = LineAssembler::default();
    let mut lines = assembler.push(input);
    lines.extend(assembler.finish());
    let mut clock = Timestamp::from_millis(T0);
    for line in lines {
        if agentrace_core::decode::is_blank(&line.bytes) {
            continue;
        }
        let produced = recorder.inner.push(&InputLine {
            bytes: &line.bytes,
            line_number: line.line_number,
            observed_at: clock,
            direction: None,
            truncated_from: line.truncated_from,
        });
        if let Some(last) = produced.last() {
            clock = last.timestamp;
        }
        envelopes.extend(produced);
    }
    envelopes.extend(recorder.inner.finish());
    finalized(envelopes)
}

struct Recorder {
    inner: agentrace_core::Recorder,
}

impl Recorder {
    fn new(run_id: &str) -> Self {
        Self {
            inner: agentrace_core::Recorder::new(RunId::from(run_id), Format::CodexAppServer),
        }
    }
}

/// Corrections applied.
pub fn finalized(envelopes: Vec<Envelope>) -> Vec<Envelope> {
    let mut finals = FinalActors::default();
    for envelope in &envelopes {
        finals.observe(envelope);
    }
    envelopes
        .into_iter()
        .map(|mut envelope| {
            finals.apply(&mut envelope);
            envelope
        })
        .collect()
}

/// The view `show --json` prints for these envelopes.
pub fn view(run_id: &str, envelopes: &[Envelope]) -> RunView {
    let mut state = RunState::new(RunId::from(run_id));
    for envelope in envelopes {
        state.apply(envelope);
    }
    state.view()
}

/// One line per span, children indented under their parent in start order, with the
/// attributes named in `keys`.
pub fn outline(trace: &RunTrace, keys: &[&str]) -> String {
    let mut out = String::new();
    let roots: Vec<_> = trace
        .spans
        .iter()
        .filter(|span| span.parent_span_id.is_none())
        .collect();
    let mut stack: Vec<_> = roots.into_iter().rev().map(|span| (span, 0)).collect();
    while let Some((span, depth)) = stack.pop() {
        let _ = write!(out, "{}{}", "  ".repeat(depth), span.name);
        for key in keys {
            if let Some((_, value)) = span.attributes.iter().find(|(k, _)| k == key) {
                let text = match value {
                    AttributeValue::String(text) => text.clone(),
                    AttributeValue::Int(number) => number.to_string(),
                    AttributeValue::Bool(flag) => flag.to_string(),
                    AttributeValue::StringArray(items) => items.join("|"),
                };
                let _ = write!(out, " {key}={text}");
            }
        }
        out.push('\n');
        let mut children: Vec<_> = trace
            .spans
            .iter()
            .filter(|child| child.parent_span_id == Some(span.span_id))
            .collect();
        children.sort_by_key(|child| child.start_time_unix_nano);
        for child in children.into_iter().rev() {
            stack.push((child, depth + 1));
        }
    }
    out
}
