//! The leaner v3 line on disk: what a v3 writer writes reads back as the v2
//! envelopes it was given, from the start or resumed at any point (a
//! snapshot, a fold following the log, a writer continuing it); a log may
//! hold v2 lines, then v3; a line naming an undefined index is a counted
//! skip; a torn definition at the tail loses only the tail.

use std::collections::HashSet;
use std::fs;
use std::sync::OnceLock;

use agentrace_core::model::RawRef;
use agentrace_core::{Envelope, InputLine, Recorder, RunId, Timestamp};
use agentrace_store::{read_log, Home, RunFold, SkippedLine};
use proptest::prelude::*;

use crate::all::fold::{claude_captures, full_fold, value_of};
use crate::all::home::codex_captures;
use crate::all::support::{record, record_bytes, run_id, temporary_home, Fallible, TestResult, SESSION, T0};

/// Every capture's envelopes as a recorder gives them, as run `name`, each
/// frame given a reference into one of three sources and half of them
/// without their `raw` (as an import writes them: references in place of
/// copies).
fn captured_runs() -> &'static [(String, Vec<Envelope>)] {
    static RUNS: OnceLock<Vec<(String, Vec<Envelope>)>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let mut runs = Vec::new();
        for (name, bytes) in codex_captures().unwrap_or_else(|error| panic!("{error}")) {
            let lines: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()).collect();
            runs.push((name.clone(), referenced(record_bytes(&name, T0, &lines).1)));
        }
        for (name, format, bytes) in claude_captures().unwrap_or_else(|error| panic!("{error}")) {
            let mut recorder = Recorder::new(run_id(&name), format);
            let mut envelopes = recorder.start(Timestamp::from_millis(T0));
            for (index, line) in bytes.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()).enumerate() {
                envelopes.extend(recorder.push(&InputLine {
                    bytes: line,
                    line_number: index as u64 + 1,
                    observed_at: Timestamp::from_millis(T0),
                    direction: None,
                    truncated_from: None,
                }));
            }
            envelopes.extend(recorder.finish());
            runs.push((name, referenced(envelopes)));
        }
        runs
    })
}

/// `envelopes` with references, as [`captured_runs`] describes.
fn referenced(mut envelopes: Vec<Envelope>) -> Vec<Envelope> {
    for envelope in &mut envelopes {
        if let Some(raw) = &envelope.raw {
            envelope.raw_ref = Some(RawRef {
                // As long as a real rollout's absolute path.
                path: format!(
                    "/home/dev/.codex/sessions/2026/11/29/rollout-2026-11-29T23-05-40-01a2298e-0000-7000-8000-00000000000{}.jsonl",
                    envelope.sequence % 3
                ),
                offset: envelope.sequence * 1000,
                length: raw.get().len() as u64,
                crc32: envelope.sequence as u32,
            });
            if envelope.sequence % 2 == 0 {
                envelope.raw = None;
            }
        }
    }
    envelopes
}

/// The log's lines that are definitions.
fn definition_lines(home: &Home, id: &RunId) -> Fallible<Vec<String>> {
    Ok(fs::read_to_string(home.log_path(id))?
        .lines()
        .filter(|line| line.starts_with(r#"{"v":3,"define":"#))
        .map(str::to_owned)
        .collect())
}

/// How many distinct actors and source paths `envelopes` name.
fn distinct_values(envelopes: &[Envelope]) -> usize {
    let actors: HashSet<_> = envelopes.iter().map(|envelope| envelope.actor.clone()).collect();
    let paths: HashSet<_> = envelopes.iter().filter_map(|envelope| envelope.raw_ref.as_ref().map(|reference| reference.path.clone())).collect();
    actors.len() + paths.len()
}

/// What one property case found, compared whole with what it should be.
#[derive(Debug, PartialEq)]
struct Found {
    /// Read from the start.
    read: Vec<Envelope>,
    skipped: Vec<SkippedLine>,
    /// Handed out, as written, by a fold following the log as it grew.
    followed: Vec<Envelope>,
    /// The fold resumed from the snapshot taken at the first cut, then
    /// following the rest, equals the fold of the whole log.
    snapshot_resumed_equals_full: bool,
    /// The fold that followed the log as it grew equals it too.
    following_equals_full: bool,
    /// Every line is a v3 line or a definition.
    every_line_v3: bool,
    /// Each value was defined once, across the writer that continued.
    definitions: usize,
}

/// Writes `envelopes` as v3 lines in three parts cut at `cuts`: the first
/// by a new writer (snapshot saved after it), the rest by a writer that
/// continues the log; a fold follows the log after each part.
fn write_in_parts(name: &str, envelopes: &[Envelope], cuts: (usize, usize)) -> Fallible<Found> {
    let (_directory, home) = temporary_home()?;
    let id = run_id(name);
    let (first, second) = (cuts.0.min(cuts.1), cuts.0.max(cuts.1));
    let mut following = RunFold::new(id.clone());
    let mut followed = Vec::new();
    let mut follow = |following: &mut RunFold| -> Fallible<()> {
        following.follow_each(&home.log_path(&id), |envelope, _, _| followed.push(envelope.clone()))?;
        Ok(())
    };
    let mut writer = home.create_run(&id)?.with_lean_lines();
    writer.append(&envelopes[..first])?;
    writer.save_snapshot()?;
    drop(writer);
    follow(&mut following)?;
    let mut writer = home.append_run(&id)?.with_lean_lines();
    writer.append(&envelopes[first..second])?;
    drop(writer);
    follow(&mut following)?;
    let mut writer = home.append_run(&id)?.with_lean_lines();
    writer.append(&envelopes[second..])?;
    drop(writer);
    follow(&mut following)?;

    let mut resumed = RunFold::load_snapshot(&home.snapshot_path(&id), &home.log_path(&id), &id, &home.prices())?;
    resumed.follow(&home.log_path(&id), |_| {})?;
    let full = value_of(&full_fold(&home, &id)?)?;
    let (read, skipped) = read_log(&home.log_path(&id))?;
    let text = fs::read_to_string(home.log_path(&id))?;
    Ok(Found {
        read,
        skipped,
        followed,
        snapshot_resumed_equals_full: value_of(&resumed)? == full,
        following_equals_full: value_of(&following)? == full,
        every_line_v3: text.lines().all(|line| line.starts_with(r#"{"v":3,"#)),
        definitions: definition_lines(&home, &id)?.len(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_capture_written_as_v3_lines_in_any_parts_reads_back_as_the_recorders_envelopes(
        pick in any::<prop::sample::Index>(),
        cuts in (0.0_f64..=1.0, 0.0_f64..=1.0),
    ) {
        let runs = captured_runs();
        let (name, envelopes) = &runs[pick.index(runs.len())];
        let at = |fraction: f64| (fraction * envelopes.len() as f64) as usize;
        let found = write_in_parts(name, envelopes, (at(cuts.0), at(cuts.1)))
            .map_err(|error| TestCaseError::fail(format!("{name}: {error}")))?;
        prop_assert_eq!(found, Found {
            read: envelopes.clone(),
            skipped: vec![],
            followed: envelopes.clone(),
            snapshot_resumed_equals_full: true,
            following_equals_full: true,
            every_line_v3: true,
            definitions: distinct_values(envelopes),
        }, "{}", name);
    }
}

#[test]
fn every_capture_imported_as_v3_lines_takes_under_55_percent_of_its_v2_bytes() -> TestResult {
    let (_v2_directory, v2_home) = temporary_home()?;
    let (_v3_directory, v3_home) = temporary_home()?;
    let (mut v2, mut v3) = (0, 0);
    for (name, envelopes) in captured_runs() {
        // As an import writes them: a reference in place of every frame.
        let envelopes: Vec<Envelope> = envelopes
            .iter()
            .cloned()
            .map(|mut envelope| {
                if envelope.raw_ref.is_some() {
                    envelope.raw = None;
                }
                envelope
            })
            .collect();
        let envelopes = &envelopes;
        let id = run_id(name);
        v2_home.create_run(&id)?.append(envelopes)?;
        v3_home.create_run(&id)?.with_lean_lines().append(envelopes)?;
        v2 += fs::metadata(v2_home.log_path(&id))?.len();
        v3 += fs::metadata(v3_home.log_path(&id))?.len();
    }
    assert!(100 * v3 < 55 * v2, "v3 {v3} bytes, v2 {v2} bytes");
    Ok(())
}

#[test]
fn a_log_of_v2_lines_continued_in_v3_reads_whole() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_v2_directory, v2_home) = temporary_home()?;
    let id = run_id("mixed");
    let envelopes = record("mixed", SESSION).1;
    let half = envelopes.len() / 2;
    home.create_run(&id)?.append(&envelopes[..half])?;
    home.append_run(&id)?.with_lean_lines().append(&envelopes[half..])?;
    v2_home.create_run(&id)?.append(&envelopes)?;

    let text = fs::read_to_string(home.log_path(&id))?;
    let kinds: Vec<&str> = text
        .lines()
        .map(|line| match line {
            _ if line.starts_with(r#"{"version":2,"#) => "v2",
            _ if line.starts_with(r#"{"v":3,"define":"#) => "definition",
            _ => "v3",
        })
        .collect();
    // The second half is all the root's: the v2 lines define nothing, so
    // the v3 part defines its actor once, before its first line.
    let mut expected = vec!["v2"; half];
    expected.push("definition");
    expected.extend(vec!["v3"; envelopes.len() - half]);

    assert_eq!(
        (kinds, read_log(&home.log_path(&id))?, serde_json::to_value(full_fold(&home, &id)?.book())?),
        (expected, (envelopes, vec![]), serde_json::to_value(full_fold(&v2_home, &id)?.book())?)
    );
    Ok(())
}

#[test]
fn a_v3_line_naming_an_undefined_actor_or_path_or_a_redefined_index_is_a_counted_skip() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("undefined");
    let envelopes = record("undefined", SESSION).1;
    home.create_run(&id)?.with_lean_lines().append(&envelopes)?;
    let mut text = fs::read_to_string(home.log_path(&id))?;
    let lines_before = text.lines().count() as u64;
    text.push_str(concat!(
        r#"{"v":3,"timestamp":"2026-11-29T23:03:28.475Z","sequence":90,"actor":7,"event":{"type":"notice","method":"x","message":null}}"#, "\n",
        r#"{"v":3,"timestamp":"2026-11-29T23:03:28.475Z","sequence":91,"actor":0,"event":{"type":"notice","method":"x","message":null},"rawRef":[4,0,1,2]}"#, "\n",
        r#"{"v":3,"define":"actor","index":0,"actor":{"threadId":null,"role":"root","label":"Other","confidence":"provider"}}"#, "\n",
        r#"{"v":3,"define":"model","index":0,"model":"m"}"#, "\n",
        r#"{"v":4,"timestamp":"2026-11-29T23:03:28.475Z"}"#, "\n",
    ));
    fs::write(home.log_path(&id), &text)?;
    let skipped = |offset: u64, reason: &str| SkippedLine { line_number: lines_before + offset, reason: reason.to_owned() };

    assert_eq!(
        read_log(&home.log_path(&id))?,
        (
            envelopes,
            vec![
                skipped(1, "v3 line names actor 7, which no definition before it gives"),
                skipped(2, "v3 line names path 4, which no definition before it gives"),
                skipped(3, "actor 0 defined again as something else"),
                skipped(4, "v3 definition of an unknown kind `model`"),
                skipped(5, "unsupported log line format v 4 (this build reads v 3, version 2 and legacy lines)"),
            ]
        )
    );
    assert_eq!(full_fold(&home, &id)?.skipped(), 5);
    Ok(())
}

#[test]
fn a_torn_definition_at_the_tail_loses_only_the_tail_and_a_writer_continuing_defines_again() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("torn");
    let envelopes = record("torn", SESSION).1;
    let half = envelopes.len() / 2;
    home.create_run(&id)?.with_lean_lines().append(&envelopes[..half])?;
    let mut log = fs::OpenOptions::new().append(true).open(home.log_path(&id))?;
    std::io::Write::write_all(&mut log, br#"{"v":3,"define":"actor","index":9,"actor":{"threadId":"t-ro"#)?;
    drop(log);
    let torn_line = fs::read_to_string(home.log_path(&id))?.lines().count() as u64;

    let torn_read = read_log(&home.log_path(&id))?;
    let mut following = RunFold::new(id.clone());
    let followed_torn = following.follow(&home.log_path(&id), |_| {})?;
    home.append_run(&id)?.with_lean_lines().append(&envelopes[half..])?;
    let (read, skipped) = read_log(&home.log_path(&id))?;

    assert_eq!(
        (torn_read.0, torn_read.1.len(), followed_torn.skipped, read, skipped.iter().map(|line| line.line_number).collect::<Vec<_>>()),
        (envelopes[..half].to_vec(), 1, vec![], envelopes.clone(), vec![torn_line])
    );
    assert_eq!(definition_lines(&home, &id)?.len(), distinct_values(&envelopes) + 1);
    Ok(())
}

#[test]
fn a_refused_call_forgets_the_actors_and_paths_it_defined_and_the_next_defines_them_again() -> TestResult {
    // The encoder remembers the actor and path it encoded last; a call cut
    // back (here by a sequence out of place after them) must forget them
    // with their definitions, or the next line would name an undefined one.
    let (_directory, home) = temporary_home()?;
    let id = run_id("refused");
    let envelopes = referenced(record("refused", SESSION).1);
    let first_new_actor = (1..envelopes.len())
        .find(|index| envelopes[..*index].iter().all(|earlier| earlier.actor != envelopes[*index].actor))
        .unwrap_or_else(|| panic!("a second actor"));
    let mut writer = home.create_run(&id)?.with_lean_lines();
    writer.append(&envelopes[..first_new_actor])?;
    let mut out_of_place = envelopes[first_new_actor + 1].clone();
    out_of_place.sequence += 1;
    let refused = [envelopes[first_new_actor].clone(), out_of_place];
    assert!(writer.append(&refused).is_err());
    writer.append(&envelopes[first_new_actor..])?;
    drop(writer);

    let (read, skipped) = read_log(&home.log_path(&id))?;
    assert_eq!((read, skipped.len()), (envelopes.clone(), 0));
    assert_eq!(definition_lines(&home, &id)?.len(), distinct_values(&envelopes));
    Ok(())
}
