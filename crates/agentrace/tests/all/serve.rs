//! `agentrace serve` as a process: the first stdout line names the bound
//! address, the API answers there, and a non-loopback bind without a token
//! is refused as a usage error.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

use agentrace_testkit::files::{copy_dir, fixtures};
use serde_json::{json, Value};

use super::support::{capture, Cli};

/// Ends the server when the test ends, whatever happened.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(address: &str, path: &str) -> String {
    let mut stream =
        TcpStream::connect(address).unwrap_or_else(|e| panic!("connect {address}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap_or_else(|e| panic!("{e}"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .unwrap_or_else(|e| panic!("{e}"));
    response
}

/// `agentrace serve` on a free loopback port: the server, and the address
/// its first stdout line names.
fn served(cli: &Cli) -> (Killed, String) {
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
    let address = first
        .trim_end()
        .strip_prefix("listening on http://127.0.0.1:")
        .map(|port| format!("127.0.0.1:{port}"))
        .unwrap_or_else(|| panic!("first line: {first:?}"));
    (server, address)
}

#[test]
fn serve_prints_where_it_listens_first_and_answers_there() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "basic", "--quiet"]);
    let (_server, address) = served(&cli);
    let response = get(&address, "/api/runs/basic");
    let page = get(&address, "/runs/basic");
    assert_eq!(
        (
            response.starts_with("HTTP/1.1 200"),
            response.contains("\"id\":\"basic\""),
            page.starts_with("HTTP/1.1 200"),
            page.contains("/assets/app.js"),
        ),
        (true, true, true, true)
    );
}

#[test]
fn runs_json_lists_what_the_api_lists_with_each_runs_project_and_agents() {
    // An imported Claude session (its project is the transcript's cwd, and
    // it has a helper) beside an ingested Codex run (no project known).
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(
        &fixtures().join("claude/nested_fg/home_claude"),
        &sources.path().join("claude"),
    );
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "basic", "--quiet"]);
    let claude_dir = sources.path().join("claude");
    let claude_dir = claude_dir.to_str().unwrap_or_else(|| panic!("path"));
    cli.ok(&["import", "--quiet", "--claude-dir", claude_dir, "--codex-home", claude_dir]);
    let listed: Value =
        serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let (_server, address) = served(&cli);
    let response = get(&address, "/api/runs");
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, body)| body);
    let api: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"));
    let columns: Vec<(Value, Value, Value)> = listed["runs"]
        .as_array()
        .map(|runs| {
            runs.iter()
                .map(|run| (run["id"].clone(), run["project"].clone(), run["agents"].clone()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        (columns, &listed["total"], &api),
        (
            vec![
                (json!("basic"), Value::Null, json!(2)),
                (
                    json!("claude-d882d213-4da9-4bcb-bd05-cb557061dd59"),
                    json!("/home/dev/agents/work/nested_fg"),
                    json!(3)
                ),
            ],
            &json!(2),
            &listed
        )
    );
}

#[test]
fn serve_on_another_address_without_a_token_is_a_usage_error() {
    let cli = Cli::new();
    let output = cli.run(&["serve", "--bind", "0.0.0.0:0"]);
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned()
        ),
        (Some(2), String::new())
    );
}
