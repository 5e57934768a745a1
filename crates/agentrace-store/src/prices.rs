//! A user's price file (`--prices FILE`, and `prices.json` in the home,
//! which every command prices with): US dollars per million tokens by
//! model-name prefix, over and beyond the compiled-in database.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use agentrace_core::prices::{FilePrice, PriceBook};

use crate::StoreError;

/// The shape a price file must have, for the error that names it.
const EXPECTED: &str = "expected {\"model\": {\"input\": …, \"cachedInput\": …, \"cacheCreation\": …, \"output\": …}} (US dollars per million tokens)";

/// The database overridden and extended by the price file at `path`,
/// named by a digest of its bytes (so figures priced by another table are
/// told apart).
pub fn read_price_file(path: &Path) -> Result<Arc<PriceBook>, StoreError> {
    let text = std::fs::read_to_string(path).map_err(|source| StoreError::io("read price file", path, source))?;
    let table: BTreeMap<String, FilePrice> = serde_json::from_str(&text).map_err(|error| StoreError::PriceFile {
        path: path.to_owned(),
        cause: format!("{EXPECTED}: {error}"),
    })?;
    Ok(Arc::new(PriceBook::with_file(table, &format!("{:016x}", crate::files::fnv1a(text.as_bytes())))))
}
