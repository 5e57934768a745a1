//! A scripted mock of the Anthropic Messages API on 127.0.0.1 for the real
//! `claude` CLI (streaming SSE and whole messages). Routing is stateless and
//! reads each request, as the fixtures' notes describe: `[[scenario:NAME]]`
//! in the root's last prompt picks the root's script, `[[sub:ID]]` in a
//! conversation's first user message makes it subagent `ID` (which runs
//! `echo hello-from-ID` with Bash, or with `[[nest]]` spawns subagent
//! `ID1`, then reports `SUBAGENT-ID-DONE…`; `[[slow:N]]` holds its answers
//! N seconds), `[[api_error]]` in it fails the request (HTTP 500), anything
//! else gets plain text.
//! Only the model is scripted; Claude Code is real.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::loopback::LoopbackServer;

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Value>>,
    next_id: AtomicU64,
}

/// A running mock; stops when dropped.
pub struct MockAnthropic {
    base_url: String,
    shared: Arc<Shared>,
    _server: LoopbackServer,
}

impl MockAnthropic {
    /// Starts a mock on an ephemeral loopback port.
    pub fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route(
                "/v1/messages/count_tokens",
                post(|| async { Json(json!({"input_tokens": 100})) }),
            )
            .fallback(|| async { Json(json!({})) })
            .with_state(Arc::clone(&shared));
        let server = LoopbackServer::start(app, "mock Messages server");
        Self {
            base_url: server.url(),
            shared,
            _server: server,
        }
    }

    /// `http://127.0.0.1:PORT` (for `ANTHROPIC_BASE_URL`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.shared
            .requests
            .lock()
            .map(|requests| requests.clone())
            .unwrap_or_default()
    }
}

/// One block of a scripted answer.
#[derive(Debug, Clone)]
enum Block {
    Text(String),
    Tool { name: String, input: Value },
}

async fn messages(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Ok(mut requests) = shared.requests.lock() {
        requests.push(request.clone());
    }
    if let Some(seconds) = slow(&request) {
        // `[[slow:N]]` holds a subagent's answers (interrupt tests).
        tokio::time::sleep(Duration::from_secs(seconds.min(30))).await;
    }
    if failing(&request) {
        // `[[api_error]]` in the first user message: the API fails it, as
        // an overloaded or broken server does (the CLI, told to retry
        // none, writes its own `API Error: 500 …` reply).
        return (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"type": "error", "error": {"type": "api_error", "message": "mock: scripted failure"}})),
        )
            .into_response();
    }
    let number = shared.next_id.fetch_add(1, Ordering::Relaxed) + 1;
    let blocks = plan(&request);
    let model = request["model"].as_str().unwrap_or("mock-model").to_owned();
    let input_tokens = (body.len() / 4) as u64;
    let stop_reason = if blocks
        .iter()
        .any(|block| matches!(block, Block::Tool { .. }))
    {
        "tool_use"
    } else {
        "end_turn"
    };
    let content: Vec<Value> = blocks
        .iter()
        .enumerate()
        .map(|(index, block)| match block {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::Tool { name, input } => json!({
                "type": "tool_use", "id": format!("toolu_mock{number:04}_{index}"),
                "name": name, "input": input,
            }),
        })
        .collect();
    let output_tokens = (content
        .iter()
        .map(|block| block.to_string().len())
        .sum::<usize>()
        / 4)
    .max(1) as u64;
    let id = format!("msg_mock_{number:04}");
    if request["stream"] != true {
        return Json(json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }))
        .into_response();
    }
    let mut sse = String::new();
    let mut event = |name: &str, data: Value| {
        sse.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1},
        }}),
    );
    event("ping", json!({"type": "ping"}));
    for (index, block) in content.iter().enumerate() {
        let (start, pieces, delta_type, key) = match block["type"].as_str() {
            Some("text") => (
                json!({"type": "text", "text": ""}),
                chunks(block["text"].as_str().unwrap_or_default()),
                "text_delta",
                "text",
            ),
            _ => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                chunks(&block["input"].to_string()),
                "input_json_delta",
                "partial_json",
            ),
        };
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        for piece in pieces {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": delta_type, key: piece}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": output_tokens}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
}

/// Splits text into 30-character pieces, as a real stream would.
fn chunks(text: &str) -> Vec<String> {
    let characters: Vec<char> = text.chars().collect();
    characters
        .chunks(30)
        .map(|piece| piece.iter().collect())
        .collect()
}

/// All text of a message (string content or text blocks).
fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn marker(text: &str, name: &str) -> Option<String> {
    let open = format!("[[{name}:");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find("]]")? + start;
    Some(text[start..end].to_owned())
}

/// `[[api_error]]` in the first user message: answer HTTP 500.
fn failing(request: &Value) -> bool {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|message| message["role"] == "user"))
        .is_some_and(|first| message_text(first).contains("[[api_error]]"))
}

/// `[[slow:N]]` in the first user message: hold the answer N seconds.
fn slow(request: &Value) -> Option<u64> {
    let first = request["messages"]
        .as_array()?
        .iter()
        .find(|message| message["role"] == "user")?;
    marker(&message_text(first), "slow")?.parse().ok()
}

/// The scripted answer to one request.
fn plan(request: &Value) -> Vec<Block> {
    let messages: Vec<&Value> = request["messages"]
        .as_array()
        .map(|messages| messages.iter().collect())
        .unwrap_or_default();
    let users: Vec<&Value> = messages
        .iter()
        .copied()
        .filter(|message| message["role"] == "user")
        .collect();
    let replies = messages
        .iter()
        .filter(|message| message["role"] == "assistant")
        .count();
    let first = users
        .first()
        .map(|message| message_text(message))
        .unwrap_or_default();
    let spawn_tool = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
        .find(|name| *name == "Agent" || *name == "Task")
        .unwrap_or("Agent")
        .to_owned();
    if let Some(id) = marker(&first, "sub") {
        return subagent(&id, first.contains("[[nest]]"), first.contains("[[sleep]]"), replies, &spawn_tool);
    }
    let scenario = users
        .iter()
        .rev()
        .map(|message| message_text(message))
        .find_map(|text| marker(&text, "scenario"));
    let Some(scenario) = scenario else {
        return vec![Block::Text("OK.".to_owned())];
    };
    let last = users
        .last()
        .map(|message| message_text(message))
        .unwrap_or_default();
    root(&scenario, replies, &last, &spawn_tool)
}

fn agent_call(spawn_tool: &str, id: &str, extra: &str, background: bool) -> Block {
    let mut input = json!({
        "description": format!("Echo task {id}"),
        "prompt": format!("[[sub:{id}]]{extra} Run `echo hello-from-{id}` with Bash and report the output."),
        "subagent_type": "general-purpose",
    });
    if !background {
        input["run_in_background"] = Value::Bool(false);
    }
    Block::Tool {
        name: spawn_tool.to_owned(),
        input,
    }
}

/// A subagent's replies; `sleepy` (its prompt says `[[sleep]]`) makes its
/// command take 4 s, so a watcher sees it running.
fn subagent(id: &str, nest: bool, sleepy: bool, replies: usize, spawn_tool: &str) -> Vec<Block> {
    match (replies, nest) {
        (0, false) => vec![
            Block::Text(format!("Subagent {id}: running a command.")),
            Block::Tool {
                name: "Bash".to_owned(),
                input: json!({"command": if sleepy { format!("sleep 4 && echo hello-from-{id}") } else { format!("echo hello-from-{id}") },
                              "description": format!("Echo greeting from subagent {id}")}),
            },
        ],
        (0, true) => vec![agent_call(spawn_tool, &format!("{id}1"), "", false)],
        (_, false) => vec![Block::Text(format!(
            "SUBAGENT-{id}-DONE: the command printed hello-from-{id}."
        ))],
        (_, true) => vec![Block::Text(format!(
            "SUBAGENT-{id}-DONE: nested subagent {id}1 reported back."
        ))],
    }
}

fn root(scenario: &str, replies: usize, last: &str, spawn_tool: &str) -> Vec<Block> {
    let final_text = format!("ROOT-FINAL: all subagents finished for scenario {scenario}.");
    if last.contains("<task-notification>") {
        return vec![Block::Text(format!(
            "ROOT-FINAL: background subagent(s) reported back (scenario {scenario})."
        ))];
    }
    match (scenario, replies) {
        ("single_fg", 0) => vec![
            Block::Text("I will delegate to a subagent.".to_owned()),
            agent_call(spawn_tool, "A", "", false),
        ],
        ("slow_fg", 0) => vec![agent_call(spawn_tool, "S", " [[slow:8]]", false)],
        ("sleepy_fg", 0) => vec![agent_call(spawn_tool, "Z", " [[sleep]]", false)],
        ("nested_fg", 0) => vec![
            Block::Text("I will delegate to a subagent that delegates again.".to_owned()),
            agent_call(spawn_tool, "N", " [[nest]]", false),
        ],
        ("parallel_bg", 0) => vec![
            Block::Text("Spawning two subagents in parallel.".to_owned()),
            agent_call(spawn_tool, "A", "", true),
            agent_call(spawn_tool, "B", "", true),
        ],
        ("parallel_bg", _) => vec![Block::Text(format!(
            "ROOT-WAITING: subagents run in the background (scenario {scenario})."
        ))],
        ("bash_then_agent_fg", 0) => vec![Block::Tool {
            name: "Bash".to_owned(),
            input: json!({"command": "echo hello-from-root", "description": "Root's own command"}),
        }],
        ("bash_then_agent_fg", 1) => vec![agent_call(spawn_tool, "A", "", false)],
        _ => vec![Block::Text(final_text)],
    }
}
