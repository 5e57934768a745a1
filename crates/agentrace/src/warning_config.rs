//! The warning configuration every read command shares: `-W`/`-A` flags
//! over a JSON config file (given, or the home's). It must not decide
//! anything itself: the detectors live in the core.

use std::path::PathBuf;

use agentrace_core::warnings::WarningConfig;
use agentrace_store::Home;
use clap::Args;

/// Flags that tune the warnings.
#[derive(Debug, Args, Clone, Default)]
pub struct WarningArgs {
    /// Treat a warning code as an error (fails `check`); repeatable.
    #[arg(short = 'W', long = "deny", value_name = "CODE")]
    pub deny: Vec<String>,
    /// Hide a warning code (`all` hides every one not denied); repeatable.
    #[arg(short = 'A', long = "allow", value_name = "CODE")]
    pub allow: Vec<String>,
    /// The warning config (JSON: allow, deny, silentAfterSecs, helperRules,
    /// expectArtifacts, maxCost, maxTokens, budgetPer); default
    /// `$AGENTRACE_HOME/warnings.json` when present.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The configuration: the file (given, or the home's, which the home read
/// when the command began), then the flags on top (a flag's deny beats the
/// file's allow and vice versa).
pub fn config(home: &Home, args: &WarningArgs) -> anyhow::Result<WarningConfig> {
    Ok(judge(args)?.config(home))
}

/// How a server judges runs: by the config given (`--config FILE`), else
/// by the home's as it is at each request, the flags on top either way.
pub fn judge(args: &WarningArgs) -> anyhow::Result<agentrace_server::Judge> {
    Ok(match &args.config {
        Some(path) => agentrace_server::Judge::Fixed(agentrace_store::warning_file::read_warning_file(path)?.with_flags(&args.allow, &args.deny)),
        None => agentrace_server::Judge::Home { allow: args.allow.clone(), deny: args.deny.clone() },
    })
}
