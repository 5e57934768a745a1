//! Histories damaged as real disks and newer agents damage them (a file
//! that cannot be opened, a byte order mark, a rollout with no head): an
//! import says which file and why, loses nothing it had, and reads the
//! file right once it is repaired.

use std::path::{Path, PathBuf};

use serde_json::Value;

use agentrace_testkit::files::{copy_dir, fixtures};

use super::support::Cli;

/// A Codex home holding `codex`'s rollouts and a Claude config dir
/// holding `claude`'s transcripts, under `dir`.
fn homes(codex: &str, claude: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&fixtures().join("codex").join(codex).join("rollouts"), &dir.path().join("codex/sessions"));
    copy_dir(&fixtures().join("claude").join(claude).join("home_claude"), &dir.path().join("claude"));
    dir
}

/// The `.jsonl` files under `dir`, sorted.
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display())) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "jsonl") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `agentrace import` of `dir`'s two homes: its exit code and stderr.
fn import(cli: &Cli, dir: &Path) -> (Option<i32>, String) {
    let (codex, claude) = (dir.join("codex"), dir.join("claude"));
    let output = cli.run(&["import", "--codex-home", &codex.to_string_lossy(), "--claude-dir", &claude.to_string_lossy()]);
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// `runs --json` of `cli`'s home.
fn runs(cli: &Cli) -> Value {
    serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"))
}

/// `show --json` of `run`.
fn shown(cli: &Cli, run: &str) -> Value {
    serde_json::from_str(&cli.ok(&["show", run, "--json"])).unwrap_or_else(|e| panic!("{e}"))
}

/// Puts a unix socket where `path` was: a file every user, root included,
/// can list and stat but none can open (`ENXIO`), as a transcript another
/// user wrote unreadable is for most. Bound at a short path (a socket's
/// path is at most 108 bytes) and moved into place.
fn make_unopenable(path: &Path) {
    let scratch = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = scratch.path().join("s");
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap_or_else(|e| panic!("{e}")));
    std::fs::remove_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    std::fs::rename(&socket, path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A Claude subagent file that cannot be opened aborted the whole import
/// (`error: cannot open …`, exit 1) after emptying its session's run: the
/// Codex session after it was never imported, and the list showed a run of
/// no agent started at the clock's time, `running`, `$0.00`. Now the
/// session is left out with a warning naming the file, its run keeps what
/// the last import gave it, the rest is imported, and once the file can be
/// read again the next import reads it as if nothing had happened.
#[test]
fn a_claude_file_that_cannot_be_opened_leaves_its_session_out_and_the_rest_imported() {
    let dir = homes("v1_parallel", "parallel_bg");
    let whole = Cli::new();
    assert_eq!(import(&whole, dir.path()).0, Some(0));
    let claude_run = "claude-4d35057c-0951-4f3b-9748-90519e0026ea";
    let codex_run = "codex-01a2298c-b715-73a2-a32b-e063f6ee5299";
    let before = shown(&whole, claude_run);

    // A fresh home, and a session read before, meet the same damage.
    let fresh = Cli::new();
    let subagent = jsonl_files(&dir.path().join("claude"))
        .into_iter()
        .find(|path| path.to_string_lossy().contains("/subagents/agent-"))
        .unwrap_or_else(|| panic!("no subagent file"));
    let kept = std::fs::read(&subagent).unwrap_or_else(|e| panic!("{e}"));
    make_unopenable(&subagent);
    let warning = format!(
        "warning: cannot read {}: No such device or address (os error 6); the Claude session 4d35057c-0951-4f3b-9748-90519e0026ea is left out of this import",
        subagent.display()
    );
    let summary = |new: u64, unchanged: u64| {
        format!(
            "imported {new} new session{}, 0 changed, {unchanged} unchanged (Codex from {}, Claude from {}); 1 session left out, a file of it unreadable (see the warning above)",
            if new == 1 { "" } else { "s" },
            dir.path().join("codex").display(),
            dir.path().join("claude").display()
        )
    };
    let (code, stderr) = import(&fresh, dir.path());
    assert_eq!(
        (code, stderr.lines().collect::<Vec<_>>()),
        (Some(0), vec![format!("{warning} and read again by the next one").as_str(), summary(1, 0).as_str()])
    );
    let listed: Vec<Value> = runs(&fresh)["runs"].as_array().into_iter().flatten().map(|run| run["id"].clone()).collect();
    assert_eq!(listed, vec![Value::from(codex_run)], "the Codex session imported, no stub of the Claude one");
    // `--json` counts it too (`leftOut`, there only when not 0): a script
    // saw an import that left a session out as one that read everything.
    let scripted = Cli::new();
    let (codex, claude) = (dir.path().join("codex"), dir.path().join("claude"));
    let reported: Value = serde_json::from_str(&scripted.ok(&["import", "--json", "--codex-home", &codex.to_string_lossy(), "--claude-dir", &claude.to_string_lossy()]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        reported,
        serde_json::json!({"new": 1, "changed": 0, "readOn": 0, "unchanged": 0, "leftOut": 1, "runs": [codex_run], "codexHome": codex, "claudeDir": claude})
    );

    let (code, stderr) = import(&whole, dir.path());
    assert_eq!(
        (code, stderr.lines().collect::<Vec<_>>()),
        (
            Some(0),
            vec![
                format!("warning: {} shrank since the last import; reading its session again whole", subagent.display()).as_str(),
                format!("{warning} (its run {claude_run} keeps what it had) and read again by the next one").as_str(),
                summary(0, 1).as_str()
            ]
        )
    );
    assert_eq!(shown(&whole, claude_run), before, "the run as the last import left it");

    // Repaired: both homes read it as a clean import does.
    std::fs::remove_file(&subagent).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&subagent, kept).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(import(&fresh, dir.path()).0, Some(0));
    assert_eq!(import(&whole, dir.path()).0, Some(0));
    assert_eq!(shown(&fresh, claude_run), before);
    assert_eq!(shown(&whole, claude_run), before);
}

/// Puts a UTF-8 byte order mark before `path`'s first line.
fn mark_byte_order(path: &Path) {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(path).unwrap_or_else(|e| panic!("{e}")));
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{e}"));
}

/// A byte order mark before a file's first line (an editor's save, a copy
/// through another system) made that line undecodable: a Codex root
/// rollout so marked had no head, its whole session was left out without a
/// word and its children listed as orphan runs, and a Claude transcript or
/// a stream lost its first line (`undecodedLines: 1`). The mark is read
/// past: the runs are those of the unmarked files.
#[test]
fn a_byte_order_mark_before_a_files_first_line_is_read_past() {
    let clean = homes("v1_parallel", "parallel_bg");
    let marked = homes("v1_parallel", "parallel_bg");
    for path in jsonl_files(marked.path()) {
        mark_byte_order(&path);
    }
    let stream = marked.path().join("server.jsonl");
    std::fs::copy(fixtures().join("codex/v1_parallel/server.jsonl"), &stream).unwrap_or_else(|e| panic!("{e}"));
    mark_byte_order(&stream);
    let (of_clean, of_marked) = (Cli::new(), Cli::new());
    assert_eq!(import(&of_clean, clean.path()).0, Some(0));
    assert_eq!(import(&of_marked, marked.path()).0, Some(0));
    of_clean.ok(&["ingest", "--quiet", "--run-id", "streamed", &fixtures().join("codex/v1_parallel/server.jsonl").to_string_lossy()]);
    of_marked.ok(&["ingest", "--quiet", "--run-id", "streamed", &stream.to_string_lossy()]);
    let ids = |cli: &Cli| -> Vec<Value> { runs(cli)["runs"].as_array().into_iter().flatten().map(|run| run["id"].clone()).collect() };
    assert_eq!(ids(&of_marked), ids(&of_clean));
    for run in ["claude-4d35057c-0951-4f3b-9748-90519e0026ea", "codex-01a2298c-b715-73a2-a32b-e063f6ee5299", "streamed"] {
        assert_eq!(shown(&of_marked, run), shown(&of_clean, run), "{run}");
    }
}

/// A Codex rollout whose head cannot be read (a file that cannot be
/// opened, a first line of a type this build does not know) was left
/// out of the import without a word: a root so left out took its whole
/// session's root with it, and its children were listed as orphan runs,
/// with no hint of why. Each is now named on stderr, with why.
#[test]
fn a_codex_rollout_with_no_readable_head_is_named_on_stderr() {
    let dir = homes("v1_parallel", "single_fg");
    let rollouts = jsonl_files(&dir.path().join("codex"));
    let root = rollouts.iter().find(|path| path.to_string_lossy().contains("b715")).unwrap_or_else(|| panic!("no root rollout"));
    let child = rollouts.iter().find(|path| path.to_string_lossy().contains("b7b2")).unwrap_or_else(|| panic!("no child rollout"));
    // A newer Codex's head, under a type of its own.
    let text = std::fs::read_to_string(root).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root, text.replacen("\"type\":\"session_meta\"", "\"type\":\"session_header\"", 1)).unwrap_or_else(|e| panic!("{e}"));
    make_unopenable(child);
    let (code, stderr) = import(&Cli::new(), dir.path());
    let left_out = "the rollout is left out of this import (a child of it is read as a session of its own)";
    assert_eq!(
        (code, stderr.lines().collect::<Vec<_>>()),
        (
            Some(0),
            vec![
                format!("warning: {}: its first line is not a Codex `session_meta` naming its thread; {left_out}", root.display()).as_str(),
                format!("warning: cannot read {}: No such device or address (os error 6); {left_out}", child.display()).as_str(),
                format!(
                    "imported 2 new sessions, 0 changed, 0 unchanged (Codex from {}, Claude from {})",
                    dir.path().join("codex").display(),
                    dir.path().join("claude").display()
                )
                .as_str(),
            ]
        )
    );
    // `usage` straight from the folders passed over them without a word.
    let cli = Cli::new();
    let output = cli.run(&["usage", "--json", "--codex-home", &dir.path().join("codex").to_string_lossy(), "--claude-dir", &dir.path().join("claude").to_string_lossy()]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let left_out = "the rollout is left out of this report (a child of it is counted as a session of its own)";
    assert_eq!(
        (output.status.code(), stderr.lines().filter(|line| line.contains("left out")).collect::<Vec<_>>()),
        (
            Some(0),
            vec![
                format!("warning: {}: its first line is not a Codex `session_meta` naming its thread; {left_out}", root.display()).as_str(),
                format!("warning: cannot read {}: No such device or address (os error 6); {left_out}", child.display()).as_str(),
            ]
        )
    );
}

/// A Codex root whose head could not be read leaves its children read as
/// sessions of their own (orphan runs). Once the root was repaired, the
/// next import read the whole session into the root's run but kept the
/// orphan runs: they stayed `running` in the list for ever, and `usage`
/// counted the children's tokens twice (92,418 tokens for v1_parallel's
/// 50,769 and parallel_bg's 20,013). Now the session that holds an
/// orphan's every rollout takes its place: the home is a clean import's.
#[test]
fn a_repaired_codex_root_takes_its_children_back_from_their_orphan_runs() {
    let dir = homes("v1_parallel", "parallel_bg");
    let clean = Cli::new();
    assert_eq!(import(&clean, dir.path()).0, Some(0));
    let root = jsonl_files(&dir.path().join("codex"))
        .into_iter()
        .find(|path| path.to_string_lossy().contains("b715"))
        .unwrap_or_else(|| panic!("no root rollout"));
    let text = std::fs::read_to_string(&root).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&root, text.replacen("\"type\":\"session_meta\"", "\"type\":\"session_header\"", 1)).unwrap_or_else(|e| panic!("{e}"));
    let repaired = Cli::new();
    assert_eq!(import(&repaired, dir.path()).0, Some(0));
    std::fs::write(&root, text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(import(&repaired, dir.path()).0, Some(0));
    let ids = |cli: &Cli| -> Vec<Value> { runs(cli)["runs"].as_array().into_iter().flatten().map(|run| run["id"].clone()).collect() };
    assert_eq!(ids(&repaired), ids(&clean));
    let usage = |cli: &Cli| -> Value { serde_json::from_str(&cli.ok(&["usage", "--json"])).unwrap_or_else(|e| panic!("{e}")) };
    assert_eq!(usage(&repaired), usage(&clean));
    assert_eq!(shown(&repaired, "codex-01a2298c-b715-73a2-a32b-e063f6ee5299"), shown(&clean, "codex-01a2298c-b715-73a2-a32b-e063f6ee5299"));
}

/// A file of a session deleted after an import (Claude Code's cleanup
/// deletes old transcripts one file at a time, a subagent's before its
/// session's when it ended first) made the next import read the session
/// again whole without it: the run and `usage` silently lost that agent's
/// events, tool calls and tokens. Now a session whose other files did not
/// change keeps its run as it was, and the import says once which file is
/// gone.
#[test]
fn a_session_file_deleted_after_an_import_leaves_its_run_as_it_was() {
    let dir = homes("v1_parallel", "parallel_bg");
    let cli = Cli::new();
    assert_eq!(import(&cli, dir.path()).0, Some(0));
    let (claude_run, codex_run) = ("claude-4d35057c-0951-4f3b-9748-90519e0026ea", "codex-01a2298c-b715-73a2-a32b-e063f6ee5299");
    let usage = |cli: &Cli| -> Value { serde_json::from_str(&cli.ok(&["usage", "--json"])).unwrap_or_else(|e| panic!("{e}")) };
    let before = (shown(&cli, claude_run), shown(&cli, codex_run), usage(&cli));
    let files = jsonl_files(dir.path());
    let subagent = files.iter().find(|path| path.to_string_lossy().contains("/subagents/agent-")).unwrap_or_else(|| panic!("no subagent file"));
    let child = files.iter().find(|path| path.to_string_lossy().contains("b7b2")).unwrap_or_else(|| panic!("no child rollout"));
    for path in [subagent, child] {
        std::fs::remove_file(path).unwrap_or_else(|e| panic!("{e}"));
    }
    let summary = format!(
        "imported 0 new sessions, 0 changed, 2 unchanged (Codex from {}, Claude from {})",
        dir.path().join("codex").display(),
        dir.path().join("claude").display()
    );
    let gone = |path: &Path| format!("warning: {}, read by an earlier import, is gone; its session's run keeps what it read of it", path.display());
    let (code, stderr) = import(&cli, dir.path());
    assert_eq!(
        (code, stderr.lines().collect::<Vec<_>>()),
        (Some(0), vec![gone(subagent).as_str(), gone(child).as_str(), summary.as_str()])
    );
    assert_eq!((shown(&cli, claude_run), shown(&cli, codex_run), usage(&cli)), before);
    let (code, stderr) = import(&cli, dir.path());
    assert_eq!((code, stderr.lines().collect::<Vec<_>>()), (Some(0), vec![summary.as_str()]), "said once");
}

/// A Codex record whose payload names no type (`payload: null`, a type
/// that is no string) became a bare notice that no count showed: the
/// damage was invisible. It is an unknown frame, counted, and the rest of
/// the rollout reads as before.
#[test]
fn a_codex_record_whose_payload_names_no_type_is_counted_as_an_unknown_frame() {
    let dir = homes("v1_basic", "single_fg");
    let clean = Cli::new();
    assert_eq!(import(&clean, dir.path()).0, Some(0));
    let root = "codex-01a2298c-93ba-7001-9862-9fd03c21f5d4";
    let before = shown(&clean, root);
    // A line of the root's rollout (after its head) with its payload gone,
    // and one whose payload type is a number.
    let rollout = jsonl_files(&dir.path().join("codex"))
        .into_iter()
        .find(|path| std::fs::read_to_string(path).is_ok_and(|text| text.contains("01a2298c-93ba-7001-9862-9fd03c21f5d4") && !text.contains("thread_spawn")))
        .unwrap_or_else(|| panic!("no root rollout"));
    let text = std::fs::read_to_string(&rollout).unwrap_or_else(|e| panic!("{e}"));
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines.iter().position(|line| line.contains("\"type\":\"event_msg\"")).unwrap_or_else(|| panic!("no event_msg"));
    let damaged = [
        r#"{"timestamp":"2026-11-29T23:03:28.600Z","type":"event_msg","payload":null}"#.to_owned(),
        r#"{"timestamp":"2026-11-29T23:03:28.600Z","type":"response_item","payload":{"type":7}}"#.to_owned(),
    ];
    lines.splice(at..at, damaged);
    std::fs::write(&rollout, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let damaged_home = Cli::new();
    assert_eq!(import(&damaged_home, dir.path()).0, Some(0));
    let after = shown(&damaged_home, root);
    let figures = |view: &Value| (view["run"]["counts"]["unknownFrames"].clone(), view["run"]["tokens"].clone(), view["run"]["status"].clone(), view["agents"].as_array().map(Vec::len));
    let (unknown_before, tokens, status, agents) = figures(&before);
    assert_eq!(figures(&after), (Value::from(unknown_before.as_u64().unwrap_or(0) + 2), tokens, status, agents));
}

/// `usage` straight from the folders stopped at a file it could not open
/// (`error: cannot open …`, exit 1): no report at all. The session is left
/// out, said on stderr and counted in the report (`leftOut`, there only
/// when not 0), and the rest is counted as without it.
#[test]
fn usage_straight_from_folders_leaves_out_a_session_with_a_file_it_cannot_open() {
    let dir = homes("v1_basic", "parallel_bg");
    let (codex, claude) = (dir.path().join("codex"), dir.path().join("claude"));
    let cli = Cli::new();
    let usage = |claude: &Path| {
        let output = cli.run(&["usage", "--json", "--codex-home", &codex.to_string_lossy(), "--claude-dir", &claude.to_string_lossy()]);
        let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        (output.status.code(), report, String::from_utf8_lossy(&output.stderr).into_owned())
    };
    // The Codex session alone: what the damaged report must give.
    let empty = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (_, codex_alone, _) = usage(empty.path());
    let subagent = jsonl_files(&claude)
        .into_iter()
        .find(|path| path.to_string_lossy().contains("/subagents/agent-"))
        .unwrap_or_else(|| panic!("no subagent file"));
    make_unopenable(&subagent);
    let (code, report, stderr) = usage(&claude);
    let warnings: Vec<&str> = stderr.lines().filter(|line| line.contains("is left out of this report")).collect();
    assert_eq!(
        (code, report["sessions"].clone(), report["totals"].clone(), [report["leftOut"].clone(), codex_alone["leftOut"].clone()], warnings),
        (
            Some(0),
            codex_alone["sessions"].clone(),
            codex_alone["totals"].clone(),
            [Value::from(1), Value::Null],
            vec![format!(
                "warning: cannot open {}: No such device or address (os error 6); the Claude session 4d35057c-0951-4f3b-9748-90519e0026ea is left out of this report (its tokens are not counted)",
                subagent.display()
            )
            .as_str()]
        ),
        "{stderr}"
    );
}

/// Puts `lines` into `path` after its line `after` (1-based).
fn insert_lines(path: &Path, after: usize, lines: &[&str]) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
    let mut all: Vec<&str> = text.lines().collect();
    all.splice(after..after, lines.iter().copied());
    std::fs::write(path, all.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
}

/// An import of a history with lines it could not decode said nothing of
/// them (only `show`'s counts did, of the whole run): a user importing a
/// damaged history did not learn which file was damaged. In a session of
/// several files, each `undecodable` event named its line but not its
/// file, and its actor said "no session_meta before this line" though its
/// file began with one. Now each session's damaged files are named once,
/// with how many lines of each, the summary and `--json` count them
/// (`undecodedLines`, there only when not 0), and each event names its
/// file and says why it has no agent.
#[test]
fn import_says_how_many_lines_it_could_not_read() {
    let dir = homes("v1_parallel", "single_fg");
    let rollouts = jsonl_files(&dir.path().join("codex"));
    let root = rollouts.iter().find(|path| path.to_string_lossy().contains("b715")).unwrap_or_else(|| panic!("no root rollout"));
    let child = rollouts.iter().find(|path| path.to_string_lossy().contains("b7b2")).unwrap_or_else(|| panic!("no child rollout"));
    insert_lines(root, 2, &["{\"timestamp\": cut"]);
    insert_lines(child, 3, &["{\"timestamp\": cut", "not json at all"]);
    let codex_run = "codex-01a2298c-b715-73a2-a32b-e063f6ee5299";
    let cli = Cli::new();
    let (code, stderr) = import(&cli, dir.path());
    assert_eq!(
        (code, stderr.lines().collect::<Vec<_>>()),
        (
            Some(0),
            vec![
                format!(
                    "warning: 3 lines of {} (1), {} (2) could not be read; they are kept as `undecodable` events in run {codex_run}",
                    root.display(),
                    child.display()
                )
                .as_str(),
                format!(
                    "imported 2 new sessions, 0 changed, 0 unchanged (Codex from {}, Claude from {}); 3 lines could not be read (see the warnings above)",
                    dir.path().join("codex").display(),
                    dir.path().join("claude").display()
                )
                .as_str(),
            ]
        )
    );
    // Each event: its file, its line, and why it has no agent.
    let events: Vec<Value> = cli.ok(&["events", codex_run, "--json"]).lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"))).collect();
    let mut undecodable: Vec<(Value, Value, Value)> = events
        .iter()
        .filter(|envelope| envelope["event"]["kind"] == "undecodable")
        .map(|envelope| (envelope["event"]["file"].clone(), envelope["event"]["lineNumber"].clone(), envelope["actor"]["reason"].clone()))
        .collect();
    undecodable.sort_by_key(|(file, line, _)| (file.to_string(), line.as_u64()));
    let expected = |path: &Path, line: u64| (Value::from(path.to_string_lossy()), Value::from(line), Value::from("undecodable line"));
    assert_eq!(undecodable, vec![expected(root, 3), expected(child, 4), expected(child, 5)]);
    // `--json` counts them, there only when not 0.
    let (codex, claude) = (dir.path().join("codex"), dir.path().join("claude"));
    let scripted = Cli::new();
    let import_json = |cli: &Cli| -> Value {
        serde_json::from_str(&cli.ok(&["import", "--json", "--codex-home", &codex.to_string_lossy(), "--claude-dir", &claude.to_string_lossy()])).unwrap_or_else(|e| panic!("{e}"))
    };
    let first = import_json(&scripted);
    assert_eq!(
        first,
        serde_json::json!({"new": 2, "changed": 0, "readOn": 0, "unchanged": 0, "undecodedLines": 3, "runs": first["runs"].clone(), "codexHome": codex, "claudeDir": claude})
    );
    // Said by the import that read them, not again by the next.
    assert_eq!(import_json(&scripted)["undecodedLines"], Value::Null);
}

/// Regression: an `import` while Claude Code was writing a transcript
/// warned "1 line … could not be read" of its last line, which had no
/// newline yet (read as it is, and read again whole once it has one). A
/// session still for the idle limit is over, and such a line is damage:
/// said then.
#[test]
fn a_last_line_still_being_written_is_not_said_to_be_unreadable() {
    let dir = homes("v1_basic", "single_fg");
    let transcript = jsonl_files(&dir.path().join("claude/projects"))
        .into_iter()
        .find(|path| !path.to_string_lossy().contains("/subagents/"))
        .unwrap_or_else(|| panic!("no transcript"));
    let mut file = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap_or_else(|e| panic!("{e}"));
    std::io::Write::write_all(&mut file, b"{\"type\":\"assistant\",\"mess").unwrap_or_else(|e| panic!("{e}"));
    let (codex, claude) = (dir.path().join("codex"), dir.path().join("claude"));
    let summary = format!(
        "imported 2 new sessions, 0 changed, 0 unchanged (Codex from {}, Claude from {})",
        codex.display(),
        claude.display()
    );
    let young = Cli::new();
    assert_eq!(import(&young, dir.path()), (Some(0), format!("{summary}\n")));
    let still = Cli::new();
    let output = still.run(&["import", "--idle-limit", "0", "--codex-home", &codex.to_string_lossy(), "--claude-dir", &claude.to_string_lossy()]);
    let run = "claude-8beed115-2652-4f2b-897f-f3849f761b78";
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned()),
        (
            Some(0),
            format!(
                "warning: 1 line of {} could not be read; it is kept as an `undecodable` event in run {run}\n{summary}; 1 line could not be read (see the warning above)\n",
                transcript.display()
            )
        )
    );
}

/// `agentrace hook` fed `input` on stdin: its exit code, its stderr, and
/// the `event` of each envelope of the run it made (its only one).
fn hooked(input: &[u8]) -> (Option<i32>, String, Vec<Value>) {
    use std::io::Write as _;
    let cli = Cli::new();
    let mut child = cli
        .command(&["hook"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input).unwrap_or_else(|e| panic!("{e}"));
    }
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<String> = runs(&cli)["runs"].as_array().into_iter().flatten().filter_map(|run| run["id"].as_str().map(str::to_owned)).collect();
    let events = ids
        .iter()
        .flat_map(|id| cli.ok(&["events", id, "--json"]).lines().map(|line| serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}"))["event"].clone()).collect::<Vec<_>>())
        .collect();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned(), events)
}

/// A Claude Code hook input that starts with a UTF-8 byte order mark (a
/// hook wrapper on another system, a script that wrote it through an
/// editor's encoding) was "not JSON": a warning, and the input dropped.
/// The mark is read past, as every line decoder does: the run is the one
/// the unmarked input makes.
#[test]
fn a_hook_input_that_starts_with_a_byte_order_mark_is_recorded_as_without_it() {
    let input = std::fs::read_to_string(fixtures().join("claude/single_fg/hooks.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"))
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|line| line["input"].to_string())
        .next()
        .unwrap_or_else(|| panic!("no hook input"));
    let plain = hooked(input.as_bytes());
    assert_eq!((plain.0, plain.1.as_str(), plain.2.is_empty()), (Some(0), "", false), "the unmarked input is recorded");
    let mut marked = b"\xEF\xBB\xBF".to_vec();
    marked.extend(input.as_bytes());
    assert_eq!(hooked(&marked), plain);
}

/// `usage` straight from the folders with a session it left out (a file
/// of it that cannot be opened) counted it in `--json` by run alone
/// (`leftOut`); by day, week, month, model, project, agent and block the
/// report looked whole, and only stderr said otherwise. Each has
/// `leftOut` now, there only when not 0, after what it had.
#[test]
fn usage_straight_from_folders_counts_a_session_left_out_in_every_grouping() {
    let dir = homes("v1_basic", "parallel_bg");
    let (codex, claude) = (dir.path().join("codex"), dir.path().join("claude"));
    let cli = Cli::new();
    let usage = |by: &str| -> Value {
        let output = cli.run(&["usage", "--json", "--by", by, "--codex-home", &codex.to_string_lossy(), "--claude-dir", &claude.to_string_lossy()]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}"))
    };
    let groupings = ["run", "agent", "model", "day", "week", "month", "project", "block"];
    let whole: Vec<Value> = groupings.iter().map(|by| usage(by)).collect();
    let subagent = jsonl_files(&claude)
        .into_iter()
        .find(|path| path.to_string_lossy().contains("/subagents/agent-"))
        .unwrap_or_else(|| panic!("no subagent file"));
    make_unopenable(&subagent);
    let members = |report: &Value| -> Vec<String> { report.as_object().into_iter().flat_map(|object| object.keys().cloned()).collect() };
    let damaged: Vec<(Vec<String>, Value)> = groupings.iter().map(|by| usage(by)).map(|report| (members(&report), report["leftOut"].clone())).collect();
    let expected: Vec<(Vec<String>, Value)> = whole
        .iter()
        .map(|report| (members(report).into_iter().chain(["leftOut".to_owned()]).collect(), Value::from(1)))
        .collect();
    assert_eq!(damaged, expected);
    // Not there when nothing was left out.
    assert!(whole.iter().all(|report| report.get("leftOut").is_none()), "{whole:?}");
}

/// Regression: a user of Claude Code alone read "Codex from ~/.codex" in
/// every import's summary, of a folder they never had, as if it had been
/// read; the summary says it is not there.
#[test]
fn the_import_summary_says_a_home_that_is_not_there() {
    let dir = homes("v1_basic", "single_fg");
    let claude = dir.path().join("claude");
    let missing = dir.path().join("no-codex-here");
    let cli = Cli::new();
    let output = cli.command(&["import", "--claude-dir", &claude.to_string_lossy()]).env("CODEX_HOME", &missing).output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned()),
        (
            Some(0),
            format!(
                "imported 1 new session, 0 changed, 0 unchanged (Codex from {} (not there), Claude from {})\n",
                missing.display(),
                claude.display()
            )
        )
    );
}

/// `agentrace ARGS` run by `cli` under `ulimit LIMIT` (a shell's limit on
/// open files).
fn under_ulimit(cli: &Cli, limit: &str, args: &[&str]) -> std::process::Output {
    let shell = ["-c".to_owned(), format!("ulimit {limit} && exec \"$0\" \"$@\"")];
    run_through("sh", &shell, &cli.command(args)).output().unwrap_or_else(|e| panic!("{e}"))
}

/// `command` run by `program` with `args` before it (a shell, `setpriv`),
/// its environment and no input, as `command` would have run.
fn run_through(program: &str, args: &[String], command: &std::process::Command) -> std::process::Command {
    let mut wrapped = std::process::Command::new(program);
    wrapped.args(args).arg(command.get_program()).args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    wrapped.stdin(std::process::Stdio::null());
    wrapped
}

/// A history of more project folders than a shell lets a process hold
/// files open (`ulimit -n`; 256 on macOS): read whole under such a soft
/// limit, which agentrace raises, where the import stopped with `cannot
/// read <a project folder>` and no reason; under a hard limit as low, it
/// stops naming the folder, the reason and what to do.
#[test]
fn many_project_folders_are_read_under_a_low_open_files_limit_or_the_limit_is_said_to_be_why_not() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let session = "8beed115-2652-4f2b-897f-f3849f761b78";
    let transcript = std::fs::read_to_string(
        fixtures().join("claude/single_fg/home_claude/projects/-home-dev-agents-work-single-fg").join(format!("{session}.jsonl")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for project in 0..60 {
        let folder = dir.path().join(format!("claude/projects/-tmp-p{project:02}"));
        std::fs::create_dir_all(&folder).unwrap_or_else(|e| panic!("{e}"));
        let id = format!("00000000-0000-4000-8000-{project:012}");
        std::fs::write(folder.join(format!("{id}.jsonl")), transcript.replace(session, &id)).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::create_dir_all(dir.path().join("codex")).unwrap_or_else(|e| panic!("{e}"));
    let (codex, claude) = (dir.path().join("codex"), dir.path().join("claude"));
    let args = ["import", "--codex-home", codex.to_str().unwrap_or_default(), "--claude-dir", claude.to_str().unwrap_or_default()];
    let said = |output: &std::process::Output| (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned());

    let (code, stderr) = said(&under_ulimit(&Cli::new(), "-Sn 32", &args));
    assert_eq!(
        (code, stderr.lines().last().map(str::to_owned)),
        (Some(0), Some(format!("imported 60 new sessions, 0 changed, 0 unchanged (Codex from {}, Claude from {})", codex.display(), claude.display()))),
        "{stderr}"
    );

    let (code, stderr) = said(&under_ulimit(&Cli::new(), "-n 32", &args));
    let first = stderr.lines().next().unwrap_or_default();
    let folder = first.strip_prefix("error: cannot read ").and_then(|rest| rest.split(": ").next()).unwrap_or_default();
    assert_eq!(
        (code, Path::new(folder).parent() == Some(claude.join("projects").as_path()), first.strip_prefix(&format!("error: cannot read {folder}: "))),
        (
            Some(1),
            true,
            Some("Too many open files (os error 24); this process may open no more files (`ulimit -n` is too low: raise it, e.g. `ulimit -n 4096`, and run the command again)")
        ),
        "{stderr}"
    );
}

/// `command` run as user `nobody` when the tests run as root (root reads
/// a folder of mode 000), else as it is.
fn unprivileged(command: std::process::Command) -> std::process::Command {
    let uid = std::process::Command::new("id").arg("-u").output().map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned()).unwrap_or_default();
    if uid != "0" {
        return command;
    }
    let setpriv = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"].map(str::to_owned);
    run_through("setpriv", &setpriv, &command)
}

/// Opens `path` and every folder above it to everyone, so `nobody` can
/// read and write what the test made.
fn open_to_all(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A folder of the Codex home that cannot be read: its rollouts are left
/// out, and `import` and `usage` say which folder and why, where the walk
/// passed over it without a word (its sessions missing from every
/// report); the other folders are read as before.
#[test]
fn a_codex_folder_that_cannot_be_read_is_said_and_the_others_are_read() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let codex = dir.path().join("codex");
    copy_dir(&fixtures().join("codex/v1_basic/rollouts"), &codex.join("sessions/readable"));
    copy_dir(&fixtures().join("codex/v2_basic/rollouts"), &codex.join("sessions/shut"));
    let claude = dir.path().join("claude");
    std::fs::create_dir_all(&claude).unwrap_or_else(|e| panic!("{e}"));
    let cli = Cli::new();
    for open in [dir.path(), cli.home.path()] {
        open_to_all(open, 0o777);
    }
    let mut folders = vec![codex.clone()];
    while let Some(folder) = folders.pop() {
        open_to_all(&folder, 0o755);
        for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                folders.push(path);
            }
        }
    }
    let shut = codex.join("sessions/shut");
    open_to_all(&shut, 0o000);
    let (codex_arg, claude_arg) = (codex.to_string_lossy().into_owned(), claude.to_string_lossy().into_owned());
    let said = |args: &[&str]| {
        let output = unprivileged(cli.command(args)).output().unwrap_or_else(|e| panic!("{e}"));
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        stderr.lines().filter(|line| !line.starts_with("hint:")).map(str::to_owned).collect::<Vec<_>>()
    };
    let imported = said(&["import", "--codex-home", &codex_arg, "--claude-dir", &claude_arg]);
    let usage = said(&["usage", "--codex-home", &codex_arg, "--claude-dir", &claude_arg, "--json"]);
    open_to_all(&shut, 0o755);
    let cannot = format!("warning: cannot read {}: Permission denied (os error 13)", shut.display());
    assert_eq!(
        (imported, usage.iter().filter(|line| line.starts_with("warning: cannot read")).cloned().collect::<Vec<_>>()),
        (
            vec![
                format!("{cannot}; the rollouts in it are left out of this import"),
                format!("imported 1 new session, 0 changed, 0 unchanged (Codex from {codex_arg}, Claude from {claude_arg})"),
            ],
            vec![format!("{cannot}; the rollouts in it are left out of this report")],
        )
    );
}
