//! Imported frames by reference: resolving a `rawRef` from its source and
//! from the kept copies, never failing.

use agentrace_core::model::{Envelope, RawUnavailable};
use agentrace_store::raw_ref::{reference, CopyWriter, Resolver};
use serde_json::json;

/// An envelope of run `r` referencing `raw_ref`, with no frame of its own.
fn referencing(sequence: u64, raw_ref: &agentrace_core::model::RawRef) -> Envelope {
    serde_json::from_value(json!({
        "version": 2, "timestamp": "2026-11-30T00:00:00.000Z", "sequence": sequence, "runId": "r",
        "actor": {"threadId": null, "role": "unknown", "label": "x", "confidence": "unknown"},
        "event": {"type": "notice", "message": "m"}, "rawRef": raw_ref,
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn frame(resolver: &mut Resolver, envelope: &Envelope) -> Result<Option<String>, RawUnavailable> {
    resolver.frame(envelope).map(|frame| frame.map(|frame| frame.get().to_owned()))
}

#[test]
fn a_reference_resolves_to_its_line_with_secrets_redacted_and_says_when_it_cannot() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let source = dir.path().join("source.jsonl");
    let lines = ["{\"a\":1}", "{\"key\":\"sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789\"}", "{\"b\":2}"];
    std::fs::write(&source, format!("{}\n", lines.join("\n"))).unwrap_or_else(|e| panic!("{e}"));
    let first = referencing(1, &reference(&source, 0, lines[0].as_bytes()));
    let second = referencing(2, &reference(&source, 8, lines[1].as_bytes()));
    let third_at = (lines[0].len() + lines[1].len() + 2) as u64;
    let third = referencing(3, &reference(&source, third_at, lines[2].as_bytes()));
    let log = dir.path().join("r.jsonl");
    let mut resolver = Resolver::for_log(&log);
    let secret = frame(&mut resolver, &second).unwrap_or_else(|why| panic!("{why:?}")).unwrap_or_default();
    assert_eq!(
        (frame(&mut resolver, &first), secret.contains("sk-ant-api03-abc"), frame(&mut resolver, &third)),
        (Ok(Some(lines[0].to_owned())), false, Ok(Some(lines[2].to_owned())))
    );
    // Edited in place, then gone.
    std::fs::write(&source, format!("{{\"a\":2}}\n{}\n", lines[1])).unwrap_or_else(|e| panic!("{e}"));
    let mut resolver = Resolver::for_log(&log);
    assert_eq!(
        (frame(&mut resolver, &first), frame(&mut resolver, &third)),
        (Err(RawUnavailable::SourceChanged), Err(RawUnavailable::SourceChanged))
    );
    std::fs::remove_file(&source).unwrap_or_else(|e| panic!("{e}"));
    let mut shown = first.clone();
    Resolver::for_log(&log).show(&mut shown);
    assert_eq!(
        (shown.raw.map(|raw| raw.get().to_owned()), shown.raw_unavailable),
        (Some("null".to_owned()), Some(RawUnavailable::SourceMissing))
    );
}

#[test]
fn kept_copies_are_read_first_in_any_order_and_only_for_their_own_reference() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let source = dir.path().join("gone.jsonl");
    let log = dir.path().join("r.jsonl");
    let kept = |sequence: u64, text: &str| {
        let mut envelope = referencing(sequence, &reference(&source, sequence * 100, text.as_bytes()));
        envelope.raw = serde_json::value::RawValue::from_string(text.to_owned()).ok().map(Into::into);
        envelope
    };
    // Two imports: the run written, then read on.
    let mut copies = CopyWriter::create(&log).unwrap_or_else(|e| panic!("{e}"));
    copies.keep(&[kept(1, "{\"n\":1}"), kept(3, "{\"n\":3}")]).unwrap_or_else(|e| panic!("{e}"));
    copies.finish().unwrap_or_else(|e| panic!("{e}"));
    let mut copies = CopyWriter::append(&log).unwrap_or_else(|e| panic!("{e}"));
    copies.keep(&[kept(5, "{\"n\":5}")]).unwrap_or_else(|e| panic!("{e}"));
    copies.finish().unwrap_or_else(|e| panic!("{e}"));
    let asked = |sequence: u64, text: &str| referencing(sequence, &reference(&source, sequence * 100, text.as_bytes()));
    let mut resolver = Resolver::for_log(&log);
    let found: Vec<Result<Option<String>, RawUnavailable>> = [
        asked(5, "{\"n\":5}"),
        asked(1, "{\"n\":1}"),
        asked(3, "{\"n\":9}"),
        asked(4, "{\"n\":4}"),
    ]
    .iter()
    .map(|envelope| frame(&mut resolver, envelope))
    .collect();
    assert_eq!(
        found,
        vec![
            Ok(Some("{\"n\":5}".to_owned())),
            Ok(Some("{\"n\":1}".to_owned())),
            Err(RawUnavailable::SourceMissing),
            Err(RawUnavailable::SourceMissing),
        ]
    );
}
