//! The one recording shell: every command that writes a run (`run codex`,
//! `run codex-exec`, `tap`, `run claude`, `hook`, `ingest` and `import`)
//! turns its input into envelopes with the core's [`Recorder`] and gives
//! them to the sinks here: the store's writer (the log, the record, the
//! snapshot), the live view on stderr, the catalog's text and, for an
//! import that keeps them, the frames' copies. What differs between the
//! commands is a [`Setup`]: how often the log is written and synced
//! ([`Cadence`]), which clock a line without a time of its own takes
//! ([`Clock`]), whether the view is shown and where the text goes.
//!
//! A frame's way: bytes → [`LineAssembler`] (per direction) →
//! [`Recorder::push`] (decode once, attribute, fold into the run book) →
//! [`Recording::write`] → [`RunWriter::queue`] (group commit) and the
//! view; the record and snapshot follow on the writer's cadence. A big
//! input read after the fact ([`Recording::lines_beside`]) is read and
//! attributed on a second thread, the rest done here, in the same order.

use agentrace_core::lines::{AssembledLine, LineAssembler};
use agentrace_core::model::{
    Direction, Envelope, Event, EventBody, RunId, RunStatus, SessionEndReason, Source, Timestamp,
};
use agentrace_core::recorder::{Attributed, Attribution, Format, SourcePart};
use agentrace_core::state::{RunState, RunSummary};
use agentrace_core::{InputLine, Recorder, RunBook};
use agentrace_store::catalog::TextRow;
use agentrace_store::raw_ref::CopyWriter;
use agentrace_store::{Home, RunWriter};

use crate::clock::now;
use crate::catalog::{index_recorded, Recorded, Texts};
use crate::live::LiveView;
use crate::sources::session_feed::Sink;

/// How often the log is written, synced and its record rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cadence {
    /// Lines queued and written in batches, the record rewritten at most
    /// every 250 ms and the log synced at most once a second (the writer's
    /// [`RunWriter::tick`]). A caller whose input goes quiet calls
    /// [`Recording::settle`], so nothing queued waits on a line that may
    /// never come.
    Batched,
    /// Each call's envelopes written at once, the log synced and the record
    /// rewritten at each status change: for a short-lived process (a hook
    /// call) whose next call may be another process.
    EachStatus,
    /// Written batch by batch, never synced, the record written in place at
    /// the end: an import, rebuilt from its sources if a crash loses it (a
    /// thousand fsyncs would cost more than the reading).
    Import,
}

/// The time a line without one of its own is observed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Now: a live session.
    Wall,
    /// The last envelope's time: an input read after the fact, so the same
    /// input gives the same log whenever it is read.
    Input,
}

impl Clock {
    /// The time a line without one of its own takes, `last` being the
    /// last envelope's.
    fn observed_at(self, last: Timestamp) -> Timestamp {
        match self {
            Clock::Wall => now(),
            Clock::Input => last,
        }
    }
}

/// Rows of text written to the catalog between two looks for the next
/// batch (about 2 µs a row).
const TEXT_ROWS_AT_ONCE: usize = 128;

/// Where the searchable text collected on the way to the log goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextsTo {
    /// Not collected (the catalog reads the log when it syncs).
    Nowhere,
    /// Indexed in the catalog when the recording finishes.
    Catalog,
    /// Handed to the caller with the finished recording (an import writes
    /// it with the rest of its catalog rows).
    Caller,
}

/// What a recording is: its format and the options of its shell.
#[derive(Debug, Clone)]
pub struct Setup {
    format: Format,
    source: Option<Source>,
    cadence: Cadence,
    clock: Clock,
    view: bool,
    changes: bool,
    texts: TextsTo,
    traceparent: bool,
    keep_secrets: bool,
}

impl Setup {
    /// A recording of lines in `format`: batched, on the input's clock, no
    /// view, no text, the trace context recorded, secrets redacted unless
    /// the user asked to keep them.
    pub fn new(format: Format) -> Self {
        Self {
            format,
            source: None,
            cadence: Cadence::Batched,
            clock: Clock::Input,
            view: false,
            changes: false,
            texts: TextsTo::Nowhere,
            traceparent: true,
            keep_secrets: crate::secrets::keep(),
        }
    }

    /// The live setup of `run` and `tap`: batched, on the wall clock, the
    /// text indexed at the end, the view shown when `view`.
    pub fn live(format: Format, source: Source, view: bool) -> Self {
        let mut setup = Self::new(format)
            .source(source)
            .clock(Clock::Wall)
            .texts(TextsTo::Catalog);
        if view {
            setup = setup.view();
        }
        setup
    }

    /// The run's source, when the format alone does not tell it.
    pub fn source(mut self, source: Source) -> Self {
        self.source = Some(source);
        self
    }

    /// How the log is written (see [`Cadence`]).
    pub fn cadence(mut self, cadence: Cadence) -> Self {
        self.cadence = cadence;
        self
    }

    /// Which clock a line without a time takes (see [`Clock`]).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Shows every envelope in the live stderr view, and the records the
    /// session's end settled.
    pub fn view(mut self) -> Self {
        self.view = true;
        self.changes = true;
        self
    }

    /// Where the searchable text goes (see [`TextsTo`]).
    pub fn texts(mut self, texts: TextsTo) -> Self {
        self.texts = texts;
        self
    }

    /// No trace context in the run's first envelope (an import: the
    /// context is this process's, not the session's).
    pub fn without_traceparent(mut self) -> Self {
        self.traceparent = false;
        self
    }

    fn recorder(&self, id: &RunId) -> Recorder {
        let mut recorder = Recorder::new(id.clone(), self.format).keep_secrets(self.keep_secrets);
        if let Some(source) = self.source {
            recorder = recorder.with_source(source);
        }
        if self.traceparent {
            recorder = recorder.with_traceparent(crate::trace_context::to_record());
        }
        // The recorder's book is the run's one fold: the writer is lent it.
        if self.changes {
            recorder.with_changes()
        } else {
            recorder.with_whole_book()
        }
    }
}

/// How many undecodable lines are named one by one (the rest are counted).
const NAMED_BAD_LINES: usize = 5;

/// Lines that could not be decoded: kept raw in the log, counted, and the
/// first few named for the user.
#[derive(Debug, Default)]
pub struct BadLines {
    /// How many.
    pub count: u64,
    /// The first [`NAMED_BAD_LINES`]: line number and reason.
    pub named: Vec<(u64, String)>,
}

/// The sinks of a recording: everything but the recorder, so a feed that
/// borrows the recorder can still write.
struct Sinks {
    writer: RunWriter,
    cadence: Cadence,
    view: Option<LiveView>,
    texts: Option<Texts>,
    copies: Option<CopyWriter>,
    /// The last envelope's time ([`Clock::Input`]).
    last_time: Timestamp,
    bad: BadLines,
}

impl Sinks {
    /// Gives `envelopes` to every sink; the cadence is the caller's.
    fn put(&mut self, envelopes: Vec<Envelope>) -> anyhow::Result<()> {
        self.put_kept(envelopes).map(drop)
    }

    /// [`Sinks::put`], the envelopes given back once written, for the
    /// thread that made them to free.
    fn put_kept(&mut self, mut envelopes: Vec<Envelope>) -> anyhow::Result<Vec<Envelope>> {
        if envelopes.is_empty() {
            return Ok(envelopes);
        }
        if let Some(last) = envelopes.last() {
            self.last_time = last.timestamp;
        }
        for envelope in &envelopes {
            if let EventBody::Known(Event::Unknown { kind, reason, line_number, .. }) = &envelope.event {
                if kind == agentrace_core::model::UNDECODABLE {
                    self.bad.count += 1;
                    if self.bad.named.len() < NAMED_BAD_LINES {
                        self.bad.named.push((line_number.unwrap_or_default(), reason.clone()));
                    }
                }
            }
        }
        if self.cadence == Cadence::Import {
            // A frame that references its source line is not copied into
            // the log (kept in `copies` when asked, `--keep-raw`).
            if let Some(copies) = &mut self.copies {
                copies.keep(&envelopes)?;
            }
            for envelope in &mut envelopes {
                if envelope.raw_ref.is_some() {
                    envelope.raw = None;
                }
            }
        }
        match self.cadence {
            Cadence::Batched => self.writer.queue(&envelopes)?,
            Cadence::EachStatus | Cadence::Import => self.writer.append(&envelopes)?,
        }
        if let Some(texts) = &mut self.texts {
            texts.observe(&envelopes, self.writer.queued_lines());
        }
        if let Some(view) = &mut self.view {
            for envelope in &envelopes {
                view.show(envelope);
            }
        }
        Ok(envelopes)
    }
}

/// One run being written by this process: a new one, or an existing one
/// continued.
pub struct Recording {
    recorder: Recorder,
    sinks: Sinks,
    home: Home,
    clock: Clock,
    texts_to: TextsTo,
    /// The writer is lent the recorder's book (a new run); a continued
    /// run's writer folds its own, resumed from the log.
    lent: bool,
    /// The status last made durable ([`Cadence::EachStatus`]).
    status: Option<RunStatus>,
    to_server: LineAssembler,
    from_server: LineAssembler,
    /// True when the run existed before.
    pub resumed: bool,
}

/// A finished recording.
pub struct Finished {
    /// The run's summary, as its record has it.
    pub summary: RunSummary,
    /// The recorder, with the run's state.
    pub recorder: Recorder,
    /// The searchable text ([`TextsTo::Caller`]).
    pub texts: Vec<TextRow>,
    /// Lines that could not be decoded.
    pub bad: BadLines,
}

impl Recording {
    /// Creates run `id` in the store, started at `start` in `cwd`, and
    /// writes its first envelope.
    pub fn create(home: &Home, id: &RunId, setup: &Setup, start: Timestamp, cwd: Option<String>) -> anyhow::Result<Self> {
        let writer = match setup.cadence {
            Cadence::Batched | Cadence::EachStatus => home.create_run(id)?,
            // Imported runs are written as v3 lines: their `rawRef` paths
            // and repeated actors were most of a v2 log's bytes.
            Cadence::Import => home.create_run_unsynced(id, true)?.with_lean_lines(),
        };
        Self::create_with(home, setup, writer.with_book_lent(), start, cwd)
    }

    /// [`Recording::create`] with a writer the caller made (an import that
    /// knows whether a stale snapshot may lie beside the log).
    pub fn create_with(home: &Home, setup: &Setup, writer: RunWriter, start: Timestamp, cwd: Option<String>) -> anyhow::Result<Self> {
        let recorder = setup.recorder(writer.run_id());
        let mut recording = Self::assemble(home, setup, recorder, writer, start, true);
        let first = recording.recorder.start_in(start, cwd);
        recording.write(first)?;
        recording.settle()?;
        Ok(recording)
    }

    /// Opens `id`: continues it when it exists (the recorder relearns from
    /// its log), else creates it starting at `start()`.
    pub fn open(home: &Home, id: &RunId, setup: &Setup, start: impl FnOnce() -> Timestamp) -> anyhow::Result<Self> {
        if !home.exists(id) {
            return Self::create(home, id, setup, start(), None);
        }
        let (mut envelopes, _) = agentrace_store::read_log(&home.log_path(id))?;
        // The attributor relearns from each frame; an imported run's are
        // in its sources. A frame whose source changed or is gone is not
        // relearnt: the recorded events stay as they are, but a later line
        // that depends on what it taught (a subagent's link to the call
        // that started it) may be attributed to nobody.
        let mut frames = agentrace_store::raw_ref::Resolver::for_log(&home.log_path(id));
        for envelope in &mut envelopes {
            if envelope.raw.is_none() && envelope.raw_ref.is_some() {
                envelope.raw = frames.frame(envelope).ok().flatten();
            }
        }
        let clock = envelopes.last().map_or_else(now, |last| last.timestamp);
        let recorder = Recorder::resume(id.clone(), setup.format, &envelopes).keep_secrets(setup.keep_secrets);
        let writer = home.append_run(id)?;
        let mut recording = Self::assemble(home, setup, recorder, writer, clock, false);
        recording.resumed = true;
        Ok(recording)
    }

    /// Continues run `id` with `recorder`, which the caller brought to
    /// where the log ends (an import replays its sources up to where the
    /// last one stopped); `None` when the log does not end where the
    /// recorder does, so continuing it would number envelopes wrongly.
    pub fn continue_with(home: &Home, id: &RunId, setup: &Setup, recorder: Recorder) -> anyhow::Result<Option<Self>> {
        let mut writer = home.append_run(id)?;
        if setup.cadence == Cadence::Import {
            // Numbered on from the log's definitions (a log of v2 lines,
            // from an older build, gets v3 lines after them).
            writer = writer.with_lean_lines();
        }
        if writer.next_sequence() != recorder.next_sequence() {
            return Ok(None);
        }
        let clock = recorder.state().summary().updated_at.unwrap_or_else(now);
        let mut recording = Self::assemble(home, setup, recorder, writer, clock, false);
        recording.resumed = true;
        Ok(Some(recording))
    }

    fn assemble(home: &Home, setup: &Setup, recorder: Recorder, writer: RunWriter, clock: Timestamp, lent: bool) -> Self {
        Self {
            // Every recording prices with the home's book (its price file).
            recorder: recorder.with_prices(home.prices()),
            sinks: Sinks {
                writer,
                cadence: setup.cadence,
                view: setup.view.then(LiveView::new),
                texts: (setup.texts != TextsTo::Nowhere).then(Texts::default),
                copies: None,
                last_time: clock,
                bad: BadLines::default(),
            },
            home: home.clone(),
            clock: setup.clock,
            texts_to: setup.texts,
            lent,
            status: None,
            to_server: LineAssembler::default(),
            from_server: LineAssembler::default(),
            resumed: false,
        }
    }

    /// Keeps a copy of every referenced frame in `copies` (`import
    /// --keep-raw`).
    pub fn keep_copies(&mut self, copies: CopyWriter) {
        self.sinks.copies = Some(copies);
    }

    /// The recorder.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// The run state so far.
    pub fn state(&self) -> &RunState {
        self.recorder.state()
    }

    /// The book that folds the run: the recorder's when lent, else the
    /// writer's own (resumed from the log).
    fn book(&self) -> Option<&RunBook> {
        if self.lent {
            Some(self.recorder.book())
        } else {
            self.sinks.writer.own_book()
        }
    }

    /// True once the run's session is over (`session_ended` folded).
    pub fn session_over(&self) -> bool {
        self.book().is_some_and(RunBook::session_over)
    }

    /// How many writes the log took (for tests of the batching).
    #[cfg(test)]
    pub fn writes(&self) -> u64 {
        self.sinks.writer.writes()
    }

    fn observed_at(&self) -> Timestamp {
        self.clock.observed_at(self.sinks.last_time)
    }

    /// Bytes that went `direction`; records every line they complete and
    /// writes them at once.
    pub fn bytes(&mut self, direction: Direction, chunk: &[u8]) -> anyhow::Result<()> {
        self.queue_bytes(direction, chunk)?;
        self.settle()
    }

    /// Bytes that went `direction`; queues every line they complete. A
    /// caller with more input waiting calls this for each chunk and
    /// [`Recording::settle`] when it runs dry.
    pub fn queue_bytes(&mut self, direction: Direction, chunk: &[u8]) -> anyhow::Result<()> {
        let lines = match direction {
            Direction::ToServer => self.to_server.push(chunk),
            Direction::FromServer => self.from_server.push(chunk),
        };
        // The whole chunk is attributed, then written in one go.
        let observed_at = self.observed_at();
        let mut envelopes = Vec::new();
        for line in &lines {
            if is_blank(line) {
                continue;
            }
            envelopes.extend(self.recorder.push(&input(line, observed_at, Some(direction))));
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
        let envelopes = self.recorder.dropped(now(), Some(direction), bytes + partial);
        self.write(envelopes)
    }

    /// Records one whole line of `part` (a single-file source's is
    /// [`SourcePart::Main`]).
    pub fn line(&mut self, part: &SourcePart, line: &AssembledLine) -> anyhow::Result<()> {
        if is_blank(line) {
            return Ok(());
        }
        let envelopes = self.recorder.push_part(part, &input(line, self.observed_at(), None));
        self.write(envelopes)
    }

    /// Records one frame of `part` as it was observed: its time and
    /// direction given (a log replayed).
    pub fn frame(&mut self, part: &SourcePart, frame: &InputLine<'_>) -> anyhow::Result<()> {
        let envelopes = self.recorder.push_part(part, frame);
        self.write(envelopes)
    }

    /// Records every line `next` reads, batch by batch until it returns an
    /// empty one (the input ended). The reading and the attribution run on
    /// a second thread while this one numbers, folds and writes what they
    /// made (`ingest`: a quarter less wall time on a big input; the writing
    /// half is the larger); the log is what [`Recording::line`] for each
    /// line would make of it. The first error, of either thread, ends the reading.
    pub fn lines_beside(
        &mut self,
        part: &SourcePart,
        mut next: impl FnMut() -> anyhow::Result<Vec<AssembledLine>> + Send,
    ) -> anyhow::Result<()> {
        // A few batches in flight keep both threads busy; more would only
        // hold memory (a batch is a read's worth of lines).
        const IN_FLIGHT: usize = 4;
        let clock = self.clock;
        let mut last_time = self.sinks.last_time;
        let mut attribution = self.recorder.lend_attribution();
        let (sender, batches) = std::sync::mpsc::sync_channel::<Vec<Attributed>>(IN_FLIGHT);
        // Written envelopes go back to the reading thread to be freed: their
        // parts were allocated there, and the allocator frees a block from
        // another thread by a slower, shared path (8 % of the writing
        // thread's time, against about 1 % of the reading thread's here).
        let (spent_sender, spent) = std::sync::mpsc::channel::<Vec<Envelope>>();
        let (written, joined) = std::thread::scope(|scope| {
            // The attribution comes back whatever happened, so the
            // recorder can go on (and end the run) after a failed read.
            let reader = scope.spawn(move || -> (Attribution, anyhow::Result<()>) {
                loop {
                    let lines = match next() {
                        Ok(lines) if lines.is_empty() => return (attribution, Ok(())),
                        Ok(lines) => lines,
                        Err(error) => return (attribution, Err(error)),
                    };
                    // About one event a line: grown as it was filled, the
                    // batch's reallocations were 3 % of this thread's
                    // samples (`perf`, 40 MiB stream).
                    let mut batch = Vec::with_capacity(lines.len() + lines.len() / 8);
                    for line in lines {
                        if is_blank(&line) {
                            continue;
                        }
                        // The last event's time is kept here, as made.
                        let made = attribution.push_line(part, line, clock.observed_at(last_time), None);
                        if let Some(last) = made.last() {
                            last_time = last.timestamp();
                        }
                        batch.extend(made);
                    }
                    // The writing thread is behind (every batch in flight
                    // waits for it): this one makes the frames and redacts
                    // them, the writing thread's share it can take, rather
                    // than wait. Which thread is behind changes along a
                    // stream and with the machine (`ingest` of 40 MB: each
                    // waited tens of ms for the other in some runs).
                    let sent = match sender.try_send(batch) {
                        Ok(()) => Ok(()),
                        Err(std::sync::mpsc::TrySendError::Full(batch)) => sender.send(attribution.made_ready(batch)),
                        Err(std::sync::mpsc::TrySendError::Disconnected(batch)) => Err(std::sync::mpsc::SendError(batch)),
                    };
                    if sent.is_err() {
                        // The writing side failed; its error is reported.
                        return (attribution, Ok(()));
                    }
                    spent.try_iter().for_each(drop);
                }
            });
            let mut written = Ok(());
            loop {
                let batch = match batches.try_recv() {
                    Ok(batch) => batch,
                    // The input ran dry for now (a live pipe): what is
                    // queued is written, or `status` and `attach` would not
                    // see the last lines until the next ones came.
                    Err(std::sync::mpsc::TryRecvError::Empty) => {
                        written = self.settle();
                        if written.is_err() {
                            break;
                        }
                        // Waiting: the text goes to the catalog meanwhile
                        // (when asked, see `write_text_early`), a few rows at
                        // a time so the next batch does not wait long.
                        let mut waiting = Err(std::sync::mpsc::TryRecvError::Empty);
                        while matches!(waiting, Err(std::sync::mpsc::TryRecvError::Empty))
                            && self.sinks.texts.as_mut().is_some_and(|texts| texts.write_some(TEXT_ROWS_AT_ONCE))
                        {
                            waiting = batches.try_recv();
                        }
                        match waiting.or_else(|_| batches.recv()) {
                            Ok(batch) => batch,
                            Err(_) => break,
                        }
                    }
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
                };
                let envelopes = self.recorder.number_attributed(batch);
                written = self.write_back(envelopes).map(|spent| {
                    // A reading thread that has ended frees nothing more.
                    let _ = spent_sender.send(spent);
                });
                if written.is_err() {
                    break;
                }
            }
            drop(batches);
            let read = reader
                .join()
                .map_err(|_| anyhow::anyhow!("the thread reading the input panicked"));
            (written, read)
        });
        let (attribution, read) = joined?;
        self.recorder.restore_attribution(attribution);
        // A failed read is the first error: nothing after it was written.
        read.and(written)
    }

    /// The input ends (a file): the run's searchable text is written to
    /// the catalog while [`Recording::lines_beside`] waits for lines, not
    /// all at the end (the text was most of the end of a 40 MB ingest),
    /// the catalog's write lock held from the first row to the end. Not
    /// for a live input, which would hold the lock for as long as it runs.
    pub fn write_text_early(&mut self) {
        if self.texts_to == TextsTo::Catalog && self.sinks.cadence != Cadence::Import {
            let id = self.sinks.writer.run_id().clone();
            if let Some(texts) = &mut self.sinks.texts {
                texts.write_early(&self.home, &id);
            }
        }
    }

    /// Records every line of one part, read whole (a metadata document is
    /// one line).
    pub fn feed(&mut self, part: &SourcePart, bytes: &[u8]) -> anyhow::Result<()> {
        if matches!(part, SourcePart::AgentMeta { .. }) {
            let envelopes = self.recorder.push_part(part, &InputLine {
                bytes,
                line_number: 1,
                observed_at: self.observed_at(),
                direction: None,
                truncated_from: None,
            });
            return self.write(envelopes);
        }
        let mut assembler = LineAssembler::default();
        let mut lines = assembler.push(bytes);
        lines.extend(assembler.finish());
        for line in &lines {
            self.line(part, line)?;
        }
        Ok(())
    }

    /// Lets `feed` drive the recorder (a session's files read in their one
    /// order, see [`crate::sources::session_feed`]), each batch it makes
    /// written as it comes.
    pub fn feed_with<T>(&mut self, feed: impl FnOnce(&mut Recorder, Sink<'_>) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let sinks = &mut self.sinks;
        let fed = feed(&mut self.recorder, &mut |batch| sinks.put(batch))?;
        if let Some(view) = &mut self.sinks.view {
            view.changes(&self.recorder.take_changes());
        }
        self.settle()?;
        Ok(fed)
    }

    /// Joins the rollouts of the run's session (a `codex exec` run's: see
    /// [`agentrace_core::exec`]), each file whole, parents first.
    pub fn join_rollouts(&mut self, files: &[crate::sources::rollouts::RolloutHead]) -> anyhow::Result<()> {
        self.feed_with(|recorder, sink| crate::sources::rollouts::feed_rollouts(recorder, files, sink))?;
        Ok(())
    }

    /// The session ended with the root turn open: the run fails (or is
    /// interrupted).
    pub fn abort(&mut self, error: String, interrupted: bool) -> anyhow::Result<()> {
        let envelopes = self.recorder.abort(now(), error, interrupted);
        self.write(envelopes)?;
        self.settle()
    }

    /// Input ran dry (or a timer fired while idle): writes what is queued
    /// and keeps the cadence.
    pub fn settle(&mut self) -> anyhow::Result<()> {
        if self.sinks.cadence == Cadence::Batched {
            self.sinks.writer.flush()?;
        }
        self.tick()
    }

    /// The writer's cadence after some work (cheap: see
    /// [`RunWriter::tick`]).
    pub fn tick(&mut self) -> anyhow::Result<()> {
        match self.sinks.cadence {
            Cadence::Batched => {
                if self.lent {
                    self.sinks.writer.tick_with(self.recorder.book())?;
                } else {
                    let state = self.recorder.state();
                    self.sinks.writer.tick(state.status(), || state.summary())?;
                }
            }
            Cadence::EachStatus => {
                let status = self.recorder.state().status();
                if self.status != Some(status) {
                    // Status changes are the moments someone may look:
                    // make them durable.
                    self.status = Some(status);
                    self.sinks.writer.sync()?;
                    self.record()?;
                }
            }
            Cadence::Import => {}
        }
        Ok(())
    }

    /// The end of a recording that indexes itself: the log made durable
    /// and the record and snapshot written on this thread while a second
    /// one opens the catalog and writes the run's search text, then, once
    /// handed the record, the run's row (about 20 ms for a 40 MB ingest,
    /// a little longer than the other three together), the reading thread
    /// being done. Returns the record as written.
    fn record_indexing(&mut self, texts: Texts) -> anyhow::Result<RunSummary> {
        let id = self.sinks.writer.run_id().clone();
        let (home, recorder, lent) = (&self.home, &self.recorder, self.lent);
        let writer = &mut self.sinks.writer;
        let (handover, handed) = std::sync::mpsc::sync_channel::<Recorded>(1);
        std::thread::scope(|scope| {
            let indexing = scope.spawn(move || index_recorded(home, &id, texts, move || handed.recv().ok()));
            let written = {
                // Dropped at the end of this block whatever happened: the
                // indexing then goes on, or ends with nothing to index.
                let handover = handover;
                (|| -> anyhow::Result<RunSummary> {
                    // The last lines go out first: the catalog stamps the
                    // log as it is.
                    writer.flush()?;
                    let summary = recorder.state().summary();
                    let book = lent.then(|| recorder.book());
                    let (checked, agents) = match book {
                        Some(book) => writer.checked_with_agents(&summary, book),
                        None => (writer.checked(&summary), None),
                    };
                    let _ = handover.send(Recorded {
                        summary: checked.clone(),
                        project: recorder.state().cwd().map(str::to_owned),
                        agents: agents.unwrap_or_else(|| recorder.state().agents()),
                    });
                    writer.sync()?;
                    writer.write_checked_record(&checked, book)?;
                    Ok(checked)
                })()
            };
            // A failed index is said by `index_recorded` (the next reader
            // catalogs the run); a panic there is said by its hook.
            let _ = indexing.join();
            written
        })
    }

    /// Writes the run record, its warnings counted by the book that folded
    /// the run; returns it as written.
    fn record(&self) -> anyhow::Result<RunSummary> {
        let summary = self.recorder.state().summary();
        let writer = &self.sinks.writer;
        Ok(match (self.sinks.cadence, self.lent) {
            (Cadence::Import, true) => writer.write_new_record_unsynced_with(&summary, self.recorder.book())?,
            (Cadence::Import, false) => {
                writer.write_record_unsynced(&summary)?;
                writer.checked(&summary)
            }
            (Cadence::Batched | Cadence::EachStatus, true) => writer.write_record_with(&summary, self.recorder.book())?,
            (Cadence::Batched | Cadence::EachStatus, false) => {
                writer.write_record(&summary)?;
                writer.checked(&summary)
            }
        })
    }

    fn write(&mut self, envelopes: Vec<Envelope>) -> anyhow::Result<()> {
        self.write_back(envelopes).map(drop)
    }

    /// [`Recording::write`], the envelopes given back once written (see
    /// [`Sinks::put_kept`]).
    fn write_back(&mut self, envelopes: Vec<Envelope>) -> anyhow::Result<Vec<Envelope>> {
        if envelopes.is_empty() {
            return Ok(envelopes);
        }
        let envelopes = self.write_kept(envelopes)?;
        self.tick()?;
        Ok(envelopes)
    }

    /// [`Recording::write`] without the cadence's record and sync, for the
    /// last envelopes of a run, whose end syncs and records once: the
    /// session's end is a status change, and its tick rewrote the record
    /// and the snapshot (4 MB for a 40 MB ingest) just before the end
    /// wrote both again.
    fn write_untimed(&mut self, envelopes: Vec<Envelope>) -> anyhow::Result<()> {
        self.write_kept(envelopes).map(drop)
    }

    /// [`Recording::write_untimed`], the envelopes given back once
    /// written (see [`Sinks::put_kept`]).
    fn write_kept(&mut self, envelopes: Vec<Envelope>) -> anyhow::Result<Vec<Envelope>> {
        let envelopes = self.sinks.put_kept(envelopes)?;
        if let Some(view) = &mut self.sinks.view {
            view.changes(&self.recorder.take_changes());
        }
        Ok(envelopes)
    }

    /// Finishes: what is left (partial last lines count as lines), the
    /// session's end when it ended (for `ended`; the recorder writes none
    /// twice), the log made durable (but for an import), and the record.
    pub fn finish(self, ended: Option<SessionEndReason>) -> anyhow::Result<Finished> {
        self.end(ended.map(|reason| (reason, None)))
    }

    /// [`Recording::finish`] of a session that ended for `reason` at `at`
    /// (a replayed log's own end).
    pub fn finish_at(self, reason: SessionEndReason, at: Timestamp) -> anyhow::Result<Finished> {
        self.end(Some((reason, Some(at))))
    }

    fn end(mut self, ended: Option<(SessionEndReason, Option<Timestamp>)>) -> anyhow::Result<Finished> {
        for direction in [Direction::ToServer, Direction::FromServer] {
            let last = match direction {
                Direction::ToServer => self.to_server.finish(),
                Direction::FromServer => self.from_server.finish(),
            };
            if let Some(line) = last.filter(|line| !is_blank(line)) {
                let envelopes = self.recorder.push(&input(&line, self.observed_at(), Some(direction)));
                self.write_untimed(envelopes)?;
            }
        }
        // An import's session may still grow: its attributor is not told
        // the input ended (what it would make of that is made when the
        // session is read on, or by the session's own end).
        if self.sinks.cadence != Cadence::Import {
            let last = self.recorder.finish();
            self.write_untimed(last)?;
        }
        if let Some((reason, at)) = ended {
            let at = at.unwrap_or_else(|| match self.book() {
                Some(book) => session_end_time(reason, book.state()),
                None => session_end_time(reason, self.recorder.state()),
            });
            let envelopes = self.recorder.end_session(at, reason);
            self.write_untimed(envelopes)?;
        }
        if let Some(copies) = self.sinks.copies.take() {
            copies.finish()?;
        }
        let mut texts = self.sinks.texts.take();
        let summary = match texts.take_if(|_| self.texts_to == TextsTo::Catalog && self.sinks.cadence != Cadence::Import) {
            Some(indexed) => self.record_indexing(indexed)?,
            None => {
                if self.sinks.cadence != Cadence::Import {
                    self.sinks.writer.sync()?;
                }
                self.record()?
            }
        };
        let id = self.sinks.writer.run_id().clone();
        let texts = match (self.texts_to, texts) {
            (TextsTo::Catalog, Some(texts)) => {
                let state = self.recorder.state();
                let recorded = Recorded { summary: summary.clone(), project: state.cwd().map(str::to_owned), agents: state.agents() };
                index_recorded(&self.home, &id, texts, || Some(recorded));
                Vec::new()
            }
            (TextsTo::Caller, Some(texts)) => {
                drop(self.sinks.writer);
                texts.settled_or_read(&self.home, &id)?
            }
            (TextsTo::Nowhere | TextsTo::Catalog | TextsTo::Caller, _) => Vec::new(),
        };
        Ok(Finished { summary, recorder: self.recorder, texts, bad: self.sinks.bad })
    }
}

fn is_blank(line: &AssembledLine) -> bool {
    agentrace_core::decode::is_blank(&line.bytes) && line.truncated_from.is_none()
}

fn input(line: &AssembledLine, observed_at: Timestamp, direction: Option<Direction>) -> InputLine<'_> {
    InputLine {
        bytes: &line.bytes,
        line_number: line.line_number,
        observed_at,
        direction,
        truncated_from: line.truncated_from,
    }
}

/// When a session that ended for `reason` ended: an input's or a
/// finished session's files end at their last envelope (so the log of the
/// same input is the same whenever it is read in); a live session ends
/// now.
pub fn session_end_time(reason: SessionEndReason, state: &RunState) -> Timestamp {
    match reason {
        SessionEndReason::EndOfInput | SessionEndReason::ImportFinished => {
            state.summary().updated_at.unwrap_or_else(now)
        }
        SessionEndReason::Exit
        | SessionEndReason::Closed
        | SessionEndReason::TapClosed
        | SessionEndReason::Idle
        | SessionEndReason::Other => now(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Records the real `single_fg` stream line by line on `cadence`; its
    /// log's bytes, its record, and how many writes the log took.
    fn recorded(cadence: Cadence) -> (String, serde_json::Value, u64) {
        recorded_by(cadence, false)
    }

    /// [`recorded`], the lines read and attributed on a second thread
    /// ([`Recording::lines_beside`]) when `beside`, in reads of 1 KiB.
    fn recorded_by(cadence: Cadence, beside: bool) -> (String, serde_json::Value, u64) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        let id = RunId::from("claude-live");
        let start = Timestamp::from_millis(1_795_000_000_000);
        let setup = Setup::new(Format::ClaudeStream).cadence(cadence).without_traceparent();
        let mut recording = Recording::open(&home, &id, &setup, || start).unwrap_or_else(|e| panic!("{e}"));
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/claude/single_fg/stream.jsonl");
        let text = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut assembler = LineAssembler::default();
        if beside {
            let mut reads = text.chunks(1024);
            recording
                .lines_beside(&SourcePart::Main, || {
                    // A read that completes no line is not the end.
                    for read in reads.by_ref() {
                        let lines = assembler.push(read);
                        if !lines.is_empty() {
                            return Ok(lines);
                        }
                    }
                    Ok(assembler.finish().into_iter().collect())
                })
                .unwrap_or_else(|e| panic!("{e}"));
        } else {
            for line in assembler.push(&text) {
                recording.line(&SourcePart::Main, &line).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        let writes = recording.writes();
        // Ended at its last line's time (an exit is stamped with the clock).
        recording.finish(Some(SessionEndReason::EndOfInput)).unwrap_or_else(|e| panic!("{e}"));
        let log = std::fs::read(home.log_path(&id)).unwrap_or_else(|e| panic!("{e}"));
        let record = std::fs::read(dir.path().join("runs/claude-live.json")).unwrap_or_else(|e| panic!("{e}"));
        (String::from_utf8_lossy(&log).into_owned(), serde_json::from_slice(&record).unwrap_or_else(|e| panic!("{e}")), writes)
    }

    /// `run claude`'s batched cadence writes the same log and record as a
    /// write per line does (a hook's), in batches: a stream read faster
    /// than the writer's batch window takes a handful of writes, not one
    /// per line that has envelopes.
    #[test]
    fn a_batched_recording_writes_the_same_log_and_record_as_one_written_line_by_line() {
        let (log, record, writes) = recorded(Cadence::EachStatus);
        let (batched_log, batched_record, batched_writes) = recorded(Cadence::Batched);
        assert_eq!((batched_log, batched_record), (log, record));
        assert!(batched_writes * 4 <= writes, "{batched_writes} writes batched, {writes} a line at a time");
    }

    /// Lines read and attributed on a second thread make the same log and
    /// record as lines recorded one by one on this one.
    #[test]
    fn lines_attributed_beside_make_the_same_log_and_record_as_lines_recorded_here() {
        let (log, record, _) = recorded(Cadence::Batched);
        let (beside_log, beside_record, _) = recorded_by(Cadence::Batched, true);
        assert_eq!((beside_log, beside_record), (log, record));
    }

    /// The first `count` lines of `text`.
    fn assembler_lines(text: &[u8], count: usize) -> Vec<AssembledLine> {
        LineAssembler::default().push(text).into_iter().take(count).collect()
    }

    /// Asked to (an input that ends), a recording writes its text to the
    /// catalog while it waits for the next lines, in a transaction that
    /// holds the catalog's write lock until the end commits it; its run is
    /// then listed and its text found, as when written at the end.
    #[test]
    fn a_recording_writes_its_text_while_it_waits_for_lines_when_asked() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        let id = RunId::from("early");
        let start = Timestamp::from_millis(1_795_000_000_000);
        let setup = Setup::new(Format::ClaudeStream).without_traceparent().texts(TextsTo::Catalog);
        let mut recording = Recording::create(&home, &id, &setup, start, None).unwrap_or_else(|e| panic!("{e}"));
        recording.write_text_early();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/claude/single_fg/stream.jsonl");
        let text = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut other = agentrace_store::Catalog::open(&home).unwrap_or_else(|e| panic!("{e}"));
        let mut lines = Some(LineAssembler::default().push(&text));
        let mut locked = false;
        // Borrowed mutably, so the reading thread may have them.
        let (catalog, lock_seen) = (&mut other, &mut locked);
        recording
            .lines_beside(&SourcePart::Main, move || {
                if let Some(lines) = lines.take() {
                    return Ok(lines);
                }
                // The next read waits until the recording, waiting for it,
                // holds the lock (or gives up after 10 s).
                let started = std::time::Instant::now();
                while !*lock_seen && started.elapsed() < Duration::from_secs(10) {
                    *lock_seen = !catalog.try_begin().unwrap_or_else(|e| panic!("{e}"));
                    catalog.commit().unwrap_or_else(|e| panic!("{e}"));
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(Vec::new())
            })
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(locked, "the recording writes its text while it waits");
        recording.finish(Some(SessionEndReason::EndOfInput)).unwrap_or_else(|e| panic!("{e}"));
        assert!(other.try_begin().unwrap_or_else(|e| panic!("{e}")), "the end released the lock");
        other.commit().unwrap_or_else(|e| panic!("{e}"));
        let (_, listed) = other.list_runs(&agentrace_store::catalog::RunFilter::default()).unwrap_or_else(|e| panic!("{e}"));
        let query = agentrace_store::catalog::SearchQuery { text: "delegate".to_owned(), run: None, actor: None, provider: None, project: None, since: None, until: None, limit: 10 };
        let hits = other.search(&home, &query).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((listed, hits.is_empty()), (1, false));
    }

    /// A read that fails midway ends the recording with its error; what was
    /// read before it is recorded, and the recorder attributes again after.
    #[test]
    fn a_read_that_fails_beside_is_reported_and_keeps_what_came_before() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        let id = RunId::from("cut");
        let start = Timestamp::from_millis(1_795_000_000_000);
        let setup = Setup::new(Format::ClaudeStream).without_traceparent();
        let mut recording = Recording::create(&home, &id, &setup, start, None).unwrap_or_else(|e| panic!("{e}"));
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/claude/single_fg/stream.jsonl");
        let text = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut reads = vec![Ok(assembler_lines(&text, 2))].into_iter();
        let failed = recording.lines_beside(&SourcePart::Main, || {
            reads.next().unwrap_or_else(|| Err(anyhow::anyhow!("disk gone")))
        });
        assert_eq!(failed.map_err(|error| error.to_string()), Err("disk gone".to_owned()));
        let mut one_by_one = Recording::create(&Home::at(dir.path().join("by-line")), &id, &setup, start, None).unwrap_or_else(|e| panic!("{e}"));
        for line in assembler_lines(&text, 2) {
            one_by_one.line(&SourcePart::Main, &line).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(
            (recording.recorder().next_sequence(), recording.state().summary()),
            (one_by_one.recorder().next_sequence(), one_by_one.state().summary())
        );
        let before = recording.recorder().next_sequence();
        for line in assembler_lines(&text, 3).into_iter().skip(2) {
            recording.line(&SourcePart::Main, &line).unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(recording.recorder().next_sequence() > before, "the attributor was given back");
    }

    /// An import's cadence writes the same envelopes as a live one, but
    /// leaves out the `raw` of every frame that references its source line
    /// and never tells the attributor the input ended (the session may
    /// grow).
    #[test]
    fn an_import_drops_referenced_frames_and_leaves_the_session_open_unless_told() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        let id = RunId::from("imported");
        let start = Timestamp::from_millis(1_795_000_000_000);
        let setup = Setup::new(Format::ClaudeStream).cadence(Cadence::Import).without_traceparent();
        let recording = Recording::create(&home, &id, &setup, start, Some("/work".to_owned())).unwrap_or_else(|e| panic!("{e}"));
        assert!(!recording.session_over());
        let finished = recording.finish(None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((finished.summary.counts.events, finished.texts.len(), finished.bad.count), (1, 0, 0));
        let again = Recording::continue_with(&home, &id, &setup, finished.recorder).unwrap_or_else(|e| panic!("{e}"));
        let Some(again) = again else { panic!("the log ends where the recorder does") };
        let ended = again.finish(Some(SessionEndReason::ImportFinished)).unwrap_or_else(|e| panic!("{e}"));
        let (envelopes, torn) = agentrace_store::read_log(&home.log_path(&id)).unwrap_or_else(|e| panic!("{e}"));
        let kinds: Vec<String> = envelopes
            .iter()
            .map(|envelope| serde_json::to_value(&envelope.event).ok().and_then(|value| value.get("type").and_then(|kind| kind.as_str().map(str::to_owned))).unwrap_or_default())
            .collect();
        assert_eq!((kinds, torn, ended.summary.counts.events), (vec!["run_started".to_owned(), "session_ended".to_owned()], Vec::new(), 2));
    }
}
