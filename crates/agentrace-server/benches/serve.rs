//! Benchmark of the API over a generated 1,000,000-event run, written the
//! way the recorder writes runs (through `RunWriter`, which keeps the
//! snapshot of the log's fold beside it): `GET /api/runs/:id` and the first
//! events page on a server that has not read the run yet (cold: from the
//! snapshot; from a snapshot 4 MiB behind a live log; without a snapshot,
//! folding the whole log), then warm, and a deep page, through the router
//! with `oneshot` (no socket). Prints a table and the process's resident
//! memory, which must not grow with the run's size.
//!
//! `cargo bench -p agentrace-server --bench serve` (`AGENTRACE_BENCH_EVENTS`
//! changes the size).

use std::io::{BufWriter, Write as _};
use std::time::{Duration, Instant};

use agentrace_core::model::{
    Actor, Confidence, Envelope, Event, EventBody, Role, RunId, ThreadId, Timestamp, TurnId,
    LOG_VERSION,
};
use agentrace_core::state::RunState;
use agentrace_server::{app, AppState, Options};
use agentrace_store::{Home, RunFold, SNAPSHOT_EVERY_BYTES};
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

const HELPERS: usize = 16;

fn actor(index: usize) -> Actor {
    if index == 0 {
        Actor {
            thread_id: Some(ThreadId::from("root")),
            role: Role::Root,
            parent_thread_id: None,
            label: "Main".to_owned(),
            depth: Some(0),
            confidence: Confidence::Provider,
            reason: None,
        }
    } else {
        Actor {
            thread_id: Some(ThreadId::from(format!("helper-{index}"))),
            role: Role::Helper,
            parent_thread_id: Some(ThreadId::from("root")),
            label: format!("Helper {index}"),
            depth: Some(1),
            confidence: Confidence::Provider,
            reason: None,
        }
    }
}

/// Envelope `sequence` of the generated run: spawns, then messages and
/// tool calls spread over the root and its helpers.
fn envelope(id: &RunId, sequence: u64) -> Envelope {
    let index = if sequence <= HELPERS as u64 {
        0
    } else {
        (sequence % (HELPERS as u64 + 1)) as usize
    };
    // One event in three is a tool call.
    let kind = sequence % 3;
    let event = if sequence <= HELPERS as u64 {
        Event::AgentSpawned {
            parent_thread_id: ThreadId::from("root"),
            child_thread_id: ThreadId::from(format!("helper-{sequence}")),
            prompt: Some(format!("work item {sequence}")),
            model: None,
            reasoning_effort: None,
            via: "spawnAgent".to_owned(),
        }
    } else if kind == 0 {
        Event::ToolUse {
            tool_kind: "command".to_owned(),
            name: "shell".to_owned(),
            input: format!("cargo test --package crate-{}", sequence % 97),
            item_id: None,
            process_id: None,
            turn_id: Some(TurnId::from("turn")),
        }
    } else {
        Event::Message {
            role: "assistant".to_owned(),
            phase: None,
            text: format!("step {sequence}: reading the parser and checking the tests"),
            item_id: None,
            turn_id: Some(TurnId::from("turn")),
        }
    };
    Envelope {
        version: LOG_VERSION,
        timestamp: Timestamp::from_millis(1_795_993_400_000 + sequence as i64),
        sequence,
        run_id: id.clone(),
        direction: None,
        actor: actor(index),
        event: EventBody::Known(event),
        raw: None,
        raw_ref: None,
        raw_unavailable: None,
    }
}

/// Records the run through `RunWriter` in batches of 1,000 envelopes (never
/// holding the log), then writes its record, as a recorder finishing a run
/// does. Returns the log's size and the time spent in `append`.
fn generate(
    home: &Home,
    id: &RunId,
    events: u64,
) -> Result<(u64, Duration), Box<dyn std::error::Error>> {
    let mut writer = home.create_run(id)?;
    let mut state = RunState::new(id.clone());
    let mut appending = Duration::ZERO;
    let mut batch = Vec::with_capacity(1000);
    for sequence in 1..=events {
        let envelope = envelope(id, sequence);
        state.apply(&envelope);
        batch.push(envelope);
        if batch.len() == 1000 || sequence == events {
            let started = Instant::now();
            writer.append(&batch)?;
            appending += started.elapsed();
            batch.clear();
        }
    }
    writer.sync()?;
    writer.write_record(&state.summary())?;
    Ok((std::fs::metadata(home.log_path(id))?.len(), appending))
}

/// The time `RunFold::apply` alone takes over the run's envelopes: what
/// keeping the snapshot's fold costs a recorder.
fn fold_cost(id: &RunId, events: u64) -> Duration {
    let mut fold = RunFold::new(id.clone());
    let mut spent = Duration::ZERO;
    for sequence in 1..=events {
        let envelope = envelope(id, sequence);
        let started = Instant::now();
        fold.apply(&envelope, 0, 0);
        spent += started.elapsed();
    }
    spent
}

/// Appends about `bytes` of events to the log behind the writer's back, as
/// a live run does between two snapshots.
fn grow_without_snapshot(home: &Home, id: &RunId, from: u64, bytes: u64) -> std::io::Result<u64> {
    let path = home.log_path(id);
    let start = std::fs::metadata(&path)?.len();
    let mut out = BufWriter::new(std::fs::OpenOptions::new().append(true).open(&path)?);
    let mut sequence = from;
    let mut written = 0;
    while written < bytes {
        let line = serde_json::to_vec(&envelope(id, sequence)).map_err(std::io::Error::other)?;
        out.write_all(&line)?;
        out.write_all(b"\n")?;
        written += line.len() as u64 + 1;
        sequence += 1;
    }
    out.flush()?;
    Ok(std::fs::metadata(&path)?.len() - start)
}

fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

async fn timed(state: &AppState, uri: &str) -> (f64, usize) {
    let start = Instant::now();
    let response = app(state.clone())
        .oneshot(Request::get(uri).body(Body::empty()).unwrap_or_default())
        .await;
    let bytes = match response {
        Ok(response) => response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes().len())
            .unwrap_or(0),
        Err(_) => 0,
    };
    (start.elapsed().as_secs_f64() * 1000.0, bytes)
}

fn main() {
    let events: u64 = std::env::var("AGENTRACE_BENCH_EVENTS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1_000_000);
    let Ok(dir) = tempfile::tempdir() else {
        eprintln!("cannot make a scratch dir");
        return;
    };
    let home = Home::at(dir.path());
    let id = RunId::from("bench");
    let started = Instant::now();
    let (size, appending) = match generate(&home, &id, events) {
        Ok(generated) => generated,
        Err(error) => {
            eprintln!("cannot generate the run: {error}");
            return;
        }
    };
    println!(
        "recorded {events} events, {:.0} MiB, in {:.1} s ({:.1} s of it in RunWriter::append, the snapshot's fold included)",
        size as f64 / 1048576.0,
        started.elapsed().as_secs_f64(),
        appending.as_secs_f64()
    );
    let folding = fold_cost(&id, events);
    println!(
        "of which the snapshot's fold (RunFold::apply alone): {:.2} s, {:.2} µs per event",
        folding.as_secs_f64(),
        folding.as_secs_f64() * 1e6 / events as f64
    );
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async {
        let before = resident_kib();
        println!("| request | time | response |");
        println!("| --- | --- | --- |");
        // Each cold row is a server that has not read the run yet.
        let cold = AppState::new(home.clone(), Options::default());
        let (ms, bytes) = timed(&cold, "/api/runs/bench/events?limit=200").await;
        println!("| GET /api/runs/bench/events (cold, first page, 200) | {ms:.1} ms | {bytes} bytes |");
        let cold = AppState::new(home.clone(), Options::default());
        let (ms, bytes) = timed(&cold, "/api/runs/bench").await;
        println!("| GET /api/runs/bench (cold: from the snapshot) | {ms:.1} ms | {bytes} bytes |");
        let state = cold;
        let rows = [
            ("GET /api/runs/bench (warm)", "/api/runs/bench".to_owned()),
            (
                "GET /api/runs/bench/events (first page, 200)",
                "/api/runs/bench/events?limit=200".to_owned(),
            ),
            (
                "GET /api/runs/bench/events (page after 900,000)",
                "/api/runs/bench/events?after=900000&limit=200".to_owned(),
            ),
            (
                "GET /api/runs/bench/events?actor=helpers (first page)",
                "/api/runs/bench/events?limit=200&actor=helpers".to_owned(),
            ),
        ];
        for (name, uri) in rows {
            let (ms, bytes) = timed(&state, &uri).await;
            println!("| {name} | {ms:.1} ms | {bytes} bytes |");
        }
        let mut warm = Vec::new();
        for _ in 0..20 {
            warm.push(timed(&state, "/api/runs/bench/events?limit=200").await.0);
        }
        warm.sort_by(|a, b| a.total_cmp(b));
        println!(
            "first page, 20 warm requests: median {:.1} ms, max {:.1} ms",
            warm[10], warm[19]
        );
        let behind = match grow_without_snapshot(&home, &id, events + 1, SNAPSHOT_EVERY_BYTES) {
            Ok(behind) => behind,
            Err(error) => {
                eprintln!("cannot grow the run: {error}");
                return;
            }
        };
        let cold = AppState::new(home.clone(), Options::default());
        let (ms, bytes) = timed(&cold, "/api/runs/bench").await;
        println!(
            "| GET /api/runs/bench (cold: snapshot {:.1} MiB behind a live log) | {ms:.1} ms | {bytes} bytes |",
            behind as f64 / 1048576.0
        );
        if let Err(error) = std::fs::remove_file(home.snapshot_path(&id)) {
            eprintln!("cannot remove the snapshot: {error}");
            return;
        }
        let cold = AppState::new(home.clone(), Options::default());
        let (ms, bytes) = timed(&cold, "/api/runs/bench").await;
        println!("| GET /api/runs/bench (cold, no snapshot: folds the whole log) | {ms:.1} ms | {bytes} bytes |");
        let cold = AppState::new(home.clone(), Options::default());
        let (ms, bytes) = timed(&cold, "/api/runs/bench").await;
        println!("| GET /api/runs/bench (cold: from the snapshot the last server left) | {ms:.1} ms | {bytes} bytes |");
        let after = resident_kib();
        println!(
            "resident memory: {} MiB before serving, {} MiB after (the log is {:.0} MiB)",
            before / 1024,
            after / 1024,
            size as f64 / 1048576.0
        );
    });
}
