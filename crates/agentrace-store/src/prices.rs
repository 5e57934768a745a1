//! A user's price file (`--prices FILE`, and `prices.json` in the home,
//! which every command prices with): US dollars per million tokens by
//! model-name prefix, over and beyond the database. And the database
//! itself when the home keeps a newer one (`genai-prices.json`, which
//! `agentrace prices --update` fetches): the provider data of a
//! `genai-prices` snapshot, priced by in place of the compiled-in one.
//! And what earlier commands resolved of the database's prices
//! (`known-prices.json`), so a command that prices a few requests need not
//! decode the database (see the core's `prices`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use agentrace_core::prices::{FilePrice, KnownPrices, PriceBook, PriceData};
use serde::Deserialize as _;

use crate::StoreError;

/// The shape a price file must have, for the error that names it.
const EXPECTED: &str = "expected {\"model\": {\"input\": …, \"cachedInput\": …, \"cacheCreation\": …, \"output\": …}} (US dollars per million tokens)";

/// The database (a newer snapshot `data`, else the compiled-in one)
/// overridden and extended by the price file at `path`, named by a digest
/// of its bytes (so figures priced by another table are told apart).
pub fn read_price_file(path: &Path, data: Option<Arc<PriceData>>) -> Result<Arc<PriceBook>, StoreError> {
    let text = std::fs::read_to_string(path).map_err(|source| StoreError::io("read price file", path, source))?;
    let refused = |cause: String| StoreError::PriceFile { path: path.to_owned(), cause };
    // The text is parsed once, as members by model; each price is read
    // from its members once its keys are checked. What serde passes over
    // (a misspelt key) would price its tokens at zero, and a negative rate
    // would take money off: neither is a price. A misspelt key is named
    // before a price that lacks the key it stands for.
    let members: BTreeMap<String, serde_json::Map<String, serde_json::Value>> = serde_json::from_str(&text).map_err(|error| refused(format!("{EXPECTED}: {error}")))?;
    for (model, fields) in &members {
        if let Some(key) = fields.keys().find(|key| !FilePrice::KEYS.contains(&key.as_str())) {
            return Err(refused(format!("{model:?} has an unknown key {key:?}; a price's keys are {} (US dollars per million tokens; webSearches per thousand searches)", FilePrice::KEYS.join(", "))));
        }
    }
    let mut table = BTreeMap::new();
    for (model, fields) in members {
        let price = FilePrice::deserialize(serde_json::Value::Object(fields)).map_err(|error| refused(format!("{model:?}: {EXPECTED}: {error}")))?;
        table.insert(model, price);
    }
    if let Some((model, (key, rate))) = table.iter().find_map(|(model, price)| price.bad_rate().map(|bad| (model, bad))) {
        return Err(refused(format!("{model:?} has {key} {rate}: a price is a number of US dollars, zero or more")));
    }
    Ok(Arc::new(PriceBook::with_file_over(data, table, &format!("{:016x}", crate::files::fnv1a(text.as_bytes())))))
}

/// The last snapshot read, by its digest: a process that reads the home
/// again (the server, at each request; a follower, at each pass) decodes
/// it once, not each time (tens of milliseconds).
static LAST_DATA: Mutex<Option<(String, Arc<PriceData>)>> = Mutex::new(None);

/// The last book of a snapshot alone, so its resolved rates are kept
/// across reads of the home as the compiled-in database's are.
static LAST_BOOK: Mutex<Option<Arc<PriceBook>>> = Mutex::new(None);

/// The newer database kept at `path`, if there is one. Its JSON is
/// checked here (a torn or hand-broken file is an error that names it);
/// it is decoded as a database on its first use.
pub fn read_price_database(path: &Path) -> Result<Option<Arc<PriceData>>, StoreError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StoreError::io("read the price database", path, source)),
    };
    let digest = digest_of(&bytes);
    let mut last = LAST_DATA.lock().map_err(|_| StoreError::PriceFile { path: path.to_owned(), cause: "a thread reading it panicked".to_owned() })?;
    if let Some((known, data)) = last.as_ref() {
        if *known == digest {
            return Ok(Some(Arc::clone(data)));
        }
    }
    // Provider data is a list of providers: a table (a user's `prices.json`
    // kept under this name) is refused here, where it would otherwise be
    // found out only on its first use, and every figure priced by the
    // compiled-in database under this snapshot's name.
    serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(&bytes).map_err(|error| StoreError::PriceFile {
        path: path.to_owned(),
        cause: format!("not the provider data `agentrace prices --update` keeps ({error}); fetch it again, or remove the file to price by the compiled-in database"),
    })?;
    let data = Arc::new(data_of(bytes, &digest));
    *last = Some((digest, Arc::clone(&data)));
    Ok(Some(data))
}

/// The digest that tells two snapshots apart (of their bytes).
fn digest_of(bytes: &[u8]) -> String {
    format!("{:016x}", crate::files::fnv1a(bytes))
}

/// The snapshot `bytes` as the home names it once kept: what `prices
/// --update` checks before it keeps them, under the name every figure
/// priced by it will say.
pub fn price_data(bytes: Vec<u8>) -> PriceData {
    let digest = digest_of(&bytes);
    data_of(bytes, &digest)
}

fn data_of(bytes: Vec<u8>, digest: &str) -> PriceData {
    // Named by eight hex digits: enough to tell two snapshots apart, and
    // short enough for a table's column.
    PriceData::new(bytes, digest.get(..8).unwrap_or(digest))
}

/// The book of `data` alone: the same one while the snapshot is.
pub fn book_of_data(data: Arc<PriceData>) -> Arc<PriceBook> {
    let Ok(mut last) = LAST_BOOK.lock() else {
        return Arc::new(PriceBook::of_data(data));
    };
    match last.as_ref() {
        Some(book) if book.data().is_some_and(|known| Arc::ptr_eq(known, &data)) => Arc::clone(book),
        _ => {
            let book = Arc::new(PriceBook::of_data(data));
            *last = Some(Arc::clone(&book));
            book
        }
    }
}

/// The prices earlier commands resolved, kept at `path`; `None` when there
/// are none to read. A cache: a file that is missing, torn or damaged
/// teaches nothing, and the next command that resolves a price replaces it.
pub fn read_known_prices(path: &Path) -> Option<KnownPrices> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// What a process that reads the home again and again (the server, at
/// each request) keeps of its prices: the known prices, read once when it
/// started (a cache of the database: another process's later resolutions
/// are what this one resolves itself), and the last book, kept while the
/// home's price files make one of its id, with what it resolved. A
/// request read the known prices anew and taught a new book them each
/// time, and a book of a price file lost its resolutions with its request.
pub struct KeptPrices {
    known: Option<KnownPrices>,
    last: Mutex<Option<Arc<PriceBook>>>,
}

impl KeptPrices {
    /// Keeping `known` (what earlier commands resolved, if anything).
    pub fn new(known: Option<KnownPrices>) -> Self {
        Self { known, last: Mutex::default() }
    }

    /// The book to price with, of the one the home's files make now:
    /// the last one while its id is the same (the same database and price
    /// file), else `book` taught the known prices and kept in its place (a
    /// book over another database learns none of them).
    pub fn keep(&self, book: Arc<PriceBook>) -> Arc<PriceBook> {
        let Ok(mut last) = self.last.lock() else {
            // A request that panicked with the lock held: this one prices
            // by a book of its own, taught as any.
            self.teach(&book);
            return book;
        };
        match last.as_ref() {
            Some(kept) if kept.id() == book.id() => Arc::clone(kept),
            _ => {
                self.teach(&book);
                *last = Some(Arc::clone(&book));
                book
            }
        }
    }

    fn teach(&self, book: &PriceBook) {
        if let Some(known) = &self.known {
            book.learn(known);
        }
    }
}

/// Keeps what `book` knows at `path`, replacing the file whole.
pub fn write_known_prices(path: &Path, book: &PriceBook) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(&book.known()).map_err(|error| StoreError::PriceFile {
        path: path.to_owned(),
        cause: format!("cannot encode the known prices: {error}"),
    })?;
    crate::files::replace_unsynced(path, &bytes, "write the known prices")
}
