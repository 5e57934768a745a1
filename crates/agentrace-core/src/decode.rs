//! Line decoding shared by every source: bytes in, either a JSON frame (kept
//! byte-exact for `raw`) or an undecodable line described as data. Never
//! fails, never panics: bad input is a value, not an error.

use base64::Engine as _;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::model::RawFrame;

/// One input line after decoding.
#[derive(Debug)]
pub enum DecodedLine {
    /// Valid JSON: the exact text, and its parsed value.
    Json {
        /// The line exactly as read (for `raw`); `None` when the reader said
        /// it keeps no frames ([`decode_line_lean`] with `keep_raw` off).
        raw: Option<Box<RawValue>>,
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
    decode_with(bytes, truncated_from, true, |text| {
        serde_json::from_str::<Value>(text)
    })
}

/// One input line checked and kept as written, for a reader that types it
/// itself (one parse, no value tree).
#[derive(Debug)]
pub enum DecodedRaw {
    /// Valid JSON: the exact text.
    Json(Box<RawValue>),
    /// Not decodable, as [`DecodedLine::Undecodable`].
    Undecodable {
        /// Why.
        reason: String,
        /// The line as a JSON string value.
        raw: Box<RawValue>,
        /// The exact bytes, base64, when they were not valid UTF-8.
        raw_base64: Option<String>,
    },
}

/// Checks one line (without its newline) as JSON and keeps it as written:
/// decodable or not exactly as with [`decode_line`].
pub fn decode_raw(bytes: &[u8], truncated_from: Option<u64>) -> DecodedRaw {
    let text = match checked_text(bytes, truncated_from) {
        Ok(text) => text,
        Err((reason, raw, raw_base64)) => {
            return DecodedRaw::Undecodable {
                reason,
                raw,
                raw_base64,
            }
        }
    };
    match serde_json::from_str::<Box<RawValue>>(text.trim()) {
        Ok(raw) => DecodedRaw::Json(raw),
        Err(error) => DecodedRaw::Undecodable {
            reason: format!("invalid JSON: {error}"),
            raw: string_raw(text),
            raw_base64: None,
        },
    }
}

/// The text of one line (without its newline) when it can be read as JSON
/// at all: whole and UTF-8, its surrounding whitespace trimmed; for a reader
/// whose own typed parse checks the JSON. When that parse fails,
/// [`decode_raw`] says whether the line is JSON at all.
pub fn checked_line(bytes: &[u8], truncated_from: Option<u64>) -> Option<&str> {
    checked_text(bytes, truncated_from).ok().map(str::trim)
}

/// Why a line is undecodable: the reason, the line as a JSON string, its
/// bytes in base64 when they were not UTF-8.
type Unreadable = (String, Box<RawValue>, Option<String>);

/// The line as UTF-8 text, or why it is undecodable (cut short, not UTF-8).
fn checked_text(bytes: &[u8], truncated_from: Option<u64>) -> Result<&str, Unreadable> {
    let trimmed = trim_line_end(bytes);
    if let Some(length) = truncated_from {
        let text = String::from_utf8_lossy(trimmed);
        return Err((
            format!(
                "line too long ({length} bytes); only the first {} bytes kept",
                trimmed.len()
            ),
            string_raw(&text),
            None,
        ));
    }
    utf8(trimmed).map_err(|error| {
        let lossy = String::from_utf8_lossy(trimmed);
        (
            format!("invalid UTF-8 at byte {}", error.valid_up_to()),
            string_raw(&lossy),
            Some(base64::engine::general_purpose::STANDARD.encode(trimmed)),
        )
    })
}

/// Which members of a line a reader never looks at: called with the line's
/// `type` (when it came before the member), the top-level key and, for a
/// member of a top-level object, its own key. A skipped member is checked
/// as JSON but never built.
pub type Skip<'a> = &'a dyn Fn(Option<&str>, &str, Option<&str>) -> bool;

/// [`decode_line`], leaving out of the value the members `skip` names (the
/// raw line stays whole). For readers whose lines are mostly bulk they never
/// read (a rollout's base instructions, a transcript's request shapes):
/// building that bulk into a tree was most of their time. Without
/// `keep_raw` the line is parsed once, into the value only (no frame is
/// kept, so the separate pass that checks and copies the exact text is
/// saved); a line is decodable or not exactly as with it.
pub fn decode_line_lean(
    bytes: &[u8],
    truncated_from: Option<u64>,
    skip: Skip<'_>,
    keep_raw: bool,
) -> DecodedLine {
    decode_with(bytes, truncated_from, keep_raw, |text| {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let value = serde::de::DeserializeSeed::deserialize(
            Lean {
                skip,
                at: Level::Top,
            },
            &mut deserializer,
        )?;
        deserializer.end()?;
        Ok(value)
    })
}

fn decode_with(
    bytes: &[u8],
    truncated_from: Option<u64>,
    keep_raw: bool,
    parse: impl FnOnce(&str) -> Result<Value, serde_json::Error>,
) -> DecodedLine {
    let text = match checked_text(bytes, truncated_from) {
        Ok(text) => text,
        Err((reason, raw, raw_base64)) => {
            return DecodedLine::Undecodable {
                reason,
                raw,
                raw_base64,
            }
        }
    };
    if !keep_raw {
        return match parse(text.trim()) {
            Ok(value) => DecodedLine::Json { raw: None, value },
            Err(error) => undecodable(format!("invalid JSON: {error}"), text, None),
        };
    }
    let raw = match serde_json::from_str::<Box<RawValue>>(text.trim()) {
        Ok(raw) => raw,
        Err(error) => return undecodable(format!("invalid JSON: {error}"), text, None),
    };
    match parse(raw.get()) {
        Ok(value) => DecodedLine::Json {
            raw: Some(raw),
            value,
        },
        Err(error) => undecodable(format!("invalid JSON: {error}"), text, None),
    }
}

/// `bytes` as text, checked by SIMD (most lines are checked whole before
/// they are read; this was a tenth of reading a Claude transcript). The
/// error, when there is one, is the standard library's, with its position.
pub fn utf8(bytes: &[u8]) -> Result<&str, std::str::Utf8Error> {
    simdutf8::basic::from_utf8(bytes).or_else(|_| std::str::from_utf8(bytes))
}

/// Walks the top-level members of a line that is one JSON object, without
/// building them (a SIMD skim by sonic-rs, which passes over long values
/// faster than serde's scan), calling `visit` with each key
/// and raw value until it returns false. False when the line is not valid
/// UTF-8 or the skim cannot read it: a caller deciding whether a line can
/// be passed over then decodes it instead.
pub fn visit_members(bytes: &[u8], visit: &mut dyn FnMut(&str, &str) -> bool) -> bool {
    let bytes = trim_line_end(bytes);
    let text = match utf8(bytes) {
        Ok(text) => text,
        // Cut inside a character (a caller looking at a line's first bytes
        // only): what comes before it is read.
        Err(error) if error.error_len().is_none() => match std::str::from_utf8(&bytes[..error.valid_up_to()]) {
            Ok(text) => text,
            Err(_) => return false,
        },
        Err(_) => return false,
    };
    for entry in sonic_rs::to_object_iter(text.trim()) {
        let Ok((key, value)) = entry else {
            return false;
        };
        if !visit(&key, value.as_raw_str()) {
            return true;
        }
    }
    true
}

/// The text of a raw JSON string value, `None` for any other value.
pub fn raw_string(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(raw)
            .ok()
            .map(std::borrow::Cow::Owned)
    } else {
        Some(std::borrow::Cow::Borrowed(inner))
    }
}

/// Walks the first members of a line that is one JSON object, from its
/// opening brace, as long as their values are strings, numbers, booleans or
/// null, calling `visit` with each key and raw value until it returns false.
/// It stops at the first member whose value is an object or an array, so the
/// small members a record writes before its bulk (a rollout line's
/// `timestamp`, a request's `type` and `sessionId`) are read without
/// touching the bulk. False when the head is not shaped like the start of a
/// JSON object. The line is not checked as a whole: a caller relies on it
/// only where [`visit_trailing_members`] would be relied on.
pub fn visit_leading_scalars(bytes: &[u8], members: Members<'_>, visit: &mut dyn FnMut(&str, &str) -> bool) -> bool {
    let text = without_byte_order_mark(bytes).trim_ascii_start();
    let Some(mut at) = text.first().filter(|&&byte| byte == b'{').map(|_| 1) else {
        return false;
    };
    loop {
        let Some(key_start) = after_space(text, at) else { return false };
        match text[key_start] {
            b'"' => {}
            b'}' => return true,
            _ => return false,
        }
        let Some(key_end) = string_end(text, key_start) else { return false };
        let Some(colon) = after_space(text, key_end + 1).filter(|&at| text[at] == b':') else { return false };
        let Some(value_start) = after_space(text, colon + 1) else { return false };
        let value_end = match text[value_start] {
            b'"' => match string_end(text, value_start) {
                Some(end) => end,
                None => return false,
            },
            b'{' | b'[' => return true,
            byte if is_literal_byte(byte) => {
                let mut end = value_start;
                while end + 1 < text.len() && is_literal_byte(text[end + 1]) {
                    end += 1;
                }
                end
            }
            _ => return false,
        };
        let Some(next) = after_space(text, value_end + 1) else { return false };
        if !matches!(text[next], b',' | b'}') {
            return false;
        }
        if let Some(key) = members.wanted(&text[key_start..=key_end]) {
            let Some((key, value)) = member_text(text, key, value_start, value_end) else {
                return false;
            };
            if !visit(&key, value) {
                return true;
            }
        }
        if text[next] == b'}' {
            return true;
        }
        at = next + 1;
    }
}

/// Walks the members of a line that is one JSON object backwards, from its
/// closing brace, calling `visit` with each key and raw value (the last
/// member first) until it returns false or the object's start is reached.
/// An object or array value is stepped over backwards by its brackets
/// (strings jumped whole), so the small members a record writes after its
/// bulk (a transcript line's `type`, `sessionId` and `timestamp`, after an
/// attachment's body and before its short rendering) are read without
/// touching the bulk. False when the tail is not shaped like the end of a
/// JSON object (nothing is then known; decode the line instead). The line
/// is not checked as a whole (an object or array value is not checked at
/// all): a caller relies on it only for a line whose decoding could teach
/// nothing else.
pub fn visit_trailing_members(bytes: &[u8], members: Members<'_>, visit: &mut dyn FnMut(&str, &str) -> bool) -> bool {
    let text = trim_line_end(bytes).trim_ascii();
    let Some(mut end) = text.len().checked_sub(1).filter(|&last| text[last] == b'}') else {
        return false;
    };
    // `end` is the position of the `}` or `,` before which a member ends.
    loop {
        let Some(value_end) = before_space(text, end) else { return false };
        if value_end == 0 && text[0] == b'{' {
            return true;
        }
        let value_start = match text[value_end] {
            b'"' => match string_start(text, value_end) {
                Some(start) => start,
                None => return false,
            },
            b'}' | b']' => match compound_start(text, value_end) {
                Some(start) => start,
                None => return false,
            },
            byte if is_literal_byte(byte) => {
                let mut start = value_end;
                while start > 0 && is_literal_byte(text[start - 1]) {
                    start -= 1;
                }
                start
            }
            _ => return false,
        };
        let Some(colon) = before_space(text, value_start).filter(|&at| text[at] == b':') else { return false };
        let Some(key_end) = before_space(text, colon).filter(|&at| text[at] == b'"') else { return false };
        let Some(key_start) = string_start(text, key_end) else { return false };
        let Some(before) = before_space(text, key_start) else { return false };
        match text[before] {
            b',' | b'{' => {}
            _ => return false,
        }
        if let Some(key) = members.wanted(&text[key_start..=key_end]) {
            let Some((key, value)) = member_text(text, key, value_start, value_end) else {
                return false;
            };
            if !visit(&key, value) {
                return true;
            }
        }
        if text[before] == b'{' {
            return before == 0;
        }
        end = before;
    }
}

/// Walks the members of a line named `names` where they stand: its first
/// scalar members ([`visit_leading_scalars`]), then its members from the
/// end backwards ([`visit_trailing_members`]); only a line whose end cannot
/// be read that way (not shaped like a JSON object) is skimmed forwards.
/// `visit` returns false once it has what it wants, and may meet a member
/// twice (a leading one again from the end). A line's time, a session's
/// first time and its working folder are read so, never by a forward skim
/// over the bulk a transcript line writes before them.
pub fn visit_named(bytes: &[u8], names: &[&str], visit: &mut dyn FnMut(&str, &str) -> bool) {
    let mut more = true;
    visit_leading_scalars(bytes, Members::Named(names), &mut |key, raw| {
        more = visit(key, raw);
        more
    });
    if more && !visit_trailing_members(bytes, Members::Named(names), &mut |key, raw| {
        more = visit(key, raw);
        more
    }) {
        visit_members(bytes, &mut |key, raw| !names.contains(&key) || visit(key, raw));
    }
}

/// Which members a walk ([`visit_leading_scalars`],
/// [`visit_trailing_members`]) hands its visitor.
#[derive(Debug, Clone, Copy)]
pub enum Members<'a> {
    /// Every one.
    All,
    /// Those with one of these keys: the others are stepped over without
    /// their key or value being read as text (a walk passes many members
    /// to reach the few a reader asks for).
    Named(&'a [&'a str]),
}

impl<'a> Members<'a> {
    /// The key of the member whose raw key (quotes included) is `raw`,
    /// when it is wanted; `None` when it is not, or is not text.
    fn wanted<'t>(self, raw: &'t [u8]) -> Option<std::borrow::Cow<'t, str>>
    where
        'a: 't,
    {
        let inner = &raw[1..raw.len() - 1];
        match self {
            Members::Named(names) if !inner.contains(&b'\\') => {
                names.iter().find(|name| name.as_bytes() == inner).map(|name| std::borrow::Cow::Borrowed(*name))
            }
            Members::Named(names) => {
                raw_string(std::str::from_utf8(raw).ok()?).filter(|key| names.contains(&key.as_ref()))
            }
            Members::All => raw_string(std::str::from_utf8(raw).ok()?),
        }
    }
}

/// A wanted member's key and raw value, `None` when its value is not text
/// or a scalar value is not JSON. An object or array value is not checked
/// here (its bracket was matched, its inside is the caller's). Kept cheap:
/// the standard check for the short texts most values are (the SIMD one
/// has a cost per call), a literal's grammar checked by hand (a parse per
/// member was a third of a walk).
fn member_text<'t>(
    text: &'t [u8],
    key: std::borrow::Cow<'t, str>,
    value_start: usize,
    value_end: usize,
) -> Option<(std::borrow::Cow<'t, str>, &'t str)> {
    let value = &text[value_start..=value_end];
    let value = if value.len() < 64 { std::str::from_utf8(value).ok()? } else { utf8(value).ok()? };
    let checked = match text[value_start] {
        b'"' | b'{' | b'[' => true,
        _ => is_literal(value.as_bytes()),
    };
    checked.then_some((key, value))
}

/// True for `true`, `false`, `null` or a number as JSON writes one.
fn is_literal(bytes: &[u8]) -> bool {
    if matches!(bytes, b"true" | b"false" | b"null") {
        return true;
    }
    let digits = |at: usize| bytes[at..].iter().take_while(|byte| byte.is_ascii_digit()).count();
    let mut at = usize::from(bytes.first() == Some(&b'-'));
    match bytes.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => at += digits(at),
        _ => return false,
    }
    if bytes.get(at) == Some(&b'.') {
        let fraction = digits(at + 1);
        if fraction == 0 {
            return false;
        }
        at += 1 + fraction;
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let exponent = digits(at);
        if exponent == 0 {
            return false;
        }
        at += exponent;
    }
    at == bytes.len()
}

/// The first non-white position at or after `at`.
fn after_space(text: &[u8], at: usize) -> Option<usize> {
    text.get(at..)?.iter().position(|byte| !byte.is_ascii_whitespace()).map(|found| at + found)
}

/// Where the JSON string starting with the quote at `start` ends (its
/// closing quote: the nearest one after it not escaped by a backslash).
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        let found = at + memchr::memchr2(b'"', b'\\', text.get(at..)?)?;
        if text[found] == b'"' {
            return Some(found);
        }
        // An escape: the byte after the backslash is never the string's end.
        at = found + 2;
    }
}

/// Where the object or array ending with the bracket at `end` starts (its
/// opening bracket), read backwards: strings are jumped whole (a quote met
/// outside a string, backwards, is always a closing one), brackets
/// counted. Which bracket closes which is not checked.
fn compound_start(text: &[u8], end: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = end + 1;
    loop {
        let found = text[..at].iter().rposition(|byte| matches!(byte, b'"' | b'[' | b']' | b'{' | b'}'))?;
        match text[found] {
            b'"' => {
                at = string_start(text, found)?;
                continue;
            }
            b']' | b'}' => depth += 1,
            _ => {
                depth -= 1;
                if depth == 0 {
                    return Some(found);
                }
            }
        }
        at = found;
    }
}

/// The last non-white position before `at`.
fn before_space(text: &[u8], at: usize) -> Option<usize> {
    text[..at].iter().rposition(|byte| !byte.is_ascii_whitespace())
}

/// Where the JSON string ending with the quote at `end` starts (its opening
/// quote): the nearest quote before it not escaped by an odd number of
/// backslashes.
fn string_start(text: &[u8], end: usize) -> Option<usize> {
    let mut at = end;
    loop {
        // Most strings a walk passes are short: a loop over their last
        // bytes finds the quote before the vector search is worth its call.
        let near = at.saturating_sub(32);
        at = match text[near..at].iter().rposition(|&byte| byte == b'"') {
            Some(found) => near + found,
            None => memchr::memrchr(b'"', &text[..near])?,
        };
        let backslashes = text[..at].iter().rev().take_while(|byte| **byte == b'\\').count();
        if backslashes % 2 == 0 {
            return Some(at);
        }
    }
}

/// A byte of a number, `true`, `false` or `null`.
fn is_literal_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'+' | b'-')
}

/// Where [`Lean`] is in a line.
#[derive(Clone, Copy)]
enum Level<'a> {
    /// The line itself.
    Top,
    /// The value of top-level member `key` of a line of type `record_type`.
    Member {
        record_type: Option<&'a str>,
        key: &'a str,
    },
}

/// Builds a line's value as `serde_json` would, minus the skipped members.
#[derive(Clone, Copy)]
struct Lean<'a> {
    skip: Skip<'a>,
    at: Level<'a>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Lean<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Lean<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        serde::Deserialize::deserialize(deserializer)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = access.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = serde_json::Map::new();
        let mut record_type: Option<String> = None;
        while let Some(key) = access.next_key::<String>()? {
            let value = match self.at {
                Level::Top if (self.skip)(record_type.as_deref(), &key, None) => {
                    access.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
                Level::Top => access.next_value_seed(Lean {
                    skip: self.skip,
                    at: Level::Member {
                        record_type: record_type.as_deref(),
                        key: &key,
                    },
                })?,
                Level::Member {
                    record_type,
                    key: parent,
                } if (self.skip)(record_type, parent, Some(&key)) => {
                    access.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
                Level::Member { .. } => access.next_value::<Value>()?,
            };
            if matches!(self.at, Level::Top) && key == "type" {
                record_type = value.as_str().map(str::to_owned);
            }
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// True for a line with nothing but white space (skipped, not counted).
pub fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// The frame [`decode_line`] keeps as `raw` for `bytes` (a line without its
/// newline), before redaction; `None` when the line is not one JSON value
/// (its `raw` is then a string copy). How an imported frame's reference is
/// turned back into the frame.
pub fn json_frame(bytes: &[u8]) -> Option<Box<RawValue>> {
    let text = utf8(trim_line_end(bytes)).ok()?;
    serde_json::from_str::<Box<RawValue>>(text.trim()).ok()
}

/// The frame of a line an attributor's `serde_json` parse has read whole
/// (its [`checked_line`], with nothing after the value), made of the line
/// its caller gives up: the frame [`json_frame`] makes, but when the line
/// is the value alone its text is not checked as JSON again, and keeps its
/// own buffer rather than a copy. A line with more around the value (a
/// byte order mark, a line break, spaces) is checked, and its frame leaves
/// those out.
pub(crate) fn vouched_frame(bytes: Vec<u8>) -> Option<RawFrame> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return json_frame(&bytes).map(RawFrame::from);
    }
    let text = String::from_utf8(bytes).ok()?;
    if text.trim().len() == text.len() {
        return Some(RawFrame::vouched(text));
    }
    serde_json::from_str::<Box<RawValue>>(text.trim()).ok().map(RawFrame::from)
}

/// A line without its line break, and without a UTF-8 byte order mark
/// before it: an editor or a tool on another system may start a file with
/// one, and JSON cannot read it (the first line of a rollout so marked was
/// undecodable, and its whole session left out).
fn trim_line_end(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    while end > 0 && matches!(bytes[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    without_byte_order_mark(&bytes[..end])
}

/// `bytes` without a UTF-8 byte order mark at their start (public for the
/// shells that read a whole document rather than lines: a hook input).
pub fn without_byte_order_mark(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
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

#[cfg(test)]
mod tests {
    use super::{decode_line, decode_line_lean, visit_leading_scalars, visit_trailing_members, DecodedLine, Members};
    use serde_json::json;

    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            // Quarters: a float that survives its round trip exactly.
            (-4_000_000i64..4_000_000).prop_map(|quarters| serde_json::Value::from(quarters as f64 / 4.0)),
            "[a-z \"\\\\:,{}\\[\\]é\n]{0,10}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                proptest::collection::vec(("[a-z\"\\\\]{1,3}", inner), 0..4)
                    .prop_map(|members| serde_json::Value::Object(members.into_iter().collect())),
            ]
        })
    }

    /// An object of `members` as one line or pretty, and its members as
    /// (key, value) pairs in order.
    fn object_text(
        members: Vec<(String, serde_json::Value)>,
        pretty: bool,
    ) -> (String, Vec<(String, serde_json::Value)>) {
        let object: serde_json::Map<String, serde_json::Value> = members.into_iter().collect();
        let text = if pretty { serde_json::to_string_pretty(&object) } else { serde_json::to_string(&object) }
            .unwrap_or_default();
        (text, object.into_iter().collect())
    }

    /// Some of `members`' keys (every other one) and a key none has.
    fn named(members: &[(String, serde_json::Value)]) -> Vec<String> {
        let mut names: Vec<String> = members.iter().step_by(2).map(|(key, _)| key.clone()).collect();
        names.push("absent key".to_owned());
        names
    }

    /// What a walk saw, each raw value read back as a value.
    fn seen_values(seen: Vec<(String, String)>) -> Vec<(String, serde_json::Value)> {
        seen.into_iter()
            .map(|(key, raw)| (key, serde_json::from_str(&raw).unwrap_or(serde_json::Value::String(format!("unreadable {raw}")))))
            .collect()
    }

    /// A walk of a line's members.
    type Walk = fn(&[u8], Members<'_>, &mut dyn FnMut(&str, &str) -> bool) -> bool;

    /// `walk` over `text` hands out exactly `expected`, in order; asked for
    /// some keys (every other one, and one absent), exactly those members.
    fn walks_as_expected(walk: Walk, text: &str, expected: Vec<(String, serde_json::Value)>) -> Result<(), proptest::test_runner::TestCaseError> {
        let walked = |members: Members<'_>| {
            let mut seen = Vec::new();
            let read = walk(text.as_bytes(), members, &mut |key, raw| {
                seen.push((key.to_owned(), raw.to_owned()));
                true
            });
            (read, seen_values(seen))
        };
        proptest::prop_assert_eq!(walked(Members::All), (true, expected.clone()), "{}", text);
        let names = named(&expected);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let wanted: Vec<(String, serde_json::Value)> = expected.into_iter().filter(|(key, _)| names.contains(&key.as_str())).collect();
        proptest::prop_assert_eq!(walked(Members::Named(&names)), (true, wanted), "{}", text);
        Ok(())
    }

    proptest::proptest! {
        /// Read backwards, the members are exactly the object's members as
        /// serde reads them, last first, objects and arrays stepped over
        /// whole.
        #[test]
        fn trailing_members_are_the_objects_members_last_first(
            members in proptest::collection::vec(("[a-z\"\\\\]{1,4}", json_value()), 0..6),
            pretty in proptest::bool::ANY,
        ) {
            let (text, members) = object_text(members, pretty);
            walks_as_expected(visit_trailing_members, &text, members.into_iter().rev().collect())?;
        }

        /// Read forwards, the leading members with scalar values are exactly
        /// the first members of the object as serde reads it.
        #[test]
        fn leading_scalars_are_the_objects_first_scalar_members(
            members in proptest::collection::vec(("[a-z\"\\\\]{1,4}", json_value()), 0..6),
            pretty in proptest::bool::ANY,
        ) {
            let (text, members) = object_text(members, pretty);
            let expected = members.into_iter().take_while(|(_, value)| !value.is_object() && !value.is_array()).collect();
            walks_as_expected(visit_leading_scalars, &text, expected)?;
        }
    }

    proptest::proptest! {
        /// The hand check of a literal agrees with serde on any short text
        /// of a literal's bytes.
        #[test]
        fn a_literal_is_what_serde_reads_as_one(text in "[-+.eE0-9a-z]{0,8}") {
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok()
                && text.bytes().all(super::is_literal_byte);
            proptest::prop_assert_eq!(super::is_literal(text.as_bytes()), serde, "{}", text);
        }
    }

    /// A named member is found before the bulk, after it (past a trailing
    /// array), or by the forward skim when the end cannot be read.
    #[test]
    fn a_named_member_is_found_wherever_it_stands() {
        let found = |line: &str, name: &str| {
            let mut found = None;
            super::visit_named(line.as_bytes(), &[name], &mut |key, raw| {
                found = Some((key.to_owned(), raw.to_owned()));
                false
            });
            found
        };
        let cwd = Some(("cwd".to_owned(), "\"/x\"".to_owned()));
        assert_eq!(
            [
                found(r#"{"cwd":"/x","message":{"cwd":"/inner"}}"#, "cwd"),
                found(r#"{"message":{"cwd":"/inner"},"cwd":"/x","rendered":["]"],"n":1}"#, "cwd"),
                found("{\"message\":{\"cwd\":\"/inner\"},\"cwd\":\"/x\"}\n", "cwd"),
                found(r#"{"message":{"cwd":"/inner"},"other":"/x"}"#, "cwd"),
                found("not json", "cwd"),
            ],
            [cwd.clone(), cwd.clone(), cwd, None, None]
        );
    }

    /// A line given up is the frame `json_frame` makes of it, whatever
    /// white space is around it (ASCII, or Unicode's, which `trim` takes
    /// off too). Only a line a parse has read whole is given up: one that
    /// is not JSON or not UTF-8 (the last four) never is, and `json_frame`
    /// makes no frame of it.
    #[test]
    fn a_vouched_frame_is_the_frame_json_frame_makes() {
        let lines: [&[u8]; 8] = [
            b"{\"a\":1}",
            b"  {\"a\": [1, 2]}\r",
            "{\"a\":1}\u{2028}".as_bytes(),
            "\u{85}\"text\"\u{3000}".as_bytes(),
            b"[1, 2] x",
            b"{\"a\":",
            b"\xff{}",
            b"",
        ];
        let expected: Vec<Option<String>> = lines.iter().map(|line| super::json_frame(line).map(|raw| raw.get().to_owned())).collect();
        let made: Vec<Option<String>> = lines
            .iter()
            .zip(&expected)
            .map(|(line, frame)| frame.as_ref().and_then(|_| super::vouched_frame(line.to_vec())).map(|raw| raw.get().to_owned()))
            .collect();
        assert_eq!(made, expected);
        assert_eq!(expected.iter().filter(|frame| frame.is_some()).count(), 4);
    }

    #[test]
    fn literals_are_told_from_near_misses() {
        let texts = ["true", "false", "null", "0", "-0", "12", "1.5e+3", "2E-7", "01", "1.", "-", "1e", "truex", "nul", ".5", "+1"];
        let told: Vec<(&str, bool)> = texts.iter().map(|text| (*text, super::is_literal(text.as_bytes()))).collect();
        let serde: Vec<(&str, bool)> =
            texts.iter().map(|text| (*text, serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok())).collect();
        assert_eq!(told, serde);
    }

    #[test]
    fn members_of_a_line_not_shaped_like_an_object_are_not_read() {
        for line in [&b"[1,2]"[..], b"{\"a\":1", b"{\"a\" 1}", b"x\"a\":1}", b"{\"a\":\"b}", b"{\"a\":1]}"] {
            assert!(!visit_trailing_members(line, Members::All, &mut |_, _| true), "{}", String::from_utf8_lossy(line));
        }
        for line in [&b"[1,2]"[..], b"\"a\":1}", b"{\"a\" 1}", b"{\"a\":1 x}", b"{\"a\":\"b", b"{a:1}"] {
            assert!(!visit_leading_scalars(line, Members::All, &mut |_, _| true), "{}", String::from_utf8_lossy(line));
        }
    }

    fn skip_bulk(record_type: Option<&str>, key: &str, member: Option<&str>) -> bool {
        match member {
            None => key == "bulk",
            Some(member) => record_type == Some("meta") && key == "payload" && member != "id",
        }
    }

    #[test]
    fn a_lean_decode_leaves_out_only_the_skipped_members_and_keeps_the_raw_line_whole() {
        let line = br#"{"type":"meta","bulk":{"x":[1,2]},"payload":{"id":"t","big":"yyyy","n":[1.5,-2,null]},"keep":true}"#;
        let DecodedLine::Json {
            raw: Some(raw),
            value,
        } = decode_line_lean(line, None, &skip_bulk, true)
        else {
            panic!("not decoded");
        };
        assert_eq!(raw.get().as_bytes(), line);
        assert_eq!(
            value,
            json!({"type": "meta", "payload": {"id": "t"}, "keep": true})
        );
        // Another record type keeps its payload whole, as a full decode does.
        let other = br#"{"type":"other","payload":{"id":"t","big":"yyyy","n":[1.5,-2,null]}}"#;
        let (DecodedLine::Json { value: lean, .. }, DecodedLine::Json { value: full, .. }) = (
            decode_line_lean(other, None, &skip_bulk, true),
            decode_line(other, None),
        ) else {
            panic!("not decoded");
        };
        assert_eq!(lean, full);
    }

    #[test]
    fn invalid_json_inside_a_skipped_member_still_makes_the_line_undecodable() {
        let line = br#"{"type":"meta","bulk":{"x":[1,2}}"#;
        assert!(matches!(
            decode_line_lean(line, None, &skip_bulk, true),
            DecodedLine::Undecodable { .. }
        ));
        assert!(matches!(
            decode_line_lean(line, None, &skip_bulk, false),
            DecodedLine::Undecodable { .. }
        ));
    }

    #[test]
    fn trailing_text_after_the_object_still_makes_the_line_undecodable() {
        for line in [
            &br#"{"type":"meta","a":1} x"#[..],
            br#"{"type":"meta","a":1}}"#,
            br#"{"a":1,}"#,
        ] {
            assert!(matches!(
                decode_line_lean(line, None, &skip_bulk, false),
                DecodedLine::Undecodable { .. }
            ));
        }
    }

    #[test]
    fn a_decode_keeping_no_frame_builds_the_same_value_and_no_raw() {
        let line =
            br#"{"type":"meta","bulk":{"x":[1,2]},"payload":{"id":"t","big":"yyyy"},"keep":true}"#;
        let (
            DecodedLine::Json {
                raw: None,
                value: unkept,
            },
            DecodedLine::Json {
                raw: Some(_),
                value: kept,
            },
        ) = (
            decode_line_lean(line, None, &skip_bulk, false),
            decode_line_lean(line, None, &skip_bulk, true),
        )
        else {
            panic!("not decoded as expected");
        };
        assert_eq!(unkept, kept);
    }
}
