//! Runs the real binary with its own data dir.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A temporary `AGENTRACE_HOME` and a way to run the binary in it.
pub struct Cli {
    pub home: tempfile::TempDir,
}

impl Cli {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}")),
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentrace"));
        command
            .args(args)
            .env("AGENTRACE_HOME", self.home.path())
            // `agentrace` alone imports from these: never the machine's own
            // history (a test that wants one sets them again).
            .env("CODEX_HOME", self.home.path().join("no-codex-home"))
            .env("CLAUDE_CONFIG_DIR", self.home.path().join("no-claude-dir"))
            .env("NO_COLOR", "1")
            // Days are UTC unless a test names a zone, and the machine's
            // own zone is UTC whatever the machine's (`--tz local`).
            .env_remove("AGENTRACE_TZ")
            .env("TZ", "UTC")
            .stdin(Stdio::null());
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run agentrace: {e}"))
    }

    /// Runs and requires success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "agentrace {args:?} failed: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap_or_else(|e| panic!("stdout not UTF-8: {e}"))
    }

    /// Ingests a file; returns the run id (the last stdout line).
    pub fn ingest(&self, path: &Path, extra: &[&str]) -> String {
        let path = path.to_string_lossy().into_owned();
        let mut args = vec!["ingest"];
        args.extend_from_slice(extra);
        args.push(&path);
        let stdout = self.ok(&args);
        stdout.lines().last().unwrap_or_default().to_owned()
    }
}

/// A capture's `server.jsonl`.
pub fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/codex")
        .join(name)
        .join("server.jsonl")
}

/// A loopback OTLP receiver that answers 200 and counts the trace requests.
pub fn otlp_receiver() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&count);
    let address = loopback_http(200, "application/x-protobuf", b"", move |request| {
        if request.starts_with(b"POST /v1/traces") {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    (address, count)
}

/// A loopback HTTP server (`http://ADDR`) that reads each request whole
/// (its head, then the body its Content-Length announces), hands it to
/// `seen`, and answers `status` with `body`; at most 64 requests.
pub fn loopback_http(status: u16, content_type: &'static str, body: &'static [u8], seen: impl Fn(&[u8]) + Send + 'static) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let address = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let mut request = Vec::new();
            let mut buffer = [0u8; 65536];
            while let Ok(read) = stream.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                request.extend_from_slice(&buffer[..read]);
                let text = String::from_utf8_lossy(&request).to_lowercase();
                if let Some(head_end) = text.find("\r\n\r\n") {
                    let length = text
                        .lines()
                        .find_map(|line| line.strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
                        .unwrap_or(0);
                    if request.len() >= head_end + 4 + length {
                        break;
                    }
                }
            }
            seen(&request);
            let head = format!("HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body);
        }
    });
    format!("http://{address}")
}

/// The event masks of every inotify watch process `pid` holds, as the
/// kernel lists them (`/proc/PID/fdinfo`): what it asked to be told of.
pub fn inotify_masks(pid: u32) -> Vec<u32> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap_or_else(|e| panic!("{e}"));
    let mut masks = Vec::new();
    for fd in fds.map_while(Result::ok) {
        let is_inotify = std::fs::read_link(fd.path()).is_ok_and(|target| target.to_string_lossy().contains("inotify"));
        if !is_inotify {
            continue;
        }
        let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy())).unwrap_or_default();
        for line in info.lines().filter(|line| line.starts_with("inotify wd:")) {
            let mask = line
                .split_whitespace()
                .find_map(|field| field.strip_prefix("mask:"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .unwrap_or_else(|| panic!("no mask in {line:?}"));
            masks.push(mask);
        }
    }
    masks
}

/// The inotify events that only say a file was read (`IN_ACCESS`,
/// `IN_OPEN`, `IN_CLOSE_NOWRITE`), and the one that says it grew.
pub const IN_READ_ONLY: u32 = 0x01 | 0x20 | 0x10;
pub const IN_MODIFY: u32 = 0x02;

/// The CPU process `pid` has used so far, in clock ticks (user + system).
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_else(|e| panic!("{e}"));
    // After the command's name (in parentheses, which may hold spaces):
    // state is field 3, utime 14 and stime 15.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_else(|| panic!("{stat}"));
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |at: usize| fields.get(at).and_then(|field| field.parse::<u64>().ok()).unwrap_or_else(|| panic!("{stat}"));
    tick(11) + tick(12)
}

/// Writes under `codex_home` the rollout of a `codex exec` session whose
/// root's only model call failed (Codex 0.171: `task_complete` with an
/// error and no answer), naming `model` in a `turn_context` when given; it
/// reported no usage. Returns its thread id.
pub fn rollout_of_a_failed_call(codex_home: &Path, model: Option<&str>) -> &'static str {
    let day = codex_home.join("sessions/2026/11/29");
    std::fs::create_dir_all(&day).unwrap_or_else(|e| panic!("{e}"));
    let thread = "01a24dff-cc38-7be3-8bb9-8994572cf22c";
    let turn = "01a24dff-cc5c-7cc2-9966-8c648ab97640";
    let mut lines = vec![
        format!(r#"{{"timestamp":"2026-11-29T23:55:39.372Z","type":"session_meta","payload":{{"id":"{thread}","timestamp":"2026-11-29T23:55:39.325Z","cwd":"/work/app","source":"exec","cli_version":"0.171.0"}}}}"#),
        format!(r#"{{"timestamp":"2026-11-29T23:55:39.374Z","type":"event_msg","payload":{{"type":"task_started","turn_id":"{turn}","root_turn_id":"{turn}","started_at":1796604939}}}}"#),
    ];
    if let Some(model) = model {
        lines.push(format!(r#"{{"timestamp":"2026-11-29T23:55:39.380Z","type":"turn_context","payload":{{"turn_id":"{turn}","cwd":"/work/app","model":"{model}"}}}}"#));
    }
    lines.push(format!(r#"{{"timestamp":"2026-11-29T23:55:39.432Z","type":"event_msg","payload":{{"type":"task_complete","root_turn_id":"{turn}","turn_id":"{turn}","last_agent_message":null,"error":{{"message":"We are currently experiencing high demand.","codex_error_info":"internal_server_error"}},"duration_ms":66}}}}"#));
    std::fs::write(day.join(format!("rollout-2026-11-29T23-55-39-{thread}.jsonl")), lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    thread
}
