//! Span values as OTLP protobuf: the `opentelemetry-proto` message types,
//! encoded by prost. Pure; sending is the exporter's job.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    span, status, ResourceSpans, ScopeSpans, Span, Status,
};
use prost::Message as _;

use crate::spans::{Attribute, AttributeValue, RunTrace, SpanRecord, SpanStatus};

/// The instrumentation scope name on every span.
pub const SCOPE_NAME: &str = "agentrace";

/// Most spans in one request: keeps each request well under collectors'
/// usual 4 MiB body limit even with text attributes at their cap.
pub const MAX_SPANS_PER_REQUEST: usize = 256;

/// The encoded bodies (`application/x-protobuf`) that carry `trace`, at most
/// [`MAX_SPANS_PER_REQUEST`] spans each.
pub fn encode_requests(resource: &[Attribute], trace: &RunTrace) -> Vec<Vec<u8>> {
    trace
        .spans
        .chunks(MAX_SPANS_PER_REQUEST)
        .map(|spans| request(resource, trace, spans).encode_to_vec())
        .collect()
}

/// One export request holding `spans` of `trace`.
pub fn request(
    resource: &[Attribute],
    trace: &RunTrace,
    spans: &[SpanRecord],
) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: key_values(resource),
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: SCOPE_NAME.to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..Default::default()
                }),
                spans: spans
                    .iter()
                    .map(|record| proto_span(trace, record))
                    .collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

fn proto_span(trace: &RunTrace, record: &SpanRecord) -> Span {
    Span {
        trace_id: trace.trace_id.0.to_vec(),
        span_id: record.span_id.0.to_vec(),
        parent_span_id: record
            .parent_span_id
            .map(|parent| parent.0.to_vec())
            .unwrap_or_default(),
        name: record.name.clone(),
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: record.start_time_unix_nano,
        end_time_unix_nano: record.end_time_unix_nano,
        attributes: key_values(&record.attributes),
        events: record
            .events
            .iter()
            .map(|event| span::Event {
                time_unix_nano: event.time_unix_nano,
                name: event.name.clone(),
                attributes: key_values(&event.attributes),
                dropped_attributes_count: 0,
            })
            .collect(),
        status: Some(match &record.status {
            SpanStatus::Unset => Status {
                message: String::new(),
                code: status::StatusCode::Unset as i32,
            },
            SpanStatus::Error(message) => Status {
                message: message.clone(),
                code: status::StatusCode::Error as i32,
            },
        }),
        ..Default::default()
    }
}

fn key_values(attributes: &[Attribute]) -> Vec<KeyValue> {
    attributes
        .iter()
        .map(|(key, value)| KeyValue {
            key: key.clone(),
            value: Some(any_value(value)),
            ..Default::default()
        })
        .collect()
}

fn any_value(value: &AttributeValue) -> AnyValue {
    let value = match value {
        AttributeValue::String(text) => any_value::Value::StringValue(text.clone()),
        AttributeValue::Int(number) => any_value::Value::IntValue(*number),
        AttributeValue::Bool(flag) => any_value::Value::BoolValue(*flag),
        AttributeValue::StringArray(items) => any_value::Value::ArrayValue(ArrayValue {
            values: items
                .iter()
                .map(|item| AnyValue {
                    value: Some(any_value::Value::StringValue(item.clone())),
                })
                .collect(),
        }),
    };
    AnyValue { value: Some(value) }
}
