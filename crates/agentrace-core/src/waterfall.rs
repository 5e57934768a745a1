//! The waterfall of a run (§9): who ran when. A projection of the log's
//! events onto a time axis, as a page of events is one onto a list: turns
//! and tool calls become bars (a wait on helpers is its own kind), spawns
//! and waits become links between lanes, and each agent of the run book's
//! tree becomes a lane. It holds one bar per turn and tool call, never an
//! envelope; the server builds it per request from the log and, for a
//! wide run, merges the bars narrower than a pixel so the page draws a
//! bounded number of them.
//!
//! Times are milliseconds from the run's start: the earliest of the events
//! drawn (turns, calls, spawns, waits), whose times are the provider's.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::model::{Envelope, Event, ItemId, ThreadId, Timestamp};
use crate::state::AgentNode;

/// What a bar stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BarKind {
    /// A turn of the agent.
    Turn,
    /// A tool call.
    Tool,
    /// A wait on helpers (the `wait` collaboration call).
    Wait,
}

/// One turn or call on the axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bar {
    /// What it is.
    pub kind: BarKind,
    /// The agent's thread.
    pub thread_id: ThreadId,
    /// Start, ms from the run's start.
    pub start_ms: i64,
    /// End, ms from the run's start; `null` while it runs.
    pub end_ms: Option<i64>,
    /// The event that began it (the timeline scrolls to it).
    pub sequence: u64,
    /// The event that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_sequence: Option<u64>,
    /// The tool's name, or the turn's id.
    pub name: String,
    /// The tool's input summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// How it ended: the provider's status (`completed`, `failed`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// A command's exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// The turn's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tokens the turn used (its thread's running total at its end less
    /// the total before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Bars this one stands for: more than 1 when bars narrower than a
    /// pixel were merged.
    pub count: u64,
}

impl Bar {
    /// True when the call or turn failed (a failed status, a non-zero
    /// exit, an error).
    pub fn failed(&self) -> bool {
        self.error.is_some()
            || self.exit_code.is_some_and(|code| code != 0)
            || self.outcome.as_deref().is_some_and(|outcome| {
                matches!(outcome, "failed" | "error" | "declined" | "interrupted")
            })
    }
}

/// What a link says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// `from` spawned `to`.
    Spawn,
    /// `from` began waiting for `to`.
    Wait,
}

/// A spawn or a wait between two lanes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// What it says.
    pub kind: LinkKind,
    /// The spawner or waiter.
    pub from_thread_id: ThreadId,
    /// The child.
    pub to_thread_id: ThreadId,
    /// When, ms from the run's start.
    pub at_ms: i64,
    /// Its event.
    pub sequence: u64,
}

/// One agent's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lane {
    /// The agent's thread.
    pub thread_id: ThreadId,
    /// Its spawner.
    pub parent_thread_id: Option<ThreadId>,
    /// Depth under the root (0 for a root, or a thread nobody linked).
    pub depth: u32,
    /// Its label.
    pub label: String,
    /// `root`, `helper`, `unknown`.
    pub role: crate::model::Role,
    /// Its own tokens.
    pub tokens: Option<u64>,
    /// Its own cost, US dollars.
    pub cost: Option<f64>,
    /// When it was spawned, ms from the run's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_at_ms: Option<i64>,
}

/// `GET /api/runs/:id/waterfall`: the lanes, bars and links of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Waterfall {
    /// The axis's origin: the earliest time of the events it draws (turns,
    /// calls, spawns, waits).
    pub started_at: Option<Timestamp>,
    /// The axis: ms from the origin to the latest event it draws, or, while
    /// a bar is open in a session that ended mid-turn, to its
    /// `session_ended`, which the open bars are drawn to.
    pub span_ms: i64,
    /// One per agent, each under its spawner, spawners first, siblings in
    /// the order they were spawned.
    pub lanes: Vec<Lane>,
    /// Turns and calls, in the order they began.
    pub bars: Vec<Bar>,
    /// Spawns and waits, in order.
    pub links: Vec<Link>,
}

/// Builds a waterfall from a log's envelopes, one at a time.
#[derive(Debug, Default)]
pub struct WaterfallBuilder {
    /// The earliest and the latest time of the events, ms since the epoch.
    first: Option<i64>,
    last: Option<i64>,
    /// When the session ended (`session_ended`), if it did: where an open
    /// bar is drawn to.
    tail: Option<i64>,
    bars: Vec<Bar>,
    links: Vec<Link>,
    /// (thread, turn id) → its bar.
    open_turns: HashMap<(ThreadId, String), usize>,
    /// (thread, item id or name) → its bars, oldest first.
    open_tools: HashMap<(ThreadId, String), Vec<usize>>,
    /// Each thread's running token total.
    totals: HashMap<ThreadId, u64>,
}

/// Tool names that wait for helpers.
fn is_wait(name: &str) -> bool {
    matches!(name, "wait" | "wait_agent" | "waitAgent")
}

impl WaterfallBuilder {
    /// A builder that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes an envelope's time; returns it (ms since the epoch: the axis's
    /// origin is known only at the end).
    fn at(&mut self, timestamp: Timestamp) -> i64 {
        self.first = Some(
            self.first
                .map_or(timestamp.0, |first| first.min(timestamp.0)),
        );
        self.last = Some(self.last.map_or(timestamp.0, |last| last.max(timestamp.0)));
        timestamp.0
    }

    /// A thread's running token total outside its turns: a turn's tokens
    /// are counted from the total before it.
    fn note_total(&mut self, envelope: &Envelope, total: u64) {
        if let Some(thread) = &envelope.actor.thread_id {
            let open = self.open_turns.keys().any(|(owner, _)| owner == thread);
            if !open {
                self.totals.insert(thread.clone(), total);
            }
        }
    }

    /// Takes the next envelope (final actor applied).
    pub fn push(&mut self, envelope: &Envelope) {
        let Some(event) = envelope.event.known() else {
            return;
        };
        // Only the session's end: a reader that passes over the lines it
        // does not draw (the store's waterfall read) must reach the same
        // axis as one that folds every envelope.
        if matches!(event, Event::SessionEnded { .. }) {
            self.tail = Some(self.tail.map_or(envelope.timestamp.0, |tail| tail.max(envelope.timestamp.0)));
        }
        // The axis spans the events it draws (turns, calls, spawns, waits),
        // which carry the provider's times: the recorder's `run_started`
        // is stamped when recording began (an import's, when it ran) and
        // bookkeeping often when it was read.
        let drawn = matches!(
            event,
            Event::TurnStarted { .. }
                | Event::TurnCompleted { .. }
                | Event::ToolUse { .. }
                | Event::ToolResult { .. }
                | Event::AgentSpawned { .. }
                | Event::AgentWaitStarted { .. }
        );
        if !drawn {
            if let Event::Usage { total, .. } = event {
                self.note_total(envelope, total.total_tokens);
            }
            return;
        }
        let ms = self.at(envelope.timestamp);
        let thread = envelope.actor.thread_id.clone();
        match event {
            Event::TurnStarted { turn_id, .. } => {
                let Some(thread) = thread else { return };
                let index = self.bars.len();
                self.bars.push(Bar {
                    kind: BarKind::Turn,
                    thread_id: thread.clone(),
                    start_ms: ms,
                    end_ms: None,
                    sequence: envelope.sequence,
                    end_sequence: None,
                    name: turn_id.to_string(),
                    input: None,
                    outcome: None,
                    exit_code: None,
                    error: None,
                    tokens: None,
                    count: 1,
                });
                self.open_turns.insert((thread, turn_id.to_string()), index);
            }
            Event::TurnCompleted {
                turn_id,
                status,
                error,
                usage,
                ..
            } => {
                let Some(thread) = thread else { return };
                let tokens = usage.as_ref().map(|usage| {
                    let before = self
                        .totals
                        .insert(thread.clone(), usage.total_tokens)
                        .unwrap_or(0);
                    usage.total_tokens.saturating_sub(before)
                });
                if let Some(index) = self.open_turns.remove(&(thread, turn_id.to_string())) {
                    let bar = &mut self.bars[index];
                    bar.end_ms = Some(ms.max(bar.start_ms));
                    bar.end_sequence = Some(envelope.sequence);
                    bar.outcome = Some(status.clone());
                    bar.error = error.clone();
                    bar.tokens = tokens;
                }
            }
            Event::ToolUse {
                name,
                input,
                item_id,
                ..
            } => {
                let Some(thread) = thread else { return };
                let key = tool_key(item_id.as_ref(), name);
                let index = self.bars.len();
                self.bars.push(Bar {
                    kind: if is_wait(name) {
                        BarKind::Wait
                    } else {
                        BarKind::Tool
                    },
                    thread_id: thread.clone(),
                    start_ms: ms,
                    end_ms: None,
                    sequence: envelope.sequence,
                    end_sequence: None,
                    name: name.clone(),
                    input: Some(input.clone()),
                    outcome: None,
                    exit_code: None,
                    error: None,
                    tokens: None,
                    count: 1,
                });
                self.open_tools
                    .entry((thread, key))
                    .or_default()
                    .push(index);
            }
            Event::ToolResult {
                name,
                status,
                exit_code,
                item_id,
                ..
            } => {
                let Some(thread) = thread else { return };
                let key = tool_key(item_id.as_ref(), name);
                let Some(open) = self.open_tools.get_mut(&(thread.clone(), key.clone())) else {
                    return;
                };
                if open.is_empty() {
                    return;
                }
                let index = open.remove(0);
                if open.is_empty() {
                    self.open_tools.remove(&(thread, key));
                }
                let bar = &mut self.bars[index];
                bar.end_ms = Some(ms.max(bar.start_ms));
                bar.end_sequence = Some(envelope.sequence);
                bar.outcome = status.clone();
                bar.exit_code = *exit_code;
            }
            Event::AgentSpawned {
                parent_thread_id,
                child_thread_id,
                ..
            } => {
                // A link told again (by a later read-back) is the same link.
                if !self.links.iter().any(|link| {
                    link.kind == LinkKind::Spawn && link.to_thread_id == *child_thread_id
                }) {
                    self.links.push(Link {
                        kind: LinkKind::Spawn,
                        from_thread_id: parent_thread_id.clone(),
                        to_thread_id: child_thread_id.clone(),
                        at_ms: ms,
                        sequence: envelope.sequence,
                    });
                }
            }
            Event::AgentWaitStarted {
                parent_thread_id,
                child_thread_ids,
            } => {
                for child in child_thread_ids {
                    self.links.push(Link {
                        kind: LinkKind::Wait,
                        from_thread_id: parent_thread_id.clone(),
                        to_thread_id: child.clone(),
                        at_ms: ms,
                        sequence: envelope.sequence,
                    });
                }
            }
            Event::RunStarted { .. }
            | Event::Usage { .. }
            | Event::Message { .. }
            | Event::Reasoning { .. }
            | Event::ItemStarted { .. }
            | Event::ItemCompleted { .. }
            | Event::Delta { .. }
            | Event::Status { .. }
            | Event::ThreadStarted { .. }
            | Event::AgentCompleted { .. }
            | Event::ActorResolved { .. }
            | Event::ServerRequest { .. }
            | Event::ClientRequest { .. }
            | Event::Response { .. }
            | Event::Error { .. }
            | Event::Notice { .. }
            | Event::Warning { .. }
            | Event::Done { .. }
            | Event::Failed { .. }
            | Event::Interrupted { .. }
            | Event::Dropped { .. }
            | Event::SessionEnded { .. }
            | Event::Replayed { .. }
            | Event::ModelSelected { .. }
            | Event::Unknown { .. } => {}
        }
    }

    /// The waterfall, with a lane for each agent of `agents` (the run
    /// book's tree) and for each other thread that has bars.
    pub fn finish(mut self, agents: &[AgentNode]) -> Waterfall {
        // Times become ms from the earliest event (timestamps need not grow
        // with sequence: the provider's clock stamps most of them).
        let origin = self.first.unwrap_or(0);
        for bar in &mut self.bars {
            bar.start_ms -= origin;
            bar.end_ms = bar.end_ms.map(|end| end - origin);
        }
        for link in &mut self.links {
            link.at_ms -= origin;
        }
        let spawned: HashMap<&ThreadId, i64> = self
            .links
            .iter()
            .filter(|link| link.kind == LinkKind::Spawn)
            .map(|link| (&link.to_thread_id, link.at_ms))
            .collect();
        let first_bar: HashMap<&ThreadId, i64> = self
            .bars
            .iter()
            .rev()
            .map(|bar| (&bar.thread_id, bar.start_ms))
            .collect();
        let mut lanes = Vec::new();
        fn walk(
            nodes: &[AgentNode],
            depth: u32,
            spawned: &HashMap<&ThreadId, i64>,
            first_bar: &HashMap<&ThreadId, i64>,
            lanes: &mut Vec<Lane>,
        ) {
            let mut ordered: Vec<&AgentNode> = nodes.iter().collect();
            // Siblings by when they were spawned (else first worked); the
            // tree's own order breaks ties.
            ordered.sort_by_key(|node| {
                spawned
                    .get(&node.thread_id)
                    .or_else(|| first_bar.get(&node.thread_id))
                    .copied()
                    .unwrap_or(i64::MAX)
            });
            for node in ordered {
                lanes.push(Lane {
                    thread_id: node.thread_id.clone(),
                    parent_thread_id: node.parent_thread_id.clone(),
                    depth: node.depth.unwrap_or(depth),
                    label: node.label.clone(),
                    role: node.role,
                    tokens: node.tokens.as_ref().map(|tokens| tokens.total_tokens),
                    cost: node.cost,
                    spawned_at_ms: spawned.get(&node.thread_id).copied(),
                });
                walk(&node.children, depth + 1, spawned, first_bar, lanes);
            }
        }
        // Roots keep the tree's order (the primary root first).
        for node in agents {
            walk(
                std::slice::from_ref(node),
                0,
                &spawned,
                &first_bar,
                &mut lanes,
            );
        }
        let mut orphans: BTreeMap<i64, Vec<ThreadId>> = BTreeMap::new();
        for bar in &self.bars {
            if !lanes.iter().any(|lane| lane.thread_id == bar.thread_id)
                && !orphans
                    .values()
                    .flatten()
                    .any(|thread| *thread == bar.thread_id)
            {
                orphans
                    .entry(bar.start_ms)
                    .or_default()
                    .push(bar.thread_id.clone());
            }
        }
        for thread in orphans.into_values().flatten() {
            lanes.push(Lane {
                label: thread.to_string(),
                thread_id: thread,
                parent_thread_id: None,
                depth: 0,
                role: crate::model::Role::Unknown,
                tokens: None,
                cost: None,
                spawned_at_ms: None,
            });
        }
        // An open bar runs on to the session's end (`session_ended`: a
        // session that ended mid-turn, its root still waiting): the axis
        // reaches it, else the bar would start at the axis's end and have
        // no width.
        let open = self.bars.iter().any(|bar| bar.end_ms.is_none());
        let last = match (self.last, self.tail) {
            (Some(last), Some(tail)) if open => Some(last.max(tail)),
            (last, _) => last,
        };
        Waterfall {
            started_at: self.first.map(Timestamp::from_millis),
            span_ms: last.map_or(0, |last| last - origin),
            lanes,
            bars: self.bars,
            links: self.links,
        }
    }
}

impl Waterfall {
    /// The bars that overlap `from..=to` (ms; an open bar runs to the end),
    /// the bars of a lane narrower than `ms_per_pixel` merged with their
    /// neighbours of the same kind less than a pixel away. A merged bar
    /// keeps the first one's event and counts them all; open bars are
    /// never merged (they are drawn open-ended).
    pub fn window(&self, from: i64, to: i64, ms_per_pixel: f64) -> Vec<Bar> {
        let pixel = ms_per_pixel.max(0.0);
        let mut out: Vec<Bar> = Vec::new();
        // The last merged bar of each (lane, kind), as an index into `out`.
        let mut last: HashMap<(&ThreadId, BarKind), usize> = HashMap::new();
        for bar in &self.bars {
            let end = bar.end_ms.unwrap_or(self.span_ms);
            if end < from || bar.start_ms > to {
                continue;
            }
            let narrow = bar.end_ms.is_some() && ((end - bar.start_ms) as f64) < pixel;
            if narrow {
                if let Some(&index) = last.get(&(&bar.thread_id, bar.kind)) {
                    let merged = &mut out[index];
                    let merged_end = merged.end_ms.unwrap_or(merged.start_ms);
                    let small = ((merged_end - merged.start_ms) as f64) < pixel || merged.count > 1;
                    if small
                        && merged.end_ms.is_some()
                        && ((bar.start_ms - merged_end) as f64) < pixel
                    {
                        merged.end_ms = Some(merged_end.max(end));
                        merged.end_sequence = bar.end_sequence.max(merged.end_sequence);
                        merged.count += 1;
                        merged.tokens = match (merged.tokens, bar.tokens) {
                            (None, None) => None,
                            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
                        };
                        if bar.failed() && !merged.failed() {
                            merged.outcome = bar.outcome.clone();
                            merged.exit_code = bar.exit_code;
                            merged.error = bar.error.clone();
                        }
                        continue;
                    }
                }
            }
            last.insert((&bar.thread_id, bar.kind), out.len());
            out.push(bar.clone());
        }
        out
    }
}

/// What pairs a tool call with its result: its item id, else its name.
fn tool_key(item_id: Option<&ItemId>, name: &str) -> String {
    item_id.map_or_else(|| name.to_owned(), ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Actor, Confidence, EventBody, Role, RunId, SessionEndReason, LOG_VERSION};

    fn envelope(sequence: u64, at: i64, thread: &str, event: Event) -> Envelope {
        Envelope {
            version: LOG_VERSION,
            timestamp: Timestamp::from_millis(1_000_000 + at),
            sequence,
            run_id: RunId::from("r"),
            direction: None,
            actor: Actor {
                thread_id: Some(ThreadId::from(thread)),
                role: Role::Root,
                parent_thread_id: None,
                label: "Main".to_owned(),
                depth: Some(0),
                confidence: Confidence::Provider,
                reason: None,
            },
            event: EventBody::Known(event),
            raw: None,
            raw_ref: None,
            raw_unavailable: None,
        }
    }

    fn tool_use(name: &str, id: &str) -> Event {
        Event::ToolUse {
            tool_kind: "command".to_owned(),
            name: name.to_owned(),
            input: "ls".to_owned(),
            item_id: Some(id.into()),
            turn_id: None,
            process_id: None,
        }
    }

    fn tool_result(name: &str, id: &str, exit: i64) -> Event {
        Event::ToolResult {
            tool_kind: "command".to_owned(),
            name: name.to_owned(),
            status: Some("completed".to_owned()),
            exit_code: Some(exit),
            duration_ms: None,
            output: String::new(),
            item_id: Some(id.into()),
            turn_id: None,
            receiver_thread_ids: Vec::new(),
        }
    }

    #[test]
    fn calls_become_bars_from_their_timestamps_waits_are_their_own_kind_and_a_running_call_stays_open(
    ) {
        let mut builder = WaterfallBuilder::new();
        builder.push(&envelope(
            1,
            0,
            "t",
            Event::TurnStarted {
                turn_id: "turn-1".into(),
                root_turn_id: None,
            },
        ));
        builder.push(&envelope(2, 10, "t", tool_use("shell", "a")));
        builder.push(&envelope(3, 30, "t", tool_result("shell", "a", 2)));
        builder.push(&envelope(4, 40, "t", tool_use("wait", "w")));
        builder.push(&envelope(5, 90, "t", tool_use("shell", "b")));
        let waterfall = builder.finish(&[]);
        let spans: Vec<_> = waterfall
            .bars
            .iter()
            .map(|bar| {
                (
                    bar.kind,
                    bar.start_ms,
                    bar.end_ms,
                    bar.sequence,
                    bar.failed(),
                )
            })
            .collect();
        assert_eq!(
            (waterfall.span_ms, spans, waterfall.lanes.len()),
            (
                90,
                vec![
                    (BarKind::Turn, 0, None, 1, false),
                    (BarKind::Tool, 10, Some(30), 2, true),
                    (BarKind::Wait, 40, None, 4, false),
                    (BarKind::Tool, 90, None, 5, false),
                ],
                1
            )
        );
    }

    /// v1_restart_mid_child's root waited on its helper when the session
    /// ended 6.5 s later: the axis stopped at the wait's start (233 ms of a
    /// 6.7 s run), so the open wait had no width at all.
    #[test]
    fn the_axis_of_a_session_that_ended_mid_turn_reaches_its_last_line_and_its_open_bars_run_to_it() {
        let mut builder = WaterfallBuilder::new();
        builder.push(&envelope(
            1,
            0,
            "t",
            Event::TurnStarted {
                turn_id: "turn-1".into(),
                root_turn_id: None,
            },
        ));
        builder.push(&envelope(2, 233, "t", tool_use("wait", "w")));
        builder.push(&envelope(3, 3_000, "t", Event::Notice { method: "thread/status".to_owned(), message: None, item_id: None }));
        builder.push(&envelope(4, 6_710, "t", Event::SessionEnded { reason: SessionEndReason::EndOfInput }));
        let waterfall = builder.finish(&[]);
        let window: Vec<_> = waterfall
            .window(6_000, 6_710, 1.0)
            .iter()
            .map(|bar| (bar.kind, bar.start_ms, bar.end_ms))
            .collect();
        assert_eq!(
            (waterfall.span_ms, window),
            (6_710, vec![(BarKind::Turn, 0, None), (BarKind::Wait, 233, None)])
        );
    }

    /// With every bar closed, the axis stays the drawn events' (what is
    /// logged after the last of them is bookkeeping).
    #[test]
    fn the_axis_of_a_run_whose_bars_all_closed_ends_at_its_last_drawn_event() {
        let mut builder = WaterfallBuilder::new();
        builder.push(&envelope(1, 0, "t", tool_use("shell", "a")));
        builder.push(&envelope(2, 40, "t", tool_result("shell", "a", 0)));
        builder.push(&envelope(3, 900, "t", Event::SessionEnded { reason: SessionEndReason::EndOfInput }));
        assert_eq!(builder.finish(&[]).span_ms, 40);
    }

    #[test]
    fn bars_narrower_than_a_pixel_merge_with_their_neighbours_and_open_ones_never_do() {
        let mut builder = WaterfallBuilder::new();
        for index in 0..10_u64 {
            let id = format!("c{index}");
            builder.push(&envelope(
                index * 2 + 1,
                index as i64 * 2,
                "t",
                tool_use("shell", &id),
            ));
            builder.push(&envelope(
                index * 2 + 2,
                index as i64 * 2 + 1,
                "t",
                tool_result("shell", &id, 0),
            ));
        }
        builder.push(&envelope(21, 1000, "t", tool_use("shell", "open")));
        let waterfall = builder.finish(&[]);
        let merged = waterfall.window(0, 1000, 5.0);
        let spans: Vec<_> = merged
            .iter()
            .map(|bar| (bar.start_ms, bar.end_ms, bar.count, bar.sequence))
            .collect();
        assert_eq!(
            (
                spans,
                waterfall.window(0, 1000, 0.5).len(),
                waterfall.window(500, 1000, 5.0).len()
            ),
            (vec![(0, Some(19), 10, 1), (1000, None, 1, 21)], 11, 1)
        );
    }
}
