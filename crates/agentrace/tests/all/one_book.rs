//! One fold for every reader (issue 18, SPEC §6, §13): every fixture, its
//! input cut at seeded random points and ingested (a log that ends with
//! `session_ended`), and its log cut again (a log with none, read by the
//! book's fallback rule), gives the same child-work records and warnings
//! through `status --json`, `attach --json`, `GET /api/runs/:id/records`
//! (and `/api/runs/:id`'s warnings) and the SSE stream of a log written
//! while it is watched. With regression tests for the two disagreements
//! the issue found.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::Cli;

/// Cuts per fixture.
const CUTS: usize = 2;

/// A seeded xorshift: the same cuts on every run of the test.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound.max(1) as u64) as usize
    }
}

/// Every fixture input: Codex app-server streams and Claude stream-json.
fn fixtures() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut inputs = Vec::new();
    for (folder, file) in [
        ("codex", "server.jsonl"),
        ("codex-0.171", "server.jsonl"),
        ("claude", "stream.jsonl"),
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(folder)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path().join(file))
            .filter(|path| path.is_file())
            .collect();
        found.sort();
        inputs.extend(found);
    }
    inputs
}

/// `agentrace serve` on a free loopback port, ended with the test.
struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(cli: &Cli) -> Self {
        let mut child = cli
            .command(&["serve", "--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .unwrap_or_else(|e| panic!("{e}"));
        let base = first
            .trim_end()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first line: {first:?}"))
            .to_owned();
        Self { child, base }
    }

    fn agent(&self) -> ureq::Agent {
        ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into()
    }

    fn json(&self, path: &str) -> Value {
        let mut response = self
            .agent()
            .get(format!("{}{path}", self.base))
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let text = response
            .body_mut()
            .read_to_string()
            .unwrap_or_else(|e| panic!("{e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// Watches run `id`'s stream from its start; once the first view came,
    /// `append` writes the rest of the log; returns the records (the
    /// stream's `records`, then each `record` change) and the last
    /// warnings once a view counts `events` envelopes.
    fn watch(&self, id: &str, events: u64, append: impl FnOnce()) -> (Vec<Value>, Value) {
        let response = self
            .agent()
            .get(format!("{}/api/runs/{id}/stream?after=0", self.base))
            .call()
            .unwrap_or_else(|e| panic!("stream of {id}: {e}"));
        let reader = BufReader::new(response.into_body().into_reader());
        let mut records: Vec<Value> = Vec::new();
        let mut warnings = Value::Null;
        let mut append = Some(append);
        let mut name = String::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        for line in reader.lines() {
            let line = line.unwrap_or_else(|e| panic!("stream of {id}: {e}"));
            assert!(Instant::now() < deadline, "stream of {id}: no view of {events} events");
            if let Some(event) = line.strip_prefix("event: ") {
                name = event.to_owned();
                continue;
            }
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            let data: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
            match name.as_str() {
                "records" => records = data["records"].as_array().cloned().unwrap_or_default(),
                "record" => {
                    let record = data["record"].clone();
                    match records
                        .iter_mut()
                        .find(|known| known["childWorkId"] == record["childWorkId"])
                    {
                        Some(known) => *known = record,
                        None => records.push(record),
                    }
                }
                "warnings" => warnings = data,
                "run" => {
                    if let Some(append) = append.take() {
                        append();
                    }
                    if data["run"]["counts"]["events"].as_u64() == Some(events) {
                        return (records, warnings);
                    }
                }
                _ => {}
            }
        }
        panic!("stream of {id} ended early")
    }
}

/// The records of `status --json`.
fn status_records(cli: &Cli, id: &str) -> Vec<Value> {
    let stdout = cli.ok(&["status", id, "--json"]);
    let value: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    value["records"].as_array().cloned().unwrap_or_default()
}

/// `attach --json` of a run whose session is over: the last change of each
/// record in admission order, and the warnings printed. Fails if attach
/// does not exit.
fn attached(cli: &Cli, id: &str) -> (Vec<Value>, Vec<Value>) {
    let mut child = cli
        .command(&["attach", id, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap_or_else(|e| panic!("{e}")).is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("attach {id} did not exit on a run whose session is over");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let mut records: Vec<Value> = Vec::new();
    let mut warnings = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let line: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if let Some(record) = line.get("record") {
            match records
                .iter_mut()
                .find(|known| known["childWorkId"] == record["childWorkId"])
            {
                Some(known) => *known = record.clone(),
                None => records.push(record.clone()),
            }
        } else if let Some(warning) = line.get("warning") {
            warnings.push(warning.clone());
        }
    }
    (records, warnings)
}

/// Warnings as `(code, severity, threadId)`, sorted and once each: their
/// messages can name how long ago something happened, which differs by
/// when each reader judged.
fn warning_keys(warnings: &[Value]) -> Vec<(String, String, String)> {
    let mut keys: Vec<(String, String, String)> = warnings
        .iter()
        .map(|warning| {
            (
                warning["code"].as_str().unwrap_or_default().to_owned(),
                warning["severity"].as_str().unwrap_or_default().to_owned(),
                warning["threadId"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

fn log_path(cli: &Cli, id: &str) -> PathBuf {
    cli.home.path().join("runs").join(format!("{id}.jsonl"))
}

fn log_lines(cli: &Cli, id: &str) -> Vec<String> {
    std::fs::read_to_string(log_path(cli, id))
        .unwrap_or_else(|e| panic!("{e}"))
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Writes `lines` (a log of run `from`) as run `to`'s log: the first `first`
/// now, the rest when the returned closure is called.
fn copy_log(cli: &Cli, lines: &[String], from: &str, to: &str, first: usize) -> impl FnOnce() {
    let renamed: Vec<String> = lines
        .iter()
        .map(|line| line.replace(&format!("\"runId\":\"{from}\""), &format!("\"runId\":\"{to}\"")))
        .collect();
    let path = log_path(cli, to);
    let head: String = renamed[..first].iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&path, head).unwrap_or_else(|e| panic!("{e}"));
    let rest: String = renamed[first..].iter().map(|line| format!("{line}\n")).collect();
    move || {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        file.write_all(rest.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Ingests the first `cut` lines of `input` as run `id`.
fn ingest_cut(cli: &Cli, input: &Path, cut: usize, id: &str) {
    let text = std::fs::read_to_string(input).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&str> = text.lines().collect();
    let cut_file = cli.home.path().join(format!("{id}.input.jsonl"));
    let kept: String = lines[..cut.min(lines.len())]
        .iter()
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&cut_file, kept).unwrap_or_else(|e| panic!("{e}"));
    cli.ingest(&cut_file, &["--quiet", "--run-id", id]);
}

/// The records and warnings of `id` by the server, and by its stream over a
/// copy of its log written in two parts while watched.
fn served(cli: &Cli, server: &Server, id: &str, seeded: &mut Seeded) -> (Vec<Value>, Vec<Value>, Vec<Value>, Vec<Value>) {
    let records = server.json(&format!("/api/runs/{id}/records"))["records"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let view = server.json(&format!("/api/runs/{id}"));
    let warnings = view["warnings"].as_array().cloned().unwrap_or_default();
    let lines = log_lines(cli, id);
    let watched = format!("{id}-watched");
    let append = copy_log(cli, &lines, id, &watched, 1 + seeded.below(lines.len()));
    let (streamed, streamed_warnings) = server.watch(&watched, lines.len() as u64, append);
    (
        records,
        warnings,
        streamed,
        streamed_warnings.as_array().cloned().unwrap_or_default(),
    )
}

#[test]
fn every_reader_gives_the_same_records_and_warnings_for_every_fixture_cut_anywhere() {
    let cli = Cli::new();
    let server = Server::start(&cli);
    let inputs = fixtures();
    assert!(inputs.len() >= 30, "fixtures: {inputs:?}");
    let mut seeded = Seeded(0x5eed_0018);
    for (number, input) in inputs.iter().enumerate() {
        let length = std::fs::read_to_string(input)
            .unwrap_or_else(|e| panic!("{e}"))
            .lines()
            .count();
        for cut_number in 0..CUTS {
            let cut = 1 + seeded.below(length);
            let case = format!("{} cut at line {cut}", input.display());
            // The input cut, ingested: its log ends with `session_ended`.
            let id = format!("cut-{number}-{cut_number}");
            ingest_cut(&cli, input, cut, &id);
            let status = status_records(&cli, &id);
            let (attach, attach_warnings) = attached(&cli, &id);
            let (records, warnings, streamed, streamed_warnings) = served(&cli, &server, &id, &mut seeded);
            assert_eq!(
                (&attach, &records, &streamed),
                (&status, &status, &status),
                "{case}: attach, /records and the stream against status"
            );
            assert_eq!(
                (warning_keys(&attach_warnings), warning_keys(&streamed_warnings)),
                (warning_keys(&warnings), warning_keys(&warnings)),
                "{case}: warnings of attach and the stream against /api/runs/:id"
            );
            // The log cut before its end: no `session_ended`, read by the
            // fallback rule (the run's status).
            let lines = log_lines(&cli, &id);
            if lines.len() > 2 {
                let kept = 1 + seeded.below(lines.len() - 1);
                let cut_log = format!("{id}-log");
                copy_log(&cli, &lines[..kept], &id, &cut_log, kept)();
                let status = status_records(&cli, &cut_log);
                let (records, _, streamed, _) = served(&cli, &server, &cut_log, &mut seeded);
                assert_eq!(
                    (&records, &streamed),
                    (&status, &status),
                    "{case}, log cut at line {kept}: /records and the stream against status"
                );
            }
        }
    }
}

/// The lines of `input` up to the first that starts a child's turn and
/// before the child's turn ends, found by the records: the shortest cut
/// whose ingest leaves a record `working` in a log cut just before the
/// session's end.
fn first_cut_mid_child(cli: &Cli, input: &Path, name: &str) -> (String, usize) {
    let text = std::fs::read_to_string(input).unwrap_or_else(|e| panic!("{e}"));
    let length = text.lines().count();
    for cut in 1..length {
        let id = format!("{name}-{cut}");
        ingest_cut(cli, input, cut, &id);
        let records = status_records(cli, &id);
        if records.iter().any(|record| record["outcome"] == "unknown") {
            return (id, cut);
        }
    }
    panic!("{name}: no cut leaves a child mid-turn")
}

#[test]
fn status_and_records_agree_on_a_codex_log_cut_mid_child_turn() {
    // The bug: `status` settled an ingested log's live records (`ended
    // unknown`) while `/records` said `working`.
    let cli = Cli::new();
    let server = Server::start(&cli);
    let input = super::support::capture("v1_parallel");
    let (id, _) = first_cut_mid_child(&cli, &input, "codex");
    // The log without its `session_ended`: the run is running, so the
    // session is live for every reader.
    let mut lines = log_lines(&cli, &id);
    lines.pop();
    copy_log(&cli, &lines, &id, "codex-cut-log", lines.len())();
    let status = status_records(&cli, "codex-cut-log");
    let records = server.json("/api/runs/codex-cut-log/records")["records"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let states: Vec<(String, String)> = status
        .iter()
        .map(|record| {
            (
                record["state"].as_str().unwrap_or_default().to_owned(),
                record["outcome"].as_str().unwrap_or("-").to_owned(),
            )
        })
        .filter(|(state, _)| state == "working")
        .collect();
    assert_eq!((records, states.is_empty()), (status, false));
}

#[test]
fn attach_exits_on_an_ingested_claude_stream_cut_mid_subagent() {
    // The bug: a finished ingest of a Claude stream whose subagent never
    // ended left the run `running`, and attach waited for ever.
    let cli = Cli::new();
    let input = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/claude/single_fg/stream.jsonl");
    let (id, _) = first_cut_mid_child(&cli, &input, "claude");
    let (attach, _) = attached(&cli, &id);
    assert_eq!(attach, status_records(&cli, &id));
}
