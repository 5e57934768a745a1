//! An in-process fake Codex App Server for tests: threads, turns driven by
//! turn plans, subagents spawned the way the real 0.169 host shows them,
//! and `restart()` with the real host's semantics. It speaks the same
//! JSON-RPC as the real host over in-memory channels, so the client under
//! test cannot tell it from a connection. Deterministic: a logical clock, ids
//! from a counter, no timers, no sockets.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::client::{Channels, Client, ClientOptions, Incoming, Outgoing};
use crate::error::HostError;
use crate::reads::Host;

/// What the fake reports as its CLI version, as the captures do.
pub const FAKE_CLI_VERSION: &str = "0.169.0";

/// The logical clock's start, Unix milliseconds.
const CLOCK_START_MS: i64 = 1_800_000_000_000;

/// How the fake's clock moves per event.
const TICK_MS: i64 = 1_000;

/// Misuse of the fake by a test.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FakeError {
    /// No such thread.
    #[error("the fake host has no thread {0}")]
    UnknownThread(String),
    /// No such turn.
    #[error("the fake host's thread {thread} has no turn {turn}")]
    UnknownTurn {
        /// The thread.
        thread: String,
        /// The turn.
        turn: String,
    },
    /// The thread already runs a turn.
    #[error("thread {0} already runs a turn")]
    TurnRunning(String),
    /// The thread has no turn to hold a spawn.
    #[error("thread {0} has no turn to hold a spawn item")]
    NoTurn(String),
}

/// A root thread to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSpec {
    /// Model.
    pub model: String,
    /// Reasoning effort (None: the model's default, read as null).
    pub effort: Option<String>,
    /// Working directory.
    pub cwd: String,
}

impl Default for ThreadSpec {
    fn default() -> Self {
        ThreadSpec {
            model: "mock-model".to_owned(),
            effort: None,
            cwd: "/home/dev/work".to_owned(),
        }
    }
}

/// One step of a turn plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An agent message with a phase (`final_answer`, `commentary`) or none.
    AgentMessage {
        /// Its text.
        text: String,
        /// Its phase.
        phase: Option<String>,
    },
    /// A shell command that ran to its exit.
    Command {
        /// The command line.
        command: String,
        /// What it printed.
        output: String,
        /// Its exit code.
        exit_code: i64,
    },
}

impl Step {
    /// An agent message.
    pub fn message(text: &str, phase: Option<&str>) -> Self {
        Step::AgentMessage {
            text: text.to_owned(),
            phase: phase.map(str::to_owned),
        }
    }
}

/// How a plan ends its turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// `completed`.
    Complete,
    /// `failed` with this error; the thread reads `systemError`.
    Fail {
        /// The error message.
        message: String,
        /// The `codexErrorInfo` variant.
        variant: String,
    },
    /// Stays `inProgress` until [`FakeHost::continue_turn`], an interrupt or
    /// a restart.
    Running,
}

/// What a turn does: the user's message, the steps, the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnPlan {
    /// The first user message's text.
    pub user_text: String,
    /// The first user message's `clientId`.
    pub client_id: Option<String>,
    /// Items the turn produces, in order.
    pub steps: Vec<Step>,
    /// How it ends.
    pub end: TurnEnd,
}

impl TurnPlan {
    /// A turn that answers `answer` (phase `final_answer`) and completes.
    pub fn answering(user_text: &str, answer: &str) -> Self {
        TurnPlan {
            user_text: user_text.to_owned(),
            client_id: None,
            steps: vec![Step::message(answer, Some("final_answer"))],
            end: TurnEnd::Complete,
        }
    }

    /// A turn that takes `user_text` and keeps running.
    pub fn running(user_text: &str) -> Self {
        TurnPlan {
            user_text: user_text.to_owned(),
            client_id: None,
            steps: Vec::new(),
            end: TurnEnd::Running,
        }
    }
}

/// A subagent to spawn from an owner thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentSpec {
    /// The spawning thread.
    pub owner: String,
    /// The spawn item's id (the hook's tool use id).
    pub tool_use_id: String,
    /// The spawn message; also the subagent's first user message.
    pub prompt: String,
    /// The host's nickname for it.
    pub nickname: String,
    /// Its role, if the spawner named one.
    pub role: Option<String>,
    /// Its model (None: the owner's).
    pub model: Option<String>,
    /// Its reasoning effort (None: the owner's).
    pub effort: Option<String>,
    /// Its working directory (None: the owner's).
    pub cwd: Option<String>,
    /// Its first turn; `user_text` is replaced by the prompt.
    pub plan: TurnPlan,
    /// Reads `idle` rather than `notLoaded` after its turn.
    pub stay_loaded: bool,
}

impl SubagentSpec {
    /// A subagent of `owner` that answers `answer` to `prompt`.
    pub fn new(owner: &str, tool_use_id: &str, prompt: &str, answer: &str) -> Self {
        SubagentSpec {
            owner: owner.to_owned(),
            tool_use_id: tool_use_id.to_owned(),
            prompt: prompt.to_owned(),
            nickname: "Dewey".to_owned(),
            role: None,
            model: None,
            effort: None,
            cwd: None,
            plan: TurnPlan::answering(prompt, answer),
            stay_loaded: false,
        }
    }
}

/// What [`FakeHost::spawn`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawned {
    /// The subagent thread.
    pub thread_id: String,
    /// Its first turn.
    pub turn_id: String,
    /// The owner's turn that holds the spawn item.
    pub owner_turn_id: String,
}

#[derive(Debug, Clone)]
struct FakeTurn {
    id: String,
    root_turn_id: String,
    items: Vec<Value>,
    status: String,
    error: Value,
    started_at_ms: i64,
    completed_at_ms: Option<i64>,
    duration_ms: Option<i64>,
}

impl FakeTurn {
    fn running(&self) -> bool {
        self.status == "inProgress"
    }

    /// The live host's summary: the first user message and the last agent
    /// message.
    fn summary_items(&self) -> Vec<Value> {
        let first_user = self
            .items
            .iter()
            .find(|item| item["type"] == "userMessage")
            .cloned();
        let last_agent = self
            .items
            .iter()
            .rev()
            .find(|item| item["type"] == "agentMessage")
            .cloned();
        first_user.into_iter().chain(last_agent).collect()
    }

    fn to_value(&self, view: &str) -> Value {
        let items = match view {
            "full" => self.items.clone(),
            "summary" => self.summary_items(),
            _ => Vec::new(),
        };
        json!({
            "id": self.id,
            "rootTurnId": self.root_turn_id,
            "items": items,
            "itemsView": view,
            "status": self.status,
            "error": self.error,
            "startedAt": self.started_at_ms / 1000,
            "completedAt": self.completed_at_ms.map(|ms| ms / 1000),
            "durationMs": self.duration_ms,
        })
    }
}

#[derive(Debug, Clone)]
struct FakeThread {
    id: String,
    session_id: String,
    parent: Option<String>,
    depth: u32,
    nickname: Option<String>,
    role: Option<String>,
    model: String,
    effort: Option<String>,
    cwd: String,
    loaded: bool,
    stay_loaded: bool,
    system_error: bool,
    created_at_ms: i64,
    updated_at_ms: i64,
    turns: Vec<FakeTurn>,
    preview: String,
}

impl FakeThread {
    fn is_subagent(&self) -> bool {
        self.parent.is_some()
    }

    fn status(&self) -> Value {
        if !self.loaded {
            json!({"type": "notLoaded"})
        } else if self.turns.iter().any(FakeTurn::running) {
            json!({"type": "active", "activeFlags": []})
        } else if self.system_error {
            json!({"type": "systemError"})
        } else {
            json!({"type": "idle"})
        }
    }

    fn to_value(&self, turns: Vec<Value>) -> Value {
        let source = match &self.parent {
            Some(parent) => json!({"subAgent": {"thread_spawn": {
                "parent_thread_id": parent,
                "depth": self.depth,
                "agent_path": null,
                "agent_nickname": self.nickname,
                "agent_role": self.role,
            }}}),
            None => json!("vscode"),
        };
        // A subagent shares the root's session while loaded and reads its
        // own id once unloaded, as the real host shows it.
        let session_id = if self.loaded {
            &self.session_id
        } else {
            &self.id
        };
        json!({
            "id": self.id,
            "environments": null,
            "extra": null,
            "sessionId": session_id,
            "forkedFromId": null,
            "attachedToThreadId": null,
            "parentThreadId": self.parent,
            "preview": self.preview,
            "ephemeral": false,
            "section": null,
            "sectionEnteredAt": null,
            "projectId": null,
            "historyMode": "paginated",
            "modelProvider": "mock",
            "model": self.model,
            "reasoningEffort": self.effort,
            "createdAt": self.created_at_ms / 1000,
            "updatedAt": self.updated_at_ms / 1000,
            "recencyAt": self.updated_at_ms / 1000,
            "status": self.status(),
            "path": format!("/home/dev/.codex/sessions/2026/11/29/rollout-2026-11-29T00-00-00-{}.jsonl", self.id),
            "cwd": self.cwd,
            "cliVersion": FAKE_CLI_VERSION,
            "originator": "agentrace-fake",
            "source": source,
            "canAcceptDirectInput": if self.loaded { json!(true) } else { Value::Null },
            "threadSource": if self.is_subagent() { json!("subagent") } else { Value::Null },
            "agentNickname": self.nickname,
            "agentRole": self.role,
            "gitInfo": null,
            "name": null,
            "daybreakEnabled": null,
            "turns": turns,
        })
    }
}

struct Connection {
    to_client: mpsc::UnboundedSender<Incoming>,
    task: AbortHandle,
}

struct State {
    threads: Vec<FakeThread>,
    clock_ms: i64,
    next_id: u64,
    connections: HashMap<u64, Connection>,
    next_connection: u64,
    lost_turn_status: String,
    turn_page_size: usize,
    item_page_size: usize,
    full_view_override: HashMap<String, String>,
    items_list_fails: HashSet<String>,
    stalled_methods: HashSet<String>,
    next_server_request: u64,
    server_requests: HashMap<u64, oneshot::Sender<Value>>,
    requests_seen: Vec<(String, Value)>,
}

impl State {
    fn tick(&mut self) -> i64 {
        self.clock_ms += TICK_MS;
        self.clock_ms
    }

    fn uuid(&mut self) -> String {
        self.next_id += 1;
        format!("01b00000-0000-7000-8000-{:012x}", self.next_id)
    }

    fn short_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_{:04}", self.next_id)
    }

    fn thread(&self, id: &str) -> Result<&FakeThread, FakeError> {
        self.threads
            .iter()
            .find(|thread| thread.id == id)
            .ok_or_else(|| FakeError::UnknownThread(id.to_owned()))
    }

    fn thread_mut(&mut self, id: &str) -> Result<&mut FakeThread, FakeError> {
        self.threads
            .iter_mut()
            .find(|thread| thread.id == id)
            .ok_or_else(|| FakeError::UnknownThread(id.to_owned()))
    }

    fn emit(&mut self, method: &str, params: Value) {
        let frame = json!({"method": method, "params": params, "emittedAtMs": self.clock_ms});
        for connection in self.connections.values() {
            let _ = connection
                .to_client
                .send(Incoming::Frame(frame.to_string()));
        }
    }

    fn emit_status(&mut self, thread: &str) {
        if let Ok(status) = self.thread(thread).map(FakeThread::status) {
            self.emit(
                "thread/status/changed",
                json!({"threadId": thread, "status": status}),
            );
        }
    }

    fn step_item(&mut self, step: &Step, cwd: &str) -> Value {
        let started = self.tick();
        let completed = self.tick();
        match step {
            Step::AgentMessage { text, phase } => json!({
                "type": "agentMessage",
                "moderation": null,
                "id": self.short_id("msg"),
                "text": text,
                "phase": phase,
                "memoryCitation": null,
                "delivery": null,
                "questions": null,
                "startedAtMs": started,
                "completedAtMs": completed,
            }),
            Step::Command {
                command,
                output,
                exit_code,
            } => json!({
                "type": "commandExecution",
                "id": self.short_id("call"),
                "pluginId": null,
                "scriptPath": null,
                "command": format!("/bin/bash -lc '{command}'"),
                "cwd": cwd,
                "processId": "4242",
                "source": "unifiedExecStartup",
                "status": "completed",
                "commandActions": [{"type": "unknown", "command": command}],
                "aggregatedOutput": output,
                "exitCode": exit_code,
                "durationMs": completed - started,
                "startedAtMs": started,
                "completedAtMs": completed,
            }),
        }
    }

    /// Starts a turn on `thread` from `plan`; the turn's root is `root_turn`
    /// (its own id when None).
    fn run_turn(
        &mut self,
        thread_id: &str,
        plan: &TurnPlan,
        root_turn: Option<String>,
    ) -> Result<String, FakeError> {
        let thread = self.thread(thread_id)?;
        if thread.turns.iter().any(FakeTurn::running) {
            return Err(FakeError::TurnRunning(thread_id.to_owned()));
        }
        let turn_id = self.uuid();
        let started = self.tick();
        let user = json!({
            "type": "userMessage",
            "id": self.uuid(),
            "clientId": plan.client_id,
            "content": [{"type": "text", "text": plan.user_text, "text_elements": []}],
            "startedAtMs": started,
            "completedAtMs": started,
        });
        let turn = FakeTurn {
            id: turn_id.clone(),
            root_turn_id: root_turn.unwrap_or_else(|| turn_id.clone()),
            items: vec![user],
            status: "inProgress".to_owned(),
            error: Value::Null,
            started_at_ms: started,
            completed_at_ms: None,
            duration_ms: None,
        };
        let thread = self.thread_mut(thread_id)?;
        thread.loaded = true;
        thread.system_error = false;
        if thread.preview.is_empty() {
            thread.preview.clone_from(&plan.user_text);
        }
        thread.turns.push(turn.clone());
        self.emit_status(thread_id);
        self.emit(
            "turn/started",
            json!({"threadId": thread_id, "turn": turn.to_value("notLoaded")}),
        );
        self.continue_turn(thread_id, &turn_id, &plan.steps, &plan.end)?;
        Ok(turn_id)
    }

    fn continue_turn(
        &mut self,
        thread_id: &str,
        turn_id: &str,
        steps: &[Step],
        end: &TurnEnd,
    ) -> Result<(), FakeError> {
        let cwd = self.thread(thread_id)?.cwd.clone();
        let unknown_turn = || FakeError::UnknownTurn {
            thread: thread_id.to_owned(),
            turn: turn_id.to_owned(),
        };
        for step in steps {
            let item = self.step_item(step, &cwd);
            let turn = self
                .thread_mut(thread_id)?
                .turns
                .iter_mut()
                .find(|turn| turn.id == turn_id)
                .ok_or_else(unknown_turn)?;
            turn.items.push(item.clone());
            self.emit(
                "item/completed",
                json!({"threadId": thread_id, "turnId": turn_id, "item": item}),
            );
        }
        let (status, error) = match end {
            TurnEnd::Running => return Ok(()),
            TurnEnd::Complete => ("completed", Value::Null),
            TurnEnd::Fail { message, variant } => (
                "failed",
                json!({"message": message, "codexErrorInfo": variant, "additionalDetails": null}),
            ),
        };
        self.end_turn(thread_id, turn_id, status, error)
    }

    fn end_turn(
        &mut self,
        thread_id: &str,
        turn_id: &str,
        status: &str,
        error: Value,
    ) -> Result<(), FakeError> {
        let now = self.tick();
        let thread = self.thread_mut(thread_id)?;
        let failed = !error.is_null();
        let turn = thread
            .turns
            .iter_mut()
            .find(|turn| turn.id == turn_id)
            .ok_or_else(|| FakeError::UnknownTurn {
                thread: thread_id.to_owned(),
                turn: turn_id.to_owned(),
            })?;
        turn.status = status.to_owned();
        turn.error = error;
        turn.completed_at_ms = Some(now);
        turn.duration_ms = Some(now - turn.started_at_ms);
        let summary = turn.to_value("summary");
        thread.updated_at_ms = now;
        thread.system_error = failed;
        // A finished subagent is unloaded unless its session keeps it.
        if thread.is_subagent() && !thread.stay_loaded && !failed {
            thread.loaded = false;
        }
        self.emit(
            "turn/completed",
            json!({"threadId": thread_id, "turn": summary}),
        );
        self.emit_status(thread_id);
        Ok(())
    }
}

/// The fake App Server. Cloning gives another handle to the same host.
#[derive(Clone)]
pub struct FakeHost {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for FakeHost {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("FakeHost").finish_non_exhaustive()
    }
}

impl Default for FakeHost {
    fn default() -> Self {
        FakeHost::new()
    }
}

impl FakeHost {
    /// A host with no threads.
    pub fn new() -> Self {
        FakeHost {
            state: Arc::new(Mutex::new(State {
                threads: Vec::new(),
                clock_ms: CLOCK_START_MS,
                next_id: 0,
                connections: HashMap::new(),
                next_connection: 0,
                lost_turn_status: "interrupted".to_owned(),
                turn_page_size: 25,
                item_page_size: 25,
                full_view_override: HashMap::new(),
                items_list_fails: HashSet::new(),
                stalled_methods: HashSet::new(),
                next_server_request: 0,
                server_requests: HashMap::new(),
                requests_seen: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a root thread; it reads `idle` until a turn runs.
    pub fn start_thread(&self, spec: &ThreadSpec) -> String {
        let mut state = self.lock();
        let id = state.uuid();
        let now = state.tick();
        state.threads.push(FakeThread {
            session_id: id.clone(),
            id: id.clone(),
            parent: None,
            depth: 0,
            nickname: None,
            role: None,
            model: spec.model.clone(),
            effort: spec.effort.clone(),
            cwd: spec.cwd.clone(),
            loaded: true,
            stay_loaded: true,
            system_error: false,
            created_at_ms: now,
            updated_at_ms: now,
            turns: Vec::new(),
            preview: String::new(),
        });
        id
    }

    /// Runs a turn of `thread` by `plan`; gives the turn id.
    pub fn run_turn(&self, thread: &str, plan: &TurnPlan) -> Result<String, FakeError> {
        self.lock().run_turn(thread, plan, None)
    }

    /// Adds `steps` to a running turn and ends it as `end` says.
    pub fn continue_turn(
        &self,
        thread: &str,
        turn: &str,
        steps: &[Step],
        end: &TurnEnd,
    ) -> Result<(), FakeError> {
        self.lock().continue_turn(thread, turn, steps, end)
    }

    /// Makes a subagent of `spec.owner` the way the real host shows one: the
    /// thread (parent, spawn source, nickname, role, the owner's cwd and
    /// model unless the spec names its own), a first turn run by the plan,
    /// and a completed `spawnAgent` item in the owner's running turn, else
    /// its last turn.
    pub fn spawn(&self, spec: &SubagentSpec) -> Result<Spawned, FakeError> {
        let mut state = self.lock();
        let owner = state.thread(&spec.owner)?.clone();
        let owner_turn = owner
            .turns
            .iter()
            .rev()
            .find(|turn| turn.running())
            .or_else(|| owner.turns.last())
            .ok_or_else(|| FakeError::NoTurn(spec.owner.clone()))?
            .clone();
        let child_id = state.uuid();
        let started = state.tick();
        let model = spec.model.clone().unwrap_or_else(|| owner.model.clone());
        let effort = spec.effort.clone().or_else(|| owner.effort.clone());
        state.threads.push(FakeThread {
            id: child_id.clone(),
            session_id: owner.session_id.clone(),
            parent: Some(owner.id.clone()),
            depth: owner.depth + 1,
            nickname: Some(spec.nickname.clone()),
            role: spec.role.clone(),
            model: model.clone(),
            effort: effort.clone(),
            cwd: spec.cwd.clone().unwrap_or_else(|| owner.cwd.clone()),
            loaded: true,
            stay_loaded: spec.stay_loaded,
            system_error: false,
            created_at_ms: started,
            updated_at_ms: started,
            turns: Vec::new(),
            preview: String::new(),
        });
        let completed = state.tick();
        let item = json!({
            "type": "collabAgentToolCall",
            "id": spec.tool_use_id,
            "tool": "spawnAgent",
            "status": "completed",
            "senderThreadId": owner.id,
            "receiverThreadIds": [child_id],
            "prompt": spec.prompt,
            "model": model,
            "reasoningEffort": effort.clone().unwrap_or_else(|| "medium".to_owned()),
            "agentsStates": {child_id.clone(): {"status": "pendingInit", "message": null}},
            "startedAtMs": started,
            "completedAtMs": completed,
        });
        push_item(&mut state, &owner.id, &owner_turn.id, item)?;
        let plan = TurnPlan {
            user_text: spec.prompt.clone(),
            ..spec.plan.clone()
        };
        let turn_id = state.run_turn(&child_id, &plan, Some(owner_turn.root_turn_id.clone()))?;
        Ok(Spawned {
            thread_id: child_id,
            turn_id,
            owner_turn_id: owner_turn.id,
        })
    }

    /// Records a `spawnAgent` item that created no thread (a failed spawn) in
    /// the owner's running turn, else its last turn.
    pub fn spawn_without_thread(
        &self,
        owner: &str,
        tool_use_id: &str,
        prompt: &str,
    ) -> Result<(), FakeError> {
        let mut state = self.lock();
        let owner_thread = state.thread(owner)?;
        let turn = owner_thread
            .turns
            .iter()
            .rev()
            .find(|turn| turn.running())
            .or_else(|| owner_thread.turns.last())
            .ok_or_else(|| FakeError::NoTurn(owner.to_owned()))?
            .id
            .clone();
        let at = state.tick();
        let item = json!({
            "type": "collabAgentToolCall",
            "id": tool_use_id,
            "tool": "spawnAgent",
            "status": "failed",
            "senderThreadId": owner,
            "receiverThreadIds": [],
            "prompt": prompt,
            "model": "",
            "reasoningEffort": "medium",
            "agentsStates": {},
            "startedAtMs": at,
            "completedAtMs": at,
        });
        push_item(&mut state, owner, &turn, item)
    }

    /// An App Server restart: every running turn is lost (it reads as
    /// [`FakeHost::set_lost_turn_status`] says, `interrupted` by default,
    /// with no end time, and never ends), every thread reads `notLoaded`,
    /// every connection drops. Finished turns and their items stay.
    pub fn restart(&self) {
        let mut state = self.lock();
        let lost = state.lost_turn_status.clone();
        for thread in &mut state.threads {
            thread.loaded = false;
            for turn in thread.turns.iter_mut().filter(|turn| turn.running()) {
                turn.status.clone_from(&lost);
            }
        }
        for (_, connection) in state.connections.drain() {
            let _ = connection
                .to_client
                .send(Incoming::End("the host restarted".to_owned()));
            connection.task.abort();
        }
    }

    /// The status a restart leaves on lost turns (the real 0.169 host:
    /// `interrupted`).
    pub fn set_lost_turn_status(&self, status: &str) {
        self.lock().lost_turn_status = status.to_owned();
    }

    /// Answers full reads of `thread` with this items view instead
    /// (`summary` or `notLoaded`), as a host without the items does.
    pub fn answer_full_as(&self, thread: &str, view: &str) {
        self.lock()
            .full_view_override
            .insert(thread.to_owned(), view.to_owned());
    }

    /// Makes `thread/items/list` of `thread` fail (or work again).
    pub fn fail_items_list(&self, thread: &str, fail: bool) {
        let mut state = self.lock();
        if fail {
            state.items_list_fails.insert(thread.to_owned());
        } else {
            state.items_list_fails.remove(thread);
        }
    }

    /// Page sizes the fake uses when a request names none (turns, items).
    pub fn set_page_sizes(&self, turns: usize, items: usize) {
        let mut state = self.lock();
        state.turn_page_size = turns.max(1);
        state.item_page_size = items.max(1);
    }

    /// Never answers requests of `method` (to test timeouts).
    pub fn stall(&self, method: &str) {
        self.lock().stalled_methods.insert(method.to_owned());
    }

    /// Every request received so far: method and params, in order.
    pub fn requests_seen(&self) -> Vec<(String, Value)> {
        self.lock().requests_seen.clone()
    }

    /// Sends a server→client request to every connection; the receiver gets
    /// the first answer (result or error member, as sent).
    pub fn send_server_request(&self, method: &str, params: Value) -> oneshot::Receiver<Value> {
        let mut state = self.lock();
        let id = state.next_server_request;
        state.next_server_request += 1;
        let (answer_to, answer) = oneshot::channel();
        state.server_requests.insert(id, answer_to);
        let frame = json!({"id": id, "method": method, "params": params});
        for connection in state.connections.values() {
            let _ = connection
                .to_client
                .send(Incoming::Frame(frame.to_string()));
        }
        answer
    }

    /// Connects a client over in-memory channels and initializes it.
    pub async fn connect(&self, options: ClientOptions) -> Result<Client, HostError> {
        let (outgoing, mut from_client) = mpsc::unbounded_channel::<Outgoing>();
        let (to_client, incoming) = mpsc::unbounded_channel::<Incoming>();
        let client = {
            let mut state = self.lock();
            let number = state.next_connection;
            state.next_connection += 1;
            let host = self.clone();
            let replies = to_client.clone();
            let task = tokio::spawn(async move {
                while let Some(Outgoing::Frame(text)) = from_client.recv().await {
                    if let Some(answer) = host.handle_frame(&text) {
                        let _ = replies.send(Incoming::Frame(answer.to_string()));
                    }
                }
                host.lock().connections.remove(&number);
                let _ = replies.send(Incoming::End("the client closed the connection".to_owned()));
            });
            state.connections.insert(
                number,
                Connection {
                    to_client,
                    task: task.abort_handle(),
                },
            );
            Client::over_channels(Channels { outgoing, incoming }, &options)
        };
        client
            .request(
                "initialize",
                json!({"clientInfo": {"name": options.client_name, "version": "0"}, "capabilities": {"experimentalApi": true}}),
            )
            .await?;
        client.notify("initialized", None)?;
        Ok(client)
    }

    /// Connects a [`Host`] with default options.
    pub async fn connect_host(&self) -> Result<Host, HostError> {
        Ok(Host::new(self.connect(ClientOptions::default()).await?))
    }

    /// Handles one frame from a client; gives the answer to send, if any.
    fn handle_frame(&self, text: &str) -> Option<Value> {
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            return Some(json!({"id": null, "error": {"code": -32700, "message": "parse error"}}));
        };
        let mut state = self.lock();
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            // An answer to one of our server requests.
            let id = message.get("id").and_then(Value::as_u64)?;
            let answer = message
                .get("result")
                .or_else(|| message.get("error"))
                .cloned()
                .unwrap_or(Value::Null);
            if let Some(waiter) = state.server_requests.remove(&id) {
                let _ = waiter.send(
                    json!({"id": id, "answer": answer, "isError": message.get("error").is_some()}),
                );
            }
            return None;
        };
        let id = message.get("id").cloned()?;
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        state
            .requests_seen
            .push((method.to_owned(), params.clone()));
        if state.stalled_methods.contains(method) {
            return None;
        }
        Some(match answer(&mut state, method, &params) {
            Ok(result) => json!({"id": id, "result": result}),
            Err((code, text)) => json!({"id": id, "error": {"code": code, "message": text}}),
        })
    }
}

fn push_item(state: &mut State, thread: &str, turn: &str, item: Value) -> Result<(), FakeError> {
    let target = state
        .thread_mut(thread)?
        .turns
        .iter_mut()
        .find(|candidate| candidate.id == turn)
        .ok_or_else(|| FakeError::UnknownTurn {
            thread: thread.to_owned(),
            turn: turn.to_owned(),
        })?;
    target.items.push(item.clone());
    state.emit(
        "item/completed",
        json!({"threadId": thread, "turnId": turn, "item": item}),
    );
    Ok(())
}

type Answer = Result<Value, (i64, String)>;

fn text_param<'a>(params: &'a Value, name: &str) -> Result<&'a str, (i64, String)> {
    params
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| (-32602, format!("missing {name}")))
}

fn not_loaded(thread: &str) -> (i64, String) {
    (-32600, format!("thread not loaded: {thread}"))
}

/// Reads a fake cursor: `fake:<offset>`.
fn cursor_offset(params: &Value) -> Result<usize, (i64, String)> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(cursor)) => cursor
            .strip_prefix("fake:")
            .and_then(|offset| offset.parse().ok())
            .ok_or_else(|| (-32600, format!("invalid cursor: {cursor}"))),
        Some(other) => Err((-32600, format!("invalid cursor: {other}"))),
    }
}

/// One page of `all` from the request's cursor and limit.
fn page(all: Vec<Value>, params: &Value, default_size: usize) -> Answer {
    let offset = cursor_offset(params)?;
    let size = params
        .get("limit")
        .and_then(Value::as_u64)
        .and_then(|limit| usize::try_from(limit).ok())
        .filter(|limit| *limit > 0)
        .unwrap_or(default_size);
    let end = offset.saturating_add(size).min(all.len());
    let data: Vec<Value> = all
        .get(offset..end)
        .map(<[Value]>::to_vec)
        .unwrap_or_default();
    let next = (end < all.len()).then(|| format!("fake:{end}"));
    Ok(json!({"data": data, "nextCursor": next, "backwardsCursor": null}))
}

fn answer(state: &mut State, method: &str, params: &Value) -> Answer {
    match method {
        "initialize" => Ok(json!({
            "userAgent": format!("agentrace-fake/{FAKE_CLI_VERSION}"),
            "codexHome": "/home/dev/.codex",
            "platformFamily": "unix",
            "platformOs": "linux",
        })),
        "thread/read" => {
            let id = text_param(params, "threadId")?;
            let thread = state.thread(id).map_err(|_| not_loaded(id))?;
            let include_turns = params.get("includeTurns").and_then(Value::as_bool) == Some(true);
            let turns = if include_turns {
                thread
                    .turns
                    .iter()
                    .map(|turn| turn.to_value("full"))
                    .collect()
            } else {
                Vec::new()
            };
            Ok(json!({"thread": thread.to_value(turns), "readState": null}))
        }
        "thread/turns/list" => {
            let id = text_param(params, "threadId")?;
            let thread = state.thread(id).map_err(|_| not_loaded(id))?;
            let asked = params
                .get("itemsView")
                .and_then(Value::as_str)
                .unwrap_or("summary");
            let view = match asked {
                "full" => state
                    .full_view_override
                    .get(id)
                    .map_or("full", String::as_str),
                "notLoaded" => "notLoaded",
                _ => "summary",
            };
            let ascending = params.get("sortDirection").and_then(Value::as_str) == Some("asc");
            let mut turns: Vec<Value> = thread
                .turns
                .iter()
                .map(|turn| turn.to_value(view))
                .collect();
            if !ascending {
                turns.reverse();
            }
            page(turns, params, state.turn_page_size)
        }
        "thread/items/list" => {
            let id = text_param(params, "threadId")?;
            let unsupported = || (-32601, "thread/items/list is not supported yet".to_owned());
            let thread = state.thread(id).map_err(|_| unsupported())?;
            if state.items_list_fails.contains(id) {
                return Err((-32603, format!("fake: the items of {id} cannot be read")));
            }
            let turn_filter = params.get("turnId").and_then(Value::as_str);
            let entries: Vec<Value> = thread
                .turns
                .iter()
                .filter(|turn| turn_filter.is_none_or(|wanted| wanted == turn.id))
                .flat_map(|turn| {
                    turn.items.iter().map(|item| {
                        json!({
                            "turnId": turn.id,
                            "item": item,
                            "startedAtMs": item.get("startedAtMs"),
                            "completedAtMs": item.get("completedAtMs"),
                        })
                    })
                })
                .collect();
            page(entries, params, state.item_page_size)
        }
        "turn/interrupt" => {
            let id = text_param(params, "threadId")?;
            let turn_id = text_param(params, "turnId")?;
            let thread = state
                .thread(id)
                .map_err(|_| (-32600, format!("thread not found: {id}")))?;
            let turn = thread
                .turns
                .iter()
                .find(|turn| turn.id == turn_id)
                .ok_or_else(|| (-32600, format!("turn not found: {turn_id}")))?;
            if turn.running() {
                state
                    .end_turn(id, turn_id, "interrupted", Value::Null)
                    .map_err(|error| (-32603, error.to_string()))?;
            }
            Ok(json!({}))
        }
        "thread/list" => {
            let subagents = params
                .get("sourceKinds")
                .and_then(Value::as_array)
                .is_some_and(|kinds| kinds.iter().any(|kind| kind == "subAgentThreadSpawn"));
            let data: Vec<Value> = state
                .threads
                .iter()
                .filter(|thread| thread.is_subagent() == subagents)
                .map(|thread| {
                    // thread/list entries null these even for subagents.
                    let mut entry = thread.to_value(Vec::new());
                    if let Some(map) = entry.as_object_mut() {
                        map.insert("parentThreadId".to_owned(), Value::Null);
                        map.insert("threadSource".to_owned(), Value::Null);
                    }
                    entry
                })
                .collect();
            Ok(json!({"data": data, "nextCursor": null, "readStates": Map::new()}))
        }
        other => Err((-32601, format!("method not found: {other}"))),
    }
}
