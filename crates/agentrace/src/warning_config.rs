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
    /// Treat a warning code as an error (fails `check`); repeatable. A
    /// code no run may carry is refused.
    #[arg(short = 'W', long = "deny", value_name = "CODE")]
    pub deny: Vec<String>,
    /// Hide a warning code (`all` hides every one not denied); repeatable.
    /// A code no run may carry is refused.
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
/// A flag that names no code a run may carry is refused: a typo would
/// change nothing and let a CI gate pass.
pub fn judge(args: &WarningArgs) -> anyhow::Result<agentrace_server::Judge> {
    for code in &args.deny {
        known("-W/--deny", code, false)?;
    }
    for code in &args.allow {
        known("-A/--allow", code, true)?;
    }
    Ok(match &args.config {
        Some(path) => agentrace_server::Judge::Fixed(agentrace_store::warning_file::read_warning_file(path)?.with_flags(&args.allow, &args.deny)),
        None => agentrace_server::Judge::Home { allow: args.allow.clone(), deny: args.deny.clone() },
    })
}

/// Refuses `code` unless a run's warnings may carry it (the core's list,
/// as `runs --warning` checks it; the rule and budget codes are in it), or
/// it is `all` where `all_too` (`-A all`).
fn known(flag: &str, code: &str, all_too: bool) -> anyhow::Result<()> {
    if agentrace_core::warnings::is_known_code(code) || (all_too && code == "all") {
        return Ok(());
    }
    let codes = agentrace_core::warnings::known_codes().collect::<Vec<_>>();
    let expected = if all_too { "`all` or one of" } else { "one of" };
    let mut message = format!("{flag} {code}: not a warning code; expected {expected} {}", codes.join(", "));
    if code == "all" {
        message.push_str("\nhint: `all` only hides (`-A all`); deny each code by its name");
    } else if let Some(near) = codes.iter().filter(|known| edits(code, known) <= 3).min_by_key(|known| edits(code, known)) {
        message.push_str(&format!("\nhint: did you mean {near}?"));
    }
    anyhow::bail!(message)
}

/// How many one-character edits (insert, delete, replace) turn `a` into
/// `b`: how near a mistyped code is to a known one.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, left) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, right) in b.iter().enumerate() {
            let replaced = diagonal + usize::from(left != *right);
            diagonal = row[j + 1];
            row[j + 1] = replaced.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}
