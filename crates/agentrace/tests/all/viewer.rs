//! The viewer's comparison and usage as `agentrace` serves and prints
//! them: `diff` (text and `--json`) between generated runs that differ by
//! one helper, and `/usage` in a real headless Chromium against `agentrace
//! serve`, its figures those of `agentrace usage`.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Stdio};

use agentrace_core::model::{
    Actor, Confidence, Envelope, Event, EventBody, ItemId, Role, RunId, ThreadId, Timestamp,
    TurnId, LOG_VERSION,
};
use agentrace_store::Home;
use agentrace_testkit::browser::Browser;
use serde_json::{json, Value};

use super::support::{capture, Cli};

fn actor(thread: &str) -> Actor {
    if thread == "root" {
        Actor {
            thread_id: Some(ThreadId::from("root")),
            role: Role::Root,
            parent_thread_id: None,
            label: "Main".to_owned(),
            depth: Some(0),
            confidence: Confidence::Provider,
            reason: None,
        }
    } else {
        let number = thread.trim_start_matches("helper-");
        Actor {
            thread_id: Some(ThreadId::from(thread)),
            role: Role::Helper,
            parent_thread_id: Some(ThreadId::from("root")),
            label: format!("Helper {number}"),
            depth: Some(1),
            confidence: Confidence::Provider,
            reason: None,
        }
    }
}

/// Writes run `id`: the root's one turn, in which it spawns `helpers`
/// helpers; each runs one turn with one shell call, the same times for
/// each, all within the root's turn.
pub(crate) fn generated_run(home: &Home, id: &str, helpers: u32) {
    let run_id = RunId::from(id);
    let mut events: Vec<(i64, String, Event)> = vec![(
        0,
        "root".to_owned(),
        Event::TurnStarted {
            turn_id: TurnId::from("root-turn"),
            root_turn_id: None,
        },
    )];
    for helper in 1..=helpers {
        let thread = format!("helper-{helper}");
        events.push((
            10,
            "root".to_owned(),
            Event::AgentSpawned {
                parent_thread_id: ThreadId::from("root"),
                child_thread_id: ThreadId::from(thread.as_str()),
                prompt: Some("look at the parser".to_owned()),
                model: None,
                reasoning_effort: None,
                via: "spawnAgent".to_owned(),
            },
        ));
        events.push((
            20,
            thread.clone(),
            Event::TurnStarted {
                turn_id: TurnId::from(format!("turn-{helper}")),
                root_turn_id: None,
            },
        ));
        events.push((
            30,
            thread.clone(),
            Event::ToolUse {
                tool_kind: "command".to_owned(),
                name: "shell".to_owned(),
                input: "cargo test".to_owned(),
                item_id: Some(ItemId::from(format!("call-{helper}"))),
                turn_id: None,
                process_id: None,
            },
        ));
        events.push((
            40,
            thread.clone(),
            Event::ToolResult {
                tool_kind: "command".to_owned(),
                name: "shell".to_owned(),
                status: Some("completed".to_owned()),
                exit_code: Some(0),
                duration_ms: Some(10),
                output: "ok".to_owned(),
                item_id: Some(ItemId::from(format!("call-{helper}"))),
                turn_id: None,
                receiver_thread_ids: Vec::new(),
            },
        ));
        events.push((
            50,
            thread,
            Event::TurnCompleted {
                turn_id: TurnId::from(format!("turn-{helper}")),
                status: "completed".to_owned(),
                error: None,
                duration_ms: Some(30),
                usage: None,
                last_message: None,
            },
        ));
    }
    events.push((
        100,
        "root".to_owned(),
        Event::TurnCompleted {
            turn_id: TurnId::from("root-turn"),
            status: "completed".to_owned(),
            error: None,
            duration_ms: Some(100),
            usage: None,
            last_message: None,
        },
    ));
    let mut writer = home.create_run(&run_id).unwrap_or_else(|e| panic!("{e}"));
    let mut state = agentrace_core::RunState::new(run_id.clone());
    let mut batch = Vec::new();
    for (index, (at, thread, event)) in events.into_iter().enumerate() {
        let envelope = Envelope {
            version: LOG_VERSION,
            timestamp: Timestamp::from_millis(1_795_993_400_000 + at),
            sequence: index as u64 + 1,
            run_id: run_id.clone(),
            direction: None,
            actor: actor(&thread),
            event: EventBody::Known(event),
            raw: None,
            raw_ref: None,
            raw_unavailable: None,
        };
        state.apply(&envelope);
        batch.push(envelope);
    }
    writer.append(&batch).unwrap_or_else(|e| panic!("{e}"));
    writer
        .write_record(&state.summary())
        .unwrap_or_else(|e| panic!("{e}"));
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn diff_of_a_run_with_itself_has_no_differences_and_with_one_more_helper_exactly_that_helper() {
    let cli = Cli::new();
    let home = Home::at(cli.home.path());
    generated_run(&home, "two-helpers", 2);
    generated_run(&home, "three-helpers", 3);

    let same = json_of(&cli.ok(&["diff", "two-helpers", "two-helpers", "--json"]));
    let more = json_of(&cli.ok(&["diff", "two-helpers", "three-helpers", "--json"]));
    let text = cli.ok(&["diff", "two-helpers", "three-helpers"]);

    let pairs = |comparison: &Value| -> Value {
        json!(comparison["agents"]
            .as_array()
            .map(|agents| agents
                .iter()
                .map(|pair| json!([pair["label"], pair["only"], pair["changed"]]))
                .collect::<Vec<_>>())
            .unwrap_or_default())
    };
    assert_eq!(
        (
            same["differences"].clone(),
            more["differences"].clone(),
            pairs(&more),
            more["agents"][3]["b"].clone(),
            text.lines()
                .any(|line| line == "  Helper 3 (helper)  only in B"),
        ),
        (
            json!([]),
            json!([{"agent": "Helper 3", "role": "helper", "field": "agent", "only": "b", "a": null, "b": "helper-3"}]),
            json!([
                ["Main", null, []],
                ["Helper 1", null, []],
                ["Helper 2", null, []],
                ["Helper 3", "b", []],
            ]),
            json!({"status": "completed", "turns": 1, "toolCalls": {"shell": 1}, "tokens": null, "cost": null, "durationMs": 30, "result": null, "warnings": []}),
            true,
        ),
        "{text}"
    );
    // What people read.
    insta::assert_snapshot!(text);
}

/// `diff` sets each side's warnings beside its figures, judged as `show`
/// judges them (the home's `warnings.json` too): a helper's under its
/// agent, and the run's own (a budget) as a difference of the run; an
/// agent's are not counted again as the run's.
#[test]
fn diff_shows_each_sides_warnings_as_show_judges_them() {
    let cli = Cli::new();
    cli.ingest(&super::support::capture("v1_basic"), &["--run-id", "a"]);
    cli.ingest(&super::support::capture("v1_restart_mid_child"), &["--run-id", "b"]);
    // A token budget run A passes and run B keeps under.
    std::fs::write(cli.home.path().join("warnings.json"), r#"{"maxTokens": 20000}"#).unwrap_or_else(|e| panic!("{e}"));
    let shown = |run: &str| -> Value {
        json!(json_of(&cli.ok(&["show", run, "--json"]))["warnings"].as_array().map(|warnings| warnings.iter().map(|warning| warning["code"].clone()).collect::<Vec<_>>()).unwrap_or_default())
    };
    let diff = json_of(&cli.ok(&["diff", "a", "b", "--json"]));
    let agent = |label: &str, side: &str| diff["agents"].as_array().and_then(|agents| agents.iter().find(|pair| pair["label"] == label)).map(|pair| pair[side]["warnings"].clone());
    let run_differences: Vec<Value> = diff["differences"].as_array().into_iter().flatten().filter(|difference| difference["agent"].is_null() && difference["field"] == "warnings").cloned().collect();
    assert_eq!(
        (diff["a"]["figures"]["warnings"].clone(), diff["b"]["figures"]["warnings"].clone(), agent("Hilbert", "b"), agent("Main", "a"), run_differences),
        (
            shown("a"),
            shown("b"),
            Some(json!(["lost_turn"])),
            Some(json!([])),
            vec![json!({"agent": null, "field": "warnings", "a": ["budget_exceeded"], "b": []})],
        )
    );
    assert_eq!(shown("a"), json!(["budget_exceeded"]));
    let text = cli.ok(&["diff", "a", "b"]);
    let lines: Vec<&str> = text.lines().filter(|line| line.contains("warning")).collect();
    assert_eq!(
        lines,
        vec![
            "    done · 2 turns · tools closeAgent×1 shell×1 spawnAgent×1 wait×1 · 33090 tokens · $? · 1.0s · 1 warning: budget_exceeded",
            "    running · 2 turns · tools spawnAgent×1 wait×1 · 5359 tokens · $? · 6.7s · 1 warning: lost_turn",
            "    B unknown · 1 turn · tools - · ? tokens · $? · 6.5s · 1 warning: lost_turn",
        ],
        "{text}"
    );
}

/// `diff` gives each run the duration `show` and the run list give it:
/// to its root's end, never to the last line logged after it (the
/// session's end, late responses), which made a 1.1 s run 4.2 s.
#[test]
fn diff_gives_each_run_the_duration_show_gives_it() {
    let cli = Cli::new();
    cli.ingest(&capture("real_model_basic"), &["--quiet", "--run-id", "app"]);
    let exec = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex-exec/v2_parallel");
    let home = exec.join("codex-home").to_string_lossy().into_owned();
    cli.ingest(&exec.join("exec.jsonl"), &["--quiet", "--run-id", "exec", "--codex-home", &home]);
    let millis = |value: &Value| serde_json::from_value::<Timestamp>(value.clone()).map(|at| at.millis()).ok();
    let shown = |run: &str| {
        let view = json_of(&cli.ok(&["show", run, "--json"]));
        millis(&view["run"]["startedAt"]).zip(millis(&view["run"]["endedAt"])).map(|(start, end)| json!(end - start))
    };
    let diff = json_of(&cli.ok(&["diff", "app", "exec", "--json"]));
    let figures = |side: &str| Some(diff[side]["figures"]["durationMs"].clone());
    assert_eq!(
        (figures("a"), figures("b")),
        (shown("app"), shown("exec"))
    );
    assert_eq!((shown("app"), shown("exec")), (Some(json!(1131)), Some(json!(568))));
}

/// Ends the server when the test ends, whatever happened.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A home with the rollouts of the Codex capture `capture` imported, and
/// the folder they are read from (its runs reference them: kept as long as
/// the test reads raw frames).
fn imported_codex(capture: &str) -> (Cli, tempfile::TempDir) {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    agentrace_testkit::files::copy_dir(&agentrace_testkit::files::fixtures().join("codex").join(capture).join("rollouts"), &sources.path().join("codex/sessions"));
    let cli = Cli::new();
    cli.ok(&["import", "--quiet", "--codex-home", &sources.path().join("codex").to_string_lossy(), "--claude-dir", &sources.path().join("claude").to_string_lossy()]);
    (cli, sources)
}

/// `serve` of `cli`'s home on a free port, and its address.
fn served(cli: &Cli) -> (Killed, String) {
    let mut server = Killed(cli.command(&["serve", "--bind", "127.0.0.1:0"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| panic!("{e}")));
    let stdout = server.0.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap_or_else(|e| panic!("{e}"));
    let url = first.trim_end().strip_prefix("listening on ").unwrap_or_else(|| panic!("first line: {first:?}")).to_owned();
    (server, url)
}

const READY: &str = "return document.body.getAttribute('data-ready') === 'true';";

const HOSTILE: &str = r#"<img src=x onerror=\"document.title='pwned';window.pwned=1\"><script>document.title='pwned';window.pwned=1</script>"#;

#[test]
fn the_usage_page_charts_what_agentrace_usage_counts_and_shows_agent_labels_as_text() {
    let cli = Cli::new();
    cli.ok(&["samples"]);
    let mut server = Killed(
        cli.command(&["serve", "--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let stdout = server
        .0
        .stdout
        .take()
        .unwrap_or_else(|| panic!("no stdout"));
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .unwrap_or_else(|e| panic!("{e}"));
    let url = first
        .trim_end()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .to_owned();
    let browser = Browser::start();

    // The bundled samples, as the README shows them.
    browser.resize(1280, 1000);
    browser.goto(&format!("{url}/usage"));
    browser.wait_for("the usage page", READY);
    let png = browser.screenshot();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    if std::env::var_os("AGENTRACE_UPDATE_SCREENSHOTS").is_some() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/viewer-usage.png");
        std::fs::write(&path, &png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }

    // A helper whose name is hostile HTML (in a session the samples do not
    // have: `usage` counts a session once).
    let text = std::fs::read_to_string(capture("v1_parallel")).unwrap_or_else(|e| panic!("{e}"));
    let edited = text.replace("\"Sagan\"", &format!("\"{HOSTILE}\""));
    assert_ne!(edited, text);
    let file = cli.home.path().join("hostile.jsonl");
    std::fs::write(&file, edited).unwrap_or_else(|e| panic!("{e}"));
    cli.ingest(&file, &["--run-id", "hostile", "--quiet"]);

    let by_day = json_of(&cli.ok(&["usage", "--by", "day", "--json"]));
    browser.goto(&format!("{url}/usage"));
    browser.wait_for("the usage page", READY);
    let days: Value = by_day["days"]
        .as_object()
        .map(|days| {
            days.iter()
                .map(|(day, counters)| (day.clone(), counters["totalTokens"].clone()))
                .collect::<serde_json::Map<_, _>>()
                .into()
        })
        .unwrap_or_default();
    let charted = browser.script("const days = {}; for (const r of document.querySelectorAll('#chart-tokens rect[data-day]')) days[r.getAttribute('data-day')] = (days[r.getAttribute('data-day')] || 0) + Number(r.getAttribute('data-value')); return days;");
    let shown = HOSTILE.replace("\\\"", "\"");
    let utc_days = days.clone();
    assert_eq!(
        (
            charted,
            browser.script("return Number(document.getElementById('usage-totals').getAttribute('data-tokens'));"),
            browser.script("return Array.from(document.querySelectorAll('#top-agents tr[data-label]')).some(r => r.querySelector('.label').textContent === arguments[0] && r.getAttribute('data-label') === arguments[0]);".replace("arguments[0]", &serde_json::to_string(&shown).unwrap_or_default()).as_str()),
            browser.script("return [document.title, window.pwned === undefined, document.querySelectorAll('main img, main script').length];"),
        ),
        (
            days,
            by_day["totals"]["totalTokens"].clone(),
            json!(true),
            json!(["agentrace", true, 0]),
        )
    );

    // A reader in Tokyo gets Tokyo's days, as `usage --by day --tz` counts
    // them (the captures ran about 23:00 UTC: the next day there).
    let tokyo_days = json_of(&cli.ok(&["usage", "--by", "day", "--json", "--tz", "Asia/Tokyo"]));
    let in_tokyo = Browser::start_in_zone("Asia/Tokyo");
    in_tokyo.goto(&format!("{url}/usage"));
    in_tokyo.wait_for("the usage page", READY);
    let day_totals = |by_day: &Value| -> Value {
        by_day["days"]
            .as_object()
            .map(|days| days.iter().map(|(day, counters)| (day.clone(), counters["totalTokens"].clone())).collect::<serde_json::Map<_, _>>().into())
            .unwrap_or_default()
    };
    let charted = in_tokyo.script("const days = {}; for (const r of document.querySelectorAll('#chart-tokens rect[data-day]')) days[r.getAttribute('data-day')] = (days[r.getAttribute('data-day')] || 0) + Number(r.getAttribute('data-value')); return days;");
    assert_ne!(day_totals(&tokyo_days), utc_days);
    assert_eq!(
        (charted, in_tokyo.script("return document.getElementById('usage-totals').textContent.endsWith('(Asia/Tokyo)');")),
        (day_totals(&tokyo_days), json!(true))
    );
}

/// The run list's badges set an info-level note (`replayed_history`) apart
/// from a problem: a blue `note` badge, not a `warn` one.
#[test]
fn the_run_list_shows_a_note_apart_from_a_warning() {
    let (cli, _sources) = imported_codex("v1_basic");
    cli.ingest(&capture("v1_restart_mid_child"), &["--run-id", "stopped", "--quiet"]);
    let (_server, url) = served(&cli);
    let browser = Browser::start();
    browser.goto(&url);
    browser.wait_for("the run list", "return document.querySelectorAll('#runs tbody tr[data-run-id]').length === 2;");
    assert_eq!(
        browser.script("return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id] td.warnings .badge')).map(b => [b.closest('tr').getAttribute('data-run-id') === 'stopped', b.className, b.textContent]).sort();"),
        json!([[false, "badge note", "replayed_history"], [true, "badge warn", "lost_turn"]])
    );
}

/// The viewer's search hits (and `search`'s, which cut them the same way)
/// showed an imported Codex tool's JSON as written: braces, quotes and
/// escapes (`close_agent {"previous_status":{"completed":"CHILD A DONE…`).
/// A snippet is cut from the text as a reader reads it, the JSON said as
/// its keys and values; text with no JSON in it reads as before.
#[test]
fn search_hits_read_as_text_not_as_the_json_they_came_from() {
    let (cli, _sources) = imported_codex("v1_basic");
    let (_server, url) = served(&cli);
    let browser = Browser::start();
    browser.goto(&url);
    browser.wait_for("the run list", "return document.body.getAttribute('data-ready') === 'true';");
    browser.type_into("#run-search", "DONE");
    browser.wait_for("the hits", "return document.querySelectorAll('#search-hits li.hit').length === 5;");
    let shown = browser.script("return Array.from(document.querySelectorAll('#search-hits li.hit')).map(hit => [Number(hit.getAttribute('data-seq')), hit.querySelector('.snippet').textContent]);");
    let printed: Vec<Value> = json_of(&cli.ok(&["search", "DONE", "--json"]))["hits"]
        .as_array()
        .map(|hits| hits.iter().map(|hit| json!([hit["sequence"], hit["snippet"]])).collect())
        .unwrap_or_default();
    let expected = json!([
        [51, "ROOT [DONE]: all sub-agents finished; final answer from the root agent."],
        [47, "…CHILD A [DONE]: the command printed hello-from-child-A."],
        [43, "…CHILD A [DONE]: the command printed hello-from-child-A.\n</subagent_notification>"],
        [41, "…CHILD A [DONE]: the command printed hello-from-child-A., timed_out…"],
        [35, "CHILD A [DONE]: the command printed hello-from-child-A."],
    ]);
    assert_eq!((shown, Value::Array(printed)), (expected.clone(), expected));
}

/// An imported Codex child's rollout starts with a copy of its parent's
/// history: its `replayed_history` note, in the run page's warnings and in
/// the timeline, and the reason beside each copied line, named both agents
/// by their raw thread ids (`the rollout of 01a2298e-96b3-… starts with a
/// copy of 01a2298e-95f7-…'s history`) where the rest of the page names
/// them by label. They name them by label (the note's whole text, ids and
/// all, in its title).
#[test]
fn the_run_page_names_the_agents_of_a_replayed_history_by_their_labels() {
    let (cli, _sources) = imported_codex("real_model_nested");
    let (_server, url) = served(&cli);
    let browser = Browser::start();
    browser.goto(&format!("{url}/runs/codex-01a2298e-95f7-7860-9d07-bbdef83673ed"));
    browser.wait_for("the run page", "return document.body.getAttribute('data-ready') === 'true';");
    // The notes in the warnings and in the timeline, and the reasons
    // beside the copied lines (each once).
    let shown = browser.script(
        "return [Array.from(document.querySelectorAll('#warning-list li[data-code=replayed_history]')).map(li => li.textContent).sort(), Array.from(document.querySelectorAll('#timeline .event[data-type=warning] .text')).map(text => text.textContent).sort(), Array.from(new Set(Array.from(document.querySelectorAll('#timeline .event[data-type=replayed] .reason')).map(reason => reason.textContent))).sort()];",
    );
    let notes = [
        "the rollout of /root/child_a starts with a copy of Main's history; the copy is not attributed to /root/child_a and its tokens are counted once, in Main",
        "the rollout of /root/child_a/child_g starts with a copy of /root/child_a's history; the copy is not attributed to /root/child_a/child_g and its tokens are counted once, in /root/child_a",
    ];
    assert_eq!(
        shown,
        json!([
            notes.iter().map(|note| format!("inforeplayed_history {note}")).collect::<Vec<_>>(),
            notes.iter().map(|note| format!("replayed_history: {note}")).collect::<Vec<_>>(),
            ["replayed history of /root/child_a", "replayed history of Main"],
        ])
    );
}
