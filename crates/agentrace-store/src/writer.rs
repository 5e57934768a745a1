//! Writing a run (§5 durability): the append-only log, one whole line per
//! envelope with the sequence checked, the run record replaced atomically,
//! and the snapshot of the log's fold (see [`crate::fold`]) kept beside a
//! long log. It decides how bytes reach the disk, never what an envelope
//! says.

use std::cell::Cell;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use agentrace_core::state::RunSummary;
use agentrace_core::warnings::WarningConfig;
use agentrace_core::{Envelope, RunId};

use crate::error::StoreError;
use crate::fold::{fingerprint, keep_tail, RunFold};

/// A log at least this long gets a snapshot with each record written:
/// folding a shorter one from its start takes a reader a few milliseconds.
pub const SNAPSHOT_MIN_BYTES: u64 = 1024 * 1024;

/// A snapshot is rewritten whenever this many bytes were appended since the
/// last one, so a reader of a live run folds at most about this much.
pub const SNAPSHOT_EVERY_BYTES: u64 = 4 * 1024 * 1024;

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
    /// byte for byte (dropped after a failed write).
    fold: Option<RunFold>,
    /// The last bytes of the log, for the snapshot's fingerprint.
    tail: Vec<u8>,
    /// The log length the last snapshot covered (a cell: records, and with
    /// them snapshots, are written through `&self`).
    snapshot_offset: Cell<u64>,
}

/// Where a writer's fold starts: the log's current fold and last bytes.
#[derive(Debug)]
pub(crate) struct Resumed {
    /// The fold of the whole log so far (none: no snapshots from this writer).
    pub fold: Option<RunFold>,
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
        Self {
            file,
            log_path,
            record_path,
            run_id,
            next_sequence,
            needs_newline: false,
            snapshot_path,
            fold: resumed.fold,
            tail: resumed.tail,
            snapshot_offset: Cell::new(resumed.snapshot_offset),
        }
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

    /// Appends envelopes, each as one JSON line.
    ///
    /// The whole batch is checked and encoded before anything is written, so
    /// a refused batch (a sequence that is not exactly the next one, an
    /// envelope of another run) leaves the log untouched. Each line then goes
    /// out in a single `write_all`, so a crash can tear only the last line.
    /// Nothing is durable before [`RunWriter::sync`].
    ///
    /// Line breaks between the tokens of a `raw` frame are written as
    /// spaces: the one change ever made to a raw frame, and the only way to
    /// keep a pretty-printed frame on one line without re-encoding it.
    pub fn append(&mut self, envelopes: &[Envelope]) -> Result<(), StoreError> {
        // Encoded straight into the one buffer written below; `ends` marks
        // where each line ends in it.
        let mut batch = Vec::with_capacity(envelopes.len() * 512 + 1);
        if self.needs_newline {
            batch.push(b'\n');
        }
        let first_line = batch.len();
        let mut ends = Vec::with_capacity(envelopes.len());
        for (expected, envelope) in (self.next_sequence..).zip(envelopes) {
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
            let start = batch.len();
            serde_json::to_writer(&mut batch, envelope).map_err(|source| StoreError::Encode {
                what: format!("envelope {}", envelope.sequence),
                path: self.log_path.clone(),
                source,
            })?;
            keep_on_one_line(&mut batch[start..]);
            batch.push(b'\n');
            ends.push(batch.len());
        }
        // One write for the batch: lines go out in order, so a crash can
        // still tear only the last one, and a busy tap pays one system call
        // per chunk instead of one per envelope.
        if let Err(source) = self.file.write_all(&batch) {
            self.needs_newline = true;
            // The log may now hold part of a line the fold never saw.
            self.fold = None;
            return Err(StoreError::io("append to run log", &self.log_path, source));
        }
        self.needs_newline = false;
        self.next_sequence += ends.len() as u64;
        if let Some(fold) = &mut self.fold {
            let mut line_start = fold.offset();
            let mut previous_end = first_line;
            for (envelope, end) in envelopes.iter().zip(&ends) {
                let line_end = line_start + (end - previous_end) as u64;
                fold.apply(envelope, line_start, line_end);
                line_start = line_end;
                previous_end = *end;
            }
            keep_tail(&mut self.tail, &batch);
            if fold.offset() - self.snapshot_offset.get() >= SNAPSHOT_EVERY_BYTES {
                self.save_snapshot_quietly();
            }
        }
        Ok(())
    }

    /// Writes the snapshot of the log's fold beside it (replaced by a
    /// rename, never synced: a lost or torn snapshot only makes readers fold
    /// the log). Refused when this writer's fold no longer matches the log
    /// (after a failed write).
    pub fn save_snapshot(&self) -> Result<(), StoreError> {
        let Some(fold) = &self.fold else {
            return Err(StoreError::io(
                "snapshot",
                &self.snapshot_path,
                std::io::Error::other("a failed write left the log unlike the fold"),
            ));
        };
        let bytes = fold
            .snapshot_bytes(fingerprint(&self.tail))
            .map_err(|source| StoreError::Encode {
                what: String::from("the run snapshot"),
                path: self.snapshot_path.clone(),
                source,
            })?;
        replace_unsynced(&self.snapshot_path, &bytes, "write run snapshot")?;
        self.snapshot_offset.set(fold.offset());
        Ok(())
    }

    /// A snapshot when the log is long enough to need one and grew since the
    /// last. Errors are dropped on purpose: the snapshot is a cache, and
    /// failing to write it must never fail the recording.
    fn save_snapshot_quietly(&self) {
        let offset = self.fold.as_ref().map_or(0, RunFold::offset);
        if offset >= SNAPSHOT_MIN_BYTES && offset != self.snapshot_offset.get() {
            let _ = self.save_snapshot();
        }
    }

    /// Makes every line appended so far durable (flush, then `fsync` of the
    /// data).
    pub fn sync(&mut self) -> Result<(), StoreError> {
        self.file
            .flush()
            .and_then(|()| self.file.sync_data())
            .map_err(|source| StoreError::io("sync run log", &self.log_path, source))
    }

    /// Replaces the run record with `summary`, atomically: readers see the
    /// old record or the new one, never a mix (write a temporary file beside
    /// it, `fsync`, rename over).
    /// A long log's snapshot is brought up to date with it.
    pub fn write_record(&self, summary: &RunSummary) -> Result<(), StoreError> {
        let bytes = self.record_bytes(summary)?;
        write_atomically(&self.record_path, &bytes)?;
        self.save_snapshot_quietly();
        Ok(())
    }

    /// Like [`RunWriter::write_record`] (still replaced by a rename, so
    /// readers never see half a record) but without `fsync`: for runs that
    /// are rebuilt from their sources anyway, such as imported ones.
    pub fn write_record_unsynced(&self, summary: &RunSummary) -> Result<(), StoreError> {
        let bytes = self.record_bytes(summary)?;
        replace_unsynced(&self.record_path, &bytes, "write run record")?;
        self.save_snapshot_quietly();
        Ok(())
    }

    /// Like [`RunWriter::write_record_unsynced`] for a run created with no
    /// record yet (an import writing a thousand runs): written in place, not
    /// through a temporary file, because creating files is what such an
    /// import spends most on. A reader meeting half a record cannot parse it
    /// and folds the log instead, as for any unreadable record.
    pub fn write_new_record_unsynced(&self, summary: &RunSummary) -> Result<(), StoreError> {
        let bytes = self.record_bytes(summary)?;
        fs::write(&self.record_path, &bytes)
            .map_err(|source| StoreError::io("write run record", &self.record_path, source))?;
        self.save_snapshot_quietly();
        Ok(())
    }

    /// The snapshot file beside the log.
    pub fn snapshot_path(&self) -> &Path {
        &self.snapshot_path
    }

    fn record_bytes(&self, summary: &RunSummary) -> Result<Vec<u8>, StoreError> {
        if summary.id != self.run_id {
            return Err(StoreError::WrongRun {
                path: self.record_path.clone(),
                expected: self.run_id.clone(),
                found: summary.id.clone(),
            });
        }
        // The record counts the warnings `show` lists (but for those that
        // need a clock or the user's rules), so that a list of runs agrees
        // with it without reading every log: the fold has what the
        // detectors read.
        let checked;
        let summary = match &self.fold {
            Some(fold) => {
                let (view, _) = fold.checked_view(&WarningConfig::default(), None);
                checked = RunSummary {
                    warning_count: view.run.warning_count,
                    warning_codes: view.run.warning_codes,
                    ..summary.clone()
                };
                &checked
            }
            None => summary,
        };
        let mut bytes =
            serde_json::to_vec_pretty(summary).map_err(|source| StoreError::Encode {
                what: String::from("the run record"),
                path: self.record_path.clone(),
                source,
            })?;
        bytes.push(b'\n');
        Ok(bytes)
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

/// Writes `bytes` to `<path>.tmp-<pid>` and renames it over `path`, without
/// `fsync`: readers see the old file or the new one, never a mix.
pub(crate) fn replace_unsynced(path: &Path, bytes: &[u8], action: &'static str) -> Result<(), StoreError> {
    let mut temporary_name = path.file_name().unwrap_or_default().to_os_string();
    temporary_name.push(format!(".tmp-{}", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
    fs::write(&temporary, bytes).map_err(|source| StoreError::io(action, &temporary, source))?;
    fs::rename(&temporary, path).map_err(|source| StoreError::io(action, path, source))
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
