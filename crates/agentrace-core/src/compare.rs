//! Two runs side by side (`agentrace diff A B`, the viewer's `/compare`):
//! agents matched by label and role (the n-th agent of a label with the
//! n-th of the other run), each agent's status, turns, tool calls by name,
//! tokens, cost, duration, result and warnings, and what only one side
//! has. Pure data: the CLI and the server print the same [`Comparison`].

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::model::{Role, ThreadId};
use crate::state::{AgentNode, CostStatus, RunView};
use crate::waterfall::{BarKind, Waterfall};

/// One side's figures of an agent, or of the whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    /// The agent's status (`running`, `completed`, …), or the run's.
    pub status: String,
    /// Turns.
    pub turns: u64,
    /// Tool calls by tool name (waits included).
    pub tool_calls: BTreeMap<String, u64>,
    /// Tokens (the agent's own; the run's every thread added up).
    pub tokens: Option<u64>,
    /// US dollars.
    pub cost: Option<f64>,
    /// How complete `cost` is when it is not exact (`floor`: some tokens
    /// unpriced or missing; `unknown`); absent when exact or when there is
    /// no cost, so a reader never takes a floor for the whole figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_status: Option<CostStatus>,
    /// From its first turn or call to its last end, ms (the run's: from its
    /// start to its last envelope).
    pub duration_ms: Option<i64>,
    /// Its final message (the run's result).
    pub result: Option<String>,
    /// The codes of its warnings, as its view lists them (the run's: every
    /// warning; an agent's: those naming its thread), once each a warning.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// One side of the comparison: the run and its agents' figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSide {
    /// The run.
    pub id: String,
    /// Its provider.
    pub provider: crate::model::Provider,
    /// Its figures.
    pub figures: Figures,
}

/// Which side only has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Only {
    /// Only run A.
    A,
    /// Only run B.
    B,
}

/// An agent of either run, matched with its namesake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentPair {
    /// Its label.
    pub label: String,
    /// Its role.
    pub role: Role,
    /// Depth in its tree.
    pub depth: u32,
    /// Its thread in run A.
    pub a_thread_id: Option<ThreadId>,
    /// Its thread in run B.
    pub b_thread_id: Option<ThreadId>,
    /// Its figures in run A (none when only B has it).
    pub a: Option<Figures>,
    /// Its figures in run B.
    pub b: Option<Figures>,
    /// The side that alone has it.
    pub only: Option<Only>,
    /// The figures that differ (`status`, `turns`, `toolCalls`, `tokens`,
    /// `cost`, `durationMs`, `result`, `warnings`).
    pub changed: Vec<String>,
}

/// A difference: a figure of the run or an agent, or an agent one side
/// lacks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// The agent's label (none for the run).
    pub agent: Option<String>,
    /// Its role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// The figure (`agent` when one side lacks the agent).
    pub field: String,
    /// The side that alone has the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Only>,
    /// Run A's value.
    pub a: serde_json::Value,
    /// Run B's value.
    pub b: serde_json::Value,
}

/// `agentrace diff A B --json`, `GET /api/compare?a=&b=`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// Run A.
    pub a: RunSide,
    /// Run B.
    pub b: RunSide,
    /// The agents of both, A's in its tree's order, then those only B has.
    pub agents: Vec<AgentPair>,
    /// Every difference, the run's first; empty when the runs match.
    pub differences: Vec<Difference>,
}

/// The codes of the warnings `keep` keeps, in the view's order.
fn codes(view: &RunView, keep: impl Fn(&crate::model::Warning) -> bool) -> Vec<String> {
    view.warnings.iter().filter(|warning| keep(warning)).map(|warning| warning.code.clone()).collect()
}

/// One agent's figures from the tree, the waterfall and its run's view.
fn agent_figures(node: &AgentNode, waterfall: &Waterfall, view: &RunView) -> Figures {
    let mut turns = 0;
    let mut tool_calls = BTreeMap::new();
    let mut first: Option<i64> = None;
    let mut last: Option<i64> = None;
    for bar in waterfall
        .bars
        .iter()
        .filter(|bar| bar.thread_id == node.thread_id)
    {
        match bar.kind {
            BarKind::Turn => turns += bar.count,
            BarKind::Tool | BarKind::Wait => {
                *tool_calls.entry(bar.name.clone()).or_insert(0) += bar.count
            }
        }
        first = Some(first.map_or(bar.start_ms, |first| first.min(bar.start_ms)));
        let end = bar.end_ms.unwrap_or(waterfall.span_ms);
        last = Some(last.map_or(end, |last| last.max(end)));
    }
    Figures {
        status: serde_json::to_value(node.status)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default(),
        turns,
        tool_calls,
        tokens: node.tokens.as_ref().map(|tokens| tokens.total_tokens),
        cost: node.cost_once_requested().and_then(|(cost, _)| cost),
        cost_status: node.cost_once_requested().and_then(|(_, status)| not_exact(status)),
        duration_ms: first.zip(last).map(|(first, last)| last - first),
        result: node.final_message.clone(),
        warnings: codes(view, |warning| warning.thread_id.as_ref() == Some(&node.thread_id)),
    }
}

fn run_side(view: &RunView, waterfall: &Waterfall) -> RunSide {
    let mut turns = 0;
    let mut tool_calls = BTreeMap::new();
    for bar in &waterfall.bars {
        match bar.kind {
            BarKind::Turn => turns += bar.count,
            BarKind::Tool | BarKind::Wait => {
                *tool_calls.entry(bar.name.clone()).or_insert(0) += bar.count
            }
        }
    }
    let run = &view.run;
    RunSide {
        id: run.id.to_string(),
        provider: run.provider,
        figures: Figures {
            status: serde_json::to_value(run.status)
                .ok()
                .and_then(|value| value.as_str().map(str::to_owned))
                .unwrap_or_default(),
            turns,
            tool_calls,
            tokens: run.tokens.as_ref().map(|tokens| tokens.total_tokens),
            cost: run.cost,
            cost_status: not_exact(run.cost_status),
            duration_ms: run.duration_ms(),
            result: run.result.clone(),
            warnings: codes(view, |_| true),
        },
    }
}

/// A cost's status where it is worth saying: an exact one goes unsaid.
fn not_exact(status: CostStatus) -> Option<CostStatus> {
    match status {
        CostStatus::Exact => None,
        CostStatus::Floor | CostStatus::Unknown => Some(status),
    }
}

/// The agents of a tree, depth first, with their depths.
fn flatten(nodes: &[AgentNode], depth: u32, out: &mut Vec<(u32, AgentNode)>) {
    for node in nodes {
        out.push((node.depth.unwrap_or(depth), node.clone()));
        flatten(&node.children, depth + 1, out);
    }
}

/// The figures that differ, by name, and a [`Difference`] for each.
fn changes(
    agent: Option<(&str, Role)>,
    a: &Figures,
    b: &Figures,
) -> (Vec<String>, Vec<Difference>) {
    let fields: [(&str, serde_json::Value, serde_json::Value); 8] = [
        ("status", a.status.clone().into(), b.status.clone().into()),
        ("turns", a.turns.into(), b.turns.into()),
        (
            "toolCalls",
            serde_json::json!(a.tool_calls),
            serde_json::json!(b.tool_calls),
        ),
        (
            "tokens",
            serde_json::json!(a.tokens),
            serde_json::json!(b.tokens),
        ),
        ("cost", serde_json::json!(a.cost), serde_json::json!(b.cost)),
        (
            "durationMs",
            serde_json::json!(a.duration_ms),
            serde_json::json!(b.duration_ms),
        ),
        (
            "result",
            serde_json::json!(a.result),
            serde_json::json!(b.result),
        ),
        (
            "warnings",
            serde_json::json!(a.warnings),
            serde_json::json!(b.warnings),
        ),
    ];
    let mut names = Vec::new();
    let mut differences = Vec::new();
    for (field, a, b) in fields {
        if a != b {
            names.push(field.to_owned());
            differences.push(Difference {
                agent: agent.map(|(label, _)| label.to_owned()),
                role: agent.map(|(_, role)| role),
                field: field.to_owned(),
                only: None,
                a,
                b,
            });
        }
    }
    (names, differences)
}

/// Compares run A with run B, each its view and waterfall.
pub fn compare(a: (&RunView, &Waterfall), b: (&RunView, &Waterfall)) -> Comparison {
    let side_a = run_side(a.0, a.1);
    let side_b = run_side(b.0, b.1);
    // The run's turns and calls are its agents' added up, compared agent by
    // agent below: counted again here they would say each agent's
    // difference twice.
    let (_, mut differences) = changes(None, &side_a.figures, &side_b.figures);
    differences.retain(|difference| !matches!(difference.field.as_str(), "turns" | "toolCalls" | "warnings"));
    let mut agents_a = Vec::new();
    flatten(&a.0.agents, 0, &mut agents_a);
    let mut agents_b = Vec::new();
    flatten(&b.0.agents, 0, &mut agents_b);
    // So are the warnings that name an agent: the run's own difference
    // is in those that name none of its tree (`unattributed_done`, a
    // budget).
    let run_wide = |view: &RunView, agents: &[(u32, AgentNode)]| {
        codes(view, |warning| !warning.thread_id.as_ref().is_some_and(|thread| agents.iter().any(|(_, node)| &node.thread_id == thread)))
    };
    let (wide_a, wide_b) = (run_wide(a.0, &agents_a), run_wide(b.0, &agents_b));
    if wide_a != wide_b {
        differences.push(Difference {
            agent: None,
            role: None,
            field: "warnings".to_owned(),
            only: None,
            a: serde_json::json!(wide_a),
            b: serde_json::json!(wide_b),
        });
    }
    // B's agents by (label, role), in order: the n-th of a key in A takes
    // the n-th of B.
    let mut unmatched_b: HashMap<(String, Role), std::collections::VecDeque<usize>> =
        HashMap::new();
    for (index, (_, node)) in agents_b.iter().enumerate() {
        unmatched_b
            .entry((node.label.clone(), node.role))
            .or_default()
            .push_back(index);
    }
    let mut taken_b = vec![false; agents_b.len()];
    let mut pairs = Vec::new();
    for (depth, node) in &agents_a {
        let figures_a = agent_figures(node, a.1, a.0);
        let matched = unmatched_b
            .get_mut(&(node.label.clone(), node.role))
            .and_then(std::collections::VecDeque::pop_front);
        match matched {
            Some(index) => {
                taken_b[index] = true;
                let other = &agents_b[index].1;
                let figures_b = agent_figures(other, b.1, b.0);
                let (changed, found) =
                    changes(Some((&node.label, node.role)), &figures_a, &figures_b);
                differences.extend(found);
                pairs.push(AgentPair {
                    label: node.label.clone(),
                    role: node.role,
                    depth: *depth,
                    a_thread_id: Some(node.thread_id.clone()),
                    b_thread_id: Some(other.thread_id.clone()),
                    a: Some(figures_a),
                    b: Some(figures_b),
                    only: None,
                    changed,
                });
            }
            None => {
                differences.push(Difference {
                    agent: Some(node.label.clone()),
                    role: Some(node.role),
                    field: "agent".to_owned(),
                    only: Some(Only::A),
                    a: serde_json::json!(node.thread_id),
                    b: serde_json::Value::Null,
                });
                pairs.push(AgentPair {
                    label: node.label.clone(),
                    role: node.role,
                    depth: *depth,
                    a_thread_id: Some(node.thread_id.clone()),
                    b_thread_id: None,
                    a: Some(figures_a),
                    b: None,
                    only: Some(Only::A),
                    changed: Vec::new(),
                });
            }
        }
    }
    for (index, (depth, node)) in agents_b.iter().enumerate() {
        if taken_b[index] {
            continue;
        }
        differences.push(Difference {
            agent: Some(node.label.clone()),
            role: Some(node.role),
            field: "agent".to_owned(),
            only: Some(Only::B),
            a: serde_json::Value::Null,
            b: serde_json::json!(node.thread_id),
        });
        pairs.push(AgentPair {
            label: node.label.clone(),
            role: node.role,
            depth: *depth,
            a_thread_id: None,
            b_thread_id: Some(node.thread_id.clone()),
            a: None,
            b: Some(agent_figures(node, b.1, b.0)),
            only: Some(Only::B),
            changed: Vec::new(),
        });
    }
    Comparison {
        a: side_a,
        b: side_b,
        agents: pairs,
        differences,
    }
}
