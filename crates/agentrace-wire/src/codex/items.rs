//! Thread items, by their `type`: what a turn is made of.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{MaybeText, Phase};

/// A thread item, by its `type`. Unknown types are kept as [`Item::Unknown`].
#[derive(Debug, Clone)]
pub enum Item {
    /// The user's (or, for V1 children, the spawner's) message.
    UserMessage(UserMessage),
    /// An assistant message.
    AgentMessage(AgentMessage),
    /// Model reasoning.
    Reasoning(Reasoning),
    /// A shell command.
    CommandExecution(CommandExecution),
    /// A patch applied to files.
    FileChange(FileChange),
    /// A call to an MCP server tool.
    McpToolCall(McpToolCall),
    /// A web search.
    WebSearch(WebSearch),
    /// A collaboration tool call: spawn, wait, close, send input, resume.
    CollabAgentToolCall(CollabAgentToolCall),
    /// V2 sub-agent lifecycle notice on the parent thread.
    SubAgentActivity(SubAgentActivity),
    /// Any other item type, kept with its type name.
    Unknown {
        /// The `type` member, when there was one.
        item_type: Option<String>,
        /// The `id` member, when there was one.
        id: Option<String>,
    },
}

impl Item {
    /// Decodes an item value; anything that does not fit its type's shape
    /// becomes [`Item::Unknown`] rather than an error.
    pub fn from_value(value: &Value) -> Item {
        let item_type = value.get("type").and_then(Value::as_str);
        let parsed = match item_type {
            Some("userMessage") => UserMessage::deserialize(value).map(Item::UserMessage),
            Some("agentMessage") => AgentMessage::deserialize(value).map(Item::AgentMessage),
            Some("reasoning") => Reasoning::deserialize(value).map(Item::Reasoning),
            Some("commandExecution") => {
                CommandExecution::deserialize(value).map(Item::CommandExecution)
            }
            Some("fileChange") => FileChange::deserialize(value).map(Item::FileChange),
            Some("mcpToolCall") => McpToolCall::deserialize(value).map(Item::McpToolCall),
            Some("webSearch") => WebSearch::deserialize(value).map(Item::WebSearch),
            Some("collabAgentToolCall") => {
                CollabAgentToolCall::deserialize(value).map(Item::CollabAgentToolCall)
            }
            Some("subAgentActivity") => {
                SubAgentActivity::deserialize(value).map(Item::SubAgentActivity)
            }
            _ => return Item::unknown(value),
        };
        parsed.unwrap_or_else(|_| Item::unknown(value))
    }

    /// Decodes an item as written (as [`Item::from_value`], with no value
    /// built on the way). Codex writes an item's `type` first: where it
    /// opens the object, the item is typed by it at once; the whole item
    /// was walked for its `type` and `id` before being typed (a second
    /// walk of each item, 2 % of a 40 MB ingest). Any other item (its
    /// `type` elsewhere, escaped or unknown, or an item that does not fit
    /// its type's shape, which its `id` then names) is read as before.
    pub fn from_raw(raw: &RawValue) -> Item {
        if let Some(Ok(item)) = leading_type(raw.get()).and_then(|item_type| Item::typed(item_type, raw.get())) {
            return item;
        }
        Item::from_raw_walked(raw)
    }

    /// [`Item::from_raw`], its `type` and `id` read by a walk of the item.
    fn from_raw_walked(raw: &RawValue) -> Item {
        #[derive(Default, Deserialize)]
        struct Head {
            #[serde(default, rename = "type")]
            item_type: Option<MaybeText>,
            #[serde(default)]
            id: Option<MaybeText>,
        }
        let head: Head = serde_json::from_str(raw.get()).unwrap_or_default();
        let item_type = head.item_type.as_ref().and_then(|kind| kind.0.as_deref());
        match item_type.and_then(|item_type| Item::typed(item_type, raw.get())) {
            Some(Ok(item)) => item,
            Some(Err(_)) | None => Item::unknown_head(item_type, head.id),
        }
    }

    /// The item `text` read as one of `item_type`; `None` for a type
    /// without a shape of its own.
    fn typed(item_type: &str, text: &str) -> Option<Result<Item, serde_json::Error>> {
        Some(match item_type {
            "userMessage" => serde_json::from_str(text).map(Item::UserMessage),
            "agentMessage" => serde_json::from_str(text).map(Item::AgentMessage),
            "reasoning" => serde_json::from_str(text).map(Item::Reasoning),
            "commandExecution" => serde_json::from_str(text).map(Item::CommandExecution),
            "fileChange" => serde_json::from_str(text).map(Item::FileChange),
            "mcpToolCall" => serde_json::from_str(text).map(Item::McpToolCall),
            "webSearch" => serde_json::from_str(text).map(Item::WebSearch),
            "collabAgentToolCall" => serde_json::from_str(text).map(Item::CollabAgentToolCall),
            "subAgentActivity" => serde_json::from_str(text).map(Item::SubAgentActivity),
            _ => return None,
        })
    }

    fn unknown_head(item_type: Option<&str>, id: Option<MaybeText>) -> Item {
        Item::Unknown {
            item_type: item_type.map(str::to_owned),
            id: id.and_then(|id| id.0),
        }
    }

    fn unknown(value: &Value) -> Item {
        Item::Unknown {
            item_type: value.get("type").and_then(Value::as_str).map(str::to_owned),
            id: value.get("id").and_then(Value::as_str).map(str::to_owned),
        }
    }
}

/// The `type` of an item whose text opens with it, as Codex writes it
/// (`{"type":"agentMessage",...`); `None` for any other text (spaces, an
/// escape in the name, another member first).
fn leading_type(text: &str) -> Option<&str> {
    let (name, _) = text.strip_prefix("{\"type\":\"")?.split_once('"')?;
    (!name.contains('\\')).then_some(name)
}

impl<'de> Deserialize<'de> for Item {
    /// Never fails on a JSON value: anything that does not fit its type's
    /// shape is [`Item::Unknown`]. Reads from text only (the value is
    /// borrowed as written).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&RawValue>::deserialize(deserializer)?;
        Ok(Item::from_raw(raw))
    }
}

/// `userMessage` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// Item id.
    pub id: String,
    /// Content parts (`{type:"text", text}` and others).
    #[serde(default)]
    pub content: Vec<Value>,
    /// Client-chosen id of the message, if any.
    #[serde(default)]
    pub client_id: Option<String>,
}

impl UserMessage {
    /// The text parts joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `agentMessage` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessage {
    /// Item id (the Responses API message id; unique only within a thread).
    pub id: String,
    /// Message text.
    #[serde(default)]
    pub text: String,
    /// `final_answer`, `commentary`, or null when the provider sets none.
    #[serde(default)]
    pub phase: Option<Phase>,
}

/// `reasoning` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reasoning {
    /// Item id.
    pub id: String,
    /// Summary parts.
    #[serde(default)]
    pub summary: Vec<Value>,
    /// Full content parts.
    #[serde(default)]
    pub content: Vec<Value>,
}

/// `commandExecution` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecution {
    /// Item id (the model's call id).
    pub id: String,
    /// The command line.
    #[serde(default)]
    pub command: String,
    /// `inProgress`, `completed`, `failed`, `declined`.
    #[serde(default)]
    pub status: Option<String>,
    /// Exit code once ended.
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// Duration in milliseconds once ended.
    #[serde(default)]
    pub duration_ms: Option<i64>,
    /// Output so far.
    #[serde(default)]
    pub aggregated_output: Option<String>,
    /// Process id of a unified-exec process.
    #[serde(default)]
    pub process_id: Option<String>,
}

/// `fileChange` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Item id.
    pub id: String,
    /// The changes (`{path, kind, diff}`).
    #[serde(default)]
    pub changes: Vec<Value>,
    /// Item status.
    #[serde(default)]
    pub status: Option<String>,
}

/// `mcpToolCall` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCall {
    /// Item id.
    pub id: String,
    /// MCP server name.
    #[serde(default)]
    pub server: String,
    /// Tool name.
    #[serde(default)]
    pub tool: String,
    /// Call arguments.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// Item status.
    #[serde(default)]
    pub status: Option<String>,
    /// Result, when ended.
    #[serde(default)]
    pub result: Option<Value>,
    /// Error, when failed.
    #[serde(default)]
    pub error: Option<Value>,
    /// Duration in milliseconds once ended.
    #[serde(default)]
    pub duration_ms: Option<i64>,
}

/// `webSearch` item.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSearch {
    /// Item id.
    pub id: String,
    /// The query.
    #[serde(default)]
    pub query: String,
}

/// `collabAgentToolCall` item: spawn, wait, close, send input, resume.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CollabAgentToolCall {
    /// Item id (the model's call id, or `exec-<uuid>` from code mode).
    pub id: String,
    /// `spawnAgent`, `wait`, `closeAgent`, `sendInput`, `resumeAgent`, …
    #[serde(default)]
    pub tool: String,
    /// Item status.
    #[serde(default)]
    pub status: Option<String>,
    /// The thread that called the tool.
    #[serde(default)]
    pub sender_thread_id: Option<String>,
    /// Threads the call concerns (filled on a spawn's `item/completed` only).
    #[serde(default)]
    pub receiver_thread_ids: Vec<String>,
    /// Spawn or input message.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Requested model.
    #[serde(default)]
    pub model: Option<String>,
    /// Requested reasoning effort.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Per-receiver state: `{status, message}`.
    #[serde(default)]
    pub agents_states: serde_json::Map<String, Value>,
}

/// One entry of `agentsStates`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentState {
    /// `pendingInit`, `running`, `completed`, `errored`, `shutdown`, …
    #[serde(default)]
    pub status: Option<String>,
    /// The agent's final (or error) message.
    #[serde(default)]
    pub message: Option<String>,
}

/// `subAgentActivity` item (V2).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentActivity {
    /// Item id.
    pub id: String,
    /// `started`, `completed`, `interacted`, `interrupted`, …
    #[serde(default)]
    pub kind: String,
    /// The child thread.
    #[serde(default)]
    pub agent_thread_id: Option<String>,
    /// The child's task path, e.g. `/root/child_a`.
    #[serde(default)]
    pub agent_path: Option<String>,
    /// The child's model.
    #[serde(default)]
    pub model: Option<String>,
    /// The child's reasoning effort.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item value of `raw` (a frame, or any value in it), as written:
    /// an `item` member, and each entry of an `items` list.
    fn items_in<'a>(raw: &'a RawValue, found: &mut Vec<&'a RawValue>) {
        if let Ok(object) = serde_json::from_str::<std::collections::BTreeMap<&str, &RawValue>>(raw.get()) {
            for (key, value) in object {
                match key {
                    "item" => found.push(value),
                    "items" => found.extend(serde_json::from_str::<Vec<&RawValue>>(value.get()).unwrap_or_default()),
                    _ => {}
                }
                items_in(value, found);
            }
        } else if let Ok(list) = serde_json::from_str::<Vec<&RawValue>>(raw.get()) {
            for value in list {
                items_in(value, found);
            }
        }
    }

    /// Every item of the 0.169 and 0.171 captures, and items written
    /// otherwise (spaces, their type elsewhere or escaped, unknown types,
    /// shapes that do not fit), read alike when typed by a leading `type`
    /// and by a walk of the whole item.
    #[test]
    fn an_item_typed_by_its_leading_type_reads_as_one_walked_for_it() {
        let lines = super::super::capture_lines();
        let frames: Vec<Box<RawValue>> = lines.iter().filter_map(|line| serde_json::from_str(line).ok()).collect();
        let mut items = Vec::new();
        for frame in &frames {
            items_in(frame, &mut items);
        }
        let leading = items.iter().filter(|item| leading_type(item.get()).is_some()).count();
        assert!(leading > 100 && leading == items.len(), "{leading} of {} items open with their type", items.len());
        let written: Vec<Box<RawValue>> = [
            r#"{ "type": "agentMessage", "id": "a", "text": "hi" }"#,
            r#"{"id":"a","type":"agentMessage","text":"hi"}"#,
            r#"{"type":"agent\u004dessage","id":"a","text":"hi"}"#,
            r#"{"type":"somethingNew","id":"n"}"#,
            r#"{"type":"commandExecution","id":"c","command":7}"#,
            r#"{"type":"agentMessage","id":"a","id":"b","text":"hi"}"#,
            r#"{"type":"","id":"e"}"#,
            r#"{"type":7,"id":"e"}"#,
        ]
        .iter()
        .map(|text| RawValue::from_string((*text).to_owned()).unwrap_or_else(|e| panic!("{text}: {e}")))
        .collect();
        for item in items.iter().copied().chain(written.iter().map(Box::as_ref)) {
            assert_eq!(format!("{:?}", Item::from_raw(item)), format!("{:?}", Item::from_raw_walked(item)), "{}", item.get());
        }
    }
}
