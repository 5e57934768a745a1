//! The file side of a run log's fold: the core's run book
//! ([`agentrace_core::book`], which holds everything folded and decides
//! everything) plus the bytes folded, the lines skipped and a sparse index
//! of byte offsets; and its snapshot beside the log: `<id>.snapshot`, written by the
//! recorder's writer, so a reader of a long run folds only the bytes
//! appended after it instead of the whole log. A snapshot is a cache, never
//! a source of truth: any doubt (missing, unreadable, another build, a log
//! that no longer ends the same way) means folding the log from its start.
//! This module only reads files around the book; it must not decide
//! anything the book decides.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use agentrace_core::book::{Changes, RunBook};
use agentrace_core::childwork::{ChildWorkChange, ChildWorkRecord};
use agentrace_core::model::{Envelope, RunId, Timestamp};
use agentrace_core::prices::PriceBook;
use agentrace_core::state::{FinalActors, RunState, RunView};
use agentrace_core::warnings::WarningConfig;
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::files::replace_unsynced;
use crate::lean::{Definition, Dictionary};
use crate::reader::LogReader;

/// One index entry every this many envelopes.
pub const INDEX_STRIDE: u64 = 1024;

/// The snapshot format; bump it whenever the folded types change shape or
/// meaning (the build's version is checked too).
pub const SNAPSHOT_VERSION: u32 = 4;

/// How many bytes before the covered end of the log a snapshot
/// fingerprints: enough to tell a rewritten log from the one folded.
const FINGERPRINT_BYTES: u64 = 256;

/// The folded state of a run log up to a byte offset (always the end of a
/// whole line). Memory grows with the run's agents and with one index
/// entry per [`INDEX_STRIDE`] envelopes, never with its events.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFold {
    book: RunBook,
    /// Bytes folded so far.
    offset: u64,
    /// Lines the reader skipped so far.
    skipped: u64,
    /// `(sequence of the first envelope of a stride, byte offset of its
    /// line)`, ascending.
    index: Vec<(u64, u64)>,
    envelopes: u64,
    highest_sequence: u64,
    /// The log's v3 definitions up to `offset`: a fold resumed from here
    /// (its snapshot) decodes the v3 lines that follow with them.
    #[serde(default)]
    dictionary: Dictionary,
}

/// What one [`RunFold::follow`] read: the new envelopes' count and the
/// changes they made (the envelopes themselves go to the caller's closure,
/// never kept).
#[derive(Debug, Default, PartialEq)]
pub struct Followed {
    /// Envelopes read.
    pub envelopes: u64,
    /// Child-work record changes, in order.
    pub changes: Vec<ChildWorkChange>,
    /// The run's status, when it changed.
    pub status: Option<agentrace_core::model::RunStatus>,
    /// Warnings the envelopes raised (see [`Changes::warnings`]).
    pub warnings: Vec<agentrace_core::model::Warning>,
    /// Lines skipped in what was read (numbered from the first line read).
    pub skipped: Vec<crate::reader::SkippedLine>,
}

/// Why a snapshot was not used (the reader then folds the whole log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotMiss {
    /// No snapshot beside the log.
    #[error("no snapshot")]
    Missing,
    /// The snapshot could not be read or parsed.
    #[error("unreadable snapshot: {0}")]
    Unreadable(String),
    /// Written by another format or build.
    #[error("snapshot of another format or build")]
    OtherBuild,
    /// Of another run.
    #[error("snapshot of another run")]
    OtherRun,
    /// The log is shorter than the bytes the snapshot covers.
    #[error("the log is shorter than the snapshot")]
    LogShorter,
    /// The log's bytes before the covered end are not the ones folded.
    #[error("the log was rewritten since the snapshot")]
    LogChanged,
    /// Priced by another price book (the home's price file changed): its
    /// costs are not this reader's.
    #[error("snapshot priced by another price book")]
    OtherPrices,
}

/// The file: the fold and what proves it belongs to the log.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotFile {
    version: u32,
    build: String,
    /// The id of the price book its costs were priced with (absent in
    /// snapshots older than the home's price file: never taken then).
    #[serde(default)]
    prices: String,
    /// FNV-1a of the last [`FINGERPRINT_BYTES`] bytes before `fold.offset`.
    fingerprint: u64,
    fold: RunFold,
}

impl RunFold {
    /// The fold of an empty log, priced by the database alone.
    pub fn new(id: RunId) -> Self {
        Self::of(RunBook::new(id))
    }

    /// The fold of an empty log, priced by `prices` (a home's, see
    /// [`crate::Home::prices`]).
    pub fn priced(id: RunId, prices: Arc<PriceBook>) -> Self {
        Self::of(RunBook::new(id).with_prices(prices))
    }

    /// The fold of an empty log into `book` (one pricing with a user's
    /// price file, say).
    pub fn of(book: RunBook) -> Self {
        Self {
            book,
            offset: 0,
            skipped: 0,
            index: Vec::new(),
            envelopes: 0,
            highest_sequence: 0,
            dictionary: Dictionary::default(),
        }
    }

    /// The log's v3 definitions as far as it was folded: what a reader
    /// starting at one of its seek points is given
    /// ([`LogReader::with_dictionary`]).
    pub fn dictionary(&self) -> &Dictionary {
        &self.dictionary
    }

    /// Adds the definitions a writer has just queued before the lines it
    /// hands to [`RunFold::advance`] or [`RunFold::apply`].
    pub(crate) fn define(&mut self, definitions: &[Definition]) {
        for definition in definitions {
            // A writer never gives an index twice; a refusal could only be
            // a bug, and the lines read back would then say so as skips.
            let _ = self.dictionary.define(definition.clone());
        }
    }

    /// Folds one envelope whose line starts at byte `line_start` and ends
    /// (after its `\n`) at `line_end`; returns the changes it made.
    pub fn apply(&mut self, envelope: &Envelope, line_start: u64, line_end: u64) -> Changes {
        self.advance(envelope, line_start, line_end);
        self.book.apply(envelope)
    }

    /// The file side of [`RunFold::apply`] alone (offsets, index, counts):
    /// for a writer whose book is its caller's, which folds the envelope
    /// itself (see [`crate::RunWriter::with_book_lent`]).
    pub(crate) fn advance(&mut self, envelope: &Envelope, line_start: u64, line_end: u64) {
        if self.envelopes.checked_rem(INDEX_STRIDE) == Some(0) {
            self.index.push((envelope.sequence, line_start));
        }
        self.envelopes += 1;
        self.highest_sequence = self.highest_sequence.max(envelope.sequence);
        self.offset = self.offset.max(line_end);
    }

    /// This fold's file side with its book dropped: what a writer whose
    /// book is lent to it keeps (an empty state-only book holds the place).
    pub(crate) fn without_book(self) -> Self {
        let id = self.book.state().summary().id;
        Self {
            book: RunBook::state_only(id),
            ..self
        }
    }

    /// `{run, agents, warnings}` as `show --json` prints it: the recorded
    /// warnings, the child-work reducer's and the detectors' at `now` (none:
    /// the time-based ones wait for a reader with a clock), with `config`
    /// applied.
    pub fn checked_view(&self, config: &WarningConfig, now: Option<Timestamp>) -> (RunView, Option<u64>) {
        self.book.checked_view(config, now, self.skipped)
    }

    /// Reads the whole lines of `log` appended since the bytes folded so
    /// far, folds them, and hands each new envelope (final actor of the
    /// moment applied) to `each`. A log shorter than what was folded is
    /// another log: the fold starts over.
    pub fn follow(&mut self, log: &Path, mut each: impl FnMut(&Envelope)) -> io::Result<Followed> {
        let mut records = Vec::new();
        let mut status = None;
        let mut warnings = Vec::new();
        let mut followed = self.follow_each(log, |envelope, changes, finals| {
            records.extend(changes.records);
            if changes.status.is_some() {
                status = changes.status;
            }
            warnings.extend(changes.warnings);
            finals.apply(envelope);
            each(envelope);
        })?;
        followed.changes = records;
        followed.status = status;
        followed.warnings = warnings;
        Ok(followed)
    }

    /// [`RunFold::follow`], handing `each` every new envelope as written,
    /// the changes it made, and the final actors of the moment (to apply
    /// or not); the [`Followed`] returned counts envelopes and skipped
    /// lines only.
    pub fn follow_each(
        &mut self,
        log: &Path,
        mut each: impl FnMut(&mut Envelope, Changes, &FinalActors),
    ) -> io::Result<Followed> {
        let mut file = File::open(log)?;
        let length = file.metadata()?.len();
        if length < self.offset {
            *self = RunFold::priced(self.book.state().summary().id, self.book.state().prices());
        }
        let end = last_line_end(&mut file, self.offset, length)?;
        let mut followed = Followed::default();
        if end <= self.offset {
            return Ok(followed);
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let counter = Counting::new(BufReader::with_capacity(
            64 * 1024,
            file.take(end - self.offset),
        ));
        let position = counter.position.clone();
        let base = self.offset;
        let mut reader = LogReader::new(counter)
            .with_run_id(self.book.state().summary().id)
            .with_dictionary(std::mem::take(&mut self.dictionary));
        let mut line_start = base;
        while let Some(envelope) = reader.next() {
            let mut envelope = match envelope {
                Ok(envelope) => envelope,
                Err(error) => {
                    self.dictionary = reader.take_dictionary();
                    return Err(io::Error::other(error));
                }
            };
            // The reader has consumed exactly this envelope's line (and any
            // skipped lines before it, which only a fold from the start
            // could place): the next line starts here.
            let line_end = base + position.get();
            let changes = self.apply(&envelope, line_start, line_end);
            line_start = line_end;
            each(&mut envelope, changes, self.book.finals());
            followed.envelopes += 1;
        }
        self.skipped += reader.skipped().len() as u64;
        self.dictionary = reader.take_dictionary();
        followed.skipped = reader.into_skipped();
        self.offset = end;
        Ok(followed)
    }

    /// The run book: everything folded.
    pub fn book(&self) -> &RunBook {
        &self.book
    }

    /// The run state.
    pub fn state(&self) -> &RunState {
        self.book.state()
    }

    /// The final actor of each corrected thread.
    pub fn finals(&self) -> &FinalActors {
        self.book.finals()
    }

    /// The child-work records as every reader shows them (the book's
    /// session rule applied).
    pub fn records(&self) -> Vec<ChildWorkRecord> {
        self.book.records()
    }

    /// Bytes of the log folded (the end of a whole line).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Lines skipped by the reader.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The highest sequence folded (0 for none).
    pub fn highest_sequence(&self) -> u64 {
        self.highest_sequence
    }

    /// The byte offset to start reading at for the envelopes after
    /// sequence `after`: the index entry at or before it.
    pub fn seek_point(&self, after: u64) -> u64 {
        let wanted = after.saturating_add(1);
        match self
            .index
            .partition_point(|(sequence, _)| *sequence <= wanted)
        {
            0 => 0,
            at => self.index[at - 1].1,
        }
    }

    /// Reads the snapshot at `snapshot` if it is of this build, of run
    /// `id`, priced by `prices`, and covers a prefix of `log` as it is now;
    /// the caller then follows the log from [`RunFold::offset`], pricing
    /// with `prices`.
    pub fn load_snapshot(snapshot: &Path, log: &Path, id: &RunId, prices: &Arc<PriceBook>) -> Result<RunFold, SnapshotMiss> {
        let bytes = match std::fs::read(snapshot) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(SnapshotMiss::Missing)
            }
            Err(error) => return Err(SnapshotMiss::Unreadable(error.to_string())),
        };
        let file: SnapshotFile = serde_json::from_slice(&bytes)
            .map_err(|error| SnapshotMiss::Unreadable(error.to_string()))?;
        if file.version != SNAPSHOT_VERSION || file.build != env!("CARGO_PKG_VERSION") {
            return Err(SnapshotMiss::OtherBuild);
        }
        if file.fold.book.state().summary().id != *id {
            return Err(SnapshotMiss::OtherRun);
        }
        if file.prices != prices.id() {
            return Err(SnapshotMiss::OtherPrices);
        }
        let mut log_file = File::open(log).map_err(|error| {
            if error.kind() == io::ErrorKind::NotFound {
                SnapshotMiss::LogShorter
            } else {
                SnapshotMiss::Unreadable(error.to_string())
            }
        })?;
        let length = log_file
            .metadata()
            .map_err(|error| SnapshotMiss::Unreadable(error.to_string()))?
            .len();
        if length < file.fold.offset {
            return Err(SnapshotMiss::LogShorter);
        }
        let found = fingerprint_of(&mut log_file, file.fold.offset)
            .map_err(|error| SnapshotMiss::Unreadable(error.to_string()))?;
        if found != file.fingerprint {
            return Err(SnapshotMiss::LogChanged);
        }
        let mut fold = file.fold;
        fold.book = fold.book.with_prices(Arc::clone(prices));
        Ok(fold)
    }

    /// Writes this fold as the snapshot of `log` (which must still begin
    /// with the bytes folded: the fingerprint is read from it). For readers
    /// that had to fold a log without a usable snapshot, so the next one
    /// need not; replaced by a rename, never synced, like a writer's.
    pub fn save_snapshot(&self, snapshot: &Path, log: &Path) -> Result<(), StoreError> {
        let fingerprint = File::open(log)
            .and_then(|mut file| fingerprint_of(&mut file, self.offset))
            .map_err(|source| StoreError::io("read run log", log, source))?;
        let bytes = self
            .snapshot_bytes(fingerprint)
            .map_err(|source| StoreError::Encode {
                what: String::from("the run snapshot"),
                path: snapshot.to_owned(),
                source,
            })?;
        replace_unsynced(snapshot, &bytes, "write run snapshot")
    }

    /// The snapshot's bytes, given the fingerprint of the log's bytes
    /// before [`RunFold::offset`] (see [`fingerprint`]).
    pub(crate) fn snapshot_bytes(&self, fingerprint: u64) -> serde_json::Result<Vec<u8>> {
        self.snapshot_bytes_with(&self.book, fingerprint)
    }

    /// [`RunFold::snapshot_bytes`] with `book` in place of this fold's own
    /// (a writer's lent book): the same bytes a fold holding it would give.
    pub(crate) fn snapshot_bytes_with(&self, book: &RunBook, fingerprint: u64) -> serde_json::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.write_snapshot_with(book, fingerprint, &mut bytes)?;
        Ok(bytes)
    }

    /// [`RunFold::snapshot_bytes_with`] appended to `out` (a writer's
    /// buffer, kept from one snapshot to the next: grown afresh each time,
    /// a few MiB of it was a tenth of an ingest in page faults).
    pub(crate) fn write_snapshot_with(&self, book: &RunBook, fingerprint: u64, out: &mut Vec<u8>) -> serde_json::Result<()> {
        /// [`RunFold`]'s fields, by reference, in its order and names.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct FoldRef<'a> {
            book: &'a RunBook,
            offset: u64,
            skipped: u64,
            index: &'a [(u64, u64)],
            envelopes: u64,
            highest_sequence: u64,
            dictionary: &'a Dictionary,
        }
        #[derive(Serialize)]
        struct SnapshotRef<'a> {
            version: u32,
            build: &'static str,
            prices: &'a str,
            fingerprint: u64,
            fold: FoldRef<'a>,
        }
        serde_json::to_writer(out, &SnapshotRef {
            version: SNAPSHOT_VERSION,
            build: env!("CARGO_PKG_VERSION"),
            prices: book.prices_id(),
            fingerprint,
            fold: FoldRef {
                book,
                offset: self.offset,
                skipped: self.skipped,
                index: &self.index,
                envelopes: self.envelopes,
                highest_sequence: self.highest_sequence,
                dictionary: &self.dictionary,
            },
        })
    }
}

/// FNV-1a of the last [`FINGERPRINT_BYTES`] of `tail` (a stable hash: the
/// snapshot outlives the process that wrote it).
pub(crate) fn fingerprint(tail: &[u8]) -> u64 {
    let start = tail.len().saturating_sub(FINGERPRINT_BYTES as usize);
    crate::files::fnv1a(&tail[start..])
}

/// Keeps the last [`FINGERPRINT_BYTES`] of `tail` followed by `more`
/// (copying at most that many bytes of `more`, however long it is).
pub(crate) fn keep_tail(tail: &mut Vec<u8>, more: &[u8]) {
    let kept = FINGERPRINT_BYTES as usize;
    let more = &more[more.len().saturating_sub(kept)..];
    tail.extend_from_slice(more);
    let excess = tail.len().saturating_sub(kept);
    tail.drain(..excess);
}

/// The fingerprint of the bytes of `file` before `end`.
pub(crate) fn fingerprint_of(file: &mut File, end: u64) -> io::Result<u64> {
    Ok(fingerprint(&tail_of(file, end)?))
}

/// The last [`FINGERPRINT_BYTES`] bytes of `file` before `end`.
pub(crate) fn tail_of(file: &mut File, end: u64) -> io::Result<Vec<u8>> {
    let start = end.saturating_sub(FINGERPRINT_BYTES);
    let mut bytes = vec![0_u8; (end - start) as usize];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// The end of the last whole line at or after `from` (a writer may be in
/// the middle of the last one): scans backwards from the end of the file.
fn last_line_end(file: &mut File, from: u64, length: u64) -> io::Result<u64> {
    const BLOCK: u64 = 64 * 1024;
    let mut end = length;
    let mut buffer = vec![0_u8; BLOCK as usize];
    while end > from {
        let start = end.saturating_sub(BLOCK).max(from);
        let size = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buffer[..size])?;
        if let Some(at) = buffer[..size].iter().rposition(|byte| *byte == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(from)
}

/// A `BufRead` that counts the bytes consumed, so the offset of each line
/// the log reader finishes is known.
struct Counting<R> {
    inner: R,
    position: SharedCount,
}

/// A shared counter (the reader owns the adapter; the fold reads it).
#[derive(Debug, Clone, Default)]
struct SharedCount(std::rc::Rc<std::cell::Cell<u64>>);

impl SharedCount {
    fn get(&self) -> u64 {
        self.0.get()
    }

    fn add(&self, amount: u64) {
        self.0.set(self.0.get() + amount);
    }
}

impl<R> Counting<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            position: SharedCount::default(),
        }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.position.add(read as u64);
        Ok(read)
    }
}

impl<R: BufRead> BufRead for Counting<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.position.add(amount as u64);
        self.inner.consume(amount);
    }
}

/// The waterfall of the log at `log` as far as `fold` has read it (final
/// actors applied), its lanes from `agents` (the fold's view's tree). A
/// second pass over the log: the waterfall is a projection of its events,
/// like a page of them, and the fold keeps no bars.
pub fn waterfall_of(fold: &RunFold, log: &Path, agents: &[agentrace_core::state::AgentNode]) -> io::Result<agentrace_core::waterfall::Waterfall> {
    WaterfallSource::of(fold, agents).read(log)
}

/// What a waterfall is read with, taken from a fold so that the reading
/// (the whole log) needs no hold on it: how far the fold read, the final
/// actors, the tree.
#[derive(Debug, Clone)]
pub struct WaterfallSource {
    offset: u64,
    run_id: RunId,
    finals: FinalActors,
    agents: Vec<agentrace_core::state::AgentNode>,
}

impl WaterfallSource {
    /// Taken from `fold` and its view's tree.
    pub fn of(fold: &RunFold, agents: &[agentrace_core::state::AgentNode]) -> Self {
        Self {
            offset: fold.offset(),
            run_id: fold.state().summary().id,
            finals: fold.finals().clone(),
            agents: agents.to_vec(),
        }
    }

    /// How far into the log it reads.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the log at `log` up to the offset.
    pub fn read(&self, log: &Path) -> io::Result<agentrace_core::waterfall::Waterfall> {
        let file = File::open(log)?;
        let reader = BufReader::with_capacity(256 * 1024, file.take(self.offset));
        let mut builder = agentrace_core::waterfall::WaterfallBuilder::new();
        let lines = LogReader::new(reader).with_run_id(self.run_id.clone()).with_line_filter(may_be_drawn);
        for envelope in lines {
            let mut envelope = envelope.map_err(io::Error::other)?;
            self.finals.apply(&mut envelope);
            builder.push(&envelope);
        }
        Ok(builder.finish(&self.agents))
    }
}

/// False for a log line that cannot hold an event the waterfall draws or
/// counts (turns, tool calls, spawns, waits, usage) or the session's end
/// (what a bar still open when it ended is drawn to): none of their type
/// names is in it. (A line that names one in its text is decoded and then
/// passed over by the builder.)
fn may_be_drawn(line: &[u8]) -> bool {
    const NAMES: [&[u8]; 6] = [b"turn_", b"tool_", b"agent_spawned", b"agent_wait_started", b"usage", b"session_ended"];
    NAMES.iter().any(|name| memchr::memmem::find(line, name).is_some())
}
