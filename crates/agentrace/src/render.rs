//! Human-readable views: plain text, no colour, stable enough to snapshot.
//! Every agent-provided string is shown on one line (newlines folded) and
//! cut to a readable length.

use std::io;
use std::path::Path;

use agentrace_core::days;
use agentrace_core::model::{Envelope, Event, EventBody, Role, RunStatus, TokenUsage};
use agentrace_core::state::{AgentNode, CostStatus, RunView};
use agentrace_store::SkippedLine;

use crate::output::Out;

const TEXT_WIDTH: usize = 100;

/// One line, at most `width` characters, newlines folded.
pub fn one_line(text: &str, width: usize) -> String {
    let folded: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let folded = folded.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(width) {
        Some((index, _)) => format!("{}…", &folded[..index]),
        None => folded,
    }
}

/// A count and its noun, one or many: `1 tool call`, `3 tool calls`,
/// `0 events`. Every count a printer writes in words goes through it (a
/// run's tree said `1 tool calls`).
pub fn count(number: u64, one: &str, many: &str) -> String {
    if number == 1 {
        format!("1 {one}")
    } else {
        format!("{number} {many}")
    }
}

/// A run's counts as `show` and the reports say them: `123 events · 0
/// message/tool events of unknown actor · 0 undecoded lines · 0 unknown
/// frames`.
pub fn counts_text(counts: &agentrace_core::state::Counts) -> String {
    format!(
        "{} · {} of unknown actor · {} · {}",
        count(counts.events, "event", "events"),
        count(counts.unknown_actor, "message/tool event", "message/tool events"),
        count(counts.undecoded_lines, "undecoded line", "undecoded lines"),
        count(counts.unknown_frames, "unknown frame", "unknown frames"),
    )
}

fn tokens_text(tokens: &TokenUsage) -> String {
    format!(
        "{} total ({} in, {} cached, {} out, {} reasoning)",
        tokens.total_tokens,
        tokens.input_tokens,
        tokens.cached_input_tokens,
        tokens.output_tokens,
        tokens.reasoning_output_tokens
    )
}

fn json_word<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn find<'a>(agents: &'a [AgentNode], thread: &str) -> Option<&'a AgentNode> {
    agents.iter().find_map(|agent| {
        if agent.thread_id.as_str() == thread {
            Some(agent)
        } else {
            find(&agent.children, thread)
        }
    })
}

/// `agentrace show`.
pub fn show(out: &mut Out, view: &RunView, skipped: &[SkippedLine]) -> io::Result<()> {
    let run = &view.run;
    out.line(format!("run       {}", run.id))?;
    out.line(format!(
        "provider  {} ({})",
        json_word(&run.provider),
        json_word(&run.source)
    ))?;
    let shows_them = if run.helpers_working { " (`agentrace status` shows them)" } else { "" };
    out.line(format!("status    {}{shows_them}", status_text(run)))?;
    out.line(format!(
        "root      {}",
        run.root_thread_id
            .as_ref()
            .map(|id| id.to_string())
            .unwrap_or_else(|| "unknown (no root thread seen)".to_owned())
    ))?;
    if let Some(time) = time_text(run, crate::zone::from_env()) {
        out.line(format!("time      {time}"))?;
    }
    match (&run.result, &run.result_source) {
        (Some(result), Some(source)) => {
            out.line(format!("result    {}", one_line(result, TEXT_WIDTH)))?;
            let who = source
                .thread_id
                .as_ref()
                .and_then(|thread| find(&view.agents, thread.as_str()))
                .map(|agent| agent.label.clone())
                .unwrap_or_else(|| "Unknown actor".to_owned());
            out.line(format!(
                "  from    {who} ({}), thread {}, item {}",
                source.role.map(Role::as_str).unwrap_or("unknown"),
                source
                    .thread_id
                    .as_ref()
                    .map(|id| id.to_string())
                    .unwrap_or_else(|| "-".to_owned()),
                source
                    .item_id
                    .as_ref()
                    .map(|id| id.to_string())
                    .unwrap_or_else(|| "-".to_owned()),
            ))?;
        }
        (_, _) => {
            let why = match run.status {
                RunStatus::Running if run.session_ended => "none: the session ended before the root's turn did",
                RunStatus::Running => "none yet: the root's turn has not ended",
                RunStatus::Done => "none: the root's last turn ended without an answer of its own",
                RunStatus::Failed => "none: the root's last turn failed",
                RunStatus::Interrupted => "none: the root's last turn was interrupted",
            };
            out.line(format!("result    {why}"))?;
        }
    }
    if let Some(error) = &run.error {
        out.line(format!("error     {}", one_line(error, TEXT_WIDTH)))?;
    }
    if let Some(tokens) = &run.tokens {
        out.line(format!("tokens    {}", tokens_text(tokens)))?;
        let why = run.incomplete.iter().map(|reason| reason.as_str()).collect::<Vec<_>>().join(", ");
        let status = match (run.cost_status, why.is_empty()) {
            (CostStatus::Exact, _) => String::new(),
            (CostStatus::Floor, true) => " (a floor: some tokens have no price; see `agentrace prices`)".to_owned(),
            (CostStatus::Floor, false) => format!(" (a floor: tokens missing: {why})"),
            (CostStatus::Unknown, _) => " (no price for its models; see `agentrace prices`)".to_owned(),
        };
        out.line(format!("cost      {}{status}", cost_text(run.cost, run.cost_status)))?;
    }
    out.line("")?;
    out.line("agents")?;
    if view.agents.is_empty() {
        out.line("  (none seen)")?;
    }
    for agent in &view.agents {
        tree(out, agent, "  ", "  ")?;
    }
    // Tokens of no agent of the tree (Claude Code's startup "Warmup"
    // agents, replies of unknown owner): in the run's total above, so
    // shown beside the tree, as `usage` shows them, for the agents' figures
    // to add up to it.
    for outside in &run.outside_tree {
        let parts = &outside.tokens_by_model;
        let total: u64 = parts.iter().map(|part| part.tokens.total_tokens).sum();
        let unpriced: u64 = parts.iter().map(|part| part.unpriced_tokens).sum();
        let status = match unpriced {
            0 => CostStatus::Exact,
            _ if unpriced >= total => CostStatus::Unknown,
            _ => CostStatus::Floor,
        };
        let cost = cost_text(Some(parts.iter().map(|part| part.cost).sum()), status);
        out.line(format!("  {} (outside the tree)  {}, {cost}", outside.label, count(total, "token", "tokens")))?;
    }
    out.line("")?;
    let counts = &run.counts;
    out.line(format!(
        "counts    {} · {}{}",
        counts_text(counts),
        count(counts.skipped_log_lines.max(skipped.len() as u64), "skipped log line", "skipped log lines"),
        if counts.dropped_bytes > 0 {
            format!(" · {} not recorded (recorder fell behind)", count(counts.dropped_bytes, "byte", "bytes"))
        } else {
            String::new()
        },
    ))?;
    if view.warnings.is_empty() {
        out.line("warnings  none")?;
    } else {
        out.line("warnings")?;
        for warning in &view.warnings {
            out.line(format!(
                "  {} {}: {}",
                json_word(&warning.severity),
                warning.code,
                one_line(&warning.message, TEXT_WIDTH)
            ))?;
        }
    }
    Ok(())
}

/// A cost as people read it: `$0.1601`, `≥$0.1601` for a floor, `$?` when
/// nothing could be priced.
pub fn cost_text(cost: Option<f64>, status: CostStatus) -> String {
    match (cost, status) {
        (None, _) | (_, CostStatus::Unknown) => "$?".to_owned(),
        (Some(cost), CostStatus::Floor) => format!("≥${cost:.4}"),
        (Some(cost), CostStatus::Exact) => format!("${cost:.4}"),
    }
}

fn tree(out: &mut Out, agent: &AgentNode, first: &str, rest: &str) -> io::Result<()> {
    let tokens = agent
        .tokens
        .map(|tokens| format!(", {}, {}", count(tokens.total_tokens, "token", "tokens"), cost_text(agent.cost, agent.cost_status)))
        .unwrap_or_default();
    // Known by inference alone (a `codex exec` helper's rollout).
    let derived = if agent.confidence == Some(agentrace_core::model::Confidence::Derived) {
        ", derived"
    } else {
        ""
    };
    out.line(format!(
        "{first}{} [{}{derived}] {}  {}, {}, {}{tokens}",
        agent.label,
        agent.role.as_str(),
        agent.thread_id,
        agent.status.as_str(),
        count(agent.event_count, "event", "events"),
        count(agent.tool_count, "tool call", "tool calls"),
    ))?;
    let detail_prefix = if agent.children.is_empty() {
        format!("{rest}    ")
    } else {
        format!("{rest}│   ")
    };
    if agent.role == Role::Unknown {
        out.line(format!(
            "{detail_prefix}no spawn link names this thread: its owner is unknown"
        ))?;
    }
    if let Some(message) = &agent.final_message {
        out.line(format!(
            "{detail_prefix}final: {}",
            one_line(message, TEXT_WIDTH)
        ))?;
    }
    let count = agent.children.len();
    for (index, child) in agent.children.iter().enumerate() {
        let last = index + 1 == count;
        let branch = format!("{rest}{}", if last { "└─ " } else { "├─ " });
        let below = format!("{rest}{}", if last { "   " } else { "│  " });
        tree(out, child, &branch, &below)?;
    }
    Ok(())
}

/// One event of `agentrace events`.
pub fn event_line(out: &mut Out, envelope: &Envelope) -> io::Result<()> {
    out.line(event_text(envelope))
}

/// Under an event of `events --raw`: its frame as read, or why it cannot
/// be shown (an imported frame whose source changed or is gone); nothing
/// for a derived event, which has no frame.
pub fn raw_line(out: &mut Out, envelope: &Envelope) -> io::Result<()> {
    use agentrace_core::model::RawUnavailable;
    // An unresolved reference reads `raw: null` beside why.
    let text = match (envelope.raw_unavailable, &envelope.raw) {
        (Some(RawUnavailable::SourceChanged), _) => "unavailable: its source changed".to_owned(),
        (Some(RawUnavailable::SourceMissing), _) => "unavailable: its source is gone".to_owned(),
        (None, Some(raw)) => raw.get().to_owned(),
        (None, None) => return Ok(()),
    };
    out.line(format!("{:>6}  raw {text}", ""))
}

/// The text of [`event_line`]: `sequence  time  actor  what happened`,
/// the time RFC 3339 in `AGENTRACE_TZ`'s zone with its offset, or as the
/// log writes it (`…Z`) when none is named: a time of day alone would not
/// say which zone or day it is of.
pub fn event_text(envelope: &Envelope) -> String {
    let time = days::rfc3339_in(envelope.timestamp, &crate::zone::from_env().tz);
    // The run's own events are told as the viewer tells them: no agent,
    // not even an unknown one, wrote them.
    let actor = if envelope.is_run_own() { agentrace_core::model::RUN_OWN_LABEL } else { envelope.actor.label.as_str() };
    format!(
        "{:>6}  {}  {:<20}  {}",
        envelope.sequence,
        time,
        one_line(actor, 20),
        describe(&envelope.event)
    )
}

fn describe(event: &EventBody) -> String {
    let EventBody::Known(event) = event else {
        return format!(
            "{} (unknown event type, shown raw with --json)",
            event.type_name()
        );
    };
    let text = match event {
        Event::RunStarted { provider, source, .. } => {
            format!(
                "run started ({}, {})",
                json_word(provider),
                json_word(source)
            )
        }
        Event::Message {
            role, phase, text, ..
        } => format!(
            "message {role}{}: {}",
            phase
                .as_ref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default(),
            text
        ),
        Event::Reasoning { text, .. } => format!("reasoning: {text}"),
        Event::ItemStarted { item_type, .. } => format!("{item_type} started"),
        Event::ItemCompleted { item_type, .. } => format!("{item_type} completed"),
        Event::Delta { kind, text, .. } => format!("{kind} delta: {text}"),
        Event::ToolUse { name, input, .. } => format!("tool {name}: {input}"),
        Event::ToolResult {
            name,
            status,
            exit_code,
            output,
            ..
        } => format!(
            "tool {name} {}{}: {output}",
            status.as_deref().unwrap_or("ended"),
            exit_code
                .map(|code| format!(" (exit {code})"))
                .unwrap_or_default()
        ),
        Event::TurnStarted { turn_id, .. } => format!("turn {turn_id} started"),
        Event::TurnCompleted {
            turn_id, status, ..
        } => format!("turn {turn_id} {status}"),
        Event::Usage { total, .. } => format!("usage: {}", tokens_text(total)),
        Event::Status {
            status,
            waiting_on_approval,
            waiting_on_user_input,
        } => format!(
            "status {status}{}{}",
            if *waiting_on_approval {
                " (waiting on approval)"
            } else {
                ""
            },
            if *waiting_on_user_input {
                " (waiting on user input)"
            } else {
                ""
            }
        ),
        Event::ThreadStarted { thread_id, .. } => format!("thread {thread_id} started"),
        Event::AgentSpawned {
            child_thread_id,
            via,
            prompt,
            ..
        } => format!(
            "spawned {child_thread_id} (via {via}){}",
            prompt
                .as_ref()
                .map(|p| format!(": {p}"))
                .unwrap_or_default()
        ),
        Event::AgentWaitStarted {
            child_thread_ids, ..
        } => {
            if child_thread_ids.is_empty() {
                "waits for its helpers".to_owned()
            } else {
                format!(
                    "waits for {}",
                    child_thread_ids
                        .iter()
                        .map(|id| id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        }
        Event::AgentCompleted {
            thread_id,
            status,
            result,
            ..
        } => format!(
            "agent {thread_id} {}{}",
            status.as_str(),
            result
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ),
        Event::ActorResolved { thread_id, actor } => format!(
            "attribution: {thread_id} is {} ({})",
            actor.label,
            actor.role.as_str()
        ),
        Event::ServerRequest {
            method, summary, ..
        } => format!("asks the client: {method} {summary}"),
        Event::ClientRequest { method, .. } => format!("client request {method}"),
        Event::Response {
            request_id,
            method,
            error,
            ..
        } => format!(
            "response to {}{}",
            method
                .clone()
                .unwrap_or_else(|| format!("request {request_id}")),
            error
                .as_ref()
                .map(|e| format!(": error {e}"))
                .unwrap_or_default()
        ),
        Event::Error {
            message,
            will_retry,
            ..
        } => format!(
            "error{}: {message}",
            if *will_retry == Some(true) {
                " (will retry)"
            } else {
                ""
            }
        ),
        Event::Notice {
            method, message, ..
        } => format!(
            "{method}{}",
            message
                .as_ref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ),
        Event::Warning { warning } => format!("warning {}: {}", warning.code, warning.message),
        Event::Done { result, .. } => format!(
            "DONE: {}",
            result.as_deref().unwrap_or("(no answer from the root)")
        ),
        Event::Failed { error, .. } => {
            format!("FAILED: {}", error.as_deref().unwrap_or("(no error given)"))
        }
        Event::Interrupted { .. } => "INTERRUPTED".to_owned(),
        Event::Dropped { bytes, .. } => {
            format!("recorder fell behind: {bytes} bytes passed through unrecorded")
        }
        Event::Replayed {
            of_thread_id,
            record_type,
        } => format!(
            "replayed copy of {}'s {record_type}",
            of_thread_id
                .as_ref()
                .map(|id| id.to_string())
                .unwrap_or_else(|| "another thread".to_owned())
        ),
        Event::ModelSelected { model, .. } => format!("model {model}"),
        Event::SessionEnded { reason } => format!("session ended ({})", reason.as_str()),
        Event::Unknown { reason, .. } => format!("unknown: {reason}"),
    };
    one_line(&text, 160)
}

/// Warns on stderr about log lines the reader skipped.
pub fn skipped_warning(path: &Path, skipped: &[SkippedLine]) {
    eprintln!(
        "warning: {} line{} of {} skipped:",
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" },
        path.display()
    );
    for line in skipped.iter().take(5) {
        eprintln!("  line {}: {}", line.line_number, line.reason);
    }
}

/// The run's status as `show` and the reports say it: the root's, and
/// whether its helpers still work after the root's turn ended, or its
/// session ended before the root's turn did.
pub fn status_text(run: &agentrace_core::state::RunSummary) -> String {
    if run.helpers_working {
        format!("{}, helpers still working", run.status.as_str())
    } else if run.session_ended {
        // Nothing goes on: `running` is where it stopped.
        format!("{}, but its session ended (nothing is at work)", run.status.as_str())
    } else {
        run.status.as_str().to_owned()
    }
}

/// The most agents an `--actor` error lists.
const LISTED_AGENTS: usize = 20;

/// What `--actor` could have named instead of `name`: the agents (label
/// and thread id, as `show` prints them), and the thread `name` begins
/// when it begins just one.
pub fn actor_choices(agents: &[AgentNode], name: &str) -> String {
    let all = agentrace_core::state::every_agent(agents);
    let mut text = String::from("its agents (label, thread id):");
    for agent in all.iter().take(LISTED_AGENTS) {
        text.push_str(&format!("\n  {}  {}", agent.label, agent.thread_id.as_str()));
    }
    if all.len() > LISTED_AGENTS {
        text.push_str(&format!("\n  … and {} more (`agentrace show` lists them all)", all.len() - LISTED_AGENTS));
    }
    let begun: Vec<&&AgentNode> = all.iter().filter(|agent| !name.is_empty() && agent.thread_id.as_str().starts_with(name)).collect();
    if let [agent] = begun.as_slice() {
        text.push_str(&format!("\nhint: did you mean {} ({})? --actor takes a whole thread id", agent.thread_id.as_str(), agent.label));
    }
    text.push_str("\nhint: --actor takes main, helpers, unknown, an agent's label as `show` prints it, or its thread id");
    text
}

/// When a run ran, as `show`'s `time` line and the exported reports say
/// it: its start, and once its root's turn ended its end and duration
/// (`endedAt`, never the last line logged, which may be the session's end
/// long after), in `zone`.
pub fn time_text(run: &agentrace_core::state::RunSummary, zone: &crate::zone::Zone) -> Option<String> {
    let started = run.started_at?;
    let ended = run
        .ended_at
        .map(|ended| {
            let seconds = run.duration_ms().unwrap_or_default() as f64 / 1000.0;
            format!(", ended {} ({seconds:.1} s)", days::rfc3339_in(ended, &zone.tz))
        })
        .unwrap_or_default();
    Some(format!("started {}{ended}", days::rfc3339_in(started, &zone.tz)))
}

/// A cost in cents as the run list and the status line print it:
/// `<$0.01` for one that is not nothing but rounds to `$0.00`.
pub fn cents(cost: f64) -> String {
    if cost > 0.0 && cost < 0.005 {
        "<$0.01".to_owned()
    } else {
        format!("${cost:.2}")
    }
}

/// Tokens in a few characters (`5.4k`, `12k`, `3.4M`, `12M`) as the run
/// list, `top` and the status line print them: rounded, one decimal under
/// ten thousand and under ten million, as the viewer's run list gives them
/// (its `fmtTokens`), so every list agrees. The unit
/// is picked by the rounded figure: 9,960 is `10k` and 999,600 `1.0M`,
/// never `10.0k` beside `11k` or `1000k`.
pub fn short_tokens(tokens: u64) -> String {
    // Rounded half up, in whole numbers (no float's nearest tie).
    let tenths = |unit: u64| (tokens + unit / 20) / (unit / 10);
    let whole = |unit: u64| (tokens + unit / 2) / unit;
    if tokens < 1_000 {
        tokens.to_string()
    } else if tenths(1_000) < 100 {
        format!("{}.{}k", tenths(1_000) / 10, tenths(1_000) % 10)
    } else if whole(1_000) < 1_000 {
        format!("{}k", whole(1_000))
    } else if tenths(1_000_000) < 100 {
        format!("{}.{}M", tenths(1_000_000) / 10, tenths(1_000_000) % 10)
    } else {
        format!("{}M", whole(1_000_000))
    }
}

#[cfg(test)]
mod tests {
    use super::{count, short_tokens};

    /// `show` said `1 tool calls`: one of anything is named in the singular.
    #[test]
    fn a_count_of_one_names_one_thing() {
        let said: Vec<String> = [0, 1, 2, 11].into_iter().map(|number| count(number, "tool call", "tool calls")).collect();
        assert_eq!(said, ["0 tool calls", "1 tool call", "2 tool calls", "11 tool calls"]);
    }

    /// `runs` truncated (10819 → 10k, 5359 → 5k) where the viewer's list
    /// rounds (11k, 5.4k): the same run had two token figures. At a unit's
    /// edge the rounded figure picks the unit (9,999 was `10.0k`, 999,600
    /// `1000k`). The viewer's `fmtTokens` is held to the same list (the
    /// browser test `the_viewers_token_figures_are_those_of_agentrace_runs`).
    #[test]
    fn token_figures_are_rounded_as_the_viewers_run_list_rounds_them() {
        let shown: Vec<String> = [573, 999, 1_050, 5_359, 9_949, 9_950, 9_999, 10_819, 19_871, 67_515, 999_499, 999_500, 999_600, 1_234_567, 9_949_999, 9_960_000, 12_500_000]
            .into_iter()
            .map(short_tokens)
            .collect();
        assert_eq!(shown, ["573", "999", "1.1k", "5.4k", "9.9k", "10k", "10k", "11k", "20k", "68k", "999k", "1.0M", "1.0M", "1.2M", "9.9M", "10M", "13M"]);
    }
}
