//! `agentrace run claude` against the real Claude Code CLI (the pinned npm
//! install) talking to the scripted Messages API mock on 127.0.0.1: one
//! foreground subagent, two parallel background subagents, a nested
//! subagent, the root running Bash before spawning. Each run is checked live
//! (tree, attribution, result, exit code), then re-ingested from its own
//! recorded stdout and merged with the transcripts the CLI wrote, which must
//! give the same tree and result. Offline and prompt-free: private HOME,
//! dummy key, `IS_SANDBOX=1`, the DISABLE_* variables, bounded in time.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use agentrace_testkit::agents;
use agentrace_testkit::anthropic::MockAnthropic;
use serde_json::Value;

use super::support::Cli;

/// A CLI run gets this long before it is killed.
const RUN_BOUND: Duration = Duration::from_secs(120);

/// Runs `command`, killing it (by pid) when it outlives `bound`.
fn bounded(mut command: Command, bound: Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start agentrace: {error}"));
    let deadline = Instant::now() + bound;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                let _ = child.kill();
                break;
            }
        }
    }
    child
        .wait_with_output()
        .unwrap_or_else(|error| panic!("cannot wait for agentrace: {error}"))
}

struct Recorded {
    cli: Cli,
    id: String,
    output: Output,
    home: tempfile::TempDir,
}

/// `agentrace run claude` for `scenario`, in the offline environment of the
/// fixtures' notes, with its private HOME under `home`.
fn claude_command(
    cli: &Cli,
    home: &Path,
    mock: &MockAnthropic,
    id: &str,
    scenario: &str,
) -> Command {
    claude_command_with(cli, home, mock, id, scenario, &[])
}

/// [`claude_command`] with `extra` arguments of agentrace's before the
/// prompt.
fn claude_command_with(
    cli: &Cli,
    home: &Path,
    mock: &MockAnthropic,
    id: &str,
    scenario: &str,
    extra: &[&str],
) -> Command {
    let work = home.join("work");
    let tmp = home.join("tmp");
    for dir in [&work, &tmp] {
        std::fs::create_dir_all(dir).unwrap_or_else(|error| panic!("{error}"));
    }
    let claude = agents::claude();
    let prompt = format!("[[scenario:{scenario}]] Please do the scripted task.");
    let cwd = work.to_string_lossy().into_owned();
    let claude_path = claude.to_string_lossy().into_owned();
    let mut args = vec![
        "run",
        "claude",
        "--claude",
        &claude_path,
        "--cwd",
        &cwd,
        "--permission-mode",
        "bypassPermissions",
        "--run-id",
        id,
        "--quiet",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", &prompt]);
    let mut command = cli.command(&args);
    offline(&mut command, home, mock);
    command.env_remove("AGENTRACE_RUN_ID");
    command
}

/// The offline environment of the fixtures' notes, with its private HOME
/// (`home`, its config dir `home/.claude`, its temp dir `home/tmp`).
fn offline(command: &mut Command, home: &Path, mock: &MockAnthropic) {
    command
        .env("HOME", home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("CLAUDE_CODE_TMPDIR", home.join("tmp"))
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-the-mock")
        .env("IS_SANDBOX", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "0");
}

fn record(scenario: &str) -> Recorded {
    let mock = MockAnthropic::start();
    let cli = Cli::new();
    let home = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let id = format!("run-live-{}", scenario.replace('_', "-"));
    let command = claude_command(&cli, home.path(), &mock, &id, scenario);
    let output = bounded(command, RUN_BOUND);
    drop(mock);
    Recorded {
        cli,
        id,
        output,
        home,
    }
}

fn show(cli: &Cli, id: &str) -> Value {
    serde_json::from_str(&cli.ok(&["show", id, "--json"]))
        .unwrap_or_else(|error| panic!("show --json: {error}"))
}

/// `(depth, label, role, status)` of every agent, depth first; agent ids
/// change on every run, so the tree is compared by shape and labels.
fn tree(view: &Value) -> Vec<(usize, String, String, String)> {
    fn walk(nodes: &Value, depth: usize, out: &mut Vec<(usize, String, String, String)>) {
        let mut nodes: Vec<&Value> = nodes.as_array().into_iter().flatten().collect();
        nodes.sort_by_key(|node| node["label"].as_str().unwrap_or_default().to_owned());
        for node in nodes {
            out.push((
                depth,
                node["label"].as_str().unwrap_or_default().to_owned(),
                node["role"].as_str().unwrap_or_default().to_owned(),
                node["status"].as_str().unwrap_or_default().to_owned(),
            ));
            walk(&node["children"], depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(&view["agents"], 0, &mut out);
    out
}

fn node(depth: usize, label: &str, role: &str) -> (usize, String, String, String) {
    (
        depth,
        label.to_owned(),
        role.to_owned(),
        "completed".to_owned(),
    )
}

/// Every helper is named by its agent id (`a` + 16 hex).
fn helper_ids(view: &Value) -> Vec<String> {
    fn walk(nodes: &Value, out: &mut Vec<String>) {
        for node in nodes.as_array().into_iter().flatten() {
            if node["role"] == "helper" {
                out.push(node["threadId"].as_str().unwrap_or_default().to_owned());
            }
            walk(&node["children"], out);
        }
    }
    let mut out = Vec::new();
    walk(&view["agents"], &mut out);
    out
}

/// The stdout frames of a run, as recorded (the `raw` of each frame).
fn recorded_stdout(cli: &Cli, id: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for line in cli.ok(&["events", id, "--json", "--raw"]).lines() {
        let envelope: Value = serde_json::from_str(line).unwrap_or_default();
        if envelope["raw"].is_object() {
            out.extend(envelope["raw"].to_string().into_bytes());
            out.push(b'\n');
        }
    }
    out
}

fn ingest_stdin(cli: &Cli, bytes: &[u8], args: &[&str]) -> String {
    let mut all = vec!["ingest"];
    all.extend_from_slice(args);
    all.push("-");
    let mut child = cli
        .command(&all)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{error}"));
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(bytes)
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let output = child
        .wait_with_output()
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

fn check(scenario: &str, expected_tree: &[(usize, String, String, String)], expected_result: &str) {
    let recorded = record(scenario);
    let Recorded {
        cli,
        id,
        output,
        home,
    } = &recorded;
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).trim()
        ),
        (Some(0), expected_result),
        "{scenario}: stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let live = show(cli, id);
    assert_eq!(
        (
            live["run"]["status"].clone(),
            live["run"]["source"].clone(),
            live["run"]["result"].clone(),
            live["run"]["resultSource"]["role"].clone(),
            live["run"]["counts"]["unknownActor"].clone(),
            tree(&live)
        ),
        (
            Value::from("done"),
            Value::from("claude-stream"),
            Value::from(expected_result),
            Value::from("root"),
            Value::from(0),
            expected_tree.to_vec()
        ),
        "{scenario}: live"
    );
    for helper in helper_ids(&live) {
        assert!(
            helper.len() == 17 && helper.starts_with('a'),
            "{scenario}: helper {helper} is named by its agent id"
        );
    }
    let stdout = recorded_stdout(cli, id);
    // The transcripts the CLI wrote join the live run (found by its
    // session) and change neither its tree nor its result.
    let projects = home.path().join(".claude/projects");
    assert!(Path::new(&projects).is_dir(), "{scenario}: no transcripts");
    let merged_id = cli.ok(&[
        "ingest",
        "--format",
        "claude-transcript",
        &projects.to_string_lossy(),
    ]);
    let merged = show(cli, id);
    assert_eq!(
        (
            merged_id.trim(),
            merged["run"]["result"].clone(),
            tree(&merged),
            helper_ids(&merged)
        ),
        (
            id.as_str(),
            live["run"]["result"].clone(),
            tree(&live),
            helper_ids(&live)
        ),
        "{scenario}: merged with transcripts"
    );
    // Re-ingested from its recorded stdout: the same run again.
    let again = ingest_stdin(cli, &stdout, &["--format", "claude-stream"]);
    let replayed = show(cli, &again);
    assert_eq!(
        (
            replayed["run"]["result"].clone(),
            tree(&replayed),
            helper_ids(&replayed)
        ),
        (
            live["run"]["result"].clone(),
            tree(&live),
            helper_ids(&live)
        ),
        "{scenario}: re-ingested"
    );
}

/// `--claude-arg` passes each of its arguments on to the claude CLI, in
/// order: here `--model` and a model, which every request of the root then
/// names, and which the run's root is priced by.
#[test]
fn run_claude_passes_each_claude_arg_on_to_the_cli() {
    let mock = MockAnthropic::start();
    let cli = Cli::new();
    let home = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let model = "claude-haiku-4-5-20251001";
    let command = claude_command_with(&cli, home.path(), &mock, "run-live-claude-arg", "single_fg", &["--claude-arg=--model", "--claude-arg", model]);
    let output = bounded(command, RUN_BOUND);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let asked: std::collections::BTreeSet<String> =
        mock.requests().iter().filter_map(|request| request["model"].as_str().map(str::to_owned)).collect();
    drop(mock);
    let view = show(&cli, "run-live-claude-arg");
    assert!(asked.contains(model), "no request named {model}: {asked:?}");
    assert_eq!(view["agents"][0]["model"], model, "{view}");
}

#[test]
fn run_claude_records_one_foreground_subagent() {
    check(
        "single_fg",
        &[
            node(0, "Main", "root"),
            node(1, "Echo task A [general-purpose]", "helper"),
        ],
        "ROOT-FINAL: all subagents finished for scenario single_fg.",
    );
}

#[test]
fn run_claude_records_two_parallel_background_subagents_and_the_last_root_result() {
    check(
        "parallel_bg",
        &[
            node(0, "Main", "root"),
            node(1, "Echo task A [general-purpose]", "helper"),
            node(1, "Echo task B [general-purpose]", "helper"),
        ],
        "ROOT-FINAL: background subagent(s) reported back (scenario parallel_bg).",
    );
}

#[test]
fn run_claude_records_a_nested_subagent_under_its_spawner() {
    check(
        "nested_fg",
        &[
            node(0, "Main", "root"),
            node(1, "Echo task N [general-purpose]", "helper"),
            node(2, "Echo task N1 [general-purpose]", "helper"),
        ],
        "ROOT-FINAL: all subagents finished for scenario nested_fg.",
    );
}

#[test]
fn run_claude_records_the_roots_own_bash_before_the_spawn() {
    let expected = [
        node(0, "Main", "root"),
        node(1, "Echo task A [general-purpose]", "helper"),
    ];
    check(
        "bash_then_agent_fg",
        &expected,
        "ROOT-FINAL: all subagents finished for scenario bash_then_agent_fg.",
    );
}

#[test]
fn ctrl_c_during_a_subagent_interrupts_the_run_and_exits_130() {
    let mock = MockAnthropic::start();
    let cli = Cli::new();
    let home = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let id = "run-live-interrupted";
    let mut child = claude_command(&cli, home.path(), &mock, id, "slow_fg")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start agentrace: {error}"));
    // Interrupt once the subagent is running (its answer is held 8 s).
    let log = cli.home.path().join("runs").join(format!("{id}.jsonl"));
    let deadline = Instant::now() + RUN_BOUND;
    while !std::fs::read_to_string(&log).is_ok_and(|text| text.contains("task_started")) {
        assert!(Instant::now() < deadline, "the subagent never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = i32::try_from(child.id()).unwrap_or_else(|error| panic!("{error}"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap_or_else(|error| panic!("cannot signal agentrace: {error}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                let _ = child.kill();
                break None;
            }
        }
    };
    let _ = child.wait();
    drop(mock);
    let view = show(&cli, id);
    let helper = &view["agents"][0]["children"][0];
    assert_eq!(
        (
            status.and_then(|status| status.code()),
            view["run"]["status"].clone(),
            view["run"]["result"].clone(),
            helper["role"].clone(),
            helper["status"].clone()
        ),
        (
            Some(130),
            Value::from("interrupted"),
            Value::Null,
            Value::from("helper"),
            Value::from("interrupted")
        )
    );
}

#[test]
fn hooks_the_user_installed_land_in_the_live_run_once_it_ends() {
    let mock = MockAnthropic::start();
    let cli = Cli::new();
    let home = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let hook = format!("{} hook", env!("CARGO_BIN_EXE_agentrace"));
    let entry =
        serde_json::json!([{"matcher": "*", "hooks": [{"type": "command", "command": hook}]}]);
    let settings = serde_json::json!({"hooks": {
        "PreToolUse": entry, "PostToolUse": entry, "SubagentStart": entry, "SubagentStop": entry,
    }});
    let config = home.path().join(".claude");
    std::fs::create_dir_all(&config).unwrap_or_else(|error| panic!("{error}"));
    std::fs::write(config.join("settings.json"), settings.to_string())
        .unwrap_or_else(|error| panic!("{error}"));
    let id = "run-live-hooks";
    let output = bounded(
        claude_command(&cli, home.path(), &mock, id, "single_fg"),
        RUN_BOUND,
    );
    drop(mock);
    let hooks: Vec<(String, String)> = cli
        .ok(&["events", id, "--json"])
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|envelope| {
            envelope["event"]["method"]
                .as_str()
                .is_some_and(|method| method.starts_with("hook/Subagent"))
        })
        .map(|envelope| {
            (
                envelope["event"]["method"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                envelope["actor"]["role"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    let runs: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_default();
    assert_eq!(
        (
            output.status.code(),
            hooks,
            runs["runs"].as_array().map(Vec::len),
            show(&cli, id)["run"]["status"].clone()
        ),
        (
            Some(0),
            vec![
                ("hook/SubagentStart".to_owned(), "helper".to_owned()),
                ("hook/SubagentStop".to_owned(), "helper".to_owned())
            ],
            Some(1),
            Value::from("done")
        ),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A user's own `claude -p`, started without agentrace, followed by
/// `agentrace watch` through the transcripts Claude Code writes: while the
/// subagent runs its (slow) Bash command, its record reads `working` with
/// that tool; once it is over, `ended succeeded`; and the watched run is
/// exactly what an import of the finished files makes.
#[test]
fn watch_follows_a_claude_session_started_without_agentrace() {
    let mock = MockAnthropic::start();
    let cli = Cli::new();
    let home = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let (work, tmp, config) = (home.path().join("work"), home.path().join("tmp"), home.path().join(".claude"));
    for dir in [&work, &tmp, &config.join("projects")] {
        std::fs::create_dir_all(dir).unwrap_or_else(|error| panic!("{error}"));
    }
    let codex = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let codex_home = codex.path().to_string_lossy().into_owned();
    let claude_dir = config.to_string_lossy().into_owned();
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let watch = Killed(
        cli.command(&["watch", "--codex-home", &codex_home, "--claude-dir", &claude_dir, "--quiet"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("{error}")),
    );
    let mut claude = Command::new(agents::claude());
    claude
        .args(["-p", "[[scenario:sleepy_fg]] Please do the scripted task.", "--permission-mode", "bypassPermissions"])
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    offline(&mut claude, home.path(), &mock);
    let running = claude.spawn().unwrap_or_else(|error| panic!("cannot start claude: {error}"));
    let pid = running.id();
    let waited = std::thread::spawn(move || running.wait_with_output());
    let records = || -> Vec<Value> {
        let output = cli.run(&["status", "--json"]);
        serde_json::from_slice::<Value>(&output.stdout)
            .ok()
            .and_then(|value| value["records"].as_array().cloned())
            .unwrap_or_default()
    };
    let deadline = Instant::now() + RUN_BOUND;
    let working = loop {
        let found = records()
            .into_iter()
            .find(|record| record["kind"] == "agent" && record["state"] == "working" && record["operation"].is_object());
        if let Some(record) = found {
            break record;
        }
        if Instant::now() > deadline {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(0)), nix::sys::signal::Signal::SIGKILL);
            panic!("the subagent was never seen working with a tool:\n{}", cli.ok(&["status"]));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(working["operation"]["toolName"], "Bash", "{working}");
    assert!(working["operation"]["input"].as_str().unwrap_or_default().contains("sleep 4"), "{working}");
    let output = waited.join().unwrap_or_else(|_| panic!("waiting for claude")).unwrap_or_else(|error| panic!("{error}"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let deadline = Instant::now() + Duration::from_secs(20);
    let ended = loop {
        let found = records().into_iter().find(|record| record["childWorkId"] == working["childWorkId"] && record["state"] == "ended");
        if let Some(record) = found {
            break record;
        }
        assert!(Instant::now() < deadline, "the subagent never read ended:\n{}", cli.ok(&["status"]));
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(ended["outcome"], "succeeded", "{ended}");
    // The last lines may land after the subagent's end: let the watch take them.
    std::thread::sleep(Duration::from_millis(1500));
    drop(watch);
    drop(mock);
    let whole = Cli::new();
    let import = whole.run(&["import", "--codex-home", &codex_home, "--claude-dir", &claude_dir]);
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    assert_eq!(cli.ok(&["show", "latest", "--json"]), whole.ok(&["show", "latest", "--json"]));
    assert_eq!(cli.ok(&["status", "--json"]), whole.ok(&["status", "--json"]));
}

/// The model answers HTTP 500 and Claude Code, told to retry none, gives up:
/// `claude -p` exits 1 and writes its own `API Error: 500 …` reply into the
/// transcript. `run claude` records a failed run (its stream's result says
/// `is_error`); the transcript of a session the user ran without agentrace,
/// imported, is the same failed run: same status, same error, no answer
/// (it read `done`, the error text as the root's answer).
#[test]
fn a_claude_session_whose_model_call_failed_imports_as_the_failed_run_run_claude_records() {
    let mock = MockAnthropic::start();
    let prompt = "[[api_error]] Please do the scripted task.";
    // The user's own session, without agentrace.
    let home = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let (work, tmp) = (home.path().join("work"), home.path().join("tmp"));
    for dir in [&work, &tmp] {
        std::fs::create_dir_all(dir).unwrap_or_else(|error| panic!("{error}"));
    }
    let mut claude = Command::new(agents::claude());
    claude
        .args(["-p", prompt, "--permission-mode", "bypassPermissions"])
        .current_dir(&work)
        .stdin(Stdio::null());
    offline(&mut claude, home.path(), &mock);
    let own = bounded(claude, RUN_BOUND);
    let imported = Cli::new();
    let claude_dir = home.path().join(".claude").to_string_lossy().into_owned();
    imported.ok(&["import", "--quiet", "--codex-home", &home.path().join("none").to_string_lossy(), "--claude-dir", &claude_dir]);
    // The same session recorded by `run claude`.
    let live_home = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let live_work = live_home.path().join("work");
    for dir in [&live_work, &live_home.path().join("tmp")] {
        std::fs::create_dir_all(dir).unwrap_or_else(|error| panic!("{error}"));
    }
    let live = Cli::new();
    let claude_path = agents::claude().to_string_lossy().into_owned();
    let cwd = live_work.to_string_lossy().into_owned();
    let mut command = live.command(&["run", "claude", "--claude", &claude_path, "--cwd", &cwd, "--permission-mode", "bypassPermissions", "--run-id", "live", "--quiet", "--", prompt]);
    offline(&mut command, live_home.path(), &mock);
    command.env_remove("AGENTRACE_RUN_ID");
    let recorded = bounded(command, RUN_BOUND);
    drop(mock);
    let ended = |view: &Value| {
        (
            view["run"]["status"].clone(),
            view["run"]["error"].as_str().map(|error| error.starts_with("API Error: 500")),
            view["run"]["result"].clone(),
            view["agents"][0]["status"].clone(),
        )
    };
    let failed = (Value::from("failed"), Some(true), Value::Null, Value::from("failed"));
    assert_eq!(
        (own.status.code(), recorded.status.code(), ended(&show(&imported, "latest")), ended(&show(&live, "live"))),
        (Some(1), Some(1), failed.clone(), failed),
        "{}\n{}",
        String::from_utf8_lossy(&own.stderr),
        String::from_utf8_lossy(&recorded.stderr)
    );
    assert_eq!(show(&imported, "latest")["run"]["error"], show(&live, "live")["run"]["error"]);
}
