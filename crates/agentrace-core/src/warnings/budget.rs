//! Budgets (`budget_exceeded`, `budget_unchecked`): a run's or each agent's
//! cost and tokens against the limits a user configured. Pure, over the
//! view's figures; it prices nothing itself (the fold did) and never treats
//! an unknown cost as zero.
//!
//! A figure over its limit is `budget_exceeded` (error), also when the
//! figure is only a floor (the true one is higher still). A figure that
//! cannot settle the question, an unknown cost or a floor under its limit,
//! is `budget_unchecked` (warning): the budget may or may not hold, and a
//! CI job that must know can deny that code too (`-W budget_unchecked`).

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{all_agents, warning, Check, RunFacts, WarningConfig};
use crate::model::{IncompleteReason, Severity, ThreadId, TokenUsage, Warning};
use crate::state::CostStatus;

/// What a budget is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BudgetPer {
    /// The run's totals (every agent's tokens and those outside the tree).
    #[default]
    Run,
    /// Each agent's own tokens and cost (its children's not included).
    Agent,
}

impl FromStr for BudgetPer {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "run" => Ok(BudgetPer::Run),
            "agent" => Ok(BudgetPer::Agent),
            other => Err(format!("`{other}` is neither `run` nor `agent`")),
        }
    }
}

/// One thing a budget judges: the run, or one agent.
struct Subject<'a> {
    /// `run X` or `agent Label (thread T)`.
    name: String,
    thread_id: Option<&'a ThreadId>,
    tokens: Option<&'a TokenUsage>,
    cost: Option<f64>,
    cost_status: CostStatus,
    incomplete: &'a [IncompleteReason],
}

/// What the limits say of one subject: the clauses of each warning.
#[derive(Default)]
struct Verdict {
    exceeded: Vec<String>,
    unchecked: Vec<String>,
}

/// `budget_exceeded`: the run's (or an agent's own, with `budgetPer:
/// agent`) cost or tokens passed `maxCost` / `maxTokens`.
pub fn budget_exceeded(facts: &RunFacts<'_>, config: &WarningConfig) -> Check {
    judged(
        facts,
        config,
        "budget_exceeded",
        Severity::Error,
        |verdict| &verdict.exceeded,
    )
}

/// `budget_unchecked`: a configured limit that the figures cannot settle
/// (an unknown cost, or a floor under the limit).
pub fn budget_unchecked(facts: &RunFacts<'_>, config: &WarningConfig) -> Check {
    judged(
        facts,
        config,
        "budget_unchecked",
        Severity::Warning,
        |verdict| &verdict.unchecked,
    )
}

fn judged(
    facts: &RunFacts<'_>,
    config: &WarningConfig,
    code: &str,
    severity: Severity,
    clauses: fn(&Verdict) -> &Vec<String>,
) -> Check {
    if config.max_cost.is_none() && config.max_tokens.is_none() {
        return Check::Ok;
    }
    let found: Vec<Warning> = subjects(facts, config.budget_per.unwrap_or_default())
        .into_iter()
        .filter_map(|subject| {
            let verdict = verdict(&subject, config.max_cost, config.max_tokens);
            let clauses = clauses(&verdict);
            if clauses.is_empty() {
                return None;
            }
            let mut warning = warning(
                code,
                severity,
                format!("{} {}", subject.name, clauses.join(", and ")),
            );
            warning.thread_id = subject.thread_id.cloned();
            Some(warning)
        })
        .collect();
    if found.is_empty() {
        Check::Ok
    } else {
        Check::Warn(found)
    }
}

fn subjects<'a>(facts: &'a RunFacts<'_>, per: BudgetPer) -> Vec<Subject<'a>> {
    let run = &facts.view.run;
    match per {
        BudgetPer::Run => vec![Subject {
            name: format!("run {}", run.id),
            thread_id: None,
            tokens: run.tokens.as_ref(),
            cost: run.cost,
            cost_status: run.cost_status,
            incomplete: &run.incomplete,
        }],
        BudgetPer::Agent => all_agents(&facts.view.agents)
            .into_iter()
            .map(|node| Subject {
                name: format!("agent {} (thread {})", node.label, node.thread_id),
                thread_id: Some(&node.thread_id),
                tokens: node.tokens.as_ref(),
                cost: node.cost,
                cost_status: node.cost_status,
                incomplete: &node.incomplete,
            })
            .collect(),
    }
}

fn verdict(subject: &Subject<'_>, max_cost: Option<f64>, max_tokens: Option<u64>) -> Verdict {
    let mut verdict = Verdict::default();
    if let Some(limit) = max_cost {
        let budget = format!("the budget of ${}", limit_dollars(limit));
        match (subject.cost, subject.cost_status) {
            (None, _) | (Some(_), CostStatus::Unknown) => verdict.unchecked.push(format!(
                "cost is unknown (nothing could be priced), so {budget} cannot be checked"
            )),
            (Some(cost), CostStatus::Exact) => {
                if cost > limit {
                    verdict
                        .exceeded
                        .push(format!("cost ${cost:.4} is over {budget}"));
                }
            }
            (Some(cost), CostStatus::Floor) => {
                if cost > limit {
                    verdict
                        .exceeded
                        .push(format!("cost at least ${cost:.4} is over {budget}"));
                } else {
                    verdict.unchecked.push(format!(
                        "cost at least ${cost:.4} is under {budget}, but some of its tokens have no price or are missing, so it cannot be confirmed"
                    ));
                }
            }
        }
    }
    if let Some(limit) = max_tokens {
        let budget = format!("the budget of {limit} tokens");
        let floor = !subject.incomplete.is_empty();
        match subject.tokens.map(|tokens| tokens.total_tokens) {
            None if floor => verdict.unchecked.push(format!(
                "tokens are not reported, so {budget} cannot be checked"
            )),
            // No usage and none known to be missing: nothing was spent.
            None => {}
            Some(used) if used > limit => {
                let at_least = if floor { "at least " } else { "" };
                verdict
                    .exceeded
                    .push(format!("used {at_least}{used} tokens, over {budget}"));
            }
            Some(used) if floor => verdict.unchecked.push(format!(
                "used at least {used} tokens, under {budget}, but some of its tokens are missing, so it cannot be confirmed"
            )),
            Some(_) => {}
        }
    }
    verdict
}

/// A limit as the user would write it: cents shown (`$0.25`, `$1.00`),
/// finer limits in full (`$0.125`).
fn limit_dollars(limit: f64) -> String {
    let cents = format!("{limit:.2}");
    if cents.parse::<f64>() == Ok(limit) {
        cents
    } else {
        format!("{limit}")
    }
}
