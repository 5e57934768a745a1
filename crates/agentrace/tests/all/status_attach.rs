//! `agentrace status` and `agentrace attach` (§6, §9): the JSON shapes read
//! back into strict mirror types, the table people read as a snapshot, and
//! attach following a log that grows while it watches.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::support::{capture, Cli};

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct RecordsJson {
    records: Vec<RecordJson>,
}

#[derive(Debug, Deserialize, PartialEq, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RecordJson {
    child_work_id: String,
    kind: String,
    provider: String,
    provider_id: String,
    #[serde(default)]
    parent_child_work_id: Option<String>,
    label: String,
    description: String,
    state: String,
    #[serde(default)]
    waiting_on: Option<String>,
    generation: u32,
    run_id: String,
    #[serde(default)]
    operation: Option<OperationJson>,
    #[serde(default)]
    last_message: Option<String>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    cost: Option<f64>,
    #[serde(default)]
    cost_status: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
    started_at: String,
    updated_at: String,
    #[serde(default)]
    ended_at: Option<String>,
    previous_invocations: Vec<InvocationJson>,
}

#[derive(Debug, Deserialize, PartialEq, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OperationJson {
    tool_name: String,
    input: String,
    basis: String,
    started_at: String,
}

#[derive(Debug, Deserialize, PartialEq, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct InvocationJson {
    generation: u32,
    run_id: String,
    outcome: String,
    started_at: String,
    ended_at: String,
    #[serde(default)]
    last_message: Option<String>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    cost: Option<f64>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct ChangeJson {
    change: String,
    record: RecordJson,
}

fn records(cli: &Cli, run: &str) -> Vec<RecordJson> {
    let stdout = cli.ok(&["status", run, "--json"]);
    serde_json::from_str::<RecordsJson>(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
        .records
}

fn changes(cli: &Cli, run: &str) -> Vec<ChangeJson> {
    cli.ok(&["status", run, "--changes"])
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The last change of each record, in admission order: what `--json` shows.
fn last_of_each(changes: &[ChangeJson]) -> Vec<RecordJson> {
    let mut order: Vec<&str> = Vec::new();
    for change in changes {
        if !order.contains(&change.record.child_work_id.as_str()) {
            order.push(&change.record.child_work_id);
        }
    }
    order
        .into_iter()
        .filter_map(|id| {
            changes
                .iter()
                .rev()
                .find(|change| change.record.child_work_id == id)
                .map(|change| change.record.clone())
        })
        .collect()
}

/// kind, state, generation, outcome, earlier runs (generation, outcome).
type Summary = (String, String, u32, Option<String>, Vec<(u32, String)>);

#[test]
fn status_json_of_a_follow_up_run_keeps_the_first_run_in_previous_invocations() {
    let cli = Cli::new();
    let run = cli.ingest(&capture("v1_followup"), &["--quiet"]);
    let records = records(&cli, &run);
    let summary: Vec<Summary> = records
        .iter()
        .map(|record| {
            (
                record.kind.clone(),
                record.state.clone(),
                record.generation,
                record.outcome.clone(),
                record
                    .previous_invocations
                    .iter()
                    .map(|previous| (previous.generation, previous.outcome.clone()))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![(
            "agent".to_owned(),
            "ended".to_owned(),
            2,
            Some("succeeded".to_owned()),
            vec![(1, "succeeded".to_owned())]
        )]
    );
}

#[test]
fn status_changes_are_json_lines_ending_at_the_records_status_json_prints() {
    let cli = Cli::new();
    for name in [
        "v1_background_exec",
        "real_model_nested",
        "v1_restart_mid_child",
    ] {
        let run = cli.ingest(&capture(name), &["--quiet"]);
        let changes = changes(&cli, &run);
        assert!(!changes.is_empty(), "{name}");
        for change in &changes {
            assert!(
                ["admitted", "updated", "ended", "settled"].contains(&change.change.as_str()),
                "{name}: {change:?}"
            );
        }
        assert_eq!(last_of_each(&changes), records(&cli, &run), "{name}");
    }
}

#[test]
fn status_without_a_run_reads_the_newest_one() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--quiet", "--run-id", "a-older"]);
    let newest = cli.ingest(
        &capture("v1_background_exec"),
        &["--quiet", "--run-id", "b-newer"],
    );
    assert_eq!(
        cli.ok(&["status", "--json"]),
        cli.ok(&["status", &newest, "--json"])
    );
}

#[test]
fn status_prints_one_line_per_child_under_its_owner() {
    let cli = Cli::new();
    let mut text = String::new();
    for name in [
        "v1_background_exec",
        "real_model_nested",
        "v1_restart_mid_child",
        "v2_child_error_http500",
    ] {
        let run = cli.ingest(&capture(name), &["--quiet"]);
        text.push_str(&format!("$ agentrace status {name}\n"));
        text.push_str(&cli.ok(&["status", &run]));
    }
    insta::assert_snapshot!(text);
}

#[test]
fn attach_on_a_finished_run_prints_the_whole_story_and_exits() {
    let cli = Cli::new();
    let run = cli.ingest(&capture("v1_background_exec"), &["--quiet"]);
    let stdout = cli.ok(&["attach", &run, "--json"]);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let envelopes = lines
        .iter()
        .filter(|line| line.get("envelope").is_some())
        .count();
    let events = cli.ok(&["events", &run, "--json"]).lines().count();
    assert_eq!(envelopes, events, "every envelope of the log is printed");
    let attached: Vec<ChangeJson> = lines
        .iter()
        .filter(|line| line.get("change").is_some())
        .map(|line| serde_json::from_value(line.clone()).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert_eq!(attached, changes(&cli, &run));
    let text = cli.ok(&["attach", &run]);
    let changed: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("  ") && !line.trim_start().starts_with(char::is_numeric))
        .collect();
    insta::assert_snapshot!(changed.join("\n"));
}

/// The log lines of capture `name` recorded as run `live-run` of a tapped
/// connection (a source whose end is the end of the session), for a test to
/// write as a run being recorded.
fn live_lines(cli: &Cli, name: &str) -> Vec<String> {
    let ingested = cli.ingest(&capture(name), &["--quiet"]);
    let log = std::fs::read_to_string(cli.home.path().join("runs").join(format!("{ingested}.jsonl")))
        .unwrap_or_else(|e| panic!("{e}"));
    log.lines()
        .map(|line| line.replace("\"codex-app-server\"", "\"codex-tap\"").replace(&ingested, "live-run"))
        .collect()
}

/// Where run `live-run`'s log is written.
fn live_log(cli: &Cli) -> std::path::PathBuf {
    cli.home.path().join("runs").join("live-run.jsonl")
}

/// The index of the line that ends the run (`done`).
fn done_at(lines: &[String]) -> usize {
    lines
        .iter()
        .position(|line| line.contains("\"type\":\"done\""))
        .unwrap_or_else(|| panic!("no done"))
}

/// `attach live-run --json` started, and its stdout's lines as they come.
fn attach_live(cli: &Cli) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = cli
        .command(&["attach", "live-run", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    (child, received)
}

/// The write that ends a run, seen half done: `attach` waits for the line
/// it left half written instead of ending without it (and the lines before
/// it in the same write).
#[test]
fn attach_waits_for_the_line_the_runs_last_write_left_half_written() {
    let cli = Cli::new();
    let lines = live_lines(&cli, "v1_background_exec");
    let terminal = done_at(&lines);
    assert!(terminal + 1 < lines.len(), "lines follow the run's end");
    // Up to the end of the run, then half of the next line.
    let text = lines.join("\n") + "\n";
    let cut = lines[..=terminal].iter().map(|line| line.len() + 1).sum::<usize>() + lines[terminal + 1].len() / 2;
    let path = live_log(&cli);
    std::fs::write(&path, &text[..cut]).unwrap_or_else(|e| panic!("{e}"));
    let child = cli
        .command(&["attach", "live-run", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    std::thread::sleep(Duration::from_millis(300));
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap_or_else(|e| panic!("{e}"));
    file.write_all(&text.as_bytes()[cut..]).unwrap_or_else(|e| panic!("{e}"));
    drop(file);
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success());
    let envelopes = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.starts_with("{\"envelope\""))
        .count();
    assert_eq!(envelopes, lines.len());
}

/// `attach` on a live run that writes nothing sleeps until the log
/// changes: reading the log was itself an event it woke on (an open), so
/// it read a still log again and again on most of a core.
#[test]
fn attach_sleeps_while_a_live_run_writes_nothing() {
    use super::support::{cpu_ticks, inotify_masks, IN_MODIFY, IN_READ_ONLY};

    let cli = Cli::new();
    let lines = live_lines(&cli, "v1_background_exec");
    let half = done_at(&lines) / 2;
    std::fs::write(live_log(&cli), lines[..half].join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let (mut child, received) = attach_live(&cli);
    for seen in 0..half {
        if let Err(error) = received.recv_timeout(Duration::from_secs(60)) {
            let _ = child.kill();
            panic!("attach printed {seen} lines, then {error}");
        }
    }
    let masks = inotify_masks(child.id());
    let before = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(child.id()) - before;
    let still = child.try_wait().ok().flatten().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(still, "attach waits for the run");
    // Two idle seconds are 200 ticks of a core; spinning took about 170.
    assert!(used < 40, "attach used {used} ticks of CPU in 2 idle seconds");
    assert!(!masks.is_empty() && masks.iter().all(|mask| mask & IN_READ_ONLY == 0 && mask & IN_MODIFY != 0), "{masks:x?}");
}

/// A run recorded live: the log of an ingested capture, marked as a tapped
/// connection, written in two halves while `attach` watches.
#[test]
fn attach_follows_a_growing_log_until_the_run_ends() {
    let cli = Cli::new();
    let lines = live_lines(&cli, "v1_background_exec");
    let terminal = done_at(&lines);
    let path = live_log(&cli);
    let half = terminal / 2;
    std::fs::write(&path, lines[..half].join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));

    let (mut child, received) = attach_live(&cli);
    // The first half is printed while the run is still going.
    let mut seen = Vec::new();
    while seen.len() < half {
        match received.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => seen.push(line),
            Err(error) => {
                let _ = child.kill();
                panic!("attach printed {} lines, then {error}", seen.len());
            }
        }
    }
    assert!(
        child.try_wait().ok().flatten().is_none(),
        "attach waits for the run"
    );
    // The rest lands in two writes, the run's ending cut in two: attach can
    // only see the run end once everything after it is there too (it stops
    // at the end, so a line written later would be a race, not a bug).
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{e}"));
    let rest = lines[half..].join("\n") + "\n";
    let cut = rest
        .find("\"type\":\"done\"")
        .unwrap_or_else(|| panic!("no done in the rest"));
    let (first, second) = rest.split_at(cut);
    file.write_all(first.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    file.flush().unwrap_or_else(|e| panic!("{e}"));
    file.write_all(second.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    drop(file);
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    seen.extend(received.iter());
    let envelopes = seen
        .iter()
        .filter(|line| line.starts_with("{\"envelope\""))
        .count();
    assert_eq!(envelopes, lines.len());
    let attached: Vec<ChangeJson> = seen
        .iter()
        .filter(|line| line.starts_with("{\"change\""))
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let finals = last_of_each(&attached);
    assert_eq!(
        finals
            .iter()
            .map(|record| (
                record.kind.as_str(),
                record.state.as_str(),
                record.outcome.as_deref()
            ))
            .collect::<Vec<_>>(),
        vec![
            ("agent", "ended", Some("succeeded")),
            ("command", "ended", Some("succeeded"))
        ]
    );
}

/// An agent writes a few lines after the end of its session (Claude Code
/// its Stop hook's summary, the last prompt, its cost; here the lines that
/// follow the capture's `done`), imported a moment after it: `attach` of
/// the live run printed up to the end and exited, leaving them out, where
/// `events` and `show` count them. It ends once the log has been still
/// after the end, with every line printed.
#[test]
fn attach_prints_the_lines_written_just_after_the_session_ended() {
    let cli = Cli::new();
    let lines = live_lines(&cli, "v1_background_exec");
    let terminal = done_at(&lines);
    assert!(terminal + 1 < lines.len(), "lines follow the run's end");
    let path = live_log(&cli);
    let half = terminal / 2;
    std::fs::write(&path, lines[..half].join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let (mut child, received) = attach_live(&cli);
    let mut seen = Vec::new();
    // Each part is appended once attach printed every envelope before it.
    for upto in [half, terminal + 1] {
        if upto > half {
            let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap_or_else(|e| panic!("{e}"));
            file.write_all((lines[half..upto].join("\n") + "\n").as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        }
        while seen.iter().filter(|line: &&String| line.starts_with("{\"envelope\"")).count() < upto {
            match received.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => seen.push(line),
                Err(error) => {
                    let _ = child.kill();
                    panic!("attach printed {} lines, then {error}", seen.len());
                }
            }
        }
    }
    // The session is over; what the agent writes after it comes now.
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap_or_else(|e| panic!("{e}"));
    file.write_all((lines[terminal + 1..].join("\n") + "\n").as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    drop(file);
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    seen.extend(received.iter());
    let envelopes = seen.iter().filter(|line| line.starts_with("{\"envelope\"")).count();
    assert_eq!((status.success(), envelopes), (true, lines.len()));
}

/// A live run whose helper has said nothing for longer than the limit:
/// `attach` prints `silent_agent` without waiting for another line (the
/// capture's times are in the past, so the helper is long silent).
#[test]
fn attach_warns_of_a_silent_helper_of_a_live_run() {
    let cli = Cli::new();
    let lines = live_lines(&cli, "v1_basic");
    // Up to the first helper's first turn: it is running, the run too.
    let started = lines
        .iter()
        .position(|line| line.contains("\"type\":\"turn_started\"") && line.contains("\"role\":\"helper\""))
        .unwrap_or_else(|| panic!("no helper turn"));
    let path = live_log(&cli);
    std::fs::write(&path, lines[..=started].join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let (mut child, lines_read) = attach_live(&cli);
    let mut warning = None;
    while let Ok(line) = lines_read.recv_timeout(Duration::from_secs(10)) {
        let item: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if let Some(found) = item.get("warning") {
            warning = Some(found.clone());
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let warning = warning.unwrap_or_else(|| panic!("no warning within 10 s"));
    assert_eq!(
        (&warning["code"], &warning["severity"], warning["threadId"].is_string()),
        (&Value::from("silent_agent"), &Value::from("warning"), true)
    );
}

/// A session that ended mid-turn (the host restarted mid-child; an import
/// found its files still past the idle limit) has nothing at work on any
/// surface: `top --json` (as `/api/live`) reads its root and helper `ended
/// unknown` as `status` reads the helper, `show --json` has no agent
/// `running`, and `export --markdown` says why there is no result as `show`
/// does. The root read `working` and live, `show`'s tree `running`, and
/// the export `no result (running)`.
#[test]
fn a_session_ended_mid_turn_shows_no_agent_at_work_on_any_surface() {
    use agentrace_testkit::files::{copy_dir, fixtures};

    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("codex/v1_restart_mid_child/rollouts"), &sources.path().join("codex/sessions"));
    let codex = sources.path().join("codex").to_string_lossy().into_owned();
    let claude = sources.path().join("claude").to_string_lossy().into_owned();
    let cli = Cli::new();
    cli.ok(&["import", "--quiet", "--idle-limit", "0", "--codex-home", &codex, "--claude-dir", &claude]);
    let top: Value = serde_json::from_str(&cli.ok(&["top", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let rows: Vec<(Value, Value, Value)> = top["sessions"][0]["agents"]
        .as_array()
        .unwrap_or_else(|| panic!("{top}"))
        .iter()
        .map(|row| (row["label"].clone(), row["state"].clone(), row["live"].clone()))
        .collect();
    let show: Value = serde_json::from_str(&cli.ok(&["show", "latest", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let mut statuses = Vec::new();
    let mut stack: Vec<Value> = show["agents"].as_array().cloned().unwrap_or_default();
    while let Some(agent) = stack.pop() {
        statuses.push((agent["label"].clone(), agent["status"].clone()));
        stack.extend(agent["children"].as_array().cloned().unwrap_or_default());
    }
    let status: Value = serde_json::from_str(&cli.ok(&["status", "latest", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let records: Vec<(Value, Value)> = status["records"]
        .as_array()
        .unwrap_or_else(|| panic!("{status}"))
        .iter()
        .map(|record| (record["state"].clone(), record["outcome"].clone()))
        .collect();
    let markdown = cli.ok(&["export", "--markdown", "latest"]);
    let result = markdown.lines().find(|line| line.starts_with("no result")).map(str::to_owned);
    let helper = markdown.lines().find(|line| line.contains("**Hilbert**")).and_then(|line| line.split(" `").next()).map(str::to_owned);
    assert_eq!(
        (top["sessions"][0]["live"].clone(), rows, statuses, records, result, helper),
        (
            Value::Bool(false),
            vec![
                (Value::from("Main"), Value::from("ended unknown"), Value::Bool(false)),
                (Value::from("Hilbert"), Value::from("ended unknown"), Value::Bool(false)),
            ],
            vec![(Value::from("Main"), Value::from("unknown")), (Value::from("Hilbert"), Value::from("unknown"))],
            vec![(Value::from("ended"), Value::from("unknown"))],
            Some("no result (the session ended before the root's turn did)".to_owned()),
            Some("  - **Hilbert** (helper, unknown)".to_owned()),
        )
    );
}

/// `attach` started with its stderr read as it comes, killed when dropped.
struct Attached {
    child: std::process::Child,
    stderr: mpsc::Receiver<String>,
}

impl Attached {
    fn start(cli: &Cli, run: &str) -> Self {
        let mut child = cli
            .command(&["attach", run])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let stderr = child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
        let (sender, received) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Attached { child, stderr: received }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `status` and `attach` of a session read from its files while it is at
/// work, with nothing following those files, say that its run grows only
/// as they are imported: `attach` waited on a log nothing wrote, printing
/// nothing more while the session went on and ended, and `status` showed
/// the last import's picture as now. A session that is over says nothing.
#[test]
fn status_and_attach_of_a_live_imported_session_nothing_follows_say_so() {
    use super::following::stamped_as_if_written_now;
    use super::import_usage::{Growth, Homes, Provider};

    let growth = Growth::of(Provider::Claude, "single_bg");
    let cut = growth.through_the_roots_first_answer();
    let growth = stamped_as_if_written_now(growth, cut);
    let homes = Homes::new();
    growth.write(&homes, 0..cut, true);
    let cli = Cli::new();
    let codex = homes.of(Provider::Codex).to_string_lossy().into_owned();
    let claude = homes.of(Provider::Claude).to_string_lossy().into_owned();
    let import = ["import", "--quiet", "--codex-home", codex.as_str(), "--claude-dir", claude.as_str()];
    cli.ok(&import);
    let listed: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let run = listed["runs"][0]["id"].as_str().unwrap_or_else(|| panic!("no run: {listed}")).to_owned();
    let expected = format!(
        "hint: {run} is a session still at work, read from its files, and nothing follows them now: this is as of the last import; `agentrace watch` (or `top`, `serve --watch`) beside it keeps it current"
    );
    let status = cli.run(&["status", &run]);
    let attached = Attached::start(&cli, &run);
    let said = attached.stderr.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|error| panic!("attach said nothing on stderr: {error}"));
    drop(attached);
    growth.write(&homes, cut..growth.order.len(), true);
    cli.ok(&import);
    let over = cli.run(&["status", &run]);
    assert_eq!(
        (String::from_utf8_lossy(&status.stderr).into_owned(), said, String::from_utf8_lossy(&over.stderr).into_owned()),
        (format!("{expected}\n"), expected.clone(), String::new())
    );
}

/// `status` with no run named, in a home with no runs, says there are none
/// and how to get some: it said no run matches "latest", a word the user
/// never typed.
#[test]
fn status_in_a_home_with_no_runs_says_there_are_none() {
    let cli = Cli::new();
    let output = cli.run(&["status"]);
    let runs = cli.home.path().join("runs");
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned(), output.stdout.is_empty()),
        (
            Some(1),
            format!(
                "error: no runs yet in {}\nhint: `agentrace` imports your Codex and Claude Code sessions (`agentrace top` follows them live); `agentrace run codex|claude` records one\n",
                runs.display()
            ),
            true
        )
    );
}

/// `status` and `show` say one word of a helper interrupted before its
/// end: `status` said `ended cancelled` of the helper `show` calls
/// `interrupted`. The JSON keeps its values (`outcome: cancelled`, the
/// agent's `status: interrupted`).
#[test]
fn status_and_show_call_an_interrupted_helper_interrupted() {
    let cli = Cli::new();
    let run = cli.ingest(&capture("v2_interrupt_agent"), &["--quiet"]);
    let status = cli.ok(&["status", &run]);
    let show = cli.ok(&["show", &run]);
    let helper = show.lines().find(|line| line.contains("/root/child_a")).unwrap_or_default().to_owned();
    let outcomes: Vec<Option<String>> = records(&cli, &run).into_iter().map(|record| record.outcome).collect();
    assert_eq!(
        (status, helper, outcomes),
        (
            "/root/child_a  agent    ended interrupted      gen 1  ran 1.6s\n".to_owned(),
            "  └─ /root/child_a [helper] 01a2299c-156b-7b20-b363-01980ca2c80c  interrupted, 12 events, 0 tool calls".to_owned(),
            vec![Some("cancelled".to_owned())]
        )
    );
}

/// `top` with stdout piped, in a home with no sessions, says there are
/// none and how to get some, as `status` does: it printed nothing at all.
#[test]
fn top_piped_in_a_home_with_no_sessions_says_there_are_none() {
    let cli = Cli::new();
    let folders = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (codex, claude) = (folders.path().join("codex"), folders.path().join("claude"));
    for folder in [&codex, &claude] {
        std::fs::create_dir_all(folder).unwrap_or_else(|e| panic!("{e}"));
    }
    let output = cli.run(&["top", "--codex-home", &codex.to_string_lossy(), "--claude-dir", &claude.to_string_lossy()]);
    let runs = cli.home.path().join("runs");
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned()),
        (
            Some(0),
            String::new(),
            format!(
                "no sessions yet in {}\nhint: start codex or claude (`agentrace top` on a terminal follows them live); `agentrace run codex|claude` records one\n",
                runs.display()
            )
        )
    );
}

/// `attach RUN | head -3` ends once `head` has its lines, though the run
/// is quiet: it noticed the closed pipe only at its next write, so it
/// waited on a quiet run for good. It looks at each wake (a file change,
/// or the recheck every few seconds) and exits 0.
#[test]
fn attach_ends_when_its_reader_closes_the_pipe_while_the_run_is_quiet() {
    let cli = Cli::new();
    let lines = live_lines(&cli, "v1_background_exec");
    let half = done_at(&lines) / 2;
    std::fs::write(live_log(&cli), lines[..half].join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let mut child = cli
        .command(&["attach", "live-run"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut reader = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("no stdout")));
    let mut first = String::new();
    for _ in 0..3 {
        reader.read_line(&mut first).unwrap_or_else(|e| panic!("{e}"));
    }
    // What `head -3` does once it has its lines.
    drop(reader);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("attach was still waiting 30 s after its reader closed the pipe");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!((status.code(), first.lines().count()), (Some(0), 3));
}

/// A capture's folder: `<scenario>` (Codex 0.169) or
/// `codex-0.171/<scenario>`.
fn capture_folder(name: &str) -> std::path::PathBuf {
    let fixtures = agentrace_testkit::files::fixtures();
    if name.contains('/') {
        fixtures.join(name)
    } else {
        fixtures.join("codex").join(name)
    }
}

/// A Codex home holding capture `name`'s rollouts, each file's lines
/// passed through `keep` (given the file's lines), and an empty Claude
/// folder beside it.
fn rollout_home(name: &str, keep: &dyn Fn(&[String]) -> Vec<String>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let sessions = dir.path().join("codex/sessions");
    agentrace_testkit::files::copy_dir(&capture_folder(name).join("rollouts"), &sessions);
    std::fs::create_dir_all(dir.path().join("claude")).unwrap_or_else(|e| panic!("{e}"));
    for path in files_under(&sessions) {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let kept: String = keep(&lines).into_iter().map(|line| line + "\n").collect();
        std::fs::write(&path, kept).unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// `import`s a Codex home as `rollout_home` made it; returns the run id.
fn import_rollouts(cli: &Cli, home: &tempfile::TempDir) -> String {
    let codex = home.path().join("codex").to_string_lossy().into_owned();
    let claude = home.path().join("claude").to_string_lossy().into_owned();
    cli.ok(&["import", "--quiet", "--codex-home", &codex, "--claude-dir", &claude]);
    let runs: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    runs["runs"][0]["id"].as_str().unwrap_or_else(|| panic!("no run: {runs}")).to_owned()
}

/// The time of the first line holding `text` in the child's rollout (the
/// file whose calls are `exec_command`s), as written there.
fn child_line_time(name: &str, text: &str) -> String {
    for path in files_under(&capture_folder(name).join("rollouts")) {
        let lines = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        if let Some(line) = lines.lines().find(|line| line.contains(text)) {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
            return value["timestamp"].as_str().unwrap_or_default().to_owned();
        }
    }
    panic!("{name}: no rollout line holds {text}")
}

fn commands(records: Vec<RecordJson>) -> Vec<RecordJson> {
    records.into_iter().filter(|record| record.kind == "command").collect()
}

/// A Codex session read from its rollouts showed no background command
/// (an `exec_command` whose process outlived the call, fed by
/// `write_stdin`): `status` listed it for a run recorded from the
/// app-server stream only. Imported from the rollouts of the same session
/// (Codex 0.169 and 0.171), it is the stream's `command` record under the
/// helper that launched it, but for what the files cannot say.
#[test]
fn a_background_command_imported_from_rollouts_is_the_streams_record_but_for_what_the_files_cannot_say() {
    for name in ["v1_background_exec", "codex-0.171/v1_background_exec"] {
        let streamed = Cli::new();
        let run = streamed.ingest(&capture_folder(name).join("server.jsonl"), &["--quiet"]);
        let stream = commands(records(&streamed, &run));
        assert_eq!(stream.len(), 1, "{name}: {stream:?}");
        let imported = Cli::new();
        let home = rollout_home(name, &|lines| lines.to_vec());
        let run = import_rollouts(&imported, &home);
        let command = "echo bg-start; read line; echo got:$line; sleep 2; echo bg-done".to_owned();
        let expected = RecordJson {
            // The rollout names the command the model asked to run
            // (`exec_command`'s `cmd`); the stream names the argv Codex ran
            // it as, in the user's login shell (`/bin/bash -lc '…'`), which
            // the rollout writes only once the command has ended.
            label: command.clone(),
            description: command,
            // The stream stamps the start when the process started
            // (`item/started`); the rollout has no line then, and the
            // command began with its call (`function_call`), written just
            // before (the output saying it runs on comes only at the end
            // of its yield window).
            started_at: child_line_time(name, "\"name\":\"exec_command\""),
            // The stream stamps the end when the app-server sent
            // `item/completed`, a few milliseconds after the exit; the
            // rollout writes the command's `item_completed` at the exit.
            updated_at: child_line_time(name, "\"type\":\"CommandExecution\""),
            ended_at: Some(child_line_time(name, "\"type\":\"CommandExecution\"")),
            ..stream[0].clone()
        };
        assert_eq!(commands(records(&imported, &run)), vec![expected], "{name}");
    }
}

/// A rollout cut after `exec_command`'s `Process running with session ID
/// N` (before the exit) reads the command as working, and `status` shows
/// it live; with its helper's turn ended too (a helper that answered while
/// its process ran on), the command alone keeps the session at work.
#[test]
fn a_background_command_whose_rollout_ends_before_its_exit_is_working_and_live() {
    let name = "v1_background_exec";
    let whole = Cli::new();
    let run = import_rollouts(&whole, &rollout_home(name, &|lines| lines.to_vec()));
    let ended = commands(records(&whole, &run));
    let running_at = child_line_time(name, "Process running with session ID");
    let cut = |lines: &[String]| -> Vec<String> {
        match lines.iter().position(|line| line.contains("\"output\":\"Chunk ID") && line.contains("Process running")) {
            Some(at) => lines[..=at].to_vec(),
            None => lines.to_vec(),
        }
    };
    let helper_done = |lines: &[String]| -> Vec<String> {
        let mut kept = cut(lines);
        if kept.len() < lines.len() {
            kept.extend(lines.iter().filter(|line| line.contains("\"type\":\"task_complete\"")).cloned());
        }
        kept
    };
    let working = RecordJson {
        state: "working".to_owned(),
        outcome: None,
        ended_at: None,
        updated_at: running_at.clone(),
        ..ended[0].clone()
    };
    // The table without its last column, the age by the clock.
    let table = |cli: &Cli, run: &str| -> Vec<String> {
        cli.ok(&["status", run])
            .lines()
            .map(|line| line[..line.find("gen 1").map_or(line.len(), |at| at + 5)].to_owned())
            .collect()
    };
    let mut seen = Vec::new();
    for keep in [&cut as &dyn Fn(&[String]) -> Vec<String>, &helper_done] {
        let cli = Cli::new();
        let run = import_rollouts(&cli, &rollout_home(name, keep));
        let runs: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
        seen.push((commands(records(&cli, &run)), table(&cli, &run), runs["runs"][0]["helpersWorking"].clone()));
    }
    assert_eq!(
        seen,
        [
            (
                vec![working.clone()],
                vec![
                    "Kant                                  agent    working                gen 1".to_owned(),
                    "└─ echo bg-start; read line; echo g…  command  working                gen 1".to_owned(),
                ],
                Value::Bool(true),
            ),
            (
                vec![working],
                vec![
                    "Kant                                  agent    ended succeeded        gen 1".to_owned(),
                    "└─ echo bg-start; read line; echo g…  command  working                gen 1".to_owned(),
                ],
                Value::Bool(true),
            ),
        ]
    );
}
