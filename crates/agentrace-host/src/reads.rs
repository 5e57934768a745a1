//! The reads of §7 on top of a [`Client`]: what a subagent is
//! ([`Host::read_agent`]), its turns ([`Host::turns`]) and interrupting one
//! ([`Host::interrupt`]). Answers become plain types here; the wire types
//! stay in `agentrace-wire`.

use agentrace_wire::codex::{ItemsListResult, Thread, ThreadReadResult, Turn, TurnsListResult};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use crate::answer::{final_answer, first_user_message, item_messages, pick_message};
use crate::client::{Client, ClientOptions, Endpoint};
use crate::error::HostError;
use crate::marker::{parse_marker, parse_op, Op};

/// A thread's loaded state as the host reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentStatus {
    /// Loaded, no turn running.
    Idle,
    /// Loaded, a turn running.
    Active,
    /// Not loaded in this host (finished subagent, or after a restart).
    NotLoaded,
    /// The thread's last turn failed at the system level.
    SystemError,
    /// A status this version does not know, kept as sent.
    Unknown(String),
}

impl AgentStatus {
    /// Reads the host's status `type`.
    pub fn from_wire(status_type: Option<&str>) -> Self {
        match status_type {
            Some("idle") => AgentStatus::Idle,
            Some("active") => AgentStatus::Active,
            Some("notLoaded") => AgentStatus::NotLoaded,
            Some("systemError") => AgentStatus::SystemError,
            other => AgentStatus::Unknown(other.unwrap_or_default().to_owned()),
        }
    }

    /// The host's spelling.
    pub fn as_str(&self) -> &str {
        match self {
            AgentStatus::Idle => "idle",
            AgentStatus::Active => "active",
            AgentStatus::NotLoaded => "notLoaded",
            AgentStatus::SystemError => "systemError",
            AgentStatus::Unknown(text) => text,
        }
    }
}

impl Serialize for AgentStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// What a thread is: the answer of [`Host::read_agent`].
///
/// Serialized in camelCase; this list may expand over time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// The thread.
    pub thread_id: String,
    /// The thread that spawned it (null for a root).
    pub parent_thread_id: Option<String>,
    /// Configured model ("" when the host gives none).
    pub model: String,
    /// Configured reasoning effort ("" for null: the model's default).
    pub effort: String,
    /// Working directory ("" when the host gives none).
    pub cwd: String,
    /// Role the spawner asked for.
    pub agent_role: Option<String>,
    /// Loaded state.
    pub status: AgentStatus,
    /// The rollout file.
    pub rollout_path: Option<String>,
    /// `subagent` for subagents.
    pub thread_source: Option<String>,
    /// The host's nickname for a subagent.
    pub nickname: Option<String>,
    /// Version of the Codex CLI that wrote the thread ("" when unknown).
    pub cli_version: String,
}

impl AgentInfo {
    /// The plain view of a wire thread. The spawn source fills what the
    /// top-level members leave null (`thread/list` entries null the parent).
    pub fn from_thread(thread: Thread) -> Self {
        let spawn = thread.thread_spawn().unwrap_or_default();
        AgentInfo {
            parent_thread_id: thread.parent_thread_id.or(spawn.parent_thread_id),
            model: thread.model.unwrap_or_default(),
            effort: thread.reasoning_effort.unwrap_or_default(),
            cwd: thread.cwd.unwrap_or_default(),
            agent_role: thread.agent_role.or(spawn.agent_role),
            status: AgentStatus::from_wire(thread.status.status_type.as_deref()),
            rollout_path: thread.path,
            thread_source: thread.thread_source,
            nickname: thread.agent_nickname.or(spawn.agent_nickname),
            cli_version: thread.cli_version.unwrap_or_default(),
            thread_id: thread.id,
        }
    }
}

/// A turn's error: message and Codex's error variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorInfo {
    /// The message.
    pub message: String,
    /// The `codexErrorInfo` variant (`internalServerError`, `other`, …).
    pub variant: Option<String>,
}

/// One turn as [`Host::turns`] gives it.
///
/// Serialized in camelCase; this list may expand over time.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnView {
    /// Turn id.
    pub id: String,
    /// The root turn that caused it.
    pub root_turn_id: Option<String>,
    /// `completed`, `interrupted`, `failed`, `inProgress`.
    pub status: String,
    /// What `items` holds: `summary`, `full` or `notLoaded`.
    pub items_view: String,
    /// Text of the first user message.
    pub first_user_text: Option<String>,
    /// The operation the turn runs: its first user message's `clientId` when
    /// that is one, else the marker on the message's first line.
    pub marker: Option<Op>,
    /// The turn's text ([`pick_message`]).
    pub final_text: Option<String>,
    /// That message's phase.
    pub final_phase: Option<String>,
    /// True when the turn has an answer ([`final_answer`]).
    pub answered: bool,
    /// The turn's error, if any.
    pub error_info: Option<ErrorInfo>,
    /// Completion time, else start time (Unix seconds).
    pub updated_at: Option<i64>,
    /// Why a full read could not complete the items: they are unreadable,
    /// not empty.
    pub read_error: Option<String>,
    /// The items read, as sent.
    pub items: Vec<Value>,
}

impl TurnView {
    /// The plain view of a wire turn.
    pub fn from_turn(turn: Turn) -> Self {
        let first_user = first_user_message(&turn.items);
        let marker = first_user.as_ref().and_then(|message| {
            message
                .client_id
                .as_deref()
                .and_then(parse_op)
                .or_else(|| parse_marker(&message.text()))
        });
        let messages = item_messages(&turn.items);
        let picked = pick_message(&messages);
        let error_info = turn.error.map(|error| ErrorInfo {
            message: error.message.unwrap_or_default(),
            variant: error.codex_error_info.as_ref().and_then(error_variant),
        });
        TurnView {
            root_turn_id: turn.root_turn_id,
            status: turn
                .status
                .as_ref()
                .map(|status| status.as_str().to_owned())
                .unwrap_or_default(),
            items_view: turn.items_view.unwrap_or_default(),
            first_user_text: first_user.map(|message| message.text()),
            marker,
            final_text: picked.map(|message| message.text.clone()),
            final_phase: picked
                .and_then(|message| message.phase.as_ref())
                .map(|phase| phase.as_str().to_owned()),
            answered: final_answer(&messages).is_some(),
            error_info,
            updated_at: turn.completed_at.or(turn.started_at),
            read_error: None,
            items: turn.items,
            id: turn.id,
        }
    }
}

/// `"internalServerError"`, or the one key of `{"httpConnectionFailed": {…}}`.
fn error_variant(info: &Value) -> Option<String> {
    match info {
        Value::String(variant) => Some(variant.clone()),
        Value::Object(map) => map.keys().next().cloned(),
        _ => None,
    }
}

/// The session host: the reads of §7 over one connection.
#[derive(Debug)]
pub struct Host {
    client: Client,
}

impl Host {
    /// Connects to the App Server at `endpoint`.
    pub async fn connect(endpoint: &Endpoint, options: ClientOptions) -> Result<Host, HostError> {
        Ok(Host::new(Client::connect(endpoint, options).await?))
    }

    /// Reads through an initialized client.
    pub fn new(client: Client) -> Self {
        Host { client }
    }

    /// The connection, for requests of its own and for subscribing.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Closes the connection.
    pub async fn shutdown(self) {
        self.client.shutdown().await;
    }

    /// What `thread` is (`thread/read`, `includeTurns: false`).
    pub async fn read_agent(&self, thread: &str) -> Result<AgentInfo, HostError> {
        let read: ThreadReadResult = self
            .client
            .request_as(
                "thread/read",
                json!({"threadId": thread, "includeTurns": false}),
            )
            .await?;
        Ok(AgentInfo::from_thread(read.thread))
    }

    /// The turns of `thread`, newest first, at most `limit` (0: every turn),
    /// paging as needed. `full` asks for every item; a turn the host answers
    /// without them is completed with `thread/items/list`, and when that
    /// fails carries `read_error` and keeps what it had.
    pub async fn turns(
        &self,
        thread: &str,
        limit: usize,
        full: bool,
    ) -> Result<Vec<TurnView>, HostError> {
        let items_view = if full { "full" } else { "summary" };
        let mut turns = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut params = json!({
                "threadId": thread,
                "itemsView": items_view,
                "sortDirection": "desc",
            });
            if limit > 0 {
                params["limit"] = json!(limit - turns.len());
            }
            if let Some(cursor) = &cursor {
                params["cursor"] = json!(cursor);
            }
            let page: TurnsListResult = self.client.request_as("thread/turns/list", params).await?;
            let got = page.data.len();
            turns.extend(page.data);
            let done = limit > 0 && turns.len() >= limit;
            // A page without turns, or a cursor that does not move, ends the
            // paging rather than looping forever on a confused host.
            match page.next_cursor {
                Some(next) if !done && got > 0 && cursor.as_deref() != Some(next.as_str()) => {
                    cursor = Some(next);
                }
                _ => break,
            }
        }
        if limit > 0 {
            turns.truncate(limit);
        }
        let mut views = Vec::with_capacity(turns.len());
        for mut turn in turns {
            let mut read_error = None;
            if full && turn.items_view.as_deref() != Some("full") {
                match self.turn_items(thread, &turn.id).await {
                    Ok(items) => {
                        turn.items = items;
                        turn.items_view = Some("full".to_owned());
                    }
                    Err(error) => read_error = Some(error.to_string()),
                }
            }
            let mut view = TurnView::from_turn(turn);
            view.read_error = read_error;
            views.push(view);
        }
        Ok(views)
    }

    /// Every item of one turn (`thread/items/list`, paged).
    async fn turn_items(&self, thread: &str, turn: &str) -> Result<Vec<Value>, HostError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut params = json!({"threadId": thread, "turnId": turn});
            if let Some(cursor) = &cursor {
                params["cursor"] = json!(cursor);
            }
            let page: ItemsListResult = self.client.request_as("thread/items/list", params).await?;
            let got = page.data.len();
            items.extend(page.data.into_iter().map(|entry| entry.item));
            match page.next_cursor {
                Some(next) if got > 0 && cursor.as_deref() != Some(next.as_str()) => {
                    cursor = Some(next);
                }
                _ => return Ok(items),
            }
        }
    }

    /// Asks the host to interrupt `turn` of `thread` (`turn/interrupt`); the
    /// turn ends `interrupted` later. Gives the host's acknowledgement.
    pub async fn interrupt(&self, thread: &str, turn: &str) -> Result<Value, HostError> {
        self.client
            .request(
                "turn/interrupt",
                json!({"threadId": thread, "turnId": turn}),
            )
            .await
    }
}
