//! `agentrace import`: turns the sessions already on disk into attributed
//! runs: Codex rollouts (a root's file and its children's, joined through
//! `session_meta…thread_spawn.parent_thread_id`) and Claude Code transcripts
//! (a session and its subagents' files). Incremental: a session whose files
//! did not change (size and modification time) is not read again; a changed
//! one is read again whole, and a file that shrank is said so.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{BufRead as _, BufReader, IsTerminal as _, Read as _};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use agentrace_core::decode;
use agentrace_core::lines::{LineAssembler, LineRef};
use agentrace_core::model::{RunId, Timestamp};
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_core::state::RunView;
use agentrace_core::{Envelope, InputLine, Recorder};
use agentrace_store::Home;
use anyhow::Context as _;
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::claude_ingest::{claude_config_dir, find_sessions, Recording};
use crate::ingest::now;
use crate::usage::UsageIndex;

/// Arguments of `agentrace import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Codex home to read (`sessions/` and `archived_sessions/`; default:
    /// `$CODEX_HOME`, else `~/.codex`).
    #[arg(long, value_name = "DIR")]
    codex_home: Option<PathBuf>,
    /// Claude Code config dir to read (`projects/`; default:
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    #[arg(long, value_name = "DIR")]
    claude_dir: Option<PathBuf>,
    /// Only sessions started on or after this day (`YYYY-MM-DD`, UTC).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// No progress bar and no summary on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Also export each run this import records or rebuilds to an
    /// OpenTelemetry collector (OTLP over HTTP; the base endpoint, as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, `/v1/traces` is appended).
    #[arg(long, value_name = "ENDPOINT", num_args = 0..=1, default_missing_value = "")]
    otlp: Option<String>,
}

/// Size and modification time of one file, as last imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileStamp {
    size: u64,
    modified_ns: u128,
}

/// One imported session: its run and its files.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Imported {
    run_id: String,
    files: BTreeMap<String, FileStamp>,
}

/// The head of a rollout as last read, with the stamp it was read at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KnownHead {
    stamp: FileStamp,
    thread: String,
    parent: Option<String>,
    depth: u64,
    started: Option<Timestamp>,
}

/// What the last import saw (`$AGENTRACE_HOME/import-state.json`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImportState {
    #[serde(default)]
    codex: BTreeMap<String, Imported>,
    #[serde(default)]
    claude: BTreeMap<String, Imported>,
    /// Rollout heads by path: an unchanged rollout is grouped into its
    /// session without reading its (often 20 KB) first line again.
    #[serde(default)]
    heads: BTreeMap<String, KnownHead>,
}

impl ImportState {
    fn path(home: &Home) -> PathBuf {
        home.root().join("import-state.json")
    }

    fn load(home: &Home) -> Self {
        fs::read(Self::path(home))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save(&self, home: &Home) -> anyhow::Result<()> {
        let path = Self::path(home);
        fs::create_dir_all(home.root())
            .with_context(|| format!("cannot create {}", home.root().display()))?;
        let temporary = path.with_extension(format!("json.tmp-{}", std::process::id()));
        fs::write(&temporary, serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("cannot write {}", temporary.display()))?;
        fs::rename(&temporary, &path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }
}

/// A Codex home's rollouts as one import sees them.
#[derive(Default)]
struct Rollouts {
    /// Grouped into sessions, as [`codex_sessions`] does.
    sessions: BTreeMap<String, Vec<RolloutHead>>,
    /// The heads to keep for the next import.
    heads: BTreeMap<String, KnownHead>,
    /// Every rollout's stamp.
    stamps: HashMap<PathBuf, FileStamp>,
}

/// The rollouts of `codex_home`, reading a rollout's head only when its
/// stamp differs from the one in `known`.
fn codex_sessions_known(codex_home: &Path, known: &BTreeMap<String, KnownHead>) -> Rollouts {
    let mut heads = Vec::new();
    let mut kept = BTreeMap::new();
    let mut stamps = HashMap::new();
    for path in rollout_files(codex_home) {
        // A rollout that vanished since the listing is no longer there.
        let Ok(stamp) = stamp(&path) else { continue };
        let key = path.to_string_lossy().into_owned();
        let head = match known.get(&key) {
            Some(head) if head.stamp == stamp => Some(RolloutHead {
                path: path.clone(),
                thread: head.thread.clone(),
                parent: head.parent.clone(),
                depth: head.depth,
                started: head.started,
            }),
            _ => rollout_head(&path),
        };
        if let Some(head) = head {
            kept.insert(
                key,
                KnownHead {
                    stamp: stamp.clone(),
                    thread: head.thread.clone(),
                    parent: head.parent.clone(),
                    depth: head.depth,
                    started: head.started,
                },
            );
            heads.push(head);
        }
        stamps.insert(path, stamp);
    }
    Rollouts {
        sessions: group_sessions(heads),
        heads: kept,
        stamps,
    }
}

fn stamp(path: &Path) -> anyhow::Result<FileStamp> {
    let metadata = fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    let modified_ns = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    Ok(FileStamp {
        size: metadata.len(),
        modified_ns,
    })
}

/// What changed in a session's files since the last import.
enum Change {
    Same,
    New,
    Changed { shrank: Vec<String> },
}

fn compare(previous: Option<&Imported>, now: &BTreeMap<String, FileStamp>) -> Change {
    let Some(previous) = previous else {
        return Change::New;
    };
    if &previous.files == now {
        return Change::Same;
    }
    let shrank = now
        .iter()
        .filter(|(path, stamp)| {
            previous
                .files
                .get(*path)
                .is_some_and(|old| stamp.size < old.size)
        })
        .map(|(path, _)| path.clone())
        .collect();
    Change::Changed { shrank }
}

/// The head of a Codex rollout.
#[derive(Debug, Clone)]
pub struct RolloutHead {
    /// The file.
    pub path: PathBuf,
    /// Its thread.
    pub thread: String,
    /// Its parent, for a child.
    pub parent: Option<String>,
    /// Spawn depth (0 for a root).
    pub depth: u64,
    /// When the session started.
    pub started: Option<Timestamp>,
}

/// Every `rollout-*.jsonl` under `sessions/` and `archived_sessions/`.
pub fn rollout_files(codex_home: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for top in ["sessions", "archived_sessions"] {
        let mut stack = vec![codex_home.join(top)];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name();
                let name = name.to_string_lossy();
                // The listing's own kind: a stat per rollout was a good part
                // of a repeated import.
                let is_dir = match entry.file_type() {
                    Ok(kind) if !kind.is_symlink() => kind.is_dir(),
                    _ => path.is_dir(),
                };
                if is_dir {
                    stack.push(path);
                } else if name.starts_with("rollout-") && name.ends_with(".jsonl") {
                    files.push(path);
                }
            }
        }
    }
    files.sort();
    files
}

/// Reads a rollout's first line (its `session_meta`): only the members that
/// name its session are parsed; the rest (the base instructions, often tens
/// of KB) is skimmed over, never built.
pub fn rollout_head(path: &Path) -> Option<RolloutHead> {
    let file = fs::File::open(path).ok()?;
    let mut line = Vec::new();
    // A session_meta carries the base instructions: allow it a few MiB.
    BufReader::with_capacity(32 * 1024, file.take(16 * 1024 * 1024))
        .read_until(b'\n', &mut line)
        .ok()?;
    let (mut kind, mut started, mut payload) = (None, None, None);
    decode::visit_members(&line, &mut |key, raw| {
        match key {
            "type" => kind = decode::raw_string(raw).map(Cow::into_owned),
            "timestamp" => {
                started = decode::raw_string(raw).and_then(|text| Timestamp::parse(&text))
            }
            "payload" => payload = Some(raw.to_owned()),
            _ => {}
        }
        true
    });
    if kind.as_deref() != Some("session_meta") {
        return None;
    }
    let (mut thread, mut parent, mut source) = (None, None, None);
    decode::visit_members(payload?.as_bytes(), &mut |key, raw| {
        match key {
            "id" => thread = decode::raw_string(raw).map(Cow::into_owned),
            "parent_thread_id" => parent = decode::raw_string(raw).map(Cow::into_owned),
            "source" => source = serde_json::from_str::<Value>(raw).ok(),
            _ => {}
        }
        true
    });
    let spawn = source.as_ref().and_then(|source| {
        source
            .pointer("/subagent/thread_spawn")
            .or_else(|| source.pointer("/subAgent/thread_spawn"))
    });
    Some(RolloutHead {
        path: path.to_path_buf(),
        thread: thread?,
        parent: spawn
            .and_then(|spawn| spawn.get("parent_thread_id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or(parent),
        depth: spawn
            .and_then(|spawn| spawn.get("depth"))
            .and_then(Value::as_u64)
            .unwrap_or(0),
        started,
    })
}

/// Rollouts grouped into sessions: top-most known ancestor → files,
/// parents before children.
pub fn codex_sessions(codex_home: &Path) -> BTreeMap<String, Vec<RolloutHead>> {
    let files = rollout_files(codex_home);
    // Each head is a first line of tens of KB to read and check: on both
    // cores, in the files' order.
    let heads = match crate::parallel::map(&files, |path| Ok(rollout_head(path))) {
        Ok(heads) => heads.into_iter().flatten().collect(),
        Err(_) => files.iter().filter_map(|path| rollout_head(path)).collect(),
    };
    group_sessions(heads)
}

fn group_sessions(heads: Vec<RolloutHead>) -> BTreeMap<String, Vec<RolloutHead>> {
    let parents: HashMap<String, Option<String>> = heads
        .iter()
        .map(|head| (head.thread.clone(), head.parent.clone()))
        .collect();
    let mut sessions: BTreeMap<String, Vec<RolloutHead>> = BTreeMap::new();
    for head in heads {
        let mut top = head.thread.clone();
        let mut hops = 0;
        while let Some(Some(parent)) = parents.get(&top) {
            if !parents.contains_key(parent) || hops > 1000 {
                break;
            }
            top = parent.clone();
            hops += 1;
        }
        sessions.entry(top).or_default().push(head);
    }
    for files in sessions.values_mut() {
        files.sort_by(|a, b| (a.depth, &a.path).cmp(&(b.depth, &b.path)));
    }
    sessions
}

/// Feeds one session's rollout files to `recorder`; `sink` gets each batch.
pub fn feed_rollouts(
    recorder: &mut Recorder,
    files: &[RolloutHead],
    sink: &mut dyn FnMut(Vec<Envelope>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut buffer = vec![0u8; 256 * 1024];
    for (number, head) in files.iter().enumerate() {
        let part = SourcePart::File {
            number: u32::try_from(number).unwrap_or(u32::MAX),
        };
        let mut file = fs::File::open(&head.path)
            .with_context(|| format!("cannot open {}", head.path.display()))?;
        let mut assembler = LineAssembler::default();
        let mut clock = head.started.unwrap_or_else(now);
        let mut batch = Vec::new();
        let mut feed = |line: LineRef<'_>, batch: &mut Vec<Envelope>| {
            if agentrace_core::decode::is_blank(line.bytes) {
                return;
            }
            let produced = recorder.push_part(
                &part,
                &InputLine {
                    bytes: line.bytes,
                    line_number: line.line_number,
                    observed_at: clock,
                    direction: None,
                    truncated_from: line.truncated_from,
                },
            );
            if let Some(last) = produced.last() {
                clock = last.timestamp;
            }
            batch.extend(produced);
        };
        loop {
            let read = file
                .read(&mut buffer)
                .with_context(|| format!("cannot read {}", head.path.display()))?;
            if read == 0 {
                break;
            }
            assembler.push_each(&buffer[..read], &mut |line| feed(line, &mut batch));
            sink(std::mem::take(&mut batch))?;
        }
        assembler.finish_each(&mut |line| feed(line, &mut batch));
        sink(batch)?;
    }
    let last = recorder.finish();
    sink(last)
}

/// Feeds one Claude session's files to `recorder` (a metadata document is
/// one line); `sink` gets each file's envelopes.
pub fn feed_claude(
    recorder: &mut Recorder,
    session: &crate::claude_ingest::SessionFiles,
    sink: &mut dyn FnMut(Vec<Envelope>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut clock = now();
    // Read in chunks through one buffer: reading each transcript whole
    // allocated (and zeroed) fresh pages per file.
    let mut buffer = vec![0u8; 256 * 1024];
    for (part, path) in &session.parts {
        let mut batch = Vec::new();
        let mut feed = |line: LineRef<'_>| {
            if agentrace_core::decode::is_blank(line.bytes) && line.truncated_from.is_none() {
                return;
            }
            let produced = recorder.push_part(
                part,
                &InputLine {
                    bytes: line.bytes,
                    line_number: line.line_number,
                    observed_at: clock,
                    direction: None,
                    truncated_from: line.truncated_from,
                },
            );
            if let Some(last) = produced.last() {
                clock = last.timestamp;
            }
            batch.extend(produced);
        };
        if matches!(part, SourcePart::AgentMeta { .. }) {
            let bytes =
                fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            feed(LineRef {
                bytes: &bytes,
                line_number: 1,
                truncated_from: None,
            });
        } else {
            let mut file =
                fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            let mut assembler = LineAssembler::default();
            loop {
                let read = file
                    .read(&mut buffer)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                if read == 0 {
                    break;
                }
                assembler.push_each(&buffer[..read], &mut feed);
            }
            assembler.finish_each(&mut feed);
        }
        sink(batch)?;
    }
    let last = recorder.finish();
    sink(last)
}

/// The first `timestamp` among a transcript's first lines (their other
/// members skimmed over, never built).
pub fn first_time(path: &Path) -> Option<Timestamp> {
    let file = fs::File::open(path).ok()?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    for _ in 0..64 {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        let mut found = None;
        decode::visit_members(&line, &mut |key, raw| {
            if key == "timestamp" {
                found = decode::raw_string(raw).and_then(|text| Timestamp::parse(&text));
            }
            found.is_none()
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

fn codex_home(args: &ImportArgs) -> Option<PathBuf> {
    args.codex_home.clone().or_else(|| {
        std::env::var_os("CODEX_HOME")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .or_else(|| dirs_home().map(|home| home.join(".codex")))
    })
}

fn dirs_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

fn since(args: &ImportArgs) -> anyhow::Result<Option<Timestamp>> {
    args.since
        .as_ref()
        .map(|day| {
            Timestamp::parse(&format!("{day}T00:00:00Z"))
                .with_context(|| format!("--since {day}: expected a day like 2026-11-30"))
        })
        .transpose()
}

fn progress(args: &ImportArgs, total: u64) -> indicatif::ProgressBar {
    if args.quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} sessions {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix("importing");
    bar
}

/// Sessions imported between two saves of the import state.
const SAVE_EVERY: u32 = 64;

/// A session whose run is to be rebuilt.
struct Job<'a> {
    /// Its key in the import state.
    key: &'a str,
    id: RunId,
    stamps: BTreeMap<String, FileStamp>,
    source: JobSource<'a>,
}

/// Where a rebuilt run's lines come from.
enum JobSource<'a> {
    Codex(&'a [RolloutHead]),
    Claude(&'a crate::claude_ingest::SessionFiles),
}

/// When a Claude session started: the first time its main file names,
/// else now.
fn claude_start(session: &crate::claude_ingest::SessionFiles) -> Timestamp {
    session
        .parts
        .first()
        .and_then(|(_, path)| first_time(path))
        .unwrap_or_else(now)
}

/// Counts of one import.
#[derive(Debug, Default)]
struct Tally {
    recorded: u64,
    updated: u64,
    unchanged: u64,
}

/// The bookkeeping of one import: what changed, what was done, the bar.
struct Importer<'a> {
    home: &'a Home,
    args: &'a ImportArgs,
    state: ImportState,
    tally: Tally,
    bar: indicatif::ProgressBar,
    since_save: u32,
    /// The usage index, loaded when the first run is rebuilt.
    usage: Option<UsageIndex>,
    /// The run logs present when the import started, listed when first asked.
    logs: Option<std::collections::HashSet<String>>,
}

impl Importer<'_> {
    /// Counts a session and says whether it must be read.
    fn wanted(&mut self, change: &Change, id: &RunId) -> bool {
        self.bar.inc(1);
        match change {
            Change::Same if self.log_exists(id) => {
                self.tally.unchanged += 1;
                return false;
            }
            Change::Changed { shrank } => {
                for path in shrank {
                    self.bar.suspend(|| {
                        eprintln!("warning: {path} shrank since the last import; reading its session again whole");
                    });
                }
                self.tally.updated += 1;
            }
            Change::Same | Change::New => self.tally.recorded += 1,
        }
        true
    }

    /// Writes run `id` anew from what `feed` gives the recorder; returns
    /// the run's view.
    fn rebuild(
        &self,
        id: &RunId,
        format: Format,
        start: Timestamp,
        feed: impl FnOnce(
            &mut Recorder,
            &mut dyn FnMut(Vec<Envelope>) -> anyhow::Result<()>,
        ) -> anyhow::Result<()>,
    ) -> anyhow::Result<RunView> {
        remove_run(self.home, id)?;
        let mut recorder = Recorder::new(id.clone(), format);
        let mut writer = self.home.create_run_unsynced(id)?;
        writer.append(&recorder.start(start))?;
        let mut sink = |batch: Vec<Envelope>| {
            if !batch.is_empty() {
                writer.append(&batch)?;
            }
            Ok(())
        };
        feed(&mut recorder, &mut sink)?;
        // No fsync per session: an import is rebuilt from its sources, and a
        // thousand fsyncs would cost more than the reading.
        // `remove_run` above left no record: it is written in place.
        writer.write_new_record_unsynced(&recorder.state().summary())?;
        drop(writer);
        Ok(recorder.state().view())
    }

    /// True when run `id` has a log, by one listing of the runs folder
    /// rather than a stat per session.
    fn log_exists(&mut self, id: &RunId) -> bool {
        let home = self.home;
        let logs = self.logs.get_or_insert_with(|| {
            fs::read_dir(home.runs_dir())
                .map(|entries| {
                    entries
                        .flatten()
                        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
                        .filter_map(|entry| {
                            entry
                                .file_name()
                                .to_str()?
                                .strip_suffix(".jsonl")
                                .map(str::to_owned)
                        })
                        .collect()
                })
                .unwrap_or_default()
        });
        agentrace_store::validate_run_id(id.as_str()).is_ok() && logs.contains(id.as_str())
    }

    /// Rebuilds the runs of `jobs` on every core, then notes each as
    /// imported in order; `jobs` is left empty.
    fn run_jobs(&mut self, jobs: &mut Vec<Job<'_>>) -> anyhow::Result<()> {
        let this = &*self;
        let views = crate::parallel::map(jobs, |job| match job.source {
            JobSource::Codex(files) => {
                let start = files
                    .iter()
                    .filter_map(|head| head.started)
                    .min()
                    .unwrap_or_else(now);
                this.rebuild(&job.id, Format::CodexRollout, start, |recorder, sink| {
                    feed_rollouts(recorder, files, sink)
                })
            }
            JobSource::Claude(session) => this.rebuild(
                &job.id,
                Format::ClaudeTranscript,
                claude_start(session),
                |recorder, sink| feed_claude(recorder, session, sink),
            ),
        })?;
        if jobs.is_empty() {
            return Ok(());
        }
        let home = self.home;
        let usage = self.usage.get_or_insert_with(|| UsageIndex::load(home));
        for (job, view) in jobs.iter().zip(&views) {
            usage.insert(home, &job.id, view);
        }
        // Saved before the import state names these runs as imported: a run
        // the state calls done always has its usage kept (or folds).
        usage.save(home)?;
        for job in jobs.drain(..) {
            let claude = matches!(job.source, JobSource::Claude(_));
            self.imported(claude, job.key, &job.id, job.stamps)?;
        }
        Ok(())
    }

    /// Notes a session as imported (and exports it when asked).
    fn imported(
        &mut self,
        claude: bool,
        key: &str,
        id: &RunId,
        files: BTreeMap<String, FileStamp>,
    ) -> anyhow::Result<()> {
        if let Some(endpoint) = &self.args.otlp {
            let home = self.home;
            self.bar
                .suspend(|| crate::export::export_after_run(home, id, endpoint));
        }
        let entry = Imported {
            run_id: id.to_string(),
            files,
        };
        if claude {
            self.state.claude.insert(key.to_owned(), entry);
        } else {
            self.state.codex.insert(key.to_owned(), entry);
        }
        // Saved every so often: an interrupted import resumes near where it stopped.
        self.since_save += 1;
        if self.since_save >= SAVE_EVERY {
            self.state.save(self.home)?;
            self.since_save = 0;
        }
        Ok(())
    }
}

/// The Claude sessions under `dir` (none when it holds no projects), each
/// with its files' stamps.
fn claude_sessions(
    dir: Option<&Path>,
) -> anyhow::Result<
    Vec<(
        crate::claude_ingest::SessionFiles,
        BTreeMap<String, FileStamp>,
    )>,
> {
    let sessions = match dir {
        Some(dir) if dir.join("projects").is_dir() || dir.is_dir() && dir.ends_with("projects") => {
            find_sessions(dir)?
        }
        _ => Vec::new(),
    };
    sessions
        .into_iter()
        .map(|session| {
            let stamps = stamps(session.parts.iter().map(|(_, path)| path.as_path()))?;
            Ok((session, stamps))
        })
        .collect()
}

fn stamps<'p>(
    paths: impl Iterator<Item = &'p Path>,
) -> anyhow::Result<BTreeMap<String, FileStamp>> {
    paths
        .map(|path| Ok((path.to_string_lossy().into_owned(), stamp(path)?)))
        .collect()
}

/// Runs `agentrace import`.
pub fn run(home: &Home, args: &ImportArgs) -> anyhow::Result<()> {
    let since = since(args)?;
    let mut state = ImportState::load(home);
    let claude_dir = args.claude_dir.clone().or_else(claude_config_dir);
    // Finding what is on disk is thousands of small system calls: the Codex
    // home and the Claude dir are walked side by side.
    let known_heads = &state.heads;
    let (rollouts, claude) = std::thread::scope(|scope| {
        let codex = scope.spawn(|| match codex_home(args) {
            Some(dir) => codex_sessions_known(&dir, known_heads),
            None => Rollouts::default(),
        });
        let claude = claude_sessions(claude_dir.as_deref());
        let rollouts = codex
            .join()
            .map_err(|_| anyhow::anyhow!("walking the Codex home failed (a thread panicked)"));
        (rollouts, claude)
    });
    let (rollouts, claude) = (rollouts?, claude?);
    let Rollouts {
        sessions: codex,
        heads,
        stamps: rollout_stamps,
    } = rollouts;
    // Saved only when something changed: a repeated import writes nothing.
    let heads_changed = heads != state.heads;
    state.heads = heads;
    let mut importer = Importer {
        home,
        args,
        state,
        tally: Tally::default(),
        bar: progress(args, (codex.len() + claude.len()) as u64),
        since_save: 0,
        usage: None,
        logs: None,
    };
    // Claude runs recorded live, by session: looked up once, and only when
    // a session is new (reading every run's record costs more than a
    // repeated import otherwise does).
    let mut live_claude: Option<HashMap<String, RunId>> = None;
    let mut pending: Vec<Job<'_>> = Vec::new();
    for (root, files) in &codex {
        if since.is_some_and(|since| {
            files
                .iter()
                .all(|head| head.started.is_some_and(|t| t < since))
        }) {
            importer.bar.inc(1);
            continue;
        }
        let stamps = files
            .iter()
            .map(|head| {
                let stamp = match rollout_stamps.get(&head.path) {
                    Some(stamp) => stamp.clone(),
                    None => stamp(&head.path)?,
                };
                Ok((head.path.to_string_lossy().into_owned(), stamp))
            })
            .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
        let id = RunId::from(format!("codex-{root}"));
        if !importer.wanted(&compare(importer.state.codex.get(root), &stamps), &id) {
            continue;
        }
        pending.push(Job {
            key: root,
            id,
            stamps,
            source: JobSource::Codex(files),
        });
        if pending.len() >= SAVE_EVERY as usize {
            importer.run_jobs(&mut pending)?;
        }
    }
    for (session, stamps) in claude.iter() {
        let stamps = stamps.clone();
        let previous = importer.state.claude.get(&session.session_id).cloned();
        // A run import made itself is rebuilt; a run recorded live (`run
        // claude`) is continued, never deleted.
        let id = match &previous {
            Some(previous) => RunId::from(previous.run_id.clone()),
            None => {
                if live_claude.is_none() {
                    live_claude = Some(
                        home.list_runs()?
                            .into_iter()
                            .filter(|run| run.provider == agentrace_core::model::Provider::Claude)
                            .filter_map(|run| {
                                run.root_thread_id.map(|root| (root.to_string(), run.id))
                            })
                            .collect(),
                    );
                }
                live_claude
                    .as_ref()
                    .and_then(|live| live.get(&session.session_id))
                    .cloned()
                    .unwrap_or_else(|| RunId::from(format!("claude-{}", session.session_id)))
            }
        };
        if !importer.wanted(&compare(previous.as_ref(), &stamps), &id) {
            continue;
        }
        if previous.is_some() || id.as_str().starts_with("claude-") {
            pending.push(Job {
                key: &session.session_id,
                id,
                stamps,
                source: JobSource::Claude(session),
            });
            if pending.len() >= SAVE_EVERY as usize {
                importer.run_jobs(&mut pending)?;
            }
        } else {
            let start = claude_start(session);
            let mut recording = Recording::open(home, &id, Format::ClaudeTranscript, || start)?;
            for (part, file) in &session.parts {
                let bytes =
                    fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
                recording.feed(part, &bytes)?;
            }
            recording.close()?;
            importer.imported(true, &session.session_id, &id, stamps)?;
        }
    }
    importer.run_jobs(&mut pending)?;
    let tally = &importer.tally;
    if heads_changed || tally.recorded + tally.updated > 0 || importer.since_save > 0 {
        importer.state.save(home)?;
    }
    importer.bar.finish_and_clear();
    if !args.quiet {
        let tally = &importer.tally;
        eprintln!(
            "imported {} new session{}, {} changed, {} unchanged (Codex from {}, Claude from {})",
            tally.recorded,
            if tally.recorded == 1 { "" } else { "s" },
            tally.updated,
            tally.unchanged,
            codex_home(args)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "nowhere".to_owned()),
            claude_dir
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "nowhere".to_owned()),
        );
    }
    Ok(())
}

fn remove_run(home: &Home, id: &RunId) -> anyhow::Result<()> {
    for path in [home.log_path(id), home.record_path(id)] {
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(error).with_context(|| format!("cannot replace {}", path.display()))
            }
        }
    }
    Ok(())
}
