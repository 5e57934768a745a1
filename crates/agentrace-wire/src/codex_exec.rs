//! `codex exec --json` as the real Codex CLI 0.169 and 0.171 print it on
//! stdout: one event per line, tagged by `type` (`thread.started`,
//! `turn.started`, `turn.completed`, `turn.failed`, `item.started`,
//! `item.updated`, `item.completed`, `error`). The stream is the root
//! thread's alone: it names its thread once, at the start, and carries no
//! turn ids and no child events at all (multi-agent V2 spawns do not
//! appear in it). Items have ids of their own (`item_0`, …), not the
//! model's call ids.
//!
//! Unknown event and item types are never an error here: they become
//! `Unknown` with their type name.

use serde::Deserialize;
use serde_json::Value;

/// One line of the stream, by its `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecEvent {
    /// `thread.started`: the session's (root) thread.
    ThreadStarted {
        /// Its id (the rollout file's thread).
        thread_id: String,
    },
    /// `turn.started`: a turn of the root began (no id on the wire).
    TurnStarted,
    /// `turn.completed`, with the turn's token usage.
    TurnCompleted {
        /// The turn's usage, when given.
        usage: Option<ExecUsage>,
    },
    /// `turn.failed`, with why.
    TurnFailed {
        /// The error message, when given.
        message: Option<String>,
    },
    /// `item.started`.
    ItemStarted(ExecItem),
    /// `item.updated`.
    ItemUpdated(ExecItem),
    /// `item.completed`.
    ItemCompleted(ExecItem),
    /// `error`: a stream-level error (a retry notice or a fatal one).
    Error {
        /// The message, when given.
        message: Option<String>,
    },
    /// Any other type, kept with its name.
    Unknown {
        /// The `type` member, when there was one.
        event_type: Option<String>,
    },
}

/// Token usage of one turn as `turn.completed` gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct ExecUsage {
    /// Input tokens, cached included.
    #[serde(default)]
    pub input_tokens: u64,
    /// Cached input tokens.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Reasoning output tokens, when a version gives them.
    #[serde(default)]
    pub reasoning_output_tokens: u64,
}

/// An item of an `item.*` event.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecItem {
    /// The stream's own item id (`item_0`, …).
    pub id: Option<String>,
    /// What it is.
    pub details: ExecItemDetails,
}

/// An item's content, by its `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecItemDetails {
    /// `agent_message`.
    AgentMessage {
        /// Its text.
        text: String,
    },
    /// `reasoning`.
    Reasoning {
        /// Its (summary) text.
        text: String,
    },
    /// `command_execution`.
    CommandExecution {
        /// The command line.
        command: String,
        /// Output so far, or all of it on completion.
        aggregated_output: String,
        /// The exit code, once it ended.
        exit_code: Option<i64>,
        /// `in_progress`, `completed`, `failed`, `declined`.
        status: Option<String>,
    },
    /// `file_change`.
    FileChange {
        /// The paths changed.
        paths: Vec<String>,
        /// `completed`, `failed`.
        status: Option<String>,
    },
    /// `mcp_tool_call`.
    McpToolCall {
        /// The MCP server.
        server: String,
        /// Its tool.
        tool: String,
        /// `in_progress`, `completed`, `failed`.
        status: Option<String>,
    },
    /// `collab_tool_call`: a V1 collaboration call of the root (spawn,
    /// wait, close, send input), naming the threads it reached.
    CollabToolCall {
        /// `spawn_agent`, `wait`, `close_agent`, `send_input`, …
        tool: String,
        /// The calling thread.
        sender_thread_id: Option<String>,
        /// The threads it reached.
        receiver_thread_ids: Vec<String>,
        /// The message sent, for a spawn or an input.
        prompt: Option<String>,
        /// `in_progress`, `completed`, `failed`.
        status: Option<String>,
    },
    /// `web_search`.
    WebSearch {
        /// The query.
        query: String,
    },
    /// `todo_list`.
    TodoList,
    /// `error`: a non-fatal error item.
    Error {
        /// Its message.
        message: String,
    },
    /// Any other type, kept with its name.
    Unknown {
        /// The `type` member, when there was one.
        item_type: Option<String>,
    },
}

impl ExecEvent {
    /// Decodes one line's value; a known type whose members do not fit
    /// keeps what fits (absent members default), never an error.
    pub fn from_value(value: &Value) -> ExecEvent {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let event_type = value.get("type").and_then(Value::as_str);
        match event_type {
            Some("thread.started") => match text("thread_id") {
                Some(thread_id) => ExecEvent::ThreadStarted { thread_id },
                None => ExecEvent::Unknown {
                    event_type: event_type.map(str::to_owned),
                },
            },
            Some("turn.started") => ExecEvent::TurnStarted,
            Some("turn.completed") => ExecEvent::TurnCompleted {
                usage: value
                    .get("usage")
                    .and_then(|usage| ExecUsage::deserialize(usage).ok()),
            },
            Some("turn.failed") => ExecEvent::TurnFailed {
                message: value
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            },
            Some("item.started") => ExecEvent::ItemStarted(ExecItem::of(value.get("item"))),
            Some("item.updated") => ExecEvent::ItemUpdated(ExecItem::of(value.get("item"))),
            Some("item.completed") => ExecEvent::ItemCompleted(ExecItem::of(value.get("item"))),
            Some("error") => ExecEvent::Error {
                message: text("message"),
            },
            other => ExecEvent::Unknown {
                event_type: other.map(str::to_owned),
            },
        }
    }
}

impl ExecItem {
    fn of(value: Option<&Value>) -> ExecItem {
        let empty = Value::Null;
        let value = value.unwrap_or(&empty);
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_default()
        };
        let maybe = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let item_type = value.get("type").and_then(Value::as_str);
        let details = match item_type {
            Some("agent_message") => ExecItemDetails::AgentMessage { text: text("text") },
            Some("reasoning") => ExecItemDetails::Reasoning { text: text("text") },
            Some("command_execution") => ExecItemDetails::CommandExecution {
                command: text("command"),
                aggregated_output: text("aggregated_output"),
                exit_code: value.get("exit_code").and_then(Value::as_i64),
                status: maybe("status"),
            },
            Some("file_change") => ExecItemDetails::FileChange {
                paths: value
                    .get("changes")
                    .and_then(Value::as_array)
                    .map(|changes| {
                        changes
                            .iter()
                            .filter_map(|change| change.get("path").and_then(Value::as_str))
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                status: maybe("status"),
            },
            Some("mcp_tool_call") => ExecItemDetails::McpToolCall {
                server: text("server"),
                tool: text("tool"),
                status: maybe("status"),
            },
            Some("collab_tool_call") => ExecItemDetails::CollabToolCall {
                tool: text("tool"),
                sender_thread_id: maybe("sender_thread_id"),
                receiver_thread_ids: value
                    .get("receiver_thread_ids")
                    .and_then(Value::as_array)
                    .map(|ids| {
                        ids.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                prompt: maybe("prompt"),
                status: maybe("status"),
            },
            Some("web_search") => ExecItemDetails::WebSearch {
                query: text("query"),
            },
            Some("todo_list") => ExecItemDetails::TodoList,
            Some("error") => ExecItemDetails::Error {
                message: text("message"),
            },
            other => ExecItemDetails::Unknown {
                item_type: other.map(str::to_owned),
            },
        };
        ExecItem {
            id: maybe("id"),
            details,
        }
    }
}

/// Whether a line's value looks like a `codex exec --json` event (for
/// format detection): a `type` of the stream's own dotted names.
pub fn is_exec_event(value: &Value) -> bool {
    matches!(
        value.get("type").and_then(Value::as_str),
        Some(
            "thread.started"
                | "turn.started"
                | "turn.completed"
                | "turn.failed"
                | "item.started"
                | "item.updated"
                | "item.completed"
        )
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_decode_by_type_and_unknown_ones_keep_their_name() {
        let lines = [
            json!({"type": "thread.started", "thread_id": "t-1"}),
            json!({"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 3}}),
            json!({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "hi"}}),
            json!({"type": "item.started", "item": {"id": "item_2", "type": "future_item"}}),
            json!({"type": "thread.forked"}),
        ];
        let events: Vec<ExecEvent> = lines.iter().map(ExecEvent::from_value).collect();
        assert_eq!(
            events,
            vec![
                ExecEvent::ThreadStarted {
                    thread_id: "t-1".to_owned()
                },
                ExecEvent::TurnCompleted {
                    usage: Some(ExecUsage {
                        input_tokens: 10,
                        cached_input_tokens: 4,
                        output_tokens: 3,
                        reasoning_output_tokens: 0
                    })
                },
                ExecEvent::ItemCompleted(ExecItem {
                    id: Some("item_1".to_owned()),
                    details: ExecItemDetails::AgentMessage {
                        text: "hi".to_owned()
                    }
                }),
                ExecEvent::ItemStarted(ExecItem {
                    id: Some("item_2".to_owned()),
                    details: ExecItemDetails::Unknown {
                        item_type: Some("future_item".to_owned())
                    }
                }),
                ExecEvent::Unknown {
                    event_type: Some("thread.forked".to_owned())
                },
            ]
        );
    }
}
