//! Writing a run (§5 durability): the append-only log, one whole line per
//! envelope with the sequence checked, the run record replaced atomically,
//! and the snapshot of the log's fold (see [`crate::fold`]) kept beside a
//! long log. It decides how bytes reach the disk, never what an envelope
//! says.
//!
//! Group commit: envelopes are queued ([`RunWriter::queue`]) and a batch
//! goes out in one `write` when it reaches [`BatchPolicy::max_envelopes`] or
//! [`BatchPolicy::max_bytes`], when it is older than
//! [`BatchPolicy::max_delay`] or when the caller flushes (a live recorder
//! does when its input runs dry). An envelope is acknowledged
//! ([`RunWriter::acknowledged`]) once its batch is written. While a run is
//! live the record is rewritten at most every [`BatchPolicy::record_every`]
//! and the log synced at most every [`BatchPolicy::sync_every`]
//! ([`RunWriter::tick`]); at the end both are synced ([`RunWriter::sync`],
//! [`RunWriter::write_record`]).
//!
//! One fold: a writer driven by a recorder does not fold the log a second
//! time. [`RunWriter::with_book_lent`] makes it keep only the file side of
//! the fold (offsets, the index), and the recorder's run book, which has
//! folded every envelope the writer is given, is lent to each call that
//! writes a record or a snapshot ([`RunWriter::tick_with`],
//! [`RunWriter::write_record_with`], [`RunWriter::checked_with`]). A writer
//! given envelopes alone keeps a book of its own.
//!
//! Lines are v2 envelopes, or, for a writer made
//! [`RunWriter::with_lean_lines`], the leaner v3 line and its definitions
//! ([`crate::lean`]).

use std::cell::Cell;
use std::fmt;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentrace_core::book::RunBook;
use agentrace_core::model::RunStatus;
use agentrace_core::state::{AgentNode, RunSummary};
use agentrace_core::warnings::WarningConfig;
use agentrace_core::{Envelope, RunId};

use crate::error::StoreError;
use crate::files::replace_unsynced;
use crate::fold::{fingerprint, keep_tail, RunFold};
use crate::full_line::FullLines;
use crate::lean::Encoder;
use crate::reader::LineAt;

/// A log at least this long gets a snapshot with each record written:
/// folding a shorter one from its start takes a reader a few milliseconds.
pub const SNAPSHOT_MIN_BYTES: u64 = 1024 * 1024;

/// A snapshot is rewritten whenever this many bytes were appended since the
/// last one, so a reader of a live run folds at most about this much.
pub const SNAPSHOT_EVERY_BYTES: u64 = 4 * 1024 * 1024;

/// When a writer writes, rewrites the record and syncs: the group-commit
/// knobs. [`BatchPolicy::default`] is what every recording uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPolicy {
    /// A batch closes at this many envelopes.
    pub max_envelopes: usize,
    /// A batch closes at this many encoded bytes.
    pub max_bytes: usize,
    /// A batch older than this closes at the next envelope queued (or the
    /// next [`RunWriter::tick`]).
    pub max_delay: Duration,
    /// The live record (and the snapshot with it) is rewritten at most this
    /// often, status changes included.
    pub record_every: Duration,
    /// The log is synced at most this often while live.
    pub sync_every: Duration,
}

impl Default for BatchPolicy {
    fn default() -> Self {
        Self {
            // 1 MiB or 4096 lines: big enough that a flood costs a system
            // call per megabyte, small enough that a batch is copied once
            // while hot in the cache.
            max_envelopes: 4096,
            max_bytes: 1024 * 1024,
            max_delay: Duration::from_millis(5),
            record_every: Duration::from_millis(250),
            sync_every: Duration::from_secs(1),
        }
    }
}

/// The writer's clock: monotonic time, injectable so tests can step it.
#[derive(Clone)]
pub struct WriterClock(Arc<dyn Fn() -> Instant + Send + Sync>);

impl WriterClock {
    /// The system's monotonic clock.
    pub fn system() -> Self {
        Self(Arc::new(Instant::now))
    }

    /// A clock that reads `now` (a test's stepped clock).
    pub fn from_fn(now: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        Self(Arc::new(now))
    }

    fn now(&self) -> Instant {
        (self.0)()
    }
}

impl fmt::Debug for WriterClock {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("WriterClock")
    }
}

/// The lines queued and not yet written.
#[derive(Debug, Default)]
struct Batch {
    /// Encoded lines, each ending in `\n`.
    bytes: Vec<u8>,
    /// How many envelopes they are.
    envelopes: usize,
    /// When the first of them was queued.
    since: Option<Instant>,
}

/// What [`RunWriter::tick`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ticked {
    /// A batch was written.
    pub wrote: bool,
    /// The record was rewritten.
    pub record: bool,
    /// The log was synced.
    pub synced: bool,
}

/// When the live record and the sync are next due.
#[derive(Debug, Default)]
struct Cadence {
    /// The status the last record written had.
    recorded_status: Option<RunStatus>,
    /// When the record was last rewritten.
    recorded_at: Option<Instant>,
    /// Envelopes were queued since the record was last rewritten.
    record_stale: bool,
    /// When the log was last synced.
    synced_at: Option<Instant>,
    /// Bytes were written since the last sync.
    unsynced: bool,
    /// The log's length up to which the disk was told to start writing
    /// (see [`WRITEBACK_EVERY_BYTES`]).
    writeback_from: u64,
    /// Times it was told.
    writebacks: u64,
}

/// A log that is synced (a recording's, not an import's) has the disk start
/// writing each this many bytes as soon as they are written, so the sync
/// at its end waits for the last few only: a 40 MB ingest writes an 82 MB
/// log, whose one sync at the end took 45 ms, three times what `cp` of the
/// input takes, after the kernel had written none of it.
pub const WRITEBACK_EVERY_BYTES: u64 = 8 * 1024 * 1024;

/// Appends envelopes to one run's log and rewrites its record.
///
/// Made by [`Home::create_run`](crate::Home::create_run) (a new log) or
/// [`Home::append_run`](crate::Home::append_run) (continuing one).
#[derive(Debug)]
pub struct RunWriter {
    file: File,
    log_path: PathBuf,
    record_path: PathBuf,
    run_id: RunId,
    next_sequence: u64,
    /// A write failed part way: the log may end in a torn line, which the
    /// next line must not be glued to.
    needs_newline: bool,
    snapshot_path: PathBuf,
    /// The fold of every line written, while it is known to match the log
    /// byte for byte (dropped after a failed write). With the book lent,
    /// only its file side (offsets, index) is kept here.
    fold: Option<RunFold>,
    /// The warning config its record is judged by: the home's, so that a
    /// list of runs counts what `show` and `check` give.
    judging: Arc<WarningConfig>,
    /// The run book is the caller's, lent to each call that needs it
    /// ([`RunWriter::with_book_lent`]).
    lent: bool,
    /// The last bytes of the log, for the snapshot's fingerprint.
    tail: Vec<u8>,
    /// The log length the last snapshot covered (a cell: records, and with
    /// them snapshots, are written through `&self`).
    snapshot_offset: Cell<u64>,
    /// When the last snapshot was written.
    snapshot_at: Cell<Option<Instant>>,
    /// The last snapshot's bytes' buffer, reused for the next.
    snapshot_buffer: std::cell::RefCell<Vec<u8>>,
    /// Lines queued for the next write.
    batch: Batch,
    /// The highest sequence written to the log (0 for none).
    acknowledged: u64,
    /// How often to write, record and sync.
    policy: BatchPolicy,
    clock: WriterClock,
    cadence: Cadence,
    /// Batches written (one `write` each), for tests and benchmarks.
    writes: u64,
    /// Writes v3 lines, numbering actors and paths on from the log's
    /// definitions (`None`: v2 lines).
    lean: Option<Encoder>,
    /// Writes v2 lines (when `lean` is `None`).
    full: FullLines,
    /// The log's length before the queued batch (`None` once a write
    /// failed part way: where the next lines land is then unknown).
    written_bytes: Option<u64>,
    /// Where the lines of the last [`RunWriter::queue`] call are (the
    /// catalog's texts keep them: the log is not read back to learn them).
    queued_lines: Vec<LineAt>,
}

/// Where a writer's fold starts: the log's current fold and last bytes.
#[derive(Debug)]
pub(crate) struct Resumed {
    /// The fold of the whole log so far (none: no snapshots from this writer).
    pub fold: Option<RunFold>,
    /// The warning config its record is judged by (the home's).
    pub judging: Arc<WarningConfig>,
    /// The last bytes of the log.
    pub tail: Vec<u8>,
    /// The log length the snapshot on disk covers (0 for none).
    pub snapshot_offset: u64,
}

impl RunWriter {
    /// A writer over an open log (opened for appending) whose next envelope
    /// gets `next_sequence`.
    pub(crate) fn new(
        file: File,
        paths: [PathBuf; 3],
        run_id: RunId,
        next_sequence: u64,
        resumed: Resumed,
    ) -> Self {
        let [log_path, record_path, snapshot_path] = paths;
        // Where the first line queued lands: one fstat of a file just
        // opened for appending.
        let written_bytes = file.metadata().ok().map(|metadata| metadata.len());
        Self {
            file,
            log_path,
            record_path,
            run_id,
            next_sequence,
            needs_newline: false,
            snapshot_path,
            fold: resumed.fold,
            judging: resumed.judging,
            lent: false,
            tail: resumed.tail,
            snapshot_offset: Cell::new(resumed.snapshot_offset),
            snapshot_at: Cell::new(None),
            snapshot_buffer: std::cell::RefCell::new(Vec::new()),
            batch: Batch::default(),
            acknowledged: next_sequence.saturating_sub(1),
            policy: BatchPolicy::default(),
            clock: WriterClock::system(),
            // What the log held before is not this writer's to write.
            cadence: Cadence {
                writeback_from: written_bytes.unwrap_or(0),
                ..Cadence::default()
            },
            writes: 0,
            lean: None,
            full: FullLines::default(),
            written_bytes,
            queued_lines: Vec::new(),
        }
    }

    /// This writer writing the leaner v3 line ([`crate::lean`]): no
    /// `runId` or `version` on each line, each actor and source path
    /// defined once in the log and named by its index after. A log it
    /// continues keeps its lines as they are (v2 or v3) and its numbering
    /// goes on from the definitions already in it. Readers expand each
    /// line back to the v2 envelope it was given.
    pub fn with_lean_lines(mut self) -> Self {
        let dictionary = self.fold.as_ref().map(RunFold::dictionary).cloned().unwrap_or_default();
        self.lean = Some(Encoder::continuing(&dictionary));
        self
    }

    /// This writer folding nothing itself: its caller's run book (a
    /// recorder's, which has folded every envelope given to this writer,
    /// in order, before it is queued) is lent to each call that writes a
    /// record or a snapshot, so every envelope is folded once. Those calls
    /// are [`RunWriter::tick_with`], [`RunWriter::write_record_with`] and
    /// [`RunWriter::checked_with`]; their own-book forms then write no
    /// snapshot and count no warnings. A snapshot is written only when the
    /// lent book has folded exactly the lines written (its last sequence
    /// is the log's), so it is never ahead of the log.
    pub fn with_book_lent(mut self) -> Self {
        self.fold = self.fold.take().map(RunFold::without_book);
        self.lent = true;
        self
    }

    /// This writer with other batch knobs.
    pub fn with_policy(mut self, policy: BatchPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// This writer reading time from `clock` (tests step their own).
    pub fn with_clock(mut self, clock: WriterClock) -> Self {
        self.clock = clock;
        self
    }

    /// Where the lines of the envelopes of the last [`RunWriter::queue`]
    /// (or [`RunWriter::append`]) call are in the log, one per envelope;
    /// `None` when that is unknown (a write failed part way before).
    pub fn queued_lines(&self) -> Option<&[LineAt]> {
        self.written_bytes.map(|_| self.queued_lines.as_slice())
    }

    /// The highest sequence whose line has been written to the log (given
    /// to the kernel: durable after the next sync). Envelopes queued after
    /// it are not yet acknowledged.
    pub fn acknowledged(&self) -> u64 {
        self.acknowledged
    }

    /// Envelopes queued and not yet written.
    pub fn queued(&self) -> usize {
        self.batch.envelopes
    }

    /// Batches written so far, one `write` each.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// How many times the disk was told to start writing the log ahead of
    /// a sync ([`WRITEBACK_EVERY_BYTES`]), for tests and benchmarks.
    pub fn writebacks(&self) -> u64 {
        self.cadence.writebacks
    }

    /// The run this writer writes.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The record file.
    pub fn record_path(&self) -> &Path {
        &self.record_path
    }

    /// The sequence the next envelope must have: 1 for a new log.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// Appends envelopes, each as one JSON line, and writes them (with
    /// anything queued before) at once: [`RunWriter::queue`] then
    /// [`RunWriter::flush`].
    ///
    /// The whole call is checked and encoded before anything is written, so
    /// a refused call (a sequence that is not exactly the next one, an
    /// envelope of another run) leaves the log untouched. Nothing is
    /// durable before [`RunWriter::sync`].
    ///
    /// Line breaks between the tokens of a `raw` frame are written as
    /// spaces: the one change ever made to a raw frame, and the only way to
    /// keep a pretty-printed frame on one line without re-encoding it.
    pub fn append(&mut self, envelopes: &[Envelope]) -> Result<(), StoreError> {
        self.queue(envelopes)?;
        self.flush()
    }

    /// Queues envelopes for the next batch; the batch is written when it
    /// is full or old (see [`BatchPolicy`]). A refused call (see
    /// [`RunWriter::append`]) queues none of them.
    pub fn queue(&mut self, envelopes: &[Envelope]) -> Result<(), StoreError> {
        self.queued_lines.clear();
        if envelopes.is_empty() {
            return Ok(());
        }
        // Encoded straight onto the batch; `ends` marks where each line ends
        // in it. A refused envelope cuts the batch back to where it was.
        let before = self.batch.bytes.len();
        if before == 0 {
            self.batch.bytes.reserve(envelopes.len() * 512 + 1);
            if self.needs_newline {
                self.batch.bytes.push(b'\n');
            }
        }
        let first_line = self.batch.bytes.len();
        let mut ends = Vec::with_capacity(envelopes.len());
        // Where each envelope's own line starts (after the v3 definitions
        // put before it).
        let mut starts = Vec::with_capacity(envelopes.len());
        let mark = self.lean.as_ref().map_or(0, Encoder::pending_mark);
        for (expected, envelope) in (self.next_sequence..).zip(envelopes) {
            match self.encode(envelope, expected) {
                Ok(start) => starts.push(start),
                Err(error) => {
                    self.batch.bytes.truncate(before);
                    if let Some(encoder) = &mut self.lean {
                        encoder.forget_since(mark);
                    }
                    return Err(error);
                }
            }
            ends.push(self.batch.bytes.len());
        }
        if let Some(written) = self.written_bytes {
            for (start, end) in starts.iter().zip(&ends) {
                // `end` is past the line's `\n`.
                self.queued_lines.push(LineAt { offset: written + *start as u64, length: (end - start - 1) as u64 });
            }
        }
        self.next_sequence += ends.len() as u64;
        self.batch.envelopes += ends.len();
        self.cadence.record_stale = true;
        let now = self.clock.now();
        let since = *self.batch.since.get_or_insert(now);
        // The fold follows the queue, at the offsets the lines will have:
        // if their write fails, it is dropped (see `flush`).
        if let Some(fold) = &mut self.fold {
            // Each line's definitions are in its bytes (before it), so the
            // fold's dictionary covers the offsets it reaches.
            if let Some(encoder) = &self.lean {
                fold.define(encoder.pending_since(mark));
            }
            let mut line_start = fold.offset();
            let mut previous_end = first_line;
            for (envelope, end) in envelopes.iter().zip(&ends) {
                let line_end = line_start + (end - previous_end) as u64;
                if self.lent {
                    fold.advance(envelope, line_start, line_end);
                } else {
                    fold.apply(envelope, line_start, line_end);
                }
                line_start = line_end;
                previous_end = *end;
            }
        }
        if self.batch.envelopes >= self.policy.max_envelopes
            || self.batch.bytes.len() >= self.policy.max_bytes
            || now.duration_since(since) >= self.policy.max_delay
        {
            self.flush()?;
        }
        Ok(())
    }

    /// Encodes `envelope` onto the batch as one line, when it is the next
    /// of this run; where in the batch its line starts (after any v3
    /// definition lines it needed).
    fn encode(&mut self, envelope: &Envelope, expected: u64) -> Result<usize, StoreError> {
        if envelope.run_id != self.run_id {
            return Err(StoreError::WrongRun {
                path: self.log_path.clone(),
                expected: self.run_id.clone(),
                found: envelope.run_id.clone(),
            });
        }
        if envelope.sequence != expected {
            return Err(StoreError::SequenceGap {
                path: self.log_path.clone(),
                expected,
                found: envelope.sequence,
            });
        }
        let start = self.batch.bytes.len();
        let line_start = match &mut self.lean {
            Some(encoder) => encoder.encode(envelope, &mut self.batch.bytes),
            None => self.full.encode(envelope, &mut self.batch.bytes).map(|()| start),
        };
        let line_start = line_start.map_err(|source| StoreError::Encode {
            what: format!("envelope {}", envelope.sequence),
            path: self.log_path.clone(),
            source,
        })?;
        // Definition lines before it are serde_json's own, without breaks.
        keep_on_one_line(&mut self.batch.bytes[line_start..]);
        self.batch.bytes.push(b'\n');
        Ok(line_start)
    }

    /// Writes the queued batch in one `write`: lines go out in order, so a
    /// crash can tear only the last one. Its envelopes are then
    /// acknowledged.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        if self.batch.bytes.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        if let Err(source) = self.file.write_all(&batch.bytes) {
            self.needs_newline = true;
            // The log may now hold part of a line, and lacks lines the fold
            // saw: the fold no longer describes it.
            self.fold = None;
            // Their definitions may be torn or missing: a later line
            // defines its values again, under new indices.
            if let Some(encoder) = &mut self.lean {
                encoder.forget_since(0);
            }
            self.written_bytes = None;
            return Err(StoreError::io("append to run log", &self.log_path, source));
        }
        self.writes += 1;
        if let Some(encoder) = &mut self.lean {
            encoder.written();
        }
        self.needs_newline = false;
        self.written_bytes = self.written_bytes.map(|written| written + batch.bytes.len() as u64);
        self.cadence.unsynced = true;
        self.acknowledged = self.next_sequence - 1;
        keep_tail(&mut self.tail, &batch.bytes);
        self.start_writeback();
        // The batch's buffer is kept for the next one (no new allocation per
        // batch).
        let mut bytes = batch.bytes;
        bytes.clear();
        self.batch.bytes = bytes;
        // A lent book is not here: the caller's next tick writes it.
        if !self.lent {
            self.snapshot_if_grown(None);
        }
        Ok(())
    }

    /// Tells the disk to start writing what was written since the last
    /// such call, once that is [`WRITEBACK_EVERY_BYTES`], for a log that
    /// has been synced (an import's never is: its logs are derived, and
    /// their writing is left to the kernel). The pages stay cached: they
    /// are dirty or being written when the advice is given, and only clean
    /// ones are dropped. Advice only: when refused, the next sync does all
    /// the writing, as before.
    fn start_writeback(&mut self) {
        let Some(written) = self.written_bytes else {
            return;
        };
        let from = self.cadence.writeback_from.min(written);
        if self.cadence.synced_at.is_none() || written - from < WRITEBACK_EVERY_BYTES {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            use nix::fcntl::{posix_fadvise, PosixFadviseAdvice};
            let offset = i64::try_from(from).unwrap_or(i64::MAX);
            let length = i64::try_from(written - from).unwrap_or(i64::MAX);
            let _ = posix_fadvise(&self.file, offset, length, PosixFadviseAdvice::POSIX_FADV_DONTNEED);
        }
        self.cadence.writeback_from = written;
        self.cadence.writebacks += 1;
    }

    /// A snapshot when the log grew 4 MiB past the last, but no more often
    /// than the record: a snapshot is the whole fold, and written on every
    /// 4 MiB of a fast ingest it cost more than the log.
    fn snapshot_if_grown(&self, lent: Option<&RunBook>) {
        if let Some(fold) = &self.fold {
            let since = self.snapshot_at.get();
            if fold.offset() - self.snapshot_offset.get() >= SNAPSHOT_EVERY_BYTES
                && since.is_none_or(|at| self.clock.now().duration_since(at) >= self.policy.record_every)
            {
                self.save_snapshot_quietly(lent);
            }
        }
    }

    /// The live cadence, cheap enough to call after every envelope queued,
    /// with the run's status now and a way to get its summary: writes the
    /// batch when it is older than [`BatchPolicy::max_delay`]; rewrites the
    /// record (without `fsync`, the batch written first) when envelopes were
    /// queued or the status changed since the last one and
    /// [`BatchPolicy::record_every`] has passed since it (so a status change
    /// inside the window is written by a later tick when it closes; the
    /// first status a run gets is recorded at once); syncs the log when
    /// bytes were written and [`BatchPolicy::sync_every`] has passed since
    /// the last sync. A caller whose input runs dry calls
    /// [`RunWriter::flush`] and then this, and ticks again within a window
    /// while idle, so nothing waits on input that may never come.
    pub fn tick(
        &mut self,
        status: RunStatus,
        summary: impl FnOnce() -> RunSummary,
    ) -> Result<Ticked, StoreError> {
        self.tick_lent(status, summary, None)
    }

    /// [`RunWriter::tick`] of a writer whose book is lent
    /// ([`RunWriter::with_book_lent`]): the status and summary are the
    /// book's, and the snapshot (when due) is written from it.
    pub fn tick_with(&mut self, book: &RunBook) -> Result<Ticked, StoreError> {
        let state = book.state();
        self.tick_lent(state.status(), || state.summary(), Some(book))
    }

    fn tick_lent(
        &mut self,
        status: RunStatus,
        summary: impl FnOnce() -> RunSummary,
        lent: Option<&RunBook>,
    ) -> Result<Ticked, StoreError> {
        let mut ticked = Ticked::default();
        if self.batch_due() {
            self.flush()?;
            ticked.wrote = true;
        }
        let now = self.clock.now();
        let due = |at: Option<Instant>, every: Duration| {
            at.is_none_or(|at| now.duration_since(at) >= every)
        };
        let first = self.cadence.recorded_status.is_none();
        let changed = self.cadence.recorded_status != Some(status);
        if (changed || self.cadence.record_stale)
            && (first || due(self.cadence.recorded_at, self.policy.record_every))
        {
            ticked.wrote |= !self.batch.bytes.is_empty();
            self.flush()?;
            let bytes = self.record_bytes(&summary(), lent)?;
            replace_unsynced(&self.record_path, &bytes, "write run record")?;
            // The snapshot goes with it once the log has grown 4 MiB past
            // the last (or first reaches 1 MiB): a snapshot is the whole
            // fold, too big to rewrite four times a second.
            let offset = self.fold.as_ref().map_or(0, RunFold::offset);
            let covered = self.snapshot_offset.get();
            if offset - covered.min(offset) >= SNAPSHOT_EVERY_BYTES
                || (covered == 0 && offset >= SNAPSHOT_MIN_BYTES)
            {
                self.save_snapshot_quietly(lent);
            }
            self.cadence.recorded_status = Some(status);
            self.cadence.recorded_at = Some(now);
            self.cadence.record_stale = false;
            ticked.record = true;
        }
        if self.cadence.unsynced && due(self.cadence.synced_at, self.policy.sync_every) {
            ticked.wrote |= !self.batch.bytes.is_empty();
            self.sync()?;
            ticked.synced = true;
        }
        if self.lent {
            // What `flush` does for a book of the writer's own (cheap
            // unless the log grew 4 MiB).
            self.snapshot_if_grown(lent);
        }
        Ok(ticked)
    }

    /// The batch is due to be written by age alone (a caller idling on its
    /// input asks, to write within [`BatchPolicy::max_delay`]).
    pub fn batch_due(&self) -> bool {
        self.batch
            .since
            .is_some_and(|since| self.clock.now().duration_since(since) >= self.policy.max_delay)
    }

    /// Writes the snapshot of the log's fold beside it (replaced by a
    /// rename, never synced: a lost or torn snapshot only makes readers fold
    /// the log). Refused when this writer's fold no longer matches the log
    /// (after a failed write).
    pub fn save_snapshot(&self) -> Result<(), StoreError> {
        self.save_snapshot_lent(None)
    }

    /// [`RunWriter::save_snapshot`] of a writer whose book is lent
    /// ([`RunWriter::with_book_lent`]), from `book`: refused unless it has
    /// folded exactly the lines written.
    pub fn save_snapshot_with_book(&self, book: &RunBook) -> Result<(), StoreError> {
        self.save_snapshot_lent(Some(book))
    }

    /// The book a record or snapshot is written from: the lent one, or
    /// this writer's own; `None` when the fold no longer matches the log,
    /// or the book lent is not of exactly the lines written.
    fn book<'a>(&'a self, lent: Option<&'a RunBook>) -> Option<&'a RunBook> {
        let fold = self.fold.as_ref()?;
        if !self.lent {
            return Some(fold.book());
        }
        lent.filter(|book| book.state().last_sequence() == fold.highest_sequence())
    }

    fn save_snapshot_lent(&self, lent: Option<&RunBook>) -> Result<(), StoreError> {
        if !self.batch.bytes.is_empty() {
            return Err(StoreError::io(
                "snapshot",
                &self.snapshot_path,
                std::io::Error::other("lines are queued: flush first"),
            ));
        }
        let (Some(fold), Some(book)) = (&self.fold, self.book(lent)) else {
            return Err(StoreError::io(
                "snapshot",
                &self.snapshot_path,
                std::io::Error::other(if self.fold.is_none() {
                    "a failed write left the log unlike the fold"
                } else {
                    "the book lent is not of the lines written"
                }),
            ));
        };
        let mut bytes = self.snapshot_buffer.take();
        bytes.clear();
        fold.write_snapshot_with(book, fingerprint(&self.tail), &mut bytes)
            .map_err(|source| StoreError::Encode {
                what: String::from("the run snapshot"),
                path: self.snapshot_path.clone(),
                source,
            })?;
        let written = replace_unsynced(&self.snapshot_path, &bytes, "write run snapshot");
        self.snapshot_buffer.replace(bytes);
        written?;
        self.snapshot_offset.set(fold.offset());
        self.snapshot_at.set(Some(self.clock.now()));
        Ok(())
    }

    /// A snapshot when the log is long enough to need one and grew since the
    /// last. Errors are dropped on purpose: the snapshot is a cache, and
    /// failing to write it must never fail the recording.
    fn save_snapshot_quietly(&self, lent: Option<&RunBook>) {
        let offset = self.fold.as_ref().map_or(0, RunFold::offset);
        if self.batch.bytes.is_empty()
            && offset >= SNAPSHOT_MIN_BYTES && offset != self.snapshot_offset.get() {
            let _ = self.save_snapshot_lent(lent);
        }
    }

    /// Makes every line queued or appended so far durable (the batch
    /// written, then `fsync` of the data).
    pub fn sync(&mut self) -> Result<(), StoreError> {
        self.flush()?;
        self.file
            .flush()
            .and_then(|()| self.file.sync_data())
            .map_err(|source| StoreError::io("sync run log", &self.log_path, source))?;
        self.cadence.synced_at = Some(self.clock.now());
        self.cadence.unsynced = false;
        if let Some(written) = self.written_bytes {
            self.cadence.writeback_from = written;
        }
        Ok(())
    }

    /// Replaces the run record with `summary`, atomically: readers see the
    /// old record or the new one, never a mix (write a temporary file beside
    /// it, `fsync`, rename over). Lines still queued are not written: call
    /// [`RunWriter::flush`] or [`RunWriter::sync`] first.
    /// A long log's snapshot is brought up to date with it.
    pub fn write_record(&self, summary: &RunSummary) -> Result<(), StoreError> {
        self.write_record_lent(summary, None)
    }

    /// [`RunWriter::write_record`] of a writer whose book is lent
    /// ([`RunWriter::with_book_lent`]): the warnings counted and the
    /// snapshot written from `book`. Returns the summary as written (what
    /// [`RunWriter::checked_with`] gives), so a caller indexing the run
    /// need not run the detectors again.
    pub fn write_record_with(&self, summary: &RunSummary, book: &RunBook) -> Result<RunSummary, StoreError> {
        let checked = self.checked_lent(summary, Some(book));
        let bytes = self.summary_bytes(&checked)?;
        write_atomically(&self.record_path, &bytes)?;
        self.save_snapshot_quietly(Some(book));
        Ok(checked)
    }

    /// [`RunWriter::write_record`] of a summary already checked
    /// ([`RunWriter::checked`], [`RunWriter::checked_with`] with `lent`),
    /// so the detectors are not run twice for a caller that needed the
    /// checked summary first (to index the run beside the writing).
    pub fn write_checked_record(&self, checked: &RunSummary, lent: Option<&RunBook>) -> Result<(), StoreError> {
        let bytes = self.summary_bytes(checked)?;
        write_atomically(&self.record_path, &bytes)?;
        self.save_snapshot_quietly(lent);
        Ok(())
    }

    fn write_record_lent(&self, summary: &RunSummary, lent: Option<&RunBook>) -> Result<(), StoreError> {
        let bytes = self.record_bytes(summary, lent)?;
        write_atomically(&self.record_path, &bytes)?;
        self.save_snapshot_quietly(lent);
        Ok(())
    }

    /// Like [`RunWriter::write_record`] (still replaced by a rename, so
    /// readers never see half a record) but without `fsync`: for runs that
    /// are rebuilt from their sources anyway, such as imported ones.
    pub fn write_record_unsynced(&self, summary: &RunSummary) -> Result<(), StoreError> {
        let bytes = self.record_bytes(summary, None)?;
        replace_unsynced(&self.record_path, &bytes, "write run record")?;
        self.save_snapshot_quietly(None);
        Ok(())
    }

    /// Like [`RunWriter::write_record_unsynced`] for a run created with no
    /// record yet (an import writing a thousand runs): written in place, not
    /// through a temporary file, because creating files is what such an
    /// import spends most on. A reader meeting half a record cannot parse it
    /// and folds the log instead, as for any unreadable record.
    pub fn write_new_record_unsynced(&self, summary: &RunSummary) -> Result<(), StoreError> {
        let bytes = self.record_bytes(summary, None)?;
        fs::write(&self.record_path, &bytes)
            .map_err(|source| StoreError::io("write run record", &self.record_path, source))?;
        self.save_snapshot_quietly(None);
        Ok(())
    }

    /// [`RunWriter::write_new_record_unsynced`] of a writer whose book is
    /// lent ([`RunWriter::with_book_lent`]): the warnings counted and the
    /// snapshot written from `book`; returns the summary as written.
    pub fn write_new_record_unsynced_with(&self, summary: &RunSummary, book: &RunBook) -> Result<RunSummary, StoreError> {
        let checked = self.checked_lent(summary, Some(book));
        let bytes = self.summary_bytes(&checked)?;
        fs::write(&self.record_path, &bytes)
            .map_err(|source| StoreError::io("write run record", &self.record_path, source))?;
        self.save_snapshot_quietly(Some(book));
        Ok(checked)
    }

    /// The run book this writer folds itself (`None` when its book is lent,
    /// or a failed write left the log unlike the fold): what a caller
    /// without a whole book of its own asks of the run so far.
    pub fn own_book(&self) -> Option<&RunBook> {
        if self.lent {
            return None;
        }
        self.book(None)
    }

    /// The snapshot file beside the log.
    pub fn snapshot_path(&self) -> &Path {
        &self.snapshot_path
    }

    /// `summary` as the record has it: counting the warnings `show` lists
    /// (but for those that need a clock or the user's rules), so that a
    /// list of runs agrees with it without reading every log: the fold has
    /// what the detectors read.
    pub fn checked(&self, summary: &RunSummary) -> RunSummary {
        self.checked_lent(summary, None)
    }

    /// [`RunWriter::checked`] of a writer whose book is lent
    /// ([`RunWriter::with_book_lent`]), by `book`.
    pub fn checked_with(&self, summary: &RunSummary, book: &RunBook) -> RunSummary {
        self.checked_lent(summary, Some(book))
    }

    /// [`RunWriter::checked_with`], with the agent tree the check worked
    /// out beside it (`book`'s state's, as
    /// [`agentrace_core::state::RunState::agents`] gives it):
    /// a caller that needs both works the tree out once (a tree of 1,800
    /// threads takes about 2 ms). `None` for the tree when this writer
    /// folds its own book, not the one lent.
    pub fn checked_with_agents(&self, summary: &RunSummary, book: &RunBook) -> (RunSummary, Option<Vec<AgentNode>>) {
        let (checked, agents) = self.checked_parts(summary, Some(book));
        (checked, agents.filter(|_| self.lent))
    }

    fn checked_lent(&self, summary: &RunSummary, lent: Option<&RunBook>) -> RunSummary {
        self.checked_parts(summary, lent).0
    }

    fn checked_parts(&self, summary: &RunSummary, lent: Option<&RunBook>) -> (RunSummary, Option<Vec<AgentNode>>) {
        // A lent book ahead of the log (envelopes not yet queued) still
        // counts the run's warnings as the record should.
        let book = if self.lent { lent } else { self.book(None) };
        match book {
            Some(book) => {
                let skipped = self.fold.as_ref().map_or(0, RunFold::skipped);
                let (view, _) = book.checked_view(&self.judging, None, skipped);
                let checked = RunSummary {
                    warning_count: view.run.warning_count,
                    warning_codes: view.run.warning_codes,
                    note_codes: view.run.note_codes,
                    // The book holds the child work a state-only
                    // recorder's summary knows nothing of.
                    helpers_working: view.run.helpers_working,
                    session_ended: view.run.session_ended,
                    ..summary.clone()
                };
                (checked, Some(view.agents))
            }
            None => (summary.clone(), None),
        }
    }

    fn record_bytes(&self, summary: &RunSummary, lent: Option<&RunBook>) -> Result<Vec<u8>, StoreError> {
        self.summary_bytes(&self.checked_lent(summary, lent))
    }

    /// The record's bytes of a summary already checked.
    fn summary_bytes(&self, summary: &RunSummary) -> Result<Vec<u8>, StoreError> {
        if summary.id != self.run_id {
            return Err(StoreError::WrongRun {
                path: self.record_path.clone(),
                expected: self.run_id.clone(),
                found: summary.id.clone(),
            });
        }
        record_json(summary, &self.record_path)
    }
}

/// A run record's bytes (pretty JSON and a newline), for the record file at
/// `path`: what a writer writes, and what the catalog's repricing writes
/// again.
pub(crate) fn record_json(summary: &RunSummary, path: &Path) -> Result<Vec<u8>, StoreError> {
    let mut bytes = serde_json::to_vec_pretty(summary).map_err(|source| StoreError::Encode {
        what: String::from("the run record"),
        path: path.to_owned(),
        source,
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

impl Drop for RunWriter {
    /// Writes what is queued (best effort: an error has nowhere to go), so
    /// a writer dropped on an error path loses no acknowledged-to-be line.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Turns line breaks into spaces. serde_json escapes them inside strings,
/// so any left are white space between the tokens of a `raw` value that was
/// kept as read (a pretty-printed hook document, say); left alone they would
/// split one envelope over several lines.
fn keep_on_one_line(line: &mut [u8]) {
    // Line breaks are rare (only between the tokens of a pretty frame):
    // found by SIMD search rather than by visiting every byte.
    let mut from = 0;
    while let Some(found) = memchr::memchr2(b'\n', b'\r', &line[from..]) {
        line[from + found] = b' ';
        from += found + 1;
    }
}

/// Writes `bytes` to `<path>.tmp-<pid>`, syncs it and renames it over
/// `path`; the pid keeps two processes from sharing a temporary file.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut temporary_name = path.file_name().unwrap_or_default().to_os_string();
    temporary_name.push(format!(".tmp-{}", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
    let written = File::create(&temporary)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .map_err(|source| StoreError::io("write run record", &temporary, source))
        .and_then(|()| {
            fs::rename(&temporary, path)
                .map_err(|source| StoreError::io("replace run record", path, source))
        });
    if written.is_err() {
        // Best effort: a leftover temporary file is harmless but untidy.
        let _ = fs::remove_file(&temporary);
        return written;
    }
    if let Some(directory) = path.parent() {
        sync_directory(directory);
    }
    Ok(())
}

/// Best-effort `fsync` of a directory so a new or renamed entry survives a
/// crash. Some platforms cannot open a directory as a file; the data itself
/// is already synced, so a failure here is not worth failing the write.
pub(crate) fn sync_directory(directory: &Path) {
    if let Ok(handle) = File::open(directory) {
        let _ = handle.sync_all();
    }
}
