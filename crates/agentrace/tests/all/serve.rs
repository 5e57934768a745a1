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
    // it has a helper) beside an ingested Codex run (its project is its
    // root thread's folder).
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
                (json!("basic"), json!("/home/dev/codexcap/work"), json!(2)),
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

/// `serve --open` hands the viewer's address (with its token, when one is
/// required) to the desktop's opener, `xdg-open`, once it listens; with no
/// opener, it says so and where to go, and serves all the same. The opener
/// here is a script on `PATH` that notes what it was given.
#[test]
fn serve_open_hands_the_viewers_address_to_the_opener() {
    use std::os::unix::fs::PermissionsExt as _;
    let cli = Cli::new();
    let bin = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let noted = bin.path().join("opened");
    let opener = bin.path().join("xdg-open");
    std::fs::write(&opener, format!("#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{}'\n", noted.display())).unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap_or_else(|e| panic!("{e}"));
    let token_file = bin.path().join("token");
    std::fs::write(&token_file, "a-token-of-thirty-two-characters\n").unwrap_or_else(|e| panic!("{e}"));
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    // Starts `serve` with `extra` and `PATH`; its first line, and its
    // stderr once it is stopped.
    let serve = |extra: &[&str], path: &str| -> (String, String) {
        let mut args = vec!["serve", "--bind", "127.0.0.1:0", "--open"];
        args.extend_from_slice(extra);
        let mut server = Killed(
            cli.command(&args).env("PATH", path).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("{e}")),
        );
        let mut first = String::new();
        BufReader::new(server.0.stdout.take().unwrap_or_else(|| panic!("no stdout"))).read_line(&mut first).unwrap_or_else(|e| panic!("{e}"));
        let url = first.trim_end().strip_prefix("listening on ").unwrap_or_else(|| panic!("{first:?}")).to_owned();
        // It still serves.
        let address = url.trim_start_matches("http://").to_owned();
        assert!(get(&address, "/").starts_with("HTTP/1.1 "), "no answer at {address}");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while path.starts_with(&bin.path().display().to_string()) && std::fs::read_to_string(&noted).map_or(true, |text| !text.contains(&url)) {
            assert!(std::time::Instant::now() < deadline, "the opener was never run");
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = server.0.kill();
        let _ = server.0.wait();
        let mut stderr = String::new();
        server.0.stderr.take().map(|mut pipe| pipe.read_to_string(&mut stderr));
        (url, stderr)
    };
    let (plain, _) = serve(&[], &path);
    let (guarded, _) = serve(&["--token-file", &token_file.to_string_lossy()], &path);
    let opened = std::fs::read_to_string(&noted).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(opened, format!("{plain}\n{guarded}/?token=a-token-of-thirty-two-characters\n"));
    // No opener to be found: said, with the address to open by hand.
    let (url, said) = serve(&[], "/nonexistent");
    assert_eq!(
        said.lines().take(2).collect::<Vec<_>>(),
        [
            "warning: cannot open a browser with xdg-open: No such file or directory (os error 2)".to_owned(),
            format!("hint: open {url}"),
        ]
    );
}
