//! Run id validation: the one gate every user-given id passes before it
//! becomes part of a path. It must stay strict enough that no id can name a
//! file outside the runs directory.

use agentrace_core::RunId;

use crate::error::StoreError;

/// The longest run id accepted, in bytes.
pub const MAX_RUN_ID_LEN: usize = 128;

/// Checks that `text` is a run id safe to use as a file name:
/// `[A-Za-z0-9][A-Za-z0-9._-]{0,127}` with no `..`.
///
/// The first character must be alphanumeric so an id can never be `.`,
/// `..`, a hidden file or look like a command-line flag.
pub fn validate_run_id(text: &str) -> Result<RunId, StoreError> {
    let invalid = |reason: &'static str| StoreError::InvalidRunId {
        id: shorten(text),
        reason,
    };
    let Some(first) = text.chars().next() else {
        return Err(invalid("it is empty"));
    };
    if text.len() > MAX_RUN_ID_LEN {
        return Err(invalid("it is longer than 128 characters"));
    }
    if !first.is_ascii_alphanumeric() {
        return Err(invalid("it must start with a letter or a digit"));
    }
    if text.contains(['/', '\\']) {
        return Err(invalid("it must not contain a path separator"));
    }
    if !text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(invalid(
            "it may hold only ASCII letters, digits, `.`, `_` and `-`",
        ));
    }
    if text.contains("..") {
        return Err(invalid("it must not contain `..`"));
    }
    Ok(RunId::from(text))
}

/// A bounded copy of a rejected id for the error message: an attacker-sized
/// id must not turn into an attacker-sized message.
fn shorten(text: &str) -> String {
    const SHOWN: usize = 64;
    match text.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
