//! The one error type of the session host. "The host has no such thread" is
//! [`HostError::NotFound`]; a transport failure is never that.

use std::path::PathBuf;
use std::time::Duration;

/// What can go wrong talking to a Codex App Server or reading its files.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The host answered that the thread is not there (unknown thread, no rollout).
    #[error("{method}: the host has no such thread: {message}")]
    NotFound {
        /// The request that was answered.
        method: String,
        /// The host's message, e.g. `thread not loaded: <id>`.
        message: String,
    },
    /// The host answered the request with any other JSON-RPC error.
    #[error("{method}: the host answered error {code}: {message}")]
    Rpc {
        /// The request that was answered.
        method: String,
        /// JSON-RPC error code.
        code: i64,
        /// The host's message.
        message: String,
    },
    /// No answer came in time; the request is forgotten.
    #[error("{method}: no answer from the host within {timeout:?}")]
    Timeout {
        /// The request that timed out.
        method: String,
        /// How long we waited.
        timeout: Duration,
    },
    /// The connection ended before the answer came (or was already closed).
    #[error("{method}: the connection to the host is closed ({reason})")]
    Closed {
        /// The request that could not be answered.
        method: String,
        /// Why the connection ended, as far as we know.
        reason: String,
    },
    /// The answer came but does not have the shape the request promises.
    #[error("{method}: the host's answer does not decode")]
    Decode {
        /// The request that was answered.
        method: String,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
    /// The `codex app-server` process could not be started.
    #[error("cannot start `{program} app-server`")]
    Spawn {
        /// The program we tried to run.
        program: PathBuf,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A unix socket or WebSocket endpoint could not be reached.
    #[error("cannot connect to {endpoint}")]
    Connect {
        /// The endpoint, as given.
        endpoint: String,
        /// Why it failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The endpoint text is not `stdio`, `unix://PATH` or `ws://HOST:PORT`.
    #[error("`{0}` is not an endpoint (expected stdio, unix://PATH or ws://HOST:PORT)")]
    Endpoint(String),
    /// The text given as an operation is not one.
    #[error("`{0}` is not an operation (expected <call>/t<k>-a<n> or <call>/t<k>)")]
    InvalidOp(String),
    /// A rollout file exists but cannot be read.
    #[error("cannot read rollout {}", path.display())]
    Rollout {
        /// The rollout file.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

impl HostError {
    /// True when the host said the thread is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, HostError::NotFound { .. })
    }
}

/// The messages with which a 0.169 host says a thread is not there
/// (`-32600` answers; see the `probe_unknown_thread_ids` capture).
const NOT_FOUND_PREFIXES: [&str; 3] = [
    "thread not loaded:",
    "thread not found:",
    "no rollout found for thread id",
];

/// Turns a JSON-RPC error answer into a [`HostError`].
pub(crate) fn from_rpc(method: &str, code: i64, message: String) -> HostError {
    // Only the invalid-request code carries these texts; a -32601 for an
    // unknown thread on thread/items/list reads "not supported yet" and is
    // left an ordinary error rather than guessed at.
    if code == -32600 && NOT_FOUND_PREFIXES.iter().any(|p| message.starts_with(p)) {
        HostError::NotFound {
            method: method.to_owned(),
            message,
        }
    } else {
        HostError::Rpc {
            method: method.to_owned(),
            code,
            message,
        }
    }
}
