//! `agentrace status`: the child-work records of a run (§6), folded from its
//! log by the core's run book, as a table, as `{"records": [...]}`, or as every
//! change in order (JSON Lines). It owns only reading and printing; the
//! records are the core's, the same a live observer had.

use std::path::Path;

use agentrace_core::book::RunBook;
use agentrace_core::childwork::{
    ChildWorkChange, ChildWorkKind, ChildWorkRecord, ChildWorkState, WaitingOn,
};
use agentrace_core::model::{Envelope, Timestamp};
use agentrace_store::{Home, LogReader};
use clap::Args;
use serde::Serialize;

use crate::clock::now;
use crate::output::Out;
use crate::render::{one_line, skipped_warning};

/// `agentrace status` arguments.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Run id, a unique prefix of one (or of an imported run's Codex thread or Claude session id), or `latest` (the default).
    run: Option<String>,
    /// Print `{"records": [...]}`.
    #[arg(long)]
    json: bool,
    /// Print every change in order as JSON Lines:
    /// `{"change": "admitted"|"updated"|"ended"|"settled", "record": {...}}`.
    #[arg(long)]
    changes: bool,
}

/// `{"records": [...]}`.
#[derive(Debug, Serialize)]
pub struct RecordsView<'a> {
    /// The records, in admission order.
    pub records: &'a [ChildWorkRecord],
}

/// A run's log folded by the run book.
pub struct Folded {
    /// The book after the whole log.
    pub book: RunBook,
    /// Every record change, in order (the book's session rule applied).
    pub changes: Vec<ChildWorkChange>,
}

/// Reads a run's log and folds it through the run book, whose session rule
/// (`session_ended`, or for a log without one the run's status) settles
/// live records: the same records every other reader shows.
pub fn fold_log(path: &Path, run: &agentrace_core::model::RunId, prices: std::sync::Arc<agentrace_core::prices::PriceBook>) -> anyhow::Result<Folded> {
    let mut reader = LogReader::open(path)?.with_run_id(run.clone());
    let mut book = RunBook::new(run.clone()).with_prices(prices);
    let mut changes = Vec::new();
    for envelope in &mut reader {
        let envelope: Envelope = envelope?;
        changes.extend(book.apply(&envelope).records);
    }
    if !reader.skipped().is_empty() {
        skipped_warning(path, reader.skipped());
    }
    Ok(Folded { book, changes })
}

/// The hint `status` and `attach` give for a session read from its files
/// (an import) that is still at work while nothing follows those files: its
/// log grows only as they are imported, so what they show is as of the last
/// import, and `attach` would wait on a log nothing writes.
pub fn unfollowed_hint(home: &Home, book: &RunBook) -> Option<String> {
    use agentrace_core::model::Source;
    let run = book.state().summary();
    let imported = match run.source {
        Source::CodexRollout | Source::ClaudeTranscript => true,
        Source::CodexAppServer
        | Source::CodexRun
        | Source::CodexTap
        | Source::CodexExec
        | Source::ClaudeStream
        | Source::ClaudeHook
        | Source::Legacy => false,
    };
    (imported && !book.session_over() && home.follower().is_none()).then(|| {
        format!(
            "hint: {} is a session still at work, read from its files, and nothing follows them now: this is as of the last import; `agentrace watch` (or `top`, `serve --watch`) beside it keeps it current",
            run.id
        )
    })
}

/// Runs `agentrace status`.
pub fn run(home: &Home, args: &StatusArgs, out: &mut Out) -> anyhow::Result<()> {
    let id = match args.run.as_deref() {
        Some(run) => home.resolve(run)?,
        // No run named and none recorded: say so, rather than that no run
        // matches a `latest` the user never typed.
        None => home.newest_run()?.ok_or_else(|| {
            anyhow::anyhow!(
                "no runs yet in {}\nhint: `agentrace` imports your Codex and Claude Code sessions (`agentrace top` follows them live); `agentrace run codex|claude` records one",
                home.runs_dir().display()
            )
        })?,
    };
    let folded = fold_log(&home.log_path(&id), &id, home.prices())?;
    if let Some(hint) = unfollowed_hint(home, &folded.book) {
        eprintln!("{hint}");
    }
    if args.changes {
        for change in &folded.changes {
            out.json(change)?;
        }
        return Ok(());
    }
    let records = folded.book.records();
    if args.json {
        return out.json_pretty(&RecordsView { records: &records });
    }
    if records.is_empty() {
        out.line(format!("run {id}: no subagents or background commands"))?;
        return Ok(());
    }
    for line in table(&records, now()) {
        out.line(line)?;
    }
    Ok(())
}

/// One line per record, each child under its owner.
pub fn table(records: &[ChildWorkRecord], now: Timestamp) -> Vec<String> {
    let label_width = records
        .iter()
        .map(|record| one_line(&record.label, 32).chars().count() + 3 * depth(records, record))
        .max()
        .unwrap_or(0);
    let mut lines = Vec::new();
    let tops = records.iter().filter(|record| {
        record
            .parent_child_work_id
            .as_ref()
            .is_none_or(|parent| !records.iter().any(|r| &r.child_work_id == parent))
    });
    for record in tops {
        push_tree(records, record, 0, label_width, now, &mut lines);
    }
    lines
}

fn depth(records: &[ChildWorkRecord], record: &ChildWorkRecord) -> usize {
    let mut depth = 0;
    let mut parent = record.parent_child_work_id.as_ref();
    while let Some(id) = parent {
        match records.iter().find(|r| &r.child_work_id == id) {
            Some(owner) if depth < records.len() => {
                depth += 1;
                parent = owner.parent_child_work_id.as_ref();
            }
            _ => break,
        }
    }
    depth
}

fn push_tree(
    records: &[ChildWorkRecord],
    record: &ChildWorkRecord,
    depth: usize,
    width: usize,
    now: Timestamp,
    lines: &mut Vec<String>,
) {
    if depth > records.len() {
        return;
    }
    let indent = if depth == 0 {
        String::new()
    } else {
        format!("{}└─ ", "   ".repeat(depth - 1))
    };
    lines.push(line(record, &indent, width, now));
    for child in records
        .iter()
        .filter(|r| r.parent_child_work_id.as_ref() == Some(&record.child_work_id))
    {
        push_tree(records, child, depth + 1, width, now, lines);
    }
}

/// `label  state  operation-or-outcome  gen N  tokens  cost  age  "last message"`.
pub fn line(record: &ChildWorkRecord, indent: &str, width: usize, now: Timestamp) -> String {
    let label = format!("{indent}{}", one_line(&record.label, 32));
    let kind = match record.kind {
        ChildWorkKind::Agent => "agent",
        ChildWorkKind::Command => "command",
    };
    let state = match (record.state, record.waiting_on, record.outcome) {
        (ChildWorkState::Working, _, _) => "working".to_owned(),
        (ChildWorkState::Waiting, Some(WaitingOn::Approval), _) => "waiting on approval".to_owned(),
        (ChildWorkState::Waiting, Some(WaitingOn::UserInput), _) => {
            "waiting on user input".to_owned()
        }
        (ChildWorkState::Waiting, None, _) => "waiting".to_owned(),
        (ChildWorkState::Ended, _, Some(outcome)) => format!("ended {}", outcome_word(outcome)),
        (ChildWorkState::Ended, _, None) => "ended".to_owned(),
    };
    let mut columns = vec![
        format!("{label:<width$}"),
        format!("{kind:<7}"),
        format!("{state:<21}"),
        format!("gen {}", record.generation),
    ];
    if let Some(operation) = &record.operation {
        let input = one_line(&operation.input, 40);
        columns.push(if input.is_empty() {
            operation.tool_name.clone()
        } else {
            format!("{}: {input}", operation.tool_name)
        });
    }
    if let Some(tokens) = record.total_tokens {
        columns.push(crate::render::count(tokens, "token", "tokens"));
    }
    if let Some(status) = record.cost_status {
        columns.push(crate::render::cost_text(record.cost, status));
    }
    columns.push(match record.ended_at {
        Some(ended) => format!(
            "ran {}",
            duration(ended.millis() - record.started_at.millis())
        ),
        None => format!(
            "for {}",
            duration(now.millis() - record.started_at.millis())
        ),
    });
    if let Some(message) = &record.last_message {
        columns.push(format!("\"{}\"", one_line(message, 60)));
    }
    columns.join("  ")
}

/// A record change as `attach` prints it (and `top`'s events view):
/// `  ended    Kant  agent  ended succeeded  …`, its age as it was when the
/// change happened, not as of today.
pub fn change_line(change: &agentrace_core::childwork::ChildWorkChange) -> String {
    use agentrace_core::childwork::ChangeKind;
    let word = match change.change {
        ChangeKind::Admitted => "admitted",
        ChangeKind::Updated => "updated",
        ChangeKind::Ended => "ended",
        ChangeKind::Settled => "settled",
    };
    format!("  {word:<8} {}", line(&change.record, "", 0, change.record.updated_at))
}

/// A warning as `attach` prints it: `  warning  code: message`.
pub fn warning_line(warning: &agentrace_core::model::Warning) -> String {
    format!("  {:<8} {}: {}", crate::commands::check::severity_word(warning.severity), warning.code, warning.message)
}

/// An outcome as people read it. A `cancelled` one (its JSON value) reads
/// `interrupted`, the word `show` and the run list give an agent or run
/// stopped before its end: `status` said `ended cancelled` of a helper
/// `show` called `interrupted`.
fn outcome_word(outcome: agentrace_core::childwork::Outcome) -> &'static str {
    use agentrace_core::childwork::Outcome;
    match outcome {
        Outcome::Succeeded => "succeeded",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "interrupted",
        Outcome::Unknown => "unknown",
    }
}

/// The state of a row of the sessions' overview (`top`) as people read
/// it, in `status`'s words: the overview's `ended cancelled` (a JSON value
/// `top --json` and `/api/live` keep) reads `ended interrupted`.
pub fn state_text(state: &str) -> &str {
    match state {
        "ended cancelled" => "ended interrupted",
        other => other,
    }
}

/// `850ms`, `4.2s`, `3m05s`, `2h10m`, `5d06h` (a session days old read as
/// `126h00m`).
pub fn duration(millis: i64) -> String {
    let millis = millis.max(0);
    match millis {
        0..1_000 => format!("{millis}ms"),
        1_000..60_000 => format!("{:.1}s", millis as f64 / 1_000.0),
        60_000..3_600_000 => format!("{}m{:02}s", millis / 60_000, (millis / 1_000) % 60),
        3_600_000..86_400_000 => format!("{}h{:02}m", millis / 3_600_000, (millis / 60_000) % 60),
        _ => format!("{}d{:02}h", millis / 86_400_000, (millis / 3_600_000) % 24),
    }
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations_read_in_the_largest_two_units_that_fit() {
        let read: Vec<String> = [-5, 850, 4_200, 185_000, 7_800_000, 86_399_999, 86_400_000, 453_600_000].into_iter().map(duration).collect();
        assert_eq!(read, ["0ms", "850ms", "4.2s", "3m05s", "2h10m", "23h59m", "1d00h", "5d06h"]);
    }
}
