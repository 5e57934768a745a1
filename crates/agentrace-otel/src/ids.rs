//! Deterministic trace and span ids: a pure function of the run id and of
//! what a span stands for, so exporting a run twice sends the same ids and a
//! backend keeps one copy. Never random, never clock-based.

use std::fmt;

/// A 16-byte OTLP trace id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub [u8; 16]);

/// An 8-byte OTLP span id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub [u8; 8]);

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(f, &self.0)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(f, &self.0)
    }
}

fn hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for byte in bytes {
        write!(f, "{byte:02x}")?;
    }
    Ok(())
}

// FNV-1a, 64 bits: specified byte for byte, so the ids stay the same across
// builds, platforms and Rust versions (std's hashers promise none of that).
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(seed: u64, parts: &[&str]) -> u64 {
    let mut hash = FNV_OFFSET ^ seed;
    for part in parts {
        for byte in part.as_bytes().iter().chain(std::iter::once(&0xff)) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(FNV_PRIME);
        }
    }
    // An all-zero id is invalid in OTLP.
    if hash == 0 {
        1
    } else {
        hash
    }
}

impl TraceId {
    /// The trace of one run.
    pub fn for_run(run_id: &str) -> Self {
        let high = fnv1a(1, &["agentrace/trace", run_id]);
        let low = fnv1a(2, &["agentrace/trace", run_id]);
        let mut bytes = [0; 16];
        bytes[..8].copy_from_slice(&high.to_be_bytes());
        bytes[8..].copy_from_slice(&low.to_be_bytes());
        Self(bytes)
    }
}

impl SpanId {
    /// The span of `parts` (a kind and the ids that name it) within a run.
    pub fn for_parts(run_id: &str, parts: &[&str]) -> Self {
        let mut all = Vec::with_capacity(parts.len() + 2);
        all.push("agentrace/span");
        all.push(run_id);
        all.extend_from_slice(parts);
        Self(fnv1a(3, &all).to_be_bytes())
    }
}

/// A W3C trace context (`traceparent: 00-<trace id>-<span id>-<flags>`):
/// the trace a run's spans join, and the span its top-level agents hang
/// under (a CI job's step, a pipeline's request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace to join.
    pub trace_id: TraceId,
    /// The span the run's top-level spans are children of.
    pub span_id: SpanId,
    /// Trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Parses a `traceparent` header value as the W3C Trace Context
    /// (level 1) reads it: version `00` exactly 55 characters, a later
    /// version at least that (its extra fields after a `-` ignored),
    /// lowercase hex, neither id all zeros, version `ff` invalid.
    pub fn parse(text: &str) -> Result<Self, crate::ConfigError> {
        let bad = || crate::ConfigError::Traceparent(text.to_owned());
        let text = text.trim();
        let fields: Vec<&str> = text.splitn(5, '-').collect();
        let [version, trace, span, flags, rest @ ..] = fields.as_slice() else {
            return Err(bad());
        };
        let hex = |field: &str, len: usize| {
            field.len() == len && field.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if !hex(version, 2) || *version == "ff" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
            return Err(bad());
        }
        if *version == "00" && !rest.is_empty() {
            return Err(bad());
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        decode(trace, &mut trace_id).ok_or_else(bad)?;
        decode(span, &mut span_id).ok_or_else(bad)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return Err(bad());
        }
        let mut flag = [0u8; 1];
        decode(flags, &mut flag).ok_or_else(bad)?;
        Ok(Self {
            trace_id: TraceId(trace_id),
            span_id: SpanId(span_id),
            flags: flag[0],
        })
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-{:02x}", self.trace_id, self.span_id, self.flags)
    }
}

/// Hex text into `out` (its length is the text's half).
fn decode(text: &str, out: &mut [u8]) -> Option<()> {
    if text.len() != out.len() * 2 {
        return None;
    }
    for (at, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(at * 2..at * 2 + 2)?, 16).ok()?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_reads_back_as_written() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parent = TraceParent::parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (parent.trace_id.to_string(), parent.span_id.to_string(), parent.flags, parent.to_string()),
            (
                "4bf92f3577b34da6a3ce929d0e0e4736".to_owned(),
                "00f067aa0ba902b7".to_owned(),
                1,
                text.to_owned()
            )
        );
    }

    #[test]
    fn a_later_version_may_carry_more_fields_but_no_bad_traceparent_passes() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra";
        assert!(TraceParent::parse(later).is_ok());
        let bad = [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        ];
        for text in bad {
            assert!(TraceParent::parse(text).is_err(), "{text}");
        }
    }
}
