//! Codex app-server attribution: one JSON-RPC line in, the attributed frame
//! envelope plus any derived lifecycle, terminal and correction events out.
//! Owns the registry of the run (§3) and terminal provenance (§4). Pure: no
//! clock (the shell stamps `observed_at`), no I/O.

use std::collections::{BTreeSet, HashMap, HashSet};

use agentrace_wire::codex::{
    AgentState, CollabAgentToolCall, DeltaParams, Frame, Item, ItemParams, MessageKind,
    NamesThread as _, NoticeParams, Notification, Phase, ReadFrame, ReadResult, ResponseResult, ServerRequest, Thread,
    ThreadRef, TokenBreakdown, TurnParams, TurnStatus,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::attribute::{Attributor, Emitted, InputLine};
use crate::decode::{decode_raw, DecodedRaw};
use crate::model::{
    Actor, AgentStatus, Direction, Event, FinalMessageConfidence, ItemId, Role, Severity, ThreadId,
    Timestamp, TokenUsage, TurnId, Warning,
};
use crate::registry::{ChildDetails, LinkOutcome, Registry};
// Shared by every attributor, so it lives in `summary.rs`; re-exported
// because callers name it by its old path, `agentrace_core::codex::summarize`.
pub use crate::summary::summarize;

/// Per-thread facts the attributor needs to derive events.
#[derive(Debug, Default)]
struct ThreadTrack {
    status: Option<AgentStatus>,
    current_turn: Option<TurnId>,
    usage: Option<TokenUsage>,
    /// Answer candidates of each turn: (last `final_answer`, last null-phase).
    candidates: HashMap<TurnId, Candidates>,
    last_message: Option<String>,
}

#[derive(Debug, Default, Clone)]
struct Candidates {
    final_answer: Option<(ItemId, String)>,
    null_phase: Option<(ItemId, String)>,
    seen: bool,
}

impl Candidates {
    fn offer(&mut self, item: &ItemId, text: &str, phase: Option<&Phase>) {
        self.seen = true;
        match phase {
            Some(Phase::FinalAnswer) => self.final_answer = Some((item.clone(), text.to_owned())),
            None => self.null_phase = Some((item.clone(), text.to_owned())),
            // `commentary` (and any other phase) is never the answer.
            Some(Phase::Commentary | Phase::Other(_)) => {}
        }
    }

    /// §4: the last `final_answer`; with no phase set, the last null-phase
    /// message; commentary never.
    fn answer(&self) -> Option<(ItemId, String)> {
        self.final_answer
            .clone()
            .or_else(|| self.null_phase.clone())
    }
}

/// Attributes a Codex app-server stream.
#[derive(Debug, Default)]
pub struct CodexAttributor {
    registry: Registry,
    tracks: HashMap<ThreadId, ThreadTrack>,
    /// The last actor written for each thread, to know when to correct.
    announced: HashMap<ThreadId, Actor>,
    /// Threads whose actor may have changed while handling the current line.
    dirty: BTreeSet<ThreadId>,
    /// Client request id → method, to name responses.
    client_requests: HashMap<String, String>,
    /// Server request id → method.
    server_requests: HashMap<String, String>,
    /// Warnings already raised: (code, thread).
    raised: HashSet<(String, Option<ThreadId>)>,
    /// Spawn edges already announced.
    edges: HashSet<(ThreadId, ThreadId)>,
    /// Each thread's actor as the registry gave it at `actors_at` changes:
    /// every line's actor was worked out anew (a tenth of the attributing
    /// thread's time), though the registry changes on a few lines only.
    actors: HashMap<ThreadId, Actor>,
    actors_at: u64,
}

/// What one frame produced before actors are attached.
struct Pending {
    derived: Vec<(Actor, Event)>,
}

impl CodexAttributor {
    /// A fresh attributor.
    pub fn new() -> Self {
        Self::default()
    }

    /// The registry as it stands.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    fn track(&mut self, thread: &ThreadId) -> &mut ThreadTrack {
        self.tracks.entry(thread.clone()).or_default()
    }

    fn actor_of(&self, thread: Option<&ThreadId>) -> Actor {
        match thread {
            Some(thread) => self.registry.actor(thread),
            None => Actor::unknown("no thread id"),
        }
    }

    /// `thread`'s actor, as [`Registry::actor`] names it.
    fn actor(&mut self, thread: &ThreadId) -> Actor {
        if self.actors_at != self.registry.changes() {
            self.actors.clear();
            self.actors_at = self.registry.changes();
        }
        if let Some(actor) = self.actors.get(thread) {
            return actor.clone();
        }
        let actor = self.registry.actor(thread);
        self.actors.insert(thread.clone(), actor.clone());
        actor
    }

    fn observe(&mut self, thread: &ThreadId) {
        self.registry.observe(thread);
    }

    fn mark_root(&mut self, thread: &ThreadId) {
        let before = self.registry.get(thread).map(|entry| entry.kind);
        self.registry.mark_root(thread);
        if before != self.registry.get(thread).map(|entry| entry.kind) {
            self.dirty.extend(self.registry.subtree(thread));
        }
    }

    fn warn(
        &mut self,
        pending: &mut Pending,
        actor: &Actor,
        code: &str,
        severity: Severity,
        thread: Option<&ThreadId>,
        message: String,
    ) {
        if !self.raised.insert((code.to_owned(), thread.cloned())) {
            return;
        }
        pending.derived.push((
            actor.clone(),
            Event::Warning {
                warning: Warning {
                    code: code.to_owned(),
                    severity,
                    message,
                    event_sequence: None,
                    thread_id: thread.cloned(),
                },
            },
        ));
    }

    /// Offers a spawn link and announces it once.
    #[expect(
        clippy::too_many_arguments,
        reason = "each argument is one fact of the frame"
    )]
    fn link(
        &mut self,
        pending: &mut Pending,
        frame_actor: &Actor,
        parent: &ThreadId,
        child: &ThreadId,
        via: &str,
        details: &ChildDetails,
        spawn: (Option<String>, Option<String>, Option<String>),
    ) {
        if self.registry.add_details(child, details) {
            self.dirty.insert(child.clone());
        }
        match self.registry.link(parent, child, via) {
            LinkOutcome::Linked => {
                self.dirty.extend(self.registry.subtree(child));
            }
            LinkOutcome::Known => {}
            LinkOutcome::Conflict { existing } => {
                let message = match &existing {
                    Some(existing) => format!(
                        "{via} names {parent} as the parent of {child}, but {existing} was linked first; the first link is kept"
                    ),
                    None => format!(
                        "{via} names {parent} as the parent of {child}, which the client started as a root; it stays a root"
                    ),
                };
                self.warn(
                    pending,
                    frame_actor,
                    "link_conflict",
                    Severity::Warning,
                    Some(child),
                    message,
                );
                return;
            }
            LinkOutcome::Cycle => {
                self.warn(
                    pending,
                    frame_actor,
                    "link_cycle",
                    Severity::Warning,
                    Some(child),
                    format!("{via} would make {child} a descendant of itself through {parent}; the link was refused"),
                );
                return;
            }
        }
        if self.edges.insert((parent.clone(), child.clone())) {
            let (prompt, model, reasoning_effort) = spawn;
            pending.derived.push((
                self.registry.actor(parent),
                Event::AgentSpawned {
                    parent_thread_id: parent.clone(),
                    child_thread_id: child.clone(),
                    prompt,
                    model: model.filter(|model| !model.is_empty()),
                    reasoning_effort,
                    via: via.to_owned(),
                },
            ));
        }
    }

    /// Moves a thread's status; a move into an ending announces the child's
    /// completion (once per turn: an ended turn does not end twice).
    fn set_status(
        &mut self,
        pending: &mut Pending,
        frame_actor: &Actor,
        thread: &ThreadId,
        status: AgentStatus,
        result_hint: Option<String>,
    ) {
        let is_root = self.registry.get(thread).map(|entry| entry.kind)
            == Some(crate::registry::ThreadKind::Root);
        let track = self.track(thread);
        let before = track.status;
        if before.is_some_and(AgentStatus::is_final) && status.is_final() {
            return;
        }
        track.status = Some(status);
        if !status.is_final() || is_root {
            return;
        }
        let result = result_hint.or_else(|| track.last_message.clone());
        let parent = self
            .registry
            .get(thread)
            .and_then(|entry| entry.parent.clone());
        pending.derived.push((
            frame_actor.clone(),
            Event::AgentCompleted {
                thread_id: thread.clone(),
                parent_thread_id: parent,
                result,
                status,
                result_confidence: FinalMessageConfidence::Stated,
            },
        ));
    }

    fn handle_frame(
        &mut self,
        frame: Frame<'_, ResponseResult>,
        notification: Option<Notification>,
        direction: Option<Direction>,
        line_number: u64,
        pending: &mut Pending,
    ) -> (Option<ThreadId>, Event) {
        match frame.kind() {
            MessageKind::Notification => {
                let method = frame.method.as_deref().unwrap_or_default();
                if direction == Some(Direction::ToServer) {
                    return (
                        None,
                        Event::Notice {
                            method: method.to_owned(),
                            message: None,
                            item_id: None,
                        },
                    );
                }
                self.notification(method, frame.params, notification, line_number, pending)
            }
            MessageKind::Request => {
                let method = frame.method.as_deref().unwrap_or_default().to_owned();
                let id = frame.id.clone().unwrap_or(Value::Null);
                if direction == Some(Direction::ToServer) {
                    let thread = thread_of(ThreadRef::of(frame.params).thread_id());
                    if let Some(thread) = &thread {
                        self.observe(thread);
                    }
                    self.client_requests.insert(id_key(&id), method.clone());
                    return (
                        thread,
                        Event::ClientRequest {
                            request_id: id,
                            method,
                        },
                    );
                }
                // A server request's params are read leniently: a known
                // method of another shape still names what it can.
                let params = ServerRequest::decode(&method, frame.params)
                    .ok()
                    .and_then(|request| request.params())
                    .unwrap_or_default();
                let thread = thread_of(params.thread_id());
                if let Some(thread) = &thread {
                    self.observe(thread);
                }
                self.server_requests.insert(id_key(&id), method.clone());
                (
                    thread,
                    Event::ServerRequest {
                        request_id: id,
                        method,
                        item_id: params.item_id.as_deref().map(ItemId::from),
                        summary: params.summary().map(summarize).unwrap_or_default(),
                    },
                )
            }
            MessageKind::Response => {
                let id = frame.id.clone().unwrap_or(Value::Null);
                let method = if direction == Some(Direction::ToServer) {
                    self.server_requests.get(&id_key(&id)).cloned()
                } else {
                    self.client_requests.get(&id_key(&id)).cloned()
                };
                let error = frame.error.map(|error| {
                    serde_json::from_str::<ErrorMessage>(error.get())
                        .ok()
                        .and_then(|error| error.message)
                        .unwrap_or_else(|| compact(error))
                });
                let mut thread = None;
                let mut model = None;
                let mut service_tier = None;
                let mut unfinished_turn_ids = Vec::new();
                if direction != Some(Direction::ToServer) {
                    if let Some(result) = frame.result {
                        (thread, model) = self.response_threads(&result, method.as_deref(), pending);
                        // The settings' tier, with the model they started.
                        service_tier = model.as_ref().and(result.service_tier.clone());
                        if error.is_none() {
                            unfinished_turn_ids = result
                                .read_back_turns()
                                .filter(|turn| turn.is_unfinished())
                                .filter_map(|turn| turn.id().map(TurnId::from))
                                .collect();
                        }
                    }
                }
                (
                    thread,
                    Event::Response {
                        request_id: id,
                        method,
                        error,
                        unfinished_turn_ids,
                        model,
                        service_tier,
                    },
                )
            }
            MessageKind::Other => (None, not_json_rpc(line_number)),
        }
    }

    /// Learns roots and links from thread objects in a response; returns the
    /// thread the response is about, if one, and the model it runs when the
    /// response started it.
    fn response_threads(
        &mut self,
        result: &ResponseResult,
        method: Option<&str>,
        pending: &mut Pending,
    ) -> (Option<ThreadId>, Option<String>) {
        let mut about = None;
        let mut model = None;
        if let Some(thread) = &result.thread {
            // thread/start, thread/resume and thread/fork answer with the
            // thread *and* its settings (`model`); thread/read does not.
            let started = matches!(
                method,
                Some("thread/start" | "thread/resume" | "thread/fork")
            ) || (method.is_none() && result.model);
            let id = ThreadId::from(thread.id.as_str());
            model = self.thread_object(thread, started, "threadRead", pending);
            about = Some(id);
        }
        for thread in &result.listed_threads {
            self.thread_object(thread, false, "threadList", pending);
        }
        (about, model)
    }

    /// A thread object: a spawn source links it; otherwise, when the client
    /// started it, it is a root. Returns the model a started thread's
    /// settings name: its tokens are priced by it, as no token update of
    /// the stream names one.
    fn thread_object<T>(&mut self, thread: &Thread<T>, started: bool, via: &str, pending: &mut Pending) -> Option<String> {
        let id = ThreadId::from(thread.id.as_str());
        self.observe(&id);
        if let Some(spawn) = thread.thread_spawn() {
            if let Some(parent) = spawn.parent_thread_id.as_deref() {
                let details = ChildDetails {
                    agent_path: spawn.agent_path.clone(),
                    nickname: spawn
                        .agent_nickname
                        .clone()
                        .or(thread.agent_nickname.clone()),
                    agent_role: spawn.agent_role.clone().or(thread.agent_role.clone()),
                    description: None,
                };
                let frame_actor = self.registry.actor(&ThreadId::from(parent));
                self.link(
                    pending,
                    &frame_actor,
                    &ThreadId::from(parent),
                    &id,
                    via,
                    &details,
                    (None, thread.model.clone(), None),
                );
            }
        } else if started {
            self.mark_root(&id);
        }
        thread.model.clone().filter(|model| started && !model.is_empty())
    }

    #[expect(
        clippy::wildcard_enum_match_arm,
        reason = "every method this attributor gives no meaning of its own is a notice, including those a new Codex adds"
    )]
    fn notification(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        typed: Option<Notification>,
        line_number: u64,
        pending: &mut Pending,
    ) -> (Option<ThreadId>, Event) {
        let notification = match typed.map_or_else(|| Notification::decode(method, params), Ok) {
            Ok(notification) => notification,
            Err(_) => {
                // A known method whose params have another shape: still
                // owned by the thread they name.
                let thread = thread_of(ThreadRef::of(params).thread_id());
                if let Some(thread) = &thread {
                    self.observe(thread);
                }
                return (thread, unknown_shape(method, line_number));
            }
        };
        let thread = thread_of(notification.thread_id().as_deref());
        if let Some(thread) = &thread {
            self.observe(thread);
        }
        let event = match notification {
            Notification::ThreadStarted(started) => {
                let model = self.thread_object(&started.thread, true, "threadStarted", pending);
                Event::ThreadStarted {
                    thread_id: ThreadId::from(started.thread.id.as_str()),
                    cwd: started.thread.cwd.clone(),
                    model,
                }
            }
            Notification::ThreadStatusChanged(changed) => Event::Status {
                status: changed.status.status_type.unwrap_or_default(),
                waiting_on_approval: changed
                    .status
                    .active_flags
                    .iter()
                    .any(|flag| flag == "waitingOnApproval"),
                waiting_on_user_input: changed
                    .status
                    .active_flags
                    .iter()
                    .any(|flag| flag == "waitingOnUserInput"),
            },
            Notification::TurnStarted(turn) => {
                let turn_id = TurnId::from(turn.turn.id.as_str());
                if let Some(thread) = &thread {
                    let frame_actor = self.registry.actor(thread);
                    self.set_status(pending, &frame_actor, thread, AgentStatus::Running, None);
                    let track = self.track(thread);
                    track.current_turn = Some(turn_id.clone());
                    track
                        .candidates
                        .insert(turn_id.clone(), Candidates::default());
                }
                Event::TurnStarted {
                    turn_id,
                    root_turn_id: turn.turn.root_turn_id.map(TurnId::from),
                }
            }
            Notification::TurnCompleted(turn) => {
                self.turn_completed(thread.as_ref(), &turn, pending)
            }
            Notification::ItemStarted(item) => {
                self.item(false, thread.as_ref(), item, line_number, method, pending)
            }
            Notification::ItemCompleted(item) => {
                self.item(true, thread.as_ref(), item, line_number, method, pending)
            }
            Notification::ThreadTokenUsageUpdated(usage) => {
                let total = tokens(&usage.token_usage.total);
                if let Some(thread) = &thread {
                    self.track(thread).usage = Some(total);
                }
                Event::Usage {
                    turn_id: usage.turn_id.map(TurnId::from),
                    total,
                    last: Some(tokens(&usage.token_usage.last)),
                    model: None,
                    service_tier: None,
                    incomplete: None,
                }
            }
            Notification::Error(error) => Event::Error {
                message: error.error.message.unwrap_or_default(),
                will_retry: error.will_retry,
                code: error.error.codex_error_info.as_ref().map(code_text),
                turn_id: error.turn_id.map(TurnId::from),
            },
            Notification::AgentMessageDelta(delta)
            | Notification::CommandExecutionOutputDelta(delta)
            | Notification::ReasoningSummaryTextDelta(delta)
            | Notification::ReasoningTextDelta(delta)
            | Notification::FileChangeOutputDelta(delta)
            | Notification::PlanDelta(delta) => delta_event(method, delta),
            // A client's `turn/start` may switch the thread's model or
            // service tier (its "fast" is sent as `priority`): its tokens
            // from then on are priced by them. No tier is the default one,
            // said as such so that it replaces a tier said before.
            Notification::ThreadSettingsUpdated(updated) => match updated.thread_settings.model.filter(|model| !model.is_empty()) {
                Some(model) => Event::ModelSelected {
                    model,
                    turn_id: None,
                    service_tier: Some(updated.thread_settings.service_tier.unwrap_or_else(|| "default".to_owned())),
                },
                None => Event::Notice { method: method.to_owned(), message: None, item_id: None },
            },
            Notification::CommandExecutionTerminalInteraction(interaction) => Event::Notice {
                method: method.to_owned(),
                message: None,
                item_id: interaction.item_id.map(ItemId::from),
            },
            Notification::Unknown { params, .. } if is_delta(method) => {
                // A delta of an item kind this build has no row for.
                match serde_json::from_str::<DeltaParams>(params.as_ref().map_or("{}", |p| p.get())) {
                    Ok(delta) => delta_event(method, delta),
                    Err(_) => unknown_shape(method, line_number),
                }
            }
            Notification::Unknown { .. } => Event::Unknown {
                kind: "unknownMethod".to_owned(),
                method: Some(method.to_owned()),
                reason: format!("unknown method `{method}`"),
                line_number: Some(line_number),
                raw_base64: None,
                file: None,
            },
            notice => Event::Notice {
                method: method.to_owned(),
                message: notice.notice().and_then(NoticeParams::text).map(summarize),
                item_id: None,
            },
        };
        (thread, event)
    }

    fn turn_completed(
        &mut self,
        thread: Option<&ThreadId>,
        turn: &TurnParams,
        pending: &mut Pending,
    ) -> Event {
        let turn_id = TurnId::from(turn.turn.id.as_str());
        let status_text = turn
            .turn
            .status
            .as_ref()
            .map_or("", TurnStatus::as_str)
            .to_owned();
        // What the child-work reducer reads as the turn's last word when no
        // message item came: the last agentMessage of the summary view that
        // is not commentary (its text, if it has one).
        let last_message = turn
            .turn
            .items
            .iter()
            .rev()
            .find(|item| item["type"] == "agentMessage" && item["phase"] != "commentary")
            .and_then(|item| item["text"].as_str().map(str::to_owned));
        let error = turn
            .turn
            .error
            .as_ref()
            .and_then(|error| error.message.clone());
        let mut usage = None;
        if let Some(thread) = thread {
            // The summary view carries the final message; count it only when
            // no item/completed already did.
            let track = self.track(thread);
            usage = track.usage;
            let candidates = track.candidates.entry(turn_id.clone()).or_default();
            if !candidates.seen {
                for item in &turn.turn.items {
                    if let Item::AgentMessage(message) = Item::from_value(item) {
                        let id = ItemId::from(message.id.as_str());
                        candidates.offer(&id, &message.text, message.phase.as_ref());
                        track.last_message = Some(message.text.clone());
                    }
                }
            }
            let answer = track.candidates.get(&turn_id).and_then(Candidates::answer);
            let status = agent_status_of_turn(&status_text);
            let frame_actor = self.registry.actor(thread);
            let hint = match status {
                AgentStatus::Completed => answer.clone().map(|(_, text)| text),
                AgentStatus::Pending | AgentStatus::Running | AgentStatus::Failed | AgentStatus::Interrupted | AgentStatus::Unknown => error.clone(),
            };
            self.set_status(pending, &frame_actor, thread, status, hint);
            if self.registry.primary_root() == Some(thread) {
                let terminal = match status_text.as_str() {
                    "completed" => match answer {
                        Some((item, text)) => Event::Done {
                            result: Some(text),
                            source_thread_id: Some(thread.clone()),
                            source_role: Some(Role::Root),
                            source_item_id: Some(item),
                        },
                        None => Event::Done {
                            result: None,
                            source_thread_id: None,
                            source_role: None,
                            source_item_id: None,
                        },
                    },
                    "interrupted" => Event::Interrupted {
                        error: error.clone(),
                        source_thread_id: Some(thread.clone()),
                        turn_id: Some(turn_id.clone()),
                    },
                    other => Event::Failed {
                        error: error.clone().or_else(|| {
                            (other != "failed").then(|| format!("turn ended with status `{other}`"))
                        }),
                        source_thread_id: Some(thread.clone()),
                        turn_id: Some(turn_id.clone()),
                    },
                };
                pending.derived.push((frame_actor, terminal));
            }
        }
        Event::TurnCompleted {
            last_message,
            turn_id,
            status: status_text,
            error,
            duration_ms: turn.turn.duration_ms,
            usage,
        }
    }

    fn item(
        &mut self,
        completed: bool,
        thread: Option<&ThreadId>,
        params: ItemParams,
        line_number: u64,
        method: &str,
        pending: &mut Pending,
    ) -> Event {
        let turn_id = params.turn_id.map(TurnId::from);
        let frame_actor = self.actor_of(thread);
        match params.item {
            Item::UserMessage(message) => {
                if completed {
                    Event::Message {
                        role: "user".to_owned(),
                        phase: None,
                        text: message.text(),
                        item_id: Some(ItemId::from(message.id.as_str())),
                        turn_id,
                    }
                } else {
                    item_started("userMessage", &message.id, turn_id)
                }
            }
            Item::AgentMessage(message) => {
                if !completed {
                    return item_started("agentMessage", &message.id, turn_id);
                }
                let id = ItemId::from(message.id.as_str());
                if let Some(thread) = thread {
                    let track = self.track(thread);
                    if message.phase != Some(Phase::Commentary) {
                        track.last_message = Some(message.text.clone());
                    }
                    let turn = turn_id.clone().or_else(|| track.current_turn.clone());
                    if let Some(turn) = turn {
                        track.candidates.entry(turn).or_default().offer(
                            &id,
                            &message.text,
                            message.phase.as_ref(),
                        );
                    }
                }
                Event::Message {
                    role: "assistant".to_owned(),
                    phase: message.phase.map(|phase| phase.as_str().to_owned()),
                    text: message.text,
                    item_id: Some(id),
                    turn_id,
                }
            }
            Item::Reasoning(reasoning) => {
                if !completed {
                    return item_started("reasoning", &reasoning.id, turn_id);
                }
                let text = reasoning
                    .summary
                    .iter()
                    .chain(reasoning.content.iter())
                    .filter_map(|part| {
                        part.as_str()
                            .or_else(|| part.get("text").and_then(Value::as_str))
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                Event::Reasoning {
                    text: summarize(&text),
                    item_id: Some(ItemId::from(reasoning.id.as_str())),
                    turn_id,
                }
            }
            Item::CommandExecution(command) => {
                let mut event = tool_event(
                    completed,
                    "command",
                    "shell",
                    &command.command,
                    command.status,
                    command.exit_code,
                    command.duration_ms,
                    command.aggregated_output.as_deref().unwrap_or(""),
                    &command.id,
                    turn_id,
                );
                // A process behind the call may outlive it (§6).
                if let Event::ToolUse { process_id, .. } = &mut event {
                    process_id.clone_from(&command.process_id);
                }
                event
            }
            Item::FileChange(change) => {
                let paths = change
                    .changes
                    .iter()
                    .filter_map(|change| change.get("path").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(", ");
                tool_event(
                    completed,
                    "file_change",
                    "apply_patch",
                    &paths,
                    change.status,
                    None,
                    None,
                    "",
                    &change.id,
                    turn_id,
                )
            }
            Item::McpToolCall(call) => {
                let name = format!("mcp__{}__{}", call.server, call.tool);
                let input = call
                    .arguments
                    .as_ref()
                    .map(Value::to_string)
                    .unwrap_or_default();
                let output = call
                    .error
                    .as_ref()
                    .or(call.result.as_ref())
                    .map(Value::to_string)
                    .unwrap_or_default();
                tool_event(
                    completed,
                    "mcp",
                    &name,
                    &input,
                    call.status,
                    None,
                    call.duration_ms,
                    &output,
                    &call.id,
                    turn_id,
                )
            }
            Item::WebSearch(search) => tool_event(
                completed,
                "web_search",
                "web_search",
                &search.query,
                None,
                None,
                None,
                "",
                &search.id,
                turn_id,
            ),
            Item::CollabAgentToolCall(call) => {
                self.collab(completed, thread, &frame_actor, &call, turn_id, pending)
            }
            Item::SubAgentActivity(activity) => {
                if let (Some(parent), Some(child)) = (thread, activity.agent_thread_id.as_deref()) {
                    let child = ThreadId::from(child);
                    let details = ChildDetails {
                        agent_path: activity.agent_path.clone(),
                        ..ChildDetails::default()
                    };
                    match activity.kind.as_str() {
                        "started" => self.link(
                            pending,
                            &frame_actor,
                            parent,
                            &child,
                            "subAgentActivity",
                            &details,
                            (
                                None,
                                activity.model.clone(),
                                activity.reasoning_effort.clone(),
                            ),
                        ),
                        "completed" if completed => self.set_status(
                            pending,
                            &frame_actor,
                            &child,
                            AgentStatus::Completed,
                            None,
                        ),
                        "interrupted" if completed => self.set_status(
                            pending,
                            &frame_actor,
                            &child,
                            AgentStatus::Interrupted,
                            None,
                        ),
                        _ => {}
                    }
                }
                let id = activity.id.as_str();
                if completed {
                    Event::ItemCompleted {
                        activity_kind: Some(activity.kind.clone()).filter(|kind| !kind.is_empty()),
                        agent_thread_id: activity.agent_thread_id.as_deref().map(ThreadId::from),
                        status: None,
                        item_type: "subAgentActivity".to_owned(),
                        item_id: Some(ItemId::from(id)),
                        turn_id,
                    }
                } else {
                    item_started("subAgentActivity", id, turn_id)
                }
            }
            Item::Unknown { item_type, .. } => {
                let item_type = item_type.unwrap_or_else(|| "?".to_owned());
                Event::Unknown {
                    kind: "unknownItemType".to_owned(),
                    method: Some(method.to_owned()),
                    reason: format!("unknown item type `{item_type}`"),
                    line_number: Some(line_number),
                    raw_base64: None,
                    file: None,
                }
            }
        }
    }

    fn collab(
        &mut self,
        completed: bool,
        thread: Option<&ThreadId>,
        frame_actor: &Actor,
        call: &CollabAgentToolCall,
        turn_id: Option<TurnId>,
        pending: &mut Pending,
    ) -> Event {
        // The sender is stated on the item; it normally equals the frame's thread.
        let sender = call
            .sender_thread_id
            .as_deref()
            .map(ThreadId::from)
            .or_else(|| thread.cloned());
        let receivers: Vec<ThreadId> = call
            .receiver_thread_ids
            .iter()
            .map(|id| ThreadId::from(id.as_str()))
            .collect();
        match call.tool.as_str() {
            "spawnAgent" => {
                if let Some(sender) = &sender {
                    for child in &receivers {
                        self.link(
                            pending,
                            frame_actor,
                            sender,
                            child,
                            "spawnAgent",
                            &ChildDetails::default(),
                            (
                                call.prompt.clone(),
                                call.model.clone(),
                                call.reasoning_effort.clone(),
                            ),
                        );
                    }
                }
            }
            "wait" if !completed => {
                if let Some(sender) = &sender {
                    pending.derived.push((
                        frame_actor.clone(),
                        Event::AgentWaitStarted {
                            parent_thread_id: sender.clone(),
                            child_thread_ids: receivers.clone(),
                        },
                    ));
                }
            }
            _ => {}
        }
        if completed {
            for (child, state) in &call.agents_states {
                let child = ThreadId::from(child.as_str());
                let state = AgentState::deserialize(state).unwrap_or_default();
                let status = match state.status.as_deref() {
                    Some("completed") => Some(AgentStatus::Completed),
                    Some("errored" | "failed") => Some(AgentStatus::Failed),
                    Some("interrupted" | "shutdown" | "closed" | "cancelled") => {
                        Some(AgentStatus::Interrupted)
                    }
                    _ => None,
                };
                if let Some(status) = status {
                    self.set_status(pending, frame_actor, &child, status, state.message.clone());
                }
            }
            if call.tool == "closeAgent" && call.status.as_deref() == Some("completed") {
                for child in &receivers {
                    if self.tracks.get(child).and_then(|track| track.status)
                        == Some(AgentStatus::Running)
                    {
                        self.set_status(
                            pending,
                            frame_actor,
                            child,
                            AgentStatus::Interrupted,
                            None,
                        );
                    }
                }
            }
        }
        let input = match (&call.prompt, receivers.is_empty()) {
            (Some(prompt), _) => summarize(prompt),
            (None, false) => receivers
                .iter()
                .map(ThreadId::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            (None, true) => String::new(),
        };
        if completed {
            let output = call
                .agents_states
                .iter()
                .map(|(id, state)| {
                    let state = AgentState::deserialize(state).unwrap_or_default();
                    format!(
                        "{id}: {}{}",
                        state.status.unwrap_or_default(),
                        state.message.map(|m| format!(" — {m}")).unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            Event::ToolResult {
                receiver_thread_ids: receivers,
                tool_kind: "agent".to_owned(),
                name: call.tool.clone(),
                status: call.status.clone(),
                exit_code: None,
                duration_ms: None,
                output: summarize(&output),
                item_id: Some(ItemId::from(call.id.as_str())),
                turn_id,
            }
        } else {
            Event::ToolUse {
                process_id: None,
                tool_kind: "agent".to_owned(),
                name: call.tool.clone(),
                input,
                item_id: Some(ItemId::from(call.id.as_str())),
                turn_id,
            }
        }
    }

    fn emit(
        &mut self,
        out: &mut Vec<Emitted>,
        base: &InputLine<'_>,
        timestamp: Timestamp,
        actor: Actor,
        event: Event,
        frame: FrameOf,
    ) {
        if let Some(thread) = &actor.thread_id {
            // Mostly announced already, as it is: compared, not cloned again.
            match self.announced.get_mut(thread) {
                Some(announced) if *announced == actor => {}
                Some(announced) => announced.clone_from(&actor),
                None => {
                    self.announced.insert(thread.clone(), actor.clone());
                }
            }
        }
        let (raw, line_frame) = match frame {
            FrameOf::Line => (None, true),
            FrameOf::Copy(raw) => (Some(raw), false),
            FrameOf::None => (None, false),
        };
        out.push(Emitted {
            timestamp,
            direction: if raw.is_some() || line_frame { base.direction } else { None },
            actor,
            event,
            raw: raw.map(crate::model::RawFrame::from),
            line_frame,
        });
    }

    /// Appends `actor_resolved` for every announced thread whose actor moved.
    fn corrections(
        &mut self,
        out: &mut Vec<Emitted>,
        base: &InputLine<'_>,
        timestamp: Timestamp,
        frame_thread: Option<&ThreadId>,
    ) {
        let dirty = std::mem::take(&mut self.dirty);
        for thread in dirty {
            let actor = self.registry.actor(&thread);
            let stale = match self.announced.get(&thread) {
                Some(announced) => *announced != actor,
                // A linked thread nobody has heard from is announced too, so
                // readers know every agent, spoken or not; the frame's own
                // thread is announced by the frame itself.
                None => Some(&thread) != frame_thread,
            };
            if stale {
                self.emit(
                    out,
                    base,
                    timestamp,
                    actor.clone(),
                    Event::ActorResolved {
                        thread_id: thread.clone(),
                        actor,
                    },
                    FrameOf::None,
                );
            }
        }
    }
}

impl Attributor for CodexAttributor {
    fn push(&mut self, line: &InputLine<'_>) -> Vec<Emitted> {
        let mut out = Vec::new();
        let mut pending = Pending {
            derived: Vec::new(),
        };
        // Decode once: the line is read in one walk where its shape allows
        // (the payload typed by its method where it is met, `frame_of`); no
        // value tree is built. That parse checks the whole line as JSON, so
        // the line is its own frame, kept as the text it vouches for where
        // it is numbered (on the other thread when the attribution is lent:
        // the check of a copy was an eighth of this thread's time). A line
        // it cannot read is checked and copied here, to say why.
        let (thread, event, frame, timestamp) = match frame_of(line) {
            Ok((frame, notification)) => {
                let timestamp = frame
                    .emitted_at_ms
                    .map(Timestamp::from_millis)
                    .unwrap_or(line.observed_at);
                let (thread, event) =
                    self.handle_frame(frame, notification, line.direction, line.line_number, &mut pending);
                (thread, event, FrameOf::Line, timestamp)
            }
            Err(DecodedRaw::Undecodable {
                reason,
                raw,
                raw_base64,
            }) => (
                None,
                Event::undecodable(reason, line.line_number, raw_base64),
                FrameOf::Copy(raw),
                line.observed_at,
            ),
            // Valid JSON, but not an object of JSON-RPC's members.
            Err(DecodedRaw::Json(raw)) => (
                None,
                not_json_rpc(line.line_number),
                FrameOf::Copy(raw),
                line.observed_at,
            ),
        };
        let actor = match &thread {
            Some(thread) => self.actor(thread),
            None => Actor::unknown("no thread id"),
        };
        // Corrections first: they compare against what was announced before
        // this line, and the frame below already carries the new actor.
        self.corrections(&mut out, line, timestamp, thread.as_ref());
        self.emit(&mut out, line, timestamp, actor, event, frame);
        for (actor, event) in pending.derived {
            self.emit(&mut out, line, timestamp, actor, event, FrameOf::None);
        }
        out
    }

    fn finish(&mut self) -> Vec<Emitted> {
        Vec::new()
    }
}

/// Where an emitted event's frame is.
enum FrameOf {
    /// The line itself, checked whole by the parse that read it
    /// ([`Emitted::line_frame`]).
    Line,
    /// A copy: a line that is not JSON-RPC, or not JSON (then a string).
    Copy(Box<RawValue>),
    /// None: a derived event.
    None,
}

/// A line's frame, its `result` read, and a notification's params when
/// they were typed in the frame's walk.
type FrameRead<'a> = (Frame<'a, ResponseResult>, Option<Notification>);

/// The line's JSON-RPC envelope, its `result` read; else the line checked
/// and copied as [`decode_raw`] does, which says whether it is JSON at all.
/// A parse of the envelope accepts no line that check refuses: its members
/// are typed or skimmed by the same parser. A frame of the usual shapes is
/// read in one walk ([`ReadFrame`]: a notification's params typed by its
/// method and a response's result read where they are met; each was walked
/// once for the frame and again to read it, and they are nearly all of a
/// session's bytes); any other, and a line that does not read so, is read
/// again with its members borrowed as written, the result read from those
/// (the params are typed by [`CodexAttributor::notification`]).
fn frame_of<'a>(line: &InputLine<'a>) -> Result<FrameRead<'a>, DecodedRaw> {
    let text = crate::decode::checked_line(line.bytes, line.truncated_from);
    // Whether the one walk read the result and gave up on it (a list of
    // threads): it is then read member by member, not walked again first.
    let mut result_walked = false;
    if let Some(read) = text.and_then(|text| serde_json::from_str::<ReadFrame<'a>>(text).ok()) {
        let ReadFrame { mut frame, notification } = read;
        match frame.result.take().map(ReadResult::read) {
            None => return Ok((frame.with_result(None), notification)),
            Some(Some(result)) => return Ok((frame.with_result(Some(result)), notification)),
            Some(None) => result_walked = true,
        }
    }
    text.and_then(|text| serde_json::from_str::<Frame<'a>>(text).ok())
        .map(|mut frame| {
            let result = frame.result.take().map(|result| {
                if result_walked {
                    ResponseResult::member_by_member(result)
                } else {
                    ResponseResult::of(result)
                }
            });
            (frame.with_result(result), None)
        })
        .ok_or_else(|| decode_raw(line.bytes, line.truncated_from))
}

fn thread_of(id: Option<&str>) -> Option<ThreadId> {
    id.filter(|id| !id.is_empty()).map(ThreadId::from)
}

/// The `message` of a JSON-RPC error object.
#[derive(Deserialize)]
struct ErrorMessage {
    #[serde(default)]
    message: Option<String>,
}

/// A member as written, compact: what an error of no known shape says.
fn compact(raw: &RawValue) -> String {
    serde_json::from_str::<Value>(raw.get())
        .map(|value| value.to_string())
        .unwrap_or_else(|_| raw.get().to_owned())
}

fn delta_event(method: &str, delta: DeltaParams) -> Event {
    Event::Delta {
        kind: delta_kind(method),
        text: delta.delta.unwrap_or_default(),
        item_id: delta.item_id.map(ItemId::from),
        turn_id: delta.turn_id.map(TurnId::from),
    }
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

fn not_json_rpc(line_number: u64) -> Event {
    Event::Unknown {
        kind: "notJsonRpc".to_owned(),
        method: None,
        reason: "valid JSON, but not a JSON-RPC message".to_owned(),
        line_number: Some(line_number),
        raw_base64: None,
        file: None,
    }
}

fn unknown_shape(method: &str, line_number: u64) -> Event {
    Event::Unknown {
        kind: "unknownMethod".to_owned(),
        method: Some(method.to_owned()),
        reason: format!("`{method}` with params of an unexpected shape"),
        line_number: Some(line_number),
        raw_base64: None,
        file: None,
    }
}

fn is_delta(method: &str) -> bool {
    method.starts_with("item/") && (method.ends_with("/delta") || method.ends_with("Delta"))
}

fn delta_kind(method: &str) -> String {
    match method {
        "item/agentMessage/delta" => "agentMessage".to_owned(),
        "item/commandExecution/outputDelta" => "commandOutput".to_owned(),
        other => other
            .trim_start_matches("item/")
            .replace('/', ".")
            .to_owned(),
    }
}

fn code_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Object(map) => map.keys().next().cloned().unwrap_or_default(),
        other @ Value::Null | other @ Value::Bool(_) | other @ Value::Number(_) | other @ Value::Array(_) => other.to_string(),
    }
}

fn tokens(breakdown: &TokenBreakdown) -> TokenUsage {
    TokenUsage {
        input_tokens: breakdown.input_tokens,
        cached_input_tokens: breakdown.cached_input_tokens,
        cache_creation_input_tokens: breakdown.cache_write_input_tokens,
        // Codex names no cache lifetime, and counts no web search here.
        cache_creation_1h_input_tokens: 0,
        web_search_requests: 0,
        output_tokens: breakdown.output_tokens,
        reasoning_output_tokens: breakdown.reasoning_output_tokens,
        total_tokens: breakdown.total_tokens,
    }
}

fn agent_status_of_turn(status: &str) -> AgentStatus {
    match status {
        "completed" => AgentStatus::Completed,
        "interrupted" => AgentStatus::Interrupted,
        _ => AgentStatus::Failed,
    }
}

fn item_started(item_type: &str, id: &str, turn_id: Option<TurnId>) -> Event {
    Event::ItemStarted {
        description: None,
        started_at: None,
        item_type: item_type.to_owned(),
        item_id: Some(ItemId::from(id)),
        turn_id,
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "each argument is one fact of the frame"
)]
fn tool_event(
    completed: bool,
    tool_kind: &str,
    name: &str,
    input: &str,
    status: Option<String>,
    exit_code: Option<i64>,
    duration_ms: Option<i64>,
    output: &str,
    id: &str,
    turn_id: Option<TurnId>,
) -> Event {
    if completed {
        Event::ToolResult {
            receiver_thread_ids: Vec::new(),
            tool_kind: tool_kind.to_owned(),
            name: name.to_owned(),
            status,
            exit_code,
            duration_ms,
            output: summarize(output),
            item_id: Some(ItemId::from(id)),
            turn_id,
        }
    } else {
        Event::ToolUse {
            process_id: None,
            tool_kind: tool_kind.to_owned(),
            name: name.to_owned(),
            input: summarize(input),
            item_id: Some(ItemId::from(id)),
            turn_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of the repo's Codex app-server captures (0.169 and 0.171),
    /// and one whose result lists a thread.
    fn captured_lines() -> Vec<String> {
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
        lines.push(r#"{"id":9,"result":{"data":[{"id":"t","source":"vscode","turns":[]},{"id":"u","status":"interrupted"}]}}"#.to_owned());
        lines.push(r#"{"id":9,"result":"done"}"#.to_owned());
        lines.push(r#"{"id":9,"result":null,"error":{"message":"no"}}"#.to_owned());
        lines
    }

    /// A frame's result and a notification's params read in the frame's
    /// walk read as the result and the params as written do, whichever way
    /// each line is read.
    #[test]
    fn a_frames_result_reads_as_its_result_as_written() {
        let lines = captured_lines();
        let mut results = 0;
        for (index, text) in lines.iter().enumerate() {
            let line = InputLine {
                bytes: text.as_bytes(),
                line_number: index as u64 + 1,
                observed_at: Timestamp::from_millis(0),
                direction: None,
                truncated_from: None,
            };
            let as_written = serde_json::from_str::<Frame<'_>>(text).ok();
            let read = frame_of(&line).ok();
            let typed = |method: Option<&str>, params: Option<&RawValue>| {
                method.and_then(|method| Notification::decode(method, params).ok())
            };
            assert_eq!(
                read.as_ref().map(|(frame, notification)| {
                    let notification = notification.clone().or_else(|| typed(frame.method.as_deref(), frame.params));
                    (frame.kind(), format!("{:?}", frame.result), format!("{notification:?}"))
                }),
                as_written.map(|frame| {
                    let notification = typed(frame.method.as_deref(), frame.params);
                    (frame.kind(), format!("{:?}", frame.result.map(ResponseResult::of)), format!("{notification:?}"))
                }),
                "{text}"
            );
            results += usize::from(read.is_some_and(|(frame, _)| frame.result.is_some()));
        }
        assert!(results > 100, "{results} results");
    }

    /// A thread's actor is kept only while the registry stands: a link
    /// made after it was asked for names it anew.
    #[test]
    fn a_kept_actor_is_named_anew_once_the_registry_changes() {
        let mut attributor = CodexAttributor::new();
        let (root, child) = (ThreadId::from("root"), ThreadId::from("child"));
        attributor.observe(&root);
        attributor.registry.mark_root(&root);
        attributor.observe(&child);
        let unlinked = attributor.actor(&child);
        attributor.registry.link(&root, &child, "test");
        let linked = attributor.actor(&child);
        assert_eq!(
            (unlinked.role, linked.role, &linked),
            (crate::model::Role::Unknown, crate::model::Role::Helper, &attributor.registry.actor(&child))
        );
    }
}
