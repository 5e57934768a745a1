//! `agentrace serve` as a process: the first stdout line names the bound
//! address, the API answers there, and a non-loopback bind without a token
//! is refused as a usage error.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

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

#[test]
fn serve_prints_where_it_listens_first_and_answers_there() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "basic", "--quiet"]);
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
