//! The live recording shell shared by `run codex` and `tap`: bytes of both
//! directions in, attributed envelopes appended to the store as each line
//! completes, and a compact live view on stderr. The attribution itself is
//! the same recorder `ingest` uses, so a live run and an ingested copy of
//! the same stream agree. The recorder's run book hands back what each
//! envelope changed ([`agentrace_core::book::Changes`]); the shell gives the
//! envelopes and their changes to its sinks: the writer (the log, and the
//! record at each status change) and the live view.

use std::collections::HashMap;
use std::io::{IsTerminal as _, Write as _};

use agentrace_core::lines::LineAssembler;
use agentrace_core::book::Changes;
use agentrace_core::childwork::ChangeKind;
use agentrace_core::model::{
    Direction, Envelope, Event, EventBody, RunId, SessionEndReason, Source,
};
use agentrace_core::recorder::Format;
use agentrace_core::state::{RunState, RunSummary};
use agentrace_core::{InputLine, Recorder};
use agentrace_store::{Home, RunWriter};

use crate::clock::now;
use crate::commands::catalog::{index_recorded, Texts};
use crate::render::one_line;

/// One run being recorded live.
pub struct LiveRun {
    recorder: Recorder,
    writer: RunWriter,
    to_server: LineAssembler,
    from_server: LineAssembler,
    view: Option<LiveView>,
    home: Home,
    /// The catalog's text, collected on the way to the log so that the end
    /// does not read the log back.
    texts: Texts,
}

impl LiveRun {
    /// Creates the run in the store and writes its first envelope.
    pub fn create(home: &Home, id: &RunId, source: Source, view: bool) -> anyhow::Result<Self> {
        Self::create_as(home, id, source, Format::CodexAppServer, view)
    }

    /// [`LiveRun::create`] of a run whose lines are in `format`.
    pub fn create_as(
        home: &Home,
        id: &RunId,
        source: Source,
        format: Format,
        view: bool,
    ) -> anyhow::Result<Self> {
        let recorder = Recorder::new(id.clone(), format)
            .with_source(source)
            .with_traceparent(crate::trace_context::to_record())
            .keep_secrets(crate::secrets::keep())
            .with_changes();
        // One fold: the recorder's book (kept whole for the changes) is
        // lent to the writer.
        let writer = home.create_run(id)?.with_book_lent();
        let mut run = Self {
            recorder,
            writer,
            to_server: LineAssembler::default(),
            from_server: LineAssembler::default(),
            view: view.then(LiveView::new),
            home: home.clone(),
            texts: Texts::default(),
        };
        let first = run.recorder.start(now());
        run.write(first)?;
        run.settle()?;
        Ok(run)
    }

    /// The run state so far.
    pub fn state(&self) -> &RunState {
        self.recorder.state()
    }

    /// Bytes that went `direction`; records every line they complete and
    /// writes them at once ([`LiveRun::queue_bytes`], then
    /// [`LiveRun::settle`]).
    pub fn bytes(&mut self, direction: Direction, chunk: &[u8]) -> anyhow::Result<()> {
        self.queue_bytes(direction, chunk)?;
        self.settle()
    }

    /// Bytes that went `direction`; queues every line they complete for the
    /// writer's next batch (see [`RunWriter::queue`]). A caller with more
    /// input waiting calls this for each chunk and [`LiveRun::settle`] when
    /// it runs dry.
    pub fn queue_bytes(&mut self, direction: Direction, chunk: &[u8]) -> anyhow::Result<()> {
        let lines = match direction {
            Direction::ToServer => self.to_server.push(chunk),
            Direction::FromServer => self.from_server.push(chunk),
        };
        // Attribute the whole chunk, then write it in one go.
        let observed_at = now();
        let mut envelopes = Vec::new();
        for line in lines {
            if agentrace_core::decode::is_blank(&line.bytes) && line.truncated_from.is_none() {
                continue;
            }
            envelopes.extend(self.recorder.push(&InputLine {
                bytes: &line.bytes,
                line_number: line.line_number,
                observed_at,
                direction: Some(direction),
                truncated_from: line.truncated_from,
            }));
        }
        self.write(envelopes)
    }

    /// The recorder skipped `bytes` bytes going `direction`: the partial
    /// line it held is dropped with them, so no line is glued from pieces.
    pub fn gap(&mut self, direction: Direction, bytes: u64) -> anyhow::Result<()> {
        let assembler = match direction {
            Direction::ToServer => &mut self.to_server,
            Direction::FromServer => &mut self.from_server,
        };
        let partial = assembler.pending();
        *assembler = LineAssembler::default();
        let envelopes = self
            .recorder
            .dropped(now(), Some(direction), bytes + partial);
        self.write(envelopes)
    }

    fn line(
        &mut self,
        direction: Direction,
        bytes: &[u8],
        line_number: u64,
        truncated_from: Option<u64>,
    ) -> anyhow::Result<()> {
        if agentrace_core::decode::is_blank(bytes) && truncated_from.is_none() {
            return Ok(());
        }
        let envelopes = self.recorder.push(&InputLine {
            bytes,
            line_number,
            observed_at: now(),
            direction: Some(direction),
            truncated_from,
        });
        self.write(envelopes)
    }

    /// Joins the rollouts of the run's session (a `codex exec` run's: see
    /// [`agentrace_core::exec`]), each file whole, parents first.
    pub fn join_rollouts(
        &mut self,
        files: &[crate::commands::import::RolloutHead],
    ) -> anyhow::Result<()> {
        let mut batches: Vec<Vec<Envelope>> = Vec::new();
        crate::commands::import::feed_rollouts(&mut self.recorder, files, &mut |envelopes| {
            batches.push(envelopes);
            Ok(())
        })?;
        for envelopes in batches {
            self.write(envelopes)?;
        }
        self.settle()
    }

    /// The session ended with the root turn open: the run fails (or is
    /// interrupted).
    pub fn abort(&mut self, error: String, interrupted: bool) -> anyhow::Result<()> {
        let envelopes = self.recorder.abort(now(), error, interrupted);
        self.write(envelopes)?;
        self.settle()
    }

    /// Input ran dry (or a timer fired while idle): writes what is queued
    /// and lets the writer rewrite the record and sync when those are due
    /// ([`RunWriter::tick`]).
    pub fn settle(&mut self) -> anyhow::Result<()> {
        self.writer.flush()?;
        self.tick()
    }

    /// The writer's cadence after some work (cheap: see [`RunWriter::tick`]).
    pub fn tick(&mut self) -> anyhow::Result<()> {
        self.writer.tick_with(self.recorder.book())?;
        Ok(())
    }

    /// Records what is left (partial last lines count as lines) and the
    /// session's end (for `reason`), makes the log durable and writes the
    /// run record.
    pub fn finish(mut self, reason: SessionEndReason) -> anyhow::Result<RunSummary> {
        for direction in [Direction::ToServer, Direction::FromServer] {
            let last = match direction {
                Direction::ToServer => self.to_server.finish(),
                Direction::FromServer => self.from_server.finish(),
            };
            if let Some(line) = last {
                self.line(
                    direction,
                    &line.bytes,
                    line.line_number,
                    line.truncated_from,
                )?;
            }
        }
        let last = self.recorder.finish();
        self.write(last)?;
        let ended = self.recorder.end_session(now(), reason);
        self.write(ended)?;
        self.writer.sync()?;
        let summary = self.recorder.state().summary();
        let checked = self.writer.write_record_with(&summary, self.recorder.book())?;
        let agents = self.recorder.state().agents();
        index_recorded(&self.home, &checked, &agents, std::mem::take(&mut self.texts));
        Ok(summary)
    }

    fn write(&mut self, envelopes: Vec<Envelope>) -> anyhow::Result<()> {
        if envelopes.is_empty() {
            return Ok(());
        }
        let changes = self.recorder.take_changes();
        // Queued, not written: the writer writes batches (group commit),
        // and records and syncs on its own cadence (see `tick`).
        self.writer.queue(&envelopes)?;
        self.texts.observe(&envelopes, self.writer.queued_lines());
        if let Some(view) = &mut self.view {
            for envelope in &envelopes {
                view.show(envelope);
            }
            view.changes(&changes);
        }
        Ok(())
    }
}

/// The compact live view: one stderr line per spawn, tool call, wait, agent
/// end, warning and ending, each with its actor's label.
pub struct LiveView {
    colour: bool,
    labels: HashMap<String, String>,
}

impl LiveView {
    /// A view on stderr; colour only on a terminal without `NO_COLOR`.
    pub fn new() -> Self {
        let colour = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
        Self {
            colour,
            labels: HashMap::new(),
        }
    }

    fn label_of(&self, thread: &str) -> String {
        self.labels
            .get(thread)
            .cloned()
            .unwrap_or_else(|| thread.to_owned())
    }

    /// Shows the records the session's end settled (the other changes
    /// show as their envelopes).
    pub fn changes(&mut self, changes: &Changes) {
        for change in &changes.records {
            match change.change {
                ChangeKind::Settled => self.say(
                    "agentrace",
                    &format!("{} was still running when the session ended: outcome unknown", change.record.label),
                ),
                ChangeKind::Admitted | ChangeKind::Updated | ChangeKind::Ended => {}
            }
        }
    }

    fn say(&self, label: &str, text: &str) {
        let label = one_line(label, 32);
        let text = one_line(text, 140);
        let line = if self.colour {
            format!("\x1b[36m{label:>16}\x1b[0m  {text}\n")
        } else {
            format!("{label:>16}  {text}\n")
        };
        // The live view is best effort: a closed stderr must not stop recording.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    /// Shows one envelope, if it is worth a line.
    pub fn show(&mut self, envelope: &Envelope) {
        if let Some(thread) = &envelope.actor.thread_id {
            self.labels
                .insert(thread.to_string(), envelope.actor.label.clone());
        }
        let EventBody::Known(event) = &envelope.event else {
            return;
        };
        let text = match event {
            Event::ActorResolved { thread_id, actor } => {
                self.labels
                    .insert(thread_id.to_string(), actor.label.clone());
                return;
            }
            Event::AgentSpawned {
                child_thread_id,
                prompt,
                ..
            } => format!(
                "spawned {}{}",
                self.label_of(child_thread_id.as_str()),
                prompt
                    .as_ref()
                    .map(|prompt| format!(": {prompt}"))
                    .unwrap_or_default()
            ),
            Event::ToolUse { name, input, .. } if name != "spawnAgent" && name != "wait" => {
                format!("{name}: {input}")
            }
            Event::AgentWaitStarted {
                child_thread_ids, ..
            } => {
                if child_thread_ids.is_empty() {
                    "waits for its helpers".to_owned()
                } else {
                    let names: Vec<String> = child_thread_ids
                        .iter()
                        .map(|id| self.label_of(id.as_str()))
                        .collect();
                    format!("waits for {}", names.join(", "))
                }
            }
            Event::AgentCompleted {
                thread_id,
                status,
                result,
                ..
            } => format!(
                "{}ended {}{}",
                if envelope.actor.thread_id.as_ref() == Some(thread_id) {
                    String::new()
                } else {
                    format!("{} ", self.label_of(thread_id.as_str()))
                },
                status.as_str(),
                result
                    .as_ref()
                    .map(|result| format!(": {result}"))
                    .unwrap_or_default()
            ),
            Event::Warning { warning } => format!("warning {}: {}", warning.code, warning.message),
            Event::Done { .. } => "done".to_owned(),
            Event::Failed { error, .. } => {
                format!("failed: {}", error.as_deref().unwrap_or("(no error given)"))
            }
            Event::Interrupted { .. } => "interrupted".to_owned(),
            Event::Dropped { bytes, .. } => {
                format!("recorder fell behind: {bytes} bytes passed through unrecorded")
            }
            _ => return,
        };
        self.say(&envelope.actor.label, &text);
    }
}

/// How a recorded run's end is told, the same for every `run`: the root's
/// answer on stdout, and exit 0 (done), 1 (failed, or never ended) or 130
/// (interrupted), with what went wrong on stderr.
pub fn tell_end(
    out: &mut crate::output::Out,
    id: &RunId,
    summary: &agentrace_core::state::RunSummary,
) -> anyhow::Result<std::process::ExitCode> {
    use agentrace_core::model::RunStatus;
    use std::process::ExitCode;
    match summary.status {
        RunStatus::Done => {
            match &summary.result {
                Some(result) => out.line(result)?,
                None => eprintln!("warning: the root's last turn ended without an answer of its own\nhint: agentrace show {id}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        RunStatus::Interrupted => {
            eprintln!("interrupted; recorded as {id}");
            Ok(ExitCode::from(130))
        }
        RunStatus::Failed | RunStatus::Running => {
            eprintln!(
                "error: the run failed: {}\nhint: agentrace show {id}",
                summary.error.as_deref().unwrap_or("no error given")
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
