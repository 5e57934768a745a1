//! The reader: v2 and legacy lines, unknown events kept, bad lines skipped
//! and counted with the rest of the file intact.

use std::io::{self, BufReader, Cursor, Read};

use agentrace_core::{Actor, Envelope, Event, EventBody, RunId, Timestamp};
use agentrace_store::{read_log, LogReader, SkippedLine, StoreError, LEGACY_ACTOR_REASON};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::all::support::{line_of, log_file, record, TestResult, SESSION};

const LEGACY_TEXT: &str =
    r#"{"timestamp":"2026-05-11T10:00:00.000Z","event":{"type":"text","content":"hello"}}"#;
const LEGACY_DONE: &str = r#"{"timestamp":1778493600250,"event":{"type":"done","result":"ok"}}"#;

/// The envelope a legacy line reads as.
fn legacy(line: &str, sequence: u64, run_id: &str, millis: i64, event: EventBody) -> Envelope {
    Envelope {
        version: 1,
        timestamp: Timestamp::from_millis(millis),
        sequence,
        run_id: RunId::from(run_id),
        direction: None,
        actor: Actor::unknown(LEGACY_ACTOR_REASON),
        event,
        raw: RawValue::from_string(line.to_owned()).ok().map(Into::into),
        raw_ref: None,
        raw_unavailable: None,
    }
}

fn read_bytes(bytes: &[u8]) -> Result<(Vec<Envelope>, Vec<SkippedLine>), StoreError> {
    let mut reader = LogReader::new(Cursor::new(bytes.to_vec()));
    let envelopes = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok((envelopes, reader.into_skipped()))
}

fn skipped(line_number: u64, reason: &str) -> SkippedLine {
    SkippedLine {
        line_number,
        reason: reason.to_owned(),
    }
}

#[test]
fn legacy_lines_read_as_actor_unknown_with_their_line_number_as_sequence() -> TestResult {
    let (_directory, path) = log_file(
        "old-run.jsonl",
        format!("{LEGACY_TEXT}\n{LEGACY_DONE}\n").as_bytes(),
    )?;

    let (read, skipped) = read_log(&path)?;

    let text = EventBody::Foreign(json!({"type": "text", "content": "hello"}));
    let done = EventBody::Known(Event::Done {
        result: Some(String::from("ok")),
        source_thread_id: None,
        source_role: None,
        source_item_id: None,
    });
    assert_eq!(
        read,
        vec![
            legacy(LEGACY_TEXT, 1, "old-run", 1_778_493_600_000, text),
            legacy(LEGACY_DONE, 2, "old-run", 1_778_493_600_250, done),
        ]
    );
    assert_eq!(skipped, vec![]);
    Ok(())
}

#[test]
fn legacy_lines_get_the_run_id_the_reader_is_given_or_legacy() -> TestResult {
    let bytes = format!("{LEGACY_TEXT}\n");

    let given = LogReader::new(Cursor::new(bytes.clone()))
        .with_run_id(RunId::from("mine"))
        .collect::<Result<Vec<_>, _>>()?;
    let default = LogReader::new(Cursor::new(bytes)).collect::<Result<Vec<_>, _>>()?;

    assert_eq!(given[0].run_id, RunId::from("mine"));
    assert_eq!(default[0].run_id, RunId::from("legacy"));
    Ok(())
}

#[test]
fn a_legacy_line_with_an_unreadable_timestamp_is_skipped_and_counted() -> TestResult {
    let bytes = format!("{{\"timestamp\":\"yesterday\",\"event\":{{}}}}\n{LEGACY_TEXT}\n");

    let (read, skipped) = read_bytes(bytes.as_bytes())?;

    assert_eq!(read.len(), 1);
    assert_eq!(read[0].sequence, 2);
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].line_number, 1);
    assert!(
        skipped[0]
            .reason
            .starts_with("legacy line with an unreadable timestamp"),
        "{skipped:?}"
    );
    Ok(())
}

#[test]
fn legacy_and_v2_lines_mix_in_one_file() -> TestResult {
    let (_, envelopes) = record("mixed", SESSION);
    let mut bytes = format!("{LEGACY_TEXT}\n").into_bytes();
    for envelope in &envelopes {
        bytes.extend(line_of(envelope)?);
    }
    bytes.extend(format!("{LEGACY_DONE}\n").as_bytes());
    let (_directory, path) = log_file("mixed.jsonl", &bytes)?;

    let (read, skipped) = read_log(&path)?;

    let text = EventBody::Foreign(json!({"type": "text", "content": "hello"}));
    let last_line = envelopes.len() as u64 + 2;
    let mut expected = vec![legacy(LEGACY_TEXT, 1, "mixed", 1_778_493_600_000, text)];
    expected.extend(envelopes);
    assert_eq!(read.len(), expected.len() + 1);
    assert_eq!(read[..expected.len()], expected[..]);
    assert_eq!(read[expected.len()].sequence, last_line);
    assert!(read[expected.len()].actor.is_unknown());
    assert_eq!(skipped, vec![]);
    Ok(())
}

#[test]
fn an_unknown_event_type_is_kept_as_foreign() -> TestResult {
    let (_, envelopes) = record("run-a", SESSION);
    let mut line: Value = serde_json::to_value(&envelopes[1])?;
    let future = json!({"type": "agent_teleported", "threadId": "t-root", "to": {"x": 1}});
    line["event"] = future.clone();

    let (read, skipped) = read_bytes(format!("{line}\n").as_bytes())?;

    let mut expected = envelopes[1].clone();
    expected.event = EventBody::Foreign(future);
    assert_eq!(read, vec![expected]);
    assert_eq!(read[0].event.type_name(), "agent_teleported");
    assert_eq!(skipped, vec![]);
    Ok(())
}

#[test]
fn an_invalid_utf8_line_and_a_garbage_line_are_counted_and_the_rest_is_intact() -> TestResult {
    let (_, envelopes) = record("run-a", SESSION);
    let mut bytes = line_of(&envelopes[0])?;
    bytes.extend(b"{\"version\":2,\"text\":\"\xff\xfe\"}\n");
    bytes.extend(b"this is not json at all\n");
    for envelope in &envelopes[1..] {
        bytes.extend(line_of(envelope)?);
    }

    let (read, skipped) = read_bytes(&bytes)?;

    assert_eq!(read, envelopes);
    assert_eq!(
        skipped,
        vec![
            skipped_line(2, "invalid UTF-8 at byte 21"),
            skipped_line(3, "invalid JSON: expected ident at line 1 column 2"),
        ]
    );
    Ok(())
}

fn skipped_line(line_number: u64, reason: &str) -> SkippedLine {
    skipped(line_number, reason)
}

#[test]
fn a_torn_last_line_is_skipped_and_counted() -> TestResult {
    let (_, envelopes) = record("run-a", SESSION);
    let mut bytes = Vec::new();
    for envelope in &envelopes[..3] {
        bytes.extend(line_of(envelope)?);
    }
    let last = serde_json::to_vec(&envelopes[3])?;
    bytes.extend(&last[..last.len() - 10]);

    let (read, skipped) = read_bytes(&bytes)?;

    assert_eq!(read, envelopes[..3]);
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].line_number, 4);
    assert!(
        skipped[0]
            .reason
            .starts_with("torn last line (no newline at end of file): invalid JSON"),
        "{skipped:?}"
    );
    Ok(())
}

#[test]
fn a_last_line_without_its_newline_that_parses_is_kept() -> TestResult {
    let (_, envelopes) = record("run-a", SESSION);
    let mut bytes = line_of(&envelopes[0])?;
    bytes.extend(serde_json::to_vec(&envelopes[1])?);

    let (read, skipped) = read_bytes(&bytes)?;

    assert_eq!(read, envelopes[..2]);
    assert_eq!(skipped, vec![]);
    Ok(())
}

#[test]
fn blank_lines_are_skipped_without_being_counted_but_keep_line_numbers() -> TestResult {
    let (_, envelopes) = record("run-a", SESSION);
    let mut bytes = line_of(&envelopes[0])?;
    bytes.extend(b"\n   \t\n\r\n");
    bytes.extend(b"oops\n");
    bytes.extend(line_of(&envelopes[1])?);

    let mut reader = LogReader::new(Cursor::new(bytes));
    let read = reader.by_ref().collect::<Result<Vec<_>, _>>()?;

    assert_eq!(read, envelopes[..2]);
    assert_eq!(reader.skipped().len(), 1);
    assert_eq!(reader.skipped()[0].line_number, 5);
    assert_eq!(reader.lines_read(), 6);
    Ok(())
}

#[test]
fn crlf_line_endings_read_the_same() -> TestResult {
    let (_, envelopes) = record("run-a", SESSION);
    let mut bytes = Vec::new();
    for envelope in &envelopes {
        bytes.extend(serde_json::to_vec(envelope)?);
        bytes.extend(b"\r\n");
    }

    let (read, skipped) = read_bytes(&bytes)?;

    assert_eq!(read, envelopes);
    assert_eq!(skipped, vec![]);
    Ok(())
}

#[test]
fn json_that_is_not_a_log_line_is_skipped_with_a_reason() -> TestResult {
    let bytes = concat!(
        "[1, 2]\n",
        "42\n",
        "{\"hello\": 1}\n",
        "{\"version\": 3, \"anything\": true}\n",
        "{\"version\": \"two\"}\n",
        "{\"version\": 2, \"sequence\": \"one\"}\n",
        "{\"timestamp\": \"2026-05-11T10:00:00Z\"}\n",
    );

    let (read, skipped) = read_bytes(bytes.as_bytes())?;

    assert_eq!(read, vec![]);
    let reasons: Vec<(u64, &str)> = skipped
        .iter()
        .map(|line| {
            (
                line.line_number,
                line.reason.split(':').next().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            (1, "not a log line"),
            (2, "not a log line"),
            (3, "not a log line"),
            (
                4,
                "unsupported log version 3 (this build reads version 2 and legacy lines)"
            ),
            (
                5,
                "unsupported log version \"two\" (this build reads version 2 and legacy lines)"
            ),
            (6, "invalid v2 envelope"),
            (7, "not a log line"),
        ]
    );
    Ok(())
}

#[test]
fn a_very_long_line_is_read_whole() -> TestResult {
    let text = "x".repeat(3 * 1024 * 1024);
    let frame = json!({
        "method": "item/completed",
        "params": {
            "item": {"type": "agentMessage", "id": "m", "text": text, "phase": "final_answer"},
            "threadId": "t-root",
            "turnId": "turn-1",
        },
    })
    .to_string();
    let (_, envelopes) = record("run-a", &[SESSION[0], SESSION[1], &frame]);
    let mut bytes = Vec::new();
    for envelope in &envelopes {
        bytes.extend(line_of(envelope)?);
    }

    let (read, skipped) = read_bytes(&bytes)?;

    assert!(bytes.len() > 3 * 1024 * 1024);
    assert_eq!(read, envelopes);
    assert_eq!(skipped, vec![]);
    Ok(())
}

#[test]
fn a_line_over_the_limit_is_skipped_and_counted() -> TestResult {
    let long = format!("{{\"timestamp\":0,\"event\":\"{}\"}}\n", "y".repeat(10_000));
    let bytes = format!("{long}{LEGACY_TEXT}\n");

    let mut reader =
        LogReader::new(BufReader::with_capacity(64, Cursor::new(bytes))).with_max_line_bytes(1_000);
    let read = reader.by_ref().collect::<Result<Vec<_>, _>>()?;

    assert_eq!(read.len(), 1);
    assert_eq!(read[0].sequence, 2);
    assert_eq!(
        reader.skipped(),
        [skipped(1, "line too long: 10026 bytes, the limit is 1000")]
    );
    Ok(())
}

/// Serves its bytes, then fails every read.
struct FailingAfter {
    bytes: Cursor<Vec<u8>>,
}

impl Read for FailingAfter {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        match self.bytes.read(buffer)? {
            0 => Err(io::Error::other("the disk is on fire")),
            read => Ok(read),
        }
    }
}

#[test]
fn an_io_error_names_the_line_and_ends_the_reader() -> TestResult {
    let (_, envelopes) = record("run-a", SESSION);
    let bytes = line_of(&envelopes[0])?;
    let mut reader = LogReader::new(BufReader::new(FailingAfter {
        bytes: Cursor::new(bytes),
    }));

    let first = reader.next().ok_or("no first envelope")??;
    let error = reader.next().ok_or("no error")?.err().ok_or("no error")?;

    assert_eq!(first, envelopes[0]);
    assert!(
        matches!(error, StoreError::Read { line: 2, .. }),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "cannot read run log <stream> at line 2");
    assert!(reader.next().is_none());
    Ok(())
}

#[test]
fn read_log_of_a_missing_file_names_it() -> TestResult {
    let directory = tempfile::tempdir()?;
    let path = directory.path().join("nope.jsonl");

    let error = read_log(&path).err().ok_or("read a missing file")?;

    let message = error.to_string();
    assert!(message.starts_with("cannot open run log "), "{message}");
    assert!(message.ends_with("nope.jsonl"), "{message}");
    assert!(std::error::Error::source(&error).is_some());
    Ok(())
}

#[test]
fn a_frame_that_was_json_null_keeps_its_raw() -> TestResult {
    let (_, envelopes) = record("run-a", &["null"]);
    let with_null_raw = envelopes
        .iter()
        .find(|envelope| envelope.raw.as_ref().map(|raw| raw.get()) == Some("null"))
        .ok_or("the recorder kept no `null` frame")?;

    let (read, _) = read_bytes(&line_of(with_null_raw)?)?;

    assert_eq!(read, vec![with_null_raw.clone()]);
    Ok(())
}
