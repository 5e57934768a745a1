//! Token accounting of one Claude thread: usage counted once per API
//! response (message id + request id), final values preferred over the
//! `message_start` snapshots stdout carries. Pure bookkeeping, no meaning of
//! who owns what.

use std::collections::HashMap;

use agentrace_wire::claude::ApiUsage;
use serde::{Deserialize, Serialize};

use crate::model::TokenUsage;

/// One API response: its message id and request id.
pub type ResponseKey = (String, String);

/// The usage book of one thread.
///
/// Stdout repeats one message id per content block, each time with the
/// `message_start` snapshot (`output_tokens: 1`); transcripts carry the final
/// values. A `result` line carries the root's final usage of a whole query,
/// which then stands for that query's root responses ("covered"). With
/// background subagents a query starts (`system/init`) before the one
/// before it printed its `result`: the n-th `result` covers the responses of
/// the first n queries only, never those of a query started after them.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct UsageBook {
    #[serde(with = "crate::saved::usages")]
    responses: HashMap<ResponseKey, (TokenUsage, bool)>,
    /// Responses no `result` covers yet, each with the query it came in
    /// (how many queries had started when it was recorded).
    #[serde(with = "crate::saved::pairs")]
    open: HashMap<ResponseKey, u64>,
    /// Queries started ([`Self::start_query`]).
    queries: u64,
    /// `result` lines counted ([`Self::cover`]).
    covers: u64,
    /// The sum over `open`, kept as responses come: summing the open set at
    /// every response made a long session quadratic.
    open_total: TokenUsage,
    covered: TokenUsage,
    /// Open responses known only by their snapshot.
    open_snapshots: usize,
    /// The response recorded last.
    last_key: Option<ResponseKey>,
    /// Responses known from a hand-back alone, by their stand-in key when
    /// counted (stream-json never shows a subagent's last response) and
    /// without one when not (a transcript read before its subagent's file):
    /// the response itself replaces its stand-in when it comes (same
    /// input), with the hand-back's final values when it is a snapshot.
    stand_ins: Vec<(Option<ResponseKey>, TokenUsage)>,
    /// How many stand-ins were made (each gets a key of its own).
    stand_ins_made: usize,
}

impl UsageBook {
    /// The thread's total: covered queries plus the responses after them.
    pub fn total(&self) -> TokenUsage {
        self.covered.add(&self.open_total)
    }

    /// Records one response's usage; a final value replaces a snapshot, a
    /// snapshot never replaces anything. Returns true when the total moved.
    pub fn record(&mut self, key: ResponseKey, usage: TokenUsage, is_final: bool) -> bool {
        let before = self.total();
        match self.responses.get_mut(&key) {
            Some((kept, kept_final)) => {
                if is_final && !*kept_final {
                    if self.open.contains_key(&key) {
                        self.open_total = self.open_total.minus(kept).add(&usage);
                        self.open_snapshots = self.open_snapshots.saturating_sub(1);
                    }
                    *kept = usage;
                    *kept_final = true;
                }
            }
            None => {
                let stand_in = self
                    .stand_ins
                    .iter()
                    .position(|(_, counted)| counted.input_tokens == usage.input_tokens);
                let (usage, is_final) = match stand_in {
                    Some(index) => {
                        let (stand_in, counted) = self.stand_ins.swap_remove(index);
                        if let Some(stand_in) = stand_in {
                            self.responses.remove(&stand_in);
                            if self.open.remove(&stand_in).is_some() {
                                self.open_total = self.open_total.minus(&counted);
                            }
                        }
                        // The hand-back's values are final; a snapshot's are not.
                        if is_final { (usage, true) } else { (counted, true) }
                    }
                    None => (usage, is_final),
                };
                self.responses.insert(key.clone(), (usage, is_final));
                self.open.insert(key.clone(), self.queries);
                self.open_total = self.open_total.add(&usage);
                if !is_final {
                    self.open_snapshots += 1;
                }
                self.last_key = Some(key);
            }
        }
        self.total() != before
    }

    /// Takes `usage` (the final usage of a subagent's last response, from
    /// its hand-back) as the final value of the open response known only by
    /// its snapshot that it is: the one with the same input, which the
    /// snapshot already carries whole. The latest such response wins; when
    /// none is open, it waits for that response, counted meanwhile under a
    /// stand-in key when `count` (stream-json never forwards a subagent's
    /// last response). Returns true when the total moved.
    pub fn finish_last(&mut self, usage: TokenUsage, count: bool) -> bool {
        let matching = |key: &ResponseKey| {
            self.responses
                .get(key)
                .is_some_and(|(kept, is_final)| !is_final && kept.input_tokens == usage.input_tokens)
        };
        let key = match self.last_key.clone() {
            Some(last) if matching(&last) => Some(last),
            _ => self.open.keys().find(|key| matching(key)).cloned(),
        };
        match key {
            Some(key) => self.record(key, usage, true),
            None if count => {
                // Never a message id: those start with `msg_`.
                let stand_in = (format!("hand-back {}", self.stand_ins_made), String::new());
                self.stand_ins_made += 1;
                let moved = self.record(stand_in.clone(), usage, true);
                self.stand_ins.push((Some(stand_in), usage));
                moved
            }
            // Not counted: only the final values of a snapshot to come.
            None => {
                self.stand_ins.push((None, usage));
                false
            }
        }
    }

    /// True when a response not covered by a `result` is known only by its
    /// snapshot: the total then misses its final output.
    pub fn missing_finals(&self) -> bool {
        self.open_snapshots > 0
    }

    /// A query starts (stream-json's `system/init`): the responses from
    /// here on are its own, until a `result` covers it.
    pub fn start_query(&mut self) {
        self.queries += 1;
    }

    /// A `result` line's usage covers the responses of the oldest query not
    /// covered yet and of those before it: the n-th `result` stands for the
    /// responses recorded while at most n queries had started (all of them
    /// when no start is known). A later query's responses stay open: its
    /// own `result` comes after (background subagents start the next query
    /// before the first one's `result` is printed).
    pub fn cover(&mut self, usage: TokenUsage) {
        self.covers += 1;
        let last_query = self.covers;
        let covered: Vec<ResponseKey> = self
            .open
            .iter()
            .filter(|(_, query)| **query <= last_query)
            .map(|(key, _)| key.clone())
            .collect();
        for key in covered {
            self.open.remove(&key);
            if let Some((kept, is_final)) = self.responses.get(&key) {
                self.open_total = self.open_total.minus(kept);
                if !is_final {
                    self.open_snapshots = self.open_snapshots.saturating_sub(1);
                }
            }
        }
        self.covered = self.covered.add(&usage);
    }
}

/// Our token counts from Messages API usage.
pub fn tokens(usage: &ApiUsage) -> TokenUsage {
    let input =
        usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
    TokenUsage {
        input_tokens: input,
        cached_input_tokens: usage.cache_read_input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        // A part, never more than the whole: the price database refuses a
        // request whose hour-long writes exceed its writes.
        cache_creation_1h_input_tokens: usage
            .cache_creation
            .as_ref()
            .map_or(0, |split| split.ephemeral_1h_input_tokens.min(usage.cache_creation_input_tokens)),
        web_search_requests: usage.server_tool_use.as_ref().map_or(0, |tools| tools.web_search_requests),
        output_tokens: usage.output_tokens,
        reasoning_output_tokens: 0,
        total_tokens: input + usage.output_tokens,
    }
}
