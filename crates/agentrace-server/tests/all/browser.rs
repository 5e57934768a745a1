//! The viewer in a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`, installed by `scripts/install-browser`), driven over
//! WebDriver by a minimal client of our own (a handful of W3C endpoints over
//! `ureq`, on loopback, every call bounded in time). Every process started
//! here is ended by a guard, also when an assertion fails.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentrace_server::Options;
use serde_json::{json, Value};

use super::support::{capture, push, record_generated_run, Scratch};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Kills and reaps a child process when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// A WebDriver session; deleting it (on drop) ends the browser, and the
/// driver guard ends chromedriver after it.
struct Browser {
    agent: ureq::Agent,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
    _driver: Reaped,
}

impl Browser {
    fn start() -> Self {
        for path in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(path).exists(),
                "{path} is missing: run scripts/install-browser (apt packages chromium, chromium-driver)"
            );
        }
        let port = free_port();
        let driver = Reaped(
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start chromedriver: {e}")),
        );
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while agent.get(format!("{base}/status")).call().is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer in 20 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut browser = Browser {
            agent,
            base,
            session: String::new(),
            _profile: profile,
            _driver: driver,
        };
        let args = json!([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            format!("--user-data-dir={}", browser._profile.path().display()),
        ]);
        let created = browser.call(
            "POST",
            "/session",
            json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
                "goog:chromeOptions": {"binary": CHROMIUM, "args": args}}}}),
        );
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        browser
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let response = match method {
            "POST" => self
                .agent
                .post(&url)
                .header("content-type", "application/json")
                .send(body.to_string()),
            "DELETE" => self.agent.delete(&url).call(),
            _ => self.agent.get(&url).call(),
        };
        let mut response = response.unwrap_or_else(|e| panic!("webdriver {method} {path}: {e}"));
        let text = response
            .body_mut()
            .read_to_string()
            .unwrap_or_else(|e| panic!("webdriver {path}: {e}"));
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert!(
            value["value"]["error"].is_null(),
            "webdriver {method} {path} failed: {text}"
        );
        value["value"].clone()
    }

    fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    fn goto(&self, url: &str) {
        self.call("POST", &self.session_path("/url"), json!({ "url": url }));
    }

    fn script(&self, script: &str) -> Value {
        self.call(
            "POST",
            &self.session_path("/execute/sync"),
            json!({ "script": script, "args": [] }),
        )
    }

    /// Waits (10 s at most) until the script returns true.
    fn wait_for(&self, what: &str, script: &str) {
        self.wait_up_to(Duration::from_secs(10), what, script);
    }

    /// Waits (`bound` at most) until the script returns true.
    fn wait_up_to(&self, bound: Duration, what: &str, script: &str) {
        let deadline = Instant::now() + bound;
        while self.script(script) != json!(true) {
            assert!(
                Instant::now() < deadline,
                "timed out after {bound:?} waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn element(&self, css: &str) -> String {
        let found = self.call(
            "POST",
            &self.session_path("/element"),
            json!({"using": "css selector", "value": css}),
        );
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    fn click(&self, css: &str) {
        let id = self.element(css);
        self.call(
            "POST",
            &self.session_path(&format!("/element/{id}/click")),
            json!({}),
        );
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.call(
            "POST",
            &self.session_path(&format!("/element/{id}/value")),
            json!({ "text": text }),
        );
    }

    /// The element's text, read in one step (a live page may re-render
    /// between finding an element and reading it).
    fn text(&self, css: &str) -> String {
        let value = self.call(
            "POST",
            &self.session_path("/execute/sync"),
            json!({"script": "const n = document.querySelector(arguments[0]); return n ? n.textContent : null;", "args": [css]}),
        );
        value
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_owned()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self
                .agent
                .delete(format!("{}/session/{}", self.base, self.session))
                .call();
        }
    }
}

/// The server on a free loopback port, on its own runtime (dropped with it).
struct Served {
    url: String,
    _runtime: tokio::runtime::Runtime,
}

fn serve(scratch: &Scratch) -> Served {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let options = Options {
        poll: Duration::from_millis(50),
        ..Options::default()
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

    browser.goto(&format!("{}/runs/basic", served.url));
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
    browser.goto(&format!("{}/runs/hostile", served.url));
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

#[test]
fn live_updates_appear_while_a_run_is_being_recorded() {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&str> = text.lines().collect();
    let (mut writer, mut recorder) =
        scratch.record("live", lines[..30].join("\n").as_bytes(), false);
    let served = serve(&scratch);
    let browser = Browser::start();
    browser.goto(&format!("{}/runs/live", served.url));
    browser.wait_for("the run page", READY);
    assert_eq!(browser.text("#run-status"), "running");
    let before = browser.script("return document.querySelectorAll('#timeline .event').length;");

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
        "return document.getElementById('status-line').textContent === '1 events shown';",
    );
    assert_eq!(browser.script(ROWS), json!(1));
}
