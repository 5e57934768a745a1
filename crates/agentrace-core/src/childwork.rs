//! Child-work status records (§6): one record per subagent and per
//! persistent command, folded from run-log envelopes by one pure reducer
//! that serves live input and replay alike. Changes are returned as data
//! (`admitted`, `updated`, `ended`, `settled`); this module never reads the
//! clock, prints or stores: every time comes from an envelope, and the
//! session end is told by the shell ([`ChildWork::end_session`]).
//!
//! # Record (`--json`, the API)
//!
//! ```json
//! {"childWorkId":"agent:019…","kind":"agent","provider":"codex","providerId":"019…",
//!  "label":"/root/child_a","description":"Review the parser","state":"working",
//!  "generation":1,"runId":"<turn id>","operation":{"toolName":"Bash","input":"npm test","basis":"open"},
//!  "lastMessage":"…","totalTokens":1234,"startedAt":"…","updatedAt":"…","previousInvocations":[]}
//! ```
//!
//! Optional members (`parentChildWorkId`, `waitingOn`, `operation`,
//! `lastMessage`, `totalTokens`, `outcome`, `endedAt`) are absent when not
//! known. `startedAt` / `endedAt` are those of the current run; earlier runs
//! are in `previousInvocations`, oldest first. The lists of members and of
//! values may expand over time.
//!
//! # How envelopes map onto records
//!
//! The reducer reads the normalized events both attributors write (Codex and
//! Claude alike), provider detail included (`processId`,
//! `receiverThreadIds`, read-back turns, a background task's status: see
//! [`crate::model::EVENT_FACTS`]); it never reads `raw`, so an envelope that
//! references its frame instead of carrying it folds the same. A log written
//! before its events carried those facts says so (no
//! `run_started.eventFacts`); for it alone they are taken from each
//! envelope's frame, as that log's writer did. It reads envelopes as
//! written, corrections (`actor_resolved`) included, so a replayed log gives
//! the records a live observer had.
//!
//! - A thread becomes a child once a spawn link names it (`agent_spawned`, or
//!   an actor of role `helper`); its record is admitted once it also has a
//!   run (a `turn_started`, or a turn that already ended). Roots never get a
//!   record, and their turn endings settle nothing.
//! - Facts (tool calls, messages, usage, waiting) are fenced by turn id: a
//!   fact naming another turn than the child's current one is dropped; a
//!   fact naming none belongs to the current one.
//! - The first ending of a run wins; usage after it is dropped.
//! - A command whose call is still open when its thread starts another item,
//!   writes to its terminal or ends its turn, and that has a `processId`, is
//!   a `command` record owned by its launcher; a Claude background task
//!   (`backgroundCommand` item) is one from its start.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};
use crate::state::CostStatus;
use crate::model::{
    Actor, Envelope, Event, EventBody, ItemId, Provider, Role, Severity, ThreadId, Timestamp,
    TurnId, Warning,
};

/// How many ended records a run keeps before trimming the oldest (rule 7).
pub const DEFAULT_ENDED_BOUND: usize = 32;

/// Longest label of a command record, in characters.
const LABEL_CHARS: usize = 80;
/// Longest description, last message or operation input, in characters.
const TEXT_CHARS: usize = 2_000;

/// The id of one child-work record: `agent:<thread id>` or
/// `command:<launcher thread id or ->:<command id>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChildWorkId(pub String);

impl ChildWorkId {
    /// The id of a child agent's record.
    pub fn agent(thread: &ThreadId) -> Self {
        Self(format!("agent:{thread}"))
    }

    /// The id of a persistent command's record.
    pub fn command(launcher: Option<&ThreadId>, command: &ItemId) -> Self {
        let launcher = launcher.map_or("-", ThreadId::as_str);
        Self(format!("command:{launcher}:{command}"))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChildWorkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a record stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChildWorkKind {
    /// A subagent.
    Agent,
    /// A persistent background command.
    Command,
}

/// Where a record stands now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChildWorkState {
    /// Its run is going.
    Working,
    /// Its run is blocked on the user (see `waitingOn`).
    Waiting,
    /// Its run ended (see `outcome`).
    Ended,
}

/// What a waiting child waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WaitingOn {
    /// An approval request.
    Approval,
    /// A request for user input.
    UserInput,
}

/// How a run ended (§1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// It completed.
    Succeeded,
    /// It failed (an error, a non-zero exit).
    Failed,
    /// It was interrupted, closed or declined.
    Cancelled,
    /// Nobody said (the session ended, the host lost it, the thread closed).
    Unknown,
}

/// Why an operation is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OperationBasis {
    /// The tool call started and has not ended.
    Open,
}

/// The tool a child is running now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// `Bash`, `apply_patch`, `mcp__server__tool`, `web_search`, a Claude tool name, …
    pub tool_name: String,
    /// Input summary: the command, the paths, the query, the arguments.
    pub input: String,
    /// Why it is shown.
    pub basis: OperationBasis,
    /// When the call started (its envelope's time), so a live view can say
    /// how long it has run.
    pub started_at: Timestamp,
}

/// One earlier run of a child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    /// Its run number.
    pub generation: u32,
    /// Its turn id (Codex) or run id (Claude).
    pub run_id: String,
    /// How it ended (`unknown` when the next run began first).
    pub outcome: Outcome,
    /// When it began.
    pub started_at: Timestamp,
    /// When it ended.
    pub ended_at: Timestamp,
    /// What the child said last in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message: Option<String>,
    /// The child's running token total at its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// The child's cost so far at its end, US dollars (see
    /// [`ChildWorkRecord::cost`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// One child-work record (§6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildWorkRecord {
    /// Stable id of the record.
    pub child_work_id: ChildWorkId,
    /// Agent or command.
    pub kind: ChildWorkKind,
    /// The provider of the run.
    pub provider: Provider,
    /// Thread id / agent id (agent), command id (command).
    pub provider_id: String,
    /// The record of the child that owns it (none when the root does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_child_work_id: Option<ChildWorkId>,
    /// Display label (the agent's, or the command's first characters).
    pub label: String,
    /// The spawn prompt, or the whole command.
    pub description: String,
    /// Working, waiting or ended.
    pub state: ChildWorkState,
    /// What a waiting child waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<WaitingOn>,
    /// The current run's number: 1, then +1 per follow-up.
    pub generation: u32,
    /// The current run: turn id (Codex), run or tool_use id (Claude), command id.
    pub run_id: String,
    /// The tool running now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    /// What the child said last in this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message: Option<String>,
    /// The child's running token total (replaced, never added up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// What the child's priced requests cost so far, US dollars: its
    /// agent's cost as `show` gives it, whichever run they were for (an
    /// ended record's cost still follows its agent's last usage). `None`
    /// before it reported usage, or when none of it could be priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// How complete `cost` is, once the child reported usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_status: Option<CostStatus>,
    /// How the current run ended, once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// When the current run began.
    pub started_at: Timestamp,
    /// When the record last changed.
    pub updated_at: Timestamp,
    /// When the current run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// Earlier runs, oldest first.
    pub previous_invocations: Vec<Invocation>,
}

/// What a change did to a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// The record appeared (possibly already ended, when the announcement
    /// came after the run's end).
    Admitted,
    /// Something about it changed (including a new run reopening it).
    Updated,
    /// Its run ended, by the provider's word.
    Ended,
    /// Its run was still live when the session ended: outcome `unknown`.
    Settled,
}

/// One change, with the whole record after it: `{"change", "record"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildWorkChange {
    /// What happened.
    pub change: ChangeKind,
    /// The record after the change.
    pub record: ChildWorkRecord,
}

/// An ending: outcome, time, and whether the session end decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Ending {
    outcome: Outcome,
    at: Timestamp,
    settled: bool,
}

/// One run of a child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Run {
    generation: u32,
    id: String,
    started_at: Timestamp,
    ended: Option<Ending>,
    operations: Vec<(ItemId, Operation)>,
    last_message: Option<String>,
    total_tokens: Option<u64>,
    waiting_on: Option<WaitingOn>,
}

impl Run {
    fn live(&self) -> bool {
        self.ended.is_none()
    }

    /// The fence of rule 2: a fact naming no turn is the current run's.
    fn owns(&self, turn: Option<&TurnId>) -> bool {
        turn.is_none_or(|turn| turn.as_str() == self.id)
    }

    fn end(&mut self, ending: Ending) -> bool {
        if self.ended.is_some() {
            return false;
        }
        self.ended = Some(ending);
        self.operations.clear();
        self.waiting_on = None;
        true
    }
}

/// What the reducer knows of one thread, child or not (yet).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct AgentFacts {
    root: bool,
    announced: bool,
    parent: Option<ThreadId>,
    label: Option<String>,
    description: Option<String>,
    run: Option<Run>,
    previous: Vec<Invocation>,
    trimmed: bool,
    /// The agent's cost so far, as the run state priced it (see
    /// [`ChildWork::price`]).
    #[serde(default)]
    cost: Option<Priced>,
}

/// A cost figure and how complete it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Priced {
    cost: Option<f64>,
    status: CostStatus,
}

/// A command that might outlive its call, or does.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CommandFacts {
    launcher: Option<ThreadId>,
    item: ItemId,
    label: String,
    description: String,
    started_at: Timestamp,
    persistent: bool,
    ended: Option<Ending>,
}

/// A record the reducer derives.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum Key {
    Agent(ThreadId),
    Command(Option<ThreadId>, ItemId),
}

/// Each agent's children, by parent, as `agents` names them.
fn children_of(agents: &BTreeMap<ThreadId, AgentFacts>) -> BTreeMap<ThreadId, Vec<ThreadId>> {
    let mut children: BTreeMap<ThreadId, Vec<ThreadId>> = BTreeMap::new();
    for (child, facts) in agents {
        if let Some(parent) = &facts.parent {
            children.entry(parent.clone()).or_default().push(child.clone());
        }
    }
    children
}

/// The child-work reducer of one run: envelopes in, record changes out.
/// Serializable so a store can keep a snapshot of a long run's fold (an
/// internal cache, not a contract: its shape changes with the reducer).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildWork {
    provider: Provider,
    bound: usize,
    agents: BTreeMap<ThreadId, AgentFacts>,
    #[serde(with = "crate::pairs")]
    commands: BTreeMap<(Option<ThreadId>, ItemId), CommandFacts>,
    published: BTreeMap<ChildWorkId, ChildWorkRecord>,
    /// Published ids in admission order.
    order: Vec<ChildWorkId>,
    /// Ended published ids, oldest ending first (rule 7).
    ended_order: VecDeque<ChildWorkId>,
    dirty: BTreeSet<Key>,
    warnings: Vec<Warning>,
    /// The log predates [`crate::model::EVENT_FACTS`]: facts come from `raw`.
    /// No default: a snapshot from before it is a miss, and the log is
    /// folded again.
    legacy: bool,
    /// The children announced under each parent (each agent's `parent`,
    /// by parent): rule 3 marks what a new child owns at each new child,
    /// and looked at every agent for it, quadratic in a run with many
    /// children. Not saved: made again from `agents` when first needed
    /// after a snapshot is read (`None`).
    #[serde(skip)]
    children: Option<BTreeMap<ThreadId, Vec<ThreadId>>>,
}

impl Default for ChildWork {
    fn default() -> Self {
        Self::new()
    }
}

impl ChildWork {
    /// A reducer keeping [`DEFAULT_ENDED_BOUND`] ended records.
    pub fn new() -> Self {
        Self::with_ended_bound(DEFAULT_ENDED_BOUND)
    }

    /// A reducer keeping at most `bound` ended records (live ones are never
    /// trimmed).
    pub fn with_ended_bound(bound: usize) -> Self {
        Self {
            provider: Provider::Unknown,
            bound,
            agents: BTreeMap::new(),
            commands: BTreeMap::new(),
            published: BTreeMap::new(),
            order: Vec::new(),
            ended_order: VecDeque::new(),
            dirty: BTreeSet::new(),
            warnings: Vec::new(),
            legacy: false,
            children: Some(BTreeMap::new()),
        }
    }

    /// The records as they stand, in admission order.
    pub fn records(&self) -> Vec<ChildWorkRecord> {
        self.order
            .iter()
            .filter_map(|id| self.published.get(id))
            .cloned()
            .collect()
    }

    /// True while a published record is live (working or waiting): every
    /// published record is in the admission order, and the ended ones in
    /// the ending order too, so this costs nothing per envelope.
    pub fn any_live(&self) -> bool {
        self.order.len() > self.ended_order.len()
    }

    /// Warnings the reducer raised (`lost_turn`), in order.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Takes what the thread's requests cost so far, as the run state
    /// priced them (the reducer knows no prices). The book calls it with the
    /// envelope that changed the thread's usage, before [`ChildWork::apply`]
    /// of that envelope, so a changed cost comes out as that envelope's
    /// change. Unlike a run's tokens (rule 6) it moves after the run ended
    /// too: it is the agent's, and a Claude helper's last usage comes with
    /// its result, after its turn ended.
    pub fn price(&mut self, thread: &ThreadId, cost: Option<f64>, status: CostStatus) {
        let priced = Some(Priced { cost, status });
        let Some(facts) = self.agents.get_mut(thread) else {
            return;
        };
        if facts.cost == priced {
            return;
        }
        facts.cost = priced;
        self.dirty.insert(Key::Agent(thread.clone()));
    }

    /// Folds one envelope in; returns the changes it made, in order.
    pub fn apply(&mut self, envelope: &Envelope) -> Vec<ChildWorkChange> {
        let EventBody::Known(event) = &envelope.event else {
            return Vec::new();
        };
        let filled = if self.legacy {
            crate::legacy_facts::fill(event, envelope.raw.as_ref().map(crate::model::RawFrame::get))
        } else {
            None
        };
        let event = filled.as_ref().unwrap_or(event);
        let at = envelope.timestamp;
        self.note_actor(envelope.actor.thread_id.as_ref(), &envelope.actor);
        let thread = envelope.actor.thread_id.as_ref();
        match event {
            Event::RunStarted {
                provider,
                event_facts,
                ..
            } => {
                self.provider = *provider;
                self.legacy = event_facts.is_none();
                self.mark_all();
            }
            Event::ActorResolved { thread_id, actor } => {
                self.note_actor(Some(thread_id), actor);
            }
            Event::AgentSpawned {
                parent_thread_id,
                child_thread_id,
                prompt,
                ..
            } => self.announce(child_thread_id, parent_thread_id, prompt.as_deref()),
            Event::TurnStarted { turn_id, .. } => {
                if let Some(thread) = thread {
                    self.start_run(thread, turn_id, at);
                }
            }
            Event::TurnCompleted {
                turn_id,
                status,
                usage,
                last_message,
                ..
            } => {
                if let Some(thread) = thread {
                    self.turn_completed(
                        thread,
                        turn_id,
                        status,
                        usage.map(|u| u.total_tokens),
                        last_message.as_deref(),
                        at,
                    );
                }
            }
            Event::Error {
                will_retry: Some(false),
                turn_id,
                ..
            } => {
                if let Some(thread) = thread {
                    self.end_run(thread, turn_id.as_ref(), Outcome::Failed, at, false);
                }
            }
            Event::Notice {
                method,
                message,
                item_id,
            } => match method.as_str() {
                "thread/closed" => {
                    if let Some(thread) = thread {
                        self.end_run(thread, None, Outcome::Unknown, at, false);
                    }
                }
                // A Claude task's closing summary: what the helper said last.
                "system/task_notification" => {
                    if let (Some(thread), Some(text)) = (thread, message) {
                        if let Some(run) = self
                            .agents
                            .get_mut(thread)
                            .and_then(|facts| facts.run.as_mut())
                        {
                            if run.last_message.is_none() {
                                run.last_message = Some(cut(text, TEXT_CHARS));
                                self.touch(Some(thread));
                            }
                        }
                    }
                }
                "item/commandExecution/terminalInteraction" => {
                    if let Some(item) = item_id {
                        self.promote(thread, item);
                    }
                }
                _ => {}
            },
            Event::ToolUse {
                tool_kind,
                name,
                input,
                item_id: Some(item),
                turn_id,
                process_id,
            } => {
                self.tool_use(
                    thread,
                    tool_kind,
                    name,
                    input,
                    item,
                    turn_id.as_ref(),
                    process_id.is_some(),
                    at,
                );
            }
            Event::ToolResult {
                name,
                status,
                exit_code,
                item_id: Some(item),
                receiver_thread_ids,
                ..
            } => {
                self.tool_result(
                    thread,
                    name,
                    status.as_deref(),
                    *exit_code,
                    item,
                    receiver_thread_ids,
                    at,
                );
            }
            Event::ItemStarted {
                item_type,
                item_id: Some(item),
                description,
                started_at,
                ..
            } => {
                self.another_item(thread, item);
                if item_type == "backgroundCommand" {
                    // A command known to run on only once its call
                    // returned began with the call.
                    let began = started_at.filter(|began| *began <= at).unwrap_or(at);
                    self.background_task(thread, item, description.as_deref(), began);
                }
            }
            Event::ItemCompleted {
                item_type,
                item_id,
                status,
                activity_kind,
                agent_thread_id,
                ..
            } => match item_type.as_str() {
                "backgroundCommand" => {
                    if let Some(item) = item_id {
                        self.end_command(thread, item, task_outcome(status.as_deref()), at);
                    }
                }
                "subAgentActivity" => {
                    if let (Some("interrupted"), Some(child)) =
                        (activity_kind.as_deref(), agent_thread_id)
                    {
                        self.end_run(child, None, Outcome::Cancelled, at, false);
                    }
                }
                _ => {}
            },
            Event::Message {
                role,
                phase,
                text,
                turn_id,
                item_id,
            } if role == "assistant" && phase.as_deref() != Some("commentary") => {
                if let Some(item) = item_id {
                    self.another_item(thread, item);
                }
                if let Some(run) = thread.and_then(|thread| self.live_run(thread, turn_id.as_ref()))
                {
                    run.last_message = Some(cut(text, TEXT_CHARS));
                    self.touch(thread);
                }
            }
            Event::Usage { turn_id, total, .. } => {
                // Rule 6: a run that ended takes no more usage.
                if let Some(run) = thread.and_then(|thread| self.live_run(thread, turn_id.as_ref()))
                {
                    run.total_tokens = Some(total.total_tokens);
                    self.touch(thread);
                }
            }
            Event::Status {
                status,
                waiting_on_approval,
                waiting_on_user_input,
            } if status == "active" => {
                // `systemError` and the other statuses end nothing (§6).
                let waiting = if *waiting_on_approval {
                    Some(WaitingOn::Approval)
                } else if *waiting_on_user_input {
                    Some(WaitingOn::UserInput)
                } else {
                    None
                };
                if let Some(run) = thread.and_then(|thread| self.live_run(thread, None)) {
                    run.waiting_on = waiting;
                    self.touch(thread);
                }
            }
            Event::AgentCompleted {
                thread_id,
                result: Some(result),
                status: crate::model::AgentStatus::Completed,
                ..
            } => {
                // A Claude helper's answer comes with its ending.
                if let Some(run) = self
                    .agents
                    .get_mut(thread_id)
                    .and_then(|facts| facts.run.as_mut())
                {
                    if run.last_message.is_none() {
                        run.last_message = Some(cut(result, TEXT_CHARS));
                        self.dirty.insert(Key::Agent(thread_id.clone()));
                    }
                }
            }
            // Read-backs (`thread/read`, `thread/turns/list`,
            // `thread/resume`); server output alone does not name the
            // request, so any answer holding turns is looked at.
            Event::Response {
                error: None,
                unfinished_turn_ids,
                ..
            } => self.read_back(unfinished_turn_ids, envelope.sequence, at),
            Event::Message { .. } | Event::Reasoning { .. } | Event::ItemStarted { .. } | Event::Delta { .. } | Event::ToolUse { .. } | Event::ToolResult { .. } | Event::Status { .. } | Event::ThreadStarted { .. } | Event::AgentWaitStarted { .. } | Event::AgentCompleted { .. } | Event::ServerRequest { .. } | Event::ClientRequest { .. } | Event::Response { .. } | Event::Error { .. } | Event::Warning { .. } | Event::Done { .. } | Event::Failed { .. } | Event::Interrupted { .. } | Event::Replayed { .. } | Event::ModelSelected { .. } | Event::Dropped { .. } | Event::SessionEnded { .. } | Event::Unknown { .. } => {}
        }
        self.publish(at)
    }

    /// The session ended (end of an ingested input, or the end of a live
    /// run): every live record settles `unknown`; ended ones keep their
    /// outcome (rule 9).
    pub fn end_session(&mut self, at: Timestamp) -> Vec<ChildWorkChange> {
        let ending = Ending {
            outcome: Outcome::Unknown,
            at,
            settled: true,
        };
        for (thread, facts) in &mut self.agents {
            if let Some(run) = &mut facts.run {
                if run.end(ending) {
                    self.dirty.insert(Key::Agent(thread.clone()));
                }
            }
        }
        for (key, command) in &mut self.commands {
            if command.persistent && command.ended.is_none() {
                command.ended = Some(ending);
                self.dirty
                    .insert(Key::Command(key.0.clone(), key.1.clone()));
            }
        }
        self.publish(at)
    }

    fn facts(&mut self, thread: &ThreadId) -> &mut AgentFacts {
        self.agents.entry(thread.clone()).or_default()
    }

    fn touch(&mut self, thread: Option<&ThreadId>) {
        if let Some(thread) = thread {
            self.dirty.insert(Key::Agent(thread.clone()));
        }
    }

    /// Marks what a change of `thread`'s root or announced flag can move:
    /// its own record and those it owns (children it spawned, commands it
    /// launched), which are all `derive_agent` and `derive_command` read of
    /// another thread. Marking every record instead re-derived all of a
    /// long run's records at each new child.
    fn mark_owned_by(&mut self, thread: &ThreadId) {
        self.dirty.insert(Key::Agent(thread.clone()));
        let agents = &self.agents;
        let children = self.children.get_or_insert_with(|| children_of(agents));
        self.dirty.extend(children.get(thread).into_iter().flatten().cloned().map(Key::Agent));
        // The commands are ordered by launcher first: `thread`'s are one
        // range (every command was compared at each new child, which made a
        // run with many children quadratic).
        let commands: Vec<Key> = self
            .commands
            .range((Some(thread.clone()), ItemId(String::new()))..)
            .map(|(key, _)| key)
            .take_while(|(launcher, _)| launcher.as_ref() == Some(thread))
            .map(|(launcher, item)| Key::Command(launcher.clone(), item.clone()))
            .collect();
        self.dirty.extend(commands);
    }

    fn mark_all(&mut self) {
        self.dirty
            .extend(self.agents.keys().cloned().map(Key::Agent));
        self.dirty.extend(
            self.commands
                .keys()
                .map(|(launcher, item)| Key::Command(launcher.clone(), item.clone())),
        );
    }

    /// Learns roots, links and labels from an actor.
    fn note_actor(&mut self, thread: Option<&ThreadId>, actor: &Actor) {
        let Some(thread) = thread else {
            return;
        };
        // Every event of a thread comes here, and mostly changes nothing:
        // looked up by reference first (`facts` clones the id, and the
        // label was cloned to be compared).
        let known = self.agents.get(thread);
        match actor.role {
            Role::Root => {
                if !known.is_some_and(|facts| facts.root) {
                    self.facts(thread).root = true;
                    self.mark_owned_by(thread);
                }
            }
            // The label only: the announcement is the `agent_spawned` that
            // both attributors write right after, with the spawn prompt, so
            // a record is admitted once, whole.
            Role::Helper => {
                if known.and_then(|facts| facts.label.as_deref()) != Some(actor.label.as_str()) {
                    self.facts(thread).label = Some(actor.label.clone());
                    self.dirty.insert(Key::Agent(thread.clone()));
                }
            }
            Role::Unknown => {}
        }
    }

    fn announce(&mut self, child: &ThreadId, parent: &ThreadId, prompt: Option<&str>) {
        let facts = self.facts(child);
        let newly = !facts.announced;
        facts.announced = true;
        let linked = facts.parent.is_none();
        if linked {
            facts.parent = Some(parent.clone());
        }
        if facts.description.is_none() {
            facts.description = prompt.map(|prompt| cut(prompt, TEXT_CHARS));
        }
        if let Some(children) = self.children.as_mut().filter(|_| linked) {
            children.entry(parent.clone()).or_default().push(child.clone());
        }
        if newly {
            // Rule 3: work it launched meanwhile is re-owned by it.
            self.mark_owned_by(child);
        } else {
            self.dirty.insert(Key::Agent(child.clone()));
        }
    }

    /// The tool `thread` runs now, while its run is live: what a child's
    /// record says as its `operation`, for the root too (which has no
    /// record), so the session at a glance says what the root runs.
    pub fn operation_of(&self, thread: &ThreadId) -> Option<&Operation> {
        self.agents
            .get(thread)
            .and_then(|facts| facts.run.as_ref())
            .filter(|run| run.live())
            .and_then(|run| run.operations.last())
            .map(|(_, operation)| operation)
    }

    /// The current run of a thread when it is live and owns the fact.
    fn live_run(&mut self, thread: &ThreadId, turn: Option<&TurnId>) -> Option<&mut Run> {
        self.agents
            .get_mut(thread)
            .and_then(|facts| facts.run.as_mut())
            .filter(|run| run.live() && run.owns(turn))
    }

    fn start_run(&mut self, thread: &ThreadId, turn: &TurnId, at: Timestamp) {
        let facts = self.facts(thread);
        let generation = match &facts.run {
            // The same turn announced twice is one run (rule 4).
            Some(run) if run.id == turn.as_str() => return,
            // A root never gets a record, so its earlier runs are kept by
            // no one: kept, they grew its facts (and a long run's
            // snapshot) by every turn and its last message, 19 MB for a
            // 60 MB transcript of 15,000 turns. Any kept before it was
            // known as the root, or by an older build's snapshot, go too.
            Some(run) if facts.root => {
                facts.previous = Vec::new();
                run.generation + 1
            }
            Some(run) => {
                // Rule 9: a run that never ended is kept as `unknown`.
                let (outcome, ended_at) = run
                    .ended
                    .map_or((Outcome::Unknown, at), |ending| (ending.outcome, ending.at));
                facts.previous.push(Invocation {
                    generation: run.generation,
                    run_id: run.id.clone(),
                    outcome,
                    started_at: run.started_at,
                    ended_at,
                    last_message: run.last_message.clone(),
                    total_tokens: run.total_tokens,
                    cost: facts.cost.and_then(|priced| priced.cost),
                });
                run.generation + 1
            }
            None => 1,
        };
        facts.trimmed = false;
        facts.run = Some(Run {
            generation,
            id: turn.as_str().to_owned(),
            started_at: at,
            ended: None,
            operations: Vec::new(),
            last_message: None,
            total_tokens: None,
            waiting_on: None,
        });
        self.dirty.insert(Key::Agent(thread.clone()));
    }

    /// Ends the thread's current run when `turn` names it (or is none); the
    /// first ending wins (rule 1). Commands still open become persistent.
    fn end_run(
        &mut self,
        thread: &ThreadId,
        turn: Option<&TurnId>,
        outcome: Outcome,
        at: Timestamp,
        settled: bool,
    ) {
        let Some(run) = self.live_run(thread, turn) else {
            return;
        };
        run.end(Ending {
            outcome,
            at,
            settled,
        });
        self.dirty.insert(Key::Agent(thread.clone()));
        let open: Vec<ItemId> = self
            .commands
            .iter()
            .filter(|((launcher, _), command)| {
                launcher.as_ref() == Some(thread) && !command.persistent && command.ended.is_none()
            })
            .map(|((_, item), _)| item.clone())
            .collect();
        for item in open {
            self.promote(Some(thread), &item);
        }
    }

    fn turn_completed(
        &mut self,
        thread: &ThreadId,
        turn: &TurnId,
        status: &str,
        usage: Option<u64>,
        summary: Option<&str>,
        at: Timestamp,
    ) {
        let facts = self.facts(thread);
        if facts.run.is_none() {
            // The capture began inside this turn: it ran, and now it ended.
            self.start_run(thread, turn, at);
        }
        if let Some(run) = self.live_run(thread, Some(turn)) {
            if usage.is_some() {
                run.total_tokens = usage;
            }
            if run.last_message.is_none() {
                run.last_message = summary.map(|text| cut(text, TEXT_CHARS));
            }
        }
        let outcome = match status {
            "completed" => Outcome::Succeeded,
            "interrupted" => Outcome::Cancelled,
            "failed" => Outcome::Failed,
            _ => Outcome::Unknown,
        };
        self.end_run(thread, Some(turn), outcome, at, false);
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "each argument is one fact of the event"
    )]
    fn tool_use(
        &mut self,
        thread: Option<&ThreadId>,
        tool_kind: &str,
        name: &str,
        input: &str,
        item: &ItemId,
        turn: Option<&TurnId>,
        has_process: bool,
        at: Timestamp,
    ) {
        self.another_item(thread, item);
        // A command with a process behind it may outlive its call.
        if tool_kind == "command" && has_process {
            let key = (thread.cloned(), item.clone());
            self.commands.entry(key).or_insert_with(|| CommandFacts {
                launcher: thread.cloned(),
                item: item.clone(),
                label: cut(first_line(input), LABEL_CHARS),
                description: cut(input, TEXT_CHARS),
                started_at: at,
                persistent: false,
                ended: None,
            });
        }
        // Collaboration calls (spawn, wait, send) are not operations.
        if tool_kind == "agent" {
            return;
        }
        let tool_name = match (tool_kind, name) {
            ("command", "shell") => "Bash".to_owned(),
            _ => name.to_owned(),
        };
        if let Some(run) = thread.and_then(|thread| self.live_run(thread, turn)) {
            if !run.operations.iter().any(|(open, _)| open == item) {
                run.operations.push((
                    item.clone(),
                    Operation {
                        tool_name,
                        input: cut(input, TEXT_CHARS),
                        basis: OperationBasis::Open,
                        started_at: at,
                    },
                ));
                self.touch(thread);
            }
        }
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "each argument is one fact of the event"
    )]
    fn tool_result(
        &mut self,
        thread: Option<&ThreadId>,
        name: &str,
        status: Option<&str>,
        exit_code: Option<i64>,
        item: &ItemId,
        receivers: &[ThreadId],
        at: Timestamp,
    ) {
        let key = (thread.cloned(), item.clone());
        if let Some(command) = self.commands.get(&key) {
            if command.persistent {
                let outcome = match (status, exit_code) {
                    (Some("declined"), _) => Outcome::Cancelled,
                    (Some("failed"), _) => Outcome::Failed,
                    (_, Some(code)) if code != 0 => Outcome::Failed,
                    (Some("completed") | None, _) => Outcome::Succeeded,
                    (Some(_), _) => Outcome::Unknown,
                };
                self.end_command(thread, item, outcome, at);
            } else {
                self.commands.remove(&key);
            }
        }
        // A close on an item of any turn: the call is over. The older open
        // call shows again when a newer one closes first.
        if let Some(run) = thread
            .and_then(|thread| self.agents.get_mut(thread))
            .and_then(|facts| facts.run.as_mut())
        {
            let before = run.operations.len();
            run.operations.retain(|(open, _)| open != item);
            if run.operations.len() != before {
                self.touch(thread);
            }
        }
        if name == "closeAgent" && status == Some("completed") {
            for child in receivers {
                self.end_run(child, None, Outcome::Cancelled, at, false);
            }
        }
    }

    /// The thread started another item: a command call still open with a
    /// process behind it has returned to the model and keeps running.
    fn another_item(&mut self, thread: Option<&ThreadId>, item: &ItemId) {
        let open: Vec<ItemId> = self
            .commands
            .iter()
            .filter(|((launcher, other), command)| {
                launcher.as_ref() == thread
                    && other != item
                    && !command.persistent
                    && command.ended.is_none()
            })
            .map(|((_, other), _)| other.clone())
            .collect();
        for other in open {
            self.promote(thread, &other);
        }
    }

    fn promote(&mut self, thread: Option<&ThreadId>, item: &ItemId) {
        let key = (thread.cloned(), item.clone());
        let Some(command) = self.commands.get_mut(&key) else {
            return;
        };
        if command.persistent {
            return;
        }
        command.persistent = true;
        self.dirty
            .insert(Key::Command(key.0.clone(), key.1.clone()));
        // Its call returned: it is no longer the launcher's operation.
        if let Some(run) = thread
            .and_then(|thread| self.agents.get_mut(thread))
            .and_then(|facts| facts.run.as_mut())
        {
            run.operations.retain(|(open, _)| open != item);
            self.touch(thread);
        }
    }

    fn background_task(
        &mut self,
        thread: Option<&ThreadId>,
        item: &ItemId,
        description: Option<&str>,
        at: Timestamp,
    ) {
        let description = description.unwrap_or(item.as_str()).to_owned();
        let key = (thread.cloned(), item.clone());
        self.commands
            .entry(key.clone())
            .or_insert_with(|| CommandFacts {
                launcher: thread.cloned(),
                item: item.clone(),
                label: cut(first_line(&description), LABEL_CHARS),
                description: cut(&description, TEXT_CHARS),
                started_at: at,
                persistent: true,
                ended: None,
            });
        self.dirty.insert(Key::Command(key.0, key.1));
    }

    fn end_command(
        &mut self,
        thread: Option<&ThreadId>,
        item: &ItemId,
        outcome: Outcome,
        at: Timestamp,
    ) {
        let key = (thread.cloned(), item.clone());
        if let Some(command) = self.commands.get_mut(&key) {
            if command.persistent && command.ended.is_none() {
                command.ended = Some(Ending {
                    outcome,
                    at,
                    settled: false,
                });
                self.dirty.insert(Key::Command(key.0, key.1));
            }
        }
    }

    /// A read-back (`thread/read`, `thread/turns/list`, `thread/resume`)
    /// naming a turn that is still running here as `interrupted` with no
    /// `completedAt`: the host lost it (a restart). Ended `unknown`, with a
    /// `lost_turn` warning.
    fn read_back(&mut self, lost: &[TurnId], sequence: u64, at: Timestamp) {
        for turn_id in lost {
            let turn = turn_id.as_str();
            let owner = self
                .agents
                .iter()
                .find(|(_, facts)| {
                    facts
                        .run
                        .as_ref()
                        .is_some_and(|run| run.live() && run.id == turn)
                })
                .map(|(thread, _)| thread.clone());
            let Some(thread) = owner else {
                continue;
            };
            let child = self.agents.get(&thread).is_some_and(|facts| !facts.root);
            self.end_run(
                &thread,
                Some(turn_id),
                Outcome::Unknown,
                at,
                false,
            );
            if child {
                self.warnings.push(Warning {
                    code: "lost_turn".to_owned(),
                    severity: Severity::Warning,
                    message: format!(
                        "turn {turn} of {thread} never ended: the host lost it (read back as interrupted with no completion time)"
                    ),
                    event_sequence: Some(sequence),
                    thread_id: Some(thread),
                });
            }
        }
    }

    fn derive_agent(&self, thread: &ThreadId, facts: &AgentFacts) -> Option<ChildWorkRecord> {
        if facts.root || !facts.announced || facts.trimmed {
            return None;
        }
        let run = facts.run.as_ref()?;
        Some(ChildWorkRecord {
            child_work_id: ChildWorkId::agent(thread),
            kind: ChildWorkKind::Agent,
            provider: self.provider,
            provider_id: thread.as_str().to_owned(),
            parent_child_work_id: self.owner_record(facts.parent.as_ref()),
            label: facts
                .label
                .clone()
                .unwrap_or_else(|| thread.as_str().to_owned()),
            description: facts.description.clone().unwrap_or_default(),
            state: match (&run.ended, run.waiting_on) {
                (Some(_), _) => ChildWorkState::Ended,
                (None, Some(_)) => ChildWorkState::Waiting,
                (None, None) => ChildWorkState::Working,
            },
            waiting_on: run.waiting_on,
            generation: run.generation,
            run_id: run.id.clone(),
            operation: run
                .operations
                .last()
                .map(|(_, operation)| operation.clone()),
            last_message: run.last_message.clone(),
            total_tokens: run.total_tokens,
            cost: facts.cost.and_then(|priced| priced.cost),
            cost_status: facts.cost.map(|priced| priced.status),
            outcome: run.ended.map(|ending| ending.outcome),
            started_at: run.started_at,
            updated_at: run.started_at,
            ended_at: run.ended.map(|ending| ending.at),
            previous_invocations: facts.previous.clone(),
        })
    }

    fn derive_command(&self, command: &CommandFacts) -> Option<ChildWorkRecord> {
        if !command.persistent {
            return None;
        }
        let root = command
            .launcher
            .as_ref()
            .and_then(|launcher| self.agents.get(launcher))
            .is_some_and(|facts| facts.root);
        Some(ChildWorkRecord {
            child_work_id: ChildWorkId::command(command.launcher.as_ref(), &command.item),
            kind: ChildWorkKind::Command,
            provider: self.provider,
            provider_id: command.item.as_str().to_owned(),
            parent_child_work_id: if root {
                None
            } else {
                self.owner_record(command.launcher.as_ref())
            },
            label: command.label.clone(),
            description: command.description.clone(),
            state: if command.ended.is_some() {
                ChildWorkState::Ended
            } else {
                ChildWorkState::Working
            },
            waiting_on: None,
            generation: 1,
            run_id: command.item.as_str().to_owned(),
            operation: None,
            last_message: None,
            total_tokens: None,
            cost: None,
            cost_status: None,
            outcome: command.ended.map(|ending| ending.outcome),
            started_at: command.started_at,
            updated_at: command.started_at,
            ended_at: command.ended.map(|ending| ending.at),
            previous_invocations: Vec::new(),
        })
    }

    /// The record of the child a thread is, when it is one.
    fn owner_record(&self, thread: Option<&ThreadId>) -> Option<ChildWorkId> {
        let thread = thread?;
        let facts = self.agents.get(thread)?;
        (facts.announced && !facts.root).then(|| ChildWorkId::agent(thread))
    }

    /// Re-derives every record marked dirty; publishes the ones that moved.
    fn publish(&mut self, at: Timestamp) -> Vec<ChildWorkChange> {
        let mut changes = Vec::new();
        for key in std::mem::take(&mut self.dirty) {
            let (derived, settled) = match &key {
                Key::Agent(thread) => match self.agents.get(thread) {
                    Some(facts) => (
                        self.derive_agent(thread, facts),
                        facts
                            .run
                            .as_ref()
                            .and_then(|run| run.ended)
                            .is_some_and(|ending| ending.settled),
                    ),
                    None => (None, false),
                },
                Key::Command(launcher, item) => {
                    match self.commands.get(&(launcher.clone(), item.clone())) {
                        Some(command) => (
                            self.derive_command(command),
                            command.ended.is_some_and(|ending| ending.settled),
                        ),
                        None => (None, false),
                    }
                }
            };
            let Some(mut record) = derived else {
                continue;
            };
            let id = record.child_work_id.clone();
            let change = match self.published.get(&id) {
                None => ChangeKind::Admitted,
                Some(before) => {
                    record.updated_at = before.updated_at;
                    if *before == record {
                        // Rule 4: an unchanged state emits nothing.
                        continue;
                    }
                    match (before.state, record.state) {
                        (ChildWorkState::Ended, ChildWorkState::Ended) => ChangeKind::Updated,
                        (_, ChildWorkState::Ended) if settled => ChangeKind::Settled,
                        (_, ChildWorkState::Ended) => ChangeKind::Ended,
                        _ => ChangeKind::Updated,
                    }
                }
            };
            record.updated_at = at;
            let was_ended = self
                .published
                .get(&id)
                .is_some_and(|before| before.state == ChildWorkState::Ended);
            if change == ChangeKind::Admitted {
                self.order.push(id.clone());
            }
            match (was_ended, record.state == ChildWorkState::Ended) {
                (false, true) => self.ended_order.push_back(id.clone()),
                (true, false) => self.ended_order.retain(|ended| *ended != id),
                _ => {}
            }
            self.published.insert(id, record.clone());
            changes.push(ChildWorkChange { change, record });
        }
        self.trim();
        changes
    }

    /// Rule 7: ended records beyond the bound go, oldest ending first.
    fn trim(&mut self) {
        while self.ended_order.len() > self.bound {
            let Some(id) = self.ended_order.pop_front() else {
                break;
            };
            self.published.remove(&id);
            self.order.retain(|kept| *kept != id);
            if let Some(thread) = id.as_str().strip_prefix("agent:") {
                if let Some(facts) = self.agents.get_mut(&ThreadId::from(thread)) {
                    facts.trimmed = true;
                }
            } else {
                self.commands.retain(|(launcher, item), _| {
                    ChildWorkId::command(launcher.as_ref(), item) != id
                });
            }
        }
    }
}

/// Folds a whole log: every envelope in order, then the session end when
/// `session_ended` (see [`ChildWork::end_session`]), at the last envelope's
/// time. Returns the reducer and every change in order.
pub fn fold<'a>(
    envelopes: impl IntoIterator<Item = &'a Envelope>,
    session_ended: bool,
) -> (ChildWork, Vec<ChildWorkChange>) {
    let mut reducer = ChildWork::new();
    let mut changes = Vec::new();
    let mut last = None;
    for envelope in envelopes {
        changes.extend(reducer.apply(envelope));
        last = Some(envelope.timestamp);
    }
    if session_ended {
        if let Some(at) = last {
            changes.extend(reducer.end_session(at));
        }
    }
    (reducer, changes)
}

/// A Claude background task's status → outcome.
fn task_outcome(status: Option<&str>) -> Outcome {
    match status {
        Some("completed") => Outcome::Succeeded,
        Some("failed") => Outcome::Failed,
        Some("stopped" | "killed" | "cancelled") => Outcome::Cancelled,
        _ => Outcome::Unknown,
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// Cuts a text to `chars` characters, marking the cut.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_owned(),
    }
}
