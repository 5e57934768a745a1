//! Properties: live equals replay, any split gives the same run, and no
//! input makes the core panic.

use agentrace_core::model::{Envelope, RunId};
use agentrace_core::state::RunState;
use proptest::prelude::*;
use serde_json::json;

use super::support::{lines, record, record_chunks};

fn frame() -> impl Strategy<Value = serde_json::Value> {
    let thread = prop_oneof![Just("t-root"), Just("t-a"), Just("t-b"), Just("t-c")];
    let other = prop_oneof![Just("t-root"), Just("t-a"), Just("t-b"), Just("t-c")];
    let turn = prop_oneof![Just("u1"), Just("u2")];
    let phase = prop_oneof![
        Just(None),
        Just(Some("final_answer")),
        Just(Some("commentary"))
    ];
    let status = prop_oneof![Just("completed"), Just("interrupted"), Just("failed")];
    (0..9u8, thread, other, turn, phase, status, "[a-z ]{0,12}").prop_map(
        |(kind, thread, other, turn, phase, status, text)| match kind {
            0 => json!({"method":"thread/started","params":{"thread":{"id":thread,"source":"vscode"}},"emittedAtMs":1}),
            1 => json!({"method":"turn/started","params":{"threadId":thread,"turn":{"id":turn,"status":"inProgress"}},"emittedAtMs":2}),
            2 => json!({"method":"turn/completed","params":{"threadId":thread,"turn":{"id":turn,"status":status}},"emittedAtMs":3}),
            3 => json!({"method":"item/completed","params":{"threadId":thread,"turnId":turn,"item":{"type":"agentMessage","id":"m","text":text,"phase":phase}},"emittedAtMs":4}),
            4 => json!({"method":"item/completed","params":{"threadId":thread,"turnId":turn,"item":{"type":"collabAgentToolCall","id":"s","tool":"spawnAgent","senderThreadId":thread,"receiverThreadIds":[other],"agentsStates":{}}},"emittedAtMs":5}),
            5 => json!({"method":"item/completed","params":{"threadId":thread,"turnId":turn,"item":{"type":"subAgentActivity","id":"a","kind":"started","agentThreadId":other,"agentPath":format!("/root/{other}")}},"emittedAtMs":6}),
            6 => json!({"method":"thread/status/changed","params":{"threadId":thread,"status":{"type":"idle"}},"emittedAtMs":7}),
            7 => json!({"id":3,"result":{"thread":{"id":other,"agentNickname":text,"source":{"subAgent":{"thread_spawn":{"parent_thread_id":thread}}}}}}),
            _ => json!({"method":"item/started","params":{"threadId":thread,"turnId":turn,"item":{"type":"commandExecution","id":"c","command":text}},"emittedAtMs":8}),
        },
    )
}

fn replay(envelopes: &[Envelope]) -> RunState {
    let mut state = RunState::new(RunId::from("run-test"));
    for envelope in envelopes {
        let line = serde_json::to_string(envelope).unwrap_or_default();
        let read: Envelope = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(&read, envelope, "an envelope survives the log");
        state.apply(&read);
    }
    state
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn live_equals_replay(frames in proptest::collection::vec(frame(), 0..40)) {
        let (recorder, envelopes) = record(&lines(&frames));
        prop_assert_eq!(&replay(&envelopes), recorder.state());
    }

    #[test]
    fn any_split_of_the_input_gives_the_same_run(
        frames in proptest::collection::vec(frame(), 0..30),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let input = lines(&frames);
        let (whole, whole_envelopes) = record(&input);
        let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(input.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for point in points {
            chunks.push(&input[start..point]);
            start = point;
        }
        chunks.push(&input[start..]);
        let (split, split_envelopes) = record_chunks(&chunks);
        prop_assert_eq!(split.state(), whole.state());
        prop_assert_eq!(split_envelopes, whole_envelopes);
    }

    #[test]
    fn the_decoder_never_panics_and_keeps_every_line(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let (_, envelopes) = record(&bytes);
        let non_blank = bytes
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .count();
        prop_assert_eq!(envelopes.iter().filter(|e| e.raw.is_some()).count(), non_blank);
    }

    #[test]
    fn json_shaped_noise_never_panics(values in proptest::collection::vec(any_json(), 0..30)) {
        let (recorder, _) = record(&lines(&values));
        let _ = recorder.state().view();
    }
}

fn any_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        prop_oneof![
            Just("threadId"),
            Just("method"),
            Just("turn/completed"),
            Just("item"),
            Just("x")
        ]
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("method"),
                    Just("params"),
                    Just("threadId"),
                    Just("turn"),
                    Just("item"),
                    Just("type"),
                    Just("id"),
                    Just("result"),
                    Just("thread")
                ]
                .prop_map(str::to_owned),
                inner,
                0..5
            )
            .prop_map(|map| serde_json::Value::Object(map.into_iter().collect())),
        ]
    })
}
