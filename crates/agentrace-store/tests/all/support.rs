//! Test support: realistic envelopes from a recorder, a home in a temporary
//! directory, raw log files.

use std::error::Error;
use std::path::{Path, PathBuf};

use agentrace_core::recorder::Format;
use agentrace_core::{Envelope, InputLine, Recorder, RunId, Timestamp};
use agentrace_store::Home;
use tempfile::TempDir;

/// What every test returns: `?` instead of `unwrap`.
pub type TestResult = Fallible<()>;

/// A test helper's result.
pub type Fallible<T> = Result<T, Box<dyn Error>>;

/// A fixed observation time for frames that carry none.
pub const T0: i64 = 1_795_993_400_000;

/// A short Codex app-server session: a root thread runs a command and answers.
pub const SESSION: &[&str] = &[
    r#"{"method":"thread/started","params":{"thread":{"id":"t-root"}},"emittedAtMs":1795993408475}"#,
    r#"{"method":"turn/started","params":{"threadId":"t-root","turn":{"id":"turn-1","rootTurnId":"turn-1","items":[],"status":"inProgress"}},"emittedAtMs":1795993408480}"#,
    r#"{"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_1","command":"/bin/bash -lc 'echo hi'","cwd":"/w","status":"inProgress","commandActions":[]},"threadId":"t-root","turnId":"turn-1"},"emittedAtMs":1795993408490}"#,
    r#"{"method":"item/commandExecution/outputDelta","params":{"threadId":"t-root","turnId":"turn-1","itemId":"call_1","delta":"hi\n"},"emittedAtMs":1795993408500}"#,
    r#"{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"msg_1","text":"All done: it said \"hi\" ✓","phase":"final_answer"},"threadId":"t-root","turnId":"turn-1"},"emittedAtMs":1795993408510}"#,
    r#"{"method":"turn/completed","params":{"threadId":"t-root","turn":{"id":"turn-1","items":[],"status":"completed","error":null}},"emittedAtMs":1795993408520}"#,
];

/// A home in a fresh temporary directory (kept alive by the `TempDir`).
pub fn temporary_home() -> Fallible<(TempDir, Home)> {
    let directory = tempfile::tempdir()?;
    let home = Home::at(directory.path());
    Ok((directory, home))
}

/// A run id known to be valid.
pub fn run_id(text: &str) -> RunId {
    RunId::from(text)
}

/// Records `lines` (Codex app-server output) as run `id`, started at `T0`.
pub fn record(id: &str, lines: &[&str]) -> (Recorder, Vec<Envelope>) {
    record_at(id, T0, lines)
}

/// Records `lines` as run `id`, started at `started_at` (Unix ms).
pub fn record_at(id: &str, started_at: i64, lines: &[&str]) -> (Recorder, Vec<Envelope>) {
    let bytes: Vec<&[u8]> = lines.iter().map(|line| line.as_bytes()).collect();
    record_bytes(id, started_at, &bytes)
}

/// Records raw input lines (without their newlines) as run `id`.
pub fn record_bytes(id: &str, started_at: i64, lines: &[&[u8]]) -> (Recorder, Vec<Envelope>) {
    let mut recorder = Recorder::new(run_id(id), Format::CodexAppServer);
    let mut envelopes = recorder.start(Timestamp::from_millis(started_at));
    for (index, bytes) in lines.iter().enumerate() {
        envelopes.extend(recorder.push(&InputLine {
            bytes,
            line_number: index as u64 + 1,
            observed_at: Timestamp::from_millis(started_at),
            direction: None,
            truncated_from: None,
        }));
    }
    envelopes.extend(recorder.finish());
    (recorder, envelopes)
}

/// Creates run `id` in `home` and writes `envelopes` to it, synced.
pub fn write_run(home: &Home, envelopes: &[Envelope], id: &str) -> TestResult {
    let mut writer = home.create_run(&run_id(id))?;
    writer.append(envelopes)?;
    writer.sync()?;
    Ok(())
}

/// Writes `bytes` as a log file named `name` in a fresh temporary directory.
pub fn log_file(name: &str, bytes: &[u8]) -> Fallible<(TempDir, PathBuf)> {
    let directory = tempfile::tempdir()?;
    let path = directory.path().join(name);
    std::fs::write(&path, bytes)?;
    Ok((directory, path))
}

/// One envelope as a log line, newline included.
pub fn line_of(envelope: &Envelope) -> Fallible<Vec<u8>> {
    let mut line = serde_json::to_vec(envelope)?;
    line.push(b'\n');
    Ok(line)
}

/// Every line of a file, as text (lossy), without newlines.
pub fn lines_of(path: &Path) -> Fallible<Vec<String>> {
    let bytes = std::fs::read(path)?;
    Ok(String::from_utf8_lossy(&bytes)
        .split_terminator('\n')
        .map(str::to_owned)
        .collect())
}
