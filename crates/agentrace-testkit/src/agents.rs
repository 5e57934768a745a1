//! Finds the real agent CLIs the integration tests drive: the pinned npm
//! installs made by `scripts/install-agents` (see `scripts/test`).

use std::path::PathBuf;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn find(variable: &str, relative: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(variable).filter(|value| !value.is_empty()) {
        return PathBuf::from(path);
    }
    repo_root().join(relative)
}

/// The `@openai/codex` version the live tests are pinned to (the one
/// `scripts/install-agents` installs).
pub const CODEX_VERSION: &str = "0.171.0";

/// The real `codex` CLI (`AGENTRACE_TEST_CODEX`, else `.tools/agents`), of
/// the pinned [`CODEX_VERSION`]. Panics with a hint when it is missing or
/// another version: these tests never skip, and a result on another
/// version says nothing of this one.
pub fn codex() -> PathBuf {
    let path = find("AGENTRACE_TEST_CODEX", ".tools/agents/node_modules/.bin/codex");
    assert!(
        path.exists(),
        "the real codex CLI is not installed at {}; run scripts/install-agents (scripts/test does)",
        path.display()
    );
    let version = std::process::Command::new(&path)
        .arg("--version")
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_else(|e| panic!("{} --version: {e}", path.display()));
    assert_eq!(
        version,
        format!("codex-cli {CODEX_VERSION}"),
        "{} is not the pinned codex; run scripts/install-agents",
        path.display()
    );
    path
}

/// The real `claude` CLI (`AGENTRACE_TEST_CLAUDE`, else `.tools/agents`).
/// Panics with a hint when it is missing: these tests never skip.
pub fn claude() -> PathBuf {
    let path = find(
        "AGENTRACE_TEST_CLAUDE",
        ".tools/agents/node_modules/@anthropic-ai/claude-code/bin/claude.exe",
    );
    assert!(
        path.exists(),
        "the real claude CLI is not installed at {}; run scripts/install-agents (scripts/test does)",
        path.display()
    );
    path
}

/// The real `ccusage` (`AGENTRACE_TEST_CCUSAGE`, else `.tools/agents`): the
/// independent reading of the same files that usage totals are held to.
/// Panics with a hint when it is missing: these tests never skip.
pub fn ccusage() -> PathBuf {
    let path = find("AGENTRACE_TEST_CCUSAGE", ".tools/agents/node_modules/.bin/ccusage");
    assert!(
        path.exists(),
        "ccusage is not installed at {}; run scripts/install-agents (scripts/test does)",
        path.display()
    );
    path
}
