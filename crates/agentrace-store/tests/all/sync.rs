//! The catalog brought up to the runs folder: what a listing says of a
//! run whose files were caught between two writes.

use agentrace_core::state::RunSummary;
use agentrace_store::catalog::RunFilter;
use agentrace_store::{Catalog, Home};

use crate::all::support::{record, run_id, temporary_home, Fallible, TestResult, SESSION};

/// The runs a listing gives, as their records say.
fn listed(catalog: &Catalog) -> Fallible<Vec<RunSummary>> {
    Ok(catalog.list_runs(&RunFilter::default())?.0.into_iter().map(|listed| listed.run).collect())
}

/// Run `id` as its log folds now, warnings counted by the home's config.
fn folded(home: &Home, id: &str) -> Fallible<RunSummary> {
    Ok(home.load_run(&run_id(id))?.checked_view(home.warnings(), None).run)
}

/// A writer appends, then rewrites the record: a sync in between stamps
/// the log as it is now while the record is the one before. Kept with
/// that stamp, the older record was never read again once the log was
/// still (a session a watch ended idle listed `running` for good). The
/// sync lists what the log says, and the record written next agrees.
#[test]
fn a_record_older_than_its_log_is_not_listed_in_place_of_the_log() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("caught", SESSION);
    let (before, last) = envelopes.split_at(envelopes.len() - 2);
    let mut writer = home.create_run(&run_id("caught"))?;
    writer.append(before)?;
    writer.sync()?;
    writer.write_record(&home.load_run(&run_id("caught"))?.summary())?;
    let catalog = Catalog::open(&home)?;
    catalog.sync(&home)?;
    let running = folded(&home, "caught")?;
    assert_eq!(listed(&catalog)?, vec![running.clone()]);

    // The turn's end appended; the record not yet rewritten.
    writer.append(last)?;
    writer.sync()?;
    let ended = folded(&home, "caught")?;
    assert_ne!(ended.status, running.status);
    catalog.sync(&home)?;
    assert_eq!(listed(&catalog)?, vec![ended.clone()]);

    // The record caught up, the log as it was: the same.
    writer.write_record(&home.load_run(&run_id("caught"))?.summary())?;
    catalog.sync(&home)?;
    assert_eq!(listed(&catalog)?, vec![ended]);
    Ok(())
}
