//! Claude Code wire types, as the real CLI (1.0.128, 2.0.77, 2.1.197,
//! 2.1.332) and the Agent SDK write them: stream-json lines
//! (`claude -p --output-format stream-json --verbose`), on-disk transcript
//! lines (`~/.claude/projects/<slug>/…jsonl`), subagent metadata
//! (`agent-<id>.meta.json`) and hook inputs.
//!
//! Stream lines use snake_case keys (`session_id`, `tool_use_result`),
//! transcript lines camelCase (`sessionId`, `toolUseResult`); [`Record`]
//! reads both through aliases (the session through two members: some
//! transcript lines carry both keys). Every member is optional and unknown members
//! are ignored: the formats changed three times in a year and will again.

use serde::de::{IgnoredAny, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// One stream-json line or one transcript line, before we know what it is.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Record {
    /// `system`, `assistant`, `user`, `result`, `stream_event`,
    /// `tool_progress`, or a transcript entry type (`attachment`,
    /// `queue-operation`, …).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// `init`, `task_started`, `success`, `error_during_execution`, …
    #[serde(default, deserialize_with = "lenient")]
    pub subtype: Option<String>,
    /// The session (the root's id): stream-json's `session_id`. Read it
    /// through [`Record::session`], which takes a transcript's too.
    #[serde(default, deserialize_with = "lenient")]
    pub session_id: Option<String>,
    /// The session as a transcript names it (`sessionId`). Not an alias of
    /// `session_id`: 2.1.332's interactive sessions write both members on
    /// most of their lines (their replies among them), and a line with a
    /// member and its alias is a duplicate member, which failed the whole
    /// line (replies read as nothing).
    #[serde(default, rename = "sessionId", deserialize_with = "lenient")]
    pub transcript_session_id: Option<String>,
    /// Id of this line (shared by stdout and transcripts since 2.0.77).
    #[serde(default, deserialize_with = "lenient")]
    pub uuid: Option<String>,
    /// Transcript: the previous entry of the same file.
    #[serde(default, rename = "parentUuid", deserialize_with = "lenient")]
    pub parent_uuid: Option<String>,
    /// Transcript: true for a subagent's entries.
    #[serde(default, rename = "isSidechain", deserialize_with = "lenient")]
    pub is_sidechain: Option<bool>,
    /// Transcript: a harness-made entry, not model input.
    #[serde(default, rename = "isMeta", deserialize_with = "lenient")]
    pub is_meta: Option<bool>,
    /// Stream: the `Agent`/`Task` tool_use that spawned the subagent this
    /// line comes from; null for the root.
    #[serde(default, deserialize_with = "lenient")]
    pub parent_tool_use_id: Option<String>,
    /// The subagent's id (stream 2.1.332, transcripts since 2.0.77).
    #[serde(default, alias = "agentId", deserialize_with = "lenient")]
    pub agent_id: Option<String>,
    /// Stream 2.1.x: the subagent's type.
    #[serde(default, deserialize_with = "lenient")]
    pub subagent_type: Option<String>,
    /// Stream 2.1.x: the subagent's task description.
    #[serde(default, deserialize_with = "lenient")]
    pub task_description: Option<String>,
    /// The API message of a `user` / `assistant` line (read once, typed:
    /// `None` when it is not an object).
    #[serde(default, deserialize_with = "lenient_object")]
    pub message: Option<ApiMessage>,
    /// Structured tool result (an object, or a string for errors), as it
    /// came: only a spawn's result is ever read, so the others (file
    /// contents, command output) are never built.
    #[serde(default, alias = "toolUseResult")]
    pub tool_use_result: Option<Box<RawValue>>,
    /// API request id of an assistant line.
    #[serde(default, alias = "requestId", deserialize_with = "lenient")]
    pub request_id: Option<String>,
    /// RFC 3339 time of the line, when it has one.
    #[serde(default, deserialize_with = "lenient")]
    pub timestamp: Option<String>,
    /// The working folder: on each transcript line, and on `system/init`.
    #[serde(default, deserialize_with = "lenient")]
    pub cwd: Option<String>,
    /// `system/init`: the model.
    #[serde(default, deserialize_with = "lenient")]
    pub model: Option<String>,
    /// `system/init`: the CLI version.
    #[serde(default, deserialize_with = "lenient")]
    pub claude_code_version: Option<String>,
    /// `result`: the root's final text.
    #[serde(default, deserialize_with = "lenient")]
    pub result: Option<String>,
    /// `result`: whether the query ended in error.
    #[serde(default, deserialize_with = "lenient")]
    pub is_error: Option<bool>,
    /// `result`: root-only API usage of the query; `task_*`: subagent counters.
    #[serde(default)]
    pub usage: Option<Value>,
    /// `result`: why the query ended (`completed`, `aborted_tools`, …).
    #[serde(default, deserialize_with = "lenient")]
    pub terminal_reason: Option<String>,
    /// `result`: error texts.
    #[serde(default)]
    pub errors: Option<Value>,
    /// `result`: wall time of the query.
    #[serde(default, deserialize_with = "lenient")]
    pub duration_ms: Option<i64>,
    /// `system/task_*`: the task id (for a subagent: its agent id).
    #[serde(default, deserialize_with = "lenient")]
    pub task_id: Option<String>,
    /// `system/task_*`, `tool_progress`: the tool_use the task belongs to.
    #[serde(default, deserialize_with = "lenient")]
    pub tool_use_id: Option<String>,
    /// `system/task_started`: `local_agent`, `local_bash`, …
    #[serde(default, deserialize_with = "lenient")]
    pub task_type: Option<String>,
    /// `system/task_started`: the spawning subagent of a nested task.
    #[serde(default, deserialize_with = "lenient")]
    pub parent_task_id: Option<String>,
    /// `system/task_started`: 1 for a subagent of the root, 2 below, …
    #[serde(default, deserialize_with = "lenient")]
    pub spawn_depth: Option<u32>,
    /// `system/task_started`: runs in the background.
    #[serde(default, deserialize_with = "lenient")]
    pub is_backgrounded: Option<bool>,
    /// `system/task_started`: a shell started by a subagent.
    #[serde(default, deserialize_with = "lenient")]
    pub owned_by_subagent: Option<bool>,
    /// `system/task_started`: the subagent's prompt.
    #[serde(default, deserialize_with = "lenient")]
    pub prompt: Option<String>,
    /// `system/task_*`: the task description.
    #[serde(default, deserialize_with = "lenient")]
    pub description: Option<String>,
    /// `system/task_started` of a background shell: its command line.
    #[serde(default, deserialize_with = "lenient")]
    pub command: Option<String>,
    /// `system/task_notification`: `completed`, `failed`, `stopped`.
    #[serde(default, deserialize_with = "lenient")]
    pub status: Option<String>,
    /// `system/task_notification`: the task's report or error.
    #[serde(default, deserialize_with = "lenient")]
    pub summary: Option<String>,
    /// `system/task_updated`: what changed.
    #[serde(default)]
    pub patch: Option<TaskPatch>,
    /// `system/task_*`: the task run (a new one per follow-up).
    #[serde(default, deserialize_with = "lenient")]
    pub run_id: Option<String>,
    /// `stream_event`: the raw API stream event.
    #[serde(default)]
    pub event: Option<Value>,
    /// `tool_progress`: a subagent's API retry.
    #[serde(default)]
    pub subagent_retry: Option<Value>,
    /// Transcript: set on a subagent's synthetic API-error reply.
    #[serde(default, rename = "isApiErrorMessage", deserialize_with = "lenient")]
    pub is_api_error_message: Option<bool>,
    /// `queue-operation`: the queued text.
    #[serde(default)]
    pub content: Option<Value>,
    /// `queue-operation`: `enqueue`, `remove`, …
    #[serde(default, deserialize_with = "lenient")]
    pub operation: Option<String>,
    /// Transcript: the summary a compaction (`/compact`, or the CLI's own)
    /// left as a user line; no model call answers it.
    #[serde(default, rename = "isCompactSummary", deserialize_with = "lenient")]
    pub is_compact_summary: Option<bool>,
    /// Transcript (2.1.332): what began the model turn a user line starts
    /// (`human` typed, `sdk`, `task_notification`). Written on each line
    /// the CLI sends to the model as a new turn and on no other: none on a
    /// local command, its output, a shell-mode command, a compaction
    /// summary or an interruption marker.
    #[serde(default, rename = "turnOrigin", deserialize_with = "lenient")]
    pub turn_origin: Option<String>,
}

impl Record {
    /// The session (the root's id), from stream-json's `session_id` or a
    /// transcript's `sessionId`, the transcript's first when both are there.
    pub fn session(&self) -> Option<&str> {
        self.transcript_session_id.as_deref().or(self.session_id.as_deref())
    }
}

/// `system/task_updated` patch.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TaskPatch {
    /// `completed`, `failed`, `killed`, …
    #[serde(default, deserialize_with = "lenient")]
    pub status: Option<String>,
    /// The error of a failed task.
    #[serde(default, deserialize_with = "lenient")]
    pub error: Option<String>,
}

/// An Anthropic Messages API message as Claude Code embeds it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ApiMessage {
    /// `msg_…`; repeated on every line of one response (one line per block).
    #[serde(default, deserialize_with = "lenient")]
    pub id: Option<String>,
    /// `user` or `assistant`.
    #[serde(default, deserialize_with = "lenient")]
    pub role: Option<String>,
    /// The model (`<synthetic>` for a harness-made reply).
    #[serde(default, deserialize_with = "lenient")]
    pub model: Option<String>,
    /// A string (a plain user prompt) or content blocks.
    #[serde(default)]
    pub content: Option<Value>,
    /// Stdout: null and `usage` is the `message_start` snapshot; transcript:
    /// the final stop reason and usage.
    #[serde(default, deserialize_with = "lenient")]
    pub stop_reason: Option<String>,
    /// Token usage (see `stop_reason`).
    #[serde(default, deserialize_with = "lenient_object")]
    pub usage: Option<ApiUsage>,
}

/// Messages API token usage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ApiUsage {
    /// Uncached input tokens.
    #[serde(default, deserialize_with = "lenient_u64")]
    pub input_tokens: u64,
    /// Input tokens written to the cache.
    #[serde(default, deserialize_with = "lenient_u64")]
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the cache.
    #[serde(default, deserialize_with = "lenient_u64")]
    pub cache_read_input_tokens: u64,
    /// Output tokens.
    #[serde(default, deserialize_with = "lenient_u64")]
    pub output_tokens: u64,
    /// The service tier that served the request (`standard`, `priority`, …).
    #[serde(default)]
    pub service_tier: Option<String>,
    /// `cache_creation_input_tokens` by how long the cache keeps them
    /// (Claude Code 2.x; older records lack it).
    #[serde(default, deserialize_with = "lenient_object")]
    pub cache_creation: Option<CacheCreation>,
    /// The server-side tools the request ran (web searches, which are
    /// billed per search).
    #[serde(default, deserialize_with = "lenient_object")]
    pub server_tool_use: Option<ServerToolUse>,
}

/// What a request's server-side tools did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ServerToolUse {
    /// Web searches run.
    #[serde(default, deserialize_with = "lenient_u64")]
    pub web_search_requests: u64,
}

/// Cache writes by lifetime: an hour's costs more than five minutes'.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct CacheCreation {
    /// Written for five minutes.
    #[serde(default, deserialize_with = "lenient_u64")]
    pub ephemeral_5m_input_tokens: u64,
    /// Written for an hour.
    #[serde(default, deserialize_with = "lenient_u64")]
    pub ephemeral_1h_input_tokens: u64,
}

/// One content block of a message; unknown block types are kept as `Unknown`.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// Model thinking.
    Thinking {
        /// The thinking text (empty when redacted).
        thinking: String,
    },
    /// A tool call.
    ToolUse {
        /// `toolu_…`.
        id: String,
        /// `Agent`, `Task`, `Bash`, …
        name: String,
        /// The input object.
        input: Value,
    },
    /// A tool's result.
    ToolResult {
        /// The tool_use it answers.
        tool_use_id: String,
        /// A string or content blocks.
        content: Value,
        /// True for an error (absent means false).
        is_error: bool,
    },
    /// Any other block type (`image`, `tool_reference`, …).
    Unknown {
        /// Its `type`.
        block_type: String,
    },
}

impl ContentBlock {
    /// Reads one block; never fails (a block of another shape is `Unknown`).
    pub fn from_value(value: &Value) -> ContentBlock {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let block_type = text("type");
        match block_type.as_str() {
            "text" => ContentBlock::Text { text: text("text") },
            "thinking" => ContentBlock::Thinking {
                thinking: text("thinking"),
            },
            "redacted_thinking" => ContentBlock::Thinking {
                thinking: String::new(),
            },
            "tool_use" if value.get("id").is_some() => ContentBlock::ToolUse {
                id: text("id"),
                name: text("name"),
                input: value.get("input").cloned().unwrap_or(Value::Null),
            },
            "tool_result" if value.get("tool_use_id").is_some() => ContentBlock::ToolResult {
                tool_use_id: text("tool_use_id"),
                content: value.get("content").cloned().unwrap_or(Value::Null),
                is_error: value
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            _ => ContentBlock::Unknown { block_type },
        }
    }
}

impl ApiMessage {
    /// The content as blocks: a plain string is one text block.
    pub fn blocks(&self) -> Vec<ContentBlock> {
        match &self.content {
            Some(Value::String(text)) => vec![ContentBlock::Text { text: text.clone() }],
            Some(Value::Array(blocks)) => blocks.iter().map(ContentBlock::from_value).collect(),
            _ => Vec::new(),
        }
    }
}

/// `<session>/subagents/agent-<id>.meta.json` (2.1.x; 2.1.197 writes only
/// the first four members).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentMeta {
    /// The subagent type (`general-purpose`, `Explore`, a custom agent).
    #[serde(default, deserialize_with = "lenient")]
    pub agent_type: Option<String>,
    /// The task description.
    #[serde(default, deserialize_with = "lenient")]
    pub description: Option<String>,
    /// The spawning `Agent` tool_use.
    #[serde(default, deserialize_with = "lenient")]
    pub tool_use_id: Option<String>,
    /// The spawning subagent (depth 2 and below).
    #[serde(default, deserialize_with = "lenient")]
    pub parent_agent_id: Option<String>,
    /// 1 for a subagent of the root.
    #[serde(default, deserialize_with = "lenient")]
    pub spawn_depth: Option<u32>,
    /// `foreground` or `background`.
    #[serde(default, deserialize_with = "lenient")]
    pub request_shape: Option<String>,
    /// The model it ran.
    #[serde(default, deserialize_with = "lenient")]
    pub model: Option<String>,
    /// True once it ended (absent after an interrupt).
    #[serde(default, deserialize_with = "lenient")]
    pub finished: Option<bool>,
}

/// One hook input (the JSON a command hook reads on stdin).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct HookInput {
    /// The session.
    #[serde(default, deserialize_with = "lenient")]
    pub session_id: Option<String>,
    /// The session's working folder.
    #[serde(default, deserialize_with = "lenient")]
    pub cwd: Option<String>,
    /// `SubagentStart`, `PreToolUse`, …
    #[serde(default, deserialize_with = "lenient")]
    pub hook_event_name: Option<String>,
    /// The subagent the hook fired in (2.1.x: every hook inside a subagent;
    /// 2.0.77: only SubagentStart/Stop).
    #[serde(default, deserialize_with = "lenient")]
    pub agent_id: Option<String>,
    /// The subagent's type.
    #[serde(default, deserialize_with = "lenient")]
    pub agent_type: Option<String>,
    /// The prompt round (2.1.x only).
    #[serde(default, deserialize_with = "lenient")]
    pub prompt_id: Option<String>,
    /// Tool hooks: the tool.
    #[serde(default, deserialize_with = "lenient")]
    pub tool_name: Option<String>,
    /// Tool hooks: its input.
    #[serde(default)]
    pub tool_input: Option<Value>,
    /// Tool hooks: its response.
    #[serde(default)]
    pub tool_response: Option<Value>,
    /// Tool hooks: the tool_use id (absent in 1.0.128).
    #[serde(default, deserialize_with = "lenient")]
    pub tool_use_id: Option<String>,
    /// `PostToolUseFailure`: the error.
    #[serde(default, deserialize_with = "lenient")]
    pub error: Option<String>,
    /// `SubagentStop` / `Stop`: the last assistant text.
    #[serde(default, deserialize_with = "lenient")]
    pub last_assistant_message: Option<String>,
    /// `UserPromptSubmit`: the prompt.
    #[serde(default, deserialize_with = "lenient")]
    pub prompt: Option<String>,
    /// `SessionStart`: `startup`, `resume`, …; `SessionEnd`: the reason.
    #[serde(default, deserialize_with = "lenient")]
    pub source: Option<String>,
    /// `SessionEnd`: why.
    #[serde(default, deserialize_with = "lenient")]
    pub reason: Option<String>,
}

/// Reads a member as `None` when it has another type than expected, so one
/// odd member never makes a whole line unreadable. A scalar is handed to
/// `T` as it comes and anything else is skipped unbuilt: going through a
/// `Value` cost two allocations per member of every line read.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_any(Lenient(std::marker::PhantomData))
}

/// Reads an object member as `T` (whose members are all lenient, so it
/// never fails on a well-formed line) and anything else as `None`.
fn lenient_object<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_any(LenientObject(std::marker::PhantomData))
}

/// The visitor of [`lenient_object`]: a map becomes `T`, any other value is
/// skipped.
struct LenientObject<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for LenientObject<T> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Some)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

fn lenient_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    Ok(lenient::<D, u64>(deserializer)?.unwrap_or(0))
}

/// The visitor of [`lenient`].
struct Lenient<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Lenient<T> {
    fn take<E: serde::de::Error>(value: impl IntoDeserializer<'de, E>) -> Result<Option<T>, E> {
        Ok(T::deserialize(value.into_deserializer()).ok())
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Lenient<T> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Self::Value, E> {
        Self::take(value)
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Self::take(value)
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Self::take(value)
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Self::Value, E> {
        Self::take(value)
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Self::take(value)
    }

    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Self::Value, E> {
        Self::take(value)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member of an unexpected type reads as `None` (a count as 0), as
    /// going through a `Value` read it, from text and from a tree alike.
    #[test]
    fn lenient_members_read_what_their_type_takes_and_nothing_else() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct Members {
            #[serde(default, deserialize_with = "lenient")]
            text: Option<String>,
            #[serde(default, deserialize_with = "lenient")]
            flag: Option<bool>,
            #[serde(default, deserialize_with = "lenient")]
            signed: Option<i64>,
            #[serde(default, deserialize_with = "lenient")]
            small: Option<u32>,
            #[serde(default, deserialize_with = "lenient_u64")]
            count: u64,
        }
        let values = [
            r#""a\"b""#, "\"\"", "true", "false", "null", "0", "-7", "4294967296", "1.5", "2.0",
            "18446744073709551615", "[1,{\"a\":[]}]", "{\"x\":{\"y\":1}}", "[]", "{}",
        ];
        for value in values {
            let line = format!(
                r#"{{"text":{value},"flag":{value},"signed":{value},"small":{value},"count":{value},"after":1}}"#
            );
            let tree: Value = serde_json::from_str(value).unwrap_or_else(|e| panic!("{e}"));
            let expected = Members {
                text: serde_json::from_value(tree.clone()).ok(),
                flag: serde_json::from_value(tree.clone()).ok(),
                signed: serde_json::from_value(tree.clone()).ok(),
                small: serde_json::from_value(tree.clone()).ok(),
                count: tree.as_u64().unwrap_or(0),
            };
            let from_text: Members = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{value}: {e}"));
            let line_tree: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}"));
            let from_tree = Members::deserialize(&line_tree).unwrap_or_else(|e| panic!("{value}: {e}"));
            assert_eq!((&from_text, &from_tree), (&expected, &expected), "{value}");
        }
    }
}
