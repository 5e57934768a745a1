//! Test support: a temporary agentrace home with runs recorded from the
//! real captures (or from hand-made frames), the way `ingest` records them.

use std::path::PathBuf;

use agentrace_core::lines::LineAssembler;
use agentrace_core::model::{RunId, Timestamp};
use agentrace_core::recorder::Format;
use agentrace_core::{InputLine, Recorder};
use agentrace_store::{Home, RunWriter};

/// A capture's `server.jsonl`.
pub fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/codex")
        .join(name)
        .join("server.jsonl")
}

/// A scratch home.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}")),
        }
    }

    pub fn home(&self) -> Home {
        Home::at(self.dir.path())
    }

    /// Records Codex app-server lines as run `id`; returns the writer and
    /// recorder so a test can go on appending (a live run).
    pub fn record(&self, id: &str, bytes: &[u8], finish: bool) -> (RunWriter, Recorder) {
        let mut writer = self
            .home()
            .create_run(&RunId::from(id))
            .unwrap_or_else(|e| panic!("create run: {e}"));
        let mut recorder = Recorder::new(RunId::from(id), Format::CodexAppServer);
        let start = recorder.start(Timestamp::from_millis(1_795_993_400_000));
        writer.append(&start).unwrap_or_else(|e| panic!("{e}"));
        push(&mut writer, &mut recorder, bytes);
        if finish {
            let last = recorder.finish();
            writer.append(&last).unwrap_or_else(|e| panic!("{e}"));
        }
        (writer, recorder)
    }

    /// Records a capture as run `id`.
    pub fn capture(&self, id: &str, name: &str) {
        let bytes = std::fs::read(capture(name)).unwrap_or_else(|e| panic!("{e}"));
        self.record(id, &bytes, true);
    }
}

/// Appends lines to a live run.
pub fn push(writer: &mut RunWriter, recorder: &mut Recorder, bytes: &[u8]) {
    let mut assembler = LineAssembler::new(64 * 1024 * 1024);
    let mut lines = assembler.push(bytes);
    lines.extend(assembler.finish());
    for line in lines {
        if agentrace_core::decode::is_blank(&line.bytes) {
            continue;
        }
        let envelopes = recorder.push(&InputLine {
            bytes: &line.bytes,
            line_number: line.line_number,
            observed_at: Timestamp::from_millis(1_795_993_400_000),
            direction: None,
            truncated_from: line.truncated_from,
        });
        writer.append(&envelopes).unwrap_or_else(|e| panic!("{e}"));
    }
}
