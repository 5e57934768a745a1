//! The session host: a client for the Codex App Server that reads subagents
//! back (what a thread is, its turns, the subagent a step spawned, its
//! tokens), the pure helpers those reads share (answer, marker), and an
//! in-process fake host that speaks the same JSON-RPC for tests. It keeps
//! plain types and knows nothing of runs, the store or the CLI.

pub mod answer;
pub mod client;
pub mod error;
pub mod fake;
pub mod marker;
pub mod reads;
pub mod spawn;
pub mod tokens;

pub use answer::{final_answer, item_messages, pick_message};
pub use client::{
    Client, ClientOptions, Endpoint, Event, ServerReply, ServerRequest, StdioCommand,
};
pub use error::HostError;
pub use marker::{parse_marker, parse_op, Op};
pub use reads::{AgentInfo, AgentStatus, ErrorInfo, Host, TurnView};
pub use spawn::{FindOptions, Spawn, SpawnSearch, SpawnWarning, Via, WarningCode};
pub use tokens::{tokens, Tokens};
