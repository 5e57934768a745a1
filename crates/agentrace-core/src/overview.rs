//! A session at a glance, as `top` and the viewer's live page show it: the
//! run's record and one row per agent and background command, in tree
//! order, each with its state, the tool it runs now and since when, its
//! tokens and cost, and when it was last heard from. Made from the run
//! book's view and child-work records, so it says what `status` and `show`
//! say; the readers only print it.

use serde::Serialize;

use crate::childwork::{ChildWorkKind, ChildWorkRecord, ChildWorkState, Outcome, WaitingOn};
use crate::model::{AgentStatus, RunStatus, Timestamp};
use crate::state::{AgentNode, CostStatus, RunSummary, RunView};

/// One session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The run's record.
    pub run: RunSummary,
    /// True until the session is over by the run book's rule: a root whose
    /// turn ended while a helper works on (Claude's `run_in_background`)
    /// is not over, though its run is `done`.
    pub live: bool,
    /// Its agents and background commands, in tree order.
    pub agents: Vec<AgentRow>,
}

/// One agent (or background command) under its session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRow {
    /// The agent's thread id, or the command's id at its provider.
    pub thread_id: String,
    /// Nesting under the root (root 0).
    pub depth: usize,
    /// Its label (a command: `$ ` and its first line).
    pub label: String,
    /// working / waiting on approval / ended succeeded …, as `status` says.
    pub state: String,
    /// True while it is working or waiting.
    pub live: bool,
    /// The tool it is running now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolNow>,
    /// Its tokens (its own; a record's running total while live).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Its cost in USD, when anything of it was priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// How complete [`AgentRow::cost`] is; absent where there is no figure
    /// to show (a command, or an agent before its first request: a `$0`
    /// beside a helper at work would read as a figure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_status: Option<CostStatus>,
    /// The last time it was heard from, while live.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heard_at: Option<Timestamp>,
    /// Live but quiet for longer than the limit (`silent_agent`): maybe
    /// stuck. Absent otherwise.
    #[serde(skip_serializing_if = "is_false")]
    pub silent: bool,
    /// A background command, not an agent.
    pub command: bool,
}

fn is_false(value: &bool) -> bool {
    !value
}

/// A tool call under way.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolNow {
    /// `Bash`, `exec_command`, a Claude tool name, …
    pub name: String,
    /// What it was given, in short: the command, the paths, the query.
    pub input: String,
    /// When the call started.
    pub since: Timestamp,
}

/// [`session_of`] a run's checked view (its warnings judged at a time, see
/// [`crate::warnings::checked`]) and the run book it came from: each agent
/// a `silent_agent` warning names is marked [`AgentRow::silent`], each live
/// agent was last heard from at its last line (the book's evidence, what
/// `silent_agent` counts from), and a live agent with no record (the root)
/// shows the tool it runs now, from the book's child work.
pub fn session_of_view(view: RunView, book: &crate::book::RunBook) -> Session {
    let (records, over, evidence) = (book.records(), book.session_over(), book.evidence());
    let silent: Vec<String> = view
        .warnings
        .iter()
        .filter(|warning| warning.code == "silent_agent")
        .filter_map(|warning| warning.thread_id.as_ref().map(|thread| thread.0.clone()))
        .collect();
    let mut session = session_of(view.run, &view.agents, &records, over);
    for row in &mut session.agents {
        row.silent = row.live && silent.contains(&row.thread_id);
        if !row.live || row.command {
            continue;
        }
        let thread = crate::model::ThreadId::from(row.thread_id.as_str());
        if row.tool.is_none() {
            row.tool = book.child_work().operation_of(&thread).map(|operation| ToolNow {
                name: operation.tool_name.clone(),
                input: operation.input.clone(),
                since: operation.started_at,
            });
        }
        // A record changes on a tool, a message, tokens; an agent's other
        // lines (a Claude helper's attachments and requests) are its
        // activity too: its silence counts from its last line, as the
        // detector's does, or the two told different times.
        row.heard_at = row.heard_at.max(evidence.last_activity(&thread));
    }
    session
}

/// A session's rows: its agent tree (from the run's view) with each
/// child's live facts from its child-work record, and each background
/// command under the agent that launched it. `over` is the run book's
/// [`crate::RunBook::session_over`].
pub fn session_of(run: RunSummary, agents: &[AgentNode], records: &[ChildWorkRecord], over: bool) -> Session {
    let mut rows = Vec::new();
    for agent in agents {
        push_agent(&mut rows, agent, 0, records, over, &run);
    }
    // Records the tree does not place (a child seen only by its record, a
    // command of a launcher the tree does not hold) still show, at the top
    // level.
    for record in records {
        let placed = match record.kind {
            ChildWorkKind::Agent => rows.iter().any(|row: &AgentRow| row.thread_id == record.provider_id),
            ChildWorkKind::Command => agents.iter().any(|agent| places(agent, record)),
        };
        if !placed {
            rows.push(record_row(record, 1, None));
        }
    }
    Session { run, live: !over, agents: rows }
}

fn push_agent(rows: &mut Vec<AgentRow>, agent: &AgentNode, depth: usize, records: &[ChildWorkRecord], over: bool, run: &RunSummary) {
    let live_run = run.status == RunStatus::Running;
    let record = records
        .iter()
        .find(|record| record.kind == ChildWorkKind::Agent && record.provider_id == agent.thread_id.0);
    // No request yet, no cost (`show` leaves both out too); a record's
    // tokens tell a request the tree has not counted yet.
    let cost = agent
        .cost_once_requested()
        .or_else(|| record.and_then(|record| record.total_tokens).map(|_| (agent.cost, agent.cost_status)));
    let row = match record {
        Some(record) => record_row(record, depth, cost),
        None => {
            // The root (no record: §6 keeps records for children) or a
            // child never admitted: its state from the tree. A root whose
            // helpers work on (the book's `helpersWorking`) with none of
            // them live has the last report on its way to it (a Claude
            // helper's end is the `<task-notification>` that starts the
            // root's next turn): it is at work on it, not waiting.
            let taking_reports = depth == 0
                && run.helpers_working
                && !over
                && records.iter().all(|record| record.state == ChildWorkState::Ended);
            let live = (live_run && agent.status == AgentStatus::Running) || taking_reports;
            AgentRow {
                thread_id: agent.thread_id.0.clone(),
                depth,
                label: agent.label.clone(),
                state: match (depth, live, agent.status) {
                    (_, true, _) => "working".to_owned(),
                    // Its turn ended, its helpers' reports will wake it.
                    (0, false, _) if run.status == RunStatus::Done && !over => "waiting on helpers".to_owned(),
                    (0, false, _) if !live_run => format!("ended {}", run.status.as_str()),
                    (_, false, status) => status_word(status).to_owned(),
                },
                live,
                tool: None,
                tokens: agent.tokens.as_ref().map(|tokens| tokens.total_tokens),
                cost: cost.and_then(|(cost, _)| cost),
                cost_status: cost.map(|(_, status)| status),
                heard_at: live.then_some(run.updated_at).flatten(),
                silent: false,
                command: false,
            }
        }
    };
    rows.push(row);
    // Its background commands, then its children.
    for command in records.iter().filter(|record| launched_by(agent, record)) {
        rows.push(record_row(command, depth + 1, None));
    }
    for child in &agent.children {
        push_agent(rows, child, depth + 1, records, over, run);
    }
}

/// True when `record` is a command `agent` launched: its parent is the
/// agent's record, or, for a root (which has no record: a root's command
/// has no parent), its id names the agent as its launcher.
fn launched_by(agent: &AgentNode, record: &ChildWorkRecord) -> bool {
    if record.kind != ChildWorkKind::Command {
        return false;
    }
    match &record.parent_child_work_id {
        Some(parent) => parent.0.ends_with(&format!(":{}", agent.thread_id.0)),
        None => record.child_work_id.0.starts_with(&format!("command:{}:", agent.thread_id.0)),
    }
}

/// True when `record` is a command of `agent` or of one below it.
fn places(agent: &AgentNode, record: &ChildWorkRecord) -> bool {
    launched_by(agent, record) || agent.children.iter().any(|child| places(child, record))
}

fn record_row(record: &ChildWorkRecord, depth: usize, cost: Option<(Option<f64>, CostStatus)>) -> AgentRow {
    let live = record.state != ChildWorkState::Ended;
    let command = match record.kind {
        ChildWorkKind::Agent => false,
        ChildWorkKind::Command => true,
    };
    AgentRow {
        thread_id: record.provider_id.clone(),
        depth,
        label: if command { format!("$ {}", record.label) } else { record.label.clone() },
        state: record_state(record),
        live,
        tool: record.operation.as_ref().filter(|_| live).map(|operation| ToolNow {
            name: operation.tool_name.clone(),
            input: operation.input.clone(),
            since: operation.started_at,
        }),
        tokens: record.total_tokens,
        cost: cost.and_then(|(cost, _)| cost),
        cost_status: cost.map(|(_, status)| status),
        heard_at: live.then_some(record.updated_at),
        silent: false,
        command,
    }
}

/// working / waiting on approval / ended succeeded …, as `status` says it.
fn record_state(record: &ChildWorkRecord) -> String {
    match (record.state, record.waiting_on, record.outcome) {
        (ChildWorkState::Working, _, _) => "working".to_owned(),
        (ChildWorkState::Waiting, Some(WaitingOn::Approval), _) => "waiting on approval".to_owned(),
        (ChildWorkState::Waiting, Some(WaitingOn::UserInput), _) => "waiting on input".to_owned(),
        (ChildWorkState::Waiting, None, _) => "waiting".to_owned(),
        (ChildWorkState::Ended, _, Some(outcome)) => format!("ended {}", outcome_word(outcome)),
        (ChildWorkState::Ended, _, None) => "ended".to_owned(),
    }
}

fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Succeeded => "succeeded",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "cancelled",
        Outcome::Unknown => "unknown",
    }
}

fn status_word(status: AgentStatus) -> &'static str {
    match status {
        AgentStatus::Pending => "pending",
        AgentStatus::Running => "ended unknown",
        AgentStatus::Completed => "ended succeeded",
        AgentStatus::Failed => "ended failed",
        AgentStatus::Interrupted => "ended cancelled",
        AgentStatus::Unknown => "ended unknown",
    }
}
