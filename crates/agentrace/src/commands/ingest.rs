//! `agentrace ingest`: the I/O shell around the recorder for finished input.
//! Reads bytes, assembles bounded lines, stamps time, detects the format,
//! and appends every envelope to the store as it is produced. Claude Code
//! transcripts on disk are recorded one run per session, continuing the run
//! that already holds the session (so transcripts add what stdout lacked,
//! once), as `import` adds them to a run recorded live.

use crate::run_ids::new_run_id;
use crate::clock::now;
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;
use std::time::Duration;

use agentrace_core::lines::{AssembledLine, LineAssembler};
use agentrace_core::model::{Envelope, Event, EventBody, RunId, RunStatus, SessionEndReason, Timestamp};
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_core::state::RunSummary;
use agentrace_core::InputLine;
use agentrace_store::{validate_run_id, Home, RunLock};
use anyhow::{bail, Context as _};
use clap::ValueEnum;
use base64::Engine as _;
use serde::Deserialize;

use crate::recording::{Cadence, Finished, Recording, Setup, TextsTo};
use crate::sources::claude_ingest::{claude_config_dir, claude_start, find_sessions, first_line, run_of_session, SessionFiles};

/// Input formats: the values of `ingest --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// JSON-RPC lines printed by `codex app-server` on stdout.
    CodexAppServer,
    /// An agentrace run log: its frames are attributed again from scratch
    /// (both directions kept), e.g. to check a live run against a replay.
    AgentraceLog,
    /// Claude Code stream-json (`claude -p --output-format stream-json
    /// --verbose`), or the messages the Agent SDK yields.
    ClaudeStream,
    /// Claude Code transcripts: a session file (its subagent files are read
    /// too), a project folder or a `projects` folder; joins the run that
    /// already holds the session.
    ClaudeTranscript,
    /// Claude Code hook inputs, one JSON document per line.
    ClaudeHook,
    /// The stdout of `codex exec --json`; the rollouts of its session are
    /// joined in from the Codex home (`--codex-home`).
    CodexExec,
}

/// Arguments of `agentrace ingest`.
#[derive(Debug, clap::Args)]
pub struct IngestArgs {
    /// Input format; detected from the first lines when omitted.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Id for the new run (default: `run-<ulid>`).
    #[arg(long)]
    run_id: Option<String>,
    /// Do not print the summary on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// For a `codex exec --json` stream: the Codex home whose rollouts of
    /// that session are joined in (default: CODEX_HOME, else ~/.codex).
    #[arg(long, value_name = "DIR")]
    codex_home: Option<std::path::PathBuf>,
    #[command(flatten)]
    secrets: crate::secrets::KeepSecretsArg,
    /// The file to read, or `-` for stdin; for Claude transcripts also a
    /// project or `projects` folder (default: `$CLAUDE_CONFIG_DIR`, else
    /// `~/.claude`).
    input: Option<String>,
}

/// Runs `agentrace ingest`: prints each run id recorded (the last stdout
/// line); a `codex exec` stream exits as `run codex --exec` would have.
pub fn run(home: &Home, args: IngestArgs, out: &mut crate::output::Out) -> anyhow::Result<std::process::ExitCode> {
    args.secrets.apply();
    let options = IngestOptions {
        format: args.format,
        run_id: args.run_id,
        quiet: args.quiet,
        codex_home: args.codex_home,
    };
    if wants_transcripts(args.input.as_deref(), args.format) {
        for id in ingest_transcripts(home, args.input.as_deref(), &options)? {
            out.line(id.as_str())?;
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let input = args.input.as_deref().context("no input given\nhint: pass a file, or `-` for stdin")?;
    let ingested = ingest_path(home, input, &options)?;
    out.line(ingested.id.as_str())?;
    Ok(exec_exit_code(&ingested.summary).unwrap_or(std::process::ExitCode::SUCCESS))
}

/// True when `ingest` should read Claude transcripts from disk: asked for,
/// a folder given, or a file whose first line is a transcript line.
pub fn wants_transcripts(input: Option<&str>, format: Option<FormatArg>) -> bool {
    match (format, input) {
        (Some(FormatArg::ClaudeTranscript), Some("-")) => false,
        (Some(FormatArg::ClaudeTranscript), _) => true,
        (Some(_), _) => false,
        (None, Some("-") | None) => false,
        (None, Some(path)) => {
            let path = Path::new(path);
            path.is_dir() || first_line(path).is_some_and(|line| line.get("sessionId").is_some())
        }
    }
}

/// Lines read ahead to detect the format and find the first frame time.
const LOOKAHEAD_LINES: usize = 256;

/// What `ingest` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct IngestOptions {
    /// The format, when given.
    pub format: Option<FormatArg>,
    /// The run id, when given.
    pub run_id: Option<String>,
    /// No summary on stderr.
    pub quiet: bool,
    /// Where a `codex exec` stream's rollouts are (default: CODEX_HOME,
    /// else ~/.codex).
    pub codex_home: Option<std::path::PathBuf>,
}

/// A run ingested: its id and the summary its record was written from.
#[derive(Debug, Clone)]
pub struct Ingested {
    /// The run.
    pub id: RunId,
    /// The run as recorded (what its record says, warnings aside).
    pub summary: RunSummary,
}

/// Ingests a file, or stdin for `-`.
pub fn ingest_path(home: &Home, input: &str, options: &IngestOptions) -> anyhow::Result<Ingested> {
    if input == "-" {
        // Stdin redirected from a file ends like one; a pipe may be live.
        let ends = if stdin_is_a_file() { Ends::Surely } else { Ends::Maybe };
        return ingest_reader(home, "<stdin>", io::stdin(), ends, options);
    }
    let file = File::open(input).with_context(|| format!("cannot open {input}"))?;
    ingest_reader(home, input, file, Ends::Surely, options)
}

/// Whether an input is known to end soon (a file), or may go on for as
/// long as whatever writes it runs (a pipe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    /// A file, or bytes in hand.
    Surely,
    /// A pipe or a terminal.
    Maybe,
}

/// Whether stdin is a regular file (the shell redirected one to it).
fn stdin_is_a_file() -> bool {
    use nix::sys::stat::SFlag;
    nix::sys::stat::fstat(io::stdin()).is_ok_and(|stat| SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG)
}

struct Chunks<R> {
    reader: R,
    assembler: LineAssembler,
    buffer: Vec<u8>,
    done: bool,
    name: String,
}

impl<R: Read> Chunks<R> {
    /// The next batch of whole lines; empty only at the end.
    fn next_lines(&mut self) -> anyhow::Result<Vec<AssembledLine>> {
        loop {
            if self.done {
                return Ok(Vec::new());
            }
            let read = loop {
                match self.reader.read(&mut self.buffer) {
                    Ok(read) => break read,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => {
                        return Err(error).with_context(|| {
                            format!("cannot read {} after its last whole line", self.name)
                        })
                    }
                }
            };
            if read == 0 {
                self.done = true;
                return Ok(self.assembler.finish().into_iter().collect());
            }
            let lines = self.assembler.push(&self.buffer[..read]);
            if !lines.is_empty() {
                return Ok(lines);
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TimeProbe {
    #[serde(default)]
    emitted_at_ms: Option<i64>,
    /// Claude Code lines: RFC 3339.
    #[serde(default)]
    timestamp: Option<serde_json::Value>,
    /// A hook logger's record (`{"t": …, "input": …}`): when it logged the
    /// hook input, which has no time of its own.
    #[serde(default)]
    t: Option<serde_json::Value>,
}

/// A line's own time, as the attributor dates its events: a run begins at
/// its first line's, not at the ingest (a run of hook inputs ingested
/// later started after it ended).
fn frame_time(line: &AssembledLine) -> Option<Timestamp> {
    let probe = serde_json::from_slice::<TimeProbe>(&line.bytes).ok()?;
    probe
        .emitted_at_ms
        .map(Timestamp::from_millis)
        .or_else(|| probe.timestamp.as_ref().and_then(serde_json::Value::as_str).and_then(Timestamp::parse))
        .or_else(|| probe.t.as_ref().and_then(serde_json::Value::as_f64).and_then(Timestamp::from_logger_time))
}

/// Ingests any reader.
pub fn ingest_reader(
    home: &Home,
    name: &str,
    reader: impl Read + Send,
    ends: Ends,
    options: &IngestOptions,
) -> anyhow::Result<Ingested> {
    let id = match &options.run_id {
        Some(text) => validate_run_id(text)?,
        None => new_run_id(),
    };
    crate::home_files::warm_prices_beside(home.prices());
    let mut chunks = Chunks {
        reader,
        assembler: LineAssembler::default(),
        buffer: vec![0; 256 * 1024],
        done: false,
        name: name.to_owned(),
    };
    // Read ahead until the first frame that carries its own time: lines
    // before it (responses carry none) take that time, not the ingest time.
    let mut ahead: Vec<AssembledLine> = Vec::new();
    let mut first_time = None;
    while first_time.is_none() && ahead.len() < LOOKAHEAD_LINES {
        let lines = chunks.next_lines()?;
        if lines.is_empty() {
            break;
        }
        for line in lines {
            if first_time.is_none() {
                first_time = frame_time(&line);
            }
            ahead.push(line);
        }
    }
    let detected = match options.format {
        Some(FormatArg::CodexAppServer) => Detected::Stream(Format::CodexAppServer),
        Some(FormatArg::AgentraceLog) => Detected::Log,
        Some(FormatArg::ClaudeStream) => Detected::Stream(Format::ClaudeStream),
        Some(FormatArg::ClaudeTranscript) => Detected::Stream(Format::ClaudeTranscript),
        Some(FormatArg::ClaudeHook) => Detected::Stream(Format::ClaudeHook),
        Some(FormatArg::CodexExec) => Detected::Stream(Format::CodexExec),
        None => detect(name, &ahead)?,
    };
    // What a forced format's lines look like, for the hint if it reads
    // none of them.
    let looked = options.format.map(|_| looks(&ahead));
    let format = match detected {
        Detected::Stream(format) => format,
        Detected::Log => return replay(home, name, id, ahead, chunks, options),
    };
    if home.exists(&id) {
        bail!("run {id} already exists; pick another --run-id");
    }
    // A `codex exec` stream names no times: its session's rollouts do.
    let exec_files = match format {
        Format::CodexExec => Some(exec_rollouts(&ahead, options)?),
        Format::CodexAppServer | Format::ClaudeStream | Format::ClaudeTranscript | Format::CodexRollout | Format::ClaudeHook => None,
    };
    let first_time = first_time.or_else(|| {
        exec_files
            .as_ref()
            .filter(|files| !files.is_empty())
            .map(|files| crate::sources::rollouts::codex_start(files))
    });
    let start = first_time.unwrap_or_else(now);
    // Frames without a time of their own take the last one seen.
    let setup = Setup::new(format).texts(TextsTo::Catalog);
    let mut session = Recording::create(home, &id, &setup, start, None)?;
    if ends == Ends::Surely {
        // The catalog's write lock is held while it is read: not for a
        // pipe that may run for hours.
        session.write_text_early();
    }
    // The lines read ahead go to the reading thread too: fed here, the
    // first one priced waited for the price database (decoded beside,
    // about 50 ms) before that thread was even started.
    let mut ahead = Some(ahead);
    let mut fed = 0u64;
    session.lines_beside(&SourcePart::Main, || {
        let lines = match ahead.take() {
            Some(lines) if !lines.is_empty() => lines,
            _ => chunks.next_lines()?,
        };
        fed += lines.iter().filter(|line| !agentrace_core::decode::is_blank(&line.bytes)).count() as u64;
        Ok(lines)
    })?;
    if let Some(files) = &exec_files {
        session.join_rollouts(files)?;
    }
    // The input ended, and with it the session.
    let Finished { summary, recorder, bad, .. } = session.finish(Some(SessionEndReason::EndOfInput))?;
    if bad.count > 0 {
        eprintln!(
            "warning: {} undecodable line{} in {name}, kept raw and counted:",
            bad.count,
            if bad.count == 1 { "" } else { "s" }
        );
        for (line, reason) in &bad.named {
            eprintln!("  {name}:{line}: {reason}");
        }
        if bad.count > bad.named.len() as u64 {
            eprintln!("  … and {} more", bad.count - bad.named.len() as u64);
        }
        eprintln!("hint: `agentrace events {id} --raw` shows each one as read");
    }
    // Rollouts joined to a `codex exec` stream were read: its thread was
    // found.
    let joined = exec_files.as_ref().is_some_and(|files| !files.is_empty());
    let understood = joined || !nothing_understood(name, &id, format, fed, &summary, looked);
    if !options.quiet && !understood {
        eprintln!("recorded {id}, nothing in it understood: {} events, 0 top-level agents", summary.counts.events);
    } else if !options.quiet {
        let agents = recorder.state().agents();
        eprintln!(
            "recorded {id}: {} {}, {} events, {} top-level agent{}",
            serde_json::to_value(summary.provider)
                .ok()
                .and_then(|value| value.as_str().map(str::to_owned))
                .unwrap_or_default(),
            status_word(summary.status),
            summary.counts.events,
            agents.len(),
            if agents.len() == 1 { "" } else { "s" },
        );
    }
    // The run's state is freed beside (the process may end first): piece
    // by piece, the attributor's and the book's maps of a 40 MB stream took
    // 2.5 ms of its end.
    crate::parallel::beside(move || drop(recorder));
    Ok(Ingested { id, summary })
}

fn status_word(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Running => "running (no root turn ended)",
        RunStatus::Done => "done",
        RunStatus::Failed => "failed",
        RunStatus::Interrupted => "interrupted",
    }
}

/// What the first lines look like.
enum Detected {
    /// Provider output of this format.
    Stream(Format),
    /// An agentrace run log.
    Log,
}

/// Attributes the frames of an agentrace run log again, from scratch: each
/// envelope's `raw` with its direction and time, derived envelopes skipped
/// (they are derived anew).
fn replay<R: Read>(
    home: &Home,
    name: &str,
    id: RunId,
    ahead: Vec<AssembledLine>,
    mut chunks: Chunks<R>,
    options: &IngestOptions,
) -> anyhow::Result<Ingested> {
    // Read as the store reads a log: an imported run's v3 lines expand to
    // v2 envelopes with the definitions before them.
    let mut decoder = agentrace_store::LineDecoder::new(id.clone());
    let mut parse = move |line: &AssembledLine| decoder.read(&line.bytes, line.line_number);
    let mut ahead_decoder = agentrace_store::LineDecoder::new(id.clone());
    let started = ahead
        .iter()
        .filter_map(|line| ahead_decoder.decode(&line.bytes, line.line_number))
        .find_map(|envelope| match envelope.event {
            EventBody::Known(Event::RunStarted { source, .. }) => {
                Some((source, envelope.timestamp))
            }
            _ => None,
        });
    let (source, start) = started.unwrap_or((agentrace_core::model::Source::CodexAppServer, now()));
    if home.exists(&id) {
        bail!("run {id} already exists; pick another --run-id");
    }
    // A replay is a run of its own: the trace context it was recorded
    // under is the first run's.
    let setup = Setup::new(replay_format(source)).source(source).without_traceparent().texts(TextsTo::Catalog);
    let mut session = Recording::create(home, &id, &setup, start, None)?;
    let mut frames = 0u64;
    let mut skipped = 0u64;
    let mut parts = ReplayParts::new(source);
    // How the replayed log's session ended, if it said: the replay ends the
    // same way (a live run's exit, not the end of this input).
    let mut ended = None;
    // An imported run's frames are read from its sources (a frame whose
    // source is gone is not replayed).
    let mut sources = agentrace_store::raw_ref::Resolver::for_log(std::path::Path::new(name));
    let mut handle = |line: &AssembledLine, session: &mut Recording| -> anyhow::Result<()> {
        if agentrace_core::decode::is_blank(&line.bytes) {
            return Ok(());
        }
        let mut envelope = match parse(line) {
            agentrace_store::LogLine::Envelope(envelope) => *envelope,
            agentrace_store::LogLine::Definition => return Ok(()),
            agentrace_store::LogLine::Skipped => {
                skipped += 1;
                return Ok(());
            }
        };
        if let EventBody::Known(Event::SessionEnded { reason }) = &envelope.event {
            ended = Some((*reason, envelope.timestamp));
        }
        if envelope.raw.is_none() {
            envelope.raw = sources.frame(&envelope).ok().flatten();
        }
        let Some(raw) = &envelope.raw else {
            return Ok(());
        };
        let bytes = original_bytes(&envelope, raw.get());
        let part = parts.of(&envelope, &bytes);
        frames += 1;
        session.frame(&part, &InputLine {
            bytes: &bytes,
            line_number: frames,
            observed_at: envelope.timestamp,
            direction: envelope.direction,
            truncated_from: None,
        })
    };
    for line in &ahead {
        handle(line, &mut session)?;
    }
    loop {
        let lines = chunks.next_lines()?;
        if lines.is_empty() {
            break;
        }
        for line in &lines {
            handle(line, &mut session)?;
        }
    }
    let summary = match ended {
        Some((reason, at)) => session.finish_at(reason, at)?,
        None => session.finish(Some(SessionEndReason::EndOfInput))?,
    }
    .summary;
    if skipped > 0 {
        eprintln!("warning: {skipped} lines of {name} are not run-log envelopes and were skipped");
        if frames == 0 {
            if let Some(hint) = format_hint(name, FormatArg::AgentraceLog, &looks(&ahead)) {
                eprintln!("{hint}");
            }
        }
    }
    if !options.quiet {
        eprintln!("replayed {frames} frames of {name} as {id}");
    }
    Ok(Ingested { id, summary })
}

/// The bytes a frame had on the wire: undecodable lines were kept as a
/// string (and as base64 when they were not UTF-8).
fn original_bytes(envelope: &Envelope, raw: &str) -> Vec<u8> {
    if let EventBody::Known(Event::Unknown {
        kind, raw_base64, ..
    }) = &envelope.event
    {
        if kind == agentrace_core::model::UNDECODABLE {
            if let Some(bytes) = raw_base64
                .as_ref()
                .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok())
            {
                return bytes;
            }
            if let Ok(text) = serde_json::from_str::<String>(raw) {
                return text.into_bytes();
            }
        }
    }
    raw.as_bytes().to_vec()
}

/// The attributor a replayed log's frames go through, by its source.
fn replay_format(source: agentrace_core::model::Source) -> Format {
    use agentrace_core::model::Source;
    match source {
        // One attributor reads every Claude source.
        Source::ClaudeStream | Source::ClaudeTranscript | Source::ClaudeHook => {
            Format::ClaudeStream
        }
        // Read as an app-server stream, an imported Codex session's log had
        // no agent at all (every rollout line an unknown frame), and a
        // `codex exec` run's lost its root.
        Source::CodexRollout => Format::CodexRollout,
        Source::CodexExec => Format::CodexExec,
        Source::CodexAppServer | Source::CodexRun | Source::CodexTap | Source::Legacy => Format::CodexAppServer,
    }
}

/// Which part of its source each replayed frame was read from, so that it
/// goes through the attributor as the recording fed it: a Codex rollout is
/// one thread's file, a Claude subagent's transcript and metadata are
/// told by their names, and a `codex exec` run's joined rollout lines are
/// not its stream. Fed all as one stream, a subagent's metadata was an
/// unknown frame, and a rollout's lines were attributed to nobody.
struct ReplayParts {
    source: agentrace_core::model::Source,
    /// The file number of each rollout seen, by its path (or, in a log
    /// whose frames name no file, by the thread its lines were given to:
    /// a rollout is one thread's).
    files: HashMap<String, u32>,
    /// The file seen last for the first time.
    newest: Option<u32>,
}

impl ReplayParts {
    fn new(source: agentrace_core::model::Source) -> Self {
        Self { source, files: HashMap::new(), newest: None }
    }

    /// The part the frame of `envelope` (its bytes `bytes`) was read from.
    fn of(&mut self, envelope: &Envelope, bytes: &[u8]) -> SourcePart {
        use agentrace_core::model::Source;
        match self.source {
            Source::ClaudeTranscript => match (&envelope.raw_ref, &envelope.event) {
                (Some(source), _) => crate::sources::claude_ingest::part_of_file(Path::new(&source.path)),
                // A log whose frames name no file: a subagent's metadata is
                // told by the event the recording made of it, which names
                // the agent its file did (a subagent's transcript lines
                // name their agent themselves).
                (None, EventBody::Known(Event::ItemCompleted { item_type, item_id: Some(agent), .. })) if item_type == "subagentMeta" => {
                    SourcePart::AgentMeta { agent_id: agent.as_str().to_owned() }
                }
                (None, _) => SourcePart::Main,
            },
            Source::CodexRollout => self.rollout(envelope),
            Source::CodexExec => {
                let streamed = serde_json::from_slice::<serde_json::Value>(bytes)
                    .is_ok_and(|value| agentrace_wire::codex_exec::is_exec_event(&value));
                if streamed {
                    SourcePart::Main
                } else {
                    self.rollout(envelope)
                }
            }
            Source::ClaudeStream | Source::ClaudeHook | Source::CodexAppServer | Source::CodexRun | Source::CodexTap | Source::Legacy => SourcePart::Main,
        }
    }

    /// The rollout a line was read from, numbered as first seen. A line
    /// that names no file (a live `codex exec` run keeps its frames, not
    /// where they were read) and was given to no thread goes to the newest
    /// file: such lines are a child's copy of its parent's history, which
    /// its rollout holds right after its own first line, and which the
    /// reading's order (by the times each file has named) keeps there,
    /// though lines of other files of the same instant may come between.
    /// On a file of their own, the copy's first line (the parent's
    /// `session_meta`) gave every line of it to the parent; with the line
    /// before, a copy went to whichever file wrote at that instant.
    fn rollout(&mut self, envelope: &Envelope) -> SourcePart {
        let key = match (&envelope.raw_ref, &envelope.actor.thread_id, self.newest) {
            (Some(source), _, _) => format!("path {}", source.path),
            (None, Some(thread), _) => format!("thread {thread}"),
            (None, None, Some(newest)) => return SourcePart::File { number: newest },
            (None, None, None) => "unknown".to_owned(),
        };
        let next = u32::try_from(self.files.len()).unwrap_or(u32::MAX);
        let number = *self.files.entry(key).or_insert_with(|| {
            self.newest = Some(next);
            next
        });
        SourcePart::File { number }
    }
}

/// The rollouts of the session a `codex exec` stream's `thread.started`
/// names (in the lines read ahead), from the Codex home; none, with a
/// warning, when there are none to join.
fn exec_rollouts(
    ahead: &[AssembledLine],
    options: &IngestOptions,
) -> anyhow::Result<Vec<crate::sources::rollouts::RolloutHead>> {
    use crate::commands::run_codex_exec::{codex_home_of, session_rollouts};
    let root = ahead.iter().find_map(|line| {
        let value = serde_json::from_slice::<serde_json::Value>(&line.bytes).ok()?;
        match agentrace_wire::codex_exec::ExecEvent::from_value(&value) {
            agentrace_wire::codex_exec::ExecEvent::ThreadStarted { thread_id } => Some(thread_id),
            _ => None,
        }
    });
    let Some(root) = root else {
        eprintln!("warning: the stream names no thread (no thread.started): no rollout can be joined");
        return Ok(Vec::new());
    };
    let Some(dir) = codex_home_of(options.codex_home.as_deref()) else {
        eprintln!("warning: no Codex home (neither --codex-home, CODEX_HOME nor HOME): helpers are not known");
        return Ok(Vec::new());
    };
    let files = session_rollouts(&dir, &root)?;
    if files.is_empty() {
        eprintln!(
            "warning: no rollout of thread {root} under {}: helpers and the root's tokens are not known\nhint: pass --codex-home DIR, the CODEX_HOME codex used",
            dir.display()
        );
    }
    Ok(files)
}

/// The exit code of an ingested `codex exec` run, as `run codex --exec`
/// gives it (none for other sources: their ingest succeeded). Read from the
/// summary the ingest ended with: folding the log again to learn it was a
/// quarter of a 40 MB ingest.
pub fn exec_exit_code(summary: &RunSummary) -> Option<std::process::ExitCode> {
    if summary.source != agentrace_core::model::Source::CodexExec {
        return None;
    }
    Some(match summary.status {
        RunStatus::Done => std::process::ExitCode::SUCCESS,
        RunStatus::Interrupted => std::process::ExitCode::from(130),
        RunStatus::Failed | RunStatus::Running => std::process::ExitCode::FAILURE,
    })
}

/// What the first lines look like.
enum Looks {
    /// Input `ingest` reads.
    Readable(Detected),
    /// Lines of a Codex rollout, which `import` reads with the rest of its
    /// session.
    CodexRollout,
    /// None it reads: the first problem (`line N: why`).
    Unreadable(String),
    /// Nothing but blank lines.
    Empty,
}

/// Detects the input format from the first lines.
fn detect(name: &str, lines: &[AssembledLine]) -> anyhow::Result<Detected> {
    match looks(lines) {
        Looks::Readable(detected) => Ok(detected),
        // Read as any format it would be a run of unknown frames.
        Looks::CodexRollout => bail!("{name} is a Codex rollout, which ingest does not read\n{}", rollout_hint(name)),
        Looks::Unreadable(problem) => bail!(
            "cannot detect the format of {name} ({problem})\nhint: pass --format {}, whichever it is",
            FormatArg::value_variants().iter().map(|format| format_arg_name(*format)).collect::<Vec<_>>().join(", ")
        ),
        Looks::Empty => bail!("{name} is empty: nothing to record"),
    }
}

/// How to read a Codex rollout: `import` from the Codex home that holds
/// it (the folder above `sessions/`), which reads its session whole.
fn rollout_hint(name: &str) -> String {
    let file = Some(name).filter(|name| *name != "<stdin>");
    let home = file.and_then(|name| std::path::absolute(name).ok()).and_then(|path| {
        path.ancestors()
            .skip(1)
            .find(|folder| folder.file_name().is_some_and(|folder| folder == "sessions" || folder == "archived_sessions"))
            .and_then(Path::parent)
            .map(Path::to_path_buf)
    });
    match home {
        Some(home) => format!("hint: `agentrace import --codex-home {}` records its session", home.display()),
        None => "hint: `agentrace import --codex-home DIR` records its session, DIR being the Codex home it was written in (the folder holding `sessions/`)".to_owned(),
    }
}

/// The name `--format` gives a format.
fn format_arg_name(format: FormatArg) -> String {
    format.to_possible_value().map(|value| value.get_name().to_owned()).unwrap_or_default()
}

/// The `--format` of a format `ingest` reads; none for rollouts, which
/// only `import` reads.
fn format_arg(format: Format) -> Option<FormatArg> {
    match format {
        Format::CodexAppServer => Some(FormatArg::CodexAppServer),
        Format::ClaudeStream => Some(FormatArg::ClaudeStream),
        Format::ClaudeTranscript => Some(FormatArg::ClaudeTranscript),
        Format::ClaudeHook => Some(FormatArg::ClaudeHook),
        Format::CodexExec => Some(FormatArg::CodexExec),
        Format::CodexRollout => None,
    }
}

/// The hint for input read as `forced` that looks like something else:
/// how to read it as what it looks like. None when it looks like nothing
/// else.
fn format_hint(name: &str, forced: FormatArg, looked: &Looks) -> Option<String> {
    let detected = match looked {
        Looks::Readable(Detected::Log) => FormatArg::AgentraceLog,
        Looks::Readable(Detected::Stream(format)) => format_arg(*format)?,
        Looks::CodexRollout => return Some(rollout_hint(name)),
        Looks::Unreadable(_) | Looks::Empty => return None,
    };
    (detected != forced).then(|| {
        let detected = format_arg_name(detected);
        format!("hint: it reads as {detected}: leave out --format, or pass --format {detected}")
    })
}

/// Says so on stderr when no line of `fed` (non-blank lines) was understood
/// as `format` (every one an unknown frame or undecodable): the run keeps
/// them, but it is no success. `looked` is what the lines look like when
/// the format was forced. True when it said so.
fn nothing_understood(name: &str, id: &RunId, format: Format, fed: u64, summary: &RunSummary, looked: Option<Looks>) -> bool {
    let counts = &summary.counts;
    if fed == 0 || counts.unknown_frames + counts.undecoded_lines < fed {
        return false;
    }
    let read_as = format_arg(format).map_or_else(|| "codex-rollout".to_owned(), format_arg_name);
    eprintln!(
        "warning: no line of {name} was understood as {read_as}: its {fed} line{} are kept raw in {id} ({} unknown frame{}, {} undecodable)",
        if fed == 1 { "" } else { "s" },
        counts.unknown_frames,
        if counts.unknown_frames == 1 { "" } else { "s" },
        counts.undecoded_lines,
    );
    let hint = match (format_arg(format), &looked) {
        (Some(forced), Some(looked)) => format_hint(name, forced, looked),
        _ => None,
    };
    eprintln!("{}", hint.unwrap_or_else(|| format!("hint: `agentrace events {id} --raw` shows each line as read")));
    true
}

/// What the first lines look like.
fn looks(lines: &[AssembledLine]) -> Looks {
    let mut first_problem = None;
    for line in lines {
        if agentrace_core::decode::is_blank(&line.bytes) {
            continue;
        }
        let value = match serde_json::from_slice::<serde_json::Value>(&line.bytes) {
            Ok(value) => value,
            Err(error) => {
                first_problem.get_or_insert_with(|| format!("line {}: {error}", line.line_number));
                continue;
            }
        };
        let Some(object) = value.as_object() else {
            first_problem
                .get_or_insert_with(|| format!("line {}: not a JSON object", line.line_number));
            continue;
        };
        // A v2 envelope, or an imported run's v3 line or definition.
        if (object.contains_key("version") && object.contains_key("runId"))
            || object.get("v").and_then(serde_json::Value::as_u64) == Some(3)
        {
            return Looks::Readable(Detected::Log);
        }
        if object.contains_key("method")
            || (object.contains_key("id")
                && (object.contains_key("result") || object.contains_key("error")))
        {
            return Looks::Readable(Detected::Stream(Format::CodexAppServer));
        }
        let hook = |value: &serde_json::Value| value.get("hook_event_name").is_some();
        if hook(&value) || object.get("input").is_some_and(hook) {
            return Looks::Readable(Detected::Stream(Format::ClaudeHook));
        }
        if object.contains_key("sessionId") {
            return Looks::Readable(Detected::Stream(Format::ClaudeTranscript));
        }
        if object.get("type").is_some() && object.contains_key("session_id") {
            return Looks::Readable(Detected::Stream(Format::ClaudeStream));
        }
        if agentrace_wire::codex_exec::is_exec_event(&value) {
            return Looks::Readable(Detected::Stream(Format::CodexExec));
        }
        // A rollout line: `{"timestamp", "type", "payload"}` (`session_meta`,
        // `response_item`, `event_msg`, …).
        if object.get("timestamp").is_some_and(serde_json::Value::is_string)
            && object.get("type").is_some_and(serde_json::Value::is_string)
            && object.get("payload").is_some_and(serde_json::Value::is_object)
        {
            return Looks::CodexRollout;
        }
        first_problem.get_or_insert_with(|| {
            format!(
                "line {}: no JSON-RPC `method`, `id` or `result`",
                line.line_number
            )
        });
    }
    match first_problem {
        Some(problem) => Looks::Unreadable(problem),
        None => Looks::Empty,
    }
}

/// Records transcripts: one run per session, continuing the run that
/// already holds the session (given by `--run-id`, else found by its root
/// thread) so nothing already recorded is added twice. Returns the run ids.
pub fn ingest_transcripts(
    home: &Home,
    input: Option<&str>,
    options: &IngestOptions,
) -> anyhow::Result<Vec<RunId>> {
    let path = match input {
        // Named from the root: a file's folder is listed for its subagents
        // (a bare name's parent is empty), and each line's reference must
        // hold wherever it is read.
        Some(path) => std::path::absolute(path).with_context(|| format!("cannot read {path}"))?,
        None => claude_config_dir()
            .context("no input given and neither CLAUDE_CONFIG_DIR nor HOME is set")?,
    };
    // Empty session files are left until they hold a line, as `import`
    // leaves them: a run of one would start now and hold nothing.
    let sessions: Vec<SessionFiles> = find_sessions(&path)?
        .into_iter()
        .filter(|session| !session.parts.iter().all(|(_, file)| fs::metadata(file).is_ok_and(|meta| meta.len() == 0)))
        .collect();
    if sessions.is_empty() {
        bail!("no Claude Code sessions under {} (an empty session file is read once it holds a line)", path.display());
    }
    if options.run_id.is_some() && sessions.len() > 1 {
        bail!(
            "{} holds {} sessions; --run-id names one run\nhint: pass one session file",
            path.display(),
            sessions.len()
        );
    }
    let mut ids = Vec::new();
    for session in sessions {
        let id = match &options.run_id {
            Some(text) => validate_run_id(text)?,
            None => run_of_session(home, &session.session_id)?.unwrap_or_else(new_run_id),
        };
        let _lock = RunLock::acquire(home, &id, Duration::from_secs(10))?
            .with_context(|| format!("run {id} is being recorded by another agentrace"))?;
        let (recording, fed) = record_transcripts_counted(home, &id, &session)?;
        let resumed = recording.resumed;
        let summary = recording.finish(Some(SessionEndReason::EndOfInput))?.summary;
        // A run continued counts what it held before too.
        let understood = resumed || {
            let main = session.parts.first().map(|(_, file)| file.as_path());
            let name = main.map_or_else(|| session.session_id.clone(), |file| file.display().to_string());
            let looked = main.filter(|_| options.format.is_some()).map(|file| looks(&first_lines(file)));
            !nothing_understood(&name, &id, Format::ClaudeTranscript, fed, &summary, looked)
        };
        if !options.quiet && !understood {
            eprintln!("recorded {id}, nothing in it understood: {} events, result none", summary.counts.events);
        } else if !options.quiet && resumed && fed == 0 {
            // Every line was in the run already: "added to" read as if
            // the session had been recorded again.
            eprintln!(
                "{id} holds every line of claude session {} already: nothing added ({} events)",
                session.session_id, summary.counts.events
            );
        } else if !options.quiet {
            eprintln!(
                "{} {id}: claude session {}, {} events, result {}",
                if resumed { "added to" } else { "recorded" },
                session.session_id,
                summary.counts.events,
                if summary.result.is_some() {
                    "set"
                } else {
                    "none"
                },
            );
        }
        ids.push(id);
    }
    Ok(ids)
}

/// Records every file of `session` (read whole) into run `id`, continued
/// when it exists; the caller ends the recording. `ingest` and `import` of
/// a session whose run was recorded live both add its transcripts so.
pub fn record_transcripts(home: &Home, id: &RunId, session: &SessionFiles) -> anyhow::Result<Recording> {
    record_transcripts_counted(home, id, session).map(|(recording, _)| recording)
}

/// [`record_transcripts`], and how many lines it fed that were not blank
/// (a metadata document is one).
fn record_transcripts_counted(home: &Home, id: &RunId, session: &SessionFiles) -> anyhow::Result<(Recording, u64)> {
    let setup = Setup::new(Format::ClaudeTranscript).cadence(Cadence::EachStatus);
    let mut recording = Recording::open(home, id, &setup, || claude_start(session))?;
    // A run continued holds the lines an earlier merge fed it: fed again,
    // those with no uuid (attachments, queue operations) were copied once
    // more and each uuid line added a duplicate notice, at every `reindex`.
    let mut recorded = if recording.resumed { recorded_frames(home, id)? } else { HashMap::new() };
    let mut fed = 0u64;
    for (part, file) in &session.parts {
        let bytes = fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let bytes = unrecorded(part, bytes, &mut recorded);
        if bytes.is_empty() {
            continue;
        }
        fed += match part {
            SourcePart::AgentMeta { .. } => u64::from(!agentrace_core::decode::is_blank(&bytes)),
            _ => bytes.split(|byte| *byte == b'\n').filter(|line| !agentrace_core::decode::is_blank(line)).count() as u64,
        };
        recording.feed(part, &bytes)?;
    }
    Ok((recording, fed))
}

/// The frames run `id`'s log holds, each in its one spelling (parsed and
/// written again, so a line's spaces do not matter), with how many times.
fn recorded_frames(home: &Home, id: &RunId) -> anyhow::Result<HashMap<String, usize>> {
    let path = home.log_path(id);
    let (envelopes, _) = agentrace_store::read_log(&path)?;
    let mut frames = agentrace_store::raw_ref::Resolver::for_log(&path);
    let mut recorded = HashMap::new();
    for envelope in &envelopes {
        if let Some(frame) = frames.frame(envelope).ok().flatten().and_then(|raw| spelled(raw.get().as_bytes())) {
            *recorded.entry(frame).or_insert(0) += 1;
        }
    }
    Ok(recorded)
}

/// A JSON text in one spelling; `None` when it is not JSON.
fn spelled(bytes: &[u8]) -> Option<String> {
    serde_json::from_slice::<serde_json::Value>(bytes).ok().and_then(|value| serde_json::to_string(&value).ok())
}

/// A JSON text as the recorder keeps it when it holds a secret (redacted),
/// in one spelling; `None` when it holds none or is not JSON.
fn redacted_spelling(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let raw = serde_json::value::RawValue::from_string(text.trim_end().to_owned()).ok()?;
    agentrace_core::redact::redact_raw(raw.get()).and_then(|redacted| spelled(redacted.get().as_bytes()))
}

/// `bytes` of a session's file without what `recorded` holds (each taken
/// from it as it is matched): the lines, or the metadata document, a
/// continued run already has.
fn unrecorded(part: &SourcePart, bytes: Vec<u8>, recorded: &mut HashMap<String, usize>) -> Vec<u8> {
    if recorded.is_empty() {
        return bytes;
    }
    let mut take_one = |frame: &str| match recorded.get_mut(frame) {
        Some(count) if *count > 0 => {
            *count -= 1;
            true
        }
        Some(_) | None => false,
    };
    let mut take = |piece: &[u8]| {
        let Some(frame) = spelled(piece) else { return false };
        // A line that held a secret is kept redacted (unless the run keeps
        // its secrets): it is matched as it was kept, or it would be fed
        // again at each merge.
        take_one(&frame) || redacted_spelling(piece).is_some_and(|redacted| take_one(&redacted))
    };
    if matches!(part, SourcePart::AgentMeta { .. }) {
        return if take(&bytes) { Vec::new() } else { bytes };
    }
    let mut kept = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|byte| *byte == b'\n') {
        if agentrace_core::decode::is_blank(line) || !take(line) {
            kept.extend_from_slice(line);
        }
    }
    kept
}

/// The first lines of a file (as many as are read ahead to detect a
/// format); none when it cannot be read.
fn first_lines(path: &Path) -> Vec<AssembledLine> {
    let Ok(file) = File::open(path) else {
        return Vec::new();
    };
    let mut chunks = Chunks {
        reader: file,
        assembler: LineAssembler::default(),
        buffer: vec![0; 64 * 1024],
        done: false,
        name: path.display().to_string(),
    };
    let mut lines = Vec::new();
    while lines.len() < LOOKAHEAD_LINES {
        match chunks.next_lines() {
            Ok(more) if !more.is_empty() => lines.extend(more),
            Ok(_) | Err(_) => break,
        }
    }
    lines
}
