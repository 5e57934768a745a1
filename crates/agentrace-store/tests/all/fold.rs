//! The fold of a log and its snapshot: a writer's snapshot equals the fold
//! of the log read back; a snapshot of a log that grew is resumed and only
//! the tail is folded; a missing, unreadable, foreign or outdated snapshot
//! is refused (the reader folds from the start).

use std::fs;
use std::io::Write as _;
use std::path::Path;

use agentrace_core::recorder::Format;
use agentrace_core::{Envelope, InputLine, Recorder, RunId, Timestamp};
use agentrace_store::{Home, RunFold, SnapshotMiss, SNAPSHOT_EVERY_BYTES, SNAPSHOT_MIN_BYTES};
use serde_json::Value;

use crate::all::home::codex_captures;
use crate::all::support::{
    record, record_bytes, run_id, temporary_home, Fallible, TestResult, SESSION, T0,
};

/// The whole fold as a value (the reducers have no `PartialEq` of their
/// own, and this compares every field).
pub fn value_of(fold: &RunFold) -> Fallible<Value> {
    Ok(serde_json::to_value(fold)?)
}

/// The fold of the whole log, read from its start.
pub fn full_fold(home: &Home, id: &RunId) -> Fallible<RunFold> {
    let mut fold = RunFold::new(id.clone());
    fold.follow(&home.log_path(id), |_| {})?;
    Ok(fold)
}

/// The snapshot of run `id`, or why it was refused.
fn load(home: &Home, id: &RunId) -> Result<RunFold, SnapshotMiss> {
    RunFold::load_snapshot(&home.snapshot_path(id), &home.log_path(id), id, &home.prices())
}

/// A capture's envelopes, recorded as run `name`.
fn capture_envelopes(name: &str, bytes: &[u8]) -> Vec<Envelope> {
    let lines: Vec<&[u8]> = bytes
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .collect();
    record_bytes(name, T0, &lines).1
}

/// Run `id` with SESSION written and its snapshot saved.
fn snapshotted_session(home: &Home, id: &str) -> TestResult {
    let mut writer = home.create_run(&run_id(id))?;
    writer.append(&record(id, SESSION).1)?;
    writer.save_snapshot()?;
    Ok(())
}

#[test]
fn a_writers_snapshot_of_every_capture_equals_the_fold_of_its_log() -> TestResult {
    let captures = codex_captures()?;
    assert!(!captures.is_empty(), "no captures in fixtures/codex");
    let (_directory, home) = temporary_home()?;
    for (name, bytes) in captures {
        let id = run_id(&name);
        let mut writer = home.create_run(&id)?;
        writer.append(&capture_envelopes(&name, &bytes))?;
        writer.save_snapshot()?;

        let snapshot = load(&home, &id).map_err(|miss| format!("{name}: {miss}"))?;

        assert_eq!(
            value_of(&snapshot)?,
            value_of(&full_fold(&home, &id)?)?,
            "{name}"
        );
    }
    Ok(())
}

#[test]
fn a_writer_lent_the_recorders_book_writes_the_log_record_and_snapshot_a_writer_folding_its_own_does() -> TestResult {
    let captures = codex_captures()?;
    assert!(!captures.is_empty(), "no captures in fixtures/codex");
    let (_directory, home) = temporary_home()?;
    for (name, bytes) in captures {
        // Ids of one length, so the logs line up byte for byte.
        let own_id = run_id(&format!("{name}-self"));
        let lent_id = run_id(&format!("{name}-lent"));
        let lines: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()).collect();
        // The same input through two recorders: one keeps only the state
        // (its writer folds the rest), one keeps the whole book and lends it.
        let mut own_recorder = Recorder::new(own_id.clone(), Format::CodexAppServer);
        let mut lent_recorder = Recorder::new(lent_id.clone(), Format::CodexAppServer).with_whole_book();
        let mut own = home.create_run(&own_id)?;
        let mut lent = home.create_run(&lent_id)?.with_book_lent();
        own.append(&own_recorder.start(Timestamp::from_millis(T0)))?;
        lent.append(&lent_recorder.start(Timestamp::from_millis(T0)))?;
        for (index, line) in lines.iter().enumerate() {
            let input = InputLine {
                bytes: line,
                line_number: index as u64 + 1,
                observed_at: Timestamp::from_millis(T0),
                direction: None,
                truncated_from: None,
            };
            own.append(&own_recorder.push(&input))?;
            lent.append(&lent_recorder.push(&input))?;
        }
        own.append(&own_recorder.finish())?;
        lent.append(&lent_recorder.finish())?;
        own.sync()?;
        lent.sync()?;
        let own_summary = own_recorder.state().summary();
        let lent_summary = lent_recorder.state().summary();
        own.write_record(&own_summary)?;
        let written = lent.write_record_with(&lent_summary, lent_recorder.book())?;
        own.save_snapshot()?;
        lent.save_snapshot_with_book(lent_recorder.book())?;

        // The same but for the run id, which each line names.
        let renamed = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).replace(lent_id.as_str(), own_id.as_str());
        assert_eq!(
            renamed(fs::read(home.log_path(&lent_id))?),
            renamed(fs::read(home.log_path(&own_id))?),
            "{name}: log"
        );
        assert_eq!(
            renamed(fs::read(home.record_path(&lent_id))?),
            renamed(fs::read(home.record_path(&own_id))?),
            "{name}: record"
        );
        assert_eq!(written, own.checked(&lent_summary), "{name}: the summary written");
        // Checked with its tree: the same summary, and the tree the
        // recorder's state gives; a writer folding its own book gives none.
        assert_eq!(
            lent.checked_with_agents(&lent_summary, lent_recorder.book()),
            (written.clone(), Some(lent_recorder.state().agents())),
            "{name}: checked with the agents"
        );
        assert_eq!(own.checked_with_agents(&own_summary, own_recorder.book()), (own.checked(&own_summary), None), "{name}: own book");
        let snapshot = |id: &RunId| -> Fallible<Value> {
            let fold = load(&home, id).map_err(|miss| format!("{name}: {miss}"))?;
            Ok(serde_json::from_str(&renamed(serde_json::to_vec(&fold)?))?)
        };
        assert_eq!(snapshot(&lent_id)?, snapshot(&own_id)?, "{name}: snapshot");
        assert_eq!(value_of(&load(&home, &lent_id).map_err(|miss| format!("{name}: {miss}"))?)?, value_of(&full_fold(&home, &lent_id)?)?, "{name}: snapshot and log");
    }
    Ok(())
}

#[test]
fn a_writer_never_snapshots_a_lent_book_that_is_ahead_of_the_lines_written() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("ahead");
    let mut recorder = Recorder::new(id.clone(), Format::CodexAppServer).with_whole_book();
    let mut writer = home.create_run(&id)?.with_book_lent();
    let mut envelopes = recorder.start(Timestamp::from_millis(T0));
    for (index, line) in SESSION.iter().enumerate() {
        envelopes.extend(recorder.push(&InputLine {
            bytes: line.as_bytes(),
            line_number: index as u64 + 1,
            observed_at: Timestamp::from_millis(T0),
            direction: None,
            truncated_from: None,
        }));
    }
    // The book has folded every envelope; the log has all but the last.
    writer.append(&envelopes[..envelopes.len() - 1])?;

    let refused = writer
        .save_snapshot_with_book(recorder.book())
        .map_err(|error| (error.to_string(), std::error::Error::source(&error).map(ToString::to_string)));
    writer.append(&envelopes[envelopes.len() - 1..])?;
    writer.save_snapshot_with_book(recorder.book())?;

    assert_eq!(
        refused,
        Err((
            format!("cannot snapshot {}", home.snapshot_path(&id).display()),
            Some(String::from("the book lent is not of the lines written"))
        ))
    );
    assert_eq!(value_of(&load(&home, &id).map_err(|miss| miss.to_string())?)?, value_of(&full_fold(&home, &id)?)?);
    Ok(())
}

/// Every Claude capture's `stream.jsonl` and `hooks.jsonl` as `(name, format, bytes)`.
pub fn claude_captures() -> Fallible<Vec<(String, Format, Vec<u8>)>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/claude");
    let mut captures = Vec::new();
    for entry in fs::read_dir(&root)? {
        let directory = entry?.path();
        let name = directory
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        for (file, format) in [
            ("stream.jsonl", Format::ClaudeStream),
            ("hooks.jsonl", Format::ClaudeHook),
        ] {
            let path = directory.join(file);
            if path.is_file() {
                captures.push((format!("{name}-{format:?}"), format, fs::read(path)?));
            }
        }
    }
    captures.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(captures)
}

#[test]
fn a_writers_snapshot_of_every_claude_capture_equals_the_fold_of_its_log() -> TestResult {
    let captures = claude_captures()?;
    assert!(!captures.is_empty(), "no captures in fixtures/claude");
    let (_directory, home) = temporary_home()?;
    for (name, format, bytes) in captures {
        let id = run_id(&name);
        let mut recorder = Recorder::new(id.clone(), format);
        let mut writer = home.create_run(&id)?;
        writer.append(&recorder.start(Timestamp::from_millis(T0)))?;
        for (index, line) in bytes
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.is_empty())
            .enumerate()
        {
            writer.append(&recorder.push(&InputLine {
                bytes: line,
                line_number: index as u64 + 1,
                observed_at: Timestamp::from_millis(T0),
                direction: None,
                truncated_from: None,
            }))?;
        }
        writer.append(&recorder.finish())?;
        writer.save_snapshot()?;

        let snapshot = load(&home, &id).map_err(|miss| format!("{name}: {miss}"))?;

        // More than the start and the end: the capture's frames were folded.
        assert_eq!(
            (
                snapshot.state().summary().counts.events > 2,
                value_of(&snapshot)?
            ),
            (true, value_of(&full_fold(&home, &id)?)?),
            "{name}"
        );
    }
    Ok(())
}

#[test]
fn a_snapshot_of_a_log_that_grew_is_resumed_and_the_tail_folded_equals_a_full_fold() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let name = "v1_parallel";
    let bytes = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex/v1_parallel/server.jsonl"),
    )?;
    let envelopes = capture_envelopes(name, &bytes);
    let id = run_id(name);
    let half = envelopes.len() / 2;
    let mut writer = home.create_run(&id)?;
    writer.append(&envelopes[..half])?;
    writer.save_snapshot()?;
    let covered = fs::metadata(home.log_path(&id))?.len();
    writer.append(&envelopes[half..])?;

    let mut resumed = load(&home, &id)?;
    let resumed_at = resumed.offset();
    let followed = resumed.follow(&home.log_path(&id), |_| {})?;

    assert_eq!(
        (resumed_at, followed.envelopes, value_of(&resumed)?),
        (
            covered,
            (envelopes.len() - half) as u64,
            value_of(&full_fold(&home, &id)?)?
        )
    );
    Ok(())
}

#[test]
fn a_run_without_a_snapshot_is_a_miss() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let mut writer = home.create_run(&run_id("run-a"))?;
    writer.append(&record("run-a", SESSION).1)?;

    assert_eq!(
        load(&home, &run_id("run-a")).err(),
        Some(SnapshotMiss::Missing)
    );
    Ok(())
}

#[test]
fn a_snapshot_of_a_log_rewritten_since_is_refused() -> TestResult {
    let (_directory, home) = temporary_home()?;
    snapshotted_session(&home, "run-a")?;
    let path = home.log_path(&run_id("run-a"));
    let mut bytes = fs::read(&path)?;
    let last_letter = bytes
        .iter()
        .rposition(u8::is_ascii_lowercase)
        .ok_or("no letter in the log")?;
    bytes[last_letter] = bytes[last_letter].to_ascii_uppercase();
    fs::write(&path, bytes)?;

    assert_eq!(
        load(&home, &run_id("run-a")).err(),
        Some(SnapshotMiss::LogChanged)
    );
    Ok(())
}

#[test]
fn a_snapshot_longer_than_its_log_is_refused() -> TestResult {
    let (_directory, home) = temporary_home()?;
    snapshotted_session(&home, "run-a")?;
    let path = home.log_path(&run_id("run-a"));
    let bytes = fs::read(&path)?;
    fs::write(&path, &bytes[..bytes.len() / 2])?;

    assert_eq!(
        load(&home, &run_id("run-a")).err(),
        Some(SnapshotMiss::LogShorter)
    );
    Ok(())
}

#[test]
fn a_snapshot_of_another_format_version_is_refused() -> TestResult {
    let (_directory, home) = temporary_home()?;
    snapshotted_session(&home, "run-a")?;
    let path = home.snapshot_path(&run_id("run-a"));
    let mut snapshot: Value = serde_json::from_slice(&fs::read(&path)?)?;
    snapshot["version"] = Value::from(0);
    fs::write(&path, serde_json::to_vec(&snapshot)?)?;

    assert_eq!(
        load(&home, &run_id("run-a")).err(),
        Some(SnapshotMiss::OtherBuild)
    );
    Ok(())
}

#[test]
fn a_snapshot_read_for_another_run_is_refused() -> TestResult {
    let (_directory, home) = temporary_home()?;
    snapshotted_session(&home, "run-a")?;
    let id = run_id("run-a");

    let refused = RunFold::load_snapshot(
        &home.snapshot_path(&id),
        &home.log_path(&id),
        &run_id("run-b"),
        &home.prices(),
    );

    assert_eq!(refused.err(), Some(SnapshotMiss::OtherRun));
    Ok(())
}

#[test]
fn a_torn_snapshot_is_refused_as_unreadable() -> TestResult {
    let (_directory, home) = temporary_home()?;
    snapshotted_session(&home, "run-a")?;
    let path = home.snapshot_path(&run_id("run-a"));
    let bytes = fs::read(&path)?;
    fs::write(&path, &bytes[..bytes.len() / 2])?;

    let refused = load(&home, &run_id("run-a")).err();

    assert!(
        matches!(refused, Some(SnapshotMiss::Unreadable(_))),
        "{refused:?}"
    );
    Ok(())
}

#[test]
fn creating_a_run_again_removes_the_snapshot_of_its_earlier_log() -> TestResult {
    let (_directory, home) = temporary_home()?;
    snapshotted_session(&home, "run-a")?;
    fs::remove_file(home.log_path(&run_id("run-a")))?;

    home.create_run(&run_id("run-a"))?;

    assert!(!home.snapshot_path(&run_id("run-a")).exists());
    Ok(())
}

#[test]
fn continuing_a_run_resumes_its_snapshot_and_keeps_folding_what_it_appends() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("run-a");
    let envelopes = record("run-a", SESSION).1;
    let mut writer = home.create_run(&id)?;
    writer.append(&envelopes[..3])?;
    writer.save_snapshot()?;
    drop(writer);

    let mut writer = home.append_run(&id)?;
    assert_eq!(writer.next_sequence(), 4);
    writer.append(&envelopes[3..])?;
    writer.save_snapshot()?;

    assert_eq!(
        value_of(&load(&home, &id)?)?,
        value_of(&full_fold(&home, &id)?)?
    );
    Ok(())
}

#[test]
fn continuing_a_run_whose_last_line_was_torn_snapshots_the_skipped_line() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("run-a");
    let envelopes = record("run-a", SESSION).1;
    let mut writer = home.create_run(&id)?;
    writer.append(&envelopes[..3])?;
    drop(writer);
    fs::OpenOptions::new()
        .append(true)
        .open(home.log_path(&id))?
        .write_all(b"{\"version\":2,\"torn")?;

    let mut writer = home.append_run(&id)?;
    writer.append(&envelopes[3..])?;
    writer.save_snapshot()?;
    let snapshot = load(&home, &id)?;

    assert_eq!(
        (snapshot.skipped(), value_of(&snapshot)?),
        (1, value_of(&full_fold(&home, &id)?)?)
    );
    Ok(())
}

/// Appends SESSION-like envelopes to a writer until the log passes `bytes`.
fn grow(writer: &mut agentrace_store::RunWriter, id: &str, bytes: u64) -> TestResult {
    let (_, template) = record(id, SESSION);
    let message = template
        .iter()
        .find(|envelope| {
            serde_json::to_string(&envelope.event).is_ok_and(|text| text.contains("All done"))
        })
        .ok_or("no message in SESSION")?
        .clone();
    while fs::metadata(writer.log_path())?.len() < bytes {
        let mut batch = Vec::new();
        for _ in 0..100 {
            let mut envelope = message.clone();
            envelope.sequence = writer.next_sequence() + batch.len() as u64;
            batch.push(envelope);
        }
        writer.append(&batch)?;
    }
    Ok(())
}

#[test]
fn a_short_log_gets_no_snapshot_with_its_record_and_a_long_one_does() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (recorder, envelopes) = record("short", SESSION);
    let mut short = home.create_run(&run_id("short"))?;
    short.append(&envelopes)?;
    short.write_record(&recorder.state().summary())?;
    let mut long = home.create_run(&run_id("long"))?;
    let (recorder, envelopes) = record("long", SESSION);
    long.append(&envelopes)?;
    grow(&mut long, "long", SNAPSHOT_MIN_BYTES)?;
    long.write_record(&recorder.state().summary())?;

    assert_eq!(
        (
            load(&home, &run_id("short")).err(),
            load(&home, &run_id("long"))?.offset(),
        ),
        (
            Some(SnapshotMiss::Missing),
            fs::metadata(home.log_path(&run_id("long")))?.len()
        )
    );
    Ok(())
}

#[test]
fn a_growing_log_is_snapshotted_without_a_record_every_few_mebibytes() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("long");
    let mut writer = home.create_run(&id)?;
    writer.append(&record("long", SESSION).1)?;
    grow(&mut writer, "long", SNAPSHOT_EVERY_BYTES + 1)?;

    let snapshot = load(&home, &id)?;

    assert!(
        snapshot.offset() >= SNAPSHOT_EVERY_BYTES,
        "snapshot at {} bytes",
        snapshot.offset()
    );
    assert_eq!(
        value_of(&snapshot)?,
        value_of(&{
            let mut fold = RunFold::new(id.clone());
            // The fold of the same prefix: snapshots cover whole lines only.
            let prefix = home.log_path(&id).with_extension("prefix");
            let bytes = fs::read(home.log_path(&id))?;
            fs::write(&prefix, &bytes[..snapshot.offset() as usize])?;
            fold.follow(&prefix, |_| {})?;
            fold
        })?
    );
    Ok(())
}

#[test]
fn continuing_a_long_run_whose_snapshot_is_behind_brings_it_up_to_date_with_the_record(
) -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("long");
    let (recorder, envelopes) = record("long", SESSION);
    let mut writer = home.create_run(&id)?;
    writer.append(&envelopes)?;
    grow(&mut writer, "long", SNAPSHOT_MIN_BYTES)?;
    writer.write_record(&recorder.state().summary())?;
    drop(writer);
    // A writer that appends and ends without a record leaves the snapshot behind.
    let mut behind = home.append_run(&id)?;
    grow(&mut behind, "long", SNAPSHOT_MIN_BYTES + 64 * 1024)?;
    drop(behind);
    let stale = load(&home, &id)?.offset();

    let continued = home.append_run(&id)?;
    continued.write_record(&recorder.state().summary())?;

    let length = fs::metadata(home.log_path(&id))?.len();
    assert_eq!((stale < length, load(&home, &id)?.offset()), (true, length));
    Ok(())
}

#[test]
fn the_waterfall_read_passing_over_undrawn_lines_equals_the_one_built_from_every_envelope() -> TestResult {
    let captures = codex_captures()?;
    let (_directory, home) = temporary_home()?;
    let mut drawn = 0;
    for (name, bytes) in captures {
        let id = run_id(&name);
        let mut writer = home.create_run(&id)?;
        writer.append(&capture_envelopes(&name, &bytes))?;
        let fold = full_fold(&home, &id)?;
        let agents = fold.checked_view(&Default::default(), None).0.agents;

        let mut builder = agentrace_core::waterfall::WaterfallBuilder::new();
        for envelope in agentrace_store::read_log(&home.log_path(&id))?.0 {
            let mut envelope = envelope;
            fold.finals().apply(&mut envelope);
            builder.push(&envelope);
        }
        let every = builder.finish(&agents);
        drawn += every.bars.len();

        assert_eq!(agentrace_store::waterfall_of(&fold, &home.log_path(&id), &agents)?, every, "{name}");
    }
    assert!(drawn > 0, "no capture has a bar");
    Ok(())
}

/// A snapshot's costs are those of the price book it was folded with: one
/// read with another (the home's price file added or changed) is refused,
/// and a home that prices with the same file takes it.
#[test]
fn a_snapshot_priced_by_another_price_book_is_refused() -> TestResult {
    let (directory, home) = temporary_home()?;
    snapshotted_session(&home, "run-a")?;
    let id = run_id("run-a");
    fs::write(directory.path().join(agentrace_store::PRICE_FILE), r#"{"mock-model": {"input": 1, "output": 2}}"#)?;
    let priced = home.clone().with_home_prices()?;
    let refused = RunFold::load_snapshot(&priced.snapshot_path(&id), &priced.log_path(&id), &id, &priced.prices());
    assert_eq!(refused.err(), Some(SnapshotMiss::OtherPrices));

    let writer = priced.append_run(&id)?;
    writer.save_snapshot()?;
    drop(writer);
    let taken = RunFold::load_snapshot(&priced.snapshot_path(&id), &priced.log_path(&id), &id, &priced.prices())?;
    assert_eq!(
        (taken.book().prices_id(), load(&home, &id).err()),
        (priced.prices().id(), Some(SnapshotMiss::OtherPrices))
    );
    Ok(())
}
