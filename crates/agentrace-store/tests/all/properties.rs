//! Properties: any envelopes written are read back identical, however the
//! batches fall; the reader never panics nor fails on arbitrary bytes.

use std::io::Cursor;

use agentrace_core::{
    Actor, Confidence, Direction, Envelope, Event, EventBody, Role, RunId, ThreadId, Timestamp,
    TurnId, LOG_VERSION,
};
use agentrace_store::{read_log, Home, LogReader};
use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::all::support::run_id;

const RUN: &str = "run-prop";

/// JSON values without floats (serde_json does not promise a float reads
/// back bit-exact without its `float_roundtrip` feature).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-zA-Z_]{1,8}", inner), 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn actor() -> impl Strategy<Value = Actor> {
    (
        proptest::option::of("[ -~]{0,12}"),
        prop_oneof![Just(Role::Root), Just(Role::Helper), Just(Role::Unknown)],
        proptest::option::of(any::<String>()),
        any::<String>(),
        proptest::option::of(any::<u32>()),
        prop_oneof![
            Just(Confidence::Provider),
            Just(Confidence::Derived),
            Just(Confidence::Unknown)
        ],
        proptest::option::of(any::<String>()),
    )
        .prop_map(
            |(thread, role, parent, label, depth, confidence, reason)| Actor {
                thread_id: thread.map(ThreadId::from),
                role,
                parent_thread_id: parent.map(ThreadId::from),
                label,
                depth,
                confidence,
                reason,
            },
        )
}

fn event() -> impl Strategy<Value = EventBody> {
    prop_oneof![
        (
            any::<String>(),
            proptest::option::of(any::<String>()),
            any::<String>()
        )
            .prop_map(|(role, phase, text)| EventBody::Known(Event::Message {
                role,
                phase,
                text,
                item_id: None,
                turn_id: Some(TurnId::from("turn-1")),
            })),
        (any::<String>(), proptest::option::of(any::<String>())).prop_map(|(thread, model)| EventBody::Known(Event::ThreadStarted {
            thread_id: ThreadId::from(thread),
            cwd: None,
            model,
        })),
        (json_value(), any::<String>()).prop_map(|(request_id, method)| EventBody::Known(
            Event::ClientRequest { request_id, method }
        )),
        // A type no build knows, so it can only read back as foreign.
        ("[a-z]{1,10}", json_value()).prop_map(|(name, payload)| {
            let mut members = Map::new();
            members.insert(
                String::from("type"),
                Value::String(format!("future_{name}")),
            );
            members.insert(String::from("payload"), payload);
            EventBody::Foreign(Value::Object(members))
        }),
    ]
}

fn envelope_parts(
) -> impl Strategy<Value = (i64, Option<Direction>, Actor, EventBody, Option<Value>)> {
    (
        // Years 1970 to about 2300: every instant the timestamp format can write.
        0_i64..10_000_000_000_000,
        proptest::option::of(prop_oneof![
            Just(Direction::ToServer),
            Just(Direction::FromServer)
        ]),
        actor(),
        event(),
        proptest::option::of(json_value()),
    )
}

fn envelopes() -> impl Strategy<Value = Vec<Envelope>> {
    prop::collection::vec(envelope_parts(), 0..24).prop_map(|parts| {
        parts
            .into_iter()
            .enumerate()
            .map(|(index, (millis, direction, actor, event, raw))| Envelope {
                version: LOG_VERSION,
                timestamp: Timestamp::from_millis(millis),
                sequence: index as u64 + 1,
                run_id: RunId::from(RUN),
                direction,
                actor,
                event,
                raw: raw.and_then(|raw| serde_json::value::to_raw_value(&raw).ok()).map(Into::into),
                raw_ref: None,
                raw_unavailable: None,
            })
            .collect()
    })
}

/// A test case failure carrying `error`'s message.
fn fail(error: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(error.to_string())
}

/// Writes `envelopes` as a new run, cut into batches at `cuts`; reads the
/// log back.
fn write_and_read(envelopes: &[Envelope], cuts: &[usize]) -> Result<Vec<Envelope>, TestCaseError> {
    let directory = tempfile::tempdir().map_err(fail)?;
    let home = Home::at(directory.path());
    let mut writer = home.create_run(&run_id(RUN)).map_err(fail)?;
    let mut bounds: Vec<usize> = cuts.iter().map(|cut| (*cut).min(envelopes.len())).collect();
    bounds.extend([0, envelopes.len()]);
    bounds.sort_unstable();
    for batch in bounds.windows(2) {
        writer
            .append(&envelopes[batch[0]..batch[1]])
            .map_err(fail)?;
    }
    let (read, skipped) = read_log(&home.log_path(&run_id(RUN))).map_err(fail)?;
    prop_assert_eq!(skipped, vec![]);
    Ok(read)
}

/// One fixed envelope.
fn known_envelope() -> Envelope {
    Envelope {
        version: LOG_VERSION,
        timestamp: Timestamp::from_millis(1_795_993_408_475),
        sequence: 1,
        run_id: RunId::from(RUN),
        direction: None,
        actor: Actor::unknown("no thread id"),
        event: EventBody::Known(Event::ThreadStarted {
            thread_id: ThreadId::from("t"),
            cwd: None,
            model: None,
        }),
        raw: RawValue::from_string(String::from("{\"method\":\"x\"}")).ok().map(Into::into),
        raw_ref: None,
        raw_unavailable: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_envelopes_written_then_read_back_are_identical(
        envelopes in envelopes(),
        cuts in prop::collection::vec(0_usize..24, 0..4),
    ) {
        prop_assert_eq!(write_and_read(&envelopes, &cuts)?, envelopes);
    }

    #[test]
    fn the_reader_never_fails_on_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..2_000),
    ) {
        for envelope in LogReader::new(Cursor::new(bytes)) {
            prop_assert!(envelope.is_ok());
        }
    }

    #[test]
    fn arbitrary_lines_around_an_envelope_never_hide_it(
        before in "[^\n]{0,60}",
        after in prop::collection::vec(any::<u8>(), 0..60),
    ) {
        let envelope = known_envelope();
        let mut bytes = before.into_bytes();
        bytes.push(b'\n');
        bytes.extend(serde_json::to_vec(&envelope).map_err(fail)?);
        bytes.push(b'\n');
        bytes.extend(after);

        let read: Vec<Envelope> = LogReader::new(Cursor::new(bytes))
            .collect::<Result<_, _>>()
            .map_err(fail)?;

        prop_assert!(read.contains(&envelope));
    }
}
