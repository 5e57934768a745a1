//! The typed payloads of Codex app-server methods: [`Notification`] and
//! [`ServerRequest`], one row per method, and what agentrace reads of a
//! response's `result` ([`ResponseResult`]).

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{
    lenient, lenient_field, non_empty, present, strict, DeltaParams, ErrorParams, IdOnly,
    ItemParams, MaybeText, NamesThread, NoticeParams, SettingsUpdatedParams, StatusChangedParams,
    TerminalInteractionParams, Thread, ThreadRef, ThreadStartedParams, TokenUsageParams,
    TurnParams,
};
use serde::de::IgnoredAny;

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

            /// [`Self::decode`] of params met in a walk of their frame
            /// (not null): the params read from `deserializer`. Params of
            /// another shape are an error here, also for a method whose
            /// `decode` reads them leniently (the caller reads the frame as
            /// written instead).
            pub fn read<'de, D: serde::Deserializer<'de>>(method: &str, deserializer: D) -> Result<Self, D::Error> {
                Ok(match method {
                    $($method => $name::$variant(<$params as Deserialize>::deserialize(deserializer)?),)*
                    _ => $name::Unknown {
                        method: method.to_owned(),
                        params: Some(<Box<RawValue> as Deserialize>::deserialize(deserializer)?),
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
        /// A thread's settings changed (a `turn/start` overrode its model).
        ThreadSettingsUpdated(SettingsUpdatedParams, lenient) = "thread/settings/updated",
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
            | N::ThreadSettingsUpdated(_)
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
    /// Whether the entry has `turns` (with an id, a listed thread's mark).
    #[serde(default, rename = "turns", deserialize_with = "present")]
    has_turns: bool,
    /// Whether the entry has `source` (a listed thread's other mark).
    #[serde(default, rename = "source", deserialize_with = "present")]
    has_source: bool,
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

    /// True for an entry of a `data` list that is a thread object rather
    /// than a turn or an item: one with an id and `turns`, or a `source`.
    fn marks_a_thread(&self) -> bool {
        self.id.is_some() && self.has_turns || self.has_source
    }
}

/// The members of a response's `result` agentrace reads, borrowed from it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResultMembers<'a> {
    #[serde(default, borrow)]
    thread: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    model: bool,
    #[serde(default, deserialize_with = "lenient_field")]
    service_tier: Option<String>,
    #[serde(default, borrow)]
    data: Entries<'a>,
    #[serde(default, borrow)]
    turns: Entries<'a>,
}

/// The entries of a list member, each as written, taken in the one walk
/// of the `result` (a `thread/turns/list` answer is most of a session's
/// bytes; the list was walked once for the member, then again for its
/// entries). Any other value, `null` included, holds none.
#[derive(Debug, Default)]
struct Entries<'a>(Vec<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Entries<'a>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("any JSON value")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut list: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(list.size_hint().unwrap_or(0));
                while let Some(entry) = list.next_element::<&'de RawValue>()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Entries::default())
            }

            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Entries::default())
            }

            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Entries::default())
            }

            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Entries::default())
            }

            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Entries::default())
            }

            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Entries::default())
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Entries::default())
            }
        }

        deserializer.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// What agentrace reads of a response's `result` (thread objects and
/// read-back turns), whatever the request was; anything of another shape
/// reads as absent. Each member is walked once: a `thread/read` answer with
/// its turns was walked five times when each question parsed it anew, and
/// answers are the largest frames of a session.
#[derive(Debug, Default)]
pub struct ResponseResult {
    /// `result.thread`, when it is a thread object (thread/start,
    /// thread/resume, thread/fork, thread/read), its turns read as heads.
    pub thread: Option<Thread<TurnHead>>,
    /// Whether `model` is there: thread/start, thread/resume and thread/fork
    /// answer with the thread *and* its settings; thread/read does not.
    pub model: bool,
    /// The service tier of those settings (`flex`, `priority`; none for the
    /// default), as the server sends it to the model's API.
    pub service_tier: Option<String>,
    /// The thread objects of `result.data` (a `thread/list` answer, or a
    /// list whose entries carry a thread's `source` or `turns`).
    pub listed_threads: Vec<Thread<TurnHead>>,
    /// The turns read back besides the thread's own (`thread.turns` of a
    /// thread of another shape, `data`, `turns`), in that order.
    read_back: Vec<TurnHead>,
}

/// The entries of a list member that read as turn heads.
fn heads(list: Entries<'_>) -> impl Iterator<Item = TurnHead> + '_ {
    list.0
        .into_iter()
        .filter_map(|entry| serde_json::from_str::<TurnHead>(entry.get()).ok())
}

/// A `result` of the usual shapes, typed in one walk: a thread object (or
/// none), and lists of turns that are no threads. [`ResponseResult::of`]
/// takes it when it reads so, and walks the result member by member
/// otherwise (a `thread/turns/list` answer, most of a session's bytes, was
/// walked once for its entries and again for each entry's head).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypedMembers {
    #[serde(default)]
    thread: Option<Thread<TurnHead>>,
    #[serde(default, deserialize_with = "present")]
    model: bool,
    #[serde(default, deserialize_with = "lenient_field")]
    service_tier: Option<String>,
    #[serde(default)]
    data: Option<Heads>,
    #[serde(default)]
    turns: Option<Heads>,
}

/// A list's entries read as turn heads where they are met; an entry that
/// is no object nor list (a `thread/loaded/list` answer lists thread ids)
/// is passed over, as [`ResponseResult::of`] passes over what does not read
/// as a head. An object or list that does not read as one fails the read
/// (the result is then read member by member, where it is passed over).
#[derive(Debug, Default)]
struct Heads(Vec<TurnHead>);

impl<'de> Deserialize<'de> for Heads {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;

        impl<'de> serde::de::Visitor<'de> for ListVisitor {
            type Value = Heads;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a list")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut list: A) -> Result<Heads, A::Error> {
                let mut heads = Vec::with_capacity(list.size_hint().unwrap_or(0));
                while let Some(entry) = list.next_element::<HeadEntry>()? {
                    heads.extend(entry.0);
                }
                Ok(Heads(heads))
            }
        }

        deserializer.deserialize_seq(ListVisitor)
    }
}

/// One entry of [`Heads`]: a head, or `None` for a scalar passed over.
struct HeadEntry(Option<TurnHead>);

impl<'de> Deserialize<'de> for HeadEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};

        struct EntryVisitor;

        impl<'de> serde::de::Visitor<'de> for EntryVisitor {
            type Value = HeadEntry;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("any JSON value")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<HeadEntry, A::Error> {
                TurnHead::deserialize(MapAccessDeserializer::new(map)).map(|head| HeadEntry(Some(head)))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, list: A) -> Result<HeadEntry, A::Error> {
                TurnHead::deserialize(SeqAccessDeserializer::new(list)).map(|head| HeadEntry(Some(head)))
            }

            fn visit_bool<E>(self, _: bool) -> Result<HeadEntry, E> {
                Ok(HeadEntry(None))
            }

            fn visit_i64<E>(self, _: i64) -> Result<HeadEntry, E> {
                Ok(HeadEntry(None))
            }

            fn visit_u64<E>(self, _: u64) -> Result<HeadEntry, E> {
                Ok(HeadEntry(None))
            }

            fn visit_f64<E>(self, _: f64) -> Result<HeadEntry, E> {
                Ok(HeadEntry(None))
            }

            fn visit_str<E>(self, _: &str) -> Result<HeadEntry, E> {
                Ok(HeadEntry(None))
            }

            fn visit_unit<E>(self) -> Result<HeadEntry, E> {
                Ok(HeadEntry(None))
            }
        }

        deserializer.deserialize_any(EntryVisitor)
    }
}

/// A response's `result` of the usual shapes, read where it is met (in
/// its frame's walk: [`crate::codex::Frame`]`<ReadResult>`). Another shape
/// fails to read, and a result read so may still need reading as written
/// ([`ReadResult::read`]).
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct ReadResult(TypedMembers);

impl ReadResult {
    /// What the result says, as [`ResponseResult::of`] reads it; `None`
    /// when a list entry is a thread, which is read whole from the result
    /// as written.
    pub fn read(self) -> Option<ResponseResult> {
        let ReadResult(typed) = self;
        let data = typed.data.unwrap_or_default().0;
        if data.iter().any(TurnHead::marks_a_thread) {
            return None;
        }
        let mut read_back = data;
        read_back.extend(typed.turns.unwrap_or_default().0);
        Some(ResponseResult {
            thread: typed.thread,
            model: typed.model,
            service_tier: typed.service_tier,
            listed_threads: Vec::new(),
            read_back,
        })
    }
}

impl ResponseResult {
    /// Reads a `result` as written; one of another shape says nothing.
    pub fn of(result: &RawValue) -> ResponseResult {
        // The one walk answers as the member-by-member one would when no
        // list entry is a thread (a listed thread is read whole, from its
        // entry) and every member has the shape typed; else the result is
        // read member by member, what each shape is read as decided there.
        serde_json::from_str::<ReadResult>(result.get())
            .ok()
            .and_then(ReadResult::read)
            .unwrap_or_else(|| Self::member_by_member(result))
    }

    /// [`ResponseResult::of`] for a result of any shape, without the one
    /// walk first: for a result that walk already gave up on
    /// ([`ReadResult::read`] said `None`).
    pub fn member_by_member(result: &RawValue) -> ResponseResult {
        let members: ResultMembers<'_> = serde_json::from_str(result.get()).unwrap_or_default();
        let mut read_back = Vec::new();
        let thread = members.thread.and_then(|raw| {
            match serde_json::from_str::<Thread<TurnHead>>(raw.get()) {
                Ok(thread) => Some(thread),
                Err(_) => {
                    // Not a thread object, yet its turns are still read back.
                    #[derive(Default, Deserialize)]
                    struct Turns<'b> {
                        #[serde(default, borrow)]
                        turns: Entries<'b>,
                    }
                    let turns = serde_json::from_str::<Turns<'_>>(raw.get()).unwrap_or_default().turns;
                    read_back.extend(heads(turns));
                    None
                }
            }
        });
        let mut listed_threads = Vec::new();
        for entry in members.data.0 {
            let Ok(head) = serde_json::from_str::<TurnHead>(entry.get()) else {
                continue;
            };
            if head.marks_a_thread() {
                listed_threads.extend(serde_json::from_str::<Thread<TurnHead>>(entry.get()).ok());
            }
            read_back.push(head);
        }
        read_back.extend(heads(members.turns));
        ResponseResult {
            thread,
            model: members.model,
            service_tier: members.service_tier,
            listed_threads,
            read_back,
        }
    }

    /// The turns the answer reads back (`thread.turns`, `data`, `turns`).
    pub fn read_back_turns(&self) -> impl Iterator<Item = &TurnHead> {
        self.thread
            .iter()
            .flat_map(|thread| &thread.turns)
            .chain(&self.read_back)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `result` of the repo's Codex app-server captures (0.169 and
    /// 0.171), with the read taken ("typed" in one walk or not).
    fn captured_results() -> Vec<Box<RawValue>> {
        #[derive(Deserialize)]
        struct Answer {
            result: Option<Box<RawValue>>,
        }
        let mut results: Vec<Box<RawValue>> = super::super::capture_lines()
            .iter()
            .filter_map(|line| serde_json::from_str::<Answer>(line).ok())
            .filter_map(|answer| answer.result)
            .collect();
        // Lists of other entries: scalars passed over, a list read as a
        // head by position, entries that read as no head.
        results.extend(
            [
                r#"{"data":["a",1,-2,null,true,2.5,{"id":"b","status":"interrupted"}]}"#,
                r#"{"data":[["x","interrupted"]],"turns":[{"id":"t","status":"interrupted"},"u"]}"#,
                r#"{"data":[[1,2,3,4,5,6,7,8]],"turns":[[]]}"#,
                r#"{"data":[{"id":{"x":1},"completedAt":null}],"turns":null}"#,
                r#"{"data":[],"turns":[{"status":"interrupted","turns":[]}]}"#,
            ]
            .map(|text| RawValue::from_string(text.to_owned()).unwrap_or_else(|e| panic!("{e}"))),
        );
        results
    }

    #[test]
    fn a_result_read_in_one_walk_reads_as_it_does_member_by_member() {
        let results = captured_results();
        let typed = results
            .iter()
            .filter(|result| {
                serde_json::from_str::<ReadResult>(result.get()).is_ok_and(|read| read.read().is_some())
            })
            .count();
        // Both reads are taken by the captures' answers: the test compares
        // something either way.
        assert!(typed > 100 && typed < results.len(), "{typed} of {} typed", results.len());
        for result in &results {
            assert_eq!(
                format!("{:?}", ResponseResult::of(result)),
                format!("{:?}", ResponseResult::member_by_member(result)),
                "{}",
                result.get()
            );
        }
    }
}
