//! Marker grammar: `crw-flow-op: <call>/t<k>-a<n>` and `<call>/t<k>`.

use agentrace_host::marker::{parse_marker, parse_op, Op, MARKER_PREFIX};
use proptest::prelude::*;

fn op(call: &str, turn: u64, attempt: u64) -> Op {
    Op {
        call: call.to_owned(),
        turn,
        attempt,
    }
}

#[test]
fn a_marker_with_an_attempt_names_call_turn_and_attempt() {
    assert_eq!(
        parse_marker("crw-flow-op: build-api/t3-a2\nDo the work."),
        Some(op("build-api", 3, 2))
    );
}

#[test]
fn a_marker_without_an_attempt_is_attempt_zero() {
    assert_eq!(
        parse_marker("crw-flow-op: review_1/t7"),
        Some(op("review_1", 7, 0))
    );
}

#[test]
fn a_turn_with_a_leading_zero_names_no_operation() {
    assert_eq!(parse_marker("crw-flow-op: call/t03-a1"), None);
    assert_eq!(parse_op("call/t0"), None);
}

#[test]
fn an_attempt_with_a_leading_zero_or_zero_names_no_operation() {
    assert_eq!(parse_marker("crw-flow-op: call/t3-a01"), None);
    assert_eq!(parse_marker("crw-flow-op: call/t3-a0"), None);
}

#[test]
fn a_call_id_of_64_characters_is_an_operation_and_65_is_not() {
    let sixty_four = format!("a{}", "b".repeat(63));
    let sixty_five = format!("a{}", "b".repeat(64));
    assert_eq!(
        parse_op(&format!("{sixty_four}/t1-a1")),
        Some(op(&sixty_four, 1, 1))
    );
    assert_eq!(parse_op(&format!("{sixty_five}/t1-a1")), None);
}

#[test]
fn a_call_id_starting_with_a_dash_or_underscore_names_no_operation() {
    assert_eq!(parse_op("-call/t1"), None);
    assert_eq!(parse_op("_call/t1"), None);
    assert_eq!(parse_op("/t1"), None);
}

#[test]
fn trailing_white_space_on_the_marker_line_is_ignored() {
    assert_eq!(
        parse_marker("crw-flow-op: call/t2-a4  \t\r\nrest"),
        Some(op("call", 2, 4))
    );
    assert_eq!(parse_op("call/t2 \n"), Some(op("call", 2, 0)));
}

#[test]
fn leading_white_space_or_another_prefix_names_no_operation() {
    assert_eq!(parse_marker(" crw-flow-op: call/t1"), None);
    assert_eq!(parse_marker("crw-flow-op:call/t1"), None);
    assert_eq!(parse_marker("flow-op: call/t1"), None);
}

#[test]
fn a_marker_on_the_second_line_names_no_operation() {
    assert_eq!(parse_marker("Do the work.\ncrw-flow-op: call/t1-a1"), None);
}

#[test]
fn junk_after_the_operation_names_no_operation() {
    assert_eq!(parse_marker("crw-flow-op: call/t1-a1 please"), None);
    assert_eq!(parse_op("call/t1-a"), None);
    assert_eq!(parse_op("call/t1-b2"), None);
    assert_eq!(parse_op("call/x1"), None);
    assert_eq!(parse_op("ca.ll/t1"), None);
}

#[test]
fn a_turn_number_too_large_for_the_counter_names_no_operation() {
    assert_eq!(parse_op("call/t99999999999999999999"), None);
}

#[test]
fn printing_drops_attempt_zero_and_keeps_any_other() {
    assert_eq!(op("c", 4, 0).to_string(), "c/t4");
    assert_eq!(op("c", 4, 9).marker_line(), "crw-flow-op: c/t4-a9");
}

fn any_op() -> impl Strategy<Value = Op> {
    (
        "[A-Za-z0-9][A-Za-z0-9_-]{0,63}",
        1u64..u64::MAX,
        prop_oneof![Just(0u64), 1u64..u64::MAX],
    )
        .prop_map(|(call, turn, attempt)| Op {
            call,
            turn,
            attempt,
        })
}

proptest! {
    #[test]
    fn printing_then_parsing_gives_the_same_operation(op in any_op(), body in ".*") {
        prop_assert_eq!(parse_op(&op.to_string()), Some(op.clone()));
        let message = format!("{}\n{body}", op.marker_line());
        prop_assert_eq!(parse_marker(&message), Some(op));
    }

    #[test]
    fn parsing_then_printing_gives_the_same_text(text in "[A-Za-z0-9_/-]{0,12}t?[0-9]{0,3}(-a[0-9]{0,3})?") {
        if let Some(op) = parse_op(&text) {
            prop_assert_eq!(op.to_string(), text);
        }
    }

    #[test]
    fn parsing_never_panics(text in "\\PC*") {
        let _ = parse_marker(&text);
        let _ = parse_op(&text);
        let _ = parse_marker(&format!("{MARKER_PREFIX}{text}"));
    }
}
