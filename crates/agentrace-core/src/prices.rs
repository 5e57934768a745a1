//! Prices of model requests: pydantic's `genai-prices` database, which a
//! user's table overrides and extends. One request is priced at a time, at
//! the rate in force at its own timestamp and for the provider that served
//! it: tiered prices depend on a request's size, so a sum of requests is
//! never priced as one. Pure: the database is data compiled into the
//! binary, and every request names its time (the clock is never read).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use genai_prices::{Calculator, PriceRequest, Usage, UsageKey};
use serde::{Deserialize, Serialize};

use crate::model::{Provider, Timestamp, TokenUsage};

/// The version of the `genai-prices` crate whose database is compiled in
/// (a test holds it to `Cargo.lock`).
pub const DATABASE_VERSION: &str = "0.2.1";

/// A user's price of one model, US dollars per million tokens, flat (the
/// `--prices FILE` format).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilePrice {
    /// Uncached input.
    pub input: f64,
    /// Cache reads.
    #[serde(default)]
    pub cached_input: f64,
    /// Cache writes.
    #[serde(default)]
    pub cache_creation: f64,
    /// Output (reasoning included).
    pub output: f64,
}

/// One model request to price.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Who served it: `openai` for Codex, `anthropic` for Claude.
    pub provider: Provider,
    /// The model the request named.
    pub model: &'a str,
    /// When it was made: the rate in force then applies.
    pub at: Timestamp,
    /// The service tier its record names (`flex`, `priority`, …), if any.
    pub service_tier: Option<&'a str>,
    /// Its tokens (input includes cache reads and writes).
    pub tokens: &'a TokenUsage,
}

/// Where a price came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PriceSource {
    /// The compiled-in `genai-prices` database.
    Database,
    /// The user's `--prices` file.
    File,
}

/// A model's rates per million tokens, for listing (`agentrace prices`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rates {
    /// The model id the database matched (the name itself for a file entry).
    pub matched_model: String,
    /// Uncached input.
    pub input: f64,
    /// Cache reads.
    pub cached_input: f64,
    /// Cache writes.
    pub cache_write: f64,
    /// Output.
    pub output: f64,
    /// True when a large request pays other rates than these (the rates
    /// listed are those of a small request).
    pub tiered: bool,
    /// Where they came from.
    pub source: PriceSource,
}

/// The prices every fold uses: the database, then the user's table.
pub struct PriceBook {
    /// The user's table, matched by the longest model-name prefix; it wins
    /// over the database.
    file: BTreeMap<String, FilePrice>,
    /// What the book is, for a cache to tell whether its figures were
    /// priced by the same book.
    id: String,
}

impl fmt::Debug for PriceBook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PriceBook").field("id", &self.id).finish_non_exhaustive()
    }
}

static DATABASE: LazyLock<Arc<PriceBook>> = LazyLock::new(|| Arc::new(PriceBook::database()));

impl PriceBook {
    /// The compiled-in database alone.
    pub fn database() -> Self {
        Self {
            file: BTreeMap::new(),
            id: database_label(),
        }
    }

    /// The database alone, shared (what a fold uses unless told otherwise).
    pub fn shared_database() -> Arc<PriceBook> {
        Arc::clone(&DATABASE)
    }

    /// The database overridden and extended by a user's table; `digest`
    /// names the table's content (a hash the caller computed), so that
    /// figures priced by another table are told apart.
    pub fn with_file(file: BTreeMap<String, FilePrice>, digest: &str) -> Self {
        Self {
            id: format!("{} + file {digest}", database_label()),
            file,
        }
    }

    /// What this book is: `genai-prices 0.2.1`, plus the file's digest.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The cost of one request in US dollars, or `None` when no price is
    /// known for its model (never a silent zero).
    pub fn price(&self, request: &Request<'_>) -> Option<f64> {
        if let Some(price) = self.file_price(request.model) {
            return Some(file_cost(price, request.tokens));
        }
        let usage = genai_usage(request.tokens);
        let mut priced = PriceRequest::new(request.model, &usage).with_timestamp(system_time(request.at));
        if let Some(provider) = provider_id(request.provider) {
            priced = priced.with_provider_id(provider);
        }
        if let Some(tier) = request.service_tier {
            priced = priced.with_price_context("service_tier", tier);
        }
        Calculator::bundled()
            .calculate(&priced)
            .ok()
            .map(|calculation| calculation.total_price)
    }

    /// A model's rates at `at`, per million tokens, or `None` when it has
    /// none.
    pub fn rates(&self, provider: Provider, model: &str, at: Timestamp) -> Option<Rates> {
        if let Some(price) = self.file_price(model) {
            return Some(Rates {
                matched_model: model.to_owned(),
                input: price.input,
                cached_input: price.cached_input,
                cache_write: price.cache_creation,
                output: price.output,
                tiered: false,
                source: PriceSource::File,
            });
        }
        let rate_of = |tokens: u64, part: fn(u64) -> TokenUsage| -> Option<(f64, String)> {
            let usage = genai_usage(&part(tokens));
            let mut request = PriceRequest::new(model, &usage).with_timestamp(system_time(at));
            if let Some(provider) = provider_id(provider) {
                request = request.with_provider_id(provider);
            }
            let calculation = Calculator::bundled().calculate(&request).ok()?;
            Some((calculation.total_price * 1_000_000.0 / tokens as f64, calculation.model_id))
        };
        // A thousand tokens is a small request: below every tier in the
        // database, and large enough that the rate prints exactly.
        const SMALL: u64 = 1_000;
        const LARGE: u64 = 2_000_000;
        let input = |tokens| TokenUsage { input_tokens: tokens, ..TokenUsage::default() };
        let cached = |tokens| TokenUsage { input_tokens: tokens, cached_input_tokens: tokens, ..TokenUsage::default() };
        let written = |tokens| TokenUsage {
            input_tokens: tokens,
            cache_creation_input_tokens: tokens,
            ..TokenUsage::default()
        };
        let output = |tokens| TokenUsage { output_tokens: tokens, ..TokenUsage::default() };
        let (input_rate, matched_model) = rate_of(SMALL, input)?;
        let (cached_rate, _) = rate_of(SMALL, cached)?;
        let (write_rate, _) = rate_of(SMALL, written)?;
        let (output_rate, _) = rate_of(SMALL, output)?;
        let tiered = [(input as fn(u64) -> TokenUsage, input_rate), (cached, cached_rate), (written, write_rate)]
            .into_iter()
            .any(|(part, small)| rate_of(LARGE, part).is_some_and(|(large, _)| (large - small).abs() > small * 1e-9));
        Some(Rates {
            matched_model,
            input: input_rate,
            cached_input: cached_rate,
            cache_write: write_rate,
            output: output_rate,
            tiered,
            source: PriceSource::Database,
        })
    }

    fn file_price(&self, model: &str) -> Option<&FilePrice> {
        self.file
            .iter()
            .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, price)| price)
    }
}

/// The database's name as every figure priced by it says it:
/// `genai-prices <version>`.
pub fn database_label() -> String {
    format!("genai-prices {DATABASE_VERSION}")
}

/// The database's provider id of a provider.
fn provider_id(provider: Provider) -> Option<&'static str> {
    match provider {
        Provider::Codex => Some("openai"),
        Provider::Claude => Some("anthropic"),
        Provider::Unknown => None,
    }
}

/// Our counters in the database's units: its `input_tokens` includes cache
/// reads and writes, as ours does.
fn genai_usage(tokens: &TokenUsage) -> Usage {
    let mut usage = Usage::new();
    usage.insert(UsageKey::INPUT_TOKENS, tokens.input_tokens as f64);
    if tokens.cached_input_tokens > 0 {
        usage.insert(UsageKey::CACHE_READ_TOKENS, tokens.cached_input_tokens as f64);
    }
    if tokens.cache_creation_input_tokens > 0 {
        usage.insert(UsageKey::CACHE_WRITE_TOKENS, tokens.cache_creation_input_tokens as f64);
    }
    usage.insert(UsageKey::OUTPUT_TOKENS, tokens.output_tokens as f64);
    usage
}

/// A flat per-million price of a request (the file's prices know no tiers).
fn file_cost(price: &FilePrice, tokens: &TokenUsage) -> f64 {
    let uncached = tokens
        .input_tokens
        .saturating_sub(tokens.cached_input_tokens)
        .saturating_sub(tokens.cache_creation_input_tokens);
    (uncached as f64 * price.input
        + tokens.cached_input_tokens as f64 * price.cached_input
        + tokens.cache_creation_input_tokens as f64 * price.cache_creation
        + tokens.output_tokens as f64 * price.output)
        / 1_000_000.0
}

fn system_time(at: Timestamp) -> SystemTime {
    match u64::try_from(at.millis()) {
        Ok(millis) => UNIX_EPOCH + Duration::from_millis(millis),
        // Before 1970: no price in the database is that old either way.
        Err(_) => UNIX_EPOCH,
    }
}
