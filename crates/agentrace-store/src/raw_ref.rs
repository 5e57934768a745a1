//! Imported frames by reference: an imported run keeps no copy of the lines
//! it read (they are in the user's Codex and Claude folders already); each
//! envelope that would hold one names where it is instead ([`RawRef`]).
//! This module makes those references, resolves them back into frames for
//! the readers that show frames (`events --raw`, the viewer, a resumed
//! recorder), and keeps the optional compressed copies of `import
//! --keep-raw` (`<home>/runs/<run-id>.raw.gz`), which are read first.
//!
//! Resolving never fails: a source that is gone is
//! [`RawUnavailable::SourceMissing`], one that no longer holds the line
//! (shorter, or its bytes' CRC differs) is [`RawUnavailable::SourceChanged`].

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead as _, BufReader, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use agentrace_core::model::{Envelope, RawFrame, RawRef, RawUnavailable};
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::StoreError;

/// The reference to `bytes` (a line without its line break) found at
/// `offset` of `path`.
pub fn reference(path: &Path, offset: u64, bytes: &[u8]) -> RawRef {
    reference_in(&source_name(path), offset, bytes)
}

/// How a reference names the file `path`: from the root, as text. A
/// folder given as a relative path (`import --codex-home ./x`) is named
/// from the root: the reference must hold wherever it is read.
pub fn source_name(path: &Path) -> String {
    match path.is_relative() {
        true => std::path::absolute(path).map_or_else(|_| path.to_string_lossy().into_owned(), |path| path.to_string_lossy().into_owned()),
        false => path.to_string_lossy().into_owned(),
    }
}

/// [`reference`] in the file named `name` (as [`source_name`] names it):
/// for a reader of many lines of one file, which names it once.
pub fn reference_in(name: &str, offset: u64, bytes: &[u8]) -> RawRef {
    RawRef {
        path: name.to_owned(),
        offset,
        length: bytes.len() as u64,
        crc32: crc32fast::hash(bytes),
    }
}

/// The frame the recorder kept for `bytes`, secrets redacted as it
/// redacted them ([`agentrace_core::redact`]); `None` when the bytes are not
/// one JSON value.
pub fn frame_of(bytes: &[u8]) -> Option<Box<RawValue>> {
    let frame = agentrace_core::decode::json_frame(bytes)?;
    Some(agentrace_core::redact::redact_raw(frame.get()).unwrap_or(frame))
}

/// `<runs>/<id>.raw.gz` beside the log `<runs>/<id>.jsonl`: the run's
/// kept copies.
pub fn copies_path(log: &Path) -> PathBuf {
    log.with_extension("raw.gz")
}

/// One kept copy: the envelope it belongs to, its reference (so a copy
/// left by an earlier import of other files is never taken) and the frame
/// as `raw` would have held it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Copy {
    sequence: u64,
    raw_ref: RawRef,
    raw: RawFrame,
}

/// How many source files a resolver keeps open.
const OPEN_FILES: usize = 64;

/// Resolves the references of one run's envelopes (see the module's
/// documentation). Keeps the sources it read open, and reads the run's
/// kept copies alongside when there are any: ask in sequence order (an
/// envelope before the last one asked for reads them from the start).
pub struct Resolver {
    /// The sources read so far, with their lengths when opened.
    open: HashMap<String, Result<(File, u64), RawUnavailable>>,
    copies: Option<Copies>,
}

impl Resolver {
    /// A resolver for the envelopes of the log at `log`.
    pub fn for_log(log: &Path) -> Self {
        let copies = copies_path(log);
        Self {
            open: HashMap::new(),
            copies: copies.exists().then(|| Copies::new(copies)),
        }
    }

    /// A resolver of references alone (no run's kept copies beside it).
    pub fn of_sources() -> Self {
        Self { open: HashMap::new(), copies: None }
    }

    /// The frame of `envelope`: its `raw`, else its reference resolved;
    /// `Ok(None)` for an envelope with neither (a derived event).
    pub fn frame(&mut self, envelope: &Envelope) -> Result<Option<RawFrame>, RawUnavailable> {
        if let Some(raw) = &envelope.raw {
            return Ok(Some(raw.clone()));
        }
        let Some(reference) = &envelope.raw_ref else {
            return Ok(None);
        };
        if let Some(copy) = self.copies.as_mut().and_then(|copies| copies.find(envelope.sequence, reference)) {
            return Ok(Some(copy));
        }
        self.read(reference).map(|frame| Some(frame.into()))
    }

    /// `envelope` as shown with its frame: a reference resolved into `raw`,
    /// or, when it cannot be, `raw: null` and `rawUnavailable` saying why.
    pub fn show(&mut self, envelope: &mut Envelope) {
        if envelope.raw.is_some() || envelope.raw_ref.is_none() {
            return;
        }
        match self.frame(envelope) {
            Ok(frame) => envelope.raw = frame,
            Err(why) => {
                envelope.raw = RawValue::from_string(String::from("null")).ok().map(RawFrame::from);
                envelope.raw_unavailable = Some(why);
            }
        }
    }

    /// The frame `reference` names, read from its source.
    fn read(&mut self, reference: &RawRef) -> Result<Box<RawValue>, RawUnavailable> {
        if self.open.len() >= OPEN_FILES && !self.open.contains_key(&reference.path) {
            self.open.clear();
        }
        let file = self
            .open
            .entry(reference.path.clone())
            .or_insert_with(|| {
                let file = File::open(&reference.path).map_err(|_| RawUnavailable::SourceMissing)?;
                let length = file.metadata().map_err(|_| RawUnavailable::SourceMissing)?.len();
                Ok((file, length))
            });
        let (file, size) = file.as_ref().map_err(|why| *why)?;
        // A range past the end is a file that shrank (checked before
        // anything is allocated for it).
        if reference.offset.checked_add(reference.length).is_none_or(|end| end > *size) {
            return Err(RawUnavailable::SourceChanged);
        }
        let length = usize::try_from(reference.length).map_err(|_| RawUnavailable::SourceChanged)?;
        let mut bytes = vec![0u8; length];
        file.read_exact_at(&mut bytes, reference.offset)
            .map_err(|_| RawUnavailable::SourceChanged)?;
        if crc32fast::hash(&bytes) != reference.crc32 {
            return Err(RawUnavailable::SourceChanged);
        }
        frame_of(&bytes).ok_or(RawUnavailable::SourceChanged)
    }
}

/// A run's kept copies, read in step with the envelopes asked for.
struct Copies {
    path: PathBuf,
    reader: Option<BufReader<MultiGzDecoder<File>>>,
    /// The copy read last and not yet asked for.
    ahead: Option<Copy>,
    /// The last sequence asked for.
    last: u64,
}

impl Copies {
    fn new(path: PathBuf) -> Self {
        Self { path, reader: None, ahead: None, last: 0 }
    }

    /// The kept copy of envelope `sequence`, when it is of `reference`.
    fn find(&mut self, sequence: u64, reference: &RawRef) -> Option<RawFrame> {
        if sequence <= self.last {
            self.reader = None;
            self.ahead = None;
        }
        self.last = sequence;
        loop {
            let copy = match self.ahead.take() {
                Some(copy) => copy,
                None => self.next()?,
            };
            if copy.sequence < sequence {
                continue;
            }
            if copy.sequence > sequence {
                self.ahead = Some(copy);
                return None;
            }
            return (copy.raw_ref == *reference).then_some(copy.raw);
        }
    }

    /// The next readable copy; `None` at the end (or where the file stops
    /// being readable: what comes after is read from the sources).
    fn next(&mut self) -> Option<Copy> {
        if self.reader.is_none() {
            let file = File::open(&self.path).ok()?;
            self.reader = Some(BufReader::new(MultiGzDecoder::new(file)));
        }
        let reader = self.reader.as_mut()?;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            if let Ok(copy) = serde_json::from_str::<Copy>(line.trim_end()) {
                return Some(copy);
            }
        }
    }
}

/// Writes the kept copies of one import of a run (`import --keep-raw`):
/// one gzip member appended to the run's copies per import, so reading on
/// adds to them and a rebuild starts them again.
pub struct CopyWriter {
    path: PathBuf,
    encoder: Option<GzEncoder<File>>,
    /// Reads the frames of envelopes that only reference them (an import's
    /// recorder copies none: `Recorder::reference_frames`).
    sources: Resolver,
}

impl CopyWriter {
    /// Starts the copies of the log at `log` anew (a run rebuilt whole).
    pub fn create(log: &Path) -> Result<Self, StoreError> {
        Self::open(log, true)
    }

    /// Adds to the copies of the log at `log` (a run read on).
    pub fn append(log: &Path) -> Result<Self, StoreError> {
        Self::open(log, false)
    }

    fn open(log: &Path, anew: bool) -> Result<Self, StoreError> {
        let path = copies_path(log);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(!anew)
            .truncate(anew)
            .open(&path)
            .map_err(|source| StoreError::io("open kept copies", &path, source))?;
        Ok(Self {
            encoder: Some(GzEncoder::new(file, flate2::Compression::fast())),
            path,
            sources: Resolver::of_sources(),
        })
    }

    /// Keeps the frames of `envelopes` that have a reference: the frame
    /// they hold, else the one their reference names, read from its source
    /// now (just read by the import, so it is there as referenced; one
    /// that changed in between is left to its reference).
    pub fn keep(&mut self, envelopes: &[Envelope]) -> Result<(), StoreError> {
        let Some(encoder) = self.encoder.as_mut() else {
            return Ok(());
        };
        for envelope in envelopes {
            let Some(raw_ref) = &envelope.raw_ref else {
                continue;
            };
            let Ok(Some(raw)) = self.sources.frame(envelope) else {
                continue;
            };
            let copy = Copy { sequence: envelope.sequence, raw_ref: raw_ref.clone(), raw };
            let written = serde_json::to_writer(&mut *encoder, &copy)
                .map_err(io::Error::from)
                .and_then(|()| encoder.write_all(b"\n"));
            written.map_err(|source| StoreError::io("write kept copies", &self.path, source))?;
        }
        Ok(())
    }

    /// Ends the member (the copies are readable once this returns).
    pub fn finish(mut self) -> Result<(), StoreError> {
        match self.encoder.take() {
            Some(encoder) => encoder
                .finish()
                .map(drop)
                .map_err(|source| StoreError::io("write kept copies", &self.path, source)),
            None => Ok(()),
        }
    }
}
