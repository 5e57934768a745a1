//! Reading run logs back (§5, §2.7): a streaming reader that turns each line
//! into an envelope, v2, v3 (expanded to v2, see [`crate::lean`]) or legacy,
//! or into a counted skip, and reads v3 definition lines into its
//! dictionary. Bad content is never an error, only I/O is; memory is
//! bounded by the longest line and the log's definitions, never by the
//! file.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::iter::FusedIterator;
use std::path::{Path, PathBuf};

use agentrace_core::{Actor, Envelope, EventBody, RawFrame, RunId, Timestamp, LOG_VERSION};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::StoreError;
use crate::lean::{self, Dictionary, DEFINITION_PREFIX, LEAN_VERSION};
use crate::run_id::validate_run_id;

/// The `version` given to envelopes read from legacy `{timestamp, event}`
/// lines (those lines carry none).
pub const LEGACY_VERSION: u32 = 1;

/// The actor reason of every envelope read from a legacy line.
pub const LEGACY_ACTOR_REASON: &str = "legacy log: ownership unavailable";

/// The run id of legacy envelopes when the reader does not know the run.
pub const LEGACY_RUN_ID: &str = "legacy";

/// Large enough that a typical envelope needs one `read` call.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// A log line the reader could not turn into an envelope. Blank lines are
/// skipped without one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedLine {
    /// 1-based line number in the log.
    pub line_number: u64,
    /// Why it was skipped, for people.
    pub reason: String,
}

/// A streaming run log reader: an iterator of envelopes that records the
/// lines it skips in [`LogReader::skipped`].
///
/// It yields `Err` only for I/O errors, and then ends.
#[derive(Debug)]
pub struct LogReader<R: BufRead> {
    reader: R,
    path: Option<PathBuf>,
    run_id: RunId,
    max_line_bytes: Option<u64>,
    line_number: u64,
    line: Vec<u8>,
    skipped: Vec<SkippedLine>,
    finished: bool,
    /// Lines this says no to are passed over undecoded (neither envelopes
    /// nor skips).
    wanted: Option<fn(&[u8]) -> bool>,
    /// The v3 definitions read so far (or given, for a reader starting
    /// mid-file).
    dictionary: Dictionary,
    /// Bytes consumed from the input so far.
    consumed: u64,
    /// Where the line of the last envelope yielded is.
    last_line: Option<LineAt>,
}

/// Where one line is in its log: its first byte and its length without the
/// `\n`. The catalog keeps this for each searchable text, and a search
/// reads the line back with [`read_log_line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineAt {
    /// The byte offset of its first byte.
    pub offset: u64,
    /// Its length in bytes, without the `\n`.
    pub length: u64,
}

/// The line at `at` of the log at `path`, in one positioned read; `None`
/// when the log is gone or shorter than that (rewritten since).
pub fn read_log_line(file: &File, path: &Path, at: LineAt) -> Result<Option<Vec<u8>>, StoreError> {
    use std::os::unix::fs::FileExt as _;
    let Ok(length) = usize::try_from(at.length) else { return Ok(None) };
    let mut line = vec![0; length];
    match file.read_exact_at(&mut line, at.offset) {
        Ok(()) => Ok(Some(line)),
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Err(source) => Err(StoreError::io("read run log line", path, source)),
    }
}

/// What one line of the log turned out to be.
enum LineOutcome {
    Envelope(Box<Envelope>),
    Blank,
    /// A v3 definition, now in the dictionary.
    Defined,
    Skip(String),
}

/// How a line ended.
#[derive(Clone, Copy)]
struct LineRead {
    /// Ended by `\n` (else by the end of the file: the line may be torn).
    terminated: bool,
    /// Its full length in bytes, without the `\n`.
    length: u64,
}

/// Just enough of a line to tell a v2 envelope from a legacy line without
/// building a whole `Value`.
#[derive(Deserialize)]
struct LineShape<'a> {
    /// The v3 marker.
    #[serde(borrow, default)]
    v: Option<&'a RawValue>,
    /// Present on a v3 definition line.
    #[serde(borrow, default)]
    define: Option<&'a RawValue>,
    #[serde(borrow, default)]
    version: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    event: Option<&'a RawValue>,
    /// `Some` whenever the member is there, `null` included.
    #[serde(borrow, default, deserialize_with = "present")]
    raw: Option<&'a RawValue>,
}

/// Deserializes a member that is present as `Some`, even when it is `null`.
fn present<'de, D>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&RawValue>::deserialize(deserializer).map(Some)
}

impl LogReader<BufReader<File>> {
    /// Opens a log file. Legacy lines get the run id of the file name stem
    /// when it is a valid run id (else `legacy`); see
    /// [`LogReader::with_run_id`].
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let file =
            File::open(path).map_err(|source| StoreError::io("open run log", path, source))?;
        let mut reader = LogReader::new(BufReader::with_capacity(READ_BUFFER_BYTES, file));
        reader.path = Some(path.to_owned());
        if let Some(run_id) = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .and_then(|stem| validate_run_id(stem).ok())
        {
            reader.run_id = run_id;
        }
        Ok(reader)
    }
}

impl<R: BufRead> LogReader<R> {
    /// A reader of any buffered byte stream (no line length limit).
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            path: None,
            run_id: RunId::from(LEGACY_RUN_ID),
            max_line_bytes: None,
            line_number: 0,
            line: Vec::new(),
            skipped: Vec::new(),
            finished: false,
            wanted: None,
            dictionary: Dictionary::default(),
            consumed: 0,
            last_line: None,
        }
    }

    /// A reader that starts with `dictionary`'s definitions: for one that
    /// starts mid-file, given a dictionary taken at or after that point
    /// (definitions are never reused, so it decodes every earlier line).
    pub fn with_dictionary(mut self, dictionary: Dictionary) -> Self {
        self.dictionary = dictionary;
        self
    }

    /// The v3 definitions read so far (with those it was given).
    pub fn dictionary(&self) -> &Dictionary {
        &self.dictionary
    }

    /// Takes the definitions read so far, leaving none.
    pub fn take_dictionary(&mut self) -> Dictionary {
        std::mem::take(&mut self.dictionary)
    }

    /// Passes over, undecoded, the lines `wanted` says no to: a reader that
    /// needs a few event types tests each line's bytes for them first
    /// (decoding is most of the cost of reading a log). A line it lets
    /// through that is not wanted after all costs only its decoding.
    pub fn with_line_filter(mut self, wanted: fn(&[u8]) -> bool) -> Self {
        self.wanted = Some(wanted);
        self
    }

    /// The run id given to envelopes read from legacy lines, which carry none.
    pub fn with_run_id(mut self, run_id: RunId) -> Self {
        self.run_id = run_id;
        self
    }

    /// Skips (and counts) lines longer than `max` bytes without holding
    /// them in memory, for readers that must not trust the file's size.
    pub fn with_max_line_bytes(mut self, max: u64) -> Self {
        self.max_line_bytes = Some(max);
        self
    }

    /// The lines skipped so far, in file order.
    pub fn skipped(&self) -> &[SkippedLine] {
        &self.skipped
    }

    /// The lines skipped, once reading is done.
    pub fn into_skipped(self) -> Vec<SkippedLine> {
        self.skipped
    }

    /// The number of lines read so far, blank and skipped ones included.
    pub fn lines_read(&self) -> u64 {
        self.line_number
    }

    /// Where the line of the envelope last yielded is in the input (the
    /// catalog's texts keep it, so a search reads that line alone).
    pub fn last_line(&self) -> Option<LineAt> {
        self.last_line
    }

    /// Reads the next line into `self.line`, without its `\n`; `None` at
    /// the end of the input.
    fn read_line(&mut self) -> io::Result<Option<LineRead>> {
        self.line.clear();
        let mut length: u64 = 0;
        let mut started = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if available.is_empty() {
                return Ok(started.then_some(LineRead {
                    terminated: false,
                    length,
                }));
            }
            started = true;
            let (chunk, used, terminated) = match available.iter().position(|byte| *byte == b'\n') {
                Some(index) => (&available[..index], index + 1, true),
                None => (available, available.len(), false),
            };
            length += chunk.len() as u64;
            self.consumed += used as u64;
            match self.max_line_bytes {
                // Past the limit the line is only measured, never kept.
                Some(max) if length > max => self.line.clear(),
                _ => self.line.extend_from_slice(chunk),
            }
            self.reader.consume(used);
            if terminated {
                return Ok(Some(LineRead {
                    terminated: true,
                    length,
                }));
            }
        }
    }
}

impl<R: BufRead> Iterator for LogReader<R> {
    type Item = Result<Envelope, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        loop {
            let start = self.consumed;
            let read = match self.read_line() {
                Ok(Some(read)) => read,
                Ok(None) => {
                    self.finished = true;
                    return None;
                }
                Err(source) => {
                    // Retrying could loop forever on a failing device; the
                    // caller decides what to do with what it already has.
                    self.finished = true;
                    return Some(Err(StoreError::Read {
                        path: self.path.clone(),
                        line: self.line_number + 1,
                        source,
                    }));
                }
            };
            self.line_number += 1;
            // A definition is read whatever the filter says: a later line
            // it lets through may need it.
            if self.wanted.is_some_and(|wanted| !wanted(&self.line))
                && !self.line.starts_with(DEFINITION_PREFIX)
            {
                continue;
            }
            let outcome = match self.max_line_bytes {
                Some(max) if read.length > max => LineOutcome::Skip(format!(
                    "line too long: {} bytes, the limit is {max}",
                    read.length
                )),
                _ => decode_line(&self.line, self.line_number, &self.run_id, &mut self.dictionary),
            };
            match outcome {
                LineOutcome::Envelope(envelope) => {
                    self.last_line = Some(LineAt { offset: start, length: read.length });
                    return Some(Ok(*envelope));
                }
                LineOutcome::Blank | LineOutcome::Defined => {}
                LineOutcome::Skip(reason) => {
                    let reason = if read.terminated {
                        reason
                    } else {
                        format!("torn last line (no newline at end of file): {reason}")
                    };
                    self.skipped.push(SkippedLine {
                        line_number: self.line_number,
                        reason,
                    });
                }
            }
        }
    }
}

impl<R: BufRead> FusedIterator for LogReader<R> {}

/// Decodes a log's lines one at a time as [`LogReader`] does, v3
/// definitions kept, for a reader that assembles lines itself (`ingest` of
/// a run log from any input). Legacy lines give no envelope here.
#[derive(Debug)]
pub struct LineDecoder {
    run_id: RunId,
    dictionary: Dictionary,
}

impl LineDecoder {
    /// A decoder giving v3 lines the run id `run_id`.
    pub fn new(run_id: RunId) -> Self {
        Self { run_id, dictionary: Dictionary::default() }
    }

    /// The envelope of one line (without its `\n`); `None` for a
    /// definition (now known), a blank, a legacy or a bad line.
    pub fn decode(&mut self, bytes: &[u8], line_number: u64) -> Option<Envelope> {
        match self.read(bytes, line_number) {
            LogLine::Envelope(envelope) => Some(*envelope),
            LogLine::Definition | LogLine::Skipped => None,
        }
    }

    /// What one line (without its `\n`) is: an envelope, a line that is
    /// part of the log's form (a v3 definition, a blank), or one skipped (a
    /// legacy or a bad line). A replay counted a v3 log's definitions as
    /// lines that are not envelopes, and said so.
    pub fn read(&mut self, bytes: &[u8], line_number: u64) -> LogLine {
        match decode_line(bytes, line_number, &self.run_id, &mut self.dictionary) {
            LineOutcome::Envelope(envelope) if envelope.version != LEGACY_VERSION => LogLine::Envelope(envelope),
            LineOutcome::Defined | LineOutcome::Blank => LogLine::Definition,
            LineOutcome::Envelope(_) | LineOutcome::Skip(_) => LogLine::Skipped,
        }
    }
}

/// One line of a run log as [`LineDecoder::read`] reads it.
#[derive(Debug)]
pub enum LogLine {
    /// An envelope (a v3 line expanded).
    Envelope(Box<Envelope>),
    /// A v3 definition or a blank: part of the log's form, no event.
    Definition,
    /// A legacy line or one that is not an envelope.
    Skipped,
}

/// Reads a whole log: its envelopes in file order and the lines skipped.
pub fn read_log(path: &Path) -> Result<(Vec<Envelope>, Vec<SkippedLine>), StoreError> {
    let mut reader = LogReader::open(path)?;
    let envelopes = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok((envelopes, reader.into_skipped()))
}

/// Turns one line (without its `\n`) into an envelope, a blank, or a reason.
fn decode_line(bytes: &[u8], line_number: u64, run_id: &RunId, dictionary: &mut Dictionary) -> LineOutcome {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return LineOutcome::Blank;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            return LineOutcome::Skip(format!("invalid UTF-8 at byte {}", error.valid_up_to()))
        }
    };
    // Only an object can be a log line; checked before `LineShape`, which
    // serde would also fill from an array.
    if !text.trim_start().starts_with('{') {
        return match serde_json::from_str::<IgnoredAny>(text) {
            Ok(_) => LineOutcome::Skip(String::from(
                "not a log line: a JSON value that is not an object",
            )),
            Err(error) => LineOutcome::Skip(format!("invalid JSON: {error}")),
        };
    }
    let shape = match serde_json::from_str::<LineShape<'_>>(text) {
        Ok(shape) => shape,
        Err(error) if error.is_data() => {
            return LineOutcome::Skip(format!("not a log line: {error}"))
        }
        Err(error) => return LineOutcome::Skip(format!("invalid JSON: {error}")),
    };
    match shape {
        LineShape { v: Some(v), define, raw, .. } => match serde_json::from_str::<u64>(v.get()) {
            Ok(v) if v == u64::from(LEAN_VERSION) => match define {
                Some(_) => match lean::read_definition(text, dictionary) {
                    Ok(()) => LineOutcome::Defined,
                    Err(reason) => LineOutcome::Skip(reason),
                },
                None => match lean::expand(text, raw, dictionary, run_id) {
                    Ok(envelope) => LineOutcome::Envelope(Box::new(envelope)),
                    Err(reason) => LineOutcome::Skip(reason),
                },
            },
            _ => LineOutcome::Skip(format!(
                "unsupported log line format v {} (this build reads v {LEAN_VERSION}, version {LOG_VERSION} and legacy lines)",
                shorten(v.get())
            )),
        },
        LineShape {
            version: Some(version),
            raw,
            ..
        } => match serde_json::from_str::<u64>(version.get()) {
            Ok(version) if version == u64::from(LOG_VERSION) => decode_v2(text, raw),
            _ => LineOutcome::Skip(format!(
                "unsupported log version {} (this build reads version {LOG_VERSION} and legacy lines)",
                shorten(version.get())
            )),
        },
        LineShape {
            version: None,
            timestamp: Some(timestamp),
            event: Some(event),
            ..
        } => decode_legacy(text, timestamp, event, line_number, run_id),
        LineShape { version: None, .. } => LineOutcome::Skip(String::from(
            "not a log line: no `version`, and not a legacy `{timestamp, event}` line",
        )),
    }
}

/// A v2 line; `raw` is its `raw` member when present, `null` included.
fn decode_v2(text: &str, raw: Option<&RawValue>) -> LineOutcome {
    let mut envelope = match serde_json::from_str::<Envelope>(text) {
        Ok(envelope) => envelope,
        Err(error) => return LineOutcome::Skip(format!("invalid v2 envelope: {error}")),
    };
    // `Option<Box<RawValue>>` reads `"raw": null` as no raw at all, but a
    // frame that was the JSON `null` is still a frame, and every input line
    // must stay in some envelope's `raw`.
    if envelope.raw.is_none() {
        envelope.raw = raw.map(|raw| RawFrame::from(raw.to_owned()));
    }
    LineOutcome::Envelope(Box::new(envelope))
}

/// A legacy `{timestamp, event}` line as an envelope whose actor is unknown
/// (§2.7): those logs never recorded who did what.
fn decode_legacy(
    text: &str,
    timestamp: &RawValue,
    event: &RawValue,
    line_number: u64,
    run_id: &RunId,
) -> LineOutcome {
    let timestamp = match serde_json::from_str::<Timestamp>(timestamp.get()) {
        Ok(timestamp) => timestamp,
        Err(error) => {
            return LineOutcome::Skip(format!("legacy line with an unreadable timestamp: {error}"))
        }
    };
    // `EventBody` falls back to `Foreign`, which takes any JSON value, so an
    // error here means the text itself was bad; kept for honesty all the same.
    let event = match serde_json::from_str::<EventBody>(event.get()) {
        Ok(event) => event,
        Err(error) => {
            return LineOutcome::Skip(format!("legacy line with an unreadable event: {error}"))
        }
    };
    // The line is known to be valid JSON; this only trims the white space
    // around it so `raw` is the value itself.
    let raw = match serde_json::from_str::<&RawValue>(text) {
        Ok(raw) => raw.to_owned(),
        Err(error) => return LineOutcome::Skip(format!("invalid JSON: {error}")),
    };
    LineOutcome::Envelope(Box::new(Envelope {
        version: LEGACY_VERSION,
        timestamp,
        sequence: line_number,
        run_id: run_id.clone(),
        direction: None,
        actor: Actor::unknown(LEGACY_ACTOR_REASON),
        event,
        raw: Some(raw.into()),
        raw_ref: None,
        raw_unavailable: None,
    }))
}

/// A bounded copy of a JSON snippet for a reason.
fn shorten(text: &str) -> String {
    const SHOWN: usize = 40;
    match text.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
