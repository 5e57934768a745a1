//! Line decoding shared by every source: bytes in, either a JSON frame (kept
//! byte-exact for `raw`) or an undecodable line described as data. Never
//! fails, never panics: bad input is a value, not an error.

use base64::Engine as _;
use serde_json::value::RawValue;
use serde_json::Value;

/// One input line after decoding.
#[derive(Debug)]
pub enum DecodedLine {
    /// Valid JSON: the exact text, and its parsed value.
    Json {
        /// The line exactly as read (for `raw`).
        raw: Box<RawValue>,
        /// The parsed value.
        value: Value,
    },
    /// Not decodable; `raw` is a JSON string holding a (lossy) copy.
    Undecodable {
        /// Why: `invalid UTF-8 …`, `invalid JSON …`, `line too long …`.
        reason: String,
        /// The line as a JSON string value.
        raw: Box<RawValue>,
        /// The exact bytes, base64, when they were not valid UTF-8.
        raw_base64: Option<String>,
    },
}

/// Decodes one line (without its newline). `truncated_from` is the full
/// length when the shell cut an over-long line short.
pub fn decode_line(bytes: &[u8], truncated_from: Option<u64>) -> DecodedLine {
    let trimmed = trim_line_end(bytes);
    if let Some(length) = truncated_from {
        let text = String::from_utf8_lossy(trimmed);
        return undecodable(
            format!(
                "line too long ({length} bytes); only the first {} bytes kept",
                trimmed.len()
            ),
            &text,
            None,
        );
    }
    let text = match std::str::from_utf8(trimmed) {
        Ok(text) => text,
        Err(error) => {
            let lossy = String::from_utf8_lossy(trimmed);
            return undecodable(
                format!("invalid UTF-8 at byte {}", error.valid_up_to()),
                &lossy,
                Some(base64::engine::general_purpose::STANDARD.encode(trimmed)),
            );
        }
    };
    let raw = match serde_json::from_str::<Box<RawValue>>(text.trim()) {
        Ok(raw) => raw,
        Err(error) => return undecodable(format!("invalid JSON: {error}"), text, None),
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(value) => DecodedLine::Json { raw, value },
        Err(error) => undecodable(format!("invalid JSON: {error}"), text, None),
    }
}

/// True for a line with nothing but white space (skipped, not counted).
pub fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

fn trim_line_end(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    while end > 0 && matches!(bytes[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &bytes[..end]
}

fn undecodable(reason: String, text: &str, raw_base64: Option<String>) -> DecodedLine {
    DecodedLine::Undecodable {
        reason,
        raw: string_raw(text),
        raw_base64,
    }
}

/// A JSON string value as a raw value.
pub fn string_raw(text: &str) -> Box<RawValue> {
    let encoded = serde_json::to_string(text).unwrap_or_else(|_| String::from("\"\""));
    RawValue::from_string(encoded).unwrap_or_else(|_| empty_string_raw())
}

fn empty_string_raw() -> Box<RawValue> {
    // A literal empty string is always valid JSON; this cannot fail, but the
    // house rules forbid unwrap, so fall back to `null` through serde.
    serde_json::value::to_raw_value(&Value::Null).unwrap_or_else(|_| Box::<RawValue>::default())
}
