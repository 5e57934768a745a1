//! The recorder: input lines in, numbered envelopes out, the run book kept.
//! One recorder serves live input and replay alike; the book it keeps is
//! exactly the fold of the envelopes it returned ([`RunBook::apply`]), so
//! reading the written log back rebuilds it, and the changes each envelope
//! made go to the shell's sinks with the envelopes
//! ([`Recorder::take_changes`]).

// The contract lives in `attribute.rs` so the attributors need not import
// this module (which imports them); re-exported here because callers name
// these types by their old path, `agentrace_core::recorder::*`.
pub use crate::attribute::{Attributor, Emitted, InputLine, SourcePart};
use crate::claude::ClaudeAttributor;
use crate::codex::CodexAttributor;
use crate::model::{
    Actor, Direction, Envelope, Event, EventBody, Provider, RawFrame, RawRef, RunId, Source, Timestamp,
    LOG_VERSION,
};
use crate::book::{Changes, RunBook};
use crate::model::SessionEndReason;
use crate::state::RunState;

/// Input formats the recorder can attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The stdout of `codex app-server` (or both directions with `direction`).
    CodexAppServer,
    /// Claude Code stream-json (stdout of `claude -p --output-format
    /// stream-json --verbose`, or Agent SDK messages).
    ClaudeStream,
    /// Claude Code transcript lines (session and subagent files).
    ClaudeTranscript,
    /// Codex rollout lines (a root's and its children's files).
    CodexRollout,
    /// Claude Code hook inputs.
    ClaudeHook,
    /// The stdout of `codex exec --json`, then (as numbered files) the
    /// rollouts of its session.
    CodexExec,
}

impl Format {
    /// The provider of the format.
    pub fn provider(self) -> Provider {
        match self {
            Format::CodexAppServer | Format::CodexRollout | Format::CodexExec => Provider::Codex,
            Format::ClaudeStream | Format::ClaudeTranscript | Format::ClaudeHook => {
                Provider::Claude
            }
        }
    }

    /// The source of the format.
    pub fn source(self) -> Source {
        match self {
            Format::CodexAppServer => Source::CodexAppServer,
            Format::CodexRollout => Source::CodexRollout,
            Format::CodexExec => Source::CodexExec,
            Format::ClaudeStream => Source::ClaudeStream,
            Format::ClaudeTranscript => Source::ClaudeTranscript,
            Format::ClaudeHook => Source::ClaudeHook,
        }
    }
}

/// Numbers envelopes and keeps the run state.
pub struct Recorder {
    run_id: RunId,
    next_sequence: u64,
    attributor: Box<dyn Attributor>,
    book: RunBook,
    /// The changes of the envelopes emitted since the last
    /// [`Recorder::take_changes`] (none kept unless asked for).
    changes: Option<Changes>,
    /// An envelope other than `session_ended` came after the last
    /// `session_ended` (or there was none): a session is open to end.
    session_open: bool,
    format: Format,
    source: Option<Source>,
    /// Secrets in stored frames are redacted unless the user opted out.
    keep_secrets: bool,
    /// Frames are kept (copied or referenced): not for a caller that reads
    /// only usage ([`Recorder::for_usage`]).
    keeps_frames: bool,
    /// The trace context `run_started` names.
    traceparent: Option<String>,
}

impl Recorder {
    /// A recorder for a new run.
    pub fn new(run_id: RunId, format: Format) -> Self {
        let attributor: Box<dyn Attributor> = match format {
            Format::CodexAppServer => Box::new(CodexAttributor::new()),
            Format::CodexRollout => Box::new(crate::rollout::RolloutAttributor::new()),
            Format::CodexExec => Box::new(crate::exec::ExecAttributor::new()),
            // One attributor reads every Claude source, so the sources of one
            // session can be merged into one run.
            Format::ClaudeStream | Format::ClaudeTranscript | Format::ClaudeHook => {
                Box::new(ClaudeAttributor::new())
            }
        };
        Self {
            // A caller that reads no changes may need only the run state
            // (a store writer with a book of its own folds the rest): the
            // rest of the book is kept once it or changes are asked for.
            book: RunBook::state_only(run_id.clone()),
            changes: None,
            session_open: false,
            run_id,
            next_sequence: 1,
            attributor,
            format,
            source: None,
            keep_secrets: false,
            keeps_frames: true,
            traceparent: None,
        }
    }

    /// Stores frames exactly as read, secrets included (`--keep-secrets`).
    /// By default values that look like API keys or bearer tokens are
    /// redacted in `raw` and in the events ([`crate::redact`]).
    pub fn keep_secrets(mut self, keep: bool) -> Self {
        self.keep_secrets = keep;
        self
    }

    /// The same recorder naming `traceparent` (a W3C trace context, checked
    /// by the shell) in the `run_started` it writes.
    pub fn with_traceparent(mut self, traceparent: Option<String>) -> Self {
        self.traceparent = traceparent;
        self
    }

    /// The same recorder pricing with `book` (a user's price file) instead
    /// of the database alone.
    pub fn with_prices(mut self, book: std::sync::Arc<crate::prices::PriceBook>) -> Self {
        self.book = self.book.with_prices(book);
        self
    }

    /// Keeps the whole run book (records, evidence, final actors) and the
    /// changes each emitted envelope made, for a shell with sinks to hand
    /// them to ([`Recorder::take_changes`]). Call before anything is
    /// recorded.
    pub fn with_changes(mut self) -> Self {
        self.book = self.book.keep_all();
        self.changes = Some(Changes::default());
        self
    }

    /// Keeps the whole run book (records, evidence, final actors) without
    /// collecting changes: for a shell whose store writer folds nothing
    /// itself and is lent this book for its records and snapshots, so each
    /// envelope is folded once. Call before anything is recorded.
    pub fn with_whole_book(mut self) -> Self {
        self.book = self.book.keep_all();
        self
    }

    /// The changes the envelopes returned since the last call made, in
    /// order (empty unless [`Recorder::with_changes`]).
    pub fn take_changes(&mut self) -> Changes {
        self.changes.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The session ended (for `reason`), at `at`: the `session_ended`
    /// envelope, on which live child-work records settle (see
    /// [`crate::book`]). None when no envelope came since the last one (a
    /// resumed run that gained nothing) or none at all.
    pub fn end_session(&mut self, at: Timestamp, reason: SessionEndReason) -> Vec<Envelope> {
        if !self.session_open {
            return Vec::new();
        }
        self.number(vec![Emitted {
            timestamp: at,
            direction: None,
            actor: Actor::unknown("agentrace"),
            event: Event::SessionEnded { reason },
            raw: None,
            line_frame: false,
        }])
    }

    /// A recorder whose caller reads only the tokens, models, agent tree and
    /// labels of its state (`agentrace usage` straight from folders): no
    /// `raw` is kept, secrets are not redacted (nothing is stored), and
    /// lines that carry none of those are passed over unread (a request
    /// shape, an attachment, a message's text). Those parts of the state are
    /// what [`Recorder::new`] would make of the same lines; events of other
    /// kinds can be missing.
    pub fn for_usage(mut self) -> Self {
        self.keep_secrets = true;
        self.keeps_frames = false;
        self.attributor.drop_frames();
        self.attributor.usage_only();
        self
    }

    /// Records that the session ended with the root's turn still open (the
    /// provider died, the connection closed, the user gave up waiting): the
    /// run ends `failed`, or `interrupted` when `interrupted` is set, with
    /// `error`. Does nothing when the run already ended.
    pub fn abort(&mut self, at: Timestamp, error: String, interrupted: bool) -> Vec<Envelope> {
        let state = self.book.state();
        if state.status() != crate::model::RunStatus::Running {
            return Vec::new();
        }
        let actor = state
            .root_actor()
            .cloned()
            .unwrap_or_else(|| Actor::unknown("no root thread seen"));
        let source_thread_id = state.root_thread_id().cloned();
        self.number(vec![Emitted {
            timestamp: at,
            direction: None,
            actor,
            event: if interrupted {
                Event::Interrupted {
                    error: Some(error),
                    source_thread_id,
                    turn_id: None,
                }
            } else {
                Event::Failed {
                    error: Some(error),
                    source_thread_id,
                    turn_id: None,
                }
            },
            raw: None,
            line_frame: false,
        }])
    }

    /// Records that a live recorder fell behind and skipped `bytes` bytes of
    /// traffic going `direction` (the traffic itself was not held up).
    pub fn dropped(
        &mut self,
        at: Timestamp,
        direction: Option<Direction>,
        bytes: u64,
    ) -> Vec<Envelope> {
        self.number(vec![Emitted {
            timestamp: at,
            direction,
            actor: Actor::unknown("agentrace"),
            event: Event::Dropped { direction, bytes },
            raw: None,
            line_frame: false,
        }])
    }

    /// Records the run under another source than its format's default (a
    /// driven or tapped Codex connection, say). Call before [`Recorder::start`].
    pub fn with_source(mut self, source: Source) -> Self {
        self.source = Some(source);
        self
    }

    /// The first envelope of a new log (`run_started`), stamped `at`.
    pub fn start(&mut self, at: Timestamp) -> Vec<Envelope> {
        self.start_in(at, None)
    }

    /// The first envelope of a new log, naming the session's working
    /// folder when the shell found one in its files.
    pub fn start_in(&mut self, at: Timestamp, cwd: Option<String>) -> Vec<Envelope> {
        self.number(vec![Emitted {
            timestamp: at,
            direction: None,
            actor: Actor::unknown("agentrace"),
            event: Event::RunStarted {
                provider: self.format.provider(),
                source: self.source.unwrap_or(self.format.source()),
                cwd,
                event_facts: Some(crate::model::EVENT_FACTS),
                traceparent: self.traceparent.clone(),
            },
            raw: None,
            line_frame: false,
        }])
    }

    /// The run id.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The run state so far.
    pub fn state(&self) -> &RunState {
        self.book.state()
    }

    /// The run book so far (only its state unless [`Recorder::with_changes`]).
    pub fn book(&self) -> &RunBook {
        &self.book
    }

    /// The sequence the next envelope gets (1 before any): a recorder that
    /// replayed a run's sources continues its log only when this is the
    /// log's next one.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// Handles one line; returns the envelopes to append, in order.
    pub fn push(&mut self, line: &InputLine<'_>) -> Vec<Envelope> {
        let emitted = self.attributor.push(line);
        let emitted = copied_line_frames(emitted, line.bytes);
        self.number(emitted)
    }

    /// Handles one line of a named part of a multi-file source.
    pub fn push_part(&mut self, part: &SourcePart, line: &InputLine<'_>) -> Vec<Envelope> {
        let emitted = self.attributor.push_part(part, line);
        let emitted = copied_line_frames(emitted, line.bytes);
        self.number(emitted)
    }

    /// Whether the envelopes keep frames at all: false for a recorder made
    /// [`Recorder::for_usage`], whose caller need not say where a line is
    /// (a reference's checksum was 2 % of `usage` straight from folders).
    pub fn keeps_frames(&self) -> bool {
        self.keeps_frames
    }

    /// From now on, lines' frames are referenced where they are, not copied
    /// ([`Recorder::push_referenced`]; a line pushed otherwise still gets
    /// its frame copied into `raw`).
    pub fn reference_frames(&mut self) {
        self.attributor.reference_frames();
    }

    /// [`Recorder::push_part`] of a line at `at` (where it is, as the shell
    /// names it): the envelope whose frame is the line gets `raw_ref: at`
    /// and no `raw`, once [`Recorder::reference_frames`] was called. A
    /// frame redacted of a secret is referenced too: resolving a reference
    /// redacts the line again ([`crate::redact`]), and the event is
    /// checked as it is for a copied frame that held one.
    pub fn push_referenced(&mut self, part: &SourcePart, line: &InputLine<'_>, at: RawRef) -> Vec<Envelope> {
        let emitted = self.attributor.push_part(part, line);
        let keep_secrets = self.keep_secrets;
        let mut at = Some(at);
        let mut referenced = Vec::with_capacity(emitted.len());
        let emitted = emitted
            .into_iter()
            .map(|emitted| {
                referenced.push(emitted.line_frame);
                if emitted.line_frame {
                    redacted_line_frame(keep_secrets, emitted, line.bytes)
                } else {
                    redacted_unless(keep_secrets, emitted)
                }
            })
            .collect::<Vec<_>>();
        let mut envelopes = self.number_redacted(emitted.into_iter());
        for (envelope, referenced) in envelopes.iter_mut().zip(referenced) {
            if referenced {
                envelope.raw_ref = at.take();
            }
        }
        envelopes
    }

    /// A recorder that continues an existing run: its state is the fold of
    /// `envelopes` (the log so far, in order), the next envelope continues
    /// the sequence, and the attributor relearns from every envelope. No
    /// `run_started` is written again.
    pub fn resume(run_id: RunId, format: Format, envelopes: &[Envelope]) -> Self {
        let mut recorder = Self::new(run_id, format);
        for envelope in envelopes {
            recorder.relearn(envelope);
        }
        recorder
    }

    /// [`Recorder::resume`] one envelope at a time, for a log too large to
    /// hold: a recorder made by [`Recorder::new`] and given the whole log,
    /// in order, through this continues it.
    pub fn relearn(&mut self, envelope: &Envelope) {
        self.book.apply(envelope);
        self.note_session(envelope);
        self.attributor.prime(envelope);
        self.next_sequence = self.next_sequence.max(envelope.sequence + 1);
    }

    /// What this recorder has learnt, as JSON a later process restores it
    /// from ([`Recorder::restored`]) to go on reading the same files where
    /// this reading stopped (see [`crate::saved`]); `None` for a format
    /// whose reading is not kept so, or a state that cannot be written.
    /// Raw JSON, as serde_json wrote it: a caller that keeps it inside a
    /// document of its own does not have it parsed again to be told it is
    /// JSON (a long transcript's reading is megabytes).
    pub fn saved(&self) -> Option<Box<serde_json::value::RawValue>> {
        let format = saved_format(self.format)?;
        let attributor = self.attributor.saved()?.ok()?;
        let saved = crate::saved::Saved {
            build: crate::saved::BUILD.to_owned(),
            attribution: crate::ATTRIBUTION,
            prices: self.book.prices_id().to_owned(),
            format,
            next_sequence: self.next_sequence,
            session_open: self.session_open,
            source: self.source,
            keep_secrets: self.keep_secrets,
            keeps_frames: self.keeps_frames,
            state: self.book.state(),
            attributor,
        };
        serde_json::value::to_raw_value(&saved).ok()
    }

    /// The recorder of run `run_id` that [`Recorder::saved`] kept as
    /// `bytes`, pricing with `prices` and keeping only its run state (as
    /// one made by [`Recorder::new`] and fed the same lines does); `None`
    /// when they are not such a reading of this build, of the attribution
    /// and the price book it has now, in `format`: its caller then feeds
    /// the lines again.
    pub fn restored(run_id: RunId, format: Format, bytes: &[u8], prices: std::sync::Arc<crate::prices::PriceBook>) -> Option<Self> {
        let saved: crate::saved::Saved<RunState, crate::saved::RawState> = serde_json::from_slice(bytes).ok()?;
        if saved.build != crate::saved::BUILD
            || saved.attribution != crate::ATTRIBUTION
            || saved.prices != prices.id()
            || saved_format(format) != Some(saved.format)
            || saved.state.run_id() != &run_id
        {
            return None;
        }
        let attributor: Box<dyn Attributor> = match saved.format {
            crate::saved::SavedFormat::CodexRollout => Box::new(serde_json::from_str::<crate::rollout::RolloutAttributor>(saved.attributor.get()).ok()?),
            crate::saved::SavedFormat::ClaudeTranscript => Box::new(serde_json::from_str::<ClaudeAttributor>(saved.attributor.get()).ok()?),
        };
        Some(Self {
            book: RunBook::state_only_from(saved.state).with_prices(prices),
            changes: None,
            session_open: saved.session_open,
            run_id,
            next_sequence: saved.next_sequence,
            attributor,
            format,
            source: saved.source,
            keep_secrets: saved.keep_secrets,
            keeps_frames: saved.keeps_frames,
            traceparent: None,
        })
    }

    /// The input ended; returns any last envelopes.
    pub fn finish(&mut self) -> Vec<Envelope> {
        let emitted = self.attributor.finish();
        self.number(emitted)
    }

    fn note_session(&mut self, envelope: &Envelope) {
        self.session_open = !matches!(
            envelope.event,
            EventBody::Known(Event::SessionEnded { .. })
        );
    }

    /// Lends out the attribution, so another thread can attribute lines
    /// while this one numbers and folds what it made: the two halves of the
    /// work each take about as long on a big input. Until it is given back
    /// ([`Recorder::restore_attribution`]), lines pushed here are dropped;
    /// what the borrower makes comes back through
    /// [`Recorder::number_attributed`], in the order it was made.
    pub fn lend_attribution(&mut self) -> Attribution {
        Attribution {
            attributor: std::mem::replace(&mut self.attributor, Box::new(Lent)),
            keep_secrets: self.keep_secrets,
        }
    }

    /// Takes back the attribution [`Recorder::lend_attribution`] lent.
    pub fn restore_attribution(&mut self, attribution: Attribution) {
        self.attributor = attribution.attributor;
    }

    /// Numbers and folds what a lent [`Attribution`] made, its line frames
    /// made and everything redacted here unless the attributing thread did
    /// it already ([`Attribution::made_ready`]): which of the two threads
    /// is the slower one changes along a stream and with the machine
    /// (`ingest`: the frames' check and the redaction are about a tenth of
    /// the work). Returns the envelopes to append, in order.
    pub fn number_attributed(&mut self, attributed: Vec<Attributed>) -> Vec<Envelope> {
        let keep_secrets = self.keep_secrets;
        self.number_redacted(attributed.into_iter().map(|attributed| attributed.ready(keep_secrets)))
    }

    fn number(&mut self, emitted: Vec<Emitted>) -> Vec<Envelope> {
        let keep_secrets = self.keep_secrets;
        self.number_redacted(emitted.into_iter().map(|emitted| redacted_unless(keep_secrets, emitted)))
    }

    fn number_redacted(&mut self, emitted: impl Iterator<Item = Emitted>) -> Vec<Envelope> {
        emitted
            .map(|emitted| {
                let mut event = emitted.event;
                if let Event::Warning { warning } = &mut event {
                    warning.event_sequence = Some(self.next_sequence);
                }
                let envelope = Envelope {
                    version: LOG_VERSION,
                    timestamp: emitted.timestamp,
                    sequence: self.next_sequence,
                    run_id: self.run_id.clone(),
                    direction: emitted.direction,
                    actor: emitted.actor,
                    event: EventBody::Known(event),
                    raw: emitted.raw,
                    raw_ref: None,
                    raw_unavailable: None,
                };
                self.next_sequence += 1;
                let changes = self.book.apply(&envelope);
                self.note_session(&envelope);
                if let Some(kept) = &mut self.changes {
                    kept.extend(changes);
                }
                envelope
            })
            .collect()
    }
}

/// A recorder's attribution, lent out ([`Recorder::lend_attribution`]):
/// lines in, attributed events out, for the recorder to number.
pub struct Attribution {
    attributor: Box<dyn Attributor>,
    /// The recorder's: whether frames and events keep their secrets.
    keep_secrets: bool,
}

/// An event a lent [`Attribution`] made, waiting for its sequence number,
/// with its line when its frame is the line: the recorder makes the frame
/// and redacts the event as it numbers it ([`Recorder::number_attributed`]),
/// unless the attribution did ([`Attribution::made_ready`]).
#[derive(Debug)]
pub struct Attributed {
    emitted: Emitted,
    line: Option<Vec<u8>>,
    /// Its frame made of its line, and it redacted, already.
    ready: bool,
}

impl Attributed {
    /// The event's time.
    pub fn timestamp(&self) -> Timestamp {
        self.emitted.timestamp
    }

    /// The event with its line made its frame (the line handed over whole
    /// becomes the frame's text, not copied again) and redacted, unless
    /// that was done.
    fn ready(self, keep_secrets: bool) -> Emitted {
        let Attributed { mut emitted, line, ready } = self;
        if ready {
            return emitted;
        }
        if let Some(line) = line {
            emitted.raw = crate::decode::vouched_frame(line);
            emitted.line_frame = false;
        }
        redacted_unless(keep_secrets, emitted)
    }
}

impl Attribution {
    /// Handles one line of `part` ([`Recorder::push_part`] without the
    /// numbering, the frame's copy and the redaction). The caller is done
    /// with the line: its bytes are moved to the event whose frame it is,
    /// not copied (every line was copied out of the read buffer, then
    /// copied again here).
    pub fn push_line(
        &mut self,
        part: &SourcePart,
        line: crate::lines::AssembledLine,
        observed_at: Timestamp,
        direction: Option<Direction>,
    ) -> Vec<Attributed> {
        let emitted = self.attributor.push_part(part, &InputLine {
            bytes: &line.bytes,
            line_number: line.line_number,
            observed_at,
            direction,
            truncated_from: line.truncated_from,
        });
        // An event per line holds its frame; should two, the last gets
        // the bytes and the others a copy.
        let mut framed = emitted.iter().filter(|emitted| emitted.line_frame).count();
        let mut bytes = Some(line.bytes);
        emitted
            .into_iter()
            .map(|emitted| {
                let line = if emitted.line_frame {
                    framed -= 1;
                    if framed == 0 { bytes.take() } else { bytes.clone() }
                } else {
                    None
                };
                Attributed { emitted, line, ready: false }
            })
            .collect()
    }

    /// `batch` with its frames made and redacted on this thread, as the
    /// numbering would: for a caller whose numbering thread is behind, so
    /// this one does that part of the work rather than wait.
    pub fn made_ready(&self, batch: Vec<Attributed>) -> Vec<Attributed> {
        batch
            .into_iter()
            .map(|attributed| Attributed { emitted: attributed.ready(self.keep_secrets), line: None, ready: true })
            .collect()
    }
}

/// The recorder's attributor while its own is lent out: it makes nothing.
struct Lent;

impl Attributor for Lent {
    fn push(&mut self, _line: &InputLine<'_>) -> Vec<Emitted> {
        Vec::new()
    }

    fn finish(&mut self) -> Vec<Emitted> {
        Vec::new()
    }
}

/// `emitted` with a line's frame copied into `raw` (for a caller that
/// does not reference lines: [`Recorder::push_referenced`] does).
fn copied_line_frames(mut emitted: Vec<Emitted>, line: &[u8]) -> Vec<Emitted> {
    for emitted in emitted.iter_mut().filter(|emitted| emitted.line_frame) {
        copy_line_frame(emitted, line);
    }
    emitted
}

/// Copies `line`, the frame of an event marked [`Emitted::line_frame`],
/// into its `raw`.
fn copy_line_frame(emitted: &mut Emitted, line: &[u8]) {
    emitted.raw = crate::decode::json_frame(line).map(RawFrame::from);
    emitted.line_frame = false;
}

/// An event whose frame is the line (referenced, not copied), with the
/// event redacted when the line held a secret: what [`redact_emitted`]
/// does for a copied frame, whose copy the reference's resolution redacts
/// alike.
fn redacted_line_frame(keep_secrets: bool, mut emitted: Emitted, line: &[u8]) -> Emitted {
    let held_secret = !keep_secrets
        && crate::redact::might_hold_secret(line)
        && crate::decode::json_frame(line).is_some_and(|frame| crate::redact::redact_raw(frame.get()).is_some());
    if held_secret {
        if let Some(event) = crate::redact::redact_event(&emitted.event) {
            emitted.event = event;
        }
    }
    emitted
}

/// The formats whose readings are kept ([`Recorder::saved`]), as a
/// reading names them; `None` for the others.
fn saved_format(format: Format) -> Option<crate::saved::SavedFormat> {
    match format {
        Format::CodexRollout => Some(crate::saved::SavedFormat::CodexRollout),
        Format::ClaudeTranscript => Some(crate::saved::SavedFormat::ClaudeTranscript),
        Format::CodexAppServer | Format::CodexExec | Format::ClaudeStream | Format::ClaudeHook => None,
    }
}

/// `emitted` redacted, unless the run keeps its secrets.
fn redacted_unless(keep_secrets: bool, emitted: Emitted) -> Emitted {
    if keep_secrets {
        emitted
    } else {
        redact_emitted(emitted)
    }
}

/// Redacts secrets in an emitted frame and its event. The event is checked
/// when its frame held a secret, when it has no frame (derived events repeat
/// text of earlier frames) and when it keeps undecodable bytes; a frame with
/// nothing that looks like a secret is kept byte-exact.
fn redact_emitted(mut emitted: Emitted) -> Emitted {
    let redacted_raw = emitted.raw.as_ref().and_then(|raw| crate::redact::redact_raw(raw.get()));
    let check_event = emitted.raw.is_none()
        || redacted_raw.is_some()
        || matches!(
            emitted.event,
            Event::Unknown {
                raw_base64: Some(_),
                ..
            }
        );
    if let Some(raw) = redacted_raw {
        emitted.raw = Some(raw.into());
    }
    if check_event {
        if let Some(event) = crate::redact::redact_event(&emitted.event) {
            emitted.event = event;
        }
    }
    emitted
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real Codex capture's server lines, and one with a key in it.
    fn lines() -> Vec<String> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/codex/real_model_basic/server.jsonl");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines.push(r#"{"jsonrpc":"2.0","method":"note","params":{"text":"key sk-abcdefghijklmnopqrstuvwxyz0123"}}"#.to_owned());
        lines
    }

    /// `bytes` as the line assembler hands it over.
    fn assembled(bytes: &str, number: usize) -> crate::lines::AssembledLine {
        crate::lines::AssembledLine { bytes: bytes.as_bytes().to_vec(), line_number: number as u64 + 1, truncated_from: None }
    }

    fn line(bytes: &str, number: usize) -> InputLine<'_> {
        InputLine {
            bytes: bytes.as_bytes(),
            line_number: number as u64 + 1,
            observed_at: Timestamp::from_millis(1_795_000_000_000),
            direction: Some(Direction::FromServer),
            truncated_from: None,
        }
    }

    /// Attribution lent out and numbered back gives the envelopes, secrets
    /// redacted, and the run state that pushing each line here gives,
    /// whether the frames are made and redacted by the numbering or by the
    /// attribution beforehand (`made_ready`: for none of the lines, every
    /// one, or every other one); the recorder attributes again once it is
    /// given back.
    #[test]
    fn a_lent_attribution_numbered_back_makes_what_the_recorder_makes_alone() {
        let lines = lines();
        let at = Timestamp::from_millis(1_795_000_000_000);
        let modes: [fn(usize) -> bool; 3] = [|_| false, |_| true, |number| number % 2 == 0];
        for (mode, made_ready) in modes.into_iter().enumerate() {
            let mut alone = Recorder::new(RunId::from("run"), Format::CodexAppServer);
            let mut expected = alone.start(at);
            for (number, bytes) in lines.iter().enumerate() {
                expected.extend(alone.push(&line(bytes, number)));
            }
            let mut split = Recorder::new(RunId::from("run"), Format::CodexAppServer);
            let mut got = split.start(at);
            let mut attribution = split.lend_attribution();
            assert_eq!(split.push(&line(&lines[0], 0)), Vec::new(), "nothing is attributed while lent");
            for (number, bytes) in lines.iter().enumerate() {
                let mut made = attribution.push_line(&SourcePart::Main, assembled(bytes, number), at, Some(Direction::FromServer));
                if made_ready(number) {
                    made = attribution.made_ready(made);
                }
                got.extend(split.number_attributed(made));
            }
            split.restore_attribution(attribution);
            assert_eq!(got, expected, "mode {mode}");
            assert!(got.iter().all(|envelope| !serde_json::to_string(envelope).unwrap_or_default().contains("sk-abcdefghijklmnopqrstuvwxyz0123")));
            assert_eq!(split.state().summary(), alone.state().summary());
            let again = r#"{"jsonrpc":"2.0","method":"note","params":{}}"#;
            assert_eq!(split.push(&line(again, lines.len())), alone.push(&line(again, lines.len())));
        }
    }

    /// Each line is kept whole in one envelope's `raw`, copied where the
    /// event is numbered, lent or not: a frame its envelope's parse read,
    /// and the lines that parse refuses, which are checked and copied as
    /// before (not an object, a member twice, an escape the check takes but
    /// the typed parse does not, not JSON at all: a string copy).
    #[test]
    fn every_line_is_kept_whole_in_one_envelope_lent_or_not() {
        let lines = [
            r#"{"method":"thread/started","params":{"thread":{"id":"t1"}},"emittedAtMs":1795000000000}"#,
            r#"[1,2]"#,
            r#"{"method":"a","method":"b"}"#,
            r#"{"method":"\ud800x","params":{}}"#,
            r#"{"method": "#,
            "  {\"method\":\"turn/started\",\"params\":{\"threadId\":\"t1\",\"turn\":{\"id\":\"u1\"}}}\r",
        ];
        let kept = |envelopes: &[Envelope]| -> Vec<(String, String)> {
            envelopes
                .iter()
                .filter_map(|envelope| {
                    let raw = envelope.raw.as_ref()?.get().to_owned();
                    let kind = match &envelope.event {
                        EventBody::Known(Event::Unknown { kind, .. }) => kind.clone(),
                        EventBody::Known(event) => event.type_name().to_owned(),
                        EventBody::Foreign(_) => "foreign".to_owned(),
                    };
                    Some((raw, kind))
                })
                .collect()
        };
        let at = Timestamp::from_millis(1_795_000_000_000);
        let mut alone = Recorder::new(RunId::from("run"), Format::CodexAppServer);
        let mut split = Recorder::new(RunId::from("run"), Format::CodexAppServer);
        let (mut expected, mut got) = (alone.start(at), split.start(at));
        let mut attribution = split.lend_attribution();
        for (number, bytes) in lines.iter().enumerate() {
            expected.extend(alone.push(&line(bytes, number)));
            // Each line handed over whole: its bytes become the frame,
            // unless white space around the value is trimmed.
            let made = attribution.push_line(&SourcePart::Main, assembled(bytes, number), at, Some(Direction::FromServer));
            got.extend(split.number_attributed(made));
        }
        assert_eq!(got, expected);
        let pairs = |items: &[(&str, &str)]| -> Vec<(String, String)> {
            items.iter().map(|(raw, kind)| ((*raw).to_owned(), (*kind).to_owned())).collect()
        };
        assert_eq!(
            kept(&got),
            pairs(&[
                (lines[0], "thread_started"),
                (lines[1], "notJsonRpc"),
                (lines[2], "notJsonRpc"),
                (lines[3], "notJsonRpc"),
                (r#""{\"method\": ""#, "undecodable"),
                (lines[5].trim(), "turn_started"),
            ])
        );
    }

    /// A rollout recorded with its lines' frames referenced makes the
    /// envelopes it makes with them copied, each frame's copy (redacted of
    /// a key, too) replaced by its line's reference; lines pushed without
    /// a reference still get their frames copied.
    #[test]
    fn referenced_frames_make_the_copied_envelopes_with_references_for_copies() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/codex/v1_basic/rollouts/2026/11/29/rollout-2026-11-29T23-03-28-01a2298c-93ba-7001-9862-9fd03c21f5d4.jsonl");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let text = text.replace("final answer from the root agent", "key sk-abcdefghijklmnopqrstuvwxyz0123");
        let lines: Vec<&str> = text.lines().collect();
        let at = |number: usize| RawRef { path: "rollout".to_owned(), offset: number as u64, length: lines[number].len() as u64, crc32: 0 };
        let rollout_line = |number: usize| InputLine { direction: None, ..line(lines[number], number) };
        let mut copied = Recorder::new(RunId::from("run"), Format::CodexRollout);
        let mut referenced = Recorder::new(RunId::from("run"), Format::CodexRollout);
        let mut unreferenced = Recorder::new(RunId::from("run"), Format::CodexRollout);
        referenced.reference_frames();
        unreferenced.reference_frames();
        let (mut expected, mut got, mut pushed) = (Vec::new(), Vec::new(), Vec::new());
        for number in 0..lines.len() {
            let made = copied.push_part(&SourcePart::File { number: 0 }, &rollout_line(number));
            pushed.extend(unreferenced.push_part(&SourcePart::File { number: 0 }, &rollout_line(number)));
            expected.extend(made.iter().cloned());
            got.extend(referenced.push_referenced(&SourcePart::File { number: 0 }, &rollout_line(number), at(number)).into_iter().zip(made).map(
                |(mut envelope, copy)| {
                    // Put back the copy where the reference is.
                    if copy.raw.is_some() && envelope.raw.is_none() && envelope.raw_ref == Some(at(number)) {
                        envelope.raw_ref = None;
                        envelope.raw = copy.raw;
                    }
                    envelope
                },
            ));
        }
        assert_eq!(got, expected);
        assert_eq!(pushed, expected);
        assert!(expected.iter().filter(|envelope| envelope.raw.is_some()).count() == lines.len());
        let shown = serde_json::to_string(&expected).unwrap_or_default();
        assert!(!shown.contains("sk-abcdefghijklmnopqrstuvwxyz0123") && shown.contains("[REDACTED]"));
    }
}
