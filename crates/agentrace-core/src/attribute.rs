//! The contract between the recorder and an attributor: the line it is
//! given ([`InputLine`], with the part of a multi-file source it comes from,
//! [`SourcePart`]), the events it hands back before they are numbered
//! ([`Emitted`]) and the [`Attributor`] trait itself. It owns only these
//! types; it must not know any source's format nor number, redact or fold
//! an envelope (the recorder does), so the recorder and every attributor
//! can depend on it without depending on each other.


use crate::model::{Actor, Direction, Envelope, Event, Timestamp};

/// One line of input, stamped by the shell.
#[derive(Debug, Clone, Copy)]
pub struct InputLine<'a> {
    /// The line's bytes, without its newline (a trailing `\r` is tolerated).
    pub bytes: &'a [u8],
    /// 1-based line number in the input.
    pub line_number: u64,
    /// When the shell read it (used when the frame carries no time).
    pub observed_at: Timestamp,
    /// Which way it went, on a two-way connection.
    pub direction: Option<Direction>,
    /// The full length when the shell cut an over-long line short.
    pub truncated_from: Option<u64>,
}

impl<'a> InputLine<'a> {
    /// The line a recorded envelope was made from, for an attributor that
    /// relearns a run ([`Attributor::prime`]); `None` for an envelope with
    /// no frame (a derived event).
    pub fn recorded(envelope: &'a Envelope) -> Option<Self> {
        Some(Self {
            bytes: envelope.raw.as_ref()?.get().as_bytes(),
            line_number: 0,
            observed_at: envelope.timestamp,
            direction: envelope.direction,
            truncated_from: None,
        })
    }
}

/// An attributed event before it gets its sequence number.
#[derive(Debug)]
pub struct Emitted {
    /// Envelope time.
    pub timestamp: Timestamp,
    /// Which way the frame went.
    pub direction: Option<Direction>,
    /// Who produced it.
    pub actor: Actor,
    /// What happened.
    pub event: Event,
    /// The frame as read (none on derived events, nor on a line's frame
    /// left where it is: `line_frame`).
    pub raw: Option<crate::model::RawFrame>,
    /// The frame is the line this event was made of, not copied into
    /// `raw`: the attributor was told the caller references lines where
    /// they are ([`Attributor::reference_frames`]), or its own parse
    /// checked the line whole and it leaves the copy to the caller (the
    /// recorder copies it, on the thread that numbers events when the
    /// attribution is lent).
    pub line_frame: bool,
}

/// Which part of a source spread over several files a line comes from
/// (Claude transcripts: the session file, a subagent's file, its metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourcePart {
    /// The one stream, or a session's main file.
    Main,
    /// A subagent's own transcript (`agent-<id>.jsonl`).
    AgentFile {
        /// The agent id its file name gives.
        agent_id: String,
    },
    /// The n-th file of a source spread over several files (Codex rollouts:
    /// the root's file is 0); a file's first `session_meta` names its thread.
    File {
        /// File number, in feeding order.
        number: u32,
    },
    /// A subagent's metadata document (`agent-<id>.meta.json`), fed whole as
    /// one line.
    AgentMeta {
        /// The agent id its file name gives.
        agent_id: String,
    },
}

/// A source's attribution: lines in, attributed events out.
pub trait Attributor: Send {
    /// Handles one input line.
    fn push(&mut self, line: &InputLine<'_>) -> Vec<Emitted>;
    /// The input ended.
    fn finish(&mut self) -> Vec<Emitted>;
    /// Handles one line of a named part of a multi-file source; sources of
    /// one stream ignore the part.
    fn push_part(&mut self, part: &SourcePart, line: &InputLine<'_>) -> Vec<Emitted> {
        let _ = part;
        self.push(line)
    }
    /// Relearns what an envelope of an earlier session of the same run
    /// taught, so a resumed recorder attributes new input the same way (see
    /// [`Recorder::resume`](crate::recorder::Recorder::resume)). Sources
    /// that cannot be resumed ignore it.
    fn prime(&mut self, envelope: &Envelope) {
        let _ = envelope;
    }
    /// From now on, emits no frames (`raw: None`): the caller reads only the
    /// run state, so the exact text of each line need not be checked and
    /// copied. Events and state are unchanged. Sources that always keep
    /// frames ignore it.
    fn drop_frames(&mut self) {}
    /// From now on, the caller reads only tokens, models, the agent tree
    /// and labels
    /// ([`Recorder::for_usage`](crate::recorder::Recorder::for_usage)): a
    /// line whose record type carries none of them may be passed over
    /// undecoded, so events of other kinds can be missing. Sources that
    /// read every line ignore it.
    fn usage_only(&mut self) {}
    /// From now on, a line's own frame is not copied into `raw` but marked
    /// [`Emitted::line_frame`]: the caller references each line where it
    /// is
    /// ([`Recorder::push_referenced`](crate::recorder::Recorder::push_referenced)),
    /// so the text need not be checked and copied a second time. Events and
    /// state are unchanged. Sources that always copy frames ignore it.
    fn reference_frames(&mut self) {}
    /// What it has learnt, as the JSON a later process restores it from
    /// ([`Recorder::saved`](crate::recorder::Recorder::saved)); `None` for a
    /// source whose reading is not kept so.
    fn saved(&self) -> Option<Result<Box<serde_json::value::RawValue>, serde_json::Error>> {
        None
    }
}
