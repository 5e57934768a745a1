//! Step markers: the first line `crw-flow-op: <call>/t<k>-a<n>` of a step's
//! message names the operation the step runs. Parsing and printing only; what
//! a marker means for a spawn is `spawn`'s business.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The prefix of a marker line, space included.
pub const MARKER_PREFIX: &str = "crw-flow-op: ";

/// The longest call id the grammar allows.
const CALL_MAX_LEN: usize = 64;

/// One operation: a flow-bound call, its turn and its attempt.
///
/// Printed as `<call>/t<turn>-a<attempt>`, or `<call>/t<turn>` for attempt 0.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Op {
    /// Flow-bound call id: `[A-Za-z0-9][A-Za-z0-9_-]{0,63}`.
    pub call: String,
    /// Turn number, 1 or more.
    pub turn: u64,
    /// Attempt number; 0 when the marker names none.
    pub attempt: u64,
}

impl Op {
    /// The marker line for this operation (no line feed).
    pub fn marker_line(&self) -> String {
        format!("{MARKER_PREFIX}{self}")
    }
}

impl fmt::Display for Op {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.attempt == 0 {
            write!(formatter, "{}/t{}", self.call, self.turn)
        } else {
            write!(formatter, "{}/t{}-a{}", self.call, self.turn, self.attempt)
        }
    }
}

/// Reads the operation alone (`<call>/t<k>-a<n>` or `<call>/t<k>`); trailing
/// white space is ignored, anything else names no operation.
pub fn parse_op(text: &str) -> Option<Op> {
    let text = text.trim_end();
    let (call, rest) = text.split_once('/')?;
    if !is_call(call) {
        return None;
    }
    let rest = rest.strip_prefix('t')?;
    let (turn, attempt) = match rest.split_once("-a") {
        Some((turn, attempt)) => (positive(turn)?, positive(attempt)?),
        None => (positive(rest)?, 0),
    };
    Some(Op {
        call: call.to_owned(),
        turn,
        attempt,
    })
}

/// Reads the marker on the first line of a message: `crw-flow-op: <op>`.
/// Any other first line names no operation.
pub fn parse_marker(text: &str) -> Option<Op> {
    let first_line = text.split('\n').next().unwrap_or_default();
    parse_op(first_line.strip_prefix(MARKER_PREFIX)?)
}

fn is_call(call: &str) -> bool {
    let mut bytes = call.bytes();
    let Some(first) = bytes.next() else {
        return false;
    };
    call.len() <= CALL_MAX_LEN
        && first.is_ascii_alphanumeric()
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// A positive decimal number without leading zeros (so `0` is not one).
fn positive(digits: &str) -> Option<u64> {
    let first = *digits.as_bytes().first()?;
    if !(b'1'..=b'9').contains(&first) || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}
