//! `usage` costs against an independent computation: every request of every
//! captured session priced straight from the provider files with the same
//! price database (`genai-prices`, called here directly), then added up.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use agentrace_testkit::files::{copy_dir, fixtures};

use super::support::Cli;

/// A Codex home and a Claude config dir holding every capture.
fn every_capture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for entry in std::fs::read_dir(fixtures().join("codex")).unwrap_or_else(|e| panic!("{e}")) {
        let rollouts = entry.unwrap_or_else(|e| panic!("{e}")).path().join("rollouts");
        if rollouts.is_dir() {
            copy_dir(&rollouts, &dir.path().join("codex/sessions"));
        }
    }
    for entry in std::fs::read_dir(fixtures().join("claude")).unwrap_or_else(|e| panic!("{e}")) {
        let home = entry.unwrap_or_else(|e| panic!("{e}")).path().join("home_claude");
        if home.is_dir() {
            copy_dir(&home, &dir.path().join("claude"));
        }
    }
    dir
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|ext| ext == "jsonl") {
                found.push(path);
            }
        }
    }
    found
}

fn price(provider: &str, model: &str, usage: &[(&str, f64)], timestamp: &str) -> Option<f64> {
    let mut request = genai_prices::Usage::new();
    for (key, value) in usage {
        request.insert(*key, *value);
    }
    let at = chrono_millis(timestamp);
    genai_prices::calculate(
        &genai_prices::PriceRequest::new(model, &request)
            .with_provider_id(provider)
            .with_timestamp(std::time::UNIX_EPOCH + std::time::Duration::from_millis(at)),
    )
    .ok()
    .map(|calculation| calculation.total_price)
}

/// Milliseconds of an RFC 3339 UTC time (`2026-11-29T23:03:28.665Z`).
fn chrono_millis(text: &str) -> u64 {
    let number = |range: std::ops::Range<usize>| text.get(range).and_then(|part| part.parse::<i64>().ok()).unwrap_or(0);
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + number(11..13) * 3600 + number(14..16) * 60 + number(17..19);
    let millis = text.get(20..23).and_then(|part| part.parse::<i64>().ok()).unwrap_or(0);
    u64::try_from(seconds * 1000 + millis).unwrap_or(0)
}

/// Each Codex thread's cost: its `token_count`s' `last_token_usage`, each
/// priced by the model of the turn in force.
fn codex_costs(sessions: &Path) -> HashMap<String, f64> {
    let mut costs = HashMap::new();
    for file in files(sessions) {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        let (mut thread, mut model, mut cost) = (None::<String>, None::<String>, 0.0);
        for line in text.lines() {
            let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
            let payload = &record["payload"];
            match (record["type"].as_str(), payload["type"].as_str()) {
                (Some("session_meta"), _) if thread.is_none() => thread = payload["id"].as_str().map(str::to_owned),
                (Some("turn_context"), _) => model = payload["model"].as_str().map(str::to_owned),
                (Some("event_msg"), Some("token_count")) if !payload["info"].is_null() => {
                    let last = &payload["info"]["last_token_usage"];
                    let number = |key: &str| last[key].as_f64().unwrap_or(0.0);
                    let usage = [
                        ("input_tokens", number("input_tokens")),
                        ("cache_read_tokens", number("cached_input_tokens")),
                        ("output_tokens", number("output_tokens")),
                    ];
                    if let Some(model) = &model {
                        cost += price("openai", model, &usage, record["timestamp"].as_str().unwrap_or_default()).unwrap_or(0.0);
                    }
                }
                _ => {}
            }
        }
        if let Some(thread) = thread {
            *costs.entry(thread).or_insert(0.0) += cost;
        }
    }
    costs
}

/// Each Claude session's cost: every reply counted once per message id, at
/// its final usage (the line with a stop reason, else the last seen).
fn claude_costs(projects: &Path) -> HashMap<String, f64> {
    struct Reply {
        session: String,
        model: String,
        timestamp: String,
        usage: Value,
        is_final: bool,
    }
    let mut replies: HashMap<String, Reply> = HashMap::new();
    for file in files(projects) {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        for line in text.lines() {
            let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
            let message = &record["message"];
            let (Some(id), Some(session), Some(model)) =
                (message["id"].as_str(), record["sessionId"].as_str(), message["model"].as_str())
            else {
                continue;
            };
            if record["type"] != "assistant" || message["usage"].is_null() {
                continue;
            }
            let is_final = !message["stop_reason"].is_null();
            let keep = replies.get(id).is_none_or(|kept| is_final || !kept.is_final);
            if keep {
                replies.insert(
                    id.to_owned(),
                    Reply {
                        session: session.to_owned(),
                        model: model.to_owned(),
                        timestamp: record["timestamp"].as_str().unwrap_or_default().to_owned(),
                        usage: message["usage"].clone(),
                        is_final,
                    },
                );
            }
        }
    }
    let mut costs = HashMap::new();
    for reply in replies.values() {
        let number = |key: &str| reply.usage[key].as_f64().unwrap_or(0.0);
        let (read, write) = (number("cache_read_input_tokens"), number("cache_creation_input_tokens"));
        let usage = [
            ("input_tokens", number("input_tokens") + read + write),
            ("cache_read_tokens", read),
            ("cache_write_tokens", write),
            ("output_tokens", number("output_tokens")),
        ];
        let cost = price("anthropic", &reply.model, &usage, &reply.timestamp).unwrap_or(0.0);
        *costs.entry(reply.session.clone()).or_insert(0.0) += cost;
    }
    costs
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn every_captured_session_costs_what_its_requests_cost_priced_one_by_one() {
    let dir = every_capture();
    let cli = Cli::new();
    let codex = dir.path().join("codex").to_string_lossy().into_owned();
    let claude = dir.path().join("claude").to_string_lossy().into_owned();
    let threads = codex_costs(&dir.path().join("codex/sessions"));
    let sessions = claude_costs(&dir.path().join("claude/projects"));
    let straight: Value = serde_json::from_str(&cli.ok(&["usage", "--json", "--codex-home", &codex, "--claude-dir", &claude]))
        .unwrap_or_else(|e| panic!("{e}"));
    cli.ok(&["import", "--codex-home", &codex, "--claude-dir", &claude, "--quiet"]);
    let imported: Value = serde_json::from_str(&cli.ok(&["usage", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    for report in [&straight, &imported] {
        let listed = report["sessions"].as_array().unwrap_or_else(|| panic!("{report}"));
        let mut priced = 0;
        for session in listed {
            let id = session["sessionId"].as_str().unwrap_or_default();
            let expected = match session["provider"].as_str() {
                Some("codex") => session["agents"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|agent| threads.get(agent["threadId"].as_str().unwrap_or_default()))
                    .sum::<f64>(),
                Some("claude") => sessions.get(id).copied().unwrap_or_else(|| panic!("no Claude session {id}")),
                other => panic!("{other:?}"),
            };
            let cost = session["cost"].as_f64();
            match cost {
                Some(cost) => assert!(close(cost, expected), "{id}: {cost} != {expected}"),
                // Nothing priced: the independent sum found nothing either.
                None => assert_eq!((expected, session["costStatus"].as_str()), (0.0, Some("unknown")), "{id}"),
            }
            if cost.is_some_and(|cost| cost > 0.0) {
                priced += 1;
            }
        }
        assert!(listed.len() >= 30 && priced >= 20, "{} sessions, {priced} priced", listed.len());
    }
}

#[test]
fn a_model_without_a_price_is_flagged_and_never_shown_as_zero() {
    let dir = every_capture();
    let cli = Cli::new();
    let codex = dir.path().join("codex").to_string_lossy().into_owned();
    let output = cli.run(&["usage", "--json", "--codex-home", &codex]);
    assert!(output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let unpriced = &report["unpricedModels"][0];
    assert_eq!(unpriced["model"], "mock-model", "{report}");
    let tokens = unpriced["tokens"].as_u64().unwrap_or_default();
    assert!(tokens > 0);
    assert!(
        stderr.contains(&format!("warning: no price for mock-model ({tokens} tokens); cost shown is a floor")),
        "{stderr}"
    );
    for session in report["sessions"].as_array().into_iter().flatten() {
        let all_mock = session["agents"].as_array().into_iter().flatten().all(|agent| agent["model"] == "mock-model");
        if all_mock {
            assert_eq!((&session["cost"], &session["costStatus"]), (&Value::Null, &Value::from("unknown")), "{session}");
        }
        assert_ne!(session["cost"], Value::from(0.0), "{session}");
    }
    let table = cli.ok(&["usage", "--codex-home", &codex]);
    let total = table.lines().last().unwrap_or_default();
    assert!(total.starts_with("TOTAL") && total.contains('≥'), "{table}");
}

/// ccusage's `session --json` of a Codex home and a Claude config dir.
fn ccusage_sessions(dir: &Path) -> Vec<Value> {
    let output = std::process::Command::new(agentrace_testkit::agents::ccusage())
        .args(["session", "--json", "--offline"])
        .env("CODEX_HOME", dir.join("codex"))
        .env("CLAUDE_CONFIG_DIR", dir.join("claude"))
        .env("HOME", dir)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}"));
    report["session"].as_array().cloned().unwrap_or_default()
}

#[test]
fn claude_and_codex_totals_equal_ccusages_on_every_session_both_read() {
    let dir = every_capture();
    let cli = Cli::new();
    let codex = dir.path().join("codex").to_string_lossy().into_owned();
    let claude = dir.path().join("claude").to_string_lossy().into_owned();
    let ours: Value = serde_json::from_str(&cli.ok(&["usage", "--json", "--codex-home", &codex, "--claude-dir", &claude]))
        .unwrap_or_else(|e| panic!("{e}"));
    let ours = ours["sessions"].as_array().cloned().unwrap_or_default();
    // ccusage lists a 2.0.77 top-level `agent-<id>.jsonl` (the startup
    // warmup agents and subagents) as a session of its own: it is the
    // session its lines name.
    let mut session_of_file: HashMap<String, String> = HashMap::new();
    for file in files(&dir.path().join("claude/projects")) {
        let stem = file.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
        if stem.starts_with("agent-") {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
            let first: Value = serde_json::from_str(text.lines().next().unwrap_or_default()).unwrap_or_default();
            if let Some(session) = first["sessionId"].as_str() {
                session_of_file.insert(stem, session.to_owned());
            }
        }
    }
    let mut claude_theirs: HashMap<String, u64> = HashMap::new();
    let mut codex_checked = 0;
    for theirs in ccusage_sessions(dir.path()) {
        let period = theirs["period"].as_str().unwrap_or_default();
        let tokens = theirs["totalTokens"].as_u64().unwrap_or_default();
        match theirs["agent"].as_str() {
            Some("claude") => {
                let session = session_of_file.get(period).map_or(period, String::as_str);
                *claude_theirs.entry(session.to_owned()).or_default() += tokens;
            }
            Some("codex") => {
                // ccusage reads each rollout as its own session (a child's
                // too): the agent of that thread, wherever it is in a tree.
                let thread = period.get(period.len().saturating_sub(36)..).unwrap_or_default();
                let agent = ours
                    .iter()
                    .flat_map(|session| session["agents"].as_array().cloned().unwrap_or_default())
                    .find(|agent| agent["threadId"] == thread)
                    .unwrap_or_else(|| panic!("no agent of thread {thread}"));
                assert_eq!(agent["own"]["totalTokens"].as_u64(), Some(tokens), "codex thread {thread}");
                codex_checked += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    let claude_ours: HashMap<String, u64> = ours
        .iter()
        .filter(|session| session["provider"] == "claude")
        .map(|session| {
            (session["sessionId"].as_str().unwrap_or_default().to_owned(), session["totalTokens"].as_u64().unwrap_or_default())
        })
        .collect();
    assert_eq!(claude_ours, claude_theirs);
    assert!(claude_ours.len() >= 15 && codex_checked >= 15, "{} Claude, {codex_checked} Codex", claude_ours.len());
}
