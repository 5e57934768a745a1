//! A scripted mock of the OpenAI Responses API on 127.0.0.1 for the real
//! `codex app-server`: each agent (found by the `[[ROOT]]` / `[[CHILD:X]]`
//! marker of its task) plays its own list of steps, one model response per
//! request of its thread. Only the model is scripted; Codex is real.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use crate::loopback::LoopbackServer;
use serde_json::{json, Value};

/// One model response.
#[derive(Debug, Clone)]
pub enum Step {
    /// Tool calls in one response (several run in parallel).
    Calls(Vec<Call>),
    /// A final assistant message.
    Message(String),
    /// The request fails with HTTP 500.
    Http500,
}

/// One function call. In `arguments`, the string `"$AGENT_IDS"` becomes the
/// list of agent ids spawned so far in this thread (read back from the spawn
/// outputs in the request), and `"$AGENT_ID_<n>"` the n-th of them.
#[derive(Debug, Clone)]
pub struct Call {
    /// Tool name; its namespace is looked up in the request's declarations.
    pub name: String,
    /// Arguments (placeholders allowed).
    pub arguments: Value,
}

impl Call {
    /// A call of `name` with `arguments`.
    pub fn new(name: &str, arguments: Value) -> Self {
        Self {
            name: name.to_owned(),
            arguments,
        }
    }
}

/// Which agent plays which steps: marker (`ROOT`, `CHILD:A`) → steps.
#[derive(Debug, Clone, Default)]
pub struct Script {
    agents: HashMap<String, Vec<Step>>,
}

impl Script {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// The steps of the agent whose task carries `[[marker]]`.
    pub fn agent(mut self, marker: &str, steps: Vec<Step>) -> Self {
        self.agents.insert(marker.to_owned(), steps);
        self
    }
}

#[derive(Default)]
struct Shared {
    script: Script,
    /// thread id → (marker, requests answered).
    threads: HashMap<String, (String, usize)>,
    requests: Vec<Value>,
    next_id: u64,
}

/// A running mock; stops when dropped.
pub struct MockResponses {
    base_url: String,
    shared: Arc<Mutex<Shared>>,
    _server: LoopbackServer,
}

impl MockResponses {
    /// Starts a mock serving `script` on an ephemeral loopback port.
    pub fn start(script: Script) -> Self {
        let shared = Arc::new(Mutex::new(Shared {
            script,
            ..Shared::default()
        }));
        let app = Router::new()
            .route("/v1/responses", post(respond))
            .route(
                "/v1/models",
                get(|| async { Json(json!({"data": [], "models": []})) }),
            )
            .with_state(Arc::clone(&shared));
        let server = LoopbackServer::start(app, "mock Responses server");
        Self {
            base_url: format!("{}/v1", server.url()),
            shared,
            _server: server,
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.shared
            .lock()
            .map(|shared| shared.requests.clone())
            .unwrap_or_default()
    }

    /// A Codex `config.toml` pointing at this mock (see the fixtures' notes:
    /// no retries, no request compression, plugins off). `extra` is appended.
    pub fn codex_config(&self, model: &str, extra: &str) -> String {
        format!(
            r#"model = "{model}"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "{base_url}"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000

[analytics]
enabled = false

[features]
enable_request_compression = false
plugins = false
remote_plugin = false
{extra}
"#,
            base_url = self.base_url
        )
    }
}

fn text_of(item: &Value) -> String {
    match item.get("type").and_then(Value::as_str) {
        // Calls carry the spawn messages of *other* agents: never a marker of this one.
        Some(
            "function_call"
            | "custom_tool_call"
            | "function_call_output"
            | "custom_tool_call_output",
        ) => String::new(),
        _ => item.to_string(),
    }
}

/// The marker of the last task in the input: `ROOT`, `CHILD:A`, …
fn marker(body: &Value) -> Option<String> {
    let text: String = body
        .get("input")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(text_of).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default();
    let start = text.rfind("[[")?;
    let end = text[start..].find("]]")?;
    Some(text[start + 2..start + end].to_owned())
}

/// Tool name → namespace, from `tools` and `additional_tools` input items.
fn namespaces(body: &Value) -> HashMap<String, String> {
    let mut map = HashMap::new();
    let mut lists: Vec<&Value> = Vec::new();
    if let Some(tools) = body.get("tools") {
        lists.push(tools);
    }
    if let Some(items) = body.get("input").and_then(Value::as_array) {
        for item in items {
            if item.get("type").and_then(Value::as_str) == Some("additional_tools") {
                if let Some(tools) = item.get("tools") {
                    lists.push(tools);
                }
            }
        }
    }
    for list in lists {
        for tool in list.as_array().into_iter().flatten() {
            if tool.get("type").and_then(Value::as_str) == Some("namespace") {
                let namespace = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                for inner in tool
                    .get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(name) = inner.get("name").and_then(Value::as_str) {
                        map.insert(name.to_owned(), namespace.to_owned());
                    }
                }
            }
        }
    }
    map
}

/// Agent ids returned by spawn calls, in order, from the request's input.
fn agent_ids(body: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    for item in body
        .get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if item.get("type").and_then(Value::as_str) != Some("function_call_output") {
            continue;
        }
        let output = item
            .get("output")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Ok(value) = serde_json::from_str::<Value>(output) {
            if let Some(id) = value.get("agent_id").and_then(Value::as_str) {
                if !ids.iter().any(|known| known == id) {
                    ids.push(id.to_owned());
                }
            }
        }
    }
    ids
}

fn fill(arguments: &Value, ids: &[String]) -> Value {
    match arguments {
        Value::String(text) if text == "$AGENT_IDS" => json!(ids),
        Value::String(text) if text.starts_with("$AGENT_ID_") => {
            let index: usize = text["$AGENT_ID_".len()..].parse().unwrap_or(0);
            json!(ids.get(index).cloned().unwrap_or_default())
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| fill(item, ids)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), fill(value, ids)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn sse(events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        body.push_str(&format!("event: {kind}\ndata: {event}\n\n"));
    }
    body
}

async fn respond(
    State(shared): State<Arc<Mutex<Shared>>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let Ok(mut shared) = shared.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    shared.requests.push(body.clone());
    let thread = body
        .pointer("/client_metadata/thread_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            headers
                .get("thread-id")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let found = marker(&body).unwrap_or_default();
    let (agent, index) = {
        let entry = shared.threads.entry(thread).or_insert((found, 0));
        entry.1 += 1;
        (entry.0.clone(), entry.1 - 1)
    };
    let step = shared
        .script
        .agents
        .get(&agent)
        .and_then(|steps| steps.get(index))
        .cloned()
        .unwrap_or_else(|| Step::Message(format!("{agent} has nothing more to say.")));
    shared.next_id += 1;
    let response_id = format!("resp_{:04}", shared.next_id);
    let input_tokens = (body.to_string().len() / 4) as u64;
    match step {
        Step::Http500 => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"message": "mock: scripted failure", "type": "server_error"}})),
        )
            .into_response(),
        Step::Calls(calls) => {
            let spaces = namespaces(&body);
            let ids = agent_ids(&body);
            let mut events = vec![
                json!({"type": "response.created", "response": {"id": response_id, "status": "in_progress", "output": []}}),
            ];
            let mut output = Vec::new();
            for (index, call) in calls.iter().enumerate() {
                shared.next_id += 1;
                let call_id = format!("call_{:04}", shared.next_id);
                let arguments = fill(&call.arguments, &ids).to_string();
                let mut item = json!({"type": "function_call", "id": format!("fc_{:04}", shared.next_id),
                    "call_id": call_id, "name": call.name, "arguments": arguments, "status": "completed"});
                if let Some(namespace) = spaces.get(&call.name) {
                    item["namespace"] = json!(namespace);
                }
                let mut added = item.clone();
                added["arguments"] = json!("");
                added["status"] = json!("in_progress");
                events.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
                events.push(json!({"type": "response.function_call_arguments.done", "output_index": index, "item_id": item["id"], "arguments": arguments}));
                events.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
                output.push(item);
            }
            events.push(completed(&response_id, output, input_tokens, 20));
            sse_response(&events)
        }
        Step::Message(text) => {
            shared.next_id += 1;
            let item_id = format!("msg_{:04}", shared.next_id);
            let mut events = vec![
                json!({"type": "response.created", "response": {"id": response_id, "status": "in_progress", "output": []}}),
                json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}}),
                json!({"type": "response.content_part.added", "item_id": item_id, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
            ];
            for (index, word) in text.split_inclusive(' ').enumerate() {
                let _ = index;
                events.push(json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0, "delta": word}));
            }
            let item = json!({"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]});
            events.push(json!({"type": "response.output_text.done", "item_id": item_id, "output_index": 0, "content_index": 0, "text": text}));
            events.push(
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            );
            let output_tokens = (text.len() / 4) as u64 + 5;
            events.push(completed(
                &response_id,
                vec![item],
                input_tokens,
                output_tokens,
            ));
            sse_response(&events)
        }
    }
}

fn completed(
    response_id: &str,
    output: Vec<Value>,
    input_tokens: u64,
    output_tokens: u64,
) -> Value {
    json!({"type": "response.completed", "response": {"id": response_id, "status": "completed", "output": output,
        "usage": {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": input_tokens + output_tokens}}})
}

fn sse_response(events: &[Value]) -> Response {
    (
        StatusCode::OK,
        [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
        ],
        sse(events),
    )
        .into_response()
}
