//! The catalog through the binary: made anew when missing, unreadable or
//! of another schema (with a note, the same answers), shared by processes
//! at once; `runs` filtered and paged; `search`; the first command.

use std::process::Stdio;

use agentrace_testkit::files::{copy_dir, fixtures};
use serde_json::{json, Value};

use super::import_usage::{catalog_execute, catalog_rows};
use super::support::{capture, Cli};

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn ids(list: &Value) -> Vec<Value> {
    list["runs"].as_array().map(|runs| runs.iter().map(|run| run["id"].clone()).collect()).unwrap_or_default()
}

#[test]
fn a_catalog_unreadable_of_another_schema_or_missing_is_made_anew_with_a_note_and_the_same_answers() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "a"]);
    cli.ingest(&capture("v2_basic"), &["--run-id", "b"]);
    let runs = cli.ok(&["runs", "--json"]);
    let usage = cli.ok(&["usage", "--json"]);
    let found = cli.ok(&["search", "hello-from-child-A", "--json"]);
    assert_eq!(ids(&json_of(&runs)), vec![json!("b"), json!("a")]);
    let catalog = cli.home.path().join("catalog.sqlite");
    let again = |damage: &dyn Fn(), note: &str| {
        damage();
        let output = cli.run(&["runs", "--json"]);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success() && stderr.contains(note), "{note}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&output.stdout), runs, "{note}");
        assert_eq!(cli.ok(&["usage", "--json"]), usage, "{note}");
        assert_eq!(cli.ok(&["search", "hello-from-child-A", "--json"]), found, "{note}");
    };
    again(&|| std::fs::write(&catalog, vec![7u8; 8192]).unwrap_or_else(|e| panic!("{e}")), "could not be read");
    let schema = format!("has schema 99, this agentrace writes {}", agentrace_store::catalog::CATALOG_SCHEMA);
    again(&|| catalog_execute(&cli, "PRAGMA user_version = 99", &[]), &schema);
    // A catalog of schema 2 (its texts a second copy, its index with
    // content) is made anew too, the snippets then cut from the logs.
    let older = format!("has schema 2, this agentrace writes {}", agentrace_store::catalog::CATALOG_SCHEMA);
    again(&|| catalog_execute(&cli, "PRAGMA user_version = 2", &[]), &older);
    again(
        &|| {
            for end in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{end}", catalog.display()));
            }
        },
        "no catalog in",
    );
    // `reindex` makes it anew on purpose, quietly the same.
    cli.ok(&["reindex", "--quiet"]);
    assert_eq!(cli.ok(&["runs", "--json"]), runs);
    // With `--json`, what it did on stdout and nothing on stderr: the two
    // runs indexed from their logs, then the import (none here: the
    // sources are empty folders) as `import --json` says it.
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (codex, claude) = (sources.path().join("codex"), sources.path().join("claude"));
    for dir in [&codex, &claude] {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    }
    let reindexed = |args: &[&str]| {
        let output = cli.command(args).env("CODEX_HOME", &codex).env("CLAUDE_CONFIG_DIR", &claude).output().unwrap_or_else(|e| panic!("{e}"));
        assert!(output.status.success() && output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
        json_of(&String::from_utf8_lossy(&output.stdout))
    };
    let report = reindexed(&["reindex", "--json"]);
    assert_eq!(
        (report["indexed"].clone(), report["catalog"].clone(), report["import"]["new"].clone(), report["import"]["runs"].clone()),
        (json!(2), json!(catalog.display().to_string()), json!(0), json!([]))
    );
    assert_eq!(reindexed(&["reindex", "--json", "--no-import"])["import"], Value::Null);
    assert_eq!(cli.ok(&["runs", "--json"]), runs);
}

/// Every run log of a home (its path and bytes) and its `runs --json`.
type HomeSeen = (Vec<(String, Vec<u8>)>, String);

/// A Claude session recorded from its stream (`ingest`) and imported from
/// its transcripts, the stream first or the import first: every run's log
/// and the list, after each of two `reindex`es.
fn a_stream_and_its_transcripts_reindexed_twice(stream_first: bool, secret: bool) -> Vec<HomeSeen> {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (codex, claude) = (sources.path().join("codex"), sources.path().join("claude"));
    std::fs::create_dir_all(&codex).unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("claude/parallel_bg/home_claude"), &claude);
    if secret {
        // The prompt holds a key: its line is kept redacted in the log.
        let main = claude.join("projects/-home-dev-agents-work-parallel-bg/4d35057c-0951-4f3b-9748-90519e0026ea.jsonl");
        let text = std::fs::read_to_string(&main).unwrap_or_else(|e| panic!("{e}"));
        let with_key = text.replacen("Please do the scripted task.", "Please do the scripted task. ANTHROPIC_API_KEY=sk-ant-abcdefghijklmnopqrstuvwxyz0123", 1);
        assert_ne!(with_key, text);
        std::fs::write(&main, with_key).unwrap_or_else(|e| panic!("{e}"));
    }
    let cli = Cli::new();
    let with_sources = |args: &[&str]| {
        let output = cli.command(args).env("CODEX_HOME", &codex).env("CLAUDE_CONFIG_DIR", &claude).output().unwrap_or_else(|e| panic!("{e}"));
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    };
    let stream = || cli.ingest(&fixtures().join("claude/parallel_bg/stream.jsonl"), &["--run-id", "st-pbg"]);
    if stream_first {
        stream();
        with_sources(&["import", "--quiet"]);
    } else {
        with_sources(&["import", "--quiet"]);
        stream();
        with_sources(&["import", "--quiet"]);
    }
    let home = || {
        let mut logs: Vec<(String, Vec<u8>)> = std::fs::read_dir(cli.home.path().join("runs"))
            .unwrap_or_else(|e| panic!("{e}"))
            .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path())
            .filter(|path| path.extension().is_some_and(|extension| extension == "jsonl"))
            .map(|path| (path.display().to_string(), std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"))))
            .collect();
        logs.sort();
        (logs, cli.ok(&["runs", "--json"]))
    };
    let mut seen = vec![home()];
    for _ in 0..2 {
        with_sources(&["reindex", "--quiet"]);
        seen.push(home());
    }
    seen
}

#[test]
fn reindex_changes_no_run_log_of_a_session_recorded_from_its_stream_and_imported_from_its_transcripts() {
    for stream_first in [true, false] {
        let seen = a_stream_and_its_transcripts_reindexed_twice(stream_first, false);
        assert_eq!(seen[1], seen[0], "stream first: {stream_first}");
        assert_eq!(seen[2], seen[0], "stream first: {stream_first}");
    }
}

/// A transcript line holding a key is kept redacted in the run it is
/// merged into, so it never matched its source line: each `reindex` (and
/// each import of the grown session) fed it to the stream's run again.
#[test]
fn reindex_feeds_no_transcript_line_again_whose_kept_copy_was_redacted() {
    for stream_first in [true, false] {
        let seen = a_stream_and_its_transcripts_reindexed_twice(stream_first, true);
        let kept = seen[0].0.iter().any(|(_, log)| String::from_utf8_lossy(log).contains("abcdefghijklmnopqrstuvwxyz0123"));
        assert!(!kept, "stream first: {stream_first}: the key was kept");
        assert_eq!(seen[1], seen[0], "stream first: {stream_first}");
        assert_eq!(seen[2], seen[0], "stream first: {stream_first}");
    }
}

#[test]
fn two_processes_use_the_catalog_at_once() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "first"]);
    let spawn = |args: &[&str]| cli.command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("{e}"));
    let v2 = capture("v2_basic").to_string_lossy().into_owned();
    let nested = capture("real_model_nested").to_string_lossy().into_owned();
    let children = vec![
        spawn(&["ingest", "--run-id", "second", &v2]),
        spawn(&["ingest", "--run-id", "third", &nested]),
        spawn(&["runs", "--json"]),
        spawn(&["usage", "--json"]),
        spawn(&["search", "ROOT", "--json"]),
        spawn(&["reindex", "--no-import", "--quiet"]),
    ];
    for child in children {
        let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let mut listed = ids(&json_of(&cli.ok(&["runs", "--json"])));
    listed.sort_by_key(Value::to_string);
    assert_eq!(listed, vec![json!("first"), json!("second"), json!("third")]);
}

#[test]
fn runs_are_filtered_and_paged_and_the_total_counts_every_match() {
    let cli = Cli::new();
    for (id, name) in [("a", "v1_basic"), ("b", "v2_basic"), ("c", "real_model_nested")] {
        cli.ingest(&capture(name), &["--run-id", id]);
    }
    let list = |args: &[&str]| {
        let mut all = vec!["runs", "--json"];
        all.extend_from_slice(args);
        let value = json_of(&cli.ok(&all));
        (ids(&value), value["total"].clone())
    };
    assert_eq!(list(&[]), (vec![json!("c"), json!("b"), json!("a")], json!(3)));
    assert_eq!(list(&["--limit", "1", "--offset", "1"]), (vec![json!("b")], json!(3)));
    assert_eq!(list(&["--provider", "codex", "--status", "done", "--limit", "2"]), (vec![json!("c"), json!("b")], json!(3)));
    assert_eq!(list(&["--provider", "claude"]), (vec![], json!(0)));
    assert_eq!(list(&["--status", "failed"]), (vec![], json!(0)));
    assert_eq!(list(&["--project", "/nowhere"]), (vec![], json!(0)));
    assert_eq!(list(&["--since", "2100-01-01"]), (vec![], json!(0)));
    assert_eq!(list(&["--until", "2000-01-01"]), (vec![], json!(0)));
    // The captures ran on 2026-11-29: ccusage's form of that day, and days
    // counted back from today, which is later.
    assert_eq!(list(&["--since", "20261129", "--until", "20261129", "--limit", "1"]), (vec![json!("c")], json!(3)));
    assert_eq!(list(&["--since", "today"]), (vec![], json!(0)));
    assert_eq!(list(&["--until", "yesterday", "--since", "9999d", "--limit", "1"]), (vec![json!("c")], json!(3)));
    // They started at 23:03 to 23:05 UTC: the next day in India, from its
    // midnight (--tz, or AGENTRACE_TZ), and so the table shows them.
    assert_eq!(list(&["--since", "2026-11-30", "--tz", "Asia/Kolkata"]), (vec![json!("c"), json!("b"), json!("a")], json!(3)));
    assert_eq!(list(&["--until", "2026-11-29", "--tz", "+05:30"]), (vec![], json!(0)));
    assert_eq!(list(&["--since", "2026-11-30"]), (vec![], json!(0)));
    let started = |output: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&output.stdout).lines().skip(1).map(|line| line.split_whitespace().skip(3).take(2).collect::<Vec<_>>().join(" ")).collect()
    };
    let in_india = cli.command(&["runs"]).env("AGENTRACE_TZ", "Asia/Kolkata").output().unwrap_or_else(|e| panic!("{e}"));
    // Set but blank is unset, as a shell's `AGENTRACE_TZ=` means.
    let blank = cli.command(&["runs"]).env("AGENTRACE_TZ", "").output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(started(&blank), started(&cli.run(&["runs"])));
    assert_eq!(
        (started(&cli.run(&["runs"])), started(&in_india)),
        (
            vec!["2026-11-29 23:05".to_owned(), "2026-11-29 23:04".to_owned(), "2026-11-29 23:03".to_owned()],
            vec!["2026-11-30 04:35".to_owned(), "2026-11-30 04:34".to_owned(), "2026-11-30 04:33".to_owned()]
        )
    );
    let bad_zone = cli.run(&["runs", "--tz", "Europe/Atlantis"]);
    assert_eq!(
        (bad_zone.status.code(), String::from_utf8_lossy(&bad_zone.stderr).lines().next().map(str::to_owned)),
        (
            Some(2),
            Some("error: invalid value 'Europe/Atlantis' for '--tz <ZONE>': no time zone \"Europe/Atlantis\": expected UTC, local (this machine's zone), a name like Europe/Paris, or an offset like +05:30".to_owned())
        )
    );
    // A page past the matches says how many there are, never where the
    // next page is.
    let past = cli.run(&["runs", "--offset", "5"]);
    assert_eq!(
        (String::from_utf8_lossy(&past.stdout).into_owned(), String::from_utf8_lossy(&past.stderr).into_owned()),
        ("no runs\n".to_owned(), "3 runs match, none in this page (--offset 5, --limit none)\n".to_owned())
    );
    let first = cli.run(&["runs", "--limit", "1"]);
    assert_eq!(String::from_utf8_lossy(&first.stderr), "1 of 3 runs shown; `--offset 1` shows the next\n");
    let blank = cli.run(&["search", " "]);
    assert_eq!(
        (blank.status.code(), String::from_utf8_lossy(&blank.stderr).lines().next().map(str::to_owned)),
        (Some(2), Some("error: invalid value ' ' for '<TEXT>': give the words to find, as `agentrace search \"retry budget\"`".to_owned()))
    );
    let bad = cli.run(&["runs", "--since", "last week"]);
    assert_eq!(
        (bad.status.code(), String::from_utf8_lossy(&bad.stderr).into_owned()),
        (
            Some(2),
            "error: invalid value 'last week' for '--since <D>': expected a day like 2026-11-30 or 20261130, or today, yesterday, 7d (days ago) or 2w (weeks ago)\n\nFor more information, try '--help'.\n".to_owned()
        )
    );
    let bad = cli.run(&["runs", "--status", "finished"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--status finished: expected running, done, failed, interrupted, live"));
}

/// `runs --sort` lists the largest first of a figure (ties newest first, a
/// run without the figure last) and `--warning` keeps the runs with a
/// code, or with any: each order is the one the listed figures give, and
/// the API's `sort=` and `warning=` list alike.
#[test]
fn runs_are_sorted_by_a_figure_and_kept_to_a_warning() {
    use super::raw_ref::{get_json, serve};
    let cli = Cli::new();
    for name in ["v1_basic", "v2_basic", "real_model_nested", "v1_parallel", "v1_restart_mid_child", "v2_child_error_http500"] {
        cli.ingest(&capture(name), &["--run-id", name]);
    }
    // Priced, so each run has a cost but the one whose tokens are not all
    // known.
    std::fs::write(cli.home.path().join("prices.json"), r#"{"mock-model": {"input": 1.25, "cachedInput": 0.125, "cacheCreation": 0, "output": 10}}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let newest = json_of(&cli.ok(&["runs", "--json"]));
    let runs: Vec<Value> = newest["runs"].as_array().cloned().unwrap_or_default();
    let ms = |value: &Value| value.as_str().and_then(chrono_ms);
    // The order a figure gives: largest first, ties in the newest-first
    // order (a stable sort of it), none last.
    let by = |figure: &dyn Fn(&Value) -> Option<f64>| -> Vec<Value> {
        let mut sorted = runs.clone();
        sorted.sort_by(|a, b| figure(b).partial_cmp(&figure(a)).unwrap_or(std::cmp::Ordering::Equal));
        sorted.iter().map(|run| run["id"].clone()).collect()
    };
    let listed = |args: &[&str]| {
        let mut all = vec!["runs", "--json"];
        all.extend_from_slice(args);
        let value = json_of(&cli.ok(&all));
        (ids(&value), value["total"].clone())
    };
    let cost = by(&|run| run["cost"].as_f64());
    let tokens = by(&|run| run["tokens"]["totalTokens"].as_f64());
    let duration = by(&|run| Some((ms(&run["endedAt"]).or(ms(&run["updatedAt"]))? - ms(&run["startedAt"])?) as f64));
    // Notes (info-level) are no problem: left out, as the list's WARN.
    let problems = |run: &Value| run["warningCount"].as_u64().unwrap_or(0) - run["noteCodes"].as_array().map_or(0, |notes| notes.len() as u64);
    let warnings = by(&|run| Some(problems(run) as f64));
    assert_eq!(
        [listed(&["--sort", "cost"]), listed(&["--sort", "tokens"]), listed(&["--sort", "duration"]), listed(&["--sort", "warnings"]), listed(&["--sort", "started"])],
        [(cost.clone(), json!(6)), (tokens.clone(), json!(6)), (duration.clone(), json!(6)), (warnings, json!(6)), (ids(&newest), json!(6))]
    );
    // The orders differ from the newest first, so the test can tell.
    assert_eq!(&tokens[..2], &[json!("real_model_nested"), json!("v1_parallel")]);
    assert_ne!(cost, ids(&newest));
    assert_eq!(listed(&["--sort", "cost", "--limit", "2", "--offset", "1"]), (cost[1..3].to_vec(), json!(6)));
    let with = |code: &str| -> Vec<Value> {
        runs.iter().filter(|run| run["warningCodes"].as_array().is_some_and(|codes| codes.iter().any(|c| c == code))).map(|run| run["id"].clone()).collect()
    };
    let any: Vec<Value> = runs.iter().filter(|run| problems(run) > 0).map(|run| run["id"].clone()).collect();
    assert_eq!(with("lost_turn"), vec![json!("v1_restart_mid_child")]);
    assert_eq!(
        [listed(&["--warning", "lost_turn"]), listed(&["--warning", "any"]), listed(&["--warning", "orphan_child"])],
        [(with("lost_turn"), json!(1)), (any.clone(), json!(any.len())), (vec![], json!(0))]
    );
    // A code no detector raises is a typo, said, never an empty list.
    let typo = cli.run(&["runs", "--warning", "lost_turns"]);
    assert_eq!(
        (typo.status.code(), String::from_utf8_lossy(&typo.stderr).lines().next().map(|line| line.starts_with("error: --warning lost_turns: not a warning code; expected `any` or one of done_source_not_root, "))),
        (Some(1), Some(true))
    );
    // The API lists alike.
    let (_server, address) = serve(&cli);
    let api = |query: &str| -> (Vec<Value>, Value) {
        let value = get_json(&address, &format!("/api/runs?{query}"));
        (ids(&value), value["total"].clone())
    };
    assert_eq!(
        [api("sort=cost"), api("sort=tokens&limit=2"), api("warning=lost_turn"), api("sort=duration&warning=any")],
        [(cost, json!(6)), (tokens[..2].to_vec(), json!(6)), (with("lost_turn"), json!(1)), (any, json!(1))]
    );
    assert_eq!(duration.len(), 6);
}

/// Milliseconds since the epoch of an RFC 3339 time as the records write
/// it (`2026-11-29T23:03:28.437Z`).
fn chrono_ms(text: &str) -> Option<i64> {
    agentrace_core::model::Timestamp::parse(text).map(|at| at.0)
}

#[test]
fn search_finds_a_helpers_tool_text_with_its_run_sequence_and_actor() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "basic"]);
    let events: Vec<Value> = cli.ok(&["events", "basic", "--json"]).lines().map(json_of).collect();
    let hit_of = |sequence: u64, label: &str, role: &str, snippet: &str| {
        let envelope = events.iter().find(|envelope| envelope["sequence"] == json!(sequence)).unwrap_or_else(|| panic!("no {sequence}"));
        json!({
            "runId": "basic",
            "sequence": sequence,
            "threadId": envelope["actor"]["threadId"],
            "label": label,
            "role": role,
            "timestamp": envelope["timestamp"],
            "snippet": snippet,
        })
    };
    let hit = |sequence: u64, snippet: &str| hit_of(sequence, "Dewey", "helper", snippet);
    assert_eq!(
        json_of(&cli.ok(&["search", "hello-from-child-A", "--actor", "helpers", "--limit", "2", "--json"])),
        json!({"hits": [
            hit(38, "CHILD A DONE: the command printed [hello-from-child-A]."),
            hit(27, "shell [hello-from-child-A]\n"),
        ]})
    );
    // The root quoted it too, in its prompt and its answers.
    let root: Vec<(Value, Value)> = json_of(&cli.ok(&["search", "hello-from-child-A", "--actor", "main", "--json"]))["hits"]
        .as_array()
        .map(|hits| hits.iter().map(|hit| (hit["sequence"].clone(), hit["role"].clone())).collect())
        .unwrap_or_default();
    assert_eq!(root, vec![(json!(49), json!("root")), (json!(44), json!("root")), (json!(12), json!("root"))]);
    assert_eq!(json_of(&cli.ok(&["search", "hello-from-child-A", "--run", "basic", "--limit", "1", "--json"]))["hits"][0], hit_of(49, "Main", "root", "…the command printed [hello-from-child-A]."));
}

/// `search` shows the newest `--limit` hits (20 unless told); a user who
/// got exactly that many lines had no way to tell that more had matched.
/// It says so on stderr when more did, and nothing when all are shown.
#[test]
fn search_says_when_more_hits_matched_than_its_limit_shows() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "basic"]);
    let said = |limit: &str| {
        let output = cli.run(&["search", "hello-from-child-A", "--limit", limit]);
        (output.status.code(), String::from_utf8_lossy(&output.stdout).lines().count(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let all = said("100").1;
    assert_eq!(
        (said("2"), said(&all.to_string())),
        (
            (Some(0), 2, "hint: the newest 2 hits are shown, and more matched; `--limit N` shows more\n".to_owned()),
            (Some(0), all, String::new()),
        )
    );
}

#[test]
fn search_actor_takes_an_agents_label_and_refuses_a_name_no_agent_has() {
    // `--actor Dewey` (the label `show` prints) found nothing and said
    // "no text matches", as did a typo.
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "basic", "--quiet"]);
    let said = |args: &[&str]| {
        let output = cli.run(&[&["search", "hello-from-child-A"], args].concat());
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let dewey = "01a2298c-947a-75b0-8b49-6a2e1016272b";
    let by_thread = said(&["--actor", dewey, "--json"]);
    assert_eq!(
        (said(&["--actor", "Dewey", "--json"]), said(&["--actor", "Main", "--json"])),
        (by_thread.clone(), said(&["--actor", "main", "--json"]))
    );
    let hits: Vec<(Value, Value)> = json_of(&by_thread.1)["hits"]
        .as_array()
        .map(|hits| hits.iter().map(|hit| (hit["sequence"].clone(), hit["label"].clone())).collect())
        .unwrap_or_default();
    assert_eq!(hits, [38, 27, 26, 23].map(|sequence| (json!(sequence), json!("Dewey"))));
    let takes = "hint: --actor takes main, helpers, unknown, an agent's label as `show` prints it, or its thread id";
    assert_eq!(
        [said(&["--actor", "Deweyy"]), said(&["--actor", "Deweyy", "--run", "basic"]), said(&["--actor", "01a2298c-0000-7000-8000-000000000000"])],
        [
            (Some(1), String::new(), format!("error: --actor Deweyy: no agent of any run has this thread id or label\n{takes} (`agentrace show RUN` lists a run's agents)\n")),
            (
                Some(1),
                String::new(),
                format!("error: --actor Deweyy: no agent of run basic has this thread id or label\nits agents (label, thread id):\n  Main  01a2298c-93ba-7001-9862-9fd03c21f5d4\n  Dewey  {dewey}\n{takes}\n")
            ),
            // A thread id of no run is a quiet no-match, as before.
            (Some(0), String::new(), "no text matches \"hello-from-child-A\"\n".to_owned()),
        ]
    );
}

#[test]
fn the_first_command_imports_your_history_lists_it_and_then_reads_only_what_grew() {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("codex/v1_basic/rollouts"), &sources.path().join("codex/sessions"));
    copy_dir(&fixtures().join("claude/nested_fg/home_claude"), &sources.path().join("claude"));
    let cli = Cli::new();
    let first_command = || {
        let output = cli
            .command(&[])
            .env("CODEX_HOME", sources.path().join("codex"))
            .env("CLAUDE_CONFIG_DIR", sources.path().join("claude"))
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (listed, said) = first_command();
    assert!(said.contains("imported 2 new sessions, 0 changed, 0 unchanged"), "{said}");
    // The user's own runs, as `runs` lists them, and no samples.
    assert_eq!(listed, cli.ok(&["runs", "--limit", "20"]));
    let ids: Vec<Value> = ids(&json_of(&cli.ok(&["runs", "--json"])));
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|id| id.as_str().is_some_and(|id| id.starts_with("codex-") || id.starts_with("claude-"))), "{ids:?}");
    assert!(!listed.contains("sample-"), "{listed}");
    let header: Vec<&str> = listed.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, vec!["RUN", "PROVIDER", "PROJECT", "STARTED", "TIME", "AGENTS", "TOKENS", "COST", "WARN", "RESULT"]);
    // The Codex run's scripted model has no price (`$?`): where to name it
    // and price it.
    let price_hint = |said: &str| said.lines().filter(|line| line.contains("lacks some prices")).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        price_hint(&said),
        vec![format!(
            "hint: a cost marked `$?` or `≥` lacks some prices or tokens: `agentrace prices` names the models without a price, `agentrace prices --update` fetches the newest price database, and your own prices in {} price the rest in every command",
            cli.home.path().join("prices.json").display()
        )]
    );
    // A second call reads nothing that did not grow.
    let (again, said) = first_command();
    assert!(said.contains("imported 0 new sessions, 0 changed, 2 unchanged"), "{said}");
    assert_eq!(again, listed);
    // Priced by the user's file, no cost lacks anything.
    std::fs::write(cli.home.path().join("prices.json"), r#"{"mock-model": {"input": 1, "output": 2}}"#).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(price_hint(&first_command().1), Vec::<String>::new());
    // What the catalog keeps of each file: read to its end.
    let files = catalog_rows(&cli, "SELECT count(*), sum(read_offset = size) FROM import_files");
    assert_eq!(files[0][0], files[0][1]);
}

#[test]
fn times_are_printed_in_the_zone_agentrace_tz_names() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "a", "--quiet"]);
    let in_zone = |zone: &str, args: &[&str]| -> (String, String) {
        let output = cli.command(args).env("AGENTRACE_TZ", zone).output().unwrap_or_else(|e| panic!("{e}"));
        (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let time_line = |shown: &str| shown.lines().find(|line| line.starts_with("time")).map(str::to_owned);
    let first_clock = |events: &str| events.lines().next().map(|line| line.split_whitespace().nth(1).unwrap_or_default().to_owned());
    let (tokyo_show, _) = in_zone("Asia/Tokyo", &["show", "a"]);
    let (tokyo_events, _) = in_zone("Asia/Tokyo", &["events", "a"]);
    let (tokyo_hits, _) = in_zone("Asia/Tokyo", &["search", "hello-from-child-A", "--limit", "1"]);
    let (utc_show, _) = in_zone("", &["show", "a"]);
    let (bad_events, said) = in_zone("Atlantis", &["events", "a"]);
    assert_eq!(
        (time_line(&tokyo_show), first_clock(&tokyo_events), tokyo_hits.split_whitespace().nth(2).map(str::to_owned)),
        (
            Some("time      started 2026-11-30T08:03:28.437+09:00, ended 2026-11-30T08:03:29.460+09:00 (1.0 s)".to_owned()),
            Some("2026-11-30T08:03:28.437+09:00".to_owned()),
            Some("2026-11-30T08:03:29.240+09:00".to_owned())
        )
    );
    // Unset or blank: UTC, as the log writes it; a zone it cannot find: UTC,
    // and said once.
    assert_eq!(
        (time_line(&utc_show), first_clock(&bad_events), said.lines().filter(|line| line.starts_with("warning: AGENTRACE_TZ: no time zone \"Atlantis\"")).count()),
        (Some("time      started 2026-11-29T23:03:28.437Z, ended 2026-11-29T23:03:29.460Z (1.0 s)".to_owned()), Some("2026-11-29T23:03:28.437Z".to_owned()), 1)
    );
}

#[test]
fn events_under_agentrace_tz_print_each_time_with_its_date_and_offset_not_a_bare_time_of_day() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "a", "--quiet"]);
    let first_line = |zone: Option<&str>| -> String {
        let mut command = cli.command(&["events", "a"]);
        if let Some(zone) = zone {
            command.env("AGENTRACE_TZ", zone);
        }
        let output = command.output().unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8_lossy(&output.stdout).lines().next().unwrap_or_default().to_owned()
    };
    // RFC 3339 with the zone's offset, as the README says; unset, the
    // log's own `…Z`.
    assert_eq!(
        [first_line(Some("Asia/Tokyo")), first_line(None)],
        [
            "     1  2026-11-30T08:03:28.437+09:00  agentrace             run started (codex, codex-app-server)".to_owned(),
            "     1  2026-11-29T23:03:28.437Z  agentrace             run started (codex, codex-app-server)".to_owned(),
        ]
    );
}

#[test]
fn an_unknown_zone_in_agentrace_tz_is_one_warning_and_utc_in_every_command_while_a_bad_tz_flag_stays_a_usage_error() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "a", "--quiet"]);
    let none = cli.home.path().join("none").to_string_lossy().into_owned();
    let commands: [&[&str]; 6] = [
        &["runs", "--limit", "1"],
        &["search", "hello-from-child-A", "--since", "2026-11-29"],
        &["usage", "--by", "day", "--since", "2026-11-29"],
        &["import", "--quiet", "--since", "7d", "--codex-home", &none, "--claude-dir", &none],
        &["events", "a"],
        &[],
    ];
    // Per command: its exit, what it said on stderr beside what it says in
    // UTC, and whether it printed what it prints in UTC.
    let seen: Vec<(Option<i32>, Vec<String>, bool)> = commands
        .iter()
        .map(|args| {
            let in_utc = cli.run(args);
            let output = cli.command(args).env("AGENTRACE_TZ", "Mars/X").output().unwrap_or_else(|e| panic!("{e}"));
            let said_in_utc = String::from_utf8_lossy(&in_utc.stderr).into_owned();
            let added = String::from_utf8_lossy(&output.stderr).lines().filter(|line| !said_in_utc.lines().any(|said| said == *line)).map(str::to_owned).collect();
            (output.status.code(), added, output.stdout == in_utc.stdout)
        })
        .collect();
    let warned = vec![
        "warning: AGENTRACE_TZ: no time zone \"Mars/X\": expected UTC, local (this machine's zone), a name like Europe/Paris, or an offset like +05:30; days and times are UTC".to_owned(),
    ];
    assert_eq!(seen, vec![(Some(0), warned, true); 6]);
    // The same zone given as `--tz` is the user's typo: a usage error that
    // names the flag, the variable or not.
    let flag = cli.run(&["runs", "--tz", "Mars/X"]);
    assert_eq!(
        (flag.status.code(), String::from_utf8_lossy(&flag.stderr).into_owned()),
        (
            Some(2),
            "error: invalid value 'Mars/X' for '--tz <ZONE>': no time zone \"Mars/X\": expected UTC, local (this machine's zone), a name like Europe/Paris, or an offset like +05:30\n\nFor more information, try '--help'.\n".to_owned()
        )
    );
}

#[test]
fn a_malformed_since_or_until_is_the_same_usage_error_in_every_command_that_takes_it() {
    let cli = Cli::new();
    let none = cli.home.path().join("none").to_string_lossy().into_owned();
    let refused = |args: &[&str]| -> (Option<i32>, String) {
        let output = cli.run(args);
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let said = |flag: &str| {
        (
            Some(2),
            format!("error: invalid value '2026-13-01' for '{flag} <D>': expected a day like 2026-11-30 or 20261130, or today, yesterday, 7d (days ago) or 2w (weeks ago)\n\nFor more information, try '--help'.\n"),
        )
    };
    assert_eq!(
        [
            refused(&["runs", "--since", "2026-13-01"]),
            refused(&["search", "hello", "--since", "2026-13-01"]),
            refused(&["usage", "--since", "2026-13-01"]),
            refused(&["import", "--since", "2026-13-01", "--codex-home", &none, "--claude-dir", &none]),
            refused(&["runs", "--until", "2026-13-01"]),
            refused(&["search", "hello", "--until", "2026-13-01"]),
            refused(&["usage", "--until", "2026-13-01"]),
        ],
        [said("--since"), said("--since"), said("--since"), said("--since"), said("--until"), said("--until"), said("--until")]
    );
}

#[test]
fn a_since_after_its_until_is_a_usage_error_naming_both_in_every_command_that_takes_both() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "a", "--quiet"]);
    let exit_and_error = |args: &[&str]| -> (Option<i32>, String) {
        let output = cli.run(args);
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let refused = (
        Some(2),
        "error: invalid value '2026-11-01' for '--until <D>': it is before --since 2026-12-01, so no day is in the range\n\nFor more information, try '--help'.\n".to_owned(),
    );
    let backwards = ["--since", "2026-12-01", "--until", "2026-11-01"];
    assert_eq!(
        [
            exit_and_error(&[&["runs"][..], &backwards].concat()),
            exit_and_error(&[&["search", "hello"][..], &backwards].concat()),
            exit_and_error(&[&["usage"][..], &backwards].concat()),
        ],
        [refused.clone(), refused.clone(), refused]
    );
    // One day from itself to itself is that day.
    assert_eq!(
        ids(&json_of(&cli.ok(&["runs", "--json", "--since", "2026-11-29", "--until", "2026-11-29"]))),
        vec![json!("a")]
    );
}

#[test]
fn the_first_command_offers_the_machines_zone_when_times_are_utc_without_the_user_knowing() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "mine", "--quiet"]);
    let hinted = |tz: &str, named: Option<&str>| -> bool {
        let mut command = cli.command(&[]);
        command.env("TZ", tz);
        if let Some(named) = named {
            command.env("AGENTRACE_TZ", named);
        }
        let output = command.output().unwrap_or_else(|e| panic!("{e}"));
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stderr).contains("hint: times and days are UTC; `export AGENTRACE_TZ=local` shows them in Asia/Tokyo, this machine's zone")
    };
    // Only where the machine's clocks are not UTC's and no zone is named.
    assert_eq!([hinted("Asia/Tokyo", None), hinted("UTC", None), hinted("Asia/Tokyo", Some("local")), hinted("Asia/Tokyo", Some("UTC"))], [true, false, false, false]);
}

/// A Codex session whose root's only model call failed reported no tokens
/// at all: its cost is `$?`, with nothing to price. The first command told
/// the user that a `$?` lacks prices and to name them (`agentrace prices`,
/// which then listed every model priced); it says so only of a run that
/// has tokens to price.
#[test]
fn the_first_command_gives_no_price_hint_for_a_run_that_reported_no_tokens() {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("claude/nested_fg/home_claude"), &sources.path().join("claude"));
    let thread = super::support::rollout_of_a_failed_call(&sources.path().join("codex"), None);
    let cli = Cli::new();
    let (listed, said) = first_command_over(&cli, sources.path(), &[]);
    let failed_cost = listed
        .lines()
        .find(|line| line.starts_with(&format!("codex-{thread}")))
        .map(|line| line.split_whitespace().nth(8).unwrap_or_default().to_owned());
    let price_hints: Vec<&str> = said.lines().filter(|line| line.contains("lacks some prices")).collect();
    assert_eq!((failed_cost, price_hints), (Some("$?".to_owned()), Vec::<&str>::new()), "{listed}\n{said}");
}

/// A run that reported no tokens at all (its root's only model call failed)
/// has none: `show` gives no tokens line, `runs --json` `null`, the
/// viewer's list `—`; the run list said `0`, as if it had used none where
/// nothing was reported. It says `-`, as its TIME does for no time.
#[test]
fn the_run_list_gives_no_token_figure_for_a_run_that_reported_none() {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    super::support::rollout_of_a_failed_call(&sources.path().join("codex"), None);
    let cli = Cli::new();
    cli.ok(&["import", "--quiet", "--codex-home", &sources.path().join("codex").to_string_lossy(), "--claude-dir", &sources.path().join("none").to_string_lossy()]);
    let listed = cli.ok(&["runs"]);
    let row: Vec<String> = listed.lines().nth(1).unwrap_or_default().split_whitespace().map(str::to_owned).collect();
    let json = json_of(&cli.ok(&["runs", "--json"]));
    assert_eq!(
        (row.get(7).cloned(), row.get(8).cloned(), json["runs"][0]["tokens"].clone()),
        (Some("-".to_owned()), Some("$?".to_owned()), Value::Null),
        "{listed}"
    );
}

/// A new user's first list is the bundled samples, two of them `$?` (their
/// model is a mock): it gave the samples' hint alone, where a history's list
/// says what `$?` means and that the times are UTC.
#[test]
fn the_first_command_over_the_samples_says_what_their_unknown_cost_and_utc_times_mean() {
    let cli = Cli::new();
    let output = cli.command(&[]).env("TZ", "Asia/Tokyo").output().unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let hints: Vec<&str> = stderr.lines().filter(|line| line.starts_with("hint:")).collect();
    let prices = cli.home.path().join("prices.json");
    assert_eq!(
        hints,
        [
            "hint: `agentrace show sample-codex-v1-basic` shows the agent tree and who answered".to_owned(),
            format!("hint: a cost marked `$?` or `≥` lacks some prices or tokens: `agentrace prices` names the models without a price, `agentrace prices --update` fetches the newest price database, and your own prices in {} price the rest in every command", prices.display()),
            "hint: times and days are UTC; `export AGENTRACE_TZ=local` shows them in Asia/Tokyo, this machine's zone".to_owned(),
        ]
    );
}

#[test]
fn search_keeps_to_the_provider_project_and_days_it_is_given() {
    // A Codex run (ingested, no project) and a Claude session (imported,
    // its project the transcript's folder); both root answers say DONE,
    // written about 23:00 UTC on 2026-11-29: the next day in Tokyo.
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("claude/nested_fg/home_claude"), &sources.path().join("claude"));
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "codex-run", "--quiet"]);
    cli.ok(&["import", "--quiet", "--claude-dir", &sources.path().join("claude").to_string_lossy(), "--codex-home", &sources.path().join("none").to_string_lossy()]);
    let claude = "claude-d882d213-4da9-4bcb-bd05-cb557061dd59";
    let runs_hit = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["search", "DONE", "--limit", "1000", "--json"];
        all.extend_from_slice(args);
        let hits = json_of(&cli.ok(&all));
        let mut runs: Vec<String> = hits["hits"].as_array().into_iter().flatten().filter_map(|hit| hit["runId"].as_str().map(str::to_owned)).collect();
        runs.sort();
        runs.dedup();
        runs
    };
    let both = vec![claude.to_owned(), "codex-run".to_owned()];
    assert_eq!(
        [
            runs_hit(&[]),
            runs_hit(&["--provider", "claude"]),
            runs_hit(&["--provider", "codex"]),
            runs_hit(&["--project", "nested_fg"]),
            runs_hit(&["--since", "2026-11-30"]),
            runs_hit(&["--since", "2026-11-30", "--tz", "Asia/Tokyo"]),
            runs_hit(&["--until", "2026-11-29"]),
        ],
        [both.clone(), vec![claude.to_owned()], vec!["codex-run".to_owned()], vec![claude.to_owned()], vec![], both.clone(), both]
    );
}

#[test]
fn the_first_command_records_the_samples_only_when_there_is_no_history_at_all() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "mine"]);
    let listed = cli.ok(&[]);
    assert!(listed.contains("mine") && !listed.contains("sample-"), "{listed}");
    assert_eq!(ids(&json_of(&cli.ok(&["runs", "--json"]))), vec![json!("mine")]);
}

#[test]
fn search_gives_the_hits_and_snippets_it_gave_when_the_catalog_kept_a_copy_of_each_text() {
    // `fixtures/search/codex_hits.json`: what `search --limit 1000 --json`
    // printed for these words over every Codex capture, from the build
    // whose catalog kept each text (schema 2, FTS5's own `snippet()`).
    let cli = Cli::new();
    let captures = fixtures().join("codex");
    let mut names: Vec<String> = std::fs::read_dir(&captures)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .filter(|entry| entry.path().join("server.jsonl").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in &names {
        cli.ingest(&captures.join(name).join("server.jsonl"), &["--run-id", name]);
    }
    let expected = json_of(&std::fs::read_to_string(fixtures().join("search/codex_hits.json")).unwrap_or_else(|e| panic!("{e}")));
    let words = expected.as_object().map(|words| words.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    assert_eq!(words.len(), 11);
    let found: serde_json::Map<String, Value> = words.iter().map(|word| (word.clone(), json_of(&cli.ok(&["search", word, "--limit", "1000", "--json"])))).collect();
    assert_eq!(Value::Object(found), expected);
}

/// `agentrace` with no arguments, reading the history in `sources` (the
/// Codex and Claude folders, empty or not there): its stdout and stderr.
fn first_command_over(cli: &Cli, sources: &std::path::Path, args: &[&str]) -> (String, String) {
    let output = cli
        .command(args)
        .env("CODEX_HOME", sources.join("codex"))
        .env("CLAUDE_CONFIG_DIR", sources.join("claude"))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn the_samples_recorded_for_a_new_user_are_removed_once_their_own_runs_are_there() {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cli = Cli::new();
    let (listed, _) = first_command_over(&cli, sources.path(), &[]);
    assert!(listed.contains("sample-codex-nested"), "{listed}");
    // Their history arrives (Claude Code is used for the first time).
    copy_dir(&fixtures().join("claude/nested_fg/home_claude"), &sources.path().join("claude"));
    let (listed, said) = first_command_over(&cli, sources.path(), &[]);
    assert!(said.contains("the bundled sample runs recorded when there were none are removed"), "{said}");
    assert!(!listed.contains("sample-"), "{listed}");
    assert_eq!(ids(&json_of(&cli.ok(&["runs", "--json"]))), vec![json!("claude-d882d213-4da9-4bcb-bd05-cb557061dd59")]);
    // The samples' tokens and cost no longer add to the user's own: the
    // same usage as a home that never held them.
    let fresh = Cli::new();
    first_command_over(&fresh, sources.path(), &["import"]);
    assert_eq!(json_of(&cli.ok(&["usage", "--json"])), json_of(&fresh.ok(&["usage", "--json"])));
    assert!(cli.run(&["show", "sample-codex-nested"]).status.code() != Some(0));
    // Once retired, nothing more is said.
    let (_, said) = first_command_over(&cli, sources.path(), &[]);
    assert!(!said.contains("sample runs"), "{said}");
}

#[test]
fn an_import_retires_the_placeholder_samples_and_samples_asked_for_are_kept() {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let retired = Cli::new();
    let kept = Cli::new();
    first_command_over(&retired, sources.path(), &[]);
    kept.ok(&["samples"]);
    copy_dir(&fixtures().join("codex/v1_basic/rollouts"), &sources.path().join("codex/sessions"));
    for cli in [&retired, &kept] {
        first_command_over(cli, sources.path(), &["import"]);
    }
    let listed = |cli: &Cli| ids(&json_of(&cli.ok(&["runs", "--json"]))).len();
    assert_eq!((listed(&retired), listed(&kept)), (1, 4));
}

/// A run whose session ended before its root's turn did (a host restarted
/// mid-child; the capture ends there) is `running` but nothing is at work:
/// its record says `sessionEnded`, the list says it ended mid-turn and the
/// first command does not call it live (it said `1 session is live`);
/// `show` says why there is no result. A record written before the field
/// gets it once, at the next command.
#[test]
fn a_run_stopped_mid_turn_is_listed_as_stopped_not_live() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_restart_mid_child"), &["--run-id", "stopped"]);
    let nowhere = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let first_command = || {
        let (listed, said) = first_command_over(&cli, nowhere.path(), &[]);
        let row = listed.lines().nth(1).map(|row| row.split("  ").filter(|cell| !cell.is_empty()).last().unwrap_or_default().trim().to_owned());
        (row, said.contains("live"))
    };
    let listed = |cli: &Cli| {
        let runs = json_of(&cli.ok(&["runs", "--json"]));
        (runs["runs"][0]["status"].clone(), runs["runs"][0]["sessionEnded"].clone())
    };
    // `--status live` keeps to the runs at work; `running` is the record's.
    let with_status = |status: &str| json_of(&cli.ok(&["runs", "--json", "--status", status]))["total"].clone();
    assert_eq!((with_status("running"), with_status("live")), (json!(1), json!(0)));
    let show: Vec<String> = cli.ok(&["show", "stopped"]).lines().filter(|line| line.starts_with("status") || line.starts_with("result")).map(str::to_owned).collect();
    assert_eq!(
        (listed(&cli), first_command(), show),
        (
            (json!("running"), json!(true)),
            (Some("ended mid-turn, no answer".to_owned()), false),
            vec![
                "status    running, but its session ended (nothing is at work)".to_owned(),
                "result    none: the session ended before the root's turn did".to_owned()
            ]
        )
    );
    // As an agentrace before the field wrote it: the record and the row
    // without it, and the catalog not yet marked.
    let record_path = cli.home.path().join("runs/stopped.json");
    let mut record: Value = json_of(&std::fs::read_to_string(&record_path).unwrap_or_else(|e| panic!("{e}")));
    record.as_object_mut().map(|record| record.remove("sessionEnded"));
    let old = serde_json::to_string(&record).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&record_path, &old).unwrap_or_else(|e| panic!("{e}"));
    catalog_execute(&cli, "UPDATE runs SET record = ?1", &[&old]);
    catalog_execute(&cli, "DELETE FROM meta WHERE key = 'stopped_runs_marked'", &[]);
    assert_eq!(listed(&cli), (json!("running"), json!(true)));
    let again: Value = json_of(&std::fs::read_to_string(&record_path).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(again["sessionEnded"], json!(true));
    // A catalog made anew from such a record marks it too.
    std::fs::write(&record_path, &old).unwrap_or_else(|e| panic!("{e}"));
    for end in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{end}", cli.home.path().join("catalog.sqlite").display()));
    }
    assert_eq!(listed(&cli), (json!("running"), json!(true)));
}

/// `samples --json` names the sample runs it recorded, each one `runs`
/// then lists.
#[test]
fn samples_json_names_the_runs_it_recorded() {
    let cli = Cli::new();
    let said = json_of(&cli.ok(&["samples", "--json"]));
    let named: Vec<Value> = said["samples"].as_array().map(|samples| samples.iter().map(|sample| sample["id"].clone()).collect()).unwrap_or_default();
    let mut listed = ids(&json_of(&cli.ok(&["runs", "--json"])));
    listed.sort_by_key(Value::to_string);
    let mut sorted = named.clone();
    sorted.sort_by_key(Value::to_string);
    assert_eq!(
        (named, said["samples"][0]["what"].clone(), sorted),
        (
            vec![json!("sample-codex-v1-basic"), json!("sample-codex-v2-basic"), json!("sample-codex-nested")],
            json!("Codex V1: the root spawns one helper, waits, closes it, answers"),
            listed
        )
    );
}

/// An info-level note (`replayed_history`: a Codex child's rollout starts
/// with a copy of its parent's history, counted once) is no problem: the
/// record lists it in `noteCodes`, the list's WARN and `--warning any`
/// leave it out (every imported Codex run with a child read WARN 1), and
/// `--warning replayed_history` and `show` still find it. A record an
/// older agentrace wrote gets its notes once, at the next command.
#[test]
fn an_info_level_note_is_listed_but_not_counted_as_a_problem() {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("codex/v1_basic/rollouts"), &sources.path().join("codex/sessions"));
    let cli = Cli::new();
    cli.ok(&["import", "--quiet", "--codex-home", &sources.path().join("codex").to_string_lossy(), "--claude-dir", &sources.path().join("claude").to_string_lossy()]);
    let seen = |cli: &Cli| {
        let runs = json_of(&cli.ok(&["runs", "--json"]));
        let run = &runs["runs"][0];
        let warn = cli.ok(&["runs"]).lines().nth(1).map(|row| row.split_whitespace().nth(9).unwrap_or_default().to_owned());
        let count = |args: &[&str]| {
            let mut all = vec!["runs", "--json"];
            all.extend_from_slice(args);
            json_of(&cli.ok(&all))["total"].clone()
        };
        (
            (run["warningCount"].clone(), run["warningCodes"].clone(), run["noteCodes"].clone()),
            warn,
            (count(&["--warning", "any"]), count(&["--warning", "replayed_history"])),
        )
    };
    let expected = (
        (json!(1), json!(["replayed_history"]), json!(["replayed_history"])),
        Some("0".to_owned()),
        (json!(0), json!(1)),
    );
    assert_eq!(seen(&cli), expected);
    let id = ids(&json_of(&cli.ok(&["runs", "--json"])))[0].as_str().unwrap_or_default().to_owned();
    assert!(cli.ok(&["show", &id]).contains("info replayed_history"), "{}", cli.ok(&["show", &id]));
    // As an agentrace before the field wrote it.
    let record_path = cli.home.path().join(format!("runs/{id}.json"));
    let mut record = json_of(&std::fs::read_to_string(&record_path).unwrap_or_else(|e| panic!("{e}")));
    record.as_object_mut().map(|record| record.remove("noteCodes"));
    let old = serde_json::to_string(&record).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&record_path, &old).unwrap_or_else(|e| panic!("{e}"));
    catalog_execute(&cli, "UPDATE runs SET record = ?1, note_count = 0", &[&old]);
    catalog_execute(&cli, "DELETE FROM meta WHERE key = 'notes_marked'", &[]);
    assert_eq!(seen(&cli), expected);
}

/// A run recorded without the catalog at hand (a Claude transcript or
/// hook inputs ingested, as `run`, `tap` and `hook` record) is listed with its project
/// as soon as it is synced, and `runs --project` finds it; before, its
/// project came only once `usage` had kept its usage. A run the catalog
/// indexes when its recording ends (an ingested stream) has it too.
#[test]
fn a_recorded_run_is_listed_and_found_by_its_project_at_once() {
    let cli = Cli::new();
    let projects = fixtures().join("claude/nested_fg/home_claude/projects");
    let session = std::fs::read_dir(&projects)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .flat_map(|project| std::fs::read_dir(project.path()).into_iter().flatten().flatten())
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .unwrap_or_else(|| panic!("no session file"));
    let claude = cli.ingest(&session, &["--quiet"]);
    let codex = cli.ingest(&capture("v1_basic"), &["--run-id", "codex-basic", "--quiet"]);
    // Hook inputs alone (what `agentrace hook` records): each names the
    // session's folder.
    let hooks = cli.ingest(&fixtures().join("claude/single_fg/hooks.jsonl"), &["--quiet"]);
    let projects_of = |args: &[&str]| -> Vec<(Value, Value)> {
        let mut all = vec!["runs", "--json"];
        all.extend_from_slice(args);
        let list = json_of(&cli.ok(&all));
        list["runs"].as_array().into_iter().flatten().map(|run| (run["id"].clone(), run["project"].clone())).collect()
    };
    assert_eq!(
        (projects_of(&["--project", "nested_fg"]), projects_of(&["--project", "codexcap"]), projects_of(&["--project", "single_fg"])),
        (
            vec![(json!(claude), json!("/home/dev/agents/work/nested_fg"))],
            vec![(json!(codex), json!("/home/dev/codexcap/work"))],
            vec![(json!(hooks), json!("/home/dev/agents/work/single_fg"))]
        )
    );
}

/// An imported Claude run keeps its project once its transcript is gone
/// (Claude Code deletes transcripts after 30 days) and the catalog is made
/// anew from the logs (unreadable, or of another schema): the run's log
/// says the session's folder (the root's `thread_started`), so `runs`,
/// `runs --project` and `usage --by project` give what they gave.
#[test]
fn an_imported_claude_run_keeps_its_project_when_its_transcript_and_catalog_are_gone() {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (codex, claude) = (sources.path().join("codex"), sources.path().join("claude"));
    std::fs::create_dir_all(&codex).unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("claude/nested_fg/home_claude"), &claude);
    let cli = Cli::new();
    let (codex_arg, claude_arg) = (codex.to_string_lossy().into_owned(), claude.to_string_lossy().into_owned());
    cli.ok(&["import", "--quiet", "--codex-home", &codex_arg, "--claude-dir", &claude_arg]);
    let seen = |cli: &Cli| {
        let listed = json_of(&cli.ok(&["runs", "--json", "--project", "nested_fg"]));
        let usage = json_of(&cli.ok(&["usage", "--by", "project", "--json"]));
        (
            listed["runs"].as_array().into_iter().flatten().map(|run| (run["id"].clone(), run["project"].clone())).collect::<Vec<_>>(),
            usage["projects"].as_object().map(|projects| projects.keys().cloned().collect::<Vec<_>>()).unwrap_or_default(),
        )
    };
    let before = seen(&cli);
    assert_eq!(
        before,
        (
            vec![(json!("claude-d882d213-4da9-4bcb-bd05-cb557061dd59"), json!("/home/dev/agents/work/nested_fg"))],
            vec!["/home/dev/agents/work/nested_fg".to_owned()]
        )
    );
    std::fs::remove_dir_all(&claude).unwrap_or_else(|e| panic!("{e}"));
    let catalog = cli.home.path().join("catalog.sqlite");
    for end in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{end}", catalog.display()));
    }
    assert_eq!(seen(&cli), before);
}

/// A transcript ingested again into the run that holds it said `added to
/// run …`, as if the session had been recorded once more: nothing was.
#[test]
fn a_transcript_ingested_again_says_nothing_was_added() {
    let cli = Cli::new();
    let projects = fixtures().join("claude/single_fg/home_claude/projects");
    let project = std::fs::read_dir(&projects).unwrap_or_else(|e| panic!("{e}")).next().unwrap_or_else(|| panic!("no project")).unwrap_or_else(|e| panic!("{e}")).path();
    let main = std::fs::read_dir(&project)
        .unwrap_or_else(|e| panic!("{e}"))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path())
        .find(|path| path.extension().is_some_and(|extension| extension == "jsonl"))
        .unwrap_or_else(|| panic!("no session file"));
    let id = cli.ingest(&main, &[]);
    let again = cli.run(&["ingest", &main.to_string_lossy()]);
    let session = main.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
    assert_eq!(
        (again.status.code(), String::from_utf8_lossy(&again.stdout).into_owned(), String::from_utf8_lossy(&again.stderr).into_owned()),
        (Some(0), format!("{id}\n"), format!("{id} holds every line of claude session {session} already: nothing added (73 events)\n"))
    );
}
