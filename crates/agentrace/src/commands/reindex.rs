//! `agentrace reindex`: the catalog made anew from the run logs, then the
//! sources imported again. The catalog is made anew by the store;
//! this command never writes its tables itself.

use std::path::PathBuf;

use agentrace_store::{Catalog, Home};
use clap::Args;

use crate::commands::import::ImportReport;

/// Arguments of `agentrace reindex`.
#[derive(Debug, Args)]
pub struct ReindexArgs {
    /// Do not import the sources again (only the run logs are read).
    #[arg(long)]
    no_import: bool,
    /// No progress bar and no summary on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Print what was done as JSON (`{"indexed", "catalog", "import"}`) on
    /// stdout, with no progress bar.
    #[arg(long)]
    json: bool,
}

/// What `reindex --json` prints.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReindexReport {
    /// Runs indexed from the run logs (before the import).
    pub indexed: u64,
    /// The catalog made anew.
    pub catalog: PathBuf,
    /// What the import of the sources did, as `import --json` says it;
    /// `null` with `--no-import`.
    pub import: Option<ImportReport>,
}

/// `agentrace reindex`: the catalog made anew from the run logs, then the
/// sources imported again (an import's offsets and stamps live only in the
/// catalog, so every session is read once more).
pub fn reindex(home: &Home, args: &ReindexArgs) -> anyhow::Result<ReindexReport> {
    let path = home.catalog_path();
    // Made beside it and copied in, never removed: another agentrace may
    // be using it, and reads the old one meanwhile.
    let (catalog, count) = Catalog::made_anew(home)?;
    drop(catalog);
    let quiet = args.quiet || args.json;
    let import = if args.no_import {
        None
    } else {
        let import = crate::commands::import::ImportArgs::quiet_of(None, None).with_quiet(quiet);
        Some(crate::commands::import::run(home, &import)?)
    };
    if !quiet {
        eprintln!("reindexed {} runs into {}", count.indexed, path.display());
    }
    Ok(ReindexReport { indexed: count.indexed, catalog: path, import })
}

impl ReindexArgs {
    /// `--json`.
    pub fn json(&self) -> bool {
        self.json
    }
}
