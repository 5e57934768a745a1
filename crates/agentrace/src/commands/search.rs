//! `agentrace search`: words in the message, reasoning and tool text of
//! every run, through the catalog's full-text index.

use agentrace_core::days;
use agentrace_core::model::Provider;
use agentrace_store::catalog::{ActorQuery, SearchHit, SearchQuery};
use agentrace_store::Home;
use clap::Args;
use serde::Serialize;

use crate::commands::runs::Scope;
use crate::output::Out;
use crate::render::one_line;

/// Arguments of `agentrace search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The words to find (all of them, in message, reasoning and tool text).
    #[arg(value_parser = words)]
    pub text: String,
    /// Only in this run (id, unique prefix, or `latest`).
    #[arg(long)]
    pub run: Option<String>,
    /// Only what `main` (roots), `helpers`, `unknown`, or one agent wrote:
    /// its thread id or its label as `show` prints it.
    #[arg(long)]
    pub actor: Option<String>,
    #[command(flatten)]
    pub scope: Scope,
    /// At most this many hits.
    #[arg(long, default_value_t = 20)]
    pub limit: u64,
    /// Print `{"hits": [...]}`.
    #[arg(long)]
    pub json: bool,
}

/// `{"hits": [...]}`, as `search --json` and `GET /api/search` print it.
#[derive(Debug, Serialize)]
pub struct Hits {
    /// Newest first (each hit's event time), as the catalog orders them.
    pub hits: Vec<SearchHit>,
}

/// The words of a search, refused when there are none (a usage error).
fn words(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("give the words to find, as `agentrace search \"retry budget\"`".to_owned());
    }
    Ok(text.to_owned())
}

/// Runs `agentrace search`.
pub fn run(home: &Home, args: &SearchArgs, out: &mut Out) -> anyhow::Result<()> {
    // A usage error before any work.
    let (since, until) = args.scope.bounds()?;
    let catalog = crate::catalog::synced(home)?;
    let run = args.run.as_deref().map(|run| home.resolve(run)).transpose()?;
    let query = SearchQuery {
        text: args.text.clone(),
        run: run.as_ref().map(|id| id.to_string()),
        actor: args.actor.as_deref().and_then(ActorQuery::parse),
        provider: args.scope.provider.map(|provider| Provider::from(provider).as_str().to_owned()),
        project: args.scope.project.clone(),
        since,
        until,
        // One more than shown: whether more matched than the limit shows.
        limit: args.limit.saturating_add(1),
    };
    let mut hits = catalog.search(home, &query)?;
    let more = hits.len() as u64 > args.limit;
    hits.truncate(usize::try_from(args.limit).unwrap_or(usize::MAX));
    if let (true, Some(ActorQuery::Agent(agent))) = (hits.is_empty(), &query.actor) {
        // A name no agent has (a typo, a label as another tool prints it)
        // must not read as an agent that never wrote the words; a value
        // shaped as a thread id stays a quiet no-match.
        if !agentrace_store::catalog::looks_like_a_thread_id(agent) && !catalog.names_agent(query.run.as_deref(), agent)? {
            match &run {
                Some(run) => {
                    let agents = home.load_run(run)?.view().agents;
                    anyhow::bail!("--actor {agent}: no agent of run {run} has this thread id or label\n{}", crate::render::actor_choices(&agents, agent));
                }
                None => anyhow::bail!(
                    "--actor {agent}: no agent of any run has this thread id or label\nhint: --actor takes main, helpers, unknown, an agent's label as `show` prints it, or its thread id (`agentrace show RUN` lists a run's agents)"
                ),
            }
        }
    }
    if args.json {
        out.json_pretty(&Hits { hits })?;
        return Ok(());
    }
    if hits.is_empty() {
        eprintln!("no text matches {:?}", args.text);
    }
    for hit in &hits {
        out.line(format!("{} #{} {} [{}] {}", hit.run_id, hit.sequence, days::rfc3339_in(hit.timestamp, &args.scope.zone().tz), hit.label, one_line(&hit.snippet, 120)))?;
    }
    if more {
        // A list cut at the limit reads as every hit there is.
        eprintln!("hint: the newest {} hits are shown, and more matched; `--limit N` shows more", args.limit);
    }
    Ok(())
}
