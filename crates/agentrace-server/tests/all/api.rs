//! The HTTP API through `oneshot`: the same `{run, agents, warnings}` as the
//! store's view plus detectors, paged and filtered events, records, the
//! token, run id validation, the CSP, and the stream of a live run.

use agentrace_core::warnings::WarningConfig;
use agentrace_core::Recorder;
use agentrace_server::{app, AppState, Options, CONTENT_SECURITY_POLICY};
use agentrace_store::RunWriter;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use tower::ServiceExt as _;

use super::support::Scratch;

async fn get(state: &AppState, uri: &str, token: Option<&str>) -> (StatusCode, Value) {
    let mut request = Request::get(uri);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let response = app(state.clone())
        .oneshot(
            request
                .body(Body::empty())
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, value)
}

fn served(scratch: &Scratch) -> AppState {
    AppState::new(scratch.home(), Options::default())
}

#[tokio::test]
async fn the_run_endpoint_gives_the_stores_view_with_detected_warnings() {
    let scratch = Scratch::new();
    scratch.capture("nested", "v1_basic");
    let loaded = scratch
        .home()
        .load_run(&"nested".into())
        .unwrap_or_else(|e| panic!("{e}"));
    let (expected, _) = agentrace_core::warnings::with_detected(
        loaded.view(),
        loaded.book.evidence(),
        None,
        &WarningConfig::default(),
    );
    let (status, body) = get(&served(&scratch), "/api/runs/nested", None).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            serde_json::to_value(&expected).unwrap_or_default()
        )
    );
}

#[tokio::test]
async fn the_run_list_has_status_provider_counts_and_warning_count() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let (status, body) = get(&served(&scratch), "/api/runs", None).await;
    let run = &body["runs"][0];
    assert_eq!(
        (
            status,
            &run["id"],
            &run["status"],
            &run["provider"],
            &run["counts"]["events"],
            &run["warningCount"]
        ),
        (
            StatusCode::OK,
            &json!("basic"),
            &json!("done"),
            &json!("codex"),
            &json!(89),
            &json!(0)
        )
    );
}

/// `(warningCount of the run in /api/runs, warnings of /api/runs/copied)`.
async fn counted_and_shown(state: &AppState) -> (Value, Value) {
    let (_, list) = get(state, "/api/runs", None).await;
    let (_, view) = get(state, "/api/runs/copied", None).await;
    let codes: Vec<Value> = view["warnings"]
        .as_array()
        .map(|warnings| warnings.iter().map(|warning| warning["code"].clone()).collect())
        .unwrap_or_default();
    (list["runs"][0]["warningCount"].clone(), Value::Array(codes))
}

#[tokio::test]
async fn the_run_list_counts_the_warnings_the_run_endpoint_lists() {
    let scratch = Scratch::new();
    // v1_basic with the root's answer replaced by a helper's, word for word.
    let text = std::fs::read_to_string(super::support::capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let edited = text.replace(
        "ROOT DONE: all sub-agents finished; final answer from the root agent.",
        "CHILD A DONE: the command printed hello-from-child-A.",
    );
    assert_ne!(edited, text, "the capture changed; update this test");
    scratch.record("copied", edited.as_bytes(), true);
    assert_eq!(
        counted_and_shown(&served(&scratch)).await,
        (json!(1), json!(["helper_result_used_as_done"]))
    );
    let mut config = WarningConfig::default();
    config.allow.insert("helper_result_used_as_done".to_owned());
    let allowing = AppState::new(scratch.home(), Options { config: agentrace_server::Judge::Fixed(config), ..Options::default() });
    assert_eq!(counted_and_shown(&allowing).await, (json!(0), json!([])));
}

#[tokio::test]
async fn events_page_by_sequence_and_every_event_is_seen_exactly_once() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let state = served(&scratch);
    let mut after = 0;
    let mut seen = Vec::new();
    loop {
        let (status, page) = get(
            &state,
            &format!("/api/runs/basic/events?after={after}&limit=10"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        for event in page["events"].as_array().cloned().unwrap_or_default() {
            seen.push(event["sequence"].as_u64().unwrap_or(0));
        }
        match page["next"].as_u64() {
            Some(next) => after = next,
            None => break,
        }
    }
    assert_eq!(seen, (1..=89).collect::<Vec<u64>>());
}

#[tokio::test]
async fn the_helpers_filter_keeps_only_helper_events_with_final_actors() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let (_, page) = get(
        &served(&scratch),
        "/api/runs/basic/events?actor=helpers&limit=1000",
        None,
    )
    .await;
    let events = page["events"].as_array().cloned().unwrap_or_default();
    let roles: Vec<&str> = events
        .iter()
        .filter_map(|e| e["actor"]["role"].as_str())
        .collect();
    assert_eq!(
        (roles.len() > 10, roles.iter().all(|role| *role == "helper")),
        (true, true)
    );
}

#[tokio::test]
async fn search_finds_the_events_that_contain_the_text() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let (_, page) = get(
        &served(&scratch),
        "/api/runs/basic/events?q=HELLO-FROM-CHILD-A&limit=1000",
        None,
    )
    .await;
    let events = page["events"].as_array().cloned().unwrap_or_default();
    assert!(!events.is_empty());
    assert!(events.iter().all(|event| event
        .to_string()
        .to_lowercase()
        .contains("hello-from-child-a")));
}

#[tokio::test]
async fn records_come_from_the_child_work_reducer() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let (status, body) = get(&served(&scratch), "/api/runs/basic/records", None).await;
    let records = body["records"].as_array().cloned().unwrap_or_default();
    let summary: Vec<(Value, Value, Value)> = records
        .iter()
        .map(|r| (r["label"].clone(), r["state"].clone(), r["outcome"].clone()))
        .collect();
    assert_eq!(
        (status, summary),
        (
            StatusCode::OK,
            vec![(json!("Dewey"), json!("ended"), json!("succeeded")),]
        )
    );
}

#[tokio::test]
async fn a_path_traversal_attempt_is_refused() {
    let scratch = Scratch::new();
    std::fs::write(scratch.dir.path().join("secret.jsonl"), "{}").unwrap_or_else(|e| panic!("{e}"));
    let state = served(&scratch);
    for uri in [
        "/api/runs/..%2Fsecret",
        "/api/runs/..",
        "/api/runs/%2e%2e%2fsecret/events",
        "/runs/..%2Fsecret",
    ] {
        let (status, _) = get(&state, uri, None).await;
        assert_eq!((uri, status), (uri, StatusCode::BAD_REQUEST));
    }
}

#[tokio::test]
async fn an_unknown_run_is_not_found() {
    let scratch = Scratch::new();
    let (status, body) = get(&served(&scratch), "/api/runs/nothing-here", None).await;
    assert_eq!(
        (status, body["error"].is_string()),
        (StatusCode::NOT_FOUND, true)
    );
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_refused_and_the_right_one_accepted() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let state = AppState::new(
        scratch.home(),
        Options {
            token: Some("a-long-enough-test-token".to_owned()),
            ..Options::default()
        },
    );
    let missing = get(&state, "/api/runs", None).await.0;
    let wrong = get(&state, "/api/runs", Some("a-long-enough-test-tokem"))
        .await
        .0;
    let right = get(&state, "/api/runs", Some("a-long-enough-test-token"))
        .await
        .0;
    let in_query = get(&state, "/api/runs?token=a-long-enough-test-token", None)
        .await
        .0;
    let page = get(&state, "/", None).await.0;
    assert_eq!(
        (missing, wrong, right, in_query, page),
        (
            StatusCode::UNAUTHORIZED,
            StatusCode::UNAUTHORIZED,
            StatusCode::OK,
            StatusCode::OK,
            StatusCode::UNAUTHORIZED
        )
    );
}

#[tokio::test]
async fn a_loopback_server_refuses_requests_for_another_host_name() {
    let scratch = Scratch::new();
    let state = AppState::new(
        scratch.home(),
        Options {
            allowed_hosts: Some(vec!["127.0.0.1".to_owned()]),
            ..Options::default()
        },
    );
    let request = |host: &str| {
        Request::get("/api/runs")
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let evil = app(state.clone())
        .oneshot(request("evil.example:7878"))
        .await
        .map(|r| r.status());
    let own = app(state)
        .oneshot(request("127.0.0.1:7878"))
        .await
        .map(|r| r.status());
    assert_eq!(
        (evil.ok(), own.ok()),
        (Some(StatusCode::FORBIDDEN), Some(StatusCode::OK))
    );
}

#[tokio::test]
async fn every_response_carries_a_strict_content_security_policy() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let state = served(&scratch);
    for uri in [
        "/",
        "/runs/basic",
        "/assets/app.js",
        "/api/runs",
        "/api/runs/missing",
    ] {
        let response = app(state.clone())
            .oneshot(
                Request::get(uri)
                    .body(Body::empty())
                    .unwrap_or_else(|e| panic!("{e}")),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let policy = response
            .headers()
            .get(header::CONTENT_SECURITY_POLICY)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        assert_eq!(
            (uri, policy),
            (uri, Some(CONTENT_SECURITY_POLICY.to_owned()))
        );
    }
    assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self'"));
    assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
}

#[tokio::test]
async fn the_viewer_never_inserts_html() {
    let script = include_str!("../../assets/app.js");
    for forbidden in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(!script.contains(forbidden), "app.js uses {forbidden}");
    }
}

#[tokio::test]
async fn the_stream_of_a_live_run_sends_new_envelopes_as_they_are_written() {
    let (scratch, lines) = (Scratch::new(), capture_lines("v1_basic"));
    let (mut writer, mut recorder, state) =
        live_run(&scratch, &lines, std::time::Duration::from_millis(20));
    let (_, before) = get(&state, "/api/runs/live", None).await;
    let last = before["run"]["counts"]["events"].as_u64().unwrap_or(0);
    let response = stream(&state, &format!("/api/runs/live/stream?after={last}")).await;
    assert_eq!(
        response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    super::support::push(
        &mut writer,
        &mut recorder,
        lines[40..].join("\n").as_bytes(),
    );
    let mut body = response.into_body();
    let text = streamed_until_done(&mut body).await;
    let sequences = envelope_sequences(&text);
    assert_eq!(sequences.first(), Some(&(last + 1)));
    assert!(
        sequences.windows(2).all(|pair| pair[1] == pair[0] + 1),
        "{sequences:?}"
    );
    assert!(text.contains("event: record"), "{text}");
    assert!(text.contains("event: run"), "{text}");
}

#[tokio::test]
async fn the_stream_of_a_live_run_is_woken_by_a_write_not_by_its_poll_period() {
    let (scratch, lines) = (Scratch::new(), capture_lines("v1_basic"));
    // A poll period far past the test's deadline: only the watcher of the
    // log can bring the new lines in time.
    let (mut writer, mut recorder, state) =
        live_run(&scratch, &lines, std::time::Duration::from_secs(3600));
    let response = stream(&state, "/api/runs/live/stream").await;
    let mut body = response.into_body();
    // The stream's first view, of the 40 lines, before anything is written.
    let (_, before) = get(&state, "/api/runs/live", None).await;
    let written = before["run"]["counts"]["events"].as_u64().unwrap_or(0);
    streamed_records(&mut body, written).await;
    // Written a while after the poller started, and in two writes.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    super::support::push(&mut writer, &mut recorder, lines[40..60].join("\n").as_bytes());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    super::support::push(&mut writer, &mut recorder, lines[60..].join("\n").as_bytes());
    // Nothing else reads the run now (a request would bring it up to date
    // and so wake the stream itself).
    let text = streamed_until_done(&mut body).await;
    let last = envelope_sequences(&text).into_iter().max();
    assert!(last.is_some_and(|last| last > written), "{last:?} after {written}: {text}");
}

/// The lines of a capture's transcript.
fn capture_lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(super::support::capture(name))
        .unwrap_or_else(|e| panic!("{e}"))
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A live run `live` recorded from the first 40 lines, still open, and a
/// server over its home that polls live runs every `poll`.
fn live_run(
    scratch: &Scratch,
    lines: &[String],
    poll: std::time::Duration,
) -> (RunWriter, Recorder, AppState) {
    let (writer, recorder) = scratch.record("live", lines[..40].join("\n").as_bytes(), false);
    let state = AppState::new(
        scratch.home(),
        Options {
            poll,
            ..Options::default()
        },
    );
    (writer, recorder, state)
}

/// The response to a request for a stream, its body not yet read.
async fn stream(state: &AppState, uri: &str) -> axum::response::Response {
    app(state.clone())
        .oneshot(
            Request::get(uri)
                .body(Body::empty())
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Reads an SSE body until the run is done (its view says so); the text
/// read. Panics after 10 s, or when the stream ends before.
async fn streamed_until_done(body: &mut Body) -> String {
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !text.contains("\"status\":\"done\"") {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .unwrap_or_else(|_| panic!("no done in the stream within 10 s: {text}"));
        let Some(Ok(frame)) = frame else { panic!("the stream ended: {text}") };
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
    }
    text
}

/// The sequences of the `envelope` events of an SSE text, in order.
fn envelope_sequences(text: &str) -> Vec<u64> {
    text.split("\n\n")
        .filter(|event| event.starts_with("event: envelope"))
        .filter_map(|event| event.split_once("data: "))
        .filter_map(|(_, data)| serde_json::from_str::<Value>(data).ok())
        .filter_map(|envelope| envelope["sequence"].as_u64())
        .collect()
}

/// Reads an SSE body until a `run` event counts `events` envelopes; returns
/// the records it holds then (its `records`, then each `record` change).
async fn streamed_records(body: &mut Body, events: u64) -> Vec<Value> {
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut records: Vec<Value> = Vec::new();
        let mut done = false;
        for event in text.split("\n\n").filter(|event| event.ends_with('}') || event.ends_with(']')) {
            let Some((name, data)) = event.split_once("\ndata: ") else { continue };
            let name = name.trim_start_matches("event: ");
            let data: Value = serde_json::from_str(data).unwrap_or(Value::Null);
            match name {
                "records" => records = data["records"].as_array().cloned().unwrap_or_default(),
                "record" => match records
                    .iter_mut()
                    .find(|known| known["childWorkId"] == data["record"]["childWorkId"])
                {
                    Some(known) => *known = data["record"].clone(),
                    None => records.push(data["record"].clone()),
                },
                "run" => done = data["run"]["counts"]["events"].as_u64() == Some(events),
                _ => {}
            }
        }
        if done {
            return records;
        }
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .unwrap_or_else(|_| panic!("no view of {events} events within 10 s: {text}"));
        let Some(Ok(frame)) = frame else { panic!("the stream ended: {text}") };
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

#[tokio::test]
async fn two_clients_of_a_live_run_get_the_one_folds_records_as_records_gives_them() {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(super::support::capture("v1_parallel"))
        .unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&str> = text.lines().collect();
    let (mut writer, mut recorder) =
        scratch.record("live", lines[..20].join("\n").as_bytes(), false);
    let state = AppState::new(
        scratch.home(),
        Options {
            poll: std::time::Duration::from_millis(20),
            ..Options::default()
        },
    );
    let mut bodies = Vec::new();
    for _ in 0..2 {
        let response = stream(&state, "/api/runs/live/stream").await;
        bodies.push(response.into_body());
    }
    super::support::push(&mut writer, &mut recorder, lines[20..].join("\n").as_bytes());
    let events = recorder.state().summary().counts.events;
    let (_, records) = get(&state, "/api/runs/live/records", None).await;
    let mut streamed = Vec::new();
    for body in &mut bodies {
        streamed.push(streamed_records(body, events).await);
    }
    let records = records["records"].as_array().cloned().unwrap_or_default();
    assert!(!records.is_empty());
    assert_eq!(streamed, vec![records.clone(), records]);
}

/// Every answer of the API about run `id` that a snapshot could change.
async fn answers(state: &AppState, id: &str) -> Vec<(StatusCode, Value)> {
    let mut answers = Vec::new();
    for uri in [
        format!("/api/runs/{id}"),
        format!("/api/runs/{id}/records"),
        format!("/api/runs/{id}/events?limit=1000"),
        format!("/api/runs/{id}/events?after=7&limit=5"),
        format!("/api/runs/{id}/events?actor=helpers&limit=1000"),
        format!("/api/runs/{id}/events?actor=main&limit=1000"),
        format!("/api/runs/{id}/events?q=done&limit=1000"),
    ] {
        answers.push(get(state, &uri, None).await);
    }
    answers
}

/// A fixed clock, so time-based detectors judge both servers alike.
fn fixed_clock() -> agentrace_core::model::Timestamp {
    agentrace_core::model::Timestamp::from_millis(1_795_993_500_000)
}

fn served_at_a_fixed_time(scratch: &Scratch) -> AppState {
    AppState::new(
        scratch.home(),
        Options {
            clock: fixed_clock,
            ..Options::default()
        },
    )
}

#[tokio::test]
async fn a_snapshot_taken_mid_run_never_changes_the_answers_of_the_api() {
    for capture in ["v1_parallel", "v1_basic", "v2_interrupt_agent"] {
        let scratch = Scratch::new();
        let text = std::fs::read_to_string(super::support::capture(capture))
            .unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<&str> = text.lines().collect();
        let half = lines.len() / 2;
        let (mut writer, mut recorder) =
            scratch.record("run", lines[..half].join("\n").as_bytes(), false);
        writer.save_snapshot().unwrap_or_else(|e| panic!("{e}"));
        super::support::push(
            &mut writer,
            &mut recorder,
            lines[half..].join("\n").as_bytes(),
        );
        writer
            .append(&recorder.finish())
            .unwrap_or_else(|e| panic!("{e}"));
        let home = scratch.home();
        let id = "run".into();
        let (_, miss) = agentrace_server::runs::LiveRun::resume(
            "run".into(),
            home.log_path(&id),
            &home.snapshot_path(&id),
            home.prices(),
        );
        assert_eq!(miss, None, "{capture}");

        let from_snapshot = answers(&served_at_a_fixed_time(&scratch), "run").await;
        std::fs::remove_file(home.snapshot_path(&id)).unwrap_or_else(|e| panic!("{e}"));
        let from_the_start = answers(&served_at_a_fixed_time(&scratch), "run").await;

        assert_eq!(from_snapshot[0].0, StatusCode::OK, "{capture}");
        assert_eq!(from_snapshot, from_the_start, "{capture}");
    }
}

#[tokio::test]
async fn a_snapshot_of_a_rewritten_log_is_ignored_and_the_log_folded_from_its_start() {
    let scratch = Scratch::new();
    let (writer, _) = scratch.record(
        "run",
        &std::fs::read(super::support::capture("v1_parallel")).unwrap_or_else(|e| panic!("{e}")),
        true,
    );
    writer.save_snapshot().unwrap_or_else(|e| panic!("{e}"));
    let home = scratch.home();
    let id = "run".into();
    let log = home.log_path(&id);
    // Another run's log under the same name, snapshot left behind.
    let other = Scratch::new();
    other.capture("run", "v1_basic");
    std::fs::copy(other.home().log_path(&id), &log).unwrap_or_else(|e| panic!("{e}"));

    let answered = answers(&served_at_a_fixed_time(&scratch), "run").await;

    assert_eq!(answered[0].0, StatusCode::OK);
    assert_eq!(
        answered,
        answers(&served_at_a_fixed_time(&other), "run").await
    );
}

#[tokio::test]
async fn a_long_run_folded_without_a_snapshot_leaves_one_that_gives_the_same_answers() {
    let scratch = Scratch::new();
    super::support::record_generated_run(&scratch, "long", 5_000, None);
    let home = scratch.home();
    let id = "long".into();
    let log_length = std::fs::metadata(home.log_path(&id))
        .unwrap_or_else(|e| panic!("{e}"))
        .len();
    assert!(
        log_length >= agentrace_store::SNAPSHOT_MIN_BYTES,
        "the run is too short to get a snapshot: {log_length} bytes"
    );
    // As a run recorded before snapshots existed.
    std::fs::remove_file(home.snapshot_path(&id)).unwrap_or_else(|e| panic!("{e}"));

    let folded = answers(&served_at_a_fixed_time(&scratch), "long").await;
    let left =
        agentrace_store::RunFold::load_snapshot(&home.snapshot_path(&id), &home.log_path(&id), &id, &home.prices())
            .map(|fold| fold.offset());
    let from_snapshot = answers(&served_at_a_fixed_time(&scratch), "long").await;

    assert_eq!(folded[0].0, StatusCode::OK);
    assert_eq!((left, from_snapshot), (Ok(log_length), folded));
}

/// `answers` with pages that start past several index points and the
/// raw frames' references in them.
async fn paged_answers(state: &AppState, id: &str) -> Vec<(StatusCode, Value)> {
    let mut answered = answers(state, id).await;
    for uri in [
        format!("/api/runs/{id}/events?after=1500&limit=50"),
        format!("/api/runs/{id}/events?after=4090&limit=20"),
        format!("/api/runs/{id}/events?after=3000&actor=helpers&limit=30"),
        format!("/api/runs/{id}/events?after=2000&q=needle&limit=5"),
    ] {
        answered.push(get(state, &uri, None).await);
    }
    answered
}

/// The answers with each event's `rawRef` left out and `raw: null` with its
/// `rawUnavailable` (the v3 run's sources do not exist) taken away: what a
/// v2 run without references answers.
fn without_references(mut answered: Vec<(StatusCode, Value)>) -> Vec<(StatusCode, Value)> {
    for (_, body) in &mut answered {
        for event in body.get_mut("events").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(event) = event.as_object_mut() {
                event.remove("rawRef");
                event.remove("raw");
                event.remove("rawUnavailable");
            }
        }
    }
    answered
}

#[tokio::test]
async fn pages_of_a_v3_log_from_any_seek_point_and_its_snapshot_answer_as_the_v2_log_does() {
    let v2 = Scratch::new();
    super::support::record_generated_run_as(&v2, "long", 5_000, Some((4_321, "needle")), false);
    let v3 = Scratch::new();
    super::support::record_generated_run_as(&v3, "long", 5_000, Some((4_321, "needle")), true);
    let id = "long".into();
    let home = v3.home();
    let log_length = std::fs::metadata(home.log_path(&id)).unwrap_or_else(|e| panic!("{e}")).len();
    let (_, miss) = agentrace_server::runs::LiveRun::resume(id.clone(), home.log_path(&id), &home.snapshot_path(&id), home.prices());

    let from_snapshot = paged_answers(&served_at_a_fixed_time(&v3), "long").await;
    std::fs::remove_file(home.snapshot_path(&id)).unwrap_or_else(|e| panic!("{e}"));
    let from_the_start = paged_answers(&served_at_a_fixed_time(&v3), "long").await;
    let of_v2 = paged_answers(&served_at_a_fixed_time(&v2), "long").await;
    let references = from_the_start[2].1["events"][10]["rawRef"].clone();

    assert!(log_length >= agentrace_store::SNAPSHOT_MIN_BYTES, "too short for a snapshot: {log_length} bytes");
    assert_eq!(miss, None);
    assert_eq!(from_snapshot, from_the_start);
    assert_eq!(
        references,
        json!({"path": "/sources/session-2.jsonl", "offset": 1100, "length": 99, "crc32": 11})
    );
    assert_eq!(without_references(from_the_start), of_v2);
}

#[tokio::test]
async fn the_run_list_is_paged_and_filtered_and_counts_every_match() {
    let scratch = Scratch::new();
    for id in ["a", "b", "c"] {
        scratch.capture(id, "v1_basic");
    }
    let state = served(&scratch);
    let ids = |body: &Value| -> Vec<Value> { body["runs"].as_array().map(|runs| runs.iter().map(|run| run["id"].clone()).collect()).unwrap_or_default() };
    let (status, page) = get(&state, "/api/runs?limit=2&offset=1", None).await;
    assert_eq!((status, ids(&page), page["total"].clone()), (StatusCode::OK, vec![json!("b"), json!("a")], json!(3)));
    let (_, all) = get(&state, "/api/runs", None).await;
    assert_eq!((ids(&all), all["total"].clone()), (vec![json!("c"), json!("b"), json!("a")], json!(3)));
    let (_, failed) = get(&state, "/api/runs?status=failed&provider=codex", None).await;
    assert_eq!(failed, json!({"runs": [], "total": 0}));
    let (_, claude) = get(&state, "/api/runs?provider=claude", None).await;
    assert_eq!(claude, json!({"runs": [], "total": 0}));
    let (_, later) = get(&state, "/api/runs?since=2100-01-01&limit=1", None).await;
    assert_eq!(later, json!({"runs": [], "total": 0}));
    let (status, body) = get(&state, "/api/runs?since=someday", None).await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, json!({"error": "since=someday: expected a day like 2026-11-30 or 20261130, or today, yesterday, 7d (days ago) or 2w (weeks ago)"}))
    );
    // Days counted back from the server's today (2026-11-29, when the
    // runs were recorded), and ccusage's form of a day.
    let fixed = served_at_a_fixed_time(&scratch);
    let total = |query: &'static str| {
        let fixed = fixed.clone();
        async move { get(&fixed, &format!("/api/runs?{query}"), None).await.1["total"].clone() }
    };
    assert_eq!(
        [total("since=today").await, total("until=yesterday").await, total("since=1d&until=0d").await, total("since=20261129&until=20261129").await, total("since=1w").await],
        [json!(3), json!(0), json!(3), json!(3), json!(3)]
    );
    // In a zone (`tz=`): the runs started at 23:03 UTC, the next morning in
    // Tokyo; a zone the server does not know is refused.
    assert_eq!(
        [
            total("since=2026-11-30").await,
            total("since=2026-11-30&tz=Asia/Tokyo").await,
            total("until=2026-11-29&tz=Asia/Tokyo").await,
            total("since=2026-11-30&tz=%2B09:00").await,
            total("since=2026-11-30&tz=").await,
        ],
        [json!(0), json!(3), json!(0), json!(3), json!(0)]
    );
    // An order or a warning code the catalog does not know is refused,
    // named; a blank one is none.
    let (status, body) = get(&state, "/api/runs?sort=price", None).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "sort=price: expected one of started, cost, tokens, duration, warnings"})));
    let (status, body) = get(&state, "/api/runs?warning=lost_turns", None).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "warning=lost_turns: not a warning code; expected `any` or a code as `check` names it"})));
    // A status or provider no run can have would list nothing, as an
    // empty history would: refused, named.
    let (status, body) = get(&state, "/api/runs?status=finished", None).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "status=finished: expected one of running, done, failed, interrupted, live"})));
    let (status, body) = get(&state, "/api/runs?provider=gemini", None).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "provider=gemini: expected codex, claude or unknown"})));
    let (status, body) = get(&state, "/api/search?q=x&provider=gemini", None).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "provider=gemini: expected codex, claude or unknown"})));
    // A query that does not fit its types is refused as JSON too (axum's
    // own refusal was plain text), on every route that takes one.
    let (status, body) = get(&state, "/api/runs?limit=abc", None).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "Failed to deserialize query string: limit: invalid digit found in string"})));
    let (status, body) = get(&state, "/api/search?q=x&limit=-1", None).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "Failed to deserialize query string: limit: invalid digit found in string"})));
    let (_, blank) = get(&state, "/api/runs?sort=&warning=&status=&provider=", None).await;
    assert_eq!((ids(&blank), blank["total"].clone()), (vec![json!("c"), json!("b"), json!("a")], json!(3)));
    let (_, none) = get(&state, "/api/runs?warning=orphan_child&sort=warnings", None).await;
    assert_eq!(none, json!({"runs": [], "total": 0}));
    let (status, body) = get(&state, "/api/runs?tz=Mars/Olympus", None).await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, json!({"error": "tz=Mars/Olympus: no time zone \"Mars/Olympus\": expected UTC, local (this machine's zone), a name like Europe/Paris, or an offset like +05:30"}))
    );
}

#[tokio::test]
async fn search_finds_a_tools_text_with_its_run_sequence_and_actor() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let (status, body) = get(&served(&scratch), "/api/search?q=hello-from-child-A&limit=2&actor=helpers", None).await;
    let hit = |sequence: u64, timestamp: &str, snippet: &str| {
        json!({
            "runId": "basic",
            "sequence": sequence,
            "threadId": "01a2298c-947a-75b0-8b49-6a2e1016272b",
            "label": "Dewey",
            "role": "helper",
            "timestamp": timestamp,
            "snippet": snippet,
        })
    };
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"hits": [
                hit(38, "2026-11-29T23:03:29.128Z", "CHILD A DONE: the command printed [hello-from-child-A]."),
                hit(27, "2026-11-29T23:03:28.978Z", "shell [hello-from-child-A]\n"),
            ]})
        )
    );
    // The root quoted it, in its prompt and its answers.
    let (_, root) = get(&served(&scratch), "/api/search?q=hello-from-child-A&actor=main", None).await;
    let main = |sequence: u64, timestamp: &str, snippet: &str| {
        json!({
            "runId": "basic",
            "sequence": sequence,
            "threadId": "01a2298c-93ba-7001-9862-9fd03c21f5d4",
            "label": "Main",
            "role": "root",
            "timestamp": timestamp,
            "snippet": snippet,
        })
    };
    assert_eq!(
        root,
        json!({"hits": [
            main(49, "2026-11-29T23:03:29.240Z", "…the command printed [hello-from-child-A]."),
            main(44, "2026-11-29T23:03:29.148Z", "…the command printed [hello-from-child-A]."),
            main(12, "2026-11-29T23:03:28.634Z", "…Run the shell command `echo [hello-from-child-A]` and report its…"),
        ]})
    );
    // The same filters as the run list: provider, project, days (of tz=).
    let count = |query: &'static str| {
        let scratch = &scratch;
        async move { get(&served(scratch), &format!("/api/search?q=hello-from-child-A&actor=main&{query}"), None).await.1["hits"].as_array().map(Vec::len) }
    };
    assert_eq!(
        [count("provider=codex").await, count("provider=claude").await, count("project=nowhere").await, count("since=2026-11-30").await, count("since=2026-11-30&tz=Asia/Tokyo").await, count("until=2026-11-29").await],
        [Some(3), Some(0), Some(0), Some(0), Some(3), Some(3)]
    );
}

/// A minute, and ten, after the `single_bg` helper started its command.
fn a_minute_after_the_helpers_command() -> agentrace_core::model::Timestamp {
    agentrace_core::model::Timestamp::from_millis(1_795_992_852_337 + 60_000)
}

fn ten_minutes_after_the_helpers_command() -> agentrace_core::model::Timestamp {
    agentrace_core::model::Timestamp::from_millis(1_795_992_852_337 + 600_000)
}

/// `/api/live` gives each running session's agents as `top` shows them,
/// with the tool a helper runs now and since when, and a helper quiet past
/// the `silent_agent` limit marked `silent` (maybe stuck); the ended ones
/// after, as many as `recent` asks.
#[tokio::test]
async fn the_live_endpoint_gives_each_agent_state_and_the_tool_it_runs_now() {
    use agentrace_core::model::RunId;
    use super::support::Transcripts;
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let session = Transcripts::of("single_bg");
    // Fed until the helper runs a tool.
    let mut writer = scratch.home().create_run(&RunId::from("bg")).unwrap_or_else(|e| panic!("{e}"));
    let mut recorder = Recorder::new(RunId::from("bg"), agentrace_core::recorder::Format::ClaudeTranscript);
    writer.append(&recorder.start(session.lines[0].2)).unwrap_or_else(|e| panic!("{e}"));
    let home = scratch.home();
    let records = || home.load_run(&RunId::from("bg")).unwrap_or_else(|e| panic!("{e}")).records();
    let mut fed = 0;
    while !records().iter().any(|record| record.operation.is_some()) {
        assert!(fed < session.lines.len(), "the helper runs no tool");
        Transcripts::feed(&session.lines[fed..=fed], &mut writer, &mut recorder);
        fed += 1;
    }
    writer.write_record(&recorder.state().summary()).unwrap_or_else(|e| panic!("{e}"));
    let state = AppState::new(scratch.home(), Options { clock: a_minute_after_the_helpers_command, ..Options::default() });
    let (status, body) = get(&state, "/api/live", None).await;
    let shown = |body: &Value| -> Vec<(Value, Value, Value)> {
        body["sessions"]
            .as_array()
            .map(|sessions| sessions.iter().map(|s| (s["run"]["id"].clone(), s["live"].clone(), s["agents"].clone())).collect())
            .unwrap_or_default()
    };
    let helper = recorder.state().view().agents[0].children[0].thread_id.0.clone();
    let helper_record = records().remove(0);
    let tool = helper_record.operation.clone().unwrap_or_else(|| panic!("no operation"));
    assert_eq!(
        (status, shown(&body)[0].clone()),
        (
            StatusCode::OK,
            (
                json!("bg"),
                json!(true),
                json!([
                    {"threadId": "a276f0f8-9a47-40c2-b57a-1ea38e691bc2", "depth": 0, "label": "Main", "state": "working", "live": true, "tokens": 2769, "cost": 0.012196, "costStatus": "exact", "heardAt": "2026-11-29T22:54:12.337Z", "command": false},
                    {"threadId": helper, "depth": 1, "label": "Echo task A [general-purpose]", "state": "working", "live": true,
                     "tool": {"name": tool.tool_name, "input": tool.input, "since": tool.started_at},
                     "tokens": 2208, "cost": 0.00968, "costStatus": "exact", "heardAt": helper_record.updated_at, "command": false},
                ])
            )
        )
    );
    assert_eq!(
        (shown(&body).iter().map(|s| s.0.clone()).collect::<Vec<_>>(), &body["now"]),
        (vec![json!("bg"), json!("basic")], &json!("2026-11-29T22:55:12.337Z"))
    );
    // Ten minutes on, the helper is quiet past the limit: maybe stuck.
    let later = AppState::new(scratch.home(), Options { clock: ten_minutes_after_the_helpers_command, ..Options::default() });
    let (_, body) = get(&later, "/api/live", None).await;
    let silent = |body: &Value| -> Vec<(Value, Value)> {
        body["sessions"][0]["agents"].as_array().into_iter().flatten().map(|agent| (agent["label"].clone(), agent.get("silent").cloned().unwrap_or(Value::Null))).collect()
    };
    assert_eq!(silent(&body), vec![(json!("Main"), Value::Null), (json!("Echo task A [general-purpose]"), json!(true))]);
    let (_, only_live) = get(&state, "/api/live?recent=0", None).await;
    assert_eq!(shown(&only_live).iter().map(|s| s.0.clone()).collect::<Vec<_>>(), vec![json!("bg")]);
}

/// The viewer's warning filter offers every code a run may carry, and only
/// those (`warning=` refuses any other).
#[test]
fn the_viewers_warning_filter_offers_every_code_a_list_of_runs_can_keep_to() {
    let page = include_str!("../../assets/index.html");
    let start = page.find("<select id=\"filter-warning\">").unwrap_or_else(|| panic!("no warning filter"));
    let select = &page[start..start + page[start..].find("</select>").unwrap_or_else(|| panic!("unclosed"))];
    let offered: Vec<&str> = select.split("<option value=\"").skip(1).filter_map(|option| option.split('"').next()).collect();
    let mut codes: Vec<&str> = vec!["", "any"];
    codes.extend(agentrace_core::warnings::listable_codes());
    assert_eq!(offered, codes);
}

/// `(status, content type, body)` of a request with `method`.
async fn answered(state: &AppState, method: &str, uri: &str) -> (StatusCode, Option<String>, Value) {
    let request = Request::builder().method(method).uri(uri).body(Body::empty()).unwrap_or_else(|e| panic!("{e}"));
    let response = app(state.clone()).oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let bytes = response.into_body().collect().await.unwrap_or_else(|e| panic!("{e}")).to_bytes();
    (status, content_type, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// `POST /api/runs` and `DELETE /api/runs/latest` were a 405 with an empty
/// body and no content type, where every other refusal is JSON.
#[tokio::test]
async fn a_method_other_than_get_is_refused_as_json() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let state = served(&scratch);
    let refused = |method: &str| {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            Some("application/json".to_owned()),
            json!({"error": format!("method {method} is not allowed: agentrace serve answers GET only")}),
        )
    };
    assert_eq!(
        [
            answered(&state, "POST", "/api/runs").await,
            answered(&state, "DELETE", "/api/runs/latest").await,
            answered(&state, "PUT", "/api/runs/basic/events").await,
            answered(&state, "GET", "/api/nothing-here").await,
        ],
        [
            refused("POST"),
            refused("DELETE"),
            refused("PUT"),
            (StatusCode::NOT_FOUND, Some("application/json".to_owned()), json!({"error": "no such page"})),
        ]
    );
}

/// A `since=` after its `until=` listed nothing, 200, where `runs` and
/// `search` refuse the same days (by the one rule, the core's
/// `days::range`).
#[tokio::test]
async fn a_since_after_its_until_is_refused_by_the_run_list_and_search_as_the_command_line_refuses_it() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let state = served(&scratch);
    let backwards = json!({"error": "until=2026-11-01: it is before since=2026-12-01, so no day is in the range"});
    let (_, same_day) = get(&state, "/api/runs?since=2026-11-29&until=2026-11-29", None).await;
    assert_eq!(
        [
            get(&state, "/api/runs?since=2026-12-01&until=2026-11-01", None).await,
            get(&state, "/api/search?q=hello&since=2026-12-01&until=2026-11-01", None).await,
            get(&state, "/api/runs?since=2026-11-30&until=2026-11-29&tz=Asia/Tokyo", None).await,
        ],
        [
            (StatusCode::BAD_REQUEST, backwards.clone()),
            (StatusCode::BAD_REQUEST, backwards),
            (StatusCode::BAD_REQUEST, json!({"error": "until=2026-11-29: it is before since=2026-11-30, so no day is in the range"})),
        ]
    );
    // One day, given as both ends, is a range.
    assert_eq!(same_day["total"], json!(1));
}

/// `actor=bogus` (or `MAIN`) gave a page of no events, 200, where `events
/// --actor` refuses a name no agent of the run has and lists its agents;
/// an agent's label, as `show` prints it, keeps its events as its thread
/// id does.
#[tokio::test]
async fn an_events_actor_no_agent_of_the_run_has_is_refused_and_a_label_keeps_its_agents_events() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let state = served(&scratch);
    let (status, view) = get(&state, "/api/runs/basic", None).await;
    assert_eq!(status, StatusCode::OK);
    let mut agents = Vec::new();
    let mut stack: Vec<Value> = view["agents"].as_array().cloned().unwrap_or_default();
    while let Some(agent) = stack.pop() {
        agents.push(format!("{} ({})", agent["label"].as_str().unwrap_or_default(), agent["threadId"].as_str().unwrap_or_default()));
        stack.extend(agent["children"].as_array().cloned().unwrap_or_default().into_iter().rev());
    }
    let refused = |name: &str| {
        (
            StatusCode::BAD_REQUEST,
            json!({"error": format!(
                "actor={name}: no agent of run basic has this thread id or label; its agents (label, thread id): {}; actor takes main, helpers, unknown, an agent's label as `show` prints it, or its thread id",
                agents.join(", ")
            )}),
        )
    };
    assert_eq!(
        [
            get(&state, "/api/runs/basic/events?actor=bogus", None).await,
            get(&state, "/api/runs/basic/events?actor=MAIN", None).await,
        ],
        [refused("bogus"), refused("MAIN")]
    );
    let events = |query: &'static str| {
        let state = state.clone();
        async move { get(&state, &format!("/api/runs/basic/events?limit=1000&{query}"), None).await }
    };
    let (by_label, by_thread) = (events("actor=Dewey").await, events("actor=01a2298c-947a-75b0-8b49-6a2e1016272b").await);
    assert_eq!(
        (by_label.0, by_label.1["events"].as_array().map_or(0, Vec::len) > 0, &by_label.1),
        (StatusCode::OK, true, &by_thread.1)
    );
    let (main_label, main_role) = (events("actor=Main").await, events("actor=main").await);
    assert_eq!(main_label, main_role);
}

/// `search?actor=bogus` gave no hits, 200, where `search --actor` refuses
/// a name no agent has; a value shaped as a thread id stays a quiet
/// no-match (an older catalog may not list every agent).
#[tokio::test]
async fn a_search_actor_no_agent_has_is_refused_and_a_thread_shaped_one_is_a_quiet_no_match() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let state = served(&scratch);
    let by_label = get(&state, "/api/search?q=hello-from-child-A&actor=Dewey", None).await;
    let by_thread = get(&state, "/api/search?q=hello-from-child-A&actor=01a2298c-947a-75b0-8b49-6a2e1016272b", None).await;
    assert_eq!(
        [
            get(&state, "/api/search?q=hello&actor=bogus", None).await,
            get(&state, "/api/search?q=hello&actor=bogus&run=basic", None).await,
            get(&state, "/api/search?q=hello&actor=01a2298c-0000-0000-0000-000000000000", None).await,
            (by_label.0, json!(by_label.1["hits"].as_array().map(Vec::len))),
            by_label.clone(),
        ],
        [
            (StatusCode::BAD_REQUEST, json!({"error": "actor=bogus: no agent of any run has this thread id or label; actor takes main, helpers, unknown, an agent's label as `show` prints it, or its thread id (GET /api/runs/RUN lists a run's agents)"})),
            (StatusCode::BAD_REQUEST, json!({"error": "actor=bogus: no agent of run basic has this thread id or label; actor takes main, helpers, unknown, an agent's label as `show` prints it, or its thread id (GET /api/runs/RUN lists a run's agents)"})),
            (StatusCode::OK, json!({"hits": []})),
            (StatusCode::OK, json!(4)),
            by_thread,
        ]
    );
}

/// `warning=silent_agent` listed nothing, always: the code is judged
/// against the clock when a run is read, and no record carries it. Refused,
/// saying so, as `runs --warning silent_agent` refuses it.
#[tokio::test]
async fn a_warning_code_judged_only_when_a_run_is_read_is_refused_by_the_run_list() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let (status, body) = get(&served(&scratch), "/api/runs?warning=silent_agent", None).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"error": "warning=silent_agent: a list of runs cannot keep to this code: it is judged against the clock when a run is read, and no run's record carries it; GET /api/runs/RUN (or `agentrace check`) judges it"})
        )
    );
}

/// Every refusal named the server's runs folder ("no run matches "nope" in
/// /home/…/runs"), also to a remote client with the token; an ambiguous
/// prefix was a 404 where the command line refuses it as a request that
/// does not fit; and `/runs/nope` was the viewer's page, 200, with an empty
/// waterfall.
#[tokio::test]
async fn api_errors_name_the_run_asked_for_never_the_servers_folders_and_an_ambiguous_prefix_is_a_400() {
    let scratch = Scratch::new();
    scratch.capture("cx-basic", "v1_basic");
    scratch.capture("cx-nested", "v1_basic");
    let state = served(&scratch);
    let folder = scratch.dir.path().display().to_string();
    let answers = [
        get(&state, "/api/runs/nope", None).await,
        get(&state, "/api/runs/nope/waterfall", None).await,
        get(&state, "/api/runs/cx", None).await,
        get(&state, "/api/compare?a=cx-basic&b=cx", None).await,
    ];
    let told: Vec<_> = answers.iter().map(|(_, body)| body.to_string()).filter(|body| body.contains(&folder)).collect();
    assert_eq!(told, Vec::<String>::new());
    assert_eq!(
        answers.into_iter().collect::<Vec<_>>(),
        vec![
            (StatusCode::NOT_FOUND, json!({"error": "no run matches \"nope\""})),
            (StatusCode::NOT_FOUND, json!({"error": "no run matches \"nope\""})),
            (StatusCode::BAD_REQUEST, json!({"error": "\"cx\" matches 2 runs: cx-basic, cx-nested; give more of the id"})),
            (StatusCode::BAD_REQUEST, json!({"error": "\"cx\" matches 2 runs: cx-basic, cx-nested; give more of the id"})),
        ]
    );
}

/// The page of a run that does not exist, as a browser gets it.
async fn page(state: &AppState, uri: &str) -> (StatusCode, String) {
    let request = Request::get(uri).body(Body::empty()).unwrap_or_else(|e| panic!("{e}"));
    let response = app(state.clone()).oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap_or_else(|e| panic!("{e}")).to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn the_page_of_a_run_that_does_not_exist_says_so_with_a_404() {
    let scratch = Scratch::new();
    scratch.capture("cx-basic", "v1_basic");
    scratch.capture("cx-nested", "v1_basic");
    let state = served(&scratch);
    let folder = scratch.dir.path().display().to_string();
    let (missing, missing_text) = page(&state, "/runs/nope").await;
    let (ambiguous, ambiguous_text) = page(&state, "/runs/cx").await;
    let (found, found_text) = page(&state, "/runs/cx-basic").await;
    assert_eq!(
        (
            missing,
            missing_text.contains("no run matches &quot;nope&quot;"),
            missing_text.contains("id=\"waterfall\""),
            missing_text.contains(&folder),
            ambiguous,
            ambiguous_text.contains("matches 2 runs"),
            found,
            found_text.contains("id=\"waterfall\""),
        ),
        (StatusCode::NOT_FOUND, true, false, false, StatusCode::BAD_REQUEST, true, StatusCode::OK, true)
    );
}

/// With `--token-file`, the not-found page's links ("agentrace", "Every
/// run") were a bare `/`, which the server refuses without the token: a
/// user who mistyped a run's address had no way back but retyping the
/// token. They carry the token the address gave, as the viewer's do.
#[tokio::test]
async fn the_not_found_pages_links_carry_the_token_the_address_gave() {
    let scratch = Scratch::new();
    scratch.capture("cx-basic", "v1_basic");
    let guarded = AppState::new(
        scratch.home(),
        Options {
            token: Some("a-long-enough-test-token".to_owned()),
            ..Options::default()
        },
    );
    let links = |text: &str| -> Vec<String> {
        text.split("href=\"").skip(1).filter_map(|rest| rest.split('"').next()).map(str::to_owned).collect()
    };
    let (status, text) = page(&guarded, "/runs/nope?token=a-long-enough-test-token").await;
    let (open_status, open_text) = page(&served(&scratch), "/runs/nope").await;
    assert_eq!(
        (status, links(&text), open_status, links(&open_text)),
        (
            StatusCode::NOT_FOUND,
            // Its stylesheet too: without the token the guard refused it.
            vec!["/assets/app.css?token=a-long-enough-test-token".to_owned(), "/?token=a-long-enough-test-token".to_owned(), "/?token=a-long-enough-test-token".to_owned()],
            StatusCode::NOT_FOUND,
            vec!["/assets/app.css".to_owned(), "/".to_owned(), "/".to_owned()],
        )
    );
}

/// v1_restart_mid_child's session ended while its root waited on Hilbert:
/// the waterfall said 233 ms of a 6.7 s run, the open wait starting at the
/// axis's very end (no width, not drawn).
#[tokio::test]
async fn the_waterfall_of_a_session_that_ended_mid_turn_spans_to_its_last_line() {
    let scratch = Scratch::new();
    let bytes = std::fs::read(super::support::capture("v1_restart_mid_child")).unwrap_or_else(|e| panic!("{e}"));
    // As `ingest` ends it: at the capture's last line, 23:22:54.548Z.
    let (mut writer, mut recorder) = scratch.record("restart", &bytes, false);
    let ended = serde_json::from_value::<agentrace_core::model::Timestamp>(json!("2026-11-29T23:22:54.548Z")).unwrap_or_else(|e| panic!("{e}"));
    writer.append(&recorder.end_session(ended, agentrace_core::model::SessionEndReason::EndOfInput)).unwrap_or_else(|e| panic!("{e}"));
    writer.append(&recorder.finish()).unwrap_or_else(|e| panic!("{e}"));
    drop(writer);
    let (status, body) = get(&served(&scratch), "/api/runs/restart/waterfall", None).await;
    let bars: Vec<_> = body["bars"]
        .as_array()
        .map(|bars| bars.iter().map(|bar| (bar["kind"].clone(), bar["startMs"].clone(), bar["endMs"].clone())).collect())
        .unwrap_or_default();
    assert_eq!(
        (status, body["spanMs"].clone(), bars),
        (
            StatusCode::OK,
            json!(ended.0 - serde_json::from_value::<agentrace_core::model::Timestamp>(body["startedAt"].clone()).map_or(0, |at| at.0)),
            vec![
                (json!("turn"), json!(0), Value::Null),
                (json!("tool"), json!(112), json!(127)),
                (json!("turn"), json!(132), Value::Null),
                (json!("wait"), json!(233), Value::Null),
            ]
        )
    );
}

/// A waterfall asked for a stretch that ends before it starts
/// (`from=100&to=50`) was answered 200 with a picture of the one moment
/// `from` (a bar of it), and `width=0` or `width=-5` with the default
/// width: a request that can hold no bar is a 400 naming it, as a `since=`
/// after its `until=` is.
#[tokio::test]
async fn a_waterfall_of_a_backwards_stretch_or_no_pixels_is_refused_by_name() {
    let scratch = Scratch::new();
    scratch.capture("nested", "real_model_nested");
    let state = served(&scratch);
    let mut answers = Vec::new();
    for query in ["from=100&to=50", "to=-5", "width=0", "width=-5", "width=NaN"] {
        answers.push(get(&state, &format!("/api/runs/nested/waterfall?{query}"), None).await);
    }
    // What the page asks for is answered as before.
    let (status, body) = get(&state, "/api/runs/nested/waterfall?from=100&to=100&width=800", None).await;
    answers.push((status, json!(body["lanes"].as_array().map(Vec::len))));
    assert_eq!(
        answers,
        vec![
            (StatusCode::BAD_REQUEST, json!({"error": "to=50: it is before from=100, so no moment is in the range"})),
            (StatusCode::BAD_REQUEST, json!({"error": "to=-5: it is before from=0, so no moment is in the range"})),
            (StatusCode::BAD_REQUEST, json!({"error": "width=0: expected the pixels the waterfall is drawn on, at least 1"})),
            (StatusCode::BAD_REQUEST, json!({"error": "width=-5: expected the pixels the waterfall is drawn on, at least 1"})),
            (StatusCode::BAD_REQUEST, json!({"error": "width=NaN: expected the pixels the waterfall is drawn on, at least 1"})),
            (StatusCode::OK, json!(3)),
        ]
    );
}

/// A page address the viewer does not have (`/nonsense`, a mistyped
/// `/runz`) answered `{"error":"no such page"}` as JSON, which a browser
/// shows as raw text with no way back. It is a plain HTML page saying so,
/// 404, with a link to the run list (carrying the token the address
/// gave); an address under `/api/` stays a JSON refusal.
#[tokio::test]
async fn an_unknown_page_is_an_html_page_with_a_link_to_the_runs_and_an_unknown_api_path_stays_json() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let state = served(&scratch);
    let guarded = AppState::new(
        scratch.home(),
        Options {
            token: Some("a-long-enough-test-token".to_owned()),
            ..Options::default()
        },
    );
    let with_type = |state: AppState, uri: &'static str| async move {
        let request = Request::get(uri).body(Body::empty()).unwrap_or_else(|e| panic!("{e}"));
        let response = app(state).oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
        let status = response.status();
        let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).map(str::to_owned);
        let bytes = response.into_body().collect().await.unwrap_or_else(|e| panic!("{e}")).to_bytes();
        (status, content_type, String::from_utf8_lossy(&bytes).into_owned())
    };
    let page = |with: &str| {
        format!(
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>No such page · agentrace</title>\n<link rel=\"stylesheet\" href=\"/assets/app.css{with}\">\n</head>\n<body>\n<header><a id=\"home\" href=\"/{with}\">agentrace</a></header>\n<main>\n<h1>No such page</h1>\n<p id=\"error\" class=\"error\">no such page</p>\n<p><a href=\"/{with}\">Every run</a></p>\n</main>\n</body>\n</html>\n"
        )
    };
    let html = Some("text/html; charset=utf-8".to_owned());
    let json = Some("application/json".to_owned());
    assert_eq!(
        [
            with_type(state.clone(), "/nonsense").await,
            with_type(state.clone(), "/runs/basic/extra").await,
            with_type(guarded.clone(), "/nonsense?token=a-long-enough-test-token").await,
            with_type(state.clone(), "/api/nonsense").await,
            with_type(state.clone(), "/api").await,
            with_type(guarded, "/api/nonsense?token=a-long-enough-test-token").await,
        ],
        [
            (StatusCode::NOT_FOUND, html.clone(), page("")),
            (StatusCode::NOT_FOUND, html.clone(), page("")),
            (StatusCode::NOT_FOUND, html, page("?token=a-long-enough-test-token")),
            (StatusCode::NOT_FOUND, json.clone(), r#"{"error":"no such page"}"#.to_owned()),
            (StatusCode::NOT_FOUND, json.clone(), r#"{"error":"no such page"}"#.to_owned()),
            (StatusCode::NOT_FOUND, json, r#"{"error":"no such page"}"#.to_owned()),
        ]
    );
}

/// The server read the home's `known-prices.json` at every request and
/// taught each request's book its spans again (a fresh book each time
/// under a price file, so what a request resolved was lost with it). It
/// reads them once when it starts: a known price written after the start
/// (here one that says the run's model has no price) changes no request,
/// and every request prices as the database does.
#[tokio::test]
async fn the_server_learns_the_homes_known_prices_once_when_it_starts_and_still_prices_each_run_as_the_database_does() {
    let scratch = Scratch::new();
    // v1_basic of a model the database prices, twice: the second run is
    // folded by a later request (a run's fold is kept by the server).
    let text = std::fs::read_to_string(super::support::capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let priced = text.replace("mock-model", "gpt-5");
    assert_ne!(priced, text, "the capture changed; update this test");
    scratch.record("first", priced.as_bytes(), true);
    scratch.record("second", priced.as_bytes(), true);
    // A price file of another model: each read of the home makes a book of
    // its own, not the process's shared database book.
    let home = scratch.home();
    std::fs::write(home.prices_path(), r#"{"another-model": {"input": 1, "output": 2}}"#).unwrap_or_else(|e| panic!("{e}"));
    // The cost by the database, and the known prices a command keeps.
    let reader = home.clone().with_home_prices().unwrap_or_else(|e| panic!("{e}"));
    let expected = reader.load_run(&"first".into()).unwrap_or_else(|e| panic!("{e}")).view().run.cost;
    assert!(expected.is_some_and(|cost| cost > 0.0), "{expected:?}");
    assert!(reader.keep_known_prices().unwrap_or_else(|e| panic!("{e}")));
    let state = served(&scratch);
    let (_, first) = get(&state, "/api/runs/first", None).await;
    // Another command's known prices, written once the server runs: the
    // run's model unpriced on every day it knows.
    let path = home.known_prices_path();
    let mut known: Value = serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"));
    for span in known["spans"].as_array_mut().into_iter().flatten() {
        span["price"] = json!("unpriced");
    }
    std::fs::write(&path, known.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let (_, second) = get(&state, "/api/runs/second", None).await;
    assert_eq!(
        (&first["run"]["cost"], &second["run"]["cost"]),
        (&json!(expected), &json!(expected))
    );
}
