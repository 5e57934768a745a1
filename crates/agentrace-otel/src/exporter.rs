//! Sends encoded OTLP bodies over HTTP: one POST per body to the traces
//! endpoint, retried with exponential backoff on 429 and 5xx and on
//! connection failures. The only I/O of this crate; it reads no run and
//! writes no file, so a failed export can never harm the local run.

use std::io::Write as _;
use std::thread;
use std::time::Duration;

use flate2::write::GzEncoder;

use crate::config::{Compression, ExportConfig};
use crate::error::ExportError;

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all (the first included).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubled after each retry.
    pub initial_backoff: Duration,
    /// Longest wait between two attempts (a `Retry-After` is capped to it too).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 5 attempts, waiting 0.5 s, 1 s, 2 s, 4 s: an unreachable endpoint is
    /// reported within about 8 s plus the request timeouts.
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }
}

/// What a successful send took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// The HTTP status of the accepting response.
    pub status: u16,
    /// Attempts made (1 when the first one was accepted).
    pub attempts: u32,
}

/// An OTLP/HTTP protobuf trace exporter.
#[derive(Debug)]
pub struct Exporter {
    config: ExportConfig,
    retry: RetryPolicy,
    agent: ureq::Agent,
}

impl Exporter {
    /// An exporter for `config`.
    pub fn new(config: ExportConfig, retry: RetryPolicy) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("agentrace/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Self {
            config,
            retry,
            agent,
        }
    }

    /// The configuration it sends with.
    pub fn config(&self) -> &ExportConfig {
        &self.config
    }

    /// The traces URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.config.traces_endpoint
    }

    /// Posts one encoded `ExportTraceServiceRequest`, retrying on 429, 5xx
    /// and connection failures.
    pub fn send(&self, body: &[u8]) -> Result<Delivery, ExportError> {
        let endpoint = &self.config.traces_endpoint;
        let body = match self.config.compression {
            Compression::None => body.to_vec(),
            Compression::Gzip => gzip(body).map_err(|source| ExportError::Compress { source })?,
        };
        let mut backoff = self.retry.initial_backoff;
        let attempts = self.retry.max_attempts.max(1);
        for attempt in 1..=attempts {
            let last = attempt == attempts;
            let mut request = self
                .agent
                .post(endpoint)
                .header("Content-Type", "application/x-protobuf");
            if self.config.compression == Compression::Gzip {
                request = request.header("Content-Encoding", "gzip");
            }
            for (key, value) in &self.config.headers {
                request = request.header(key, value);
            }
            let wait = match request.send(&body[..]) {
                Ok(mut response) => {
                    let status = response.status().as_u16();
                    if (200..300).contains(&status) {
                        return Ok(Delivery {
                            status,
                            attempts: attempt,
                        });
                    }
                    let retry_after = response
                        .headers()
                        .get("retry-after")
                        .and_then(|value| value.to_str().ok())
                        .and_then(|value| value.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let text = response
                        .body_mut()
                        .with_config()
                        .limit(4096)
                        .read_to_string()
                        .unwrap_or_default();
                    let retryable = status == 429 || (500..600).contains(&status);
                    if !retryable {
                        return Err(ExportError::Rejected {
                            endpoint: endpoint.clone(),
                            status,
                            body: text,
                        });
                    }
                    if last {
                        return Err(ExportError::GaveUp {
                            endpoint: endpoint.clone(),
                            status,
                            attempts,
                            body: text,
                        });
                    }
                    retry_after.unwrap_or(backoff).min(self.retry.max_backoff)
                }
                Err(source) => {
                    if last {
                        return Err(ExportError::Unreachable {
                            endpoint: endpoint.clone(),
                            attempts,
                            source: Box::new(source),
                        });
                    }
                    backoff
                }
            };
            thread::sleep(wait);
            backoff = (backoff * 2).min(self.retry.max_backoff);
        }
        // The loop returns on its last attempt; this is for the type checker.
        Err(ExportError::GaveUp {
            endpoint: endpoint.clone(),
            status: 0,
            attempts,
            body: String::new(),
        })
    }
}

fn gzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(body)?;
    encoder.finish()
}
