//! Claude Code attribution: one line of any Claude source in (stream-json,
//! a transcript line, a subagent's metadata, a hook input), the attributed
//! frame envelope plus derived lifecycle, usage, terminal and correction
//! events out. One attributor reads all of them, so the sources of one
//! session merge into one run. Pure: no clock, no I/O.
//!
//! # Who owns a line
//!
//! - The root is the session (`session_id` / `sessionId`); a second session
//!   id in the same run is another root (`Main 2`).
//! - Stream `user`/`assistant`/`stream_event`/`tool_progress` lines:
//!   `parent_tool_use_id: null` is the root; otherwise the line belongs to
//!   the subagent that `Agent`/`Task` tool_use spawned (provider-stated).
//! - `system/task_*` lines belong to the task they name (`task_id` is the
//!   agent id of a subagent); tasks whose `task_type` is not `local_agent`
//!   (background shells) are commands owned by their launcher, recorded as
//!   `item_started`/`item_completed` with item type `backgroundCommand`.
//! - Transcript lines: `isSidechain: false` is the root; a subagent file or
//!   `agentId` names the subagent. 1.0.128 sidechain lines carry no agent id:
//!   a sidechain whose first user text equals one pending `Task` prompt is
//!   that subagent's (`derived`), any other stays `unknown`.
//! - 2.0.77 "Warmup" agents (started by the CLI on launch, named by no Task
//!   call) are kept in the log with no thread (`reason` says so), outside
//!   the tree.
//! - Hook inputs: `agent_id` names the subagent; without it the hook is the
//!   root's when the CLI states agent ids on subagent hooks (2.1.x, which
//!   sends `prompt_id`) or no subagent is running, else `unknown`. A
//!   `SubagentStart` is linked to the one pending `Agent`/`Task` call that
//!   fits it (`derived`), or stays unlinked.
//!
//! # Helper names
//!
//! A helper's `threadId` is its agent id when a source gives one no later
//! than its first event (`agent_id`, `task_id`, the root's
//! `tool_use_result.agentId`, a subagent file or its metadata), else the id
//! of the spawning tool_use (1.0.128, and 2.0.77 stdout, where the agent id
//! arrives only after the subagent's lines). A name never changes within a
//! run: an agent id learnt later is an alias of the same thread.
//!
//! # Tokens
//!
//! Counted once per API response (message id + request id). Stdout carries
//! the `message_start` snapshot (`output_tokens: 1`); transcripts carry final
//! values, which replace a snapshot when merged. `result.usage` is the root's
//! final usage of one query (subagents excluded) and replaces the root's
//! snapshots of that query, and only those: with background subagents the
//! next query starts (`system/init`) and replies before the first one's
//! `result` is printed, and the n-th `result` covers the first n queries.
//! `modelUsage` and `total_cost_usd` include subagents and are kept raw
//! only; `task_*` `total_tokens` is a context size, not a sum, and is not
//! counted.
//!
//! # Terminal provenance
//!
//! Every `result` line ends a root turn (`turn_completed`) and states the run
//! as it stands: `done` with the last non-empty root `result` so far,
//! `interrupted` for an aborted query, `failed` for another error. Background
//! subagents make one run print several `result` lines; the last one wins.
//! A helper's text never becomes the result.

mod usage;

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::LazyLock;

use agentrace_wire::claude::{ApiMessage, ContentBlock, HookInput, Record, SubagentMeta};
use memchr::memmem;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::attribute::{Attributor, Emitted, InputLine, SourcePart};
use crate::decode::{
    decode_line_lean, raw_string, visit_leading_scalars, visit_members, visit_trailing_members, DecodedLine, Members, Skip,
};
use crate::model::{
    Actor, AgentStatus, Confidence, Envelope, Event, EventBody, FinalMessageConfidence,
    IncompleteReason, ItemId, Role, Severity, ThreadId, Timestamp, TokenUsage, TurnId, Warning,
};
use crate::registry::{ChildDetails, LinkOutcome, Registry, ThreadKind};
use crate::summary::summarize;

pub use usage::{tokens, UsageBook};

/// Links inferred from other frames rather than stated on one: their
/// helpers' events are `derived`.
const DERIVED_VIAS: &[&str] = &["hookOrder", "promptMatch"];

/// Tools that spawn a subagent.
fn is_spawn_tool(name: &str) -> bool {
    matches!(name, "Agent" | "Task")
}

/// `system` subtypes we know and keep as `notice`.
const SYSTEM_NOTICES: &[&str] = &[
    "api_retry",
    "background_tasks_changed",
    "compact_boundary",
    "files_persisted",
    "hook_progress",
    "hook_response",
    "hook_started",
    "local_command_output",
    "status",
];

/// Transcript entry types that are bookkeeping of the CLI, kept as `notice`.
const TRANSCRIPT_NOTICES: &[&str] = &[
    "agent-name",
    "api-request",
    "api-request-blob",
    "api-request-shape",
    "atis-latch",
    "attachment",
    "cost-state",
    "custom-title",
    "file-history-snapshot",
    "last-prompt",
    "mode",
    "permission-mode",
    "progress",
    "queue-operation",
    "summary",
    "system",
    "tag",
    "tools-used",
];

/// The top-level members no reader of a line here looks at (no wire type
/// has them; `handle` never asks for them), skipped unbuilt: a request's
/// `shape` and an attachment's body are most of a transcript's bytes. A
/// request blob's `message` is a notice's, never read either.
fn unread(record_type: Option<&str>, key: &str, member: Option<&str>) -> bool {
    member.is_none()
        && matches!(
            (record_type, key),
            (_, "shape" | "rendered" | "attachment")
                | (Some("api-request-blob"), "message")
                | (Some("api-request"), "params" | "tail" | "cacheControl")
        )
}

/// A spawn request seen as an `Agent`/`Task` tool_use (or its hook).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Spawn {
    parent: Option<ThreadId>,
    prompt: Option<String>,
    subagent_type: Option<String>,
    description: Option<String>,
    model: Option<String>,
    /// The helper it created, once named.
    child: Option<ThreadId>,
}

/// Lifecycle of one helper.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct HelperTrack {
    running: bool,
    generation: u32,
    ended_generation: u32,
    turn: Option<TurnId>,
    /// How the last ended run ended, and whether a final text came with it.
    ended_status: Option<AgentStatus>,
    ended_with_text: bool,
}

/// Who a frame belongs to.
#[derive(Debug, Clone)]
enum Owner {
    /// A thread, with how we know.
    Thread(ThreadId, Confidence),
    /// No thread: an actor with a reason (unknown, or a warmup agent).
    Nobody(Actor),
}

/// Whose actor a derived event carries, resolved when it is emitted.
#[derive(Debug, Clone)]
enum Who {
    Thread(ThreadId),
    Frame,
}

/// Attributes every Claude Code source. Serializable so a reading can be
/// gone on from in a later process ([`crate::saved`]).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ClaudeAttributor {
    registry: Registry,
    /// The first session seen.
    root: Option<ThreadId>,
    /// The root's working folder was said (`thread_started`).
    folder_said: bool,
    /// Spawning tool_use id → what was asked.
    spawns: HashMap<String, Spawn>,
    /// Agent id → helper thread.
    by_agent: HashMap<String, ThreadId>,
    /// Spawning tool_use id → helper thread.
    by_tool_use: HashMap<String, ThreadId>,
    /// Tool_use id → (tool name, calling thread).
    tools: HashMap<String, (String, Option<ThreadId>)>,
    /// Background command task id → its owner.
    commands: HashMap<String, Option<ThreadId>>,
    /// A `run_in_background` Bash call's tool_use id → what it runs (its
    /// description, else its command): a transcript names the task only in
    /// the call's result.
    background_calls: HashMap<String, Option<String>>,
    /// Background commands started from a transcript's tool result and not
    /// ended yet: its `<task-notification>` ends them (the stream's own
    /// `task_notification` ends the stream's).
    transcript_commands: HashSet<String>,
    helpers: HashMap<ThreadId, HelperTrack>,
    books: HashMap<ThreadId, UsageBook>,
    /// The model of each agent's last reply.
    models: HashMap<ThreadId, String>,
    /// Line uuids already recorded (stdout and transcripts share them).
    seen_uuids: HashSet<String>,
    /// Tool_use ids whose call / result is already recorded.
    recorded_tool_uses: HashSet<String>,
    recorded_tool_results: HashSet<String>,
    /// Root turns begun by `system/init` and not yet ended by a `result`.
    open_root_turns: VecDeque<TurnId>,
    /// The last non-empty root result and the item it came from.
    last_result: Option<(String, Option<ItemId>)>,
    /// The root's last assistant text: (uuid, text).
    last_root_text: Option<(Option<ItemId>, String)>,
    /// 1.0.128 sidechain line uuid → helper thread.
    sidechains: HashMap<String, ThreadId>,
    /// 1.0.128: spawns a sidechain was already matched to.
    sidechain_spawns: HashSet<String>,
    /// A root prompt was seen (hooks: agents started before one are the
    /// CLI's warmup agents).
    prompted: bool,
    /// Transcripts: the root prompt whose turn has not shown a reply yet.
    pending_prompt: Option<TurnId>,
    /// The root's turns come from stdout (`system/init` … `result`): a
    /// transcript's prompt, which stdout never prints, opens none there
    /// (the replies that would end it are stdout's too, duplicates here).
    stream_turns: bool,
    /// A root transcript line stated `turnOrigin` (2.1.332): the CLI marks
    /// every line it answers, so a line without one is answered by no
    /// model call.
    states_turn_origin: bool,
    /// Agent ids of 2.0.77 startup warmup agents.
    warmups: HashSet<String>,
    /// Hooks: a `PreCompact` came and its compaction has not stopped yet.
    compacting: bool,
    /// Usage of replies that belong to no thread, by their actor's reason
    /// (which names the warmup agent).
    outside_books: HashMap<String, UsageBook>,
    /// Helpers whose hand-back the root got.
    handed_back: HashSet<ThreadId>,
    /// The line being read is a transcript's (its subagents' files hold
    /// their own responses), not stdout's.
    reading_transcript: bool,
    /// Subagents a hook said started and none said stopped.
    hook_live: HashSet<String>,
    /// The last actor written for each thread, to know when to correct.
    announced: HashMap<ThreadId, Actor>,
    /// Threads whose actor may have changed while handling the current line.
    dirty: BTreeSet<ThreadId>,
    /// Spawn edges already announced.
    edges: HashSet<(ThreadId, ThreadId)>,
    /// Warnings already raised: (code, thread).
    raised: HashSet<(String, Option<ThreadId>)>,
    /// While priming, nothing is emitted.
    priming: bool,
    /// Frames are dropped (see [`Attributor::drop_frames`]).
    drop_frames: bool,
    /// Lines without tokens, models or links are passed over (see
    /// [`Attributor::usage_only`]).
    usage_only: bool,
    /// A line's frame is referenced, not copied (see
    /// [`Attributor::reference_frames`]).
    reference_frames: bool,
}

/// A line's frame as an event carries it: the copy kept (`raw`), and
/// whether the frame is the line itself, referenced instead of copied
/// ([`Emitted::line_frame`]).
struct Frame(Option<Box<RawValue>>, bool);

/// Events derived while handling one frame.
type Derived = Vec<(Who, Event)>;

impl ClaudeAttributor {
    /// A fresh attributor.
    pub fn new() -> Self {
        Self::default()
    }

    /// The registry as it stands.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    // ----- actors -------------------------------------------------------

    /// The actor of a thread as the registry knows it, `derived` when its
    /// link was inferred.
    fn thread_actor(&self, thread: &ThreadId) -> Actor {
        let mut actor = self.registry.actor(thread);
        let derived_link = self
            .registry
            .get(thread)
            .and_then(|entry| entry.link_via.as_deref())
            .is_some_and(|via| DERIVED_VIAS.contains(&via));
        if derived_link && actor.confidence == Confidence::Provider {
            actor.confidence = Confidence::Derived;
        }
        actor
    }

    fn owner_actor(&self, owner: &Owner) -> Actor {
        match owner {
            Owner::Thread(thread, confidence) => {
                let mut actor = self.thread_actor(thread);
                if *confidence == Confidence::Derived && actor.confidence == Confidence::Provider {
                    actor.confidence = Confidence::Derived;
                }
                actor
            }
            Owner::Nobody(actor) => actor.clone(),
        }
    }

    fn root_owner(&self, confidence: Confidence) -> Owner {
        match &self.root {
            Some(root) => Owner::Thread(root.clone(), confidence),
            None => Owner::Nobody(Actor::unknown("no session id")),
        }
    }

    fn is_root(&self, thread: &ThreadId) -> bool {
        self.registry.get(thread).map(|entry| entry.kind) == Some(ThreadKind::Root)
    }

    /// Notes a session id: the first one is the root; another one is a
    /// root of its own.
    fn note_session(&mut self, session: Option<&str>) -> Option<ThreadId> {
        let session = ThreadId::from(session.filter(|id| !id.is_empty())?);
        if self.registry.get(&session).map(|entry| entry.kind) != Some(ThreadKind::Helper) {
            self.registry.mark_root(&session);
        }
        if self.root.is_none() {
            self.root = Some(session.clone());
        }
        Some(session)
    }

    // ----- the registry -------------------------------------------------

    fn warn(
        &mut self,
        derived: &mut Derived,
        code: &str,
        thread: Option<&ThreadId>,
        message: String,
    ) {
        if !self.raised.insert((code.to_owned(), thread.cloned())) {
            return;
        }
        derived.push((
            Who::Frame,
            Event::Warning {
                warning: Warning {
                    code: code.to_owned(),
                    severity: Severity::Warning,
                    message,
                    event_sequence: None,
                    thread_id: thread.cloned(),
                },
            },
        ));
    }

    fn details(&mut self, thread: &ThreadId, description: Option<&str>, kind: Option<&str>) {
        let details = ChildDetails {
            nickname: description.map(str::to_owned),
            agent_role: kind.map(str::to_owned),
            ..ChildDetails::default()
        };
        if self.registry.add_details(thread, &details) {
            self.dirty.insert(thread.clone());
        }
    }

    /// Offers a spawn link and announces it once.
    fn link(
        &mut self,
        derived: &mut Derived,
        parent: &ThreadId,
        child: &ThreadId,
        via: &str,
        prompt: Option<String>,
        model: Option<String>,
    ) {
        match self.registry.link(parent, child, via) {
            LinkOutcome::Linked => self.dirty.extend(self.registry.subtree(child)),
            LinkOutcome::Known => {}
            LinkOutcome::Conflict { existing } => {
                let message = match existing {
                    Some(existing) => format!(
                        "{via} names {parent} as the parent of {child}, but {existing} was linked first; the first link is kept"
                    ),
                    None => format!("{via} names {parent} as the parent of {child}, which is a root; it stays a root"),
                };
                self.warn(derived, "link_conflict", Some(child), message);
                return;
            }
            LinkOutcome::Cycle => {
                self.warn(
                    derived,
                    "link_cycle",
                    Some(child),
                    format!("{via} would make {child} a descendant of itself through {parent}; the link was refused"),
                );
                return;
            }
        }
        if self.edges.insert((parent.clone(), child.clone())) {
            derived.push((
                Who::Thread(parent.clone()),
                Event::AgentSpawned {
                    parent_thread_id: parent.clone(),
                    child_thread_id: child.clone(),
                    prompt,
                    model,
                    reasoning_effort: None,
                    via: via.to_owned(),
                },
            ));
        }
    }

    /// The thread of a helper a tool_use spawned and/or an agent id names;
    /// named once, on first evidence, and linked through its spawn when that
    /// is known. `None` when neither id is given.
    fn helper(
        &mut self,
        tool_use: Option<&str>,
        agent: Option<&str>,
        via: &str,
        derived: &mut Derived,
    ) -> Option<ThreadId> {
        let tool_use = tool_use.filter(|id| !id.is_empty());
        let agent = agent.filter(|id| !id.is_empty());
        let known = agent
            .and_then(|agent| self.by_agent.get(agent))
            .or_else(|| tool_use.and_then(|tool_use| self.by_tool_use.get(tool_use)))
            .cloned();
        let (thread, new) = match known {
            Some(thread) => (thread, false),
            None => {
                let thread = ThreadId::from(agent.or(tool_use)?);
                self.registry.observe(&thread);
                (thread, true)
            }
        };
        if let Some(agent) = agent {
            self.by_agent
                .entry(agent.to_owned())
                .or_insert_with(|| thread.clone());
        }
        if let Some(tool_use) = tool_use {
            // Only a spawning call names a helper: a `SendMessage` that
            // resumes one must not end it when its own result comes back.
            let spawning = self
                .tools
                .get(tool_use)
                .is_none_or(|(name, _)| is_spawn_tool(name));
            if spawning {
                self.by_tool_use
                    .entry(tool_use.to_owned())
                    .or_insert_with(|| thread.clone());
            }
            if let Some(spawn) = self.spawns.get_mut(tool_use) {
                if spawn.child.is_none() {
                    spawn.child = Some(thread.clone());
                    let spawn = spawn.clone();
                    self.details(
                        &thread,
                        spawn.description.as_deref(),
                        spawn.subagent_type.as_deref(),
                    );
                    if let Some(parent) = &spawn.parent {
                        self.link(
                            derived,
                            parent,
                            &thread,
                            via,
                            spawn.prompt.clone(),
                            spawn.model.clone(),
                        );
                    }
                }
            }
        }
        if new {
            self.start_helper(&thread, None, derived);
        }
        Some(thread)
    }

    fn is_linked(&self, thread: &ThreadId) -> bool {
        self.registry.get(thread).map(|entry| entry.kind) == Some(ThreadKind::Helper)
    }

    /// A helper's run begins (its first, or a follow-up after it ended).
    fn start_helper(&mut self, thread: &ThreadId, run: Option<&str>, derived: &mut Derived) {
        let track = self.helpers.entry(thread.clone()).or_default();
        if track.running {
            return;
        }
        track.running = true;
        track.generation += 1;
        let turn = TurnId::from(match run {
            Some(run) => run.to_owned(),
            None => format!("{thread}#{}", track.generation),
        });
        track.turn = Some(turn.clone());
        derived.push((
            Who::Thread(thread.clone()),
            Event::TurnStarted {
                turn_id: turn,
                root_turn_id: None,
            },
        ));
    }

    /// A helper's run ended; the first ending of a run wins. A report
    /// (`confidence` derived) that comes after an ending without text is
    /// still that run's final message: a second `agent_completed` of the
    /// first ending's status says it, and nothing else is ended again.
    fn end_helper(
        &mut self,
        thread: &ThreadId,
        status: AgentStatus,
        result: Option<String>,
        confidence: FinalMessageConfidence,
        derived: &mut Derived,
    ) {
        if self.is_root(thread) {
            return;
        }
        let track = self.helpers.entry(thread.clone()).or_default();
        if track.generation == 0 {
            track.generation = 1;
        }
        if track.ended_generation == track.generation {
            // Only the spawn's tool_result is taken late: a task
            // notification after `task_updated` may carry the task's
            // description instead of a report (2.1.197).
            let late_report = confidence == FinalMessageConfidence::Derived
                && status == AgentStatus::Completed
                && !track.ended_with_text;
            if let (true, Some(text), Some(ended)) = (late_report, result, track.ended_status) {
                track.ended_with_text = true;
                let parent = self
                    .registry
                    .get(thread)
                    .and_then(|entry| entry.parent.clone());
                derived.push((
                    parent.clone().map_or(Who::Frame, Who::Thread),
                    Event::AgentCompleted {
                        thread_id: thread.clone(),
                        parent_thread_id: parent,
                        result: Some(summarize(&text)),
                        status: ended,
                        result_confidence: confidence,
                    },
                ));
            }
            return;
        }
        track.ended_generation = track.generation;
        track.ended_status = Some(status);
        track.ended_with_text = result.is_some();
        track.running = false;
        let turn = track
            .turn
            .clone()
            .unwrap_or_else(|| TurnId::from(format!("{thread}#{}", track.generation)));
        let usage = self.books.get(thread).map(UsageBook::total);
        let (status_text, error) = match status {
            AgentStatus::Completed => ("completed", None),
            AgentStatus::Interrupted => ("interrupted", result.clone()),
            AgentStatus::Pending | AgentStatus::Running | AgentStatus::Failed | AgentStatus::Unknown => ("failed", result.clone()),
        };
        derived.push((
            Who::Thread(thread.clone()),
            Event::TurnCompleted {
                last_message: None,
                turn_id: turn,
                status: status_text.to_owned(),
                error,
                duration_ms: None,
                usage,
            },
        ));
        let parent = self
            .registry
            .get(thread)
            .and_then(|entry| entry.parent.clone());
        let who = match &parent {
            Some(parent) => Who::Thread(parent.clone()),
            None => Who::Frame,
        };
        derived.push((
            who,
            Event::AgentCompleted {
                thread_id: thread.clone(),
                parent_thread_id: parent,
                result: result.map(|text| summarize(&text)),
                status,
                result_confidence: confidence,
            },
        ));
    }

    /// The model an agent's replies come from, said once per change (what
    /// prices its tokens); a harness-made reply (`<synthetic>`) names none.
    fn note_model(&mut self, thread: &ThreadId, message: &ApiMessage, turn: Option<TurnId>, derived: &mut Derived) {
        let Some(model) = message.model.as_deref().filter(|model| !model.is_empty() && *model != "<synthetic>") else {
            return;
        };
        if self.models.get(thread).is_some_and(|known| known == model) {
            return;
        }
        self.models.insert(thread.clone(), model.to_owned());
        derived.push((
            Who::Thread(thread.clone()),
            // Each response names its own tier.
            Event::ModelSelected {
                model: model.to_owned(),
                turn_id: turn,
                service_tier: None,
            },
        ));
    }

    fn record_usage(
        &mut self,
        thread: &ThreadId,
        message: &ApiMessage,
        request: Option<&str>,
        derived: &mut Derived,
    ) {
        let (Some(usage), Some(id)) = (&message.usage, &message.id) else {
            return;
        };
        // Keyed by message id alone: 2.0.77 stdout omits the request id its
        // transcript has, and message ids are unique per response anyway.
        let _ = request;
        let key = (id.clone(), String::new());
        let service_tier = usage.service_tier.clone();
        let usage = tokens(usage);
        let book = self.books.entry(thread.clone()).or_default();
        if book.record(key, usage, message.stop_reason.is_some()) {
            self.push_usage(thread, usage, service_tier, derived);
        }
    }

    /// The thread's running total as a `usage` event; a helper that handed
    /// back while some response is known only by its snapshot is marked
    /// incomplete.
    fn push_usage(&self, thread: &ThreadId, last: TokenUsage, service_tier: Option<String>, derived: &mut Derived) {
        self.push_usage_of(thread, last, service_tier, None, derived);
    }

    /// [`Self::push_usage`], naming the response's model when the thread's
    /// replies have not named one yet (a hand-back's `resolvedModel`).
    fn push_usage_of(
        &self,
        thread: &ThreadId,
        last: TokenUsage,
        service_tier: Option<String>,
        model: Option<String>,
        derived: &mut Derived,
    ) {
        let Some(book) = self.books.get(thread) else {
            return;
        };
        let incomplete = (self.handed_back.contains(thread) && book.missing_finals())
            .then_some(IncompleteReason::MissingFinalUsage);
        derived.push((
            Who::Thread(thread.clone()),
            Event::Usage {
                turn_id: self.turn_of(thread),
                total: book.total(),
                last: Some(last),
                model: model.filter(|_| !self.models.contains_key(thread)),
                service_tier,
                incomplete,
            },
        ));
    }

    /// A subagent's hand-back (the root's `tool_result` for it) carries
    /// the final usage of its last response: where only that response's
    /// snapshot was seen (stream-json never carries a subagent's final
    /// usage; a transcript cut before it), it becomes the floor.
    fn hand_back_usage(&mut self, thread: &ThreadId, structured: Option<&Value>, derived: &mut Derived) {
        self.handed_back.insert(thread.clone());
        let usage = structured
            .and_then(|result| result.get("usage"))
            .and_then(|usage| agentrace_wire::claude::ApiUsage::deserialize(usage).ok());
        let book = self.books.entry(thread.clone()).or_default();
        // Stdout never shows a subagent's last response: the hand-back's
        // usage counts for it until it comes. A transcript's subagent has
        // its own file, which alone counts (ccusage reads the same).
        let count = !self.reading_transcript;
        let moved = usage.as_ref().is_some_and(|usage| book.finish_last(tokens(usage), count));
        if moved || book.missing_finals() {
            let last = usage.as_ref().map(tokens).unwrap_or_default();
            let tier = usage.and_then(|usage| usage.service_tier);
            let model = structured
                .and_then(|result| result.get("resolvedModel"))
                .and_then(Value::as_str)
                .filter(|model| !model.is_empty() && *model != "<synthetic>")
                .map(str::to_owned);
            self.push_usage_of(thread, last, tier, model, derived);
        }
    }

    /// Usage of a reply that belongs to no thread, counted once per message
    /// id in a book of its actor's own (its reason names the agent), with
    /// the reply's model on the event: no thread's model can price it.
    fn record_outside_usage(&mut self, actor: &Actor, message: &ApiMessage, derived: &mut Derived) {
        let (Some(usage), Some(id)) = (&message.usage, &message.id) else {
            return;
        };
        let service_tier = usage.service_tier.clone();
        let usage = tokens(usage);
        let book = self
            .outside_books
            .entry(actor.reason.clone().unwrap_or_default())
            .or_default();
        if book.record((id.clone(), String::new()), usage, message.stop_reason.is_some()) {
            let model = message
                .model
                .clone()
                .filter(|model| !model.is_empty() && model != "<synthetic>");
            derived.push((
                Who::Frame,
                Event::Usage {
                    turn_id: None,
                    total: book.total(),
                    last: Some(usage),
                    model,
                    service_tier,
                    incomplete: None,
                },
            ));
        }
    }

    fn turn_of(&self, thread: &ThreadId) -> Option<TurnId> {
        if self.is_root(thread) {
            return self.open_root_turns.back().cloned();
        }
        self.helpers
            .get(thread)
            .and_then(|track| track.turn.clone())
    }

    // ----- frames -------------------------------------------------------

    fn handle(
        &mut self,
        part: &SourcePart,
        value: Value,
        line_number: u64,
        derived: &mut Derived,
    ) -> (Owner, Event) {
        if !value.is_object() {
            return (
                Owner::Nobody(Actor::unknown("not a JSON object")),
                unknown(
                    "notClaude",
                    None,
                    "valid JSON, but not an object".to_owned(),
                    line_number,
                ),
            );
        }
        if let SourcePart::AgentMeta { agent_id } = part {
            return self.meta(agent_id, &value, derived);
        }
        if value.get("hook_event_name").is_some() {
            return self.hook(&value, derived);
        }
        // The hook loggers' records (`{t, input}`, the SDK's `{seq, event,
        // input}`) wrap a hook input.
        if let Some(input) = value
            .get("input")
            .filter(|input| input.get("hook_event_name").is_some())
        {
            return self.hook(input, derived);
        }
        // An interactive session's `file-history-snapshot` lines name no
        // session; stdout never has them.
        let transcript = value.get("sessionId").is_some()
            || value.get("isSidechain").is_some()
            || value.get("type").and_then(Value::as_str) == Some("file-history-snapshot")
            || matches!(part, SourcePart::AgentFile { .. });
        let sdk_marker = value.get("event").and_then(Value::as_str) == Some("(sdk message)");
        // Taken by value: the message and tool result move into the record
        // rather than being copied out of the line's tree.
        let record = Record::deserialize(value).unwrap_or_default();
        self.reading_transcript = transcript;
        if transcript {
            let agent = match part {
                SourcePart::AgentFile { agent_id } => Some(agent_id.as_str()),
                SourcePart::Main | SourcePart::File { .. } | SourcePart::AgentMeta { .. } => None,
            };
            let handled = self.transcript(&record, agent, line_number, derived);
            self.say_folder(&record, agent, derived);
            return handled;
        }
        if sdk_marker {
            // A marker line of the SDK hook logger, ordering hooks among
            // messages; it names the message's owner as stdout does.
            self.note_session(record.session());
            return (
                self.owner_of_parent(&record, derived),
                Event::Notice {
                    item_id: None,
                    method: "sdk/message-marker".to_owned(),
                    message: record.kind.clone(),
                },
            );
        }
        let handled = self.stream(&record, line_number, derived);
        self.say_folder(&record, None, derived);
        handled
    }

    /// Says the session's working folder once, as the root's
    /// `thread_started`, after the first root line that names it: the
    /// run's project then lives in its log, not only in the transcript
    /// (which Claude Code deletes after 30 days) or a catalog rebuilt
    /// without it. A line read in any number of imports comes in the one
    /// order, so the event falls in one place however the session was read.
    fn say_folder(&mut self, record: &Record, agent: Option<&str>, derived: &mut Derived) {
        let the_roots = agent.is_none()
            && record.is_sidechain != Some(true)
            && record.parent_tool_use_id.is_none()
            && record.agent_id.is_none()
            && record.session() == self.root.as_ref().map(ThreadId::as_str);
        if the_roots {
            self.say_roots_folder(record.cwd.as_deref(), derived);
        }
    }

    /// [`ClaudeAttributor::say_folder`] for a line known to be the root's
    /// (its owner is the root).
    fn say_roots_folder(&mut self, cwd: Option<&str>, derived: &mut Derived) {
        if self.folder_said {
            return;
        }
        let (Some(cwd), Some(root)) = (cwd.filter(|cwd| !cwd.is_empty()), self.root.clone()) else {
            return;
        };
        self.folder_said = true;
        // The line's own actor (the root, as surely as the line says: a
        // hook's root is derived): the event adds no certainty of its own.
        derived.push((Who::Frame, Event::ThreadStarted { thread_id: root, cwd: Some(cwd.to_owned()), model: None }));
    }

    fn stream(
        &mut self,
        record: &Record,
        line_number: u64,
        derived: &mut Derived,
    ) -> (Owner, Event) {
        self.note_session(record.session());
        let kind = record.kind.clone().unwrap_or_default();
        match kind.as_str() {
            "system" => self.system(record, line_number, derived),
            "assistant" | "user" => {
                let owner = match record.parent_tool_use_id.as_deref() {
                    Some(spawn) => match self.helper(
                        Some(spawn),
                        record.agent_id.as_deref(),
                        "parent_tool_use_id",
                        derived,
                    ) {
                        Some(thread) => {
                            self.details(
                                &thread,
                                record.task_description.as_deref(),
                                record.subagent_type.as_deref(),
                            );
                            Owner::Thread(thread, Confidence::Provider)
                        }
                        None => Owner::Nobody(Actor::unknown("no thread id")),
                    },
                    None => self.root_owner(Confidence::Provider),
                };
                let (event, _) = self.message_line(&owner, record, &kind, derived);
                (owner, event)
            }
            "result" => self.result(record, derived),
            "stream_event" => {
                let owner = self.owner_of_parent(record, derived);
                (owner, stream_event(record))
            }
            "tool_progress" => {
                let retry_agent = record
                    .subagent_retry
                    .as_ref()
                    .and_then(|retry| retry.get("agent_id"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let owner = match record.parent_tool_use_id.as_deref() {
                    Some(spawn) => match self.helper(
                        Some(spawn),
                        retry_agent.as_deref(),
                        "tool_progress",
                        derived,
                    ) {
                        Some(thread) => Owner::Thread(thread, Confidence::Provider),
                        None => Owner::Nobody(Actor::unknown("no thread id")),
                    },
                    None => self.root_owner(Confidence::Provider),
                };
                let message = record.subagent_retry.as_ref().map(|retry| {
                    format!(
                        "API retry {} of {} (HTTP {})",
                        retry
                            .get("attempt")
                            .map(Value::to_string)
                            .unwrap_or_default(),
                        retry
                            .get("max_retries")
                            .map(Value::to_string)
                            .unwrap_or_default(),
                        retry
                            .get("error_status")
                            .map(Value::to_string)
                            .unwrap_or_default(),
                    )
                });
                (
                    owner,
                    Event::Notice {
                        item_id: None,
                        method: "tool_progress".to_owned(),
                        message,
                    },
                )
            }
            "" => (
                Owner::Nobody(Actor::unknown("no thread id")),
                unknown(
                    "notClaude",
                    None,
                    "a JSON object with no `type`".to_owned(),
                    line_number,
                ),
            ),
            other => (
                self.root_owner(Confidence::Provider),
                unknown(
                    "unknownType",
                    Some(other.to_owned()),
                    format!("unknown stream-json type `{other}`"),
                    line_number,
                ),
            ),
        }
    }

    fn owner_of_parent(&mut self, record: &Record, derived: &mut Derived) -> Owner {
        match record.parent_tool_use_id.as_deref() {
            Some(spawn) => match self.helper(
                Some(spawn),
                record.agent_id.as_deref(),
                "parent_tool_use_id",
                derived,
            ) {
                Some(thread) => Owner::Thread(thread, Confidence::Provider),
                None => Owner::Nobody(Actor::unknown("no thread id")),
            },
            None => self.root_owner(Confidence::Provider),
        }
    }

    fn system(
        &mut self,
        record: &Record,
        line_number: u64,
        derived: &mut Derived,
    ) -> (Owner, Event) {
        let subtype = record.subtype.clone().unwrap_or_default();
        match subtype.as_str() {
            "init" => {
                let turn = TurnId::from(
                    record
                        .uuid
                        .clone()
                        .unwrap_or_else(|| format!("init-{line_number}")),
                );
                self.open_root_turns.push_back(turn.clone());
                self.stream_turns = true;
                // The root's responses from here on are this query's: an
                // earlier query's `result`, printed later, never covers them.
                if let Some(root) = &self.root {
                    self.books.entry(root.clone()).or_default().start_query();
                }
                (
                    self.root_owner(Confidence::Provider),
                    Event::TurnStarted {
                        turn_id: turn,
                        root_turn_id: None,
                    },
                )
            }
            "task_started" | "task_progress" | "task_updated" | "task_notification" => {
                self.task(record, &subtype, derived)
            }
            known if SYSTEM_NOTICES.contains(&known) => (
                self.root_owner(Confidence::Provider),
                Event::Notice {
                    item_id: None,
                    method: format!("system/{known}"),
                    message: record.summary.clone().or_else(|| record.status.clone()),
                },
            ),
            other => (
                self.root_owner(Confidence::Provider),
                unknown(
                    "unknownType",
                    Some(format!("system/{other}")),
                    format!("unknown system subtype `{other}`"),
                    line_number,
                ),
            ),
        }
    }

    fn task(&mut self, record: &Record, subtype: &str, derived: &mut Derived) -> (Owner, Event) {
        let task_id = record.task_id.clone().unwrap_or_default();
        let method = format!("system/{subtype}");
        let is_agent_start = subtype == "task_started"
            && record
                .task_type
                .as_deref()
                .is_none_or(|kind| kind == "local_agent");
        // A background shell: a command owned by whoever launched it.
        let is_command =
            self.commands.contains_key(&task_id) || (subtype == "task_started" && !is_agent_start);
        if is_command {
            if subtype == "task_started" {
                let owner = match record.parent_task_id.as_deref() {
                    Some(parent) => self.helper(None, Some(parent), "task_started", derived),
                    None => self.root.clone(),
                };
                self.commands.insert(task_id.clone(), owner);
            }
            let owner = match self.commands.get(&task_id).cloned().flatten() {
                Some(thread) => Owner::Thread(thread, Confidence::Provider),
                None => Owner::Nobody(Actor::unknown("background task with no known owner")),
            };
            let event = match subtype {
                "task_started" => Event::ItemStarted {
                    description: record.description.clone().or_else(|| record.command.clone()),
                    started_at: None,
                    item_type: "backgroundCommand".to_owned(),
                    item_id: Some(ItemId::from(task_id.as_str())),
                    turn_id: None,
                },
                "task_notification" => Event::ItemCompleted {
                    activity_kind: None,
                    agent_thread_id: None,
                    status: record.status.clone(),
                    item_type: "backgroundCommand".to_owned(),
                    item_id: Some(ItemId::from(task_id.as_str())),
                    turn_id: None,
                },
                _ => Event::Notice {
                    item_id: None,
                    method,
                    message: record.patch.as_ref().and_then(|patch| patch.status.clone()),
                },
            };
            return (owner, event);
        }
        let spawn_known = record
            .tool_use_id
            .as_deref()
            .is_some_and(|id| self.spawns.contains_key(id));
        let agent_known = self.by_agent.contains_key(&task_id);
        if !is_agent_start && !spawn_known && !agent_known {
            return (
                Owner::Nobody(Actor::unknown("task not announced by task_started")),
                Event::Notice {
                    item_id: None,
                    method,
                    message: record.summary.clone(),
                },
            );
        }
        let Some(thread) = self.helper(
            record.tool_use_id.as_deref(),
            Some(task_id.as_str()).filter(|id| !id.is_empty()),
            "task_started",
            derived,
        ) else {
            return (
                Owner::Nobody(Actor::unknown("no thread id")),
                Event::Notice {
                    item_id: None,
                    method,
                    message: None,
                },
            );
        };
        self.details(
            &thread,
            record.description.as_deref(),
            record.subagent_type.as_deref(),
        );
        let mut message = None;
        match subtype {
            "task_started" => {
                if !self.is_linked(&thread) {
                    let parent = match record.parent_task_id.as_deref() {
                        Some(parent) => self.helper(None, Some(parent), "parent_task_id", derived),
                        // Depth 1: spawned by the root itself.
                        None if record.spawn_depth == Some(1) => self.root.clone(),
                        None => None,
                    };
                    if let Some(parent) = parent {
                        self.link(
                            derived,
                            &parent,
                            &thread,
                            "task_started",
                            record.prompt.clone(),
                            None,
                        );
                    }
                }
                self.start_helper(&thread, record.run_id.as_deref(), derived);
                message = record.description.clone();
            }
            "task_updated" => {
                let patch = record.patch.clone().unwrap_or_default();
                if let Some(status) = patch.status.as_deref().and_then(task_status) {
                    let result = patch.error.clone();
                    self.end_helper(
                        &thread,
                        status,
                        result,
                        FinalMessageConfidence::Stated,
                        derived,
                    );
                }
                message = patch.status;
            }
            "task_notification" => {
                if let Some(status) = record.status.as_deref().and_then(task_status) {
                    self.end_helper(
                        &thread,
                        status,
                        record.summary.clone(),
                        FinalMessageConfidence::Stated,
                        derived,
                    );
                }
                message = record.summary.clone().map(|text| summarize(&text));
            }
            _ => {}
        }
        (
            Owner::Thread(thread, Confidence::Provider),
            Event::Notice {
                item_id: None, method, message },
        )
    }

    /// The events of a `user`/`assistant` line (stream or transcript): the
    /// first is returned as the frame's, the rest pushed as derived; true
    /// when the line was already recorded from another source.
    fn message_line(
        &mut self,
        owner: &Owner,
        record: &Record,
        kind: &str,
        derived: &mut Derived,
    ) -> (Event, bool) {
        let duplicate = match &record.uuid {
            Some(uuid) => !self.seen_uuids.insert(uuid.clone()),
            None => false,
        };
        let empty = ApiMessage::default();
        let message = record.message.as_ref().unwrap_or(&empty);
        let role = message.role.clone().unwrap_or_else(|| kind.to_owned());
        let thread = match owner {
            Owner::Thread(thread, _) => Some(thread.clone()),
            Owner::Nobody(_) => None,
        };
        let turn = thread.as_ref().and_then(|thread| self.turn_of(thread));
        let item = record.uuid.as_deref().map(ItemId::from);
        let mut events = Vec::new();
        for block in message.blocks() {
            match block {
                ContentBlock::Text { text } => {
                    if let Some(thread) = &thread {
                        if role == "assistant" && self.is_root(thread) {
                            self.last_root_text = Some((item.clone(), text.clone()));
                        }
                        if role == "user" && self.is_root(thread) {
                            self.task_notification_text(&text, derived);
                        }
                    }
                    events.push(Event::Message {
                        role: role.clone(),
                        phase: None,
                        text,
                        item_id: item.clone(),
                        turn_id: turn.clone(),
                    });
                }
                ContentBlock::Thinking { thinking } => events.push(Event::Reasoning {
                    text: thinking,
                    item_id: item.clone(),
                    turn_id: turn.clone(),
                }),
                ContentBlock::ToolUse { id, name, input } => {
                    self.tools
                        .insert(id.clone(), (name.clone(), thread.clone()));
                    if input.get("run_in_background").and_then(Value::as_bool) == Some(true) {
                        let runs = ["description", "command"]
                            .into_iter()
                            .find_map(|key| input.get(key).and_then(Value::as_str).filter(|text| !text.is_empty()))
                            .map(str::to_owned);
                        self.background_calls.insert(id.clone(), runs);
                    }
                    if is_spawn_tool(&name) {
                        self.note_spawn(&id, thread.clone(), &input);
                    }
                    if self.recorded_tool_uses.insert(id.clone()) {
                        events.push(Event::ToolUse {
                            process_id: None,
                            tool_kind: tool_kind(&name).to_owned(),
                            name,
                            input: summarize(&input_summary(&input)),
                            item_id: Some(ItemId::from(id)),
                            turn_id: turn.clone(),
                        });
                    }
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => {
                    let name = self
                        .tools
                        .get(&tool_use_id)
                        .map(|(name, _)| name.clone())
                        .unwrap_or_default();
                    let output = content_text(&content);
                    if self.spawns.contains_key(&tool_use_id) {
                        self.spawn_result(&tool_use_id, is_error, &content, record, derived);
                    } else if name == "SendMessage" && !is_error && self.reading_transcript {
                        self.resumed_by_message(record, derived);
                    } else if !is_error && self.reading_transcript {
                        self.background_started(&tool_use_id, thread.as_ref(), record, derived);
                    }
                    if self.recorded_tool_results.insert(tool_use_id.clone()) {
                        events.push(Event::ToolResult {
                            receiver_thread_ids: Vec::new(),
                            tool_kind: tool_kind(&name).to_owned(),
                            name,
                            status: Some(if is_error { "failed" } else { "completed" }.to_owned()),
                            exit_code: None,
                            duration_ms: None,
                            output: summarize(&output),
                            item_id: Some(ItemId::from(tool_use_id)),
                            turn_id: turn.clone(),
                        });
                    }
                }
                ContentBlock::Unknown { .. } => {}
            }
        }
        match (&thread, owner) {
            (Some(thread), _) if role == "assistant" => {
                self.note_model(thread, message, turn.clone(), derived);
                self.record_usage(thread, message, record.request_id.as_deref(), derived);
            }
            // Replies outside the tree (warmup agents) are real API calls:
            // their tokens count, under the frame's own actor.
            (None, Owner::Nobody(actor)) if role == "assistant" => {
                self.record_outside_usage(actor, message, derived);
            }
            _ => {}
        }
        if duplicate {
            let notice = Event::Notice {
                item_id: None,
                method: "claude/duplicate".to_owned(),
                message: record
                    .uuid
                    .clone()
                    .map(|uuid| format!("line {uuid} was already recorded from another source")),
            };
            return (notice, true);
        }
        let mut events = events.into_iter();
        let Some(first) = events.next() else {
            let notice = Event::Notice {
                item_id: None,
                method: format!("claude/{kind}"),
                message: None,
            };
            return (notice, false);
        };
        for event in events {
            let who = match &thread {
                Some(thread) => Who::Thread(thread.clone()),
                None => Who::Frame,
            };
            derived.push((who, event));
        }
        (first, false)
    }

    /// Transcripts have no `result` lines: a root prompt begins a root turn,
    /// a root reply that stops for good (`end_turn`, …) ends it with its
    /// text, an interruption marker interrupts it.
    fn transcript_turn(&mut self, record: &Record, kind: &str, derived: &mut Derived) {
        let empty = ApiMessage::default();
        let message = record.message.as_ref().unwrap_or(&empty);
        let blocks = message.blocks();
        let tool_result = blocks
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolResult { .. }));
        let texts: Vec<String> = blocks
            .into_iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text),
                ContentBlock::Thinking { .. } | ContentBlock::ToolUse { .. } | ContentBlock::ToolResult { .. } | ContentBlock::Unknown { .. } => None,
            })
            .collect();
        let item = record.uuid.as_deref().map(ItemId::from);
        if kind == "user" && record.is_meta != Some(true) {
            let Some(text) = texts.first() else {
                return;
            };
            if text.starts_with("[Request interrupted by user") {
                if let Some(turn) = self.open_root_turns.pop_front() {
                    derived.push((
                        Who::Frame,
                        Event::TurnCompleted {
                            last_message: None,
                            turn_id: turn.clone(),
                            status: "interrupted".to_owned(),
                            error: Some(text.clone()),
                            duration_ms: None,
                            usage: self.root_total(),
                        },
                    ));
                    derived.push((
                        Who::Frame,
                        Event::Interrupted {
                            error: Some(text.clone()),
                            source_thread_id: self.root.clone(),
                            turn_id: Some(turn),
                        },
                    ));
                }
                return;
            }
            let turn = record.uuid.clone().map(TurnId::from);
            if record.turn_origin.is_some() {
                self.states_turn_origin = true;
            }
            // The model is at work from the prompt on, not from its first
            // reply (the root read `pending`, or `ended done`, while it
            // thought). Only a line the CLI answers opens a turn: one no
            // reply follows would leave the root at work until the idle
            // limit. With stdout's turns the prompt opens none (see
            // `stream_turns`), and a turn still open (a prompt queued while
            // the model works) takes it in.
            if !self.stream_turns && self.open_root_turns.is_empty() && self.answered(record, text, tool_result) {
                self.open_root_turn(turn.unwrap_or_else(|| TurnId::from("turn")), derived);
                return;
            }
            self.pending_prompt = turn;
            return;
        }
        if kind != "assistant" {
            return;
        }
        // A turn no prompt opened begins with its first new reply: with
        // stdout's turns (its replies are duplicates here, and the
        // transcript must not reopen the turn), a transcript read from its
        // middle, a prompt not known to be answered.
        if self.open_root_turns.is_empty() {
            let turn = self
                .pending_prompt
                .take()
                .or_else(|| record.uuid.clone().map(TurnId::from))
                .unwrap_or_else(|| TurnId::from("turn"));
            self.open_root_turn(turn, derived);
        }
        if record.is_api_error_message == Some(true) {
            // The model call failed: the CLI wrote this reply itself (its
            // text `API Error: …`) and ended the turn, as its stream's
            // result says with `is_error`. The turn failed; the error is no
            // answer (a later turn that is answered makes the run done).
            let error = Some(texts.join("\n")).filter(|text| !text.is_empty());
            let turn = self.end_root_turn(record);
            derived.push((
                Who::Frame,
                Event::TurnCompleted {
                    last_message: None,
                    turn_id: turn.clone(),
                    status: "failed".to_owned(),
                    error: error.clone(),
                    duration_ms: None,
                    usage: self.root_total(),
                },
            ));
            derived.push((
                Who::Frame,
                Event::Failed {
                    error,
                    source_thread_id: self.root.clone(),
                    turn_id: Some(turn),
                },
            ));
            return;
        }
        let stopped = matches!(
            message.stop_reason.as_deref(),
            Some("end_turn" | "stop_sequence" | "max_tokens" | "refusal")
        );
        if !stopped {
            return;
        }
        let text = texts.join("\n");
        if !text.is_empty() {
            self.last_result = Some((text, item));
        }
        let turn = self.end_root_turn(record);
        derived.push((
            Who::Frame,
            Event::TurnCompleted {
                last_message: None,
                turn_id: turn,
                status: "completed".to_owned(),
                error: None,
                duration_ms: None,
                usage: self.root_total(),
            },
        ));
        derived.push((Who::Frame, self.done()));
    }

    /// Opens the root's turn `turn`.
    fn open_root_turn(&mut self, turn: TurnId, derived: &mut Derived) {
        self.open_root_turns.push_back(turn.clone());
        derived.push((Who::Frame, Event::TurnStarted { turn_id: turn, root_turn_id: None }));
    }

    /// Whether the CLI answers a root transcript user line (not meta, not an
    /// interruption marker) with a model call, so that a reply will follow
    /// it: as the interactive capture `interactive_local_commands` shows,
    /// a typed prompt, an SDK prompt, a task notification and a shell-mode
    /// command's output are; a local command (`<command-name>`), its
    /// output (`<local-command-stdout>`), a shell-mode command
    /// (`<bash-input>`), a compaction summary and a tool result are not.
    /// 2.1.332 marks each answered line with `turnOrigin`; a CLI that
    /// marks none (2.1.197 and older) is read by the text: the harness's
    /// own lines begin with a tag.
    fn answered(&self, record: &Record, text: &str, tool_result: bool) -> bool {
        if tool_result || record.is_compact_summary == Some(true) {
            return false;
        }
        if record.turn_origin.is_some() {
            return true;
        }
        !self.states_turn_origin && !text.trim_start().starts_with('<')
    }

    /// The root turn a transcript's assistant line ends: the oldest open
    /// one, else one named after the line (a transcript read from its
    /// middle names no prompt before it).
    fn end_root_turn(&mut self, record: &Record) -> TurnId {
        self.open_root_turns
            .pop_front()
            .unwrap_or_else(|| TurnId::from(record.uuid.clone().unwrap_or_default()))
    }

    fn root_total(&self) -> Option<TokenUsage> {
        self.root
            .as_ref()
            .and_then(|root| self.books.get(root))
            .map(UsageBook::total)
    }

    /// `done` with the last non-empty root result so far.
    fn done(&self) -> Event {
        let (result, item) = match &self.last_result {
            Some((text, item)) => (Some(text.clone()), item.clone()),
            None => (None, None),
        };
        let source = result.as_ref().and(self.root.clone());
        Event::Done {
            source_role: source.as_ref().map(|_| Role::Root),
            source_thread_id: source,
            source_item_id: item.filter(|_| result.is_some()),
            result,
        }
    }

    fn note_spawn(&mut self, id: &str, parent: Option<ThreadId>, input: &Value) {
        let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
        let spawn = self.spawns.entry(id.to_owned()).or_default();
        if spawn.parent.is_none() {
            spawn.parent = parent;
        }
        spawn.prompt = spawn.prompt.take().or_else(|| text("prompt"));
        spawn.subagent_type = spawn.subagent_type.take().or_else(|| text("subagent_type"));
        spawn.description = spawn.description.take().or_else(|| text("description"));
        spawn.model = spawn.model.take().or_else(|| text("model"));
    }

    /// The result of an `Agent`/`Task` call: names the helper (the
    /// structured result carries its agent id since 2.0.77) and ends its run
    /// unless it was launched into the background.
    fn spawn_result(
        &mut self,
        tool_use_id: &str,
        is_error: bool,
        content: &Value,
        record: &Record,
        derived: &mut Derived,
    ) {
        let structured = structured_result(record);
        let structured = structured.as_ref();
        let agent = structured
            .and_then(|result| result.get("agentId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let already = self.by_tool_use.contains_key(tool_use_id);
        if !already && agent.is_none() {
            // No helper ever ran for it (an unknown agent type, say).
            return;
        }
        let Some(thread) = self.helper(
            Some(tool_use_id),
            agent.as_deref(),
            "toolUseResult",
            derived,
        ) else {
            return;
        };
        let status_text = structured
            .and_then(|result| result.get("status"))
            .and_then(Value::as_str);
        let launched = status_text == Some("async_launched")
            || structured
                .and_then(|result| result.get("isAsync"))
                .and_then(Value::as_bool)
                == Some(true);
        if launched {
            return;
        }
        let rejected = structured.and_then(Value::as_str) == Some("User rejected tool use");
        let status = if rejected {
            AgentStatus::Interrupted
        } else if is_error {
            AgentStatus::Failed
        } else {
            AgentStatus::Completed
        };
        let report = hand_back_report(structured, content);
        self.hand_back_usage(&thread, structured, derived);
        self.end_helper(
            &thread,
            status,
            report,
            FinalMessageConfidence::Derived,
            derived,
        );
    }

    /// The result of a `SendMessage` in a transcript: Claude Code says the
    /// helper it resumed (`resumedAgentId`), whose new run starts here, in
    /// the sender's file, whatever order the files are read in. Its end is
    /// the task notification that follows. (The stream says the same with
    /// `task_started`; a hook input with `SubagentStart`.)
    fn resumed_by_message(&mut self, record: &Record, derived: &mut Derived) {
        let structured = structured_result(record);
        let resumed = structured
            .as_ref()
            .and_then(|result| result.get("resumedAgentId").or_else(|| result.get("revivedAgentId")))
            .and_then(Value::as_str);
        let Some(thread) = resumed.and_then(|agent| self.by_agent.get(agent)).cloned() else {
            return;
        };
        self.start_helper(&thread, None, derived);
    }

    /// A transcript's result of a `run_in_background` call that names its
    /// task (`toolUseResult.backgroundTaskId`): a background command starts,
    /// owned by the caller, as the stream's `task_started` starts one.
    fn background_started(&mut self, tool_use_id: &str, caller: Option<&ThreadId>, record: &Record, derived: &mut Derived) {
        let Some(runs) = self.background_calls.get(tool_use_id).cloned() else {
            return;
        };
        let Some(task) = structured_result(record)
            .as_ref()
            .and_then(|result| result.get("backgroundTaskId"))
            .and_then(Value::as_str)
            .filter(|task| !task.is_empty())
            .map(str::to_owned)
        else {
            return;
        };
        // The root's only: its transcript gets the `<task-notification>`
        // that ends the shell, where a subagent's shell is killed with its
        // agent and no notification follows (a record started here would
        // read working until the session's end).
        let Some(caller) = caller.filter(|caller| self.is_root(caller)) else {
            return;
        };
        if self.commands.contains_key(&task) {
            return;
        }
        self.commands.insert(task.clone(), Some(caller.clone()));
        self.transcript_commands.insert(task.clone());
        derived.push((
            Who::Thread(caller.clone()),
            Event::ItemStarted {
                description: runs,
                started_at: None,
                item_type: "backgroundCommand".to_owned(),
                item_id: Some(ItemId::from(task.as_str())),
                turn_id: None,
            },
        ));
    }

    /// A root user text holding a `<task-notification>` (transcripts of
    /// background runs): ends the subagent or background command it names.
    fn task_notification_text(&mut self, text: &str, derived: &mut Derived) {
        if !text.trim_start().starts_with("<task-notification>") {
            return;
        }
        let Some(task) = xml_value(text, "task-id") else {
            return;
        };
        if self.transcript_commands.remove(&task) {
            if let Some(Some(owner)) = self.commands.get(&task).cloned() {
                derived.push((
                    Who::Thread(owner),
                    Event::ItemCompleted {
                        activity_kind: None,
                        agent_thread_id: None,
                        status: xml_value(text, "status"),
                        item_type: "backgroundCommand".to_owned(),
                        item_id: Some(ItemId::from(task.as_str())),
                        turn_id: None,
                    },
                ));
            }
            return;
        }
        let Some(thread) = self.by_agent.get(&task).cloned() else {
            return;
        };
        if let Some(status) = xml_value(text, "status").as_deref().and_then(task_status) {
            let summary = xml_value(text, "result").or_else(|| xml_value(text, "summary"));
            self.end_helper(
                &thread,
                status,
                summary,
                FinalMessageConfidence::Stated,
                derived,
            );
        }
    }

    fn result(&mut self, record: &Record, derived: &mut Derived) -> (Owner, Event) {
        let owner = self.root_owner(Confidence::Provider);
        let turn = self.open_root_turns.pop_front().unwrap_or_else(|| {
            TurnId::from(record.uuid.clone().unwrap_or_else(|| "result".to_owned()))
        });
        let usage = record
            .usage
            .as_ref()
            .and_then(|usage| agentrace_wire::claude::ApiUsage::deserialize(usage).ok())
            .map(|usage| tokens(&usage));
        let root_total = match (&self.root, usage) {
            (Some(root), Some(usage)) => {
                let book = self.books.entry(root.clone()).or_default();
                book.cover(usage);
                Some(book.total())
            }
            (Some(root), None) => self.books.get(root).map(UsageBook::total),
            (None, _) => None,
        };
        if let Some(text) = record.result.as_deref().filter(|text| !text.is_empty()) {
            let item = match &self.last_root_text {
                Some((item, last)) if last == text => item.clone(),
                _ => record.uuid.as_deref().map(ItemId::from),
            };
            self.last_result = Some((text.to_owned(), item));
        }
        let errors = record
            .errors
            .as_ref()
            .and_then(Value::as_array)
            .map(|errors| {
                errors
                    .iter()
                    .map(|error| {
                        error
                            .as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| error.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .filter(|text| !text.is_empty());
        let aborted = record
            .terminal_reason
            .as_deref()
            .is_some_and(|reason| reason.starts_with("aborted"));
        let is_error = record.is_error == Some(true)
            || record
                .subtype
                .as_deref()
                .is_some_and(|subtype| subtype != "success");
        let error = errors.or_else(|| {
            is_error
                .then(|| record.result.clone().or_else(|| record.subtype.clone()))
                .flatten()
        });
        let (status, terminal) = if aborted {
            (
                "interrupted",
                Event::Interrupted {
                    error: error.clone(),
                    source_thread_id: self.root.clone(),
                    turn_id: Some(turn.clone()),
                },
            )
        } else if is_error {
            (
                "failed",
                Event::Failed {
                    error: error.clone(),
                    source_thread_id: self.root.clone(),
                    turn_id: Some(turn.clone()),
                },
            )
        } else {
            ("completed", self.done())
        };
        derived.push((Who::Frame, terminal));
        (
            owner,
            Event::TurnCompleted {
                last_message: None,
                turn_id: turn,
                status: status.to_owned(),
                error: if status == "completed" { None } else { error },
                duration_ms: record.duration_ms,
                usage: root_total,
            },
        )
    }

    fn transcript(
        &mut self,
        record: &Record,
        file_agent: Option<&str>,
        line_number: u64,
        derived: &mut Derived,
    ) -> (Owner, Event) {
        self.note_session(record.session());
        let kind = record.kind.clone().unwrap_or_default();
        let agent = file_agent.or(record.agent_id.as_deref());
        let owner = match (agent, record.is_sidechain) {
            (Some(agent), _) => self.transcript_agent(agent, record, &kind, derived),
            (None, Some(true)) => self.sidechain(record, &kind, derived),
            (None, _) => self.root_owner(Confidence::Provider),
        };
        let event = match kind.as_str() {
            "user" | "assistant" => {
                let (event, duplicate) = self.message_line(&owner, record, &kind, derived);
                let is_root = matches!(&owner, Owner::Thread(thread, _) if self.is_root(thread));
                if is_root && !duplicate {
                    self.transcript_turn(record, &kind, derived);
                }
                event
            }
            known if TRANSCRIPT_NOTICES.contains(&known) => Event::Notice {
                item_id: None,
                method: format!("transcript/{known}"),
                message: record.subtype.clone().or_else(|| record.operation.clone()),
            },
            other => unknown(
                "unknownType",
                Some(format!("transcript/{other}")),
                format!("unknown transcript entry type `{other}`"),
                line_number,
            ),
        };
        (owner, event)
    }

    /// The owner of a line in a subagent's file (or with `agentId`).
    fn transcript_agent(
        &mut self,
        agent: &str,
        record: &Record,
        kind: &str,
        derived: &mut Derived,
    ) -> Owner {
        if self.warmups.contains(agent) {
            return warmup_owner(agent);
        }
        if !self.by_agent.contains_key(agent) {
            // 2.0.77 starts three "Warmup" agents on every launch; no Task
            // call names them.
            let first_text = record
                .message
                .as_ref()
                .and_then(|message| message.content.as_ref())
                .and_then(Value::as_str);
            if kind == "user" && record.parent_uuid.is_none() && first_text == Some("Warmup") {
                self.warmups.insert(agent.to_owned());
                return warmup_owner(agent);
            }
        }
        match self.helper(None, Some(agent), "agentFile", derived) {
            Some(thread) => Owner::Thread(thread, Confidence::Provider),
            None => Owner::Nobody(Actor::unknown("no thread id")),
        }
    }

    /// 1.0.128: a sidechain line with no agent id.
    fn sidechain(&mut self, record: &Record, kind: &str, derived: &mut Derived) -> Owner {
        let unknown_owner = || {
            Owner::Nobody(Actor::unknown(
                "sidechain line with no agent id that no Task prompt matches",
            ))
        };
        if let Some(thread) = record
            .parent_uuid
            .as_ref()
            .and_then(|parent| self.sidechains.get(parent))
            .cloned()
        {
            if let Some(uuid) = &record.uuid {
                self.sidechains.insert(uuid.clone(), thread.clone());
            }
            return Owner::Thread(thread, Confidence::Derived);
        }
        if record.parent_uuid.is_some() || kind != "user" {
            return unknown_owner();
        }
        let text = record
            .message
            .as_ref()
            .map(|message| {
                message
                    .blocks()
                    .into_iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text { text } => Some(text),
                        ContentBlock::Thinking { .. } | ContentBlock::ToolUse { .. } | ContentBlock::ToolResult { .. } | ContentBlock::Unknown { .. } => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        let matches: Vec<String> = self
            .spawns
            .iter()
            .filter(|(id, spawn)| {
                !self.sidechain_spawns.contains(*id)
                    && spawn.prompt.as_deref() == Some(text.as_str())
            })
            .map(|(id, _)| id.clone())
            .collect();
        let [spawn] = matches.as_slice() else {
            return unknown_owner();
        };
        self.sidechain_spawns.insert(spawn.clone());
        let Some(thread) = self.helper(Some(spawn), None, "promptMatch", derived) else {
            return unknown_owner();
        };
        if let Some(uuid) = &record.uuid {
            self.sidechains.insert(uuid.clone(), thread.clone());
        }
        Owner::Thread(thread, Confidence::Derived)
    }

    fn meta(&mut self, agent: &str, value: &Value, derived: &mut Derived) -> (Owner, Event) {
        let meta = SubagentMeta::deserialize(value).unwrap_or_default();
        let owner = match self.helper(
            meta.tool_use_id.as_deref(),
            Some(agent),
            "subagentMeta",
            derived,
        ) {
            Some(thread) => {
                self.details(
                    &thread,
                    meta.description.as_deref(),
                    meta.agent_type.as_deref(),
                );
                if !self.is_linked(&thread) {
                    let parent = match meta.parent_agent_id.as_deref() {
                        Some(parent) => self.helper(None, Some(parent), "subagentMeta", derived),
                        None if meta.spawn_depth.is_none_or(|depth| depth <= 1) => {
                            self.root.clone()
                        }
                        None => None,
                    };
                    if let Some(parent) = parent {
                        self.link(
                            derived,
                            &parent,
                            &thread,
                            "subagentMeta",
                            None,
                            meta.model.clone(),
                        );
                    }
                }
                Owner::Thread(thread, Confidence::Provider)
            }
            None => Owner::Nobody(Actor::unknown("no thread id")),
        };
        (
            owner,
            Event::ItemCompleted {
                activity_kind: None,
                agent_thread_id: None,
                status: None,
                item_type: "subagentMeta".to_owned(),
                item_id: Some(ItemId::from(agent)),
                turn_id: None,
            },
        )
    }

    fn hook(&mut self, value: &Value, derived: &mut Derived) -> (Owner, Event) {
        let hook = HookInput::deserialize(value).unwrap_or_default();
        self.note_session(hook.session_id.as_deref());
        let name = hook.hook_event_name.clone().unwrap_or_default();
        let agent = hook.agent_id.as_deref().filter(|id| !id.is_empty());
        // `/compact` makes its summary as an agent of its own: after
        // `PreCompact` comes a `SubagentStop` of an agent no `SubagentStart`
        // named (its type empty, its transcript never written), then a
        // `SessionStart` (`interactive_local_commands`). It is no subagent
        // (kept out of the tree, as a warmup agent is): it read as a helper
        // of no name that completed with the summary as its answer.
        let compaction_stop = name == "SubagentStop"
            && self.compacting
            && agent.is_some_and(|agent| !self.by_agent.contains_key(agent));
        match name.as_str() {
            "PreCompact" => self.compacting = true,
            "SessionStart" => self.compacting = false,
            _ if compaction_stop => self.compacting = false,
            _ => {}
        }
        let owner = match agent {
            Some(agent) if compaction_stop => Owner::Nobody(Actor::unknown(format!(
                "compaction {agent}: the summary the CLI makes when it compacts the conversation, as an agent of its own; not a subagent, outside the agent tree"
            ))),
            Some(agent) if self.warmups.contains(agent) => warmup_owner(agent),
            Some(agent)
                if name == "SubagentStart"
                    && !self.prompted
                    && !self.by_agent.contains_key(agent)
                    && self.pending_spawn_for(hook.agent_type.as_deref()).is_none() =>
            {
                // 2.0.77 starts warmup agents before the first prompt; no
                // root turn exists that could have spawned them.
                self.warmups.insert(agent.to_owned());
                warmup_owner(agent)
            }
            Some(agent) => {
                let fresh = !self.by_agent.contains_key(agent);
                let spawn = if fresh && name == "SubagentStart" {
                    self.pending_spawn_for(hook.agent_type.as_deref())
                } else {
                    None
                };
                match self.helper(spawn.as_deref(), Some(agent), "hookOrder", derived) {
                    Some(thread) => {
                        self.details(&thread, None, hook.agent_type.as_deref());
                        Owner::Thread(thread, Confidence::Provider)
                    }
                    None => Owner::Nobody(Actor::unknown("no thread id")),
                }
            }
            // 2.1.x states the agent on every hook fired inside a subagent
            // (and sends `prompt_id`); older CLIs do not, so a hook without
            // an agent id is the root's only while no subagent runs.
            None if hook.prompt_id.is_some() || self.hook_live.is_empty() => {
                self.root_owner(Confidence::Derived)
            }
            None => Owner::Nobody(Actor::unknown(
                "hook input names no agent while a subagent runs (this CLI does not state agent ids on subagent hooks)",
            )),
        };
        let thread = match &owner {
            Owner::Thread(thread, _) => Some(thread.clone()),
            Owner::Nobody(_) => None,
        };
        // Every hook input names the session's folder: a run made of hooks
        // alone has its project too.
        if thread.is_some() && thread == self.root {
            self.say_roots_folder(hook.cwd.as_deref(), derived);
        }
        let turn = thread.as_ref().and_then(|thread| self.turn_of(thread));
        let tool = hook.tool_name.clone().unwrap_or_default();
        let notice = |message: Option<String>| Event::Notice {
            item_id: None,
            method: format!("hook/{name}"),
            message,
        };
        let event = match name.as_str() {
            "PreToolUse" => {
                let id = hook.tool_use_id.clone();
                if let Some(id) = &id {
                    self.tools
                        .insert(id.clone(), (tool.clone(), thread.clone()));
                    if is_spawn_tool(&tool) {
                        let input = hook.tool_input.clone().unwrap_or(Value::Null);
                        self.note_spawn(id, thread.clone(), &input);
                    }
                }
                let fresh = id
                    .as_ref()
                    .is_none_or(|id| self.recorded_tool_uses.insert(id.clone()));
                if fresh {
                    Event::ToolUse {
                        process_id: None,
                        tool_kind: tool_kind(&tool).to_owned(),
                        name: tool,
                        input: summarize(&input_summary(
                            hook.tool_input.as_ref().unwrap_or(&Value::Null),
                        )),
                        item_id: id.map(ItemId::from),
                        turn_id: turn,
                    }
                } else {
                    notice(Some("tool call already recorded".to_owned()))
                }
            }
            "PostToolUse" | "PostToolUseFailure" => {
                let failed = name == "PostToolUseFailure";
                let output = match (&hook.error, &hook.tool_response) {
                    (Some(error), _) => error.clone(),
                    (None, Some(response)) => content_text(response),
                    (None, None) => String::new(),
                };
                let id = hook.tool_use_id.clone();
                if let Some(id) = &id {
                    if is_spawn_tool(&tool) {
                        if let Some(thread) = self.by_tool_use.get(id).cloned() {
                            let launched = hook
                                .tool_response
                                .as_ref()
                                .and_then(|response| response.get("status"))
                                .and_then(Value::as_str)
                                == Some("async_launched");
                            if !launched {
                                let status = if failed {
                                    AgentStatus::Failed
                                } else {
                                    AgentStatus::Completed
                                };
                                // The hook's tool_response is the stream's
                                // tool_use_result: the report is in it.
                                let report = hand_back_report(
                                    hook.tool_response.as_ref(),
                                    &Value::String(output.clone()),
                                );
                                self.end_helper(
                                    &thread,
                                    status,
                                    report,
                                    FinalMessageConfidence::Derived,
                                    derived,
                                );
                            }
                        }
                    }
                }
                let fresh = id
                    .as_ref()
                    .is_none_or(|id| self.recorded_tool_results.insert(id.clone()));
                if fresh {
                    Event::ToolResult {
                        receiver_thread_ids: Vec::new(),
                        tool_kind: tool_kind(&tool).to_owned(),
                        name: tool,
                        status: Some(if failed { "failed" } else { "completed" }.to_owned()),
                        exit_code: None,
                        duration_ms: None,
                        output: summarize(&output),
                        item_id: id.map(ItemId::from),
                        turn_id: turn,
                    }
                } else {
                    notice(Some("tool result already recorded".to_owned()))
                }
            }
            "SubagentStart" => {
                if let (Some(agent), Some(thread)) = (agent, &thread) {
                    self.hook_live.insert(agent.to_owned());
                    self.start_helper(thread, None, derived);
                }
                notice(hook.agent_type.clone())
            }
            "SubagentStop" => {
                if let Some(agent) = agent {
                    self.hook_live.remove(agent);
                    if let Some(thread) = &thread {
                        self.end_helper(
                            thread,
                            AgentStatus::Completed,
                            hook.last_assistant_message.clone(),
                            FinalMessageConfidence::Stated,
                            derived,
                        );
                    }
                } else {
                    // 1.0.128 names no agent: some subagent stopped.
                    self.hook_live.clear();
                }
                notice(
                    hook.last_assistant_message
                        .clone()
                        .map(|text| summarize(&text)),
                )
            }
            "UserPromptSubmit" => {
                self.prompted = true;
                let root = thread.as_ref().is_some_and(|thread| self.is_root(thread));
                if root {
                    let turn = TurnId::from(
                        hook.prompt_id
                            .clone()
                            .unwrap_or_else(|| "prompt".to_owned()),
                    );
                    self.open_root_turns.push_back(turn.clone());
                    derived.push((
                        Who::Frame,
                        Event::TurnStarted {
                            turn_id: turn,
                            root_turn_id: None,
                        },
                    ));
                }
                Event::Message {
                    role: "user".to_owned(),
                    phase: None,
                    text: hook.prompt.clone().unwrap_or_default(),
                    item_id: None,
                    turn_id: self.open_root_turns.back().cloned(),
                }
            }
            // The root's turn ended; its last text is the answer so far.
            "Stop" if thread.as_ref().is_some_and(|thread| self.is_root(thread)) => {
                if let Some(text) = hook
                    .last_assistant_message
                    .clone()
                    .filter(|text| !text.is_empty())
                {
                    self.last_result = Some((text, None));
                }
                let turn = self
                    .open_root_turns
                    .pop_front()
                    .unwrap_or_else(|| TurnId::from("stop"));
                derived.push((
                    Who::Frame,
                    Event::TurnCompleted {
                        last_message: None,
                        turn_id: turn,
                        status: "completed".to_owned(),
                        error: None,
                        duration_ms: None,
                        usage: self.root_total(),
                    },
                ));
                derived.push((Who::Frame, self.done()));
                notice(
                    hook.last_assistant_message
                        .clone()
                        .map(|text| summarize(&text)),
                )
            }
            _ => notice(
                hook.last_assistant_message
                    .clone()
                    .or_else(|| hook.reason.clone())
                    .or_else(|| hook.source.clone())
                    .map(|text| summarize(&text)),
            ),
        };
        (owner, event)
    }

    /// The one `Agent`/`Task` call still waiting for its subagent that a
    /// `SubagentStart` of `agent_type` can be, if exactly one fits.
    fn pending_spawn_for(&self, agent_type: Option<&str>) -> Option<String> {
        let pending: Vec<(&String, &Spawn)> = self
            .spawns
            .iter()
            .filter(|(_, spawn)| spawn.child.is_none())
            .collect();
        let fitting: Vec<&String> = if pending.len() == 1 {
            pending.iter().map(|(id, _)| *id).collect()
        } else {
            pending
                .iter()
                .filter(|(_, spawn)| {
                    agent_type.is_some()
                        && spawn.subagent_type.as_deref().unwrap_or("general-purpose")
                            == agent_type.unwrap_or_default()
                })
                .map(|(id, _)| *id)
                .collect()
        };
        match fitting.as_slice() {
            [only] => Some((*only).clone()),
            _ => None,
        }
    }

    // ----- emission -----------------------------------------------------

    fn process(&mut self, part: &SourcePart, line: &InputLine<'_>) -> Vec<Emitted> {
        let mut derived = Derived::new();
        let typed = match self.usage_only.then(|| usage_route(part, line.bytes)) {
            Some(Route::PassOver) => return Vec::new(),
            Some(Route::Transcript) => self.typed_transcript(part, line, &mut derived),
            _ => None,
        };
        let (owner, event, frame, timestamp) = match typed {
            Some((owner, event, raw, timestamp)) => (owner, event, Frame(raw, false), timestamp),
            None => self.decoded(part, line, &mut derived),
        };
        self.emit_all(line, owner, event, frame, timestamp, derived)
    }

    /// A transcript line read straight into a [`Record`] (no tree of the
    /// line is built), for a caller that reads only usage: what `handle`
    /// makes of a transcript line. `None` when it is not valid UTF-8 or
    /// not a record (it is then decoded as any line is).
    fn typed_transcript(
        &mut self,
        part: &SourcePart,
        line: &InputLine<'_>,
        derived: &mut Derived,
    ) -> Option<(Owner, Event, Option<Box<RawValue>>, Timestamp)> {
        let text = crate::decode::utf8(line.bytes).ok()?;
        let record: Record = serde_json::from_str(text.trim()).ok()?;
        let timestamp = record
            .timestamp
            .as_deref()
            .and_then(Timestamp::parse)
            .unwrap_or(line.observed_at);
        let agent = match part {
            SourcePart::AgentFile { agent_id } => Some(agent_id.as_str()),
            SourcePart::Main | SourcePart::File { .. } | SourcePart::AgentMeta { .. } => None,
        };
        self.reading_transcript = true;
        let (owner, event) = self.transcript(&record, agent, line.line_number, derived);
        self.say_folder(&record, agent, derived);
        Some((owner, event, None, timestamp))
    }

    /// A line decoded (its frame kept unless frames are dropped or
    /// referenced) and handled.
    fn decoded(
        &mut self,
        part: &SourcePart,
        line: &InputLine<'_>,
        derived: &mut Derived,
    ) -> (Owner, Event, Frame, Timestamp) {
        // A subagent's metadata document is read whole by `meta`.
        let skip: Skip<'_> = if matches!(part, SourcePart::AgentMeta { .. }) {
            &|_, _, _| false
        } else {
            &unread
        };
        let keep_raw = !self.drop_frames && !self.reference_frames;
        match decode_line_lean(line.bytes, line.truncated_from, skip, keep_raw) {
                DecodedLine::Undecodable {
                    reason,
                    raw,
                    raw_base64,
                } => (
                    Owner::Nobody(Actor::unknown("undecodable line")),
                    Event::undecodable(reason, line.line_number, raw_base64),
                    Frame(Some(raw), false),
                    line.observed_at,
                ),
                DecodedLine::Json { raw, value } => {
                    let timestamp = frame_time(&value).unwrap_or(line.observed_at);
                    let (owner, event) = self.handle(part, value, line.line_number, derived);
                    (owner, event, Frame(raw, self.reference_frames), timestamp)
                }
            }
    }

    /// Emits a line's event and what it derived, after any pending
    /// corrections (nothing while priming: only the state is relearned).
    fn emit_all(
        &mut self,
        line: &InputLine<'_>,
        owner: Owner,
        event: Event,
        frame: Frame,
        timestamp: Timestamp,
        derived: Derived,
    ) -> Vec<Emitted> {
        let mut out = Vec::new();
        if self.priming {
            self.dirty.clear();
            if let Owner::Thread(thread, _) = &owner {
                self.announced
                    .insert(thread.clone(), self.thread_actor(thread));
            }
            for (who, _) in &derived {
                if let Who::Thread(thread) = who {
                    self.announced
                        .insert(thread.clone(), self.thread_actor(thread));
                }
            }
            return out;
        }
        let frame_actor = self.owner_actor(&owner);
        let frame_thread = match &owner {
            Owner::Thread(thread, _) => Some(thread.clone()),
            Owner::Nobody(_) => None,
        };
        self.corrections(&mut out, timestamp, frame_thread.as_ref());
        self.emit(&mut out, timestamp, line, frame_actor.clone(), event, frame);
        for (who, event) in derived {
            let actor = match who {
                Who::Thread(thread) => self.thread_actor(&thread),
                Who::Frame => frame_actor.clone(),
            };
            self.emit(&mut out, timestamp, line, actor, event, Frame(None, false));
        }
        out
    }

    fn emit(
        &mut self,
        out: &mut Vec<Emitted>,
        timestamp: Timestamp,
        line: &InputLine<'_>,
        actor: Actor,
        event: Event,
        Frame(raw, line_frame): Frame,
    ) {
        if let Some(thread) = &actor.thread_id {
            self.announced
                .insert(thread.clone(), self.thread_actor(thread));
        }
        out.push(Emitted {
            timestamp,
            direction: if raw.is_some() || line_frame {
                line.direction
            } else {
                None
            },
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
        timestamp: Timestamp,
        frame_thread: Option<&ThreadId>,
    ) {
        let dirty = std::mem::take(&mut self.dirty);
        for thread in dirty {
            let actor = self.thread_actor(&thread);
            let stale = match self.announced.get(&thread) {
                Some(announced) => *announced != actor,
                None => Some(&thread) != frame_thread && actor.role != Role::Unknown,
            };
            if stale {
                self.announced.insert(thread.clone(), actor.clone());
                out.push(Emitted {
                    timestamp,
                    direction: None,
                    actor: actor.clone(),
                    event: Event::ActorResolved {
                        thread_id: thread.clone(),
                        actor,
                    },
                    raw: None,
                    line_frame: false,
                });
            }
        }
    }
}

impl Attributor for ClaudeAttributor {
    fn push(&mut self, line: &InputLine<'_>) -> Vec<Emitted> {
        self.process(&SourcePart::Main, line)
    }

    fn push_part(&mut self, part: &SourcePart, line: &InputLine<'_>) -> Vec<Emitted> {
        self.process(part, line)
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

    fn finish(&mut self) -> Vec<Emitted> {
        Vec::new()
    }

    fn prime(&mut self, envelope: &Envelope) {
        let Some(line) = InputLine::recorded(envelope) else {
            return;
        };
        // A metadata document carries no agent id of its own; its envelope
        // names the agent its file name gave.
        let part = match &envelope.event {
            EventBody::Known(Event::ItemCompleted {
                item_type,
                item_id: Some(agent),
                ..
            }) if item_type == "subagentMeta" => SourcePart::AgentMeta {
                agent_id: agent.as_str().to_owned(),
            },
            EventBody::Known(_) | EventBody::Foreign(_) => SourcePart::Main,
        };
        self.priming = true;
        self.process(&part, &line);
        self.priming = false;
    }
}

/// A tool result's structured form (`toolUseResult`), when it has one.
fn structured_result(record: &Record) -> Option<Value> {
    record
        .tool_use_result
        .as_ref()
        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
}

/// For a caller that reads only usage: passes over a transcript line that
/// `transcript` would only turn into a notice (a request shape, an
/// attachment, a prompt or cost record: most of a transcript's bytes),
/// found without decoding the line, and most often without reading it to
/// its end: members are looked at until the type and the kind of line are
/// known. A hook input, a stream line, a subagent's metadata document and a
/// sidechain line with no agent id (1.0.128 links those through the chain
/// of parent uuids, notices included) are always decoded. The two keys that
/// can only be ruled out by reading everything are looked for in the bytes
/// first (a line that merely mentions them is decoded, to be safe). A
/// transcript's message line is read straight into its record.
fn usage_route(part: &SourcePart, bytes: &[u8]) -> Route {
    let in_agent_file = match part {
        SourcePart::AgentMeta { .. } => return Route::Decode,
        SourcePart::AgentFile { .. } => true,
        SourcePart::Main | SourcePart::File { .. } => false,
    };
    if HOOK_KEY.find(bytes).is_some() {
        return Route::Decode;
    }
    let mut seen = Seen {
        in_agent_file,
        may_chain: !in_agent_file && says_sidechain(bytes),
        ..Seen::default()
    };
    // The small members a record writes before its bulk (a request's type
    // and session) are read first, then those after it (an attachment's
    // type and session come after its body), backwards, as far as needed.
    // A message line's type may come first and its session last: the walk
    // goes on until it knows whether the line is a transcript's too (read
    // as a record, not decoded), as the reading of every member would.
    visit_leading_scalars(bytes, ROUTE_KEYS, &mut |key, raw| {
        seen.note(key, raw);
        !seen.settled()
    });
    if !seen.settled() {
        visit_trailing_members(bytes, ROUTE_KEYS, &mut |key, raw| {
            seen.note(key, raw);
            !seen.settled()
        });
    }
    // Still unsettled: every member is read forwards, the line checked
    // whole (what a line must be for the backward reading to be trusted).
    if seen.answer().is_none() {
        let read = visit_members(bytes, &mut |key, raw| {
            seen.note(key, raw);
            seen.answer().is_none()
        });
        if !read {
            return Route::Decode;
        }
    }
    let chained = seen.sidechain == Some(true) && !seen.agent && !in_agent_file;
    match seen.notice() {
        Some(true) if seen.transcript() && !chained => Route::PassOver,
        // A transcript's message line (its key seen: `handle` would tell
        // it a transcript line the same way).
        Some(false) if seen.transcript() => Route::Transcript,
        _ => Route::Decode,
    }
}

/// The searchers of [`usage_route`], built once: building one per line
/// cost more than the search.
static HOOK_KEY: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"hook_event_name"));
static SIDECHAIN_KEY: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"\"isSidechain\""));

/// The members [`Seen::note`] reads.
const ROUTE_KEYS: Members<'static> = Members::Named(&["type", "sessionId", "isSidechain", "agentId", "agent_id"]);

/// What a reader of usage does with a line (see [`usage_route`]).
#[derive(Debug, PartialEq, Eq)]
enum Route {
    /// Nothing: it can carry no usage.
    PassOver,
    /// Reads it as a transcript record, without a tree of the line.
    Transcript,
    /// Decodes it as every reader does.
    Decode,
}

/// What [`usage_route`] has seen of a line's members so far.
#[derive(Default)]
struct Seen {
    in_agent_file: bool,
    /// The bytes say a sidechain somewhere: every member must be seen.
    may_chain: bool,
    kind: Option<String>,
    session: bool,
    sidechain: Option<bool>,
    agent: bool,
}

impl Seen {
    /// Notes a member: each key read here is one of [`ROUTE_KEYS`], the
    /// only ones the walks hand over.
    fn note(&mut self, key: &str, raw: &str) {
        match key {
            "type" => self.kind = raw_string(raw).map(std::borrow::Cow::into_owned),
            "sessionId" => self.session = true,
            "isSidechain" => self.sidechain = Some(raw == "true"),
            "agentId" | "agent_id" => self.agent = true,
            _ => {}
        }
    }

    fn notice(&self) -> Option<bool> {
        self.kind.as_deref().map(|kind| TRANSCRIPT_NOTICES.contains(&kind))
    }

    fn transcript(&self) -> bool {
        self.session || self.sidechain.is_some() || self.in_agent_file
    }

    /// The answer is known and so is whether the line is a transcript's:
    /// nothing a further member could change.
    fn settled(&self) -> bool {
        self.answer().is_some() && self.transcript()
    }

    /// The answer, once what was seen settles it: not a notice (decoded,
    /// whatever follows), or a notice of a transcript that cannot be a
    /// sidechain without agent id.
    fn answer(&self) -> Option<bool> {
        match self.notice()? {
            false => Some(false),
            true => (!self.may_chain && self.transcript()).then_some(true),
        }
    }
}

/// True when the bytes hold `"isSidechain"` followed by `true` (as a key:
/// white space and the colon between), anywhere.
fn says_sidechain(bytes: &[u8]) -> bool {
    SIDECHAIN_KEY.find_iter(bytes).any(|at| {
        let rest = &bytes[at + SIDECHAIN_KEY.needle().len()..];
        let rest = rest.trim_ascii_start();
        rest.strip_prefix(b":").is_some_and(|rest| rest.trim_ascii_start().starts_with(b"true"))
    })
}

fn warmup_owner(agent: &str) -> Owner {
    let mut actor = Actor::unknown(format!(
        "warmup agent {agent}: started by the CLI on launch, not by the root; outside the agent tree"
    ));
    actor.label = crate::model::WARMUP_LABEL.to_owned();
    Owner::Nobody(actor)
}

fn unknown(kind: &str, method: Option<String>, reason: String, line_number: u64) -> Event {
    Event::Unknown {
        kind: kind.to_owned(),
        method,
        reason,
        line_number: Some(line_number),
        raw_base64: None,
        file: None,
    }
}

/// The frame's own time: `timestamp` (RFC 3339) or a hook logger's `t`.
fn frame_time(value: &Value) -> Option<Timestamp> {
    if let Some(time) = value
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(Timestamp::parse)
    {
        return Some(time);
    }
    value.get("t").and_then(Value::as_f64).and_then(Timestamp::from_logger_time)
}

fn task_status(status: &str) -> Option<AgentStatus> {
    match status {
        "completed" => Some(AgentStatus::Completed),
        "failed" => Some(AgentStatus::Failed),
        "killed" | "stopped" | "cancelled" => Some(AgentStatus::Interrupted),
        _ => None,
    }
}

fn stream_event(record: &Record) -> Event {
    let event = record.event.as_ref();
    let event_type = event
        .and_then(|event| event.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    let delta = event.and_then(|event| event.get("delta"));
    let delta_type = delta
        .and_then(|delta| delta.get("type"))
        .and_then(Value::as_str);
    let text_of = |key: &str| {
        delta
            .and_then(|delta| delta.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let message_id = event
        .and_then(|event| event.get("message"))
        .and_then(|message| message.get("id"))
        .and_then(Value::as_str)
        .map(ItemId::from);
    match (event_type, delta_type) {
        ("content_block_delta", Some("text_delta")) => Event::Delta {
            kind: "text".to_owned(),
            text: text_of("text"),
            item_id: message_id,
            turn_id: None,
        },
        ("content_block_delta", Some("input_json_delta")) => Event::Delta {
            kind: "toolInput".to_owned(),
            text: text_of("partial_json"),
            item_id: message_id,
            turn_id: None,
        },
        ("content_block_delta", Some("thinking_delta")) => Event::Delta {
            kind: "thinking".to_owned(),
            text: text_of("thinking"),
            item_id: message_id,
            turn_id: None,
        },
        (other, _) => Event::Notice {
            item_id: None,
            method: format!("stream_event/{other}"),
            message: None,
        },
    }
}

/// What a tool does, for filters and policies.
pub fn tool_kind(name: &str) -> &'static str {
    match name {
        "Bash" | "BashOutput" | "KillShell" | "KillBash" => "command",
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => "file_change",
        "WebSearch" | "WebFetch" => "web_search",
        "Agent" | "Task" | "SendMessage" => "agent",
        name if name.starts_with("mcp__") => "mcp",
        _ => "other",
    }
}

/// A short text for a tool input: the command, the prompt, a path, or JSON.
fn input_summary(input: &Value) -> String {
    for key in [
        "command",
        "prompt",
        "file_path",
        "pattern",
        "url",
        "query",
        "message",
    ] {
        if let Some(text) = input.get(key).and_then(Value::as_str) {
            return text.to_owned();
        }
    }
    match input {
        Value::Null => String::new(),
        other @ Value::Bool(_) | other @ Value::Number(_) | other @ Value::String(_) | other @ Value::Array(_) | other @ Value::Object(_) => other.to_string(),
    }
}

/// The text of a tool result's content (a string or blocks).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        Value::Object(map) => map
            .get("stdout")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| content.to_string()),
        other @ Value::Bool(_) | other @ Value::Number(_) => other.to_string(),
    }
}

/// The line that opens the report in a 2.1.x `Agent` tool_result; the
/// harness indents every line of the report under it.
const HAND_BACK_FRAME: &str = "[Subagent hand-back]";

/// The note 2.1.x puts before a report (the tools the subagent used).
const TOOLS_USED_NOTE: &str = "<tools-used-before-summary>";

/// The report a subagent handed back, read from the root's `Agent`/`Task`
/// tool_result (`structured` is its `tool_use_result`, `content` the
/// tool_result's content): the text blocks of the structured `content`
/// (2.0.77 on; 2.1.x puts a tools-used note first), else the report under
/// a "[Subagent hand-back]" frame of the text, else the text without the
/// `agentId: …` and `<usage>…</usage>` tail the CLI adds (1.0.128 gives
/// the bare report; an error's text is kept as it is).
fn hand_back_report(structured: Option<&Value>, content: &Value) -> Option<String> {
    let blocks: Vec<&str> = structured
        .and_then(|result| result.get("content"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .filter(|text| !text.trim_start().starts_with(TOOLS_USED_NOTE))
        .collect();
    if !blocks.is_empty() {
        return Some(blocks.join("\n"));
    }
    let text = content_text(content);
    let report = match framed_report(&text) {
        Some(report) => report,
        None => without_hand_back_tail(&text).to_owned(),
    };
    Some(report).filter(|report| !report.trim().is_empty())
}

/// The indented lines under a "[Subagent hand-back]" frame line (at column
/// zero: an indented one is the report's own text), unindented; the first
/// line at column zero after it (`agentId: …`) ends the report.
fn framed_report(text: &str) -> Option<String> {
    let mut lines = text
        .lines()
        .skip_while(|line| !line.starts_with(HAND_BACK_FRAME));
    lines.next()?;
    let mut report: Vec<&str> = lines
        .take_while(|line| line.is_empty() || line.starts_with("  "))
        .map(|line| line.strip_prefix("  ").unwrap_or(line))
        .collect();
    while report.last().is_some_and(|line| line.trim().is_empty()) {
        report.pop();
    }
    Some(report.join("\n"))
}

/// `text` without a trailing `<usage>…</usage>` part and `agentId: …` line.
fn without_hand_back_tail(text: &str) -> &str {
    let mut rest = text.trim_end();
    if rest.ends_with("</usage>") {
        if let Some(start) = rest.rfind("<usage>") {
            rest = rest[..start].trim_end();
        }
    }
    let last_line = rest.rfind('\n').map_or(0, |index| index + 1);
    if rest[last_line..].starts_with("agentId: ") {
        rest = rest[..last_line].trim_end();
    }
    rest
}

/// The text between `<tag>` and `</tag>`.
fn xml_value(text: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&close)? + start;
    Some(text[start..end].trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The router reads a line's members where they stand (first scalars,
    /// then from the end, an object or array stepped over) and gives each
    /// shape of line what reading every member would.
    #[test]
    fn a_line_is_routed_by_its_members_wherever_they_stand() {
        let main = SourcePart::Main;
        let agent = SourcePart::AgentFile { agent_id: "a1".to_owned() };
        let cases: Vec<(&str, &SourcePart, &str, Route)> = vec![
            (
                "an attachment: type and session after its body, time before its rendering",
                &main,
                r#"{"parentUuid":"p","isSidechain":false,"attachment":{"type":"x","body":"{\"type\":\"user\"}"},"type":"attachment","timestamp":"2026-01-01T00:00:00Z","rendered":[{"text":"]}"}],"userType":"external","sessionId":"s"}"#,
                Route::PassOver,
            ),
            (
                "a request shape: type and session first",
                &main,
                r#"{"type":"api-request-shape","sessionId":"s","shape":{"system":[{"type":"text"}]}}"#,
                Route::PassOver,
            ),
            (
                "a message: type first, session last",
                &main,
                r#"{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u","sessionId":"s"}"#,
                Route::Transcript,
            ),
            (
                "a message in a subagent's file, no session",
                &agent,
                r#"{"type":"assistant","message":{"role":"assistant","content":[]}}"#,
                Route::Transcript,
            ),
            (
                "a message of no transcript (a stream line)",
                &main,
                r#"{"type":"assistant","message":{"role":"assistant","content":[]},"session_id":"s"}"#,
                Route::Decode,
            ),
            (
                "a sidechain notice with no agent id (1.0.128): every member read",
                &main,
                r#"{"isSidechain":true,"type":"attachment","attachment":{},"sessionId":"s"}"#,
                Route::Decode,
            ),
            (
                "a hook input",
                &main,
                r#"{"type":"attachment","sessionId":"s","attachment":{"hook_event_name":"Stop"}}"#,
                Route::Decode,
            ),
            ("no JSON", &main, "not json", Route::Decode),
        ];
        let routed: Vec<(&str, Route)> = cases.iter().map(|(what, part, line, _)| (*what, usage_route(part, line.as_bytes()))).collect();
        let expected: Vec<(&str, Route)> = cases.into_iter().map(|(what, _, _, route)| (what, route)).collect();
        assert_eq!(routed, expected);
    }

    #[test]
    fn a_tag_value_is_read_between_its_tags() {
        let text = "<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>";
        assert_eq!(
            (
                xml_value(text, "task-id"),
                xml_value(text, "status"),
                xml_value(text, "summary")
            ),
            (Some("a1".to_owned()), Some("completed".to_owned()), None)
        );
    }

    #[test]
    fn usage_counts_each_response_once_and_prefers_final_values() {
        let mut book = UsageBook::default();
        let snapshot = TokenUsage {
            input_tokens: 100,
            output_tokens: 1,
            total_tokens: 101,
            ..TokenUsage::default()
        };
        let last = TokenUsage {
            input_tokens: 100,
            output_tokens: 40,
            total_tokens: 140,
            ..TokenUsage::default()
        };
        let key = ("msg_1".to_owned(), "req_1".to_owned());
        let moved = [
            book.record(key.clone(), snapshot, false),
            book.record(key.clone(), snapshot, false),
            book.record(key.clone(), last, true),
            book.record(key, snapshot, false),
        ];
        assert_eq!((moved, book.total()), ([true, false, true, false], last));
    }

    #[test]
    fn usage_after_a_covering_result_counts_only_the_responses_after_it() {
        let usage = |input: u64, output: u64| TokenUsage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            ..TokenUsage::default()
        };
        let key = |id: &str| (id.to_owned(), "req".to_owned());
        let mut book = UsageBook::default();
        book.record(key("msg_1"), usage(100, 1), false);
        book.cover(usage(100, 30));
        book.record(key("msg_2"), usage(200, 1), false);
        // The covered response's final value changes nothing; the open
        // one's replaces its snapshot.
        let moved = [
            book.record(key("msg_1"), usage(100, 30), true),
            book.record(key("msg_2"), usage(200, 50), true),
        ];
        assert_eq!((moved, book.total()), ([false, true], usage(300, 80)));
    }

    #[test]
    fn a_result_printed_after_the_next_query_replied_covers_only_its_own_query() {
        let usage = |input: u64, output: u64| TokenUsage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            ..TokenUsage::default()
        };
        let key = |id: &str| (id.to_owned(), String::new());
        let mut book = UsageBook::default();
        book.start_query();
        book.record(key("msg_1"), usage(100, 1), false);
        book.start_query();
        book.record(key("msg_2"), usage(200, 1), false);
        // The first query's `result` comes after the second one's reply.
        book.cover(usage(100, 30));
        let between = book.total();
        book.cover(usage(200, 50));
        assert_eq!((between, book.total()), (usage(300, 31), usage(300, 80)));
    }
}
