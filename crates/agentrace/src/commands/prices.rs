//! `agentrace prices`: the models found in the user's runs with the price
//! per million tokens each is charged at, where that price came from, and
//! the models that have none (their tokens are left out of every cost).
//! Reads the runs as `usage` does; prices nothing itself.

use std::collections::BTreeMap;
use std::path::PathBuf;

use agentrace_core::model::{Provider, Timestamp};
use agentrace_core::prices::{PriceSource, Rates};
use agentrace_store::Home;
use anyhow::Context as _;
use clap::Args;
use serde::Serialize;

use crate::output::Out;
use crate::commands::usage::{self, By, UsageArgs};

/// Arguments of `agentrace prices`.
#[derive(Debug, Args)]
pub struct PricesArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Read this Codex home straight instead of the recorded runs.
    #[arg(long, value_name = "DIR")]
    codex_home: Option<PathBuf>,
    /// Read this Claude Code config dir straight instead of the recorded runs.
    #[arg(long, value_name = "DIR")]
    claude_dir: Option<PathBuf>,
    /// Prices per million tokens by model, JSON, as `usage --prices` takes.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// The price of this model (repeatable) instead of the runs' models:
    /// what its next request would pay, and which database model it
    /// matched. Its tokens are not counted: `-` in the table, 0 in the JSON.
    #[arg(long, value_name = "NAME")]
    model: Vec<String>,
    /// Whose model `--model` names: `codex` (OpenAI's) or `claude`
    /// (Anthropic's); both when not given.
    #[arg(long, value_name = "PROVIDER", value_parser = ["codex", "claude"], requires = "model")]
    provider: Option<String>,
    /// Fetch the newest genai-prices database (or read SOURCE: an http(s)
    /// address or a file of its provider data) and keep it in the home, so
    /// every command prices by it, models newer than this build included;
    /// the runs are priced again at the next command.
    #[arg(long, value_name = "SOURCE", num_args = 0..=1, default_missing_value = genai_prices::REMOTE_DATA_URL, conflicts_with_all = ["model", "reset"])]
    update: Option<String>,
    /// Remove the database `--update` kept: the compiled-in one prices
    /// again.
    #[arg(long, conflicts_with = "model")]
    reset: bool,
}

impl PricesArgs {
    /// True for `--update` and `--reset`, which replace or remove the
    /// home's database: they work whatever the kept one says.
    pub fn mends_the_database(&self) -> bool {
        self.update.is_some() || self.reset
    }
}

/// How long a fetch of the database may take in all.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The most a fetched database may be (it is under a megabyte).
const FETCH_LIMIT: u64 = 64 * 1024 * 1024;

/// `prices --update`: fetches or reads the provider data, checks that it
/// is a database that prices both providers, and keeps it in the home.
fn update(home: &Home, source: &str, json: bool, out: &mut Out) -> anyhow::Result<()> {
    let bytes = if source.starts_with("http://") || source.starts_with("https://") {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(FETCH_TIMEOUT))
            .user_agent(concat!("agentrace/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        // A machine without the network (or behind a proxy that refuses
        // the host) can still be brought up to date from a copy of the file.
        let fetch_failed = || format!("cannot fetch the price database from {source} (without the network, fetch that file elsewhere and run `agentrace prices --update FILE`; the database kept before is left as it was)");
        let mut response = agent.get(source).call().with_context(fetch_failed)?;
        response
            .body_mut()
            .with_config()
            .limit(FETCH_LIMIT)
            .read_to_vec()
            .with_context(|| format!("cannot read the price database from {source}"))?
    } else {
        std::fs::read(source).with_context(|| format!("cannot read the price database {source}"))?
    };
    // Decoded once: the check, the rates asked below and the name share it.
    let data = std::sync::Arc::new(agentrace_store::prices::price_data(bytes));
    let (providers, models) = data
        .contents()
        .map_err(|cause| anyhow::anyhow!("{source} is not genai-prices provider data: {cause}; the price database was left as it was"))?;
    let book = agentrace_core::prices::PriceBook::of_data(std::sync::Arc::clone(&data));
    // A snapshot that no longer prices one of the two providers would
    // leave every run of it unpriced: refused.
    for (provider, model) in [(Provider::Codex, "gpt-5"), (Provider::Claude, "claude-sonnet-4-5")] {
        anyhow::ensure!(
            book.rates(provider, model, crate::clock::now()).is_some(),
            "{source} prices no {model}: not a database for Codex and Claude; the price database was left as it was"
        );
    }
    let before = home.prices().database_name();
    home.put_price_database(data.bytes())?;
    let after = data.label();
    eprintln!(
        "updated the price database: {providers} providers, {models} models from {source}, kept in {} ({after}; it was {before}); runs are priced by it from the next command on",
        home.price_database_path().display()
    );
    if json {
        out.json_pretty(&serde_json::json!({
            "updated": true,
            "source": source,
            "providers": providers,
            "models": models,
            "kept": home.price_database_path(),
            "database": after,
            "before": before,
        }))?;
    }
    Ok(())
}

/// A priced model of `prices --json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Priced {
    /// `codex` or `claude`.
    provider: String,
    /// The model as the runs name it.
    model: String,
    /// The database's model it matched.
    matched_model: String,
    /// US dollars per million uncached input tokens.
    input: f64,
    /// Per million cache reads.
    cached_input: f64,
    /// Per million cache writes (kept five minutes, for Claude).
    cache_write: f64,
    /// Per million cache writes kept for an hour (Claude's; the same as
    /// `cache_write` where writes have one price).
    cache_write_1h: f64,
    /// Per million output tokens.
    output: f64,
    /// Per thousand web searches (zero where they are not billed).
    web_searches: f64,
    /// True when a large request pays other rates (these are a small one's).
    tiered: bool,
    /// `genai-prices <version>` or `file`.
    source: String,
    /// The runs' tokens of this model.
    tokens: u64,
}

/// A model of `prices --json` that has no price.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Unpriced {
    provider: String,
    model: String,
    tokens: u64,
}

/// Runs `agentrace prices`.
pub fn run(home: &Home, args: &PricesArgs, out: &mut Out) -> anyhow::Result<()> {
    // `--json` of these says what was done (it was passed over: nothing
    // on stdout).
    if let Some(source) = &args.update {
        return update(home, source, args.json, out);
    }
    if args.reset {
        let removed = home.remove_price_database()?;
        if removed {
            eprintln!("removed the price database {}: runs are priced by the compiled-in {} from the next command on", home.price_database_path().display(), agentrace_core::prices::database_label());
        } else {
            eprintln!("no price database was kept in {}: runs are priced by the compiled-in {}", home.root().display(), agentrace_core::prices::database_label());
        }
        if args.json {
            out.json_pretty(&serde_json::json!({"removed": removed, "kept": home.price_database_path(), "database": agentrace_core::prices::database_label()}))?;
        }
        return Ok(());
    }
    let book = usage::load_prices(home, args.prices.as_ref())?;
    // A kept database that cannot be decoded prices nothing of its own:
    // said, with what to do.
    if let Some(problem) = book.data().and_then(|data| data.problem()) {
        anyhow::bail!(
            "the price database {} cannot be read ({problem}); `agentrace prices --update` fetches it again, `agentrace prices --reset` prices by the compiled-in one",
            home.price_database_path().display()
        );
    }
    let usage_args = UsageArgs {
        tz: Some(crate::zone::Zone::utc()),
        breakdown: false,
        json: args.json,
        by: By::Model,
        since: None,
        until: None,
        provider: None,
        codex_home: args.codex_home.clone(),
        claude_dir: args.claude_dir.clone(),
        prices: args.prices.clone(),
        runs: Vec::new(),
    };
    let mut models: BTreeMap<(String, String), u64> = BTreeMap::new();
    let sessions = if args.model.is_empty() { usage::sessions(home, &usage_args, &book)? } else { Vec::new() };
    for session in sessions {
        for (model, counters) in session.model_parts() {
            if counters.total_tokens == 0 {
                continue;
            }
            let model = model.clone().unwrap_or_else(|| "unknown".to_owned());
            *models.entry((session.provider.clone(), model)).or_default() += counters.total_tokens;
        }
    }
    // The rates in force now: what the next request of each model pays.
    let now: Timestamp = crate::clock::now();
    let database = book.database_name();
    let mut priced = Vec::new();
    let mut unpriced = Vec::new();
    for ((provider, model), tokens) in models {
        match book.rates(provider_of(&provider), &model, now) {
            Some(rates) => priced.push(row(provider, model, rates, &database, tokens)),
            None => unpriced.push(Unpriced { provider, model, tokens }),
        }
    }
    // Models named on the command line: each provider asked, those that
    // price it; no price under any of them is one unpriced row.
    for model in &args.model {
        let providers: Vec<&str> = args.provider.as_deref().map_or_else(|| vec!["codex", "claude"], |provider| vec![provider]);
        let found: Vec<Priced> = providers
            .iter()
            .filter_map(|provider| book.rates(provider_of(provider), model, now).map(|rates| row((*provider).to_owned(), model.clone(), rates, &database, 0)))
            .collect();
        if found.is_empty() {
            unpriced.push(Unpriced { provider: args.provider.clone().unwrap_or_else(|| "codex, claude".to_owned()), model: model.clone(), tokens: 0 });
        }
        priced.extend(found);
    }
    if args.json {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Report<'a> {
            models: &'a [Priced],
            unpriced_models: &'a [Unpriced],
        }
        return out.json_pretty(&Report {
            models: &priced,
            unpriced_models: &unpriced,
        });
    }
    out.line(format!(
        "{:<36} {:<8} {:>10} {:>10} {:>12} {:>10} {:>10}  {:<26} {:>12}",
        "MODEL", "PROVIDER", "INPUT $/M", "CACHED", "CACHE-WRITE", "WRITE-1H", "OUTPUT", "SOURCE", "TOKENS"
    ))?;
    // A model named on the command line is priced without reading the
    // runs: its tokens are not known, and a 0 read as none used.
    let named = !args.model.is_empty();
    for model in &priced {
        let name = if model.tiered { format!("{} (tiered)", model.model) } else { model.model.clone() };
        let tokens = if named { "-".to_owned() } else { model.tokens.to_string() };
        out.line(format!(
            "{:<36} {:<8} {:>10.4} {:>10.4} {:>12.4} {:>10.4} {:>10.4}  {:<26} {:>12}",
            crate::render::one_line(&name, 36),
            model.provider,
            model.input,
            model.cached_input,
            model.cache_write,
            model.cache_write_1h,
            model.output,
            model.source,
            tokens
        ))?;
    }
    if named && !priced.is_empty() {
        eprintln!("hint: TOKENS is `-`: a model named with --model is priced without reading your runs; `agentrace prices` alone counts each of your models' tokens");
    }
    for model in &unpriced {
        if args.model.is_empty() {
            out.line(format!("no price: {} ({}, {})", model.model, model.provider, crate::render::count(model.tokens, "token", "tokens")))?;
        } else {
            out.line(format!("no price: {} (looked up as {})", model.model, model.provider))?;
        }
    }
    if !unpriced.is_empty() {
        eprintln!("hint: prices for the models without one, in prices.json in the agentrace home ({}), price every command's figures (see the README)", home.root().display());
    }
    Ok(())
}

fn row(provider: String, model: String, rates: Rates, database: &str, tokens: u64) -> Priced {
    Priced {
        provider,
        model,
        matched_model: rates.matched_model,
        input: rates.input,
        cached_input: rates.cached_input,
        cache_write: rates.cache_write,
        cache_write_1h: rates.cache_write_1h,
        output: rates.output,
        web_searches: rates.web_searches,
        tiered: rates.tiered,
        source: match rates.source {
            PriceSource::Database => database.to_owned(),
            PriceSource::File => "file".to_owned(),
        },
        tokens,
    }
}

fn provider_of(name: &str) -> Provider {
    match name {
        "codex" => Provider::Codex,
        "claude" => Provider::Claude,
        _ => Provider::Unknown,
    }
}
