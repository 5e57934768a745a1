//! `tokens(rollout)`: the last `token_count` with `info`, by the rules of §7.

use std::fs;

use agentrace_host::{tokens, HostError, Tokens};
use serde_json::json;

fn token_count(total: u64) -> String {
    json!({"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": total - 10, "cached_input_tokens": 0, "output_tokens": 10, "reasoning_output_tokens": 0, "total_tokens": total},
        "last_token_usage": {"total_tokens": 1}, "model_context_window": 1000}}})
    .to_string()
}

fn measured(total: u64) -> Tokens {
    Tokens {
        measured: true,
        total: Some(
            json!({"input_tokens": total - 10, "cached_input_tokens": 0, "output_tokens": 10, "reasoning_output_tokens": 0, "total_tokens": total}),
        ),
    }
}

#[test]
fn the_last_token_count_with_info_wins_over_a_later_one_without() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    let null_info = json!({"type": "event_msg", "payload": {"type": "token_count", "info": null}});
    let text = format!(
        "{}\n{}\n{}\n{}\n",
        token_count(100),
        token_count(250),
        null_info,
        json!({"type": "event_msg", "payload": {"type": "task_complete"}})
    );
    fs::write(&path, text).unwrap();
    assert_eq!(tokens(&path).unwrap(), measured(250));
}

#[test]
fn an_absent_rollout_is_unmeasured_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        tokens(&dir.path().join("missing.jsonl")).unwrap(),
        Tokens::unmeasured()
    );
}

#[test]
fn a_rollout_without_token_counts_is_unmeasured() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    fs::write(&path, "{\"type\":\"session_meta\",\"payload\":{}}\n").unwrap();
    assert_eq!(tokens(&path).unwrap(), Tokens::unmeasured());
}

#[test]
fn an_undecodable_line_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    let mut bytes = format!("{}\n{{not json\n", token_count(40)).into_bytes();
    bytes.extend_from_slice(b"\xff\xfe invalid utf-8\n");
    fs::write(&path, bytes).unwrap();
    assert_eq!(tokens(&path).unwrap(), measured(40));
}

#[test]
fn bytes_after_the_last_line_feed_are_a_write_in_progress_and_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    // The unfinished line is complete JSON: only the missing line feed says
    // the host had not finished writing it.
    fs::write(&path, format!("{}\n{}", token_count(40), token_count(90))).unwrap();
    assert_eq!(tokens(&path).unwrap(), measured(40));
}

#[test]
fn an_existing_rollout_that_cannot_be_read_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // A directory exists and opens, but reading it fails.
    let error = tokens(dir.path()).unwrap_err();
    assert!(
        matches!(&error, HostError::Rollout { path, .. } if path == dir.path()),
        "{error:?}"
    );
}

#[test]
fn tokens_serialize_as_the_cli_contract_says() {
    assert_eq!(
        serde_json::to_value(measured(40)).unwrap(),
        json!({"measured": true, "total": {"input_tokens": 30, "cached_input_tokens": 0, "output_tokens": 10, "reasoning_output_tokens": 0, "total_tokens": 40}})
    );
    assert_eq!(
        serde_json::to_value(Tokens::unmeasured()).unwrap(),
        json!({"measured": false})
    );
}
