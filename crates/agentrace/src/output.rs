//! Standard output for data: line writes that surface a closed pipe as an
//! error the caller turns into a quiet exit 0 (never a panic, unlike
//! `println!`).

use std::io::{self, BufWriter, Stdout, Write};

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

    /// Flushes.
    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
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
pub fn pretty_fragment<T: serde::Serialize>(value: &T, depth: usize) -> serde_json::Result<Box<serde_json::value::RawValue>> {
    let mut bytes = Vec::with_capacity(4096);
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, Indented { depth, has_value: false });
    value.serialize(&mut serializer)?;
    // Valid UTF-8: serde_json writes nothing else (checked, not assumed).
    let text = String::from_utf8(bytes).map_err(|error| <serde_json::Error as serde::ser::Error>::custom(error))?;
    serde_json::value::RawValue::from_string(text)
}

/// serde_json's pretty layout (two spaces a level), started at a depth.
struct Indented {
    depth: usize,
    has_value: bool,
}

impl Indented {
    fn indent<W: ?Sized + Write>(&self, writer: &mut W) -> io::Result<()> {
        for _ in 0..self.depth {
            writer.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.has_value {
            writer.write_all(b"\n")?;
            self.indent(writer)?;
        }
        writer.write_all(bracket)
    }

    fn item<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        writer.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(writer)
    }
}

impl serde_json::ser::Formatter for Indented {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.item(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.item(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::pretty_fragment;

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
        let fragments: Vec<Box<serde_json::value::RawValue>> =
            items.iter().map(|item| pretty_fragment(item, 2).unwrap_or_else(|e| panic!("{e}"))).collect();
        let set = serde_json::to_string_pretty(&Document { items: fragments, n: 2 }).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set, whole);
        assert!(whole.contains("\n    {\n      \"a\": 1"), "{whole}");
    }
}
