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
