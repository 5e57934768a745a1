//! Secrets in stored frames (§10): redacted by default in `raw`, in the
//! events and in the exact bytes of undecodable lines; kept on request;
//! frames without secrets stay byte-exact.

use agentrace_core::model::{Event, EventBody, RunId, Timestamp};
use agentrace_core::recorder::Format;
use agentrace_core::redact::{redact_text, REDACTED};
use agentrace_core::{InputLine, Recorder};
use base64::Engine as _;

const KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";

fn record(line: &[u8], keep: bool) -> Vec<agentrace_core::Envelope> {
    let mut recorder =
        Recorder::new(RunId::from("run-test"), Format::CodexAppServer).keep_secrets(keep);
    let mut envelopes = recorder.start(Timestamp::from_millis(0));
    envelopes.extend(recorder.push(&InputLine {
        bytes: line,
        line_number: 1,
        observed_at: Timestamp::from_millis(0),
        direction: None,
        truncated_from: None,
    }));
    envelopes
}

fn message_frame(text: &str) -> Vec<u8> {
    serde_json::to_vec(
        &serde_json::json!({"method":"item/completed","params":{"threadId":"t","turnId":"u",
        "item":{"type":"agentMessage","id":"m","text":text,"phase":null}}}),
    )
    .unwrap_or_default()
}

#[test]
fn keys_tokens_and_key_assignments_are_redacted_in_text() {
    let text = format!("use {KEY} with Authorization: Bearer abc.def-ghi_jkl and ANTHROPIC_API_KEY=sk-ant-xyz123 now; sk-learn stays");
    assert_eq!(
        redact_text(&text),
        "use [REDACTED] with Authorization: Bearer [REDACTED] and ANTHROPIC_API_KEY=[REDACTED] now; sk-learn stays"
    );
}

#[test]
fn a_bearer_token_in_any_case_is_redacted_without_another_secret_beside_it() {
    assert_eq!(
        redact_text("header bEaReR abcdefgh1234 and BEARER zz"),
        "header bEaReR [REDACTED] and BEARER zz"
    );
}

#[test]
fn secrets_between_many_near_misses_are_all_redacted() {
    let text = format!("task-a task-b {KEY} bearer x Bearer abcdefgh12 API_KEY= task-c X_API_KEY=v sk-short");
    assert_eq!(
        redact_text(&text),
        "task-a task-b [REDACTED] bearer x Bearer [REDACTED] API_KEY= task-c X_API_KEY=[REDACTED] sk-short"
    );
}

#[test]
fn a_stored_frame_and_its_event_hold_no_key_and_stay_valid_json() {
    let text =
        format!("line one\nexport OPENAI_API_KEY={KEY}\ncurl -H 'Authorization: Bearer {KEY}'");
    let envelopes = record(&message_frame(&text), false);
    let last = envelopes.last().unwrap_or_else(|| panic!("no envelope"));
    let raw = last
        .raw
        .as_ref()
        .map(|raw| raw.get().to_owned())
        .unwrap_or_default();
    let raw: serde_json::Value =
        serde_json::from_str(&raw).unwrap_or_else(|e| panic!("raw is not JSON: {e}"));
    let expected = format!(
        "line one\nexport OPENAI_API_KEY={REDACTED}\ncurl -H 'Authorization: Bearer {REDACTED}'"
    );
    let event_text = match &last.event {
        EventBody::Known(Event::Message { text, .. }) => text.clone(),
        other => panic!("not a message: {other:?}"),
    };
    assert_eq!(
        (
            raw["params"]["item"]["text"].as_str().unwrap_or_default(),
            event_text.as_str()
        ),
        (expected.as_str(), expected.as_str())
    );
}

#[test]
fn keep_secrets_stores_the_frame_exactly_as_read() {
    let frame = message_frame(&format!("key {KEY}"));
    let envelopes = record(&frame, true);
    let raw = envelopes
        .last()
        .and_then(|e| e.raw.as_ref())
        .map(|raw| raw.get().as_bytes().to_vec());
    assert_eq!(raw, Some(frame));
}

#[test]
fn a_frame_without_secrets_stays_byte_exact() {
    let frame = br#"{"method":"item/completed" ,  "params":{"threadId":"t","turnId":"u","item":{"type":"agentMessage","id":"m","text":"task-sk-1 Bearer","phase":null}}}"#;
    let envelopes = record(frame, false);
    let raw = envelopes
        .last()
        .and_then(|e| e.raw.as_ref())
        .map(|raw| raw.get().as_bytes().to_vec());
    assert_eq!(raw, Some(frame.to_vec()));
}

#[test]
fn an_undecodable_line_is_redacted_in_its_text_and_in_its_exact_bytes() {
    let mut line = b"not json \xff ".to_vec();
    line.extend_from_slice(KEY.as_bytes());
    let envelopes = record(&line, false);
    let last = envelopes.last().unwrap_or_else(|| panic!("no envelope"));
    let raw: String = last
        .raw
        .as_ref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    let bytes = match &last.event {
        EventBody::Known(Event::Unknown {
            raw_base64: Some(encoded),
            ..
        }) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap_or_default(),
        other => panic!("not an undecodable line: {other:?}"),
    };
    assert_eq!(
        (raw, bytes),
        (
            "not json \u{fffd} [REDACTED]".to_owned(),
            b"not json \xff [REDACTED]".to_vec()
        )
    );
}
