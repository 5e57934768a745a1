//! Span building: real captures become the agent tree as spans.

use agentrace_core::model::{
    Actor, Confidence, Envelope, Event, Role, RunId, Severity, ThreadId, Warning, LOG_VERSION,
};
use agentrace_otel::ids::{SpanId, TraceId};
use agentrace_otel::proto::{encode_requests, request};
use agentrace_otel::spans::{run_trace, AttributeValue, SpanEvent};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;

use super::support::{fixture, fixture_in, outline, record, view};

const KEYS: &[&str] = &[
    "gen_ai.agent.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "agentrace.transfer_target.agent.name",
];

fn trace_of(name: &str) -> agentrace_otel::RunTrace {
    let envelopes = record("run-x", &fixture(name));
    let view = view("run-x", &envelopes);
    run_trace("run-x", &envelopes, &view)
}

#[test]
fn a_nested_run_is_one_agent_span_per_agent_under_the_spawn_that_started_it() {
    assert_eq!(
        outline(&trace_of("real_model_nested"), KEYS),
        "\
invoke_agent Main gen_ai.agent.name=Main gen_ai.usage.input_tokens=55097 gen_ai.usage.output_tokens=253 gen_ai.usage.cache_read.input_tokens=27547
  execute_tool subAgentActivity gen_ai.agent.name=Main agentrace.transfer_target.agent.name=/root/child_a
    invoke_agent /root/child_a gen_ai.agent.name=/root/child_a gen_ai.usage.input_tokens=59730 gen_ai.usage.output_tokens=250 gen_ai.usage.cache_read.input_tokens=29864
      execute_tool subAgentActivity gen_ai.agent.name=/root/child_a agentrace.transfer_target.agent.name=/root/child_a/child_g
        invoke_agent /root/child_a/child_g gen_ai.agent.name=/root/child_a/child_g gen_ai.usage.input_tokens=31584 gen_ai.usage.output_tokens=136 gen_ai.usage.cache_read.input_tokens=15792
          execute_tool shell gen_ai.agent.name=/root/child_a/child_g
      execute_tool wait gen_ai.agent.name=/root/child_a
  execute_tool wait gen_ai.agent.name=Main
"
    );
}

#[test]
fn a_v1_spawn_tool_call_is_the_execute_tool_span_whose_transfer_target_is_the_child() {
    assert_eq!(
        outline(&trace_of("v1_basic"), KEYS),
        "\
invoke_agent Main gen_ai.agent.name=Main gen_ai.usage.input_tokens=21992 gen_ai.usage.output_tokens=280 gen_ai.usage.cache_read.input_tokens=10995
  execute_tool spawnAgent gen_ai.agent.name=Main agentrace.transfer_target.agent.name=Dewey
    invoke_agent Dewey gen_ai.agent.name=Dewey gen_ai.usage.input_tokens=10688 gen_ai.usage.output_tokens=130 gen_ai.usage.cache_read.input_tokens=5343
      execute_tool shell gen_ai.agent.name=Dewey
  execute_tool wait gen_ai.agent.name=Main
  execute_tool closeAgent gen_ai.agent.name=Main
"
    );
}

#[test]
fn every_attribute_of_a_v1_run_is_what_the_snapshot_shows() {
    let trace = trace_of("v1_basic");
    let mut text = format!("trace {}\n", trace.trace_id);
    for span in &trace.spans {
        text.push_str(&format!(
            "\n{} [{}] parent={} {}..{} {:?}\n",
            span.name,
            span.span_id,
            span.parent_span_id
                .map(|id| id.to_string())
                .unwrap_or_else(|| "-".to_owned()),
            span.start_time_unix_nano,
            span.end_time_unix_nano,
            span.status
        ));
        for (key, value) in &span.attributes {
            text.push_str(&format!("  {key} = {value:?}\n"));
        }
    }
    insta::assert_snapshot!(text);
}

#[test]
fn ids_depend_only_on_the_run_so_a_second_export_sends_the_same_spans() {
    let first = trace_of("real_model_nested");
    let second = trace_of("real_model_nested");
    assert_eq!(first, second);
    assert_eq!(first.trace_id, TraceId::for_run("run-x"));
    let other = {
        let envelopes = record("run-y", &fixture("real_model_nested"));
        run_trace("run-y", &envelopes, &view("run-y", &envelopes))
    };
    assert_ne!(first.trace_id, other.trace_id);
    let ids = |trace: &agentrace_otel::RunTrace| {
        trace
            .spans
            .iter()
            .map(|span| span.span_id)
            .collect::<Vec<SpanId>>()
    };
    let mut unique = ids(&first);
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), first.spans.len());
    assert!(ids(&first).iter().all(|id| !ids(&other).contains(id)));
}

#[test]
fn the_encoded_request_decodes_back_to_the_same_spans_and_parents() {
    let trace = trace_of("real_model_nested");
    let resource = vec![(
        "service.name".to_owned(),
        AttributeValue::String("agentrace".to_owned()),
    )];
    let bodies = encode_requests(&resource, &trace);
    assert_eq!(bodies.len(), 1);
    let decoded = ExportTraceServiceRequest::decode(bodies[0].as_slice())
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(decoded, request(&resource, &trace, &trace.spans));
    let spans = &decoded.resource_spans[0].scope_spans[0].spans;
    let pairs: Vec<(String, Vec<u8>, Vec<u8>)> = spans
        .iter()
        .map(|span| {
            (
                span.name.clone(),
                span.span_id.clone(),
                span.parent_span_id.clone(),
            )
        })
        .collect();
    let expected: Vec<(String, Vec<u8>, Vec<u8>)> = trace
        .spans
        .iter()
        .map(|span| {
            (
                span.name.clone(),
                span.span_id.0.to_vec(),
                span.parent_span_id
                    .map(|id| id.0.to_vec())
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(pairs, expected);
    assert!(spans
        .iter()
        .all(|span| span.trace_id == trace.trace_id.0.to_vec()));
}

#[test]
fn a_warning_is_an_event_and_a_code_on_the_agent_it_names() {
    let mut envelopes = record("run-x", &fixture("v1_basic"));
    let helper = ThreadId::from("01a2298c-947a-75b0-8b49-6a2e1016272b");
    let last = envelopes
        .last()
        .map(|e| (e.sequence, e.timestamp))
        .unwrap_or_default();
    let warning = Warning {
        code: "silent_agent".to_owned(),
        severity: Severity::Warning,
        message: "no activity for 300 s <script>".to_owned(),
        event_sequence: Some(last.0 + 1),
        thread_id: Some(helper.clone()),
    };
    envelopes.push(Envelope {
        version: LOG_VERSION,
        timestamp: last.1,
        sequence: last.0 + 1,
        run_id: RunId::from("run-x"),
        direction: None,
        actor: Actor {
            thread_id: None,
            role: Role::Unknown,
            parent_thread_id: None,
            label: "Unknown actor".to_owned(),
            depth: None,
            confidence: Confidence::Unknown,
            reason: None,
        },
        event: Event::Warning {
            warning: warning.clone(),
        }
        .into(),
        raw: None,
        raw_ref: None,
        raw_unavailable: None,
    });
    let view = view("run-x", &envelopes);
    let trace = run_trace("run-x", &envelopes, &view);
    let span = trace
        .spans
        .iter()
        .find(|span| span.name == "invoke_agent Dewey")
        .unwrap_or_else(|| panic!("no helper span"));
    assert_eq!(
        span.events,
        vec![SpanEvent {
            name: "agentrace.warning".to_owned(),
            time_unix_nano: u64::try_from(last.1.millis()).unwrap_or_default() * 1_000_000,
            attributes: vec![
                (
                    "agentrace.warning.code".to_owned(),
                    AttributeValue::String("silent_agent".to_owned())
                ),
                (
                    "agentrace.warning.severity".to_owned(),
                    AttributeValue::String("warning".to_owned())
                ),
                (
                    "agentrace.warning.message".to_owned(),
                    AttributeValue::String("no activity for 300 s <script>".to_owned())
                ),
                (
                    "agentrace.warning.event_sequence".to_owned(),
                    AttributeValue::Int(i64::try_from(last.0 + 1).unwrap_or_default())
                ),
            ],
        }]
    );
    let tail: Vec<_> = span.attributes.iter().rev().take(2).cloned().collect();
    assert_eq!(
        tail,
        vec![
            (
                "agentrace.warning.codes".to_owned(),
                AttributeValue::StringArray(vec!["silent_agent".to_owned()])
            ),
            ("agentrace.warning.count".to_owned(), AttributeValue::Int(1)),
        ]
    );
    let others_with_events = trace
        .spans
        .iter()
        .filter(|span| !span.events.is_empty())
        .count();
    assert_eq!(others_with_events, 1);
}

/// The outline of a capture's spans by name, with a V1 child's random
/// nickname blanked (a V2 task path and `Main` are kept).
fn span_shape(folder: &str, name: &str) -> String {
    let envelopes = record("run-x", &fixture_in(folder, name));
    let trace = run_trace("run-x", &envelopes, &view("run-x", &envelopes));
    outline(&trace, &[])
        .lines()
        .map(|line| match line.trim_start().strip_prefix("invoke_agent ") {
            Some(agent) if agent != "Main" && !agent.starts_with('/') => {
                let indent = line.len() - line.trim_start().len();
                let role = agent.split_once(" [").map(|(_, role)| format!(" [{role}")).unwrap_or_default();
                format!("{}invoke_agent <nickname>{role}\n", " ".repeat(indent))
            }
            _ => format!("{line}\n"),
        })
        .collect()
}

#[test]
fn both_codex_versions_give_every_capture_the_same_spans() {
    for name in [
        "probe_unknown_thread_ids",
        "real_model_basic",
        "real_model_nested",
        "v1_approval",
        "v1_approval_delayed",
        "v1_background_exec",
        "v1_basic",
        "v1_child_error_http500",
        "v1_followup",
        "v1_interrupt_child_driver",
        "v1_parallel",
        "v1_restart_mid_child",
        "v1_roles",
        "v2_basic",
        "v2_child_error_http500",
        "v2_interrupt_agent",
    ] {
        assert_eq!(span_shape("codex-0.171", name), span_shape("codex", name), "{name}");
    }
}
