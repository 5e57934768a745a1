//! `final_answer` and `pick_message` over one message list.

use agentrace_host::answer::{final_answer, item_messages, pick_message};
use serde_json::{json, Value};

fn message(id: &str, text: &str, phase: Option<&str>) -> Value {
    json!({"type": "agentMessage", "id": id, "text": text, "phase": phase})
}

fn ids(found: Option<&agentrace_wire::codex::AgentMessage>) -> Option<String> {
    found.map(|message| message.id.clone())
}

#[test]
fn the_answer_is_the_last_final_answer_message_even_after_commentary() {
    let items = vec![
        json!({"type": "userMessage", "id": "u", "content": []}),
        message("m1", "first answer", Some("final_answer")),
        message("m2", "second answer", Some("final_answer")),
        message("m3", "thinking aloud", Some("commentary")),
    ];
    let messages = item_messages(&items);
    assert_eq!(ids(final_answer(&messages)), Some("m2".to_owned()));
    assert_eq!(ids(pick_message(&messages)), Some("m2".to_owned()));
}

#[test]
fn without_phases_the_answer_is_the_last_message_with_a_null_phase() {
    let items = vec![
        message("m1", "one", None),
        message("m2", "two", Some("commentary")),
        message("m3", "three", None),
        json!({"type": "commandExecution", "id": "c", "command": "ls"}),
    ];
    let messages = item_messages(&items);
    assert_eq!(ids(final_answer(&messages)), Some("m3".to_owned()));
}

#[test]
fn a_turn_with_only_commentary_has_no_answer_but_shows_its_last_message() {
    let items = vec![
        message("m1", "looking", Some("commentary")),
        message("m2", "still looking", Some("commentary")),
    ];
    let messages = item_messages(&items);
    assert_eq!(ids(final_answer(&messages)), None);
    assert_eq!(ids(pick_message(&messages)), Some("m2".to_owned()));
}

#[test]
fn a_turn_without_messages_has_neither() {
    let items = vec![json!({"type": "userMessage", "id": "u", "content": []})];
    let messages = item_messages(&items);
    assert_eq!(
        (
            final_answer(&messages).is_none(),
            pick_message(&messages).is_none()
        ),
        (true, true)
    );
}
