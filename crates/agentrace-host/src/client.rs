//! The JSON-RPC client of a Codex App Server: one connection over the stdio
//! of a spawned `codex app-server`, a unix socket, a WebSocket, or an
//! in-process channel (the fake host). It correlates answers with requests,
//! answers or refuses every server→client request explicitly, forwards
//! notifications to subscribers, bounds every request in time and shuts down
//! cleanly. It knows no method's meaning: that is `reads`' and `spawn`'s.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentrace_wire::codex::{Message, MessageKind, RpcError};
use futures_util::{SinkExt as _, StreamExt as _};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWriteExt as _, BufReader};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

use crate::error::{self, HostError};

/// How long a request waits for its answer unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`Client::shutdown`] lets a spawned host exit on its own before
/// killing its process group.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// How many stderr lines of a spawned host are kept for error messages.
const STDERR_TAIL: usize = 20;

/// How many events a slow subscriber may fall behind before it misses some.
const EVENT_BUFFER: usize = 4096;

/// Where the App Server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// Spawn `codex app-server` and speak JSON lines over its stdio.
    Stdio(StdioCommand),
    /// A running host's unix socket (`codex app-server --listen unix://PATH`).
    Unix(PathBuf),
    /// A running host's WebSocket (`--listen ws://HOST:PORT`), with the
    /// capability token sent as a bearer token.
    WebSocket {
        /// `ws://HOST:PORT`.
        url: String,
        /// The capability token, when the host asks for one.
        token: Option<String>,
    },
}

impl Endpoint {
    /// Reads `stdio`, `unix://PATH` or `ws://HOST:PORT`; `stdio` runs `codex`.
    pub fn parse(
        text: &str,
        codex: StdioCommand,
        token: Option<String>,
    ) -> Result<Self, HostError> {
        if text == "stdio" || text == "stdio://" {
            Ok(Endpoint::Stdio(codex))
        } else if let Some(path) = text.strip_prefix("unix://").filter(|path| !path.is_empty()) {
            Ok(Endpoint::Unix(PathBuf::from(path)))
        } else if text.starts_with("ws://") && text.len() > "ws://".len() {
            Ok(Endpoint::WebSocket {
                url: text.to_owned(),
                token,
            })
        } else {
            Err(HostError::Endpoint(text.to_owned()))
        }
    }
}

/// How to run `codex app-server` for [`Endpoint::Stdio`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioCommand {
    /// The `codex` program.
    pub program: PathBuf,
    /// Arguments after `app-server`.
    pub args: Vec<String>,
    /// Variables added to the inherited environment (e.g. `CODEX_HOME`).
    pub env: Vec<(String, String)>,
}

impl StdioCommand {
    /// `program app-server` with the caller's environment.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }
}

/// A request the server sent to us (approvals, user input, …).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRequest {
    /// Its id, in the server's own id space.
    pub id: Value,
    /// The method, e.g. `item/commandExecution/requestApproval`.
    pub method: String,
    /// Its parameters.
    pub params: Option<Value>,
}

/// Our answer to a [`ServerRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum ServerReply {
    /// Answer with this result.
    Result(Value),
    /// Refuse with a JSON-RPC error.
    Refuse {
        /// JSON-RPC error code.
        code: i64,
        /// Why.
        message: String,
    },
}

/// Decides the answer to each server→client request.
pub type ServerRequestHandler = Arc<dyn Fn(&ServerRequest) -> ServerReply + Send + Sync>;

/// The default handler: a reader answers nothing on the user's behalf, so
/// every server request is refused, explicitly, so the host never waits.
pub fn refuse_all() -> ServerRequestHandler {
    Arc::new(|request: &ServerRequest| ServerReply::Refuse {
        code: -32000,
        message: format!(
            "agentrace host client does not answer {}: refused",
            request.method
        ),
    })
}

/// What subscribers receive.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A notification, as sent.
    Notification {
        /// The method.
        method: String,
        /// Its parameters.
        params: Option<Value>,
    },
    /// A server request, after it was answered by the handler.
    ServerRequest {
        /// The request.
        request: ServerRequest,
        /// The answer we sent.
        reply: ServerReply,
    },
    /// The connection ended; no event follows.
    Closed {
        /// Why.
        reason: String,
    },
}

/// Connection settings.
#[derive(Clone)]
pub struct ClientOptions {
    /// Longest wait for one answer.
    pub timeout: Duration,
    /// Our name in `initialize`.
    pub client_name: String,
    /// Who answers server requests.
    pub server_requests: ServerRequestHandler,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: DEFAULT_TIMEOUT,
            client_name: "agentrace".to_owned(),
            server_requests: refuse_all(),
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ClientOptions")
            .field("timeout", &self.timeout)
            .field("client_name", &self.client_name)
            .finish_non_exhaustive()
    }
}

/// One frame from a transport, or its end.
#[derive(Debug)]
pub enum Incoming {
    /// One JSON-RPC message's text.
    Frame(String),
    /// The transport ended, and why.
    End(String),
}

/// What the writer task sends.
#[derive(Debug)]
pub enum Outgoing {
    /// One JSON-RPC message's text.
    Frame(String),
    /// Close the transport (end of stdin, WebSocket close).
    Close,
}

/// The two ends a transport gives the client.
#[derive(Debug)]
pub struct Channels {
    /// Frames to send.
    pub outgoing: mpsc::UnboundedSender<Outgoing>,
    /// Frames received.
    pub incoming: mpsc::UnboundedReceiver<Incoming>,
}

type Answer = Result<Value, RpcError>;

#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
    /// Set once the connection ended: why.
    closed: Option<String>,
}

struct Shared {
    pending: Mutex<Pending>,
    events: broadcast::Sender<Event>,
    undecodable: AtomicU64,
    stderr_tail: Mutex<VecDeque<String>>,
}

impl Shared {
    fn close(&self, reason: String) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.closed.is_none() {
            pending.closed = Some(reason.clone());
            // Dropping the senders wakes every waiter with the reason set.
            pending.waiting.clear();
            let _ = self.events.send(Event::Closed { reason });
        }
    }

    fn closed_reason(&self) -> Option<String> {
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.closed.clone().map(|reason| {
            let tail = self
                .stderr_tail
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if tail.is_empty() {
                reason
            } else {
                let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
                format!("{reason}; host stderr: {}", lines.join(" | "))
            }
        })
    }
}

/// A connection to an App Server, initialized and ready for requests.
pub struct Client {
    shared: Arc<Shared>,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    next_id: AtomicU64,
    timeout: Duration,
    tasks: Vec<JoinHandle<()>>,
    process: Option<Process>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Client")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to `endpoint` and performs the `initialize` handshake.
    pub async fn connect(endpoint: &Endpoint, options: ClientOptions) -> Result<Client, HostError> {
        let client = match endpoint {
            Endpoint::Stdio(command) => Client::spawn_stdio(command, &options)?,
            Endpoint::Unix(path) => {
                let name = format!("unix://{}", path.display());
                let connect_error =
                    |source: Box<dyn std::error::Error + Send + Sync>| HostError::Connect {
                        endpoint: name.clone(),
                        source,
                    };
                let stream = tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(|error| connect_error(Box::new(error)))?;
                // The host speaks WebSocket on its unix socket too; the
                // authority in the URL is never used for routing.
                let (socket, _) = tokio_tungstenite::client_async("ws://localhost/", stream)
                    .await
                    .map_err(|error| connect_error(Box::new(error)))?;
                Client::over_channels(websocket_channels(socket), &options)
            }
            Endpoint::WebSocket { url, token } => {
                let connect_error =
                    |source: Box<dyn std::error::Error + Send + Sync>| HostError::Connect {
                        endpoint: url.clone(),
                        source,
                    };
                let mut request = url
                    .as_str()
                    .into_client_request()
                    .map_err(|error| connect_error(Box::new(error)))?;
                if let Some(token) = token {
                    let value = HeaderValue::from_str(&format!("Bearer {token}"))
                        .map_err(|error| connect_error(Box::new(error)))?;
                    request.headers_mut().insert("authorization", value);
                }
                let (socket, _) = tokio_tungstenite::connect_async(request)
                    .await
                    .map_err(|error| connect_error(Box::new(error)))?;
                Client::over_channels(websocket_channels(socket), &options)
            }
        };
        client.initialize(&options.client_name).await?;
        Ok(client)
    }

    /// A client over a transport's channels, not yet initialized (the fake
    /// host and tests use this; [`Client::connect`] initializes).
    pub fn over_channels(channels: Channels, options: &ClientOptions) -> Client {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            events,
            undecodable: AtomicU64::new(0),
            stderr_tail: Mutex::new(VecDeque::new()),
        });
        let reader = tokio::spawn(read_loop(
            channels.incoming,
            channels.outgoing.clone(),
            Arc::clone(&shared),
            Arc::clone(&options.server_requests),
        ));
        Client {
            shared,
            outgoing: channels.outgoing,
            next_id: AtomicU64::new(1),
            timeout: options.timeout,
            tasks: vec![reader],
            process: None,
        }
    }

    fn spawn_stdio(command: &StdioCommand, options: &ClientOptions) -> Result<Client, HostError> {
        let mut child = tokio::process::Command::new(&command.program)
            .arg("app-server")
            .args(&command.args)
            .envs(command.env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: `codex` is a launcher with a native child, and
            // a kill must reach both.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| HostError::Spawn {
                program: command.program.clone(),
                source,
            })?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(HostError::Spawn {
                program: command.program.clone(),
                source: std::io::Error::other("the child's pipes are missing"),
            });
        };
        let (outgoing, mut to_write) = mpsc::unbounded_channel::<Outgoing>();
        let (received, incoming) = mpsc::unbounded_channel();
        let writer = tokio::spawn(async move {
            while let Some(Outgoing::Frame(text)) = to_write.recv().await {
                let line = format!("{text}\n");
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
            // Dropping stdin is the host's signal to exit.
        });
        let reader = tokio::spawn(read_lines(stdout, received));
        let mut client = Client::over_channels(Channels { outgoing, incoming }, options);
        let tail = Arc::clone(&client.shared);
        let stderr_task = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut tail = tail
                    .stderr_tail
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
        client.tasks.extend([writer, reader, stderr_task]);
        client.process = Some(Process { child });
        Ok(client)
    }

    async fn initialize(&self, client_name: &str) -> Result<(), HostError> {
        self.request(
            "initialize",
            json!({
                "clientInfo": {"name": client_name, "version": env!("CARGO_PKG_VERSION")},
                "capabilities": {"experimentalApi": true},
            }),
        )
        .await?;
        self.notify("initialized", None)
    }

    /// Sends a request and waits for its answer (bounded by the timeout).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, HostError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer_to, answer) = oneshot::channel();
        {
            let mut pending = self
                .shared
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(reason) = &pending.closed {
                return Err(HostError::Closed {
                    method: method.to_owned(),
                    reason: reason.clone(),
                });
            }
            pending.waiting.insert(id, answer_to);
        }
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self
            .outgoing
            .send(Outgoing::Frame(frame.to_string()))
            .is_err()
        {
            self.forget(id);
            return Err(self.closed(method));
        }
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(rpc))) => Err(error::from_rpc(method, rpc.code, rpc.message)),
            Ok(Err(_)) => Err(self.closed(method)),
            Err(_) => {
                self.forget(id);
                Err(HostError::Timeout {
                    method: method.to_owned(),
                    timeout: self.timeout,
                })
            }
        }
    }

    /// Sends a request and decodes its answer.
    pub async fn request_as<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, HostError> {
        let result = self.request(method, params).await?;
        serde_json::from_value(result).map_err(|source| HostError::Decode {
            method: method.to_owned(),
            source,
        })
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), HostError> {
        let frame = match params {
            Some(params) => json!({"jsonrpc": "2.0", "method": method, "params": params}),
            None => json!({"jsonrpc": "2.0", "method": method}),
        };
        self.outgoing
            .send(Outgoing::Frame(frame.to_string()))
            .map_err(|_| self.closed(method))
    }

    /// Every notification and server request from now on, and the close.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.shared.events.subscribe()
    }

    /// How many received frames were not JSON-RPC messages (counted, not
    /// fatal).
    pub fn undecodable_frames(&self) -> u64 {
        self.shared.undecodable.load(Ordering::Relaxed)
    }

    /// Why the connection ended, once it has.
    pub fn closed_reason(&self) -> Option<String> {
        self.shared.closed_reason()
    }

    /// Closes the connection; a spawned host gets its stdin closed and a
    /// grace period to exit, then its process group is killed.
    pub async fn shutdown(mut self) {
        let _ = self.outgoing.send(Outgoing::Close);
        if let Some(mut process) = self.process.take() {
            match tokio::time::timeout(EXIT_GRACE, process.child.wait()).await {
                Ok(_) => {}
                Err(_) => process.kill(),
            }
            let _ = process.child.wait().await;
        }
        self.shared.close("shut down by the client".to_owned());
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }

    fn forget(&self, id: u64) {
        let mut pending = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        pending.waiting.remove(&id);
    }

    fn closed(&self, method: &str) -> HostError {
        HostError::Closed {
            method: method.to_owned(),
            reason: self
                .shared
                .closed_reason()
                .unwrap_or_else(|| "the transport is gone".to_owned()),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(process) = &mut self.process {
            process.kill();
        }
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A spawned host.
struct Process {
    child: tokio::process::Child,
}

impl Process {
    fn kill(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            if let Some(id) = self.child.id().and_then(|id| i32::try_from(id).ok()) {
                if let Some(group) = rustix::process::Pid::from_raw(id) {
                    let _ =
                        rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
            }
            let _ = self.child.start_kill();
        }
    }
}

async fn read_loop(
    mut incoming: mpsc::UnboundedReceiver<Incoming>,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    shared: Arc<Shared>,
    handler: ServerRequestHandler,
) {
    let reason = loop {
        match incoming.recv().await {
            Some(Incoming::Frame(text)) => dispatch(&text, &outgoing, &shared, &handler),
            Some(Incoming::End(reason)) => break reason,
            None => break "the transport is gone".to_owned(),
        }
    };
    shared.close(reason);
}

fn dispatch(
    text: &str,
    outgoing: &mpsc::UnboundedSender<Outgoing>,
    shared: &Shared,
    handler: &ServerRequestHandler,
) {
    let Ok(message) = serde_json::from_str::<Message>(text) else {
        shared.undecodable.fetch_add(1, Ordering::Relaxed);
        return;
    };
    match message.kind() {
        MessageKind::Response => {
            let Some(id) = message.id.as_ref().and_then(Value::as_u64) else {
                shared.undecodable.fetch_add(1, Ordering::Relaxed);
                return;
            };
            let waiter = {
                let mut pending = shared
                    .pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                pending.waiting.remove(&id)
            };
            // No waiter: the request timed out and was forgotten.
            if let Some(waiter) = waiter {
                let answer = match message.error {
                    Some(error) => Err(serde_json::from_value(error).unwrap_or_default()),
                    None => Ok(message.result.unwrap_or(Value::Null)),
                };
                let _ = waiter.send(answer);
            }
        }
        MessageKind::Request => {
            let request = ServerRequest {
                id: message.id.unwrap_or(Value::Null),
                method: message.method.unwrap_or_default(),
                params: message.params,
            };
            let reply = handler(&request);
            let frame = match &reply {
                ServerReply::Result(result) => {
                    json!({"jsonrpc": "2.0", "id": request.id, "result": result})
                }
                ServerReply::Refuse { code, message } => json!({
                    "jsonrpc": "2.0", "id": request.id,
                    "error": {"code": code, "message": message},
                }),
            };
            let _ = outgoing.send(Outgoing::Frame(frame.to_string()));
            let _ = shared.events.send(Event::ServerRequest { request, reply });
        }
        MessageKind::Notification => {
            let _ = shared.events.send(Event::Notification {
                method: message.method.unwrap_or_default(),
                params: message.params,
            });
        }
        MessageKind::Other => {
            shared.undecodable.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn read_lines(stream: impl AsyncRead + Unpin, received: mpsc::UnboundedSender<Incoming>) {
    let mut lines = BufReader::new(stream).lines();
    let end = loop {
        match lines.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => continue,
            Ok(Some(line)) => {
                if received.send(Incoming::Frame(line)).is_err() {
                    return;
                }
            }
            Ok(None) => break "the host closed its stdout".to_owned(),
            Err(error) => break format!("reading the host's stdout failed: {error}"),
        }
    };
    let _ = received.send(Incoming::End(end));
}

/// Pumps between a WebSocket and the client's channels.
fn websocket_channels<S>(socket: WebSocketStream<S>) -> Channels
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut stream) = socket.split();
    let (outgoing, mut to_write) = mpsc::unbounded_channel::<Outgoing>();
    let (received, incoming) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(Outgoing::Frame(text)) = to_write.recv().await {
            if sink.send(WsMessage::text(text)).await.is_err() {
                return;
            }
        }
        let _ = sink.send(WsMessage::Close(None)).await;
        let _ = sink.close().await;
    });
    tokio::spawn(async move {
        let end = loop {
            match stream.next().await {
                Some(Ok(WsMessage::Text(text))) => {
                    if received.send(Incoming::Frame(text.to_string())).is_err() {
                        return;
                    }
                }
                Some(Ok(WsMessage::Binary(bytes))) => {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    if received.send(Incoming::Frame(text)).is_err() {
                        return;
                    }
                }
                Some(Ok(WsMessage::Close(frame))) => {
                    break match frame {
                        Some(frame) => format!("the host closed the WebSocket: {}", frame.reason),
                        None => "the host closed the WebSocket".to_owned(),
                    }
                }
                Some(Ok(_)) => continue,
                Some(Err(error)) => break format!("the WebSocket failed: {error}"),
                None => break "the WebSocket ended".to_owned(),
            }
        };
        let _ = received.send(Incoming::End(end));
    });
    Channels { outgoing, incoming }
}
