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
    pub fn push(&mut self, mut chunk: &[u8]) -> Vec<AssembledLine> {
        let mut out = Vec::new();
        while !chunk.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(index) => {
                    self.extend(&chunk[..index]);
                    out.push(self.take());
                    chunk = &chunk[index + 1..];
                }
                None => {
                    self.extend(chunk);
                    chunk = &[];
                }
            }
        }
        out
    }

    /// The input ended: returns the last line when it had no newline.
    pub fn finish(&mut self) -> Option<AssembledLine> {
        (self.current_length > 0).then(|| self.take())
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

    fn take(&mut self) -> AssembledLine {
        self.line_number += 1;
        let mut bytes = std::mem::take(&mut self.current);
        if bytes.last() == Some(&b'\r') && !self.overflowed {
            bytes.pop();
        }
        let line = AssembledLine {
            bytes,
            line_number: self.line_number,
            truncated_from: self.overflowed.then_some(self.current_length),
        };
        self.current_length = 0;
        self.overflowed = false;
        line
    }
}
