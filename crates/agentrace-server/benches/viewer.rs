//! Benchmark of the viewer's page of a generated 100,000-event run (the
//! browser tests' large run: four helpers, a short tool call every ten
//! events) in a real headless Chromium: how long until the page is
//! interactive (`data-ready`, since the navigation began) and how long its
//! waterfall took to ask for and draw (`#waterfall[data-draw-ms]`), cold
//! (a server that has not read the run yet) and warm (the server has the
//! run's fold, and its last waterfall answer for the same width), with the rows and
//! bars in the DOM. Targets (SPEC §9): interactive ≤ 1 s, waterfall
//! ≤ 500 ms, at most 5,000 rows. Prints the figures and their ratio to the
//! targets; asserts nothing about time.
//!
//! `scripts/bench-viewer` (or `cargo bench -p agentrace-server --bench
//! viewer`; `AGENTRACE_BENCH_EVENTS` changes the size).

#[path = "../tests/all/support.rs"]
#[allow(dead_code)]
mod support;

use std::time::Duration;

use agentrace_server::Options;
use agentrace_testkit::browser::Browser;

fn main() {
    let events: u64 = std::env::var("AGENTRACE_BENCH_EVENTS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(100_000);
    let scratch = support::Scratch::new();
    support::record_generated_run(&scratch, "large", events, None);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let (address, server) = runtime
        .block_on(agentrace_server::bind(
            "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")),
            scratch.home(),
            Options::default(),
        ))
        .unwrap_or_else(|e| panic!("bind: {e}"));
    runtime.spawn(server);
    let browser = Browser::start();
    browser.resize(1280, 900);
    println!("viewer of a {events}-event run (targets: interactive 1000 ms, waterfall 500 ms, rows 5000)");
    println!(
        "{:<6} {:>16} {:>14} {:>8} {:>8} {:>10} {:>10}",
        "load", "interactive ms", "waterfall ms", "rows", "bars", "vs 1 s", "vs 500 ms"
    );
    for load in ["cold", "warm", "warm"] {
        browser.goto(&format!("http://{address}/runs/large"));
        browser.wait_up_to(
            Duration::from_secs(120),
            "the page",
            "return document.body.getAttribute('data-ready') === 'true';",
        );
        browser.wait_up_to(
            Duration::from_secs(120),
            "the waterfall",
            "return document.getElementById('waterfall').hasAttribute('data-draw-ms');",
        );
        let figures = browser.script("return [Number(document.body.getAttribute('data-ready-ms')), Number(document.getElementById('waterfall').getAttribute('data-draw-ms')), document.querySelectorAll('#timeline .event').length, document.querySelectorAll('#waterfall [data-bar]').length];");
        let number = |index: usize| figures[index].as_f64().unwrap_or(f64::NAN);
        println!(
            "{load:<6} {:>16.0} {:>14.0} {:>8} {:>8} {:>10.2} {:>10.2}",
            number(0),
            number(1),
            number(2),
            number(3),
            number(0) / 1000.0,
            number(1) / 500.0
        );
    }
}
