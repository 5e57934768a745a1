//! Token totals read from a rollout file, without a host: the
//! `total_token_usage` of the last `token_count` event whose `info` is set.
//! Read only; never writes.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use agentrace_wire::codex::{RolloutLine, TokenCountPayload};
use serde::{Deserialize as _, Serialize};
use serde_json::Value;

use crate::error::HostError;

/// What a rollout says about a thread's tokens.
///
/// Serialized as `{"measured": true, "total": {…}}` or `{"measured": false}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    /// True when the rollout has a `token_count` event with `info`.
    pub measured: bool,
    /// That event's `total_token_usage`, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<Value>,
}

impl Tokens {
    /// No token count: absent rollout, or none written yet.
    pub fn unmeasured() -> Self {
        Tokens {
            measured: false,
            total: None,
        }
    }
}

/// Reads `rollout_path` line by line and keeps the last `token_count` event
/// with `info`. An absent file, or one with no such event, is unmeasured; an
/// undecodable line is skipped; bytes after the last line feed (a write in
/// progress) are left out; a file that exists and cannot be read is an error.
pub fn tokens(rollout_path: &Path) -> Result<Tokens, HostError> {
    let unreadable = |source| HostError::Rollout {
        path: rollout_path.to_owned(),
        source,
    };
    let file = match File::open(rollout_path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Tokens::unmeasured()),
        Err(error) => return Err(unreadable(error)),
    };
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let mut last = Tokens::unmeasured();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(unreadable)?;
        if read == 0 || line.last() != Some(&b'\n') {
            return Ok(last);
        }
        if let Some(total) = token_total(&line) {
            last = Tokens {
                measured: true,
                total: Some(total),
            };
        }
    }
}

/// The `total_token_usage` of one rollout line, when it is a `token_count`
/// event with `info`.
fn token_total(line: &[u8]) -> Option<Value> {
    let line: RolloutLine = serde_json::from_slice(line).ok()?;
    if line.line_type.as_deref() != Some("event_msg")
        || line.payload.get("type").and_then(Value::as_str) != Some("token_count")
    {
        return None;
    }
    let payload = TokenCountPayload::deserialize(&line.payload).ok()?;
    payload.info?.total_token_usage
}
