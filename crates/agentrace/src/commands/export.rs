//! `agentrace export`: sends recorded runs to an OpenTelemetry backend
//! (`--otlp`), or writes one run as a shareable file (`--html`,
//! `--markdown`). Export only reads a run: a failed send leaves the local run
//! exactly as it was.

use std::path::PathBuf;

use agentrace_core::model::RunId;
use agentrace_otel::proto::encode_requests;
use agentrace_otel::{ExportConfig, Exporter, RetryPolicy, TraceBuilder, TraceId, TraceParent};
use agentrace_store::{Home, LogReader};
use anyhow::Context as _;
use clap::{ArgGroup, Args};

use crate::output::Out;
use crate::report;

/// Default `--max-bytes` of a report: 5 MB.
pub const DEFAULT_MAX_BYTES: usize = 5_000_000;

/// Arguments of `agentrace export`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["otlp", "html", "markdown"])))]
pub struct ExportArgs {
    /// Send the runs as OTLP/HTTP protobuf spans to this base endpoint
    /// (`/v1/traces` is appended, as for OTEL_EXPORTER_OTLP_ENDPOINT); with
    /// no value, or a run in its place (`--otlp RUN`),
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is
    /// used.
    #[arg(long, value_name = "ENDPOINT", num_args = 0..=1, default_missing_value = "")]
    otlp: Option<String>,
    /// An extra OTLP request header (repeatable), after OTEL_EXPORTER_OTLP_HEADERS.
    #[arg(long = "header", value_name = "KEY=VALUE", requires = "otlp")]
    headers: Vec<String>,
    /// Join this W3C trace context (`00-<trace id>-<span id>-<flags>`):
    /// each run's top-level agent spans become children of its span, in
    /// its trace (default: TRACEPARENT, else the context kept with the run).
    #[arg(long, value_name = "TRACEPARENT", requires = "otlp", value_parser = traceparent)]
    traceparent: Option<TraceParent>,
    /// Write one run as a self-contained HTML page (no network needed to view it).
    #[arg(long, conflicts_with = "markdown")]
    html: bool,
    /// Write one run as Markdown, for pasting into an issue.
    #[arg(long)]
    markdown: bool,
    /// Where to write the report (default: stdout).
    #[arg(short = 'o', long, value_name = "FILE", conflicts_with = "otlp")]
    output: Option<PathBuf>,
    /// Size bound of a report in bytes: agent texts are shortened and events
    /// left out past it, with a count of what was left out.
    // No report fits in 0 bytes: 0 was taken and gave the smallest report
    // with a warning that it was over; refused by clap instead, as other
    // bad flag values are (a usage error, exit 2).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_bytes: usize,
    /// Run ids, unique prefixes of them, or `latest` (one for a report).
    // Not required with `--otlp`: its optional value may be the first run
    // (see `otlp_target`), so clap cannot tell that none was given.
    #[arg(required_unless_present = "otlp", value_name = "RUN")]
    runs: Vec<String>,
}

/// Runs `agentrace export`.
pub fn run(home: &Home, args: ExportArgs, out: &mut Out) -> anyhow::Result<()> {
    if let Some(value) = &args.otlp {
        let (endpoint, runs) = otlp_target(home, value, &args.runs)?;
        let exporter = exporter(endpoint, &args.headers)?;
        for run in runs {
            let id = home.resolve(run)?;
            let (trace_id, spans) = export_run(home, &id, &exporter, args.traceparent)?;
            eprintln!(
                "exported {id}: {spans} spans, trace {trace_id}, to {}",
                exporter.endpoint()
            );
            out.line(format!("{id} {trace_id}"))?;
        }
        return Ok(());
    }
    let flag = if args.html { "--html" } else { "--markdown" };
    let [run] = args.runs.as_slice() else {
        // The command line holds more than a report can: a usage error
        // (exit 2), as clap gives its own.
        return Err(clap::Error::raw(
            clap::error::ErrorKind::TooManyValues,
            format!(
                "a report is of one run, {} were given\n\nhint: run `agentrace export {flag} RUN -o FILE` once per run\n\nFor more information, try '--help'.\n",
                args.runs.len()
            ),
        )
        .into());
    };
    let id = home.resolve(run)?;
    let format = if args.html {
        report::Format::Html
    } else {
        report::Format::Markdown
    };
    let text = report::render_run(home, &id, format, args.max_bytes)?;
    if text.len() > args.max_bytes {
        eprintln!(
            "warning: the report of {id} is {} bytes, over --max-bytes {}: every timeline event was left out, and its summary, result, warnings and agent tree alone are larger",
            text.len(),
            args.max_bytes
        );
    }
    match &args.output {
        Some(path) => {
            write_output(path, text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {} ({} bytes)", path.display(), text.len());
        }
        None => out.line(text.trim_end_matches('\n'))?,
    }
    Ok(())
}

/// Writes the report to `path`, the file the user names with `--output`.
/// A regular file (or none yet) is replaced whole: written beside it, then
/// renamed over it, keeping its permissions, so a write that fails (a full
/// disk) leaves the report that was there (it was emptied first). A link,
/// a device (`/dev/stdout`) or a pipe is written in place, as named.
#[expect(clippy::disallowed_methods, reason = "the file the user names with `--output`, not the home's")]
fn write_output(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    // The mode of the file replaced; none for a new one.
    let kept = match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_file() => Some(metadata.permissions().mode() & 0o7777),
        Ok(_) => return std::fs::write(path, bytes),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let beside = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        // A new file as `--output` made one before (the umask applies).
        .mode(kept.unwrap_or(0o666))
        .open(&beside)
        .and_then(|mut file| {
            // The umask narrowed the mode of the file it replaces.
            if let Some(mode) = kept {
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            }
            file.write_all(bytes)?;
            file.flush()
        })
        .and_then(|()| std::fs::rename(&beside, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&beside);
    }
    written
}

/// The endpoint and the runs `export --otlp VALUE RUN…` means. `--otlp`
/// takes an optional value, so clap hands `export --otlp RUN` the run as
/// the endpoint: a value that is no endpoint (as the export config reads
/// one) but names a run is the first run, and the endpoint comes from the
/// environment.
fn otlp_target<'a>(home: &Home, value: &'a str, runs: &'a [String]) -> anyhow::Result<(Option<&'a str>, Vec<&'a str>)> {
    let given = runs.iter().map(String::as_str);
    let (endpoint, runs): (Option<&str>, Vec<&str>) = if value.trim().is_empty() {
        (None, given.collect())
    } else if agentrace_otel::config::traces_url(value).is_ok() {
        (Some(value), given.collect())
    } else {
        match home.resolve(value) {
            Ok(_) => (None, std::iter::once(value).chain(given).collect()),
            Err(error) => anyhow::bail!(
                "`{value}` after --otlp is neither an OTLP endpoint (an http:// or https:// URL) nor a run: {error}\nhint: `agentrace export --otlp http://HOST:4318 RUN…`, or `agentrace export --otlp RUN…` with OTEL_EXPORTER_OTLP_ENDPOINT set"
            ),
        }
    };
    if runs.is_empty() {
        anyhow::bail!("no run to export\nhint: `agentrace export --otlp [ENDPOINT] RUN…`, a run being its id, a unique prefix of it, or `latest`");
    }
    Ok((endpoint, runs))
}

fn traceparent(text: &str) -> Result<TraceParent, String> {
    TraceParent::parse(text).map_err(|error| error.to_string())
}

/// An exporter for `--otlp [ENDPOINT]` and `--header`s, the `OTEL_*`
/// variables of this process included.
pub fn exporter(endpoint: Option<&str>, headers: &[String]) -> anyhow::Result<Exporter> {
    let config = ExportConfig::resolve(endpoint, headers, &|name| std::env::var(name).ok())?;
    Ok(Exporter::new(config, RetryPolicy::default()))
}

/// Sends one recorded run as one trace (`traceparent`'s, when one is given
/// or known: see [`crate::trace_context::for_export`]); returns its trace
/// id and span count. Reads the log twice (folded by the run book first,
/// for its view and corrections) so memory grows with agents and tool
/// calls, not with events.
pub fn export_run(
    home: &Home,
    id: &RunId,
    exporter: &Exporter,
    traceparent: Option<TraceParent>,
) -> anyhow::Result<(TraceId, usize)> {
    let path = home.log_path(id);
    // With the warnings `show` lists (the detectors' too), as the config
    // file in the home sets them.
    let (view, finals) = crate::report::shown_run(home, id)?;
    let parent = crate::trace_context::for_export(traceparent, view.run.traceparent.as_deref());
    let mut builder = TraceBuilder::new(id.as_str()).with_parent(parent);
    for envelope in LogReader::open(&path)? {
        let mut envelope = envelope?;
        finals.apply(&mut envelope);
        builder.observe(&envelope);
    }
    let trace = builder.finish(&view);
    for body in encode_requests(&exporter.config().resource, &trace) {
        exporter.send(&body).with_context(|| {
            format!(
                "run {id} was not exported; it is unchanged in {}",
                path.display()
            )
        })?;
    }
    Ok((trace.trace_id, trace.spans.len()))
}

/// `--otlp` on `run codex` and `tap`: exports the run when it ends. A failed
/// export is a warning, never a failed run.
pub fn export_after_run(home: &Home, id: &RunId, endpoint: &str) {
    let endpoint = Some(endpoint).filter(|e| !e.is_empty());
    let result = exporter(endpoint, &[]).and_then(|exporter| {
        let (trace_id, spans) = export_run(home, id, &exporter, None)?;
        eprintln!(
            "exported {id}: {spans} spans, trace {trace_id}, to {}",
            exporter.endpoint()
        );
        Ok(())
    });
    if let Err(error) = result {
        eprintln!("warning: {error:#}");
        eprintln!("hint: `agentrace export --otlp ENDPOINT {id}` sends it again later");
    }
}
