//! `agentrace events`: every envelope of a run log in sequence order,
//! final attribution applied, filtered by actor.

use agentrace_core::model::Role;
use agentrace_store::{Home, LogReader};
use clap::Args;

use crate::output::Out;
use crate::render;

/// Arguments of `agentrace events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Run id, a unique prefix of one (or of an imported run's Codex thread or Claude session id), or `latest`.
    run: String,
    /// Print JSON Lines (one envelope per line).
    #[arg(long)]
    json: bool,
    /// Include each envelope's original frame (under its event, or as `raw` with `--json`; an imported frame is read from its source).
    #[arg(long)]
    raw: bool,
    /// Only events of `main` (roots), `helpers`, `unknown`, or one agent:
    /// its thread id or its label as `show` prints it.
    #[arg(long)]
    actor: Option<String>,
}

/// Which events `--actor` keeps.
enum ActorFilter {
    All,
    Role(Role),
    /// One agent, by its thread id or its label (final, as `show` prints it).
    Agent(String),
}

impl ActorFilter {
    fn parse(text: Option<&str>) -> Self {
        match text {
            None | Some("all") => ActorFilter::All,
            Some("main" | "root") => ActorFilter::Role(Role::Root),
            Some("helpers" | "helper") => ActorFilter::Role(Role::Helper),
            Some("unknown") => ActorFilter::Role(Role::Unknown),
            Some(agent) => ActorFilter::Agent(agent.to_owned()),
        }
    }

    fn keeps(&self, actor: &agentrace_core::Actor) -> bool {
        match self {
            ActorFilter::All => true,
            ActorFilter::Role(role) => actor.role == *role,
            ActorFilter::Agent(agent) => {
                actor.label == *agent || actor.thread_id.as_ref().is_some_and(|id| id.as_str() == agent)
            }
        }
    }
}

/// Runs `agentrace events`.
pub fn run(home: &Home, args: &EventsArgs, out: &mut Out) -> anyhow::Result<()> {
    let id = home.resolve(&args.run)?;
    let path = home.log_path(&id);
    // Two passes keep memory bounded: the run book first (from its
    // snapshot when one matches) for the corrections, then the events.
    let fold = home.fold_run(&id)?;
    let finals = fold.finals();
    let filter = ActorFilter::parse(args.actor.as_deref());
    let mut reader = LogReader::open(&path)?;
    let mut frames = agentrace_store::raw_ref::Resolver::for_log(&path);
    let mut kept = false;
    for envelope in &mut reader {
        let mut envelope = envelope?;
        finals.apply(&mut envelope);
        if !filter.keeps(&envelope.actor) {
            continue;
        }
        kept = true;
        if args.raw {
            // An imported frame is read from its source (or kept copy).
            frames.show(&mut envelope);
        } else {
            envelope.raw = None;
            envelope.raw_ref = None;
        }
        if args.json {
            out.json(&envelope)?;
        } else {
            render::event_line(out, &envelope)?;
            // The frame under its event: the ingest's hint sends a user
            // here to see an undecodable line as it was read.
            if args.raw {
                render::raw_line(out, &envelope)?;
            }
        }
    }
    if !reader.skipped().is_empty() {
        render::skipped_warning(&path, reader.skipped());
    }
    if let ActorFilter::Agent(agent) = &filter {
        // Nothing kept, and no agent of the run goes by that name: a typo
        // (or a label as another command prints it) must not read as an
        // agent that did nothing.
        let agents = fold.state().agents();
        if !kept && !agentrace_core::state::names_an_agent(&agents, agent) {
            anyhow::bail!("--actor {agent}: no agent of run {id} has this thread id or label\n{}", render::actor_choices(&agents, agent));
        }
    }
    Ok(())
}
