//! Command-line surface: the clap definitions and the dispatch to commands.
//! Flags, JSON shapes and exit codes here are a contract scripts rely on:
//! extend them, never rename them.

use std::process::ExitCode;

use agentrace_store::Home;
use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::output::Out;
use crate::commands::samples;

/// Which agent did what, when, at what cost, and how each one ended.
///
/// agentrace records multi-agent runs of Codex and Claude Code and
/// attributes every message, tool call, turn and token to the root agent, to
/// one named subagent, or honestly to `unknown`. Runs live in
/// $AGENTRACE_HOME (default: the platform data dir, e.g.
/// ~/.local/share/agentrace).
///
/// With no command, agentrace imports what grew in your Codex and Claude
/// Code folders ($CODEX_HOME, $CLAUDE_CONFIG_DIR) and lists your newest
/// runs; when there is no history at all it records the bundled sample
/// runs so there is something to look at, and removes them once your own runs
/// are there. The first time, a large history's newest sessions are listed at
/// once and the rest is imported in the background.
///
/// Costs come from the compiled-in price database, and from
/// $AGENTRACE_HOME/prices.json for every command when you keep your own
/// prices there.
///
/// Times and days are UTC unless a zone is named: `--tz ZONE` (`usage`,
/// `runs`, `search`, `import`), or $AGENTRACE_TZ for every command (e.g.
/// `export AGENTRACE_TZ=local`).
#[derive(Debug, Parser)]
#[command(name = "agentrace", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Record a run from a file or stdin (e.g. the stdout of `codex app-server`).
    ///
    /// Prints the new run's id as the last line of stdout.
    Ingest(crate::commands::ingest::IngestArgs),
    /// List recorded runs, newest first or by cost, tokens, duration or
    /// warnings (filtered and paged through the catalog).
    Runs(crate::commands::runs::RunsArgs),
    /// Find text in the messages, reasoning and tool calls of every run.
    ///
    /// Prints `RUN #SEQUENCE TIME [AGENT] SNIPPET` per hit (matches in
    /// `[…]`), or with `--json` `{"hits": [{"runId", "sequence",
    /// "threadId", "label", "role", "timestamp", "snippet"}]}`.
    Search(crate::commands::search::SearchArgs),
    /// Make the catalog ($AGENTRACE_HOME/catalog.sqlite) anew from the run
    /// logs, then import the Codex and Claude folders again.
    Reindex(crate::commands::reindex::ReindexArgs),
    /// Show one run: summary, agent tree, the result and who produced it, counts.
    Show(crate::commands::show::ShowArgs),
    /// Print every event of a run in sequence order, final attribution applied.
    Events(crate::commands::events::EventsArgs),
    /// What each subagent and background command is doing now, or how it ended.
    ///
    /// One line per child: label, state, current operation, run number,
    /// outcome, tokens, age, last message. The end of an ingested input, or
    /// the end of a live run, settles records still live as `unknown`.
    Status(crate::commands::status::StatusArgs),
    /// Follow a run as it is recorded: events, child-work changes, warnings.
    ///
    /// Waits for the log to grow (file notifications) until the run ends or
    /// Ctrl-C; on a finished run, prints the whole story and exits.
    Attach(crate::commands::attach::AttachArgs),
    /// Send runs to an OpenTelemetry backend (`--otlp`), or write one run as
    /// a shareable file (`--html`, `--markdown`).
    ///
    /// `--otlp` sends OTLP/HTTP protobuf: one trace per run, an
    /// `invoke_agent` span per agent nested under its spawn, an
    /// `execute_tool` span per tool call; ids are derived from the run, so a
    /// second export does not duplicate. Prints `<run> <trace id>` per run.
    Export(crate::commands::export::ExportArgs),
    /// Record the bundled sample runs (Codex V1, V2 and nested captures) and list them.
    Samples(crate::commands::samples::SamplesArgs),
    /// Start an agent, record its run live, and print the root's final answer.
    ///
    /// Exits 0 when the root's turn completed, 1 when it failed, 130 when it
    /// was interrupted.
    Run {
        #[command(subcommand)]
        target: RunTarget,
    },
    /// Sit between an app-server client and its server and record every line.
    ///
    /// A transparent stdio proxy: bytes pass through unchanged and in order,
    /// stderr passes through, and the exit code is the server's.
    Tap(crate::commands::tap::TapArgs),
    /// Turn the Codex and Claude Code sessions already on disk into runs.
    ///
    /// Reads $CODEX_HOME (default ~/.codex: sessions/, archived_sessions/) and
    /// $CLAUDE_CONFIG_DIR (default ~/.claude: projects/). Incremental: an
    /// unchanged session is not read again.
    Import(crate::commands::import::ImportArgs),
    /// Follow the Codex and Claude Code sessions on disk as they are written, until Ctrl-C.
    ///
    /// Watches $CODEX_HOME/sessions and $CLAUDE_CONFIG_DIR/projects (inotify,
    /// else polling, said on stderr) and imports what each session's files
    /// gain, as `import` would: a watched session ends as an import of its
    /// finished files makes it. Prints `<run id> <status>` for each run it
    /// records or changes.
    Watch(crate::commands::watch::WatchArgs),
    /// A terminal view of every live and recent session and its agents, following them as `watch` does.
    ///
    /// One row per session with its agent tree under it: state (working,
    /// waiting on approval, ended and how), the tool running now and for how
    /// long, tokens, cost, silent-for. Keys: ↑↓/jk move, enter shows the
    /// session's events, p/s filter by provider/state, q quits. When stdout
    /// is not a terminal it prints the same rows once, as text.
    Top(crate::commands::top::TopArgs),
    /// Tokens and cost per run, per agent (own and subtree), per model, per day.
    Usage(crate::commands::usage::UsageArgs),
    /// The models in your runs with their price per million tokens, where it
    /// came from, and the models that have none.
    Prices(crate::commands::prices::PricesArgs),
    /// Claude Code hook: append the hook input on stdin to its session's run.
    ///
    /// Always exits 0, quickly, so it never breaks a Claude Code session;
    /// problems are printed on stderr as warnings.
    Hook(crate::commands::hook::HookArgs),
    /// Claude Code `statusLine` command: the session JSON on stdin, one
    /// line out (`Main 12k · Explore 53k · $0.42`).
    ///
    /// Shows the root's tokens, each live subagent's tokens and the
    /// session's cost (`≥$` a floor, `$?` unknown). Reads only what the
    /// transcripts grew by since its last call. Always exits 0; on bad
    /// input it prints nothing.
    Statusline(crate::commands::statusline::StatuslineArgs),
    /// Read a Codex App Server's threads: agent, turns, the subagent a step
    /// spawned, tokens; interrupt a turn; parse a step marker.
    ///
    /// Exits 3 when the host says the thread is not there.
    Host(crate::commands::host::HostArgs),
    /// Check a run for suspicious signs (§8 warnings), for CI pipelines.
    ///
    /// Exits 1 when an error-level warning fires (by default:
    /// done_source_not_root, helper_result_used_as_done, unattributed_done,
    /// and budget_exceeded when a budget is set).
    Check(crate::commands::check::CheckArgs),
    /// Two runs side by side: agents matched by label and role, their
    /// status, turns, tool calls, tokens, cost, duration and result, and
    /// what only one run has.
    Diff(crate::commands::diff::DiffArgs),
    /// Serve the web viewer and the HTTP API (loopback unless told otherwise).
    ///
    /// The first stdout line is `listening on http://ADDR:PORT`; the page of
    /// one run is `/runs/<id>`.
    Serve(crate::commands::serve::ServeArgs),
}

/// What `agentrace run` starts.
#[derive(Debug, Subcommand)]
enum RunTarget {
    /// Drive the real `codex app-server`: initialize, thread/start, turn/start.
    Codex(crate::commands::run_codex::RunCodexArgs),
    /// Run the real `claude -p --output-format stream-json --verbose` and record its stdout live.
    Claude(crate::commands::claude_run::RunClaudeArgs),
}


/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(Command::Hook(args)) = &cli.command {
        // Before anything that can fail: a hook never fails.
        crate::commands::hook::run(args);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(Command::Statusline(args)) = &cli.command {
        // Before anything that can fail: a status line never fails.
        crate::commands::statusline::run(args);
        return Ok(ExitCode::SUCCESS);
    }
    let home = Home::from_env().context("cannot find where runs live")?;
    if let Some(Command::Prices(args)) = &cli.command {
        if args.mends_the_database() {
            // The remedy for a kept database that cannot be read: it must
            // not fail on reading it.
            return crate::commands::prices::run(&crate::home_files::read_or_keep(&home), args, &mut Out::new()).map(|()| ExitCode::SUCCESS);
        }
    }
    // Every command prices with the home's price file, and judges run
    // records by its warning config, when it has them.
    let home = crate::home_files::read(&home)?;
    let ran = dispatch(cli.command, &home);
    // What the command's prices resolved, for the next command to know
    // (a cache: a home that cannot keep it prices as before).
    let _ = home.keep_known_prices();
    ran
}

/// Runs one command (but the hook, the status line and the mending of the
/// price database) with the home read.
fn dispatch(command: Option<Command>, home: &Home) -> anyhow::Result<ExitCode> {
    let home = home.clone();
    let mut out = Out::new();
    match command {
        Some(Command::Run {
            target: RunTarget::Codex(args),
        }) => {
            let code = crate::commands::run_codex::run(&home, args, &mut out)?;
            out.flush()?;
            return Ok(code);
        }
        Some(Command::Tap(args)) => return crate::commands::tap::run(&home, args),
        Some(Command::Import(args)) => {
            let report = crate::commands::import::run_unless_followed(&home, &args)?;
            if args.json() {
                out.json_pretty(&report)?;
            }
            // The catalog is opened again only when there are samples to
            // retire (a repeated import is a stat of every file, no more).
            if !home.placeholder_runs().is_empty() {
                crate::commands::samples::retire_placeholders(&home, &crate::catalog::synced(&home)?)?;
            }
        }
        Some(Command::Watch(args)) => return crate::commands::watch::run(&home, &args, &mut out),
        Some(Command::Top(args)) => return crate::commands::top::run(&home, &args, &mut out),
        Some(Command::Usage(args)) => crate::commands::usage::run(&home, &args, &mut out)?,
        Some(Command::Prices(args)) => crate::commands::prices::run(&home, &args, &mut out)?,
        Some(Command::Run {
            target: RunTarget::Claude(args),
        }) => {
            let code = crate::commands::claude_run::run(&home, args, &mut out)?;
            out.flush()?;
            return Ok(code);
        }
        Some(Command::Hook(_) | Command::Statusline(_)) => {}
        Some(Command::Host(args)) => return crate::commands::host::run(args, &mut out),
        Some(Command::Check(args)) => return crate::commands::check::run(&home, &args, &mut out),
        Some(Command::Diff(args)) => crate::commands::diff::run(&home, &args, &mut out)?,
        Some(Command::Serve(args)) => return crate::commands::serve::run(home, &args, &mut out),
        None => crate::commands::runs::first_command(&home, &mut out)?,
        Some(Command::Samples(args)) => samples::record_and_list(&home, &args, &mut out)?,
        Some(Command::Ingest(args)) => {
            let code = crate::commands::ingest::run(&home, args, &mut out)?;
            out.flush()?;
            return Ok(code);
        }
        Some(Command::Runs(args)) => crate::commands::runs::run(&home, &args, &mut out)?,
        Some(Command::Search(args)) => crate::commands::search::run(&home, &args, &mut out)?,
        Some(Command::Reindex(args)) => {
            let report = crate::commands::reindex::reindex(&home, &args)?;
            if args.json() {
                out.json_pretty(&report)?;
            }
        }
        Some(Command::Show(args)) => crate::commands::show::run(&home, &args, &mut out)?,
        Some(Command::Events(args)) => crate::commands::events::run(&home, &args, &mut out)?,
        Some(Command::Status(args)) => crate::commands::status::run(&home, &args, &mut out)?,
        Some(Command::Attach(args)) => return crate::commands::attach::run(&home, &args, &mut out),
        Some(Command::Export(args)) => crate::commands::export::run(&home, args, &mut out)?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
