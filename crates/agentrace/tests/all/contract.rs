//! The CLI contract of the spine: `ingest`, `runs`, `show`, `events`, the
//! JSON shapes (read back into strict mirror types), errors and exit codes.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::Stdio;

use serde::Deserialize;

use super::support::{capture, Cli};

/// Strict mirror of `show --json`; unknown members fail the test.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ShowJson {
    run: RunJson,
    agents: Vec<AgentJson>,
    warnings: Vec<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[expect(dead_code, reason = "a strict mirror names every member, read or not")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RunJson {
    id: String,
    provider: String,
    source: String,
    status: String,
    root_thread_id: Option<String>,
    result: Option<String>,
    result_source: Option<ResultSourceJson>,
    error: Option<String>,
    started_at: Option<String>,
    updated_at: Option<String>,
    ended_at: Option<String>,
    counts: CountsJson,
    tokens: Option<serde_json::Value>,
    cost: Option<f64>,
    cost_status: CostStatusJson,
    #[serde(default)]
    incomplete: Vec<IncompleteJson>,
    #[serde(default)]
    outside_tree: Vec<OutsideJson>,
    warning_count: usize,
    #[serde(default)]
    warning_codes: Vec<String>,
    #[serde(default)]
    helpers_working: bool,
    #[serde(default)]
    session_ended: bool,
}

/// How complete a cost is.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum CostStatusJson {
    Exact,
    Floor,
    Unknown,
}

/// Why tokens are missing.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum IncompleteJson {
    MissingFinalUsage,
    NoUsageReported,
    UnreadableLine,
    InheritedHistory,
}

#[derive(Debug, Deserialize)]
#[expect(dead_code, reason = "a strict mirror names every member, read or not")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OutsideJson {
    label: String,
    tokens_by_model: Vec<ModelTokensJson>,
}

#[derive(Debug, Deserialize)]
#[expect(dead_code, reason = "a strict mirror names every member, read or not")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ModelTokensJson {
    model: Option<String>,
    tokens: serde_json::Value,
    cost: f64,
    #[serde(default)]
    unpriced_tokens: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ResultSourceJson {
    thread_id: Option<String>,
    role: Option<String>,
    item_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[expect(dead_code, reason = "a strict mirror names every member, read or not")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CountsJson {
    events: u64,
    unknown_actor: u64,
    undecoded_lines: u64,
    unknown_frames: u64,
    skipped_log_lines: u64,
    dropped_bytes: u64,
}

#[derive(Debug, Deserialize)]
#[expect(dead_code, reason = "a strict mirror names every member, read or not")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AgentJson {
    thread_id: String,
    role: String,
    label: String,
    parent_thread_id: Option<String>,
    depth: Option<u32>,
    status: String,
    prompt: Option<String>,
    model: Option<String>,
    event_count: u64,
    tool_count: u64,
    tokens: Option<serde_json::Value>,
    #[serde(default)]
    tokens_by_model: Vec<ModelTokensJson>,
    cost: Option<f64>,
    cost_status: CostStatusJson,
    #[serde(default)]
    unpriced_tokens: u64,
    #[serde(default)]
    incomplete: Vec<IncompleteJson>,
    final_message: Option<String>,
    #[serde(default)]
    final_message_confidence: Option<String>,
    children: Vec<AgentJson>,
}

/// Strict mirror of one `events --json` line.
#[derive(Debug, Deserialize)]
#[expect(dead_code, reason = "a strict mirror names every member, read or not")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EnvelopeJson {
    version: u32,
    timestamp: String,
    sequence: u64,
    run_id: String,
    #[serde(default)]
    direction: Option<String>,
    actor: ActorJson,
    event: serde_json::Value,
    #[serde(default)]
    raw: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[expect(dead_code, reason = "a strict mirror names every member, read or not")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ActorJson {
    thread_id: Option<String>,
    role: String,
    #[serde(default)]
    parent_thread_id: Option<String>,
    label: String,
    #[serde(default)]
    depth: Option<u32>,
    confidence: String,
    #[serde(default)]
    reason: Option<String>,
}

fn show(cli: &Cli, run: &str) -> ShowJson {
    let stdout = cli.ok(&["show", run, "--json"]);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("show --json: {e}\n{stdout}"))
}

fn events(cli: &Cli, args: &[&str]) -> Vec<EnvelopeJson> {
    let stdout = cli.ok(args);
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[test]
fn ingest_prints_the_run_id_last_and_show_json_has_the_contract_shape() {
    let cli = Cli::new();
    let id = cli.ingest(&capture("v1_basic"), &["--run-id", "my-run"]);
    assert_eq!(id, "my-run");
    let view = show(&cli, "my-run");
    assert_eq!(
        (
            view.run.id.as_str(),
            view.run.provider.as_str(),
            view.run.source.as_str(),
            view.run.status.as_str()
        ),
        ("my-run", "codex", "codex-app-server", "done")
    );
    let root = view.run.root_thread_id.clone().unwrap_or_default();
    assert_eq!(root, "01a2298c-93ba-7001-9862-9fd03c21f5d4");
    assert_eq!(
        view.run.result.as_deref(),
        Some("ROOT DONE: all sub-agents finished; final answer from the root agent.")
    );
    let source = view
        .run
        .result_source
        .unwrap_or_else(|| panic!("no result source"));
    assert_eq!(
        (
            source.thread_id.as_deref(),
            source.role.as_deref(),
            source.item_id.as_deref()
        ),
        (Some(root.as_str()), Some("root"), Some("msg_0022"))
    );
    assert_eq!(
        (
            view.run.counts.unknown_actor,
            view.run.counts.undecoded_lines
        ),
        (0, 0)
    );
    assert_eq!(view.agents.len(), 1);
    let main = &view.agents[0];
    assert_eq!(
        (main.label.as_str(), main.role.as_str(), main.depth),
        ("Main", "root", Some(0))
    );
    let helper = &main.children[0];
    assert_eq!(
        (
            helper.role.as_str(),
            helper.parent_thread_id.as_deref(),
            helper.depth,
            helper.status.as_str()
        ),
        ("helper", Some(root.as_str()), Some(1), "completed")
    );
    assert_eq!(
        helper.final_message.as_deref(),
        Some("CHILD A DONE: the command printed hello-from-child-A.")
    );
}

#[test]
fn show_json_of_every_capture_reads_back_strictly() {
    let cli = Cli::new();
    let dir = capture("v1_basic")
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{e}")) {
        let path = entry
            .unwrap_or_else(|e| panic!("{e}"))
            .path()
            .join("server.jsonl");
        if path.exists() {
            let id = cli.ingest(&path, &["--quiet"]);
            let view = show(&cli, &id);
            assert!(view.run.root_thread_id.is_some(), "{}", path.display());
            let codes: Vec<String> = view
                .warnings
                .iter()
                .map(|warning| warning["code"].as_str().unwrap_or_default().to_owned())
                .collect();
            assert_eq!(
                (&view.run.warning_codes, view.run.warning_count),
                (&codes, codes.len()),
                "{}",
                path.display()
            );
            assert_eq!(view.run.counts.undecoded_lines, 0, "{}", path.display());
        }
    }
}

#[test]
fn events_are_numbered_without_gaps_and_carry_final_attribution() {
    let cli = Cli::new();
    let id = cli.ingest(&capture("v1_basic"), &[]);
    let all = events(&cli, &["events", &id, "--json"]);
    let sequences: Vec<u64> = all.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (1..=all.len() as u64).collect::<Vec<_>>());
    assert!(all
        .iter()
        .all(|e| e.version == 2 && e.run_id == id && e.raw.is_none()));
    // The child's first frame (a status change before its spawn item) reads as the helper.
    let child = "01a2298c-947a-75b0-8b49-6a2e1016272b";
    for envelope in all
        .iter()
        .filter(|e| e.actor.thread_id.as_deref() == Some(child))
    {
        assert_eq!(
            envelope.actor.role, "helper",
            "sequence {}",
            envelope.sequence
        );
        assert_eq!(envelope.actor.confidence, "provider");
    }
    let raw = events(&cli, &["events", &id, "--json", "--raw"]);
    let input = std::fs::read_to_string(capture("v1_basic")).unwrap_or_default();
    let raws: Vec<serde_json::Value> = raw.iter().filter_map(|e| e.raw.clone()).collect();
    let lines: Vec<serde_json::Value> = input
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert_eq!(raws, lines, "every input line kept, in order");
}

#[test]
fn events_filter_by_actor() {
    let cli = Cli::new();
    let id = cli.ingest(&capture("v1_parallel"), &[]);
    let helpers = events(&cli, &["events", &id, "--json", "--actor", "helpers"]);
    assert!(!helpers.is_empty());
    assert!(helpers
        .iter()
        .all(|e| e.actor.role == "helper" && e.actor.parent_thread_id.is_some()));
    let main = events(&cli, &["events", &id, "--json", "--actor", "main"]);
    assert!(main.iter().all(|e| e.actor.role == "root"));
    let unknown = events(&cli, &["events", &id, "--json", "--actor", "unknown"]);
    assert!(unknown
        .iter()
        .all(|e| e.actor.role == "unknown" && e.actor.thread_id.is_none()));
    let thread = helpers[0].actor.thread_id.clone().unwrap_or_default();
    let one = events(&cli, &["events", &id, "--json", "--actor", &thread]);
    assert!(one
        .iter()
        .all(|e| e.actor.thread_id.as_deref() == Some(thread.as_str())));
    assert_eq!(
        helpers.len() + main.len() + unknown.len(),
        events(&cli, &["events", &id, "--json"]).len()
    );
}

/// `run_started` and `session_ended` are the run's own events, which
/// agentrace writes: `events` printed them under `Unknown actor`, as if an
/// agent no spawn link placed had written them, where the viewer wears an
/// `agentrace` badge on them and `show` counts no unknown-actor event. The
/// text says `agentrace`; `--json` stays the envelope the API serves (the
/// unknown actor, its reason `agentrace`).
#[test]
fn events_print_the_runs_own_events_as_agentrace_not_as_the_unknown_actor() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "basic", "--quiet"]);
    let own = |args: &[&str]| -> Vec<String> {
        cli.ok(&[&["events", "basic"], args].concat())
            .lines()
            .filter(|line| line.contains("run_started") || line.contains("session_ended") || line.contains("run started") || line.contains("session ended"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        (own(&[]), own(&["--json"])),
        (
            vec![
                "     1  2026-11-29T23:03:28.437Z  agentrace             run started (codex, codex-app-server)".to_owned(),
                "    90  2026-11-29T23:03:32.491Z  agentrace             session ended (endOfInput)".to_owned(),
            ],
            vec![
                r#"{"version":2,"timestamp":"2026-11-29T23:03:28.437Z","sequence":1,"runId":"basic","actor":{"threadId":null,"role":"unknown","label":"Unknown actor","confidence":"unknown","reason":"agentrace"},"event":{"type":"run_started","provider":"codex","source":"codex-app-server","eventFacts":1}}"#.to_owned(),
                r#"{"version":2,"timestamp":"2026-11-29T23:03:32.491Z","sequence":90,"runId":"basic","actor":{"threadId":null,"role":"unknown","label":"Unknown actor","confidence":"unknown","reason":"agentrace"},"event":{"type":"session_ended","reason":"endOfInput"}}"#.to_owned(),
            ]
        )
    );
}

#[test]
fn events_actor_takes_the_label_show_prints_and_refuses_a_name_no_agent_of_the_run_has() {
    // `--actor Main`, `--actor /root/child_a` (the labels `show` prints), a
    // thread id's prefix and a typo all printed nothing and exited 0.
    let cli = Cli::new();
    let id = cli.ingest(&capture("v2_basic"), &["--run-id", "v2", "--quiet"]);
    let stdout = |args: &[&str]| cli.ok(&[&["events", &id, "--json"], args].concat());
    let child = "01a2298d-6eb7-7253-8fda-084c395bf609";
    assert_eq!(
        (stdout(&["--actor", "Main"]), stdout(&["--actor", "/root/child_a"])),
        (stdout(&["--actor", "main"]), stdout(&["--actor", child]))
    );
    assert!(stdout(&["--actor", child]).lines().count() > 1);
    let refused = |actor: &str| {
        let output = cli.run(&["events", &id, "--actor", actor]);
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let agents = "its agents (label, thread id):\n  Main  01a2298d-6dff-7082-9198-f4918efc4e4a\n  /root/child_a  01a2298d-6eb7-7253-8fda-084c395bf609\n";
    let takes = "hint: --actor takes main, helpers, unknown, an agent's label as `show` prints it, or its thread id\n";
    assert_eq!(
        [refused("Mian"), refused("01a2298d-6eb7")],
        [
            (Some(1), String::new(), format!("error: --actor Mian: no agent of run v2 has this thread id or label\n{agents}{takes}")),
            (
                Some(1),
                String::new(),
                format!("error: --actor 01a2298d-6eb7: no agent of run v2 has this thread id or label\n{agents}hint: did you mean {child} (/root/child_a)? --actor takes a whole thread id\n{takes}")
            ),
        ]
    );
}

#[test]
fn ingest_reads_stdin_and_detects_the_format() {
    let cli = Cli::new();
    let input = std::fs::read(capture("v2_basic")).unwrap_or_default();
    let mut child = cli
        .command(&["ingest", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    if let Some(mut stdin) = child.stdin.take() {
        std::io::Write::write_all(&mut stdin, &input).unwrap_or_else(|e| panic!("{e}"));
    }
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let id = stdout.lines().last().unwrap_or_default();
    assert!(id.starts_with("run-"), "{id}");
    assert_eq!(show(&cli, id).run.status, "done");
}

#[test]
fn bad_lines_are_counted_and_named_and_the_rest_of_the_run_is_intact() {
    let cli = Cli::new();
    let mut input = std::fs::read(capture("v1_basic")).unwrap_or_default();
    let mut bad = b"not json at all\n{\"method\":\"x\xff\"}\n".to_vec();
    bad.extend_from_slice(&input[..]);
    input = bad;
    input.extend_from_slice(b"{\"method\":\"turn/compl");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, &input).unwrap_or_else(|e| panic!("{e}"));
    let output = cli.run(&["ingest", "--run-id", "bad", &path.to_string_lossy()]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning: 3 undecodable lines"), "{stderr}");
    assert!(stderr.contains("bad.jsonl:1: invalid JSON"), "{stderr}");
    assert!(stderr.contains("bad.jsonl:2: invalid UTF-8"), "{stderr}");
    let view = show(&cli, "bad");
    assert_eq!(view.run.counts.undecoded_lines, 3);
    assert_eq!(view.run.status, "done");
    assert!(view.run.result.is_some());
}

/// A helper's thread id is what a user finds in the agent's own files
/// (a Codex child's rollout is named after it, a Claude subagent's
/// `agent-<id>.jsonl`): given as a run, the error said only that no run
/// matches, leaving the user to hunt for the session it belongs to. It now
/// names the agent and its run, and how to read either.
#[test]
fn a_helpers_thread_id_given_as_a_run_is_told_which_run_holds_it() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "basic"]);
    let view: serde_json::Value = serde_json::from_str(&cli.ok(&["show", "basic", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let helper = &view["agents"][0]["children"][0];
    let (thread, label) = (helper["threadId"].as_str().unwrap_or_default(), helper["label"].as_str().unwrap_or_default());
    let output = cli.run(&["show", thread]);
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned()),
        (
            Some(1),
            format!(
                "error: no run matches \"{thread}\" in {}\nhint: a run is named by its id, a unique prefix of one, or `latest` (the run that started last); `agentrace runs` lists them\nhint: {thread} is the thread of {label}, a helper of run basic: `agentrace show basic`, its events `agentrace events basic --actor {thread}`\n",
                cli.home.path().join("runs").display()
            )
        )
    );
}

/// What a user finds of a Codex helper is its rollout file: given as a
/// run by its name, the hint names the agent's run as it does for the
/// thread id alone.
#[test]
fn a_helpers_rollout_file_given_as_a_run_is_told_which_run_holds_it() {
    let cli = Cli::new();
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let rollouts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex/v1_basic/rollouts");
    agentrace_testkit::files::copy_dir(&rollouts, &sources.path().join("codex/sessions"));
    cli.ok(&["import", "--quiet", "--codex-home", &sources.path().join("codex").to_string_lossy(), "--claude-dir", &sources.path().join("none").to_string_lossy()]);
    let view: serde_json::Value = serde_json::from_str(&cli.ok(&["show", "latest", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let run = view["run"]["id"].as_str().unwrap_or_default().to_owned();
    let helper = &view["agents"][0]["children"][0];
    let (thread, label) = (helper["threadId"].as_str().unwrap_or_default(), helper["label"].as_str().unwrap_or_default());
    let file = std::fs::read_dir(sources.path().join("codex/sessions/2026/11/29"))
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.to_string_lossy().ends_with(&format!("{thread}.jsonl")))
        .unwrap_or_else(|| panic!("no rollout of {thread}"));
    let hint = |name: &str| {
        let output = cli.run(&["show", name]);
        String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or_default().to_owned()
    };
    let expected = format!("hint: {thread} is the thread of {label}, a helper of run {run}: `agentrace show {run}`, its events `agentrace events {run} --actor {thread}`");
    let name = file.file_name().and_then(|name| name.to_str()).unwrap_or_default().to_owned();
    assert_eq!(hint(&name), expected);
}

/// A run that is not there named the value and the runs folder, and left
/// the user to guess what a run may be named by (CONTRIBUTING: a value
/// refused after looking names what it could have been).
#[test]
fn a_run_that_is_not_there_is_an_error_that_says_what_names_a_run() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "basic"]);
    let output = cli.run(&["show", "nosuch"]);
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned()),
        (
            Some(1),
            format!(
                "error: no run matches \"nosuch\" in {}\nhint: a run is named by its id, a unique prefix of one, or `latest` (the run that started last); `agentrace runs` lists them\n",
                cli.home.path().join("runs").display()
            )
        )
    );
}

#[test]
fn an_undetectable_input_is_a_clear_error_naming_the_file_and_line() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "hello\nworld\n").unwrap_or_else(|e| panic!("{e}"));
    let output = cli.run(&["ingest", &path.to_string_lossy()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot detect the format of") && stderr.contains("notes.txt (line 1:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: pass --format codex-app-server"),
        "{stderr}"
    );
}

/// A fixture of this repository, by its path under `fixtures/`, without
/// `..` (the binary names it as given).
fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
        .canonicalize()
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A Codex rollout given to `ingest` was "cannot detect the format" with
/// the hint `pass --format codex-app-server`, which recorded a run of
/// unknown frames and no agent: the hint is the `import` that reads it,
/// from the Codex home holding it, and following it records the session.
#[test]
fn a_codex_rollout_given_to_ingest_is_refused_with_the_import_that_reads_it() {
    let cli = Cli::new();
    let codex = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let day = codex.path().join("sessions/2026/11/29");
    std::fs::create_dir_all(&day).unwrap_or_else(|e| panic!("{e}"));
    for entry in std::fs::read_dir(fixture("codex/v1_basic/rollouts/2026/11/29")).unwrap_or_else(|e| panic!("{e}")) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        std::fs::copy(&path, day.join(path.file_name().unwrap_or_default())).unwrap_or_else(|e| panic!("{e}"));
    }
    let rollout = day.join("rollout-2026-11-29T23-03-28-01a2298c-93ba-7001-9862-9fd03c21f5d4.jsonl");
    let output = cli.run(&["ingest", &rollout.to_string_lossy()]);
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned()),
        (
            Some(1),
            String::new(),
            format!(
                "error: {} is a Codex rollout, which ingest does not read\nhint: `agentrace import --codex-home {}` records its session\n",
                rollout.display(),
                codex.path().display()
            )
        )
    );
    let logs = std::fs::read_dir(cli.home.path().join("runs")).map(|entries| entries.count()).unwrap_or(0);
    assert_eq!(logs, 0, "nothing is recorded");
    cli.ok(&["import", "--quiet", "--codex-home", &codex.path().to_string_lossy(), "--claude-dir", "/nonexistent"]);
    let view: serde_json::Value = serde_json::from_str(&cli.ok(&["show", "latest", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (&view["run"]["id"], &view["run"]["source"], &view["run"]["status"], view["agents"].as_array().map(Vec::len)),
        (&serde_json::json!("codex-01a2298c-93ba-7001-9862-9fd03c21f5d4"), &serde_json::json!("codex-rollout"), &serde_json::json!("done"), Some(1))
    );
}

/// A forced `--format` that read none of the input's lines recorded a run
/// of unknown frames and said `recorded …` as of any run: the run is still
/// recorded (nothing is lost, stdin included) and the exit code kept, but
/// stderr says that nothing was understood and what the lines read as.
#[test]
fn a_forced_format_that_understands_no_line_says_so_and_names_what_the_input_reads_as() {
    let cli = Cli::new();
    let codex = fixture("codex/v1_basic/server.jsonl");
    let claude = fixture("claude/single_fg/stream.jsonl");
    let rollout = fixture("codex/v1_basic/rollouts/2026/11/29/rollout-2026-11-29T23-03-28-01a2298c-93ba-7001-9862-9fd03c21f5d4.jsonl");
    let ingest = |format: &str, run: &str, path: &PathBuf| {
        let output = cli.run(&["ingest", "--format", format, "--run-id", run, &path.to_string_lossy()]);
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let reads_as = |format: &str| format!("hint: it reads as {format}: leave out --format, or pass --format {format}\n");
    let kept = |path: &PathBuf, format: &str, run: &str, lines: u64| {
        format!("warning: no line of {} was understood as {format}: its {lines} lines are kept raw in {run} ({lines} unknown frames, 0 undecodable)\n", path.display())
    };
    assert_eq!(
        [
            ingest("claude-stream", "as-claude", &codex),
            ingest("codex-app-server", "as-codex", &claude),
            ingest("claude-transcript", "as-transcript", &codex),
            ingest("codex-app-server", "a-rollout", &rollout),
        ],
        [
            (
                Some(0),
                "as-claude\n".to_owned(),
                format!("{}{}recorded as-claude, nothing in it understood: 84 events, 0 top-level agents\n", kept(&codex, "claude-stream", "as-claude", 82), reads_as("codex-app-server")),
            ),
            (
                Some(0),
                "as-codex\n".to_owned(),
                format!("{}{}recorded as-codex, nothing in it understood: 17 events, 0 top-level agents\n", kept(&claude, "codex-app-server", "as-codex", 15), reads_as("claude-stream")),
            ),
            (
                Some(0),
                "as-transcript\n".to_owned(),
                format!("{}{}recorded as-transcript, nothing in it understood: 84 events, result none\n", kept(&codex, "claude-transcript", "as-transcript", 82), reads_as("codex-app-server")),
            ),
            (
                Some(0),
                "a-rollout\n".to_owned(),
                format!(
                    "{}hint: `agentrace import --codex-home DIR` records its session, DIR being the Codex home it was written in (the folder holding `sessions/`)\nrecorded a-rollout, nothing in it understood: 34 events, 0 top-level agents\n",
                    kept(&rollout, "codex-app-server", "a-rollout", 32)
                ),
            ),
        ]
    );
}

#[test]
fn run_ids_that_could_escape_the_data_dir_are_refused() {
    let cli = Cli::new();
    for bad in ["../escape", "a/b", ".hidden"] {
        let output = cli.run(&[
            "ingest",
            "--run-id",
            bad,
            &capture("v1_basic").to_string_lossy(),
        ]);
        assert_eq!(output.status.code(), Some(1), "{bad}");
        let output = cli.run(&["show", bad]);
        assert_eq!(output.status.code(), Some(1), "{bad}");
    }
}

#[test]
fn runs_lists_every_run_as_json() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "a"]);
    cli.ingest(&capture("v2_basic"), &["--run-id", "b"]);
    let stdout = cli.ok(&["runs", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}"));
    let mut ids: Vec<&str> = value["runs"]
        .as_array()
        .map(|runs| runs.iter().filter_map(|r| r["id"].as_str()).collect())
        .unwrap_or_default();
    ids.sort_unstable();
    assert_eq!(ids, vec!["a", "b"]);
}

#[test]
fn a_closed_stdout_pipe_exits_zero() {
    let cli = Cli::new();
    let id = cli.ingest(&capture("v1_followup"), &[]);
    let mut child = cli
        .command(&["events", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut first = [0u8; 16];
    stdout
        .read_exact(&mut first)
        .unwrap_or_else(|e| panic!("{e}"));
    drop(stdout);
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn with_no_arguments_the_bundled_samples_are_recorded_and_listed() {
    let cli = Cli::new();
    let stdout = cli.ok(&[]);
    for id in [
        "sample-codex-v1-basic",
        "sample-codex-v2-basic",
        "sample-codex-nested",
    ] {
        assert!(stdout.contains(id), "{stdout}");
    }
    let nested = show(&cli, "sample-codex-nested");
    assert_eq!(nested.agents[0].children[0].children[0].depth, Some(2));
    // A second call lists the same runs without recording them again.
    let again = cli.ok(&[]);
    assert_eq!(again.lines().count(), stdout.lines().count());
}

#[test]
fn show_prints_the_tree_who_answered_and_honest_counts() {
    let cli = Cli::new();
    cli.ingest(&capture("real_model_nested"), &["--run-id", "nested"]);
    let stdout = cli.ok(&["show", "nested"]);
    insta::assert_snapshot!(stdout);
}

#[test]
fn help_lists_the_commands() {
    let cli = Cli::new();
    insta::assert_snapshot!(cli.ok(&["--help"]));
}

#[test]
fn watch_help_says_what_it_follows_and_prints() {
    let cli = Cli::new();
    insta::assert_snapshot!(cli.ok(&["watch", "--help"]));
}

/// A hook logger's records (`{"t": …, "input": …}`) are dated by their
/// `t`: an ingested hook log's run starts at its first record, not at the
/// ingest (it started after it ended), in seconds as Python's loggers
/// write it or milliseconds as Node's do.
#[test]
fn an_ingested_hook_log_starts_at_its_first_record_not_at_the_ingest() {
    let cli = Cli::new();
    let hooks = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/claude/single_fg/hooks.jsonl");
    let text = std::fs::read_to_string(&hooks).unwrap_or_else(|e| panic!("{e}"));
    // The same records with `t` in milliseconds.
    let millis: String = text
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
            let seconds = record["t"].as_f64().unwrap_or_else(|| panic!("no t in {line}"));
            record["t"] = serde_json::json!((seconds * 1000.0).floor());
            format!("{record}\n")
        })
        .collect();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let node = dir.path().join("hooks-ms.jsonl");
    std::fs::write(&node, millis).unwrap_or_else(|e| panic!("{e}"));
    let dates = |path: &std::path::Path| {
        let id = cli.ingest(path, &["--quiet"]);
        let run = &serde_json::from_str::<serde_json::Value>(&cli.ok(&["show", &id, "--json"])).unwrap_or_else(|e| panic!("{e}"))["run"];
        let events: Vec<String> = cli
            .ok(&["events", &id, "--json"])
            .lines()
            .take(2)
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}"))["timestamp"].as_str().unwrap_or_default().to_owned())
            .collect();
        (run["startedAt"].clone(), run["endedAt"].clone(), events)
    };
    // The first record's `t`, 1795992848.3079953 s; the last hook's, the
    // session's end.
    let expected = (
        serde_json::json!("2026-11-29T22:54:08.307Z"),
        serde_json::json!("2026-11-29T22:54:10.128Z"),
        vec!["2026-11-29T22:54:08.307Z".to_owned(), "2026-11-29T22:54:08.307Z".to_owned()],
    );
    assert_eq!(dates(&hooks), expected);
    assert_eq!(dates(&node), expected);
}

#[test]
fn a_command_that_cannot_start_leaves_no_run_under_tap_as_under_run_codex_and_run_claude() {
    let cli = Cli::new();
    let attempts: Vec<(Option<i32>, String)> = [
        vec!["tap", "--", "/nonexistent/cmd"],
        vec!["run", "codex", "--codex", "/nonexistent/codex", "--", "hi"],
        vec!["run", "claude", "--claude", "/nonexistent/claude", "--", "hi"],
    ]
    .iter()
    .map(|args| {
        let output = cli.run(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        (output.status.code(), stderr.lines().next().unwrap_or_default().to_owned())
    })
    .collect();
    let runs: serde_json::Value = serde_json::from_str(&cli.ok(&["runs", "--json"]))
        .unwrap_or_else(|error| panic!("runs --json: {error}"));
    assert_eq!(
        (attempts, runs),
        (
            vec![
                (
                    Some(1),
                    String::from("error: cannot start /nonexistent/cmd: No such file or directory (os error 2)")
                ),
                (Some(1), String::from("error: cannot start /nonexistent/codex app-server")),
                (Some(1), String::from("error: cannot start /nonexistent/claude")),
            ],
            serde_json::json!({"runs": [], "total": 0})
        )
    );
}

/// `ingest -` of a live pipe kept the envelopes of the lines read last in
/// its batch until more lines came: `status`, `attach` and the viewer did
/// not see what the server had printed. What is read is written once the
/// pipe runs dry.
#[test]
fn ingest_of_a_live_pipe_writes_what_it_read_before_more_comes() {
    use std::io::Write as _;
    let cli = Cli::new();
    let bytes = std::fs::read(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(bytes).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&str> = text.lines().collect();
    let half = lines.len() / 2;
    let mut child = cli.command(&["ingest", "--run-id", "piped", "--format", "codex-app-server", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("{e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    for line in &lines[..half] {
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    }
    stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    // The last line given so far, as its frame is kept in the log.
    let last: serde_json::Value = serde_json::from_str(lines[half - 1]).unwrap_or_else(|e| panic!("{e}"));
    let log = cli.home.path().join("runs").join("piped.jsonl");
    let holds_last = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .any(|envelope| envelope["raw"] == last)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !holds_last() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let written_while_open = holds_last();
    drop(stdin);
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((written_while_open, output.status.success()), (true, true), "{}", String::from_utf8_lossy(&output.stderr));
}
