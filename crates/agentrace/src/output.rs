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

    /// The buffered stdout itself, for a document written in parts.
    pub fn writer(&mut self) -> &mut dyn Write {
        &mut self.inner
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
        let fragments: Vec<Box<serde_json::value::RawValue>> = items
            .iter()
            .map(|item| serde_json::value::RawValue::from_string(pretty_fragment(item, 2).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let set = serde_json::to_string_pretty(&Document { items: fragments, n: 2 }).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set, whole);
        assert!(whole.contains("\n    {\n      \"a\": 1"), "{whole}");
    }
}
