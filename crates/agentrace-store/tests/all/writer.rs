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
    ))?.into());
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

/// A clock the test steps by hand.
fn stepped_clock() -> (
    std::sync::Arc<std::sync::Mutex<std::time::Instant>>,
    agentrace_store::WriterClock,
) {
    let now = std::sync::Arc::new(std::sync::Mutex::new(std::time::Instant::now()));
    let read = std::sync::Arc::clone(&now);
    let clock = agentrace_store::WriterClock::from_fn(move || {
        *read.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    });
    (now, clock)
}

fn step(now: &std::sync::Mutex<std::time::Instant>, millis: u64) {
    let mut now = now.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    *now += std::time::Duration::from_millis(millis);
}

#[test]
fn many_queued_envelopes_go_out_in_one_write_and_are_acknowledged_only_then() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let lines: Vec<&str> = SESSION.iter().copied().cycle().take(600).collect();
    let (_, envelopes) = record("run-a", &lines);
    let (_now, clock) = stepped_clock();
    let mut writer = home.create_run(&run_id("run-a"))?.with_clock(clock);

    for envelope in &envelopes {
        writer.queue(std::slice::from_ref(envelope))?;
    }
    let before = (writer.writes(), writer.acknowledged(), writer.queued());
    let on_disk_before = fs::metadata(home.log_path(&run_id("run-a")))?.len();
    writer.flush()?;
    let after = (writer.writes(), writer.acknowledged(), writer.queued());

    assert_eq!(before, (0, 0, envelopes.len()));
    assert_eq!(on_disk_before, 0);
    assert_eq!(after, (1, envelopes.len() as u64, 0));
    let (read, skipped) = read_log(&home.log_path(&run_id("run-a")))?;
    assert_eq!((read, skipped), (envelopes, vec![]));
    Ok(())
}

#[test]
fn a_full_batch_is_written_without_a_flush() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let lines: Vec<&str> = SESSION.iter().copied().cycle().take(30).collect();
    let (_, envelopes) = record("run-a", &lines);
    let (_now, clock) = stepped_clock();
    let policy = agentrace_store::BatchPolicy {
        max_envelopes: 10,
        ..agentrace_store::BatchPolicy::default()
    };
    let mut writer = home
        .create_run(&run_id("run-a"))?
        .with_clock(clock)
        .with_policy(policy);

    for envelope in &envelopes[..25] {
        writer.queue(std::slice::from_ref(envelope))?;
    }

    assert_eq!((writer.writes(), writer.acknowledged(), writer.queued()), (2, 20, 5));
    Ok(())
}

#[test]
fn a_batch_older_than_the_delay_is_written_by_the_next_tick() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (recorder, envelopes) = record("run-a", SESSION);
    let (now, clock) = stepped_clock();
    let mut writer = home.create_run(&run_id("run-a"))?.with_clock(clock);
    let status = recorder.state().status();
    writer.queue(&envelopes[..1])?;
    writer.tick(status, || recorder.state().summary())?;
    writer.queue(&envelopes[1..])?;

    let young = writer.tick(status, || recorder.state().summary())?;
    let queued_young = writer.queued();
    step(&now, 5);
    let old = writer.tick(status, || recorder.state().summary())?;

    assert_eq!((young.wrote, queued_young), (false, envelopes.len() - 1));
    assert_eq!((old.wrote, writer.queued()), (true, 0));
    Ok(())
}

#[test]
fn the_live_record_is_rewritten_at_most_every_250_ms_and_the_log_synced_at_most_once_a_second(
) -> TestResult {
    use agentrace_core::model::RunStatus;
    let (_directory, home) = temporary_home()?;
    let lines: Vec<&str> = SESSION.iter().copied().cycle().take(60).collect();
    let (recorder, envelopes) = record("run-a", &lines);
    let summary = || recorder.state().summary();
    let (now, clock) = stepped_clock();
    let mut writer = home.create_run(&run_id("run-a"))?.with_clock(clock);
    let mut ticks = Vec::new();
    // (ms to step, status this tick): an envelope is queued before each.
    let plan = [
        (0, RunStatus::Running),
        (100, RunStatus::Running),
        (100, RunStatus::Done),
        (49, RunStatus::Done),
        (1, RunStatus::Done),
        (100, RunStatus::Running),
        (300, RunStatus::Running),
        (100, RunStatus::Running),
        (250, RunStatus::Running),
        (100, RunStatus::Running),
    ];
    for (index, (millis, status)) in plan.into_iter().enumerate() {
        step(&now, millis);
        writer.queue(&envelopes[index..=index])?;
        let ticked = writer.tick(status, summary)?;
        ticks.push((ticked.record, ticked.synced));
    }

    // t=0 first status: record and sync; t=200 status change inside the
    // window: held; t=250 it closes: written; t=350 change held, t=650
    // written; t=1000 sync due again (last at 0); t=1000 record due.
    assert_eq!(
        ticks,
        vec![
            (true, true),
            (false, false),
            (false, false),
            (false, false),
            (true, false),
            (false, false),
            (true, false),
            (false, false),
            (true, true),
            (false, false),
        ]
    );
    Ok(())
}

/// A log that is synced has the disk start writing it every
/// `WRITEBACK_EVERY_BYTES` as it grows, so its sync at the end has little
/// left to wait for; an import's log, never synced, is left to the kernel.
/// Either way the log reads back as written.
#[test]
fn a_synced_log_has_the_disk_start_writing_it_as_it_grows_and_an_unsynced_one_does_not() -> TestResult {
    let (_directory, home) = temporary_home()?;
    // About 256 KiB a line: 100 lines are 25 MiB, three times the step.
    let text = "x".repeat(256 * 1024);
    let line = format!(r#"{{"jsonrpc":"2.0","method":"note/big","params":{{"text":"{text}"}}}}"#);
    let lines: Vec<&str> = std::iter::repeat_n(line.as_str(), 100).collect();
    let mut counts = Vec::new();
    for (id, synced) in [("run-synced", true), ("run-unsynced", false)] {
        let (_, envelopes) = record(id, &lines);
        let mut writer = home.create_run(&run_id(id))?;
        if synced {
            writer.sync()?;
        }
        let mut at_each_sync = Vec::new();
        for (index, chunk) in envelopes.chunks(4).enumerate() {
            writer.append(chunk)?;
            // Synced again half way (52 lines, 13 MiB): what it wrote is
            // then on the disk, and the count starts again from there.
            if synced && index == 12 {
                at_each_sync.push(writer.writebacks());
                writer.sync()?;
            }
        }
        at_each_sync.push(writer.writebacks());
        let log = fs::metadata(home.log_path(&run_id(id)))?.len();
        let (read, skipped) = read_log(&home.log_path(&run_id(id)))?;
        assert_eq!((read, skipped), (envelopes, vec![]), "{id}");
        counts.push((id, log / agentrace_store::WRITEBACK_EVERY_BYTES, at_each_sync));
    }

    // 25 MiB in all: 13 before the sync half way (one start, at 8 MiB)
    // and 12 after it (one more, at 21: not three, as from the start). The
    // unsynced log: none.
    assert_eq!(counts, vec![("run-synced", 3, vec![1, 2]), ("run-unsynced", 3, vec![0])]);
    Ok(())
}
