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
            .env("NO_COLOR", "1")
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
