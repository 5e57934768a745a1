//! `agentrace hook`: a Claude Code command hook. Reads one hook input (JSON
//! on stdin), appends it to its session's run, and always exits 0 quickly,
//! so it can never break a user's Claude Code session.
//!
//! An input that is empty, not JSON or names no `session_id` belongs to no
//! session: it is refused with a `warning:` and recorded nowhere, so a
//! stray call never leaves a run that stays `running`.
//!
//! Which run: `--run-id`, else `$AGENTRACE_RUN_ID` (set by `agentrace run
//! claude` for the CLI it starts, so hooks land in the live run), else the
//! newest Claude run whose root is the input's `session_id`, else a new run
//! `claude-<session_id>`.
//!
//! How: the input goes first to the store's spool,
//! `<home>/hooks/<run-id>.jsonl`, as one line
//! `{"t": <unix ms>, "input": <the input, verbatim>}` (one append, so
//! concurrent hooks never interleave; see `Home::spool_hook_input`). Then
//! the hook tries the run's lock for a moment; with it, it moves the
//! spool's lines into the run log. Without it (a live `run claude` or
//! another hook holds it), it leaves them: the holder drains the spool
//! before it lets go.

use std::io::{Read as _, Write as _};
use std::time::Duration;

use agentrace_core::decode::{visit_leading_scalars, without_byte_order_mark, Members};
use agentrace_core::model::RunId;
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_store::{validate_run_id, Home, RunLock};
use anyhow::Context as _;
use clap::Args;
use serde_json::Value;

use crate::recording::{Cadence, Recording, Setup};
use crate::sources::claude_ingest::run_of_session;
use crate::clock::now;
use crate::run_ids::new_run_id;

/// The largest hook input read (a bigger one is cut and recorded as such).
const MAX_INPUT: u64 = 64 * 1024 * 1024;
/// How long a hook waits for the run's lock before leaving its input spooled.
const LOCK_WAIT: Duration = Duration::from_millis(500);
/// The environment variable naming the run hooks append to.
pub const RUN_ID_ENV: &str = "AGENTRACE_RUN_ID";

/// Arguments of `agentrace hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The run to append to (default: `AGENTRACE_RUN_ID`, else the run of the
    /// input's session, else a new run `claude-<session_id>`).
    #[arg(long)]
    run_id: Option<String>,
}

/// Runs `agentrace hook`; every problem is a `warning:` on stderr, never a
/// failure.
pub fn run(args: &HookArgs) {
    if let Err(error) = record(args) {
        let _ = writeln!(
            std::io::stderr().lock(),
            "warning: agentrace hook: {error:#}"
        );
    }
}

fn record(args: &HookArgs) -> anyhow::Result<()> {
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_INPUT)
        .read_to_end(&mut input)
        .context("cannot read the hook input on stdin")?;
    let cut = input.len() as u64 >= MAX_INPUT;
    // A byte order mark (a wrapper on another system, an editor's
    // encoding) made the input "not JSON" and dropped it: read past, as
    // every line decoder does, and spooled without it.
    let input = without_byte_order_mark(&input);
    let session = session_of(input, cut)?;
    let home = Home::from_env().context("cannot find where runs live")?;
    // Priced and judged as every command does; a hook never fails, so a
    // bad price file or warning config leaves the database's and none.
    let home = crate::home_files::read_or_keep(&home);
    let (id, live) = run_id(&home, args, &session)?;
    home.spool_hook_input(&id, now(), input)?;
    // Inside `agentrace run claude` the live run holds the lock until the
    // end and drains the spool then: waiting would only slow the session.
    let wait = if live { Duration::ZERO } else { LOCK_WAIT };
    if let Some(_lock) = RunLock::acquire(&home, &id, wait)? {
        let setup = Setup::new(Format::ClaudeHook).cadence(Cadence::EachStatus);
        let mut recording = Recording::open(&home, &id, &setup, now)?;
        drain_spool(&home, &id, &mut recording)?;
        recording.finish(None)?;
    }
    Ok(())
}

/// The session a hook input belongs to: its `session_id`, from the whole
/// document, or from the leading members of an input cut at [`MAX_INPUT`]
/// (Claude Code writes `session_id` first). An input that names none is
/// refused: it belongs to no session, and recording it would only leave a
/// run that never ends.
fn session_of(input: &[u8], cut: bool) -> anyhow::Result<String> {
    const SHAPE: &str = "a hook input is a JSON object with a `session_id`";
    if input.trim_ascii().is_empty() {
        anyhow::bail!("no hook input on stdin, nothing recorded ({SHAPE})");
    }
    let session = match serde_json::from_slice::<Value>(input) {
        Ok(document) => document
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        Err(_) if cut => {
            let mut found = None;
            visit_leading_scalars(input, Members::Named(&["session_id"]), &mut |_, raw| {
                found = serde_json::from_str::<String>(raw).ok();
                false
            });
            found
        }
        Err(_) => anyhow::bail!("the hook input on stdin is not JSON, nothing recorded ({SHAPE})"),
    };
    session
        .filter(|session| !session.is_empty())
        .with_context(|| format!("the hook input on stdin names no session, nothing recorded ({SHAPE})"))
}

/// The run to append to, and whether a live `run claude` named it.
fn run_id(home: &Home, args: &HookArgs, session: &str) -> anyhow::Result<(RunId, bool)> {
    if let Some(given) = &args.run_id {
        return Ok((validate_run_id(given)?, false));
    }
    if let Some(live) = std::env::var(RUN_ID_ENV).ok().filter(|id| !id.is_empty()) {
        return Ok((validate_run_id(&live)?, true));
    }
    if let Some(id) = run_of_session(home, session)? {
        return Ok((id, false));
    }
    let id = validate_run_id(&format!("claude-{session}")).unwrap_or_else(|_| new_run_id());
    Ok((id, false))
}

/// Moves every spooled hook input of `id` into `recording`. The caller
/// holds the run's lock.
pub fn drain_spool(home: &Home, id: &RunId, recording: &mut Recording) -> anyhow::Result<()> {
    let Some(taken) = home.take_hook_spool(id)? else {
        return Ok(());
    };
    recording.feed(&SourcePart::Main, taken.bytes())?;
    taken.finish()?;
    Ok(())
}
