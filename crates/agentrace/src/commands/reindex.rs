//! `agentrace reindex`: the catalog made anew from the run logs, then the
//! sources imported again. The catalog is emptied and synced by the store;
//! this command never writes its tables itself.

use agentrace_store::{Catalog, Home};
use clap::Args;

/// Arguments of `agentrace reindex`.
#[derive(Debug, Args)]
pub struct ReindexArgs {
    /// Do not import the sources again (only the run logs are read).
    #[arg(long)]
    no_import: bool,
    /// No progress bar and no summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// `agentrace reindex`: the catalog made anew from the run logs, then the
/// sources imported again (an import's offsets and stamps live only in the
/// catalog, so every session is read once more).
pub fn reindex(home: &Home, args: &ReindexArgs) -> anyhow::Result<()> {
    let path = home.catalog_path();
    // Emptied, not removed: another agentrace may be using it.
    let catalog = Catalog::open(home)?;
    catalog.clear()?;
    let count = catalog.sync(home)?;
    drop(catalog);
    if !args.no_import {
        let import = crate::commands::import::ImportArgs::quiet_of(None, None).with_quiet(args.quiet);
        crate::commands::import::run(home, &import)?;
    }
    if !args.quiet {
        eprintln!("reindexed {} runs into {}", count.indexed, path.display());
    }
    Ok(())
}
