//! One session's files fed to one recorder as one input: the lines of a
//! Codex root's rollout and its children's, or of a Claude session's
//! transcript and its subagents' files, merged in the order of their times.
//! Owns how those files are read and in what order; never what a line means
//! (the recorder's) nor where the envelopes go (the sink's).
//!
//! # One order for every reading
//!
//! A session that grows is read again and again (`import` from where the
//! last one stopped, `watch` as lines come), each reading appending to the
//! run what the files gained. For the run to end as one reading of the
//! finished files makes it, every reading must feed the lines in one order
//! that a reading of any earlier state of the files begins with. Files one
//! after another is not such an order (a root's later lines would come
//! before its child's first); the time the agent wrote them is.
//!
//! A line's key is the latest time its file has named up to it (a line with
//! no time, or one earlier than a line before it, keeps its file's last
//! one); keys tie in the listed order of the files. Each file's keys only
//! grow, so the merge is a stable sort of all lines by key, and what an
//! earlier reading fed is a prefix of it exactly when no line it did not
//! feed sorts before the last one it fed. That is checked before reading on
//! ([`Diverged`]): a file written late (a child's line flushed after its
//! parent's later one) is met by reading the session again whole, never by
//! an order no whole reading would give.
//!
//! A subagent's metadata document (Claude) is fed as one line just before
//! its file's first line, so it waits for that line.

use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::cmp::Reverse;
use std::fs::{self, File};
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use agentrace_core::decode;
use agentrace_core::lines::LineAssembler;
use agentrace_core::model::{Event, EventBody, RawRef, Timestamp};
use agentrace_core::recorder::SourcePart;
use agentrace_core::{Envelope, InputLine, Recorder};
use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// A sink of envelopes, given each batch as it is made.
pub type Sink<'a> = &'a mut dyn FnMut(Vec<Envelope>) -> anyhow::Result<()>;

/// Where the reading of one source file stopped (kept per file in the
/// import state, so the next import reads on from there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadMark {
    /// Bytes read, up to the end of the last whole line.
    pub offset: u64,
    /// Lines read (numbering goes on from here).
    pub lines: u64,
    /// A last line with no newline was read as it was: the file cannot be
    /// read on from `offset` without reading that line twice.
    #[serde(default)]
    pub torn: bool,
    /// The file's number among its session's rollouts, in feeding order.
    #[serde(default)]
    pub number: u32,
}

/// Where a line sorts: the latest time its file named up to it (none
/// before the file named one).
type Key = Option<Timestamp>;

/// Where a feed stood when a reading stopped, beside its files' marks:
/// what a later process needs to go on feeding from the marks without
/// reading the files again from their start ([`SessionFeed::resumed_at`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedPosition {
    /// Each file, in the listed order, and the latest time it named.
    keys: Vec<(String, Key)>,
    /// The file the last fed line came from (its index), and its key.
    last: Option<(usize, Key)>,
    /// The time a line that names none gets.
    clock: Timestamp,
}

/// Lines the session's files gained sort before the last line already fed
/// (or a metadata document came after its file's first line): reading on
/// would give an order no reading of the whole files gives, so the run must
/// be rebuilt whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diverged {
    /// The file whose line came too late.
    pub path: PathBuf,
}

/// How far a reading goes.
#[derive(Debug, Clone, Copy)]
pub enum Reach<'a> {
    /// To the end of every file as it is now.
    Ends,
    /// Up to where an earlier reading stopped in each file (by path); a
    /// file it did not read is not read, a document it did not feed is
    /// not fed.
    Marks(&'a BTreeMap<String, ReadMark>),
}

impl Reach<'_> {
    /// How far `path` may be read, in bytes; `None` for no limit.
    fn limit(&self, path: &Path) -> Option<u64> {
        match self {
            Reach::Ends => None,
            Reach::Marks(marks) => Some(marks.get(path.to_string_lossy().as_ref()).map_or(0, |mark| mark.offset)),
        }
    }

    /// Whether the document at `path` may be fed.
    fn allows(&self, path: &Path) -> bool {
        match self {
            Reach::Ends => true,
            Reach::Marks(marks) => marks.contains_key(path.to_string_lossy().as_ref()),
        }
    }
}

/// One session's files being fed (see the module's documentation).
pub struct SessionFeed {
    /// In the listed order (their ties go to the first).
    streams: Vec<Stream>,
    /// The stream the last fed line came from, and its key.
    last: Option<(usize, Key)>,
    /// The time given to a line that names none: the last envelope's.
    clock: Timestamp,
    /// What becomes of a last line with no newline yet.
    torn_lines: TornLines,
    /// Each frame also names where its line is ([`SessionFeed::referencing`]).
    references: bool,
}

/// What to do with a file's last line when it has no newline yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TornLines {
    /// Fed as it is (a finished file's): the file is marked torn, and read
    /// again whole when it grows.
    Feed,
    /// Left unread until its newline comes (a file still being written:
    /// `watch`); the reading stops before it.
    Wait,
}

/// One file and the document fed before its first line.
struct Stream {
    part: SourcePart,
    lines: Lines,
    document: Option<Document>,
}

/// A metadata document, fed whole as one line.
struct Document {
    part: SourcePart,
    path: PathBuf,
    /// Its length when fed.
    fed: Option<u64>,
}

/// The lines of one file, read ahead of the merge.
struct Lines {
    path: PathBuf,
    file: Option<File>,
    /// Bytes taken from the file.
    read: u64,
    assembler: LineAssembler,
    /// Lines read and not yet fed, with where each ends and its key.
    queued: VecDeque<Queued>,
    /// The key of the last line queued.
    key: Key,
    /// Lines' times are read: not when the file is its session's only one,
    /// whose order is its own.
    keyed: bool,
    /// The reading met the file's end (or its limit) in this pass.
    ended: bool,
    /// What was fed: the end of the last whole line, lines, torn.
    fed: ReadMark,
    /// Where the next line queued starts.
    next_start: u64,
    /// How its lines' references name the file, once a feed references
    /// them (made once: per line, it was a hundredth of an import).
    source_name: Option<String>,
}

/// A line read and not yet fed.
struct Queued {
    bytes: Vec<u8>,
    /// Where it starts in the file.
    start: u64,
    line_number: u64,
    truncated_from: Option<u64>,
    /// Where it ends in the file (after its newline; a torn line's start).
    end: u64,
    key: Key,
    torn: bool,
}

/// How much of a file one read asks for (a read buffer per file of a
/// session, so smaller than a single file's).
const CHUNK: usize = 64 * 1024;

thread_local! {
    /// The buffer files are read through, one per thread (a fresh one per
    /// read was allocated and zeroed for every file of every session).
    static CHUNK_BUFFER: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; CHUNK]);
}

/// How many envelopes are handed to the sink at once.
const BATCH: usize = 512;

impl SessionFeed {
    /// A feed of `parts` in their listed order (a Codex session's rollouts
    /// as `File`s, a Claude session's files with each subagent's metadata
    /// just before its file); lines that name no time get `clock` until
    /// one does.
    pub fn new(parts: &[(SourcePart, PathBuf)], clock: Timestamp, torn_lines: TornLines) -> Self {
        let files = parts.iter().filter(|(part, _)| !matches!(part, SourcePart::AgentMeta { .. })).count();
        let mut streams: Vec<Stream> = Vec::with_capacity(parts.len());
        let mut pending: Option<Document> = None;
        for (part, path) in parts {
            if let SourcePart::AgentMeta { .. } = part {
                pending = Some(Document { part: part.clone(), path: path.clone(), fed: None });
                continue;
            }
            let belongs = matches!(
                (&pending, part),
                (Some(Document { part: SourcePart::AgentMeta { agent_id: meta }, .. }), SourcePart::AgentFile { agent_id }) if meta == agent_id
            );
            // A document with no file of its own is never fed: it waits for
            // its file's first line.
            let document = if belongs { pending.take() } else { None };
            pending = None;
            streams.push(Stream { part: part.clone(), lines: Lines::new(path, files > 1), document });
        }
        Self { streams, last: None, clock, torn_lines, references: false }
    }

    /// The same feed giving every envelope whose frame is its line a
    /// `raw_ref` (where the line is: file, offset, length, CRC) instead of
    /// a copy in `raw`, for an import, whose runs reference their sources
    /// (the recorder is told so: [`Recorder::reference_frames`]). A frame
    /// that is not the line's own text (an undecodable or cut line kept as
    /// a string) stays in `raw`.
    pub fn referencing(mut self) -> Self {
        self.references = true;
        // A reference must hold wherever it is read, so a file named by a
        // relative path is named from the root: once here, not once per
        // line where each reference is made (a `getcwd` each).
        for stream in &mut self.streams {
            stream.lines.path = crate::sources::from_the_root(std::mem::take(&mut stream.lines.path));
            stream.lines.source_name = Some(agentrace_store::raw_ref::source_name(&stream.lines.path));
            if let Some(document) = &mut stream.document {
                document.path = crate::sources::from_the_root(std::mem::take(&mut document.path));
            }
        }
        self
    }

    /// Feeds `recorder` what the files hold up to `reach`, merged, handing
    /// `sink` the envelopes; `Err(Diverged)` (before anything is fed) when
    /// what they gained since the last pass cannot follow it.
    pub fn feed(&mut self, recorder: &mut Recorder, reach: Reach<'_>, sink: Sink<'_>) -> anyhow::Result<Result<(), Diverged>> {
        // A recorder that keeps no frames has no use for where a line is.
        let references = self.references && recorder.keeps_frames();
        if references {
            recorder.reference_frames();
        }
        let mut heads = BinaryHeap::new();
        for (index, stream) in self.streams.iter_mut().enumerate() {
            stream.lines.ended = false;
            let Some(key) = stream.lines.head(reach.limit(&stream.lines.path), self.torn_lines)? else {
                continue;
            };
            if let Some((last, last_key)) = self.last {
                if (key, index) < (last_key, last) {
                    return Ok(Err(Diverged { path: stream.lines.path.clone() }));
                }
            }
            if let Some(document) = &stream.document {
                if document.fed.is_none() && stream.lines.fed.lines > 0 {
                    return Ok(Err(Diverged { path: document.path.clone() }));
                }
            }
            heads.push(Reverse((key, index)));
        }
        let mut batch = Vec::new();
        while let Some(Reverse((key, index))) = heads.pop() {
            let clock = &mut self.clock;
            let stream = &mut self.streams[index];
            if let Some(document) = stream.document.as_mut().filter(|document| document.fed.is_none()) {
                if !reach.allows(&document.path) {
                    return Ok(Err(Diverged { path: document.path.clone() }));
                }
                let bytes = read_small(&document.path)?;
                let at = references.then(|| agentrace_store::raw_ref::reference(&document.path, 0, &bytes));
                batch.extend(feed_line(recorder, &document.part, (&bytes, &document.path, None), 1, None, at, clock));
                document.fed = Some(bytes.len() as u64);
            }
            if let Some(line) = stream.lines.queued.pop_front() {
                if !decode::is_blank(&line.bytes) || line.truncated_from.is_some() {
                    // Only a referencing feed names its files (`referencing`).
                    let at = stream
                        .lines
                        .source_name
                        .as_deref()
                        .filter(|_| references && line.truncated_from.is_none())
                        .map(|name| agentrace_store::raw_ref::reference_in(name, line.start, &line.bytes));
                    let from = (line.bytes.as_slice(), stream.lines.path.as_path(), stream.lines.source_name.as_deref());
                    batch.extend(feed_line(recorder, &stream.part, from, line.line_number, line.truncated_from, at, clock));
                }
                if !line.torn {
                    stream.lines.fed.offset = line.end;
                }
                stream.lines.fed.lines = line.line_number;
                stream.lines.fed.torn = line.torn;
            }
            self.last = Some((index, key));
            if batch.len() >= BATCH {
                sink(std::mem::take(&mut batch))?;
            }
            if let Some(key) = stream.lines.head(reach.limit(&stream.lines.path), self.torn_lines)? {
                heads.push(Reverse((key, index)));
            }
        }
        sink(batch)?;
        Ok(Ok(()))
    }

    /// Where the reading of each file stopped (by path), and of each
    /// document fed; `number` is the one a Codex rollout was fed as.
    pub fn marks(&self) -> BTreeMap<String, ReadMark> {
        let mut marks = BTreeMap::new();
        for stream in &self.streams {
            let number = match stream.part {
                SourcePart::File { number } => number,
                SourcePart::Main | SourcePart::AgentFile { .. } | SourcePart::AgentMeta { .. } => 0,
            };
            if let Some(Document { path, fed: Some(length), .. }) = &stream.document {
                marks.insert(path.to_string_lossy().into_owned(), ReadMark { offset: *length, lines: 1, torn: false, number });
            }
            marks.insert(stream.lines.path.to_string_lossy().into_owned(), ReadMark { number, ..stream.lines.fed });
        }
        marks
    }

    /// Where this feed stands ([`FeedPosition`]).
    pub fn position(&self) -> FeedPosition {
        FeedPosition {
            keys: self.streams.iter().map(|stream| (stream.lines.path.to_string_lossy().into_owned(), stream.lines.key)).collect(),
            last: self.last,
            clock: self.clock,
        }
    }

    /// The same feed as one that fed its files up to `marks` and stood at
    /// `position` then: it goes on from the marks, where that feed would
    /// (each file read from its mark, its lines numbered on, its key and
    /// the merge's last line as they were). A file `position` does not
    /// name is new since, and read from its start. `None` when a file it
    /// names is not among these, or a mark ends no whole line.
    pub fn resumed_at(mut self, position: &FeedPosition, marks: &BTreeMap<String, ReadMark>) -> Option<Self> {
        let mut known: BTreeMap<&str, Key> = BTreeMap::new();
        for (path, key) in &position.keys {
            known.insert(path.as_str(), *key);
        }
        let mut last = None;
        let mut found = 0;
        for (index, stream) in self.streams.iter_mut().enumerate() {
            let path = stream.lines.path.to_string_lossy().into_owned();
            let Some(key) = known.get(path.as_str()) else {
                continue;
            };
            found += 1;
            // The merge's last line, by where its file is listed now: a
            // file new since may be listed before it.
            if let Some((was, last_key)) = position.last {
                if position.keys.get(was).is_some_and(|(last_path, _)| *last_path == path) {
                    last = Some((index, last_key));
                }
            }
            let mark = marks.get(&path).copied().unwrap_or_default();
            if mark.torn {
                return None;
            }
            let lines = &mut stream.lines;
            lines.read = mark.offset;
            lines.next_start = mark.offset;
            lines.fed = ReadMark { offset: mark.offset, lines: mark.lines, torn: false, number: 0 };
            lines.assembler = LineAssembler::default().numbered_from(mark.lines);
            lines.key = *key;
            if let Some(document) = &mut stream.document {
                document.fed = marks.get(document.path.to_string_lossy().as_ref()).map(|mark| mark.offset);
            }
        }
        if found != position.keys.len() || last.is_none() != position.last.is_none() {
            return None;
        }
        self.last = last;
        self.clock = position.clock;
        self.stopped_at(marks).then_some(self)
    }

    /// True when every file was read exactly to `marks` (a pass with
    /// [`Reach::Marks`] of files that only grew since does).
    pub fn stopped_at(&self, marks: &BTreeMap<String, ReadMark>) -> bool {
        self.streams.iter().all(|stream| {
            let fed = &stream.lines.fed;
            let mark = marks.get(stream.lines.path.to_string_lossy().as_ref()).copied().unwrap_or_default();
            let document_fed = stream.document.as_ref().is_none_or(|document| {
                document.fed.is_some() == marks.contains_key(document.path.to_string_lossy().as_ref())
            });
            fed.offset == mark.offset && fed.lines == mark.lines && !fed.torn && document_fed
        })
    }
}

/// One line (its bytes, the file it is in and how a reference names that
/// file) to `recorder` as `part`, at `clock` when it names no time
/// (`clock` then follows the last envelope's time); its frame referenced
/// `at` when given.
fn feed_line(
    recorder: &mut Recorder,
    part: &SourcePart,
    (bytes, path, source_name): (&[u8], &Path, Option<&str>),
    line_number: u64,
    truncated_from: Option<u64>,
    at: Option<RawRef>,
    clock: &mut Timestamp,
) -> Vec<Envelope> {
    let line = InputLine { bytes, line_number, observed_at: *clock, direction: None, truncated_from };
    let mut produced = match at {
        Some(at) => recorder.push_referenced(part, &line, at),
        None => recorder.push_part(part, &line),
    };
    // An undecodable line has no `rawRef` (its frame is the line kept as a
    // string), and its line number alone did not say which of a session's
    // files it is in: the feed is what knows the file (the attributor knows
    // its part, never its path), so it names it, as a reference would.
    for envelope in &mut produced {
        if let EventBody::Known(Event::Unknown { kind, file, .. }) = &mut envelope.event {
            if kind == agentrace_core::model::UNDECODABLE && file.is_none() {
                *file = Some(source_name.map_or_else(|| agentrace_store::raw_ref::source_name(path), str::to_owned));
            }
        }
    }
    if let Some(last) = produced.last() {
        *clock = last.timestamp;
    }
    produced
}

impl Lines {
    fn new(path: &Path, keyed: bool) -> Self {
        Self {
            path: path.to_path_buf(),
            file: None,
            read: 0,
            assembler: LineAssembler::default(),
            queued: VecDeque::new(),
            key: None,
            keyed,
            ended: false,
            fed: ReadMark::default(),
            next_start: 0,
            source_name: None,
        }
    }

    /// The key of the next line to feed, reading up to `limit` bytes of the
    /// file (none: to its end) as needed; `None` when there is none in this
    /// pass.
    fn head(&mut self, limit: Option<u64>, torn_lines: TornLines) -> anyhow::Result<Option<Key>> {
        while self.queued.is_empty() && !self.ended {
            self.read_more(limit, torn_lines)?;
        }
        Ok(self.queued.front().map(|line| line.key))
    }

    /// Reads one chunk (or notes the end) and queues the lines it completes.
    fn read_more(&mut self, limit: Option<u64>, torn_lines: TornLines) -> anyhow::Result<()> {
        let room = limit.map_or(CHUNK as u64, |limit| limit.saturating_sub(self.read).min(CHUNK as u64));
        if room == 0 {
            self.ended = true;
            return Ok(());
        }
        let mut file = match self.file.take() {
            Some(file) => file,
            None => {
                let mut file = File::open(&self.path).with_context(|| format!("cannot open {}", self.path.display()))?;
                if self.read > 0 {
                    file.seek(SeekFrom::Start(self.read)).with_context(|| format!("cannot read {}", self.path.display()))?;
                }
                file
            }
        };
        let asked = usize::try_from(room).unwrap_or(CHUNK);
        let read = CHUNK_BUFFER.with(|buffer| -> anyhow::Result<usize> {
            let mut owned;
            let mut borrowed = buffer.try_borrow_mut();
            let chunk: &mut [u8] = match &mut borrowed {
                Ok(buffer) => &mut buffer[..asked],
                Err(_) => {
                    owned = vec![0u8; asked];
                    &mut owned
                }
            };
            let read = file.read(chunk).with_context(|| format!("cannot read {}", self.path.display()))?;
            let start = self.read;
            self.read += read as u64;
            self.queue(&chunk[..read], start);
            Ok(read)
        })?;
        self.file = Some(file);
        // A short read is the end as the file is now: what the agent
        // appends later is read by the next pass.
        if read < asked {
            self.ended = true;
            if limit.is_none() && torn_lines == TornLines::Feed && self.assembler.pending() > 0 {
                let end = self.read - self.assembler.pending();
                let mut torn = Vec::new();
                self.assembler.finish_each(&mut |line| torn.push(line.to_owned()));
                for line in torn {
                    self.push(line.bytes, line.line_number, line.truncated_from, end, true);
                }
            }
        }
        Ok(())
    }

    /// Queues the lines `chunk` (read from `start` on) completes.
    fn queue(&mut self, chunk: &[u8], start: u64) {
        let mut done: Vec<(Vec<u8>, u64, Option<u64>, u64)> = Vec::new();
        let mut at = 0;
        for newline in memchr::memchr_iter(b'\n', chunk) {
            let end = start + newline as u64 + 1;
            self.assembler.push_each(&chunk[at..=newline], &mut |line| {
                done.push((line.bytes.to_vec(), line.line_number, line.truncated_from, end));
            });
            at = newline + 1;
        }
        self.assembler.push_each(&chunk[at..], &mut |_| {});
        for (bytes, line_number, truncated_from, end) in done {
            self.push(bytes, line_number, truncated_from, end, false);
        }
    }

    fn push(&mut self, bytes: Vec<u8>, line_number: u64, truncated_from: Option<u64>, end: u64, torn: bool) {
        let time = if self.keyed { line_time(&bytes) } else { None };
        let key = self.key.max(time);
        self.key = key;
        // A torn line's `end` is its start; a whole line's is past its
        // newline, where the next one starts.
        let start = if torn { end } else { self.next_start };
        if !torn {
            self.next_start = end;
        }
        self.queued.push_back(Queued { bytes, start, line_number, truncated_from, end, key, torn });
    }
}

/// The time a line names (its top-level `timestamp`), if any.
///
/// Read where it stands without the line's bulk: among the first members
/// when they are scalars (a rollout line names its time first), else from
/// the end backwards (a transcript line names its time after its bulk, an
/// attachment's body, and before its short rendering, which is stepped
/// over). Only a line whose end cannot be read that way (not shaped like a
/// JSON object) is skimmed forwards. Skimming from the front stepped over
/// nearly every byte of a transcript (a sixth of reading usage straight
/// from folders of older transcripts), then checked every rollout line
/// whole to read its first member. The backward reading does not check
/// the whole line: a line that is no JSON may get a key the forward one
/// would not give it, which only places it among its neighbours, the same
/// way in every reading.
fn line_time(bytes: &[u8]) -> Option<Timestamp> {
    // Set once the member is met (to `None` when it names no time).
    let mut found: Option<Option<Timestamp>> = None;
    decode::visit_named(bytes, &["timestamp"], &mut |_, raw| {
        found = Some(decode::raw_string(raw).and_then(|text| Timestamp::parse(&text)));
        false
    });
    found.flatten()
}

/// How much of a file one read asks for.
const READ_SIZE: usize = 256 * 1024;

thread_local! {
    /// The buffer files are read through, one per thread for all the files
    /// it reads: one per session (allocated, zeroed and faulted in each
    /// time) was a tenth of reading usage straight from folders.
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; READ_SIZE]);
}

/// A small file whole (`fs::read` asks for the size first and reads once
/// more to see the end: two system calls more per subagent's metadata).
pub(crate) fn read_small(path: &Path) -> anyhow::Result<Vec<u8>> {
    let mut file = fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut bytes = Vec::new();
    read_chunks(&mut file, path, |chunk| {
        bytes.extend_from_slice(chunk);
        Ok(())
    })?;
    Ok(bytes)
}

/// Reads `file` (`path`) to its end through this thread's read buffer (a
/// fresh one, were it in use), handing `each` every chunk; returns the
/// bytes read. A read that comes back short is the end (as the file is now:
/// what an agent appends later is read by the next import, from the offset
/// returned): asking again only to be told so was a system call per file.
fn read_chunks(
    file: &mut fs::File,
    path: &Path,
    mut each: impl FnMut(&[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut chunks = |buffer: &mut [u8]| {
        let mut total = 0u64;
        loop {
            let read = file.read(buffer).with_context(|| format!("cannot read {}", path.display()))?;
            total += read as u64;
            if read > 0 {
                each(&buffer[..read])?;
            }
            if read < buffer.len() {
                return Ok(total);
            }
        }
    };
    READ_BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut buffer) => chunks(&mut buffer),
        Err(_) => chunks(&mut vec![0u8; READ_SIZE]),
    })
}

/// Feeds `parts` whole from their start (lines that name no time get
/// `start` until one does).
pub(crate) fn feed_whole(
    recorder: &mut Recorder,
    parts: &[(SourcePart, PathBuf)],
    start: Timestamp,
    torn_lines: TornLines,
    sink: Sink<'_>,
) -> anyhow::Result<BTreeMap<String, ReadMark>> {
    Ok(fed_whole(recorder, parts, start, torn_lines, sink)?.marks())
}

/// [`feed_whole`], giving back the feed as it stopped.
pub(crate) fn fed_whole(
    recorder: &mut Recorder,
    parts: &[(SourcePart, PathBuf)],
    start: Timestamp,
    torn_lines: TornLines,
    sink: Sink<'_>,
) -> anyhow::Result<SessionFeed> {
    let mut feed = SessionFeed::new(parts, start, torn_lines).referencing();
    match feed.feed(recorder, Reach::Ends, sink)? {
        Ok(()) => Ok(feed),
        // Nothing was fed before this pass, so nothing can come too late.
        Err(diverged) => anyhow::bail!("{} could not be read in order", diverged.path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Option<Timestamp> {
        Timestamp::parse(text)
    }

    /// The backward reading and the forward one give every line the same
    /// key: a time after the bulk, before it, beside a nested one, or none.
    #[test]
    fn a_line_time_is_its_top_level_timestamp_wherever_it_stands() {
        let cases: Vec<(&str, Option<Timestamp>)> = vec![
            (
                r#"{"message":{"timestamp":"2026-01-01T00:00:00Z"},"timestamp":"2026-02-02T00:00:00Z","cwd":"/x"}"#,
                at("2026-02-02T00:00:00Z"),
            ),
            (
                r#"{"timestamp":"2026-02-02T00:00:00Z","shape":{"timestamp":"2026-01-01T00:00:00Z"}}"#,
                at("2026-02-02T00:00:00Z"),
            ),
            (
                r#"{"attachment":{"a":1},"timestamp":"2026-02-02T00:00:00Z","rendered":["x"],"userType":"external"}"#,
                at("2026-02-02T00:00:00Z"),
            ),
            (r#"{"type":"api-request-blob","message":{"timestamp":"2026-01-01T00:00:00Z"}}"#, None),
            (r#"{"type":"last-prompt","lastPrompt":"say \"timestamp\""}"#, None),
            (r#"{"timestamp":"not a time","type":"user"}"#, None),
            ("not json", None),
        ];
        let found: Vec<(&str, Option<Timestamp>)> =
            cases.iter().map(|(line, _)| (*line, line_time(line.as_bytes()))).collect();
        assert_eq!(found, cases);
    }
}
