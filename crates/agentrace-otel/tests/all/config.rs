//! Configuration from flags and OTEL_* variables.

use std::collections::HashMap;
use std::time::Duration;

use agentrace_otel::config::{Compression, ExportConfig, DEFAULT_TIMEOUT};
use agentrace_otel::spans::AttributeValue;
use agentrace_otel::ConfigError;

fn resolve(
    endpoint: Option<&str>,
    headers: &[&str],
    env: &[(&str, &str)],
) -> Result<ExportConfig, ConfigError> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let headers: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    ExportConfig::resolve(endpoint, &headers, &|name| env.get(name).cloned())
}

fn text(value: &str) -> AttributeValue {
    AttributeValue::String(value.to_owned())
}

#[test]
fn the_base_endpoint_gets_v1_traces_and_env_headers_come_before_flag_headers() {
    let config = resolve(
        Some("http://127.0.0.1:4318/"),
        &["x-tenant=blue"],
        &[
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20abc,x-a=1",
            ),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "openinference.project.name=ci,deployment.environment=test",
            ),
        ],
    );
    assert_eq!(
        config.ok(),
        Some(ExportConfig {
            traces_endpoint: "http://127.0.0.1:4318/v1/traces".to_owned(),
            headers: vec![
                ("authorization".to_owned(), "Bearer abc".to_owned()),
                ("x-a".to_owned(), "1".to_owned()),
                ("x-tenant".to_owned(), "blue".to_owned()),
            ],
            timeout: DEFAULT_TIMEOUT,
            compression: Compression::None,
            resource: vec![
                ("service.name".to_owned(), text("agentrace")),
                ("openinference.project.name".to_owned(), text("ci")),
                ("deployment.environment".to_owned(), text("test")),
                (
                    "service.version".to_owned(),
                    text(env!("CARGO_PKG_VERSION"))
                ),
            ],
        })
    );
}

/// A header named again takes the more specific value (the traces
/// variable over the general one, the flag over both), whatever its case:
/// both were sent, and a collector reads the first.
#[test]
fn a_header_named_again_takes_the_more_specific_value() {
    let config = resolve(
        Some("http://127.0.0.1:4318"),
        &["Authorization=Bearer from-the-flag"],
        &[
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer general,x-tenant=blue"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-tenant=green"),
        ],
    );
    assert_eq!(
        config.ok().map(|config| config.headers),
        Some(vec![
            ("Authorization".to_owned(), "Bearer from-the-flag".to_owned()),
            ("x-tenant".to_owned(), "green".to_owned()),
        ])
    );
}

#[test]
fn without_a_flag_the_traces_endpoint_variable_is_used_as_is_before_the_base_one() {
    let env = [
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "https://collector.example/custom/path",
        ),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
        ("OTEL_SERVICE_NAME", "my-agents"),
    ];
    let config = resolve(None, &[], &env).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        (
            config.traces_endpoint.as_str(),
            config.timeout,
            config.compression,
            config.resource[0].clone()
        ),
        (
            "https://collector.example/custom/path",
            Duration::from_millis(2500),
            Compression::Gzip,
            ("service.name".to_owned(), text("my-agents"))
        )
    );
    let base_only = resolve(
        None,
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")],
    )
    .map(|config| config.traces_endpoint);
    assert_eq!(
        base_only.ok().as_deref(),
        Some("http://127.0.0.1:4318/v1/traces")
    );
}

#[test]
fn unusable_settings_are_errors_that_say_what_is_wrong() {
    let message = |result: Result<ExportConfig, ConfigError>| match result {
        Ok(_) => "accepted".to_owned(),
        Err(error) => error.to_string(),
    };
    assert_eq!(
        [
            message(resolve(None, &[], &[])),
            message(resolve(Some("127.0.0.1:4318"), &[], &[])),
            message(resolve(Some("http://h"), &["no-equals"], &[])),
            message(resolve(
                Some("http://h"),
                &[],
                &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]
            )),
            message(resolve(
                Some("http://h"),
                &[],
                &[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")]
            )),
            message(resolve(
                Some("http://h"),
                &[],
                &[("OTEL_EXPORTER_OTLP_TIMEOUT", "10s")]
            )),
            message(resolve(
                Some("http://h"),
                &[],
                &[("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd")]
            )),
            message(resolve(
                Some("http://h"),
                &[],
                &[("OTEL_RESOURCE_ATTRIBUTES", "a=1,b")]
            )),
            message(resolve(
                Some("http://h"),
                &[],
                &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]
            )),
        ],
        [
            "no OTLP endpoint: pass `--otlp http://HOST:4318` or set OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTLP endpoint `127.0.0.1:4318` is not an http:// or https:// URL",
            "header `no-equals` is not KEY=VALUE",
            "OTLP protocol `grpc` is not supported: agentrace exports http/protobuf only",
            "OTLP protocol `http/json` is not supported: agentrace exports http/protobuf only",
            "OTLP timeout `10s` is not a number of milliseconds",
            "OTLP compression `zstd` is not supported (gzip or none)",
            "OTEL_RESOURCE_ATTRIBUTES: `b` is not KEY=VALUE",
            "accepted",
        ]
        .map(str::to_owned)
    );
}
