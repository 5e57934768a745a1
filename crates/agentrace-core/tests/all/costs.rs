//! Costs: each request priced on its own by the price database, at its own
//! time, never a silent zero, tokens outside the tree counted.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentrace_core::model::{Envelope, IncompleteReason, Provider, Timestamp, TokenUsage};
use agentrace_core::prices::{FilePrice, PriceBook, PriceSource, Request, DATABASE_VERSION};
use agentrace_core::state::{CostStatus, ModelTokens, OutsideUsage};
use agentrace_core::RunState;
use serde_json::{json, Value};

/// 2026-11-30, when every fixture was captured.
const AT: &str = "2026-11-30T00:00:00.000Z";

fn at() -> Timestamp {
    Timestamp::parse(AT).unwrap_or_else(|| panic!("bad time"))
}

fn tokens(input: u64, cached: u64, output: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: input,
        cached_input_tokens: cached,
        cache_creation_input_tokens: 0,
        cache_creation_1h_input_tokens: 0,
        web_search_requests: 0,
        output_tokens: output,
        reasoning_output_tokens: 0,
        total_tokens: input + output,
    }
}

fn database_price(provider: &str, model: &str, usage: &TokenUsage) -> f64 {
    let mut request = genai_prices::Usage::new();
    request.insert("input_tokens", usage.input_tokens as f64);
    request.insert("cache_read_tokens", usage.cached_input_tokens as f64);
    request.insert("output_tokens", usage.output_tokens as f64);
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(at().millis() as u64);
    genai_prices::calculate(
        &genai_prices::PriceRequest::new(model, &request)
            .with_provider_id(provider)
            .with_timestamp(time),
    )
    .unwrap_or_else(|e| panic!("{e}"))
    .total_price
}

/// One log line of run `r`, as the store writes it.
fn envelope(sequence: u64, thread: Option<&str>, role: &str, label: &str, event: Value) -> Envelope {
    let actor = match thread {
        Some(thread) => json!({"threadId": thread, "role": role, "label": label, "confidence": "provider",
                               "parentThreadId": if role == "helper" { json!("root") } else { Value::Null }}),
        None => json!({"threadId": null, "role": "unknown", "label": label, "confidence": "unknown",
                       "reason": format!("{label} {sequence}")}),
    };
    serde_json::from_value(json!({"version": 2, "timestamp": AT, "sequence": sequence, "runId": "r",
                                  "actor": actor, "event": event}))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn usage_event(total: TokenUsage, last: Option<TokenUsage>) -> Value {
    json!({"type": "usage", "turnId": null, "total": total, "last": last})
}

fn fold(provider: &str, events: Vec<Envelope>, book: Option<Arc<PriceBook>>) -> RunState {
    let mut state = RunState::new("r".into());
    if let Some(book) = book {
        state = state.with_prices(book);
    }
    let mut all = vec![envelope(0, None, "unknown", "agentrace",
                                json!({"type": "run_started", "provider": provider, "source": "codex-app-server"}))];
    all.extend(events);
    for envelope in &all {
        state.apply(envelope);
    }
    state
}

#[test]
fn the_compiled_in_database_is_the_version_cargo_lock_pins() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
        .unwrap_or_else(|e| panic!("{e}"));
    let pinned = lock
        .split("[[package]]")
        .find(|package| package.contains("name = \"genai-prices\""))
        .and_then(|package| package.lines().find(|line| line.starts_with("version = ")))
        .map(|line| line.trim_start_matches("version = ").trim_matches('"').to_owned());
    assert_eq!(pinned.as_deref(), Some(DATABASE_VERSION));
    assert_eq!(PriceBook::database().id(), format!("genai-prices {DATABASE_VERSION}"));
}

#[test]
fn a_request_is_priced_by_the_database_for_the_provider_that_served_it() {
    let book = PriceBook::database();
    let usage = tokens(10_000, 4_000, 500);
    for (provider, name, model) in [(Provider::Claude, "anthropic", "claude-opus-5-5"), (Provider::Codex, "openai", "gpt-6.1-sol")] {
        let priced = book.price(&Request { provider, model, at: at(), service_tier: None, tokens: &usage });
        assert_eq!(priced, Some(database_price(name, model, &usage)), "{model}");
    }
}

#[test]
fn a_model_the_database_lacks_has_no_price_not_a_zero() {
    let book = PriceBook::database();
    let usage = tokens(1_000, 0, 10);
    let priced = book.price(&Request { provider: Provider::Codex, model: "mock-model", at: at(), service_tier: None, tokens: &usage });
    assert_eq!(priced, None);
    assert_eq!(book.rates(Provider::Codex, "mock-model", at()), None);
}

#[test]
fn a_file_price_overrides_and_extends_the_database() {
    let file = BTreeMap::from([
        ("mock".to_owned(), FilePrice { input: 1.0, cached_input: 0.5, cache_creation: 0.0, cache_creation_1h: None, output: 10.0, web_searches: None }),
        ("claude-opus-5-5".to_owned(), FilePrice { input: 2.0, cached_input: 0.0, cache_creation: 0.0, cache_creation_1h: None, output: 0.0, web_searches: None }),
    ]);
    let book = PriceBook::with_file(file, "abc");
    assert_eq!(book.id(), format!("genai-prices {DATABASE_VERSION} + file abc"));
    let usage = tokens(3_000_000, 1_000_000, 1_000_000);
    let price = |model| book.price(&Request { provider: Provider::Claude, model, at: at(), service_tier: None, tokens: &usage });
    // 2 M uncached at 1, 1 M cached at 0.5, 1 M output at 10.
    assert_eq!(price("mock-model"), Some(12.5));
    assert_eq!(price("claude-opus-5-5"), Some(4.0));
    let rates = book.rates(Provider::Claude, "mock-model", at()).unwrap_or_else(|| panic!("no rates"));
    assert_eq!((rates.input, rates.cached_input, rates.output, rates.source), (1.0, 0.5, 10.0, PriceSource::File));
}

#[test]
fn rates_are_those_of_a_small_request_and_say_when_a_large_one_pays_more() {
    let book = PriceBook::database();
    let sol = book.rates(Provider::Codex, "gpt-6.1-sol", at()).unwrap_or_else(|| panic!("no rates"));
    assert_eq!((sol.input, sol.cached_input, sol.cache_write, sol.output, sol.tiered), (2.0, 0.1, 2.5, 10.0, true));
    let opus = book.rates(Provider::Claude, "claude-opus-5-5", at()).unwrap_or_else(|| panic!("no rates"));
    assert_eq!(
        (opus.input, opus.cached_input, opus.cache_write, opus.cache_write_1h, opus.output, opus.tiered),
        (4.0, 0.2, 5.0, 8.0, 20.0, false)
    );
    assert_eq!(opus.source, PriceSource::Database);
    // OpenAI's writes have one price, whatever the cache keeps them for.
    assert_eq!(sol.cache_write_1h, sol.cache_write);
}

/// A Claude request with `writes` cache writes, `hour` of them kept an hour.
fn written(writes: u64, hour: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: 3_000 + writes,
        cached_input_tokens: 1_000,
        cache_creation_input_tokens: writes,
        cache_creation_1h_input_tokens: hour,
        web_search_requests: 0,
        output_tokens: 400,
        reasoning_output_tokens: 0,
        total_tokens: 3_400 + writes,
    }
}

#[test]
fn a_cache_write_kept_for_an_hour_costs_the_hour_rate_and_the_rest_the_five_minute_rate() {
    let (book, uncached) = (PriceBook::database(), PriceBook::database().without_cache());
    fn request<'a>(model: &'a str, tokens: &'a TokenUsage) -> Request<'a> {
        Request { provider: Provider::Claude, model, at: at(), service_tier: None, tokens }
    }
    let tokens = written(100_000, 60_000);
    // Claude Opus 5.5: input 4, cache reads 0.2, writes 5 (five minutes)
    // and 8 (an hour), output 20, per million.
    let due = (2_000.0 * 4.0 + 1_000.0 * 0.2 + 40_000.0 * 5.0 + 60_000.0 * 8.0 + 400.0 * 20.0) / 1e6;
    let ours = book.price(&request("claude-opus-5-5", &tokens));
    assert!(ours.is_some_and(|cost| (cost - due).abs() < 1e-12), "{ours:?} where {due} is due");
    // The flat rates give the database's figure to the bit, for any split,
    // a tiered model's too.
    for model in ["claude-opus-5-5", "claude-haiku-4-5", "claude-3-haiku", "claude-sonnet-4-5", "claude-2"] {
        for hour in [0, 1, 33_333, 99_999, 100_000] {
            let tokens = written(100_000, hour);
            let (ours, theirs) = (book.price(&request(model, &tokens)), uncached.price(&request(model, &tokens)));
            assert!(theirs.is_some(), "{model}: no price");
            assert_eq!(ours.map(f64::to_bits), theirs.map(f64::to_bits), "{model} {hour}: {ours:?} {theirs:?}");
        }
    }
    // More kept for an hour than written is refused, not priced.
    let odd = written(100, 101);
    assert_eq!(book.price(&request("claude-opus-5-5", &odd)), uncached.price(&request("claude-opus-5-5", &odd)));
}

#[test]
fn a_web_search_costs_the_databases_price_per_search_on_top_of_its_tokens() {
    let (book, uncached) = (PriceBook::database(), PriceBook::database().without_cache());
    fn request<'a>(provider: Provider, model: &'a str, tokens: &'a TokenUsage) -> Request<'a> {
        Request { provider, model, at: at(), service_tier: None, tokens }
    }
    let plain = written(10_000, 0);
    let searched = TokenUsage { web_search_requests: 5, ..plain };
    // Claude Opus 5.5: ten dollars a thousand searches.
    let (without, with) = (book.price(&request(Provider::Claude, "claude-opus-5-5", &plain)), book.price(&request(Provider::Claude, "claude-opus-5-5", &searched)));
    let more = with.zip(without).map(|(with, without)| with - without);
    assert!(more.is_some_and(|more| (more - 0.05).abs() < 1e-12), "{with:?} - {without:?}");
    // The flat rates give the database's figure to the bit.
    for (provider, model) in [
        (Provider::Claude, "claude-opus-5-5"),
        (Provider::Claude, "claude-haiku-4-5"),
        (Provider::Claude, "claude-sonnet-4-5"),
        (Provider::Claude, "claude-2"),
        (Provider::Codex, "gpt-5"),
    ] {
        for searches in [0, 1, 7, 1_000] {
            let tokens = TokenUsage { web_search_requests: searches, ..written(10_000, 3_000) };
            let (ours, theirs) = (book.price(&request(provider, model, &tokens)), uncached.price(&request(provider, model, &tokens)));
            assert!(theirs.is_some(), "{model}: no price");
            assert_eq!(ours.map(f64::to_bits), theirs.map(f64::to_bits), "{model} {searches}: {ours:?} {theirs:?}");
        }
    }
    let rates = book.rates(Provider::Claude, "claude-opus-5-5", at()).map(|rates| rates.web_searches);
    assert_eq!(rates, Some(10.0));
    // A file's price per thousand searches, when it has one.
    let file = |web_searches| {
        let price = FilePrice { input: 1.0, cached_input: 0.0, cache_creation: 0.0, cache_creation_1h: None, output: 0.0, web_searches };
        let book = PriceBook::with_file(BTreeMap::from([("mock".to_owned(), price)]), "abc");
        let tokens = TokenUsage { input_tokens: 1_000_000, web_search_requests: 4, ..TokenUsage::default() };
        book.price(&request(Provider::Claude, "mock-model", &tokens))
    };
    assert_eq!((file(Some(25.0)), file(None)), (Some(1.1), Some(1.0)));
}

#[test]
fn a_file_price_of_hour_long_writes_is_used_and_without_one_they_cost_the_write_price() {
    let price = |hour: Option<f64>| {
        let file = BTreeMap::from([(
            "mock".to_owned(),
            FilePrice { input: 1.0, cached_input: 0.5, cache_creation: 2.0, cache_creation_1h: hour, output: 10.0, web_searches: None },
        )]);
        let book = PriceBook::with_file(file, "abc");
        let tokens = written(1_000_000, 250_000);
        book.price(&Request { provider: Provider::Claude, model: "mock-model", at: at(), service_tier: None, tokens: &tokens })
    };
    // 2,000 uncached at 1, 1,000 cached at 0.5, 750,000 written at 2,
    // 250,000 written for an hour at 3 (or 2), 400 output at 10.
    assert_eq!(price(Some(3.0)), Some((2_000.0 + 500.0 + 1_500_000.0 + 750_000.0 + 4_000.0) / 1e6));
    assert_eq!(price(None), Some((2_000.0 + 500.0 + 1_500_000.0 + 500_000.0 + 4_000.0) / 1e6));
    // The file's member is `cacheCreation1h`, and may be left out.
    let read: BTreeMap<String, FilePrice> =
        serde_json::from_str(r#"{"a": {"input": 1, "output": 2, "cacheCreation1h": 3}, "b": {"input": 1, "output": 2}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((read["a"].cache_creation_1h, read["b"].cache_creation_1h), (Some(3.0), None));
}

#[test]
fn two_requests_are_priced_each_on_its_own_not_as_their_sum() {
    // Each is under gpt-6.1-sol's 272 k tier; their sum is over it.
    let first = tokens(200_000, 0, 1_000);
    let second = tokens(200_000, 0, 1_000);
    let total = first.add(&second);
    let state = fold(
        "codex",
        vec![
            envelope(1, Some("root"), "root", "Main", json!({"type": "model_selected", "model": "gpt-6.1-sol", "turnId": null})),
            envelope(2, Some("root"), "root", "Main", usage_event(first, Some(first))),
            envelope(3, Some("root"), "root", "Main", usage_event(total, Some(second))),
        ],
        None,
    );
    let each = database_price("openai", "gpt-6.1-sol", &first) + database_price("openai", "gpt-6.1-sol", &second);
    let as_one = database_price("openai", "gpt-6.1-sol", &total);
    assert!(as_one > each * 1.5, "the tier applies to the sum: {as_one} vs {each}");
    let view = state.view();
    let root = &view.agents[0];
    assert_eq!((root.cost, root.cost_status, root.tokens), (Some(each), CostStatus::Exact, Some(total)));
    assert_eq!((view.run.cost, view.run.cost_status), (Some(each), CostStatus::Exact));
}

#[test]
fn tokens_of_a_model_without_a_price_leave_the_cost_unknown_or_a_floor() {
    let usage = tokens(1_000, 0, 100);
    let only_unpriced = fold(
        "codex",
        vec![
            envelope(1, Some("root"), "root", "Main", json!({"type": "model_selected", "model": "mock-model", "turnId": null})),
            envelope(2, Some("root"), "root", "Main", usage_event(usage, Some(usage))),
        ],
        None,
    )
    .view();
    let root = &only_unpriced.agents[0];
    assert_eq!((root.cost, root.cost_status, root.unpriced_tokens), (None, CostStatus::Unknown, 1_100));
    assert_eq!((only_unpriced.run.cost, only_unpriced.run.cost_status), (None, CostStatus::Unknown));

    let mixed = fold(
        "codex",
        vec![
            envelope(1, Some("root"), "root", "Main", json!({"type": "model_selected", "model": "gpt-6.1-sol", "turnId": null})),
            envelope(2, Some("root"), "root", "Main", usage_event(usage, Some(usage))),
            envelope(3, Some("child"), "helper", "Helper", json!({"type": "model_selected", "model": "mock-model", "turnId": null})),
            envelope(4, Some("child"), "helper", "Helper", usage_event(usage, Some(usage))),
        ],
        None,
    )
    .view();
    let priced = database_price("openai", "gpt-6.1-sol", &usage);
    assert_eq!((mixed.run.cost, mixed.run.cost_status), (Some(priced), CostStatus::Floor));
    let helper = &mixed.agents[0].children[0];
    assert_eq!((helper.cost, helper.cost_status), (None, CostStatus::Unknown));
}

#[test]
fn a_live_child_whose_first_total_includes_its_parents_history_counts_only_its_own_requests() {
    let inherited = tokens(50_000, 0, 0);
    let own = tokens(3_000, 0, 100);
    let next = tokens(4_000, 0, 200);
    let state = fold(
        "codex",
        vec![
            envelope(1, Some("root"), "root", "Main", json!({"type": "model_selected", "model": "gpt-6.1-sol", "turnId": null})),
            envelope(2, Some("child"), "helper", "Helper", json!({"type": "model_selected", "model": "gpt-6.1-sol", "turnId": null})),
            envelope(3, Some("child"), "helper", "Helper", usage_event(inherited.add(&own), Some(own))),
            envelope(4, Some("child"), "helper", "Helper", usage_event(inherited.add(&own).add(&next), Some(next))),
        ],
        None,
    );
    let view = state.view();
    let helper = &view.agents[0].children[0];
    let cost = database_price("openai", "gpt-6.1-sol", &own) + database_price("openai", "gpt-6.1-sol", &next);
    assert_eq!(helper.tokens, Some(own.add(&next)));
    assert_eq!((helper.cost, helper.cost_status), (Some(cost), CostStatus::Floor));
    assert_eq!(helper.incomplete, vec![IncompleteReason::InheritedHistory]);
}

#[test]
fn usage_of_no_thread_counts_outside_the_tree_startup_for_warmup_agents() {
    let warmup = tokens(26, 0, 8);
    let stray = tokens(10, 0, 2);
    let model_usage = |total: TokenUsage, model: &str| {
        json!({"type": "usage", "turnId": null, "total": total, "last": total, "model": model})
    };
    let state = fold(
        "claude",
        vec![
            envelope(1, None, "unknown", "Warmup agent", model_usage(warmup, "claude-haiku-4-5-20251001")),
            envelope(2, None, "unknown", "Unknown actor", model_usage(stray, "claude-opus-5-5")),
        ],
        None,
    );
    let run = state.view().run;
    let haiku = database_price("anthropic", "claude-haiku-4-5-20251001", &warmup);
    let opus = database_price("anthropic", "claude-opus-5-5", &stray);
    assert_eq!(
        run.outside_tree,
        vec![
            OutsideUsage {
                label: "startup".to_owned(),
                tokens_by_model: vec![ModelTokens { model: Some("claude-haiku-4-5-20251001".to_owned()), tokens: warmup, cost: haiku, unpriced_tokens: 0, hours: Vec::new() }],
            },
            OutsideUsage {
                label: "unattributed".to_owned(),
                tokens_by_model: vec![ModelTokens { model: Some("claude-opus-5-5".to_owned()), tokens: stray, cost: opus, unpriced_tokens: 0, hours: Vec::new() }],
            },
        ]
    );
    assert_eq!(run.tokens, Some(warmup.add(&stray)));
    assert_eq!((run.cost, run.cost_status), (Some(haiku + opus), CostStatus::Exact));
}

#[test]
fn a_fold_priced_by_a_users_file_uses_it_where_the_database_has_nothing() {
    let usage = tokens(1_000_000, 0, 0);
    let file = BTreeMap::from([("mock-model".to_owned(), FilePrice { input: 3.0, cached_input: 0.0, cache_creation: 0.0, cache_creation_1h: None, output: 0.0, web_searches: None })]);
    let state = fold(
        "codex",
        vec![
            envelope(1, Some("root"), "root", "Main", json!({"type": "model_selected", "model": "mock-model", "turnId": null})),
            envelope(2, Some("root"), "root", "Main", usage_event(usage, Some(usage))),
        ],
        Some(Arc::new(PriceBook::with_file(file, "x"))),
    );
    let root = &state.view().agents[0];
    assert_eq!((root.cost, root.cost_status), (Some(3.0), CostStatus::Exact));
}

/// Every `.jsonl` under `dir`, sorted.
fn jsonl_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|end| end == "jsonl") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// What a fold says one agent cost: (thread, cost, unpriced tokens, cost
/// of each model's part).
type AgentCost = (Option<String>, Option<f64>, u64, Vec<f64>);

/// What a fold says each agent cost.
fn agent_costs(state: &RunState) -> Vec<AgentCost> {
    state
        .agents()
        .into_iter()
        .map(|agent| {
            (
                Some(agent.thread_id.as_str().to_owned()),
                agent.cost,
                agent.unpriced_tokens,
                agent.tokens_by_model.iter().map(|part| part.cost).collect(),
            )
        })
        .collect()
}

/// The same figure to the bit.
fn close(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits()
}

#[test]
fn the_flat_rate_cache_prices_every_fixture_request_as_the_database_does() {
    use agentrace_core::recorder::Format;
    use agentrace_core::InputLine;
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut priced = 0usize;
    for path in jsonl_under(&fixtures) {
        let text = path.to_string_lossy();
        let format = if text.contains("/rollouts/") {
            Format::CodexRollout
        } else if text.contains("/home_claude/") {
            Format::ClaudeTranscript
        } else if text.ends_with("/stream.jsonl") {
            Format::ClaudeStream
        } else if text.ends_with("/server.jsonl") {
            Format::CodexAppServer
        } else {
            continue;
        };
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut recorder = agentrace_core::Recorder::new("r".into(), format);
        let mut envelopes = recorder.start(at());
        for (index, line) in bytes.split(|byte| *byte == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            envelopes.extend(recorder.push(&InputLine {
                bytes: line,
                line_number: index as u64 + 1,
                observed_at: at(),
                direction: None,
                truncated_from: None,
            }));
        }
        envelopes.extend(recorder.finish());
        // Both folds in step: after each envelope (each request priced),
        // the cached book's figures are the database's.
        let mut cached = RunState::new("r".into()).with_prices(Arc::new(PriceBook::database()));
        let mut uncached = RunState::new("r".into()).with_prices(Arc::new(PriceBook::database().without_cache()));
        for envelope in &envelopes {
            cached.apply(envelope);
            uncached.apply(envelope);
            let (ours, theirs) = (agent_costs(&cached), agent_costs(&uncached));
            let same = ours.len() == theirs.len()
                && ours.iter().zip(&theirs).all(|(a, b)| {
                    a.0 == b.0
                        && a.2 == b.2
                        && match (a.1, b.1) {
                            (Some(x), Some(y)) => close(x, y),
                            (x, y) => x == y,
                        }
                        && a.3.len() == b.3.len()
                        && a.3.iter().zip(&b.3).all(|(x, y)| close(*x, *y))
                });
            assert!(same, "{} at {}:\n{ours:?}\n{theirs:?}", path.display(), envelope.sequence);
        }
        priced += agent_costs(&uncached).iter().filter(|agent| agent.1.is_some_and(|cost| cost > 0.0)).count();
    }
    assert!(priced > 20, "only {priced} priced agents: the fixtures were not read");
}

#[test]
fn a_price_tiered_by_request_size_is_still_priced_per_request() {
    let book = PriceBook::database();
    let uncached = PriceBook::database().without_cache();
    // Claude Sonnet 4.5 costs more per token past 200 k input tokens.
    for input in [1_000, 150_000, 199_999, 200_001, 450_000, 1_000_000] {
        let tokens = TokenUsage { input_tokens: input, cached_input_tokens: input / 3, output_tokens: 2_000, ..TokenUsage::default() };
        let request = Request { provider: Provider::Claude, model: "claude-sonnet-4-5", at: at(), service_tier: None, tokens: &tokens };
        let (ours, theirs) = (book.price(&request), uncached.price(&request));
        assert_eq!(ours.map(f64::to_bits), theirs.map(f64::to_bits), "{input}: {ours:?} {theirs:?}");
    }
    // The model's price is tiered indeed: the requests above crossed a tier.
    let rates = book.rates(Provider::Claude, "claude-sonnet-4-5", at()).map(|rates| rates.tiered);
    assert_eq!(rates, Some(true));
}

/// The model and cost of each agent of a Codex app-server capture folded
/// with the lines `keep` keeps, by thread.
fn app_server_agents(capture: &str, keep: impl Fn(&str) -> bool) -> Vec<(String, Option<String>, Option<f64>)> {
    use agentrace_core::recorder::Format;
    use agentrace_core::InputLine;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(capture).join("server.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut recorder = agentrace_core::Recorder::new("r".into(), Format::CodexAppServer);
    let mut envelopes = recorder.start(at());
    for (index, line) in text.lines().enumerate().filter(|(_, line)| keep(line)) {
        envelopes.extend(recorder.push(&InputLine {
            bytes: line.as_bytes(),
            line_number: index as u64 + 1,
            observed_at: at(),
            direction: None,
            truncated_from: None,
        }));
    }
    envelopes.extend(recorder.finish());
    let mut state = RunState::new("r".into()).with_prices(PriceBook::shared_database());
    for envelope in &envelopes {
        state.apply(envelope);
    }
    state.agents().into_iter().map(|agent| (agent.thread_id.as_str().to_owned(), agent.model.clone(), agent.cost)).collect()
}

/// The thread `thread/start` answered with: the capture's root.
fn root_thread(capture: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(capture).join("server.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|frame| frame["id"] == 2)
        .and_then(|frame| frame["result"]["thread"]["id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no thread/start answer in {capture}"))
}

#[test]
fn an_app_server_thread_is_priced_by_the_model_its_start_or_its_start_notice_names() {
    for capture in ["codex/real_model_basic", "codex-0.171/real_model_basic"] {
        let started = |line: &str| line.contains(r#""method":"thread/started""#);
        // `thread/start`'s answer: a line with the thread and its settings.
        let answered = |line: &str| line.starts_with(r#"{"id":2,"result":{"thread":"#);
        let whole = app_server_agents(capture, |_| true);
        let root = root_thread(capture);
        let without_notice = app_server_agents(capture, |line| !started(line));
        let without_answer = app_server_agents(capture, |line| !answered(line));
        let without_both = app_server_agents(capture, |line| !started(line) && !answered(line));
        let of_root = |agents: &[(String, Option<String>, Option<f64>)]| {
            agents.iter().find(|agent| agent.0 == root.as_str()).map(|agent| (agent.1.clone(), agent.2.is_some()))
        };
        let priced = Some((Some("gpt-6.1-sol".to_owned()), true));
        assert_eq!(of_root(&whole), priced, "{capture}");
        // Either names it; the same cost whichever did.
        assert_eq!(without_notice, whole, "{capture}");
        assert_eq!(without_answer, whole, "{capture}");
        // Neither: the root's tokens stay unpriced, never guessed.
        assert_eq!(of_root(&without_both), Some((None, false)), "{capture}");
    }
}

/// A newer database snapshot (`prices --update`) prices by its own data: a
/// model the compiled-in database lacks is priced, a model it has at the
/// snapshot's rate, and the book's name is the snapshot's. Data that is
/// no database is refused by the check, and a book over it that cannot be
/// decoded says why and prices by the compiled-in one.
#[test]
fn a_newer_database_snapshot_prices_by_its_own_data() {
    use agentrace_core::prices::PriceData;
    let bytes = include_bytes!("../../../agentrace-testkit/data/price-database.json").to_vec();
    let tokens = TokenUsage { input_tokens: 1_000_000, cached_input_tokens: 200_000, output_tokens: 100_000, total_tokens: 1_100_000, ..TokenUsage::default() };
    let request = |model| Request { provider: Provider::Codex, model, at: Timestamp::from_millis(1_795_994_000_000), service_tier: None, tokens: &tokens };
    let data = Arc::new(PriceData::new(bytes.clone(), "abc"));
    let book = PriceBook::of_data(Arc::clone(&data));
    let bundled = PriceBook::database();
    // 800 k uncached × $2 + 200 k cached × $0.5 + 100 k out × $8, per million.
    let round = |cost: Option<f64>| cost.map(|cost| (cost * 1e6).round() / 1e6);
    assert_eq!(
        (
            data.contents(),
            round(book.price(&request("mock-model"))),
            bundled.price(&request("mock-model")),
            book.id().to_owned(),
            book.database_name(),
            data.problem(),
        ),
        (Ok((2, 3)), Some(2.5), None, "genai-prices data abc".to_owned(), "genai-prices data abc".to_owned(), None)
    );
    let over = PriceBook::with_file_over(Some(Arc::clone(&data)), BTreeMap::new(), "f");
    assert_eq!(over.id(), "genai-prices data abc + file f");
    assert!(PriceData::new(b"{\"not\": \"a database\"}".to_vec(), "x").contents().is_err());
    let broken = Arc::new(PriceData::new(b"[{\"id\": 7}]".to_vec(), "bad"));
    let fallback = PriceBook::of_data(Arc::clone(&broken));
    assert_eq!((fallback.price(&request("gpt-5")), broken.problem().is_some()), (bundled.price(&request("gpt-5")), true));
}
