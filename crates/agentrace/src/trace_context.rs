//! The W3C trace context a command runs in: `TRACEPARENT`, as CI systems
//! and OpenTelemetry tooling hand it to the processes they start. `run`,
//! `tap` and `ingest` keep it with the run (`run_started.traceparent`), so
//! an export made later, without it, still joins that trace.

use agentrace_otel::TraceParent;

/// `TRACEPARENT` when it is set and valid; a bad one is named on stderr
/// and left out (it must not fail the run it came with).
pub fn from_env() -> Option<TraceParent> {
    let text = std::env::var("TRACEPARENT").ok()?;
    if text.trim().is_empty() {
        return None;
    }
    match TraceParent::parse(&text) {
        Ok(parent) => Some(parent),
        Err(error) => {
            eprintln!("warning: TRACEPARENT ignored: {error}");
            None
        }
    }
}

/// What a new run keeps of `TRACEPARENT`: the context, written out again.
pub fn to_record() -> Option<String> {
    from_env().map(|parent| parent.to_string())
}

/// The context an export joins: the one given (`--traceparent`), else
/// `TRACEPARENT`, else the one kept with the run.
pub fn for_export(given: Option<TraceParent>, recorded: Option<&str>) -> Option<TraceParent> {
    given
        .or_else(from_env)
        .or_else(|| recorded.and_then(|text| TraceParent::parse(text).ok()))
}
