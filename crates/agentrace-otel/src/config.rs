//! Where and how to export: the `--otlp` endpoint and `--header`s merged with
//! the standard `OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES` variables. Pure: the environment comes in as a
//! lookup function.

use std::time::Duration;

use crate::error::ConfigError;
use crate::spans::{Attribute, AttributeValue};

/// Default request timeout (the OTLP exporter default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How request bodies are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// As is.
    None,
    /// `Content-Encoding: gzip`.
    Gzip,
}

/// A resolved export configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportConfig {
    /// The full traces URL (`…/v1/traces`).
    pub traces_endpoint: String,
    /// Extra request headers (auth, tenant), environment first, then
    /// `--header`; a header named again takes the later value, in the
    /// place it was first named.
    pub headers: Vec<(String, String)>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Body compression.
    pub compression: Compression,
    /// Resource attributes: `service.name` and `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource: Vec<Attribute>,
}

impl ExportConfig {
    /// Resolves the configuration. `endpoint` is the base endpoint given on
    /// the command line (`/v1/traces` is appended, as for
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`); without it,
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as is, else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` gets `/v1/traces`. `headers` are
    /// `K=V` pairs from the command line.
    pub fn resolve(
        endpoint: Option<&str>,
        headers: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        let traces_endpoint = match endpoint.filter(|e| !e.trim().is_empty()) {
            Some(base) => traces_url(base)?,
            None => match var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                Some(full) => checked_url(full.trim())?,
                None => match var("OTEL_EXPORTER_OTLP_ENDPOINT") {
                    Some(base) => traces_url(&base)?,
                    None => return Err(ConfigError::NoEndpoint),
                },
            },
        };
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if let Some(protocol) = protocol {
            if protocol.trim() != "http/protobuf" {
                return Err(ConfigError::Protocol(protocol));
            }
        }
        // The more specific source wins for a header it names again (the
        // traces variable over the general one, `--header` over both), as
        // a flag given to override a token must: sent twice, a collector
        // would read the first.
        let mut all_headers: Vec<(String, String)> = Vec::new();
        let mut put = |key: String, value: String| match all_headers.iter_mut().find(|(known, _)| known.eq_ignore_ascii_case(&key)) {
            Some(known) => *known = (key, value),
            None => all_headers.push((key, value)),
        };
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some(list) = var(name) {
                for (key, value) in parse_pairs(&list, name)? {
                    put(key, value);
                }
            }
        }
        for header in headers {
            let (key, value) = header
                .split_once('=')
                .filter(|(key, _)| !key.trim().is_empty())
                .ok_or_else(|| ConfigError::Header(header.clone()))?;
            put(key.trim().to_owned(), value.trim().to_owned());
        }
        let timeout = match var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
        {
            Some(text) => text
                .trim()
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| ConfigError::Timeout(text))?,
            None => DEFAULT_TIMEOUT,
        };
        let compression = match var("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION")
            .or_else(|| var("OTEL_EXPORTER_OTLP_COMPRESSION"))
            .as_deref()
            .map(str::trim)
        {
            None | Some("none") => Compression::None,
            Some("gzip") => Compression::Gzip,
            Some(other) => return Err(ConfigError::Compression(other.to_owned())),
        };
        let mut resource: Vec<Attribute> = Vec::new();
        if let Some(list) = var("OTEL_RESOURCE_ATTRIBUTES") {
            for (key, value) in parse_pairs(&list, "OTEL_RESOURCE_ATTRIBUTES")? {
                set(&mut resource, &key, &value);
            }
        }
        if let Some(name) = var("OTEL_SERVICE_NAME") {
            set(&mut resource, "service.name", name.trim());
        }
        if !resource.iter().any(|(key, _)| key == "service.name") {
            resource.insert(0, string("service.name", "agentrace"));
        }
        if !resource.iter().any(|(key, _)| key == "service.version") {
            resource.push(string("service.version", env!("CARGO_PKG_VERSION")));
        }
        Ok(Self {
            traces_endpoint,
            headers: all_headers,
            timeout,
            compression,
            resource,
        })
    }
}

/// `base` + `/v1/traces`, as the OTLP spec builds it from
/// `OTEL_EXPORTER_OTLP_ENDPOINT`.
pub fn traces_url(base: &str) -> Result<String, ConfigError> {
    let base = checked_url(base.trim())?;
    Ok(format!("{}/v1/traces", base.trim_end_matches('/')))
}

fn checked_url(url: &str) -> Result<String, ConfigError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url.to_owned())
    } else {
        Err(ConfigError::Endpoint(url.to_owned()))
    }
}

/// `k=v,k2=v2` with percent-encoded values (W3C baggage style), as the OTel
/// spec reads its header and resource variables.
fn parse_pairs(list: &str, variable: &str) -> Result<Vec<(String, String)>, ConfigError> {
    list.split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| {
            let (key, value) = item
                .split_once('=')
                .filter(|(key, _)| !key.trim().is_empty())
                .ok_or_else(|| ConfigError::List {
                    variable: variable.to_owned(),
                    item: item.to_owned(),
                })?;
            Ok((key.trim().to_owned(), percent_decode(value.trim())))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let decoded = (bytes[index] == b'%')
            .then(|| bytes.get(index + 1..index + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match decoded {
            Some(byte) => {
                out.push(byte);
                index += 3;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn set(resource: &mut Vec<Attribute>, key: &str, value: &str) {
    resource.retain(|(existing, _)| existing != key);
    resource.push(string(key, value));
}

fn string(key: &str, value: &str) -> Attribute {
    (key.to_owned(), AttributeValue::String(value.to_owned()))
}
