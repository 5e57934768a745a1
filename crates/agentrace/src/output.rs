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
