//! The facts a log written before `run_started.eventFacts` leaves in `raw`
//! only, taken from there once per envelope, for that log's readers. A log
//! written by this build carries them on its events and never comes here.

use serde_json::Value;

use crate::model::{Event, ItemId, ThreadId, TurnId};

/// `event` with the facts its frame holds filled in, when it is one of the
/// events those facts belong to and it has a frame; `None` otherwise (the
/// event is then read as it is).
pub fn fill(event: &Event, raw: Option<&str>) -> Option<Event> {
    // `if let` rather than a match: only these events ever held facts in
    // `raw`, and a new event type must not be routed here by default.
    if !needs_frame(event) {
        return None;
    }
    let frame: Value = serde_json::from_str(raw?).ok()?;
    let item = &frame["params"]["item"];
    let mut event = event.clone();
    if let Event::ToolUse { process_id, .. } = &mut event {
        *process_id = item["processId"].as_str().map(str::to_owned);
    }
    if let Event::ToolResult {
        receiver_thread_ids,
        ..
    } = &mut event
    {
        *receiver_thread_ids = item["receiverThreadIds"]
            .as_array()
            .map(|ids| ids.iter().filter_map(Value::as_str).map(ThreadId::from).collect())
            .unwrap_or_default();
    }
    if let Event::Notice { item_id, .. } = &mut event {
        *item_id = frame["params"]["itemId"].as_str().map(ItemId::from);
    }
    if let Event::ItemStarted { description, .. } = &mut event {
        *description = frame["description"]
            .as_str()
            .or_else(|| frame["command"].as_str())
            .map(str::to_owned);
    }
    if let Event::ItemCompleted {
        status,
        activity_kind,
        agent_thread_id,
        ..
    } = &mut event
    {
        *status = frame["status"].as_str().map(str::to_owned);
        *activity_kind = item["kind"].as_str().map(str::to_owned);
        *agent_thread_id = item["agentThreadId"].as_str().map(ThreadId::from);
    }
    if let Event::TurnCompleted { last_message, .. } = &mut event {
        *last_message = frame["params"]["turn"]["items"]
            .as_array()
            .and_then(|items| {
                items
                    .iter()
                    .rev()
                    .find(|item| item["type"] == "agentMessage" && item["phase"] != "commentary")
            })
            .and_then(|item| item["text"].as_str().map(str::to_owned));
    }
    if let Event::Response {
        unfinished_turn_ids,
        ..
    } = &mut event
    {
        let result = &frame["result"];
        *unfinished_turn_ids = [&result["thread"]["turns"], &result["data"], &result["turns"]]
            .iter()
            .filter_map(|list| list.as_array())
            .flatten()
            .filter(|turn| turn["status"] == "interrupted" && turn["completedAt"].is_null())
            .filter_map(|turn| turn["id"].as_str().map(TurnId::from))
            .collect();
    }
    Some(event)
}

/// True for an event whose facts a legacy log kept in its frame only.
fn needs_frame(event: &Event) -> bool {
    if let Event::ToolUse {
        tool_kind,
        process_id: None,
        ..
    } = event
    {
        return tool_kind == "command";
    }
    if let Event::ToolResult {
        receiver_thread_ids,
        ..
    } = event
    {
        return receiver_thread_ids.is_empty();
    }
    if let Event::Response {
        error: None,
        unfinished_turn_ids,
        ..
    } = event
    {
        return unfinished_turn_ids.is_empty();
    }
    matches!(
        event,
        Event::Notice { item_id: None, .. }
            | Event::ItemStarted {
                description: None,
                ..
            }
            | Event::ItemCompleted { .. }
            | Event::TurnCompleted {
                last_message: None,
                ..
            }
    )
}
