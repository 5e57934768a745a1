//! `agentrace tap` under a flood: a scripted server writes the fixtures'
//! lines as fast as a pipe takes them, and the recording must hold every
//! byte (or, after `kill -9`, an exact prefix with a gapless sequence).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::all::support::Cli;

/// How long a test waits for the tap before it gives up.
const LIMIT: Duration = Duration::from_secs(120);

/// Every fixture's `server.jsonl` lines, repeated to at least `bytes`.
fn flood(bytes: usize) -> Vec<u8> {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|entry| entry.ok().map(|entry| entry.path().join("server.jsonl")))
        .filter(|path| path.is_file())
        .collect();
    names.sort();
    let mut one_round = Vec::new();
    for name in names {
        let text = std::fs::read(&name).unwrap_or_else(|e| panic!("{e}"));
        for line in text.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()) {
            one_round.extend_from_slice(line);
            one_round.push(b'\n');
        }
    }
    let mut out = Vec::with_capacity(bytes + one_round.len());
    while out.len() < bytes {
        out.extend_from_slice(&one_round);
    }
    out
}

/// What a test reads of each logged line.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    sequence: u64,
    #[serde(default)]
    direction: Option<String>,
    event: serde_json::Value,
    #[serde(default)]
    raw: Option<Box<RawValue>>,
}

/// The log's whole lines (a torn last one skipped), their sequences, the
/// server's frames joined back into the bytes it wrote, and the dropped
/// bytes recorded.
fn read_back(log: &Path) -> (Vec<u64>, Vec<u8>, u64) {
    let text = std::fs::read(log).unwrap_or_else(|e| panic!("{e}"));
    let mut whole = text.split(|byte| *byte == b'\n').collect::<Vec<_>>();
    // After the last newline: empty, or a torn line.
    whole.pop();
    let mut sequences = Vec::new();
    let mut from_server = Vec::new();
    let mut dropped = 0;
    for bytes in whole {
        let line: Line = serde_json::from_slice(bytes)
            .unwrap_or_else(|e| panic!("a whole line does not parse ({e})"));
        sequences.push(line.sequence);
        if line.event["type"] == "dropped" {
            dropped += line.event["bytes"].as_u64().unwrap_or(0);
        }
        if line.direction.as_deref() == Some("fromServer") {
            if let Some(raw) = line.raw {
                from_server.extend_from_slice(raw.get().as_bytes());
                from_server.push(b'\n');
            }
        }
    }
    (sequences, from_server, dropped)
}

/// Starts `agentrace tap` over `cat <file>`, its stdout drained by a
/// thread that returns what it read.
fn tap_cat(cli: &Cli, run_id: &str, file: &Path) -> (Child, std::thread::JoinHandle<Vec<u8>>) {
    let file = file.to_string_lossy().into_owned();
    let mut child = cli
        .command(&["tap", "--run-id", run_id, "--", "cat", &file])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    (child, reader)
}

fn wait_bounded(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the tap took longer than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_server_flooding_the_tap_is_recorded_to_the_last_byte() {
    let cli = Cli::new();
    let input = flood(24 * 1024 * 1024);
    let file = cli.home.path().join("flood.jsonl");
    std::fs::write(&file, &input).unwrap_or_else(|e| panic!("{e}"));
    let (mut child, reader) = tap_cat(&cli, "flood", &file);

    let status = wait_bounded(&mut child);
    let forwarded = reader.join().unwrap_or_default();

    assert_eq!(status.code(), Some(0));
    assert!(forwarded == input, "the tap changed the bytes it passed through");
    let (sequences, from_server, dropped) = read_back(&cli.home.path().join("runs/flood.jsonl"));
    assert_eq!(dropped, 0, "no byte dropped");
    assert!(from_server == input, "the log holds every byte the server wrote, in order");
    let expected: Vec<u64> = (1..=sequences.len() as u64).collect();
    assert_eq!(sequences, expected);
}

#[test]
fn a_tap_killed_mid_flood_leaves_an_exact_prefix_with_a_gapless_sequence() {
    let cli = Cli::new();
    let input = flood(24 * 1024 * 1024);
    let file = cli.home.path().join("flood.jsonl");
    std::fs::write(&file, &input).unwrap_or_else(|e| panic!("{e}"));
    let log = cli.home.path().join("runs/killed.jsonl");
    let (mut child, reader) = tap_cat(&cli, "killed", &file);
    // Killed once part of the flood is on disk (or the tap ended first).
    let deadline = Instant::now() + LIMIT;
    while std::fs::metadata(&log).map(|meta| meta.len()).unwrap_or(0) < 2 * 1024 * 1024
        && child.try_wait().ok().flatten().is_none()
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX)),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let _ = wait_bounded(&mut child);
    let _ = reader.join();

    let (sequences, from_server, dropped) = read_back(&log);

    assert_eq!(dropped, 0);
    let expected: Vec<u64> = (1..=sequences.len() as u64).collect();
    assert_eq!(sequences, expected, "the sequence has no gap");
    assert!(!from_server.is_empty(), "some of the flood was recorded");
    assert!(
        input.starts_with(&from_server),
        "the log is an exact prefix of what the server wrote"
    );
}

/// `tap --live` shows the live view on stderr as the server's frames pass
/// (what each agent does, who ended, the run's end), and the server's
/// stdout reaches the tap's stdout byte for byte; without it the tap says
/// nothing on stderr.
#[test]
fn tap_live_shows_the_live_view_on_stderr_and_stays_silent_without_it() {
    let cli = Cli::new();
    let server = crate::all::support::capture("v1_basic");
    let tap = |extra: &[&str]| {
        let mut args = vec!["tap", "--run-id"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "cat", server.to_str().unwrap_or_else(|| panic!("path"))]);
        cli.command(&args).stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{e}"))
    };
    let live = tap(&["shown", "--live"]);
    let quiet = tap(&["unseen"]);
    let sent = std::fs::read(&server).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (live.status.code(), quiet.status.code(), live.stdout == sent, quiet.stdout == sent, String::from_utf8_lossy(&quiet.stderr).into_owned()),
        (Some(0), Some(0), true, true, String::new())
    );
    // What people read.
    insta::assert_snapshot!(String::from_utf8_lossy(&live.stderr));
}
