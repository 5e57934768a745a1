//! Redaction of secrets in what the log stores (§10): values that look like
//! API keys (`sk-…`), bearer tokens (`Bearer …`) and key assignments
//! (`ANTHROPIC_API_KEY=…`, any `…_API_KEY=…`) become `[REDACTED]`. Pure
//! functions over text, bytes and JSON: stored raw stays valid JSON, and the
//! exact bytes of an undecodable line (`rawBase64`) are redacted the same
//! way as its lossy text. Input without anything that looks like a secret
//! is returned untouched (byte-exact raw is kept).

use std::borrow::Cow;
use std::sync::LazyLock;

use base64::Engine as _;
use memchr::memmem;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::model::Event;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Shortest `sk-` key body taken for a key (shorter ones are words like `sk-learn`).
const MIN_KEY_BODY: usize = 16;

/// Shortest bearer token taken for a token.
const MIN_BEARER: usize = 8;

fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'
}

fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
}

fn is_assignment_value_byte(byte: u8) -> bool {
    !byte.is_ascii_whitespace() && !matches!(byte, b'"' | b'\'' | b'`' | b';' | b'&' | b'|')
}

/// Cheap test: can the bytes hold a secret at all? Every stored line passes
/// here, so it jumps between the patterns' starts with SIMD (`memchr`), and
/// looks at what follows each, so that harmless near-misses (`task-list`,
/// "bearer of") do not send a whole line to be parsed and walked. It errs
/// towards yes: the word boundary before a key is not asked for, and a
/// backslash counts as part of a key or as the space after `Bearer`, so a
/// secret behind a JSON escape (`\nsk-…`, `Bearer\t…`) is still found.
pub(crate) fn might_hold_secret(bytes: &[u8]) -> bool {
    let mut candidates = Candidates::default();
    let mut at = 0;
    while let Some(next) = candidates.next(bytes, at) {
        let rest = &bytes[next..];
        let found = if rest.starts_with(b"sk-") {
            rest[3..].iter().take_while(|b| is_key_byte(**b) || **b == b'\\').count() >= MIN_KEY_BODY
        } else if rest.starts_with(b"API_KEY=") {
            rest.get(8).is_some_and(|b| is_assignment_value_byte(*b))
        } else {
            rest.get(6).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\\'))
        };
        if found {
            return true;
        }
        at = next + 1;
    }
    false
}

/// Redacts secrets in bytes (any encoding; the patterns are ASCII).
pub fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    if !might_hold_secret(bytes) {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut changed = false;
    let mut at = 0;
    let mut candidates = Candidates::default();
    while at < bytes.len() {
        // Jump to where a pattern could start: text often holds harmless
        // near-misses (`task-…` holds `sk-`), and stepping through every
        // byte between them was most of the time spent here.
        let Some(next) = candidates.next(bytes, at) else {
            out.extend_from_slice(&bytes[at..]);
            break;
        };
        out.extend_from_slice(&bytes[at..next]);
        at = next;
        let boundary = at == 0 || !is_key_byte(bytes[at - 1]);
        // sk-<key>
        if boundary && bytes[at..].starts_with(b"sk-") {
            let body = bytes[at + 3..]
                .iter()
                .take_while(|b| is_key_byte(**b))
                .count();
            if body >= MIN_KEY_BODY {
                out.extend_from_slice(REDACTED.as_bytes());
                at += 3 + body;
                changed = true;
                continue;
            }
        }
        // Bearer <token>
        if boundary && bytes.len() - at > 7 && bytes[at..at + 6].eq_ignore_ascii_case(b"bearer") {
            let spaces = bytes[at + 6..]
                .iter()
                .take_while(|b| **b == b' ' || **b == b'\t')
                .count();
            let token = bytes[at + 6 + spaces..]
                .iter()
                .take_while(|b| is_token_byte(**b))
                .count();
            if spaces > 0 && token >= MIN_BEARER {
                out.extend_from_slice(&bytes[at..at + 6 + spaces]);
                out.extend_from_slice(REDACTED.as_bytes());
                at += 6 + spaces + token;
                changed = true;
                continue;
            }
        }
        // NAME_API_KEY=<value>
        if bytes[at..].starts_with(b"API_KEY=") {
            let value = bytes[at + 8..]
                .iter()
                .take_while(|b| is_assignment_value_byte(**b))
                .count();
            if value > 0 && &bytes[at + 8..at + 8 + value] != REDACTED.as_bytes() {
                out.extend_from_slice(b"API_KEY=");
                out.extend_from_slice(REDACTED.as_bytes());
                at += 8 + value;
                changed = true;
                continue;
            }
        }
        out.push(bytes[at]);
        at += 1;
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(bytes)
    }
}

/// The next place, at or after a position, where `sk-`, `bearer` (any
/// case) or `API_KEY=` starts; each pattern's next place is searched for
/// again only once the position passed it.
#[derive(Default)]
struct Candidates {
    /// Per pattern: `None` before the first search, then where it is next
    /// found (`Some(None)`: nowhere further).
    next: [Option<Option<usize>>; 3],
}

impl Candidates {
    fn next(&mut self, bytes: &[u8], at: usize) -> Option<usize> {
        let mut nearest: Option<usize> = None;
        for (pattern, next) in self.next.iter_mut().enumerate() {
            if next.is_none_or(|found| found.is_some_and(|found| found < at)) {
                let rest = &bytes[at..];
                let found = match pattern {
                    0 => OPENAI_KEY.find(rest),
                    1 => memchr::memchr2_iter(b'b', b'B', rest).find(|&index| {
                        rest.get(index..index + 6)
                            .is_some_and(|word| word.eq_ignore_ascii_case(b"bearer"))
                    }),
                    _ => API_KEY.find(rest),
                };
                *next = Some(found.map(|index| at + index));
            }
            if let Some(Some(found)) = *next {
                nearest = Some(nearest.map_or(found, |nearest| nearest.min(found)));
            }
        }
        nearest
    }
}

/// The searchers of [`Candidates`], built once (not per text).
static OPENAI_KEY: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"sk-"));
static API_KEY: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"API_KEY="));

/// Redacts secrets in text.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    match redact_bytes(text.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        // Only ASCII runs were replaced by ASCII, so the text stays UTF-8.
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

/// Redacts every string (and object key) of a JSON value in place; true
/// when something changed.
pub fn redact_value(value: &mut Value) -> bool {
    match value {
        Value::String(text) => match redact_text(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(redacted) => {
                *text = redacted;
                true
            }
        },
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| redact_value(item) | changed),
        Value::Object(map) => {
            let mut changed = false;
            let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            for (key, mut item) in entries {
                changed |= redact_value(&mut item);
                let key = match redact_text(&key) {
                    Cow::Borrowed(_) => key,
                    Cow::Owned(redacted) => {
                        changed = true;
                        redacted
                    }
                };
                map.insert(key, item);
            }
            changed
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// The raw frame with secrets redacted, or `None` when it holds none (keep
/// the original, byte-exact). The result is valid JSON: strings are
/// redacted in the parsed value, so escapes (`\nsk-…`) cannot hide a key.
pub fn redact_raw(raw: &str) -> Option<Box<RawValue>> {
    if !might_hold_secret(raw.as_bytes()) {
        return None;
    }
    let mut value: Value = serde_json::from_str(raw).ok()?;
    if !redact_value(&mut value) {
        return None;
    }
    serde_json::value::to_raw_value(&value).ok()
}

/// The event with secrets redacted in its strings (and in the exact bytes
/// of an undecodable line), or `None` when it holds none.
pub fn redact_event(event: &Event) -> Option<Event> {
    if let Event::Unknown {
        kind,
        method,
        reason,
        line_number,
        raw_base64: Some(encoded),
        file,
    } = event
    {
        let engine = base64::engine::general_purpose::STANDARD;
        let bytes = engine.decode(encoded).ok()?;
        return match redact_bytes(&bytes) {
            Cow::Borrowed(_) => None,
            Cow::Owned(redacted) => Some(Event::Unknown {
                kind: kind.clone(),
                method: method.clone(),
                reason: reason.clone(),
                line_number: *line_number,
                raw_base64: Some(engine.encode(redacted)),
                file: file.clone(),
            }),
        };
    }
    // Most events hold nothing like a secret: the quick test over their
    // JSON text (which never misses what `redact_value` changes, escapes
    // and all) spares building a value tree for each.
    let text = serde_json::to_vec(event).ok()?;
    if !might_hold_secret(&text) {
        return None;
    }
    let mut value: Value = serde_json::from_slice(&text).ok()?;
    if !redact_value(&mut value) {
        return None;
    }
    serde_json::from_value(value).ok()
}

#[cfg(test)]
mod tests {
    use super::{might_hold_secret, redact_value};

    #[test]
    fn the_quick_test_finds_keys_behind_escapes_and_passes_near_misses() {
        for raw in [r#"{"t":"sk-abcdefghijklmnopqr"}"#, r#"{"t":"x\nsk-abcdefghijklmnopqr"}"#, r#"{"t":"Bearer\tabcdefghijk"}"#, r#"{"t":"OPENAI_API_KEY=v"}"#] {
            assert!(might_hold_secret(raw.as_bytes()), "{raw}");
        }
        for raw in [r#"{"t":"task-list"}"#, r#"{"t":"the bearer"}"#, r#"{"t":"API_KEY="}"#] {
            assert!(!might_hold_secret(raw.as_bytes()), "{raw}");
        }
    }

    proptest::proptest! {
        /// The quick test never says no to a line whose parsed strings
        /// hold something redaction changes, whatever the JSON escapes
        /// around it.
        #[test]
        fn the_quick_test_never_misses_a_secret(
            before in proptest::collection::vec(proptest::sample::select(vec!["task-", "-", "_", "é", "\"", "\\", "\n", "\t", " ", "x", "sk-"]), 0..5),
            secret in proptest::sample::select(vec![
                "sk-abcdefghijklmnopqr", "sk-0123456789_abcdef", "Bearer abcdefghij", "bearer\tabc.def-gh",
                "OPENAI_API_KEY=v", "X_API_KEY=\"quoted\"", "Bearer  x_y~z+/=1234",
            ]),
            after in proptest::collection::vec(proptest::sample::select(vec!["-", "é", "\"", "\n", " ", "x"]), 0..5),
        ) {
            let text = format!("{}{secret}{}", before.concat(), after.concat());
            let mut value = serde_json::json!({"text": text, text.clone(): [text.clone()]});
            let raw = serde_json::to_string(&value).unwrap_or_default();
            if redact_value(&mut value) {
                proptest::prop_assert!(might_hold_secret(raw.as_bytes()), "{raw}");
            }
        }
    }
}
