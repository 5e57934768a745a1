//! The catalog as the commands use it: opened with its note on stderr when
//! it had to be made anew, brought up to the runs folder before it is read
//! (see [`agentrace_store::catalog`]), and `agentrace reindex`.

use agentrace_core::model::RunId;
use agentrace_core::state::{AgentNode, FinalActors, RunSummary};
use agentrace_core::Envelope;
use agentrace_store::catalog::{Rebuilt, TextRow};
use agentrace_store::{Catalog, Home};
use clap::Args;

/// Opens the home's catalog; says on stderr when it was made anew over one
/// that could not be used (or, with runs already recorded, when there was
/// none).
pub fn open(home: &Home) -> anyhow::Result<Catalog> {
    let catalog = Catalog::open(home)?;
    match catalog.rebuilt() {
        Some(Rebuilt::Missing) => {
            let has_runs = std::fs::read_dir(home.runs_dir()).is_ok_and(|mut entries| entries.next().is_some());
            if has_runs {
                eprintln!("note: no catalog in {} yet; building it from the run logs", home.root().display());
            }
        }
        Some(reason) => {
            if let Some(note) = reason.note(catalog.path()) {
                eprintln!("{note}");
            }
        }
        None => {}
    }
    Ok(catalog)
}

/// The catalog, brought up to the runs folder.
pub fn synced(home: &Home) -> anyhow::Result<Catalog> {
    let catalog = open(home)?;
    catalog.sync(home)?;
    Ok(catalog)
}

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
    let path = home.root().join(agentrace_store::catalog::CATALOG_FILE);
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

/// Indexes one run at the end of its live recording (its record, agents
/// and text), the home found from its log's place
/// (`<home>/runs/<id>.jsonl`); a failure is only said: the next reader
/// syncs it anyway. The one hook the recorders call.
pub fn index_finished_log(log: &std::path::Path) {
    let (Some(runs_dir), Some(stem)) = (log.parent(), log.file_stem().and_then(|stem| stem.to_str())) else {
        return;
    };
    let Some(root) = runs_dir.parent() else { return };
    let home = Home::at(root);
    let id = agentrace_core::model::RunId::from(stem);
    let done = (|| -> anyhow::Result<()> {
        let catalog = Catalog::open(&home)?;
        let stamp = agentrace_store::catalog::log_stamp(log).unwrap_or_default();
        catalog.begin()?;
        catalog.index_run(&home, &id, stamp)?;
        catalog.commit()?;
        Ok(())
    })();
    if let Err(error) = done {
        eprintln!("warning: run {id} is not in the catalog yet: {error:#}");
    }
}

/// The searchable text of the envelopes a run is written with, collected
/// on the way to its log: a recorder that just wrote a log must not read it
/// back (twice, for the final actors) to index it.
#[derive(Default)]
pub struct Texts {
    rows: Vec<TextRow>,
    finals: FinalActors,
}

impl Texts {
    /// Notes the text of envelopes as they go to the log.
    pub fn observe(&mut self, envelopes: &[Envelope]) {
        for envelope in envelopes {
            self.finals.observe(envelope);
            self.rows.extend(TextRow::of(envelope));
        }
    }

    /// The rows, each with its thread's final actor.
    pub fn settled(mut self, id: &RunId) -> Vec<TextRow> {
        agentrace_store::catalog::settle_texts(&mut self.rows, &self.finals, id);
        self.rows
    }
}

/// Indexes a run at the end of its recording from what the recorder holds
/// (its record, agent tree and the text collected as it was written), so
/// the log is not read again; a failure is only said, as for
/// [`index_finished_log`].
pub fn index_recorded(home: &Home, summary: &RunSummary, agents: &[AgentNode], texts: Texts) {
    let id = &summary.id;
    let done = (|| -> anyhow::Result<()> {
        let catalog = Catalog::open(home)?;
        let stamp = agentrace_store::catalog::log_stamp(&home.log_path(id)).unwrap_or_default();
        let agents = agentrace_store::catalog::agent_rows(agents);
        // One transaction: the run's text is thousands of rows, and each
        // row committed on its own was a WAL commit (a third of a 40 MB
        // ingest's time).
        catalog.begin()?;
        catalog.put_run(summary, None, None, &agents, stamp, Some(&texts.settled(id)))?;
        catalog.commit()?;
        Ok(())
    })();
    if let Err(error) = done {
        eprintln!("warning: run {id} is not in the catalog yet: {error:#}");
    }
}
