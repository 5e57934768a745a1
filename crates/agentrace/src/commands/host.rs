//! `agentrace host …`: the session host's reads on the command line
//! (read-agent, turns, interrupt, find-spawn, tokens, marker). Connects,
//! reads, prints; the reads themselves live in `agentrace-host`. Exit codes:
//! 0 ok, 3 when the host says the thread is not there, 1 for any other
//! failure (2 for usage errors, from clap).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agentrace_host::client::{ClientOptions, Endpoint, StdioCommand};
use agentrace_host::{
    parse_marker, AgentInfo, FindOptions, Host, HostError, SpawnSearch, TurnView, Via,
};
use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::output::Out;

/// Exit code when the host says the thread is not there.
const EXIT_NOT_FOUND: u8 = 3;

/// `agentrace host`.
#[derive(Debug, Args)]
pub struct HostArgs {
    #[command(subcommand)]
    verb: HostVerb,
}

#[derive(Debug, Subcommand)]
enum HostVerb {
    /// What a thread is: parent, model, effort, cwd, role, status, rollout, nickname.
    ReadAgent {
        /// The thread id.
        thread: String,
        #[command(flatten)]
        connect: ConnectArgs,
        /// Print the §7 fields as one JSON object (camelCase).
        #[arg(long)]
        json: bool,
    },
    /// A thread's turns, newest first: status, marker, answer, error.
    Turns {
        /// The thread id.
        thread: String,
        /// At most this many turns (0: every turn).
        #[arg(long, default_value_t = 0)]
        limit: usize,
        /// Read every item (completing turns the host answers without them).
        #[arg(long)]
        full: bool,
        #[command(flatten)]
        connect: ConnectArgs,
        /// Print `{"turns": [...]}`.
        #[arg(long)]
        json: bool,
    },
    /// Ask the host to interrupt a running turn.
    Interrupt {
        /// The thread id.
        thread: String,
        /// The turn id.
        turn: String,
        #[command(flatten)]
        connect: ConnectArgs,
        /// Print `{"acknowledgement": ...}`.
        #[arg(long)]
        json: bool,
    },
    /// The subagent an owner thread spawned for an operation.
    FindSpawn {
        /// The owner thread id.
        #[arg(long)]
        owner: String,
        /// The operation: `<call>/t<k>-a<n>` or `<call>/t<k>`.
        #[arg(long)]
        op: String,
        /// Directory holding `decisions/<owner>.jsonl` (the spawn hook's ledger).
        #[arg(long)]
        ledger_dir: Option<PathBuf>,
        /// How many of the owner's most recent turns to search.
        #[arg(long, default_value_t = agentrace_host::spawn::DEFAULT_WINDOW)]
        window: usize,
        #[command(flatten)]
        connect: ConnectArgs,
        /// Print the search as JSON (`spawn`, `others`, `windowEnded`, `warnings`).
        #[arg(long)]
        json: bool,
    },
    /// Token totals of a rollout file (the last token_count event); no host needed.
    Tokens {
        /// The rollout file.
        rollout: PathBuf,
        /// Print `{"measured": true, "total": {...}}` or `{"measured": false}`.
        #[arg(long)]
        json: bool,
    },
    /// Parse a step marker (`crw-flow-op: <call>/t<k>-a<n>` on the first line).
    Marker {
        /// The message text.
        text: String,
        /// Print `{"op": {"call", "turn", "attempt"}}` or `{"op": null}`.
        #[arg(long)]
        json: bool,
    },
}

/// How to reach the App Server.
#[derive(Debug, Args)]
struct ConnectArgs {
    /// `stdio` (spawn `codex app-server` with your CODEX_HOME), `unix://PATH` or `ws://HOST:PORT`.
    #[arg(long, default_value = "stdio")]
    connect: String,
    /// The `codex` program for `stdio` (default: `codex` on PATH).
    #[arg(long, env = "AGENTRACE_CODEX")]
    codex: Option<PathBuf>,
    /// File holding the WebSocket capability token.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Seconds to wait for each answer.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

impl ConnectArgs {
    fn endpoint(&self) -> anyhow::Result<Endpoint> {
        let token = match &self.token_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read the token file {}", path.display()))?
                    .trim()
                    .to_owned(),
            ),
            None => None,
        };
        let codex = StdioCommand::new(self.codex.clone().unwrap_or_else(|| "codex".into()));
        Ok(Endpoint::parse(&self.connect, codex, token)?)
    }

    fn options(&self) -> ClientOptions {
        ClientOptions {
            timeout: Duration::from_secs(self.timeout.max(1)),
            ..ClientOptions::default()
        }
    }
}

/// Runs one `host` verb; a "not there" answer exits 3.
pub fn run(args: HostArgs, out: &mut Out) -> anyhow::Result<ExitCode> {
    match verb(args.verb, out) {
        Ok(()) => {
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error)
            if error.chain().any(|cause| {
                cause
                    .downcast_ref::<HostError>()
                    .is_some_and(HostError::is_not_found)
            }) =>
        {
            out.flush()?;
            let mut stderr = std::io::stderr().lock();
            let _ = std::io::Write::write_fmt(&mut stderr, format_args!("error: {error:#}\n"));
            Ok(ExitCode::from(EXIT_NOT_FOUND))
        }
        Err(error) => Err(error),
    }
}

fn verb(verb: HostVerb, out: &mut Out) -> anyhow::Result<()> {
    match verb {
        HostVerb::Tokens { rollout, json } => {
            let tokens = agentrace_host::tokens(&rollout)?;
            if json {
                out.json(&tokens)?;
            } else {
                match &tokens.total {
                    Some(total) => out.line(format!("total_token_usage  {total}"))?,
                    None => out.line("unmeasured (no token_count event with info)")?,
                }
            }
        }
        HostVerb::Marker { text, json } => {
            let op = parse_marker(&text);
            if json {
                out.json(&json!({ "op": op }))?;
            } else {
                match op {
                    Some(op) => out.line(format!(
                        "{op}  (call {}, turn {}, attempt {})",
                        op.call, op.turn, op.attempt
                    ))?,
                    None => out.line("no operation")?,
                }
            }
        }
        HostVerb::ReadAgent {
            thread,
            connect,
            json,
        } => {
            let agent = with_host(
                &connect,
                |host| async move { host.read_agent(&thread).await },
            )?;
            if json {
                out.json(&agent)?;
            } else {
                print_agent(out, &agent)?;
            }
        }
        HostVerb::Turns {
            thread,
            limit,
            full,
            connect,
            json,
        } => {
            let turns = with_host(&connect, |host| async move {
                host.turns(&thread, limit, full).await
            })?;
            if json {
                out.json(&json!({ "turns": turns }))?;
            } else {
                print_turns(out, &turns)?;
            }
        }
        HostVerb::Interrupt {
            thread,
            turn,
            connect,
            json,
        } => {
            let acknowledgement = with_host(&connect, |host| async move {
                host.interrupt(&thread, &turn).await
            })?;
            if json {
                out.json(&json!({ "acknowledgement": acknowledgement }))?;
            } else {
                out.line(format!("interrupt requested: {acknowledgement}"))?;
            }
        }
        HostVerb::FindSpawn {
            owner,
            op,
            ledger_dir,
            window,
            connect,
            json,
        } => {
            let options = FindOptions { ledger_dir, window };
            let search = with_host(&connect, |host| async move {
                host.find_by_marker(&owner, &op, &options).await
            })?;
            if json {
                out.json(&search)?;
            } else {
                print_search(out, &search)?;
            }
        }
    }
    Ok(())
}

/// Connects, runs one read, and shuts the connection down whatever the read
/// gave.
fn with_host<T, F, Fut>(connect: &ConnectArgs, read: F) -> anyhow::Result<T>
where
    F: FnOnce(std::sync::Arc<Host>) -> Fut,
    Fut: std::future::Future<Output = Result<T, HostError>>,
{
    let endpoint = connect.endpoint()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let host = std::sync::Arc::new(Host::connect(&endpoint, connect.options()).await?);
        let result = read(std::sync::Arc::clone(&host)).await;
        if let Ok(host) = std::sync::Arc::try_unwrap(host) {
            host.shutdown().await;
        }
        Ok(result?)
    })
}

fn optional(value: Option<&str>) -> &str {
    value.unwrap_or("-")
}

fn print_agent(out: &mut Out, agent: &AgentInfo) -> anyhow::Result<()> {
    let rows = [
        ("thread", agent.thread_id.as_str()),
        ("parent", optional(agent.parent_thread_id.as_deref())),
        ("status", agent.status.as_str()),
        ("nickname", optional(agent.nickname.as_deref())),
        ("role", optional(agent.agent_role.as_deref())),
        ("source", optional(agent.thread_source.as_deref())),
        ("model", agent.model.as_str()),
        ("effort", agent.effort.as_str()),
        ("cwd", agent.cwd.as_str()),
        ("rollout", optional(agent.rollout_path.as_deref())),
        ("cli", agent.cli_version.as_str()),
    ];
    for (name, value) in rows {
        out.line(format!("{name:<9} {value}"))?;
    }
    Ok(())
}

fn print_turns(out: &mut Out, turns: &[TurnView]) -> anyhow::Result<()> {
    if turns.is_empty() {
        out.line("no turns")?;
    }
    for turn in turns {
        let marker = turn.marker.as_ref().map(ToString::to_string);
        out.line(format!(
            "{}  {}  marker {}  {}",
            turn.id,
            turn.status,
            optional(marker.as_deref()),
            if turn.answered {
                "answered"
            } else {
                "no answer"
            },
        ))?;
        if let Some(text) = &turn.final_text {
            let first_line = text.lines().next().unwrap_or_default();
            out.line(format!("  text   {first_line}"))?;
        }
        if let Some(error) = &turn.error_info {
            out.line(format!(
                "  error  {} ({})",
                error.message,
                optional(error.variant.as_deref())
            ))?;
        }
        if let Some(read_error) = &turn.read_error {
            out.line(format!("  unreadable items: {read_error}"))?;
        }
    }
    Ok(())
}

fn print_search(out: &mut Out, search: &SpawnSearch) -> anyhow::Result<()> {
    match &search.spawn {
        Some(spawn) => out.line(format!(
            "{}  spawned for {} by tool use {} in turn {} (via {})",
            spawn.thread_id,
            search.op,
            spawn.tool_use_id,
            spawn.turn_id,
            match spawn.via {
                Via::Ledger => "ledger",
                Via::Prompt => "prompt",
                Via::Unrecorded => "unrecorded",
            }
        ))?,
        None => out.line(format!("no spawn names {}", search.op))?,
    }
    for other in &search.others {
        out.line(format!(
            "  also {} (tool use {})",
            other.thread_id, other.tool_use_id
        ))?;
    }
    for warning in &search.warnings {
        let mut stderr = std::io::stderr().lock();
        let _ =
            std::io::Write::write_fmt(&mut stderr, format_args!("warning: {}\n", warning.message));
    }
    Ok(())
}
