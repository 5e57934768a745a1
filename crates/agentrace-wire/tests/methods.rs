//! The typed Codex rows against the real captures (0.169 and 0.171): every
//! method the servers sent has a row and decodes, and the leaf enums take
//! values they do not know.

use std::path::PathBuf;

use agentrace_wire::codex::{
    Frame, Item, MessageKind, Notification, Phase, ResponseResult, ServerRequest, TurnStatus,
};
use serde_json::value::RawValue;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Every line the servers of both versions printed.
fn server_lines() -> Vec<(String, String)> {
    let mut lines = Vec::new();
    for version in ["codex", "codex-0.171"] {
        let dir = fixtures().join(version);
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path().join("server.jsonl");
            if !path.exists() {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            lines.extend(
                text.lines()
                    .filter(|line| !line.trim().is_empty())
                    .map(|line| (path.display().to_string(), line.to_owned())),
            );
        }
    }
    lines
}

#[test]
fn every_method_the_captured_servers_sent_has_a_row_and_decodes() {
    let mut seen = 0;
    for (path, line) in server_lines() {
        let frame: Frame<'_> = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{path}: {e}: {line}"));
        let method = frame.method.as_deref().unwrap_or_default();
        match frame.kind() {
            MessageKind::Notification => {
                let notification = Notification::decode(method, frame.params)
                    .unwrap_or_else(|e| panic!("{path}: {method}: {e}"));
                assert!(
                    !matches!(notification, Notification::Unknown { .. }),
                    "{path}: {method} has no row"
                );
                assert_eq!(notification.method(), method);
                seen += 1;
            }
            MessageKind::Request => {
                let request = ServerRequest::decode(method, frame.params)
                    .unwrap_or_else(|e| panic!("{path}: {method}: {e}"));
                assert!(
                    !matches!(request, ServerRequest::Unknown { .. }),
                    "{path}: {method} has no row"
                );
                seen += 1;
            }
            MessageKind::Response | MessageKind::Other => {}
        }
    }
    assert!(seen > 1_000, "only {seen} notifications and requests");
}

#[test]
fn every_item_the_captured_servers_sent_is_of_a_known_type() {
    for (path, line) in server_lines() {
        let frame: Frame<'_> = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{path}: {e}"));
        let method = frame.method.as_deref().unwrap_or_default();
        if let Ok(Notification::ItemStarted(params) | Notification::ItemCompleted(params)) =
            Notification::decode(method, frame.params)
        {
            assert!(
                !matches!(params.item, Item::Unknown { .. }),
                "{path}: {:?}",
                params.item
            );
        }
    }
}

#[test]
fn thread_search_partial_is_a_notice_that_names_no_thread() {
    let params = RawValue::from_string(r#"{"searchId":"s-1","threads":[{"id":"t-9"}]}"#.to_owned())
        .unwrap_or_else(|e| panic!("{e}"));
    let notification = Notification::decode("thread/search/partial", Some(&params))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(notification.is_notice());
    assert_eq!(notification.method(), "thread/search/partial");
    assert_eq!(notification.thread_id(), None);
}

#[test]
fn an_unknown_method_is_kept_with_its_params_and_the_thread_they_name() {
    let params = RawValue::from_string(r#"{"threadId":"t-1","x":[1]}"#.to_owned())
        .unwrap_or_else(|e| panic!("{e}"));
    let notification =
        Notification::decode("thread/new/thing", Some(&params)).unwrap_or_else(|e| panic!("{e}"));
    let Notification::Unknown { method, params } = &notification else {
        panic!("{notification:?}");
    };
    assert_eq!(
        (method.as_str(), params.as_deref().map(RawValue::get)),
        ("thread/new/thing", Some(r#"{"threadId":"t-1","x":[1]}"#))
    );
    assert_eq!(notification.thread_id().as_deref(), Some("t-1"));
}

#[test]
fn a_known_method_with_params_of_another_shape_is_an_error_for_the_caller_to_report() {
    let params = RawValue::from_string(r#"{"threadId":"t-1","turn":7}"#.to_owned())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(Notification::decode("turn/started", Some(&params)).is_err());
    // A notice is read leniently: it means nothing, so its shape cannot be wrong.
    let notice = Notification::decode("warning", Some(&params)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(notice.notice().and_then(|params| params.text()), None);
}

#[test]
fn phases_and_turn_statuses_this_build_does_not_know_are_kept_as_written() {
    let phases: Vec<Phase> = serde_json::from_str(r#"["final_answer","commentary","draft"]"#)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        phases,
        vec![Phase::FinalAnswer, Phase::Commentary, Phase::Other("draft".to_owned())]
    );
    let statuses: Vec<TurnStatus> =
        serde_json::from_str(r#"["inProgress","completed","interrupted","failed","paused"]"#)
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        statuses,
        vec![
            TurnStatus::InProgress,
            TurnStatus::Completed,
            TurnStatus::Interrupted,
            TurnStatus::Failed,
            TurnStatus::Other("paused".to_owned()),
        ]
    );
    assert_eq!(
        statuses.iter().map(TurnStatus::as_str).collect::<Vec<_>>(),
        ["inProgress", "completed", "interrupted", "failed", "paused"]
    );
}

#[test]
fn a_read_back_names_the_turns_it_reads_as_interrupted_with_no_completion_time() {
    let result = RawValue::from_string(
        r#"{"thread":{"id":"t","turns":[{"id":"a","status":"interrupted","completedAt":null},{"id":"b","status":"interrupted","completedAt":5}]},
            "data":[{"id":"c","status":"interrupted"},{"id":"d","status":{"type":"idle"}},"loaded-id"],
            "turns":[{"id":"e","status":"completed"}]}"#
            .to_owned(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let result = ResponseResult::of(&result);
    let unfinished: Vec<String> = result
        .read_back_turns()
        .filter(|turn| turn.is_unfinished())
        .filter_map(|turn| turn.id().map(str::to_owned))
        .collect();
    assert_eq!(unfinished, ["a", "c"]);
}

/// One walk of a `result` finds the thread (with its turns, one of them
/// without an id), the listed threads among a `data` list's turns and
/// ids, and every turn read back, in the order `thread`, `data`, `turns`.
#[test]
fn a_result_is_read_for_its_thread_its_listed_threads_and_its_turns_in_one_walk() {
    let result = RawValue::from_string(
        r#"{"thread":{"id":"t","source":"vscode","turns":[{"id":"a","status":"completed"},{"status":"interrupted"}]},"model":"m",
            "data":[{"id":"c","turns":[]},{"id":"d","source":{"subAgent":{"thread_spawn":{"parent_thread_id":"t"}}}},{"id":"e","status":"interrupted"},"loaded-id",{"id":7,"turns":[]}],
            "turns":[{"id":"f"}]}"#
            .to_owned(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let result = ResponseResult::of(&result);
    let thread = result.thread.as_ref().map(|thread| (thread.id.clone(), thread.turns.len()));
    let listed: Vec<(String, Option<String>)> = result
        .listed_threads
        .iter()
        .map(|thread| (thread.id.clone(), thread.thread_spawn().and_then(|spawn| spawn.parent_thread_id)))
        .collect();
    let read_back: Vec<(Option<&str>, bool)> =
        result.read_back_turns().map(|turn| (turn.id(), turn.is_unfinished())).collect();
    assert_eq!(
        (thread, result.model, listed, read_back),
        (
            Some(("t".to_owned(), 2)),
            true,
            vec![("c".to_owned(), None), ("d".to_owned(), Some("t".to_owned()))],
            vec![
                (Some("a"), false),
                (None, true),
                (Some("c"), false),
                (Some("d"), false),
                (Some("e"), true),
                (None, false),
                (Some("f"), false),
            ]
        )
    );
}

/// A `thread` that is no thread object (no id) is no thread, yet its turns
/// are read back; a `data` that is no list lists nothing.
#[test]
fn a_result_of_other_shapes_still_reads_back_its_turns() {
    let result = RawValue::from_string(
        r#"{"thread":{"turns":[{"id":"a","status":"interrupted"}]},"data":{"id":"x"},"turns":"no"}"#.to_owned(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let result = ResponseResult::of(&result);
    let read_back: Vec<(Option<&str>, bool)> =
        result.read_back_turns().map(|turn| (turn.id(), turn.is_unfinished())).collect();
    assert_eq!(
        (result.thread.is_none(), result.model, result.listed_threads.len(), read_back),
        (true, false, 0, vec![(Some("a"), true)])
    );
}

/// A `data` or `turns` of any shape but a list (null, a number, true, a
/// string, an object of lists) holds no entry, and the rest of the result
/// is read as ever.
#[test]
fn a_list_member_of_any_other_shape_holds_nothing_and_the_rest_is_read() {
    let shapes = ["null", "3", "-1.5e3", "true", r#""a""#, r#"{"data":[{"id":"x"}]}"#, "[]"];
    let read: Vec<(bool, bool, usize, usize)> = shapes
        .iter()
        .map(|shape| {
            let result = RawValue::from_string(format!(
                r#"{{"data":{shape},"model":"m","thread":{{"id":"t","turns":[]}},"turns":{shape}}}"#
            ))
            .unwrap_or_else(|e| panic!("{e}"));
            let result = ResponseResult::of(&result);
            (result.thread.is_some(), result.model, result.listed_threads.len(), result.read_back_turns().count())
        })
        .collect();
    assert_eq!(read, vec![(true, true, 0, 0); shapes.len()]);
}
