//! Codex rollout files (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`):
//! one session's files in (the root's first, then each child's, each line
//! tagged with its file), attributed envelopes out. A child's file names its
//! parent in `session_meta…thread_spawn`. A forked (V2) child's file starts
//! with a copy of its parent's history; that prefix is found from the
//! records themselves and attributed to nobody, so nothing is counted twice.
//! A unified-exec command whose call returns while its process runs on
//! (`exec_command`'s output says `Process running with session ID N`) is a
//! background command of the thread that launched it, from that output on
//! (`item_started` of a `backgroundCommand`, as a Claude background shell
//! is), until the files say it exited: the command's own `item_completed`
//! (its exit code and status) or a `write_stdin` to its session whose output
//! says `Process exited with code X`, whichever comes first.
//! Pure: no I/O, no clock.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::attribute::{Attributor, Emitted, InputLine, SourcePart};
use crate::decode::{decode_line_lean, raw_string, visit_members, DecodedLine};
use crate::model::{
    Actor, AgentStatus, Event, FinalMessageConfidence, ItemId, Role, Severity, ThreadId,
    Timestamp, TokenUsage, TurnId, Warning,
};
use crate::registry::{ChildDetails, LinkOutcome, Registry};
use crate::summary::summarize;

/// What is known of one rollout file.
#[derive(Debug, Default, Serialize, Deserialize)]
struct FileState {
    /// The thread the file belongs to (its first `session_meta`).
    thread: Option<ThreadId>,
    /// Inside the copied parent history of a forked child.
    replaying: bool,
    /// The thread whose history is being replayed.
    replayed_of: Option<ThreadId>,
}

/// A unified-exec call waiting for its output.
#[derive(Debug, Serialize, Deserialize)]
enum ExecCall {
    /// `exec_command`: the command it runs, and when it was called.
    Start(String, Option<Timestamp>),
    /// `write_stdin`: the process session it writes to.
    Stdin(u64),
}

/// What a unified-exec call's output says of its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum ExecState {
    /// `Process running with session ID N`: the call returned, the process
    /// runs on.
    Running(u64),
    /// `Process exited with code X`.
    Exited(i64),
}

/// A message that may be a turn's answer: its item and text.
type Answer = Option<(ItemId, String)>;

/// Per-thread facts.
#[derive(Debug, Default, Serialize, Deserialize)]
struct ThreadFacts {
    status: Option<AgentStatus>,
    turn: Option<TurnId>,
    /// Per turn: the last `final_answer` message and the last null-phase one.
    answers: HashMap<TurnId, (Answer, Answer)>,
    last_message: Option<String>,
}

/// Attributes the rollout files of one Codex session. Serializable so a
/// reading can be gone on from in a later process ([`crate::saved`]).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RolloutAttributor {
    registry: Registry,
    files: HashMap<u32, FileState>,
    current_file: u32,
    threads: HashMap<ThreadId, ThreadFacts>,
    /// Turn id → the thread whose own file started it.
    turn_owner: HashMap<TurnId, ThreadId>,
    /// Call id → tool name, per thread.
    #[serde(with = "crate::saved::pairs")]
    calls: HashMap<(ThreadId, String), String>,
    /// Unified-exec calls whose output has not come yet, per thread.
    #[serde(with = "crate::saved::pairs")]
    exec_calls: HashMap<(ThreadId, String), ExecCall>,
    /// Background commands still running: per thread and process session
    /// id, the call that started it.
    #[serde(with = "crate::saved::pairs")]
    background: HashMap<(ThreadId, u64), String>,
    warned_replay: HashSet<ThreadId>,
    announced: HashSet<ThreadId>,
    /// Frames are dropped (see [`Attributor::drop_frames`]).
    drop_frames: bool,
    /// Lines without tokens, models or links are passed over (see
    /// [`Attributor::usage_only`]).
    usage_only: bool,
    /// A line's frame is referenced, not copied (see
    /// [`Attributor::reference_frames`]).
    reference_frames: bool,
}

impl RolloutAttributor {
    /// A fresh attributor.
    pub fn new() -> Self {
        Self::default()
    }

    fn file(&mut self) -> &mut FileState {
        self.files.entry(self.current_file).or_default()
    }

    fn facts(&mut self, thread: &ThreadId) -> &mut ThreadFacts {
        self.threads.entry(thread.clone()).or_default()
    }

    fn handle(
        &mut self,
        value: &Value,
        out: &mut Vec<(Actor, Event)>,
    ) -> (Option<ThreadId>, Event) {
        let record_type = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let payload = value.get("payload").unwrap_or(&Value::Null);
        let payload_type = payload
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if record_type == "session_meta" {
            return self.session_meta(payload, out);
        }
        let owner = self.file().thread.clone();
        if self.file().replaying {
            let ends = record_type == "event_msg"
                && payload_type == "task_started"
                && self.is_own_turn(payload);
            if !ends {
                let of = self.file().replayed_of.clone();
                return (
                    None,
                    Event::Replayed {
                        of_thread_id: of,
                        record_type: label_of(record_type, payload_type),
                    },
                );
            }
            self.file().replaying = false;
        }
        let Some(thread) = owner else {
            // Lines before any session_meta: nobody is named.
            return (None, notice(record_type, payload_type));
        };
        let event = match (record_type, payload_type) {
            ("event_msg", "task_started") => self.task_started(&thread, payload),
            // A turn whose model call failed (an HTTP 500, say) still ends
            // with `task_complete`, its `error` naming why: the live stream
            // says `failed` of it, and so must its rollout.
            ("event_msg", "task_complete") => {
                let status = if payload.get("error").is_some_and(|error| !error.is_null()) {
                    "failed"
                } else {
                    "completed"
                };
                self.turn_ended(&thread, payload, status, out)
            }
            ("event_msg", "turn_aborted") => self.turn_ended(&thread, payload, "interrupted", out),
            ("event_msg", "token_count") => {
                match payload.get("info").filter(|info| !info.is_null()) {
                    Some(info) => Event::Usage {
                        turn_id: self.facts(&thread).turn.clone(),
                        total: usage(info.get("total_token_usage")),
                        last: Some(usage(info.get("last_token_usage"))),
                        model: None,
                        service_tier: None,
                        incomplete: None,
                    },
                    None => notice(record_type, payload_type),
                }
            }
            ("event_msg", "item_completed") => {
                if payload.pointer("/item/type").and_then(Value::as_str) == Some("CommandExecution") {
                    if let Some(call) = payload.pointer("/item/id").and_then(Value::as_str) {
                        let status = command_status(
                            payload.pointer("/item/status").and_then(Value::as_str),
                            payload.pointer("/item/exit_code").and_then(Value::as_i64),
                        );
                        self.end_background(&thread, call, status, out);
                    }
                }
                Event::ItemCompleted {
                    activity_kind: None,
                    agent_thread_id: None,
                    status: None,
                    item_type: payload
                        .pointer("/item/type")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned(),
                    item_id: payload
                        .pointer("/item/id")
                        .and_then(Value::as_str)
                        .map(ItemId::from),
                    turn_id: payload
                        .get("turn_id")
                        .and_then(Value::as_str)
                        .map(TurnId::from),
                }
            }
            ("turn_context", _) => match payload.get("model").and_then(Value::as_str) {
                Some(model) => Event::ModelSelected {
                    model: model.to_owned(),
                    turn_id: payload
                        .get("turn_id")
                        .and_then(Value::as_str)
                        .map(TurnId::from),
                    // The captures' turn contexts name no tier.
                    service_tier: None,
                },
                None => notice(record_type, payload_type),
            },
            ("response_item", "message") => self.message(&thread, payload),
            ("response_item", "reasoning") => Event::Reasoning {
                text: summarize(&texts(payload.get("summary"))),
                item_id: payload.get("id").and_then(Value::as_str).map(ItemId::from),
                turn_id: self.facts(&thread).turn.clone(),
            },
            ("response_item", "function_call" | "custom_tool_call" | "local_shell_call") => {
                let name = payload
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or(payload_type)
                    .to_owned();
                let call = payload
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let arguments = payload.get("arguments").and_then(Value::as_str);
                match (name.as_str(), arguments) {
                    ("exec_command", Some(arguments)) => {
                        self.exec_calls.insert(
                            (thread.clone(), call.clone()),
                            ExecCall::Start(
                                exec_command_text(arguments),
                                value
                                    .get("timestamp")
                                    .and_then(Value::as_str)
                                    .and_then(Timestamp::parse),
                            ),
                        );
                    }
                    ("write_stdin", Some(arguments)) => {
                        if let Some(session) = stdin_session(arguments) {
                            self.exec_calls
                                .insert((thread.clone(), call.clone()), ExecCall::Stdin(session));
                        }
                    }
                    _ => {}
                }
                self.calls.insert((thread.clone(), call), name.clone());
                let input = payload
                    .get("arguments")
                    .or_else(|| payload.get("input"))
                    .map(|value| {
                        value
                            .as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| value.to_string())
                    })
                    .unwrap_or_default();
                Event::ToolUse {
                    process_id: None,
                    tool_kind: tool_kind(&name).to_owned(),
                    name,
                    input: summarize(&input),
                    item_id: payload
                        .get("call_id")
                        .and_then(Value::as_str)
                        .map(ItemId::from),
                    turn_id: self.facts(&thread).turn.clone(),
                }
            }
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                let call = payload
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let name = self
                    .calls
                    .get(&(thread.clone(), call.clone()))
                    .cloned()
                    .unwrap_or_else(|| "?".to_owned());
                let output = match payload.get("output") {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => texts(Some(other)),
                    None => String::new(),
                };
                if let Some(exec) = self.exec_calls.remove(&(thread.clone(), call.clone())) {
                    self.exec_output(&thread, &call, exec, exec_state(&output), out);
                }
                Event::ToolResult {
                    receiver_thread_ids: Vec::new(),
                    tool_kind: tool_kind(&name).to_owned(),
                    name,
                    status: None,
                    exit_code: None,
                    duration_ms: None,
                    output: summarize(&output),
                    item_id: Some(ItemId::from(call)),
                    turn_id: self.facts(&thread).turn.clone(),
                }
            }
            ("response_item", "agent_message") => Event::Message {
                role: "agent".to_owned(),
                phase: None,
                text: texts(payload.get("content")),
                item_id: payload.get("id").and_then(Value::as_str).map(ItemId::from),
                turn_id: self.facts(&thread).turn.clone(),
            },
            // A record that always names its payload's type but names none
            // here (`payload: null`, a type that is no string) is damage,
            // not a record passed over: counted as an unknown frame.
            ("event_msg" | "response_item", "") => Event::Unknown {
                kind: "unknownMethod".to_owned(),
                method: Some(record_type.to_owned()),
                reason: format!("rollout record `{record_type}` without a payload type"),
                line_number: None,
                raw_base64: None,
                file: None,
            },
            (
                "event_msg"
                | "response_item"
                | "world_state"
                | "token_usage_record"
                | "inter_agent_communication_metadata"
                | "compacted",
                _,
            ) => notice(record_type, payload_type),
            _ => Event::Unknown {
                kind: "unknownMethod".to_owned(),
                method: Some(label_of(record_type, payload_type)),
                reason: format!(
                    "unknown rollout record `{}`",
                    label_of(record_type, payload_type)
                ),
                line_number: None,
                raw_base64: None,
                file: None,
            },
        };
        (Some(thread), event)
    }

    /// A `task_started` ends a copied prefix when its turn is not one of
    /// another thread's (known from that thread's own file, or spawned by
    /// one: a copied root turn has no parent turn).
    fn is_own_turn(&self, payload: &Value) -> bool {
        let turn = payload
            .get("turn_id")
            .and_then(Value::as_str)
            .map(TurnId::from);
        if let Some(turn) = &turn {
            if self.turn_owner.contains_key(turn) {
                return false;
            }
        }
        payload
            .pointer("/turn_attribution/parent_turn_id")
            .is_some_and(|parent| !parent.is_null())
    }

    fn session_meta(
        &mut self,
        payload: &Value,
        out: &mut Vec<(Actor, Event)>,
    ) -> (Option<ThreadId>, Event) {
        let Some(id) = payload
            .get("id")
            .and_then(Value::as_str)
            .map(ThreadId::from)
        else {
            return (None, notice("session_meta", ""));
        };
        let owner = self.file().thread.clone();
        match owner {
            Some(owner) if owner != id => {
                // A second session_meta naming another thread: a copy of that
                // thread's history follows (a forked child).
                self.file().replaying = true;
                self.file().replayed_of = Some(id.clone());
                if self.warned_replay.insert(owner.clone()) {
                    out.push((
                        self.registry.actor(&owner),
                        Event::Warning {
                            warning: Warning {
                                code: "replayed_history".to_owned(),
                                severity: Severity::Info,
                                message: format!(
                                    "the rollout of {owner} starts with a copy of {id}'s history; the copy is not attributed to {owner} and its tokens are counted once, in {id}"
                                ),
                                event_sequence: None,
                                thread_id: Some(owner.clone()),
                            },
                        },
                    ));
                }
                return (
                    None,
                    Event::Replayed {
                        of_thread_id: Some(id),
                        record_type: "session_meta".to_owned(),
                    },
                );
            }
            Some(_) => return (Some(id), notice("session_meta", "")),
            None => {}
        }
        self.file().thread = Some(id.clone());
        let spawn = payload
            .pointer("/source/subagent/thread_spawn")
            .or_else(|| payload.pointer("/source/subAgent/thread_spawn"));
        let parent = spawn
            .and_then(|spawn| spawn.get("parent_thread_id"))
            .or_else(|| payload.get("parent_thread_id"))
            .and_then(Value::as_str)
            .map(ThreadId::from);
        match (&parent, spawn) {
            (Some(parent), _) => {
                let text = |key: &str| {
                    spawn
                        .and_then(|spawn| spawn.get(key))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                let details = ChildDetails {
                    agent_path: text("agent_path"),
                    nickname: text("agent_nickname").or_else(|| {
                        payload
                            .get("agent_nickname")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    }),
                    agent_role: text("agent_role"),
                    description: None,
                };
                self.registry.add_details(&id, &details);
                match self.registry.link(parent, &id, "sessionMeta") {
                    LinkOutcome::Linked => out.push((
                        self.registry.actor(parent),
                        Event::AgentSpawned {
                            parent_thread_id: parent.clone(),
                            child_thread_id: id.clone(),
                            prompt: None,
                            model: None,
                            reasoning_effort: None,
                            via: "sessionMeta".to_owned(),
                        },
                    )),
                    LinkOutcome::Known => {}
                    LinkOutcome::Conflict { .. } | LinkOutcome::Cycle => out.push((
                        self.registry.actor(&id),
                        Event::Warning {
                            warning: Warning {
                                code: "link_conflict".to_owned(),
                                severity: Severity::Warning,
                                message: format!("the rollout of {id} names {parent} as its parent, which conflicts with what is known; the first link is kept"),
                                event_sequence: None,
                                thread_id: Some(id.clone()),
                            },
                        },
                    )),
                }
            }
            (None, _) => {
                self.registry.mark_root(&id);
            }
        }
        let cwd = payload.get("cwd").and_then(Value::as_str).map(str::to_owned);
        // The model comes with each turn's `turn_context`.
        (Some(id.clone()), Event::ThreadStarted { thread_id: id, cwd, model: None })
    }

    fn task_started(&mut self, thread: &ThreadId, payload: &Value) -> Event {
        let turn = TurnId::from(
            payload
                .get("turn_id")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        self.turn_owner.insert(turn.clone(), thread.clone());
        let facts = self.facts(thread);
        facts.turn = Some(turn.clone());
        facts.status = Some(AgentStatus::Running);
        Event::TurnStarted {
            turn_id: turn,
            root_turn_id: payload
                .get("root_turn_id")
                .and_then(Value::as_str)
                .map(TurnId::from),
        }
    }

    /// The output of a unified-exec call came: an `exec_command` whose
    /// process runs on starts a background command of its thread; a
    /// `write_stdin` that saw its process exit ends that command.
    fn exec_output(
        &mut self,
        thread: &ThreadId,
        call: &str,
        exec: ExecCall,
        state: Option<ExecState>,
        out: &mut Vec<(Actor, Event)>,
    ) {
        match (exec, state) {
            (ExecCall::Start(command, called_at), Some(ExecState::Running(session))) => {
                self.background
                    .insert((thread.clone(), session), call.to_owned());
                let turn_id = self.facts(thread).turn.clone();
                out.push((
                    self.registry.actor(thread),
                    Event::ItemStarted {
                        item_type: BACKGROUND_COMMAND.to_owned(),
                        item_id: Some(ItemId::from(call)),
                        turn_id,
                        description: Some(command),
                        started_at: called_at,
                    },
                ));
            }
            (ExecCall::Stdin(session), Some(ExecState::Exited(code))) => {
                if let Some(started) = self.background.get(&(thread.clone(), session)).cloned() {
                    self.end_background(thread, &started, command_status(None, Some(code)), out);
                }
            }
            (ExecCall::Start(..), Some(ExecState::Exited(_)) | None)
            | (ExecCall::Stdin(_), Some(ExecState::Running(_)) | None) => {}
        }
    }

    /// The background command `call` of `thread` ended with `status`
    /// (`completed`, `failed`, `cancelled`); a command not running (never
    /// backgrounded, or ended already) is left as it is.
    fn end_background(
        &mut self,
        thread: &ThreadId,
        call: &str,
        status: &str,
        out: &mut Vec<(Actor, Event)>,
    ) {
        let before = self.background.len();
        self.background
            .retain(|(owner, _), started| !(owner == thread && started == call));
        if self.background.len() == before {
            return;
        }
        let turn_id = self.facts(thread).turn.clone();
        out.push((
            self.registry.actor(thread),
            Event::ItemCompleted {
                item_type: BACKGROUND_COMMAND.to_owned(),
                item_id: Some(ItemId::from(call)),
                turn_id,
                status: Some(status.to_owned()),
                activity_kind: None,
                agent_thread_id: None,
            },
        ));
    }

    fn message(&mut self, thread: &ThreadId, payload: &Value) -> Event {
        let role = payload
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        let text = texts(payload.get("content"));
        let phase = payload
            .get("phase")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let item = payload.get("id").and_then(Value::as_str).map(ItemId::from);
        let facts = self.facts(thread);
        let turn = payload
            .pointer("/internal_chat_message_metadata_passthrough/turn_id")
            .and_then(Value::as_str)
            .map(TurnId::from)
            .or_else(|| facts.turn.clone());
        if role == "assistant" && phase.as_deref() != Some("commentary") {
            facts.last_message = Some(text.clone());
            if let (Some(turn), Some(item)) = (&turn, &item) {
                let answers = facts.answers.entry(turn.clone()).or_default();
                match phase.as_deref() {
                    Some("final_answer") => answers.0 = Some((item.clone(), text.clone())),
                    None => answers.1 = Some((item.clone(), text.clone())),
                    Some(_) => {}
                }
            }
        }
        Event::Message {
            role,
            phase,
            text,
            item_id: item,
            turn_id: turn,
        }
    }

    fn turn_ended(
        &mut self,
        thread: &ThreadId,
        payload: &Value,
        status: &str,
        out: &mut Vec<(Actor, Event)>,
    ) -> Event {
        let turn = TurnId::from(
            payload
                .get("turn_id")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        let actor = self.registry.actor(thread);
        let facts = self.facts(thread);
        let answer = facts
            .answers
            .get(&turn)
            .and_then(|(final_answer, null_phase)| {
                final_answer.clone().or_else(|| null_phase.clone())
            });
        let before = facts.status;
        let agent_status = match status {
            "completed" => AgentStatus::Completed,
            "failed" => AgentStatus::Failed,
            _ => AgentStatus::Interrupted,
        };
        // The provider's reason: a failed turn's error, an aborted one's.
        let error = match agent_status {
            AgentStatus::Failed => payload
                .get("error")
                .and_then(|error| error.get("message").or(Some(error)))
                .and_then(Value::as_str)
                .map(str::to_owned),
            AgentStatus::Pending
            | AgentStatus::Running
            | AgentStatus::Completed
            | AgentStatus::Interrupted
            | AgentStatus::Unknown => payload.get("reason").and_then(Value::as_str).map(str::to_owned),
        };
        facts.status = Some(agent_status);
        let last = payload
            .get("last_agent_message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| facts.last_message.clone());
        let is_primary = self.registry.primary_root() == Some(thread);
        if is_primary {
            let terminal = match agent_status {
                AgentStatus::Completed => match answer {
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
                AgentStatus::Failed => Event::Failed {
                    error: error.clone(),
                    source_thread_id: Some(thread.clone()),
                    turn_id: Some(turn.clone()),
                },
                AgentStatus::Pending
                | AgentStatus::Running
                | AgentStatus::Interrupted
                | AgentStatus::Unknown => Event::Interrupted {
                    error: error.clone(),
                    source_thread_id: Some(thread.clone()),
                    turn_id: Some(turn.clone()),
                },
            };
            out.push((actor, terminal));
        } else if before != Some(agent_status) || !before.is_some_and(AgentStatus::is_final) {
            out.push((
                actor,
                Event::AgentCompleted {
                    thread_id: thread.clone(),
                    parent_thread_id: self
                        .registry
                        .get(thread)
                        .and_then(|entry| entry.parent.clone()),
                    // A failed helper's last word is the error it failed
                    // with, as the live stream gives it.
                    result: match agent_status {
                        AgentStatus::Failed => error.clone().or(last),
                        AgentStatus::Completed
                        | AgentStatus::Pending
                        | AgentStatus::Running
                        | AgentStatus::Interrupted
                        | AgentStatus::Unknown => answer.map(|(_, text)| text).or(last),
                    },
                    status: agent_status,
                    result_confidence: FinalMessageConfidence::Stated,
                },
            ));
        }
        Event::TurnCompleted {
            last_message: None,
            turn_id: turn,
            status: status.to_owned(),
            error: (agent_status == AgentStatus::Failed).then_some(error).flatten(),
            duration_ms: payload.get("duration_ms").and_then(Value::as_i64),
            usage: None,
        }
    }
}

impl Attributor for RolloutAttributor {
    fn push(&mut self, line: &InputLine<'_>) -> Vec<Emitted> {
        self.push_part(&SourcePart::Main, line)
    }

    fn push_part(&mut self, part: &SourcePart, line: &InputLine<'_>) -> Vec<Emitted> {
        if let SourcePart::File { number } = part {
            self.current_file = *number;
        }
        if self.usage_only && passes_over(line.bytes) {
            return Vec::new();
        }
        let mut derived = Vec::new();
        let ((thread, event, raw, timestamp), decoded) = match decode_line_lean(
            line.bytes,
            line.truncated_from,
            if self.drop_frames {
                &unread_for_state
            } else {
                &unread
            },
            !self.drop_frames && !self.reference_frames,
        ) {
            DecodedLine::Undecodable {
                reason,
                raw,
                raw_base64,
            } => (
                (
                    None,
                    Event::undecodable(reason, line.line_number, raw_base64),
                    Some(raw),
                    line.observed_at,
                ),
                false,
            ),
            DecodedLine::Json { raw, value } => {
                let timestamp = value
                    .get("timestamp")
                    .and_then(Value::as_str)
                    .and_then(Timestamp::parse)
                    .unwrap_or(line.observed_at);
                let (thread, mut event) = self.handle(&value, &mut derived);
                if let Event::Unknown { line_number, .. } = &mut event {
                    *line_number = Some(line.line_number);
                }
                ((thread, event, raw, timestamp), true)
            }
        };
        let actor = match (&thread, &event) {
            (_, Event::Replayed { of_thread_id, .. }) => Actor::unknown(match of_thread_id {
                Some(of) => format!("replayed history of {of}"),
                None => "replayed history".to_owned(),
            }),
            (Some(thread), _) => self.registry.actor(thread),
            // A line that could not be read names no thread whether or not
            // its file's `session_meta` came before it: said as Claude's
            // attributor says it, not as a line before any `session_meta`.
            (None, _) if !decoded => Actor::unknown("undecodable line"),
            (None, _) => Actor::unknown("no session_meta before this line"),
        };
        if let Some(thread) = &actor.thread_id {
            self.announced.insert(thread.clone());
        }
        let mut out = vec![Emitted {
            timestamp,
            direction: None,
            actor,
            event,
            raw: raw.map(crate::model::RawFrame::from),
            line_frame: decoded && self.reference_frames,
        }];
        for (actor, event) in derived {
            out.push(Emitted {
                timestamp,
                direction: None,
                actor,
                event,
                raw: None,
                line_frame: false,
            });
        }
        out
    }

    fn finish(&mut self) -> Vec<Emitted> {
        Vec::new()
    }

    fn drop_frames(&mut self) {
        self.drop_frames = true;
    }

    fn usage_only(&mut self) {
        self.usage_only = true;
    }

    fn reference_frames(&mut self) {
        self.reference_frames = true;
    }

    fn saved(&self) -> Option<Result<Box<RawValue>, serde_json::Error>> {
        Some(serde_json::value::to_raw_value(self))
    }
}

/// A rollout line without the payload members `handle` never reads, as
/// compact JSON with the members in their order (a `session_meta` without
/// its base instructions: most of its bytes). Decoded, it is the value the
/// line itself decodes to, so a caller grouping rollouts into sessions
/// parses only this of each first line. `None` when the line is not a
/// JSON object the skim reads whole.
pub fn lean_line(line: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(1024);
    let mut record_type: Option<String> = None;
    let mut whole = true;
    let read = visit_members(line, &mut |key, raw| {
        out.push(if out.is_empty() { '{' } else { ',' });
        out.push_str(&serde_json::to_string(key).unwrap_or_default());
        out.push(':');
        if key == "payload" && raw.starts_with('{') {
            let mut payload = String::from("{");
            whole &= visit_members(raw.as_bytes(), &mut |member, raw| {
                if !unread(record_type.as_deref(), key, Some(member)) {
                    if payload.len() > 1 {
                        payload.push(',');
                    }
                    payload.push_str(&serde_json::to_string(member).unwrap_or_default());
                    payload.push(':');
                    payload.push_str(raw);
                }
                true
            });
            payload.push('}');
            out.push_str(&payload);
        } else {
            out.push_str(raw);
        }
        if key == "type" {
            record_type = raw_string(raw).map(|text| text.into_owned());
        }
        true
    });
    if !read || !whole {
        return None;
    }
    out.push_str(if out.is_empty() { "{}" } else { "}" });
    Some(out)
}

/// How much of a line [`passes_over`] looks at.
const PASS_OVER_PREFIX: usize = 4096;

/// For a caller that reads only usage: true for a line whose record type
/// never names a thread, starts or ends a replayed prefix or a turn,
/// selects a model or counts tokens (messages, tool calls, world state,
/// token records that repeat `token_count`, compaction, and every event but
/// a turn's start and end and a token count), found without decoding the
/// line (its `type` is among its first members, an event's own type first
/// in its payload). A background command's start and end (a unified-exec
/// call's output, a command's `item_completed`) are child work, which
/// usage does not read: those lines are passed over too.
fn passes_over(bytes: &[u8]) -> bool {
    match leading_types(bytes) {
        Some((record_type, payload_type)) => passes_over_types(record_type, payload_type),
        None => member_types(bytes).is_some_and(|(record_type, payload_type)| {
            passes_over_types(&record_type, payload_type.as_deref())
        }),
    }
}

/// The record type and an event's payload type, read by members from a
/// line's first bytes (a line cut there is read as far as it goes; `None`
/// when that does not tell the type, and the line is then decoded).
fn member_types(bytes: &[u8]) -> Option<(String, Option<String>)> {
    let head = &bytes[..bytes.len().min(PASS_OVER_PREFIX)];
    let (mut record_type, mut payload_type) = (None, None);
    let read = visit_members(head, &mut |key, raw| match key {
        "type" => {
            record_type = raw_string(raw).map(|text| text.into_owned());
            record_type.as_deref() == Some("event_msg")
        }
        "payload" => {
            visit_members(raw.as_bytes(), &mut |key, raw| {
                if key == "type" {
                    payload_type = raw_string(raw).map(|text| text.into_owned());
                }
                key != "type"
            });
            false
        }
        _ => true,
    });
    Some((record_type.filter(|_| read)?, payload_type))
}

/// [`passes_over`] once the types are known.
fn passes_over_types(record_type: &str, payload_type: Option<&str>) -> bool {
    match record_type {
        "event_msg" => payload_type.is_some_and(|kind| {
            !matches!(
                kind,
                "task_started" | "task_complete" | "turn_aborted" | "token_count"
            )
        }),
        "response_item"
        | "world_state"
        | "token_usage_record"
        | "inter_agent_communication_metadata"
        | "compacted" => true,
        _ => false,
    }
}

/// The record type and, for an event, its payload's type, read from a line
/// that starts the way Codex writes one: compact, `type` among the first
/// members, those before it plain strings or numbers, an event's payload
/// starting with its own `type`. A line of any other shape gives `None`
/// and is read by members (what the skim costs, about a tenth of reading
/// usage, is saved on nearly every line).
fn leading_types(bytes: &[u8]) -> Option<(&str, Option<&str>)> {
    let mut rest = bytes.strip_prefix(b"{")?;
    let mut record_type = None;
    loop {
        let (key, after) = plain_string(rest)?;
        let value = after.strip_prefix(b":")?;
        rest = match (key, record_type) {
            ("type", None) => {
                let (kind, after) = plain_string(value)?;
                if kind != "event_msg" {
                    return Some((kind, None));
                }
                record_type = Some(kind);
                after
            }
            ("payload", Some(kind)) => {
                let (payload_type, _) = plain_string(value.strip_prefix(b"{\"type\":")?)?;
                return Some((kind, Some(payload_type)));
            }
            ("type" | "payload", _) => return None,
            _ => skip_plain_scalar(value)?,
        };
        rest = rest.strip_prefix(b",")?;
    }
}

/// A string without escapes at the start of `bytes`, and what follows it.
fn plain_string(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let inner = bytes.strip_prefix(b"\"")?;
    let end = memchr::memchr(b'"', inner)?;
    let text = &inner[..end];
    if text.contains(&b'\\') {
        return None;
    }
    Some((std::str::from_utf8(text).ok()?, &inner[end + 1..]))
}

/// What follows a plain string or a number at the start of `bytes`.
fn skip_plain_scalar(bytes: &[u8]) -> Option<&[u8]> {
    if bytes.starts_with(b"\"") {
        return plain_string(bytes).map(|(_, rest)| rest);
    }
    let digits = bytes
        .iter()
        .take_while(|byte| matches!(byte, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .count();
    (digits > 0).then(|| &bytes[digits..])
}

/// The payload members `handle` never reads, skipped unbuilt: a
/// `session_meta` carries the base instructions (often 20 KB, almost half
/// of a rollout's bytes) and notice records need only their type. Keep in
/// step with what `handle` and `session_meta` read.
fn unread(record_type: Option<&str>, key: &str, member: Option<&str>) -> bool {
    let (Some(record_type), "payload", Some(member)) = (record_type, key, member) else {
        return false;
    };
    match record_type {
        "session_meta" => !matches!(
            member,
            "type" | "id" | "source" | "parent_thread_id" | "agent_nickname" | "cwd"
        ),
        "world_state"
        | "token_usage_record"
        | "inter_agent_communication_metadata"
        | "compacted" => member != "type",
        // A tool list (`additional_tools`), rate limits and thread settings
        // are only ever a notice's.
        "response_item" => member == "tools",
        "event_msg" => matches!(member, "rate_limits" | "thread_settings"),
        _ => false,
    }
}

/// [`unread`], and for a caller that reads only the run state (frames
/// dropped): the members that only become the text of an event (message
/// and reasoning text, tool arguments and output, items), never a link, a
/// turn, a replay boundary or a token count. Tool arguments and output
/// and a command's item also tell a background command's start and end:
/// child work, which a caller that drops frames (`Recorder::for_usage`,
/// whose lines of those types are passed over unread) does not read.
fn unread_for_state(record_type: Option<&str>, key: &str, member: Option<&str>) -> bool {
    if unread(record_type, key, member) {
        return true;
    }
    let (Some(record_type), "payload", Some(member)) = (record_type, key, member) else {
        return false;
    };
    match record_type {
        "response_item" => matches!(
            member,
            "content" | "summary" | "encrypted_content" | "arguments" | "input" | "output"
        ),
        "event_msg" => matches!(member, "last_agent_message" | "message" | "item"),
        _ => false,
    }
}

/// The item type of a command that outlives its call, as the child-work
/// reducer knows it (a Claude background shell is one too).
pub(crate) const BACKGROUND_COMMAND: &str = "backgroundCommand";

/// The command an `exec_command` call runs (its `cmd`), else its arguments
/// as written.
fn exec_command_text(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|value| value.get("cmd").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| arguments.to_owned())
}

/// The process session a `write_stdin` call writes to.
fn stdin_session(arguments: &str) -> Option<u64> {
    let value = serde_json::from_str::<Value>(arguments).ok()?;
    let session = value.get("session_id")?;
    session
        .as_u64()
        .or_else(|| session.as_str().and_then(|text| text.trim().parse().ok()))
}

/// What a unified-exec output's header says of its process: the lines
/// before its `Output:` line (what the process printed, after it, is never
/// read for it, and an output with no such line says nothing).
fn exec_state(output: &str) -> Option<ExecState> {
    let mut state = None;
    for line in output.lines() {
        if line == "Output:" {
            return state;
        }
        if let Some(session) = line.strip_prefix("Process running with session ID ") {
            state = session.trim().parse().ok().map(ExecState::Running);
        } else if let Some(code) = line.strip_prefix("Process exited with code ") {
            state = code.trim().parse().ok().map(ExecState::Exited);
        }
    }
    None
}

/// A command's ending as the child-work reducer reads a background
/// command's status: a non-zero exit failed, as the live stream's
/// `exitCode` says.
fn command_status(status: Option<&str>, exit_code: Option<i64>) -> &'static str {
    match (status, exit_code) {
        (_, Some(code)) if code != 0 => "failed",
        (Some("failed"), _) => "failed",
        (Some("declined"), _) => "cancelled",
        _ => "completed",
    }
}

fn label_of(record_type: &str, payload_type: &str) -> String {
    if payload_type.is_empty() {
        record_type.to_owned()
    } else {
        format!("{record_type}/{payload_type}")
    }
}

fn notice(record_type: &str, payload_type: &str) -> Event {
    Event::Notice {
        item_id: None,
        method: label_of(record_type, payload_type),
        message: None,
    }
}

/// The text parts of a content list, joined by newlines.
fn texts(content: Option<&Value>) -> String {
    match content {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| {
                part.get("text")
                    .and_then(Value::as_str)
                    .or_else(|| part.as_str())
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::String(text)) => text.clone(),
        _ => String::new(),
    }
}

fn usage(value: Option<&Value>) -> TokenUsage {
    let number = |key: &str| {
        value
            .and_then(|v| v.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    TokenUsage {
        input_tokens: number("input_tokens"),
        cached_input_tokens: number("cached_input_tokens"),
        cache_creation_input_tokens: number("cache_write_input_tokens"),
        // Codex names no cache lifetime, and counts no web search here.
        cache_creation_1h_input_tokens: 0,
        web_search_requests: 0,
        output_tokens: number("output_tokens"),
        reasoning_output_tokens: number("reasoning_output_tokens"),
        total_tokens: number("total_tokens"),
    }
}

fn tool_kind(name: &str) -> &'static str {
    match name {
        "exec_command" | "write_stdin" | "shell" | "local_shell_call" | "exec" => "command",
        "apply_patch" => "file_change",
        "web_search" => "web_search",
        "spawn_agent" | "wait_agent" | "close_agent" | "send_input" | "resume_agent"
        | "send_message" | "followup_task" | "interrupt_agent" | "list_agents" => "agent",
        name if name.starts_with("mcp__") => "mcp",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a unified-exec output's header tells its process's state:
    /// what the process printed (after `Output:`) never does, nor does an
    /// output with no header.
    #[test]
    fn an_exec_outputs_header_alone_says_whether_its_process_runs() {
        let outputs = [
            "Chunk ID: 4fb1e1\nWall time: 0.5014 seconds\nProcess running with session ID 71723\nOriginal token count: 3\nOutput:\nbg-start\r\n",
            "Chunk ID: d0ad5e\nWall time: 1.3147 seconds\nProcess exited with code 2\nOriginal token count: 3\nOutput:\nbg-done\r\n",
            "Chunk ID: d0ad5e\nWall time: 1.3147 seconds\nProcess exited with code 0\nOutput:\nProcess running with session ID 9\n",
            "Chunk ID: 1\nOutput:\nProcess exited with code 1\n",
            "Process exited with code 1\n",
            "write_stdin failed: Unknown process id 71723",
        ];
        assert_eq!(
            outputs.map(exec_state),
            [
                Some(ExecState::Running(71723)),
                Some(ExecState::Exited(2)),
                Some(ExecState::Exited(0)),
                None,
                None,
                None,
            ]
        );
    }

    /// Where the quick reading of a line's types answers, it is what the
    /// reading by members says, on every line of every capture and on
    /// lines shaped otherwise.
    #[test]
    fn leading_types_agree_with_reading_by_members() {
        let mut lines: Vec<Vec<u8>> = [
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}"#,
            r#"{"timestamp":"t","ordinal":-1.5e3,"type":"response_item","payload":{}}"#,
            r#"{"payload":{"type":"agent_message"},"type":"event_msg"}"#,
            r#"{"timestamp":"t\"","type":"event_msg","payload":{"type":"x"}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"message":"m","type":"agent_message"}}"#,
            r#"{ "type": "response_item", "payload": {} }"#,
            r#"{"timestamp":"t","type":"ev\u0065nt_msg","payload":{"type":"agent_message"}}"#,
            r#"{"n":true,"type":"compacted"}"#,
        ]
        .iter()
        .map(|line| line.as_bytes().to_vec())
        .collect();
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let mut folders = vec![fixtures.join("codex"), fixtures.join("codex-0.171")];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{e}")) {
                let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
                if path.is_dir() {
                    folders.push(path);
                } else if path.file_name().is_some_and(|name| name.to_string_lossy().starts_with("rollout-")) {
                    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
                    lines.extend(
                        text.split(|byte| *byte == b'\n')
                            .filter(|line| !line.is_empty())
                            .map(<[u8]>::to_vec),
                    );
                }
            }
        }
        let mut answered = 0;
        for line in &lines {
            if let Some((record_type, payload_type)) = leading_types(line) {
                answered += 1;
                let by_members = member_types(line);
                assert_eq!(
                    Some((record_type.to_owned(), payload_type.map(str::to_owned))),
                    by_members,
                    "{}",
                    String::from_utf8_lossy(line)
                );
            }
        }
        // Every line Codex wrote is answered quickly; the odd shapes above
        // are not.
        assert_eq!(answered, lines.len() - 6);
        let odd: Vec<_> = lines[2..8].iter().map(|line| leading_types(line)).collect();
        assert_eq!(odd, vec![None; 6]);
    }
}
