//! The readable text of an indexed text, which a search hit's snippet is
//! cut from: the JSON objects in it (a Codex tool's arguments and results,
//! a notification a message carries) said as `key: value, key: value`,
//! their strings unescaped, rather than braces, quotes and `\n`. Text with
//! no JSON object in it is left as it is. What is indexed does not change.

use std::borrow::Cow;

/// The most starts of a would-be JSON value one text is tried at that do
/// not parse: a text of many braces (code) costs no more than that.
const FAILED_TRIES: usize = 64;

/// `text` with each JSON object (or array of objects, arrays or strings)
/// in it said as its keys and values; a value the text cuts short (a text
/// cut at the index's limit) is said as far as it goes.
pub fn readable_text(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    // Bytes of `text` up to here are in `out`.
    let mut copied = 0;
    let mut failed = 0;
    let mut at = 0;
    while let Some(found) = text[at..].find(['{', '[']) {
        let start = at + found;
        match json_at(&text[start..]) {
            Some(length) => {
                out.push_str(&text[copied..start]);
                say_json(&text[start..start + length], &mut out);
                copied = start + length;
                at = copied;
            }
            None => {
                failed += 1;
                if failed >= FAILED_TRIES {
                    break;
                }
                at = start + 1;
            }
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The length of the JSON value `text` starts with, when it is one worth
/// saying otherwise: an object with a key, or an array whose first item is an object,
/// an array or a string (`[1, 2]` in prose stays); the rest of `text` when
/// the value runs to its end, cut short.
fn json_at(text: &str) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    match values.next()? {
        Ok(value) => {
            let worth = match &value {
                serde_json::Value::Object(map) => !map.is_empty(),
                serde_json::Value::Array(items) => {
                    matches!(items.first(), Some(serde_json::Value::Object(_) | serde_json::Value::Array(_) | serde_json::Value::String(_)))
                }
                _ => false,
            };
            worth.then(|| values.byte_offset())
        }
        // Cut short: an object with a key, or an array of objects, arrays
        // or strings, as far as the text goes.
        Err(error) if error.is_eof() => {
            let inside = text[1..].trim_start();
            let worth = if text.starts_with('{') { inside.starts_with('"') } else { inside.starts_with(['{', '[', '"']) };
            worth.then_some(text.len())
        }
        Err(_) => None,
    }
}

/// Writes a JSON value's (or a cut one's) keys, values and strings: `:`
/// and `,` as `: ` and `, `, brackets and the whitespace between tokens
/// left out, strings unescaped, numbers and words as written.
fn say_json(json: &str, out: &mut String) {
    let bytes = json.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' | b'}' | b'[' | b']' => at += 1,
            b':' => {
                out.push_str(": ");
                at += 1;
            }
            b',' => {
                out.push_str(", ");
                at += 1;
            }
            b'"' => {
                let end = string_end(bytes, at);
                say_string(&json[at..end], out);
                at = end;
            }
            byte if byte.is_ascii_whitespace() => at += 1,
            _ => {
                // A number or a word (`true`, `null`), up to the next token.
                let end = json[at..].find(|c: char| matches!(c, ',' | ':' | '{' | '}' | '[' | ']' | '"') || c.is_ascii_whitespace()).map_or(json.len(), |length| at + length);
                out.push_str(&json[at..end]);
                at = end;
            }
        }
    }
}

/// Where the string token starting at `start` (its opening quote) ends:
/// after its closing quote, or at the end of `bytes` when it is cut short.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// A string token's text, unescaped; one cut short (no closing quote,
/// maybe half an escape) as far as it can be read.
fn say_string(token: &str, out: &mut String) {
    if let Ok(text) = serde_json::from_str::<String>(token) {
        out.push_str(&text);
        return;
    }
    // Cut short: closed where it stops, less an escape cut in two.
    let mut cut = token;
    while !cut.is_empty() {
        if let Ok(text) = serde_json::from_str::<String>(&format!("{cut}\"")) {
            out.push_str(&text);
            return;
        }
        let mut end = cut.len() - 1;
        while !cut.is_char_boundary(end) {
            end -= 1;
        }
        cut = &cut[..end];
    }
}

#[cfg(test)]
mod tests {
    use super::readable_text;

    #[test]
    fn json_in_a_text_reads_as_its_keys_and_values_and_other_text_is_left_as_it_is() {
        let texts = [
            r#"spawn_agent {"message": "[[CHILD:A]] You are sub-agent A.\nRun it.", "task_name": "child_a"}"#,
            "<subagent_notification>\n{\"agent_path\":\"a1\",\"status\":{\"completed\":\"CHILD A DONE: it said \\\"hi\\\".\"}}\n</subagent_notification>",
            r#"wait_agent {"status":{"a1":{"completed":"done"}},"timed_out":false,"left":null,"took":1.5}"#,
            r#"list [{"name": "a"}, {"name": "b"}] and ["x", "y"]"#,
            // Cut at the index's limit: in a string, in an escape, after a key.
            r#"close_agent {"previous_status":{"completed":"CHILD A DO"#,
            r#"tool {"text": "caf\u00e"#,
            r#"tool {"a": 1, "b":"#,
            // Not JSON, or not worth saying otherwise: left whole.
            r#"[[CHILD:A]] Run `echo {x}` in [1, 2] with {braces} and "quotes""#,
            r#"All done: it said "hi" ✓"#,
            "fn main() { let x = [1, 2]; }",
            "{}",
        ];
        let read: Vec<String> = texts.iter().map(|text| readable_text(text).into_owned()).collect();
        assert_eq!(
            read,
            [
                "spawn_agent message: [[CHILD:A]] You are sub-agent A.\nRun it., task_name: child_a",
                "<subagent_notification>\nagent_path: a1, status: completed: CHILD A DONE: it said \"hi\".\n</subagent_notification>",
                "wait_agent status: a1: completed: done, timed_out: false, left: null, took: 1.5",
                "list name: a, name: b and x, y",
                "close_agent previous_status: completed: CHILD A DO",
                "tool text: caf",
                "tool a: 1, b: ",
                "[[CHILD:A]] Run `echo {x}` in [1, 2] with {braces} and \"quotes\"",
                "All done: it said \"hi\" ✓",
                "fn main() { let x = [1, 2]; }",
                "{}",
            ]
        );
    }
}
