//! A turn's answer read from its items: [`final_answer`] (what the agent
//! answered) and [`pick_message`] (the text to show for the turn). Both read
//! the same message list, [`item_messages`]. Pure: no host, no I/O.

use agentrace_wire::codex::{AgentMessage, Item, Phase, UserMessage};
use serde_json::Value;

/// The phase Codex gives an agent's answer.
pub const FINAL_ANSWER_PHASE: &str = "final_answer";

/// The agent messages of a turn's items, in item order.
pub fn item_messages(items: &[Value]) -> Vec<AgentMessage> {
    items
        .iter()
        .filter_map(|value| match Item::from_value(value) {
            Item::AgentMessage(message) => Some(message),
            _ => None,
        })
        .collect()
}

/// The answer: the last message of phase `final_answer`; from a provider that
/// sets no phase, the last message whose phase is null. A commentary message
/// is never the answer, so a turn with only commentary has none.
pub fn final_answer(messages: &[AgentMessage]) -> Option<&AgentMessage> {
    let last_of_phase = |phase: Option<&str>| {
        messages
            .iter()
            .rev()
            .find(|message| message.phase.as_ref().map(Phase::as_str) == phase)
    };
    last_of_phase(Some(FINAL_ANSWER_PHASE)).or_else(|| last_of_phase(None))
}

/// The turn's text: the last final answer, else the last message whatever
/// its phase.
pub fn pick_message(messages: &[AgentMessage]) -> Option<&AgentMessage> {
    final_answer(messages).or_else(|| messages.last())
}

/// The first user message of a turn's items.
pub fn first_user_message(items: &[Value]) -> Option<UserMessage> {
    items
        .iter()
        .find_map(|value| match Item::from_value(value) {
            Item::UserMessage(message) => Some(message),
            _ => None,
        })
}
