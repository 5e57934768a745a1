//! `agentrace runs` (filtered, paged), `agentrace search` and `agentrace`
//! with no command: each reads the catalog ([`crate::catalog`]), never the
//! whole runs folder.

use agentrace_core::days;
use agentrace_core::model::{Provider, RunStatus};
use agentrace_core::state::{CostStatus, RunSummary};
use agentrace_store::catalog::{ListedRun, RunFilter, RunSort, WarningFilter, RUN_STATUSES};
use agentrace_store::{Catalog, Home};
use clap::{Args, ValueEnum};

use crate::output::Out;
use crate::day_range::DayArg;
use crate::render::{one_line, short_tokens};
use crate::zone::Zone;

/// Providers `--provider` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    /// OpenAI Codex.
    Codex,
    /// Claude Code.
    Claude,
}

/// Arguments of `agentrace runs`.
#[derive(Debug, Args, Default)]
pub struct RunsArgs {
    /// Print `{"runs": [...], "total": N}` instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Only runs of this status: running, done, failed, interrupted; or
    /// live: running and still at work (`running` also lists a run whose
    /// session ended mid-turn, a crash or a kill: nothing will end it).
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// Only runs with this warning code (as `check` and `show` name it,
    /// e.g. `helper_result_used_as_done`), or `any` for runs with at least
    /// one warning.
    #[arg(long, value_name = "CODE")]
    pub warning: Option<String>,
    /// The order: `started` (newest first), or the largest first of
    /// `cost`, `tokens`, `duration` or `warnings` (ties newest first; an
    /// unpriced cost last).
    #[arg(long, value_name = "ORDER", value_parser = sort_arg(), default_value = "started")]
    pub sort: RunSort,
    #[command(flatten)]
    pub scope: Scope,
    /// At most this many runs (all when not given).
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Skip this many of the newest first.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: u64,
}

/// `--sort`'s value: one of the catalog's orders, by its name.
fn sort_arg() -> impl clap::builder::TypedValueParser<Value = RunSort> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(RunSort::ALL.map(RunSort::as_str)).map(|name: String| RunSort::parse(&name).unwrap_or_default())
}

/// The warning filter `--warning` names: `any`, or a code a record may
/// carry (a typo, or `silent_agent`, which is judged only when a run is
/// read, would list nothing and look like a clean history).
pub fn warning_filter(flag: &str, text: &str) -> anyhow::Result<WarningFilter> {
    use agentrace_store::catalog::UnlistedCode;
    WarningFilter::parse(text).map_err(|why| match why {
        UnlistedCode::Unknown => anyhow::anyhow!(
            "{flag} {text}: not a warning code; expected `any` or one of {}",
            agentrace_core::warnings::listable_codes().collect::<Vec<_>>().join(", ")
        ),
        UnlistedCode::ReadTime => anyhow::anyhow!(
            "{flag} {text}: a list of runs cannot keep to this code: it is judged against the clock when a run is read, and no run's record carries it\nhint: `agentrace check RUN` or `agentrace show RUN` judge it (and `top` marks a silent agent)"
        ),
    })
}

/// Which runs and days `runs` and `search` keep to.
#[derive(Debug, Args, Default)]
pub struct Scope {
    /// Only runs of this provider.
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,
    /// Only runs whose project (working folder) contains this text.
    #[arg(long, value_name = "TEXT")]
    pub project: Option<String>,
    /// From this day (of `--tz`) on: runs by their start, search hits by
    /// their own time. `YYYY-MM-DD`, `YYYYMMDD`, `today`, `yesterday`, `7d`
    /// (days ago) or `2w` (weeks ago).
    #[arg(long, value_name = "D", value_parser = crate::day_range::parse_day)]
    pub since: Option<DayArg>,
    /// Up to this day (of `--tz`, included), as `--since`.
    #[arg(long, value_name = "D", value_parser = crate::day_range::parse_day)]
    pub until: Option<DayArg>,
    /// The time zone of `--since`, `--until` and the start times shown:
    /// `UTC`, `local` (this machine's), a name like `Europe/Paris`, or an
    /// offset like `+05:30`. Default: `$AGENTRACE_TZ`, else UTC.
    #[arg(long, value_name = "ZONE", value_parser = crate::zone::parse_zone)]
    pub tz: Option<Zone>,
}

impl Scope {
    /// The zone of its days and times: `--tz`, else `AGENTRACE_TZ`'s.
    pub fn zone(&self) -> &Zone {
        crate::zone::given_or_env(self.tz.as_ref())
    }

    /// `--since` and `--until` as times (ms): from the start of one day to
    /// the end of the other, in `--tz`.
    pub(crate) fn bounds(&self) -> anyhow::Result<(Option<i64>, Option<i64>)> {
        let range = crate::day_range::range(self.since.as_ref(), self.until.as_ref(), self.zone())?;
        Ok((range.since.map(|at| at.0), range.until.map(|at| at.0)))
    }
}

impl From<ProviderArg> for Provider {
    fn from(provider: ProviderArg) -> Self {
        match provider {
            ProviderArg::Codex => Provider::Codex,
            ProviderArg::Claude => Provider::Claude,
        }
    }
}

/// The filter of `--provider`, `--project`, … as the catalog takes it.
fn filter_of(args: &RunsArgs) -> anyhow::Result<RunFilter> {
    let RunsArgs { status, warning, sort, scope, limit, offset, .. } = args;
    let (since, until) = scope.bounds()?;
    if let Some(status) = status {
        anyhow::ensure!(RUN_STATUSES.contains(&status.as_str()), "--status {status}: expected {}", RUN_STATUSES.join(", "));
    }
    Ok(RunFilter {
        provider: scope.provider.map(|provider| Provider::from(provider).as_str().to_owned()),
        project: scope.project.clone(),
        status: status.clone(),
        since,
        until,
        warning: warning.as_deref().map(|text| warning_filter("--warning", text)).transpose()?,
        sort: *sort,
        limit: *limit,
        offset: *offset,
    })
}

/// The runs a filter keeps, newest first, with the listed warnings (the
/// codes the home's configuration allows left out), and how many match.
pub fn listed(home: &Home, catalog: &Catalog, filter: &RunFilter) -> anyhow::Result<(Vec<ListedRun>, u64)> {
    let (runs, total) = catalog.list_runs(filter)?;
    let config = crate::warning_config::config(home, &crate::warning_config::WarningArgs::default())?;
    Ok((runs.into_iter().map(|listed| ListedRun { run: config.listed(listed.run), ..listed }).collect(), total))
}

/// Runs `agentrace runs`.
pub fn run(home: &Home, args: &RunsArgs, out: &mut Out) -> anyhow::Result<()> {
    let filter = filter_of(args)?;
    if home.background_import().is_some() {
        eprintln!("{IMPORT_AT_WORK}");
    }
    let catalog = crate::catalog::synced(home)?;
    let (runs, total) = listed(home, &catalog, &filter)?;
    if args.json {
        out.json_pretty(&serde_json::json!({ "runs": runs, "total": total }))?;
    } else {
        table(out, &runs, args.scope.zone())?;
        let shown = args.offset + runs.len() as u64;
        if runs.is_empty() && total > 0 {
            eprintln!("{} match, none in this page (--offset {}, --limit {})", crate::render::count(total, "run", "runs"), args.offset, args.limit.map_or_else(|| "none".to_owned(), |limit| limit.to_string()));
        } else if shown < total {
            eprintln!("{} of {total} runs shown; `--offset {shown}` shows the next", runs.len());
        }
    }
    Ok(())
}

/// A cost as a list shows it: in cents, `≥` before a floor, `$?` when
/// nothing could be priced, and `<$0.01` for a cost that is not nothing
/// but rounds to it (`$0.00` read as free beside `show`'s `$0.0041`).
fn cost_text(run: &RunSummary) -> String {
    match (run.cost, run.cost_status) {
        (Some(cost), CostStatus::Exact) => crate::render::cents(cost),
        // A floor is at least what it says, even when that is `$0.00`.
        (Some(cost), CostStatus::Floor) => format!("≥${cost:.2}"),
        (None, _) | (_, CostStatus::Unknown) => "$?".to_owned(),
    }
}

/// A duration in a few characters (`0.6s`, `42s`, `12m`, `3h05`).
fn duration_text(run: &RunSummary) -> String {
    run.duration_ms().map_or_else(|| "-".to_owned(), millis_text)
}

/// [`duration_text`] of a run that took `millis`.
fn millis_text(millis: i64) -> String {
    let millis = millis.max(0);
    // Under ten seconds a tenth, rounded as `show` gives it: a run of 0.6 s
    // was `0s` beside `show`'s `(0.6 s)`. Past it whole units, cut.
    let tenths = (millis + 50) / 100;
    if tenths < 100 {
        return format!("{}.{}s", tenths / 10, tenths % 10);
    }
    let seconds = (millis / 1000).max(10);
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        _ => format!("{}h{:02}", seconds / 3600, seconds / 60 % 60),
    }
}

/// The last two parts of a folder (`work/agentrace`), in `width`.
fn project_text(project: Option<&str>, width: usize) -> String {
    let Some(project) = project else { return "-".to_owned() };
    let parts: Vec<&str> = project.trim_end_matches('/').rsplit('/').take(2).collect();
    let short: Vec<&str> = parts.into_iter().rev().collect();
    one_line(&short.join("/"), width)
}

/// The widths of a runs table's run id, project and result columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Widths {
    id: usize,
    project: usize,
    result: usize,
    /// The result on a line of its own under its run, indented: on a
    /// terminal too narrow for it beside the rest.
    result_below: bool,
    /// The id on a line of its own, the figures indented under it, then
    /// the result: on a terminal too narrow for the id and the figures
    /// side by side (a run id is 42 characters, the figures about 80).
    stacked: bool,
}

impl Widths {
    /// Where output is read by a program (a pipe, a file): the one fixed
    /// layout, whatever the runs.
    const FIXED: Widths = Widths { id: 44, project: 24, result: 50, result_below: false, stacked: false };

    /// On a terminal `columns` wide: the id column as wide as the longest
    /// id listed (ids stay whole: they are what `show` takes), and the
    /// project and result sharing what is left, so that each run stays on
    /// one line. Where that would leave the result fewer than 24
    /// characters, it goes on a line of its own under its run; where the
    /// id, the figures and a project of 12 do not fit on one line, the id
    /// does too ([`Widths::stacked`]).
    fn fitted(runs: &[ListedRun], columns: usize) -> Widths {
        let id = runs.iter().map(|listed| listed.run.id.as_str().chars().count()).max().unwrap_or(3).clamp(3, 44);
        // Provider, started, time, agents, tokens, cost and warnings, and
        // the ten spaces between the columns.
        let others = 8 + 17 + 6 + 6 + 7 + 9 + 4 + 10;
        let left = columns.saturating_sub(id + others);
        let result = columns.saturating_sub(5).max(20);
        // A row holds the id, the figures with their nine spaces (65
        // characters), and a project of at least 12.
        if columns < id + 65 + 12 {
            // The figures under the id: the indent, the columns but the
            // id, and the eight spaces between them.
            let project = columns.saturating_sub(4 + 8 + 17 + 6 + 6 + 7 + 9 + 4 + 8).clamp(12, 25);
            return Widths { id, project: project - 1, result, result_below: true, stacked: true };
        }
        // A text cut to `n` characters ends with one more, `…`.
        let project = (left / 3).clamp(12, 25);
        if left >= project + 24 {
            return Widths { id, project: project - 1, result: left - project - 1, result_below: false, stacked: false };
        }
        let project = left.clamp(12, 25);
        Widths { id, project: project - 1, result, result_below: true, stacked: false }
    }
}

/// The runs as a table: id, provider, project, started, duration,
/// agents, tokens, cost, warnings, result. On a terminal it fits its width
/// ([`Widths::fitted`]); elsewhere its layout is fixed.
pub fn table(out: &mut Out, runs: &[ListedRun], zone: &Zone) -> anyhow::Result<()> {
    let widths = crate::output::terminal_columns().map_or(Widths::FIXED, |columns| Widths::fitted(runs, columns));
    table_of(out, runs, zone, widths)
}

fn table_of(out: &mut Out, runs: &[ListedRun], zone: &Zone, widths: Widths) -> anyhow::Result<()> {
    if runs.is_empty() {
        out.line("no runs")?;
        return Ok(());
    }
    let Widths { id: id_width, project: project_width, result: result_width, result_below, stacked } = widths;
    let figures = |cells: [&str; 8]| {
        let [provider, project, started, time, agents, tokens, cost, warnings] = cells;
        format!("{provider:<8} {project:<project_width$} {started:<17} {time:>6} {agents:>6} {tokens:>7} {cost:>9} {warnings:>4}")
    };
    let header = figures(["PROVIDER", "PROJECT", "STARTED", "TIME", "AGENTS", "TOKENS", "COST", "WARN"]);
    let header = if stacked {
        out.line("RUN")?;
        format!("    {header}")
    } else {
        format!("{:<id_width$} {header}", "RUN")
    };
    if result_below {
        out.line(header)?;
        out.line("    RESULT")?;
    } else {
        out.line(format!("{header}  RESULT"))?;
    }
    for ListedRun { run, project, agents } in runs {
        let started = run.started_at.map_or_else(|| "-".to_owned(), |at| days::minute_of(at, &zone.tz));
        let result = match (&run.result, &run.error) {
            (Some(result), _) => result.clone(),
            (None, Some(error)) => format!("error: {error}"),
            // Stopped mid-turn (a crash, a kill, a capture cut short): not
            // at work, whatever its status says.
            (None, None) if run.session_ended => "ended mid-turn, no answer".to_owned(),
            (None, None) => run.status.as_str().to_owned(),
        };
        // The root answered, but its helpers still work, or it is at work
        // on a later turn: that answer is not the session's last word.
        let result = if run.helpers_working {
            format!("(helpers working) {result}")
        } else if run.session_ended && (run.result.is_some() || run.error.is_some()) {
            format!("(ended mid-turn) {result}")
        } else if run.status == RunStatus::Running && (run.result.is_some() || run.error.is_some()) {
            format!("(running) {result}")
        } else {
            result
        };
        let provider = serde_json::to_value(run.provider).ok().and_then(|value| value.as_str().map(str::to_owned)).unwrap_or_default();
        let columns = figures([
            &provider,
            &project_text(project.as_deref(), project_width),
            &started,
            &duration_text(run),
            &agents.to_string(),
            // None reported is no figure (as `show` and the viewer's list
            // have it), not a run that used `0`.
            &run.tokens.map_or_else(|| "-".to_owned(), |tokens| short_tokens(tokens.total_tokens)),
            &cost_text(run),
            &run.problem_count().to_string(),
        ]);
        let columns = if stacked {
            out.line(run.id.as_str())?;
            format!("    {columns}")
        } else {
            format!("{:<id_width$} {columns}", one_line(run.id.as_str(), id_width))
        };
        if result_below {
            out.line(columns)?;
            out.line(format!("    {}", one_line(&result, result_width)))?;
        } else {
            out.line(format!("{columns}  {}", one_line(&result, result_width)))?;
        }
    }
    Ok(())
}

/// How many runs the first command lists.
const FIRST_PAGE: u64 = 20;

/// What the first command imported before listing.
enum FirstImport {
    /// What grew since the last import (or the whole history).
    Whole,
    /// A large history's newest sessions: the rest is left to an import
    /// in the background, started once they are listed; `files` session
    /// files in all.
    Newest { files: usize },
    /// Nothing: another import is at work (the one a first command
    /// started in the background, say).
    Elsewhere,
}

/// Said while another import is at work in the home.
pub(crate) const IMPORT_AT_WORK: &str = "note: an import is bringing in your history in the background; these are the runs imported so far (`agentrace import` waits for it to end)";

/// The first command's import: what grew, as `import` reads it; or, on a
/// home no history was imported into yet whose history is large, the
/// newest sessions only (listed at once), the rest by an import started
/// in the background; or nothing while another import is at work (it
/// would only be waited for).
fn first_import(home: &Home, import: &crate::commands::import::ImportArgs) -> anyhow::Result<FirstImport> {
    use crate::commands::import;
    if home.background_import().is_some() {
        return Ok(FirstImport::Elsewhere);
    }
    // Sessions an older agentrace imported are read again (see
    // `import::read_again_when_attributed_otherwise`): forgotten first, so
    // that a large history is read as a first one is, the newest at once
    // and the rest in the background, rather than whole before the list.
    let catalog = crate::catalog::open(home)?;
    {
        let _lock = agentrace_store::ImportLock::acquire(home, || {
            eprintln!("another import of {} is running; waiting for it to end", home.root().display());
        })?;
        import::read_again_when_attributed_otherwise(&catalog, false)?;
    }
    let nothing_imported = catalog.imported_session_count()? == 0;
    // Closed before the imports below open it themselves.
    drop(catalog);
    if nothing_imported {
        // A session may be several files (a Codex root and its children's
        // rollouts, written together): four a run fill the first page.
        if let (files, Some(newest)) = import::newest_when_large(import, 4 * FIRST_PAGE as usize)? {
            // Quietly: the note after the list says what was imported.
            let quiet = import::ImportArgs::quiet_of(None, None);
            import::import_in(home, &quiet, crate::sources::session_feed::TornLines::Feed, &import::Scope::Newest(newest))?;
            return Ok(FirstImport::Newest { files });
        }
    }
    import::run_unless_followed(home, import)?;
    Ok(FirstImport::Whole)
}

/// `agentrace` with no command: imports what grew in the Codex and Claude
/// folders (a progress bar on a terminal), then lists the newest runs; the
/// bundled samples only when there is no history at all.
pub fn first_command(home: &Home, out: &mut Out) -> anyhow::Result<()> {
    let zone = crate::zone::from_env();
    let import = crate::commands::import::ImportArgs::quiet_of(None, None).with_quiet(false);
    let imported = first_import(home, &import)?;
    let catalog = crate::catalog::synced(home)?;
    let mut filter = RunFilter { limit: Some(FIRST_PAGE), ..RunFilter::default() };
    crate::commands::samples::retire_placeholders(home, &catalog)?;
    let (mut runs, total) = listed(home, &catalog, &filter)?;
    // Started once the list was read: an import writing the catalog would
    // have kept the list waiting for its writes.
    let background = match imported {
        FirstImport::Newest { files } => {
            let pid = crate::commands::import::import_in_background(home)?;
            home.note_background_import(pid)?;
            Some((files, pid))
        }
        FirstImport::Whole | FirstImport::Elsewhere => None,
    };
    if total == 0 {
        eprintln!("No Codex or Claude Code history found, and no runs in {} yet; recording the bundled sample runs.", home.root().display());
        crate::commands::samples::record_placeholders(home)?;
        catalog.sync(home)?;
        filter.limit = Some(FIRST_PAGE);
        (runs, _) = listed(home, &catalog, &filter)?;
        table(out, &runs, zone)?;
        eprintln!("hint: `agentrace show sample-codex-v1-basic` shows the agent tree and who answered");
        // The samples' `$?` and their UTC times need saying as much as a
        // history's do: this is the list a new user reads first.
        cost_hint(home, &runs);
        zone_hint();
        return Ok(());
    }
    table(out, &runs, zone)?;
    if total > runs.len() as u64 {
        eprintln!("{} of {total} runs; `agentrace runs --offset {}` lists more, `agentrace search TEXT` finds text in them", runs.len(), runs.len());
    }
    if let Some((files, pid)) = background {
        eprintln!(
            "note: your history is large ({files} session files): the newest sessions are listed, and the rest is being imported in the background (pid {pid}, log {}); `agentrace runs` lists runs as they come, `agentrace import` waits for it to end",
            home.background_import_log_path().display()
        );
    } else if matches!(imported, FirstImport::Elsewhere) {
        eprintln!("{IMPORT_AT_WORK}");
    }
    eprintln!("hint: `agentrace show latest` shows the newest run; `agentrace usage` tokens per agent; `agentrace --help` lists commands");
    cost_hint(home, &runs);
    // Sessions going on now: where to watch each agent at work.
    let live = runs.iter().filter(|listed| listed.run.at_work() || listed.run.helpers_working).count();
    if live > 0 {
        let sessions = if live == 1 { "1 session is".to_owned() } else { format!("{live} sessions are") };
        eprintln!("hint: {sessions} live; `agentrace top` follows what each agent does now (or `agentrace serve --watch`, page /live)");
    }
    zone_hint();
    Ok(())
}

/// The first command's hint for a cost its list cannot give whole: where
/// the missing prices are named and how to give them. Only of a run with
/// tokens to price: one that reported none (its only model call failed, or
/// it has only just started) is `$?` with no price missing, and sending
/// the user to `agentrace prices` found every model priced.
fn cost_hint(home: &Home, runs: &[ListedRun]) {
    let priced_in_part = |listed: &&ListedRun| listed.run.tokens.is_some_and(|tokens| tokens.total_tokens > 0);
    if runs.iter().filter(priced_in_part).any(|listed| listed.run.cost_status != CostStatus::Exact) {
        eprintln!(
            "hint: a cost marked `$?` or `≥` lacks some prices or tokens: `agentrace prices` names the models without a price, `agentrace prices --update` fetches the newest price database, and your own prices in {} price the rest in every command",
            home.prices_path().display()
        );
    }
}

/// The first command's hint for times shown in UTC on a machine whose
/// clocks are not, while no zone is named.
fn zone_hint() {
    if let Some(local) = crate::zone::unnamed_local_zone() {
        eprintln!("hint: times and days are UTC; `export AGENTRACE_TZ=local` shows them in {local}, this machine's zone");
    }
}

#[cfg(test)]
mod tests {
    use super::millis_text;

    /// Under ten seconds a run's time was cut to whole seconds (0.6 s was
    /// `0s`, 1.8 s `1s`) where `show` gives a tenth.
    #[test]
    fn a_runs_time_gives_a_tenth_under_ten_seconds_as_show_does() {
        let shown: Vec<String> = [0, 49, 640, 1_850, 9_949, 9_950, 10_400, 59_999, 61_000, 3_599_999, 3_660_000].into_iter().map(millis_text).collect();
        assert_eq!(shown, ["0.0s", "0.0s", "0.6s", "1.9s", "9.9s", "10s", "10s", "59s", "1m", "59m", "1h01"]);
    }
}
