//! Errors of the export: a configuration that cannot be used, and a send
//! that did not get through. Messages name the endpoint and say what to do.

/// A bad export configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither `--otlp ENDPOINT` nor an `OTEL_EXPORTER_OTLP_*ENDPOINT` variable.
    #[error("no OTLP endpoint: pass `--otlp http://HOST:4318` or set OTEL_EXPORTER_OTLP_ENDPOINT")]
    NoEndpoint,
    /// The endpoint is not an http(s) URL.
    #[error("OTLP endpoint `{0}` is not an http:// or https:// URL")]
    Endpoint(String),
    /// A protocol other than OTLP/HTTP protobuf was asked for.
    #[error("OTLP protocol `{0}` is not supported: agentrace exports http/protobuf only")]
    Protocol(String),
    /// A `--header` without `=`.
    #[error("header `{0}` is not KEY=VALUE")]
    Header(String),
    /// An item of a `k=v,…` variable without `=`.
    #[error("{variable}: `{item}` is not KEY=VALUE")]
    List {
        /// The variable.
        variable: String,
        /// The bad item.
        item: String,
    },
    /// A timeout that is not a number of milliseconds.
    #[error("OTLP timeout `{0}` is not a number of milliseconds")]
    Timeout(String),
    /// A `traceparent` that is not a W3C trace context.
    #[error("`{0}` is not a W3C traceparent (00-<32 hex trace id>-<16 hex span id>-<2 hex flags>)")]
    Traceparent(String),
    /// A compression other than `gzip` or `none`.
    #[error("OTLP compression `{0}` is not supported (gzip or none)")]
    Compression(String),
}

/// A send that did not get through.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// No HTTP response at all (refused, unresolvable, timed out), after retries.
    #[error("cannot reach the OTLP endpoint {endpoint} after {attempts} attempts")]
    Unreachable {
        /// The traces URL.
        endpoint: String,
        /// Attempts made.
        attempts: u32,
        /// The last transport error.
        #[source]
        source: Box<ureq::Error>,
    },
    /// Still 429 or 5xx after every retry.
    #[error("the OTLP endpoint {endpoint} answered HTTP {status} {attempts} times: {body}")]
    GaveUp {
        /// The traces URL.
        endpoint: String,
        /// The last status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// The start of the last response body.
        body: String,
    },
    /// A status that retrying cannot fix (400, 401, 404, 415, …).
    #[error("the OTLP endpoint {endpoint} refused the spans with HTTP {status}: {body}")]
    Rejected {
        /// The traces URL.
        endpoint: String,
        /// The status.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// Compressing the body failed.
    #[error("cannot gzip the OTLP request")]
    Compress {
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
