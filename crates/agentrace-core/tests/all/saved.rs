//! A recorder's reading kept as data (`Recorder::saved`) and restored in
//! another process (`Recorder::restored`) goes on exactly as the recorder
//! that read every line itself: every Codex rollout capture and every
//! Claude transcript capture, cut after each line (or evenly, for a long
//! one), the envelopes after the cut and the run at the end compared whole.

use std::path::PathBuf;

use agentrace_core::lines::LineAssembler;
use agentrace_core::model::{Envelope, RunId, Timestamp};
use agentrace_core::prices::PriceBook;
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_core::{InputLine, Recorder};

use super::support::T0;

/// One line of a session's files, in the order a reading feeds them.
struct Line {
    part: SourcePart,
    bytes: Vec<u8>,
    number: u64,
}

fn lines_of(parts: &[(SourcePart, PathBuf)]) -> Vec<Line> {
    let mut lines = Vec::new();
    for (part, path) in parts {
        let bytes = std::fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        if matches!(part, SourcePart::AgentMeta { .. }) {
            lines.push(Line { part: part.clone(), bytes, number: 1 });
            continue;
        }
        let mut assembler = LineAssembler::default();
        let mut assembled = assembler.push(&bytes);
        assembled.extend(assembler.finish());
        for line in assembled {
            if !agentrace_core::decode::is_blank(&line.bytes) {
                lines.push(Line { part: part.clone(), bytes: line.bytes, number: line.line_number });
            }
        }
    }
    lines
}

fn fed(recorder: &mut Recorder, lines: &[Line]) -> Vec<Envelope> {
    let mut envelopes = Vec::new();
    for line in lines {
        let input = InputLine { bytes: &line.bytes, line_number: line.number, observed_at: Timestamp::from_millis(T0), direction: None, truncated_from: None };
        envelopes.extend(recorder.push_part(&line.part, &input));
    }
    envelopes
}

fn started(format: Format) -> Recorder {
    let mut recorder = Recorder::new(RunId::from("run-test"), format);
    let _ = recorder.start(Timestamp::from_millis(T0));
    recorder
}

/// Cuts `lines` at up to 24 places (the start and the end among them),
/// and checks that the reading restored at each goes on as the one kept.
fn check(name: &str, format: Format, lines: &[Line]) {
    let prices = PriceBook::shared_database();
    let step = (lines.len() / 24).max(1);
    let cuts = (0..lines.len()).step_by(step).chain([lines.len()]);
    for cut in cuts {
        let mut kept = started(format);
        let _ = fed(&mut kept, &lines[..cut]);
        let saved = kept.saved().unwrap_or_else(|| panic!("{name}: no reading kept at line {cut}"));
        let mut restored = Recorder::restored(RunId::from("run-test"), format, saved.get().as_bytes(), prices.clone())
            .unwrap_or_else(|| panic!("{name}: the reading kept at line {cut} was not restored"));
        assert_eq!(restored.next_sequence(), kept.next_sequence(), "{name} at {cut}");
        let mut went_on = fed(&mut restored, &lines[cut..]);
        went_on.extend(restored.finish());
        let mut expected = fed(&mut kept, &lines[cut..]);
        expected.extend(kept.finish());
        assert_eq!(went_on, expected, "{name}: the envelopes after line {cut}");
        assert_eq!(restored.state().view(), kept.state().view(), "{name}: the run read on from line {cut}");
    }
}

#[test]
fn a_reading_kept_as_data_goes_on_as_the_recorder_that_read_every_line_for_every_rollout_capture() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut checked = 0;
    for base in ["codex", "codex-0.171"] {
        let mut names: Vec<String> = std::fs::read_dir(fixtures.join(base))
            .unwrap_or_else(|error| panic!("{error}"))
            .filter_map(Result::ok)
            .filter(|entry| entry.path().join("rollouts").is_dir())
            .map(|entry| format!("{base}/{}", entry.file_name().to_string_lossy()))
            .collect();
        names.sort();
        for name in names {
            let files = super::rollouts::rollout_files(&fixtures.join(&name).join("rollouts"));
            let parts: Vec<(SourcePart, PathBuf)> = files.into_iter().enumerate().map(|(number, path)| (SourcePart::File { number: number as u32 }, path)).collect();
            check(&name, Format::CodexRollout, &lines_of(&parts));
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} rollout captures found");
}

#[test]
fn a_reading_kept_as_data_goes_on_as_the_recorder_that_read_every_line_for_every_transcript_capture() {
    let mut names: Vec<String> = std::fs::read_dir(super::claude::capture(""))
        .unwrap_or_else(|error| panic!("{error}"))
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("home_claude/projects").is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 15, "only {} transcript captures found", names.len());
    for name in names {
        let parts = super::claude::transcript_parts(&super::claude::capture(&name));
        check(&name, Format::ClaudeTranscript, &lines_of(&parts));
    }
}

/// A kept reading is a cache: one of another run, format or price book,
/// or bytes that are no reading, is refused, and the caller reads the
/// lines again. A live stream's reading is not kept at all.
#[test]
fn a_kept_reading_is_restored_only_for_its_own_run_format_and_prices() {
    let parts = super::claude::transcript_parts(&super::claude::capture("single_fg"));
    let mut recorder = started(Format::ClaudeTranscript);
    let _ = fed(&mut recorder, &lines_of(&parts));
    let saved = recorder.saved().unwrap_or_else(|| panic!("no reading kept"));
    let saved = saved.get();
    let database = PriceBook::shared_database();
    let priced_otherwise = std::sync::Arc::new(PriceBook::with_file(std::collections::BTreeMap::new(), "another-table"));
    let restores = |id: &str, format: Format, bytes: &[u8], prices: &std::sync::Arc<PriceBook>| {
        Recorder::restored(RunId::from(id), format, bytes, prices.clone()).is_some()
    };
    assert_eq!(
        [
            restores("run-test", Format::ClaudeTranscript, saved.as_bytes(), &database),
            restores("run-other", Format::ClaudeTranscript, saved.as_bytes(), &database),
            restores("run-test", Format::CodexRollout, saved.as_bytes(), &database),
            restores("run-test", Format::ClaudeTranscript, saved.as_bytes(), &priced_otherwise),
            restores("run-test", Format::ClaudeTranscript, &saved.as_bytes()[..saved.len() / 2], &database),
            restores("run-test", Format::ClaudeTranscript, b"{}", &database),
        ],
        [true, false, false, false, false, false]
    );
    assert_eq!(started(Format::ClaudeStream).saved().map(|saved| saved.get().to_owned()), None);
    assert_eq!(started(Format::CodexAppServer).saved().map(|saved| saved.get().to_owned()), None);
}
