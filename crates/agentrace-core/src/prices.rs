//! Prices of model requests: pydantic's `genai-prices` database, which a
//! user's table overrides and extends. One request is priced at a time, at
//! the rate in force at its own timestamp and for the provider that served
//! it: tiered prices depend on a request's size, so a sum of requests is
//! never priced as one. Pure: the database is data compiled into the
//! binary (or a newer snapshot of it the caller read, [`PriceData`]), and
//! every request names its time (the clock is never read).
//!
//! # The flat-rate cache
//!
//! Pricing a request through the database took about 4 µs, and `usage`
//! prices hundreds of thousands. Most prices are flat: the cost is a sum of
//! tokens times rates. A book therefore resolves, once per (provider,
//! model, service tier, UTC day), whether the price is flat that whole day
//! and at what rates, and prices each request of that key by those rates.
//! A price is taken as flat only when probes agree with the rates at the
//! day's start and end and at request sizes across every tier threshold in
//! the database (up to ten million input tokens), with and without cache
//! writes kept for an hour and web searches, and when an empty request
//! costs nothing (no per-request fee). A price tiered by a request's size
//! at one threshold of input tokens (today's GPT and Claude Sonnet models)
//! resolves to its threshold and the two flat rates on either side of it,
//! found and checked the same way on both sides. Anything else (more
//! tiers, a price that changes within the day, a model the database lacks,
//! and every request of an unknown provider, which may reach a price by the
//! time of day that a day's start and end cannot see) is priced per
//! request, as before. The database is decoded on the first miss only.
//!
//! # Known prices, from one process to the next
//!
//! A command that prices a handful of requests (`show`, `status`) spent
//! most of its time decoding the database (30 to 60 ms, and 20 MB, for the
//! regular expressions of every model it lists). A book therefore gives
//! what it resolved as data ([`PriceBook::known`]: each run of consecutive
//! days one key resolved alike, [`KnownPrices`]) and takes what an earlier
//! process resolved ([`PriceBook::learn`]), for the same database only; the
//! store keeps it in the home. A request whose key is known is priced as a
//! resolved one: by its rates, or as having no price. Only a request priced
//! per request, or of a key never met, opens the database.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use genai_prices::{Calculator, ErrorKind, PriceRequest, Usage, UsageKey};
use serde::{Deserialize, Serialize};

use crate::days::DAY_MS;
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
    /// Cache writes kept for an hour (Claude), when they cost otherwise
    /// than `cacheCreation`; absent, they cost what it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_1h: Option<f64>,
    /// Output (reasoning included).
    pub output: f64,
    /// US dollars per thousand web searches; absent, searches cost nothing
    /// more than their tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web_searches: Option<f64>,
}

impl FilePrice {
    /// The keys a price of the file may have, as serde names its fields:
    /// any other (a typo such as `cachedInputs`) would be passed over and
    /// leave its rate at zero, a silent $0.
    pub const KEYS: [&'static str; 6] = ["input", "cachedInput", "cacheCreation", "cacheCreation1h", "output", "webSearches"];

    /// The first rate that is no price (below zero, or not a finite
    /// number), with its key: a negative rate would take money off every
    /// figure it prices.
    pub fn bad_rate(&self) -> Option<(&'static str, f64)> {
        let [input, cached_input, cache_creation, cache_creation_1h, output, web_searches] = Self::KEYS;
        [
            (input, Some(self.input)),
            (cached_input, Some(self.cached_input)),
            (cache_creation, Some(self.cache_creation)),
            (cache_creation_1h, self.cache_creation_1h),
            (output, Some(self.output)),
            (web_searches, self.web_searches),
        ]
        .into_iter()
        .find_map(|(key, rate)| rate.filter(|rate| !(rate.is_finite() && *rate >= 0.0)).map(|rate| (key, rate)))
    }
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
    /// Cache writes (kept five minutes, for Claude).
    pub cache_write: f64,
    /// Cache writes kept for an hour (Claude's); the same as `cache_write`
    /// for a model whose writes have one price.
    pub cache_write_1h: f64,
    /// Output.
    pub output: f64,
    /// US dollars per thousand web searches (zero when they are not billed).
    pub web_searches: f64,
    /// True when a large request pays other rates than these (the rates
    /// listed are those of a small request).
    pub tiered: bool,
    /// Where they came from.
    pub source: PriceSource,
}

/// The prices every fold uses: the database, then the user's table.
pub struct PriceBook {
    /// The database: a newer snapshot the user fetched, else (`None`) the
    /// compiled-in one.
    data: Option<Arc<PriceData>>,
    /// The user's table, matched by the longest model-name prefix; it wins
    /// over the database.
    file: BTreeMap<String, FilePrice>,
    /// What the book is, for a cache to tell whether its figures were
    /// priced by the same book.
    id: String,
    /// Resolved database prices (see the module's documentation); `None`
    /// prices every request through the database.
    flat: Option<Mutex<FlatRates>>,
    /// What earlier processes resolved ([`PriceBook::learn`]), consulted
    /// when a key is not in `flat`.
    known: Mutex<KnownSpans>,
    /// Keys this book resolved through the database itself, not learned:
    /// what an earlier process did not know.
    resolutions: AtomicU64,
    /// Requests priced through the database one by one.
    priced_through_database: AtomicU64,
}

/// A `genai-prices` database other than the compiled-in one: the provider
/// data (its v2 JSON) of a newer snapshot, which `agentrace prices
/// --update` fetches into the home, so a model released after this build
/// is priced. Decoded on its first use (as the compiled-in one is): a
/// command that prices nothing never pays for it.
pub struct PriceData {
    /// What it is, as every figure priced by it says: `genai-prices data
    /// <digest>`.
    label: String,
    bytes: Vec<u8>,
    decoded: OnceLock<Result<Calculator, String>>,
}

impl PriceData {
    /// The snapshot `bytes`, named by `digest` (of its bytes, which the
    /// caller computed).
    pub fn new(bytes: Vec<u8>, digest: &str) -> Self {
        Self { label: format!("genai-prices data {digest}"), bytes, decoded: OnceLock::new() }
    }

    /// How many providers and models it holds, or why it is no provider
    /// data: what a fetched snapshot is checked by before it is kept.
    pub fn contents(&self) -> Result<(usize, usize), String> {
        let calculator = self.decoded().as_ref().map_err(String::clone)?;
        let (mut providers, mut models) = (0, 0);
        for provider in calculator.providers() {
            providers += 1;
            models += provider.models().count();
        }
        Ok((providers, models))
    }

    /// Its name (`genai-prices data <digest>`).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its provider data, as read.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Why it cannot be decoded, once it has been tried; the book then
    /// prices by the compiled-in database.
    pub fn problem(&self) -> Option<String> {
        self.decoded().as_ref().err().cloned()
    }

    /// Decoded on the first call, once.
    fn decoded(&self) -> &Result<Calculator, String> {
        self.decoded.get_or_init(|| Calculator::from_json(&self.bytes).map_err(|error| error.to_string()))
    }

    fn calculator(&self) -> &Calculator {
        self.decoded().as_ref().unwrap_or_else(|_| Calculator::bundled())
    }
}

impl fmt::Debug for PriceData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PriceData").field("label", &self.label).finish_non_exhaustive()
    }
}

/// Resolved prices by model, then (provider, UTC day), then service tier
/// (a few per day): looked up without building a key.
type FlatRates = HashMap<String, HashMap<(Provider, i64), Vec<(Option<Box<str>>, Flat)>>>;

/// What the database charges one (provider, model, tier) for a whole day.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Flat {
    /// Tokens times these rates (US dollars per million tokens, as the
    /// database has them).
    Rates(FlatRate),
    /// No price: the database has no such provider or model.
    Unpriced,
    /// Not flat, and not one threshold of size between two flat rates (a
    /// fee per request, a change within the day, more tiers): each request
    /// is priced through the database.
    PerRequest,
    /// Two flat rates by the request's size: up to a number of input
    /// tokens, and past it (every tiered price the database has for Codex
    /// and Claude models, GPT-5.4 on and Claude Sonnet 4.5 on, has one
    /// threshold).
    Tiered(TieredRate),
}

/// A price tiered by a request's input tokens, as the database tiers it:
/// `base` for a request of up to `above` input tokens, `high` past it.
/// Resolved, like a flat rate, only when probes on both sides of the
/// threshold agree with the database to the bit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TieredRate {
    above: u64,
    base: FlatRate,
    high: FlatRate,
}

impl TieredRate {
    /// The rates of a request of `tokens`.
    fn rates(&self, tokens: &TokenUsage) -> &FlatRate {
        if tokens.input_tokens > self.above {
            &self.high
        } else {
            &self.base
        }
    }
}

/// A flat price's rates per million tokens. A cache rate the database may
/// not have (it then bills those tokens as input) is `None` when it equals
/// the input rate: a request with such tokens is priced per request. The
/// hour-long write rate is `None` when it equals the write rate (the
/// database then has none, and bills those tokens as any write).
///
/// Kept between processes as each rate's bits: a decimal read back may be
/// an ulp off, and a known price must give the figure a resolved one does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FlatRate {
    #[serde(with = "bits")]
    input: f64,
    #[serde(with = "optional_bits")]
    cache_read: Option<f64>,
    #[serde(with = "optional_bits")]
    cache_write: Option<f64>,
    #[serde(with = "optional_bits")]
    cache_write_1h: Option<f64>,
    #[serde(with = "bits")]
    output: f64,
    /// Per thousand web searches (zero where the database has no price).
    #[serde(with = "bits")]
    web_searches: f64,
}

/// A float kept as its bits (`#[serde(with = "…::prices::bits")]`): a
/// decimal read back may be an ulp off, and a figure kept between
/// processes must give the very figure a cold one does (known prices, the
/// status line's state).
pub mod bits {
    use serde::{Deserialize as _, Deserializer, Serializer};

    /// `value`'s bits.
    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(value.to_bits())
    }

    /// The float of the bits read.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        u64::deserialize(deserializer).map(f64::from_bits)
    }
}

/// An optional rate as its bits, `null` when there is none.
mod optional_bits {
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(rate) => serializer.serialize_u64(rate.to_bits()),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
        Option::<u64>::deserialize(deserializer).map(|bits| bits.map(f64::from_bits))
    }
}

impl FlatRate {
    /// The cost of `tokens` as the database computes it, operation for
    /// operation (each unit's `rate × count / 10⁶`, input units summed in
    /// the database's order of price keys: cache reads, hour-long cache
    /// writes, the other cache writes, input), so the figure is the
    /// database's to the bit; `None` when it cannot be (tokens of a cache
    /// unit whose rate is unknown). The caller holds each part within its
    /// whole.
    fn cost(&self, tokens: &TokenUsage) -> Option<f64> {
        const PER: f64 = 1_000_000.0;
        let part = |rate: Option<f64>, count: u64| match (rate, count) {
            (_, 0) => Some(0.0),
            (Some(rate), count) => Some(rate * count as f64 / PER),
            (None, _) => None,
        };
        let writes = tokens.cache_creation_input_tokens;
        let uncached = tokens.input_tokens - tokens.cached_input_tokens - writes;
        let read = 0.0 + part(self.cache_read, tokens.cached_input_tokens)?;
        let written = match self.cache_write_1h {
            // The database bills what is left of the writes once the
            // hour-long ones are taken out (its "leaf").
            Some(hour_rate) => {
                let (five_minutes, hour) = tokens.writes_by_lifetime();
                read + part(Some(hour_rate), hour)? + part(self.cache_write, five_minutes)?
            }
            None => read + part(self.cache_write, writes)?,
        };
        let input = written + self.input * uncached as f64 / PER;
        let output = self.output * tokens.output_tokens as f64 / PER;
        // A unit of neither direction is summed first, then input and
        // output are added to it, as the database does.
        let searches = 0.0 + self.web_searches * tokens.web_search_requests as f64 / 1_000.0;
        Some(searches + (input + output))
    }
}

impl fmt::Debug for PriceBook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PriceBook").field("id", &self.id).finish_non_exhaustive()
    }
}

static DATABASE: LazyLock<Arc<PriceBook>> = LazyLock::new(|| Arc::new(PriceBook::database()));

/// Decodes the compiled-in database now (about 160 million instructions,
/// 15 to 70 ms by the machine, once per process: its JSON, and a regex per
/// model match), so a shell with a spare core can do it beside its reading
/// instead of on the first request a fold prices. Pure: the same data
/// whoever decodes it.
pub fn warm_database() {
    let _ = Calculator::bundled();
}

impl PriceBook {
    /// The compiled-in database alone.
    pub fn database() -> Self {
        Self {
            data: None,
            file: BTreeMap::new(),
            id: database_label(),
            flat: Some(Mutex::default()),
            known: Mutex::default(),
            resolutions: AtomicU64::new(0),
            priced_through_database: AtomicU64::new(0),
        }
    }

    /// A newer database snapshot alone ([`PriceData`]), in place of the
    /// compiled-in one.
    pub fn of_data(data: Arc<PriceData>) -> Self {
        Self {
            id: data.label().to_owned(),
            data: Some(data),
            file: BTreeMap::new(),
            flat: Some(Mutex::default()),
            known: Mutex::default(),
            resolutions: AtomicU64::new(0),
            priced_through_database: AtomicU64::new(0),
        }
    }

    /// The database this book prices by: the snapshot it was given, if
    /// any (for `agentrace prices` to name, and to say what is wrong
    /// with).
    pub fn data(&self) -> Option<&Arc<PriceData>> {
        self.data.as_ref()
    }

    /// The name of the database this book prices by: `genai-prices
    /// <version>` (compiled in) or `genai-prices data <digest>`.
    pub fn database_name(&self) -> String {
        self.data.as_ref().map_or_else(database_label, |data| data.label().to_owned())
    }

    fn calculator(&self) -> &Calculator {
        self.data.as_ref().map_or_else(|| Calculator::bundled(), |data| data.calculator())
    }

    /// Decodes this book's database now ([`warm_database`] for a book
    /// that may price by a newer one).
    pub fn warm(&self) {
        let _ = self.calculator();
    }

    /// The same book pricing every request through the database, with no
    /// flat-rate cache: what the cache is checked against.
    pub fn without_cache(mut self) -> Self {
        self.flat = None;
        self
    }

    /// The database alone, shared (what a fold uses unless told otherwise).
    pub fn shared_database() -> Arc<PriceBook> {
        Arc::clone(&DATABASE)
    }

    /// The database overridden and extended by a user's table; `digest`
    /// names the table's content (a hash the caller computed), so that
    /// figures priced by another table are told apart.
    pub fn with_file(file: BTreeMap<String, FilePrice>, digest: &str) -> Self {
        Self::with_file_over(None, file, digest)
    }

    /// A user's table over `data` (a newer database snapshot; the
    /// compiled-in one when `None`), as [`PriceBook::with_file`].
    pub fn with_file_over(data: Option<Arc<PriceData>>, file: BTreeMap<String, FilePrice>, digest: &str) -> Self {
        let base = data.as_ref().map_or_else(database_label, |data| data.label().to_owned());
        Self {
            id: format!("{base}{FILE_IN_ID}{digest}"),
            data,
            file,
            flat: Some(Mutex::default()),
            known: Mutex::default(),
            resolutions: AtomicU64::new(0),
            priced_through_database: AtomicU64::new(0),
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
        let tokens = request.tokens;
        // A request whose cache reads and writes exceed its input, or whose
        // hour-long writes exceed its writes, is refused by the database (or
        // priced oddly): never by the rates.
        let consistent = tokens.cached_input_tokens.saturating_add(tokens.cache_creation_input_tokens) <= tokens.input_tokens
            && tokens.cache_creation_1h_input_tokens <= tokens.cache_creation_input_tokens;
        match self.flat(request).filter(|_| consistent) {
            Some(Flat::Rates(rate)) => rate.cost(tokens).or_else(|| self.through_database(request)),
            Some(Flat::Tiered(tiered)) => tiered.rates(tokens).cost(tokens).or_else(|| self.through_database(request)),
            Some(Flat::Unpriced) => None,
            Some(Flat::PerRequest) | None => self.through_database(request),
        }
    }

    /// `request` priced by the database itself (decoded on first use).
    fn through_database(&self, request: &Request<'_>) -> Option<f64> {
        self.priced_through_database.fetch_add(1, Ordering::Relaxed);
        database_price(self.calculator(), request)
    }

    /// How many requests this book priced through the database one by one
    /// (not by rates it resolved or learned).
    pub fn priced_through_database(&self) -> u64 {
        self.priced_through_database.load(Ordering::Relaxed)
    }

    /// The flat rates of `request`'s key, resolved on first use; `None`
    /// for a book without the cache.
    fn flat(&self, request: &Request<'_>) -> Option<Flat> {
        // A day's rates are read at its start and end: sound for a price
        // that changes at midnight UTC (the database's start dates), not
        // for one by the time of day (DeepSeek's off-peak hours, 00:30 to
        // 16:30 at twice the rate: a day starts and ends off-peak). No
        // model the database finds for Codex or Claude has one (a test
        // holds it to that); a request of an unknown provider is matched
        // across every provider, so it is priced one by one.
        if !matches!(request.provider, Provider::Codex | Provider::Claude) {
            return None;
        }
        let flat = self.flat.as_ref()?;
        let day = request.at.millis().div_euclid(DAY_MS);
        let cached = |cache: &FlatRates| {
            cache
                .get(request.model)
                .and_then(|days| days.get(&(request.provider, day)))
                .and_then(|tiers| tiers.iter().find(|(tier, _)| tier.as_deref() == request.service_tier))
                .map(|(_, found)| *found)
        };
        if let Some(found) = cached(&*flat.lock().ok()?) {
            return Some(found);
        }
        let known = self.known.lock().ok().and_then(|known| known_flat(&known, request, day));
        if let Some(found) = known {
            let mut cache = flat.lock().ok()?;
            if cached(&cache).is_none() {
                put_flat(&mut cache, request, day, found);
            }
            return Some(found);
        }
        // Resolved with the lock released: it takes about thirty database
        // requests, and every other worker's request would wait on the lock
        // meanwhile (a history of many days resolves once per model and
        // day). Two workers may resolve one key at once; they find the same.
        // A tiered key's threshold found on another day is tried first.
        let threshold = flat.lock().ok().and_then(|cache| {
            cache.get(request.model)?.iter().find_map(|((provider, _), tiers)| {
                tiers.iter().find_map(|(tier, found)| match found {
                    Flat::Tiered(tiered) if *provider == request.provider && tier.as_deref() == request.service_tier => Some(tiered.above),
                    Flat::Tiered(_) | Flat::Rates(_) | Flat::Unpriced | Flat::PerRequest => None,
                })
            })
        });
        let resolved = resolve_flat(self.calculator(), (request.provider, request.model, request.service_tier), day, threshold);
        let mut cache = flat.lock().ok()?;
        if cached(&cache).is_none() {
            put_flat(&mut cache, request, day, resolved);
            self.resolutions.fetch_add(1, Ordering::Relaxed);
        }
        Some(resolved)
    }

    /// Every key this book resolved or learned, as runs of consecutive
    /// days resolved alike, for the next process to [`PriceBook::learn`]
    /// (nothing for a book without the cache).
    pub fn known(&self) -> KnownPrices {
        // Each key's runs of days, learned or resolved (a resolved day as a
        // run of one), joined where they touch or overlap alike; never
        // expanded day by day (a learned run may be long).
        let mut runs: BTreeMap<KeyOfSpan, Vec<(i64, i64, Flat)>> = BTreeMap::new();
        if let Ok(known) = self.known.lock() {
            for span in known.values().flatten() {
                runs.entry((span.provider, span.model.clone(), span.service_tier.clone()))
                    .or_default()
                    .push((span.first_day, span.last_day, span.price));
            }
        }
        if let Some(Ok(cache)) = self.flat.as_ref().map(Mutex::lock) {
            for (model, by_day) in cache.iter() {
                for ((provider, day), tiers) in by_day {
                    for (tier, flat) in tiers {
                        runs.entry((*provider, model.clone(), tier.as_deref().map(str::to_owned)))
                            .or_default()
                            .push((*day, *day, *flat));
                    }
                }
            }
        }
        let mut spans = Vec::new();
        for ((provider, model, service_tier), mut of_key) in runs {
            of_key.sort_by_key(|&(first, last, _)| (first, last));
            let mut open: Option<KnownSpan> = None;
            for (first_day, last_day, price) in of_key {
                match &mut open {
                    Some(span) if first_day <= span.last_day.saturating_add(1) && span.price == price => {
                        span.last_day = span.last_day.max(last_day);
                    }
                    _ => {
                        spans.extend(open.take());
                        open = Some(KnownSpan { provider, model: model.clone(), service_tier: service_tier.clone(), first_day, last_day, price });
                    }
                }
            }
            spans.extend(open);
        }
        KnownPrices { database: self.database_name(), resolver: RESOLVER, spans }
    }

    /// Takes what an earlier process resolved by the same database (a
    /// `known` of another database, or of a book with another table over
    /// it, is left: the file's prices are looked up before the database's
    /// anyway). A span longer than [`MAX_KNOWN_SPAN_DAYS`] is passed over
    /// (no resolution makes one: a damaged file could).
    pub fn learn(&self, known: &KnownPrices) {
        if self.flat.is_none() || known.database != self.database_name() || known.resolver != RESOLVER {
            return;
        }
        let Ok(mut spans) = self.known.lock() else {
            return;
        };
        for span in &known.spans {
            if span.first_day <= span.last_day && span.last_day - span.first_day < MAX_KNOWN_SPAN_DAYS {
                // A home read again (the server's every request) is taught
                // the same spans again.
                let of_model = spans.entry(span.model.clone()).or_default();
                if !of_model.contains(span) {
                    of_model.push(span.clone());
                }
            }
        }
    }

    /// Whether this book was taught what an earlier process resolved
    /// ([`PriceBook::learn`]): then most requests of a history met before
    /// are priced without the database, and decoding it ahead of need
    /// ([`PriceBook::warm`]) would mostly take a core from the work.
    pub fn learned_any(&self) -> bool {
        self.known.lock().is_ok_and(|known| !known.is_empty())
    }

    /// How many keys this book resolved through the database itself (not
    /// learned): when none, what it knows is what it was told.
    pub fn resolutions(&self) -> u64 {
        self.resolutions.load(Ordering::Relaxed)
    }
}

/// How keys are resolved, for what is kept of them ([`KnownPrices`]): 2
/// since a tiered price resolves to its two rates ([`Flat::Tiered`]).
pub const RESOLVER: u32 = 2;

/// A learned span this long or longer is passed over: a hundred years.
pub const MAX_KNOWN_SPAN_DAYS: i64 = 36_525;

/// Learned spans by model.
type KnownSpans = HashMap<String, Vec<KnownSpan>>;

/// What a span is of: (provider, model, service tier).
type KeyOfSpan = (Provider, String, Option<String>);

/// What a learned span says of `request`'s key on `day`.
fn known_flat(known: &KnownSpans, request: &Request<'_>, day: i64) -> Option<Flat> {
    known.get(request.model)?.iter().find_map(|span| {
        (span.provider == request.provider
            && span.service_tier.as_deref() == request.service_tier
            && (span.first_day..=span.last_day).contains(&day))
        .then_some(span.price)
    })
}

/// Puts a key's resolution in the cache.
fn put_flat(cache: &mut FlatRates, request: &Request<'_>, day: i64, flat: Flat) {
    cache
        .entry(request.model.to_owned())
        .or_default()
        .entry((request.provider, day))
        .or_default()
        .push((request.service_tier.map(Box::from), flat));
}

/// The keys a book resolved, as data a caller keeps between processes
/// ([`PriceBook::known`], [`PriceBook::learn`]): valid for the database it
/// names only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KnownPrices {
    /// The database they were resolved by ([`PriceBook::database_name`]).
    pub database: String,
    /// How they were resolved ([`RESOLVER`]): what an older resolver kept
    /// is not learned (it priced a tiered price per request, which this
    /// one resolves to its two rates).
    #[serde(default)]
    pub resolver: u32,
    /// Each run of consecutive UTC days one key resolved alike.
    pub spans: Vec<KnownSpan>,
}

/// One (provider, model, service tier) resolved alike from `first_day` to
/// `last_day` (UTC days since 1970, both included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KnownSpan {
    provider: Provider,
    model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    service_tier: Option<String>,
    first_day: i64,
    last_day: i64,
    price: Flat,
}

/// The price of one request through the database.
fn database_price(calculator: &Calculator, request: &Request<'_>) -> Option<f64> {
    database_calculation(calculator, request.provider, request.model, request.service_tier, request.at, request.tokens)
        .ok()
        .map(|calculation| calculation.total_price)
}

/// One request through the database.
fn database_calculation(
    calculator: &Calculator,
    provider: Provider,
    model: &str,
    service_tier: Option<&str>,
    at: Timestamp,
    tokens: &TokenUsage,
) -> Result<genai_prices::PriceCalculation, genai_prices::Error> {
    let usage = genai_usage(tokens);
    let mut priced = PriceRequest::new(model, &usage).with_timestamp(system_time(at));
    if let Some(provider) = provider_id(provider) {
        priced = priced.with_provider_id(provider);
    }
    if let Some(tier) = service_tier {
        priced = priced.with_price_context("service_tier", tier);
    }
    calculator.calculate(&priced)
}

/// Whether the database's price of (provider, model, tier) is flat for the
/// whole UTC day `day`, and its rates (see the module's documentation).
/// `threshold`: a tiered price's threshold found on another day, tried
/// before it is searched for.
fn resolve_flat(calculator: &Calculator, (provider, model, service_tier): (Provider, &str, Option<&str>), day: i64, threshold: Option<u64>) -> Flat {
    let start = Timestamp(day.saturating_mul(DAY_MS));
    let end = Timestamp(day.saturating_mul(DAY_MS).saturating_add(DAY_MS - 1));
    let price = |at: Timestamp, tokens: TokenUsage| database_calculation(calculator, provider, model, service_tier, at, &tokens);
    // Read at a million input tokens: a flat price has the same rates at
    // every size, and the probes below check it does.
    let rate = match (rate_of_size(&price, start, MILLION), rate_of_size(&price, end, MILLION)) {
        (Ok(first), Ok(last)) if first == last => first,
        (Ok(_), Ok(_)) => return Flat::PerRequest,
        // No such provider or model, whatever the request: no price.
        (Err(error), _) if matches!(error.kind(), ErrorKind::ProviderNotFound | ErrorKind::ModelNotFound) => {
            return Flat::Unpriced;
        }
        _ => return Flat::PerRequest,
    };
    // No fee per request.
    if price(start, TokenUsage::default()).map(|calculation| calculation.total_price).ok() != Some(0.0) {
        return Flat::PerRequest;
    }
    // The same figure to the bit as the database's, at sizes across every
    // tier threshold it has (100 k to 524 288 input tokens) and far beyond.
    let agrees = agrees_with_database(&price, start, &PROBED_SIZES, &|_| &rate);
    if agrees {
        Flat::Rates(rate)
    } else {
        resolve_tiered(&price, (start, end), threshold).map_or(Flat::PerRequest, Flat::Tiered)
    }
}

/// Input sizes a resolved price is checked at: across every tier
/// threshold the database has (100 k to 524 288 input tokens) and far
/// beyond.
const PROBED_SIZES: [u64; 10] = [50_021, 150_001, 199_999, 200_001, 256_003, 272_001, 300_007, 524_289, 1_100_009, 10_000_019];

/// Whether requests of each of `sizes` input tokens, mixed with cache reads
/// and writes (a third of them kept for an hour), output and web searches
/// as the rates allow, cost at `at` what the rates `rates_of` gives them
/// say, to the very bit of the database's figure.
fn agrees_with_database<'r>(
    price: &dyn Fn(Timestamp, TokenUsage) -> Result<genai_prices::PriceCalculation, genai_prices::Error>,
    at: Timestamp,
    sizes: &[u64],
    rates_of: &dyn Fn(&TokenUsage) -> &'r FlatRate,
) -> bool {
    sizes.iter().all(|&total| {
        let rates = rates_of(&TokenUsage { input_tokens: total, ..TokenUsage::default() });
        let cache_write = if rates.cache_write.is_some() { total / 8 } else { 0 };
        let cache_read = if rates.cache_read.is_some() { total / 4 } else { 0 };
        let mixed = TokenUsage { input_tokens: total, cached_input_tokens: cache_read, cache_creation_input_tokens: cache_write, output_tokens: total / 10 + 7, ..TokenUsage::default() };
        [
            mixed,
            // A third of the writes kept for an hour, and web searches.
            TokenUsage { cache_creation_1h_input_tokens: cache_write / 3, web_search_requests: total % 97 + 1, ..mixed },
            TokenUsage { input_tokens: total, output_tokens: 3, ..TokenUsage::default() },
        ]
        .iter()
        .all(|tokens| {
            let theirs = price(at, *tokens).map(|calculation| calculation.total_price).ok();
            theirs.is_some() && rates_of(tokens).cost(tokens).map(f64::to_bits) == theirs.map(f64::to_bits)
        })
    })
}

/// Sizes a tiered price is read at: under every threshold the database
/// has, and past them all.
const SMALL_REQUEST: u64 = 1_000;
const LARGE_REQUEST: u64 = 10_000_000;

/// A price that is flat below and past one threshold of input tokens, the
/// same all day (the day's `start` and `end`): its two rates and the
/// threshold, when probes on both sides of it, mixed as the flat ones are,
/// agree with the database to the bit; `None` otherwise (more tiers, a fee,
/// rates a request's other tokens tier). `threshold` is tried first.
fn resolve_tiered(
    price: &dyn Fn(Timestamp, TokenUsage) -> Result<genai_prices::PriceCalculation, genai_prices::Error>,
    (start, end): (Timestamp, Timestamp),
    threshold: Option<u64>,
) -> Option<TieredRate> {
    let rates = |at: Timestamp, size: u64| rate_of_size(price, at, size).ok();
    let base = rates(start, SMALL_REQUEST)?;
    let high = rates(start, LARGE_REQUEST)?;
    if base == high || rates(end, SMALL_REQUEST)? != base || rates(end, LARGE_REQUEST)? != high {
        return None;
    }
    // The largest size still at the base rates.
    let known = threshold.filter(|&above| {
        (SMALL_REQUEST..LARGE_REQUEST).contains(&above) && rates(start, above) == Some(base) && rates(start, above + 1) == Some(high)
    });
    let above = match known {
        Some(above) => above,
        None => {
            let (mut low, mut up) = (SMALL_REQUEST, LARGE_REQUEST);
            while up - low > 1 {
                let middle = low + (up - low) / 2;
                let rate = rates(start, middle)?;
                if rate == base {
                    low = middle;
                } else if rate == high {
                    up = middle;
                } else {
                    // A third rate: more than one threshold.
                    return None;
                }
            }
            low
        }
    };
    let tiered = TieredRate { above, base, high };
    // Probes around the threshold and across the sizes the flat rates are
    // checked at, each priced by the database and by the rates of its tier.
    let around = [SMALL_REQUEST, above - 1, above, above + 1, above + 2, LARGE_REQUEST];
    let agrees = agrees_with_database(price, start, &around, &|tokens| tiered.rates(tokens))
        && agrees_with_database(price, start, &PROBED_SIZES, &|tokens| tiered.rates(tokens));
    agrees.then_some(tiered)
}

/// A million tokens: what rates are per.
const MILLION: u64 = 1_000_000;

/// The rates per million tokens `price` charges at `at` for requests of
/// `size` input tokens: every probe has them, so each is priced in that
/// size's tier (an output or a search probe too).
fn rate_of_size(
    price: &dyn Fn(Timestamp, TokenUsage) -> Result<genai_prices::PriceCalculation, genai_prices::Error>,
    at: Timestamp,
    size: u64,
) -> Result<FlatRate, genai_prices::Error> {
    let per_million = |figure: f64| figure * MILLION as f64 / size as f64;
    let input = per_million(price(at, TokenUsage { input_tokens: size, ..TokenUsage::default() })?.input_price);
    let read = per_million(price(at, TokenUsage { input_tokens: size, cached_input_tokens: size, ..TokenUsage::default() })?.input_price);
    let write = per_million(price(at, TokenUsage { input_tokens: size, cache_creation_input_tokens: size, ..TokenUsage::default() })?.input_price);
    let hour = per_million(
        price(
            at,
            TokenUsage {
                input_tokens: size,
                cache_creation_input_tokens: size,
                cache_creation_1h_input_tokens: size,
                ..TokenUsage::default()
            },
        )?
        .input_price,
    );
    let output = price(at, TokenUsage { input_tokens: size, output_tokens: MILLION, ..TokenUsage::default() })?.output_price;
    // The searches' part of the total: the database adds input and output
    // to the parts of neither direction.
    let searched = price(at, TokenUsage { input_tokens: size, web_search_requests: 1_000, ..TokenUsage::default() })?;
    let searches = searched.total_price - (searched.input_price + searched.output_price);
    Ok(flat_rate([input, read, write, hour, output, searches]))
}

/// The rates of the figures a million tokens of each kind cost (input,
/// cache reads, cache writes, hour-long writes, output) and a thousand
/// searches.
fn flat_rate([input, read, write, hour, output, searches]: [f64; 6]) -> FlatRate {
    let input = database_rate(input);
    // Equal to the input rate: billed as input, or priced alike; unknown.
    let cache = |figure: f64| Some(database_rate(figure)).filter(|rate| *rate != input);
    let cache_write = cache(write);
    // Equal to the write rate: billed as any write (the agreement probes
    // catch a model that prices both alike but apart).
    let cache_write_1h = cache(hour).filter(|rate| Some(*rate) != cache_write);
    FlatRate {
        input,
        cache_read: cache(read),
        cache_write,
        cache_write_1h,
        output: database_rate(output),
        web_searches: database_rate(searches),
    }
}

/// The database's rate (a short decimal, as its data writes it) from the
/// figure of a million tokens at that rate (`rate × 10⁶ / 10⁶`, which may
/// be a bit off): the figure to ten significant digits.
fn database_rate(figure: f64) -> f64 {
    format!("{figure:.9e}").parse().unwrap_or(figure)
}

impl PriceBook {
    /// A model's rates at `at`, per million tokens, or `None` when it has
    /// none.
    pub fn rates(&self, provider: Provider, model: &str, at: Timestamp) -> Option<Rates> {
        if let Some(price) = self.file_price(model) {
            return Some(Rates {
                matched_model: model.to_owned(),
                input: price.input,
                cached_input: price.cached_input,
                cache_write: price.cache_creation,
                cache_write_1h: price.cache_creation_1h.unwrap_or(price.cache_creation),
                output: price.output,
                web_searches: price.web_searches.unwrap_or(0.0),
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
            let calculation = self.calculator().calculate(&request).ok()?;
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
        let written_1h = |tokens| TokenUsage {
            input_tokens: tokens,
            cache_creation_input_tokens: tokens,
            cache_creation_1h_input_tokens: tokens,
            ..TokenUsage::default()
        };
        let output = |tokens| TokenUsage { output_tokens: tokens, ..TokenUsage::default() };
        let (input_rate, matched_model) = rate_of(SMALL, input)?;
        let (cached_rate, _) = rate_of(SMALL, cached)?;
        let (write_rate, _) = rate_of(SMALL, written)?;
        let (write_1h_rate, _) = rate_of(SMALL, written_1h)?;
        let (output_rate, _) = rate_of(SMALL, output)?;
        // `rate_of` is per million; a search is priced per thousand.
        let searches = |count| TokenUsage { web_search_requests: count, ..TokenUsage::default() };
        let (search_rate, _) = rate_of(SMALL, searches)?;
        let tiered = [
            (input as fn(u64) -> TokenUsage, input_rate),
            (cached, cached_rate),
            (written, write_rate),
            (written_1h, write_1h_rate),
        ]
            .into_iter()
            .any(|(part, small)| rate_of(LARGE, part).is_some_and(|(large, _)| (large - small).abs() > small * 1e-9));
        Some(Rates {
            matched_model,
            input: input_rate,
            cached_input: cached_rate,
            cache_write: write_rate,
            cache_write_1h: write_1h_rate,
            output: output_rate,
            web_searches: search_rate / 1_000.0,
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

/// What joins a book's database to its file in [`PriceBook::id`].
const FILE_IN_ID: &str = " + file ";

/// The database's part of a book's id ([`PriceBook::id`]): whether two
/// books price by one database, whatever file is over it.
pub fn database_of_id(id: &str) -> &str {
    id.split(FILE_IN_ID).next().unwrap_or(id)
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
    // A part of the writes: a model with an hour-long write price bills
    // them at it, and the rest of the writes at the write price.
    if tokens.cache_creation_1h_input_tokens > 0 {
        usage.insert(UsageKey::CACHE_WRITE_1H_TOKENS, tokens.cache_creation_1h_input_tokens as f64);
    }
    if tokens.web_search_requests > 0 {
        usage.insert(UsageKey::WEB_SEARCHES, tokens.web_search_requests as f64);
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
    let (five_minutes, hour) = tokens.writes_by_lifetime();
    (uncached as f64 * price.input
        + tokens.cached_input_tokens as f64 * price.cached_input
        + five_minutes as f64 * price.cache_creation
        + hour as f64 * price.cache_creation_1h.unwrap_or(price.cache_creation)
        + tokens.output_tokens as f64 * price.output)
        / 1_000_000.0
        + tokens.web_search_requests as f64 * price.web_searches.unwrap_or(0.0) / 1_000.0
}

fn system_time(at: Timestamp) -> SystemTime {
    match u64::try_from(at.millis()) {
        Ok(millis) => UNIX_EPOCH + Duration::from_millis(millis),
        // Before 1970: no price in the database is that old either way.
        Err(_) => UNIX_EPOCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-30, when the fixtures were captured.
    const DAY: i64 = 20_785;

    /// The keys a price file is checked against are the ones serde reads
    /// (a field added to `FilePrice` must be added to `KEYS`, or a file
    /// that gives it would be refused).
    #[test]
    fn a_file_prices_keys_are_the_ones_serde_names() {
        let every = FilePrice { input: 1.0, cached_input: 1.0, cache_creation: 1.0, cache_creation_1h: Some(1.0), output: 1.0, web_searches: Some(1.0) };
        let mut named: Vec<String> = match serde_json::to_value(every) {
            Ok(serde_json::Value::Object(fields)) => fields.keys().cloned().collect(),
            other => panic!("not an object: {other:?}"),
        };
        let mut keys: Vec<String> = FilePrice::KEYS.iter().map(|key| (*key).to_owned()).collect();
        named.sort();
        keys.sort();
        assert_eq!(named, keys);
    }

    #[test]
    fn a_file_price_below_zero_is_named_by_its_key() {
        let price = |hour: Option<f64>| FilePrice { input: 1.0, cached_input: 0.0, cache_creation: 0.0, cache_creation_1h: hour, output: 2.0, web_searches: None };
        assert_eq!(
            [price(None).bad_rate(), price(Some(-0.5)).bad_rate(), price(Some(f64::NAN)).bad_rate().map(|(key, _)| (key, 0.0))],
            [None, Some(("cacheCreation1h", -0.5)), Some(("cacheCreation1h", 0.0))]
        );
    }

    /// The models whose price at some half hour of `day` differs from
    /// their price at its start, among those the database lists under
    /// `listed`, priced as `provider`'s requests, with each service tier.
    fn priced_by_the_time_of_day(listed: &str, provider: Provider) -> Vec<String> {
        let tokens = TokenUsage {
            input_tokens: 1_000_000,
            cached_input_tokens: 250_000,
            cache_creation_input_tokens: 125_000,
            output_tokens: 100_000,
            ..TokenUsage::default()
        };
        let models: Vec<String> = Calculator::bundled()
            .providers()
            .filter(|info| info.id() == listed)
            .flat_map(|info| info.models().map(|model| model.id().to_owned()))
            .collect();
        let mut varying = Vec::new();
        for model in models {
            for tier in [None, Some("flex"), Some("priority")] {
                let at = |half: i64| Timestamp(DAY * DAY_MS + half * 30 * 60 * 1000);
                let price = |half| {
                    database_calculation(Calculator::bundled(), provider, &model, tier, at(half), &tokens)
                        .ok()
                        .map(|calculation| calculation.total_price.to_bits())
                };
                if (1..48).any(|half| price(half) != price(0)) {
                    varying.push(format!("{model} {}", tier.unwrap_or("standard")));
                }
            }
        }
        varying
    }

    /// The flat-rate cache reads a day's rates at its start and end, so no
    /// model a Codex or Claude request can reach may be priced by the time
    /// of day; DeepSeek's are, so the check can tell.
    #[test]
    fn no_model_of_codex_or_claude_is_priced_by_the_time_of_day() {
        assert_eq!(
            (
                priced_by_the_time_of_day("openai", Provider::Codex),
                priced_by_the_time_of_day("anthropic", Provider::Claude),
                priced_by_the_time_of_day("deepseek", Provider::Unknown).contains(&"deepseek-chat standard".to_owned()),
            ),
            (Vec::new(), Vec::new(), true)
        );
    }

    /// A request of an unknown provider may reach a price by the time of
    /// day: at noon DeepSeek's peak rate, twice its off-peak one, as the
    /// database says, where a day's rates read at its start and end were
    /// both off-peak.
    #[test]
    fn a_request_of_an_unknown_provider_is_priced_at_its_own_hour() {
        let tokens = TokenUsage { input_tokens: 1_000_000, output_tokens: 1_000_000, ..TokenUsage::default() };
        let book = PriceBook::database();
        let at = |hour: i64| Timestamp(DAY * DAY_MS + hour * 3_600_000);
        let price = |hour| {
            book.price(&Request {
                provider: Provider::Unknown,
                model: "deepseek-chat",
                at: at(hour),
                service_tier: None,
                tokens: &tokens,
            })
        };
        let uncached = |hour| {
            database_calculation(Calculator::bundled(), Provider::Unknown, "deepseek-chat", None, at(hour), &tokens)
                .ok()
                .map(|calculation| calculation.total_price)
        };
        // The night's request first, so a day's cache would be made then.
        let priced = [price(20), price(12)];
        assert_eq!(priced, [uncached(20), uncached(12)]);
        assert!(priced[1] > priced[0], "{priced:?}");
    }

    #[test]
    fn the_flat_prices_of_the_fixtures_models_resolve_to_rates_and_a_tiered_one_to_its_two_rates() {
        let resolved = |provider, model| match resolve_flat(Calculator::bundled(), (provider, model, None), DAY, None) {
            Flat::Rates(_) => "rates",
            Flat::Unpriced => "unpriced",
            Flat::PerRequest => "per request",
            Flat::Tiered(_) => "tiered",
        };
        let found: Vec<(&str, &str)> = [
            (Provider::Claude, "claude-opus-4-5"),
            (Provider::Claude, "claude-haiku-4-5-20251001"),
            (Provider::Codex, "gpt-5"),
            (Provider::Codex, "gpt-5.1-codex"),
            (Provider::Claude, "claude-sonnet-4-5"),
            (Provider::Codex, "mock-model"),
        ]
        .into_iter()
        .map(|(provider, model)| (model, resolved(provider, model)))
        .collect();
        assert_eq!(
            found,
            vec![
                ("claude-opus-4-5", "rates"),
                ("claude-haiku-4-5-20251001", "rates"),
                ("gpt-5", "rates"),
                ("gpt-5.1-codex", "rates"),
                ("claude-sonnet-4-5", "tiered"),
                ("mock-model", "unpriced"),
            ]
        );
    }

    /// Every tiered price the database has for a Codex or a Claude model
    /// resolves to its threshold and two rates, and prices requests of
    /// every size and mix (the threshold's neighbours among them) to the
    /// very bits the database gives each; a day's threshold found before
    /// is tried first and gives the same.
    #[test]
    fn every_tiered_price_of_codex_and_claude_models_resolves_to_its_threshold_and_prices_to_the_bit() {
        // Sonnet 4.6 and Opus 4.6 were tiered until 2026-03-13, then flat.
        let (before, after) = (20_500, DAY);
        let models = [
            (Provider::Codex, "gpt-5.4", after, 272_000),
            (Provider::Codex, "gpt-5.4-pro", after, 272_000),
            (Provider::Codex, "gpt-5.5", after, 272_000),
            (Provider::Codex, "gpt-5.6-sol", after, 272_000),
            (Provider::Codex, "gpt-6-astra", after, 272_000),
            (Provider::Codex, "gpt-6.1-sol", after, 272_000),
            (Provider::Claude, "claude-sonnet-4-5", after, 200_000),
            (Provider::Claude, "claude-sonnet-4-6", before, 200_000),
            (Provider::Claude, "claude-opus-4-6", before, 200_000),
            (Provider::Claude, "claude-haiku-5-5", after, 100_000),
        ];
        let found: Vec<(&str, Option<u64>)> = models
            .iter()
            .map(|&(provider, model, day, _)| match resolve_flat(Calculator::bundled(), (provider, model, None), day, None) {
                Flat::Tiered(tiered) => {
                    assert_eq!(resolve_flat(Calculator::bundled(), (provider, model, None), day, Some(tiered.above)), Flat::Tiered(tiered), "{model}");
                    (model, Some(tiered.above))
                }
                Flat::Rates(_) | Flat::Unpriced | Flat::PerRequest => (model, None),
            })
            .collect();
        assert_eq!(found, models.iter().map(|&(_, model, _, above)| (model, Some(above))).collect::<Vec<_>>());
        let flat_since = |model| matches!(resolve_flat(Calculator::bundled(), (Provider::Claude, model, None), after, None), Flat::Rates(_));
        assert_eq!((flat_since("claude-sonnet-4-6"), flat_since("claude-opus-4-6")), (true, true));
        // A small deterministic generator: the same requests every run.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound.max(1)
        };
        let cached = PriceBook::database();
        let database = PriceBook::database().without_cache();
        for &(provider, model, day, above) in &models {
            for index in 0..400u64 {
                let input_tokens = match index % 4 {
                    0 => above + (index / 4) % 3 - 1,
                    1 => next(above),
                    2 => above + next(3 * above),
                    _ => next(10_000_000),
                };
                let cached_input_tokens = next(input_tokens / 2 + 1);
                let cache_creation_input_tokens = next((input_tokens - cached_input_tokens) / 2 + 1);
                let tokens = TokenUsage {
                    input_tokens,
                    cached_input_tokens,
                    cache_creation_input_tokens,
                    cache_creation_1h_input_tokens: next(cache_creation_input_tokens + 1),
                    output_tokens: next(100_000),
                    web_search_requests: next(4),
                    ..TokenUsage::default()
                };
                let request = Request { provider, model, at: Timestamp(day * DAY_MS + 3_600_000), service_tier: None, tokens: &tokens };
                assert_eq!(cached.price(&request).map(f64::to_bits), database.price(&request).map(f64::to_bits), "{model} {tokens:?}");
            }
        }
    }

    #[test]
    fn an_hour_long_write_rate_is_resolved_apart_only_where_the_database_has_one() {
        let write_rates = |provider, model| match resolve_flat(Calculator::bundled(), (provider, model, None), DAY, None) {
            Flat::Rates(rate) => Some((rate.cache_write, rate.cache_write_1h)),
            Flat::Unpriced | Flat::PerRequest | Flat::Tiered(_) => None,
        };
        assert_eq!(write_rates(Provider::Claude, "claude-opus-5-5"), Some((Some(5.0), Some(8.0))));
        let searches = match resolve_flat(Calculator::bundled(), (Provider::Claude, "claude-opus-5-5", None), DAY, None) {
            Flat::Rates(rate) => Some(rate.web_searches),
            Flat::Unpriced | Flat::PerRequest | Flat::Tiered(_) => None,
        };
        assert_eq!(searches, Some(10.0));
        assert_eq!(write_rates(Provider::Claude, "claude-haiku-4-5"), Some((Some(1.25), Some(2.0))));
        // OpenAI has one write price: hour-long writes are any writes.
        assert_eq!(write_rates(Provider::Codex, "gpt-5").map(|(_, hour)| hour), Some(None));
    }

    /// Requests over three days (the second left out) of two flat models,
    /// one the database lacks and one tiered, two of them in a tier.
    fn requests_over_days() -> Vec<(Provider, &'static str, Option<&'static str>, Timestamp, TokenUsage)> {
        let tokens = TokenUsage { input_tokens: 300_000, cached_input_tokens: 120_000, cache_creation_input_tokens: 30_000, output_tokens: 9_000, ..TokenUsage::default() };
        let at = |day: i64| Timestamp(day * DAY_MS + 3_600_000);
        let mut requests = Vec::new();
        for day in [DAY, DAY + 2, DAY + 3] {
            requests.push((Provider::Claude, "claude-opus-4-5", None, at(day), tokens));
            requests.push((Provider::Codex, "gpt-5", Some("flex"), at(day), tokens));
            requests.push((Provider::Codex, "mock-model", None, at(day), tokens));
            requests.push((Provider::Claude, "claude-sonnet-4-5", None, at(day), tokens));
        }
        requests
    }

    fn priced_bits(book: &PriceBook) -> Vec<Option<u64>> {
        requests_over_days()
            .iter()
            .map(|(provider, model, service_tier, at, tokens)| {
                book.price(&Request { provider: *provider, model, at: *at, service_tier: *service_tier, tokens }).map(f64::to_bits)
            })
            .collect()
    }

    /// What one book resolved, kept as JSON and learned by another, prices
    /// every request to the same bit without a resolution of its own; the
    /// days are kept as runs (days 0 and 2 to 3 of each key).
    #[test]
    fn known_prices_kept_and_learned_price_alike_without_resolving_again() {
        let first = PriceBook::database();
        let priced = priced_bits(&first);
        let known = first.known();
        let spans: Vec<(&str, Option<&str>, i64, i64, &str)> = known
            .spans
            .iter()
            .map(|span| {
                let price = match span.price {
                    Flat::Rates(_) => "rates",
                    Flat::Unpriced => "unpriced",
                    Flat::PerRequest => "per request",
                    Flat::Tiered(_) => "tiered",
                };
                (span.model.as_str(), span.service_tier.as_deref(), span.first_day - DAY, span.last_day - DAY, price)
            })
            .collect();
        assert_eq!(
            (known.database.as_str(), first.resolutions(), spans),
            (
                "genai-prices 0.2.1",
                12,
                vec![
                    ("gpt-5", Some("flex"), 0, 0, "rates"),
                    ("gpt-5", Some("flex"), 2, 3, "rates"),
                    ("mock-model", None, 0, 0, "unpriced"),
                    ("mock-model", None, 2, 3, "unpriced"),
                    ("claude-opus-4-5", None, 0, 0, "rates"),
                    ("claude-opus-4-5", None, 2, 3, "rates"),
                    ("claude-sonnet-4-5", None, 0, 0, "tiered"),
                    ("claude-sonnet-4-5", None, 2, 3, "tiered"),
                ]
            )
        );
        let kept = serde_json::to_string(&known).unwrap_or_else(|e| panic!("{e}"));
        let read: KnownPrices = serde_json::from_str(&kept).unwrap_or_else(|e| panic!("{e}"));
        let second = PriceBook::database();
        second.learn(&read);
        // Through the database one by one: only the three requests of
        // `gpt-5` with cache writes, a rate OpenAI's price does not have;
        // none of the tiered model's.
        assert_eq!(
            (priced_bits(&second), second.resolutions(), second.priced_through_database(), second.known()),
            (priced.clone(), 0, 3, known.clone())
        );
        // Priced through the database alone, the figures are the same.
        assert_eq!(priced_bits(&PriceBook::database().without_cache()), priced);
    }

    /// Known prices of another database, of an older resolver, or with a
    /// span no resolution makes, are not learned: the book resolves for
    /// itself.
    #[test]
    fn known_prices_of_another_database_an_older_resolver_or_an_endless_span_are_not_learned() {
        let first = PriceBook::database();
        let priced = priced_bits(&first);
        let mut other = first.known();
        other.database = "genai-prices data 0123".to_owned();
        let mut endless = first.known();
        for span in &mut endless.spans {
            span.first_day = 0;
            span.last_day = MAX_KNOWN_SPAN_DAYS;
        }
        // Kept by a resolver before this one, which priced a tiered price
        // per request: this one resolves it to its rates.
        let mut older = first.known();
        older.resolver = RESOLVER - 1;
        for known in [other, endless, older] {
            let book = PriceBook::database();
            book.learn(&known);
            assert_eq!((priced_bits(&book), book.resolutions()), (priced.clone(), 12));
        }
    }

    /// A long learned run and a day resolved next to it are kept as one
    /// run, worked out without going day by day.
    #[test]
    fn a_learned_run_and_a_day_resolved_beside_it_are_kept_as_one() {
        let tokens = TokenUsage { input_tokens: 1_000, output_tokens: 10, ..TokenUsage::default() };
        let request = |day: i64| Request { provider: Provider::Claude, model: "claude-opus-4-5", at: Timestamp(day * DAY_MS), service_tier: None, tokens: &tokens };
        let first = PriceBook::database();
        let _ = first.price(&request(DAY));
        let mut known = first.known();
        for span in &mut known.spans {
            span.first_day = DAY - 30_000;
        }
        let second = PriceBook::database();
        second.learn(&known);
        let priced = (second.price(&request(DAY - 20_000)), second.price(&request(DAY + 1)));
        let runs: Vec<(i64, i64)> = second.known().spans.iter().map(|span| (span.first_day - DAY, span.last_day - DAY)).collect();
        assert_eq!((priced, second.resolutions(), runs), ((first.price(&request(DAY)), first.price(&request(DAY + 1))), 1, vec![(-30_000, 1)]));
    }
}
