//! `agentrace statusline`: the one line Claude Code's `statusLine` command
//! shows under the prompt: the root's tokens, each live subagent's tokens
//! and the session's cost (`Main 12k · Explore 53k · $0.42`). Claude Code
//! runs it after every message, so it reads only what the session's
//! transcripts grew by since its last call, from a small state file the
//! store places under `$AGENTRACE_HOME/statusline/`. It must never fail
//! Claude Code: any problem prints nothing and exits 0.
//!
//! Why it sits beside the attributor rather than inside it: the recorder's
//! state lives in one process, and this command is a new process every few
//! hundred milliseconds; what it carries from call to call is only what
//! usage needs (per file: the offset read to, per response: its counted
//! usage). It follows the fold's accounting rule for rule (one count per
//! message id per agent, a final value replacing a snapshot, the part
//! added priced on its own, at the line's time, by the agent's model), and
//! a test holds its cost to `usage --json`'s on every finished capture.
//!
//! What "live" means: a subagent is live from its first transcript line
//! until the root's transcript hands it back: a `tool_result` naming it
//! (`toolUseResult.agentId`, a foreground agent's report), an error
//! `tool_result` for the call that spawned it (`meta.json` `toolUseId`,
//! an agent whose API calls failed), or a `<task-notification>` naming its
//! task id (a background agent). A `SendMessage` that resumes it
//! (`toolUseResult.resumedAgentId`) makes it live again. The 2.0.77
//! startup "Warmup" agents are never shown; their tokens count in the cost.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::{IsTerminal as _, Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentrace_core::claude::tokens;
use agentrace_core::model::{Provider, Timestamp, TokenUsage};
use agentrace_core::prices::{PriceBook, Request};
use agentrace_core::state::CostStatus;
use agentrace_store::Home;
use agentrace_wire::claude::{ApiUsage, SubagentMeta};
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::output::Out;

/// Arguments of `agentrace statusline`.
#[derive(Debug, Args)]
pub struct StatuslineArgs {
    /// Prices per million tokens by model, JSON (as `usage --prices`).
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// Print the figures as JSON instead of the line.
    #[arg(long)]
    json: bool,
}

/// The state format; a state of another version is dropped (read again).
const STATE_VERSION: u32 = 3;

/// The most of stdin read: Claude Code's input is a few hundred bytes.
const MAX_INPUT: u64 = 1024 * 1024;

/// Runs the command; never fails (a status line that errors would show
/// Claude Code's user an error on every message).
pub fn run(args: &StatuslineArgs) {
    if let Some(line) = status(args) {
        let mut out = Out::new();
        let _ = out.line(line).and_then(|()| out.flush());
    }
}

/// What Claude Code passes on stdin (see its statusline documentation);
/// only the members used here are read.
#[derive(Debug, Deserialize)]
struct StatuslineInput {
    session_id: String,
    transcript_path: PathBuf,
}

fn status(args: &StatuslineArgs) -> Option<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return None;
    }
    let mut text = String::new();
    stdin.lock().take(MAX_INPUT).read_to_string(&mut text).ok()?;
    let input: StatuslineInput = serde_json::from_str(&text).ok()?;
    // A price file the home has that cannot be read prices nothing with
    // it: the line goes on with the database's prices.
    let home = Home::from_env().ok()?;
    let home = crate::home_files::read_or_keep(&home);
    // A session id that is not a plain file name gets no state, and no line.
    agentrace_store::validate_run_id(&input.session_id).ok()?;
    // So does a `--prices` file that cannot be read (said on stderr, which
    // Claude Code does not show: a line without its prices beats none).
    let book = match crate::commands::usage::load_prices(&home, args.prices.as_ref()) {
        Ok(book) => book,
        Err(error) => {
            eprintln!("warning: {error:#}; the line is priced by the database");
            home.prices()
        }
    };
    let summary = Session::at(&home, &input.transcript_path, &input.session_id, book)?.summary();
    // The prices worked out for a new model or day, for the next call (and
    // every other command) to know without the database.
    let _ = home.keep_known_prices();
    if args.json {
        serde_json::to_string(&summary).ok()
    } else {
        Some(summary.line())
    }
}

/// The figures the line shows, also printed by `--json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The root's tokens.
    pub main_tokens: u64,
    /// Each live subagent, by its file's path.
    pub live: Vec<LiveAgent>,
    /// The session's cost in US dollars (every agent, the startup agents
    /// too); `null` when nothing could be priced.
    pub cost: Option<f64>,
    /// How complete `cost` is.
    pub cost_status: CostStatus,
    /// The session's tokens (every agent, the startup agents too).
    pub total_tokens: u64,
    /// Whether any model request was counted yet: before the first, the
    /// line has no cost to give (`--json`'s `0` is the sum of none).
    #[serde(skip)]
    pub requested: bool,
}

/// A live subagent on the line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveAgent {
    /// Its agent id.
    pub agent_id: String,
    /// Its type (`Explore`, `general-purpose`, …), or `subagent`.
    pub label: String,
    /// Its tokens so far.
    pub tokens: u64,
}

impl Summary {
    /// `Main 12k · Explore 53k · $0.42`; `Main 0` before the session's
    /// first request, whose cost is not known yet (a `$0.00` then read as
    /// a free session), as `top` leaves a run's cost out until then.
    pub fn line(&self) -> String {
        let mut parts = vec![format!("Main {}", crate::render::short_tokens(self.main_tokens))];
        for agent in &self.live {
            parts.push(format!("{} {}", agent.label, crate::render::short_tokens(agent.tokens)));
        }
        if !self.requested {
            return parts.join(" · ");
        }
        parts.push(match (self.cost, self.cost_status) {
            (None, _) | (_, CostStatus::Unknown) => "$?".to_owned(),
            (Some(cost), CostStatus::Floor) => format!("≥${cost:.2}"),
            (Some(cost), CostStatus::Exact) => crate::render::cents(cost),
        });
        parts.join(" · ")
    }
}

/// What is kept between calls for one session.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    version: u32,
    /// The price book the costs were priced with: another book means
    /// pricing again from the start.
    prices: String,
    /// The root transcript's path, so a session moved elsewhere starts over.
    transcript: PathBuf,
    /// Every transcript read, by path: the root's first.
    files: BTreeMap<PathBuf, FileState>,
    /// 2.0.77 `agent-*.jsonl` files beside the root that belong to another
    /// session (read once to learn it).
    foreign: BTreeSet<PathBuf>,
    /// The latest hand-back state of each agent id the root named: true
    /// when handed back, false when resumed since.
    ended: BTreeMap<String, bool>,
    /// The `Agent`/`Task` calls seen, by tool-use id.
    spawn_calls: BTreeSet<String>,
    /// Those whose result came back, other than a background launch.
    ended_calls: BTreeSet<String>,
    /// Flat rates found per model, tier and day (see [`Rates`]).
    rates: BTreeMap<String, Option<Rates>>,
}

/// How far one transcript was read, and what its lines added up to.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileState {
    /// Device and inode when it was last read: another file at the same
    /// path is read again whole.
    identity: (u64, u64),
    /// Bytes read, always the end of a whole line.
    offset: u64,
    /// Lines read so far.
    lines: u64,
    /// The agent it belongs to (`None` for the root's file).
    agent_id: Option<String>,
    /// Its type, once known.
    label: Option<String>,
    /// The root's tool call that spawned it (`meta.json`).
    tool_use_id: Option<String>,
    /// A 2.0.77 startup agent: counted, never shown.
    warmup: bool,
    /// Usage of the root (or the agent) in this file.
    main: Book,
    /// Sidechain lines inline in the root's file (Claude Code 1.x): their
    /// tokens count in the cost, never as the root's.
    sidechain: Book,
}

/// One agent's accounting, as the fold keeps it.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Book {
    /// The model its replies come from (what prices them).
    model: Option<String>,
    /// Each response counted, by message id: its usage and whether final.
    responses: BTreeMap<String, (TokenUsage, bool)>,
    /// Responses known only by a snapshot.
    snapshots: usize,
    total: TokenUsage,
    #[serde(with = "agentrace_core::prices::bits")]
    cost: f64,
    unpriced_tokens: u64,
    /// The latest line time seen (a line without one is priced at it).
    last_at: Option<i64>,
}

/// A model's rates per token, for a model, tier and day whose price was
/// found flat (the same rate for a small and a 2M-token request, no fee
/// per request): a new request is then priced without opening the price
/// database, whose first use costs a process ~60 ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rates {
    #[serde(with = "agentrace_core::prices::bits")]
    input: f64,
    #[serde(with = "agentrace_core::prices::bits")]
    cached_input: f64,
    #[serde(with = "agentrace_core::prices::bits")]
    cache_write: f64,
    /// Per token of a cache write kept for an hour.
    #[serde(with = "agentrace_core::prices::bits")]
    cache_write_1h: f64,
    #[serde(with = "agentrace_core::prices::bits")]
    output: f64,
    /// Per web search.
    #[serde(with = "agentrace_core::prices::bits")]
    web_search: f64,
}

impl Rates {
    fn cost(&self, tokens: &TokenUsage) -> f64 {
        let uncached = tokens
            .input_tokens
            .saturating_sub(tokens.cached_input_tokens)
            .saturating_sub(tokens.cache_creation_input_tokens);
        let (five_minutes, hour) = tokens.writes_by_lifetime();
        uncached as f64 * self.input
            + tokens.cached_input_tokens as f64 * self.cached_input
            + five_minutes as f64 * self.cache_write
            + hour as f64 * self.cache_write_1h
            + tokens.output_tokens as f64 * self.output
            + tokens.web_search_requests as f64 * self.web_search
    }
}

/// The members of a transcript line this command reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    #[serde(rename = "type", default)]
    kind: Option<&'a str>,
    #[serde(default)]
    is_sidechain: Option<bool>,
    #[serde(default)]
    parent_uuid: Option<&'a RawValue>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default, borrow)]
    timestamp: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    attribution_agent: Option<String>,
    #[serde(default, borrow)]
    message: Option<Message<'a>>,
    #[serde(default, borrow)]
    tool_use_result: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct Message<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    stop_reason: Option<&'a RawValue>,
    #[serde(default)]
    usage: Option<ApiUsage>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HandBack {
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    resumed_agent_id: Option<String>,
}

/// A content block, as far as spawns and their results go.
#[derive(Debug, Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", default)]
    kind: Option<&'a str>,
    /// A `tool_use`'s id.
    #[serde(default)]
    id: Option<String>,
    /// A `tool_use`'s tool.
    #[serde(default)]
    name: Option<&'a str>,
    /// A `tool_result`'s call.
    #[serde(default)]
    tool_use_id: Option<String>,
}

/// One session being brought up to date.
struct Session {
    state: State,
    book: Arc<PriceBook>,
}

impl Session {
    /// Reads what the session's transcripts grew by since the state `home`
    /// kept for it, then keeps the state again (a state that cannot be
    /// kept is only a slower next call).
    fn at(home: &Home, transcript: &Path, session_id: &str, book: Arc<PriceBook>) -> Option<Self> {
        let mut session = Session {
            state: load_state(home, session_id, transcript, book.id()),
            book,
        };
        let root_read = session.follow(transcript, None)?;
        if root_read == Followed::Restarted {
            // The root's file was rewritten: what it said of hand-backs is
            // gone with it, and so is every agent's count.
            session.state = fresh_state(transcript, session.book.id());
            session.follow(transcript, None)?;
        }
        for (path, agent_id) in agent_files(transcript, session_id, &mut session.state) {
            let _ = session.follow(&path, Some(agent_id));
        }
        let _ = home.save_statusline_state(session_id, &session.state);
        Some(session)
    }

    fn summary(&self) -> Summary {
        let mut main_tokens = 0;
        let mut live = Vec::new();
        let mut cost = 0.0;
        let mut tokens = 0;
        let mut unpriced = 0;
        let mut missing = false;
        let mut requested = false;
        for file in self.state.files.values() {
            for book in [&file.main, &file.sidechain] {
                requested |= !book.responses.is_empty();
                cost += book.cost;
                tokens += book.total.total_tokens;
                unpriced += book.unpriced_tokens;
            }
            match &file.agent_id {
                None => main_tokens += file.main.total.total_tokens,
                Some(agent_id) if !file.warmup => {
                    let ended = match self.state.ended.get(agent_id) {
                        Some(ended) => *ended,
                        None => file.tool_use_id.as_ref().is_some_and(|id| self.state.ended_calls.contains(id)),
                    };
                    if ended {
                        // As the fold: an agent handed back with a
                        // response known only by its snapshot misses the
                        // final output.
                        missing |= file.main.snapshots > 0;
                    } else {
                        live.push((agent_id, file));
                    }
                }
                Some(_) => {}
            }
        }
        let live = live
            .into_iter()
            .map(|(agent_id, file)| LiveAgent {
                agent_id: agent_id.clone(),
                label: file.label.clone().unwrap_or_else(|| "subagent".to_owned()),
                tokens: file.main.total.total_tokens,
            })
            .collect();
        let priced_any = tokens > unpriced;
        let short = unpriced > 0 || missing;
        let (cost, cost_status) = match (priced_any, short) {
            (false, true) => (None, CostStatus::Unknown),
            (true, true) => (Some(cost), CostStatus::Floor),
            (_, false) => (Some(cost), CostStatus::Exact),
        };
        Summary { main_tokens, live, cost, cost_status, total_tokens: tokens, requested }
    }

    /// Reads `path` from where the state left it. `Restarted` when it had
    /// to be read from its start again (it shrank or is another file).
    fn follow(&mut self, path: &Path, agent_id: Option<String>) -> Option<Followed> {
        let mut file = File::open(path).ok()?;
        let metadata = file.metadata().ok()?;
        let identity = (metadata.dev(), metadata.ino());
        let known = self.state.files.get(path);
        let restarted = known.is_some_and(|known| known.identity != identity || metadata.len() < known.offset);
        let mut kept = match known {
            Some(known) if !restarted => known.clone(),
            _ => FileState {
                identity,
                agent_id: agent_id.clone(),
                ..FileState::default()
            },
        };
        if restarted && agent_id.is_none() {
            return Some(Followed::Restarted);
        }
        if kept.agent_id.is_some() && kept.label.is_none() {
            read_meta(path, &mut kept);
        }
        if metadata.len() > kept.offset {
            file.seek(SeekFrom::Start(kept.offset)).ok()?;
            let mut bytes = Vec::with_capacity((metadata.len() - kept.offset) as usize);
            file.read_to_end(&mut bytes).ok()?;
            // Only whole lines: the last one may still be being written.
            let whole = memchr::memrchr(b'\n', &bytes).map_or(0, |end| end + 1);
            for line in bytes[..whole].split(|byte| *byte == b'\n') {
                self.line(&mut kept, line);
            }
            kept.offset += whole as u64;
        }
        self.state.files.insert(path.to_owned(), kept);
        Some(if restarted { Followed::Restarted } else { Followed::Read })
    }

    fn line(&mut self, file: &mut FileState, bytes: &[u8]) {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        file.lines += 1;
        let first = file.lines == 1;
        // Most lines carry nothing this command reads: skip them unparsed.
        let finder = finders();
        let wanted = finder.usage.find(bytes).is_some()
            || finder.tool_use_result.find(bytes).is_some()
            || finder.notification.find(bytes).is_some()
            || (first && file.agent_id.is_some());
        if !wanted {
            return;
        }
        let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else {
            return;
        };
        if first && file.agent_id.is_some() {
            file.warmup = is_warmup(&line);
        }
        if file.label.is_none() {
            file.label.clone_from(&line.attribution_agent);
        }
        let at = line.timestamp.as_deref().and_then(Timestamp::parse);
        // A subagent's own subagents hand back to it, in its file.
        // A background launch's result is no hand-back: the agent runs on.
        let launched = finders().launched.find(bytes).is_some();
        self.hand_backs(&line, launched);
        let Some(message) = &line.message else {
            return;
        };
        if line.kind != Some("assistant") {
            return;
        }
        let sidechain = file.agent_id.is_none() && line.is_sidechain == Some(true);
        let warmup = file.warmup;
        let target = if sidechain { &mut file.sidechain } else { &mut file.main };
        if let Some(at) = at {
            target.last_at = Some(at.millis());
        }
        let at = target.last_at.map_or_else(crate::clock::now, Timestamp::from_millis);
        let own_model = message.model.as_deref().filter(|model| !model.is_empty() && *model != "<synthetic>");
        // A thread prices with the model it last named; a startup agent's
        // reply (no thread) with its own model only (as the fold does).
        if warmup {
            target.model = own_model.map(str::to_owned);
        } else if let Some(model) = own_model {
            target.model = Some(model.to_owned());
        }
        let (Some(usage), Some(id)) = (&message.usage, &message.id) else {
            return;
        };
        let is_final = message.stop_reason.is_some_and(|reason| reason.get() != "null");
        let last = tokens(usage);
        let before = target.total;
        match target.responses.get_mut(id) {
            Some((kept, kept_final)) => {
                if is_final && !*kept_final {
                    target.total = target.total.minus(kept).add(&last);
                    target.snapshots = target.snapshots.saturating_sub(1);
                    *kept = last;
                    *kept_final = true;
                }
            }
            None => {
                target.responses.insert(id.clone(), (last, is_final));
                target.total = target.total.add(&last);
                if !is_final {
                    target.snapshots += 1;
                }
            }
        }
        let added = target.total.minus(&before);
        if added == TokenUsage::default() {
            return;
        }
        let priced = if added == last { &last } else { &added };
        let model = target.model.clone();
        let cost = model.and_then(|model| self.price(&model, at, usage.service_tier.as_deref(), priced));
        let target = if sidechain { &mut file.sidechain } else { &mut file.main };
        match cost {
            Some(cost) => target.cost += cost,
            None => target.unpriced_tokens += added.total_tokens,
        }
    }

    /// What a line says of subagents ending or resuming.
    fn hand_backs(&mut self, line: &Line<'_>, launched: bool) {
        if let Some(result) = line.tool_use_result {
            if let Ok(hand_back) = serde_json::from_str::<HandBack>(result.get()) {
                match (hand_back.resumed_agent_id, hand_back.agent_id, hand_back.status.as_deref()) {
                    (Some(resumed), _, _) => {
                        self.state.ended.insert(resumed, false);
                    }
                    (None, Some(_), Some("async_launched")) => {}
                    (None, Some(agent), _) => {
                        self.state.ended.insert(agent, true);
                    }
                    (None, None, _) => {}
                }
            }
        }
        let Some(content) = line.message.as_ref().and_then(|message| message.content) else {
            return;
        };
        if let Ok(blocks) = serde_json::from_str::<Vec<Block<'_>>>(content.get()) {
            for block in blocks {
                match (block.kind, block.id, block.tool_use_id) {
                    (Some("tool_use"), Some(id), _) if matches!(block.name, Some("Agent" | "Task")) => {
                        self.state.spawn_calls.insert(id);
                    }
                    (Some("tool_result"), _, Some(call)) if !launched && self.state.spawn_calls.contains(&call) => {
                        self.state.ended_calls.insert(call);
                    }
                    _ => {}
                }
            }
        } else if let Ok(text) = serde_json::from_str::<String>(content.get()) {
            if let Some(task) = between(&text, "<task-notification>", "</task-notification>")
                .and_then(|body| between(body, "<task-id>", "</task-id>"))
            {
                self.state.ended.insert(task.trim().to_owned(), true);
            }
        }
    }

    /// One request's cost: by the flat rates found for its model, tier and
    /// day when it has them, else by the book (and the rates are looked for
    /// then, once per model, tier and day).
    fn price(&mut self, model: &str, at: Timestamp, tier: Option<&str>, tokens: &TokenUsage) -> Option<f64> {
        let day = at.millis().div_euclid(86_400_000);
        let key = format!("{model}\u{1f}{}\u{1f}{day}", tier.unwrap_or(""));
        let what = Priced { model, at, tier };
        if let Some(found) = self.state.rates.get(&key) {
            if let Some(rates) = found {
                return Some(rates.cost(tokens));
            }
            return what.price(&self.book, tokens);
        }
        let rates = flat_rates(&self.book, &what);
        self.state.rates.insert(key, rates);
        match rates {
            Some(rates) => Some(rates.cost(tokens)),
            None => what.price(&self.book, tokens),
        }
    }
}

/// What a request is priced by, but its tokens.
struct Priced<'a> {
    model: &'a str,
    at: Timestamp,
    tier: Option<&'a str>,
}

impl Priced<'_> {
    fn price(&self, book: &PriceBook, tokens: &TokenUsage) -> Option<f64> {
        book.price(&Request {
            provider: Provider::Claude,
            model: self.model,
            at: self.at,
            service_tier: self.tier,
            tokens,
        })
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Followed {
    Read,
    Restarted,
}

/// The flat per-token rates of a request's model, tier and time, when the
/// book prices it linearly: each kind of token costs the same per token in
/// a small and in a 2M-token request, and a mixed request costs the sum of
/// its parts. `None` when it has no price or is not flat (tiers): such a
/// model is priced by the book every time.
fn flat_rates(book: &PriceBook, what: &Priced<'_>) -> Option<Rates> {
    let rate = |tokens: u64, part: &dyn Fn(u64) -> TokenUsage| -> Option<f64> {
        Some(what.price(book, &part(tokens))? / tokens as f64)
    };
    let input = |n| TokenUsage { input_tokens: n, ..TokenUsage::default() };
    let cached = |n| TokenUsage { input_tokens: n, cached_input_tokens: n, ..TokenUsage::default() };
    let written = |n| TokenUsage { input_tokens: n, cache_creation_input_tokens: n, ..TokenUsage::default() };
    let written_1h = |n| TokenUsage { cache_creation_1h_input_tokens: n, ..written(n) };
    let output = |n| TokenUsage { output_tokens: n, ..TokenUsage::default() };
    let searches = |n| TokenUsage { web_search_requests: n, ..TokenUsage::default() };
    const SMALL: u64 = 1_000;
    const LARGE: u64 = 2_000_000;
    let parts: [&dyn Fn(u64) -> TokenUsage; 6] = [&input, &cached, &written, &written_1h, &output, &searches];
    let mut small = [0.0; 6];
    for (index, part) in parts.iter().enumerate() {
        small[index] = rate(SMALL, part)?;
        let large = rate(LARGE, part)?;
        if (large - small[index]).abs() > small[index].abs() * 1e-9 {
            return None;
        }
    }
    let rates = Rates {
        input: small[0],
        cached_input: small[1],
        cache_write: small[2],
        cache_write_1h: small[3],
        output: small[4],
        web_search: small[5],
    };
    let mixed = TokenUsage {
        input_tokens: 5_000,
        cached_input_tokens: 2_000,
        cache_creation_input_tokens: 1_000,
        cache_creation_1h_input_tokens: 400,
        web_search_requests: 3,
        output_tokens: 700,
        reasoning_output_tokens: 0,
        total_tokens: 5_700,
    };
    let priced = what.price(book, &mixed)?;
    ((priced - rates.cost(&mixed)).abs() <= priced.abs() * 1e-9).then_some(rates)
}

/// True for the first line of a 2.0.77 startup agent: a user prompt that
/// is just `Warmup`, at the start of its chain.
fn is_warmup(line: &Line<'_>) -> bool {
    let starts_chain = line.parent_uuid.is_none_or(|parent| parent.get() == "null");
    let prompt = line
        .message
        .as_ref()
        .and_then(|message| message.content)
        .and_then(|content| serde_json::from_str::<String>(content.get()).ok());
    line.kind == Some("user") && starts_chain && prompt.as_deref() == Some("Warmup")
}

/// The agent's type and spawning call from its `meta.json` (2.1.x), when
/// it is there yet.
fn read_meta(path: &Path, file: &mut FileState) {
    let meta = path.with_extension("meta.json");
    let Ok(text) = fs::read(&meta) else {
        return;
    };
    if let Ok(meta) = serde_json::from_slice::<SubagentMeta>(&text) {
        file.label = meta.agent_type.filter(|label| !label.is_empty());
        file.tool_use_id = meta.tool_use_id;
    }
}

/// The text between `open` and the next `close`.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)?;
    Some(&text[start..start + end])
}

/// The session's subagent files and their agent ids: `<session>/subagents/
/// agent-*.jsonl` (2.1.x), and the `agent-*.jsonl` beside the root file
/// whose lines name the session (2.0.77; another session's are noted in
/// the state so that they are opened once).
fn agent_files(transcript: &Path, session_id: &str, state: &mut State) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let agent_of = |path: &Path| -> Option<String> {
        let name = path.file_name()?.to_str()?;
        let id = name.strip_prefix("agent-")?.strip_suffix(".jsonl")?;
        Some(id.to_owned())
    };
    let Some(project) = transcript.parent() else {
        return found;
    };
    let folder = transcript.with_extension("").join("subagents");
    for dir in [folder.as_path(), project] {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|entry| entry.ok().map(|entry| entry.path())).collect();
        paths.sort();
        for path in paths {
            let Some(agent) = agent_of(&path) else {
                continue;
            };
            if dir == project && !state.files.contains_key(&path) {
                if state.foreign.contains(&path) {
                    continue;
                }
                match first_line_session(&path) {
                    Some(Some(id)) if id == session_id => {}
                    Some(_) => {
                        state.foreign.insert(path);
                        continue;
                    }
                    // Its first line is not written yet: look again next time.
                    None => continue,
                }
            }
            found.push((path, agent));
        }
    }
    found
}

/// The session its first line names: `None` while that line is not
/// whole yet, `Some(None)` when it names none.
fn first_line_session(path: &Path) -> Option<Option<String>> {
    let mut file = File::open(path).ok()?;
    let mut buffer = vec![0; 64 * 1024];
    let read = file.read(&mut buffer).ok()?;
    let end = memchr::memchr(b'\n', &buffer[..read])?;
    Some(serde_json::from_slice::<Line<'_>>(&buffer[..end]).ok().and_then(|line| line.session_id))
}

fn fresh_state(transcript: &Path, prices: &str) -> State {
    State {
        version: STATE_VERSION,
        prices: prices.to_owned(),
        transcript: transcript.to_owned(),
        ..State::default()
    }
}

/// The kept state, or a fresh one when it is missing, unreadable, of
/// another version, another price book or another transcript path.
fn load_state(home: &Home, session_id: &str, transcript: &Path, prices: &str) -> State {
    home.statusline_state::<State>(session_id)
        .ok()
        .flatten()
        .filter(|state| state.version == STATE_VERSION && state.prices == prices && state.transcript == transcript)
        .unwrap_or_else(|| fresh_state(transcript, prices))
}

/// The searchers for lines worth parsing, built once.
struct Finders {
    usage: memchr::memmem::Finder<'static>,
    tool_use_result: memchr::memmem::Finder<'static>,
    notification: memchr::memmem::Finder<'static>,
    launched: memchr::memmem::Finder<'static>,
}

fn finders() -> &'static Finders {
    static FINDERS: std::sync::OnceLock<Finders> = std::sync::OnceLock::new();
    FINDERS.get_or_init(|| Finders {
        usage: memchr::memmem::Finder::new(b"\"usage\""),
        tool_use_result: memchr::memmem::Finder::new(b"\"tool_result\""),
        notification: memchr::memmem::Finder::new(b"<task-notification>"),
        launched: memchr::memmem::Finder::new(b"Async agent launched"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_floor_and_an_unknown_cost_are_marked_on_the_line() {
        let summary = |cost, cost_status| Summary {
            main_tokens: 12_000,
            live: vec![LiveAgent {
                agent_id: "a1".to_owned(),
                label: "Explore".to_owned(),
                tokens: 53_000,
            }],
            cost,
            cost_status,
            total_tokens: 70_000,
            requested: true,
        };
        let lines = [
            summary(Some(0.42), CostStatus::Exact).line(),
            summary(Some(0.42), CostStatus::Floor).line(),
            summary(None, CostStatus::Unknown).line(),
        ];
        assert_eq!(
            lines,
            ["Main 12k · Explore 53k · $0.42", "Main 12k · Explore 53k · ≥$0.42", "Main 12k · Explore 53k · $?"]
        );
    }
}
