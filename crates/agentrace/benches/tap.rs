//! Benchmark of `agentrace tap` against a direct pipe (not a test; run with
//! `cargo bench -p agentrace --bench tap`):
//!
//! - throughput: a synthetic server writes a burst of app-server frames as
//!   fast as it can; frames/s read by the client, direct and through the tap;
//! - latency: an echo server answers one line at a time; the round trip,
//!   direct and through the tap, and the p50/p99 the tap adds.
//!
//! The synthetic servers are this same executable, started with
//! `AGENTRACE_BENCH_ROLE=burst|echo`.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FRAMES: usize = 1_000_000;
const PINGS: usize = 20_000;

fn frame(index: usize) -> String {
    format!(
        "{{\"method\":\"item/agentMessage/delta\",\"params\":{{\"threadId\":\"01a2298c-947a-75b0-8b49-6a2e1016272b\",\"turnId\":\"01a2298c-9482-75b0-af59-8e97762cca2a\",\"itemId\":\"msg_0015\",\"delta\":\"word {index}\"}},\"emittedAtMs\":1795993409044}}\n"
    )
}

fn burst() {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    for index in 0..FRAMES {
        if out.write_all(frame(index).as_bytes()).is_err() {
            return;
        }
    }
    let _ = out.flush();
}

fn echo() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}

fn server(role: &str, tap: Option<&std::path::Path>) -> Command {
    let me = std::env::current_exe().unwrap_or_default();
    let mut command = match tap {
        Some(home) => {
            let mut command = Command::new(env!("CARGO_BIN_EXE_agentrace"));
            command.env("AGENTRACE_HOME", home).args(["tap", "--"]).arg(&me);
            command
        }
        None => Command::new(&me),
    };
    command.env("AGENTRACE_BENCH_ROLE", role);
    command
}

/// What the tap's recorder made of the burst: (envelopes, bytes dropped,
/// seconds until the tap exited).
fn recorded(home: &std::path::Path) -> (u64, u64) {
    let mut totals = (0, 0);
    for entry in std::fs::read_dir(home.join("runs")).into_iter().flatten().flatten() {
        if entry.path().extension().is_some_and(|ext| ext == "json") {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let record: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            totals.0 += record["counts"]["events"].as_u64().unwrap_or(0);
            totals.1 += record["counts"]["droppedBytes"].as_u64().unwrap_or(0);
        }
    }
    totals
}

fn throughput(tap: Option<&std::path::Path>) -> f64 {
    let mut child = server("burst", tap)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let mut stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut buffer = vec![0u8; 1 << 16];
    let mut lines = 0usize;
    loop {
        let read = stdout.read(&mut buffer).unwrap_or(0);
        if read == 0 {
            break;
        }
        lines += buffer[..read].iter().filter(|byte| **byte == b'\n').count();
    }
    let elapsed = started.elapsed();
    drop(child.stdin.take());
    let _ = child.wait();
    if let Some(home) = tap {
        let (events, dropped) = recorded(home);
        println!(
            "recorder    {events} envelopes written, {dropped} bytes not recorded, tap exited after {:.2} s",
            started.elapsed().as_secs_f64()
        );
    }
    assert_eq!(lines, FRAMES, "every frame arrived");
    FRAMES as f64 / elapsed.as_secs_f64()
}

fn latencies(tap: Option<&std::path::Path>) -> Vec<Duration> {
    let mut child = server("echo", tap)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    let mut stdout = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("no stdout")));
    let mut answer = String::new();
    let mut samples = Vec::with_capacity(PINGS);
    for index in 0..PINGS + 1000 {
        let line = frame(index);
        let started = Instant::now();
        stdin.write_all(line.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        stdin.flush().unwrap_or_else(|e| panic!("{e}"));
        answer.clear();
        stdout.read_line(&mut answer).unwrap_or_else(|e| panic!("{e}"));
        // The first thousand warm both paths up.
        if index >= 1000 {
            samples.push(started.elapsed());
        }
    }
    drop(stdin);
    let _ = child.wait();
    samples.sort_unstable();
    samples
}

fn percentile(samples: &[Duration], p: f64) -> Duration {
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index.min(samples.len() - 1)]
}

fn main() {
    match std::env::var("AGENTRACE_BENCH_ROLE").as_deref() {
        Ok("burst") => return burst(),
        Ok("echo") => return echo(),
        _ => {}
    }
    if std::env::args().any(|arg| arg == "--list") {
        println!("tap: benchmark");
        return;
    }
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let direct = throughput(None);
    let tapped = throughput(Some(home.path()));
    println!("throughput  direct {direct:>12.0} frames/s");
    println!("throughput  tap    {tapped:>12.0} frames/s   (target >= 200000)");
    let direct = latencies(None);
    let tapped = latencies(Some(home.path()));
    for (name, p) in [("p50", 0.50), ("p99", 0.99)] {
        let d = percentile(&direct, p);
        let t = percentile(&tapped, p);
        println!(
            "latency {name} direct {:>8.1} µs   tap {:>8.1} µs   added {:>8.1} µs{}",
            d.as_secs_f64() * 1e6,
            t.as_secs_f64() * 1e6,
            (t.as_secs_f64() - d.as_secs_f64()) * 1e6,
            if name == "p99" { "   (target <= 100)" } else { "" }
        );
    }
}
