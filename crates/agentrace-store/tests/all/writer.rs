//! The writer: whole lines, checked sequences, continuing a log, the record.

use std::fs::{self, OpenOptions};
use std::io::Write as _;

use agentrace_core::RunId;
use agentrace_store::{read_log, StoreError};
use serde_json::value::RawValue;

use crate::all::support::{
    lines_of, record, run_id, temporary_home, write_run, TestResult, SESSION,
};

#[test]
fn envelopes_written_then_read_back_are_equal() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-a", SESSION);
    write_run(&home, &envelopes, "run-a")?;

    let (read, skipped) = read_log(&home.log_path(&run_id("run-a")))?;

    assert_eq!(read, envelopes);
    assert_eq!(skipped, vec![]);
    Ok(())
}

#[test]
fn a_new_log_starts_at_sequence_one_and_counts_on() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-a", SESSION);
    let mut writer = home.create_run(&run_id("run-a"))?;
    assert_eq!(writer.next_sequence(), 1);

    writer.append(&envelopes[..2])?;
    writer.append(&envelopes[2..])?;

    assert_eq!(writer.next_sequence(), envelopes.len() as u64 + 1);
    Ok(())
}

#[test]
fn each_envelope_is_exactly_one_line() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-a", SESSION);
    write_run(&home, &envelopes, "run-a")?;

    let lines = lines_of(&home.log_path(&run_id("run-a")))?;

    assert_eq!(lines.len(), envelopes.len());
    Ok(())
}

#[test]
fn a_raw_frame_with_line_breaks_is_still_written_as_one_line() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, mut envelopes) = record("run-a", &SESSION[..1]);
    envelopes[0].raw = Some(RawValue::from_string(String::from(
        "{\r\n  \"hook\": \"SubagentStart\",\n  \"text\": \"a\\nb\"\n}",
    ))?);
    write_run(&home, &envelopes, "run-a")?;

    let lines = lines_of(&home.log_path(&run_id("run-a")))?;
    let (read, skipped) = read_log(&home.log_path(&run_id("run-a")))?;

    assert_eq!(lines.len(), envelopes.len());
    assert_eq!(skipped, vec![]);
    let raw = read[0].raw.as_ref().map(|raw| raw.get());
    assert_eq!(
        raw,
        Some("{    \"hook\": \"SubagentStart\",   \"text\": \"a\\nb\" }")
    );
    Ok(())
}

#[test]
fn a_sequence_gap_is_refused_and_nothing_is_written() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-a", SESSION);
    let mut writer = home.create_run(&run_id("run-a"))?;
    let batch = vec![envelopes[0].clone(), envelopes[2].clone()];

    let error = writer.append(&batch).err().ok_or("a gap was accepted")?;

    assert!(
        matches!(
            error,
            StoreError::SequenceGap {
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(writer.next_sequence(), 1);
    assert_eq!(fs::read(home.log_path(&run_id("run-a")))?, b"");
    Ok(())
}

#[test]
fn a_repeated_sequence_is_refused() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-a", SESSION);
    let mut writer = home.create_run(&run_id("run-a"))?;
    writer.append(&envelopes[..2])?;

    let error = writer
        .append(&envelopes[1..2])
        .err()
        .ok_or("a repeat was accepted")?;

    assert!(
        matches!(
            error,
            StoreError::SequenceGap {
                expected: 3,
                found: 2,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("run-a.jsonl"), "{message}");
    Ok(())
}

#[test]
fn an_envelope_of_another_run_is_refused() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-b", SESSION);
    let mut writer = home.create_run(&run_id("run-a"))?;

    let error = writer
        .append(&envelopes)
        .err()
        .ok_or("another run was accepted")?;

    assert!(matches!(error, StoreError::WrongRun { .. }), "{error:?}");
    Ok(())
}

#[test]
fn creating_a_run_that_exists_fails_with_already_exists() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-a", SESSION);
    write_run(&home, &envelopes, "run-a")?;

    let error = home
        .create_run(&run_id("run-a"))
        .err()
        .ok_or("created twice")?;

    assert!(
        matches!(error, StoreError::AlreadyExists { .. }),
        "{error:?}"
    );
    let (read, _) = read_log(&home.log_path(&run_id("run-a")))?;
    assert_eq!(read, envelopes);
    Ok(())
}

#[test]
fn creating_a_run_with_an_unsafe_id_is_refused() -> TestResult {
    let (_directory, home) = temporary_home()?;

    let error = home
        .create_run(&RunId::from("../escape"))
        .err()
        .ok_or("created")?;

    assert!(
        matches!(error, StoreError::InvalidRunId { .. }),
        "{error:?}"
    );
    assert!(!home.root().join("escape.jsonl").exists());
    Ok(())
}

#[test]
fn append_run_continues_the_sequence() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-a", SESSION);
    write_run(&home, &envelopes[..3], "run-a")?;

    let mut writer = home.append_run(&run_id("run-a"))?;
    assert_eq!(writer.next_sequence(), 4);
    writer.append(&envelopes[3..])?;
    writer.sync()?;

    let (read, skipped) = read_log(&home.log_path(&run_id("run-a")))?;
    assert_eq!(read, envelopes);
    assert_eq!(skipped, vec![]);
    Ok(())
}

#[test]
fn append_run_after_a_torn_last_line_counts_it_and_reads_the_new_envelopes() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-a", SESSION);
    write_run(&home, &envelopes[..3], "run-a")?;
    let log = home.log_path(&run_id("run-a"));
    // A crash in the middle of writing envelope 4.
    let torn = serde_json::to_string(&envelopes[3])?;
    OpenOptions::new()
        .append(true)
        .open(&log)?
        .write_all(&torn.as_bytes()[..torn.len() / 2])?;

    let mut writer = home.append_run(&run_id("run-a"))?;
    assert_eq!(writer.next_sequence(), 4);
    writer.append(&envelopes[3..])?;
    writer.sync()?;

    let (read, skipped) = read_log(&log)?;
    assert_eq!(read, envelopes);
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].line_number, 4);
    assert!(
        skipped[0].reason.starts_with("invalid JSON"),
        "{:?}",
        skipped[0]
    );
    Ok(())
}

#[test]
fn append_run_of_an_empty_log_starts_at_one() -> TestResult {
    let (_directory, home) = temporary_home()?;
    drop(home.create_run(&run_id("run-a"))?);

    let writer = home.append_run(&run_id("run-a"))?;

    assert_eq!(writer.next_sequence(), 1);
    Ok(())
}

#[test]
fn append_run_of_a_missing_run_is_not_found() -> TestResult {
    let (_directory, home) = temporary_home()?;

    let error = home.append_run(&run_id("run-x")).err().ok_or("opened")?;

    assert!(matches!(error, StoreError::NotFound { .. }), "{error:?}");
    Ok(())
}

#[test]
fn the_record_is_replaced_atomically_and_read_back_by_list_runs() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (recorder, envelopes) = record("run-a", SESSION);
    let mut writer = home.create_run(&run_id("run-a"))?;
    writer.append(&envelopes[..1])?;
    writer.write_record(&recorder.state().summary())?;
    writer.append(&envelopes[1..])?;
    let mut summary = recorder.state().summary();
    // Something only the record says, to tell it from a fold of the log
    // (not its warnings: the writer counts those from its fold).
    summary.error = Some("said by the record only".to_owned());

    writer.write_record(&summary)?;

    let names: Vec<String> = fs::read_dir(home.runs_dir())?
        .map(|entry| entry.map(|entry| entry.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    let mut names = names;
    names.sort();
    assert_eq!(names, vec!["run-a.json", "run-a.jsonl"]);
    let on_disk: agentrace_core::state::RunSummary =
        serde_json::from_slice(&fs::read(home.record_path(&run_id("run-a")))?)?;
    assert_eq!(on_disk, summary);
    assert_eq!(home.list_runs()?, vec![summary]);
    Ok(())
}

#[test]
fn a_record_of_another_run_is_refused() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (recorder, _) = record("run-b", SESSION);
    let writer = home.create_run(&run_id("run-a"))?;

    let error = writer
        .write_record(&recorder.state().summary())
        .err()
        .ok_or("written")?;

    assert!(matches!(error, StoreError::WrongRun { .. }), "{error:?}");
    assert!(!home.record_path(&run_id("run-a")).exists());
    Ok(())
}
