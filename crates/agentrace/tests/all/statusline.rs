//! `agentrace statusline`: the line printed for real Claude captures, the
//! same figures whether the transcripts are read at once or as they grow,
//! the cost `usage` gives, and silence (exit 0) on input it cannot use.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use agentrace_testkit::files::{copy_dir, fixtures};

use super::support::Cli;

/// A scratch copy of a capture's Claude config dir.
struct Session {
    dir: tempfile::TempDir,
    id: String,
    transcript: PathBuf,
}

impl Session {
    fn of(capture: &str) -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        copy_dir(&fixtures().join("claude").join(capture).join("home_claude"), dir.path());
        let transcript = root_transcript(&dir.path().join("projects"));
        let id = transcript
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or_else(|| panic!("no session id in {}", transcript.display()))
            .to_owned();
        Self { dir, id, transcript }
    }

    fn input(&self) -> String {
        serde_json::json!({
            "session_id": self.id,
            "transcript_path": self.transcript,
            "cwd": "/home/dev/agents/work",
            "model": {"id": "claude-opus-5-5", "display_name": "Opus"},
        })
        .to_string()
    }

    /// Every transcript file of the session, the root's first.
    fn files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.transcript.clone()];
        let mut others = Vec::new();
        collect_jsonl(&self.dir.path().join("projects"), &mut others);
        others.retain(|file| *file != self.transcript);
        others.sort();
        files.extend(others);
        files
    }
}

fn root_transcript(projects: &Path) -> PathBuf {
    let mut files = Vec::new();
    collect_jsonl(projects, &mut files);
    files
        .into_iter()
        .find(|file| {
            let name = file.file_name().and_then(|name| name.to_str()).unwrap_or_default();
            !name.starts_with("agent-") && !file.components().any(|part| part.as_os_str() == "subagents")
        })
        .unwrap_or_else(|| panic!("no session file under {}", projects.display()))
}

fn collect_jsonl(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
        if path.is_dir() {
            collect_jsonl(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "jsonl") {
            into.push(path);
        }
    }
}

fn statusline(cli: &Cli, input: Option<&str>, extra: &[&str]) -> Output {
    let mut args = vec!["statusline"];
    args.extend_from_slice(extra);
    let mut command = cli.command(&args);
    if input.is_some() {
        command.stdin(Stdio::piped());
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot run agentrace: {e}"));
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(input.as_bytes()).unwrap_or_else(|e| panic!("stdin: {e}"));
    }
    child.wait_with_output().unwrap_or_else(|e| panic!("agentrace statusline: {e}"))
}

/// The printed line (stdout, exit 0 required).
fn line(cli: &Cli, input: &str, extra: &[&str]) -> String {
    let output = statusline(cli, Some(input), extra);
    assert!(output.status.success(), "statusline failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap_or_else(|e| panic!("stdout not UTF-8: {e}"))
}

fn figures(cli: &Cli, session: &Session, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let text = line(cli, &session.input(), &args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("statusline --json: {e}: {text}"))
}

/// A cold call: a fresh home, so no state.
fn cold(session: &Session) -> serde_json::Value {
    figures(&Cli::new(), session, &[])
}

const CAPTURES: [&str; 19] = [
    "bash_then_agent_fg",
    "bg_shell_task",
    "followup_same_subagent",
    "interactive_local_commands",
    "nested_fg",
    "parallel_bg",
    "parallel_fg",
    "parallel_fg_forward_text",
    "resumed_session",
    "sdk_single_bg",
    "single_bg",
    "single_fg",
    "single_fg_partial",
    "subagent_tool_error_fg",
    "v1.0.128_parallel_explore_missing",
    "v1.0.128_single",
    "v2.0.77_single",
    "v2.1.197_parallel",
    "v2.1.197_single",
];

#[test]
fn the_line_of_a_finished_session_is_the_roots_tokens_and_the_sessions_cost() {
    let shown: Vec<(&str, String)> = ["single_fg", "parallel_bg", "nested_fg", "v2.0.77_single", "v1.0.128_single"]
        .into_iter()
        .map(|capture| (capture, line(&Cli::new(), &Session::of(capture).input(), &[])))
        .collect();
    let expected = [
        ("single_fg", "Main 5.8k · $0.05\n".to_owned()),
        ("parallel_bg", "Main 11k · $0.09\n".to_owned()),
        ("nested_fg", "Main 5.8k · $0.07\n".to_owned()),
        // $0.0041: not nothing, as `runs` says it (it said `$0.00`).
        ("v2.0.77_single", "Main 318 · <$0.01\n".to_owned()),
        ("v1.0.128_single", "Main 638 · $0.01\n".to_owned()),
    ];
    assert_eq!(shown, expected);
}

/// Before the session's first model request is counted the line gives no
/// cost (it said `Main 0 · $0.00`, a free session, of a cost not known
/// yet), and gives it once the request is there.
#[test]
fn the_line_gives_no_cost_before_the_sessions_first_request() {
    let session = Session::of("single_fg");
    let files: Vec<(PathBuf, String)> = session
        .files()
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            (file, text)
        })
        .collect();
    // The root's lines before its first reply (the prompt), and no
    // subagent yet.
    let root = &files[0].1;
    let first_reply = root.lines().position(|line| line.contains("\"usage\"")).unwrap_or_else(|| panic!("no reply in single_fg"));
    assert!(first_reply > 0, "single_fg opens with a reply");
    let before: String = root.lines().take(first_reply).map(|line| format!("{line}\n")).collect();
    std::fs::write(&session.transcript, before).unwrap_or_else(|e| panic!("write: {e}"));
    for (file, _) in &files[1..] {
        std::fs::remove_file(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    let cli = Cli::new();
    let before_a_request = line(&cli, &session.input(), &[]);
    for (file, text) in &files {
        std::fs::write(file, text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    let after = line(&cli, &session.input(), &[]);
    assert_eq!((before_a_request.as_str(), after.as_str()), ("Main 0\n", "Main 5.8k · $0.05\n"));
}

#[test]
fn a_subagent_is_shown_with_its_tokens_until_the_root_has_its_hand_back() {
    let session = Session::of("parallel_fg");
    let root = std::fs::read_to_string(&session.transcript).unwrap_or_else(|e| panic!("read: {e}"));
    // The root's transcript up to (not with) the first hand-back.
    let cut = root
        .lines()
        .position(|line| line.contains("\"toolUseResult\"") && line.contains("\"agentId\""))
        .unwrap_or_else(|| panic!("no hand-back in parallel_fg"));
    let before: String = root.lines().take(cut).map(|line| format!("{line}\n")).collect();
    std::fs::write(&session.transcript, before).unwrap_or_else(|e| panic!("write: {e}"));
    let cli = Cli::new();
    let while_working = line(&cli, &session.input(), &[]);
    std::fs::write(&session.transcript, &root).unwrap_or_else(|e| panic!("write: {e}"));
    let after = line(&cli, &session.input(), &[]);
    assert_eq!(
        (while_working.as_str(), after.as_str()),
        ("Main 2.8k · general-purpose 5.0k · Explore 4.5k · $0.05\n", "Main 6.1k · $0.07\n")
    );
}

#[test]
fn calls_while_the_transcripts_grow_end_where_a_cold_call_does() {
    for capture in ["single_fg", "parallel_bg", "followup_same_subagent", "nested_fg", "v2.0.77_single"] {
        let session = Session::of(capture);
        let files: Vec<(PathBuf, Vec<u8>)> = session
            .files()
            .into_iter()
            .map(|file| {
                let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                (file, bytes)
            })
            .collect();
        let expected = cold(&session);
        for (file, _) in &files {
            std::fs::write(file, b"").unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        }
        let cli = Cli::new();
        // Each file grows in five pieces cut anywhere (mid-line too), the
        // files in turn, a call after each piece.
        let mut last = serde_json::Value::Null;
        for piece in 1..=5 {
            for (file, bytes) in &files {
                let end = bytes.len() * piece / 5;
                let mut handle = std::fs::OpenOptions::new()
                    .append(true)
                    .open(file)
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                let start = bytes.len() * (piece - 1) / 5;
                handle.write_all(&bytes[start..end]).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                last = figures(&cli, &session, &[]);
            }
        }
        assert_eq!((capture, last), (capture, expected));
    }
}

#[test]
fn a_shrunk_or_replaced_transcript_is_read_again_from_its_start() {
    let session = Session::of("single_bg");
    let cli = Cli::new();
    let whole = std::fs::read_to_string(&session.transcript).unwrap_or_else(|e| panic!("read: {e}"));
    let _ = figures(&cli, &session, &[]);
    let half: String = whole.lines().take(whole.lines().count() / 2).map(|line| format!("{line}\n")).collect();
    std::fs::write(&session.transcript, &half).unwrap_or_else(|e| panic!("write: {e}"));
    let shrunk = figures(&cli, &session, &[]);
    let expected_shrunk = cold(&session);
    // Another file of the same length at the same path (a new inode).
    let _ = figures(&cli, &session, &[]);
    let replacement = session.transcript.with_extension("new");
    std::fs::write(&replacement, &whole).unwrap_or_else(|e| panic!("write: {e}"));
    std::fs::rename(&replacement, &session.transcript).unwrap_or_else(|e| panic!("rename: {e}"));
    let replaced = figures(&cli, &session, &[]);
    assert_eq!((shrunk, replaced), (expected_shrunk, cold(&session)));
}

#[test]
fn an_unreadable_state_is_only_a_slower_call() {
    let session = Session::of("single_fg");
    let cli = Cli::new();
    let state = cli.home.path().join("statusline").join(format!("{}.json", session.id));
    std::fs::create_dir_all(state.parent().unwrap_or_else(|| panic!("no parent")))
        .unwrap_or_else(|e| panic!("mkdir: {e}"));
    std::fs::write(&state, b"{not a state").unwrap_or_else(|e| panic!("write: {e}"));
    assert_eq!(figures(&cli, &session, &[]), cold(&session));
}

/// A `--prices` file that cannot be read (a typo in `settings.json`) left
/// the status line empty, with nothing said: the line is printed as the
/// database prices it, and the file named on stderr.
#[test]
fn a_prices_file_it_cannot_read_still_gives_the_line_by_the_databases_prices() {
    let session = Session::of("single_fg");
    let cli = Cli::new();
    let output = statusline(&cli, Some(&session.input()), &["--prices", "/nonexistent/prices.json"]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned(), stderr.starts_with("warning: ") && stderr.contains("/nonexistent/prices.json")),
        (true, line(&Cli::new(), &session.input(), &[]), true),
        "{stderr}"
    );
}

#[test]
fn input_it_cannot_use_prints_nothing_and_exits_0() {
    let cli = Cli::new();
    let session = Session::of("single_fg");
    let missing = serde_json::json!({
        "session_id": session.id,
        "transcript_path": session.dir.path().join("no-such.jsonl"),
    })
    .to_string();
    let hostile = serde_json::json!({
        "session_id": "../../etc/passwd",
        "transcript_path": session.transcript,
    })
    .to_string();
    let outcomes: Vec<(&str, Option<i32>, String)> = [
        ("no stdin", None),
        ("empty", Some("")),
        ("bad JSON", Some("{\"session_id\": ")),
        ("no transcript_path", Some("{\"session_id\": \"abc\"}")),
        ("missing transcript", Some(missing.as_str())),
        ("hostile session id", Some(hostile.as_str())),
    ]
    .into_iter()
    .map(|(case, input)| {
        let output = statusline(&cli, input, &[]);
        let printed = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
        (case, output.status.code(), printed)
    })
    .collect();
    let expected: Vec<(&str, Option<i32>, String)> =
        ["no stdin", "empty", "bad JSON", "no transcript_path", "missing transcript", "hostile session id"]
            .into_iter()
            .map(|case| (case, Some(0), String::new()))
            .collect();
    assert_eq!(outcomes, expected);
}

/// `usage --json`'s cost and status of the one session under `dir`.
fn usage_cost(dir: &Path, extra: &[&str]) -> (f64, String) {
    let dir = dir.to_string_lossy().into_owned();
    let mut args = vec!["usage", "--json", "--claude-dir", dir.as_str()];
    args.extend_from_slice(extra);
    let text = Cli::new().ok(&args);
    let report: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("usage --json: {e}"));
    let session = &report["sessions"][0];
    (session["cost"].as_f64().unwrap_or(f64::NAN), session["costStatus"].as_str().unwrap_or_default().to_owned())
}

#[test]
fn the_cost_of_every_finished_capture_is_the_cost_usage_gives_it() {
    let prices = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("tempfile: {e}"));
    std::fs::write(
        prices.path(),
        r#"{"claude-opus-5-5": {"input": 1.5, "cachedInput": 0.15, "cacheCreation": 2.0, "output": 7.0}}"#,
    )
    .unwrap_or_else(|e| panic!("write: {e}"));
    let prices = prices.path().to_string_lossy().into_owned();
    for capture in CAPTURES {
        for extra in [&[][..], &["--prices", prices.as_str()][..]] {
            let session = Session::of(capture);
            let figures = figures(&Cli::new(), &session, extra);
            let (cost, status) = usage_cost(session.dir.path(), extra);
            let shown = figures["cost"].as_f64().unwrap_or(f64::NAN);
            assert!(
                (shown - cost).abs() <= 1e-9,
                "{capture} {extra:?}: statusline {shown}, usage {cost}"
            );
            assert_eq!((capture, figures["costStatus"].as_str().unwrap_or_default()), (capture, status.as_str()));
        }
    }
}

#[test]
fn an_hour_long_cache_write_and_a_web_search_cost_on_the_line_what_usage_says() {
    let prices = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("tempfile: {e}"));
    std::fs::write(
        prices.path(),
        r#"{"claude-opus-5-5": {"input": 1.5, "cachedInput": 0.15, "cacheCreation": 2.0, "cacheCreation1h": 3.0, "output": 7.0, "webSearches": 10.0}}"#,
    )
    .unwrap_or_else(|e| panic!("write: {e}"));
    let prices = prices.path().to_string_lossy().into_owned();
    for extra in [&[][..], &["--prices", prices.as_str()][..]] {
        let cost_with = |hour: u64, searches: u64| {
            let session = Session::of("single_fg");
            // Every response wrote 10,000 tokens to the cache, `hour` of
            // them for an hour, as Claude Code 2.x splits them, and ran
            // `searches` web searches.
            for file in session.files() {
                let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("read: {e}"));
                let edited: String = text
                    .lines()
                    .map(|line| {
                        let Ok(mut record) = serde_json::from_str::<serde_json::Value>(line) else {
                            return format!("{line}\n");
                        };
                        let usage = &mut record["message"]["usage"];
                        if usage.is_object() {
                            usage["cache_creation_input_tokens"] = 10_000.into();
                            usage["cache_creation"] = serde_json::json!({
                                "ephemeral_5m_input_tokens": 10_000 - hour,
                                "ephemeral_1h_input_tokens": hour,
                            });
                            usage["server_tool_use"] = serde_json::json!({"web_search_requests": searches});
                        }
                        format!("{record}\n")
                    })
                    .collect();
                std::fs::write(&file, edited).unwrap_or_else(|e| panic!("write: {e}"));
            }
            let shown = figures(&Cli::new(), &session, extra)["cost"].as_f64().unwrap_or(f64::NAN);
            let (cost, _) = usage_cost(session.dir.path(), extra);
            assert!((shown - cost).abs() <= 1e-9, "{extra:?} {hour} {searches}: statusline {shown}, usage {cost}");
            shown
        };
        let plain = cost_with(0, 0);
        assert!(cost_with(6_000, 0) > plain, "{extra:?}");
        assert!(cost_with(0, 3) > plain, "{extra:?}");
    }
}

/// The prices a line works out are kept in the home for the next call and
/// every other command: another session priced by them in the same home
/// shows the line it shows in a home of its own.
#[test]
fn the_prices_a_line_works_out_are_known_to_the_next_call() {
    let cli = Cli::new();
    let first = line(&cli, &Session::of("single_fg").input(), &[]);
    let text = std::fs::read_to_string(cli.home.path().join("known-prices.json")).unwrap_or_else(|e| panic!("{e}"));
    let known: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let spans: Vec<String> = known["spans"]
        .as_array()
        .unwrap_or_else(|| panic!("{known}"))
        .iter()
        .map(|span| format!("{} {} {}", span["provider"], span["model"], span["serviceTier"]))
        .collect();
    assert_eq!((first.as_str(), spans), ("Main 5.8k · $0.05\n", vec![r#""claude" "claude-opus-5-5" "standard""#.to_owned()]));
    let nested = Session::of("nested_fg");
    assert_eq!(line(&cli, &nested.input(), &[]), line(&Cli::new(), &nested.input(), &[]));
}
