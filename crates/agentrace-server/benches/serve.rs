//! Benchmark of the API over a generated 1,000,000-event run:
//! `GET /api/runs/:id` (cold: the first fold of the log; warm: followed
//! incrementally) and the first and a deep page of events, through the
//! router with `oneshot` (no socket). Prints a table and the process's
//! resident memory, which must not grow with the run's size.
//!
//! `cargo bench -p agentrace-server --bench serve` (`AGENTRACE_BENCH_EVENTS`
//! changes the size).

use std::io::{BufWriter, Write as _};
use std::time::Instant;

use agentrace_core::model::{
    Actor, Confidence, Envelope, Event, EventBody, Role, RunId, ThreadId, Timestamp, TurnId,
    LOG_VERSION,
};
use agentrace_server::{app, AppState, Options};
use agentrace_store::Home;
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

/// Writes the log line by line (never holding it): spawns, then messages
/// and tool calls spread over the root and its helpers.
fn generate(home: &Home, id: &RunId, events: u64) -> std::io::Result<u64> {
    std::fs::create_dir_all(home.runs_dir())?;
    let path = home.log_path(id);
    let mut out = BufWriter::new(std::fs::File::create(&path)?);
    for sequence in 1..=events {
        let index = if sequence <= HELPERS as u64 {
            0
        } else {
            (sequence % (HELPERS as u64 + 1)) as usize
        };
        let event = if sequence <= HELPERS as u64 {
            Event::AgentSpawned {
                parent_thread_id: ThreadId::from("root"),
                child_thread_id: ThreadId::from(format!("helper-{sequence}")),
                prompt: Some(format!("work item {sequence}")),
                model: None,
                reasoning_effort: None,
                via: "spawnAgent".to_owned(),
            }
        } else if sequence % 3 == 0 {
            Event::ToolUse {
                tool_kind: "command".to_owned(),
                name: "shell".to_owned(),
                input: format!("cargo test --package crate-{}", sequence % 97),
                item_id: None,
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
        let envelope = Envelope {
            version: LOG_VERSION,
            timestamp: Timestamp::from_millis(1_795_993_400_000 + sequence as i64),
            sequence,
            run_id: id.clone(),
            direction: None,
            actor: actor(index),
            event: EventBody::Known(event),
            raw: None,
        };
        serde_json::to_writer(&mut out, &envelope).map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(std::fs::metadata(&path)?.len())
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
    let size = match generate(&home, &id, events) {
        Ok(size) => size,
        Err(error) => {
            eprintln!("cannot generate the run: {error}");
            return;
        }
    };
    println!(
        "generated {events} events, {:.0} MiB, in {:.1} s",
        size as f64 / 1048576.0,
        started.elapsed().as_secs_f64()
    );
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async {
        let state = AppState::new(home, Options::default());
        let before = resident_kib();
        let rows = [
            (
                "GET /api/runs/bench (cold: first fold)",
                "/api/runs/bench".to_owned(),
            ),
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
        println!("| request | time | response |");
        println!("| --- | --- | --- |");
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
        let after = resident_kib();
        println!(
            "resident memory: {} MiB before serving, {} MiB after (the log is {:.0} MiB)",
            before / 1024,
            after / 1024,
            size as f64 / 1048576.0
        );
    });
}
