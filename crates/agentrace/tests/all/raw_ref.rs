//! Imported runs reference their sources instead of copying them (`rawRef`):
//! the shape of a reference, `events --raw` reading frames back, a source
//! that changed or vanished (`raw: null` and `rawUnavailable`, never an
//! error), `import --keep-raw`, and live runs keeping `raw`.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use agentrace_testkit::files::{copy_dir, fixtures};

use super::support::{capture, Cli};

/// A Codex home (`codex/`) with the rollouts of `codex` and a Claude config
/// dir (`claude/`) with the transcripts of `claude`.
fn homes(codex: &[&str], claude: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for capture in codex {
        copy_dir(&fixtures().join("codex").join(capture).join("rollouts"), &dir.path().join("codex/sessions"));
    }
    std::fs::create_dir_all(dir.path().join("claude/projects")).unwrap_or_else(|e| panic!("{e}"));
    for capture in claude {
        copy_dir(&fixtures().join("claude").join(capture).join("home_claude"), &dir.path().join("claude"));
    }
    dir
}

fn import(cli: &Cli, dir: &Path, extra: &[&str]) {
    let codex = dir.join("codex").to_string_lossy().into_owned();
    let claude = dir.join("claude").to_string_lossy().into_owned();
    let mut args = vec!["import", "--codex-home", &codex, "--claude-dir", &claude, "--quiet"];
    args.extend_from_slice(extra);
    cli.ok(&args);
}

/// Every `.jsonl` under `dir`, sorted.
fn jsonl_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|end| end == "jsonl") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The envelopes of run `id`'s log as the store reads them back (an
/// import's v3 lines expanded to the v2 envelopes written), none skipped.
fn log_lines(cli: &Cli, id: &str) -> Vec<Value> {
    let (envelopes, skipped) = agentrace_store::read_log(&cli.home.path().join("runs").join(format!("{id}.jsonl"))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(skipped, vec![]);
    envelopes.iter().map(|envelope| serde_json::to_value(envelope).unwrap_or_else(|e| panic!("{e}"))).collect()
}

/// `events RUN --json` plus `extra`, each line as it was printed and as a value.
fn events(cli: &Cli, id: &str, extra: &[&str]) -> Vec<(String, Value)> {
    let mut args = vec!["events", id, "--json"];
    args.extend_from_slice(extra);
    cli.ok(&args)
        .lines()
        .map(|line| (line.to_owned(), serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}\n{line}"))))
        .collect()
}

/// The exact text of a printed envelope's `raw`.
fn raw_text(line: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        raw: &'a serde_json::value::RawValue,
    }
    serde_json::from_str::<Raw<'_>>(line).unwrap_or_else(|e| panic!("{e}\n{line}")).raw.get().to_owned()
}

/// The bytes a reference names.
fn referenced(reference: &Value) -> Vec<u8> {
    let bytes = std::fs::read(reference["path"].as_str().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
    let offset = reference["offset"].as_u64().unwrap_or_default() as usize;
    let length = reference["length"].as_u64().unwrap_or_default() as usize;
    bytes[offset..offset + length].to_vec()
}

fn run_id(cli: &Cli, provider: &str) -> String {
    let runs: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    runs["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|run| run["provider"] == provider)
        .and_then(|run| run["id"].as_str())
        .unwrap_or_else(|| panic!("no {provider} run"))
        .to_owned()
}

/// The first line of `path` (without its newline) and its reference.
fn first_line_reference(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{e}"));
    let end = bytes.iter().position(|byte| *byte == b'\n').unwrap_or(bytes.len());
    json!({
        "path": path.to_string_lossy(),
        "offset": 0,
        "length": end,
        "crc32": crc32fast::hash(&bytes[..end]),
    })
}

#[test]
fn an_imported_codex_and_claude_envelope_references_its_line_in_place_of_raw() {
    let dir = homes(&["v1_basic"], &["single_bg"]);
    let cli = Cli::new();
    import(&cli, dir.path(), &[]);
    let rollout = jsonl_under(&dir.path().join("codex")).remove(0);
    let codex = log_lines(&cli, &run_id(&cli, "codex"));
    // The rollout's first line (its `session_meta`) starts the thread.
    assert_eq!(codex[1]["event"]["type"], "thread_started");
    assert_eq!(codex[1]["rawRef"], first_line_reference(&rollout));
    let transcript = dir.path().join("claude/projects/-home-dev-agents-work-single-bg/a276f0f8-9a47-40c2-b57a-1ea38e691bc2.jsonl");
    let claude = log_lines(&cli, &run_id(&cli, "claude"));
    let first = claude.iter().find(|line| line.get("rawRef").is_some()).unwrap_or_else(|| panic!("no reference"));
    assert_eq!(first["rawRef"], first_line_reference(&transcript));
    // No frame is copied into an imported log.
    for line in codex.iter().chain(&claude) {
        assert_eq!(line.get("raw"), None, "{line}");
    }
    assert!(codex.iter().filter(|line| line.get("rawRef").is_some()).count() > 40);
    assert!(claude.iter().filter(|line| line.get("rawRef").is_some()).count() > 40);
}

#[test]
fn folders_named_relatively_are_imported_from_the_root_and_known_by_their_absolute_names() {
    let dir = homes(&["v1_basic"], &["single_bg"]);
    let cli = Cli::new();
    let imported = |cwd: &Path, codex: &str, claude: &str| {
        let output = cli
            .command(&["import", "--codex-home", codex, "--claude-dir", claude])
            .current_dir(cwd)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        stderr.lines().last().unwrap_or_default().split(" (").next().unwrap_or_default().to_owned()
    };
    assert_eq!(imported(dir.path(), "./codex", "claude"), "imported 2 new sessions, 0 changed, 0 unchanged");
    // The references name the sources from the root.
    let rollout = jsonl_under(&dir.path().join("codex")).remove(0);
    assert_eq!(log_lines(&cli, &run_id(&cli, "codex"))[1]["rawRef"], first_line_reference(&rollout));
    // The same folders by their absolute names, from elsewhere: nothing to
    // read again.
    let (codex, claude) = (dir.path().join("codex"), dir.path().join("claude"));
    assert_eq!(
        imported(Path::new("/"), &codex.to_string_lossy(), &claude.to_string_lossy()),
        "imported 0 new sessions, 0 changed, 2 unchanged"
    );
}

/// A source line holding a key is referenced like any other, and nothing
/// read from it keeps the key: not the log, not `events --raw` (the frame
/// is redacted as it is resolved), not the run's answer.
#[test]
fn an_imported_line_holding_a_key_is_referenced_and_shown_redacted() {
    const KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    let dir = homes(&["v1_basic"], &[]);
    let rollout = jsonl_under(&dir.path().join("codex"))
        .into_iter()
        .find(|path| path.to_string_lossy().contains("01a2298c-93ba"))
        .unwrap_or_else(|| panic!("no root rollout"));
    let text = std::fs::read_to_string(&rollout).unwrap_or_else(|e| panic!("{e}"));
    let edited = text.replace("ROOT DONE: all sub-agents finished; final answer from the root agent.", &format!("ROOT DONE with OPENAI_API_KEY={KEY}"));
    assert_ne!(edited, text);
    std::fs::write(&rollout, edited).unwrap_or_else(|e| panic!("{e}"));
    let cli = Cli::new();
    import(&cli, dir.path(), &[]);
    let id = run_id(&cli, "codex");
    let log = std::fs::read_to_string(cli.home.path().join("runs").join(format!("{id}.jsonl"))).unwrap_or_else(|e| panic!("{e}"));
    assert!(!log.contains(KEY));
    let lines = log_lines(&cli, &id);
    let holding: Vec<&Value> = lines.iter().filter(|line| line.get("rawRef").is_some_and(|reference| String::from_utf8_lossy(&referenced(reference)).contains(KEY))).collect();
    assert_eq!(holding.len(), 3, "every line with the key is referenced");
    assert!(holding.iter().all(|line| line.get("raw").is_none()));
    let shown = events(&cli, &id, &["--raw"]);
    assert!(shown.iter().all(|(line, _)| !line.contains(KEY)));
    assert_eq!(shown.iter().filter(|(line, value)| value.get("raw").is_some() && raw_text(line).contains("OPENAI_API_KEY=[REDACTED]")).count(), 3);
    let show: Value = serde_json::from_str(&cli.ok(&["show", &id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(show["run"]["result"], json!("ROOT DONE with OPENAI_API_KEY=[REDACTED]"));
}

#[test]
fn events_raw_shows_each_imported_frame_exactly_as_its_source_line() {
    let dir = homes(&["v1_parallel"], &["parallel_bg"]);
    let cli = Cli::new();
    import(&cli, dir.path(), &[]);
    for provider in ["codex", "claude"] {
        let id = run_id(&cli, provider);
        let shown = events(&cli, &id, &["--raw"]);
        let mut frames = 0;
        for (line, envelope) in &shown {
            let Some(reference) = envelope.get("rawRef") else { continue };
            let source = String::from_utf8(referenced(reference)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(raw_text(line), source, "{provider} {}", envelope["sequence"]);
            frames += 1;
        }
        assert!(frames > 20, "{provider}: {frames} frames");
        // Without `--raw`, as before: neither the frame nor where it is.
        for (_, envelope) in events(&cli, &id, &[]) {
            assert_eq!((envelope.get("raw"), envelope.get("rawRef")), (None, None));
        }
    }
}

#[test]
fn a_source_edited_since_the_import_shows_raw_null_and_source_changed() {
    let dir = homes(&["v1_basic"], &[]);
    let cli = Cli::new();
    import(&cli, dir.path(), &[]);
    let id = run_id(&cli, "codex");
    let rollout = jsonl_under(&dir.path().join("codex")).remove(0);
    // One byte of the first line changed in place (same length), and the
    // file cut short in its last line.
    let mut bytes = std::fs::read(&rollout).unwrap_or_else(|e| panic!("{e}"));
    let at = bytes.iter().position(|byte| *byte == b'0').unwrap_or_else(|| panic!("no digit"));
    bytes[at] = b'1';
    bytes.truncate(bytes.len() - 10);
    std::fs::write(&rollout, &bytes).unwrap_or_else(|e| panic!("{e}"));
    let shown = events(&cli, &id, &["--raw"]);
    let unavailable: Vec<(u64, Value, Value)> = shown
        .iter()
        .filter(|(_, envelope)| envelope.get("rawUnavailable").is_some())
        .map(|(_, envelope)| (envelope["sequence"].as_u64().unwrap_or_default(), envelope["raw"].clone(), envelope["rawUnavailable"].clone()))
        .collect();
    let last = shown.iter().rev().find(|(_, envelope)| envelope.get("rawRef").is_some()).map(|(_, envelope)| envelope["sequence"].as_u64().unwrap_or_default());
    assert_eq!(
        unavailable,
        vec![(2, Value::Null, json!("source changed")), (last.unwrap_or_default(), Value::Null, json!("source changed"))]
    );
}

/// Ends the server when the test ends, whatever happened.
pub(super) struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `agentrace serve` on a free loopback port; its address.
pub(super) fn serve(cli: &Cli) -> (Killed, String) {
    let mut server = Killed(
        cli.command(&["serve", "--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let stdout = server.0.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap_or_else(|e| panic!("{e}"));
    let address = first
        .trim_end()
        .strip_prefix("listening on http://127.0.0.1:")
        .map(|port| format!("127.0.0.1:{port}"))
        .unwrap_or_else(|| panic!("first line: {first:?}"));
    (server, address)
}

/// The JSON body of `GET path`.
pub(super) fn get_json(address: &str, path: &str) -> Value {
    let mut stream = TcpStream::connect(address).unwrap_or_else(|e| panic!("connect {address}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap_or_else(|e| panic!("{e}"));
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap_or_else(|e| panic!("{e}"));
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap_or_else(|e| panic!("{e}"));
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}\n{response}"))
}

/// `value` without the members that say a frame and where it is.
fn without_frames(mut value: Value) -> Value {
    match &mut value {
        Value::Object(members) => {
            for key in ["raw", "rawRef", "rawUnavailable"] {
                members.remove(key);
            }
            for member in members.values_mut() {
                *member = without_frames(member.take());
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = without_frames(item.take());
            }
        }
        _ => {}
    }
    value
}

/// What a user reads of run `id`: `show`, `events`, `usage`, and the
/// viewer's run, events and records.
fn history(cli: &Cli, id: &str) -> (Value, Vec<Value>, Value, Vec<Value>, Value) {
    let show: Value = serde_json::from_str(&cli.ok(&["show", id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let events = events(cli, id, &[]).into_iter().map(|(_, envelope)| envelope).collect();
    let usage: Value = serde_json::from_str(&cli.ok(&["usage", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let (_server, address) = serve(cli);
    let page = get_json(&address, &format!("/api/runs/{id}/events?limit=1000"));
    let viewer = vec![get_json(&address, &format!("/api/runs/{id}")), page];
    let records = get_json(&address, &format!("/api/runs/{id}/records"));
    (show, events, usage, viewer, records)
}

#[test]
fn a_claude_transcript_cleaned_up_after_import_loses_no_attributed_event() {
    let dir = homes(&[], &["parallel_bg"]);
    let cli = Cli::new();
    import(&cli, dir.path(), &[]);
    let id = run_id(&cli, "claude");
    let before = history(&cli, &id);
    let page = &before.3[1]["events"];
    let frames = page.as_array().into_iter().flatten().filter(|envelope| envelope.get("rawRef").is_some()).count();
    assert!(frames > 20 && page.as_array().into_iter().flatten().all(|envelope| envelope.get("rawUnavailable").is_none()));
    // Claude Code's cleanup of transcripts older than 30 days.
    std::fs::remove_dir_all(dir.path().join("claude/projects")).unwrap_or_else(|e| panic!("{e}"));
    let after = history(&cli, &id);
    assert_eq!(after.0, before.0, "show");
    assert_eq!(after.1, before.1, "events");
    assert_eq!(after.2, before.2, "usage");
    assert_eq!(without_frames(Value::from(after.3.clone())), without_frames(Value::from(before.3.clone())), "viewer");
    assert_eq!(after.4, before.4, "records");
    // The frames themselves are gone, and said so, in both places.
    let missing = |envelopes: Vec<Value>| {
        envelopes
            .into_iter()
            .filter(|envelope| envelope.get("rawRef").is_some())
            .map(|envelope| (envelope["raw"].clone(), envelope["rawUnavailable"].clone()))
            .collect::<Vec<_>>()
    };
    let shown = missing(events(&cli, &id, &["--raw"]).into_iter().map(|(_, envelope)| envelope).collect());
    assert_eq!(shown, vec![(Value::Null, json!("source missing")); frames]);
    let viewed = missing(after.3[1]["events"].as_array().cloned().unwrap_or_default());
    assert_eq!(viewed, vec![(Value::Null, json!("source missing")); frames]);
}

#[test]
fn import_keep_raw_shows_the_frames_after_the_sources_are_gone() {
    let dir = homes(&["v1_parallel"], &["single_bg"]);
    let cli = Cli::new();
    import(&cli, dir.path(), &["--keep-raw"]);
    let ids = [run_id(&cli, "codex"), run_id(&cli, "claude")];
    let before: Vec<Vec<(String, Value)>> = ids.iter().map(|id| events(&cli, id, &["--raw"])).collect();
    for id in &ids {
        assert!(cli.home.path().join("runs").join(format!("{id}.raw.gz")).exists());
    }
    std::fs::remove_dir_all(dir.path().join("codex")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(dir.path().join("claude")).unwrap_or_else(|e| panic!("{e}"));
    let after: Vec<Vec<(String, Value)>> = ids.iter().map(|id| events(&cli, id, &["--raw"])).collect();
    assert_eq!(after, before);
    assert!(after.iter().flatten().all(|(_, envelope)| envelope.get("rawUnavailable").is_none()));
}

#[test]
fn a_run_recorded_live_still_carries_each_frame_in_raw() {
    let cli = Cli::new();
    let id = cli.ingest(&capture("v1_basic"), &["--quiet"]);
    let lines = log_lines(&cli, &id);
    assert!(lines.iter().all(|line| line.get("rawRef").is_none()));
    assert!(lines.iter().filter(|line| line.get("raw").is_some()).count() > 40);
}

/// Run `id`'s log as an import wrote it before references: each frame
/// copied in as `raw` (read with `events --raw`), under run id `as_id`.
fn frames_copied_in(cli: &Cli, id: &str, as_id: &str) -> String {
    let frames: std::collections::HashMap<u64, String> = events(cli, id, &["--raw"])
        .into_iter()
        .filter(|(_, envelope)| envelope.get("rawRef").is_some())
        .map(|(line, envelope)| (envelope["sequence"].as_u64().unwrap_or_default(), raw_text(&line)))
        .collect();
    log_lines(cli, id)
        .into_iter()
        .map(|mut line| {
            let sequence = line["sequence"].as_u64().unwrap_or_default();
            if let Some(members) = line.as_object_mut() {
                if members.remove("rawRef").is_some() {
                    let raw = serde_json::from_str(&frames[&sequence]).unwrap_or_else(|e| panic!("{e}"));
                    members.insert("raw".to_owned(), raw);
                }
                members.insert("runId".to_owned(), json!(as_id));
            }
            format!("{line}\n")
        })
        .collect()
}

#[test]
fn a_claude_run_continued_after_import_relearns_its_frames_from_their_sources() {
    let dir = homes(&[], &["single_bg"]);
    let transcript = dir.path().join("claude/projects/-home-dev-agents-work-single-bg/a276f0f8-9a47-40c2-b57a-1ea38e691bc2.jsonl");
    // One home as imported (references), one with the frames copied in.
    let (referenced, copied) = (Cli::new(), Cli::new());
    import(&referenced, dir.path(), &[]);
    import(&copied, dir.path(), &[]);
    let id = run_id(&referenced, "claude");
    let log = frames_copied_in(&copied, &id, &id);
    std::fs::write(copied.home.path().join("runs").join(format!("{id}.jsonl")), log).unwrap_or_else(|e| panic!("{e}"));
    // `ingest` continues the run, its attributor primed from every frame.
    for cli in [&referenced, &copied] {
        cli.ingest(&transcript, &["--quiet"]);
    }
    let shown = |cli: &Cli| events(cli, &id, &[]).into_iter().map(|(_, envelope)| envelope).collect::<Vec<_>>();
    assert_eq!(shown(&referenced), shown(&copied));
}

/// Needs the child-work reducer to read typed facts, not `raw` (helper
/// WIRE): until then an imported run's records lack what only its frames
/// held (process ids, receivers, statuses).
#[test]
fn an_imported_runs_records_are_those_of_the_same_log_with_its_frames_copied() {
    let dir = homes(&["v1_background_exec", "v1_parallel"], &["parallel_bg", "bg_shell_task"]);
    let cli = Cli::new();
    import(&cli, dir.path(), &[]);
    let runs: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<String> = runs["runs"].as_array().into_iter().flatten().filter_map(|run| run["id"].as_str().map(str::to_owned)).collect();
    assert_eq!(ids.len(), 4);
    for id in ids {
        // The same log with each frame copied in, as imports wrote it before.
        let copied = frames_copied_in(&cli, &id, &format!("copied-{id}"));
        std::fs::write(cli.home.path().join("runs").join(format!("copied-{id}.jsonl")), copied).unwrap_or_else(|e| panic!("{e}"));
        let records = |run: &str| -> Value { serde_json::from_str(&cli.ok(&["status", run, "--json"])).unwrap_or_else(|e| panic!("{e}")) };
        assert_eq!(records(&id), records(&format!("copied-{id}")), "{id}");
    }
}

/// Regression: `ingest` of a run log read each line as a v2 envelope, so
/// an imported run's log (v3 lines) was not recognized, and none of its
/// frames replayed.
#[test]
fn ingest_of_an_imported_runs_v3_log_replays_it_as_the_same_log_with_its_frames_copied() {
    let dir = homes(&["v1_parallel"], &[]);
    let cli = Cli::new();
    import(&cli, dir.path(), &[]);
    let id = run_id(&cli, "codex");
    let log = cli.home.path().join("runs").join(format!("{id}.jsonl"));
    let copied = dir.path().join("copied.jsonl");
    std::fs::write(&copied, frames_copied_in(&cli, &id, "copied")).unwrap_or_else(|e| panic!("{e}"));
    let first_line = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{e}")).lines().next().map(str::to_owned);
    cli.ok(&["ingest", "--run-id", "from-v3", &log.to_string_lossy()]);
    cli.ok(&["ingest", "--run-id", "from-v2", &copied.to_string_lossy()]);
    let events = |run: &str| -> Vec<Value> {
        events(&cli, run, &[])
            .into_iter()
            .map(|(_, mut envelope)| {
                envelope["runId"] = json!("replayed");
                envelope
            })
            .collect()
    };

    assert!(first_line.is_some_and(|line| line.starts_with(r#"{"v":3,"#)));
    let replayed = events("from-v3");
    assert!(replayed.len() > 40, "{} events", replayed.len());
    assert_eq!(replayed, events("from-v2"));
}

/// Regression: `ingest` of an imported Codex session's log read its rollout
/// lines as an app-server stream (no agent at all, every line an unknown
/// frame), fed a Claude subagent's metadata as a line of the session (an
/// unknown frame), and said the v3 log's definitions "are not run-log
/// envelopes". The replay attributes each frame as the import fed it (by
/// the file its `rawRef` names, or, in a log written before frames named
/// their file, by the thread it went to), and says nothing of the form of
/// the log: the same agents, warnings and figures as the import, the
/// replay's own session end aside.
#[test]
fn ingest_of_an_imported_runs_log_attributes_it_as_the_import_did() {
    let dir = homes(&["v1_parallel"], &["parallel_fg"]);
    let cli = Cli::new();
    import(&cli, dir.path(), &[]);
    for provider in ["codex", "claude"] {
        replays_as_imported(&cli, dir.path(), &run_id(&cli, provider), provider);
    }
}

/// `show --json` of `run`, its id made `replayed` (a replay's own differs).
fn shown_as_replayed(cli: &Cli, run: &str) -> Value {
    let mut view: Value = serde_json::from_str(&cli.ok(&["show", run, "--json"])).unwrap_or_else(|e| panic!("{e}"));
    view["run"]["id"] = json!("replayed");
    view
}

/// Ingests imported run `id`'s log, as written (v3, frames referenced) and
/// with its frames copied in (as older imports wrote it, into `dir`), as
/// runs named after `tag`: each replay says nothing on stderr and is the
/// run the import made, to the last member of `show --json`, its own end
/// aside (a session its own signals ended has no `session_ended` from the
/// import; the replay ends its own at the end of its input).
fn replays_as_imported(cli: &Cli, dir: &Path, id: &str, tag: &str) {
    let mut imported = shown_as_replayed(cli, id);
    let ended = events(cli, id, &[]).iter().any(|(_, envelope)| envelope["event"]["type"] == "session_ended");
    let counted = imported["run"]["counts"]["events"].as_u64().unwrap_or_default();
    imported["run"]["counts"]["events"] = json!(counted + u64::from(!ended));
    let log = cli.home.path().join("runs").join(format!("{id}.jsonl"));
    let copied = dir.join(format!("copied-{tag}.jsonl"));
    std::fs::write(&copied, frames_copied_in(cli, id, "copied")).unwrap_or_else(|e| panic!("{e}"));
    for (form, from) in [("v3", &log), ("v2", &copied)] {
        let replay = format!("{tag}-from-{form}");
        let output = cli.run(&["ingest", "--quiet", "--run-id", &replay, &from.to_string_lossy()]);
        assert_eq!(
            (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned()),
            (Some(0), String::new()),
            "{id} from {form}"
        );
        assert_eq!(shown_as_replayed(cli, &replay), imported, "{id} from {form}");
    }
}

/// Every capture imported (both Codex versions'), then each run's log
/// ingested: the replay gives
/// the run the import made, from the log as written (v3, frames
/// referenced) and with its frames copied in (as older imports wrote it),
/// its own `session_ended` aside.
#[test]
fn every_imported_capture_replays_as_it_was_imported() {
    let names = |provider: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(fixtures().join(provider))
            .unwrap_or_else(|e| panic!("{e}"))
            .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path())
            .filter(|path| path.is_dir())
            .filter_map(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        names
    };
    // Both Codex versions' captures.
    let codex: Vec<String> = names("codex").into_iter().chain(names("codex-0.171").into_iter().map(|name| format!("../codex-0.171/{name}"))).collect();
    let claude = names("claude");
    let dir = homes(&codex.iter().map(String::as_str).collect::<Vec<_>>(), &claude.iter().map(String::as_str).collect::<Vec<_>>());
    let cli = Cli::new();
    // Every session left open ended (its files still past the limit), as
    // the replay of a log ends its own at the end of its input.
    import(&cli, dir.path(), &["--idle-limit", "0"]);
    let runs: Value = serde_json::from_str(&cli.ok(&["runs", "--json", "--limit", "1000"])).unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<String> = runs["runs"].as_array().into_iter().flatten().filter_map(|run| run["id"].as_str().map(str::to_owned)).collect();
    assert!(ids.len() >= codex.len() + claude.len(), "{} runs", ids.len());
    for (index, id) in ids.iter().enumerate() {
        replays_as_imported(&cli, dir.path(), id, &format!("replay-{index}"));
    }
}

/// `events RUN --raw` without `--json` prints each frame under its event,
/// as `--json` gives it in `raw`: an ingested line that is not JSON as it
/// was read (what the ingest's hint promises), an imported frame from its
/// source, and, once the source is gone, that it is gone. A derived event
/// has no frame line.
#[test]
fn events_raw_as_text_prints_each_frame_under_its_event() {
    let cli = Cli::new();
    let text = std::fs::read_to_string(super::support::capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let mut lines: Vec<&str> = text.lines().take(4).collect();
    lines.insert(2, "not json {");
    let bad = cli.home.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let id = cli.ingest(&bad, &["--quiet"]);
    // Each event line, with the frame line under it when there is one.
    let pairs = |id: &str| -> Vec<(String, Option<String>)> {
        let printed = cli.ok(&["events", id, "--raw"]);
        let mut pairs: Vec<(String, Option<String>)> = Vec::new();
        for line in printed.lines() {
            match (line.strip_prefix("        raw "), pairs.last_mut()) {
                (Some(frame), Some((_, under))) => *under = Some(frame.to_owned()),
                _ => pairs.push((line.to_owned(), None)),
            }
        }
        pairs
    };
    let frames = |id: &str| -> Vec<Option<String>> {
        events(&cli, id, &["--raw"]).iter().map(|(line, value)| match value.get("rawUnavailable") {
            Some(_) => Some("unavailable: its source is gone".to_owned()),
            None => value.get("raw").map(|_| raw_text(line)),
        }).collect()
    };
    let ingested = pairs(&id);
    assert_eq!(ingested.iter().map(|(_, frame)| frame.clone()).collect::<Vec<_>>(), frames(&id));
    assert!(ingested.iter().any(|(event, frame)| event.contains("unknown: invalid JSON") && frame.as_deref() == Some("\"not json {\"")), "{ingested:?}");
    assert!(ingested.iter().any(|(event, frame)| event.contains("run started") && frame.is_none()), "{ingested:?}");

    let dir = homes(&[], &["single_fg"]);
    import(&cli, dir.path(), &[]);
    let imported = run_id(&cli, "claude");
    let before = pairs(&imported);
    assert!(before.iter().filter(|(_, frame)| frame.as_deref().is_some_and(|frame| frame.starts_with('{'))).count() > 10, "{before:?}");
    assert_eq!(before.iter().map(|(_, frame)| frame.clone()).collect::<Vec<_>>(), frames(&imported));
    std::fs::remove_dir_all(dir.path().join("claude")).unwrap_or_else(|e| panic!("{e}"));
    let after = pairs(&imported);
    assert_eq!(after.iter().map(|(_, frame)| frame.clone()).collect::<Vec<_>>(), frames(&imported));
    assert_eq!(
        (before.len(), before.iter().filter(|(_, frame)| frame.is_some()).count()),
        (after.len(), after.iter().filter(|(_, frame)| frame.as_deref() == Some("unavailable: its source is gone")).count())
    );
}
