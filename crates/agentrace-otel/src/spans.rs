//! A run as GenAI spans: one `invoke_agent {label}` span per agent (nested
//! under the spawn that started it) and one `execute_tool {name}` span per
//! tool call (a spawn is an `execute_tool` whose transfer target is the
//! child). Pure: envelopes (final actors applied) and the run view in, span
//! values out; no I/O, no clock, no random ids.
//!
//! Attributes follow the OpenTelemetry GenAI conventions
//! (`gen_ai.operation.name`, `gen_ai.conversation.id`, `gen_ai.agent.id`,
//! `gen_ai.agent.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
//! `gen_ai.usage.*`, `gen_ai.tool.*`); what the conventions have no name for
//! is ours under `agentrace.*` (`agentrace.actor.confidence`,
//! `agentrace.warning.*`, `agentrace.transfer_target.*`, …). The list may
//! expand over time.

use std::collections::{BTreeMap, HashMap};

use agentrace_core::model::{
    Actor, AgentStatus, Confidence, Envelope, Event, EventBody, Provider, Role, ThreadId,
    Timestamp, TokenUsage, Warning,
};
use agentrace_core::state::{AgentNode, RunView};

use crate::ids::{SpanId, TraceId, TraceParent};

/// Longest agent text (prompts, tool input and output, final messages) put
/// on a span, in bytes; backends cap attribute sizes and a trace is not a
/// transcript.
pub const MAX_TEXT_BYTES: usize = 4096;

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// A string.
    String(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A list of strings.
    StringArray(Vec<String>),
}

/// A key and its value.
pub type Attribute = (String, AttributeValue);

/// What kind of span, in GenAI terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `invoke_agent`: one agent's run.
    InvokeAgent,
    /// `execute_tool`: one tool call (spawns included).
    ExecuteTool,
}

/// A span's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanStatus {
    /// Nothing went wrong that we know of.
    Unset,
    /// Failed or interrupted, with why.
    Error(String),
}

/// A timed event on a span (warnings).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    /// Event name.
    pub name: String,
    /// When, Unix nanoseconds.
    pub time_unix_nano: u64,
    /// Its attributes.
    pub attributes: Vec<Attribute>,
}

/// One span, ready to encode.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    /// Its id.
    pub span_id: SpanId,
    /// The enclosing span, none for a top-level agent.
    pub parent_span_id: Option<SpanId>,
    /// `invoke_agent {label}` or `execute_tool {name}`.
    pub name: String,
    /// What it stands for.
    pub operation: Operation,
    /// Start, Unix nanoseconds.
    pub start_time_unix_nano: u64,
    /// End, Unix nanoseconds (never before the start).
    pub end_time_unix_nano: u64,
    /// Attributes, in a stable order.
    pub attributes: Vec<Attribute>,
    /// Warnings raised about it.
    pub events: Vec<SpanEvent>,
    /// Outcome.
    pub status: SpanStatus,
}

/// The spans of one run: one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTrace {
    /// The trace id (from the run id).
    pub trace_id: TraceId,
    /// Agents first (tree order), then tools in call order.
    pub spans: Vec<SpanRecord>,
}

/// A tool call seen in the log.
#[derive(Debug, Clone)]
struct ToolCall {
    thread: ThreadId,
    key: String,
    kind: String,
    name: String,
    item_id: Option<String>,
    input: String,
    output: String,
    status: Option<String>,
    exit_code: Option<i64>,
    started_at: Timestamp,
    ended_at: Option<Timestamp>,
    confidence: Confidence,
    /// The turn it was made in, when named.
    turn: Option<String>,
}

/// One run (turn) of a helper: a follow-up starts another (SPEC §9: one
/// `invoke_agent` span per agent run).
#[derive(Debug, Clone)]
struct AgentRun {
    turn: String,
    started_at: Timestamp,
    ended_at: Option<Timestamp>,
    /// The thread's running token total at its last usage report in it.
    total: Option<TokenUsage>,
}

/// Which run of its agent a span stands for, when the agent ran more
/// than once.
#[derive(Debug, Clone, Copy)]
struct Generation {
    number: u32,
    start: Timestamp,
    end: Timestamp,
    tokens: Option<TokenUsage>,
}

/// A spawn link seen in the log.
#[derive(Debug, Clone)]
struct Spawn {
    parent: ThreadId,
    child: ThreadId,
    via: String,
    prompt: Option<String>,
    at: Timestamp,
}

/// What the log says about one thread.
#[derive(Debug, Clone)]
struct ThreadSeen {
    actor: Actor,
    first_at: Timestamp,
    last_at: Timestamp,
}

/// Builds a run's trace from its envelopes, one at a time (memory grows with
/// agents and tool calls, not with events).
#[derive(Debug, Clone)]
pub struct TraceBuilder {
    run_id: String,
    provider: Provider,
    threads: HashMap<ThreadId, ThreadSeen>,
    tools: Vec<ToolCall>,
    open_tools: HashMap<(ThreadId, String), usize>,
    spawns: Vec<Spawn>,
    warning_times: HashMap<u64, Timestamp>,
    /// Each helper's runs, in order.
    runs: HashMap<ThreadId, Vec<AgentRun>>,
    /// The trace context to join, when given.
    parent: Option<TraceParent>,
}

impl TraceBuilder {
    /// A builder for the run `run_id`.
    pub fn new(run_id: &str) -> Self {
        Self {
            run_id: run_id.to_owned(),
            provider: Provider::Unknown,
            threads: HashMap::new(),
            tools: Vec::new(),
            open_tools: HashMap::new(),
            spawns: Vec::new(),
            warning_times: HashMap::new(),
            runs: HashMap::new(),
            parent: None,
        }
    }

    /// The same builder joining `parent`'s trace: the trace id is its, and
    /// each top-level agent span is a child of its span.
    pub fn with_parent(mut self, parent: Option<TraceParent>) -> Self {
        self.parent = parent;
        self
    }

    /// Folds one envelope in; its actor must be final (corrections applied
    /// with `FinalActors`).
    pub fn observe(&mut self, envelope: &Envelope) {
        let at = envelope.timestamp;
        let thread = envelope.actor.thread_id.clone();
        if let Some(thread) = &thread {
            let seen = self
                .threads
                .entry(thread.clone())
                .or_insert_with(|| ThreadSeen {
                    actor: envelope.actor.clone(),
                    first_at: at,
                    last_at: at,
                });
            seen.actor = envelope.actor.clone();
            seen.first_at = seen.first_at.min(at);
            seen.last_at = seen.last_at.max(at);
        }
        let EventBody::Known(event) = &envelope.event else {
            return;
        };
        match event {
            Event::RunStarted { provider, .. } => self.provider = *provider,
            Event::ToolUse {
                tool_kind,
                name,
                input,
                item_id,
                turn_id,
                ..
            } => {
                let Some(thread) = thread else { return };
                let key = item_id
                    .as_ref()
                    .map(|item| format!("item:{item}"))
                    .unwrap_or_else(|| format!("sequence:{}", envelope.sequence));
                if self.open_tools.contains_key(&(thread.clone(), key.clone())) {
                    return;
                }
                self.open_tools
                    .insert((thread.clone(), key.clone()), self.tools.len());
                self.tools.push(ToolCall {
                    thread,
                    key,
                    kind: tool_kind.clone(),
                    name: name.clone(),
                    item_id: item_id.as_ref().map(|item| item.0.clone()),
                    input: bounded(input),
                    output: String::new(),
                    status: None,
                    exit_code: None,
                    started_at: at,
                    ended_at: None,
                    confidence: envelope.actor.confidence,
                    turn: turn_id.as_ref().map(|turn| turn.as_str().to_owned()),
                });
            }
            Event::ToolResult {
                tool_kind,
                name,
                status,
                exit_code,
                output,
                item_id,
                turn_id,
                ..
            } => {
                let Some(thread) = thread else { return };
                let key = item_id
                    .as_ref()
                    .map(|item| format!("item:{item}"))
                    .unwrap_or_else(|| format!("sequence:{}", envelope.sequence));
                let index = match self.open_tools.get(&(thread.clone(), key.clone())) {
                    Some(index) => *index,
                    None => {
                        // A result whose call we never saw still is a call.
                        self.open_tools
                            .insert((thread.clone(), key.clone()), self.tools.len());
                        self.tools.push(ToolCall {
                            thread,
                            key,
                            kind: tool_kind.clone(),
                            name: name.clone(),
                            item_id: item_id.as_ref().map(|item| item.0.clone()),
                            input: String::new(),
                            output: String::new(),
                            status: None,
                            exit_code: None,
                            started_at: at,
                            ended_at: None,
                            confidence: envelope.actor.confidence,
                            turn: turn_id.as_ref().map(|turn| turn.as_str().to_owned()),
                        });
                        self.tools.len() - 1
                    }
                };
                if let Some(call) = self.tools.get_mut(index) {
                    call.output = bounded(output);
                    call.status = status.clone();
                    call.exit_code = *exit_code;
                    call.ended_at = Some(at);
                }
            }
            Event::AgentSpawned {
                parent_thread_id,
                child_thread_id,
                prompt,
                via,
                ..
            } if self
                .spawns
                .iter()
                .all(|spawn| &spawn.child != child_thread_id) =>
            {
                self.spawns.push(Spawn {
                    parent: parent_thread_id.clone(),
                    child: child_thread_id.clone(),
                    via: via.clone(),
                    prompt: prompt.clone(),
                    at,
                });
            }
            Event::Warning { .. } => {
                self.warning_times.insert(envelope.sequence, at);
            }
            Event::TurnStarted { turn_id, .. } if envelope.actor.role == Role::Helper => {
                let Some(thread) = thread else { return };
                let runs = self.runs.entry(thread).or_default();
                if runs.iter().all(|run| run.turn != turn_id.as_str()) {
                    runs.push(AgentRun {
                        turn: turn_id.as_str().to_owned(),
                        started_at: at,
                        ended_at: None,
                        total: None,
                    });
                }
            }
            Event::TurnCompleted { turn_id, .. } => {
                let run = thread
                    .and_then(|thread| self.runs.get_mut(&thread))
                    .and_then(|runs| runs.iter_mut().find(|run| run.turn == turn_id.as_str()));
                if let Some(run) = run {
                    run.ended_at.get_or_insert(at);
                }
            }
            Event::Usage { turn_id, total, .. } => {
                let Some(runs) = thread.and_then(|thread| self.runs.get_mut(&thread)) else {
                    return;
                };
                let run = match turn_id {
                    Some(turn) => runs.iter_mut().find(|run| run.turn == turn.as_str()),
                    None => runs.last_mut(),
                };
                if let Some(run) = run {
                    run.total = Some(*total);
                }
            }
            _ => {}
        }
    }

    /// The trace: the view gives the tree, the tokens and the warnings.
    pub fn finish(self, view: &RunView) -> RunTrace {
        let trace_id = self
            .parent
            .map(|parent| parent.trace_id)
            .unwrap_or_else(|| TraceId::for_run(&self.run_id));
        let joined = self.parent.map(|parent| parent.span_id);
        let spawn_tools = self.match_spawns();
        let mut spans = Vec::new();
        let mut agent_spans: HashMap<ThreadId, SpanId> = HashMap::new();
        let provider = if self.provider == Provider::Unknown {
            view.run.provider
        } else {
            self.provider
        };
        // Spawns give each child its parent span: the spawning tool call when
        // one matched, else a span of the spawn event itself.
        let mut spawn_span_of_child: HashMap<ThreadId, SpanId> = HashMap::new();
        for (spawn_index, spawn) in self.spawns.iter().enumerate() {
            let span = match spawn_tools.get(&spawn_index) {
                Some(tool_index) => self.tool_span_id(&self.tools[*tool_index]),
                None => SpanId::for_parts(&self.run_id, &["spawn", spawn.child.as_str()]),
            };
            spawn_span_of_child.insert(spawn.child.clone(), span);
        }
        let tool_of_spawn: HashMap<usize, usize> =
            spawn_tools.iter().map(|(s, t)| (*t, *s)).collect();
        // The spawner's calls that started a follow-up run are taken once.
        let mut taken: Vec<bool> = (0..self.tools.len())
            .map(|index| tool_of_spawn.contains_key(&index))
            .collect();
        // A helper that ran more than once: each run's span, by its turn.
        let mut run_spans: HashMap<ThreadId, Vec<(String, Timestamp, SpanId)>> = HashMap::new();
        let mut stack: Vec<(&AgentNode, Option<SpanId>)> = view
            .agents
            .iter()
            .rev()
            .map(|node| (node, joined))
            .collect();
        while let Some((node, parent_agent)) = stack.pop() {
            let span_id = SpanId::for_parts(&self.run_id, &["agent", node.thread_id.as_str()]);
            agent_spans.insert(node.thread_id.clone(), span_id);
            let parent = spawn_span_of_child
                .get(&node.thread_id)
                .copied()
                .or(parent_agent);
            let runs = self
                .runs
                .get(&node.thread_id)
                .filter(|runs| runs.len() > 1 && node.role == Role::Helper);
            match runs {
                None => spans.push(self.agent_span(view, node, provider, span_id, parent, None)),
                Some(runs) => {
                    let mut previous_total: Option<TokenUsage> = None;
                    for (at, run) in runs.iter().enumerate() {
                        let number = u32::try_from(at + 1).unwrap_or(u32::MAX);
                        let (id, run_parent) = if at == 0 {
                            (span_id, parent)
                        } else {
                            let id = SpanId::for_parts(
                                &self.run_id,
                                &["agent", node.thread_id.as_str(), "run", &run.turn],
                            );
                            let by_call = node.parent_thread_id.as_ref().and_then(|spawner| {
                                self.follow_up_call(spawner, run.started_at, &mut taken)
                            });
                            let fallback = node
                                .parent_thread_id
                                .as_ref()
                                .and_then(|spawner| agent_spans.get(spawner).copied())
                                .or(parent_agent);
                            (id, by_call.or(fallback))
                        };
                        let end = run
                            .ended_at
                            .or_else(|| runs.get(at + 1).map(|next| next.started_at))
                            .or_else(|| self.threads.get(&node.thread_id).map(|seen| seen.last_at))
                            .unwrap_or(run.started_at);
                        let tokens = run.total.map(|total| total.minus(&previous_total.unwrap_or_default()));
                        if run.total.is_some() {
                            previous_total = run.total;
                        }
                        let generation = Generation {
                            number,
                            start: run.started_at,
                            end,
                            tokens,
                        };
                        run_spans.entry(node.thread_id.clone()).or_default().push((
                            run.turn.clone(),
                            run.started_at,
                            id,
                        ));
                        spans.push(self.agent_span(view, node, provider, id, run_parent, Some(generation)));
                    }
                }
            }
            for child in node.children.iter().rev() {
                stack.push((child, Some(span_id)));
            }
        }
        for (index, call) in self.tools.iter().enumerate() {
            let in_run = run_spans.get(&call.thread).and_then(|runs| {
                runs.iter()
                    .find(|(turn, _, _)| call.turn.as_deref() == Some(turn.as_str()))
                    .or_else(|| runs.iter().rfind(|(_, start, _)| *start <= call.started_at))
                    .map(|(_, _, id)| *id)
            });
            let Some(parent) = in_run.or_else(|| agent_spans.get(&call.thread).copied()) else {
                continue;
            };
            let spawn = tool_of_spawn.get(&index).map(|s| &self.spawns[*s]);
            spans.push(self.tool_span(view, call, parent, spawn));
        }
        for (spawn_index, spawn) in self.spawns.iter().enumerate() {
            if spawn_tools.contains_key(&spawn_index) {
                continue;
            }
            let Some(parent) = agent_spans.get(&spawn.parent).copied() else {
                continue;
            };
            spans.push(self.spawn_span(view, spawn, parent));
        }
        attach_warnings(&mut spans, view, &agent_spans, &self.warning_times);
        RunTrace { trace_id, spans }
    }

    fn tool_span_id(&self, call: &ToolCall) -> SpanId {
        SpanId::for_parts(&self.run_id, &["tool", call.thread.as_str(), &call.key])
    }

    /// The span of the spawner's call that started a follow-up run at
    /// `at`: its latest agent tool call (`send_input`, `followup_task`,
    /// `SendMessage`, …) begun by then and not taken by a spawn or an
    /// earlier run.
    fn follow_up_call(&self, spawner: &ThreadId, at: Timestamp, taken: &mut [bool]) -> Option<SpanId> {
        let (index, call) = self.tools.iter().enumerate().rfind(|(index, call)| {
            !taken[*index] && &call.thread == spawner && call.kind == "agent" && call.started_at <= at
        })?;
        taken[index] = true;
        Some(self.tool_span_id(call))
    }

    /// Which tool call made each spawn (spawn index → tool index): an agent
    /// tool of the parent named by the child's id, or returning it, or given
    /// the child's prompt; else the parent's latest unmatched spawning tool
    /// before the link.
    fn match_spawns(&self) -> BTreeMap<usize, usize> {
        let mut matched: BTreeMap<usize, usize> = BTreeMap::new();
        let mut taken: Vec<bool> = vec![false; self.tools.len()];
        for (spawn_index, spawn) in self.spawns.iter().enumerate() {
            let child = spawn.child.as_str();
            let candidates = || {
                self.tools.iter().enumerate().filter(|(index, call)| {
                    !taken[*index] && call.thread == spawn.parent && call.kind == "agent"
                })
            };
            let found = candidates()
                .find(|(_, call)| call.item_id.as_deref() == Some(child))
                .or_else(|| candidates().find(|(_, call)| call.output.contains(child)))
                .or_else(|| {
                    spawn
                        .prompt
                        .as_deref()
                        .filter(|p| !p.is_empty())
                        .and_then(|prompt| {
                            candidates().find(|(_, call)| call.input == bounded(prompt))
                        })
                })
                .or_else(|| {
                    candidates()
                        .rfind(|(_, call)| is_spawn_tool(&call.name) && call.started_at <= spawn.at)
                })
                .map(|(index, _)| index);
            if let Some(index) = found {
                taken[index] = true;
                matched.insert(spawn_index, index);
            }
        }
        matched
    }

    fn agent_span(
        &self,
        view: &RunView,
        node: &AgentNode,
        provider: Provider,
        span_id: SpanId,
        parent: Option<SpanId>,
        generation: Option<Generation>,
    ) -> SpanRecord {
        let seen = self.threads.get(&node.thread_id);
        let spawned_at = self
            .spawns
            .iter()
            .find(|spawn| spawn.child == node.thread_id)
            .map(|spawn| spawn.at);
        let start = seen
            .map(|seen| seen.first_at)
            .or(spawned_at)
            .or(view.run.started_at)
            .unwrap_or_default();
        let mut end = seen.map(|seen| seen.last_at).unwrap_or(start);
        if view.run.root_thread_id.as_ref() == Some(&node.thread_id) {
            if let Some(ended) = view.run.ended_at {
                end = end.max(ended);
            }
        }
        // One run of several: its own times and tokens (the first run
        // starts when the agent does).
        let (start, end, tokens) = match generation {
            Some(generation) if generation.number == 1 => (start, generation.end, generation.tokens),
            Some(generation) => (generation.start, generation.end, generation.tokens),
            None => (start, end, node.tokens),
        };
        let confidence = seen
            .map(|seen| seen.actor.confidence)
            .unwrap_or(Confidence::Unknown);
        let mut attributes = vec![
            string("gen_ai.operation.name", "invoke_agent"),
            string("gen_ai.conversation.id", &self.run_id),
            string("gen_ai.agent.id", node.thread_id.as_str()),
            string("gen_ai.agent.name", &node.label),
        ];
        if let Some(name) = provider_name(provider) {
            attributes.push(string("gen_ai.provider.name", name));
        }
        if let Some(model) = &node.model {
            attributes.push(string("gen_ai.request.model", model));
        }
        if let Some(tokens) = &tokens {
            attributes.extend(usage_attributes(tokens));
        }
        attributes.push(string("openinference.span.kind", "AGENT"));
        attributes.push(string("agentrace.run.id", &self.run_id));
        attributes.push(string("agentrace.agent.role", node.role.as_str()));
        attributes.push(string("agentrace.agent.status", node.status.as_str()));
        attributes.push(string("agentrace.actor.confidence", confidence.as_str()));
        if let Some(reason) = seen.and_then(|seen| seen.actor.reason.as_deref()) {
            attributes.push(string("agentrace.actor.reason", reason));
        }
        if let Some(depth) = node.depth {
            attributes.push((
                "agentrace.agent.depth".to_owned(),
                AttributeValue::Int(i64::from(depth)),
            ));
        }
        if let Some(parent) = &node.parent_thread_id {
            attributes.push(string("agentrace.agent.parent_id", parent.as_str()));
        }
        if let Some(generation) = generation {
            attributes.push(int("agentrace.agent.generation", u64::from(generation.number)));
        }
        attributes.push(int("agentrace.agent.event_count", node.event_count));
        attributes.push(int("agentrace.agent.tool_count", node.tool_count));
        if let Some(prompt) = &node.prompt {
            attributes.push(string("agentrace.agent.prompt", &bounded(prompt)));
        }
        if let Some(message) = &node.final_message {
            attributes.push(string("agentrace.agent.final_message", &bounded(message)));
        }
        let is_primary_root = view.run.root_thread_id.as_ref() == Some(&node.thread_id);
        if is_primary_root {
            attributes.push(string(
                "agentrace.run.status",
                &format!("{:?}", view.run.status).to_lowercase(),
            ));
            attributes.push(int(
                "agentrace.run.unknown_actor_events",
                view.run.counts.unknown_actor,
            ));
            attributes.push(int(
                "agentrace.run.undecoded_lines",
                view.run.counts.undecoded_lines,
            ));
            attributes.push(int(
                "agentrace.run.unknown_frames",
                view.run.counts.unknown_frames,
            ));
            if let Some(source) = &view.run.result_source {
                if let Some(thread) = &source.thread_id {
                    attributes.push(string(
                        "agentrace.run.result_source.agent.id",
                        thread.as_str(),
                    ));
                }
                if let Some(role) = source.role {
                    attributes.push(string("agentrace.run.result_source.role", role.as_str()));
                }
            }
        }
        let status = match node.status {
            AgentStatus::Failed => SpanStatus::Error(
                node.final_message
                    .as_deref()
                    .map(bounded)
                    .unwrap_or_else(|| "the agent's turn failed".to_owned()),
            ),
            AgentStatus::Interrupted => SpanStatus::Error("interrupted".to_owned()),
            AgentStatus::Pending | AgentStatus::Running | AgentStatus::Completed | AgentStatus::Unknown => {
                SpanStatus::Unset
            }
        };
        SpanRecord {
            span_id,
            parent_span_id: parent,
            name: format!("invoke_agent {}", node.label),
            operation: Operation::InvokeAgent,
            start_time_unix_nano: nanos(start),
            end_time_unix_nano: nanos(end.max(start)),
            attributes,
            events: Vec::new(),
            status,
        }
    }

    fn tool_span(
        &self,
        view: &RunView,
        call: &ToolCall,
        parent: SpanId,
        spawn: Option<&Spawn>,
    ) -> SpanRecord {
        let start = call.started_at;
        let end = call.ended_at.unwrap_or(start).max(start);
        let mut attributes = vec![
            string("gen_ai.operation.name", "execute_tool"),
            string("gen_ai.conversation.id", &self.run_id),
            string("gen_ai.tool.name", &call.name),
            string(
                "gen_ai.tool.type",
                if call.kind == "mcp" {
                    "extension"
                } else {
                    "function"
                },
            ),
        ];
        if let Some(item) = &call.item_id {
            attributes.push(string("gen_ai.tool.call.id", item));
        }
        if !call.input.is_empty() {
            attributes.push(string("gen_ai.tool.call.arguments", &call.input));
        }
        if !call.output.is_empty() {
            attributes.push(string("gen_ai.tool.call.result", &call.output));
        }
        attributes.push(string("gen_ai.agent.id", call.thread.as_str()));
        if let Some(label) = self.agent_label(view, &call.thread) {
            attributes.push(string("gen_ai.agent.name", &label));
        }
        attributes.push(string("openinference.span.kind", "TOOL"));
        attributes.push(string("agentrace.run.id", &self.run_id));
        attributes.push(string("agentrace.tool.kind", &call.kind));
        if let Some(status) = &call.status {
            attributes.push(string("agentrace.tool.status", status));
        }
        if let Some(code) = call.exit_code {
            attributes.push((
                "agentrace.tool.exit_code".to_owned(),
                AttributeValue::Int(code),
            ));
        }
        attributes.push(string(
            "agentrace.actor.confidence",
            call.confidence.as_str(),
        ));
        if let Some(spawn) = spawn {
            attributes.extend(self.transfer_attributes(view, spawn));
        }
        let status = match call.status.as_deref() {
            Some("failed" | "declined" | "error") => SpanStatus::Error(format!(
                "{} {}",
                call.name,
                call.status.as_deref().unwrap_or_default()
            )),
            _ => SpanStatus::Unset,
        };
        SpanRecord {
            span_id: self.tool_span_id(call),
            parent_span_id: Some(parent),
            name: format!("execute_tool {}", call.name),
            operation: Operation::ExecuteTool,
            start_time_unix_nano: nanos(start),
            end_time_unix_nano: nanos(end),
            attributes,
            events: Vec::new(),
            status,
        }
    }

    fn spawn_span(&self, view: &RunView, spawn: &Spawn, parent: SpanId) -> SpanRecord {
        let mut attributes = vec![
            string("gen_ai.operation.name", "execute_tool"),
            string("gen_ai.conversation.id", &self.run_id),
            string("gen_ai.tool.name", &spawn.via),
            string("gen_ai.tool.type", "function"),
            string("gen_ai.agent.id", spawn.parent.as_str()),
        ];
        if let Some(label) = self.agent_label(view, &spawn.parent) {
            attributes.push(string("gen_ai.agent.name", &label));
        }
        attributes.push(string("openinference.span.kind", "TOOL"));
        attributes.push(string("agentrace.run.id", &self.run_id));
        attributes.push(string("agentrace.tool.kind", "agent"));
        let confidence = self
            .threads
            .get(&spawn.parent)
            .map(|seen| seen.actor.confidence)
            .unwrap_or(Confidence::Unknown);
        attributes.push(string("agentrace.actor.confidence", confidence.as_str()));
        attributes.extend(self.transfer_attributes(view, spawn));
        SpanRecord {
            span_id: SpanId::for_parts(&self.run_id, &["spawn", spawn.child.as_str()]),
            parent_span_id: Some(parent),
            name: format!("execute_tool {}", spawn.via),
            operation: Operation::ExecuteTool,
            start_time_unix_nano: nanos(spawn.at),
            end_time_unix_nano: nanos(spawn.at),
            attributes,
            events: Vec::new(),
            status: SpanStatus::Unset,
        }
    }

    fn transfer_attributes(&self, view: &RunView, spawn: &Spawn) -> Vec<Attribute> {
        let mut attributes = vec![string(
            "agentrace.transfer_target.agent.id",
            spawn.child.as_str(),
        )];
        if let Some(label) = self.agent_label(view, &spawn.child) {
            attributes.push(string("agentrace.transfer_target.agent.name", &label));
        }
        attributes.push(string("agentrace.spawn.via", &spawn.via));
        attributes
    }

    fn agent_label(&self, view: &RunView, thread: &ThreadId) -> Option<String> {
        find_node(&view.agents, thread)
            .map(|node| node.label.clone())
            .or_else(|| {
                self.threads
                    .get(thread)
                    .map(|seen| seen.actor.label.clone())
            })
    }
}

/// The trace of a run from its envelopes (final actors applied) and view.
pub fn run_trace<'a>(
    run_id: &str,
    envelopes: impl IntoIterator<Item = &'a Envelope>,
    view: &RunView,
) -> RunTrace {
    let mut builder = TraceBuilder::new(run_id);
    for envelope in envelopes {
        builder.observe(envelope);
    }
    builder.finish(view)
}

/// Adds each warning as a span event, and `agentrace.warning.count` /
/// `.codes` attributes, to the agent it names (the primary root when it
/// names none).
fn attach_warnings(
    spans: &mut [SpanRecord],
    view: &RunView,
    agent_spans: &HashMap<ThreadId, SpanId>,
    warning_times: &HashMap<u64, Timestamp>,
) {
    let fallback = view
        .run
        .root_thread_id
        .as_ref()
        .and_then(|root| agent_spans.get(root))
        .copied()
        .or_else(|| spans.first().map(|span| span.span_id));
    let mut by_span: BTreeMap<SpanId, Vec<&Warning>> = BTreeMap::new();
    for warning in &view.warnings {
        let target = warning
            .thread_id
            .as_ref()
            .and_then(|thread| agent_spans.get(thread))
            .copied()
            .or(fallback);
        if let Some(target) = target {
            by_span.entry(target).or_default().push(warning);
        }
    }
    for span in spans.iter_mut() {
        let Some(warnings) = by_span.get(&span.span_id) else {
            continue;
        };
        span.attributes
            .push(int("agentrace.warning.count", warnings.len() as u64));
        span.attributes.push((
            "agentrace.warning.codes".to_owned(),
            AttributeValue::StringArray(warnings.iter().map(|w| w.code.clone()).collect()),
        ));
        for warning in warnings {
            let time = warning
                .event_sequence
                .and_then(|sequence| warning_times.get(&sequence))
                .map(|at| nanos(*at))
                .unwrap_or(span.start_time_unix_nano);
            let mut attributes = vec![
                string("agentrace.warning.code", &warning.code),
                string(
                    "agentrace.warning.severity",
                    &format!("{:?}", warning.severity).to_lowercase(),
                ),
                string("agentrace.warning.message", &bounded(&warning.message)),
            ];
            if let Some(sequence) = warning.event_sequence {
                attributes.push(int("agentrace.warning.event_sequence", sequence));
            }
            span.events.push(SpanEvent {
                name: "agentrace.warning".to_owned(),
                time_unix_nano: time,
                attributes,
            });
        }
    }
}

fn find_node<'a>(nodes: &'a [AgentNode], thread: &ThreadId) -> Option<&'a AgentNode> {
    nodes.iter().find_map(|node| {
        if &node.thread_id == thread {
            Some(node)
        } else {
            find_node(&node.children, thread)
        }
    })
}

/// Tool names that start a subagent (Codex `spawnAgent`, Claude `Task` / `Agent`).
fn is_spawn_tool(name: &str) -> bool {
    name.to_ascii_lowercase().contains("spawn") || name == "Task" || name == "Agent"
}

fn usage_attributes(tokens: &TokenUsage) -> Vec<Attribute> {
    vec![
        int("gen_ai.usage.input_tokens", tokens.input_tokens),
        int("gen_ai.usage.output_tokens", tokens.output_tokens),
        int(
            "gen_ai.usage.cache_read.input_tokens",
            tokens.cached_input_tokens,
        ),
        int(
            "gen_ai.usage.cache_creation.input_tokens",
            tokens.cache_creation_input_tokens,
        ),
        int(
            "agentrace.usage.reasoning_output_tokens",
            tokens.reasoning_output_tokens,
        ),
        int("agentrace.usage.total_tokens", tokens.total_tokens),
    ]
}

/// The GenAI `gen_ai.provider.name` of a provider.
fn provider_name(provider: Provider) -> Option<&'static str> {
    match provider {
        Provider::Codex => Some("openai"),
        Provider::Claude => Some("anthropic"),
        Provider::Unknown => None,
    }
}

fn string(key: &str, value: &str) -> Attribute {
    (key.to_owned(), AttributeValue::String(value.to_owned()))
}

fn int(key: &str, value: u64) -> Attribute {
    (
        key.to_owned(),
        AttributeValue::Int(i64::try_from(value).unwrap_or(i64::MAX)),
    )
}

/// Unix nanoseconds of a millisecond timestamp (0 before 1970).
fn nanos(at: Timestamp) -> u64 {
    u64::try_from(at.millis())
        .unwrap_or(0)
        .saturating_mul(1_000_000)
}

/// Text cut to [`MAX_TEXT_BYTES`] on a character boundary, with a marker.
pub fn bounded(text: &str) -> String {
    if text.len() <= MAX_TEXT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &text[..end], text.len() - end)
}
