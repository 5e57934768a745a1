//! The home's own files that every command reads before it does its work:
//! the price file (`prices.json`) and the warning config (`warnings.json`).
//! Read once when a command starts, and again by a process that runs for
//! days (`watch`, `top`, `serve`) each time it imports or judges, so that
//! what it writes after a file changed is priced and judged by the new one.

use std::sync::Arc;

use agentrace_core::prices::PriceBook;
use agentrace_store::Home;
use anyhow::Context as _;

/// `home` with its files as they are now; an error names a file that is
/// not what it must be.
pub fn read(home: &Home) -> anyhow::Result<Home> {
    Ok(home.clone().with_home_prices().context("cannot read the home's price file")?.with_home_warnings()?)
}

/// [`read`] for what must go on whatever the files say (the hook, the
/// status line, a screen left open): a file that cannot be read leaves
/// what `home` had.
pub fn read_or_keep(home: &Home) -> Home {
    let priced = home.clone().with_home_prices().unwrap_or_else(|_| home.clone());
    priced.clone().with_home_warnings().unwrap_or(priced)
}

/// Decodes `book`'s price database on a spare core while the caller reads
/// (on the first request priced it held a fold up 15 to 70 ms), unless the
/// book learned the prices the home worked out before: most requests then
/// need no database, and decoding it took a core from the reading.
pub fn warm_prices_beside(book: Arc<PriceBook>) {
    if !book.learned_any() {
        crate::parallel::beside(move || book.warm());
    }
}
