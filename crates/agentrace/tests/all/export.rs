//! `agentrace export`: reports (HTML, Markdown) of real captures, escaping of
//! hostile agent text, the size bound, and the OTLP error path.

use std::net::TcpListener;

use super::support::{capture, Cli};

/// A V1 capture whose root answer is hostile markup.
fn hostile_run(cli: &Cli) -> String {
    let text = std::fs::read_to_string(capture("v1_basic"))
        .unwrap_or_else(|error| panic!("fixture: {error}"))
        .replace(
            "ROOT DONE",
            r#"<script>alert(\"x\")</script> <img src=x onerror='y'> | **bold** [link](http://z)"#,
        );
    let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
    let path = dir.path().join("server.jsonl");
    std::fs::write(&path, text).unwrap_or_else(|error| panic!("write: {error}"));
    cli.ingest(&path, &["--quiet", "--run-id", "hostile"])
}

#[test]
fn the_markdown_report_of_a_v1_run_is_what_the_snapshot_shows() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--quiet", "--run-id", "report-v1"]);
    insta::assert_snapshot!(cli.ok(&["export", "--markdown", "report-v1"]));
}

/// A report lists the warnings `show` lists, the detectors' too: here the
/// root passed off a helper's answer as its own.
#[test]
fn a_report_lists_the_detected_warnings_as_show_does() {
    let cli = Cli::new();
    let text = std::fs::read_to_string(capture("v1_basic"))
        .unwrap_or_else(|error| panic!("fixture: {error}"))
        .replace(
            "ROOT DONE: all sub-agents finished; final answer from the root agent.",
            "CHILD A DONE: the command printed hello-from-child-A.",
        );
    let path = cli.home.path().join("copied.jsonl");
    std::fs::write(&path, text).unwrap_or_else(|error| panic!("write: {error}"));
    cli.ingest(&path, &["--quiet", "--run-id", "copied"]);
    let markdown = cli.ok(&["export", "--markdown", "copied"]);
    let warnings: Vec<&str> = markdown
        .lines()
        .skip_while(|line| !line.starts_with("### Warnings"))
        .take_while(|line| !line.starts_with("### ") || line.starts_with("### Warnings"))
        .filter(|line| !line.is_empty())
        .collect();
    assert_eq!(
        warnings,
        vec![
            "### Warnings (1)",
            "- **error** `helper_result_used_as_done` the run's result is word for word the final message of Dewey"
        ]
    );
}

#[test]
fn the_html_report_of_a_nested_run_is_one_self_contained_page_as_the_snapshot_shows() {
    let cli = Cli::new();
    cli.ingest(
        &capture("real_model_nested"),
        &["--quiet", "--run-id", "report-nested"],
    );
    let file = cli.home.path().join("report.html");
    let file_arg = file.to_string_lossy().into_owned();
    cli.ok(&["export", "--html", "report-nested", "-o", &file_arg]);
    let html = std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("report: {error}"));
    // Self-contained: nothing is loaded from anywhere.
    for needle in ["<script", "src=", "href=", "@import", "url("] {
        assert!(!html.contains(needle), "{needle}");
    }
    // The style sheet is long and not for people; the rest is.
    let body = html
        .split_once("</style>")
        .map(|(_, rest)| rest)
        .unwrap_or(&html);
    insta::assert_snapshot!(body);
}

#[test]
fn hostile_agent_text_is_escaped_in_html_and_markdown() {
    let cli = Cli::new();
    let run = hostile_run(&cli);
    let html = cli.ok(&["export", "--html", &run]);
    assert!(!html.contains("<script"));
    assert!(!html.contains("<img"));
    assert!(html.contains(
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &lt;img src=x onerror=&#39;y&#39;&gt;"
    ));
    let markdown = cli.ok(&["export", "--markdown", &run]);
    assert!(!markdown.contains("<script"));
    assert!(markdown.contains(
        r#"> &lt;script&gt;alert("x")&lt;/script&gt; &lt;img src=x onerror='y'&gt; \| \*\*bold\*\* \[link\](http://z)"#
    ));
}

#[test]
fn a_report_over_max_bytes_leaves_out_timeline_events_and_says_how_many() {
    let cli = Cli::new();
    cli.ingest(
        &capture("real_model_nested"),
        &["--quiet", "--run-id", "big"],
    );
    for (format, bound) in [("--html", 6000), ("--markdown", 2600)] {
        let full = cli.ok(&["export", format, "big"]);
        let small = cli.ok(&["export", format, "big", "--max-bytes", &bound.to_string()]);
        assert!(full.len() > bound, "{format}: {}", full.len());
        assert!(small.len() <= bound, "{format}: {}", small.len());
        let note = small
            .lines()
            .find(|line| line.contains("timeline events left out"))
            .unwrap_or_else(|| panic!("{format}: no left-out note"));
        assert!(
            note.contains(&format!("to stay under {bound} bytes (--max-bytes)")),
            "{note}"
        );
        assert!(!full.contains("left out"));
    }
}

#[test]
fn a_report_never_claims_to_stay_under_max_bytes_when_it_is_over() {
    let cli = Cli::new();
    cli.ingest(
        &capture("real_model_nested"),
        &["--quiet", "--run-id", "big"],
    );
    let export = |format: &str, bound: usize| {
        let output = cli.run(&["export", format, "big", "--max-bytes", &bound.to_string()]);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let note = stdout
            .lines()
            .find(|line| line.contains("timeline events left out"))
            .map(|line| line.trim_start_matches("<p class=\"note left-out\">").trim_end_matches("</p>").to_owned());
        (
            format.to_owned(),
            bound,
            stdout.len() <= bound,
            note,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let full = |format: &str| cli.ok(&["export", format, "big"]).len();
    let over = |bound: usize, size: usize| {
        (
            Some(format!(
                "23 of 23 timeline events left out, and the report is still over {bound} bytes (--max-bytes): its summary, result, warnings and agent tree alone are larger."
            )),
            format!(
                "warning: the report of big is {size} bytes, over --max-bytes {bound}: every timeline event was left out, and its summary, result, warnings and agent tree alone are larger\n"
            ),
        )
    };
    let (html_over, html_warning) = over(3000, 3820);
    let (markdown_over, markdown_warning) = over(1000, 1522);
    assert_eq!(
        vec![
            export("--html", 3000),
            export("--markdown", 1000),
            export("--html", 4000),
            export("--markdown", 3000),
            export("--html", full("--html")),
            export("--markdown", full("--markdown")),
        ],
        vec![
            (String::from("--html"), 3000, false, html_over, html_warning),
            (String::from("--markdown"), 1000, false, markdown_over, markdown_warning),
            (
                String::from("--html"),
                4000,
                true,
                Some(String::from("22 of 23 timeline events left out to stay under 4000 bytes (--max-bytes).")),
                String::new()
            ),
            (
                String::from("--markdown"),
                3000,
                true,
                Some(String::from("5 of 23 timeline events left out to stay under 3000 bytes (--max-bytes).")),
                String::new()
            ),
            (String::from("--html"), full("--html"), true, None, String::new()),
            (String::from("--markdown"), full("--markdown"), true, None, String::new()),
        ]
    );
}

#[test]
fn an_unreachable_otlp_endpoint_fails_clearly_and_leaves_the_run_untouched() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--quiet", "--run-id", "kept"]);
    let log = cli.home.path().join("runs/kept.jsonl");
    let before = std::fs::read(&log).unwrap_or_else(|error| panic!("log: {error}"));
    let endpoint = {
        let listener =
            TcpListener::bind("127.0.0.1:0").unwrap_or_else(|error| panic!("bind: {error}"));
        format!(
            "http://{}",
            listener
                .local_addr()
                .unwrap_or_else(|error| panic!("addr: {error}"))
        )
    };
    let output = cli.run(&["export", "--otlp", &endpoint, "kept"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: run kept was not exported; it is unchanged in {}: cannot reach the OTLP endpoint {endpoint}/v1/traces after 5 attempts: ",
            log.display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&log).ok(), Some(before));
    assert!(output.stdout.is_empty());
}

/// A loopback collector that answers every OTLP request `200` and keeps
/// each request's head (its request line and header lines), until dropped.
struct Collector {
    endpoint: String,
    heads: std::sync::mpsc::Receiver<String>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Collector {
    fn start() -> Self {
        use std::io::{BufRead as _, BufReader, Read as _, Write as _};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|error| panic!("bind: {error}"));
        let endpoint = format!("http://{}", listener.local_addr().unwrap_or_else(|error| panic!("addr: {error}")));
        listener.set_nonblocking(true).unwrap_or_else(|error| panic!("{error}"));
        let (sender, heads) = std::sync::mpsc::channel();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::SeqCst) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let mut reader = BufReader::new(stream);
                // Requests on one connection until the client closes it.
                loop {
                    let mut head = String::new();
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            break;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                        head.push_str(&line);
                    }
                    if head.is_empty() {
                        break;
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        break;
                    }
                    let _ = sender.send(head);
                    let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
                    if reader.get_mut().write_all(answer.as_bytes()).is_err() {
                        break;
                    }
                }
            }
        });
        Collector { endpoint, heads, stop }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `export --otlp` sends each `--header KEY=VALUE` with its requests, after
/// those `OTEL_EXPORTER_OTLP_HEADERS` names (a collector behind a gateway
/// that wants a token, say), to the base endpoint's `/v1/traces`.
#[test]
fn an_otlp_export_sends_the_headers_of_the_environment_and_of_the_command_line() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--quiet", "--run-id", "kept"]);
    let collector = Collector::start();
    let output = cli
        .command(&["export", "--otlp", &collector.endpoint, "--header", "x-team=agents", "--header", "x-token=from-the-flag", "kept"])
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-token=from-the-environment,x-tenant=acme")
        .output()
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let heads: Vec<String> = collector.heads.try_iter().collect();
    assert!(!heads.is_empty(), "no request reached the collector");
    let ours = |head: &String| -> (String, Vec<String>) {
        let mut lines = head.lines();
        let request = lines.next().unwrap_or_default().to_owned();
        let mut headers: Vec<String> = lines.map(str::to_ascii_lowercase).filter(|line| line.starts_with("x-")).collect();
        headers.sort();
        (request, headers)
    };
    let expected = (
        "POST /v1/traces HTTP/1.1".to_owned(),
        vec!["x-team: agents".to_owned(), "x-tenant: acme".to_owned(), "x-token: from-the-flag".to_owned()],
    );
    assert_eq!(heads.iter().map(ours).collect::<Vec<_>>(), vec![expected; heads.len()]);
}

/// `export --otlp RUN` (the README's `export --otlp --header … RUN`, the
/// endpoint from the environment): `--otlp` takes an optional value, so
/// the run was read as the endpoint and clap said no run was given. A
/// value that is no endpoint but names a run is the first run, and the
/// export is the one `export RUN --otlp` makes.
#[test]
fn export_otlp_followed_by_a_run_sends_that_run_to_the_endpoint_of_the_environment() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--quiet", "--run-id", "kept"]);
    let (endpoint, received) = super::support::otlp_receiver();
    let export = |args: &[&str]| {
        let output = cli
            .command(args)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .output()
            .unwrap_or_else(|error| panic!("{error}"));
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let expected = export(&["export", "kept", "--otlp"]);
    assert_eq!(expected.0, Some(0), "{}", expected.2);
    let outputs: Vec<_> = [
        vec!["export", "--otlp", "kept"],
        vec!["export", "--otlp", "latest"],
        vec!["export", "--otlp", "--header", "x-team=agents", "kept"],
        vec!["export", "--otlp", &endpoint, "kept"],
    ]
    .iter()
    .map(|args| export(args))
    .collect();
    assert_eq!(outputs, vec![expected; 4]);
    assert_eq!(received.load(std::sync::atomic::Ordering::SeqCst), 5);
}

/// A value after `--otlp` that is neither an endpoint nor a run is an
/// error saying both, and nothing is sent.
#[test]
fn export_otlp_followed_by_neither_an_endpoint_nor_a_run_says_so_and_sends_nothing() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--quiet", "--run-id", "kept"]);
    let (endpoint, received) = super::support::otlp_receiver();
    let output = cli
        .command(&["export", "--otlp", "nope", "kept"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .output()
        .unwrap_or_else(|error| panic!("{error}"));
    let runs = cli.home.path().join("runs");
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned()),
        (
            Some(1),
            String::new(),
            format!(
                "error: `nope` after --otlp is neither an OTLP endpoint (an http:// or https:// URL) nor a run: no run matches \"nope\" in {}\nhint: `agentrace export --otlp http://HOST:4318 RUN…`, or `agentrace export --otlp RUN…` with OTEL_EXPORTER_OTLP_ENDPOINT set\n",
                runs.display()
            )
        )
    );
    assert_eq!(received.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// The HTML report's `time` ended at the run's last logged line (the
/// session's end, 3 s after the root's answer here: `… – 23:03:41.866Z`)
/// where `show` ends it at the root's answer (`23:03:38.803Z (1.3 s)`), and
/// the Markdown report gave no time at all. Both now say what `show` says,
/// in the zone it says it in, and the timeline's times are in that zone too.
#[test]
fn a_reports_time_is_shows_ending_at_the_roots_answer_not_at_the_last_line() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_parallel"), &["--quiet", "--run-id", "timed"]);
    let in_zone = |zone: Option<&str>, args: &[&str]| {
        let mut command = cli.command(args);
        if let Some(zone) = zone {
            command.env("AGENTRACE_TZ", zone);
        }
        let output = command.output().unwrap_or_else(|error| panic!("agentrace: {error}"));
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap_or_else(|error| panic!("stdout: {error}"))
    };
    let times = |zone: Option<&str>| {
        let show = in_zone(zone, &["show", "timed"]);
        let html = in_zone(zone, &["export", "--html", "timed"]);
        let markdown = in_zone(zone, &["export", "--markdown", "timed"]);
        let first_row = |text: &str, starts: &str| {
            text.lines()
                .find(|line| line.starts_with(starts))
                .map(str::to_owned)
                .unwrap_or_else(|| panic!("no line starting {starts:?} in\n{text}"))
        };
        (
            first_row(&show, "time "),
            first_row(&html, "<dt>time</dt>"),
            first_row(&markdown, "| time | started"),
            first_row(&html, "<tr class=\"root\"><td class=\"time\">"),
            markdown
                .lines()
                .skip_while(|line| *line != "| --- | --- | --- | --- |")
                .nth(1)
                .map(str::to_owned)
                .unwrap_or_else(|| panic!("no timeline in\n{markdown}")),
        )
    };
    assert_eq!(
        times(None),
        (
            "time      started 2026-11-29T23:03:37.489Z, ended 2026-11-29T23:03:38.803Z (1.3 s)".to_owned(),
            "<dt>time</dt><dd>started 2026-11-29T23:03:37.489Z, ended 2026-11-29T23:03:38.803Z (1.3 s)</dd>".to_owned(),
            "| time | started 2026-11-29T23:03:37.489Z, ended 2026-11-29T23:03:38.803Z (1.3 s) |".to_owned(),
            "<tr class=\"root\"><td class=\"time\">23:03:37.540</td><td style=\"padding-left:0em\"><span class=\"badge root\">Main</span></td><td class=\"kind\">turn</td><td>turn started</td></tr>".to_owned(),
            "| 23:03:37.540 | Main | turn | turn started |".to_owned(),
        )
    );
    assert_eq!(
        times(Some("Asia/Tokyo")),
        (
            "time      started 2026-11-30T08:03:37.489+09:00, ended 2026-11-30T08:03:38.803+09:00 (1.3 s)".to_owned(),
            "<dt>time</dt><dd>started 2026-11-30T08:03:37.489+09:00, ended 2026-11-30T08:03:38.803+09:00 (1.3 s)</dd>".to_owned(),
            "| time | started 2026-11-30T08:03:37.489+09:00, ended 2026-11-30T08:03:38.803+09:00 (1.3 s) |".to_owned(),
            "<tr class=\"root\"><td class=\"time\">08:03:37.540</td><td style=\"padding-left:0em\"><span class=\"badge root\">Main</span></td><td class=\"kind\">turn</td><td>turn started</td></tr>".to_owned(),
            "| 08:03:37.540 | Main | turn | turn started |".to_owned(),
        )
    );
}

/// Two runs given to a one-run report exited 1, as a run refused after
/// looking does, and the hint named `--html` for a Markdown report. The
/// command line holds more than a report can: a usage error, exit 2, and
/// the hint names the format asked for. Nothing is written.
#[test]
fn two_runs_for_one_report_are_a_usage_error_naming_the_format_asked_for() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--quiet", "--run-id", "one"]);
    cli.ingest(&capture("v2_basic"), &["--quiet", "--run-id", "two"]);
    let file = cli.home.path().join("report.md");
    let file_arg = file.to_string_lossy().into_owned();
    let refused = |format: &str| {
        let output = cli.run(&["export", format, "one", "two", "-o", &file_arg]);
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let expected = |format: &str| {
        (
            Some(2),
            String::new(),
            format!(
                "error: a report is of one run, 2 were given\n\nhint: run `agentrace export {format} RUN -o FILE` once per run\n\nFor more information, try '--help'.\n"
            ),
        )
    };
    assert_eq!(
        (refused("--markdown"), refused("--html"), file.exists()),
        (expected("--markdown"), expected("--html"), false)
    );
}

/// `export -o FILE` emptied the report already there before writing the
/// new one, so a write that failed part way (a full disk; here a file size
/// limit) lost it. The new report is written beside it and renamed over
/// it: the old one stays whole until then, with its permissions.
#[test]
fn a_report_that_cannot_be_written_whole_leaves_the_one_there() {
    use std::os::unix::fs::PermissionsExt as _;
    let cli = Cli::new();
    let id = cli.ingest(&capture("real_model_nested"), &[]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let report = dir.path().join("report.html");
    cli.ok(&["export", "--html", &id, "-o", &report.to_string_lossy()]);
    std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o640)).unwrap_or_else(|e| panic!("{e}"));
    let before = std::fs::read(&report).unwrap_or_else(|e| panic!("{e}"));
    assert!(before.len() > 4096, "a report larger than the limit below");
    // A 2 KiB file size limit: the write fails (or the process is killed)
    // part way through the report.
    let limited = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 4; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_agentrace"))
        .args(["export", "--html", &id, "-o", &report.to_string_lossy()])
        .env("AGENTRACE_HOME", cli.home.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let mode = |path: &std::path::Path| std::fs::metadata(path).map(|metadata| metadata.permissions().mode() & 0o777).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((limited.status.success(), std::fs::read(&report).unwrap_or_else(|e| panic!("{e}")) == before, mode(&report)), (false, true, 0o640));
    // Written whole, it replaces the old one and keeps its permissions.
    cli.ok(&["export", "--markdown", &id, "-o", &report.to_string_lossy()]);
    assert_eq!((std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{e}")).starts_with("## agentrace run"), mode(&report)), (true, 0o640));
}

/// `export --max-bytes 0` was taken: it wrote the smallest report there is
/// and warned it was over 0 bytes. No report fits in 0 bytes: it is a
/// usage error in clap's words (exit 2), as other bad flag values are, and
/// nothing is written.
#[test]
fn a_max_bytes_of_zero_is_a_usage_error() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--quiet", "--run-id", "one"]);
    let refused = |format: &str| {
        let output = cli.run(&["export", format, "one", "--max-bytes", "0"]);
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let expected = (
        Some(2),
        String::new(),
        "error: invalid value '0' for '--max-bytes <BYTES>': 0 is not in 1..18446744073709551615\n\nFor more information, try '--help'.\n".to_owned(),
    );
    assert_eq!((refused("--markdown"), refused("--html")), (expected.clone(), expected));
}

/// A Markdown report printed `@name` in the text it quotes as it was:
/// pasted into a GitHub issue, each one notified that user. A mention is
/// put in a code span (still read as `@name`, never linked); an email
/// address, which GitHub does not take for a mention, is left as it is.
#[test]
fn a_markdown_report_quotes_mentions_without_notifying_anyone() {
    let cli = Cli::new();
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let stream = cli.home.path().join("mentions.jsonl");
    std::fs::write(&stream, text.replace("ROOT DONE: all sub-agents finished", "ROOT DONE: thanks @octocat and @my-org/reviewers (mail dev@example.com)"))
        .unwrap_or_else(|e| panic!("{e}"));
    cli.ingest(&stream, &["--quiet", "--run-id", "mentions"]);
    let report = cli.ok(&["export", "--markdown", "mentions"]);
    let quoted: Vec<&str> = report.lines().filter(|line| line.contains("ROOT DONE")).collect();
    assert_eq!(
        quoted,
        vec![
            "> ROOT DONE: thanks `@octocat` and `@my-org/reviewers` (mail dev@example.com); final answer from the root agent.",
            "- **Main** (root, completed) `01a2298c-93ba-7001-9862-9fd03c21f5d4` · 38 events · 3 tool calls · 22272 tokens · $? — ROOT DONE: thanks `@octocat` and `@my-org/reviewers` (mail dev@example.com); final answer from the root agent.",
            "| 23:03:29.439 | Main | message | assistant: ROOT DONE: thanks `@octocat` and `@my-org/reviewers` (mail dev@example.com); final answer from the root agent. |",
            "| 23:03:29.460 | Main | done | ROOT DONE: thanks `@octocat` and `@my-org/reviewers` (mail dev@example.com); final answer from the root agent. |",
        ]
    );
}
