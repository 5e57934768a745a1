//! `codex exec --json` runs: the exec stream (the root's thread alone),
//! then the rollout files of that session joined in. The stream names its
//! thread once and carries no child at all (a multi-agent V2 spawn is not
//! even a tool call there), so who else worked, and what each spent, can
//! only come from the rollouts. Those are read by the one rollout
//! attribution ([`RolloutAttributor`]); this module decides what each of
//! its events means next to the stream:
//!
//! - The stream's lines are the root's (its own `thread.started` names it),
//!   `provider` confidence. Its turns have no ids on the wire: they are
//!   numbered `exec-turn-<n>`. The last `agent_message` of a completed
//!   turn is the run's result.
//! - The root's own rollout repeats the stream: of it, the usage (the
//!   thread's running totals, with reasoning tokens), the model, the
//!   collaboration calls the stream did not show and the background
//!   commands (the stream names no process behind a command) are kept;
//!   every other line is kept raw as a `notice` (`rollout/<event>`),
//!   counted once.
//! - A child's rollout lines are its own, `derived` confidence unless the
//!   stream itself named the child (a V1 `collab_tool_call`).
//! - The stream's `turn.completed` usage counts only when no rollout of
//!   the root was joined (a saved stream ingested without its Codex home).
//! - A saved stream carries no time: each of its lines is stamped with the
//!   session's start. Its ending (stamped no later than its turn began) is
//!   held and given when the root's rollout ends that turn, at that time,
//!   so the run does not end the moment it began.
//!
//! Pure: no I/O, no clock.

use std::collections::{HashMap, HashSet};

use agentrace_wire::codex_exec::{ExecEvent, ExecItem, ExecItemDetails, ExecUsage};

use crate::attribute::{Attributor, Emitted, InputLine, SourcePart};
use crate::decode::{decode_line, DecodedLine};
use crate::model::{
    Actor, Confidence, Event, ItemId, Role, ThreadId, Timestamp, TokenUsage, TurnId,
};
use crate::registry::Registry;
use crate::rollout::RolloutAttributor;
use crate::summary::summarize;

/// Attributes a `codex exec --json` stream and the rollouts joined to it.
#[derive(Debug, Default)]
pub struct ExecAttributor {
    registry: Registry,
    root: Option<ThreadId>,
    turns: u32,
    turn: Option<TurnId>,
    /// The last agent message of the current turn: item and text.
    answer: Option<(Option<ItemId>, String)>,
    /// The stream's usage, summed over its turns.
    usage: Option<TokenUsage>,
    /// Threads the stream itself named (the root, V1 collaboration targets).
    named: HashSet<ThreadId>,
    /// Collaboration calls the stream showed, by kind (`spawn`, `wait`,
    /// …), not yet matched to the root's rollout: those calls of the
    /// rollout are the stream's again.
    shown_calls: HashMap<String, u32>,
    /// The root's rollout calls found to be the stream's (their results
    /// too).
    shown_call_ids: HashSet<ItemId>,
    rollout: RolloutAttributor,
    /// The thread of each joined rollout file, by its number.
    file_threads: HashMap<u32, ThreadId>,
    /// A rollout of the root was joined.
    joined_root: bool,
    /// The time of the last line read (stream or rollout).
    last_at: Option<Timestamp>,
    /// When the stream's current turn began, as stamped.
    turn_began: Option<Timestamp>,
    /// How many endings (`done`, `failed`) the stream gave its root.
    stream_endings: usize,
    /// How many endings the root's rollout gave.
    rollout_endings: usize,
    /// An ending of the stream stamped no later than its turn began (a
    /// saved stream carries no time: every line of it is stamped with the
    /// session's start), with its number: held for the root's rollout to
    /// date when it ends that turn, else given at the next turn or at the
    /// end. A stream read live is stamped as it comes and holds nothing.
    held_ending: Option<(usize, Event)>,
}

impl ExecAttributor {
    /// A fresh attributor.
    pub fn new() -> Self {
        Self::default()
    }

    fn actor(&self) -> Actor {
        match &self.root {
            Some(root) => self.registry.actor(root),
            None => Actor::unknown("no thread.started before this line"),
        }
    }

    fn stream_line(&mut self, value: &serde_json::Value, derived: &mut Vec<Event>) -> Event {
        let turn = self.turn.clone();
        match ExecEvent::from_value(value) {
            ExecEvent::ThreadStarted { thread_id } => {
                let thread = ThreadId::from(thread_id.as_str());
                self.registry.mark_root(&thread);
                self.named.insert(thread.clone());
                self.root.get_or_insert(thread.clone());
                // `codex exec --json` names no model: the rollouts do.
                Event::ThreadStarted {
                    thread_id: thread,
                    cwd: None,
                    model: None,
                }
            }
            ExecEvent::TurnStarted => {
                self.turns += 1;
                let id = TurnId::from(format!("exec-turn-{}", self.turns));
                self.turn = Some(id.clone());
                self.answer = None;
                Event::TurnStarted {
                    turn_id: id,
                    root_turn_id: None,
                }
            }
            ExecEvent::TurnCompleted { usage } => {
                if let Some(usage) = usage {
                    let usage = tokens(usage);
                    self.usage = Some(self.usage.unwrap_or_default().add(&usage));
                }
                let (item, result) = match self.answer.take() {
                    Some((item, text)) => (item, Some(text)),
                    None => (None, None),
                };
                derived.push(Event::Done {
                    source_thread_id: result.as_ref().and(self.root.clone()),
                    source_role: result.as_ref().map(|_| Role::Root),
                    source_item_id: result.as_ref().and(item),
                    result,
                });
                Event::TurnCompleted {
                    turn_id: turn.unwrap_or_else(|| TurnId::from("exec-turn-0")),
                    status: "completed".to_owned(),
                    error: None,
                    duration_ms: None,
                    usage: None,
                    last_message: None,
                }
            }
            ExecEvent::TurnFailed { message } => {
                derived.push(Event::Failed {
                    error: message.clone(),
                    source_thread_id: self.root.clone(),
                    turn_id: turn.clone(),
                });
                Event::TurnCompleted {
                    turn_id: turn.unwrap_or_else(|| TurnId::from("exec-turn-0")),
                    status: "failed".to_owned(),
                    error: message,
                    duration_ms: None,
                    usage: None,
                    last_message: None,
                }
            }
            ExecEvent::Error { message } => Event::Error {
                message: message.unwrap_or_default(),
                will_retry: None,
                code: None,
                turn_id: turn,
            },
            ExecEvent::ItemStarted(item) => self.item(item, false, turn, derived),
            ExecEvent::ItemUpdated(item) => Event::Notice {
                item_id: item.id.map(ItemId::from),
                method: "item.updated".to_owned(),
                message: None,
            },
            ExecEvent::ItemCompleted(item) => self.item(item, true, turn, derived),
            ExecEvent::Unknown { event_type } => Event::Unknown {
                kind: "unknownMethod".to_owned(),
                method: event_type.clone(),
                reason: format!(
                    "unknown codex exec event `{}`",
                    event_type.as_deref().unwrap_or("?")
                ),
                line_number: None,
                raw_base64: None,
                file: None,
            },
        }
    }

    fn item(
        &mut self,
        item: ExecItem,
        completed: bool,
        turn: Option<TurnId>,
        derived: &mut Vec<Event>,
    ) -> Event {
        let id = item.id.as_deref().map(ItemId::from);
        let tool = |kind: &str,
                    name: &str,
                    input: &str,
                    status: Option<String>,
                    exit_code: Option<i64>,
                    output: &str| {
            if completed {
                Event::ToolResult {
                    tool_kind: kind.to_owned(),
                    name: name.to_owned(),
                    status,
                    exit_code,
                    duration_ms: None,
                    output: summarize(output),
                    item_id: id.clone(),
                    turn_id: turn.clone(),
                    receiver_thread_ids: Vec::new(),
                }
            } else {
                Event::ToolUse {
                    tool_kind: kind.to_owned(),
                    name: name.to_owned(),
                    input: summarize(input),
                    item_id: id.clone(),
                    turn_id: turn.clone(),
                    process_id: None,
                }
            }
        };
        match item.details {
            ExecItemDetails::AgentMessage { text } => {
                if !completed {
                    return item_started("agent_message", id, turn);
                }
                self.answer = Some((id.clone(), text.clone()));
                Event::Message {
                    role: "assistant".to_owned(),
                    phase: None,
                    text,
                    item_id: id,
                    turn_id: turn,
                }
            }
            ExecItemDetails::Reasoning { text } => {
                if !completed {
                    return item_started("reasoning", id, turn);
                }
                Event::Reasoning {
                    text: summarize(&text),
                    item_id: id,
                    turn_id: turn,
                }
            }
            ExecItemDetails::CommandExecution {
                command,
                aggregated_output,
                exit_code,
                status,
            } => tool(
                "command",
                "shell",
                &command,
                status,
                exit_code,
                &aggregated_output,
            ),
            ExecItemDetails::FileChange { paths, status } => tool(
                "file_change",
                "apply_patch",
                &paths.join(", "),
                status,
                None,
                &paths.join(", "),
            ),
            ExecItemDetails::McpToolCall {
                server,
                tool: name,
                status,
            } => tool(
                "mcp",
                &format!("mcp__{server}__{name}"),
                "",
                status,
                None,
                "",
            ),
            ExecItemDetails::WebSearch { query } => {
                tool("web_search", "web_search", &query, None, None, &query)
            }
            ExecItemDetails::CollabToolCall {
                tool: name,
                sender_thread_id,
                receiver_thread_ids,
                prompt,
                status,
            } => {
                if completed {
                    *self
                        .shown_calls
                        .entry(call_kind(&name).to_owned())
                        .or_default() += 1;
                }
                let receivers: Vec<ThreadId> = receiver_thread_ids
                    .iter()
                    .map(|id| ThreadId::from(id.as_str()))
                    .collect();
                let spawn = name.contains("spawn");
                let sender = sender_thread_id
                    .map(|id| ThreadId::from(id.as_str()))
                    .or_else(|| self.root.clone());
                if completed && spawn {
                    if let Some(parent) = &sender {
                        for child in &receivers {
                            if self.named.insert(child.clone()) {
                                self.registry.link(parent, child, "execCollabToolCall");
                                derived.push(Event::AgentSpawned {
                                    parent_thread_id: parent.clone(),
                                    child_thread_id: child.clone(),
                                    prompt: prompt.clone(),
                                    model: None,
                                    reasoning_effort: None,
                                    via: "execCollabToolCall".to_owned(),
                                });
                            }
                        }
                    }
                } else {
                    self.named.extend(receivers.iter().cloned());
                }
                let mut event = tool(
                    "agent",
                    &name,
                    prompt.as_deref().unwrap_or_default(),
                    status,
                    None,
                    "",
                );
                if let Event::ToolResult {
                    receiver_thread_ids,
                    ..
                } = &mut event
                {
                    *receiver_thread_ids = receivers;
                }
                event
            }
            ExecItemDetails::TodoList => item_event("todo_list", completed, id, turn),
            ExecItemDetails::Error { message } => Event::Error {
                message,
                will_retry: None,
                code: None,
                turn_id: turn,
            },
            ExecItemDetails::Unknown { item_type } => {
                item_event(item_type.as_deref().unwrap_or("?"), completed, id, turn)
            }
        }
    }

    /// One rollout line: the rollout attribution's events, each given the
    /// meaning it has next to the stream (see the module notes).
    fn rollout_line(&mut self, number: u32, line: &InputLine<'_>) -> Vec<Emitted> {
        let part = SourcePart::File { number };
        let mut emitted = self.rollout.push_part(&part, line);
        if let Some(last) = emitted.last() {
            self.last_at = Some(
                self.last_at
                    .map_or(last.timestamp, |at| at.max(last.timestamp)),
            );
        }
        for one in &emitted {
            if let (Event::ThreadStarted { thread_id, .. }, false) =
                (&one.event, self.file_threads.contains_key(&number))
            {
                self.file_threads.insert(number, thread_id.clone());
            }
        }
        let file_thread = self.file_threads.get(&number).cloned();
        let is_root_file = file_thread.is_some() && file_thread == self.root;
        if is_root_file {
            self.joined_root = true;
        }
        for one in &mut emitted {
            if is_root_file {
                if let Some(ending) = self.dated_ending(&one.event) {
                    one.event = ending;
                    continue;
                }
                let keep = match &one.event {
                    Event::Usage { .. } | Event::ModelSelected { .. } | Event::Warning { .. } => {
                        true
                    }
                    Event::ToolUse {
                        tool_kind,
                        name,
                        item_id,
                        ..
                    } if tool_kind == "agent" => {
                        let shown = self
                            .shown_calls
                            .get_mut(call_kind(name))
                            .filter(|left| **left > 0);
                        match (shown, item_id) {
                            (Some(left), Some(item)) => {
                                *left -= 1;
                                self.shown_call_ids.insert(item.clone());
                                false
                            }
                            (Some(left), None) => {
                                *left -= 1;
                                false
                            }
                            (None, _) => true,
                        }
                    }
                    Event::ToolResult {
                        tool_kind, item_id, ..
                    } if tool_kind == "agent" => !item_id
                        .as_ref()
                        .is_some_and(|item| self.shown_call_ids.contains(item)),
                    // The stream names no process behind a command: a
                    // background command is known from the rollout alone.
                    Event::ItemStarted { item_type, .. } | Event::ItemCompleted { item_type, .. }
                        if item_type == crate::rollout::BACKGROUND_COMMAND =>
                    {
                        true
                    }
                    // The stream recorded these for the root already.
                    Event::RunStarted { .. }
                    | Event::Message { .. }
                    | Event::Reasoning { .. }
                    | Event::ItemStarted { .. }
                    | Event::ItemCompleted { .. }
                    | Event::Delta { .. }
                    | Event::ToolUse { .. }
                    | Event::ToolResult { .. }
                    | Event::TurnStarted { .. }
                    | Event::TurnCompleted { .. }
                    | Event::Status { .. }
                    | Event::ThreadStarted { .. }
                    | Event::AgentSpawned { .. }
                    | Event::AgentWaitStarted { .. }
                    | Event::AgentCompleted { .. }
                    | Event::ActorResolved { .. }
                    | Event::ServerRequest { .. }
                    | Event::ClientRequest { .. }
                    | Event::Response { .. }
                    | Event::Error { .. }
                    | Event::Done { .. }
                    | Event::Failed { .. }
                    | Event::Interrupted { .. }
                    | Event::Dropped { .. }
                    | Event::SessionEnded { .. } => false,
                    // Count nothing twice: kept as they are (an
                    // undecodable line stays counted).
                    Event::Replayed { .. } | Event::Notice { .. } | Event::Unknown { .. } => true,
                };
                if !keep {
                    one.event = Event::Notice {
                        item_id: None,
                        method: format!("rollout/{}", one.event.type_name()),
                        message: Some("recorded from the exec stream".to_owned()),
                    };
                }
                continue;
            }
            if let Event::AgentSpawned {
                child_thread_id, ..
            } = &one.event
            {
                if self.named.contains(child_thread_id) {
                    one.event = Event::Notice {
                        item_id: None,
                        method: "rollout/agent_spawned".to_owned(),
                        message: Some("the exec stream named this child".to_owned()),
                    };
                    continue;
                }
                one.actor.confidence = Confidence::Derived;
                continue;
            }
            let named = one
                .actor
                .thread_id
                .as_ref()
                .is_some_and(|thread| self.named.contains(thread));
            if one.actor.thread_id.is_some()
                && !named
                && one.actor.confidence == Confidence::Provider
            {
                one.actor.confidence = Confidence::Derived;
            }
        }
        emitted
    }
}

impl ExecAttributor {
    /// The held ending of the stream (see `held_ending`) when `event` is
    /// the root's rollout ending the same turn: given then, at the time
    /// the rollout ended it, the run ends (`endedAt`, its duration) when
    /// its root did rather than the moment it began. Pure in the lines and
    /// their times, so a replay of the log gives it alike.
    fn dated_ending(&mut self, event: &Event) -> Option<Event> {
        if !matches!(event, Event::Done { .. } | Event::Failed { .. } | Event::Interrupted { .. }) {
            return None;
        }
        let turn = self.rollout_endings;
        self.rollout_endings += 1;
        match self.held_ending.take() {
            Some((held, ending)) if held == turn => Some(ending),
            other => {
                self.held_ending = other;
                None
            }
        }
    }
}

/// The kind of a collaboration call, named alike by the stream (`wait`,
/// `spawn_agent`) and the rollout (`wait_agent`, `spawn_agent`).
fn call_kind(name: &str) -> &str {
    let name = name.strip_suffix("_agent").unwrap_or(name);
    match name {
        "spawnAgent" => "spawn",
        "closeAgent" => "close",
        "sendInput" => "send_input",
        "resumeAgent" => "resume",
        other => other,
    }
}

fn tokens(usage: ExecUsage) -> TokenUsage {
    TokenUsage {
        input_tokens: usage.input_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        output_tokens: usage.output_tokens,
        reasoning_output_tokens: usage.reasoning_output_tokens,
        total_tokens: usage.input_tokens + usage.output_tokens,
        ..TokenUsage::default()
    }
}

fn item_started(item_type: &str, item_id: Option<ItemId>, turn_id: Option<TurnId>) -> Event {
    Event::ItemStarted {
        item_type: item_type.to_owned(),
        item_id,
        turn_id,
        description: None,
        started_at: None,
    }
}

fn item_event(
    item_type: &str,
    completed: bool,
    item_id: Option<ItemId>,
    turn_id: Option<TurnId>,
) -> Event {
    if completed {
        Event::ItemCompleted {
            item_type: item_type.to_owned(),
            item_id,
            turn_id,
            activity_kind: None,
            agent_thread_id: None,
            status: None,
        }
    } else {
        item_started(item_type, item_id, turn_id)
    }
}

impl Attributor for ExecAttributor {
    fn push(&mut self, line: &InputLine<'_>) -> Vec<Emitted> {
        self.push_part(&SourcePart::Main, line)
    }

    fn push_part(&mut self, part: &SourcePart, line: &InputLine<'_>) -> Vec<Emitted> {
        if let SourcePart::File { number } = part {
            return self.rollout_line(*number, line);
        }
        let (event, raw, derived) = match decode_line(line.bytes, line.truncated_from) {
            DecodedLine::Undecodable {
                reason,
                raw,
                raw_base64,
            } => (
                Event::undecodable(reason, line.line_number, raw_base64),
                Some(raw),
                Vec::new(),
            ),
            DecodedLine::Json { raw, value } => {
                let mut derived = Vec::new();
                let mut event = self.stream_line(&value, &mut derived);
                if let Event::Unknown { line_number, .. } = &mut event {
                    *line_number = Some(line.line_number);
                }
                (event, raw, derived)
            }
        };
        let actor = self.actor();
        let at = line.observed_at;
        self.last_at = Some(at);
        let mut derived = derived;
        let mut out = Vec::new();
        if matches!(event, Event::TurnStarted { .. }) {
            // An ending still held is given before the next turn starts.
            if let Some((_, ending)) = self.held_ending.take() {
                out.push(Emitted {
                    timestamp: at,
                    direction: None,
                    actor: actor.clone(),
                    event: ending,
                    raw: None,
                    line_frame: false,
                });
            }
            self.turn_began = Some(at);
        }
        if let Some(index) = derived
            .iter()
            .position(|event| matches!(event, Event::Done { .. } | Event::Failed { .. }))
        {
            let number = self.stream_endings;
            self.stream_endings += 1;
            if self.turn_began.is_some_and(|began| at <= began) {
                self.held_ending = Some((number, derived.remove(index)));
            }
        }
        out.push(Emitted {
            timestamp: at,
            direction: line.direction,
            actor: actor.clone(),
            event,
            raw: raw.map(crate::model::RawFrame::from),
            line_frame: false,
        });
        out.extend(derived.into_iter().map(|event| Emitted {
            timestamp: at,
            direction: None,
            actor: actor.clone(),
            event,
            raw: None,
            line_frame: false,
        }));
        out
    }

    fn finish(&mut self) -> Vec<Emitted> {
        let mut out = Vec::new();
        // An ending no rollout dated is given now, at the last time read.
        if let Some((_, ending)) = self.held_ending.take() {
            out.push(Emitted {
                timestamp: self.last_at.unwrap_or_default(),
                direction: None,
                actor: self.actor(),
                event: ending,
                raw: None,
                line_frame: false,
            });
        }
        // No rollout of the root: the stream's own usage is all there is.
        if let (Some(root), Some(total), false) = (&self.root, self.usage, self.joined_root) {
            let actor = self.registry.actor(root);
            self.joined_root = true;
            out.push(Emitted {
                timestamp: self.last_at.unwrap_or_default(),
                direction: None,
                actor,
                event: Event::Usage {
                    turn_id: self.turn.clone(),
                    total,
                    last: None,
                    model: None,
                    service_tier: None,
                    incomplete: None,
                },
                raw: None,
                line_frame: false,
            });
        }
        out
    }

    fn drop_frames(&mut self) {
        self.rollout.drop_frames();
    }
}
