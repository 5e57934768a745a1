//! The viewer in a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`, installed by `scripts/install-browser`), driven over
//! WebDriver by a minimal client of our own (a handful of W3C endpoints over
//! `ureq`, on loopback, every call bounded in time). Every process started
//! here is ended by a guard, also when an assertion fails.

use std::time::Duration;

use agentrace_server::Options;
use agentrace_testkit::browser::Browser;
use serde_json::{json, Value};

use agentrace_core::recorder::SourcePart;

use super::support::{capture, push, record_generated_run, Scratch, Transcripts};

/// The server on a free loopback port, on its own runtime (dropped with it).
struct Served {
    url: String,
    _runtime: tokio::runtime::Runtime,
}

fn serve(scratch: &Scratch) -> Served {
    serve_with(scratch, Options::default())
}

/// [`serve`] with `options` (its poll made short).
fn serve_with(scratch: &Scratch, options: Options) -> Served {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let options = Options {
        poll: Duration::from_millis(50),
        ..options
    };
    let home = scratch.home();
    let (address, server) = runtime
        .block_on(agentrace_server::bind(
            "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")),
            home,
            options,
        ))
        .unwrap_or_else(|e| panic!("bind: {e}"));
    runtime.spawn(server);
    Served {
        url: format!("http://{address}"),
        _runtime: runtime,
    }
}

/// Options whose usage page is `report` (what `agentrace usage --json`
/// would count), whatever the home holds.
fn usage_of(report: serde_json::Value) -> Options {
    Options {
        usage: Some(agentrace_server::UsageSource(std::sync::Arc::new(move |_zone| Ok(report.clone())))),
        ..Options::default()
    }
}

const READY: &str = "return document.body.getAttribute('data-ready') === 'true';";

#[test]
fn the_viewer_shows_the_tree_filters_to_helpers_expands_raw_json_and_searches() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let served = serve(&scratch);
    let browser = Browser::start();

    browser.goto(&served.url);
    browser.wait_for(
        "the run list",
        "return document.querySelectorAll('#runs tbody tr').length === 1;",
    );
    assert_eq!(browser.text("#runs tbody tr td a"), "basic");

    // Every event, bookkeeping included (`?events=all`), as the counts below.
    browser.goto(&format!("{}/runs/basic?events=all", served.url));
    browser.wait_for("the run page", READY);
    browser.wait_for(
        "the timeline",
        "return document.querySelectorAll('#timeline .event').length === 89;",
    );
    assert_eq!(
        browser.script("return Array.from(document.querySelectorAll('#tree .agent > .label')).map(n => n.textContent);"),
        json!(["Main", "Dewey"])
    );
    assert_eq!(browser.text("#run-status"), "done");
    // Its time, tokens and cost, as the API gives them and `show` prints
    // them (v1_basic's model has no price).
    let run = api_json(&served, "/api/runs/basic")["run"].clone();
    assert_eq!(
        (run["startedAt"].clone(), run["endedAt"].clone(), run["tokens"]["totalTokens"].clone(), run["costStatus"].clone()),
        (json!("2026-11-29T23:03:20.000Z"), json!("2026-11-29T23:03:29.460Z"), json!(33090), json!("unknown"))
    );
    let tokens = &run["tokens"];
    assert_eq!(
        [browser.text("#run-time"), browser.text("#run-tokens"), browser.text("#run-cost")],
        [
            "started 2026-11-29T23:03:20.000Z, ended 2026-11-29T23:03:29.460Z (9.5 s)".to_owned(),
            format!(
                "33090 total ({} in, {} cached, {} out, {} reasoning)",
                tokens["inputTokens"], tokens["cachedInputTokens"], tokens["outputTokens"], tokens["reasoningOutputTokens"]
            ),
            "$? (no price for its models)".to_owned(),
        ]
    );
    assert_eq!(
        browser
            .text("#run-source")
            .split(',')
            .next()
            .unwrap_or_default(),
        "Main (root)"
    );
    // Dewey's work nests under the spawn that started it.
    assert_eq!(
        browser.script("return document.querySelector('.lane[data-lane=\"01a2298c-947a-75b0-8b49-6a2e1016272b\"]').querySelectorAll('.event').length > 10;"),
        json!(true)
    );

    browser.click("#filters button[data-actor=helpers]");
    browser.wait_for(
        "the helpers filter",
        "const rows = document.querySelectorAll('#timeline .event'); return rows.length > 10 && rows.length < 89;",
    );
    assert_eq!(
        browser.script("return Array.from(document.querySelectorAll('#timeline .event .actor')).every(b => b.classList.contains('role-helper') && b.textContent === 'Dewey');"),
        json!(true)
    );

    browser.click("#timeline .event .raw-toggle");
    let raw = browser.text("#timeline .event pre.raw");
    let parsed: Value =
        serde_json::from_str(&raw).unwrap_or_else(|e| panic!("raw is not JSON ({e}): {raw}"));
    assert_eq!(
        parsed["params"]["threadId"],
        json!("01a2298c-947a-75b0-8b49-6a2e1016272b")
    );

    browser.click("#filters button[data-actor=all]");
    browser.type_into("#search", "hello-from-child-A");
    // The 22 envelopes whose JSON holds the text (the server's search), no others.
    browser.wait_for(
        "the search",
        "return document.querySelectorAll('#timeline .event').length === 22;",
    );
    assert_eq!(
        browser.script("return document.getElementById('status-line').textContent;"),
        json!("22 events shown")
    );
}

#[test]
fn an_agent_message_with_html_is_shown_as_text_and_executes_nothing() {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let hostile = r#"<img src=x onerror=\"document.title='pwned';window.pwned=1\"><script>document.title='pwned';window.pwned=1</script>"#;
    let edited = text.replace(
        "ROOT DONE: all sub-agents finished; final answer from the root agent.",
        hostile,
    );
    assert_ne!(edited, text);
    scratch.record("hostile", edited.as_bytes(), true);
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/hostile?events=all", served.url));
    browser.wait_for("the run page", READY);
    browser.wait_for(
        "the timeline",
        "return document.querySelectorAll('#timeline .event').length > 80;",
    );
    let shown = hostile.replace("\\\"", "\"");
    assert_eq!(browser.text("#run-result"), shown);
    assert_eq!(
        browser.script("return [document.title, window.pwned === undefined, document.querySelectorAll('main img, main script').length];"),
        json!(["agentrace", true, 0])
    );
}

/// Claude's `single_bg` session recorded as run `bg` through the root's
/// first answer (its turn's end), while its background helper works on,
/// with its record as a recording rewrites it: the session, where it was
/// cut, and the writer and recorder to go on with.
fn background_helper_at_work(scratch: &Scratch) -> (Transcripts, usize, agentrace_store::RunWriter, agentrace_core::Recorder) {
    use agentrace_core::model::RunId;
    let session = Transcripts::of("single_bg");
    let cut = session
        .lines
        .iter()
        .position(|(part, line, _)| matches!(part, SourcePart::Main) && line.contains("\"stop_reason\":\"end_turn\""))
        .unwrap_or_else(|| panic!("the root never answers"))
        + 1;
    let mut writer = scratch.home().create_run(&RunId::from("bg")).unwrap_or_else(|e| panic!("{e}"));
    let mut recorder = agentrace_core::Recorder::new(RunId::from("bg"), agentrace_core::recorder::Format::ClaudeTranscript);
    writer.append(&recorder.start(session.lines[0].2)).unwrap_or_else(|e| panic!("{e}"));
    Transcripts::feed(&session.lines[..cut], &mut writer, &mut recorder);
    writer.write_record(&recorder.state().summary()).unwrap_or_else(|e| panic!("{e}"));
    (session, cut, writer, recorder)
}

/// A Claude session whose root's turn ended while its background helper
/// works on: the run reads `done`, yet the page is live (its badge shown,
/// its stream followed), so the helper's end arrives without a reload and
/// the badge goes once the session is over. It was taken for over: no
/// badge, no stream, the helper `working` until the page was reloaded.
#[test]
fn a_page_follows_a_background_helper_after_its_roots_turn_ended() {
    let scratch = Scratch::new();
    let (session, cut, mut writer, mut recorder) = background_helper_at_work(&scratch);
    let served = serve(&scratch);
    let browser = Browser::start();
    // The runs list says the root's answer is not the session's last word.
    let listed_states = "return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id=\"bg\"] td:nth-child(3) .badge')).map(n => n.textContent);";
    browser.goto(&format!("{}/", served.url));
    browser.wait_for("the runs list", "return document.querySelector('#runs tbody tr[data-run-id=\"bg\"]') !== null;");
    assert_eq!(browser.script(listed_states), json!(["done", "helpers working"]));
    browser.goto(&format!("{}/runs/bg", served.url));
    browser.wait_for("the run page", READY);
    let states = "return Array.from(document.querySelectorAll('#tree .agent > .state')).map(n => n.textContent);";
    assert_eq!(
        (browser.text("#run-status"), browser.script("return document.getElementById('live').hidden;"), browser.script(states)),
        ("done".to_owned(), json!(false), json!(["completed", "working"]))
    );

    Transcripts::feed(&session.lines[cut..], &mut writer, &mut recorder);
    let last = recorder.finish();
    writer.append(&last).unwrap_or_else(|e| panic!("{e}"));
    writer.write_record(&recorder.state().summary()).unwrap_or_else(|e| panic!("{e}"));
    browser.wait_for("the session's end", "return document.getElementById('live').hidden;");
    assert_eq!(
        (browser.text("#run-status"), browser.script(states)),
        ("done".to_owned(), json!(["completed", "ended · succeeded"]))
    );
    browser.goto(&format!("{}/", served.url));
    browser.wait_for("the runs list", "return document.querySelector('#runs tbody tr[data-run-id=\"bg\"]') !== null;");
    assert_eq!(browser.script(listed_states), json!(["done"]));
}

/// The live page shows every session with its agents as `top` does, the
/// live ones first: a Claude session whose root's turn ended while its
/// background helper works on reads `helpers working`, the root `waiting
/// on helpers` and the helper `working`, with how long it has been silent;
/// once the helper ends, the page says so without a reload, and "live
/// only" then hides the session. An ended Codex session shows how each of
/// its agents ended.
#[test]
fn the_live_page_shows_what_every_agent_of_every_session_is_doing_and_follows_it() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let (session, cut, mut writer, mut recorder) = background_helper_at_work(&scratch);
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/live", served.url));
    browser.wait_for("the live page", READY);
    let sessions = "return Array.from(document.querySelectorAll('#live-sessions [data-live-session]')).map(s => [s.getAttribute('data-live-session'), s.getAttribute('data-status'), Array.from(s.querySelectorAll('tr[data-agent-row]')).map(r => [r.getAttribute('data-depth'), r.children[0].textContent, r.getAttribute('data-state'), r.children[5].textContent !== '', r.getAttribute('data-silent')])]);";
    let ended_basic = json!(["basic", "done", [["0", "Main", "ended done", false, "false"], ["1", "Dewey", "ended succeeded", false, "false"]]]);
    assert_eq!(
        (browser.script(sessions), browser.text("#live-summary")),
        (
            // Its last word is days old: quiet past the limit, maybe stuck.
            json!([["bg", "helpers working", [["0", "Main", "waiting on helpers", false, "false"], ["1", "Echo task A [general-purpose]", "working", true, "true"]]], ended_basic]),
            "1 live, 1 ended".to_owned()
        )
    );
    browser.script("window.notReloaded = true; return true;");
    Transcripts::feed(&session.lines[cut..], &mut writer, &mut recorder);
    let last = recorder.finish();
    writer.append(&last).unwrap_or_else(|e| panic!("{e}"));
    writer.write_record(&recorder.state().summary()).unwrap_or_else(|e| panic!("{e}"));
    browser.wait_for("the session's end on the live page", "const s = document.querySelector('[data-live-session=\"bg\"]'); return s !== null && s.getAttribute('data-live') === 'false';");
    assert_eq!(
        (browser.script(sessions), browser.text("#live-summary"), browser.script("return window.notReloaded === true;")),
        (
            json!([ended_basic, ["bg", "done", [["0", "Main", "ended done", false, "false"], ["1", "Echo task A [general-purpose]", "ended succeeded", false, "false"]]]]),
            "0 live, 2 ended".to_owned(),
            json!(true)
        )
    );
    browser.script("const f = document.getElementById('live-filter'); f.value = 'live'; f.dispatchEvent(new Event('change')); return true;");
    assert_eq!((browser.script(sessions), browser.text("#live-sessions")), (json!([]), "No session is live.".to_owned()));
}

/// An imported run whose source transcript is gone (Claude Code's cleanup)
/// still shows its events; its raw view says why the frame is missing,
/// where it showed `null`.
#[test]
fn the_raw_view_of_an_imported_event_whose_source_is_gone_says_why() {
    let scratch = Scratch::new();
    super::support::record_generated_run_as(&scratch, "imported", 50, None, true);
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/imported?events=all", served.url));
    browser.wait_for("the run page", READY);
    browser.click("#timeline .event .raw-toggle");
    assert_eq!(
        browser.text("#timeline .event pre.raw"),
        "raw frame unavailable: source missing (/sources/session-1.jsonl); the event above was kept at import"
    );
}

/// The viewer's run list gives a run's tokens as `agentrace runs` does,
/// the same list of figures as its unit test
/// (`token_figures_are_rounded_as_the_viewers_run_list_rounds_them`): at a
/// unit's edge both printed `10.0k` beside `11k`, and `1000k`.
#[test]
fn the_viewers_token_figures_are_those_of_agentrace_runs() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/", served.url));
    browser.wait_for("the run list", "return document.getElementById('runs-total').textContent !== '';");
    assert_eq!(
        browser.script("return [573, 999, 1050, 5359, 9949, 9950, 9999, 10819, 19871, 67515, 999499, 999500, 999600, 1234567, 9949999, 9960000, 12500000].map(fmtTokens);"),
        json!(["573", "999", "1.1k", "5.4k", "9.9k", "10k", "10k", "11k", "20k", "68k", "999k", "1.0M", "1.0M", "1.2M", "9.9M", "10M", "13M"])
    );
}

/// The run list is in the reader's time zone: its start times, its
/// heading, and the days its `since` filter names (the API's `tz=`). The
/// run started at 23:03 UTC on 2026-11-29, the next morning in Tokyo.
#[test]
fn the_run_list_shows_start_times_and_days_in_the_readers_time_zone() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let served = serve(&scratch);
    let listed = |browser: &Browser, query: &str| -> Value {
        browser.goto(&format!("{}/{query}", served.url));
        browser.wait_for("the run list", "return document.getElementById('runs-total').textContent !== '';");
        browser.script("const column = Array.from(document.querySelectorAll('#runs thead th')).findIndex(th => th.textContent.startsWith('started')); return [document.querySelectorAll('#runs thead th')[column].textContent, Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(r => r.children[column].textContent)];")
    };
    let tokyo = Browser::start_in_zone("Asia/Tokyo");
    let utc = Browser::start();
    assert_eq!(
        [listed(&tokyo, ""), listed(&tokyo, "?since=2026-11-30"), listed(&utc, ""), listed(&utc, "?since=2026-11-30")],
        [
            json!(["started (Asia/Tokyo)", ["2026-11-30 08:03"]]),
            json!(["started (Asia/Tokyo)", ["2026-11-30 08:03"]]),
            json!(["started (UTC)", ["2026-11-29 23:03"]]),
            json!(["started (UTC)", []]),
        ]
    );
    // The search box finds text within the list's filters: on the reader's
    // days.
    let searched = |browser: &Browser| -> Value {
        browser.goto(&format!("{}/?since=2026-11-30", served.url));
        browser.wait_for("the run list", "return document.getElementById('runs-total').textContent !== '';");
        browser.type_into("#run-search", "hello-from-child-A");
        browser.wait_for("the hits", "return document.querySelectorAll('#search-hits li').length > 0;");
        browser.script("return Array.from(document.querySelectorAll('#search-hits li')).map(li => li.getAttribute('data-run-id') || li.textContent);")
    };
    // A run's page gives its times in the reader's zone, with the offset.
    tokyo.goto(&format!("{}/runs/basic", served.url));
    tokyo.wait_for("the run page", READY);
    assert_eq!(tokyo.text("#run-time"), "started 2026-11-30T08:03:20.000+09:00, ended 2026-11-30T08:03:29.460+09:00 (9.5 s)");
    let tokyo_hits = searched(&tokyo);
    assert_eq!(
        (tokyo_hits.as_array().map(|hits| hits.iter().all(|hit| hit == "basic") && !hits.is_empty()), searched(&utc)),
        (Some(true), json!(["no match"]))
    );
}

/// The run list follows what goes on while it is looked at: a run being
/// recorded turns `done` on the list, without a reload, once it ends.
#[test]
fn the_run_list_follows_a_run_to_its_end_without_a_reload() {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&str> = text.lines().collect();
    let (mut writer, mut recorder) = scratch.record("live", lines[..30].join("\n").as_bytes(), false);
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/", served.url));
    let row = "const row = document.querySelector('#runs tbody tr[data-run-id=\"live\"]');";
    let status = format!("{row} return row ? row.children[2].textContent : null;");
    browser.wait_for("the run list", &format!("{row} return row !== null;"));
    assert_eq!(browser.script(&status), json!("running"));
    browser.script("window.notReloaded = true; return true;");
    push(&mut writer, &mut recorder, lines[30..].join("\n").as_bytes());
    let last = recorder.finish();
    writer.append(&last).unwrap_or_else(|e| panic!("{e}"));
    browser.wait_for("the run to turn done on the list", &format!("{row} return row !== null && row.children[2].textContent === 'done';"));
    assert_eq!(browser.script("return window.notReloaded === true;"), json!(true));
}

#[test]
fn live_updates_appear_while_a_run_is_being_recorded() {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&str> = text.lines().collect();
    let (mut writer, mut recorder) =
        scratch.record("live", lines[..30].join("\n").as_bytes(), false);
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/live?events=all", served.url));
    browser.wait_for("the run page", READY);
    assert_eq!(browser.text("#run-status"), "running");
    let before = browser.script("return document.querySelectorAll('#timeline .event').length;");
    browser.wait_for(
        "the waterfall",
        "return document.getElementById('waterfall').hasAttribute('data-draw-ms');",
    );
    let bars = "return [document.querySelectorAll('#waterfall [data-bar]').length, document.querySelectorAll('#waterfall [data-bar][data-end-ms=\"\"]').length];";
    let bars_before = browser.script(bars);

    push(
        &mut writer,
        &mut recorder,
        lines[30..].join("\n").as_bytes(),
    );
    let last = recorder.finish();
    writer.append(&last).unwrap_or_else(|e| panic!("{e}"));

    browser.wait_for(
        "the live status",
        "return document.getElementById('run-status').textContent === 'done';",
    );
    browser.wait_for(
        "the live rows",
        "return document.querySelectorAll('#timeline .event').length === 89;",
    );
    // The waterfall grew over the stream: more bars, the open ones closed.
    browser.wait_for(
        "the waterfall to grow",
        &format!("const n = document.querySelectorAll('#waterfall [data-bar]').length; return n > {} && document.querySelectorAll('#waterfall [data-bar][data-end-ms=\"\"]').length === 0;", bars_before[0]),
    );
    assert!(
        bars_before[1].as_u64().is_some_and(|open| open > 0),
        "bars before: {bars_before}"
    );
    assert_eq!(
        (
            before.as_u64().is_some_and(|n| n < 89),
            browser.text("#run-result")
        ),
        (
            true,
            "ROOT DONE: all sub-agents finished; final answer from the root agent.".to_owned()
        )
    );
}

/// The events of the generated large run.
const LARGE_RUN_EVENTS: u64 = 100_000;

/// The one event of the large run whose text holds [`NEEDLE`], near its end.
const NEEDLE_SEQUENCE: u64 = 99_990;

const NEEDLE: &str = "needle-in-the-haystack";

const ROWS: &str = "return document.querySelectorAll('#timeline .event').length;";

/// `[rows, lowest sequence, highest sequence]` of the rows on the page.
const SHOWN_SEQUENCES: &str = "const seqs = Array.from(document.querySelectorAll('#timeline .event')).map(r => Number(r.getAttribute('data-seq'))); return [seqs.length, Math.min(...seqs), Math.max(...seqs)];";

#[test]
fn a_run_of_100000_events_shows_at_most_5000_rows_in_pages_that_scroll_filter_and_search() {
    let scratch = Scratch::new();
    record_generated_run(
        &scratch,
        "large",
        LARGE_RUN_EVENTS,
        Some((NEEDLE_SEQUENCE, NEEDLE)),
    );
    let served = serve(&scratch);
    let browser = Browser::start();
    // Generous bounds: this proves the page answers at all on a large run,
    // never how fast (speed belongs to the benchmark).
    let bound = Duration::from_secs(60);

    browser.goto(&format!("{}/runs/large", served.url));
    browser.wait_up_to(bound, "the run page", READY);
    browser.wait_up_to(
        bound,
        "the first page of rows",
        "return document.querySelectorAll('#timeline .event').length === 500;",
    );
    assert_eq!(
        (
            browser.script("return document.querySelector('#timeline .event').getAttribute('data-seq');"),
            browser.script("return Array.from(document.querySelectorAll('#tree .agent > .label')).map(n => n.textContent);"),
            browser.text("#status-line"),
        ),
        (
            json!("1"),
            json!(["Main", "Helper 1", "Helper 2", "Helper 3", "Helper 4"]),
            "500 events shown · more below".to_owned()
        )
    );

    // The waterfall: a lane per agent, the 9,999 calls (one every ten
    // events but where the needle is) drawn as few bars, those narrower
    // than a pixel merged, every call counted in one.
    browser.wait_up_to(
        bound,
        "the waterfall",
        "return document.querySelectorAll('#waterfall [data-bar]').length > 0;",
    );
    assert_eq!(
        browser.script("const bars = Array.from(document.querySelectorAll('#waterfall [data-bar]')); return [document.querySelectorAll('#waterfall [data-lane]').length, bars.length <= 100, bars.reduce((sum, b) => sum + Number(b.getAttribute('data-count')), 0)];"),
        json!([5, true, 9999])
    );

    // Scrolling to the end of what is shown fetches the next page, and only it.
    for shown in (1000..=5000).step_by(500) {
        browser.script("document.getElementById('more').scrollIntoView(); return true;");
        browser.wait_up_to(
            bound,
            "the next page of rows",
            &format!("return document.querySelectorAll('#timeline .event').length === {shown};"),
        );
    }
    assert_eq!(
        (browser.script(ROWS), browser.text("#status-line")),
        (json!(5000), "5000 events shown · more below".to_owned())
    );
    // Past 5,000 rows the oldest page leaves the page as the next arrives.
    browser.script("document.getElementById('more').scrollIntoView(); return true;");
    browser.wait_up_to(
        bound,
        "the oldest rows to go",
        "return !document.getElementById('earlier').hidden;",
    );
    assert_eq!(
        (
            browser.script(SHOWN_SEQUENCES),
            browser.text("#earlier-text"),
        ),
        (
            json!([5000, 501, 5500]),
            "Events up to #500 are no longer shown.".to_owned()
        )
    );
    browser.click("#back-to-start");
    browser.wait_up_to(
        bound,
        "the start again",
        "return document.getElementById('earlier').hidden && document.querySelectorAll('#timeline .event').length === 500;",
    );
    assert_eq!(browser.script(SHOWN_SEQUENCES), json!([500, 1, 500]));

    browser.click("#filters button[data-actor=helpers]");
    browser.wait_up_to(
        bound,
        "the helpers filter",
        "const rows = document.querySelectorAll('#timeline .event'); return rows.length === 500 && Array.from(rows).every(r => r.querySelector('.actor').classList.contains('role-helper'));",
    );

    // The one matching event lies past the server's scan budget of one
    // request: the page keeps asking until it is found.
    browser.click("#filters button[data-actor=all]");
    browser.type_into("#search", NEEDLE);
    browser.wait_up_to(
        bound,
        "the search",
        &format!("const rows = document.querySelectorAll('#timeline .event'); return rows.length === 1 && rows[0].getAttribute('data-seq') === '{NEEDLE_SEQUENCE}';"),
    );
    browser.wait_up_to(
        bound,
        "the end of the search",
        "return document.getElementById('status-line').textContent === '1 event shown';",
    );
    assert_eq!(browser.script(ROWS), json!(1));
}

/// What the API answers at `path`, bounded in time.
fn api_json(served: &Served, path: &str) -> Value {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let body = agent
        .get(format!("{}{path}", served.url))
        .call()
        .and_then(|mut response| response.body_mut().read_to_string())
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}"))
}

/// Every event of a run, from the API (one request: the captures are small).
fn all_events(served: &Served, id: &str) -> Vec<Value> {
    let page = api_json(served, &format!("/api/runs/{id}/events?limit=1000"));
    assert!(page["next"].is_null(), "more than one page of events");
    page["events"].as_array().cloned().unwrap_or_default()
}

/// The bars the events say there are, worked out here from the events
/// themselves: `(kind, thread, start ms, end ms or null, sequence)`, by
/// sequence. A tool call (a wait when its name is `wait`) runs from its
/// `tool_use` to the `tool_result` of the same item and thread; a turn from
/// its `turn_started` to the `turn_completed` of the same turn.
fn expected_bars(events: &[Value]) -> Vec<(String, String, i64, Value, u64)> {
    // The axis starts at the earliest of the events it draws.
    let drawn = [
        "turn_started",
        "turn_completed",
        "tool_use",
        "tool_result",
        "agent_spawned",
        "agent_wait_started",
    ];
    let start = events
        .iter()
        .filter(|event| {
            drawn
                .iter()
                .any(|kind| event["event"]["type"] == json!(kind))
        })
        .filter_map(|event| event["timestamp"].as_str().map(parse_time))
        .min()
        .unwrap_or(0);
    let mut bars = Vec::new();
    for (index, event) in events.iter().enumerate() {
        let kind = event["event"]["type"].as_str().unwrap_or_default();
        let thread = event["actor"]["threadId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let at = event["timestamp"].as_str().map(parse_time).unwrap_or(0) - start;
        let (bar_kind, end_type, key) = match kind {
            "tool_use" => {
                let name = event["event"]["name"].as_str().unwrap_or_default();
                (
                    if name == "wait" { "wait" } else { "tool" },
                    "tool_result",
                    "itemId",
                )
            }
            "turn_started" => ("turn", "turn_completed", "turnId"),
            _ => continue,
        };
        if thread.is_empty() {
            continue;
        }
        let id = &event["event"][key];
        let end = events[index + 1..]
            .iter()
            .find(|later| {
                later["event"]["type"] == json!(end_type)
                    && later["actor"]["threadId"] == json!(thread)
                    && later["event"][key] == *id
            })
            .map_or(Value::Null, |later| {
                json!(later["timestamp"].as_str().map(parse_time).unwrap_or(0) - start)
            });
        bars.push((
            bar_kind.to_owned(),
            thread,
            at,
            end,
            event["sequence"].as_u64().unwrap_or(0),
        ));
    }
    bars
}

/// The bars the page stands for, by sequence: each shown bar as itself,
/// and a merged one (`count` > 1, bars narrower than a pixel) as the
/// `count` bars of its lane and kind it covers, when it starts with the
/// first's start and event and ends with the last's end (else as itself,
/// which then matches nothing expected).
fn covered(expected: &[(String, String, i64, Value, u64)], shown: &Value) -> Value {
    let mut out = Vec::new();
    for bar in shown.as_array().cloned().unwrap_or_default() {
        let count = bar[5].as_u64().unwrap_or(0) as usize;
        let group: Vec<&(String, String, i64, Value, u64)> = expected
            .iter()
            .filter(|(kind, thread, ..)| bar[0] == json!(kind) && bar[1] == json!(thread))
            .filter(|(.., sequence)| *sequence >= bar[4].as_u64().unwrap_or(0))
            .take(count)
            .collect();
        let fits = group.len() == count
            && group
                .first()
                .is_some_and(|first| json!(first.2) == bar[2] && json!(first.4) == bar[4])
            && group.last().is_some_and(|last| last.3 == bar[3]);
        if fits {
            out.extend(group.into_iter().map(|bar| json!(bar)));
        } else {
            out.push(bar);
        }
    }
    out.sort_by_key(|bar| bar[4].as_u64().unwrap_or(0));
    json!(out)
}

/// `2026-11-30T12:00:00.123Z` → ms since the epoch (UTC, as the log
/// writes them).
fn parse_time(text: &str) -> i64 {
    agentrace_core::model::Timestamp::parse(text)
        .map(|at| at.0)
        .unwrap_or_else(|| panic!("not a time: {text}"))
}

/// `(kind, thread, start, end, sequence, count)` of every bar on the
/// page, by sequence.
const SHOWN_BARS: &str = "return Array.from(document.querySelectorAll('#waterfall [data-bar]')).sort((a, b) => Number(a.getAttribute('data-sequence')) - Number(b.getAttribute('data-sequence'))).map(b => [b.getAttribute('data-kind'), b.getAttribute('data-thread-id'), Number(b.getAttribute('data-start-ms')), b.getAttribute('data-end-ms') === '' ? null : Number(b.getAttribute('data-end-ms')), Number(b.getAttribute('data-sequence')), Number(b.getAttribute('data-count'))]);";

/// The largest distance, in pixels, between where each bar is drawn and
/// where the axis's scale puts its start and end (an open bar runs to the
/// end of its track).
const PIXEL_ERROR: &str = "const box = document.getElementById('waterfall'); const from = Number(box.getAttribute('data-from-ms')), to = Number(box.getAttribute('data-to-ms')); let worst = 0; for (const bar of box.querySelectorAll('[data-bar]')) { const track = bar.parentElement.getBoundingClientRect(); const r = bar.getBoundingClientRect(); const scale = track.width / (to - from); const start = Number(bar.getAttribute('data-start-ms')); const end = bar.getAttribute('data-end-ms') === '' ? to : Number(bar.getAttribute('data-end-ms')); const left = Math.max(0, (start - from) * scale); const right = Math.min(track.width, (end - from) * scale); worst = Math.max(worst, Math.abs(r.left - track.left - left), Math.abs(Math.max(1, right - left) - r.width)); } return worst;";

fn lanes(browser: &Browser) -> Value {
    browser.script("return Array.from(document.querySelectorAll('#waterfall [data-lane]')).map(l => [l.getAttribute('data-label'), Number(l.getAttribute('data-depth')), l.getAttribute('data-thread-id') === l.getAttribute('data-lane')]);")
}

#[test]
fn the_waterfall_nests_a_lane_per_agent_and_draws_each_bar_where_its_events_put_it() {
    let scratch = Scratch::new();
    // Nested (root → helper → grandchild) and parallel (two helpers at once).
    scratch.capture("nested", "real_model_nested");
    scratch.capture("parallel", "v1_parallel");
    let served = serve(&scratch);
    let browser = Browser::start();

    for (id, expected_lanes) in [
        (
            "nested",
            json!([
                ["Main", 0, true],
                ["/root/child_a", 1, true],
                ["/root/child_a/child_g", 2, true]
            ]),
        ),
        (
            "parallel",
            json!([["Main", 0, true], ["Sagan", 1, true], ["Galileo", 1, true]]),
        ),
    ] {
        browser.goto(&format!("{}/runs/{id}", served.url));
        browser.wait_for("the run page", READY);
        browser.wait_for(
            "the waterfall",
            "return document.querySelectorAll('#waterfall [data-bar]').length > 0;",
        );
        let events = all_events(&served, id);
        let expected = expected_bars(&events);
        let shown = browser.script(SHOWN_BARS);
        let pixel_error = browser.script(PIXEL_ERROR).as_f64().unwrap_or(f64::MAX);
        // A spawn link into each helper's lane, from its spawner's (the
        // grandchild's is the helper above it).
        let spawns = browser.script("return Array.from(document.querySelectorAll('#waterfall [data-link=spawn]')).map(l => [document.querySelector('#waterfall [data-lane=\"' + l.getAttribute('data-from') + '\"]').getAttribute('data-label'), document.querySelector('#waterfall [data-lane=\"' + l.getAttribute('data-to') + '\"]').getAttribute('data-label')]);");
        let rows = expected_lanes.as_array().cloned().unwrap_or_default();
        let parents: Vec<Value> = rows
            .windows(2)
            .map(|pair| {
                let parent = if pair[1][1] == json!(2) {
                    &pair[0][0]
                } else {
                    &rows[0][0]
                };
                json!([parent, pair[1][0]])
            })
            .collect();
        assert_eq!(
            (
                lanes(&browser),
                covered(&expected, &shown),
                pixel_error <= 1.0,
                spawns,
            ),
            (
                expected_lanes,
                json!(expected.iter().map(|bar| json!(bar)).collect::<Vec<_>>()),
                true,
                json!(parents),
            ),
            "run {id}: pixel error {pixel_error}, bars shown {shown}"
        );
    }

    // Zoomed in, the axis shows half as much and the bars still stand
    // where its scale says.
    let whole = browser.script("const box = document.getElementById('waterfall'); return Number(box.getAttribute('data-to-ms')) - Number(box.getAttribute('data-from-ms'));");
    browser.click("#zoom-in");
    browser.wait_for(
        "the zoom",
        &format!("const box = document.getElementById('waterfall'); return Number(box.getAttribute('data-to-ms')) - Number(box.getAttribute('data-from-ms')) <= {whole} / 2 + 1;"),
    );
    let pixel_error = browser.script(PIXEL_ERROR).as_f64().unwrap_or(f64::MAX);
    assert!(pixel_error <= 1.0, "zoomed: pixel error {pixel_error}");
}

#[test]
fn a_bar_clicked_scrolls_the_timeline_to_its_event_and_bookkeeping_is_folded_until_asked_for() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/basic", served.url));
    browser.wait_for("the run page", READY);
    browser.wait_for(
        "the waterfall",
        "return document.querySelectorAll('#waterfall [data-bar][data-kind=wait]').length > 0;",
    );
    let bookkeeping = "return Array.from(document.querySelectorAll('#timeline .event')).filter(r => ['status', 'notice', 'usage', 'model_selected', 'actor_resolved', 'response'].includes(r.getAttribute('data-type'))).length;";
    let folded = browser.script(ROWS);
    assert_eq!(browser.script(bookkeeping), json!(0));

    let sequence = browser.script("return document.querySelector('#waterfall [data-bar][data-kind=wait]').getAttribute('data-sequence');");
    browser.click("#waterfall [data-bar][data-kind=wait]");
    browser.wait_for(
        "the event in view",
        &format!("const row = document.querySelector('#timeline .event[data-seq=\"{}\"]'); if (!row) return false; const r = row.getBoundingClientRect(); return row.classList.contains('target') && r.top >= 0 && r.bottom <= window.innerHeight;", sequence.as_str().unwrap_or_default()),
    );
    assert_eq!(
        browser.script(&format!("return document.querySelector('#timeline .event[data-seq=\"{}\"]').getAttribute('data-type');", sequence.as_str().unwrap_or_default())),
        json!("tool_use")
    );

    browser.click("#show-all");
    browser.wait_for(
        "every event",
        "return document.querySelectorAll('#timeline .event').length === 89;",
    );
    assert_eq!(
        (
            browser.script("return location.search;"),
            browser.script(bookkeeping).as_u64().is_some_and(|n| n > 0),
            folded.as_u64().is_some_and(|n| n > 10 && n < 89),
        ),
        (json!("?events=all"), true, true)
    );
}

const HOSTILE: &str = r#"<img src=x onerror=\"document.title='pwned';window.pwned=1\"><script>document.title='pwned';window.pwned=1</script>"#;

/// Nothing the hostile text holds ran or became an element.
const INERT: &str = "return [document.title, window.pwned === undefined, document.querySelectorAll('main img, main script, #tooltip img, #tooltip script').length];";

#[test]
fn hostile_agent_text_is_inert_in_the_waterfall_tooltip_and_the_comparison() {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    // In the helper's command (a tool input) and in the run's result.
    let edited = text.replace("hello-from-child-A", HOSTILE).replace(
        "ROOT DONE: all sub-agents finished; final answer from the root agent.",
        HOSTILE,
    );
    assert_ne!(edited, text);
    scratch.record("hostile", edited.as_bytes(), true);
    scratch.capture("basic", "v1_basic");
    let served = serve(&scratch);
    let browser = Browser::start();
    let shown = HOSTILE.replace("\\\"", "\"");

    browser.goto(&format!("{}/runs/hostile", served.url));
    browser.wait_for("the run page", READY);
    browser.wait_for(
        "the waterfall",
        "return document.querySelectorAll('#waterfall [data-bar][data-kind=tool]').length > 0;",
    );
    let shell = "#waterfall [data-bar][data-kind=tool]";
    browser.hover(shell);
    browser.wait_for(
        "the tooltip",
        "return !document.getElementById('tooltip').hidden;",
    );
    let tooltip = browser.text("#tooltip");
    assert_eq!(
        (tooltip.contains(&shown), browser.script(INERT)),
        (true, json!(["agentrace", true, 0])),
        "tooltip: {tooltip}"
    );

    browser.goto(&format!("{}/compare?a=basic&b=hostile", served.url));
    browser.wait_for("the compare page", READY);
    browser.wait_for(
        "the comparison",
        "return document.querySelectorAll('#compare-table tr.agent-pair').length > 0;",
    );
    assert_eq!(
        (
            browser.text("#compare-table tr.run-row[data-side=b] td[data-field=result]"),
            browser.script(INERT),
        ),
        (shown.clone(), json!(["agentrace", true, 0]))
    );
}

#[test]
fn compare_puts_two_runs_side_by_side_and_marks_the_agents_only_one_has() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    scratch.capture("parallel", "v1_parallel");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/compare?a=basic&b=parallel", served.url));
    browser.wait_for("the compare page", READY);
    browser.wait_for(
        "the comparison",
        "return document.querySelectorAll('#compare-table tr.agent-pair').length > 0;",
    );
    assert_eq!(
        (
            browser.script("return Array.from(document.querySelectorAll('#compare-table tr.agent-pair:not(.side-b)')).map(r => [r.getAttribute('data-agent'), r.getAttribute('data-only'), r.querySelector('.only-badge') ? r.querySelector('.only-badge').textContent : '']);"),
            browser.text("#compare-summary").ends_with(" differences"),
        ),
        (
            // The helpers have other names in the two runs: none matches.
            json!([["Main", "", ""], ["Dewey", "a", "only in A"], ["Sagan", "b", "only in B"], ["Galileo", "b", "only in B"]]),
            true
        )
    );
    // Each side's warnings, as the API gives them: a helper's in its row.
    scratch.capture("restarted", "v1_restart_mid_child");
    let compared = api_json(&served, "/api/compare?a=basic&b=restarted");
    let hilbert = compared["agents"].as_array().and_then(|agents| agents.iter().find(|pair| pair["label"] == "Hilbert")).map(|pair| pair["b"]["warnings"].clone());
    browser.goto(&format!("{}/compare?a=basic&b=restarted", served.url));
    browser.wait_for("the second comparison", "return document.querySelector('#compare-table tr.agent-pair[data-agent=\"Hilbert\"]') !== null;");
    let shown = browser.script("return Array.from(document.querySelectorAll('#compare-table tr.agent-pair[data-agent=\"Hilbert\"].side-b td[data-field=warnings] .badge')).map(b => b.textContent);");
    let heads = browser.script("return Array.from(document.querySelectorAll('#compare-table thead th')).map(th => th.textContent);");
    assert_eq!(
        (Some(shown), heads, hilbert.as_ref().and_then(|codes| codes.as_array()).is_some_and(|codes| codes.contains(&json!("lost_turn")))),
        (hilbert, json!(["agent", "", "status", "turns", "tools", "tokens", "cost", "duration", "warnings", "result"]), true)
    );
}

/// The screenshots the README shows are taken here, from the bundled
/// nested sample, and written into `docs/` when
/// `AGENTRACE_UPDATE_SCREENSHOTS=1` (as `insta` updates its snapshots).
#[test]
fn the_waterfall_of_the_nested_sample_makes_the_readme_picture() {
    let scratch = Scratch::new();
    scratch.capture("sample-codex-nested", "real_model_nested");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/sample-codex-nested", served.url));
    browser.wait_for("the run page", READY);
    browser.wait_for(
        "the waterfall",
        "return document.querySelectorAll('#waterfall [data-bar]').length > 0;",
    );
    browser.resize(1280, 900);
    browser.wait_for(
        "the waterfall at the new width",
        "const box = document.getElementById('waterfall'); return Number(box.getAttribute('data-track-width')) === Math.max(200, box.clientWidth - 240);",
    );
    let png = browser.screenshot();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    if std::env::var_os("AGENTRACE_UPDATE_SCREENSHOTS").is_some() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/viewer-waterfall.png");
        std::fs::write(&path, &png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// A run whose session ended before its root's turn did (a host restarted
/// mid-child, the capture ended there) is `running` but not at work: the
/// list marks it `session ended` and its page is not live.
#[test]
fn a_run_stopped_mid_turn_is_marked_in_the_list_and_its_page_is_not_live() {
    let scratch = Scratch::new();
    let bytes = std::fs::read(capture("v1_restart_mid_child")).unwrap_or_else(|e| panic!("{e}"));
    let (mut writer, mut recorder) = scratch.record("stopped", &bytes, true);
    let ended = recorder.end_session(agentrace_core::model::Timestamp::from_millis(1_795_994_000_000), agentrace_core::model::SessionEndReason::EndOfInput);
    writer.append(&ended).unwrap_or_else(|e| panic!("{e}"));
    writer.write_record(&recorder.state().summary()).unwrap_or_else(|e| panic!("{e}"));
    let served = serve(&scratch);
    let listed = api_json(&served, "/api/runs");
    assert_eq!(
        (listed["runs"][0]["status"].clone(), listed["runs"][0]["sessionEnded"].clone()),
        (json!("running"), json!(true))
    );
    // `status=live` keeps to the runs at work, as `runs --status live`.
    let total = |query: &str| api_json(&served, &format!("/api/runs?{query}"))["total"].clone();
    assert_eq!((total("status=running"), total("status=live")), (json!(1), json!(0)));
    let browser = Browser::start();
    browser.goto(&served.url);
    browser.wait_for("the run list", "return document.querySelectorAll('#runs tbody tr[data-run-id]').length === 1;");
    browser.script("const s = document.getElementById('filter-status'); s.value = 'live'; s.dispatchEvent(new Event('change', {bubbles: true})); return true;");
    browser.wait_for("no run at work", "return location.search === '?status=live' && document.querySelectorAll('#runs tbody tr[data-run-id]').length === 0;");
    browser.goto(&served.url);
    browser.wait_for("the run list", "return document.querySelectorAll('#runs tbody tr[data-run-id]').length === 1;");
    assert_eq!(
        browser.script("return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id] .badge')).map(b => b.textContent);"),
        json!(["running", "session ended", "lost_turn"])
    );
    browser.goto(&format!("{}/runs/stopped", served.url));
    browser.wait_for("the run page", READY);
    assert_eq!(
        (browser.text("#run-status"), browser.script("return document.getElementById('live').hidden;")),
        ("running, but its session ended (nothing is at work)".to_owned(), json!(true))
    );
}

/// A run of the dashboard's test, named as an import names a Codex run.
const PARALLEL: &str = "codex-01a2299c-0000-7000-8000-00000000002a";

#[test]
fn the_runs_dashboard_lists_filters_and_finds_a_run_by_its_text_opening_it_at_the_event() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    // As long as the id an import gives, which must not wrap in the list.
    scratch.capture(PARALLEL, "v1_parallel");
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&str> = text.lines().collect();
    // Cut short: still running.
    let _live = scratch.record("live", lines[..30].join("\n").as_bytes(), false);
    let served = serve(&scratch);
    let browser = Browser::start();

    browser.goto(&served.url);
    browser.wait_for(
        "the run list",
        "return document.querySelectorAll('#runs tbody tr[data-run-id]').length === 3;",
    );
    let rows = "return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(r => [r.getAttribute('data-run-id'), Number(r.getAttribute('data-tokens')) > 0, r.getAttribute('data-cost') !== null]).sort();";
    assert_eq!(
        (browser.script(rows), browser.text("#runs-total")),
        (
            json!([
                ["basic", true, true],
                [PARALLEL, true, true],
                ["live", true, true]
            ]),
            "1–3 of 3 runs".to_owned()
        )
    );
    // Each run's time from its start to its end (to its last line while
    // it runs), as the API's times give it and as the list shows it.
    let listed = api_json(&served, "/api/runs");
    let millis = |run: &Value, field: &str| run[field].as_str().and_then(agentrace_core::model::Timestamp::parse).map(|at| at.millis());
    let mut spans: Vec<(String, Option<i64>)> = listed["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|run| {
            let end = millis(run, "endedAt").or_else(|| millis(run, "updatedAt"));
            (run["id"].as_str().unwrap_or_default().to_owned(), end.zip(millis(run, "startedAt")).map(|(end, start)| end - start))
        })
        .collect();
    spans.sort();
    let shown = "const column = Array.from(document.querySelectorAll('#runs thead th')).findIndex(th => th.textContent === 'duration'); return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(r => [r.getAttribute('data-run-id'), r.children[column].textContent]).sort();";
    assert_eq!(
        (spans, browser.script(shown)),
        (
            vec![("basic".to_owned(), Some(9460)), (PARALLEL.to_owned(), Some(18803)), ("live".to_owned(), Some(9075))],
            // As `agentrace runs` prints them (its `millis_text`).
            json!([["basic", "9.5s"], [PARALLEL, "18s"], ["live", "9.1s"]])
        )
    );
    // A run's id and start each on one line (an inline box broken over
    // lines has a rectangle per line), so a row is one line tall.
    let lines = "return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(r => { const started = document.createRange(); started.selectNodeContents(r.children[5]); return [r.querySelector('a').getClientRects().length, started.getClientRects().length]; });";
    assert_eq!(browser.script(lines), json!([[1, 1], [1, 1], [1, 1]]));

    browser.script("const s = document.getElementById('filter-status'); s.value = 'running'; s.dispatchEvent(new Event('change', {bubbles: true})); return true;");
    browser.wait_for(
        "the status filter",
        "const rows = document.querySelectorAll('#runs tbody tr[data-run-id]'); return rows.length === 1 && rows[0].getAttribute('data-run-id') === 'live';",
    );
    assert_eq!(
        browser.script("return location.search;"),
        json!("?status=running")
    );

    // Ordered by a figure (the catalog's order, as the API gives it), and
    // kept to the runs with a warning: both in the URL, and the pager
    // says `previous`/`next`, not newer and older.
    let order = |query: &str| -> Value {
        let listed = api_json(&served, &format!("/api/runs?{query}"));
        Value::Array(listed["runs"].as_array().into_iter().flatten().map(|run| run["id"].clone()).collect())
    };
    let by_tokens = order("sort=tokens");
    assert_eq!((by_tokens.clone(), order("")), (json!([PARALLEL, "basic", "live"]), json!(["live", PARALLEL, "basic"])));
    let listed_ids = "JSON.stringify(Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(r => r.getAttribute('data-run-id')))";
    browser.script("document.getElementById('filter-status').value = ''; const o = document.getElementById('filter-sort'); o.value = 'tokens'; o.dispatchEvent(new Event('change', {bubbles: true})); return true;");
    browser.wait_for("the order by tokens", &format!("return {listed_ids} === {:?};", by_tokens.to_string()));
    assert_eq!(
        (browser.script("return location.search;"), browser.text("#runs-prev"), browser.text("#runs-next")),
        (json!("?sort=tokens"), "previous".to_owned(), "next".to_owned())
    );
    browser.script("const w = document.getElementById('filter-warning'); w.value = 'any'; w.dispatchEvent(new Event('change', {bubbles: true})); return true;");
    let warned = order("sort=tokens&warning=any");
    browser.wait_for("the runs with a warning", &format!("return location.search === '?warning=any&sort=tokens' && {listed_ids} === {:?};", warned.to_string()));
    browser.script("for (const id of ['filter-warning', 'filter-sort']) document.getElementById(id).value = ''; document.getElementById('filter-status').value = 'running'; document.getElementById('filter-status').dispatchEvent(new Event('change', {bubbles: true})); return true;");
    browser.wait_for("the running run again", "return location.search === '?status=running' && document.querySelectorAll('#runs tbody tr[data-run-id]').length === 1;");

    browser.type_into("#run-search", "hello-from-child-A");
    browser.wait_for(
        "the hits",
        "return document.querySelectorAll('#search-hits li.hit').length > 0;",
    );
    let hit = browser.script(&format!("const hit = Array.from(document.querySelectorAll('#search-hits li.hit')).find(h => h.getAttribute('data-run-id') === '{PARALLEL}' || h.getAttribute('data-run-id') === 'basic'); return [hit.getAttribute('data-run-id'), hit.getAttribute('data-seq')];"));
    let (run, sequence) = (
        hit[0].as_str().unwrap_or_default().to_owned(),
        hit[1].as_str().unwrap_or_default().to_owned(),
    );
    browser.click(&format!(
        "#search-hits li.hit[data-run-id=\"{run}\"][data-seq=\"{sequence}\"] a"
    ));
    browser.wait_for("the run page", READY);
    browser.wait_for(
        "the event in view",
        &format!("const row = document.querySelector('#timeline .event[data-seq=\"{sequence}\"]'); if (!row) return false; const r = row.getBoundingClientRect(); return row.classList.contains('target') && r.top >= 0 && r.bottom <= window.innerHeight;"),
    );
    assert_eq!(
        browser.script("return location.pathname;"),
        json!(format!("/runs/{run}"))
    );
}

/// Records Claude Code's stream-json capture `name` as run `id`.
fn record_claude_stream(scratch: &Scratch, id: &str, name: &str) {
    use agentrace_core::model::{RunId, Timestamp};
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/claude").join(name).join("stream.jsonl");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut writer = scratch.home().create_run(&RunId::from(id)).unwrap_or_else(|e| panic!("{e}"));
    let mut recorder = agentrace_core::Recorder::new(RunId::from(id), agentrace_core::recorder::Format::ClaudeStream);
    writer.append(&recorder.start(Timestamp::from_millis(1_795_993_400_000))).unwrap_or_else(|e| panic!("{e}"));
    push(&mut writer, &mut recorder, &bytes);
    writer.append(&recorder.finish()).unwrap_or_else(|e| panic!("{e}"));
    writer.write_record(&recorder.state().summary()).unwrap_or_else(|e| panic!("{e}"));
}

/// At 1280 px the run list's warnings were cut ("replayed_hist…") and its
/// result column sat behind a sideways scroll, the comparison's result ran
/// off the right edge, and a helper lane's label hid its tokens and cost
/// ("Echo task A [general-purp…").
#[test]
fn at_1280_pixels_the_run_list_and_the_comparison_fit_and_every_lane_shows_its_tokens_and_cost() {
    let scratch = Scratch::new();
    scratch.capture("cx-v1_basic", "v1_basic");
    scratch.capture("cx-real_model_basic", "real_model_basic");
    scratch.capture("cx-v1_restart_mid_child", "v1_restart_mid_child");
    scratch.capture("cx-probe_unknown_thread_ids", "probe_unknown_thread_ids");
    scratch.capture("cx-v2_child_error_http500", "v2_child_error_http500");
    record_claude_stream(&scratch, "cl-v1.0.128_parallel_explore_missing", "parallel_bg");
    record_claude_stream(&scratch, "cl-parallel_bg", "parallel_bg");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.resize(1280, 900);
    // Each column's header, by its text, and whether it ends inside the
    // window; and whether the page scrolls sideways.
    let fits = |table: &str| {
        format!(
            "const w = document.documentElement.clientWidth; return [Array.from(document.querySelectorAll('{table} thead th')).filter(th => th.textContent).map(th => [th.textContent, Math.round(th.getBoundingClientRect().right) <= w]), document.documentElement.scrollWidth <= w];"
        )
    };
    let columns = |heads: &[&str]| json!([heads.iter().map(|head| json!([head, true])).collect::<Vec<_>>(), true]);
    browser.goto(&served.url);
    browser.wait_for("the run list", READY);
    browser.wait_for("its rows", "return document.querySelectorAll('#runs tbody tr').length === 7;");
    let list = browser.script(&fits("#runs"));
    browser.goto(&format!("{}/compare?a=cx-v1_basic&b=cx-real_model_basic", served.url));
    browser.wait_for("the comparison", "return document.querySelectorAll('#compare-table tr.agent-pair').length > 0;");
    let compared = browser.script(&fits("#compare-table"));
    browser.goto(&format!("{}/runs/cl-parallel_bg", served.url));
    browser.wait_for("the run page", READY);
    browser.wait_for("the waterfall", "return document.querySelectorAll('#waterfall [data-lane]').length === 3;");
    // A lane's figures are the `small` in its name: shown whole when they
    // end inside the name's box.
    let figures = browser.script(
        "return Array.from(document.querySelectorAll('#waterfall [data-lane]')).map(lane => { const name = lane.firstElementChild; const small = name.querySelector('small'); return [lane.getAttribute('data-label'), small.getBoundingClientRect().right <= name.getBoundingClientRect().right + 0.5]; });",
    );
    assert_eq!(
        (list, compared, figures),
        (
            columns(&["run", "status", "provider", "project", "started (UTC)", "duration", "agents", "tokens", "cost", "warnings", "result"]),
            columns(&["agent", "status", "turns", "tools", "tokens", "cost", "duration", "warnings", "result"]),
            json!([["Main", true], ["Echo task A [general-purpose]", true], ["Echo task B [Explore]", true]]),
        )
    );
}

/// Presses keys (WebDriver's code points: Tab `\u{E004}`, Enter
/// `\u{E007}`, the right arrow `\u{E014}`) on what has the focus, as a
/// user's keyboard does.
fn press(browser: &Browser, keys: &[&str]) {
    let actions: Vec<Value> = keys
        .iter()
        .flat_map(|key| [json!({"type": "keyDown", "value": key}), json!({"type": "keyUp", "value": key})])
        .collect();
    browser.call("POST", &browser.session_path("/actions"), json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}));
}

/// Claude Code's `v2.0.77_single` session, as an import records it: the
/// CLI's startup warmup agents spend tokens outside the agent tree.
fn record_transcripts(scratch: &Scratch, id: &str, name: &str) {
    use agentrace_core::model::RunId;
    let session = Transcripts::of(name);
    let mut writer = scratch.home().create_run(&RunId::from(id)).unwrap_or_else(|e| panic!("{e}"));
    let mut recorder = agentrace_core::Recorder::new(RunId::from(id), agentrace_core::recorder::Format::ClaudeTranscript);
    writer.append(&recorder.start(session.lines[0].2)).unwrap_or_else(|e| panic!("{e}"));
    Transcripts::feed(&session.lines, &mut writer, &mut recorder);
    writer.append(&recorder.finish()).unwrap_or_else(|e| panic!("{e}"));
    writer.write_record(&recorder.state().summary()).unwrap_or_else(|e| panic!("{e}"));
}

/// A run of over ten seconds read `(16 min 17 s)` on its page where
/// `agentrace show` prints `(977.5 s)`, and one of 10.5 s read `(11 s)`:
/// the page rounded to its own units. It gives the run's time as `show`
/// does, seconds to a tenth (`{:.1}`, ties to the even tenth).
#[test]
fn the_run_page_gives_the_run_time_show_gives() {
    let scratch = Scratch::new();
    scratch.capture("slow", "v1_interrupt_child_driver");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/slow", served.url));
    browser.wait_for("the run page", READY);
    let run = api_json(&served, "/api/runs/slow")["run"].clone();
    let (started, ended) = (run["startedAt"].as_str().unwrap_or_default().to_owned(), run["endedAt"].as_str().unwrap_or_default().to_owned());
    // `show`'s `time_text`: `({seconds:.1} s)`.
    let seconds = (parse_time(&ended) - parse_time(&started)) as f64 / 1000.0;
    assert_eq!(
        (started.as_str(), ended.as_str(), browser.text("#run-time")),
        ("2026-11-29T23:03:20.000Z", "2026-11-29T23:19:37.470Z", format!("started {started}, ended {ended} ({seconds:.1} s)"))
    );
    // Seconds as Rust's `{:.1}` gives them, exact ties to the even tenth.
    let cases = [250_i64, 750, 1_250, 2_750, 1_050, 1_150, 10_503, 977_470];
    let expected: Vec<String> = cases.iter().map(|ms| format!("{:.1} s", *ms as f64 / 1000.0)).collect();
    assert_eq!(browser.script(&format!("return {cases:?}.map(fmtSeconds);")), json!(expected));
}

/// Claude Code's startup warmup agents spend tokens no agent of the tree
/// owns: `show` prints them under the tree (`startup (outside the tree)
/// 102 tokens, $0.0005`), but the page's tree left them out, so its
/// agents' tokens (318 + 255) did not add up to the run's 675.
#[test]
fn the_agent_tree_shows_the_tokens_outside_it_as_show_does() {
    let scratch = Scratch::new();
    record_transcripts(&scratch, "warm", "v2.0.77_single");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/warm", served.url));
    browser.wait_for("the run page", READY);
    let run = api_json(&served, "/api/runs/warm")["run"].clone();
    let outside = run["outsideTree"].as_array().cloned().unwrap_or_default();
    let expected: Vec<String> = outside
        .iter()
        .map(|part| {
            let models = part["tokensByModel"].as_array().cloned().unwrap_or_default();
            let tokens: u64 = models.iter().map(|model| model["tokens"]["totalTokens"].as_u64().unwrap_or_default()).sum();
            let cost: f64 = models.iter().map(|model| model["cost"].as_f64().unwrap_or_default()).sum();
            format!("{} (outside the tree), {tokens} tokens · ${cost:.4}", part["label"].as_str().unwrap_or_default())
        })
        .collect();
    assert_eq!(expected, ["startup (outside the tree), 102 tokens · $0.0005"]);
    // Every token figure the tree shows, added up, and the lines beside
    // the agents: the run's total, as `show`'s tree adds up to it.
    let shown = browser.script(
        "const tree = document.getElementById('tree'); return [Array.from(tree.textContent.matchAll(/(\\d+) tokens/g)).reduce((sum, m) => sum + Number(m[1]), 0), Array.from(tree.querySelectorAll(':scope > li:not(.agent)')).map(li => li.textContent)];",
    );
    assert_eq!(shown, json!([run["tokens"]["totalTokens"], expected]));
}

/// Every project of one machine starts alike, so the run list's project
/// column, cut to its width, read `/home/dev/…` on every row. It names the
/// last two folders, as `agentrace runs` does, the whole folder in its title.
#[test]
fn the_run_list_names_each_project_by_its_last_two_folders_as_runs_does() {
    let scratch = Scratch::new();
    record_claude_stream(&scratch, "bg", "parallel_bg");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.resize(1280, 900);
    browser.goto(&served.url);
    browser.wait_for("the run list", READY);
    // The project column found by its header, as the page always had it.
    let cells = browser.script(
        "const heads = Array.from(document.querySelectorAll('#runs thead th')).map(th => th.textContent); const at = heads.indexOf('project'); return Array.from(document.querySelectorAll('#runs tbody tr')).map(tr => { const td = tr.children[at]; return [td.textContent, td.title, td.scrollWidth <= td.clientWidth]; });",
    );
    assert_eq!(cells, json!([["work/parallel_bg", "/home/dev/agents/work/parallel_bg", true]]));
}

/// A link to a page past the end of the run list (`?offset=100` of 3 runs)
/// showed an empty table over "101–100 of 3 runs". It shows the last page.
#[test]
fn a_page_past_the_end_of_the_run_list_shows_its_last_page() {
    let scratch = Scratch::new();
    scratch.capture("a", "v1_basic");
    scratch.capture("b", "v2_basic");
    scratch.capture("c", "v1_parallel");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/?offset=100", served.url));
    browser.wait_for("the run list", READY);
    assert_eq!(
        browser.script("return [document.getElementById('runs-total').textContent, document.querySelectorAll('#runs tbody tr').length, document.getElementById('runs-prev').hidden, document.getElementById('runs-next').hidden];"),
        json!(["1–3 of 3 runs", 3, true, true])
    );
}

/// A filter in the URL that no field of the list can hold (`?status=bogus`,
/// an old link's `?warning=silent_agent`) was dropped without a word: every
/// run was listed as if kept to it. The server's refusal is shown, naming
/// it, and no run; picking a filter then lists again.
#[test]
fn a_filter_the_run_list_cannot_hold_is_refused_by_name_not_dropped() {
    let scratch = Scratch::new();
    scratch.capture("a", "v1_basic");
    let served = serve(&scratch);
    let browser = Browser::start();
    let shown = "return [document.getElementById('error').hidden ? null : document.getElementById('error').textContent, document.querySelectorAll('#runs tbody tr').length];";
    for (query, error) in [
        ("status=bogus", "status=bogus: expected one of running, done, failed, interrupted, live"),
        ("warning=silent_agent", "warning=silent_agent: a list of runs cannot keep to this code: it is judged against the clock when a run is read, and no run's record carries it; GET /api/runs/RUN (or `agentrace check`) judges it"),
    ] {
        browser.goto(&format!("{}/?{query}", served.url));
        browser.wait_for("the list's answer", "return !document.getElementById('error').hidden || document.querySelectorAll('#runs tbody tr').length > 0;");
        assert_eq!(browser.script(shown), json!([error, 0]), "{query}");
    }
    browser.script("const field = document.getElementById('filter-provider'); field.value = 'codex'; field.dispatchEvent(new Event('change', { bubbles: true })); return null;");
    browser.wait_for("the list", "return document.querySelectorAll('#runs tbody tr').length === 1;");
    assert_eq!(browser.script(shown), json!([null, 1]));
}

/// The waterfall's bars answered the pointer only: Tab passed them by, so
/// from the keyboard no bar could show what it was or open its event. Tab
/// reaches the first bar, the arrows go from bar to bar, focus shows the
/// tooltip, and Enter scrolls the timeline to the bar's event as a click does.
#[test]
fn the_waterfall_is_used_with_the_keyboard_as_with_the_pointer() {
    let scratch = Scratch::new();
    scratch.capture("nested", "real_model_nested");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/nested", served.url));
    browser.wait_for("the run page", READY);
    browser.wait_for("the waterfall", "return document.querySelectorAll('#waterfall [data-bar]').length > 2;");
    let bars = browser.script("return Array.from(document.querySelectorAll('#waterfall [data-bar]')).map(bar => Number(bar.getAttribute('data-sequence')));");
    let focused = "return [document.activeElement.getAttribute('data-sequence'), document.getElementById('tooltip').hidden];";
    // The control before the waterfall, then the keyboard alone.
    browser.script("document.getElementById('zoom-reset').focus(); return null;");
    press(&browser, &["\u{E004}"]);
    let first = browser.script(focused);
    press(&browser, &["\u{E014}"]);
    let second = browser.script(focused);
    press(&browser, &["\u{E007}"]);
    browser.wait_for("the bar's event", "return document.querySelector('#timeline .event.target') !== null;");
    let target = browser.script("return Number(document.querySelector('#timeline .event.target').getAttribute('data-seq'));");
    assert_eq!(
        json!([first, second, target]),
        json!([[bars[0].to_string(), false], [bars[1].to_string(), false], bars[1]])
    );
}

/// The run list gave a run's time in units of its own (`952 ms`, `11 s`,
/// `16 min 17 s`) beside `agentrace runs`' `1.0s`, `10s` and `16m`: it
/// gives it as `runs` does, the same list of figures as its unit test
/// (`a_runs_time_gives_a_tenth_under_ten_seconds_as_show_does`).
#[test]
fn the_run_list_gives_each_run_the_time_agentrace_runs_gives() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    scratch.capture("slow", "v1_interrupt_child_driver");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&served.url);
    browser.wait_for("the run list", READY);
    let listed = api_json(&served, "/api/runs");
    let spans: Vec<(String, i64)> = listed["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|run| (run["id"].as_str().unwrap_or_default().to_owned(), parse_time(run["endedAt"].as_str().unwrap_or_default()) - parse_time(run["startedAt"].as_str().unwrap_or_default())))
        .collect();
    // The duration column found by its header, as the page always had it.
    let shown = browser.script("const at = Array.from(document.querySelectorAll('#runs thead th')).findIndex(th => th.textContent === 'duration'); return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(r => [r.getAttribute('data-run-id'), r.children[at].textContent]);");
    assert_eq!(
        (spans, shown),
        (vec![("slow".to_owned(), 977_470), ("basic".to_owned(), 9_460)], json!([["slow", "16m"], ["basic", "9.5s"]]))
    );
    assert_eq!(
        browser.script("return [0, 49, 640, 1850, 9949, 9950, 10400, 59999, 61000, 3599999, 3660000].map(fmtRunTime);"),
        json!(["0.0s", "0.0s", "0.6s", "1.9s", "9.9s", "10s", "10s", "59s", "1m", "59m", "1h01"])
    );
}

/// The comparison is `agentrace diff` side by side, but gave its figures
/// in the page's own units: a duration `16 min 17 s` or `830 ms` where diff
/// prints `977.5s` and `0.8s`, and tokens cut to `55k` on both sides of a
/// pair marked as differing (55,350 against 55,321). It prints both as
/// diff does.
#[test]
fn the_comparison_gives_durations_and_tokens_as_diff_prints_them() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    scratch.capture("slow", "v1_interrupt_child_driver");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/compare?a=basic&b=slow", served.url));
    browser.wait_for("the comparison", READY);
    let compared = api_json(&served, "/api/compare?a=basic&b=slow");
    // diff's figures: `{tokens}` and `{:.1}s` of `durationMs`.
    let diff = |figures: &Value| {
        json!([
            figures["tokens"].as_u64().map_or_else(|| "?".to_owned(), |tokens| tokens.to_string()),
            figures["durationMs"].as_i64().map_or_else(|| "?".to_owned(), |ms| format!("{:.1}s", ms as f64 / 1000.0)),
        ])
    };
    let mut expected = vec![diff(&compared["a"]["figures"]), diff(&compared["b"]["figures"])];
    for pair in compared["agents"].as_array().into_iter().flatten() {
        for side in ["a", "b"] {
            if !pair[side].is_null() {
                expected.push(diff(&pair[side]));
            }
        }
    }
    let shown = browser.script("return Array.from(document.querySelectorAll('#compare-table tbody tr')).filter(r => r.querySelector('[data-field=tokens]')).map(r => [r.querySelector('[data-field=tokens]').textContent, r.querySelector('[data-field=durationMs]').textContent]);");
    assert_eq!(expected[..2], [json!(["33090", "9.5s"]), json!(["22092", "977.5s"])]);
    assert_eq!(shown, json!(expected));
}

/// Past a dollar the page cut a cost to cents (`$2.35`) where `show`
/// prints a hundredth of a cent (`$2.3456`), in the summary the README
/// promises as show prints it, the tree and the waterfall's lanes.
#[test]
fn the_run_page_gives_a_cost_past_a_dollar_as_show_does() {
    let scratch = Scratch::new();
    // The capture's model priced dear: its run costs dollars.
    std::fs::write(scratch.dir.path().join("prices.json"), r#"{"mock-model": {"input": 97, "cachedInput": 9.7, "output": 970}}"#).unwrap_or_else(|e| panic!("{e}"));
    scratch.capture("dear", "v1_basic");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/dear", served.url));
    browser.wait_for("the run page", READY);
    browser.wait_for("the waterfall", "return document.querySelectorAll('#waterfall [data-lane]').length === 2;");
    let detail = api_json(&served, "/api/runs/dear");
    let cost = |value: &Value| format!("${:.4}", value.as_f64().unwrap_or_else(|| panic!("no cost: {value}")));
    let run = &detail["run"];
    let agents: Vec<String> = std::iter::once(&detail["agents"][0]).chain(detail["agents"][0]["children"].as_array().into_iter().flatten()).map(|agent| cost(&agent["cost"])).collect();
    assert!(run["cost"].as_f64().is_some_and(|cost| cost > 1.0), "the run costs under a dollar: {}", run["cost"]);
    let shown = browser.script("return [document.getElementById('run-cost').textContent, Array.from(document.querySelectorAll('#tree .agent > small')).map(s => s.textContent.split(' · ').pop()), Array.from(document.querySelectorAll('#waterfall [data-lane] small')).map(s => s.textContent.split(' · ').pop())];");
    assert_eq!(shown, json!([cost(&run["cost"]), agents, agents]));
}

/// Seven days, an hour and five minutes after the captures' runs started
/// (`Scratch::record` starts them at 1_795_993_400_000 ms).
fn a_week_after_the_runs_started() -> agentrace_core::model::Timestamp {
    agentrace_core::model::Timestamp::from_millis(1_795_993_400_000 + 7 * 86_400_000 + 3_600_000 + 300_000)
}

/// The live page is `agentrace top` in a browser, but said how long ago a
/// session started in its own units (`169 h 7 min`) where top says
/// `7d01h`: it says it as top does, the same list of figures as top's unit
/// test (`durations_read_in_the_largest_two_units_that_fit`). The server's
/// clock is fixed, so what the page says is pinned as a reader reads it.
#[test]
fn the_live_page_says_how_long_ago_as_top_does() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let served = serve_with(&scratch, Options { clock: a_week_after_the_runs_started, ..Options::default() });
    let browser = Browser::start();
    browser.goto(&format!("{}/live", served.url));
    browser.wait_for("the live page", READY);
    browser.wait_for("its session", "return document.querySelectorAll('[data-live-session]').length === 1;");
    assert_eq!(
        browser.text("[data-live-session=\"basic\"] .meta").split(" · ").nth(1),
        Some("started 7d01h ago")
    );
    assert_eq!(
        browser.script("return [-5, 850, 4200, 185000, 7800000, 86399999, 86400000, 453600000].map(fmtTopDuration);"),
        json!(["0ms", "850ms", "4.2s", "3m05s", "2h10m", "23h59m", "1d00h", "5d06h"])
    );
}

/// Each session of the live page was a table sized to its own text, so
/// one session's tokens stood under another's tool and no column lined up
/// down the page (top prints one grid). Every session's columns, found by
/// their heads, start and end at the same places, and every figure ends
/// under its head.
#[test]
fn the_live_pages_sessions_line_their_columns_up_as_top_does() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    scratch.capture("slow", "v1_interrupt_child_driver");
    record_claude_stream(&scratch, "bg", "parallel_bg");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.resize(1280, 900);
    browser.goto(&format!("{}/live", served.url));
    browser.wait_for("the live page", READY);
    browser.wait_for("its sessions", "return document.querySelectorAll('[data-live-session]').length === 3;");
    let columns = browser.script(
        "return Array.from(document.querySelectorAll('[data-live-session] table')).map(t => Array.from(t.querySelectorAll('thead th')).map(th => { const r = th.getBoundingClientRect(); return [th.textContent, Math.round(r.left), Math.round(r.right)]; }));",
    );
    let tables = columns.as_array().cloned().unwrap_or_default();
    assert_eq!(tables.len(), 3);
    assert_eq!(tables, vec![tables[0].clone(); 3], "the sessions' columns differ");
    // A figure's right edge is its head's (tokens, cost, silent).
    let figures = browser.script(
        "const out = []; for (const t of document.querySelectorAll('[data-live-session] table')) { const heads = Array.from(t.querySelectorAll('thead th')); for (const row of t.querySelectorAll('tr[data-agent-row]')) for (const at of [3, 4]) { const cell = row.children[at]; if (!cell.textContent) continue; const range = document.createRange(); range.selectNodeContents(cell); const text = range.getBoundingClientRect(); const head = document.createRange(); head.selectNodeContents(heads[at]); out.push(Math.abs(Math.round(text.right - head.getBoundingClientRect().right)) <= 1); } } return out.length > 0 && out.every(Boolean);",
    );
    assert_eq!(figures, json!(true));
}

/// At 800 px the run list ran past the window and the whole page scrolled
/// sideways with it (the header and the filters too), the run ids leaving
/// the view as the tokens and cost came in. The list scrolls in its own
/// box: the page keeps to the window, and scrolled to its end, the list
/// shows every column's head, found by its text, with the run ids still
/// in view beside the figures.
#[test]
fn at_800_pixels_the_run_list_scrolls_in_its_box_keeping_the_run_ids_in_view() {
    let scratch = Scratch::new();
    scratch.capture("codex-01a2299e-a78f-7e50-b1f4-d2ab8ffc2814", "v1_basic");
    record_claude_stream(&scratch, "claude-4d35057c-0951-4f3b-9748-90519e0026ea", "parallel_bg");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.resize(800, 900);
    browser.goto(&served.url);
    browser.wait_for("the run list", READY);
    // Scrolled as far right as the page or the list's box goes.
    browser.script("window.scrollTo(100000, 0); for (let n = document.getElementById('runs').parentElement; n; n = n.parentElement) n.scrollLeft = 100000; return null;");
    let seen = browser.script(
        "const w = document.documentElement.clientWidth; const heads = Array.from(document.querySelectorAll('#runs thead th')).map(th => th.textContent); const visible = (n) => { const r = n.getBoundingClientRect(); return r.left >= 0 && r.right <= w; }; return [document.documentElement.scrollWidth <= w, ['tokens', 'cost'].map(h => visible(document.querySelectorAll('#runs thead th')[heads.indexOf(h)])), Array.from(document.querySelectorAll('#runs tbody tr')).map(tr => visible(tr.children[heads.indexOf('run')]))];",
    );
    assert_eq!(seen, json!([true, [true, true], [true, true]]));
}

/// A run with no result read `result —` on its page, where `show` says
/// why: still coming (`none yet: the root's turn has not ended`) or never
/// to come (`none: the session ended before the root's turn did`). The
/// page says it as show does.
#[test]
fn a_run_without_a_result_says_why_as_show_does() {
    let scratch = Scratch::new();
    let bytes = std::fs::read(capture("v1_restart_mid_child")).unwrap_or_else(|e| panic!("{e}"));
    let (mut writer, mut recorder) = scratch.record("stopped", &bytes, true);
    let ended = recorder.end_session(agentrace_core::model::Timestamp::from_millis(1_795_994_000_000), agentrace_core::model::SessionEndReason::EndOfInput);
    writer.append(&ended).unwrap_or_else(|e| panic!("{e}"));
    writer.write_record(&recorder.state().summary()).unwrap_or_else(|e| panic!("{e}"));
    let basic = std::fs::read(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    // The first half of a run: its root's turn still open.
    let cut = basic.len() / 2;
    let cut = basic[..cut].iter().rposition(|byte| *byte == b'\n').map_or(0, |at| at + 1);
    let (_writer, _recorder) = scratch.record("going", &basic[..cut], false);
    let served = serve(&scratch);
    let browser = Browser::start();
    let mut shown = Vec::new();
    for id in ["stopped", "going"] {
        let run = api_json(&served, &format!("/api/runs/{id}"))["run"].clone();
        browser.goto(&format!("{}/runs/{id}", served.url));
        browser.wait_for("the run page", READY);
        shown.push((run["status"].clone(), run["result"].clone(), browser.text("#run-result")));
    }
    assert_eq!(
        shown,
        [
            (json!("running"), Value::Null, "none: the session ended before the root's turn did".to_owned()),
            (json!("running"), Value::Null, "none yet: the root's turn has not ended".to_owned()),
        ]
    );
}

/// A run log with a line that cannot be read back (a torn write, a disk
/// error) counts it: `show` says `· 1 skipped log lines`, but the page's
/// counts stopped at the unknown frames, so a damaged log looked whole.
/// The counts, found by their heading, read as show prints them.
#[test]
fn the_run_page_counts_the_log_lines_it_skipped_as_show_does() {
    let scratch = Scratch::new();
    scratch.capture("torn", "v1_basic");
    let log = scratch.dir.path().join("runs/torn.jsonl");
    let mut text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    text.push_str("{\"version\":2,\"sequence\": torn\n");
    std::fs::write(&log, text).unwrap_or_else(|e| panic!("{e}"));
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/torn", served.url));
    browser.wait_for("the run page", READY);
    let counts = api_json(&served, "/api/runs/torn")["run"]["counts"].clone();
    let shown = browser.script("const dt = Array.from(document.querySelectorAll('#summary dt')).find(dt => dt.textContent === 'counts'); return dt.nextElementSibling.textContent;");
    assert_eq!(
        (counts["skippedLogLines"].clone(), shown),
        (
            json!(1),
            json!(format!(
                "{} events · {} message/tool events of unknown actor · {} undecoded lines · {} unknown frames · 1 skipped log line",
                counts["events"], counts["unknownActor"], counts["undecodedLines"], counts["unknownFrames"]
            ))
        )
    );
}

/// `n` and its noun, singular for one, as the CLI's `render::count` says it.
fn count(number: u64, one: &str, many: &str) -> String {
    if number == 1 { format!("1 {one}") } else { format!("{number} {many}") }
}

/// Records run `id` from the `v1_basic` capture with one event holding
/// `needle-seen-once`: the helper's warning from Codex (the root's is
/// another line), a notice the run page folds with the bookkeeping unless
/// `?events=all`.
fn record_a_needle_in_a_notice(scratch: &Scratch, id: &str) {
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let mut edited = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if line.starts_with(r#"{"method":"warning""#) && line.contains("01a2298c-947a-75b0-8b49-6a2e1016272b") {
                edited += 1;
                line.replacen("Defaulting to", "needle-seen-once: defaulting to", 1)
            } else {
                line.to_owned()
            }
        })
        .collect();
    assert_eq!(edited, 1);
    scratch.record(id, format!("{}\n", lines.join("\n")).as_bytes(), true);
}

/// A search whose only hit is folded with the bookkeeping (a Codex
/// warning, a notice) said `0 events shown` of what the server had found.
/// It says the match is among the folded events and how to show it, and
/// Show all events shows it.
#[test]
fn a_search_whose_hits_are_folded_says_so() {
    let scratch = Scratch::new();
    record_a_needle_in_a_notice(&scratch, "one");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/one", served.url));
    browser.wait_for("the run page", READY);
    browser.type_into("#search", "needle-seen-once");
    browser.wait_for("the search's end", "return document.getElementById('status-line').textContent.startsWith('0 events shown');");
    assert_eq!(
        (browser.text("#status-line"), browser.script("return document.querySelectorAll('#timeline .event').length;")),
        ("0 events shown · 1 match among the folded bookkeeping events (Show all events)".to_owned(), json!(0))
    );
    browser.click("#show-all");
    browser.wait_for("the match", "return document.querySelectorAll('#timeline .event').length === 1;");
    assert_eq!(
        (browser.text("#status-line"), browser.script("return document.querySelector('#timeline .event').getAttribute('data-type');")),
        ("1 event shown".to_owned(), json!("notice"))
    );
}

/// Every count the pages print is singular for one, as the CLI's are: the
/// run list said `1–1 of 1 runs`, a search with one hit `1 events shown`,
/// and the agent tree `1 tools`.
#[test]
fn the_pages_say_one_of_a_thing_in_the_singular() {
    let scratch = Scratch::new();
    record_a_needle_in_a_notice(&scratch, "one");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&served.url);
    browser.wait_for("the run list", "return document.getElementById('runs-total').textContent !== '';");
    assert_eq!(browser.text("#runs-total"), "1–1 of 1 run");

    browser.goto(&format!("{}/runs/one?events=all", served.url));
    browser.wait_for("the run page", READY);
    // Each agent of the tree: its events and tools (its tokens, after them,
    // are its record's while it has one).
    let view = api_json(&served, "/api/runs/one");
    let mut expected = Vec::new();
    let mut agents: Vec<Value> = view["agents"].as_array().cloned().unwrap_or_default();
    while let Some(agent) = agents.pop() {
        let figures = format!(
            "{}, {}",
            count(agent["eventCount"].as_u64().unwrap_or_default(), "event", "events"),
            count(agent["toolCount"].as_u64().unwrap_or_default(), "tool", "tools"),
        );
        expected.push(json!([agent["threadId"], figures]));
        agents.extend(agent["children"].as_array().cloned().unwrap_or_default());
    }
    expected.sort_by_key(|pair| pair[0].as_str().unwrap_or_default().to_owned());
    let shown = browser.script(
        "return Array.from(document.querySelectorAll('#tree li.agent')).map(li => [li.getAttribute('data-thread'), li.querySelector(':scope > small').textContent.split(', ').slice(0, 2).join(', ')]).sort((a, b) => a[0] < b[0] ? -1 : 1);",
    );
    assert_eq!(shown, Value::Array(expected));
    // A tool count of one is there to be said.
    assert!(shown.to_string().contains(" 1 tool"), "{shown}");

    browser.type_into("#search", "needle-seen-once");
    browser.wait_for(
        "the search",
        "return document.querySelectorAll('#timeline .event').length === 1;",
    );
    assert_eq!(browser.text("#status-line"), "1 event shown");
}

/// The usage charts' segments said a model without a price cost
/// `$0.0000` (its cost drawn as nothing, then printed as zero) and a
/// provider's floor as if exact: their titles say `$?` and `≥` as `usage`
/// does. The report is one of `agentrace usage`'s shape, handed in as
/// `agentrace serve` hands it.
#[test]
fn the_usage_charts_never_say_a_missing_price_is_zero() {
    let scratch = Scratch::new();
    let counters = |tokens: u64, cost: Value, status: &str| json!({"inputTokens": tokens, "cachedInputTokens": 0, "cacheCreationTokens": 0, "outputTokens": 0, "reasoningTokens": 0, "totalTokens": tokens, "cost": cost, "costStatus": status});
    let report = json!({
        "days": [{
            "day": "2026-11-29",
            "totals": counters(3000, json!(0.5), "floor"),
            "providers": {"codex": counters(3000, json!(0.5), "floor")},
            "models": {"gpt-6.1-sol": counters(1000, json!(0.5), "exact"), "mock-model": counters(2000, Value::Null, "unknown")},
        }],
        "topRuns": [],
        "topAgents": [],
        "totals": counters(3000, json!(0.5), "floor"),
    });
    let served = serve_with(&scratch, usage_of(report));
    let browser = Browser::start();
    browser.goto(&format!("{}/usage", served.url));
    browser.wait_for("the usage page", READY);
    let titles = "return Array.from(document.querySelectorAll('#chart-cost rect title')).map(t => t.textContent);";
    let by_provider = browser.script(titles);
    browser.script("const by = document.getElementById('usage-by'); by.value = 'model'; by.dispatchEvent(new Event('change')); return null;");
    assert_eq!(
        (by_provider, browser.script(titles)),
        (
            json!(["2026-11-29 · codex · ≥$0.5000"]),
            json!(["2026-11-29 · gpt-6.1-sol · $0.5000", "2026-11-29 · mock-model · $?"])
        )
    );
}

/// A helper's lane in the timeline folded on a click of its head only: the
/// head was no control (Tab passed it by, Enter did nothing). Tab reaches
/// it, and Enter folds the lane and unfolds it again.
#[test]
fn a_helpers_lane_folds_from_the_keyboard() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/basic", served.url));
    browser.wait_for("the run page", READY);
    // The lane, as the page always had it, and where the focus is.
    let state = "const lane = document.querySelector('#timeline .lane'); return [document.activeElement === lane.querySelector(':scope > .lane-head'), lane.classList.contains('collapsed')];";
    // The control before the lane's head in the page's order, then Tab.
    browser.script("const head = document.querySelector('#timeline .lane > .lane-head'); const all = Array.from(document.querySelectorAll('button, input, a[href], [tabindex]')).filter(n => n.tabIndex >= 0 && n.compareDocumentPosition(head) & Node.DOCUMENT_POSITION_FOLLOWING); all[all.length - 1].focus(); return null;");
    press(&browser, &["\u{E004}"]);
    let reached = browser.script(state);
    press(&browser, &["\u{E007}"]);
    let folded = browser.script(state);
    press(&browser, &["\u{E007}"]);
    let unfolded = browser.script(state);
    assert_eq!(json!([reached, folded, unfolded]), json!([[true, false], [true, true], [true, false]]));
}

/// "Compare the two picked" did nothing, without a word, when clicked with
/// one run ticked or none. It is live once two runs are ticked (its title
/// says how many are), and then opens their comparison.
#[test]
fn the_compare_button_waits_for_two_runs_and_says_so() {
    let scratch = Scratch::new();
    scratch.capture("a", "v1_basic");
    scratch.capture("b", "v2_basic");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&served.url);
    browser.wait_for("the run list", READY);
    let button = "const b = document.getElementById('compare-selected'); return [b.disabled, b.title];";
    let none = browser.script(button);
    browser.click("#runs tbody tr[data-run-id=\"a\"] input[type=checkbox]");
    let one = browser.script(button);
    browser.click("#runs tbody tr[data-run-id=\"b\"] input[type=checkbox]");
    let two = browser.script(button);
    // The two in the list's order, as the page hands them over.
    let order = browser.script("return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(r => r.getAttribute('data-run-id'));");
    let expected = format!("?a={}&b={}", order[0].as_str().unwrap_or_default(), order[1].as_str().unwrap_or_default());
    browser.click("#compare-selected");
    browser.wait_for("the comparison", "return location.pathname === '/compare';");
    assert_eq!(
        (none, one, two, browser.script("return location.search;")),
        (
            json!([true, "tick two runs to compare them (0 ticked)"]),
            json!([true, "tick two runs to compare them (1 ticked)"]),
            json!([false, ""]),
            json!(expected)
        )
    );
}

/// Behind `--token-file` the viewer never ran: its page asked for its own
/// script and stylesheet (`/assets/app.js`) without the token, the server
/// refused them (401), and every page stayed an empty frame; the header's
/// name, `agentrace`, led to `/` without the token too. Every page runs,
/// every link carries the token, and the header's leads home.
#[test]
fn behind_a_token_every_link_of_the_viewer_carries_it() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let token = "a-token-of-thirty-two-characters";
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let options = Options { token: Some(token.to_owned()), poll: Duration::from_millis(50), ..Options::default() };
    let (address, server) = runtime
        .block_on(agentrace_server::bind("127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")), scratch.home(), options))
        .unwrap_or_else(|e| panic!("bind: {e}"));
    runtime.spawn(server);
    let browser = Browser::start();
    let mut without = Vec::new();
    for page in ["/", "/runs/basic", "/usage", "/live", "/compare?a=basic&b=basic", "/runs/nope"] {
        let joiner = if page.contains('?') { '&' } else { '?' };
        browser.goto(&format!("http://{address}{page}{joiner}token={token}"));
        browser.wait_for(page, "return document.body.getAttribute('data-ready') === 'true' || !document.getElementById('error').hidden;");
        // Its links, script and stylesheet.
        let links = browser.script(&format!("return Array.from(document.querySelectorAll('a[href], link[href], script[src]')).map(n => n.getAttribute('href') || n.getAttribute('src')).filter(h => !h.includes('token={token}'));"));
        without.push((page, links));
    }
    browser.click("#home");
    browser.wait_for("the run list", "return location.pathname === '/' && document.querySelectorAll('#runs tbody tr[data-run-id]').length === 1;");
    let empty = json!([]);
    assert_eq!(
        without,
        vec![("/", empty.clone()), ("/runs/basic", empty.clone()), ("/usage", empty.clone()), ("/live", empty.clone()), ("/compare?a=basic&b=basic", empty.clone()), ("/runs/nope", empty)]
    );
}

/// At 800 px the usage page's second table (the top agents) ran off the
/// window, its costs cut, and the comparison scrolled the whole page
/// sideways. The usage tables stack, every head of theirs inside the
/// window, and the comparison scrolls in its own box: neither page
/// scrolls sideways.
#[test]
fn at_800_pixels_the_usage_and_compare_pages_keep_to_the_window() {
    let scratch = Scratch::new();
    scratch.capture("codex-01a2298e-95f7-7860-9d07-bbdef83673ed", "real_model_nested");
    scratch.capture("codex-01a2298e-252f-7401-bdd2-dc53c090568a", "real_model_basic");
    let counters = |tokens: u64, cost: f64| json!({"inputTokens": tokens, "cachedInputTokens": 0, "cacheCreationTokens": 0, "outputTokens": 0, "reasoningTokens": 0, "totalTokens": tokens, "cost": cost, "costStatus": "exact"});
    let report = json!({
        "days": [{"day": "2026-11-29", "totals": counters(232089, 0.25), "providers": {"codex": counters(232089, 0.25)}, "models": {"gpt-6.1-sol": counters(232089, 0.25)}}],
        "topRuns": [
            {"runId": "codex-01a2298e-95f7-7860-9d07-bbdef83673ed", "sessionId": "01a2298e-95f7-7860-9d07-bbdef83673ed", "provider": "codex", "startedAt": "2026-11-29T23:05:40.082Z", "counters": counters(147050, 0.1601)},
            {"runId": "codex-01a2298e-252f-7401-bdd2-dc53c090568a", "sessionId": "01a2298e-252f-7401-bdd2-dc53c090568a", "provider": "codex", "startedAt": "2026-11-29T23:05:11.210Z", "counters": counters(85039, 0.0928)},
        ],
        "topAgents": [
            {"label": "Echo task A [general-purpose]", "agents": 11, "counters": counters(38000, 0.1694)},
            {"label": "/root/child_a/child_g", "agents": 1, "counters": counters(32000, 0.0345)},
        ],
        "totals": counters(232089, 0.25),
    });
    let served = serve_with(&scratch, usage_of(report));
    let browser = Browser::start();
    browser.resize(800, 900);
    let fits = "const w = document.documentElement.clientWidth; return [document.documentElement.scrollWidth <= w, Array.from(document.querySelectorAll(arguments[0])).map(th => [th.textContent, th.getBoundingClientRect().right <= w])];";
    browser.goto(&format!("{}/usage", served.url));
    browser.wait_for("the usage page", READY);
    let usage = browser.call("POST", &browser.session_path("/execute/sync"), json!({"script": fits, "args": ["#top-runs thead th, #top-agents thead th"]}));
    browser.goto(&format!("{}/compare?a=codex-01a2298e-95f7-7860-9d07-bbdef83673ed&b=codex-01a2298e-252f-7401-bdd2-dc53c090568a", served.url));
    browser.wait_for("the comparison", READY);
    let compared = browser.call("POST", &browser.session_path("/execute/sync"), json!({"script": fits, "args": ["#nothing"]}));
    let heads: Vec<Value> = ["run", "provider", "started (UTC)", "tokens", "cost", "label", "agents", "tokens", "cost"].iter().map(|name| json!([name, true])).collect();
    assert_eq!(
        (usage, compared),
        (
            json!([true, heads]),
            json!([true, []])
        )
    );
}

/// A home with no runs showed a bare head of columns on the run list and,
/// on the usage page, two empty charts whose axes read `1e-9` (the floor
/// of their scale, printed). The list says there are no runs yet and how
/// to get some, or that its filters keep none; the charts say no usage is
/// recorded.
#[test]
fn an_empty_home_says_so_on_the_run_list_and_the_usage_page() {
    let scratch = Scratch::new();
    let empty = json!({"inputTokens": 0, "cachedInputTokens": 0, "cacheCreationTokens": 0, "outputTokens": 0, "reasoningTokens": 0, "totalTokens": 0, "cost": 0.0, "costStatus": "exact"});
    // What `agentrace usage --json` counts over no run.
    let report = json!({"days": [], "topRuns": [], "topAgents": [], "totals": empty});
    let served = serve_with(&scratch, usage_of(report));
    let browser = Browser::start();
    // What the list's section says below its head of columns.
    let said = "const view = document.getElementById('runs-view'); const table = document.getElementById('runs'); return view.innerText.slice(view.innerText.indexOf(table.innerText) + table.innerText.length).trim();";
    browser.goto(&format!("{}/", served.url));
    browser.wait_for("the run list", READY);
    let fresh = browser.script(said);
    browser.goto(&format!("{}/?provider=claude", served.url));
    browser.wait_for("the run list", READY);
    let filtered = browser.script(said);
    browser.goto(&format!("{}/usage", served.url));
    browser.wait_for("the usage page", READY);
    let charts = browser.script("return ['chart-tokens', 'chart-cost'].map(id => document.getElementById(id).textContent);");
    let no_usage = "No usage recorded yet: `agentrace import` reads your Codex and Claude Code history.";
    assert_eq!(
        (fresh, filtered, charts),
        (
            json!("No runs yet: `agentrace import` reads the Codex and Claude Code sessions on disk, `agentrace samples` records three to look at, and `agentrace serve --watch` follows new ones.\n\n0 of 0 runs"),
            json!("No run matches these filters.\n\n0 of 0 runs"),
            json!([no_usage, no_usage])
        )
    );
}

/// A run's page at an event it does not have (`?seq=99999`, a stale or
/// mistyped link) showed an empty timeline under "Events up to #99998 are
/// not shown." and no word of why. It says the event is not in the run
/// and shows the run from its start.
#[test]
fn a_run_page_at_an_event_past_its_last_says_so_and_shows_the_run() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let served = serve(&scratch);
    let last = api_json(&served, "/api/runs/basic/events?limit=1")["lastSequence"].clone();
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/basic?seq=99999", served.url));
    browser.wait_for("the run page", READY);
    // The note and the timeline come from two answers, in either order:
    // wait for both, or a fast note is read before the first row is drawn.
    browser.wait_for("the note and the timeline", "return document.querySelectorAll('#timeline .event').length > 0 && !document.getElementById('error').hidden;");
    assert_eq!(
        browser.script("const error = document.getElementById('error'); return [error.hidden ? null : error.textContent, document.querySelector('#timeline .event') ? Number(document.querySelector('#timeline .event').getAttribute('data-seq')) : null, document.getElementById('earlier').hidden];"),
        json!([format!("event #99999 is not in this run: its events are #1 to #{last}"), 1, true])
    );
}

/// Filters the server refuses (an `until` day before its `since`) showed
/// the refusal above the rows of the filters before them, which read as
/// the refused filters' runs. The refusal stands alone: no row, no count.
#[test]
fn a_refused_filter_leaves_no_rows_of_the_filters_before_it() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&served.url);
    browser.wait_for("the run list", READY);
    browser.wait_for("its row", "return document.querySelectorAll('#runs tbody tr[data-run-id]').length === 1;");
    browser.script("const since = document.getElementById('filter-since'); since.value = '2026-12-01'; const until = document.getElementById('filter-until'); until.value = '2026-11-01'; until.dispatchEvent(new Event('change', { bubbles: true })); return null;");
    browser.wait_for("the refusal", "return !document.getElementById('error').hidden;");
    assert_eq!(
        browser.script("return [document.getElementById('error').textContent, document.querySelectorAll('#runs tbody tr').length, document.getElementById('runs-total').textContent];"),
        json!(["until=2026-11-01: it is before since=2026-12-01, so no day is in the range", 0, ""])
    );
}

/// The comparison printed a floor as an exact cost (`$0.0451` where `diff`
/// and `show` print `≥$0.0451`), though `/api/compare` says which figures
/// are floors (`costStatus`). Claude's `single_fg` with two of its helper's
/// replies cut to streaming snapshots (their usage incomplete) is one.
#[test]
fn the_comparison_prints_a_floor_cost_as_diff_does() {
    use agentrace_core::model::RunId;
    let scratch = Scratch::new();
    let mut session = Transcripts::of("single_fg");
    for (_, line, _) in &mut session.lines {
        if line.contains("\"type\":\"assistant\"") && (line.contains("msg_mock_2f825264_0002") || line.contains("msg_mock_2f825264_0003")) {
            let mut record: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
            record["message"]["stop_reason"] = Value::Null;
            record["message"]["usage"]["output_tokens"] = json!(1);
            *line = record.to_string();
        }
    }
    let mut writer = scratch.home().create_run(&RunId::from("cut")).unwrap_or_else(|e| panic!("{e}"));
    let mut recorder = agentrace_core::Recorder::new(RunId::from("cut"), agentrace_core::recorder::Format::ClaudeTranscript);
    writer.append(&recorder.start(session.lines[0].2)).unwrap_or_else(|e| panic!("{e}"));
    Transcripts::feed(&session.lines, &mut writer, &mut recorder);
    writer.append(&recorder.finish()).unwrap_or_else(|e| panic!("{e}"));
    writer.write_record(&recorder.state().summary()).unwrap_or_else(|e| panic!("{e}"));
    let served = serve(&scratch);
    let compared = api_json(&served, "/api/compare?a=cut&b=cut");
    // `diff`'s cost: `render::cost_text` of the figures' cost and status.
    let diff = |figures: &Value| match (figures["cost"].as_f64(), figures["costStatus"].as_str()) {
        (None, _) | (_, Some("unknown")) => "$?".to_owned(),
        (Some(cost), Some("floor")) => format!("≥${cost:.4}"),
        (Some(cost), _) => format!("${cost:.4}"),
    };
    let mut expected = vec![diff(&compared["a"]["figures"]), diff(&compared["b"]["figures"])];
    for pair in compared["agents"].as_array().into_iter().flatten() {
        for side in ["a", "b"] {
            if !pair[side].is_null() {
                expected.push(diff(&pair[side]));
            }
        }
    }
    assert_eq!(compared["a"]["figures"]["costStatus"], json!("floor"));
    let browser = Browser::start();
    browser.goto(&format!("{}/compare?a=cut&b=cut", served.url));
    browser.wait_for("the comparison", READY);
    let shown = browser.script("return Array.from(document.querySelectorAll('#compare-table tbody td[data-field=cost]')).map(td => td.textContent);");
    assert_eq!(shown, json!(expected));
}

/// A tool result with no exit code and no duration (a Codex agent tool's:
/// `spawnAgent`, `wait`, `closeAgent`) left an empty line of facts above
/// its output in the timeline. Its output starts right under its summary;
/// a result that has them (the shell's) still says them.
#[test]
fn a_tool_result_without_exit_code_or_duration_leaves_no_empty_line() {
    let scratch = Scratch::new();
    scratch.capture("basic", "v1_basic");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/basic", served.url));
    browser.wait_for("the run page", READY);
    // Each tool result: its sequence, its facts lines, and how far under
    // the top of its output box the output starts (an empty line of
    // facts above it pushed it a line down).
    let shown = browser.script(
        "return Array.from(document.querySelectorAll('#timeline .event[data-type=tool_result]')).map(row => { const box = row.querySelector('.tool-output'); const output = box.querySelector('pre'); return [Number(row.getAttribute('data-seq')), Array.from(box.querySelectorAll('.facts')).map(f => f.textContent), Math.round(output.getBoundingClientRect().top - box.getBoundingClientRect().top)]; });",
    );
    assert_eq!(shown, json!([[27, ["exit 0 · 0 ms"], 22], [16, [], 0], [44, [], 0], [49, [], 0]]));
}

/// The run list and `/live` printed every cost to a hundredth of a cent
/// (`$0.0037`, `$0.0928`) where `agentrace runs` and `top` print cents:
/// `<$0.01` for a cost that is not nothing but rounds to nothing (`top`:
/// under a cent), `≥` before a floor; a cost nothing could price stays
/// `$?`, never `$0.00`. Each column is found by its head, as the pages
/// had it.
#[test]
fn the_run_list_and_the_live_page_print_costs_in_cents_as_runs_and_top_do() {
    let scratch = Scratch::new();
    // The scripted model has no price: `$?`.
    scratch.capture("cx-v1_basic", "v1_basic");
    scratch.capture("cx-real_model_basic", "real_model_basic");
    // $0.003687, $0.005559 (a cent in `runs`, under one in `top`), and a
    // floor of $0.04512.
    record_claude_stream(&scratch, "cl-v2.0.77_single", "v2.0.77_single");
    record_claude_stream(&scratch, "cl-v1.0.128_parallel_explore_missing", "v1.0.128_parallel_explore_missing");
    record_claude_stream(&scratch, "cl-single_fg", "single_fg");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&served.url);
    browser.wait_for("the run list", READY);
    browser.wait_for("its rows", "return document.querySelectorAll('#runs tbody tr[data-run-id]').length === 5;");
    let listed = browser.script(
        "const at = Array.from(document.querySelectorAll('#runs thead th')).findIndex(th => th.textContent === 'cost'); return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(row => [row.getAttribute('data-run-id'), row.children[at].textContent]).sort();",
    );
    browser.goto(&format!("{}/live", served.url));
    browser.wait_for("the live page", READY);
    browser.wait_for("its sessions", "return document.querySelectorAll('[data-live-session]').length === 5;");
    let live = browser.script(
        "return Array.from(document.querySelectorAll('[data-live-session]')).map(session => { const at = Array.from(session.querySelectorAll('thead th')).findIndex(th => th.textContent === 'cost'); return [session.getAttribute('data-live-session'), session.querySelector('.meta').textContent.split(' · ').filter(part => part.includes('$')), Array.from(session.querySelectorAll('tr[data-agent-row]')).map(row => row.children[at].textContent)]; }).sort();",
    );
    assert_eq!(
        (listed, live),
        (
            json!([
                ["cl-single_fg", "≥$0.05"],
                ["cl-v1.0.128_parallel_explore_missing", "$0.01"],
                ["cl-v2.0.77_single", "<$0.01"],
                ["cx-real_model_basic", "$0.09"],
                ["cx-v1_basic", "$?"],
            ]),
            json!([
                ["cl-single_fg", ["≥$0.05"], ["$0.02", "≥$0.02"]],
                ["cl-v1.0.128_parallel_explore_missing", ["<$0.01"], ["<$0.01", "<$0.01"]],
                ["cl-v2.0.77_single", ["<$0.01"], ["<$0.01", "<$0.01"]],
                ["cx-real_model_basic", ["$0.09"], ["$0.06", "$0.03"]],
                ["cx-v1_basic", ["$?"], ["$?", "$?"]],
            ]),
        )
    );
    // The edges, as `runs` and `top` print them: an exact tie to the even
    // cent (Rust's `{:.2}`), a cost that rounds to nothing, and nothing.
    assert_eq!(
        browser.script("const costs = [0.125, 0.375, 0.004999, 0.005, 0]; return [costs.map(cost => fmtListCost(cost, 'exact')), costs.map(cost => fmtTopCost(cost, 'exact')), fmtListCost(0.004999, 'floor'), fmtTopCost(0.004999, 'floor')];"),
        json!([["$0.12", "$0.38", "<$0.01", "$0.01", "$0.00"], ["$0.12", "$0.38", "<$0.01", "<$0.01", "$0"], "≥$0.00", "≥<$0.01"])
    );
}

/// With run ids of 43 characters (`claude-` and a session's UUID), the run
/// list at 1280 px gave the id its whole width and left the result a
/// dozen pixels ("ROOT-…"). The id column is cut (its start shown, the
/// whole id in its title and its link) so the result keeps a readable
/// width; found by their heads, as the list had them.
#[test]
fn at_1280_pixels_the_run_list_keeps_the_result_readable_beside_long_run_ids() {
    let scratch = Scratch::new();
    let ids = [
        "claude-4d35057c-0951-4f3b-9748-90519e0026ea",
        "claude-5e46168d-1a62-4c4b-a859-a1620f1137fb",
        "codex-01a2299e-a78f-7e50-b1f4-d2ab8ffc2814-x",
    ];
    record_claude_stream(&scratch, ids[0], "parallel_bg");
    record_claude_stream(&scratch, ids[1], "single_fg");
    // A warning badge beside it takes width from the result too.
    scratch.capture(ids[2], "v1_restart_mid_child");
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.resize(1280, 900);
    browser.goto(&served.url);
    browser.wait_for("the run list", READY);
    browser.wait_for("its rows", "return document.querySelectorAll('#runs tbody tr[data-run-id]').length === 3;");
    // Each row: its id, the title of its id's cell and where its link
    // goes, and whether its result cell is at least 240 px wide (about
    // 30 characters of the answer); and whether the page fits the window.
    let shown = browser.script(
        "const heads = Array.from(document.querySelectorAll('#runs thead th')).map(th => th.textContent); const run = heads.indexOf('run'); const result = heads.indexOf('result'); return [Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(tr => [tr.getAttribute('data-run-id'), tr.children[run].getAttribute('title'), decodeURIComponent(tr.children[run].querySelector('a').getAttribute('href')), tr.children[result].getBoundingClientRect().width >= 240]).sort(), document.documentElement.scrollWidth <= document.documentElement.clientWidth];",
    );
    let expected: Vec<Value> = ids.iter().map(|id| json!([id, id, format!("/runs/{id}"), true])).collect();
    assert_eq!(shown, json!([expected, true]));
}

/// `run_started` and `session_ended` are the run's own events, which
/// agentrace writes: they wore the `Unknown actor` badge (and the reason
/// `agentrace` in italics) and fell under the Unknown filter, as if they
/// were an agent's events no spawn link placed, where `show` counts no
/// event of unknown actor in the run. They wear an `agentrace` badge of
/// their own and stay out of the Unknown filter, which keeps the provider
/// events no agent owns.
#[test]
fn the_runs_own_events_are_not_shown_or_filtered_as_unknown_actor_events() {
    let scratch = Scratch::new();
    // Recorded as `ingest` records it: its input's end ends the session.
    let bytes = std::fs::read(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let (mut writer, mut recorder) = scratch.record("basic", &bytes, true);
    let ended = recorder.end_session(agentrace_core::model::Timestamp::from_millis(1_795_993_400_000), agentrace_core::model::SessionEndReason::EndOfInput);
    writer.append(&ended).unwrap_or_else(|e| panic!("{e}"));
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/basic?events=all", served.url));
    browser.wait_for("the run page", READY);
    browser.wait_for("the timeline", "return document.querySelectorAll('#timeline .event').length === 90;");
    // Each of the run's own rows: its type, its badge's text and class,
    // and the reason beside it.
    let own = "return Array.from(document.querySelectorAll('#timeline .event[data-type=run_started], #timeline .event[data-type=session_ended]')).map(row => [row.getAttribute('data-type'), row.querySelector('.actor').textContent, row.querySelector('.actor').className, Array.from(row.querySelectorAll('.reason')).map(reason => reason.textContent)]);";
    let shown = browser.script(own);
    browser.click("#filters button[data-actor=unknown]");
    // Filtered once its rows are there again (the timeline is emptied
    // while the filtered page loads, the old status line still shown):
    // some rows, and none of the main agent's messages.
    browser.wait_for("the Unknown filter", "return document.querySelectorAll('#timeline .event').length > 0 && !document.querySelector('#timeline .event[data-type=message]') && document.getElementById('status-line').textContent.endsWith('events shown');");
    // The types the Unknown filter shows, each once.
    let unknown = browser.script("return Array.from(new Set(Array.from(document.querySelectorAll('#timeline .event')).map(row => row.getAttribute('data-type'))));");
    assert_eq!(
        (shown, unknown),
        (
            json!([
                ["run_started", "agentrace", "badge actor role-run", []],
                ["session_ended", "agentrace", "badge actor role-run", []],
            ]),
            json!(["response", "notice"]),
        )
    );
}
