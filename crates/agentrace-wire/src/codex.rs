//! Codex app-server JSON-RPC as the real `codex app-server` 0.169 speaks it on
//! stdio: one message per line, no `jsonrpc` member on server messages,
//! `emittedAtMs` on notifications, server→client request ids in their own id
//! space (tell requests from responses by the presence of `method`).
//!
//! Parse the envelope first ([`Message`]), the typed payload second (the
//! `*Params` types): an unknown method or item type is never an error here.

use serde::Deserialize;
use serde_json::Value;

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
    pub status: Option<String>,
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
    /// The item, kept as a value: decode it with [`Item::from_value`].
    pub item: Value,
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

/// A thread item, by its `type`. Unknown types are kept as [`Item::Unknown`].
#[derive(Debug, Clone)]
pub enum Item {
    /// The user's (or, for V1 children, the spawner's) message.
    UserMessage(UserMessage),
    /// An assistant message.
    AgentMessage(AgentMessage),
    /// Model reasoning.
    Reasoning(Reasoning),
    /// A shell command.
    CommandExecution(CommandExecution),
    /// A patch applied to files.
    FileChange(FileChange),
    /// A call to an MCP server tool.
    McpToolCall(McpToolCall),
    /// A web search.
    WebSearch(WebSearch),
    /// A collaboration tool call: spawn, wait, close, send input, resume.
    CollabAgentToolCall(CollabAgentToolCall),
    /// V2 sub-agent lifecycle notice on the parent thread.
    SubAgentActivity(SubAgentActivity),
    /// Any other item type, kept with its type name.
    Unknown {
        /// The `type` member, when there was one.
        item_type: Option<String>,
        /// The `id` member, when there was one.
        id: Option<String>,
    },
}

impl Item {
    /// Decodes an item value; anything that does not fit its type's shape
    /// becomes [`Item::Unknown`] rather than an error.
    pub fn from_value(value: &Value) -> Item {
        let item_type = value.get("type").and_then(Value::as_str);
        let parsed = match item_type {
            Some("userMessage") => UserMessage::deserialize(value).map(Item::UserMessage),
            Some("agentMessage") => AgentMessage::deserialize(value).map(Item::AgentMessage),
            Some("reasoning") => Reasoning::deserialize(value).map(Item::Reasoning),
            Some("commandExecution") => {
                CommandExecution::deserialize(value).map(Item::CommandExecution)
            }
            Some("fileChange") => FileChange::deserialize(value).map(Item::FileChange),
            Some("mcpToolCall") => McpToolCall::deserialize(value).map(Item::McpToolCall),
            Some("webSearch") => WebSearch::deserialize(value).map(Item::WebSearch),
            Some("collabAgentToolCall") => {
                CollabAgentToolCall::deserialize(value).map(Item::CollabAgentToolCall)
            }
            Some("subAgentActivity") => {
                SubAgentActivity::deserialize(value).map(Item::SubAgentActivity)
            }
            _ => return Item::unknown(value),
        };
        parsed.unwrap_or_else(|_| Item::unknown(value))
    }

    fn unknown(value: &Value) -> Item {
        Item::Unknown {
            item_type: value.get("type").and_then(Value::as_str).map(str::to_owned),
            id: value.get("id").and_then(Value::as_str).map(str::to_owned),
        }
    }
}

/// `userMessage` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// Item id.
    pub id: String,
    /// Content parts (`{type:"text", text}` and others).
    #[serde(default)]
    pub content: Vec<Value>,
    /// Client-chosen id of the message, if any.
    #[serde(default)]
    pub client_id: Option<String>,
}

impl UserMessage {
    /// The text parts joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `agentMessage` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessage {
    /// Item id (the Responses API message id; unique only within a thread).
    pub id: String,
    /// Message text.
    #[serde(default)]
    pub text: String,
    /// `final_answer`, `commentary`, or null when the provider sets none.
    #[serde(default)]
    pub phase: Option<String>,
}

/// `reasoning` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reasoning {
    /// Item id.
    pub id: String,
    /// Summary parts.
    #[serde(default)]
    pub summary: Vec<Value>,
    /// Full content parts.
    #[serde(default)]
    pub content: Vec<Value>,
}

/// `commandExecution` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecution {
    /// Item id (the model's call id).
    pub id: String,
    /// The command line.
    #[serde(default)]
    pub command: String,
    /// `inProgress`, `completed`, `failed`, `declined`.
    #[serde(default)]
    pub status: Option<String>,
    /// Exit code once ended.
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// Duration in milliseconds once ended.
    #[serde(default)]
    pub duration_ms: Option<i64>,
    /// Output so far.
    #[serde(default)]
    pub aggregated_output: Option<String>,
    /// Process id of a unified-exec process.
    #[serde(default)]
    pub process_id: Option<String>,
}

/// `fileChange` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Item id.
    pub id: String,
    /// The changes (`{path, kind, diff}`).
    #[serde(default)]
    pub changes: Vec<Value>,
    /// Item status.
    #[serde(default)]
    pub status: Option<String>,
}

/// `mcpToolCall` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCall {
    /// Item id.
    pub id: String,
    /// MCP server name.
    #[serde(default)]
    pub server: String,
    /// Tool name.
    #[serde(default)]
    pub tool: String,
    /// Call arguments.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// Item status.
    #[serde(default)]
    pub status: Option<String>,
    /// Result, when ended.
    #[serde(default)]
    pub result: Option<Value>,
    /// Error, when failed.
    #[serde(default)]
    pub error: Option<Value>,
    /// Duration in milliseconds once ended.
    #[serde(default)]
    pub duration_ms: Option<i64>,
}

/// `webSearch` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSearch {
    /// Item id.
    pub id: String,
    /// The query.
    #[serde(default)]
    pub query: String,
}

/// `collabAgentToolCall` item: spawn, wait, close, send input, resume.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CollabAgentToolCall {
    /// Item id (the model's call id, or `exec-<uuid>` from code mode).
    pub id: String,
    /// `spawnAgent`, `wait`, `closeAgent`, `sendInput`, `resumeAgent`, …
    #[serde(default)]
    pub tool: String,
    /// Item status.
    #[serde(default)]
    pub status: Option<String>,
    /// The thread that called the tool.
    #[serde(default)]
    pub sender_thread_id: Option<String>,
    /// Threads the call concerns (filled on a spawn's `item/completed` only).
    #[serde(default)]
    pub receiver_thread_ids: Vec<String>,
    /// Spawn or input message.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Requested model.
    #[serde(default)]
    pub model: Option<String>,
    /// Requested reasoning effort.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Per-receiver state: `{status, message}`.
    #[serde(default)]
    pub agents_states: serde_json::Map<String, Value>,
}

/// One entry of `agentsStates`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentState {
    /// `pendingInit`, `running`, `completed`, `errored`, `shutdown`, …
    #[serde(default)]
    pub status: Option<String>,
    /// The agent's final (or error) message.
    #[serde(default)]
    pub message: Option<String>,
}

/// `subAgentActivity` item (V2).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentActivity {
    /// Item id.
    pub id: String,
    /// `started`, `completed`, `interacted`, `interrupted`, …
    #[serde(default)]
    pub kind: String,
    /// The child thread.
    #[serde(default)]
    pub agent_thread_id: Option<String>,
    /// The child's task path, e.g. `/root/child_a`.
    #[serde(default)]
    pub agent_path: Option<String>,
    /// The child's model.
    #[serde(default)]
    pub model: Option<String>,
    /// The child's reasoning effort.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
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
/// `thread/list` answers).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
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
    #[serde(default)]
    pub turns: Vec<Turn>,
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

impl Thread {
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
