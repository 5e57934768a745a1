//! `agentrace diff A B [--json]`: two runs side by side, agents matched by
//! label and role (the core's [`agentrace_core::compare`], which the
//! viewer's `/compare` shows too). Exits 0 whether or not they differ.

use agentrace_core::compare::{Comparison, Figures, Only};
use agentrace_core::warnings::WarningConfig;
use agentrace_store::{Home, RunFold};
use anyhow::Context as _;
use clap::Args;

use crate::output::Out;

/// Arguments of `agentrace diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first run (an id or a unique prefix).
    pub a: String,
    /// The second run.
    pub b: String,
    /// Print the comparison as JSON (`{a, b, agents, differences}`).
    #[arg(long)]
    pub json: bool,
}

/// A run's view and waterfall, folded from its log.
fn side(
    home: &Home,
    name: &str,
    config: &WarningConfig,
) -> anyhow::Result<(
    agentrace_core::state::RunView,
    agentrace_core::waterfall::Waterfall,
)> {
    let id = home.resolve(name)?;
    let path = home.log_path(&id);
    let mut fold = RunFold::priced(id.clone(), home.prices());
    fold.follow(&path, |_| {})
        .with_context(|| format!("cannot read {}", path.display()))?;
    // Judged as `show` judges it: the home's warning config, and the
    // clock (a silent helper).
    let view = fold.checked_view(config, Some(crate::clock::now())).0;
    let waterfall = agentrace_store::waterfall_of(&fold, &path, &view.agents)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok((view, waterfall))
}

/// Runs `agentrace diff`.
pub fn run(home: &Home, args: &DiffArgs, out: &mut Out) -> anyhow::Result<()> {
    let config = crate::warning_config::config(home, &crate::warning_config::WarningArgs::default())?;
    let a = side(home, &args.a, &config)?;
    let b = side(home, &args.b, &config)?;
    let comparison = agentrace_core::compare::compare((&a.0, &a.1), (&b.0, &b.1));
    if args.json {
        return out.json_pretty(&comparison);
    }
    print(&comparison, out)
}

/// As `show` prints it: `≥` before a floor, `$?` for no cost.
fn cost(figures: &Figures) -> String {
    crate::render::cost_text(
        figures.cost,
        figures.cost_status.unwrap_or(agentrace_core::state::CostStatus::Exact),
    )
}

fn tools(figures: &Figures) -> String {
    let calls: Vec<String> = figures
        .tool_calls
        .iter()
        .map(|(name, count)| format!("{name}×{count}"))
        .collect();
    if calls.is_empty() {
        "-".to_owned()
    } else {
        calls.join(" ")
    }
}

fn line(figures: Option<&Figures>) -> String {
    match figures {
        None => "—".to_owned(),
        Some(figures) => format!(
            "{} · {} · tools {} · {} tokens · {} · {}",
            figures.status,
            crate::render::count(figures.turns, "turn", "turns"),
            tools(figures),
            figures
                .tokens
                .map_or_else(|| "?".to_owned(), |tokens| tokens.to_string()),
            cost(figures),
            figures.duration_ms.map_or_else(
                || "?".to_owned(),
                |ms| format!("{:.1}s", ms as f64 / 1000.0)
            ),
        ) + &warnings(figures),
    }
}

/// ` · 2 warnings: lost_turn, orphan_child`, or nothing.
fn warnings(figures: &Figures) -> String {
    match figures.warnings.as_slice() {
        [] => String::new(),
        [one] => format!(" · 1 warning: {one}"),
        all => format!(" · {} warnings: {}", all.len(), all.join(", ")),
    }
}

fn print(comparison: &Comparison, out: &mut Out) -> anyhow::Result<()> {
    for (side, run) in [("A", &comparison.a), ("B", &comparison.b)] {
        let provider = serde_json::to_value(run.provider)
            .ok()
            .and_then(|name| name.as_str().map(str::to_owned))
            .unwrap_or_default();
        out.line(format!("{side} {} ({provider})", run.id))?;
        out.line(format!("    {}", line(Some(&run.figures))))?;
    }
    for pair in &comparison.agents {
        let mark = match pair.only {
            Some(Only::A) => "  only in A",
            Some(Only::B) => "  only in B",
            None if pair.changed.is_empty() => "",
            None => "  differs",
        };
        let role = serde_json::to_value(pair.role)
            .ok()
            .and_then(|role| role.as_str().map(str::to_owned))
            .unwrap_or_default();
        out.line(format!(
            "{}{} ({role}){mark}",
            "  ".repeat(pair.depth as usize),
            pair.label
        ))?;
        out.line(format!(
            "{}  A {}",
            "  ".repeat(pair.depth as usize),
            line(pair.a.as_ref())
        ))?;
        out.line(format!(
            "{}  B {}",
            "  ".repeat(pair.depth as usize),
            line(pair.b.as_ref())
        ))?;
    }
    match comparison.differences.len() {
        0 => out.line("no differences")?,
        1 => out.line("1 difference")?,
        count => out.line(format!("{count} differences"))?,
    }
    Ok(())
}
