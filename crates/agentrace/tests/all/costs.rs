//! `usage` costs against an independent computation: every request of every
//! captured session priced straight from the provider files with the same
//! price database (`genai-prices`, called here directly), then added up.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use agentrace_testkit::files::{copy_dir, fixtures};

use super::import_usage::{catalog_execute, catalog_rows, keep_text, kept_text};
use super::support::Cli;

/// A Codex home and a Claude config dir holding every capture (both Codex
/// versions').
fn every_capture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for version in ["codex", "codex-0.171"] {
        for entry in std::fs::read_dir(fixtures().join(version)).unwrap_or_else(|e| panic!("{e}")) {
            let rollouts = entry.unwrap_or_else(|e| panic!("{e}")).path().join("rollouts");
            if rollouts.is_dir() {
                copy_dir(&rollouts, &dir.path().join("codex/sessions"));
            }
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
    priced_at_tier(provider, model, usage, timestamp, None)
}

/// A request priced by the database straight, at `tier` when one is given.
pub(super) fn priced_at_tier(provider: &str, model: &str, usage: &[(&str, f64)], timestamp: &str, tier: Option<&str>) -> Option<f64> {
    let mut request = genai_prices::Usage::new();
    for (key, value) in usage {
        request.insert(*key, *value);
    }
    let at = chrono_millis(timestamp);
    let mut request = genai_prices::PriceRequest::new(model, &request)
        .with_provider_id(provider)
        .with_timestamp(std::time::UNIX_EPOCH + std::time::Duration::from_millis(at));
    if let Some(tier) = tier {
        request = request.with_price_context("service_tier", tier);
    }
    genai_prices::calculate(&request).ok().map(|calculation| calculation.total_price)
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
        let hour = reply.usage["cache_creation"]["ephemeral_1h_input_tokens"].as_f64().unwrap_or(0.0);
        let usage = [
            ("input_tokens", number("input_tokens") + read + write),
            ("cache_read_tokens", read),
            ("cache_write_tokens", write),
            ("cache_write_1h_tokens", hour),
            ("output_tokens", number("output_tokens")),
            ("web_searches", reply.usage["server_tool_use"]["web_search_requests"].as_f64().unwrap_or(0.0)),
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

/// Where nothing could be priced, `usage` shows no cost (`?`) and its
/// warning says so: it said "cost shown is a floor" beside a `?`.
#[test]
fn usage_of_runs_with_no_price_at_all_says_no_cost_is_shown_not_a_floor() {
    let cli = Cli::new();
    let id = cli.ingest(&super::support::capture("v1_basic"), &[]);
    let warnings = |args: &[&str]| -> (String, Vec<String>) {
        let mut all = vec!["usage"];
        all.extend_from_slice(args);
        all.push(&id);
        let output = cli.run(&all);
        assert!(output.status.success());
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let total = stdout.lines().filter(|line| line.starts_with("TOTAL")).map(|line| line.split_whitespace().last().unwrap_or_default().to_owned()).collect();
        (total, String::from_utf8_lossy(&output.stderr).lines().filter(|line| line.starts_with("warning:")).map(str::to_owned).collect())
    };
    let report: Value = serde_json::from_str(&cli.ok(&["usage", "--json", &id])).unwrap_or_else(|e| panic!("{e}"));
    let tokens = report["unpricedModels"][0]["tokens"].as_u64().unwrap_or_default();
    let said = vec![format!("warning: no price for mock-model ({tokens} tokens); nothing was priced, so no cost is shown")];
    assert_eq!(
        [warnings(&[]), warnings(&["--json"]), warnings(&["--by", "model"]), warnings(&["--by", "block"])],
        [("?".to_owned(), said.clone()), (String::new(), said.clone()), ("?".to_owned(), said.clone()), ("?".to_owned(), said)]
    );
}

/// The run list shows costs in cents; a run that cost less than half a
/// cent is `<$0.01` there, never `$0.00` (read as free beside `show`'s
/// four places).
#[test]
fn a_run_that_cost_under_a_cent_is_listed_as_less_than_a_cent_not_as_nothing() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("claude/v2.0.77_single/home_claude"), &dir.path().join("claude"));
    let cli = Cli::new();
    cli.ok(&["import", "--quiet", "--claude-dir", &dir.path().join("claude").to_string_lossy(), "--codex-home", &dir.path().join("none").to_string_lossy()]);
    let listed: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let run = &listed["runs"][0];
    let (id, cost) = (run["id"].as_str().unwrap_or_default(), run["cost"].as_f64().unwrap_or_default());
    assert!(cost > 0.0 && cost < 0.005 && run["costStatus"] == "exact", "{run}");
    let row: Vec<String> = cli.ok(&["runs"]).lines().nth(1).unwrap_or_default().split_whitespace().map(str::to_owned).collect();
    // RUN PROVIDER PROJECT day minute TIME AGENTS TOKENS COST WARN …
    assert_eq!((row[0].as_str(), row[8].as_str()), (id, "<$0.01"), "{row:?}");
    assert!(cli.ok(&["show", id]).contains(&format!("${cost:.4}")));
}

/// `show` lists the tokens no agent of the tree owns (Claude Code 2.0.77's
/// startup "Warmup" agents) under the tree, as `usage` does, so that the
/// agents' figures add up to the run's total.
#[test]
fn show_lists_the_tokens_outside_the_tree_so_the_agents_add_up_to_the_total() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("claude/v2.0.77_single/home_claude"), &dir.path().join("claude"));
    let cli = Cli::new();
    cli.ok(&["import", "--quiet", "--claude-dir", &dir.path().join("claude").to_string_lossy(), "--codex-home", &dir.path().join("none").to_string_lossy()]);
    let shown = cli.ok(&["show", "latest"]);
    let tokens_of = |line: &str| -> Option<u64> { line.split(", ").find_map(|part| part.strip_suffix(" tokens")?.trim().rsplit(' ').next()?.parse().ok()) };
    let agents: Vec<&str> = shown.lines().skip_while(|line| *line != "agents").skip(1).take_while(|line| !line.is_empty()).collect();
    let outside: Vec<&str> = agents.iter().copied().filter(|line| line.contains("(outside the tree)")).collect();
    assert_eq!(outside, vec!["  startup (outside the tree)  102 tokens, $0.0005"], "{shown}");
    let total: u64 = shown.lines().find_map(|line| line.strip_prefix("tokens    ")?.split(' ').next()?.parse().ok()).unwrap_or_default();
    let outside_tokens = outside.iter().filter_map(|line| line.trim().split("  ").nth(1)?.split(' ').next()?.parse::<u64>().ok()).sum::<u64>();
    let agent_tokens: u64 = agents.iter().filter(|line| !line.contains("(outside the tree)")).filter_map(|line| tokens_of(line)).sum();
    assert_eq!((total, agent_tokens + outside_tokens), (675, 675), "{shown}");
}

/// A `result` line's usage (the root's final usage of one query) as the
/// database's usage keys, and its total tokens.
fn result_usage(usage: &Value) -> (Vec<(&'static str, f64)>, u64) {
    let number = |key: &str| usage[key].as_u64().unwrap_or(0);
    let (read, write) = (number("cache_read_input_tokens"), number("cache_creation_input_tokens"));
    let input = number("input_tokens") + read + write;
    let output = number("output_tokens");
    let as_f64 = |value: u64| value as f64;
    let keys = vec![
        ("input_tokens", as_f64(input)),
        ("cache_read_tokens", as_f64(read)),
        ("cache_write_tokens", as_f64(write)),
        ("cache_write_1h_tokens", as_f64(usage["cache_creation"]["ephemeral_1h_input_tokens"].as_u64().unwrap_or(0))),
        ("output_tokens", as_f64(output)),
        ("web_searches", as_f64(usage["server_tool_use"]["web_search_requests"].as_u64().unwrap_or(0))),
    ];
    (keys, input + output)
}

/// With background subagents the CLI starts the next query (and prints its
/// reply) before the first query's `result`: that `result` once covered the
/// next query's reply too, whose own `result` then counted it again, so its
/// input was priced twice and `usage` counted it where `show` did not. The
/// root of every stream-recorded capture now has the tokens of its `result`
/// lines (one per query) and their price, and `show`, `usage` and `runs`
/// give the run the same tokens and cost.
#[test]
fn a_later_querys_reply_is_counted_once_when_the_earlier_querys_result_comes_after_it() {
    let round = |cost: &Value| cost.as_f64().map(|cost| format!("{cost:.9}"));
    let mut actual = Vec::new();
    let mut expected = Vec::new();
    let mut streams = 0;
    for entry in std::fs::read_dir(fixtures().join("claude")).unwrap_or_else(|e| panic!("{e}")) {
        let dir = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let stream = dir.join("stream.jsonl");
        if !stream.is_file() {
            continue;
        }
        streams += 1;
        let name = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let cli = Cli::new();
        cli.ok(&["ingest", "--run-id", "s", &stream.to_string_lossy()]);
        let shown: Value = serde_json::from_str(&cli.ok(&["show", "--json", "s"])).unwrap_or_else(|e| panic!("{e}"));
        let used: Value = serde_json::from_str(&cli.ok(&["usage", "--json"])).unwrap_or_else(|e| panic!("{e}"));
        let listed: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
        let root = &shown["agents"][0];
        let model = root["model"].as_str().unwrap_or_default();
        let at = shown["run"]["startedAt"].as_str().unwrap_or_default();
        let text = std::fs::read_to_string(&stream).unwrap_or_else(|e| panic!("{e}"));
        let (mut root_tokens, mut root_cost) = (0, 0.0);
        for line in text.lines() {
            let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
            if record["type"] == "result" && record["usage"].is_object() {
                let (keys, tokens) = result_usage(&record["usage"]);
                root_tokens += tokens;
                root_cost += price("anthropic", model, &keys, at).unwrap_or(0.0);
            }
        }
        let run_tokens = &shown["run"]["tokens"]["totalTokens"];
        let run_cost = round(&shown["run"]["cost"]);
        let used_root = &used["sessions"][0]["agents"][0]["own"];
        actual.push((
            name.clone(),
            root["tokens"]["totalTokens"].as_u64(),
            round(&root["cost"]),
            used_root["totalTokens"].as_u64(),
            round(&used_root["cost"]),
            (used["totals"]["totalTokens"].clone(), round(&used["totals"]["cost"])),
            (listed["runs"][0]["tokens"]["totalTokens"].clone(), round(&listed["runs"][0]["cost"])),
        ));
        expected.push((
            name,
            Some(root_tokens),
            round(&Value::from(root_cost)),
            Some(root_tokens),
            round(&Value::from(root_cost)),
            (run_tokens.clone(), run_cost.clone()),
            (run_tokens.clone(), run_cost),
        ));
    }
    assert!(streams >= 15, "{streams} stream captures");
    assert_eq!(actual, expected);
}

/// A helper that reported no usage (Hilbert, whose thread restarted mid
/// turn, on a model without a price) was shown as `cost: 0.0`, `exact`: a
/// free agent. It has no figure, as the run's unpriced root has none.
#[test]
fn a_helper_that_reported_no_usage_has_no_cost_never_an_exact_zero() {
    let cli = Cli::new();
    cli.ok(&["ingest", "--run-id", "r", &fixtures().join("codex/v1_restart_mid_child/server.jsonl").to_string_lossy()]);
    let shown: Value = serde_json::from_str(&cli.ok(&["show", "--json", "r"])).unwrap_or_else(|e| panic!("{e}"));
    let mut agents = Vec::new();
    let mut todo: Vec<&Value> = shown["agents"].as_array().into_iter().flatten().collect();
    while let Some(agent) = todo.pop() {
        agents.push((agent["label"].clone(), agent["tokens"]["totalTokens"].clone(), agent["cost"].clone(), agent["costStatus"].clone()));
        todo.extend(agent["children"].as_array().into_iter().flatten());
    }
    agents.sort_by_key(|agent| agent.0.to_string());
    let figures = |label: &str, tokens: Value, status: &str| (Value::from(label), tokens, Value::Null, Value::from(status));
    assert_eq!(
        (agents, shown["run"]["cost"].clone(), shown["run"]["costStatus"].clone()),
        (
            vec![figures("Hilbert", Value::Null, "unknown"), figures("Main", Value::from(5359), "unknown")],
            Value::Null,
            Value::from("unknown"),
        )
    );
}

/// `usage` gives a helper that reported no usage what `show` gives it: no
/// cost, `unknown` (`?` in the table), never an exact $0. It said `"cost":
/// 0.0, "costStatus": "exact"` and `0.0000` for `Hilbert` of
/// `v1_restart_mid_child` (and the interrupted children of
/// `v1_interrupt_child_driver` and `v2_interrupt_agent`), recorded, imported
/// or read straight from the folders, where `show` and the API said unknown.
#[test]
fn usage_gives_a_helper_that_reported_no_usage_no_cost_as_show_does() {
    let cli = Cli::new();
    let rollouts = fixtures().join("codex/v1_restart_mid_child/rollouts");
    let codex = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&rollouts, &codex.path().join("sessions"));
    let codex_home = codex.path().to_string_lossy().into_owned();
    let claude = codex.path().join("no-claude");
    std::fs::create_dir(&claude).unwrap_or_else(|e| panic!("{e}"));
    let claude_dir = claude.to_string_lossy().into_owned();
    cli.ok(&["ingest", "--run-id", "r", &fixtures().join("codex/v1_restart_mid_child/server.jsonl").to_string_lossy()]);
    cli.ok(&["import", "--quiet", "--codex-home", &codex_home, "--claude-dir", &claude_dir]);
    let json = |text: String| -> Value { serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")) };
    let hilbert = |usage: &Value| -> Vec<Value> {
        usage["sessions"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|session| session["agents"].as_array().into_iter().flatten())
            .filter(|agent| agent["label"] == "Hilbert")
            .map(|agent| serde_json::json!([agent["own"]["totalTokens"], agent["own"]["cost"], agent["own"]["costStatus"], agent["subtree"]["costStatus"]]))
            .collect()
    };
    let recorded = json(cli.ok(&["usage", "--json", "r"]));
    let imported = json(cli.ok(&["usage", "--json", "codex-01a2299e-44a1-7231-998e-152aa90005cc"]));
    let straight = json(cli.ok(&["usage", "--json", "--codex-home", &codex_home, "--claude-dir", &claude_dir]));
    let table = cli.ok(&["usage", "r"]);
    let row: Vec<String> = table.lines().filter(|line| line.trim_start().starts_with("Hilbert")).map(|line| line.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    let unknown = serde_json::json!([0, null, "unknown", "unknown"]);
    assert_eq!(
        (hilbert(&recorded), hilbert(&imported), hilbert(&straight), row),
        (vec![unknown.clone()], vec![unknown.clone()], vec![unknown], vec!["Hilbert 0 0 0 0 0 ?".to_owned()]),
        "{table}"
    );
}

/// Each Codex rollout's own last running total (`total_token_usage`), by
/// thread.
fn codex_stated_totals(sessions: &Path) -> HashMap<String, u64> {
    let mut totals = HashMap::new();
    for file in files(sessions) {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        let (mut thread, mut total) = (None::<String>, 0);
        for line in text.lines() {
            let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
            let payload = &record["payload"];
            if record["type"] == "session_meta" && thread.is_none() {
                thread = payload["id"].as_str().map(str::to_owned);
            }
            if payload["type"] == "token_count" {
                total = payload["info"]["total_token_usage"]["total_tokens"].as_u64().unwrap_or(total);
            }
        }
        if let Some(thread) = thread {
            totals.insert(thread, total);
        }
    }
    totals
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
    let stated_totals = codex_stated_totals(&dir.path().join("codex/sessions"));
    let mut ccusage_misread = Vec::new();
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
                let own = agent["own"]["totalTokens"].as_u64();
                // Where ccusage's sum is not the rollout's own running total,
                // ccusage misread it: ours must be the rollout's total then.
                let stated = stated_totals.get(thread).copied();
                if stated == Some(tokens) {
                    assert_eq!(own, Some(tokens), "codex thread {thread}");
                    codex_checked += 1;
                } else {
                    assert_eq!(own, stated, "codex thread {thread}");
                    ccusage_misread.push(thread.to_owned());
                }
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
    // ccusage 20.0.24 counts only the last two of the four requests of
    // v1_background_exec's child (its rollout's running total says 22188,
    // ccusage 11337): the one Codex thread of the captures it misreads, in
    // both versions' capture of the scenario (0.169's, then 0.171's).
    assert_eq!(
        ccusage_misread,
        ["01a2299d-d783-7f73-8d25-01d5020aff44", "01a232dc-9c03-7671-b9e1-1a6091edebee"]
    );
    assert!(claude_ours.len() >= 15 && codex_checked >= 15, "{} Claude, {codex_checked} Codex", claude_ours.len());
}

/// A Claude config dir with `capture`'s transcripts, each line of a file
/// whose name contains `file` passed through `edit`.
fn edited_claude(capture: &str, file: &str, edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("claude").join(capture).join("home_claude"), &dir.path().join("claude"));
    for path in files(&dir.path().join("claude/projects")) {
        if path.to_string_lossy().contains(file) {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
            let edited: String = text.lines().map(|line| edit(line) + "\n").collect();
            std::fs::write(&path, edited).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    dir
}

/// The one session of `usage --json` over `dir`, straight and imported
/// (which must agree).
fn only_session(dir: &Path) -> Value {
    let cli = Cli::new();
    let claude = dir.join("claude").to_string_lossy().into_owned();
    let straight: Value = serde_json::from_str(&cli.ok(&["usage", "--json", "--claude-dir", &claude])).unwrap_or_else(|e| panic!("{e}"));
    cli.ok(&["import", "--codex-home", "/nonexistent", "--claude-dir", &claude, "--quiet"]);
    let imported: Value = serde_json::from_str(&cli.ok(&["usage", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let mut session = straight["sessions"][0].clone();
    let mut again = imported["sessions"][0].clone();
    // Only the imported one has a run.
    session["runId"] = Value::Null;
    again["runId"] = Value::Null;
    assert_eq!(session, again);
    session
}

/// A subagent's response as stdout's `message_start` snapshot shows it: no
/// stop reason, one output token.
fn as_snapshot(line: &str, message: &str) -> String {
    if !line.contains(message) || !line.contains("\"type\":\"assistant\"") {
        return line.to_owned();
    }
    let mut record: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
    record["message"]["stop_reason"] = Value::Null;
    record["message"]["usage"]["output_tokens"] = Value::from(1);
    record.to_string()
}

/// An assistant record with `writes` cache writes, `hour` of them kept for
/// an hour, split as Claude Code 2.x records it (`usage.cache_creation`).
fn with_cache_writes(line: &str, writes: u64, hour: u64) -> String {
    with_usage(line, |usage| {
        usage["cache_creation_input_tokens"] = Value::from(writes);
        usage["cache_creation"] =
            serde_json::json!({"ephemeral_5m_input_tokens": writes - hour, "ephemeral_1h_input_tokens": hour});
    })
}

/// An assistant record with its `message.usage` passed through `edit`
/// (any other line as it is).
fn with_usage(line: &str, edit: impl Fn(&mut Value)) -> String {
    let Ok(mut record) = serde_json::from_str::<Value>(line) else {
        return line.to_owned();
    };
    if record["type"] != "assistant" || !record["message"]["usage"].is_object() {
        return line.to_owned();
    }
    edit(&mut record["message"]["usage"]);
    record.to_string()
}

/// How many responses the transcripts under `dir` hold (by message id).
fn responses(dir: &Path) -> usize {
    let count = files(&dir.join("claude/projects"))
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
            text.lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|record| record["type"] == "assistant" && record["message"]["usage"].is_object())
                .filter_map(|record| record["message"]["id"].as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        })
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert!(count >= 3, "{count} responses");
    count
}

/// An assistant record whose request ran `searches` web searches.
fn with_web_searches(line: &str, searches: u64) -> String {
    with_usage(line, |usage| {
        usage["server_tool_use"] = serde_json::json!({"web_search_requests": searches, "web_fetch_requests": 0});
    })
}

/// The one session of `single_fg` with every response's usage edited by
/// `priced` and by `plain`: how much more the first costs than the second
/// (the same tokens; the first costs what its requests priced one by one
/// cost), and how many responses there are.
fn costlier(priced: impl Fn(&str) -> String, plain: impl Fn(&str) -> String) -> (f64, usize) {
    let (dir, other) = (edited_claude("single_fg", ".jsonl", priced), edited_claude("single_fg", ".jsonl", plain));
    let (session, without) = (only_session(dir.path()), only_session(other.path()));
    let cost = |session: &Value| session["cost"].as_f64().unwrap_or_else(|| panic!("no cost: {session:#}"));
    let expected: f64 = claude_costs(&dir.path().join("claude/projects")).values().sum();
    assert!(close(cost(&session), expected), "{} != {expected}", cost(&session));
    assert_eq!(session["totalTokens"], without["totalTokens"]);
    (cost(&session) - cost(&without), responses(dir.path()))
}

#[test]
fn a_web_search_costs_its_price_per_search_on_top_of_the_tokens() {
    let (more, responses) = costlier(|line| with_web_searches(line, 2), |line| with_web_searches(line, 0));
    // Ten dollars a thousand searches (Claude Opus 5.5), two per response.
    assert!(close(more, responses as f64 * 0.02), "{more} more for {responses} responses");
}

#[test]
fn a_cache_write_kept_for_an_hour_costs_the_hour_rate() {
    let hour_long = |line: &str| with_cache_writes(line, 10_000, 6_000);
    let five_minutes = |line: &str| with_cache_writes(line, 10_000, 0);
    let (more, responses) = costlier(hour_long, five_minutes);
    // Claude Opus 5.5 writes for an hour at 8 per million, for five minutes
    // at 5: 6,000 tokens of each response cost 3 per million more.
    assert!(close(more, responses as f64 * 6_000.0 * 3.0 / 1e6), "{more} more for {responses} responses");
    // `show --json` names the hour-long part of the run's writes, and
    // leaves it out where there is none.
    let shown_writes = |edit: &dyn Fn(&str) -> String| {
        let dir = edited_claude("single_fg", ".jsonl", edit);
        let cli = Cli::new();
        let claude = dir.path().join("claude").to_string_lossy().into_owned();
        cli.ok(&["import", "--codex-home", "/nonexistent", "--claude-dir", &claude, "--quiet"]);
        let runs: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
        let id = runs["runs"][0]["id"].as_str().unwrap_or_else(|| panic!("no run: {runs}")).to_owned();
        let shown: Value = serde_json::from_str(&cli.ok(&["show", "--json", &id])).unwrap_or_else(|e| panic!("{e}"));
        let tokens = &shown["run"]["tokens"];
        (tokens["cacheCreationInputTokens"].clone(), tokens["cacheCreation1hInputTokens"].clone())
    };
    let writes = responses as u64 * 10_000;
    assert_eq!(shown_writes(&hour_long), (Value::from(writes), Value::from(responses as u64 * 6_000)));
    assert_eq!(shown_writes(&five_minutes), (Value::from(writes), Value::Null));
}

#[test]
fn a_subagent_transcript_without_its_last_final_usage_takes_it_from_the_hand_back() {
    // claude-code #84223: the subagent's last response never got its final
    // record; the root's tool_result carries that response's usage.
    let dir = edited_claude("single_fg", "subagents", |line| as_snapshot(line, "msg_mock_2f825264_0003"));
    let session = only_session(dir.path());
    let helper = &session["agents"][1];
    assert_eq!(helper["label"], "Echo task A [general-purpose]", "{session:#}");
    assert_eq!((helper["own"]["inputTokens"].as_u64(), helper["own"]["outputTokens"].as_u64()), (Some(2164 + 2807), Some(53 + 20)));
    assert_eq!(helper["own"]["costStatus"], "exact", "{helper:#}");
}

#[test]
fn a_subagent_with_responses_known_only_by_their_snapshots_is_a_floor() {
    let dir = edited_claude("single_fg", "subagents", |line| as_snapshot(&as_snapshot(line, "msg_mock_2f825264_0002"), "msg_mock_2f825264_0003"));
    let session = only_session(dir.path());
    let helper = &session["agents"][1];
    // The first response keeps its snapshot's one output token; the
    // hand-back gives the last one's 20.
    assert_eq!((helper["own"]["inputTokens"].as_u64(), helper["own"]["outputTokens"].as_u64()), (Some(2164 + 2807), Some(1 + 20)));
    assert_eq!((&helper["own"]["costStatus"], &helper["own"]["incomplete"]), (&Value::from("floor"), &serde_json::json!(["missingFinalUsage"])), "{helper:#}");
    assert_eq!((&session["costStatus"], &session["incomplete"]), (&Value::from("floor"), &serde_json::json!(["missingFinalUsage"])));
}

#[test]
fn a_torn_last_line_makes_the_sessions_cost_a_floor() {
    let dir = edited_claude("single_fg", "8beed115-2652-4f2b-897f-f3849f761b78.jsonl", |line| line.to_owned());
    let main = files(&dir.path().join("claude/projects"))
        .into_iter()
        .find(|path| path.to_string_lossy().ends_with("8beed115-2652-4f2b-897f-f3849f761b78.jsonl"))
        .unwrap_or_else(|| panic!("no main transcript"));
    let mut text = std::fs::read_to_string(&main).unwrap_or_else(|e| panic!("{e}"));
    text.push_str("{\"type\":\"assistant\",\"sessionId\":\"8beed115-2652-4f2b-897f-f3849f761b78\",\"message\":{\"id\":\"msg_torn\"");
    std::fs::write(&main, text).unwrap_or_else(|e| panic!("{e}"));
    let cli = Cli::new();
    let claude = dir.path().join("claude").to_string_lossy().into_owned();
    let straight: Value = serde_json::from_str(&cli.ok(&["usage", "--json", "--claude-dir", &claude])).unwrap_or_else(|e| panic!("{e}"));
    let session = &straight["sessions"][0];
    assert_eq!((&session["costStatus"], &session["incomplete"]), (&Value::from("floor"), &serde_json::json!(["unreadableLine"])), "{session:#}");
    assert!(session["cost"].as_f64().is_some_and(|cost| cost > 0.0));
}

#[test]
fn an_import_reprices_kept_usage_that_another_price_book_priced() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("codex/real_model_basic/rollouts"), &dir.path().join("codex/sessions"));
    let cli = Cli::new();
    let codex = dir.path().join("codex").to_string_lossy().into_owned();
    cli.ok(&["import", "--codex-home", &codex, "--claude-dir", "/nonexistent", "--quiet"]);
    let fresh = cli.ok(&["usage", "--json"]);
    // As an older version kept it: no price book named, no costs.
    let stale = || {
        for row in catalog_rows(&cli, "SELECT id FROM runs WHERE usage_tree IS NOT NULL") {
            let run = row[0].as_str().unwrap_or_default();
            let mut tree: Value = serde_json::from_str(&kept_text(&cli, "usage_tree", run).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
            tree["prices"] = Value::from("");
            for agent in tree["agents"].as_array_mut().into_iter().flatten() {
                for part in agent["tokensByModel"].as_array_mut().into_iter().flatten() {
                    part["cost"] = Value::from(0.0);
                }
            }
            // The head beside the tree says what the tree says, as the
            // catalog's writer keeps it.
            keep_text(&cli, "usage_tree", run, &tree.to_string());
            catalog_execute(&cli, "UPDATE runs SET usage_prices = '' WHERE id = ?1", &[&run]);
        }
        catalog_execute(&cli, "DELETE FROM meta WHERE key = 'usage_prices'", &[]);
    };
    let books = || -> Vec<Value> {
        catalog_rows(&cli, "SELECT id FROM runs")
            .iter()
            .map(|row| {
                let tree = kept_text(&cli, "usage_tree", row[0].as_str().unwrap_or_default()).unwrap_or_default();
                serde_json::from_str::<Value>(&tree).unwrap_or_else(|e| panic!("{e}"))["prices"].clone()
            })
            .collect()
    };
    let priced = Value::from(format!("genai-prices {}", genai_prices_version()));
    stale();
    // `usage` does not trust it: it folds the log, and keeps what it folded.
    assert_eq!(cli.ok(&["usage", "--json"]), fresh);
    assert_eq!(books(), vec![priced.clone()]);
    stale();
    let output = cli.run(&["import", "--codex-home", &codex, "--claude-dir", "/nonexistent"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("note: pricing the imported runs again with genai-prices"), "{stderr}");
    assert_eq!(books(), vec![priced]);
    assert_eq!(cli.ok(&["usage", "--json"]), fresh);
    // Once: the next import says nothing of it.
    let again = cli.run(&["import", "--codex-home", &codex, "--claude-dir", "/nonexistent"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("pricing the imported runs again"));
}

fn genai_prices_version() -> String {
    let lock = std::fs::read_to_string(agentrace_testkit::agents::repo_root().join("Cargo.lock")).unwrap_or_else(|e| panic!("{e}"));
    lock.split("[[package]]")
        .find(|package| package.contains("name = \"genai-prices\""))
        .and_then(|package| package.lines().find(|line| line.starts_with("version = ")))
        .map(|line| line.trim_start_matches("version = ").trim_matches('"').to_owned())
        .unwrap_or_default()
}

#[test]
fn prices_lists_the_models_of_the_runs_with_their_rates_and_those_without_one() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("codex/v1_basic/rollouts"), &dir.path().join("codex/sessions"));
    copy_dir(&fixtures().join("claude/single_fg/home_claude"), &dir.path().join("claude"));
    let cli = Cli::new();
    let codex = dir.path().join("codex").to_string_lossy().into_owned();
    let claude = dir.path().join("claude").to_string_lossy().into_owned();
    cli.ok(&["import", "--codex-home", &codex, "--claude-dir", &claude, "--quiet"]);
    let listed: Value = serde_json::from_str(&cli.ok(&["prices", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let tokens_of = |provider: &str, model: &str| -> u64 {
        let usage: Value = serde_json::from_str(&cli.ok(&["usage", "--json", "--by", "model"])).unwrap_or_else(|e| panic!("{e}"));
        let _ = provider;
        usage["models"][model]["totalTokens"].as_u64().unwrap_or_default()
    };
    let source = format!("genai-prices {}", genai_prices_version());
    assert_eq!(
        listed,
        serde_json::json!({
            "models": [{"provider": "claude", "model": "claude-opus-5-5", "matchedModel": "claude-opus-5-5",
                        "input": 4.0, "cachedInput": 0.2, "cacheWrite": 5.0, "cacheWrite1h": 8.0, "output": 20.0,
                        "webSearches": 10.0, "tiered": false, "source": source, "tokens": tokens_of("claude", "claude-opus-5-5")}],
            "unpricedModels": [{"provider": "codex", "model": "mock-model", "tokens": tokens_of("codex", "mock-model")}],
        })
    );
    // A price file prices the rest, and says so.
    let file = dir.path().join("prices.json");
    std::fs::write(&file, r#"{"mock-model": {"input": 1.5, "cachedInput": 0.5, "cacheCreation": 2, "cacheCreation1h": 3, "output": 6}}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let with_file: Value =
        serde_json::from_str(&cli.ok(&["prices", "--json", "--prices", &file.to_string_lossy()])).unwrap_or_else(|e| panic!("{e}"));
    let mock = &with_file["models"][1];
    assert_eq!(
        (&mock["model"], &mock["source"], &mock["input"], &mock["cacheWrite"], &mock["cacheWrite1h"]),
        (&Value::from("mock-model"), &Value::from("file"), &Value::from(1.5), &Value::from(2.0), &Value::from(3.0))
    );
    assert_eq!(with_file["unpricedModels"], serde_json::json!([]));
    let table = cli.ok(&["prices"]);
    assert!(table.lines().next().is_some_and(|line| line.starts_with("MODEL")), "{table}");
    assert!(table.contains("no price: mock-model (codex, "), "{table}");
}

#[test]
fn prices_of_a_model_named_on_the_command_line_are_what_its_next_request_would_pay() {
    // No runs at all: the models are looked up by name, under each
    // provider asked (both by default), and a file's price wins.
    let cli = Cli::new();
    let named = |args: &[&str]| -> Value {
        let mut all = vec!["prices", "--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&cli.ok(&all)).unwrap_or_else(|e| panic!("{e}"))
    };
    let source = format!("genai-prices {}", genai_prices_version());
    assert_eq!(
        named(&["--model", "claude-opus-5-5", "--model", "no-such-model"]),
        serde_json::json!({
            "models": [{"provider": "claude", "model": "claude-opus-5-5", "matchedModel": "claude-opus-5-5",
                        "input": 4.0, "cachedInput": 0.2, "cacheWrite": 5.0, "cacheWrite1h": 8.0, "output": 20.0,
                        "webSearches": 10.0, "tiered": false, "source": source, "tokens": 0}],
            "unpricedModels": [{"provider": "codex, claude", "model": "no-such-model", "tokens": 0}],
        })
    );
    assert_eq!(
        named(&["--model", "claude-opus-5-5", "--provider", "codex"])["unpricedModels"],
        serde_json::json!([{"provider": "codex", "model": "claude-opus-5-5", "tokens": 0}])
    );
    let file = cli.home.path().join("prices.json");
    std::fs::write(&file, r#"{"mock-model": {"input": 1.5, "cachedInput": 0.5, "cacheCreation": 2, "cacheCreation1h": 3, "output": 6}}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let from_file = named(&["--model", "mock-model", "--provider", "codex", "--prices", &file.to_string_lossy()]);
    assert_eq!(
        (&from_file["models"][0]["source"], &from_file["models"][0]["output"]),
        (&Value::from("file"), &Value::from(6.0))
    );
    let table = cli.ok(&["prices", "--model", "no-such-model"]);
    assert!(table.contains("no price: no-such-model (looked up as codex, claude)"), "{table}");
    let alone = cli.run(&["prices", "--provider", "codex"]);
    assert_eq!(alone.status.code(), Some(2));
}

/// `prices --model NAME` reads no run, so it does not know the model's
/// tokens: the table's TOKENS column says `-` (as the run list does of
/// tokens it does not know) and a hint says why; it said 0, as if the
/// model had never been used. The JSON keeps `tokens: 0`, as documented.
#[test]
fn prices_of_a_named_model_leave_its_unknown_tokens_blank_not_zero() {
    let cli = Cli::new();
    let output = cli.run(&["prices", "--model", "claude-opus-5-5"]);
    let source = format!("genai-prices {}", genai_prices_version());
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned()),
        (
            Some(0),
            format!(
                "MODEL                                PROVIDER  INPUT $/M     CACHED  CACHE-WRITE   WRITE-1H     OUTPUT  SOURCE                           TOKENS\n\
                 claude-opus-5-5                      claude       4.0000     0.2000       5.0000     8.0000    20.0000  {source:<26}            -\n"
            ),
            "hint: TOKENS is `-`: a model named with --model is priced without reading your runs; `agentrace prices` alone counts each of your models' tokens\n".to_owned()
        )
    );
}

#[test]
fn an_app_server_stream_prices_the_root_by_the_model_its_start_names_as_its_rollouts_do() {
    for version in ["codex", "codex-0.171"] {
        let capture = fixtures().join(version).join("real_model_basic");
        let cli = Cli::new();
        let id = cli.ok(&["ingest", "--quiet", &capture.join("server.jsonl").to_string_lossy()]);
        let shown: Value = serde_json::from_str(&cli.ok(&["show", "--json", id.trim()])).unwrap_or_else(|e| panic!("{e}"));
        let mut live = Vec::new();
        let mut todo: Vec<&Value> = shown["agents"].as_array().into_iter().flatten().collect();
        while let Some(agent) = todo.pop() {
            live.push((agent["label"].clone(), agent["model"].clone(), agent["cost"].clone(), agent["costStatus"].clone()));
            todo.extend(agent["children"].as_array().into_iter().flatten());
        }
        live.sort_by_key(|agent| agent.0.to_string());
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        copy_dir(&capture.join("rollouts"), &dir.path().join("sessions"));
        let straight: Value = serde_json::from_str(&cli.ok(&["usage", "--json", "--codex-home", &dir.path().to_string_lossy()]))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut rollouts: Vec<_> = straight["sessions"][0]["agents"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|agent| (agent["label"].clone(), agent["model"].clone(), agent["own"]["cost"].clone(), agent["own"]["costStatus"].clone()))
            .collect();
        rollouts.sort_by_key(|agent| agent.0.to_string());
        assert_eq!(live, rollouts, "{version}");
        let root = live.iter().find(|agent| agent.0 == "Main").unwrap_or_else(|| panic!("no Main: {live:?}"));
        assert_eq!((&root.1, &root.3), (&Value::from("gpt-6.1-sol"), &Value::from("exact")), "{version}");
    }
}

/// A price file in the home (`$AGENTRACE_HOME/prices.json`) prices what
/// every command shows of a run: the run list, `show`, `usage`, `check`'s
/// budget and the viewer's API give one cost, the one `usage --prices` of
/// the same file gives (where only `usage`, `prices` and `statusline` took
/// a file, and the rest said `$?`). Changed, the runs are priced again;
/// removed, they are the database's again. A file that is no price table
/// is an error that names it, except for the hook, which never fails.
#[test]
fn a_price_file_in_the_home_prices_every_commands_figures_alike() {
    use super::raw_ref::{get_json, serve};
    let cli = Cli::new();
    let id = cli.ingest(&super::support::capture("v1_basic"), &[]);
    let json = |text: String| -> Value { serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")) };
    let figures = |cli: &Cli| -> Vec<(Value, Value)> {
        let runs = json(cli.ok(&["runs", "--json"]));
        let show = json(cli.ok(&["show", &id, "--json"]));
        let usage = json(cli.ok(&["usage", "--json", &id]));
        let (_server, address) = serve(cli);
        let listed = get_json(&address, "/api/runs");
        let viewed = get_json(&address, &format!("/api/runs/{id}"));
        let pair = |value: &Value| (value["cost"].clone(), value["costStatus"].clone());
        vec![pair(&runs["runs"][0]), pair(&show["run"]), pair(&usage["totals"]), pair(&listed["runs"][0]), pair(&viewed["run"])]
    };
    let priced_by = |file: &Path| -> (Value, Value) {
        let usage = json(cli.ok(&["usage", "--json", "--prices", &file.to_string_lossy(), &id]));
        (usage["totals"]["cost"].clone(), usage["totals"]["costStatus"].clone())
    };
    let unpriced = (Value::Null, Value::from("unknown"));
    assert_eq!(figures(&cli), vec![unpriced.clone(); 5]);
    let budget = |cli: &Cli| {
        let output = cli.run(&["check", &id, "--max-cost", "0.001"]);
        (output.status.code(), String::from_utf8_lossy(&output.stdout).lines().filter(|line| line.contains(" budget_")).map(|line| line.split(':').next().unwrap_or_default().to_owned()).collect::<Vec<_>>())
    };
    assert_eq!(budget(&cli), (Some(0), vec!["warning budget_unchecked".to_owned()]));

    let file = cli.home.path().join("prices.json");
    std::fs::write(&file, r#"{"mock-model": {"input": 1.25, "cachedInput": 0.125, "cacheCreation": 0, "output": 10}}"#).unwrap_or_else(|e| panic!("{e}"));
    let priced = priced_by(&file);
    assert_eq!((priced.0.as_f64().is_some_and(|cost| cost > 0.001), &priced.1), (true, &Value::from("exact")));
    assert_eq!(figures(&cli), vec![priced.clone(); 5]);
    assert_eq!(budget(&cli), (Some(1), vec!["error   budget_exceeded".to_owned()]));

    // Dearer: every figure follows the file, a server's started before
    // the change too (its list, the run's page, the usage page), and it
    // never prices the runs back.
    let (_stale, stale_address) = serve(&cli);
    let before = get_json(&stale_address, &format!("/api/runs/{id}"));
    assert_eq!((before["run"]["cost"].clone(), before["run"]["costStatus"].clone()), priced);
    std::fs::write(&file, r#"{"mock-model": {"input": 2.5, "cachedInput": 0.25, "cacheCreation": 0, "output": 20}}"#).unwrap_or_else(|e| panic!("{e}"));
    let listed = cli.run(&["runs"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stderr).lines().filter(|line| line.starts_with("note: priced")).collect::<Vec<_>>(),
        vec![format!("note: priced 1 run again: the home's price file ({}) changed since they were priced", file.display())]
    );
    let dearer = priced_by(&file);
    assert_eq!((dearer.0.as_f64().zip(priced.0.as_f64()).map(|(dearer, priced)| (dearer / priced * 1e6).round() / 1e6), figures(&cli)), (Some(2.0), vec![dearer.clone(); 5]));
    let pair = |value: &Value| (value["cost"].clone(), value["costStatus"].clone());
    let stale = [
        pair(&get_json(&stale_address, "/api/runs")["runs"][0]),
        pair(&get_json(&stale_address, &format!("/api/runs/{id}"))["run"]),
        pair(&get_json(&stale_address, "/api/usage")["totals"]),
    ];
    assert_eq!((stale.to_vec(), figures(&cli)), (vec![dearer.clone(); 3], vec![dearer; 5]));

    std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(figures(&cli), vec![unpriced; 5]);

    std::fs::write(&file, r#"{"mock-model": {"input": "cheap"}}"#).unwrap_or_else(|e| panic!("{e}"));
    let output = cli.run(&["runs"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        (output.status.code(), stderr.lines().next().map(|line| line.starts_with(&format!("error: cannot read the home's price file: {}: ", file.display())))),
        (Some(1), Some(true)),
        "{stderr}"
    );
    let hook = cli.command(&["hook"]).output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(hook.status.code(), Some(0));
}

/// A price file was parsed twice, once as prices and once for its keys,
/// and the prices came first: a misspelt key standing for one a price must
/// have (`outptu`) was refused as a missing `output`, and the typo went
/// unnamed. The file is parsed once, its keys checked before its prices:
/// the typo is named; a price that lacks a key names its model.
#[test]
fn a_price_file_with_a_misspelt_output_names_the_misspelt_key_not_a_missing_output() {
    let cli = Cli::new();
    let file = cli.home.path().join("prices.json");
    let refused = |text: &str| -> (Option<i32>, String) {
        std::fs::write(&file, text).unwrap_or_else(|e| panic!("{e}"));
        let output = cli.run(&["runs"]);
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let keys = "a price's keys are input, cachedInput, cacheCreation, cacheCreation1h, output, webSearches (US dollars per million tokens; webSearches per thousand searches)";
    let expected = "expected {\"model\": {\"input\": …, \"cachedInput\": …, \"cacheCreation\": …, \"output\": …}} (US dollars per million tokens)";
    assert_eq!(
        [refused(r#"{"mock-model": {"input": 1.25, "outptu": 10}}"#), refused(r#"{"mock-model": {"input": 1.25}}"#)],
        [
            (Some(1), format!("error: cannot read the home's price file: {}: \"mock-model\" has an unknown key \"outptu\"; {keys}\n", file.display())),
            (Some(1), format!("error: cannot read the home's price file: {}: \"mock-model\": {expected}: missing field `output`\n", file.display())),
        ]
    );
}

/// A price file with a misspelt key or a rate below zero is refused with
/// an error that names the model and the key, in the home and as
/// `--prices`: before, `cachedInputs` was passed over (cache reads priced
/// at $0, `"costStatus": "exact"`) and `"input": -1.25` took money off
/// every figure (`usage` showed `≥-0.2364` for mock-model on the fixtures).
#[test]
fn a_price_file_with_an_unknown_key_or_a_negative_rate_is_refused() {
    let cli = Cli::new();
    let id = cli.ingest(&super::support::capture("v1_basic"), &[]);
    let file = cli.home.path().join("prices.json");
    let other = cli.home.path().join("other-prices.json");
    let refusals = |text: &str| -> Vec<(Option<i32>, String)> {
        std::fs::write(&other, text).unwrap_or_else(|e| panic!("{e}"));
        let given = cli.run(&["usage", "--prices", &other.to_string_lossy(), &id]);
        std::fs::write(&file, text).unwrap_or_else(|e| panic!("{e}"));
        let listed = cli.run(&["runs"]);
        std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{e}"));
        [given, listed].iter().map(|output| (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())).collect()
    };
    let keys = "a price's keys are input, cachedInput, cacheCreation, cacheCreation1h, output, webSearches (US dollars per million tokens; webSearches per thousand searches)";
    assert_eq!(
        refusals(r#"{"mock-model": {"input": 1.25, "cachedInputs": 0.125, "output": 10}}"#),
        vec![
            (Some(1), format!("error: {}: \"mock-model\" has an unknown key \"cachedInputs\"; {keys}\n", other.display())),
            (Some(1), format!("error: cannot read the home's price file: {}: \"mock-model\" has an unknown key \"cachedInputs\"; {keys}\n", file.display())),
        ]
    );
    assert_eq!(
        refusals(r#"{"gpt-": {"input": 1, "output": 2}, "mock-model": {"input": -1.25, "cachedInput": 0.125, "output": 10}}"#),
        vec![
            (Some(1), format!("error: {}: \"mock-model\" has input -1.25: a price is a number of US dollars, zero or more\n", other.display())),
            (Some(1), format!("error: cannot read the home's price file: {}: \"mock-model\" has input -1.25: a price is a number of US dollars, zero or more\n", file.display())),
        ]
    );
    // Nothing was priced by the refused files: the run is as it was.
    let shown: Value = serde_json::from_str(&cli.ok(&["show", "--json", &id])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((shown["run"]["cost"].clone(), shown["run"]["costStatus"].clone()), (Value::Null, Value::from("unknown")));
}

/// A price table kept where the newer database goes (a user's
/// `prices.json` copied to `genai-prices.json`) is an error that names it,
/// as a torn one is: before, it passed the read (it is JSON), every
/// command priced by the compiled-in database under the name `genai-prices
/// data <digest>` and only `agentrace prices` said it could not be read.
#[test]
fn a_price_table_kept_as_the_price_database_is_an_error_that_names_it() {
    let cli = Cli::new();
    let id = cli.ingest(&super::support::capture("v1_basic"), &[]);
    let kept = cli.home.path().join("genai-prices.json");
    std::fs::write(&kept, r#"{"mock-model": {"input": 1.25, "cachedInput": 0.125, "output": 10}}"#).unwrap_or_else(|e| panic!("{e}"));
    let said = |args: &[&str]| {
        let output = cli.run(args);
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let error = format!(
        "error: cannot read the home's price file: {}: not the provider data `agentrace prices --update` keeps (invalid type: map, expected a sequence at line 1 column 0); fetch it again, or remove the file to price by the compiled-in database\n",
        kept.display()
    );
    assert_eq!([said(&["runs"]), said(&["show", &id]), said(&["usage", &id])], [(Some(1), error.clone()), (Some(1), error.clone()), (Some(1), error)]);
    let reset = said(&["prices", "--reset"]);
    assert_eq!((reset.0, kept.exists()), (Some(0), false));
}

/// A catalog made anew after the home's `prices.json` was added (by
/// `reindex`, its file gone, another schema) lists the runs recorded
/// before it at the file's prices, as `show` does: it marked its empty
/// rows priced by the file, then filled them from the records as they
/// were written, and `runs` said `$?` where `show` priced the run.
#[test]
fn a_catalog_rebuilt_after_a_price_file_was_added_lists_the_runs_priced_by_it() {
    use super::check::{rebuild_catalog, REBUILDS};
    let json = |text: String| -> Value { serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")) };
    let pair = |value: &Value| (value["cost"].clone(), value["costStatus"].clone());
    let priced = |how: &'static str| {
        let cli = Cli::new();
        let id = cli.ingest(&super::support::capture("v1_basic"), &[]);
        assert_eq!(pair(&json(cli.ok(&["runs", "--json"]))["runs"][0]), (Value::Null, Value::from("unknown")));
        let file = cli.home.path().join("prices.json");
        std::fs::write(&file, r#"{"mock-model": {"input": 1.25, "cachedInput": 0.125, "cacheCreation": 0, "output": 10}}"#).unwrap_or_else(|e| panic!("{e}"));
        rebuild_catalog(&cli, how);
        let listed = pair(&json(cli.ok(&["runs", "--json"]))["runs"][0]);
        let shown = pair(&json(cli.ok(&["show", &id, "--json"]))["run"]);
        let usage = json(cli.ok(&["usage", "--json", "--prices", &file.to_string_lossy(), &id]));
        (how, listed, shown, pair(&usage["totals"]))
    };
    let figures = REBUILDS.map(priced);
    let by_file = figures.clone().map(|(how, _, _, by_file)| (how, by_file.clone(), by_file.clone(), by_file));
    assert_eq!((figures.clone(), figures.iter().all(|(_, _, _, by_file)| by_file.0.as_f64().is_some_and(|cost| cost > 0.0))), (by_file, true));
}

/// A run left `running` whose session is over (its root's turn never
/// ended: here a host restarted mid-child) has no recorder to price it
/// again: when the home's price file changes, the list prices it as `show`
/// does (it kept saying `$?`, while `show` gave the file's cost).
#[test]
fn a_run_left_running_after_its_session_ended_is_priced_again_with_the_others() {
    let cli = Cli::new();
    let stuck = cli.ingest(&super::support::capture("v1_restart_mid_child"), &["--run-id", "stuck"]);
    let done = cli.ingest(&super::support::capture("v1_basic"), &["--run-id", "done"]);
    let json = |text: String| -> Value { serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")) };
    let listed_and_shown = |cli: &Cli| -> Vec<(String, Value, Value, Value)> {
        let runs = json(cli.ok(&["runs", "--json"]));
        runs["runs"]
            .as_array()
            .map(|runs| {
                runs.iter()
                    .map(|run| {
                        let id = run["id"].as_str().unwrap_or_default().to_owned();
                        let show = json(cli.ok(&["show", &id, "--json"]));
                        (id, run["status"].clone(), run["cost"].clone(), show["run"]["cost"].clone())
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(
        listed_and_shown(&cli),
        vec![
            (stuck.clone(), Value::from("running"), Value::Null, Value::Null),
            (done.clone(), Value::from("done"), Value::Null, Value::Null),
        ]
    );
    std::fs::write(cli.home.path().join("prices.json"), r#"{"mock-model": {"input": 1.25, "cachedInput": 0.125, "cacheCreation": 0, "output": 10}}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let figures = listed_and_shown(&cli);
    let priced: Vec<(String, bool)> = figures.iter().map(|(id, _, listed, shown)| (id.clone(), listed == shown && listed.as_f64().is_some_and(|cost| cost > 0.0))).collect();
    assert_eq!(priced, vec![(stuck, true), (done, true)], "{figures:?}");
}

/// A loopback server answering every GET with `body` (status `status`),
/// for `prices --update` to fetch from.
fn serving(status: u16, body: &'static [u8]) -> String {
    format!("{}/data.json", super::support::loopback_http(status, "application/json", body, |_| {}))
}

/// `prices --update` fetches a newer database and keeps it in the home:
/// a model the compiled-in database lacks (the captures' `mock-model`) is
/// then priced by every command, `runs` and `show` alike, the runs priced
/// again once; `prices` names the database. Data that is no database (a
/// page of HTML, an error status, a file of something else) is refused
/// and the kept one left as it was; `--reset` prices by the compiled-in
/// one again.
#[test]
fn prices_update_fetches_a_newer_database_that_prices_every_command() {
    let cli = Cli::new();
    let id = cli.ingest(&super::support::capture("v1_basic"), &[]);
    let json = |text: String| -> Value { serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")) };
    let costs = |cli: &Cli| -> (Value, Value) {
        let listed = json(cli.ok(&["runs", "--json"]));
        let shown = json(cli.ok(&["show", &id, "--json"]));
        (listed["runs"][0]["cost"].clone(), shown["run"]["cost"].clone())
    };
    let source = |cli: &Cli| json(cli.ok(&["prices", "--json", "--model", "mock-model", "--provider", "codex"]))["models"][0]["source"].clone();
    assert_eq!((costs(&cli), source(&cli)), ((Value::Null, Value::Null), Value::Null));

    // A server started before the update follows it.
    let (_server, served) = super::raw_ref::serve(&cli);
    let api_cost = || super::raw_ref::get_json(&served, "/api/runs")["runs"][0]["cost"].clone();
    assert_eq!(api_cost(), Value::Null);
    let database: &'static [u8] = include_bytes!("../../../agentrace-testkit/data/price-database.json");
    let address = serving(200, database);
    let updated = cli.run(&["prices", "--update", &address]);
    let said = String::from_utf8_lossy(&updated.stderr).into_owned();
    assert!(updated.status.success() && said.starts_with(&format!("updated the price database: 2 providers, 3 models from {address}")), "{said}");
    let kept = cli.home.path().join("genai-prices.json");
    assert_eq!(std::fs::read(&kept).ok().as_deref(), Some(database));
    let listed = cli.run(&["runs"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stderr).lines().filter(|line| line.starts_with("note: priced")).collect::<Vec<_>>(),
        vec![format!("note: priced 1 run again: the home's price database ({}) changed since they were priced", kept.display())]
    );
    let (list_cost, show_cost) = costs(&cli);
    assert!(list_cost.as_f64().is_some_and(|cost| cost > 0.0) && list_cost == show_cost, "{list_cost} {show_cost}");
    assert_eq!(api_cost(), list_cost);
    assert!(source(&cli).as_str().is_some_and(|name| name.starts_with("genai-prices data ") && name.len() == "genai-prices data ".len() + 8), "{}", source(&cli));

    // Refused, each with the kept database left as it was.
    let html = serving(200, b"<html>not here</html>");
    let missing = serving(404, b"no such file");
    let other = cli.home.path().join("other.json");
    std::fs::write(&other, r#"[{"id": "openai", "name": "OpenAI", "api_pattern": "x", "models": []}]"#).unwrap_or_else(|e| panic!("{e}"));
    for (from, says) in [
        (html.as_str(), "is not genai-prices provider data"),
        (missing.as_str(), "without the network, fetch that file elsewhere and run `agentrace prices --update FILE`"),
        (other.to_str().unwrap_or_default(), "prices no gpt-5"),
        ("/nowhere/data.json", "cannot read the price database /nowhere/data.json"),
    ] {
        let refused = cli.run(&["prices", "--update", from]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(refused.status.code() == Some(1) && stderr.starts_with("error: ") && stderr.contains(says), "{from}: {stderr}");
        assert_eq!(std::fs::read(&kept).ok().as_deref(), Some(database), "{from}");
    }
    // A kept file torn or edited by hand is an error that names it.
    std::fs::write(&kept, &database[..database.len() / 2]).unwrap_or_else(|e| panic!("{e}"));
    let torn = cli.run(&["runs"]);
    assert!(
        torn.status.code() == Some(1) && String::from_utf8_lossy(&torn.stderr).contains(&kept.display().to_string()),
        "{}",
        String::from_utf8_lossy(&torn.stderr)
    );
    // From a file, as a user without the network gives it; `--json` says
    // what was done (it printed nothing on stdout).
    let saved = cli.home.path().join("saved.json");
    std::fs::write(&saved, database).unwrap_or_else(|e| panic!("{e}"));
    let answer = json(cli.ok(&["prices", "--update", &saved.to_string_lossy(), "--json"]));
    assert_eq!(
        (answer["updated"].clone(), answer["source"].clone(), answer["providers"].clone(), answer["models"].clone(), answer["kept"].clone()),
        (Value::Bool(true), Value::from(saved.to_string_lossy().into_owned()), Value::from(2), Value::from(3), Value::from(kept.to_string_lossy().into_owned()))
    );
    assert!(costs(&cli).0.as_f64().is_some_and(|cost| cost > 0.0));

    let reset = cli.run(&["prices", "--reset"]);
    assert!(String::from_utf8_lossy(&reset.stderr).starts_with("removed the price database"), "{}", String::from_utf8_lossy(&reset.stderr));
    assert_eq!((costs(&cli), kept.exists()), ((Value::Null, Value::Null), false));
    let again = json(cli.ok(&["prices", "--reset", "--json"]));
    assert_eq!((again["removed"].clone(), again["kept"].clone()), (Value::Bool(false), Value::from(kept.to_string_lossy().into_owned())));
}

/// A known span as (provider, model, tier, days, what).
type KnownSpan = (String, String, String, i64, String);

/// The known prices file, its database and spans, for a test to compare
/// whole.
fn known_prices(home: &Path) -> (String, Vec<KnownSpan>) {
    let text = std::fs::read_to_string(home.join("known-prices.json")).unwrap_or_else(|e| panic!("{e}"));
    let known: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let spans = known["spans"]
        .as_array()
        .unwrap_or_else(|| panic!("{known}"))
        .iter()
        .map(|span| {
            let what = match &span["price"] {
                Value::String(kind) => kind.clone(),
                Value::Object(kind) => kind.keys().cloned().collect::<Vec<_>>().join(","),
                other => panic!("{other}"),
            };
            let days = span["lastDay"].as_i64().unwrap_or_default() - span["firstDay"].as_i64().unwrap_or_default() + 1;
            let text = |key: &str| span[key].as_str().unwrap_or("-").to_owned();
            (text("provider"), text("model"), text("serviceTier"), days, what)
        })
        .collect();
    (known["database"].as_str().unwrap_or_default().to_owned(), spans)
}

/// What one command resolved of the database's prices is kept in the
/// home; the next command, taught it, gives the very report (without
/// resolving anything, so it leaves the file as it was); a damaged file
/// teaches nothing, and the command that finds it gives the same report
/// and keeps what it resolved in its place.
#[test]
fn prices_resolved_by_one_command_are_known_to_the_next_which_reports_alike() {
    let dir = every_capture();
    let cli = Cli::new();
    let codex = dir.path().join("codex").to_string_lossy().into_owned();
    let claude = dir.path().join("claude").to_string_lossy().into_owned();
    let usage = ["usage", "--json", "--codex-home", &codex, "--claude-dir", &claude];
    let first = cli.ok(&usage);
    let known = known_prices(cli.home.path());
    let path = cli.home.path().join("known-prices.json");
    let kept = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        known,
        (
            "genai-prices 0.2.1".to_owned(),
            [
                ("codex", "gpt-6.1-sol", "-", 1, "tiered"),
                ("codex", "gpt-6.1-sol", "-", 1, "tiered"),
                ("codex", "mock-model", "-", 1, "unpriced"),
                ("codex", "mock-model", "-", 1, "unpriced"),
                ("claude", "claude-haiku-4-5-20251001", "standard", 1, "rates"),
                ("claude", "claude-opus-4-8", "standard", 1, "rates"),
                ("claude", "claude-opus-5-5", "standard", 2, "rates"),
                // `interactive_local_commands`, captured days after the others.
                ("claude", "claude-opus-5-5", "standard", 1, "rates"),
                ("claude", "claude-sonnet-4-20250514", "standard", 1, "rates"),
                ("claude", "claude-sonnet-4-5-20250929", "standard", 1, "tiered"),
            ]
            .map(|(provider, model, tier, days, what)| (provider.to_owned(), model.to_owned(), tier.to_owned(), days, what.to_owned()))
            .to_vec()
        )
    );
    let second = cli.ok(&usage);
    assert_eq!((second == first, std::fs::read(&path).ok() == Some(kept)), (true, true));
    std::fs::write(&path, br#"{"database":"genai-prices 0.2.1","spans":[{"provider":"claude","mod"#).unwrap_or_else(|e| panic!("{e}"));
    let third = cli.ok(&usage);
    assert_eq!((third == first, known_prices(cli.home.path())), (true, known));
}

/// Once the user removed the home's price file, the next command said its
/// runs were priced again because the file "changed", naming a file that
/// is gone. It says the file was removed (the note's first words kept).
#[test]
fn removing_the_home_price_file_says_it_was_removed_not_changed() {
    let cli = Cli::new();
    cli.ingest(&super::support::capture("v1_basic"), &[]);
    let file = cli.home.path().join("prices.json");
    std::fs::write(&file, r#"{"mock-model": {"input": 1.25, "cachedInput": 0.125, "cacheCreation": 0, "output": 10}}"#).unwrap_or_else(|e| panic!("{e}"));
    let notes = |cli: &Cli| -> Vec<String> {
        let output = cli.run(&["runs"]);
        assert_eq!(output.status.code(), Some(0));
        String::from_utf8_lossy(&output.stderr).lines().filter(|line| line.starts_with("note: priced")).map(str::to_owned).collect()
    };
    assert_eq!(notes(&cli), vec![format!("note: priced 1 run again: the home's price file ({}) changed since they were priced", file.display())]);
    std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(notes(&cli), vec![format!("note: priced 1 run again: the home's price file ({}) was removed since they were priced", file.display())]);
}

/// `diff` prints a floor as `show` does, `≥` before it, and says so in its
/// JSON (`costStatus`): it printed `$0.0123` for a run and a helper whose
/// costs `show` gives as floors, so two runs' costs read as exact.
#[test]
fn diff_prints_a_floor_cost_as_a_floor_as_show_does() {
    let dir = edited_claude("single_fg", "subagents", |line| as_snapshot(&as_snapshot(line, "msg_mock_2f825264_0002"), "msg_mock_2f825264_0003"));
    let cli = Cli::new();
    let claude = dir.path().join("claude").to_string_lossy().into_owned();
    cli.ok(&["import", "--codex-home", "/nonexistent", "--claude-dir", &claude, "--quiet"]);
    let show: Value = serde_json::from_str(&cli.ok(&["show", "latest", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let compared: Value = serde_json::from_str(&cli.ok(&["diff", "latest", "latest", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let text = cli.ok(&["diff", "latest", "latest"]);
    let lines: Vec<&str> = text.lines().collect();
    // The run's line and the helper's run-A line, their cost the fifth figure.
    let cost_of = |line: &str| line.split(" · ").nth(4).unwrap_or_default().to_owned();
    let helper_line = lines
        .iter()
        .position(|line| line.trim_start().starts_with("Echo task A [general-purpose] (helper)"))
        .and_then(|at| lines.get(at + 1))
        .copied()
        .unwrap_or_else(|| panic!("{text}"));
    let floor = |cost: &Value| format!("≥${:.4}", cost.as_f64().unwrap_or_else(|| panic!("no cost: {show:#}")));
    assert_eq!(
        (
            compared["a"]["figures"]["costStatus"].clone(),
            compared["agents"][1]["a"]["costStatus"].clone(),
            cost_of(lines[1]),
            cost_of(helper_line),
        ),
        (
            Value::from("floor"),
            Value::from("floor"),
            floor(&show["run"]["cost"]),
            floor(&show["agents"][0]["children"][0]["cost"]),
        ),
        "{text}"
    );
}

/// A Codex session whose root's only model call failed reported no usage:
/// `show` and `runs` give its cost as unknown (`$?`, `null`), never a
/// free `$0` (`cost_once_used`), but `usage` gave the session `0.0000`,
/// exact, above its only agent's `?`. The session is unknown as its run
/// is, imported or straight from the folders.
#[test]
fn a_session_that_reported_no_usage_costs_in_usage_what_its_run_costs() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    super::support::rollout_of_a_failed_call(&dir.path().join("codex"), Some("gpt-5.1-codex"));
    let cli = Cli::new();
    let codex = dir.path().join("codex").to_string_lossy().into_owned();
    let straight: Value = serde_json::from_str(&cli.ok(&["usage", "--json", "--codex-home", &codex, "--provider", "codex"])).unwrap_or_else(|e| panic!("{e}"));
    cli.ok(&["import", "--quiet", "--codex-home", &codex, "--claude-dir", &dir.path().join("none").to_string_lossy()]);
    let imported: Value = serde_json::from_str(&cli.ok(&["usage", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let show: Value = serde_json::from_str(&cli.ok(&["show", "latest", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let cost = |value: &Value| (value["cost"].clone(), value["costStatus"].clone());
    assert_eq!(
        (cost(&straight["sessions"][0]), cost(&imported["sessions"][0]), cost(&show["run"])),
        ((Value::Null, Value::from("unknown")), (Value::Null, Value::from("unknown")), (Value::Null, Value::from("unknown")))
    );
}
