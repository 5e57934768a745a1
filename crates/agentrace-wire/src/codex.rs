//! Codex app-server JSON-RPC as the real `codex app-server` 0.169 and 0.171 speak it on
//! stdio: one message per line, no `jsonrpc` member on server messages,
//! `emittedAtMs` on notifications, server→client request ids in their own id
//! space (tell requests from responses by the presence of `method`).
//!
//! Parse the envelope first ([`Frame`], its members borrowed from the line;
//! [`Message`] for a client that wants them owned), the typed payload second:
//! [`Notification`] and [`ServerRequest`] have one row per method, and an
//! unknown method or item type is never an error here.

use std::borrow::Cow;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

mod items;
mod methods;
mod read_frame;

pub use items::{
    AgentMessage, AgentState, CollabAgentToolCall, CommandExecution, FileChange, Item,
    McpToolCall, Reasoning, SubAgentActivity, UserMessage, WebSearch,
};
pub use methods::{
    Notification, ReadResult, ResponseResult, ServerRequest, ServerRequestParams, TurnHead,
};
pub use read_frame::ReadFrame;

/// Every line of the repo's Codex app-server captures (0.169 and 0.171),
/// capture by capture: what this module's tests read every way they can.
#[cfg(test)]
fn capture_lines() -> Vec<String> {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures"));
    let mut lines = Vec::new();
    for folder in ["codex", "codex-0.171"] {
        let mut captures: Vec<_> = std::fs::read_dir(root.join(folder))
            .unwrap_or_else(|e| panic!("{folder}: {e}"))
            .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path().join("server.jsonl"))
            .filter(|path| path.is_file())
            .collect();
        captures.sort();
        for capture in captures {
            let text = std::fs::read_to_string(&capture).unwrap_or_else(|e| panic!("{}: {e}", capture.display()));
            lines.extend(text.lines().map(str::to_owned));
        }
    }
    lines
}

/// One JSON-RPC line, before we know what it is.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Request or response id (numbers and strings both occur).
    #[serde(default)]
    pub id: Option<Value>,
    /// Present on requests and notifications.
    #[serde(default)]
    pub method: Option<String>,
    /// Request or notification parameters.
    #[serde(default)]
    pub params: Option<Value>,
    /// Successful response payload.
    #[serde(default)]
    pub result: Option<Value>,
    /// Error response payload.
    #[serde(default)]
    pub error: Option<Value>,
    /// Server emission time of a notification, Unix milliseconds.
    #[serde(default)]
    pub emitted_at_ms: Option<i64>,
}

/// What kind of JSON-RPC message a [`Message`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// `method` and `id`: a request.
    Request,
    /// `method` without `id`: a notification.
    Notification,
    /// `id` with `result` or `error`: a response.
    Response,
    /// None of the above (still valid JSON).
    Other,
}

impl Message {
    /// Classifies the message by the members it has.
    pub fn kind(&self) -> MessageKind {
        match (&self.method, &self.id) {
            (Some(_), Some(id)) if !id.is_null() => MessageKind::Request,
            (Some(_), _) => MessageKind::Notification,
            (None, Some(_)) if self.result.is_some() || self.error.is_some() => {
                MessageKind::Response
            }
            _ => MessageKind::Other,
        }
    }
}

/// One JSON-RPC line with its payload members borrowed from the line's text:
/// nothing is built but the small members, so the typed payload
/// ([`Notification::decode`], [`ServerRequest::decode`], [`ResponseResult`])
/// is the only parse of it. `R` is what `result` is read as: as written, or
/// [`ReadResult`], read in the frame's own walk.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Frame<'a, R = &'a RawValue> {
    /// Request or response id (numbers and strings both occur).
    #[serde(default)]
    pub id: Option<Value>,
    /// Present on requests and notifications.
    #[serde(default, borrow)]
    pub method: Option<Cow<'a, str>>,
    /// Request or notification parameters, as written.
    #[serde(default, borrow)]
    pub params: Option<&'a RawValue>,
    /// Successful response payload (a missing `Option` member reads as
    /// `None`; `default` here would ask `R: Default` of every `R`).
    pub result: Option<R>,
    /// Error response payload, as written.
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
    /// Server emission time of a notification, Unix milliseconds (absent
    /// when it is not an integer).
    #[serde(default, deserialize_with = "lenient_field")]
    pub emitted_at_ms: Option<i64>,
}

impl<'a, R> Frame<'a, R> {
    /// The same frame with `result` in its place.
    pub fn with_result<S>(self, result: Option<S>) -> Frame<'a, S> {
        let Frame {
            id,
            method,
            params,
            result: _,
            error,
            emitted_at_ms,
        } = self;
        Frame {
            id,
            method,
            params,
            result,
            error,
            emitted_at_ms,
        }
    }

    /// Classifies the frame by the members it has (as [`Message::kind`]).
    pub fn kind(&self) -> MessageKind {
        match (&self.method, &self.id) {
            (Some(_), Some(id)) if !id.is_null() => MessageKind::Request,
            (Some(_), _) => MessageKind::Notification,
            (None, Some(_)) if self.result.is_some() || self.error.is_some() => {
                MessageKind::Response
            }
            _ => MessageKind::Other,
        }
    }
}

/// Decodes `T` from a payload as written; an absent payload reads as `{}`.
fn strict<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, serde_json::Error> {
    serde_json::from_str(params.map_or("{}", RawValue::get))
}

/// Decodes `T` from a payload, its default when the payload has another
/// shape (for payloads read only for what they may say, like a notice's text).
fn lenient<T: DeserializeOwned + Default>(
    params: Option<&RawValue>,
) -> Result<T, serde_json::Error> {
    Ok(strict(params).unwrap_or_default())
}

/// A field that keeps its default when its value has another shape.
fn lenient_field<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(
    deserializer: D,
) -> Result<T, D::Error> {
    let raw = <&RawValue>::deserialize(deserializer)?;
    Ok(serde_json::from_str(raw.get()).unwrap_or_default())
}

/// True for a member that is there at all (`null` included).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(deserializer).map(|_| true)
}

/// Enums of values upstream may add to: the known ones, else `Other` with
/// the text as written. Reading never fails on a new value.
macro_rules! known_or_other {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A value this build does not know, as written.
            Other(String),
        }

        impl $name {
            /// Reads a value as written.
            pub fn parse(text: &str) -> Self {
                match text {
                    $($text => $name::$variant,)*
                    other => $name::Other(other.to_owned()),
                }
            }

            /// The value as upstream spells it.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)*
                    $name::Other(text) => text,
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = Cow::<'de, str>::deserialize(deserializer)?;
                Ok($name::parse(&text))
            }
        }
    };
}

known_or_other! {
    /// The phase of an `agentMessage` (null, i.e. `None`, when the provider
    /// sets none).
    Phase {
        /// The turn's answer.
        FinalAnswer = "final_answer",
        /// Progress talk; never the answer.
        Commentary = "commentary",
    }
}

known_or_other! {
    /// The status of a turn.
    TurnStatus {
        /// Still running.
        InProgress = "inProgress",
        /// Ended normally.
        Completed = "completed",
        /// Interrupted (by the user, a close, or a restart that cut it).
        Interrupted = "interrupted",
        /// Ended in an error.
        Failed = "failed",
    }
}

/// The one thread a payload names: `threadId`, else `thread.id` (an empty
/// id names none).
pub trait NamesThread {
    /// The thread, if the payload names one.
    fn thread_id(&self) -> Option<&str>;
}

fn non_empty(id: Option<&str>) -> Option<&str> {
    id.filter(|id| !id.is_empty())
}

/// `{id}` of a nested thread object.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct IdOnly {
    /// The id.
    #[serde(default)]
    pub id: Option<String>,
}

/// What any payload says of its thread: for methods with no typed payload
/// (client requests, unknown methods).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRef {
    /// `threadId`.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread_id: Option<String>,
    /// `thread`, when it is an object with an id.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread: Option<IdOnly>,
}

impl ThreadRef {
    /// What `params` says of its thread (nothing when it is not an object).
    pub fn of(params: Option<&RawValue>) -> ThreadRef {
        strict(params).unwrap_or_default()
    }
}

impl NamesThread for ThreadRef {
    fn thread_id(&self) -> Option<&str> {
        non_empty(
            self.thread_id
                .as_deref()
                .or_else(|| self.thread.as_ref().and_then(|thread| thread.id.as_deref())),
        )
    }
}

/// A text member that may hold another shape (then it says nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MaybeText(pub Option<String>);

impl<'de> Deserialize<'de> for MaybeText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&RawValue>::deserialize(deserializer)?;
        Ok(MaybeText(serde_json::from_str(raw.get()).ok()))
    }
}

/// Params of the notices (notifications with no attribution meaning): what
/// they may say, read leniently.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoticeParams {
    /// `threadId`.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread_id: Option<String>,
    /// `thread`, when it is an object with an id.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread: Option<IdOnly>,
    /// `message`, when it is text.
    #[serde(default)]
    pub message: Option<MaybeText>,
    /// `summary`, when it is text.
    #[serde(default)]
    pub summary: Option<MaybeText>,
}

impl NoticeParams {
    /// The notice's text: `message`, else `summary` (a `message` that is not
    /// text hides `summary`, as it always did).
    pub fn text(&self) -> Option<&str> {
        match (&self.message, &self.summary) {
            (Some(message), _) => message.0.as_deref(),
            (None, Some(summary)) => summary.0.as_deref(),
            (None, None) => None,
        }
    }
}

impl NamesThread for NoticeParams {
    fn thread_id(&self) -> Option<&str> {
        non_empty(
            self.thread_id
                .as_deref()
                .or_else(|| self.thread.as_ref().and_then(|thread| thread.id.as_deref())),
        )
    }
}

/// Params of `thread/started`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartedParams {
    /// The thread.
    pub thread: Thread,
}

impl NamesThread for ThreadStartedParams {
    fn thread_id(&self) -> Option<&str> {
        non_empty(Some(&self.thread.id))
    }
}

/// Params of `thread/settings/updated` (0.171): the settings a thread runs
/// with from now on, sent when a client's `turn/start` overrides them (its
/// `model`, say).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettingsUpdatedParams {
    /// The thread.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread_id: Option<String>,
    /// Its settings.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread_settings: ThreadSettings,
}

impl NamesThread for SettingsUpdatedParams {
    fn thread_id(&self) -> Option<&str> {
        non_empty(self.thread_id.as_deref())
    }
}

/// What agentrace reads of a thread's settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSettings {
    /// The model its turns run.
    #[serde(default, deserialize_with = "lenient_field")]
    pub model: Option<String>,
    /// The service tier its requests ask for (`flex`, `priority`; null for
    /// the default), as the server sends it to the model's API.
    #[serde(default, deserialize_with = "lenient_field")]
    pub service_tier: Option<String>,
}

/// Params of `item/commandExecution/terminalInteraction`: input written to
/// a running command's terminal.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalInteractionParams {
    /// The thread.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(default, deserialize_with = "lenient_field")]
    pub turn_id: Option<String>,
    /// The command item written to.
    #[serde(default, deserialize_with = "lenient_field")]
    pub item_id: Option<String>,
    /// Its process.
    #[serde(default, deserialize_with = "lenient_field")]
    pub process_id: Option<String>,
}

impl NamesThread for TerminalInteractionParams {
    fn thread_id(&self) -> Option<&str> {
        non_empty(self.thread_id.as_deref())
    }
}

macro_rules! names_thread_by_id {
    ($($ty:ty),*) => {
        $(impl NamesThread for $ty {
            fn thread_id(&self) -> Option<&str> {
                non_empty(self.thread_id.as_deref())
            }
        })*
    };
}

names_thread_by_id!(
    TurnParams,
    ItemParams,
    DeltaParams,
    StatusChangedParams,
    TokenUsageParams,
    ErrorParams
);

/// Params of `turn/started` and `turn/completed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnParams {
    /// Thread that owns the turn.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The turn.
    pub turn: Turn,
}

/// A turn as the server reports it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// Turn id.
    pub id: String,
    /// Id of the root's turn that caused this one (children carry the root's).
    #[serde(default)]
    pub root_turn_id: Option<String>,
    /// Items of the turn (the `summary` view on `turn/completed`).
    #[serde(default)]
    pub items: Vec<Value>,
    /// `inProgress`, `completed`, `interrupted`, `failed`, …
    #[serde(default)]
    pub status: Option<TurnStatus>,
    /// The provider's error when the turn failed.
    #[serde(default)]
    pub error: Option<TurnError>,
    /// Duration in milliseconds, once ended.
    #[serde(default)]
    pub duration_ms: Option<i64>,
    /// How much of `items` is there: `notLoaded`, `summary` or `full`.
    #[serde(default)]
    pub items_view: Option<String>,
    /// Start time, Unix seconds.
    #[serde(default)]
    pub started_at: Option<i64>,
    /// End time, Unix seconds (null while running, and for a turn a restart cut).
    #[serde(default)]
    pub completed_at: Option<i64>,
}

/// An error object as it appears on turns and `error` notifications.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// Human-readable message.
    #[serde(default)]
    pub message: Option<String>,
    /// Codex's error classification (a string or an object).
    #[serde(default)]
    pub codex_error_info: Option<Value>,
}

/// Params of `item/started` and `item/completed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemParams {
    /// Thread that owns the item.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Turn that owns the item.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The item.
    pub item: Item,
}

/// Params of the streaming delta notifications
/// (`item/agentMessage/delta`, `item/commandExecution/outputDelta`, …).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeltaParams {
    /// Thread that owns the item.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Turn that owns the item.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The item the delta belongs to.
    #[serde(default)]
    pub item_id: Option<String>,
    /// The text added.
    #[serde(default)]
    pub delta: Option<String>,
}

/// Params of `thread/status/changed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusChangedParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Its new status.
    #[serde(default)]
    pub status: ThreadStatus,
}

/// A thread status: `{type, activeFlags?}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStatus {
    /// `idle`, `active`, `notLoaded`, `systemError`, …
    #[serde(default, rename = "type")]
    pub status_type: Option<String>,
    /// `waitingOnApproval`, `waitingOnUserInput`, …
    #[serde(default)]
    pub active_flags: Vec<String>,
}

/// Params of `thread/tokenUsage/updated`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageParams {
    /// The thread (usage is per thread; the root's does not include children).
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Running total and last response.
    #[serde(default)]
    pub token_usage: TokenUsageInfo,
}

/// `tokenUsage` member.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageInfo {
    /// Running total of the thread.
    #[serde(default)]
    pub total: TokenBreakdown,
    /// Usage of the latest model response.
    #[serde(default)]
    pub last: TokenBreakdown,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenBreakdown {
    /// All tokens.
    #[serde(default)]
    pub total_tokens: u64,
    /// Input tokens (cached included).
    #[serde(default)]
    pub input_tokens: u64,
    /// Cached input tokens.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_input_tokens: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output_tokens: u64,
    /// Reasoning output tokens.
    #[serde(default)]
    pub reasoning_output_tokens: u64,
}

/// Params of the `error` notification.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The error.
    #[serde(default)]
    pub error: TurnError,
    /// Whether Codex will retry (then the turn goes on).
    #[serde(default)]
    pub will_retry: Option<bool>,
}

/// A thread object (`thread/started`, `thread/start`, `thread/read`,
/// `thread/list` answers), its turns read as `T`: whole [`Turn`]s, or
/// [`TurnHead`]s for a reader that needs only how each ended.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread<T = Turn> {
    /// Thread id.
    pub id: String,
    /// Parent thread (null in `thread/list` entries even for sub-agents).
    #[serde(default)]
    pub parent_thread_id: Option<String>,
    /// Where the thread came from: a string (`vscode`) or `{subAgent:{…}}`.
    #[serde(default)]
    pub source: Option<Value>,
    /// `subagent` for sub-agents.
    #[serde(default)]
    pub thread_source: Option<String>,
    /// Nickname of a sub-agent.
    #[serde(default)]
    pub agent_nickname: Option<String>,
    /// Role of a sub-agent.
    #[serde(default)]
    pub agent_role: Option<String>,
    /// Model.
    #[serde(default)]
    pub model: Option<String>,
    /// Rollout path.
    #[serde(default)]
    pub path: Option<String>,
    /// Loaded state: `idle`, `active`, `notLoaded`, `systemError`.
    #[serde(default)]
    pub status: ThreadStatus,
    /// Configured reasoning effort (null when the model's default applies).
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Version of the Codex CLI that wrote the thread.
    #[serde(default)]
    pub cli_version: Option<String>,
    /// Turns, when the read asked for them.
    #[serde(default = "Vec::new")]
    pub turns: Vec<T>,
}

/// `source.subAgent.thread_spawn` (also `source.subagent…` in rollouts).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct ThreadSpawn {
    /// The spawner.
    #[serde(default)]
    pub parent_thread_id: Option<String>,
    /// Depth below the root.
    #[serde(default)]
    pub depth: Option<u32>,
    /// V2 task path.
    #[serde(default)]
    pub agent_path: Option<String>,
    /// Nickname.
    #[serde(default)]
    pub agent_nickname: Option<String>,
    /// Role.
    #[serde(default)]
    pub agent_role: Option<String>,
}

impl<T> Thread<T> {
    /// The `thread_spawn` source of a sub-agent, if this thread is one.
    pub fn thread_spawn(&self) -> Option<ThreadSpawn> {
        let source = self.source.as_ref()?;
        let sub = source.get("subAgent").or_else(|| source.get("subagent"))?;
        let spawn = sub.get("thread_spawn")?;
        ThreadSpawn::deserialize(spawn).ok()
    }
}

/// Result of `thread/read`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadResult {
    /// The thread.
    pub thread: Thread,
}

/// Result of `thread/turns/list`: one page of turns.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnsListResult {
    /// The turns of this page, in the requested order.
    #[serde(default)]
    pub data: Vec<Turn>,
    /// Cursor of the next page; null on the last one.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// Result of `thread/items/list`: one page of items.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemsListResult {
    /// The items of this page.
    #[serde(default)]
    pub data: Vec<ItemEntry>,
    /// Cursor of the next page (a JSON string); null on the last one.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// One entry of `thread/items/list`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemEntry {
    /// The turn that holds the item.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The item, kept as a value: decode it with [`Item::from_value`].
    pub item: Value,
}

/// The `error` member of a JSON-RPC error answer.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RpcError {
    /// JSON-RPC error code (`-32600` for the host's "not loaded"/"not found").
    #[serde(default)]
    pub code: i64,
    /// Human-readable message, e.g. `thread not loaded: <id>`.
    #[serde(default)]
    pub message: String,
    /// Extra data, when the host gives any.
    #[serde(default)]
    pub data: Option<Value>,
}

/// One line of a rollout file (`CODEX_HOME/sessions/…/rollout-*.jsonl`).
#[derive(Debug, Clone, Deserialize)]
pub struct RolloutLine {
    /// `session_meta`, `event_msg`, `response_item`, `turn_context`, …
    #[serde(default, rename = "type")]
    pub line_type: Option<String>,
    /// The payload; its `type` says which event or item it is.
    #[serde(default)]
    pub payload: Value,
}

/// Payload of an `event_msg` of type `token_count`.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenCountPayload {
    /// Null when a stream failed after it started.
    #[serde(default)]
    pub info: Option<TokenCountInfo>,
}

/// `info` of a `token_count` event: per-thread cumulative usage.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenCountInfo {
    /// The thread's running total, kept as written.
    #[serde(default)]
    pub total_token_usage: Option<Value>,
    /// The usage of the latest model response, kept as written.
    #[serde(default)]
    pub last_token_usage: Option<Value>,
}
