//! Codex app-server JSON-RPC as the real `codex app-server` 0.169 speaks it on
//! stdio: one message per line, no `jsonrpc` member on server messages,
//! `emittedAtMs` on notifications, server→client request ids in their own id
//! space (tell requests from responses by the presence of `method`).
//!
//! Parse the envelope first ([`Frame`], its members borrowed from the line;
//! [`Message`] for a client that wants them owned), the typed payload second:
//! [`Notification`] and [`ServerRequest`] have one row per method, and an
//! unknown method or item type is never an error here.

use std::borrow::Cow;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// One JSON-RPC line, before we know what it is.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Request or response id (numbers and strings both occur).
    #[serde(default)]
    pub id: Option<Value>,
    /// Present on requests and notifications.
    #[serde(default)]
    pub method: Option<String>,
    /// Request or notification parameters.
    #[serde(default)]
    pub params: Option<Value>,
    /// Successful response payload.
    #[serde(default)]
    pub result: Option<Value>,
    /// Error response payload.
    #[serde(default)]
    pub error: Option<Value>,
    /// Server emission time of a notification, Unix milliseconds.
    #[serde(default)]
    pub emitted_at_ms: Option<i64>,
}

/// What kind of JSON-RPC message a [`Message`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// `method` and `id`: a request.
    Request,
    /// `method` without `id`: a notification.
    Notification,
    /// `id` with `result` or `error`: a response.
    Response,
    /// None of the above (still valid JSON).
    Other,
}

impl Message {
    /// Classifies the message by the members it has.
    pub fn kind(&self) -> MessageKind {
        match (&self.method, &self.id) {
            (Some(_), Some(id)) if !id.is_null() => MessageKind::Request,
            (Some(_), _) => MessageKind::Notification,
            (None, Some(_)) if self.result.is_some() || self.error.is_some() => {
                MessageKind::Response
            }
            _ => MessageKind::Other,
        }
    }
}

/// One JSON-RPC line with its payload members borrowed from the line's text:
/// nothing is built but the small members, so the typed payload
/// ([`Notification::decode`], [`ServerRequest::decode`], [`ResponseResult`])
/// is the only parse of it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Frame<'a> {
    /// Request or response id (numbers and strings both occur).
    #[serde(default)]
    pub id: Option<Value>,
    /// Present on requests and notifications.
    #[serde(default, borrow)]
    pub method: Option<Cow<'a, str>>,
    /// Request or notification parameters, as written.
    #[serde(default, borrow)]
    pub params: Option<&'a RawValue>,
    /// Successful response payload, as written.
    #[serde(default, borrow)]
    pub result: Option<&'a RawValue>,
    /// Error response payload, as written.
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
    /// Server emission time of a notification, Unix milliseconds (absent
    /// when it is not an integer).
    #[serde(default, deserialize_with = "lenient_field")]
    pub emitted_at_ms: Option<i64>,
}

impl Frame<'_> {
    /// Classifies the frame by the members it has (as [`Message::kind`]).
    pub fn kind(&self) -> MessageKind {
        match (&self.method, &self.id) {
            (Some(_), Some(id)) if !id.is_null() => MessageKind::Request,
            (Some(_), _) => MessageKind::Notification,
            (None, Some(_)) if self.result.is_some() || self.error.is_some() => {
                MessageKind::Response
            }
            _ => MessageKind::Other,
        }
    }
}

/// Decodes `T` from a payload as written; an absent payload reads as `{}`.
fn strict<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, serde_json::Error> {
    serde_json::from_str(params.map_or("{}", RawValue::get))
}

/// Decodes `T` from a payload, its default when the payload has another
/// shape (for payloads read only for what they may say, like a notice's text).
fn lenient<T: DeserializeOwned + Default>(
    params: Option<&RawValue>,
) -> Result<T, serde_json::Error> {
    Ok(strict(params).unwrap_or_default())
}

/// A field that keeps its default when its value has another shape.
fn lenient_field<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(
    deserializer: D,
) -> Result<T, D::Error> {
    let raw = <&RawValue>::deserialize(deserializer)?;
    Ok(serde_json::from_str(raw.get()).unwrap_or_default())
}

/// True for a member that is there at all (`null` included).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(deserializer).map(|_| true)
}

/// Enums of values upstream may add to: the known ones, else `Other` with
/// the text as written. Reading never fails on a new value.
macro_rules! known_or_other {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A value this build does not know, as written.
            Other(String),
        }

        impl $name {
            /// Reads a value as written.
            pub fn parse(text: &str) -> Self {
                match text {
                    $($text => $name::$variant,)*
                    other => $name::Other(other.to_owned()),
                }
            }

            /// The value as upstream spells it.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)*
                    $name::Other(text) => text,
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = Cow::<'de, str>::deserialize(deserializer)?;
                Ok($name::parse(&text))
            }
        }
    };
}

known_or_other! {
    /// The phase of an `agentMessage` (null, i.e. `None`, when the provider
    /// sets none).
    Phase {
        /// The turn's answer.
        FinalAnswer = "final_answer",
        /// Progress talk; never the answer.
        Commentary = "commentary",
    }
}

known_or_other! {
    /// The status of a turn.
    TurnStatus {
        /// Still running.
        InProgress = "inProgress",
        /// Ended normally.
        Completed = "completed",
        /// Interrupted (by the user, a close, or a restart that cut it).
        Interrupted = "interrupted",
        /// Ended in an error.
        Failed = "failed",
    }
}

/// The one thread a payload names: `threadId`, else `thread.id` (an empty
/// id names none).
pub trait NamesThread {
    /// The thread, if the payload names one.
    fn thread_id(&self) -> Option<&str>;
}

fn non_empty(id: Option<&str>) -> Option<&str> {
    id.filter(|id| !id.is_empty())
}

/// `{id}` of a nested thread object.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct IdOnly {
    /// The id.
    #[serde(default)]
    pub id: Option<String>,
}

/// What any payload says of its thread: for methods with no typed payload
/// (client requests, unknown methods).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRef {
    /// `threadId`.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread_id: Option<String>,
    /// `thread`, when it is an object with an id.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread: Option<IdOnly>,
}

impl ThreadRef {
    /// What `params` says of its thread (nothing when it is not an object).
    pub fn of(params: Option<&RawValue>) -> ThreadRef {
        strict(params).unwrap_or_default()
    }
}

impl NamesThread for ThreadRef {
    fn thread_id(&self) -> Option<&str> {
        non_empty(
            self.thread_id
                .as_deref()
                .or_else(|| self.thread.as_ref().and_then(|thread| thread.id.as_deref())),
        )
    }
}

/// A text member that may hold another shape (then it says nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MaybeText(pub Option<String>);

impl<'de> Deserialize<'de> for MaybeText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&RawValue>::deserialize(deserializer)?;
        Ok(MaybeText(serde_json::from_str(raw.get()).ok()))
    }
}

/// Params of the notices (notifications with no attribution meaning): what
/// they may say, read leniently.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoticeParams {
    /// `threadId`.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread_id: Option<String>,
    /// `thread`, when it is an object with an id.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread: Option<IdOnly>,
    /// `message`, when it is text.
    #[serde(default)]
    pub message: Option<MaybeText>,
    /// `summary`, when it is text.
    #[serde(default)]
    pub summary: Option<MaybeText>,
}

impl NoticeParams {
    /// The notice's text: `message`, else `summary` (a `message` that is not
    /// text hides `summary`, as it always did).
    pub fn text(&self) -> Option<&str> {
        match (&self.message, &self.summary) {
            (Some(message), _) => message.0.as_deref(),
            (None, Some(summary)) => summary.0.as_deref(),
            (None, None) => None,
        }
    }
}

impl NamesThread for NoticeParams {
    fn thread_id(&self) -> Option<&str> {
        non_empty(
            self.thread_id
                .as_deref()
                .or_else(|| self.thread.as_ref().and_then(|thread| thread.id.as_deref())),
        )
    }
}

/// Params of `thread/started`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartedParams {
    /// The thread.
    pub thread: Thread,
}

impl NamesThread for ThreadStartedParams {
    fn thread_id(&self) -> Option<&str> {
        non_empty(Some(&self.thread.id))
    }
}

/// Params of `item/commandExecution/terminalInteraction`: input written to
/// a running command's terminal.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalInteractionParams {
    /// The thread.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(default, deserialize_with = "lenient_field")]
    pub turn_id: Option<String>,
    /// The command item written to.
    #[serde(default, deserialize_with = "lenient_field")]
    pub item_id: Option<String>,
    /// Its process.
    #[serde(default, deserialize_with = "lenient_field")]
    pub process_id: Option<String>,
}

impl NamesThread for TerminalInteractionParams {
    fn thread_id(&self) -> Option<&str> {
        non_empty(self.thread_id.as_deref())
    }
}

macro_rules! names_thread_by_id {
    ($($ty:ty),*) => {
        $(impl NamesThread for $ty {
            fn thread_id(&self) -> Option<&str> {
                non_empty(self.thread_id.as_deref())
            }
        })*
    };
}

names_thread_by_id!(
    TurnParams,
    ItemParams,
    DeltaParams,
    StatusChangedParams,
    TokenUsageParams,
    ErrorParams
);

/// One enum of methods: a row per method (`Variant(Params, decoder) =
/// "method"`), plus `Unknown` for a method this build does not know.
macro_rules! methods {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident($params:ty, $decode:ident) = $method:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        pub enum $name {
            $($(#[$vmeta])* $variant($params),)*
            /// A method this build does not know, its params as written.
            Unknown {
                /// The method.
                method: String,
                /// Its params.
                params: Option<Box<RawValue>>,
            },
        }

        impl $name {
            /// Every method with a row.
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            /// The typed payload of `method`. An unknown method is
            /// [`Self::Unknown`]; a known one whose params do not fit its
            /// shape is an error (the caller says so).
            pub fn decode(method: &str, params: Option<&RawValue>) -> Result<Self, serde_json::Error> {
                Ok(match method {
                    $($method => $name::$variant($decode(params)?),)*
                    _ => $name::Unknown {
                        method: method.to_owned(),
                        params: params.map(RawValue::to_owned),
                    },
                })
            }

            /// The method, as written.
            pub fn method(&self) -> &str {
                match self {
                    $($name::$variant(_) => $method,)*
                    $name::Unknown { method, .. } => method,
                }
            }

            /// The thread the payload names.
            pub fn thread_id(&self) -> Option<String> {
                match self {
                    $($name::$variant(params) => params.thread_id().map(str::to_owned),)*
                    $name::Unknown { params, .. } => ThreadRef::of(params.as_deref()).thread_id().map(str::to_owned),
                }
            }
        }
    };
}

methods! {
    /// A notification the server sends, one row per method (the set the
    /// captures of 0.169 and 0.171 hold, and the documented ones of the same
    /// families).
    Notification {
        /// A thread was started or loaded.
        ThreadStarted(ThreadStartedParams, strict) = "thread/started",
        /// A thread's loaded status changed.
        ThreadStatusChanged(StatusChangedParams, strict) = "thread/status/changed",
        /// A turn began.
        TurnStarted(TurnParams, strict) = "turn/started",
        /// A turn ended.
        TurnCompleted(TurnParams, strict) = "turn/completed",
        /// An item began.
        ItemStarted(ItemParams, strict) = "item/started",
        /// An item ended.
        ItemCompleted(ItemParams, strict) = "item/completed",
        /// A thread's running token totals.
        ThreadTokenUsageUpdated(TokenUsageParams, strict) = "thread/tokenUsage/updated",
        /// A provider error (the turn may go on).
        Error(ErrorParams, strict) = "error",
        /// Streamed assistant text.
        AgentMessageDelta(DeltaParams, strict) = "item/agentMessage/delta",
        /// Streamed command output.
        CommandExecutionOutputDelta(DeltaParams, strict) = "item/commandExecution/outputDelta",
        /// Streamed reasoning summary.
        ReasoningSummaryTextDelta(DeltaParams, strict) = "item/reasoning/summaryTextDelta",
        /// Streamed reasoning text.
        ReasoningTextDelta(DeltaParams, strict) = "item/reasoning/textDelta",
        /// Streamed patch output.
        FileChangeOutputDelta(DeltaParams, strict) = "item/fileChange/outputDelta",
        /// Streamed plan text.
        PlanDelta(DeltaParams, strict) = "item/plan/delta",
        /// Input written to a running command's terminal.
        CommandExecutionTerminalInteraction(TerminalInteractionParams, lenient) = "item/commandExecution/terminalInteraction",
        /// Rate limits moved.
        AccountRateLimitsUpdated(NoticeParams, lenient) = "account/rateLimits/updated",
        /// The account changed.
        AccountUpdated(NoticeParams, lenient) = "account/updated",
        /// A login finished.
        AccountLoginCompleted(NoticeParams, lenient) = "account/login/completed",
        /// Auth status changed (legacy name).
        AuthStatusChange(NoticeParams, lenient) = "authStatusChange",
        /// A configuration warning.
        ConfigWarning(NoticeParams, lenient) = "configWarning",
        /// A deprecation notice.
        DeprecationNotice(NoticeParams, lenient) = "deprecationNotice",
        /// Fuzzy file search progress.
        FuzzyFileSearchSessionUpdated(NoticeParams, lenient) = "fuzzyFileSearch/sessionUpdated",
        /// Fuzzy file search done.
        FuzzyFileSearchSessionCompleted(NoticeParams, lenient) = "fuzzyFileSearch/sessionCompleted",
        /// ChatGPT login done (legacy name).
        LoginChatGptComplete(NoticeParams, lenient) = "loginChatGptComplete",
        /// An MCP OAuth login done.
        McpServerOauthLoginCompleted(NoticeParams, lenient) = "mcpServer/oauthLogin/completed",
        /// An MCP server's startup status.
        McpServerStartupStatusUpdated(NoticeParams, lenient) = "mcpServer/startupStatus/updated",
        /// The model was rerouted.
        ModelRerouted(NoticeParams, lenient) = "model/rerouted",
        /// Remote control status.
        RemoteControlStatusChanged(NoticeParams, lenient) = "remoteControl/status/changed",
        /// A server request was answered or withdrawn.
        ServerRequestResolved(NoticeParams, lenient) = "serverRequest/resolved",
        /// Session configured (legacy).
        SessionConfigured(NoticeParams, lenient) = "sessionConfigured",
        /// A thread was archived.
        ThreadArchived(NoticeParams, lenient) = "thread/archived",
        /// A thread was closed (unloaded).
        ThreadClosed(NoticeParams, lenient) = "thread/closed",
        /// A thread's history was compacted.
        ThreadCompacted(NoticeParams, lenient) = "thread/compacted",
        /// A thread's goal was cleared.
        ThreadGoalCleared(NoticeParams, lenient) = "thread/goal/cleared",
        /// A thread's goal was set.
        ThreadGoalUpdated(NoticeParams, lenient) = "thread/goal/updated",
        /// A thread was renamed.
        ThreadNameUpdated(NoticeParams, lenient) = "thread/name/updated",
        /// A thread's read state changed.
        ThreadReadStateChanged(NoticeParams, lenient) = "thread/readState/changed",
        /// Part of the answer to `thread/search/stream` (new in 0.171); it
        /// names no thread.
        ThreadSearchPartial(NoticeParams, lenient) = "thread/search/partial",
        /// A thread was unarchived.
        ThreadUnarchived(NoticeParams, lenient) = "thread/unarchived",
        /// The turn's diff so far.
        TurnDiffUpdated(NoticeParams, lenient) = "turn/diff/updated",
        /// The turn's plan.
        TurnPlanUpdated(NoticeParams, lenient) = "turn/plan/updated",
        /// A provider warning.
        Warning(NoticeParams, lenient) = "warning",
        /// The Windows sandbox is set up.
        WindowsSandboxSetupCompleted(NoticeParams, lenient) = "windowsSandbox/setupCompleted",
    }
}

impl Notification {
    /// True for a notice: a method known to carry no attribution meaning.
    pub fn is_notice(&self) -> bool {
        self.notice().is_some()
    }

    /// The params of a notice, when this is one.
    pub fn notice(&self) -> Option<&NoticeParams> {
        use Notification as N;
        match self {
            N::AccountRateLimitsUpdated(params)
            | N::AccountUpdated(params)
            | N::AccountLoginCompleted(params)
            | N::AuthStatusChange(params)
            | N::ConfigWarning(params)
            | N::DeprecationNotice(params)
            | N::FuzzyFileSearchSessionUpdated(params)
            | N::FuzzyFileSearchSessionCompleted(params)
            | N::LoginChatGptComplete(params)
            | N::McpServerOauthLoginCompleted(params)
            | N::McpServerStartupStatusUpdated(params)
            | N::ModelRerouted(params)
            | N::RemoteControlStatusChanged(params)
            | N::ServerRequestResolved(params)
            | N::SessionConfigured(params)
            | N::ThreadArchived(params)
            | N::ThreadClosed(params)
            | N::ThreadCompacted(params)
            | N::ThreadGoalCleared(params)
            | N::ThreadGoalUpdated(params)
            | N::ThreadNameUpdated(params)
            | N::ThreadReadStateChanged(params)
            | N::ThreadSearchPartial(params)
            | N::ThreadUnarchived(params)
            | N::TurnDiffUpdated(params)
            | N::TurnPlanUpdated(params)
            | N::Warning(params)
            | N::WindowsSandboxSetupCompleted(params) => Some(params),
            N::ThreadStarted(_)
            | N::ThreadStatusChanged(_)
            | N::TurnStarted(_)
            | N::TurnCompleted(_)
            | N::ItemStarted(_)
            | N::ItemCompleted(_)
            | N::ThreadTokenUsageUpdated(_)
            | N::Error(_)
            | N::AgentMessageDelta(_)
            | N::CommandExecutionOutputDelta(_)
            | N::ReasoningSummaryTextDelta(_)
            | N::ReasoningTextDelta(_)
            | N::FileChangeOutputDelta(_)
            | N::PlanDelta(_)
            | N::CommandExecutionTerminalInteraction(_)
            | N::Unknown { .. } => None,
        }
    }
}

/// Params of a request the server sends the client (approvals, user
/// input, tool calls), read leniently for what agentrace shows of them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerRequestParams {
    /// `threadId`.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread_id: Option<String>,
    /// `thread`, when it is an object with an id.
    #[serde(default, deserialize_with = "lenient_field")]
    pub thread: Option<IdOnly>,
    /// The item the request concerns.
    #[serde(default, deserialize_with = "lenient_field")]
    pub item_id: Option<String>,
    /// The command to approve, when it is text.
    #[serde(default)]
    pub command: Option<MaybeText>,
    /// The reason given, when it is text.
    #[serde(default)]
    pub reason: Option<MaybeText>,
}

impl ServerRequestParams {
    /// What the request asks about: `command`, else `reason` (a `command`
    /// that is not text hides `reason`, as it always did).
    pub fn summary(&self) -> Option<&str> {
        match (&self.command, &self.reason) {
            (Some(command), _) => command.0.as_deref(),
            (None, Some(reason)) => reason.0.as_deref(),
            (None, None) => None,
        }
    }
}

impl NamesThread for ServerRequestParams {
    fn thread_id(&self) -> Option<&str> {
        non_empty(
            self.thread_id
                .as_deref()
                .or_else(|| self.thread.as_ref().and_then(|thread| thread.id.as_deref())),
        )
    }
}

methods! {
    /// A request the server sends the client, one row per method.
    ServerRequest {
        /// Approve a command.
        CommandExecutionRequestApproval(ServerRequestParams, lenient) = "item/commandExecution/requestApproval",
        /// Approve a patch.
        FileChangeRequestApproval(ServerRequestParams, lenient) = "item/fileChange/requestApproval",
        /// Approve a permission.
        PermissionsRequestApproval(ServerRequestParams, lenient) = "item/permissions/requestApproval",
        /// Answer the model's questions.
        ToolRequestUserInput(ServerRequestParams, lenient) = "item/tool/requestUserInput",
        /// Run a client-side (dynamic) tool.
        ToolCall(ServerRequestParams, lenient) = "item/tool/call",
        /// An MCP server asks the user.
        McpServerElicitationRequest(ServerRequestParams, lenient) = "mcpServer/elicitation/request",
        /// Refresh ChatGPT tokens.
        AccountChatgptAuthTokensRefresh(ServerRequestParams, lenient) = "account/chatgptAuthTokens/refresh",
        /// Approve a patch (legacy name).
        ApplyPatchApproval(ServerRequestParams, lenient) = "applyPatchApproval",
        /// Approve a command (legacy name).
        ExecCommandApproval(ServerRequestParams, lenient) = "execCommandApproval",
    }
}

impl ServerRequest {
    /// The params, as far as agentrace reads them (none for an unknown method).
    pub fn params(&self) -> Option<ServerRequestParams> {
        use ServerRequest as R;
        match self {
            R::CommandExecutionRequestApproval(params)
            | R::FileChangeRequestApproval(params)
            | R::PermissionsRequestApproval(params)
            | R::ToolRequestUserInput(params)
            | R::ToolCall(params)
            | R::McpServerElicitationRequest(params)
            | R::AccountChatgptAuthTokensRefresh(params)
            | R::ApplyPatchApproval(params)
            | R::ExecCommandApproval(params) => Some(params.clone()),
            R::Unknown { params, .. } => Some(lenient(params.as_deref()).unwrap_or_default()),
        }
    }
}

/// A turn as a read-back lists it, read for its ending only (entries of
/// `data` may be threads, turns or items: nothing here fails on those).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnHead {
    /// Turn id, when it is text.
    #[serde(default)]
    pub id: Option<MaybeText>,
    /// Status, when it is text (a thread's is an object).
    #[serde(default)]
    pub status: Option<MaybeText>,
    /// End time; null or absent while running and for a turn a restart cut.
    #[serde(default)]
    pub completed_at: Option<IgnoredAny>,
}

impl TurnHead {
    /// True for a turn read back as `interrupted` with no completion time.
    pub fn is_unfinished(&self) -> bool {
        self.status.as_ref().and_then(|status| status.0.as_deref()) == Some("interrupted")
            && self.completed_at.is_none()
    }

    /// The turn id, when it is text.
    pub fn id(&self) -> Option<&str> {
        self.id.as_ref().and_then(|id| id.0.as_deref())
    }
}

/// The members of a response's `result` agentrace reads (thread objects and
/// read-back turns), whatever the request was; anything of another shape
/// reads as absent.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseResult<'a> {
    /// `thread` (thread/start, thread/resume, thread/fork, thread/read).
    #[serde(default, borrow)]
    pub thread: Option<&'a RawValue>,
    /// Whether `model` is there: thread/start, thread/resume and thread/fork
    /// answer with the thread *and* its settings; thread/read does not.
    #[serde(default, deserialize_with = "present")]
    pub model: bool,
    /// `data` (thread/list, thread/turns/list, thread/items/list, …).
    #[serde(default, borrow)]
    pub data: Option<&'a RawValue>,
    /// `turns`.
    #[serde(default, borrow)]
    pub turns: Option<&'a RawValue>,
}

/// One entry of a `data` list, read for whether it is a thread.
#[derive(Debug, Default, Deserialize)]
struct ListEntryHead {
    #[serde(default, deserialize_with = "present")]
    id: bool,
    #[serde(default, deserialize_with = "present")]
    turns: bool,
    #[serde(default, deserialize_with = "present")]
    source: bool,
}

/// The entries of a list member, each as written (none when it is no list).
fn entries(list: Option<&RawValue>) -> Vec<&RawValue> {
    list.and_then(|list| serde_json::from_str::<Vec<&RawValue>>(list.get()).ok())
        .unwrap_or_default()
}

impl<'a> ResponseResult<'a> {
    /// Reads a `result` as written; one of another shape says nothing.
    pub fn of(result: &'a RawValue) -> ResponseResult<'a> {
        serde_json::from_str(result.get()).unwrap_or_default()
    }

    /// `result.thread`, when it is a thread object.
    pub fn thread(&self) -> Option<Thread> {
        self.thread
            .and_then(|thread| serde_json::from_str(thread.get()).ok())
    }

    /// The thread objects of `result.data` (a `thread/list` answer, or a
    /// list whose entries carry a thread's `source` or `turns`).
    pub fn listed_threads(&self) -> Vec<Thread> {
        entries(self.data)
            .into_iter()
            .filter(|entry| {
                let head: ListEntryHead = serde_json::from_str(entry.get()).unwrap_or_default();
                head.id && head.turns || head.source
            })
            .filter_map(|entry| serde_json::from_str(entry.get()).ok())
            .collect()
    }

    /// The turns the answer reads back (`thread.turns`, `data`, `turns`).
    pub fn read_back_turns(&self) -> Vec<TurnHead> {
        #[derive(Default, Deserialize)]
        struct Turns<'b> {
            #[serde(default, borrow)]
            turns: Option<&'b RawValue>,
        }
        let thread_turns = self
            .thread
            .and_then(|thread| serde_json::from_str::<Turns<'_>>(thread.get()).ok())
            .and_then(|thread| thread.turns);
        [thread_turns, self.data, self.turns]
            .into_iter()
            .flat_map(entries)
            .filter_map(|turn| serde_json::from_str::<TurnHead>(turn.get()).ok())
            .collect()
    }
}

/// Params of `turn/started` and `turn/completed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnParams {
    /// Thread that owns the turn.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The turn.
    pub turn: Turn,
}

/// A turn as the server reports it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// Turn id.
    pub id: String,
    /// Id of the root's turn that caused this one (children carry the root's).
    #[serde(default)]
    pub root_turn_id: Option<String>,
    /// Items of the turn (the `summary` view on `turn/completed`).
    #[serde(default)]
    pub items: Vec<Value>,
    /// `inProgress`, `completed`, `interrupted`, `failed`, …
    #[serde(default)]
    pub status: Option<TurnStatus>,
    /// The provider's error when the turn failed.
    #[serde(default)]
    pub error: Option<TurnError>,
    /// Duration in milliseconds, once ended.
    #[serde(default)]
    pub duration_ms: Option<i64>,
    /// How much of `items` is there: `notLoaded`, `summary` or `full`.
    #[serde(default)]
    pub items_view: Option<String>,
    /// Start time, Unix seconds.
    #[serde(default)]
    pub started_at: Option<i64>,
    /// End time, Unix seconds (null while running, and for a turn a restart cut).
    #[serde(default)]
    pub completed_at: Option<i64>,
}

/// An error object as it appears on turns and `error` notifications.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// Human-readable message.
    #[serde(default)]
    pub message: Option<String>,
    /// Codex's error classification (a string or an object).
    #[serde(default)]
    pub codex_error_info: Option<Value>,
}

/// Params of `item/started` and `item/completed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemParams {
    /// Thread that owns the item.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Turn that owns the item.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The item.
    pub item: Item,
}

/// Params of the streaming delta notifications
/// (`item/agentMessage/delta`, `item/commandExecution/outputDelta`, …).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeltaParams {
    /// Thread that owns the item.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Turn that owns the item.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The item the delta belongs to.
    #[serde(default)]
    pub item_id: Option<String>,
    /// The text added.
    #[serde(default)]
    pub delta: Option<String>,
}

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
    /// built on the way).
    pub fn from_raw(raw: &RawValue) -> Item {
        #[derive(Default, Deserialize)]
        struct Head {
            #[serde(default, rename = "type")]
            item_type: Option<MaybeText>,
            #[serde(default)]
            id: Option<MaybeText>,
        }
        let head: Head = serde_json::from_str(raw.get()).unwrap_or_default();
        let item_type = head.item_type.as_ref().and_then(|kind| kind.0.as_deref());
        let text = raw.get();
        let parsed = match item_type {
            Some("userMessage") => serde_json::from_str(text).map(Item::UserMessage),
            Some("agentMessage") => serde_json::from_str(text).map(Item::AgentMessage),
            Some("reasoning") => serde_json::from_str(text).map(Item::Reasoning),
            Some("commandExecution") => serde_json::from_str(text).map(Item::CommandExecution),
            Some("fileChange") => serde_json::from_str(text).map(Item::FileChange),
            Some("mcpToolCall") => serde_json::from_str(text).map(Item::McpToolCall),
            Some("webSearch") => serde_json::from_str(text).map(Item::WebSearch),
            Some("collabAgentToolCall") => {
                serde_json::from_str(text).map(Item::CollabAgentToolCall)
            }
            Some("subAgentActivity") => serde_json::from_str(text).map(Item::SubAgentActivity),
            _ => return Item::unknown_head(item_type, head.id),
        };
        parsed.unwrap_or_else(|_| Item::unknown_head(item_type, head.id))
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

/// Params of `thread/status/changed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusChangedParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Its new status.
    #[serde(default)]
    pub status: ThreadStatus,
}

/// A thread status: `{type, activeFlags?}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStatus {
    /// `idle`, `active`, `notLoaded`, `systemError`, …
    #[serde(default, rename = "type")]
    pub status_type: Option<String>,
    /// `waitingOnApproval`, `waitingOnUserInput`, …
    #[serde(default)]
    pub active_flags: Vec<String>,
}

/// Params of `thread/tokenUsage/updated`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageParams {
    /// The thread (usage is per thread; the root's does not include children).
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Running total and last response.
    #[serde(default)]
    pub token_usage: TokenUsageInfo,
}

/// `tokenUsage` member.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageInfo {
    /// Running total of the thread.
    #[serde(default)]
    pub total: TokenBreakdown,
    /// Usage of the latest model response.
    #[serde(default)]
    pub last: TokenBreakdown,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenBreakdown {
    /// All tokens.
    #[serde(default)]
    pub total_tokens: u64,
    /// Input tokens (cached included).
    #[serde(default)]
    pub input_tokens: u64,
    /// Cached input tokens.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_input_tokens: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output_tokens: u64,
    /// Reasoning output tokens.
    #[serde(default)]
    pub reasoning_output_tokens: u64,
}

/// Params of the `error` notification.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The error.
    #[serde(default)]
    pub error: TurnError,
    /// Whether Codex will retry (then the turn goes on).
    #[serde(default)]
    pub will_retry: Option<bool>,
}

/// A thread object (`thread/started`, `thread/start`, `thread/read`,
/// `thread/list` answers).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// Thread id.
    pub id: String,
    /// Parent thread (null in `thread/list` entries even for sub-agents).
    #[serde(default)]
    pub parent_thread_id: Option<String>,
    /// Where the thread came from: a string (`vscode`) or `{subAgent:{…}}`.
    #[serde(default)]
    pub source: Option<Value>,
    /// `subagent` for sub-agents.
    #[serde(default)]
    pub thread_source: Option<String>,
    /// Nickname of a sub-agent.
    #[serde(default)]
    pub agent_nickname: Option<String>,
    /// Role of a sub-agent.
    #[serde(default)]
    pub agent_role: Option<String>,
    /// Model.
    #[serde(default)]
    pub model: Option<String>,
    /// Rollout path.
    #[serde(default)]
    pub path: Option<String>,
    /// Loaded state: `idle`, `active`, `notLoaded`, `systemError`.
    #[serde(default)]
    pub status: ThreadStatus,
    /// Configured reasoning effort (null when the model's default applies).
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Version of the Codex CLI that wrote the thread.
    #[serde(default)]
    pub cli_version: Option<String>,
    /// Turns, when the read asked for them.
    #[serde(default)]
    pub turns: Vec<Turn>,
}

/// `source.subAgent.thread_spawn` (also `source.subagent…` in rollouts).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct ThreadSpawn {
    /// The spawner.
    #[serde(default)]
    pub parent_thread_id: Option<String>,
    /// Depth below the root.
    #[serde(default)]
    pub depth: Option<u32>,
    /// V2 task path.
    #[serde(default)]
    pub agent_path: Option<String>,
    /// Nickname.
    #[serde(default)]
    pub agent_nickname: Option<String>,
    /// Role.
    #[serde(default)]
    pub agent_role: Option<String>,
}

impl Thread {
    /// The `thread_spawn` source of a sub-agent, if this thread is one.
    pub fn thread_spawn(&self) -> Option<ThreadSpawn> {
        let source = self.source.as_ref()?;
        let sub = source.get("subAgent").or_else(|| source.get("subagent"))?;
        let spawn = sub.get("thread_spawn")?;
        ThreadSpawn::deserialize(spawn).ok()
    }
}

/// Result of `thread/read`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadResult {
    /// The thread.
    pub thread: Thread,
}

/// Result of `thread/turns/list`: one page of turns.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnsListResult {
    /// The turns of this page, in the requested order.
    #[serde(default)]
    pub data: Vec<Turn>,
    /// Cursor of the next page; null on the last one.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// Result of `thread/items/list`: one page of items.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemsListResult {
    /// The items of this page.
    #[serde(default)]
    pub data: Vec<ItemEntry>,
    /// Cursor of the next page (a JSON string); null on the last one.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// One entry of `thread/items/list`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemEntry {
    /// The turn that holds the item.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The item, kept as a value: decode it with [`Item::from_value`].
    pub item: Value,
}

/// The `error` member of a JSON-RPC error answer.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RpcError {
    /// JSON-RPC error code (`-32600` for the host's "not loaded"/"not found").
    #[serde(default)]
    pub code: i64,
    /// Human-readable message, e.g. `thread not loaded: <id>`.
    #[serde(default)]
    pub message: String,
    /// Extra data, when the host gives any.
    #[serde(default)]
    pub data: Option<Value>,
}

/// One line of a rollout file (`CODEX_HOME/sessions/…/rollout-*.jsonl`).
#[derive(Debug, Clone, Deserialize)]
pub struct RolloutLine {
    /// `session_meta`, `event_msg`, `response_item`, `turn_context`, …
    #[serde(default, rename = "type")]
    pub line_type: Option<String>,
    /// The payload; its `type` says which event or item it is.
    #[serde(default)]
    pub payload: Value,
}

/// Payload of an `event_msg` of type `token_count`.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenCountPayload {
    /// Null when a stream failed after it started.
    #[serde(default)]
    pub info: Option<TokenCountInfo>,
}

/// `info` of a `token_count` event: per-thread cumulative usage.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenCountInfo {
    /// The thread's running total, kept as written.
    #[serde(default)]
    pub total_token_usage: Option<Value>,
    /// The usage of the latest model response, kept as written.
    #[serde(default)]
    pub last_token_usage: Option<Value>,
}
