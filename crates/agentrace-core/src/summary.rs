//! How much of a text an event keeps: the one cut every attributor applies
//! to the `input` / `output` / `summary` fields it fills. It only shortens
//! text; it must not decide which text an event carries (the attributor
//! does).

/// Longest summary kept in `input` / `output` / `summary` fields.
const SUMMARY_CHARS: usize = 2_000;

/// Cuts a text to `SUMMARY_CHARS` (2,000) characters, marking the cut.
pub fn summarize(text: &str) -> String {
    match text.char_indices().nth(SUMMARY_CHARS) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_owned(),
    }
}
