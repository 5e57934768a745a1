//! OpenTelemetry export of agentrace runs. A run's envelopes and view become
//! GenAI spans in [`spans`] (pure), OTLP protobuf in [`proto`] (pure,
//! `opentelemetry-proto` types encoded by prost), and HTTP POSTs with retries
//! in [`exporter`], the only module that does I/O. [`config`] resolves the
//! endpoint, headers and resource from flags and `OTEL_*` variables.
//!
//! This crate exists so the OTLP dependencies (protobuf types, an HTTP
//! client with TLS) stay out of the core and the store, and so the mapping
//! is tested apart from the CLI.

pub mod config;
pub mod error;
pub mod exporter;
pub mod ids;
pub mod proto;
pub mod spans;

pub use config::{Compression, ExportConfig};
pub use error::{ConfigError, ExportError};
pub use exporter::{Delivery, Exporter, RetryPolicy};
pub use ids::{SpanId, TraceId, TraceParent};
pub use spans::{run_trace, RunTrace, SpanRecord, TraceBuilder};
