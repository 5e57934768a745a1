//! `ingest` redacts what looks like a secret in the stored frames unless
//! `--keep-secrets` is given.

use super::support::{capture, Cli};

const KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";

fn with_key(cli: &Cli) -> std::path::PathBuf {
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let edited = text.replace(
        "ROOT DONE: all sub-agents finished; final answer from the root agent.",
        &format!("ROOT DONE with OPENAI_API_KEY={KEY} and Bearer {KEY}"),
    );
    assert_ne!(edited, text);
    let path = cli.home.path().join("with-key.jsonl");
    std::fs::write(&path, edited).unwrap_or_else(|e| panic!("{e}"));
    path
}

#[test]
fn ingest_redacts_keys_in_the_stored_log_and_keep_secrets_keeps_them() {
    let cli = Cli::new();
    let path = with_key(&cli);
    cli.ingest(&path, &["--run-id", "redacted", "--quiet"]);
    cli.ingest(&path, &["--run-id", "kept", "--quiet", "--keep-secrets"]);
    let log = |id: &str| {
        std::fs::read_to_string(cli.home.path().join("runs").join(format!("{id}.jsonl")))
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let (redacted, kept) = (log("redacted"), log("kept"));
    assert_eq!(
        (
            redacted.contains(KEY),
            redacted.contains("ROOT DONE with OPENAI_API_KEY=[REDACTED] and Bearer [REDACTED]"),
            kept.matches(KEY).count() > 0,
        ),
        (false, true, true)
    );
    let show: serde_json::Value = serde_json::from_str(&cli.ok(&["show", "redacted", "--json"]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        show["run"]["result"],
        serde_json::json!("ROOT DONE with OPENAI_API_KEY=[REDACTED] and Bearer [REDACTED]")
    );
}
