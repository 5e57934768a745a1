//! The Claude Code surfaces of the binary, end to end on real captures:
//! stream-json detected and ingested, transcripts merged into the run that
//! holds their session, hook inputs appended by `agentrace hook`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;

use super::support::Cli;

fn claude_capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/claude")
        .join(name)
}

fn show(cli: &Cli, id: &str) -> Value {
    serde_json::from_str(&cli.ok(&["show", id, "--json"]))
        .unwrap_or_else(|error| panic!("show --json: {error}"))
}

/// `(label, threadId, status)` of every agent, depth first.
fn tree(view: &Value) -> Vec<(String, String, String)> {
    fn walk(nodes: &Value, out: &mut Vec<(String, String, String)>) {
        for node in nodes.as_array().into_iter().flatten() {
            out.push((
                node["label"].as_str().unwrap_or_default().to_owned(),
                node["threadId"].as_str().unwrap_or_default().to_owned(),
                node["status"].as_str().unwrap_or_default().to_owned(),
            ));
            walk(&node["children"], out);
        }
    }
    let mut out = Vec::new();
    walk(&view["agents"], &mut out);
    out
}

fn owned(items: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    items
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

#[test]
fn claude_stream_json_is_detected_and_attributed_to_the_nested_tree() {
    let cli = Cli::new();
    let id = cli.ingest(&claude_capture("nested_fg").join("stream.jsonl"), &[]);
    let view = show(&cli, &id);
    assert_eq!(
        (
            view["run"]["source"].clone(),
            view["run"]["status"].clone(),
            view["run"]["result"].clone(),
            tree(&view)
        ),
        (
            Value::from("claude-stream"),
            Value::from("done"),
            Value::from("ROOT-FINAL: all subagents finished for scenario nested_fg."),
            owned(&[
                ("Main", "d882d213-4da9-4bcb-bd05-cb557061dd59", "completed"),
                (
                    "Echo task N [general-purpose]",
                    "a469782563c476d6d",
                    "completed"
                ),
                (
                    "Nested echo N1 [general-purpose]",
                    "a17a129e5db5c7df9",
                    "completed"
                ),
            ])
        )
    );
}

#[test]
fn transcripts_of_a_recorded_session_join_its_run_and_add_only_what_was_missing() {
    let cli = Cli::new();
    let capture = claude_capture("single_fg");
    let id = cli.ingest(
        &capture.join("stream.jsonl"),
        &["--format", "claude-stream"],
    );
    let before = show(&cli, &id);
    let projects = capture.join("home_claude/projects");
    let joined = cli.ingest(&projects, &["--format", "claude-transcript"]);
    let again = cli.ingest(&projects, &[]);
    let after = show(&cli, &id);
    let helper_final = |view: &Value| view["agents"][0]["children"][0]["finalMessage"].clone();
    let events = |view: &Value| view["run"]["counts"]["events"].as_u64().unwrap_or_default();
    assert_eq!(
        (joined.as_str(), again.as_str()),
        (id.as_str(), id.as_str())
    );
    assert_eq!(
        (
            after["run"]["result"].clone(),
            helper_final(&after),
            tree(&after)
        ),
        (
            before["run"]["result"].clone(),
            Value::from("SUBAGENT-A-DONE: the command printed hello-from-A."),
            tree(&before)
        )
    );
    // The second transcript ingest finds every line recorded already: its
    // lines are kept (each raw once) as duplicates, with no new messages.
    let messages = |cli: &Cli| {
        cli.ok(&["events", &id, "--json"])
            .lines()
            .filter(|line| line.contains("\"type\":\"message\""))
            .count()
    };
    let first_pass = messages(&cli);
    let third = cli.ingest(&projects, &[]);
    assert_eq!((third, messages(&cli)), (id.clone(), first_pass));
    assert!(events(&after) > events(&before));
}

#[test]
fn a_hook_input_on_stdin_joins_the_run_of_its_session_and_exits_zero() {
    let cli = Cli::new();
    let capture = claude_capture("single_fg");
    let id = cli.ingest(&capture.join("stream.jsonl"), &[]);
    let hooks = std::fs::read_to_string(capture.join("hooks.jsonl"))
        .unwrap_or_else(|error| panic!("{error}"));
    let stop = hooks
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|line| line["input"].clone())
        .find(|input| input["hook_event_name"] == "SubagentStop")
        .unwrap_or_else(|| panic!("no SubagentStop hook"));
    let mut child = cli
        .command(&["hook"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{error}"));
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(stop.to_string().as_bytes())
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let output = child
        .wait_with_output()
        .unwrap_or_else(|error| panic!("{error}"));
    let last = cli
        .ok(&["events", &id, "--json"])
        .lines()
        .last()
        .and_then(|line| serde_json::from_str::<Value>(line).ok())
        .unwrap_or_default();
    assert_eq!(
        (
            output.status.code(),
            output.stderr.is_empty(),
            last["actor"]["threadId"].clone(),
            last["actor"]["role"].clone(),
            last["event"]["method"].clone()
        ),
        (
            Some(0),
            true,
            Value::from("a3723d29fe24feb6b"),
            Value::from("helper"),
            Value::from("hook/SubagentStop")
        )
    );
}

/// Runs `agentrace hook` with `input` on stdin (none: stdin closed at once);
/// returns its exit code and stderr.
fn hook(cli: &Cli, input: Option<&str>) -> (Option<i32>, String) {
    let mut command = cli.command(&["hook"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    if input.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn().unwrap_or_else(|error| panic!("{error}"));
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(input.as_bytes())
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let output = child
        .wait_with_output()
        .unwrap_or_else(|error| panic!("{error}"));
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The ids and statuses `runs --json` lists.
fn listed_runs(cli: &Cli) -> Vec<(String, String)> {
    let runs: Value = serde_json::from_str(&cli.ok(&["runs", "--json"]))
        .unwrap_or_else(|error| panic!("runs --json: {error}"));
    runs["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|run| {
            (
                run["id"].as_str().unwrap_or_default().to_owned(),
                run["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_hook_input_that_names_no_session_makes_no_run_and_says_so_once() {
    let cli = Cli::new();
    let shape = "(a hook input is a JSON object with a `session_id`)";
    let refused = [
        Some(""),
        Some("not json"),
        None,
        Some(r#"{"hook_event_name":"Stop"}"#),
    ]
    .map(|input| hook(&cli, input));
    let no_input = format!("warning: agentrace hook: no hook input on stdin, nothing recorded {shape}\n");
    assert_eq!(
        (refused.to_vec(), listed_runs(&cli)),
        (
            vec![
                (Some(0), no_input.clone()),
                (
                    Some(0),
                    format!("warning: agentrace hook: the hook input on stdin is not JSON, nothing recorded {shape}\n")
                ),
                (Some(0), no_input),
                (
                    Some(0),
                    format!("warning: agentrace hook: the hook input on stdin names no session, nothing recorded {shape}\n")
                ),
            ],
            Vec::new()
        )
    );
    // A real input still starts its session's run, without a word.
    let first = std::fs::read_to_string(claude_capture("single_fg").join("hooks.jsonl"))
        .unwrap_or_else(|error| panic!("{error}"))
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|line| line["input"].clone())
        .next()
        .unwrap_or_else(|| panic!("no hook input"));
    let session = first["session_id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        (hook(&cli, Some(&first.to_string())), listed_runs(&cli).len()),
        ((Some(0), String::new()), 1)
    );
    let events: Vec<Value> = cli
        .ok(&["events", &format!("claude-{session}"), "--json"])
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    assert_eq!(
        events
            .iter()
            .filter_map(|line| line["event"]["method"].as_str())
            .filter(|method| method.starts_with("hook/"))
            .collect::<Vec<_>>(),
        vec![format!("hook/{}", first["hook_event_name"].as_str().unwrap_or_default())]
    );
}

#[test]
fn a_hook_that_cannot_record_still_exits_zero_and_says_why() {
    let cli = Cli::new();
    let mut child = cli
        .command(&["hook", "--run-id", "../not-a-run"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{error}"));
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(br#"{"session_id":"s","hook_event_name":"Stop"}"#)
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let output = child
        .wait_with_output()
        .unwrap_or_else(|error| panic!("{error}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        (
            output.status.code(),
            stderr.starts_with("warning: agentrace hook:"),
            stderr.contains("not-a-run")
        ),
        (Some(0), true, true),
        "{stderr}"
    );
}

#[test]
fn transcripts_are_found_under_claude_config_dir_when_no_input_is_given() {
    let cli = Cli::new();
    let config = claude_capture("v2.1.197_parallel").join("home_claude");
    let output = cli
        .command(&["ingest", "--format", "claude-transcript"])
        .env("CLAUDE_CONFIG_DIR", &config)
        .output()
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let view = show(&cli, &id);
    assert_eq!(
        (
            view["run"]["source"].clone(),
            view["run"]["result"].clone(),
            tree(&view).len()
        ),
        (
            Value::from("claude-transcript"),
            Value::from("ROOT-FINAL: all subagents finished for scenario parallel."),
            3
        )
    );
}

#[test]
fn a_transcript_named_by_its_bare_file_name_is_read_with_its_subagents() {
    // `agentrace ingest <session>.jsonl` from the project folder: the
    // file's folder is an empty path, which said "cannot read : No such
    // file or directory".
    let cli = Cli::new();
    let projects = claude_capture("nested_fg").join("home_claude/projects");
    let project = projects.join("-home-dev-agents-work-nested-fg");
    let output = cli
        .command(&["ingest", "d882d213-4da9-4bcb-bd05-cb557061dd59.jsonl"])
        .current_dir(&project)
        .output()
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let by_name = show(&cli, &id);
    let by_path = show(&cli, &cli.ingest(&projects, &["--format", "claude-transcript", "--run-id", "run-by-path"]));
    assert_eq!(
        (by_name["run"]["result"].clone(), tree(&by_name)),
        (by_path["run"]["result"].clone(), tree(&by_path))
    );
    assert_eq!(tree(&by_name).len(), 3);
}

/// A transcript's lines of one session in `cwd` (`/work/app`), as Claude
/// Code 2.1 writes them (a real capture's, paths made neutral): a prompt,
/// then for each `(text, failed)` the reply, the CLI's own `API Error: …`
/// one when `failed`.
fn transcript(session: &str, turns: &[(&str, &str, bool)]) -> String {
    let mut lines = Vec::new();
    let mut parent = serde_json::Value::Null;
    for (index, (prompt, reply, failed)) in turns.iter().enumerate() {
        let second = |s: u32| format!("2026-11-30T10:00:{:02}.000Z", index as u32 * 10 + s);
        let prompt_id = format!("{session}-p{index}");
        lines.push(serde_json::json!({
            "parentUuid": parent, "isSidechain": false, "type": "user",
            "message": {"role": "user", "content": prompt}, "uuid": prompt_id,
            "timestamp": second(0), "userType": "external", "entrypoint": "sdk-cli",
            "cwd": "/work/app", "sessionId": session, "version": "2.1.332",
        }));
        let reply_id = format!("{session}-r{index}");
        let mut record = serde_json::json!({
            "parentUuid": prompt_id, "isSidechain": false, "type": "assistant", "uuid": reply_id,
            "timestamp": second(1),
            "message": {"id": format!("msg_{session}_{index}"), "model": if *failed { "<synthetic>" } else { "claude-sonnet-4-5" },
                        "role": "assistant", "stop_reason": if *failed { "stop_sequence" } else { "end_turn" }, "stop_sequence": "", "type": "message",
                        "usage": {"input_tokens": if *failed { 0 } else { 1200 }, "output_tokens": if *failed { 0 } else { 30 }, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
                        "content": [{"type": "text", "text": reply}]},
            "userType": "external", "entrypoint": "sdk-cli", "cwd": "/work/app", "sessionId": session, "version": "2.1.332",
        });
        if *failed {
            record["apiError"] = "connection_failed".into();
            record["error"] = "server_error".into();
            record["isApiErrorMessage"] = true.into();
            record["failedResponseHadNoToolCall"] = true.into();
        }
        lines.push(record);
        parent = serde_json::Value::from(reply_id);
    }
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// When the model cannot be reached, Claude Code writes its own reply into
/// the transcript (`isApiErrorMessage`, `API Error: …`) and `claude -p`
/// exits 1; its stream's result says `is_error`, and `run claude` records a
/// failed run. Imported from the transcript, the same session read `done`,
/// the error text as the root's answer, and `runs --status failed` missed
/// it. A session the user went on with after the error, its next turn
/// answered, is done with that answer.
#[test]
fn a_claude_turn_whose_model_call_failed_is_a_failed_run_when_imported_from_its_transcript() {
    let error = "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)";
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let project = dir.path().join("claude/projects/-work-app");
    std::fs::create_dir_all(&project).unwrap_or_else(|e| panic!("{e}"));
    let failed = "27b74d7a-0dca-4047-b04f-2a577f57fd1c";
    let recovered = "3f0c3e51-7c55-4a8e-9d0b-2d3c1a9e8b11";
    std::fs::write(project.join(format!("{failed}.jsonl")), transcript(failed, &[("Fix the parser.", error, true)])).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        project.join(format!("{recovered}.jsonl")),
        transcript(recovered, &[("Fix the parser.", error, true), ("Try again.", "Fixed: the parser reads nested lists.", false)]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let cli = Cli::new();
    cli.ok(&["import", "--quiet", "--codex-home", &dir.path().join("none").to_string_lossy(), "--claude-dir", &dir.path().join("claude").to_string_lossy()]);
    let ended = |session: &str| {
        let view = show(&cli, &format!("claude-{session}"));
        (view["run"]["status"].clone(), view["run"]["error"].clone(), view["run"]["result"].clone(), view["agents"][0]["status"].clone())
    };
    let failed_runs: Vec<Value> = serde_json::from_str::<Value>(&cli.ok(&["runs", "--status", "failed", "--json"])).unwrap_or_else(|e| panic!("{e}"))["runs"]
        .as_array()
        .map(|runs| runs.iter().map(|run| run["id"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(
        (ended(failed), ended(recovered), failed_runs),
        (
            (Value::from("failed"), Value::from(error), Value::Null, Value::from("failed")),
            (Value::from("done"), Value::Null, Value::from("Fixed: the parser reads nested lists."), Value::from("completed")),
            vec![Value::from(format!("claude-{failed}"))],
        )
    );
}

/// A reply Claude Code wrote itself when the model could not be reached
/// names no model and reports no tokens: `usage --by model` listed an
/// `unknown` model of 0 tokens beside the user's real ones (and `--by day
/// --breakdown` under each day), a model nobody used. It lists the models
/// that were used, and the totals are as they were.
#[test]
fn usage_by_model_lists_no_unknown_model_for_a_reply_the_cli_wrote_itself() {
    let error = "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)";
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let project = dir.path().join("claude/projects/-work-app");
    std::fs::create_dir_all(&project).unwrap_or_else(|e| panic!("{e}"));
    let failed = "27b74d7a-0dca-4047-b04f-2a577f57fd1c";
    let answered = "3f0c3e51-7c55-4a8e-9d0b-2d3c1a9e8b11";
    std::fs::write(project.join(format!("{failed}.jsonl")), transcript(failed, &[("Fix the parser.", error, true)])).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(project.join(format!("{answered}.jsonl")), transcript(answered, &[("Fix the parser.", "Fixed.", false)])).unwrap_or_else(|e| panic!("{e}"));
    let cli = Cli::new();
    let claude = dir.path().join("claude").to_string_lossy().into_owned();
    cli.ok(&["import", "--quiet", "--codex-home", &dir.path().join("none").to_string_lossy(), "--claude-dir", &claude]);
    let models = |report: &Value| -> (Vec<String>, Value) {
        (report["models"].as_object().map(|models| models.keys().cloned().collect()).unwrap_or_default(), report["totals"]["totalTokens"].clone())
    };
    let imported: Value = serde_json::from_str(&cli.ok(&["usage", "--by", "model", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let straight: Value = serde_json::from_str(&cli.ok(&["usage", "--by", "model", "--json", "--claude-dir", &claude, "--provider", "claude"])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (models(&imported), models(&straight)),
        ((vec!["claude-sonnet-4-5".to_owned()], Value::from(1230)), (vec!["claude-sonnet-4-5".to_owned()], Value::from(1230)))
    );
}

/// `(label, state)` of each agent `top --json` shows for a Claude capture's
/// transcripts written, in the order the CLI wrote them, up to and with the
/// first line of the root's transcript that `at` picks (as a follower that
/// imports each pass would have them then).
fn top_through(capture: &str, at: &dyn Fn(&Value) -> bool) -> Vec<(Value, Value)> {
    use super::import_usage::{Growth, Homes, Provider};

    let growth = Growth::of(Provider::Claude, capture);
    let root = growth
        .files
        .iter()
        .position(|file| !file.path.to_string_lossy().contains("subagents"))
        .unwrap_or_else(|| panic!("{capture}: no root transcript"));
    let line = growth.files[root]
        .lines
        .iter()
        .position(|line| serde_json::from_slice::<Value>(line).is_ok_and(|line| at(&line)))
        .unwrap_or_else(|| panic!("{capture}: no such root line"));
    let through = growth
        .order
        .iter()
        .position(|written| *written == (root, line))
        .unwrap_or_else(|| panic!("{capture}: the line is not in the writing order"))
        + 1;
    let homes = Homes::new();
    growth.write(&homes, 0..through, true);
    let cli = Cli::new();
    let claude_dir = homes.of(Provider::Claude).to_string_lossy().into_owned();
    let printed: Value = serde_json::from_str(&cli.ok(&["top", "--json", "--claude-dir", &claude_dir]))
        .unwrap_or_else(|error| panic!("top --json: {error}"));
    printed["sessions"][0]["agents"]
        .as_array()
        .unwrap_or_else(|| panic!("{capture}: no agents in {printed}"))
        .iter()
        .map(|row| (row["label"].clone(), row["state"].clone()))
        .collect()
}

/// The root user line whose text (a string content) is `text`.
fn prompt(text: &'static str) -> impl Fn(&Value) -> bool {
    move |line: &Value| line["type"] == "user" && line["message"]["content"] == text
}

/// The root user line whose text (a string content) begins with `start`.
fn user_line_starting(start: &'static str) -> impl Fn(&Value) -> bool {
    move |line: &Value| line["type"] == "user" && line["message"]["content"].as_str().is_some_and(|text| text.starts_with(start))
}

/// A Claude root followed from its transcript reads `working` from its
/// prompt on, while the model thinks on it: a transcript opened the root's
/// turn only at its first reply, so the root read `pending` after a first
/// prompt, and `ended succeeded` after a prompt that followed an answer,
/// until the reply was written. Interactive 2.1.332 (which marks each line
/// it answers) and 2.1.197 (which marks none).
#[test]
fn a_claude_root_reads_working_from_its_prompt_until_its_reply() {
    let seen = [
        ("interactive_local_commands", "Say hello."),
        ("interactive_local_commands", "Say hello again."),
        ("interactive_local_commands", "One more hello after compacting."),
        ("v2.1.197_single", "[[scenario:single]] Please do the scripted task."),
    ]
    .map(|(capture, text)| (capture, text, top_through(capture, &prompt(text))));
    let working = || vec![(Value::from("Main"), Value::from("working"))];
    assert_eq!(
        seen,
        [
            ("interactive_local_commands", "Say hello.", working()),
            ("interactive_local_commands", "Say hello again.", working()),
            ("interactive_local_commands", "One more hello after compacting.", working()),
            ("v2.1.197_single", "[[scenario:single]] Please do the scripted task.", working()),
        ]
    );
}

/// A user line no model call answers leaves the root as it was, after its
/// last answer: a local command (`/model`, `/compact`: the command line and
/// its output) and a shell-mode command's input (`!echo`, whose output line
/// is what the CLI sends to the model), as the real CLI writes them. An
/// interactive session's replies, whose lines name the session twice
/// (`sessionId` and `session_id`), were not read at all: its root read
/// `pending` throughout.
#[test]
fn a_line_the_claude_cli_answers_with_no_model_call_leaves_the_root_as_it_was() {
    let capture = "interactive_local_commands";
    let seen = [
        "<local-command-stdout>Set model to",
        "<local-command-stdout>\u{1b}[2mCompacted",
        "<bash-input>",
    ]
    .map(|start| (start, top_through(capture, &user_line_starting(start))));
    let ended = || vec![(Value::from("Main"), Value::from("ended done"))];
    assert_eq!(
        seen,
        [
            ("<local-command-stdout>Set model to", ended()),
            ("<local-command-stdout>\u{1b}[2mCompacted", ended()),
            ("<bash-input>", ended()),
        ]
    );
}
