//! Line assembly: byte chunks of any size in, whole lines out, each at most
//! a bounded length. Pure (the shell reads; this only splits), so any split
//! of the same input gives the same lines.

/// The longest line kept whole: longer ones are cut to [`KEPT_PREFIX`] bytes
/// and reported with their full length (§10: huge lines are a counted skip).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How much of an over-long line is kept for the record.
pub const KEPT_PREFIX: usize = 4096;

/// One assembled line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssembledLine {
    /// The line without its `\n` (cut to [`KEPT_PREFIX`] when too long).
    pub bytes: Vec<u8>,
    /// 1-based line number.
    pub line_number: u64,
    /// The full length, when the line was longer than the limit.
    pub truncated_from: Option<u64>,
}

/// Splits a byte stream into lines.
#[derive(Debug, Clone)]
pub struct LineAssembler {
    max_line: usize,
    current: Vec<u8>,
    current_length: u64,
    overflowed: bool,
    line_number: u64,
}

impl Default for LineAssembler {
    fn default() -> Self {
        Self::new(MAX_LINE_BYTES)
    }
}

impl LineAssembler {
    /// An assembler cutting lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        Self {
            max_line,
            current: Vec::new(),
            current_length: 0,
            overflowed: false,
            line_number: 0,
        }
    }

    /// Feeds a chunk; returns the lines it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<AssembledLine> {
        let mut out = Vec::new();
        self.push_each(chunk, &mut |line| out.push(line.to_owned()));
        out
    }

    /// Feeds a chunk, handing `each` the lines it completed, borrowed: a
    /// line wholly inside the chunk is not copied (a reader of large files
    /// spent much of its time copying and allocating each line).
    pub fn push_each(&mut self, mut chunk: &[u8], each: &mut dyn FnMut(LineRef<'_>)) {
        while let Some(index) = memchr::memchr(b'\n', chunk) {
            let line = &chunk[..index];
            if self.current_length == 0 && line.len() <= self.max_line {
                self.line_number += 1;
                each(LineRef {
                    bytes: line.strip_suffix(b"\r").unwrap_or(line),
                    line_number: self.line_number,
                    truncated_from: None,
                });
            } else {
                self.extend(line);
                self.complete(each);
            }
            chunk = &chunk[index + 1..];
        }
        self.extend(chunk);
    }

    /// The input ended: returns the last line when it had no newline.
    pub fn finish(&mut self) -> Option<AssembledLine> {
        let mut last = None;
        self.finish_each(&mut |line| last = Some(line.to_owned()));
        last
    }

    /// [`LineAssembler::finish`], handing the last line to `each`.
    pub fn finish_each(&mut self, each: &mut dyn FnMut(LineRef<'_>)) {
        if self.current_length > 0 {
            self.complete(each);
        }
    }

    /// An assembler whose first line is numbered `lines + 1` (reading a
    /// file on from where an earlier reading stopped).
    pub fn numbered_from(mut self, lines: u64) -> Self {
        self.line_number = lines;
        self
    }

    /// Lines completed so far (with the numbering's start).
    pub fn lines(&self) -> u64 {
        self.line_number
    }

    /// Bytes of an unfinished line held now.
    pub fn pending(&self) -> u64 {
        self.current_length
    }

    fn extend(&mut self, bytes: &[u8]) {
        self.current_length += bytes.len() as u64;
        if self.overflowed {
            return;
        }
        if self.current.len() + bytes.len() > self.max_line {
            // Keep a prefix for the record; drop the rest as it streams by.
            let room = KEPT_PREFIX
                .min(self.max_line)
                .saturating_sub(self.current.len().min(KEPT_PREFIX));
            self.current.truncate(KEPT_PREFIX.min(self.current.len()));
            self.current
                .extend_from_slice(&bytes[..room.min(bytes.len())]);
            self.overflowed = true;
        } else {
            self.current.extend_from_slice(bytes);
        }
    }

    /// Hands the held line to `each` and starts the next one.
    fn complete(&mut self, each: &mut dyn FnMut(LineRef<'_>)) {
        self.line_number += 1;
        let mut end = self.current.len();
        if !self.overflowed && self.current.last() == Some(&b'\r') {
            end -= 1;
        }
        each(LineRef {
            bytes: &self.current[..end],
            line_number: self.line_number,
            truncated_from: self.overflowed.then_some(self.current_length),
        });
        self.current.clear();
        // One huge line should not pin its buffer for the rest of the input.
        if self.current.capacity() > HELD_CAPACITY {
            self.current.shrink_to(HELD_CAPACITY);
        }
        self.current_length = 0;
        self.overflowed = false;
    }
}

/// The most an assembler keeps allocated between lines.
const HELD_CAPACITY: usize = 4 * 1024 * 1024;

/// One assembled line, borrowed from the chunk or the assembler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRef<'a> {
    /// The line without its `\n` (cut to [`KEPT_PREFIX`] when too long).
    pub bytes: &'a [u8],
    /// 1-based line number.
    pub line_number: u64,
    /// The full length, when the line was longer than the limit.
    pub truncated_from: Option<u64>,
}

impl LineRef<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> AssembledLine {
        AssembledLine {
            bytes: self.bytes.to_vec(),
            line_number: self.line_number,
            truncated_from: self.truncated_from,
        }
    }
}
