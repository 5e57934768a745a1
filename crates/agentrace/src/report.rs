//! Shareable run reports for `agentrace export --html` and `--markdown`: the
//! summary, result provenance, warnings, agent tree and a timeline, in one
//! self-contained file (no scripts, no network). Rendering is a pure function
//! of the run view and its envelopes; every agent-provided string is escaped
//! for the target format, and the output stays under a size bound with a
//! count of what was left out (or, when the parts around the timeline alone
//! are over it, says so). A run is read for them as `show` gives it
//! ([`shown_run`], which the OpenTelemetry export shares).

use std::fmt::Write as _;

use agentrace_core::days;
use agentrace_core::html::escape;
use agentrace_core::model::{Envelope, Event, EventBody, Role, RunId, TokenUsage};
use agentrace_core::state::{AgentNode, RunView};
use agentrace_store::zone::Zone;
use agentrace_store::{Home, LogReader};

use crate::clock::now;
use crate::render::count;
use crate::warning_config::{config, WarningArgs};

/// Longest agent text (a prompt, a message, a tool's output) in a report.
const MAX_TEXT_CHARS: usize = 2000;

/// Report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One self-contained HTML page.
    Html,
    /// GitHub-flavoured Markdown.
    Markdown,
}

/// Run `id` as `show` gives it with the home's config file (no flags),
/// and the final actors of the same fold: for what is made of a run
/// elsewhere (its exports), which goes on to show its envelopes
/// (corrections applied).
pub fn shown_run(
    home: &Home,
    id: &RunId,
) -> anyhow::Result<(RunView, agentrace_core::state::FinalActors)> {
    let config = config(home, &WarningArgs::default())?;
    let loaded = home.load_run(id)?;
    let view = loaded.checked_view(&config, Some(now()));
    Ok((view, loaded.final_actors().clone()))
}

/// Reads a run and renders it (corrections applied to every event).
pub fn render_run(
    home: &Home,
    id: &RunId,
    format: Format,
    max_bytes: usize,
) -> anyhow::Result<String> {
    let path = home.log_path(id);
    // With the warnings `show` lists (the detectors' too).
    let (view, finals) = shown_run(home, id)?;
    let mut envelopes = Vec::new();
    let mut reader = LogReader::open(&path)?;
    for envelope in &mut reader {
        let mut envelope = envelope?;
        finals.apply(&mut envelope);
        envelope.raw = None;
        // A shared report names no file of the user's machine.
        envelope.raw_ref = None;
        envelopes.push(envelope);
    }
    // Times in the zone `show` prints them in (`AGENTRACE_TZ`, else UTC).
    Ok(render(&view, &envelopes, format, max_bytes, crate::zone::from_env()))
}

/// One timeline row.
struct Row {
    time: String,
    depth: usize,
    actor: String,
    role: Role,
    kind: &'static str,
    text: String,
}

/// The report of `view` with the timeline of `envelopes`, its times in
/// `zone`.
pub fn render(view: &RunView, envelopes: &[Envelope], format: Format, max_bytes: usize, zone: &Zone) -> String {
    let mut hidden = 0u64;
    let rows: Vec<Row> = envelopes
        .iter()
        .filter_map(|envelope| {
            let row = row(view, envelope, zone);
            if row.is_none() {
                hidden += 1;
            }
            row
        })
        .collect();
    match format {
        Format::Html => html(view, &rows, hidden, max_bytes, zone),
        Format::Markdown => markdown(view, &rows, hidden, max_bytes, zone),
    }
}

fn row(view: &RunView, envelope: &Envelope, zone: &Zone) -> Option<Row> {
    let EventBody::Known(event) = &envelope.event else {
        return None;
    };
    let label_of = |thread: &agentrace_core::model::ThreadId| {
        find(&view.agents, thread)
            .map(|node| node.label.clone())
            .unwrap_or_else(|| thread.to_string())
    };
    let (kind, text) = match event {
        Event::Message {
            role, text, phase, ..
        } => (
            "message",
            match phase {
                Some(phase) => format!("{role} ({phase}): {text}"),
                None => format!("{role}: {text}"),
            },
        ),
        Event::ToolUse { name, input, .. } => ("tool", format!("{name} {input}")),
        Event::ToolResult {
            name,
            status,
            exit_code,
            output,
            ..
        } => {
            let mut text = format!("{name} → {}", status.as_deref().unwrap_or("done"));
            if let Some(code) = exit_code {
                let _ = write!(text, " (exit {code})");
            }
            if !output.is_empty() {
                let _ = write!(text, ": {output}");
            }
            ("tool result", text)
        }
        Event::AgentSpawned {
            child_thread_id,
            prompt,
            ..
        } => (
            "spawn",
            format!(
                "spawned {}{}",
                label_of(child_thread_id),
                prompt
                    .as_deref()
                    .map(|p| format!(": {p}"))
                    .unwrap_or_default()
            ),
        ),
        Event::AgentWaitStarted { .. } => ("wait", "waits for its helpers".to_owned()),
        Event::AgentCompleted {
            thread_id,
            result,
            status,
            ..
        } => (
            "agent end",
            format!(
                "{} ended {}{}",
                label_of(thread_id),
                status.as_str(),
                result
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
        ),
        Event::TurnStarted { .. } => ("turn", "turn started".to_owned()),
        Event::TurnCompleted { status, error, .. } => (
            "turn",
            format!(
                "turn {status}{}",
                error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ),
        ),
        Event::Error { message, .. } => ("error", message.clone()),
        Event::Warning { warning } => ("warning", format!("{}: {}", warning.code, warning.message)),
        Event::ServerRequest {
            method, summary, ..
        } => ("request", format!("{method} {summary}")),
        Event::Done { result, .. } => (
            "done",
            result.clone().unwrap_or_else(|| "(no result)".to_owned()),
        ),
        Event::Failed { error, .. } => ("failed", error.clone().unwrap_or_default()),
        Event::Interrupted { error, .. } => ("interrupted", error.clone().unwrap_or_default()),
        Event::Dropped { bytes, .. } => ("dropped", format!("{bytes} bytes not recorded")),
        Event::Unknown { kind, reason, .. } => ("unknown", format!("{kind}: {reason}")),
        Event::RunStarted { .. }
        | Event::Reasoning { .. }
        | Event::ItemStarted { .. }
        | Event::ItemCompleted { .. }
        | Event::Delta { .. }
        | Event::Usage { .. }
        | Event::Status { .. }
        | Event::ThreadStarted { .. }
        | Event::ActorResolved { .. }
        | Event::ClientRequest { .. }
        | Event::Response { .. }
        | Event::Notice { .. }
        | Event::Replayed { .. }
        | Event::SessionEnded { .. }
        | Event::ModelSelected { .. } => return None,
    };
    Some(Row {
        time: days::clock_of(envelope.timestamp, &zone.tz),
        depth: envelope.actor.depth.unwrap_or(0) as usize,
        actor: envelope.actor.label.clone(),
        role: envelope.actor.role,
        kind,
        text: shorten(&text),
    })
}

fn find<'a>(
    nodes: &'a [AgentNode],
    thread: &agentrace_core::model::ThreadId,
) -> Option<&'a AgentNode> {
    nodes.iter().find_map(|node| {
        if &node.thread_id == thread {
            Some(node)
        } else {
            find(&node.children, thread)
        }
    })
}

fn html(view: &RunView, rows: &[Row], hidden: u64, max_bytes: usize, zone: &Zone) -> String {
    let run = &view.run;
    let mut out = String::new();
    let title = format!("agentrace · {}", run.id);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    out.push_str("<section class=\"summary\">\n<dl>\n");
    let mut field = |name: &str, value: &str| {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(value));
    };
    field("provider", &provider_text(view));
    field("status", &crate::render::status_text(run));
    if let Some(root) = &run.root_thread_id {
        field("root", root.as_str());
    }
    if let Some(time) = crate::render::time_text(run, zone) {
        field("time", &time);
    }
    if let Some(tokens) = &run.tokens {
        field("tokens", &tokens_text(tokens));
        field("cost", &crate::render::cost_text(run.cost, run.cost_status));
    }
    let counts = &run.counts;
    field(
        "counts",
        &crate::render::counts_text(counts),
    );
    out.push_str("</dl>\n</section>\n");
    out.push_str("<section class=\"result\">\n<h2>Result</h2>\n");
    match &run.result {
        Some(result) => {
            let _ = writeln!(out, "<blockquote>{}</blockquote>", escape(&shorten(result)));
            let _ = writeln!(
                out,
                "<p class=\"provenance\">from {}</p>",
                escape(&provenance(view))
            );
        }
        None => {
            let _ = writeln!(
                out,
                "<p>no result ({}){}</p>",
                escape(no_result_why(run)),
                run.error
                    .as_deref()
                    .map(|e| format!(": {}", escape(&shorten(e))))
                    .unwrap_or_default()
            );
        }
    }
    out.push_str("</section>\n<section class=\"warnings\">\n");
    let _ = writeln!(out, "<h2>Warnings ({})</h2>", view.warnings.len());
    if !view.warnings.is_empty() {
        out.push_str("<ul>\n");
        for warning in &view.warnings {
            let severity = format!("{:?}", warning.severity).to_lowercase();
            let _ = writeln!(
                out,
                "<li class=\"{}\"><code>{}</code> {}</li>",
                escape(&severity),
                escape(&warning.code),
                escape(&shorten(&warning.message))
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n<section class=\"agents\">\n<h2>Agents</h2>\n<ul class=\"tree\">\n");
    for node in &view.agents {
        html_node(&mut out, node);
    }
    out.push_str(
        "</ul>\n</section>\n<section class=\"timeline\">\n<h2>Timeline</h2>\n<table>\n\
<thead><tr><th>time</th><th>actor</th><th>what</th><th></th></tr></thead>\n<tbody>\n",
    );
    let lines = rows.iter().map(|row| {
        format!(
            "<tr class=\"{}\"><td class=\"time\">{}</td><td style=\"padding-left:{}em\"><span class=\"badge {}\">{}</span></td><td class=\"kind\">{}</td><td>{}</td></tr>\n",
            row.role.as_str(),
            escape(&row.time),
            row.depth,
            row.role.as_str(),
            escape(&row.actor),
            escape(row.kind),
            escape(&row.text)
        )
    });
    let tail = |left_out: usize, over: bool| {
        let mut tail = String::from("</tbody>\n</table>\n");
        let _ = writeln!(
            tail,
            "<p class=\"note\">{hidden} low-level events (deltas, status, usage, items, responses) are not shown.</p>"
        );
        if let Some(note) = left_out_note(left_out, rows.len(), max_bytes, over) {
            let _ = writeln!(tail, "<p class=\"note left-out\">{}</p>", escape(&note));
        }
        tail.push_str("<footer>written by agentrace export --html</footer>\n</body>\n</html>\n");
        tail
    };
    fit_timeline(&mut out, lines.collect(), max_bytes, tail);
    out
}

fn html_node(out: &mut String, node: &AgentNode) {
    let _ = write!(
        out,
        "<li><span class=\"badge {}\">{}</span> <span class=\"meta\">{} · {} · {} · {}{}{}</span>",
        node.role.as_str(),
        escape(&node.label),
        escape(node.role.as_str()),
        escape(node.status.as_str()),
        count(node.event_count, "event", "events"),
        count(node.tool_count, "tool call", "tool calls"),
        node.tokens
            .map(|t| format!(" · {} · {}", count(t.total_tokens, "token", "tokens"), escape(&crate::render::cost_text(node.cost, node.cost_status))))
            .unwrap_or_default(),
        node.model
            .as_deref()
            .map(|m| format!(" · {}", escape(m)))
            .unwrap_or_default(),
    );
    let _ = write!(
        out,
        "<div class=\"thread\">{}</div>",
        escape(node.thread_id.as_str())
    );
    if let Some(prompt) = &node.prompt {
        let _ = write!(
            out,
            "<div class=\"prompt\">prompt: {}</div>",
            escape(&shorten(prompt))
        );
    }
    if let Some(message) = &node.final_message {
        let _ = write!(
            out,
            "<div class=\"final\">final: {}</div>",
            escape(&shorten(message))
        );
    }
    if !node.children.is_empty() {
        out.push_str("\n<ul>\n");
        for child in &node.children {
            html_node(out, child);
        }
        out.push_str("</ul>");
    }
    out.push_str("</li>\n");
}

fn markdown(view: &RunView, rows: &[Row], hidden: u64, max_bytes: usize, zone: &Zone) -> String {
    let run = &view.run;
    let mut out = String::new();
    let _ = writeln!(out, "## agentrace run `{}`\n", code(run.id.as_str()));
    let _ = writeln!(out, "| | |\n| --- | --- |");
    let _ = writeln!(out, "| provider | {} |", provider_text(view));
    let _ = writeln!(out, "| status | {} |", crate::render::status_text(run));
    if let Some(root) = &run.root_thread_id {
        let _ = writeln!(out, "| root | `{}` |", code(root.as_str()));
    }
    if let Some(time) = crate::render::time_text(run, zone) {
        let _ = writeln!(out, "| time | {time} |");
    }
    if let Some(tokens) = &run.tokens {
        let _ = writeln!(out, "| tokens | {} |", tokens_text(tokens));
        let _ = writeln!(out, "| cost | {} |", md(&crate::render::cost_text(run.cost, run.cost_status)));
    }
    let counts = &run.counts;
    let _ = writeln!(out, "| counts | {} |", crate::render::counts_text(counts));
    out.push_str("\n### Result\n\n");
    push_result(&mut out, view);
    let _ = writeln!(out, "### Warnings ({})\n", view.warnings.len());
    for warning in &view.warnings {
        let _ = writeln!(
            out,
            "- **{}** `{}` {}",
            format!("{:?}", warning.severity).to_lowercase(),
            code(&warning.code),
            md(&shorten(&warning.message))
        );
    }
    if !view.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str("### Agents\n\n");
    for node in &view.agents {
        md_node(&mut out, node, 0);
    }
    out.push_str("\n### Timeline\n\n| time | actor | what | |\n| --- | --- | --- | --- |\n");
    let lines = rows.iter().map(|row| {
        format!(
            "| {} | {}{} | {} | {} |\n",
            row.time,
            "· ".repeat(row.depth),
            md(&row.actor),
            row.kind,
            md(&row.text)
        )
    });
    let tail = |left_out: usize, over: bool| {
        let mut tail = format!(
            "\n{hidden} low-level events (deltas, status, usage, items, responses) are not shown.\n"
        );
        if let Some(note) = left_out_note(left_out, rows.len(), max_bytes, over) {
            let _ = writeln!(tail, "{note}");
        }
        tail
    };
    fit_timeline(&mut out, lines.collect(), max_bytes, tail);
    out
}

/// Appends the timeline `lines` to `out` and then its closing part
/// `tail(left_out, over)`, keeping the whole report within `max_bytes`:
/// the lines go in order while they fit beside the widest closing part
/// (the note of every line left out), and after the first that does not,
/// none. When the parts around the timeline alone are over the bound, the
/// closing part says so (`over`) instead of claiming to stay under it.
fn fit_timeline(out: &mut String, lines: Vec<String>, max_bytes: usize, tail: impl Fn(usize, bool) -> String) {
    let all: usize = lines.iter().map(String::len).sum();
    let closing = tail(0, false);
    if out.len() + all + closing.len() <= max_bytes {
        lines.iter().for_each(|line| out.push_str(line));
        out.push_str(&closing);
        return;
    }
    // A note counting fewer lines is never longer than one counting all.
    let widest = tail(lines.len(), false).len().max(closing.len());
    let mut left_out = 0usize;
    for line in &lines {
        if left_out > 0 || out.len() + line.len() + widest > max_bytes {
            left_out += 1;
            continue;
        }
        out.push_str(line);
    }
    let closing = tail(left_out, false);
    if out.len() + closing.len() <= max_bytes {
        out.push_str(&closing);
    } else {
        out.push_str(&tail(left_out, true));
    }
}

/// The note under a timeline that lost `left_out` of its `total` lines to
/// `--max-bytes`; `over` when the report is over the bound all the same.
fn left_out_note(left_out: usize, total: usize, max_bytes: usize, over: bool) -> Option<String> {
    if over {
        Some(format!(
            "{left_out} of {total} timeline events left out, and the report is still over {max_bytes} bytes (--max-bytes): its summary, result, warnings and agent tree alone are larger."
        ))
    } else if left_out > 0 {
        Some(format!(
            "{left_out} of {total} timeline events left out to stay under {max_bytes} bytes (--max-bytes)."
        ))
    } else {
        None
    }
}

fn md_node(out: &mut String, node: &AgentNode, depth: usize) {
    let _ = writeln!(
        out,
        "{}- **{}** ({}, {}) `{}` · {} · {}{}{}",
        "  ".repeat(depth),
        md(&node.label),
        node.role.as_str(),
        node.status.as_str(),
        code(node.thread_id.as_str()),
        count(node.event_count, "event", "events"),
        count(node.tool_count, "tool call", "tool calls"),
        node.tokens
            .map(|t| format!(" · {} · {}", count(t.total_tokens, "token", "tokens"), md(&crate::render::cost_text(node.cost, node.cost_status))))
            .unwrap_or_default(),
        node.final_message
            .as_deref()
            .map(|m| format!(" — {}", md(&shorten(m))))
            .unwrap_or_default(),
    );
    for child in &node.children {
        md_node(out, child, depth + 1);
    }
}

/// Who produced the result, in words.
fn provenance(view: &RunView) -> String {
    let Some(source) = &view.run.result_source else {
        return "an unknown source".to_owned();
    };
    let label = source
        .thread_id
        .as_ref()
        .and_then(|thread| find(&view.agents, thread))
        .map(|node| node.label.clone())
        .unwrap_or_else(|| "Unknown actor".to_owned());
    let mut text = format!(
        "{label} ({})",
        source.role.map(Role::as_str).unwrap_or("unknown")
    );
    if let Some(thread) = &source.thread_id {
        let _ = write!(text, ", thread {thread}");
    }
    if let Some(item) = &source.item_id {
        let _ = write!(text, ", item {item}");
    }
    text
}

/// `codex (codex-app-server)`: the names the run log uses.
fn provider_text(view: &RunView) -> String {
    let name = |value: serde_json::Result<serde_json::Value>| {
        value
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    format!(
        "{} ({})",
        name(serde_json::to_value(view.run.provider)),
        name(serde_json::to_value(view.run.source))
    )
}

/// The tokens line of a report, with the figures `show` gives (reasoning
/// included, which the reports left out).
fn tokens_text(tokens: &TokenUsage) -> String {
    format!(
        "{} total ({} input, {} cached, {} output, {} reasoning)",
        tokens.total_tokens, tokens.input_tokens, tokens.cached_input_tokens, tokens.output_tokens, tokens.reasoning_output_tokens
    )
}

/// Text cut to [`MAX_TEXT_CHARS`] characters, with how much was cut.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        None => text.to_owned(),
        Some((end, _)) => format!(
            "{}… [{} more characters]",
            &text[..end],
            text[end..].chars().count()
        ),
    }
}


/// Markdown-escapes inline text: no markup, no HTML, no table breaks, one
/// line, and no mention: a report pasted into a GitHub issue notified each
/// `@name` its agents' text held. A mention goes into a code span, which
/// GitHub never links or notifies from, and a reader still reads as
/// `@name` (a zero-width character after the `@` would also stop it, but
/// would break a search or copy of the name; a backslash before it is
/// not documented to stop one).
fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous: Option<char> = None;
    let mut chars = text.char_indices();
    while let Some((at, ch)) = chars.next() {
        // After a letter or digit (`dev@example.com`) GitHub sees no
        // mention, and the text stays as written.
        if ch == '@' && !previous.is_some_and(|previous| previous.is_alphanumeric() || previous == '_') {
            if let Some(length) = mention_length(&text[at + 1..]) {
                let name = &text[at + 1..at + 1 + length];
                let _ = write!(out, "`@{name}`");
                // The name is ASCII: one char per byte.
                chars.nth(length - 1);
                previous = name.chars().last();
                continue;
            }
        }
        previous = Some(ch);
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(ch);
            }
            _ => out.push(ch),
        }
    }
    out
}

/// The length of the GitHub user (`octocat`) or team (`org/team`) a
/// mention names in `after`, the text after its `@`; `None` when it names
/// none (a name starts with a letter or digit).
fn mention_length(after: &str) -> Option<usize> {
    let bytes = after.as_bytes();
    if !bytes.first().is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    let mut length = bytes.iter().take_while(|byte| byte.is_ascii_alphanumeric() || **byte == b'-').count();
    if bytes.get(length) == Some(&b'/') {
        let team = bytes[length + 1..].iter().take_while(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_')).count();
        if team > 0 {
            length += 1 + team;
        }
    }
    Some(length)
}

/// Text for inside a code span: no backticks, one line.
fn code(text: &str) -> String {
    text.replace(['`', '\n', '\r'], " ").replace('|', "\\|")
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#1d1d1f}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}dt{color:#666}dd{margin:0}\
blockquote{margin:.5em 0;padding:.5em 1em;background:#f5f5f7;border-left:3px solid #4a7;white-space:pre-wrap}\
.provenance,.note,.thread,.meta{color:#666}.thread{font:12px monospace}\
.tree,.tree ul{list-style:none;padding-left:1.2em}.tree li{margin:.3em 0}\
.prompt,.final{white-space:pre-wrap;font-size:.92em}\
.badge{display:inline-block;padding:0 .45em;border-radius:.6em;font-weight:600;font-size:.9em}\
.badge.root{background:#dbeafe}.badge.helper{background:#dcfce7}.badge.unknown{background:#fee2e2}\
table{border-collapse:collapse;width:100%}td,th{padding:.15em .5em;vertical-align:top;text-align:left}\
tr:nth-child(even){background:#fafafa}td.time{font:12px monospace;color:#666;white-space:nowrap}\
td.kind{white-space:nowrap;color:#555}td:last-child{white-space:pre-wrap;word-break:break-word}\
.warnings li.error{color:#b00}.warnings li.warning{color:#a60}footer{margin-top:2em;color:#999;font-size:.85em}";

/// The Markdown a CI job shows on its page (`check --summary`, e.g. into
/// `$GITHUB_STEP_SUMMARY`): the result and who gave it, one table row per
/// agent (tree order, children indented), and the warnings. `failed` is
/// what `check` decided, so the page and the exit code agree.
pub fn ci_summary(view: &RunView, failed: bool) -> String {
    let run = &view.run;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## agentrace `{}`: {}\n",
        code(run.id.as_str()),
        if failed { "failed" } else { "ok" }
    );
    let _ = writeln!(out, "{} · {}\n", provider_text(view), run.status.as_str());
    push_result(&mut out, view);
    out.push_str("| agent | role | status | tokens | cost |\n| --- | --- | --- | ---: | ---: |\n");
    let mut stack: Vec<(&AgentNode, usize)> = view.agents.iter().rev().map(|node| (node, 0)).collect();
    while let Some((node, depth)) = stack.pop() {
        let _ = writeln!(
            out,
            "| {}{}{} | {} | {} | {} | {} |",
            "· ".repeat(depth),
            md(&node.label),
            // Known from inference only (a `codex exec` helper's rollout).
            if node.confidence == Some(agentrace_core::model::Confidence::Derived) {
                " (derived)"
            } else {
                ""
            },
            node.role.as_str(),
            node.status.as_str(),
            node.tokens.map(|t| t.total_tokens.to_string()).unwrap_or_else(|| "–".to_owned()),
            // No request yet, no cost: "$0.0000" beside "–" tokens would read as a free agent.
            node.cost_once_requested()
                .map(|(cost, status)| crate::render::cost_text(cost, status))
                .unwrap_or_else(|| "–".to_owned()),
        );
        for child in node.children.iter().rev() {
            stack.push((child, depth + 1));
        }
    }
    let _ = writeln!(
        out,
        "| **total** | | | {} | {} |",
        run.tokens.map(|t| t.total_tokens.to_string()).unwrap_or_else(|| "–".to_owned()),
        // As an agent's: no request in the whole run, no cost.
        run.tokens.map(|_| crate::render::cost_text(run.cost, run.cost_status)).unwrap_or_else(|| "–".to_owned()),
    );
    let _ = writeln!(out, "\n### Warnings ({})\n", view.warnings.len());
    for warning in &view.warnings {
        let _ = writeln!(
            out,
            "- **{}** `{}` {}",
            format!("{:?}", warning.severity).to_lowercase(),
            code(&warning.code),
            md(&shorten(&warning.message))
        );
    }
    out
}

/// Why a run has no result, in the words of its status: a session that
/// ended while its root's turn was open says so, as `show` does, rather
/// than `running`.
fn no_result_why(run: &agentrace_core::state::RunSummary) -> &'static str {
    if run.session_ended {
        "the session ended before the root's turn did"
    } else {
        run.status.as_str()
    }
}

/// The run's result and where it came from, or why there is none, as
/// Markdown (the report's and the CI summary's).
fn push_result(out: &mut String, view: &RunView) {
    let run = &view.run;
    match &run.result {
        Some(result) => {
            let _ = writeln!(out, "> {}\n", md(&shorten(result)));
            let _ = writeln!(out, "from {}\n", md(&provenance(view)));
        }
        None => {
            let _ = writeln!(
                out,
                "no result ({}){}\n",
                no_result_why(run),
                run.error
                    .as_deref()
                    .map(|e| format!(": {}", md(&shorten(e))))
                    .unwrap_or_default()
            );
        }
    }
}
