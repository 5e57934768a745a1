//! Standard output for data: line writes that surface a closed pipe as an
//! error the caller turns into a quiet exit 0 (never a panic, unlike
//! `println!`).

use std::io::{self, BufWriter, Stdout, Write};

/// How many columns wide stdout's terminal is; `None` when stdout is not
/// a terminal (a pipe, a file: a program reads it, and gets the fixed
/// layouts).
pub fn terminal_columns() -> Option<usize> {
    use std::io::IsTerminal as _;
    if !io::stdout().is_terminal() {
        return None;
    }
    crossterm::terminal::size().ok().map(|(columns, _)| usize::from(columns))
}

/// Buffered stdout.
pub struct Out {
    inner: BufWriter<Stdout>,
}

impl Out {
    /// Stdout, buffered.
    pub fn new() -> Self {
        Self {
            // Large: a big document (usage of thousands of sessions) then
            // goes out in few writes, streamed rather than built whole.
            inner: BufWriter::with_capacity(1024 * 1024, io::stdout()),
        }
    }

    /// Writes one line.
    pub fn line(&mut self, text: impl AsRef<str>) -> io::Result<()> {
        self.inner.write_all(text.as_ref().as_bytes())?;
        self.inner.write_all(b"\n")
    }

    /// Writes one value as a JSON line.
    pub fn json<T: serde::Serialize>(&mut self, value: &T) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.inner, value)?;
        self.inner.write_all(b"\n")?;
        Ok(())
    }

    /// Writes one value as pretty JSON.
    pub fn json_pretty<T: serde::Serialize>(&mut self, value: &T) -> anyhow::Result<()> {
        serde_json::to_writer_pretty(&mut self.inner, value)?;
        self.inner.write_all(b"\n")?;
        Ok(())
    }

    /// The buffered stdout itself, for a document written in parts.
    pub fn writer(&mut self) -> &mut dyn Write {
        &mut self.inner
    }

    /// Flushes.
    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// True when no one reads stdout any more: a pipe whose reader closed
    /// it (`attach RUN | head -3` once `head` has its lines), or a terminal
    /// that hung up. A command that waits long between writes asks this
    /// when it wakes, since a closed pipe is otherwise seen only at the
    /// next write, which a quiet run may never make. Never blocks.
    pub fn reader_gone(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd as _;
        let stdout = io::stdout();
        let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
        matches!(poll(&mut fds, PollTimeout::ZERO), Ok(ready) if ready > 0)
            && fds[0].revents().is_some_and(|revents| revents.intersects(PollFlags::POLLERR | PollFlags::POLLHUP))
    }
}

/// True when the error chain holds a broken pipe.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|json| json.io_error_kind() == Some(io::ErrorKind::BrokenPipe))
    })
}

/// `value` as pretty JSON the way [`Out::json_pretty`] writes it at
/// nesting `depth` (an element of a list that is itself a member of the
/// document is at depth 2), as a fragment that document can take whole:
/// an element of a large list is then serialized on a worker, and the
/// document written around it reads the same byte for byte.
pub fn pretty_fragment<T: serde::Serialize>(value: &T, depth: usize) -> serde_json::Result<String> {
    use serde_json::ser::Formatter as _;
    // serde_json's own pretty layout, brought to `depth` by opening that
    // many lists into nowhere (its depth is not settable otherwise).
    let mut formatter = serde_json::ser::PrettyFormatter::new();
    for _ in 0..depth {
        formatter.begin_array(&mut io::sink()).map_err(serde_json::Error::io)?;
    }
    let mut bytes = Vec::with_capacity(4096);
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut bytes, formatter))?;
    // Valid UTF-8: serde_json writes nothing else (checked, not assumed).
    String::from_utf8(bytes).map_err(<serde_json::Error as serde::ser::Error>::custom)
}

/// The compact JSON `compact` (as serde_json writes it) laid out as
/// [`pretty_fragment`] lays the same value out at `depth`, byte for byte,
/// without parsing it: a line break and indent after each opening bracket
/// and comma, one before each closing bracket, a space after each colon,
/// and empty lists and objects left as they are; strings are copied as
/// they are. What is kept compact (a session's report in the catalog) is
/// then written pretty at a fraction of what serializing it again costs.
pub fn pretty_from_compact(compact: &str, depth: usize) -> String {
    // A line break and the deepest indent a report reaches, sliced.
    const BREAK: &[u8] = b"\n                                                                ";
    let bytes = compact.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() * 2);
    let indent = |out: &mut Vec<u8>, level: usize| match BREAK.get(..1 + 2 * level) {
        Some(line) => out.extend_from_slice(line),
        None => {
            out.push(b'\n');
            out.extend(std::iter::repeat_n(b' ', 2 * level));
        }
    };
    let (mut level, mut at) = (depth, 0);
    while let Some(&byte) = bytes.get(at) {
        at += 1;
        match byte {
            b'"' => {
                // To the closing quote, past escaped ones.
                let start = at - 1;
                while let Some(found) = memchr::memchr2(b'"', b'\\', &bytes[at.min(bytes.len())..]) {
                    at += found + 1;
                    if bytes[at - 1] == b'"' {
                        break;
                    }
                    at += 1;
                }
                at = at.min(bytes.len());
                out.extend_from_slice(&bytes[start..at]);
            }
            b'{' | b'[' => {
                let close = if byte == b'{' { b'}' } else { b']' };
                out.push(byte);
                if bytes.get(at) == Some(&close) {
                    out.push(close);
                    at += 1;
                } else {
                    level += 1;
                    indent(&mut out, level);
                }
            }
            b'}' | b']' => {
                level = level.saturating_sub(1);
                indent(&mut out, level);
                out.push(byte);
            }
            b',' => {
                out.push(byte);
                indent(&mut out, level);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(byte),
        }
    }
    // Only ASCII was added, and only beside ASCII: the text stays UTF-8.
    String::from_utf8(out).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::{pretty_fragment, pretty_from_compact};
    use proptest::prelude::*;

    /// JSON values of every kind, strings with the characters the layout
    /// turns on (quotes, escapes, brackets, commas, colons) and beyond
    /// ASCII.
    fn text() -> impl Strategy<Value = String> {
        proptest::string::string_regex(r#"[a-z"\\{}\[\],: é\n\u{1F600}]{0,8}"#).unwrap_or_else(|e| panic!("{e}"))
    }

    fn values() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_filter("finite", |x| x.is_finite()).prop_map(serde_json::Value::from),
            text().prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 40, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
                proptest::collection::vec((text(), inner), 0..5)
                    .prop_map(|members| serde_json::Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Laid out from its compact text, a value reads as serde_json's
        /// pretty layout of it, at any depth.
        #[test]
        fn a_compact_value_laid_out_reads_as_its_pretty_fragment(value in values(), depth in 0usize..40) {
            let compact = serde_json::to_string(&value).unwrap_or_else(|e| panic!("{e}"));
            let pretty = pretty_fragment(&value, depth).unwrap_or_else(|e| panic!("{e}"));
            prop_assert_eq!(pretty_from_compact(&compact, depth), pretty);
        }
    }

    #[test]
    fn a_compact_value_laid_out_keeps_its_strings_and_empty_members() {
        let value = serde_json::json!({"a": [], "b": {}, "c": "x\"],{:y\\", "d": [1, {"e": null}], "f": "é"});
        let compact = serde_json::to_string(&value).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            pretty_from_compact(&compact, 1),
            "{\n    \"a\": [],\n    \"b\": {},\n    \"c\": \"x\\\"],{:y\\\\\",\n    \"d\": [\n      1,\n      {\n        \"e\": null\n      }\n    ],\n    \"f\": \"é\"\n  }"
        );
    }

    /// A fragment set into a document at its depth reads as the document
    /// serialized whole, empty lists and objects included.
    #[test]
    fn a_fragment_at_its_depth_reads_as_the_whole_document() {
        let items = vec![
            serde_json::json!({"a": 1, "b": [1, 2, {"c": null}], "e": {}, "f": [], "g": "x\"y"}),
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!(0.115_296_000_000_000_01),
        ];
        // Typed: a `json!` tree would parse the fragments back.
        #[derive(serde::Serialize)]
        struct Document<T> {
            items: Vec<T>,
            n: u32,
        }
        let whole = serde_json::to_string_pretty(&Document { items: items.clone(), n: 2 }).unwrap_or_else(|e| panic!("{e}"));
        let fragments: Vec<Box<serde_json::value::RawValue>> = items
            .iter()
            .map(|item| serde_json::value::RawValue::from_string(pretty_fragment(item, 2).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let set = serde_json::to_string_pretty(&Document { items: fragments, n: 2 }).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set, whole);
        assert!(whole.contains("\n    {\n      \"a\": 1"), "{whole}");
    }
}
