//! A real headless Chromium (Debian's `chromium` and `chromium-driver`,
//! installed by `scripts/install-browser`), driven over WebDriver by a
//! minimal client of our own (a handful of W3C endpoints over `ureq`, on
//! loopback, every call bounded in time). Every process started here is
//! ended by a guard, also when an assertion fails. Shared by the viewer's
//! tests in `agentrace-server` and those of `agentrace serve`.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Kills and reaps a child process when dropped.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// A WebDriver session; deleting it (on drop) ends the browser, and the
/// driver guard ends chromedriver after it.
pub struct Browser {
    agent: ureq::Agent,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
    _driver: Reaped,
}

impl Browser {
    /// A browser whose time zone is UTC, whatever the machine's.
    pub fn start() -> Self {
        Self::start_in_zone("UTC")
    }

    /// A browser whose time zone is `zone` (an IANA name, as `TZ` takes it).
    pub fn start_in_zone(zone: &str) -> Self {
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
                // Chromium takes its zone from its driver's environment.
                .env("TZ", zone)
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

    pub fn call(&self, method: &str, path: &str, body: Value) -> Value {
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

    pub fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", &self.session_path("/url"), json!({ "url": url }));
    }

    pub fn script(&self, script: &str) -> Value {
        self.call(
            "POST",
            &self.session_path("/execute/sync"),
            json!({ "script": script, "args": [] }),
        )
    }

    /// Waits (10 s at most) until the script returns true.
    pub fn wait_for(&self, what: &str, script: &str) {
        self.wait_up_to(Duration::from_secs(10), what, script);
    }

    /// Waits (`bound` at most) until the script returns true.
    pub fn wait_up_to(&self, bound: Duration, what: &str, script: &str) {
        let deadline = Instant::now() + bound;
        while self.script(script) != json!(true) {
            assert!(
                Instant::now() < deadline,
                "timed out after {bound:?} waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn element(&self, css: &str) -> String {
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

    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.call(
            "POST",
            &self.session_path(&format!("/element/{id}/click")),
            json!({}),
        );
    }

    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.call(
            "POST",
            &self.session_path(&format!("/element/{id}/value")),
            json!({ "text": text }),
        );
    }

    /// The element's text, read in one step (a live page may re-render
    /// between finding an element and reading it).
    pub fn text(&self, css: &str) -> String {
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

impl Browser {
    /// Sets the window's size, CSS pixels.
    pub fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            &self.session_path("/window/rect"),
            json!({"width": width, "height": height}),
        );
    }

    /// A PNG of the window (WebDriver's screenshot).
    pub fn screenshot(&self) -> Vec<u8> {
        let encoded = self.call("GET", &self.session_path("/screenshot"), Value::Null);
        let text = encoded
            .as_str()
            .unwrap_or_else(|| panic!("no screenshot: {encoded}"));
        decode_base64(text)
    }

    /// Moves the pointer onto the element (WebDriver actions), so hover
    /// handlers run as for a user.
    pub fn hover(&self, css: &str) {
        let id = self.element(css);
        let mut origin = serde_json::Map::new();
        origin.insert(ELEMENT.to_owned(), json!(id));
        self.call(
            "POST",
            &self.session_path("/actions"),
            json!({"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                "actions": [{"type": "pointerMove", "duration": 0, "origin": origin, "x": 0, "y": 0}]}]}),
        );
    }
}

/// Standard base64 (what WebDriver's screenshot is), decoded.
fn decode_base64(text: &str) -> Vec<u8> {
    let value = |byte: u8| -> Option<u32> {
        match byte {
            b'A'..=b'Z' => Some(u32::from(byte - b'A')),
            b'a'..=b'z' => Some(u32::from(byte - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(byte - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut buffer, mut bits) = (0_u32, 0);
    for byte in text.bytes().filter_map(value) {
        buffer = (buffer << 6) | byte;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((buffer >> bits) & 0xff) as u8);
        }
    }
    out
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
