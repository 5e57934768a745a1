//! `agentrace show`: one run's summary, agent tree, result and who
//! produced it, counts and warnings.

use agentrace_store::Home;
use clap::Args;

use crate::output::Out;
use crate::render;

/// Arguments of `agentrace show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Run id, a unique prefix of one (or of an imported run's Codex thread or Claude session id), or `latest`.
    run: String,
    /// Print `{"run": {...}, "agents": [...], "warnings": [...]}`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    warnings: crate::warning_config::WarningArgs,
}

/// Runs `agentrace show`.
pub fn run(home: &Home, args: &ShowArgs, out: &mut Out) -> anyhow::Result<()> {
    // The flags first: a mistyped code is refused before a long run is
    // read.
    let config = crate::warning_config::config(home, &args.warnings)?;
    let id = home.resolve(&args.run)?;
    let loaded = home.load_run(&id)?;
    let view = loaded.checked_view(&config, Some(crate::clock::now()));
    if args.json {
        out.json_pretty(&view)?;
    } else {
        render::show(out, &view, loaded.skipped())?;
    }
    Ok(())
}
