//! The run book: the one fold of a run log (SPEC §13). It holds the run
//! state, the final actors, the warning detectors' evidence and the
//! child-work reducer (§6), and decides when the session is over; every
//! reader of a log (the CLI's commands, the store's snapshots, the server)
//! and the recorder fold through it, so they cannot disagree. Pure:
//! [`RunBook::apply`] returns what changed as data ([`Changes`]) and never
//! reads the clock.
//!
//! # When the session is over (one rule, every reader)
//!
//! - A `session_ended` envelope ends the session: every live child-work
//!   record settles `unknown` at its time (rule 9). A later `turn_started`
//!   (a resumed session) opens it again; records that settled stay
//!   settled. Other lines after it (a hook input, a late notification)
//!   leave it ended. Every agent of the tree whose turn was open settles
//!   too (`unknown`), so no reader shows one at work in a session that
//!   ended; the run's status stays the root's.
//! - A log that never had a `session_ended` (written before the event
//!   existed, an import of files that may still grow, a recorder that was
//!   killed) is over once its run is not `running` (the root's last turn
//!   ended) and no child-work record is live. Its records show as the
//!   reducer has them: a child still at work after its root's turn ended
//!   (a Claude `run_in_background` helper) reads `working`, never settled
//!   by a guess; only a `session_ended` settles it (the recorders write one
//!   at their end; `watch` writes one when a session's files stayed still
//!   for its idle limit).
//! - In a Claude session, a helper or background shell that ends after its
//!   root's turn completed (`run_in_background`) has its report handed to
//!   the root, which answers it in a new turn (44 to 241 ms later in every
//!   capture). Until that turn starts, the session is not over: it was, for
//!   that moment, and `watch --on-end` fired then, once, with the root's
//!   interim answer as the result. A root that failed or was interrupted
//!   waits for no report.

use serde::{Deserialize, Serialize};

use crate::childwork::{ChangeKind, ChildWork, ChildWorkChange, ChildWorkRecord};
use crate::model::{Envelope, Event, EventBody, Provider, RunId, RunStatus, Timestamp, Warning};
use crate::prices::PriceBook;
use crate::state::{FinalActors, RunState, RunView};
use crate::warnings::{checked, Evidence, WarningConfig};

/// What one envelope changed in the book.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// Child-work record changes, in order (§6), as readers show them (the
    /// session rule applied).
    pub records: Vec<ChildWorkChange>,
    /// The run's new status, when it changed.
    pub status: Option<RunStatus>,
    /// Warnings raised by this envelope: recorded `warning` events new to
    /// the run and the child-work reducer's (`lost_turn`). The detectors'
    /// warnings need a clock and a configuration: see
    /// [`RunBook::checked_view`].
    pub warnings: Vec<Warning>,
}

impl Changes {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.status.is_none() && self.warnings.is_empty()
    }

    /// Appends `more`, keeping order (the last status wins).
    pub fn extend(&mut self, more: Changes) {
        self.records.extend(more.records);
        if more.status.is_some() {
            self.status = more.status;
        }
        self.warnings.extend(more.warnings);
    }
}

/// Where the session stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Session {
    /// A `session_ended` came and no `turn_started` since.
    ended: bool,
    /// The log has had a `session_ended`: only another one ends it.
    ever_ended: bool,
    /// A Claude child ended after its root's turn completed, and the root
    /// has not yet started the turn that takes its report.
    #[serde(default)]
    report_pending: bool,
}

/// The fold of one run log. Serializable so the store can snapshot a long
/// run's fold (an internal cache, not a contract).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunBook {
    state: RunState,
    finals: FinalActors,
    evidence: Evidence,
    child_work: ChildWork,
    session: Session,
    /// Only the run state is kept (a recorder whose caller reads nothing
    /// else, such as `usage` or an import whose writer folds the rest).
    state_only: bool,
}

impl RunBook {
    /// The book of an empty log.
    pub fn new(id: RunId) -> Self {
        Self {
            state: RunState::new(id),
            finals: FinalActors::default(),
            evidence: Evidence::default(),
            child_work: ChildWork::new(),
            session: Session::default(),
            state_only: false,
        }
    }

    /// A book that keeps only the run state: [`RunBook::apply`] returns
    /// status changes and recorded warnings, never record changes, and the
    /// records, evidence and final actors stay empty.
    pub fn state_only(id: RunId) -> Self {
        Self {
            state_only: true,
            ..Self::new(id)
        }
    }

    /// A book that keeps only the run state, starting from `state` (a
    /// recorder's, restored: see [`crate::recorder::Recorder::restored`]).
    pub fn state_only_from(state: RunState) -> Self {
        Self {
            state,
            ..Self::state_only(RunId::from(String::new()))
        }
    }

    /// The same book keeping everything from now on (made by
    /// [`RunBook::state_only`], before anything was folded).
    pub fn keep_all(mut self) -> Self {
        self.state_only = false;
        self
    }

    /// The same book pricing with `prices` (a user's price file).
    pub fn with_prices(mut self, prices: std::sync::Arc<PriceBook>) -> Self {
        self.state = self.state.with_prices(prices);
        self
    }

    /// The id of the price book it prices with (see [`PriceBook::id`]).
    pub fn prices_id(&self) -> &str {
        self.state.prices_id()
    }

    /// Hands the child-work reducer the cost of the thread whose usage this
    /// envelope changed (only usage moves a cost, so other lines cost
    /// nothing here).
    fn price_child(&mut self, envelope: &Envelope) {
        let priced = matches!(
            envelope.event,
            EventBody::Known(Event::Usage { .. } | Event::TurnCompleted { usage: Some(_), .. })
        );
        let Some(thread) = envelope.actor.thread_id.as_ref().filter(|_| priced) else {
            return;
        };
        if let Some((cost, status)) = self.state.thread_cost(thread) {
            self.child_work.price(thread, cost, status);
        }
    }

    /// Folds one envelope in; returns what it changed.
    pub fn apply(&mut self, envelope: &Envelope) -> Changes {
        let status_before = self.state.status();
        let recorded_before = self.state.warnings().len();
        let reducer_warnings_before = self.child_work.warnings().len();
        self.state.apply(envelope);
        if matches!(envelope.event, EventBody::Known(Event::SessionEnded { .. })) {
            // What was at work settles: no reader shows a turn open in a
            // session that ended.
            self.state.settle_open_turns();
        }
        let status = self.state.status();
        let mut changes = Changes {
            records: Vec::new(),
            status: (status != status_before).then_some(status),
            warnings: self.state.warnings()[recorded_before..].to_vec(),
        };
        if self.state_only {
            return changes;
        }
        self.finals.observe(envelope);
        self.evidence.apply(envelope);
        let ending = matches!(
            envelope.event,
            EventBody::Known(Event::SessionEnded { .. })
        );
        let records = if ending {
            self.session.ended = true;
            self.session.ever_ended = true;
            self.child_work.end_session(envelope.timestamp)
        } else {
            // Only a new turn is a resumed session: a line that trails the
            // end (a hook input written after it, a late notification) is
            // still the ended session's.
            if matches!(envelope.event, EventBody::Known(Event::TurnStarted { .. })) {
                self.session.ended = false;
            }
            self.price_child(envelope);
            let records = self.child_work.apply(envelope);
            if status == RunStatus::Running {
                self.session.report_pending = false;
            } else if status == RunStatus::Done
                && self.state.provider() == Provider::Claude
                && records.iter().any(|change| change.change == ChangeKind::Ended)
            {
                self.session.report_pending = true;
            }
            records
        };
        changes
            .warnings
            .extend_from_slice(&self.child_work.warnings()[reducer_warnings_before..]);
        changes.records = records;
        // Child work live, or its report on its way to the root: not a
        // session merely left open between prompts (a resumed one, whose
        // next end has not come, is not over either).
        let working = status != RunStatus::Running && !self.session.ended && (self.child_work.any_live() || self.session.report_pending);
        self.state.set_helpers_working(working);
        self.state.set_session_ended(status == RunStatus::Running && self.session.ended);
        changes
    }

    /// The run state.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// The final actor of each corrected thread.
    pub fn finals(&self) -> &FinalActors {
        &self.finals
    }

    /// The warning detectors' evidence.
    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }

    /// The child-work reducer as folded (without the session rule's
    /// settling: see [`RunBook::records`]).
    pub fn child_work(&self) -> &ChildWork {
        &self.child_work
    }

    /// True when the session is over by the rule of this module: a
    /// `session_ended` was the last word, or a log that never had one
    /// shows its run ended with no child-work record live.
    pub fn session_over(&self) -> bool {
        self.session.ended
            || (!self.session.ever_ended
                && self.state.status() != RunStatus::Running
                && !self.child_work.any_live()
                && !self.session.report_pending)
    }

    /// True while a child-work record is live (working or waiting): a
    /// child at work after its root's turn ended (Claude's
    /// `run_in_background`) keeps a session from being done, so a "done"
    /// notification waits for its end (or for `session_ended`).
    pub fn children_working(&self) -> bool {
        self.child_work.any_live()
    }

    /// The child-work records as every reader shows them, in admission
    /// order.
    pub fn records(&self) -> Vec<ChildWorkRecord> {
        self.child_work.records()
    }

    /// `{run, agents, warnings}` as `show --json` prints it: the recorded
    /// warnings, the child-work reducer's and the detectors' at `now` (none:
    /// the time-based ones wait for a reader with a clock), `config`
    /// applied, and `skipped` log lines counted; with the milliseconds
    /// after which a time-based detector wants to judge again.
    pub fn checked_view(
        &self,
        config: &WarningConfig,
        now: Option<Timestamp>,
        skipped: u64,
    ) -> (RunView, Option<u64>) {
        let mut view = self.state.view();
        view.run.counts.skipped_log_lines = skipped;
        checked(view, self.child_work.warnings(), &self.evidence, now, config)
    }
}
