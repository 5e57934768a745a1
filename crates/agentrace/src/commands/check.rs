//! `agentrace check`: the §8 detectors over one run, for CI pipelines (exit
//! 1 when an error-level warning fires), with the warning configuration
//! every read command shares ([`crate::warning_config`]). It must not decide
//! anything itself: the detectors live in the core.

use crate::clock::now;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentrace_core::model::Severity;
use agentrace_core::warnings::{BudgetPer, WarningConfig};
use agentrace_store::Home;
use anyhow::Context as _;
use clap::builder::TypedValueParser as _;
use clap::Args;

use crate::output::Out;
use crate::render;
use crate::warning_config::{config, WarningArgs};

/// `agentrace check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Run id, a unique prefix of one (or of an imported run's Codex thread or Claude session id), or `latest`.
    run: String,
    /// Print `{"run", "status", "ok", "warnings"}`.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// How to print the warnings: `text`, or `github` (one workflow command
    /// per warning, `::error title=<code>::<message>`, `::warning …`,
    /// `::notice …`, which GitHub Actions shows as annotations).
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<CheckFormat>,
    /// Append a Markdown summary of the run to FILE (result and its
    /// source, the agents with their tokens and cost, the warnings), e.g.
    /// `--summary "$GITHUB_STEP_SUMMARY"`.
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    #[command(flatten)]
    warnings: WarningArgs,
    #[command(flatten)]
    budget: BudgetArgs,
}

/// How `check` prints its warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    /// One line per warning, then the verdict.
    Text,
    /// GitHub Actions workflow commands, then the verdict.
    Github,
}

/// Budgets `check` holds a run to (over the config file's `maxCost`,
/// `maxTokens` and `budgetPer`).
#[derive(Debug, Args, Clone, Default)]
pub struct BudgetArgs {
    /// Fail (`budget_exceeded`) when the run, or an agent with `--per
    /// agent`, cost more than this many US dollars.
    #[arg(long, value_name = "USD", value_parser = dollars)]
    pub max_cost: Option<f64>,
    /// Fail (`budget_exceeded`) when the run, or an agent with `--per
    /// agent`, used more than this many tokens.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// What the budgets hold: the run's totals (default) or each agent's own
    /// figures (its children's not included).
    #[arg(
        long,
        value_name = "WHAT",
        value_parser = clap::builder::PossibleValuesParser::new(["run", "agent"])
            .try_map(|text| text.parse::<BudgetPer>())
    )]
    pub per: Option<BudgetPer>,
}

impl BudgetArgs {
    /// `config` with these flags over its file's budget.
    fn apply(&self, config: &mut WarningConfig) {
        if let Some(limit) = self.max_cost {
            config.max_cost = Some(limit);
        }
        if let Some(limit) = self.max_tokens {
            config.max_tokens = Some(limit);
        }
        if let Some(per) = self.per {
            config.budget_per = Some(per);
        }
    }
}

/// A dollar limit: a number, at least 0 (`$` in front allowed).
fn dollars(text: &str) -> Result<f64, String> {
    let number = text.strip_prefix('$').unwrap_or(text);
    match number.parse::<f64>() {
        Ok(limit) if limit.is_finite() && limit >= 0.0 => Ok(limit),
        _ => Err(format!(
            "`{text}` is not an amount of US dollars (e.g. 0.25)"
        )),
    }
}

/// Runs `agentrace check`.
pub fn run(home: &Home, args: &CheckArgs, out: &mut Out) -> anyhow::Result<ExitCode> {
    let mut config = config(home, &args.warnings)?;
    args.budget.apply(&mut config);
    let id = home.resolve(&args.run)?;
    let loaded = home.load_run(&id)?;
    let view = loaded.checked_view(&config, Some(now()));
    let failed = view
        .warnings
        .iter()
        .any(|warning| warning.severity == Severity::Error);
    if args.json {
        out.json_pretty(&serde_json::json!({
            "run": view.run.id,
            "status": view.run.status,
            "ok": !failed,
            "warnings": view.warnings,
        }))?;
    } else {
        for warning in &view.warnings {
            if args.format == Some(CheckFormat::Github) {
                out.line(workflow_command(warning))?;
                continue;
            }
            let mut line = format!(
                "{:<7} {}: {}",
                severity_word(warning.severity),
                warning.code,
                render::one_line(&warning.message, 160)
            );
            if let Some(thread) = &warning.thread_id {
                line.push_str(&format!(" [thread {thread}]"));
            }
            if let Some(sequence) = warning.event_sequence {
                line.push_str(&format!(" [event {sequence}]"));
            }
            out.line(line)?;
        }
        let errors = view
            .warnings
            .iter()
            .filter(|warning| warning.severity == Severity::Error)
            .count();
        out.line(format!(
            "{}: {} warning(s), {} error(s): {}",
            view.run.id,
            view.warnings.len(),
            errors,
            if failed { "FAILED" } else { "ok" }
        ))?;
    }
    out.flush()?;
    // After the verdict: a summary file that cannot be written is an
    // error, but never one that hides the warnings and the verdict.
    if let Some(path) = &args.summary {
        append_summary(path, &crate::report::ci_summary(&view, failed))?;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Appends `text` to `path` (created when missing): a step summary file
/// collects what every step of a job writes.
#[expect(clippy::disallowed_methods, reason = "the file the user names with `--summary`, not the home's")]
fn append_summary(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {} to append the summary", path.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .with_context(|| format!("cannot write the summary to {}", path.display()))
}

/// A warning as a GitHub Actions workflow command: `::error title=<code>::<message>`
/// (`warning`, `notice` for the other severities), escaped as the runner
/// reads them back (`%`, CR, LF everywhere; `:` and `,` in the title too).
fn workflow_command(warning: &agentrace_core::model::Warning) -> String {
    let command = match warning.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    let data = |text: &str| text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
    let property = |text: &str| data(text).replace(':', "%3A").replace(',', "%2C");
    let mut message = warning.message.clone();
    if let Some(thread) = &warning.thread_id {
        message.push_str(&format!(" [thread {thread}]"));
    }
    format!("::{command} title={}::{}", property(&warning.code), data(&message))
}

/// A severity as a word of a text line.
pub(crate) fn severity_word(severity: Severity) -> &'static str {
    match severity {
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

#[cfg(test)]
mod tests {
    use agentrace_core::model::{Severity, ThreadId, Warning};

    use super::workflow_command;

    #[test]
    fn a_workflow_command_escapes_what_the_runner_would_read_as_its_own() {
        let warning = Warning {
            code: "odd:code,1".to_owned(),
            severity: Severity::Info,
            message: "100% done\r\nsecond line: ::error::no".to_owned(),
            event_sequence: Some(3),
            thread_id: Some(ThreadId::from("t-1")),
        };
        assert_eq!(
            workflow_command(&warning),
            "::notice title=odd%3Acode%2C1::100%25 done%0D%0Asecond line: ::error::no [thread t-1]"
        );
    }
}
