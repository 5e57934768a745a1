//! The run log's output contract (format v2): envelopes, actors and events.
//! These types are what we write and what every surface reads; they change
//! when we decide, never because upstream did.
//!
//! # Run log format v2
//!
//! A run log is JSON Lines, one [`Envelope`] per line, append-only:
//!
//! ```json
//! {"version":2,"timestamp":"2026-11-29T23:03:28.475Z","sequence":4,"runId":"run-…",
//!  "actor":{"threadId":"01a2…","role":"root","label":"Main","depth":0,"confidence":"provider"},
//!  "event":{"type":"thread_started","threadId":"01a2…"},"raw":{…the frame as read…}}
//! ```
//!
//! - `sequence` runs 1, 2, … without gaps; a restarted writer continues it.
//! - Every input line is kept in exactly one envelope's `raw`, in input order
//!   (an undecodable line as a JSON string). Derived envelopes (lifecycle
//!   events, corrections, the terminal `done`/`failed`/`interrupted`) have no
//!   `raw`. An imported run keeps no copy of its frames: each envelope that
//!   would hold one names where it is in its source instead (`rawRef`, see
//!   [`RawRef`]), and readers that show frames resolve it.
//! - `direction` says which way a frame went on a driven or tapped connection
//!   (`toServer` / `fromServer`); it is absent for one-way input.
//! - On disk, an imported run's lines are the leaner v3 line (no `runId` or
//!   `version`, actors and `rawRef` paths by index; see the store's `lean`
//!   module), which the store's reader expands back to these envelopes:
//!   every reader sees v2.
//!
//! ## Late links and the `actor_resolved` correction
//!
//! A Codex child thread often speaks before anything links it to its
//! parent (its first frame is a status change; the spawn item that names it
//! completes later). Such a frame is written at once with the actor agentrace
//! knows then: the provider-stated `threadId`, `role: "unknown"`, reason
//! `thread not in registry`. When a link (or a better label) arrives, the
//! writer appends an `actor_resolved` event `{threadId, actor}`.
//!
//! **Readers apply corrections**: the final actor of every envelope whose
//! `actor.threadId` equals a resolved thread id is the `actor` of the *last*
//! `actor_resolved` event for that thread in the log (earlier and later
//! envelopes alike). Nothing is rewritten in place and nothing is held back,
//! so a live reader sees every frame at once and the log stays append-only.
//! `agentrace events` prints envelopes with corrections applied.
//!
//! ## Legacy lines
//!
//! Lines of the form `{timestamp, event}` (no `version`) are read as
//! envelopes with `actor.role: "unknown"`, reason `legacy log: ownership
//! unavailable`, and a sequence taken from their line number.
//!
//! The lists of event types and of members may expand over time; readers keep
//! an unknown `event.type` as it is ([`EventBody::Foreign`]).

use std::fmt;

use serde::{Deserialize, Serialize};

pub use crate::raw_frame::RawFrame;
use serde_json::Value;

/// The log format version written by this build.
pub const LOG_VERSION: u32 = 2;

/// The facts this build's events carry (`run_started.eventFacts`): 1 since
/// `tool_use.processId`, `tool_result.receiverThreadIds`,
/// `turn_completed.lastMessage`, `response.unfinishedTurnIds`,
/// `notice.itemId`, `item_started.description` and `item_completed`'s
/// `status`, `activityKind` and `agentThreadId`.
pub const EVENT_FACTS: u32 = 1;

macro_rules! id_newtype {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(value.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self(value)
            }
        }
    };
}

id_newtype!(
    /// A Codex thread id, a Claude session id or subagent id.
    ThreadId
);
id_newtype!(
    /// A turn id (Codex turn, Claude message round).
    TurnId
);
id_newtype!(
    /// An item id; unique only within its thread.
    ItemId
);
id_newtype!(
    /// A run id (`run-<ulid>` or given by the user).
    RunId
);

/// A point in time, Unix milliseconds; written as RFC 3339 with milliseconds
/// in UTC (`2026-11-29T23:03:28.475Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// From Unix milliseconds.
    pub fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    /// From a hook logger's `t`: Unix seconds (Python's loggers) or
    /// milliseconds (Node's), told apart by size; `None` when it is no
    /// time (not finite, negative, past the year 33,000).
    pub fn from_logger_time(seconds_or_millis: f64) -> Option<Self> {
        let millis = if seconds_or_millis < 1e11 { seconds_or_millis * 1000.0 } else { seconds_or_millis };
        (millis.is_finite() && (0.0..1e15).contains(&millis)).then_some(Self(millis as i64))
    }

    /// Unix milliseconds.
    pub fn millis(self) -> i64 {
        self.0
    }

    /// Parses RFC 3339 (any offset).
    pub fn parse(text: &str) -> Option<Self> {
        chrono::DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|t| Self(t.timestamp_millis()))
    }
}

/// Milliseconds in a (UTC) day: the one day length of the core (`days`
/// and the price book take it from here, beside the time it divides).
pub const DAY_MS: i64 = 86_400_000;

impl Timestamp {
    /// The time as RFC 3339 (`2026-11-29T23:03:28.475Z`) in `buffer`, for a
    /// year from 0 to 9999; `None` for any other. Worked out by hand
    /// (days to a civil date, digits into a buffer): every stored envelope
    /// has a time, snapshots hold thousands, and `write!` with seven
    /// formatted numbers was most of the cost of writing one.
    fn rfc3339(self, buffer: &mut [u8; 24]) -> Option<&str> {
        let days = self.0.div_euclid(DAY_MS);
        let in_day = self.0.rem_euclid(DAY_MS);
        // Howard Hinnant's `civil_from_days`, in the proleptic Gregorian
        // calendar chrono uses.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let day_of_era = z.rem_euclid(146_097);
        let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let shifted_month = (5 * day_of_year + 2) / 153;
        let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
        let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
        let year = year_of_era + era * 400 + i64::from(month <= 2);
        if !(0..=9999).contains(&year) {
            return None;
        }
        let digits = |out: &mut [u8], mut value: i64| {
            for slot in out.iter_mut().rev() {
                *slot = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        digits(&mut buffer[0..4], year);
        buffer[4] = b'-';
        digits(&mut buffer[5..7], month);
        buffer[7] = b'-';
        digits(&mut buffer[8..10], day);
        buffer[10] = b'T';
        digits(&mut buffer[11..13], in_day / 3_600_000);
        buffer[13] = b':';
        digits(&mut buffer[14..16], in_day / 60_000 % 60);
        buffer[16] = b':';
        digits(&mut buffer[17..19], in_day / 1000 % 60);
        buffer[19] = b'.';
        digits(&mut buffer[20..23], in_day % 1000);
        buffer[23] = b'Z';
        std::str::from_utf8(buffer).ok()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(text) = self.rfc3339(&mut [0; 24]) {
            return f.write_str(text);
        }
        match chrono::DateTime::from_timestamp_millis(self.0) {
            Some(t) => write!(f, "{}", t.format("%Y-%m-%dT%H:%M:%S%.3fZ")),
            None => write!(f, "{}", self.0),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.rfc3339(&mut [0; 24]) {
            Some(text) => serializer.serialize_str(text),
            None => serializer.collect_str(self),
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match &value {
            Value::String(text) => Timestamp::parse(text)
                .ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 time: {text}"))),
            Value::Number(number) => number
                .as_i64()
                .map(Timestamp)
                .ok_or_else(|| serde::de::Error::custom("timestamp out of range")),
            Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => Err(serde::de::Error::custom("expected an RFC 3339 string")),
        }
    }
}

/// The agent runtime a run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI Codex.
    Codex,
    /// Anthropic Claude Code / Agent SDK.
    Claude,
    /// Not known (legacy logs).
    Unknown,
}

impl Provider {
    /// Its name in the log: `codex`, `claude`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Codex => "codex",
            Self::Claude => "claude",
            Self::Unknown => "unknown",
        }
    }
}

/// Where a run was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The stdout of `codex app-server`, ingested after the fact.
    CodexAppServer,
    /// A `codex app-server` driven by `agentrace run codex` (both directions).
    CodexRun,
    /// A `codex app-server` connection seen through `agentrace tap` (both directions).
    CodexTap,
    /// The stdout of `codex exec --json` (recorded by `agentrace run codex
    /// --exec`, or ingested), joined with the rollouts of its threads.
    CodexExec,
    /// The stdout of `claude -p --output-format stream-json --verbose` (piped
    /// or recorded by `agentrace run claude`), or the messages the Agent SDK
    /// yields.
    ClaudeStream,
    /// Codex rollout files (`$CODEX_HOME/sessions/…/rollout-*.jsonl`), a
    /// root's and its children's.
    CodexRollout,
    /// Claude Code transcripts (`~/.claude/projects/<slug>/<session>.jsonl`
    /// and the subagent files beside it).
    ClaudeTranscript,
    /// Claude Code hook inputs (`agentrace hook`).
    ClaudeHook,
    /// A legacy `{timestamp, event}` log.
    Legacy,
}

/// Why a session ended (`session_ended.reason`). The list may expand
/// over time; a reader of an unknown reason reads `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionEndReason {
    /// The provider process agentrace ran exited (`run codex`, `run claude`).
    Exit,
    /// agentrace closed the session itself (Ctrl-C, a timeout, an error).
    Closed,
    /// The connection `agentrace tap` sat on closed.
    TapClosed,
    /// The end of an ingested input (`ingest`).
    EndOfInput,
    /// An import read a finished session's files to their end.
    ImportFinished,
    /// A watched session's files stopped growing for the idle limit
    /// (`watch`, `top`, `serve --watch`) while something in it was live.
    Idle,
    /// A reason this build does not know (a newer writer).
    #[serde(other)]
    Other,
}

impl SessionEndReason {
    /// The name, as the log spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEndReason::Exit => "exit",
            SessionEndReason::Closed => "closed",
            SessionEndReason::TapClosed => "tapClosed",
            SessionEndReason::EndOfInput => "endOfInput",
            SessionEndReason::ImportFinished => "importFinished",
            SessionEndReason::Idle => "idle",
            SessionEndReason::Other => "other",
        }
    }
}

/// Which way a frame went on a connection we sit on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Direction {
    /// Client → server.
    ToServer,
    /// Server → client.
    FromServer,
}

/// Who an actor is in the agent tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The agent the user started.
    Root,
    /// An agent spawned by another agent, at any depth.
    Helper,
    /// Not known.
    Unknown,
}

impl Role {
    /// The name, as the JSON contract spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Root => "root",
            Role::Helper => "helper",
            Role::Unknown => "unknown",
        }
    }
}

/// How the owner of an event is known (§3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// The provider stated the owner on this very frame.
    Provider,
    /// Inferred from other frames.
    Derived,
    /// No evidence.
    Unknown,
}

impl Confidence {
    /// The name, as the JSON contract spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Provider => "provider",
            Confidence::Derived => "derived",
            Confidence::Unknown => "unknown",
        }
    }
}

/// Who produced an event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Actor {
    /// The owning thread, or null when nothing names one.
    pub thread_id: Option<ThreadId>,
    /// Root, helper, or unknown.
    pub role: Role,
    /// The spawner; always set for a helper.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_thread_id: Option<ThreadId>,
    /// Display label: `Main`, `/root/child_a`, `Ash [explorer]`, `Helper 2`, `Unknown actor`.
    pub label: String,
    /// Depth in the tree (root 0), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// How the owner is known.
    pub confidence: Confidence,
    /// Why the role is unknown, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The label of Claude Code's startup "Warmup" agents, which run outside
/// the agent tree.
pub const WARMUP_LABEL: &str = "Warmup agent";

/// Label of an actor nobody can name.
pub const UNKNOWN_LABEL: &str = "Unknown actor";

impl Actor {
    /// An actor with no evidence at all.
    pub fn unknown(reason: impl Into<String>) -> Self {
        Self {
            thread_id: None,
            role: Role::Unknown,
            parent_thread_id: None,
            label: UNKNOWN_LABEL.to_owned(),
            depth: None,
            confidence: Confidence::Unknown,
            reason: Some(reason.into()),
        }
    }

    /// True when the role is not known (the thread may still be named).
    pub fn is_unknown(&self) -> bool {
        self.role == Role::Unknown
    }
}

/// Token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Input tokens, cached included.
    pub input_tokens: u64,
    /// Cached input tokens (cache reads).
    pub cached_input_tokens: u64,
    /// Input tokens written to the prompt cache (Claude cache creation; Codex
    /// `cacheWriteInputTokens`); included in `inputTokens`.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// The part of `cacheCreationInputTokens` kept in the cache for an hour
    /// (Claude's `cache_creation.ephemeral_1h_input_tokens`): it costs more
    /// than a five-minute write. Absent when none, so a record without it
    /// reads as before.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_1h_input_tokens: u64,
    /// Web searches the requests ran (Claude's
    /// `server_tool_use.web_search_requests`): no tokens, but billed per
    /// search. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub web_search_requests: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Reasoning output tokens.
    pub reasoning_output_tokens: u64,
    /// All tokens.
    pub total_tokens: u64,
}

/// Why an agent's token figure misses tokens (its cost is then a floor).
/// This list may expand over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncompleteReason {
    /// A response's final usage record never came (only the streaming
    /// snapshot did); the subagent's hand-back gave a floor where it could.
    MissingFinalUsage,
    /// The agent worked, but no source reports its usage (e.g. a background
    /// subagent in stream-json).
    NoUsageReported,
    /// A line of the source or the log could not be read (a torn last
    /// line): its tokens, if any, are missing.
    UnreadableLine,
    /// A live total included history inherited from the parent: only the
    /// child's own requests are counted.
    InheritedHistory,
    /// A reason written by a newer version.
    #[serde(other)]
    Other,
}

impl IncompleteReason {
    /// The reason as `--json` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            IncompleteReason::MissingFinalUsage => "missingFinalUsage",
            IncompleteReason::NoUsageReported => "noUsageReported",
            IncompleteReason::UnreadableLine => "unreadableLine",
            IncompleteReason::InheritedHistory => "inheritedHistory",
            IncompleteReason::Other => "other",
        }
    }
}

/// For counters a record leaves out when nothing was counted.
pub(crate) fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl TokenUsage {
    /// The cache writes by lifetime: (kept five minutes, kept an hour), the
    /// hour's part held within the writes.
    pub fn writes_by_lifetime(&self) -> (u64, u64) {
        let hour = self.cache_creation_1h_input_tokens.min(self.cache_creation_input_tokens);
        (self.cache_creation_input_tokens - hour, hour)
    }

    /// Field-wise sum.
    pub fn add(&self, other: &TokenUsage) -> TokenUsage {
        TokenUsage {
            input_tokens: self.input_tokens + other.input_tokens,
            cached_input_tokens: self.cached_input_tokens + other.cached_input_tokens,
            cache_creation_input_tokens: self.cache_creation_input_tokens
                + other.cache_creation_input_tokens,
            cache_creation_1h_input_tokens: self.cache_creation_1h_input_tokens
                + other.cache_creation_1h_input_tokens,
            web_search_requests: self.web_search_requests + other.web_search_requests,
            output_tokens: self.output_tokens + other.output_tokens,
            reasoning_output_tokens: self.reasoning_output_tokens + other.reasoning_output_tokens,
            total_tokens: self.total_tokens + other.total_tokens,
        }
    }

    /// Field-wise difference, for taking back a part that was added
    /// (never below zero).
    pub fn minus(&self, part: &TokenUsage) -> TokenUsage {
        TokenUsage {
            input_tokens: self.input_tokens.saturating_sub(part.input_tokens),
            cached_input_tokens: self.cached_input_tokens.saturating_sub(part.cached_input_tokens),
            cache_creation_input_tokens: self
                .cache_creation_input_tokens
                .saturating_sub(part.cache_creation_input_tokens),
            cache_creation_1h_input_tokens: self
                .cache_creation_1h_input_tokens
                .saturating_sub(part.cache_creation_1h_input_tokens),
            web_search_requests: self.web_search_requests.saturating_sub(part.web_search_requests),
            output_tokens: self.output_tokens.saturating_sub(part.output_tokens),
            reasoning_output_tokens: self
                .reasoning_output_tokens
                .saturating_sub(part.reasoning_output_tokens),
            total_tokens: self.total_tokens.saturating_sub(part.total_tokens),
        }
    }
}

/// Status of a run (§1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Not ended yet (or never seen to end).
    Running,
    /// The root's last turn completed.
    Done,
    /// The root's last turn failed.
    Failed,
    /// The root's last turn was interrupted.
    Interrupted,
}

impl RunStatus {
    /// The name, as the JSON contract spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// Status of one agent in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    /// Known, no turn seen yet.
    Pending,
    /// A turn is running.
    Running,
    /// The last turn completed.
    Completed,
    /// The last turn failed.
    Failed,
    /// The last turn was interrupted (or the agent was closed while running).
    Interrupted,
    /// The session ended while its turn was open (`session_ended`): how
    /// that turn would have ended is unknown, as its child-work record says
    /// (`ended unknown`).
    Unknown,
}

impl AgentStatus {
    /// The name, as the JSON contract spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Pending => "pending",
            AgentStatus::Running => "running",
            AgentStatus::Completed => "completed",
            AgentStatus::Failed => "failed",
            AgentStatus::Interrupted => "interrupted",
            AgentStatus::Unknown => "unknown",
        }
    }
}

impl AgentStatus {
    /// True for the statuses that end a turn.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            AgentStatus::Completed | AgentStatus::Failed | AgentStatus::Interrupted
        )
    }
}

/// Warning severity (§8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Suspicious.
    Warning,
    /// The run's answer cannot be trusted.
    Error,
}

/// A warning about a run (§8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Warning {
    /// Stable code, e.g. `link_conflict`.
    pub code: String,
    /// How bad.
    pub severity: Severity,
    /// What happened, for people.
    pub message: String,
    /// The envelope that raised it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_sequence: Option<u64>,
    /// The thread it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<ThreadId>,
}

/// How an agent's final message is known (`finalMessageConfidence` in the
/// agent tree, `resultConfidence` on `agent_completed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinalMessageConfidence {
    /// The agent's own words: its last message, or the provider's statement
    /// of it (a task notification, a `SubagentStop` hook, the run's result).
    #[default]
    Stated,
    /// Taken from the report its spawner received (the root's tool_result
    /// for a Claude `Agent`/`Task` call), because the source carries no text
    /// of the agent itself (Claude stream-json in foreground mode).
    Derived,
}

impl FinalMessageConfidence {
    /// The name, as the JSON contract spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            FinalMessageConfidence::Stated => "stated",
            FinalMessageConfidence::Derived => "derived",
        }
    }

    /// True for [`FinalMessageConfidence::Stated`] (the default, left out
    /// of the log).
    pub fn is_stated(&self) -> bool {
        *self == FinalMessageConfidence::Stated
    }
}

/// A normalized event, tagged by `type`. This list may expand over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    /// The first envelope of a log written by agentrace: what the run is.
    RunStarted {
        /// Provider.
        provider: Provider,
        /// Source.
        source: Source,
        /// The session's working folder, when the reader of its files
        /// found one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// Which facts the log's events carry for the readers that once
        /// took them from `raw` ([`EVENT_FACTS`] when written by this
        /// build). Absent in logs written before: their readers take those
        /// facts from each envelope's `raw`, as the writer of the log did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event_facts: Option<u32>,
        /// The W3C trace context (`traceparent`) the run was started in
        /// (`TRACEPARENT` of `run`, `tap`, `ingest`), so an export made
        /// later joins that trace.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        traceparent: Option<String>,
    },
    /// A user or assistant message.
    Message {
        /// `user` or `assistant`.
        role: String,
        /// `final_answer`, `commentary`, or null.
        phase: Option<String>,
        /// The text.
        text: String,
        /// Item id.
        item_id: Option<ItemId>,
        /// Turn id.
        turn_id: Option<TurnId>,
    },
    /// Model reasoning.
    Reasoning {
        /// Summary text.
        text: String,
        /// Item id.
        item_id: Option<ItemId>,
        /// Turn id.
        turn_id: Option<TurnId>,
    },
    /// A non-tool item started (its content comes on completion).
    ItemStarted {
        /// Provider item type.
        item_type: String,
        /// Item id.
        item_id: Option<ItemId>,
        /// Turn id.
        turn_id: Option<TurnId>,
        /// What the item is about, when the provider says it on its start
        /// (a Claude background task's `description`, else its `command`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// When the item began, where that was before this event (a Codex
        /// command read from its rollout is known to run on only when its
        /// call returns: it began with the call).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_at: Option<Timestamp>,
    },
    /// A non-tool, non-message item completed (e.g. `subAgentActivity`).
    ItemCompleted {
        /// Provider item type.
        item_type: String,
        /// Item id.
        item_id: Option<ItemId>,
        /// Turn id.
        turn_id: Option<TurnId>,
        /// The provider's status of the item (a Claude background task's:
        /// `completed`, `failed`, `stopped`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
        /// What a `subAgentActivity` reports: `started`, `completed`,
        /// `interacted`, `interrupted`, …
        #[serde(default, skip_serializing_if = "Option::is_none")]
        activity_kind: Option<String>,
        /// The child a `subAgentActivity` is about.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_thread_id: Option<ThreadId>,
    },
    /// A piece of streamed text or output.
    Delta {
        /// What streams: `agentMessage`, `commandOutput`, `reasoning`, …
        kind: String,
        /// The text added.
        text: String,
        /// Item id.
        item_id: Option<ItemId>,
        /// Turn id.
        turn_id: Option<TurnId>,
    },
    /// A tool call began.
    ToolUse {
        /// `command`, `file_change`, `mcp`, `web_search`, `agent`, `other`.
        tool_kind: String,
        /// Tool name (`shell`, `apply_patch`, `mcp__server__tool`, `spawnAgent`, …).
        name: String,
        /// Input summary.
        input: String,
        /// Item id.
        item_id: Option<ItemId>,
        /// Turn id.
        turn_id: Option<TurnId>,
        /// The process behind a command (Codex unified exec): such a command
        /// may outlive its call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        process_id: Option<String>,
    },
    /// A tool call ended.
    ToolResult {
        /// As on `tool_use`.
        tool_kind: String,
        /// As on `tool_use`.
        name: String,
        /// Provider status: `completed`, `failed`, `declined`, …
        status: Option<String>,
        /// Exit code of a command.
        exit_code: Option<i64>,
        /// Duration in milliseconds.
        duration_ms: Option<i64>,
        /// Output summary.
        output: String,
        /// Item id.
        item_id: Option<ItemId>,
        /// Turn id.
        turn_id: Option<TurnId>,
        /// The threads a collaboration call concerns (`receiverThreadIds`:
        /// the agents a `closeAgent` closed, a spawn's children, …).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        receiver_thread_ids: Vec<ThreadId>,
    },
    /// A thread's turn began.
    TurnStarted {
        /// Turn id.
        turn_id: TurnId,
        /// The root turn that caused it (Codex children carry the root's).
        root_turn_id: Option<TurnId>,
    },
    /// A thread's turn ended.
    TurnCompleted {
        /// Turn id.
        turn_id: TurnId,
        /// `completed`, `interrupted`, `failed`, …
        status: String,
        /// The provider's error message.
        error: Option<String>,
        /// Duration in milliseconds.
        duration_ms: Option<i64>,
        /// The thread's running token total at the end of the turn.
        usage: Option<TokenUsage>,
        /// The last assistant message (not commentary) among the items the
        /// ending carries (Codex's `summary` view of the turn).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_message: Option<String>,
    },
    /// A thread's running token totals.
    Usage {
        /// Turn id.
        turn_id: Option<TurnId>,
        /// Running total of the thread (children not included).
        total: TokenUsage,
        /// Usage of the latest model response.
        last: Option<TokenUsage>,
        /// The model of that response, when the thread's model does not say
        /// it (usage outside the agent tree, e.g. Claude's warmup agents).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The service tier the provider's record names, if any (prices
        /// depend on it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        service_tier: Option<String>,
        /// Set when the thread's figure is known to miss tokens.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        incomplete: Option<IncompleteReason>,
    },
    /// A thread's status changed.
    Status {
        /// `idle`, `active`, `notLoaded`, `systemError`, …
        status: String,
        /// Waiting for an approval.
        waiting_on_approval: bool,
        /// Waiting for user input.
        waiting_on_user_input: bool,
    },
    /// A thread was started (or announced) by the provider.
    ThreadStarted {
        /// The thread.
        thread_id: ThreadId,
        /// Its working folder, when the provider names it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// The model it runs, when its start names it (Codex
        /// `thread/started`): what its tokens are priced by.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// An agent spawned a child.
    AgentSpawned {
        /// Spawner.
        parent_thread_id: ThreadId,
        /// Child.
        child_thread_id: ThreadId,
        /// The spawn message.
        prompt: Option<String>,
        /// Requested model.
        model: Option<String>,
        /// Requested reasoning effort.
        reasoning_effort: Option<String>,
        /// What revealed the link: `spawnAgent`, `subAgentActivity`, `threadRead`, …
        via: String,
    },
    /// An agent began waiting for children.
    AgentWaitStarted {
        /// Waiter.
        parent_thread_id: ThreadId,
        /// Children waited on (empty for a V2 mailbox wait).
        child_thread_ids: Vec<ThreadId>,
    },
    /// A child's run ended. A Claude child whose ending carried no text
    /// (2.1.x foreground: `task_updated` comes before the root's tool_result)
    /// gets a second `agent_completed` of the same status when its report
    /// arrives, with `resultConfidence: "derived"`.
    AgentCompleted {
        /// Child.
        thread_id: ThreadId,
        /// Its spawner.
        parent_thread_id: Option<ThreadId>,
        /// Its final message (or error text).
        result: Option<String>,
        /// `completed`, `failed`, `interrupted`.
        status: AgentStatus,
        /// How `result` is known: `derived` when it was taken from what the
        /// spawner received (a Claude `Agent`/`Task` tool_result), not from
        /// the child's own words. Absent means `stated` (also in logs
        /// written before it existed).
        #[serde(default, skip_serializing_if = "FinalMessageConfidence::is_stated")]
        result_confidence: FinalMessageConfidence,
    },
    /// Correction: the final actor of every envelope of `thread_id`.
    ActorResolved {
        /// The thread whose actor is now known better.
        thread_id: ThreadId,
        /// Its actor.
        actor: Actor,
    },
    /// A request the server sent the client (approvals, user input).
    ServerRequest {
        /// JSON-RPC id (server id space).
        request_id: Value,
        /// Method.
        method: String,
        /// Item the request concerns.
        item_id: Option<ItemId>,
        /// Summary (the command to approve, …).
        summary: String,
    },
    /// A request the client sent the server.
    ClientRequest {
        /// JSON-RPC id (client id space).
        request_id: Value,
        /// Method.
        method: String,
    },
    /// A response to a request.
    Response {
        /// JSON-RPC id.
        request_id: Value,
        /// The request's method, when known.
        method: Option<String>,
        /// The error message of an error response.
        error: Option<String>,
        /// Turns the answer reads back as `interrupted` with no completion
        /// time: turns the host lost (a restart cut them).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unfinished_turn_ids: Vec<TurnId>,
        /// The model the answer's thread runs, when the answer started it
        /// (Codex `thread/start`, `thread/resume`, `thread/fork`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The service tier of those settings, when not the default one
        /// (`config.toml`'s `service_tier`, as the API is sent it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        service_tier: Option<String>,
    },
    /// A provider error.
    Error {
        /// Message.
        message: String,
        /// Whether the provider retries (the turn goes on).
        will_retry: Option<bool>,
        /// Provider classification.
        code: Option<String>,
        /// Turn id.
        turn_id: Option<TurnId>,
    },
    /// A known provider notification with no meaning for attribution
    /// (rate limits, deprecation notices, provider warnings, …).
    Notice {
        /// Method.
        method: String,
        /// Message, when it has one.
        message: Option<String>,
        /// The item the notice is about (the command a
        /// `terminalInteraction` wrote to).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        item_id: Option<ItemId>,
    },
    /// A warning raised by agentrace (also kept in run state).
    Warning {
        /// The warning.
        warning: Warning,
    },
    /// The run ended: the root's last turn completed.
    Done {
        /// The root's final answer.
        result: Option<String>,
        /// The thread that produced it.
        source_thread_id: Option<ThreadId>,
        /// Its role.
        source_role: Option<Role>,
        /// Its item.
        source_item_id: Option<ItemId>,
    },
    /// The run ended: the root's last turn failed.
    Failed {
        /// The provider's error.
        error: Option<String>,
        /// The root thread.
        source_thread_id: Option<ThreadId>,
        /// The failed turn.
        turn_id: Option<TurnId>,
    },
    /// The run ended: the root's last turn was interrupted.
    Interrupted {
        /// The provider's error, if any.
        error: Option<String>,
        /// The root thread.
        source_thread_id: Option<ThreadId>,
        /// The interrupted turn.
        turn_id: Option<TurnId>,
    },
    /// A line a forked child's rollout copied from another thread's history:
    /// kept raw, attributed to nobody, counted once (in its own thread).
    Replayed {
        /// The thread whose history it copies.
        of_thread_id: Option<ThreadId>,
        /// The record's type (`response_item/message`, `event_msg/task_started`, …).
        record_type: String,
    },
    /// The model a turn runs (Codex `turn_context`; Claude: the model of an
    /// agent's replies, said when it changes).
    ModelSelected {
        /// Model slug.
        model: String,
        /// Turn id.
        turn_id: Option<TurnId>,
        /// The service tier the thread's requests run on from now, when the
        /// provider says it (Codex `thread/settings/updated`: `flex`,
        /// `priority`, `default` for none): what they are priced at unless
        /// a usage names its own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        service_tier: Option<String>,
    },
    /// Input the live recorder could not keep up with and did not record
    /// (the traffic itself passed through untouched).
    Dropped {
        /// Which way the dropped bytes went.
        direction: Option<Direction>,
        /// How many bytes were not recorded.
        bytes: u64,
    },
    /// The session being recorded ended: the provider exited, the
    /// connection closed, an ingested input or a finished session's files
    /// ended. Child-work records still live settle `unknown` on it (§6 rule
    /// 9). A log may go on after it (a resumed session).
    SessionEnded {
        /// Why the session ended.
        reason: SessionEndReason,
    },
    /// A frame agentrace could not decode, or an unknown method / item type;
    /// kept raw and counted.
    Unknown {
        /// `undecodable` (not JSON, not UTF-8, too long), `notJsonRpc`,
        /// `unknownMethod` or `unknownItemType`.
        kind: String,
        /// Method, when the frame had one.
        method: Option<String>,
        /// Why it is unknown.
        reason: String,
        /// Input line number (1-based).
        line_number: Option<u64>,
        /// The exact bytes, base64, when they were not valid UTF-8 (the
        /// `raw` string is then a lossy copy).
        raw_base64: Option<String>,
        /// The source file an `undecodable` line was read from, named as
        /// a `rawRef` names it: its line number alone did not say which
        /// of a session's files it is in (set by the shell that read the
        /// file; absent for a stream and in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
    },
}

/// `Event::Unknown.kind` of an input line that was not decodable (bad
/// JSON, bad UTF-8, too long); counted as `undecodedLines`.
pub const UNDECODABLE: &str = "undecodable";

impl Event {
    /// The event of an undecodable input line: every source reports it the
    /// same way, so the counts and `rawBase64` mean one thing.
    pub fn undecodable(reason: String, line_number: u64, raw_base64: Option<String>) -> Event {
        Event::Unknown {
            kind: UNDECODABLE.to_owned(),
            method: None,
            reason,
            line_number: Some(line_number),
            raw_base64,
            file: None,
        }
    }

    /// The `type` tag.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::RunStarted { .. } => "run_started",
            Event::Message { .. } => "message",
            Event::Reasoning { .. } => "reasoning",
            Event::ItemStarted { .. } => "item_started",
            Event::ItemCompleted { .. } => "item_completed",
            Event::Delta { .. } => "delta",
            Event::ToolUse { .. } => "tool_use",
            Event::ToolResult { .. } => "tool_result",
            Event::TurnStarted { .. } => "turn_started",
            Event::TurnCompleted { .. } => "turn_completed",
            Event::Usage { .. } => "usage",
            Event::Status { .. } => "status",
            Event::ThreadStarted { .. } => "thread_started",
            Event::AgentSpawned { .. } => "agent_spawned",
            Event::AgentWaitStarted { .. } => "agent_wait_started",
            Event::AgentCompleted { .. } => "agent_completed",
            Event::ActorResolved { .. } => "actor_resolved",
            Event::ServerRequest { .. } => "server_request",
            Event::ClientRequest { .. } => "client_request",
            Event::Response { .. } => "response",
            Event::Error { .. } => "error",
            Event::Notice { .. } => "notice",
            Event::Warning { .. } => "warning",
            Event::Done { .. } => "done",
            Event::Failed { .. } => "failed",
            Event::Interrupted { .. } => "interrupted",
            Event::Dropped { .. } => "dropped",
            Event::SessionEnded { .. } => "session_ended",
            Event::Replayed { .. } => "replayed",
            Event::ModelSelected { .. } => "model_selected",
            Event::Unknown { .. } => "unknown",
        }
    }

    /// Message and tool events: the ones whose owner users ask about, and the
    /// ones `counts.unknownActor` counts.
    pub fn is_message_or_tool(&self) -> bool {
        matches!(
            self,
            Event::Message { .. } | Event::ToolUse { .. } | Event::ToolResult { .. }
        )
    }
}

/// An event as read back: one we know, or a foreign one kept as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EventBody {
    /// A known event type.
    Known(Event),
    /// An event type this build does not know (a newer writer), kept raw.
    Foreign(Value),
}

impl EventBody {
    /// The known event, if it is one.
    pub fn known(&self) -> Option<&Event> {
        match self {
            EventBody::Known(event) => Some(event),
            EventBody::Foreign(_) => None,
        }
    }

    /// The `type` tag.
    pub fn type_name(&self) -> String {
        match self {
            EventBody::Known(event) => event.type_name().to_owned(),
            EventBody::Foreign(value) => value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned(),
        }
    }
}

impl From<Event> for EventBody {
    fn from(event: Event) -> Self {
        EventBody::Known(event)
    }
}

/// One line of the run log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// Always [`LOG_VERSION`] when written by this build.
    pub version: u32,
    /// When the frame was emitted (the provider's time when it gives one,
    /// else when agentrace read it).
    pub timestamp: Timestamp,
    /// 1, 2, … without gaps.
    pub sequence: u64,
    /// The run.
    pub run_id: RunId,
    /// Which way the frame went, on a driven or tapped connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// Who produced it.
    pub actor: Actor,
    /// What happened.
    pub event: EventBody,
    /// The original frame, exactly as read (absent on derived events, and
    /// on an imported frame, which has `raw_ref` instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawFrame>,
    /// Where an imported frame is in its source, in place of `raw`: the
    /// source is the copy (see [`RawRef`]). Live-recorded runs never have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_ref: Option<RawRef>,
    /// Why a `raw_ref` could not be resolved when the envelope was shown
    /// (`raw` is then `null`). Never written to a log: a reader that
    /// resolves references sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_unavailable: Option<RawUnavailable>,
}

impl Envelope {
    /// Whether the run itself wrote this envelope (its start, its
    /// session's end, bytes a recorder fell behind on): no agent's, and no
    /// unplaced agent's either, though its actor is the unknown one. The
    /// viewer wears an `agentrace` badge on these and `events` prints
    /// [`RUN_OWN_LABEL`], by this one rule.
    pub fn is_run_own(&self) -> bool {
        matches!(
            self.event,
            EventBody::Known(Event::RunStarted { .. } | Event::SessionEnded { .. } | Event::Dropped { .. })
        ) && self.actor.is_unknown()
            && self.actor.thread_id.is_none()
    }
}

/// What a reader calls the writer of the run's own envelopes
/// ([`Envelope::is_run_own`]), as the viewer's badge does.
pub const RUN_OWN_LABEL: &str = "agentrace";

/// Where an imported frame lies in the file it was read from: `length`
/// bytes from byte `offset` of `path` (absolute), the line without its line
/// break (a subagent's metadata document: the whole file). `crc32` is the
/// CRC-32 (IEEE) of those bytes, so a source edited in place is told from
/// the one that was read. Resolving it reads those bytes, checks the CRC
/// and decodes them as the recorder did, secrets redacted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawRef {
    /// The source file's absolute path.
    pub path: String,
    /// The line's first byte in the file.
    pub offset: u64,
    /// The line's length in bytes, without its line break.
    pub length: u64,
    /// CRC-32 (IEEE) of the line's bytes.
    pub crc32: u32,
}

/// Why a frame's [`RawRef`] did not resolve. This list may expand over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RawUnavailable {
    /// The source is there but no longer holds that line (shorter, edited).
    #[serde(rename = "source changed")]
    SourceChanged,
    /// The source file is gone (a Claude transcript cleaned up after 30
    /// days, a deleted rollout).
    #[serde(rename = "source missing")]
    SourceMissing,
}

impl PartialEq for Envelope {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version
            && self.timestamp == other.timestamp
            && self.sequence == other.sequence
            && self.run_id == other.run_id
            && self.direction == other.direction
            && self.actor == other.actor
            && self.event == other.event
            && self.raw.as_ref().map(|raw| raw.get()) == other.raw.as_ref().map(|raw| raw.get())
            && self.raw_ref == other.raw_ref
            && self.raw_unavailable == other.raw_unavailable
    }
}

#[cfg(test)]
mod timestamp_tests {
    use super::Timestamp;

    #[test]
    fn a_timestamp_is_written_as_chrono_formats_it() {
        for millis in [
            0,
            1,
            999,
            1_764_457_408_475,
            -1,
            -62_135_596_800_000,
            253_402_300_799_999,
            253_402_300_800_000,
        ] {
            let expected = chrono::DateTime::from_timestamp_millis(millis)
                .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
                .unwrap_or_default();
            assert_eq!(Timestamp(millis).to_string(), expected, "{millis}");
        }
    }

    #[test]
    fn the_hand_written_time_is_chronos_from_before_year_0_to_after_9999() {
        // Year -1 to 10000 in steps that land on every hour, minute and
        // millisecond over the range (leap days and century years included).
        let first = -62_198_755_200_000_i64;
        let last = 253_433_923_200_000_i64;
        let step = 86_400_000 * 29 + 3_600_000 * 7 + 60_000 * 13 + 1000 * 17 + 331;
        let mut millis = first;
        let mut checked = 0;
        while millis <= last {
            let expected = chrono::DateTime::from_timestamp_millis(millis)
                .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
                .unwrap_or_default();
            let written = Timestamp(millis).to_string();
            let serialized = serde_json::to_string(&Timestamp(millis)).unwrap_or_default();
            assert_eq!((written, serialized), (expected.clone(), format!("\"{expected}\"")), "{millis}");
            millis += step;
            checked += 1;
        }
        assert_eq!(checked, 124_678);
    }
}
