//! The exporter against loopback HTTP servers that answer as scripted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use agentrace_otel::config::{Compression, ExportConfig};
use agentrace_otel::{Delivery, ExportError, Exporter, RetryPolicy};

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    request_line: String,
    content_type: Option<String>,
    tenant: Option<String>,
    body: Vec<u8>,
}

/// Serves one connection per scripted answer (status, extra header lines),
/// then stops; returns the base URL and what it saw.
fn server(answers: Vec<(u16, &'static str)>) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|error| panic!("{error}"));
    let address = listener
        .local_addr()
        .unwrap_or_else(|error| panic!("{error}"));
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        for (status, extra) in answers {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut reader = BufReader::new(stream);
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut length = 0;
            let mut content_type = None;
            let mut tenant = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap_or((&line, ""));
                let value = value.trim().to_owned();
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.parse().unwrap_or(0),
                    "content-type" => content_type = Some(value),
                    "x-tenant" => tenant = Some(value),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = sender.send(Seen {
                request_line: request_line.trim().to_owned(),
                content_type,
                tenant,
                body,
            });
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: 4\r\nConnection: close\r\n{extra}\r\nnope"
            );
            let mut stream = reader.into_inner();
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (format!("http://{address}"), receiver)
}

fn config(base: &str) -> ExportConfig {
    ExportConfig::resolve(Some(base), &["x-tenant=blue".to_owned()], &|_| None)
        .unwrap_or_else(|error| panic!("{error}"))
}

fn quick() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
    }
}

#[test]
fn a_503_is_retried_and_the_same_body_is_accepted_on_the_second_attempt() {
    let (base, seen) = server(vec![(503, ""), (200, "")]);
    let exporter = Exporter::new(config(&base), quick());
    let delivery = exporter.send(b"\x0a\x00spans");
    assert_eq!(
        delivery.ok(),
        Some(Delivery {
            status: 200,
            attempts: 2
        })
    );
    let request = Seen {
        request_line: "POST /v1/traces HTTP/1.1".to_owned(),
        content_type: Some("application/x-protobuf".to_owned()),
        tenant: Some("blue".to_owned()),
        body: b"\x0a\x00spans".to_vec(),
    };
    let got: Vec<Seen> = seen.try_iter().collect();
    assert_eq!(got, vec![request.clone(), request]);
}

#[test]
fn a_429_waits_for_retry_after_capped_by_the_policy() {
    let (base, seen) = server(vec![(429, "Retry-After: 1\r\n"), (200, "")]);
    let exporter = Exporter::new(config(&base), quick());
    let started = Instant::now();
    let delivery = exporter.send(b"x");
    assert_eq!(
        delivery.ok(),
        Some(Delivery {
            status: 200,
            attempts: 2
        })
    );
    // 1 s asked, capped to the policy's 50 ms.
    assert!(started.elapsed() < Duration::from_millis(900));
    assert_eq!(seen.try_iter().count(), 2);
}

#[test]
fn a_400_is_not_retried_and_the_error_names_endpoint_status_and_body() {
    let (base, seen) = server(vec![(400, "")]);
    let exporter = Exporter::new(config(&base), quick());
    let error = exporter.send(b"x").err().map(|error| error.to_string());
    assert_eq!(
        error,
        Some(format!(
            "the OTLP endpoint {base}/v1/traces refused the spans with HTTP 400: nope"
        ))
    );
    assert_eq!(seen.try_iter().count(), 1);
}

#[test]
fn a_server_that_keeps_failing_is_given_up_after_the_last_attempt() {
    let (base, seen) = server(vec![(502, ""), (502, ""), (502, "")]);
    let exporter = Exporter::new(config(&base), quick());
    let error = exporter.send(b"x").err().map(|error| error.to_string());
    assert_eq!(
        error,
        Some(format!(
            "the OTLP endpoint {base}/v1/traces answered HTTP 502 3 times: nope"
        ))
    );
    assert_eq!(seen.try_iter().count(), 3);
}

#[test]
fn an_unreachable_endpoint_is_a_clear_error_after_bounded_retries() {
    // A port that was just free: nothing listens there.
    let base = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|error| panic!("{error}"));
        format!(
            "http://{}",
            listener
                .local_addr()
                .unwrap_or_else(|error| panic!("{error}"))
        )
    };
    let exporter = Exporter::new(config(&base), quick());
    let started = Instant::now();
    let error = exporter.send(b"x");
    assert!(started.elapsed() < Duration::from_secs(5));
    match error {
        Err(ExportError::Unreachable {
            endpoint, attempts, ..
        }) => {
            assert_eq!((endpoint, attempts), (format!("{base}/v1/traces"), 3));
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
}

#[test]
fn gzip_compression_sends_a_gzip_body_that_inflates_to_the_request() {
    let (base, seen) = server(vec![(200, "")]);
    let mut config = config(&base);
    config.compression = Compression::Gzip;
    let exporter = Exporter::new(config, quick());
    assert_eq!(
        exporter.send(b"payload").ok(),
        Some(Delivery {
            status: 200,
            attempts: 1
        })
    );
    let body = seen
        .try_iter()
        .next()
        .map(|seen| seen.body)
        .unwrap_or_default();
    let mut inflated = Vec::new();
    let _ = flate2::read::GzDecoder::new(body.as_slice()).read_to_end(&mut inflated);
    assert_eq!(inflated, b"payload");
}
