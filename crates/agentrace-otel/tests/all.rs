//! Integration tests of agentrace-otel: span building from real captures,
//! the OTLP encoding, the configuration, and the exporter against loopback
//! HTTP servers.

mod all {
    mod config;
    mod exporter;
    mod spans;
    mod support;
}
