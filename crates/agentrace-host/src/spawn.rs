//! Finding the subagent a step spawned: [`Host::find_by_marker`] joins the
//! owner's decision ledger with the `spawnAgent` items of the owner's recent
//! turns, by tool use id. A warning never refuses; only a missing owner or a
//! text that is no operation is an error.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use agentrace_wire::codex::{CollabAgentToolCall, Item};
use serde::{Deserialize, Serialize};

use crate::error::HostError;
use crate::marker::{parse_marker, parse_op, Op};
use crate::reads::Host;

/// How many of the owner's most recent turns are searched by default.
pub const DEFAULT_WINDOW: usize = 20;

/// How to search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindOptions {
    /// The directory holding `decisions/<owner>.jsonl`; none: no ledger.
    pub ledger_dir: Option<PathBuf>,
    /// How many of the owner's most recent turns to search (at least 1).
    pub window: usize,
}

impl Default for FindOptions {
    fn default() -> Self {
        FindOptions {
            ledger_dir: None,
            window: DEFAULT_WINDOW,
        }
    }
}

/// Why a spawn was tied to the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// The hook's allowed decision for the tool use names the operation.
    Ledger,
    /// The allowed decision names none; the spawn prompt's marker does.
    Prompt,
    /// No allowed decision covers the tool use; the prompt's marker names it.
    Unrecorded,
}

/// One spawn that names the operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spawn {
    /// The subagent thread it created.
    pub thread_id: String,
    /// The spawn item's id: the hook's tool use id.
    pub tool_use_id: String,
    /// The owner's turn that holds the spawn.
    pub turn_id: String,
    /// Why it is tied to the operation.
    pub via: Via,
    /// The operation the allowed decision names, if any.
    pub ledger_op: Option<Op>,
    /// The operation the prompt's first line names, if any.
    pub prompt_op: Option<Op>,
}

/// What a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// The allowed decision names the operation, the prompt another one.
    LedgerOpDiffers,
    /// No ledger line covers the spawn.
    NoLedgerLine,
    /// The hook recorded a refusal for the spawn, yet it ran.
    RefusedDecision,
    /// The ledger (or some of its lines) could not be read.
    LedgerUnreadable,
    /// More than one spawn names the operation.
    SeveralSpawns,
    /// Nothing found, and the owner has turns older than the window.
    WindowEnded,
    /// A spawn naming the operation created no thread; it is skipped.
    NoReceiver,
}

/// A warning of the search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpawnWarning {
    /// What it is about.
    pub code: WarningCode,
    /// For people.
    pub message: String,
    /// The spawn it concerns, when it concerns one.
    pub tool_use_id: Option<String>,
}

/// The answer of [`Host::find_by_marker`].
///
/// Serialized in camelCase; this list may expand over time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpawnSearch {
    /// The operation searched.
    pub op: Op,
    /// The spawn found: the newest, ledger-tied spawns first.
    pub spawn: Option<Spawn>,
    /// The other spawns that name the operation, in the same order.
    pub others: Vec<Spawn>,
    /// The owner has turns older than the searched window.
    pub window_ended: bool,
    /// Everything worth knowing that did not stop the search.
    pub warnings: Vec<SpawnWarning>,
}

/// One line of a decision ledger, as the spawn hook writes it:
/// `{"tool_use_id": "...", "decision": "allow", "op": "call/t1-a1"}`.
/// Tolerant: unknown members are ignored, `op` is optional.
#[derive(Debug, Clone, Deserialize)]
pub struct DecisionLine {
    /// The tool use the decision is about (the spawn item's id).
    pub tool_use_id: String,
    /// `allow`/`allowed`/`approve`/`approved` allow; `deny`/`denied`/
    /// `block`/`blocked`/`refuse`/`refused`/`reject`/`rejected` refuse.
    pub decision: String,
    /// The operation the spawn was for, when the hook recorded it.
    #[serde(default)]
    pub op: Option<String>,
}

impl DecisionLine {
    fn allows(&self) -> bool {
        matches!(
            self.decision.as_str(),
            "allow" | "allowed" | "approve" | "approved"
        )
    }

    fn refuses(&self) -> bool {
        matches!(
            self.decision.as_str(),
            "deny" | "denied" | "block" | "blocked" | "refuse" | "refused" | "reject" | "rejected"
        )
    }

    fn op(&self) -> Option<Op> {
        let op = self.op.as_deref()?;
        parse_op(op).or_else(|| parse_marker(op))
    }
}

/// The owner's ledger as read.
#[derive(Debug, Default)]
struct Ledger {
    lines: Vec<DecisionLine>,
    /// Set when the ledger, or some of it, could not be read: why.
    unreadable: Option<String>,
}

impl Ledger {
    fn read(dir: Option<&Path>, owner: &str) -> Ledger {
        let Some(dir) = dir else {
            return Ledger::default();
        };
        let path = dir.join("decisions").join(format!("{owner}.jsonl"));
        let text = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ledger::default(),
            Err(error) => {
                return Ledger {
                    lines: Vec::new(),
                    unreadable: Some(format!("cannot read {}: {error}", path.display())),
                }
            }
        };
        let mut ledger = Ledger::default();
        let mut bad = Vec::new();
        for (index, line) in text.split(|byte| *byte == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<DecisionLine>(line) {
                Ok(decision) => ledger.lines.push(decision),
                Err(_) => bad.push((index + 1).to_string()),
            }
        }
        if !bad.is_empty() {
            ledger.unreadable = Some(format!(
                "{}: line(s) {} do not decode and were skipped",
                path.display(),
                bad.join(", ")
            ));
        }
        ledger
    }

    /// The last allowed decision for the tool use, and whether a refusal was
    /// recorded for it.
    fn covering(&self, tool_use_id: &str) -> (Option<&DecisionLine>, bool) {
        let mut lines = self
            .lines
            .iter()
            .filter(|line| line.tool_use_id == tool_use_id);
        let allowed = lines.clone().rev().find(|line| line.allows());
        let refused = lines.any(DecisionLine::refuses);
        (allowed, refused)
    }
}

impl Host {
    /// The subagent `owner` spawned for `op`, from the owner's most recent
    /// turns (full view) and its decision ledger; see §7 for every case.
    pub async fn find_by_marker(
        &self,
        owner: &str,
        op: &str,
        options: &FindOptions,
    ) -> Result<SpawnSearch, HostError> {
        let target = parse_op(op).ok_or_else(|| HostError::InvalidOp(op.to_owned()))?;
        let window = options.window.max(1);
        let mut turns = self.turns(owner, window + 1, true).await?;
        let window_ended = turns.len() > window;
        turns.truncate(window);
        let ledger = Ledger::read(options.ledger_dir.as_deref(), owner);
        let mut warnings = Vec::new();
        if let Some(reason) = &ledger.unreadable {
            warnings.push(SpawnWarning {
                code: WarningCode::LedgerUnreadable,
                message: format!("the decision ledger is unreadable ({reason}); prompts decide"),
                tool_use_id: None,
            });
        }
        let mut matches: Vec<(Spawn, bool)> = Vec::new();
        for turn in &turns {
            // Newest first: later items of a turn are newer.
            for value in turn.items.iter().rev() {
                let Item::CollabAgentToolCall(call) = Item::from_value(value) else {
                    continue;
                };
                if call.tool != "spawnAgent" {
                    continue;
                }
                if let Some(found) = judge(&call, &turn.id, &target, &ledger, &mut warnings) {
                    matches.push(found);
                }
            }
        }
        // Stable: ledger-tied spawns first, each group newest first.
        matches.sort_by_key(|(_, ledger_tied)| !ledger_tied);
        let mut spawns = matches.into_iter().map(|(spawn, _)| spawn);
        let spawn = spawns.next();
        let others: Vec<Spawn> = spawns.collect();
        if !others.is_empty() {
            warnings.push(SpawnWarning {
                code: WarningCode::SeveralSpawns,
                message: format!(
                    "{} spawns name {target}; the first is taken",
                    others.len() + 1
                ),
                tool_use_id: None,
            });
        }
        if spawn.is_none() && window_ended {
            warnings.push(SpawnWarning {
                code: WarningCode::WindowEnded,
                message: format!(
                    "no spawn in the owner's {window} most recent turns names {target}, and it has older turns"
                ),
                tool_use_id: None,
            });
        }
        Ok(SpawnSearch {
            op: target,
            spawn,
            others,
            window_ended,
            warnings,
        })
    }
}

/// Whether one spawn item names the operation, and how; the flag is "tied by
/// an allowed decision". Adds the spawn's own warnings.
fn judge(
    call: &CollabAgentToolCall,
    turn_id: &str,
    target: &Op,
    ledger: &Ledger,
    warnings: &mut Vec<SpawnWarning>,
) -> Option<(Spawn, bool)> {
    let prompt_op = call.prompt.as_deref().and_then(parse_marker);
    let (allowed, refused) = ledger.covering(&call.id);
    let ledger_op = allowed.and_then(DecisionLine::op);
    let warn = |code, message: String| SpawnWarning {
        code,
        message,
        tool_use_id: Some(call.id.clone()),
    };
    let mut own = Vec::new();
    let via = match (allowed, &ledger_op) {
        (Some(_), Some(op)) if op == target => {
            if let Some(other) = prompt_op.as_ref().filter(|prompt| *prompt != target) {
                own.push(warn(
                    WarningCode::LedgerOpDiffers,
                    format!(
                        "the ledger ties spawn {} to {target}, its prompt names {other}",
                        call.id
                    ),
                ));
            }
            Via::Ledger
        }
        // The ledger ties it to another operation: not this one's spawn.
        (Some(_), Some(_)) => return None,
        (Some(_), None) if prompt_op.as_ref() == Some(target) => Via::Prompt,
        (None, _) if prompt_op.as_ref() == Some(target) => {
            if refused {
                own.push(warn(
                    WarningCode::RefusedDecision,
                    format!("the hook refused spawn {}, yet it ran", call.id),
                ));
            } else if ledger.unreadable.is_none() {
                own.push(warn(
                    WarningCode::NoLedgerLine,
                    format!("no ledger line covers spawn {}", call.id),
                ));
            }
            Via::Unrecorded
        }
        _ => return None,
    };
    let Some(thread_id) = call.receiver_thread_ids.first() else {
        warnings.push(warn(
            WarningCode::NoReceiver,
            format!(
                "spawn {} names {target} but created no thread; skipped",
                call.id
            ),
        ));
        return None;
    };
    warnings.extend(own);
    Some((
        Spawn {
            thread_id: thread_id.clone(),
            tool_use_id: call.id.clone(),
            turn_id: turn_id.to_owned(),
            via,
            ledger_op,
            prompt_op,
        },
        allowed.is_some(),
    ))
}
