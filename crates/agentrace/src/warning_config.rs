//! The warning configuration every read command shares: `-W`/`-A` flags
//! over a JSON config file (given, or the home's). It must not decide
//! anything itself: the detectors live in the core.

use std::path::{Path, PathBuf};

use agentrace_core::warnings::WarningConfig;
use agentrace_store::Home;
use anyhow::Context as _;
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

/// The configuration: the file (given, or the home's when it exists), then
/// the flags on top (a flag's deny beats the file's allow and vice versa).
pub fn config(home: &Home, args: &WarningArgs) -> anyhow::Result<WarningConfig> {
    let (path, required) = match &args.config {
        Some(path) => (path.clone(), true),
        None => (home.warning_config_path(), false),
    };
    let mut config = read_config(&path, required)?;
    if let Some(limit) = config.max_cost {
        if !(limit.is_finite() && limit >= 0.0) {
            anyhow::bail!(
                "{}: maxCost {limit} is not an amount of US dollars\nhint: write a number of at least 0, e.g. \"maxCost\": 0.25",
                path.display()
            );
        }
    }
    for code in &args.allow {
        config.deny.remove(code);
        config.allow.insert(code.clone());
    }
    for code in &args.deny {
        config.allow.remove(code);
        config.deny.insert(code.clone());
    }
    Ok(config)
}

fn read_config(path: &Path, required: bool) -> anyhow::Result<WarningConfig> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if !required && error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(WarningConfig::default())
        }
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
    };
    serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{} is not a warning config\nhint: expected JSON like {{\"allow\": [\"orphan_child\"], \"deny\": [\"lost_turn\"]}}",
            path.display()
        )
    })
}
