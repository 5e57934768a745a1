//! Test support: feed lines to a recorder, read envelopes back.

use agentrace_core::lines::LineAssembler;
use agentrace_core::model::{Envelope, RunId, Timestamp};
use agentrace_core::recorder::Format;
use agentrace_core::state::FinalActors;
use agentrace_core::{InputLine, Recorder};

/// A fixed observation time for frames that carry none.
pub const T0: i64 = 1_795_993_400_000;

/// Records `input` (whole lines) as one run; returns the recorder and envelopes.
pub fn record(input: &[u8]) -> (Recorder, Vec<Envelope>) {
    record_chunks(&[input])
}

/// Records input given as arbitrary byte chunks.
pub fn record_chunks(chunks: &[&[u8]]) -> (Recorder, Vec<Envelope>) {
    let mut recorder = Recorder::new(RunId::from("run-test"), Format::CodexAppServer);
    let mut envelopes = recorder.start(Timestamp::from_millis(T0));
    let mut assembler = LineAssembler::default();
    let mut lines = Vec::new();
    for chunk in chunks {
        lines.extend(assembler.push(chunk));
    }
    lines.extend(assembler.finish());
    // As `agentrace ingest` does: a frame without a time of its own takes
    // the last time seen.
    let mut clock = Timestamp::from_millis(T0);
    for line in lines {
        if agentrace_core::decode::is_blank(&line.bytes) {
            continue;
        }
        let produced = recorder.push(&InputLine {
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
    envelopes.extend(recorder.finish());
    (recorder, envelopes)
}

/// Records Claude Code stdout (`stream-json` lines, each observed at
/// [`T0`]) as one run.
pub fn record_claude(bytes: &[u8]) -> Vec<Envelope> {
    let mut recorder = Recorder::new(RunId::from("run-test"), Format::ClaudeStream);
    let mut envelopes = recorder.start(Timestamp::from_millis(T0));
    for (index, line) in bytes.split(|byte| *byte == b'\n').enumerate() {
        if agentrace_core::decode::is_blank(line) {
            continue;
        }
        envelopes.extend(recorder.push(&InputLine {
            bytes: line,
            line_number: u64::try_from(index + 1).unwrap_or(0),
            observed_at: Timestamp::from_millis(T0),
            direction: None,
            truncated_from: None,
        }));
    }
    envelopes.extend(recorder.finish());
    envelopes
}

/// Envelopes with corrections applied, as readers see them.
pub fn finalized(envelopes: &[Envelope]) -> Vec<Envelope> {
    let mut finals = FinalActors::default();
    for envelope in envelopes {
        finals.observe(envelope);
    }
    envelopes
        .iter()
        .cloned()
        .map(|mut envelope| {
            finals.apply(&mut envelope);
            envelope
        })
        .collect()
}

/// Joins JSON lines.
pub fn lines(frames: &[serde_json::Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in frames {
        out.extend(serde_json::to_vec(frame).unwrap_or_default());
        out.push(b'\n');
    }
    out
}

/// The envelope as a build before `run_started.eventFacts` wrote it: the
/// same frame, without the facts events carry since (they were in `raw`
/// only).
pub fn as_legacy(envelope: &Envelope) -> Envelope {
    let mut value = serde_json::to_value(envelope).unwrap_or_default();
    if let Some(event) = value.get_mut("event").and_then(serde_json::Value::as_object_mut) {
        for key in [
            "eventFacts",
            "processId",
            "receiverThreadIds",
            "lastMessage",
            "unfinishedTurnIds",
            "activityKind",
            "agentThreadId",
        ] {
            event.remove(key);
        }
        let kind = event.get("type").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
        match kind.as_str() {
            "notice" => {
                event.remove("itemId");
            }
            "item_started" => {
                event.remove("description");
            }
            "item_completed" => {
                event.remove("status");
            }
            _ => {}
        }
    }
    serde_json::from_value(value).unwrap_or_else(|e| panic!("legacy envelope: {e}"))
}

/// The envelope with its frame left out, as an envelope that references its
/// source instead of carrying it.
pub fn without_raw(envelope: &Envelope) -> Envelope {
    Envelope {
        raw: None,
        ..envelope.clone()
    }
}
