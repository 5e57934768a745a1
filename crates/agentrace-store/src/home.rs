//! The agentrace home and the runs in it: finding the home, naming every
//! file in it (the `*_path` methods; no other code builds a path under the
//! home), creating, continuing, listing, removing, loading and resolving
//! runs. Every run file it opens or creates is named by a validated run id,
//! so no id can reach outside the runs directory. The home's other files
//! are written beside it: locks in `lock.rs`, the hook spool in
//! `spool.rs`, the statusline's state, `top`'s log and the tap's spill in
//! `scratch.rs`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentrace_core::book::RunBook;
use agentrace_core::childwork::ChildWorkRecord;
use agentrace_core::state::{FinalActors, RunSummary, RunView};
use agentrace_core::model::Timestamp;
use agentrace_core::prices::PriceBook;
use agentrace_core::warnings::WarningConfig;
use agentrace_core::{RunId, RunState};

use crate::error::StoreError;
use crate::prices::KeptPrices;
use crate::fold::{tail_of, RunFold};
use crate::reader::{LogReader, SkippedLine};
use crate::run_id::validate_run_id;
use crate::writer::{sync_directory, Resumed, RunWriter};

/// The environment variable that names the home.
pub const HOME_ENV: &str = "AGENTRACE_HOME";

/// The name of the user's warning configuration in the home.
pub const WARNING_CONFIG_FILE: &str = "warnings.json";

/// The user's price file in the home, which every command prices with
/// (see [`Home::with_home_prices`]).
pub const PRICE_FILE: &str = "prices.json";

/// A newer `genai-prices` database in the home (its provider data, as
/// `agentrace prices --update` fetched it), which every command prices by
/// in place of the compiled-in one.
pub const PRICE_DATABASE_FILE: &str = "genai-prices.json";

/// What earlier commands resolved of the database's prices (a cache, see
/// [`Home::keep_known_prices`]).
pub const KNOWN_PRICES_FILE: &str = "known-prices.json";

/// How an import names a run: the provider, then its root thread or
/// session.
const IMPORTED_PREFIXES: [&str; 2] = ["codex-", "claude-"];

/// Words `resolve` reads as "the newest run".
const NEWEST_KEYWORDS: [&str; 2] = ["latest", "last"];

/// The agentrace home: runs live in `<root>/runs/`. It carries the price
/// book every fold through it prices with (the database alone, or with the
/// home's price file once [`Home::with_home_prices`] read it) and the
/// warning config every run record is judged by (none, or the home's
/// `warnings.json` once [`Home::with_home_warnings`] read it).
#[derive(Clone)]
pub struct Home {
    root: PathBuf,
    prices: Arc<PriceBook>,
    warnings: Arc<WarningConfig>,
    /// What names `warnings` ([`crate::warning_file::config_id`]).
    warnings_id: Arc<str>,
}

impl std::fmt::Debug for Home {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Home")
            .field("root", &self.root)
            .field("prices", &self.prices.id())
            .field("warnings", &self.warnings_id)
            .finish()
    }
}

impl PartialEq for Home {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root && self.prices.id() == other.prices.id() && self.warnings_id == other.warnings_id
    }
}

impl Eq for Home {}

/// A run read back from its log: its book (the one fold, see
/// [`agentrace_core::book`]) and the lines skipped.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// Every envelope of the log folded with [`RunBook::apply`].
    pub book: RunBook,
    /// Log lines the reader could not read, in file order.
    pub skipped: Vec<SkippedLine>,
}

impl LoadedRun {
    /// `{run, agents, warnings}` as `show` gives it: the recorded warnings,
    /// the child-work reducer's and the detectors' at `now` (none: the
    /// time-based ones wait for a reader with a clock), `config` applied.
    pub fn checked_view(&self, config: &WarningConfig, now: Option<Timestamp>) -> RunView {
        self.book.checked_view(config, now, self.skipped_count()).0
    }

    /// The run state.
    pub fn state(&self) -> &RunState {
        self.book.state()
    }

    /// The last `actor_resolved` of each corrected thread.
    pub fn final_actors(&self) -> &FinalActors {
        self.book.finals()
    }

    /// The child-work records as every reader shows them.
    pub fn records(&self) -> Vec<ChildWorkRecord> {
        self.book.records()
    }

    /// `{run, agents, warnings}`, with the skipped log lines counted.
    pub fn view(&self) -> RunView {
        let mut view = self.book.state().view();
        view.run.counts.skipped_log_lines = self.skipped_count();
        view
    }

    /// The run summary, with the skipped log lines counted.
    pub fn summary(&self) -> RunSummary {
        let mut summary = self.book.state().summary();
        summary.counts.skipped_log_lines = self.skipped_count();
        summary
    }

    /// The log lines skipped, in file order (the same as the field).
    pub fn skipped(&self) -> &[SkippedLine] {
        &self.skipped
    }

    /// [`LoadedRun::checked_view`], with the milliseconds after which a
    /// time-based detector (`silent_agent`) wants to judge again.
    pub fn checked_view_until(&self, config: &WarningConfig, now: Option<Timestamp>) -> (RunView, Option<u64>) {
        self.book.checked_view(config, now, self.skipped_count())
    }

    fn skipped_count(&self) -> u64 {
        u64::try_from(self.skipped.len()).unwrap_or(u64::MAX)
    }
}

/// The catalog's file name in the home.
pub const CATALOG_FILE: &str = "catalog.sqlite";

/// A log's length and modification time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStampRow {
    /// Bytes.
    pub bytes: u64,
    /// Nanoseconds since the epoch.
    pub modified_ns: u64,
}

pub(crate) fn stamp_of(metadata: &fs::Metadata) -> LogStampRow {
    let modified_ns = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|elapsed| u64::try_from(elapsed.as_nanos()).ok())
        .unwrap_or(0);
    LogStampRow {
        bytes: metadata.len(),
        modified_ns,
    }
}

/// The stamp of a log now (`None` when it is not there).
pub fn log_stamp(path: &Path) -> Option<LogStampRow> {
    fs::metadata(path).ok().map(|metadata| stamp_of(&metadata))
}

/// The runs folder held open: the logs of thousands of runs stat'ed by
/// name through its handle, one lookup each, where their whole paths
/// walked every folder above the runs folder again (a seventh of `usage`'s
/// CPU after an import of 5,000 sessions).
pub struct RunsFolder {
    dir: File,
}

impl RunsFolder {
    /// Run `id`'s log stamp now, as [`log_stamp`] of [`Home::log_path`]
    /// gives it (`None` when it has no log). The id is not checked here.
    pub fn log_stamp(&self, id: &RunId) -> Option<LogStampRow> {
        let stat = nix::sys::stat::fstatat(&self.dir, log_name(id).as_str(), nix::fcntl::AtFlags::empty()).ok()?;
        let modified_ns = match (u64::try_from(stat.st_mtime), u64::try_from(stat.st_mtime_nsec)) {
            (Ok(seconds), Ok(nanoseconds)) => seconds.checked_mul(1_000_000_000).and_then(|ns| ns.checked_add(nanoseconds)).unwrap_or(0),
            // Before the epoch, as `stamp_of` has it.
            _ => 0,
        };
        Some(LogStampRow {
            bytes: u64::try_from(stat.st_size).unwrap_or(0),
            modified_ns,
        })
    }
}

/// A run log's name in the runs folder.
fn log_name(id: &RunId) -> String {
    format!("{id}.jsonl")
}

impl Home {
    /// A home at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into(), prices: PriceBook::shared_database(), warnings: Arc::default(), warnings_id: crate::warning_file::no_config_id().into() }
    }

    /// This home pricing with its price file ([`PRICE_FILE`]) over the
    /// database, when there is one: what every command prices with, so
    /// that `runs`, `show`, `usage`, `check`, `top`, the exports and the
    /// viewer give one cost for one run. An error names the file when it
    /// is not a price table.
    pub fn with_home_prices(self) -> Result<Home, StoreError> {
        let prices = self.home_price_book()?;
        Ok(self.knowing_prices(prices))
    }

    /// [`Home::with_home_prices`] for a process that reads the home again
    /// and again (the server, at each request): taught what earlier
    /// commands resolved as `kept` read it once, and priced by `kept`'s
    /// last book while the home's price files give the same one, so what
    /// that book resolved is not resolved again.
    pub fn with_home_prices_kept(self, kept: &KeptPrices) -> Result<Home, StoreError> {
        let prices = kept.keep(self.home_price_book()?);
        Ok(Home { prices, ..self })
    }

    /// What this home's files ([`PRICE_DATABASE_FILE`], [`PRICE_FILE`])
    /// price with now, not yet taught the known prices.
    fn home_price_book(&self) -> Result<Arc<PriceBook>, StoreError> {
        // A newer database in the home ([`PRICE_DATABASE_FILE`]) is the
        // one the table is over, and the one a home without a table
        // prices by.
        let data = crate::prices::read_price_database(&self.price_database_path())?;
        let path = self.prices_path();
        if !path.is_file() {
            // A home read again once its file is gone prices by the
            // database again.
            return Ok(data.map_or_else(PriceBook::shared_database, crate::prices::book_of_data));
        }
        crate::prices::read_price_file(&path, data)
    }

    /// What earlier commands resolved of the database's prices
    /// ([`KNOWN_PRICES_FILE`]), read now, for a process that reads the
    /// home again and again to keep ([`Home::with_home_prices_kept`]).
    pub fn kept_prices(&self) -> KeptPrices {
        KeptPrices::new(crate::prices::read_known_prices(&self.known_prices_path()))
    }

    /// This home pricing with `prices`, taught what earlier commands
    /// resolved by its database ([`KNOWN_PRICES_FILE`]).
    fn knowing_prices(self, prices: Arc<PriceBook>) -> Home {
        if let Some(known) = crate::prices::read_known_prices(&self.known_prices_path()) {
            prices.learn(&known);
        }
        Home { prices, ..self }
    }

    /// What earlier commands resolved of the database's prices.
    pub fn known_prices_path(&self) -> PathBuf {
        self.root.join(KNOWN_PRICES_FILE)
    }

    /// Keeps what this home's price book resolved for the next command,
    /// when it resolved anything itself, so a command that prices a few
    /// requests of models met before (`show`, `status`) need not decode the
    /// database (30 to 60 ms). A home that does not exist yet is not made
    /// for it. Returns whether the file was written.
    pub fn keep_known_prices(&self) -> Result<bool, StoreError> {
        if self.prices.resolutions() == 0 || !self.root.is_dir() {
            return Ok(false);
        }
        crate::prices::write_known_prices(&self.known_prices_path(), &self.prices)?;
        Ok(true)
    }

    /// The newer `genai-prices` database kept in the home (it need not
    /// exist): [`PRICE_DATABASE_FILE`].
    pub fn price_database_path(&self) -> PathBuf {
        self.root.join(PRICE_DATABASE_FILE)
    }

    /// Keeps `bytes` (provider data the caller checked) as the home's
    /// price database, replacing any before it whole.
    pub fn put_price_database(&self, bytes: &[u8]) -> Result<(), StoreError> {
        fs::create_dir_all(&self.root).map_err(|source| StoreError::io("create", &self.root, source))?;
        crate::files::replace_unsynced(&self.price_database_path(), bytes, "write the price database")
    }

    /// Removes the home's price database: the compiled-in one prices
    /// again. Returns whether there was one.
    pub fn remove_price_database(&self) -> Result<bool, StoreError> {
        let path = self.price_database_path();
        let existed = path.is_file();
        crate::files::remove_if_present(&path, "remove the price database")?;
        Ok(existed)
    }

    /// This home judging its runs' records by its warning config
    /// ([`WARNING_CONFIG_FILE`]), when there is one: so that `runs`, the
    /// first command and the viewer's list count the warnings `show` and
    /// `check` give (a `helperRules` rule, a budget, a denied code). An
    /// error names the file when it is not a warning config.
    pub fn with_home_warnings(self) -> Result<Home, StoreError> {
        let path = self.warning_config_path();
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                // A home read again once its file is gone judges by none.
                return Ok(Home { warnings: Arc::default(), warnings_id: crate::warning_file::no_config_id().into(), ..self });
            }
            Err(source) => return Err(StoreError::io("read", &path, source)),
        };
        let config = crate::warning_file::parse_warning_file(&path, &bytes)?;
        let warnings_id = crate::warning_file::config_id(&config).into();
        Ok(Home { warnings: Arc::new(config), warnings_id, ..self })
    }

    /// The warning config this home's run records are judged by.
    pub fn warnings(&self) -> &WarningConfig {
        &self.warnings
    }

    /// What names [`Home::warnings`] among other configs.
    pub fn warnings_id(&self) -> &str {
        &self.warnings_id
    }

    /// The price book every fold through this home prices with.
    pub fn prices(&self) -> Arc<PriceBook> {
        Arc::clone(&self.prices)
    }

    /// The home's price file (it need not exist).
    pub fn prices_path(&self) -> PathBuf {
        self.root.join(PRICE_FILE)
    }

    /// `$AGENTRACE_HOME` when set and not empty, else `agentrace` in the
    /// platform data directory (e.g. `~/.local/share/agentrace`).
    pub fn from_env() -> Result<Home, StoreError> {
        match std::env::var_os(HOME_ENV) {
            Some(root) if !root.is_empty() => Ok(Home::at(root)),
            _ => dirs::data_dir()
                .map(|directory| Home::at(directory.join("agentrace")))
                .ok_or(StoreError::NoHome),
        }
    }

    /// The home directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/runs`.
    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }

    /// [`Home::runs_dir`], made when it is not there yet: a follower
    /// watches it for the records other processes write.
    pub fn make_runs_dir(&self) -> Result<PathBuf, StoreError> {
        let runs_dir = self.runs_dir();
        fs::create_dir_all(&runs_dir).map_err(|source| StoreError::io("create runs directory", &runs_dir, source))?;
        Ok(runs_dir)
    }

    /// `<root>/runs/<id>.jsonl`, the run log. The id is not checked here;
    /// pass only ids from [`validate_run_id`] or [`Home::resolve`].
    pub fn log_path(&self, id: &RunId) -> PathBuf {
        self.runs_dir().join(log_name(id))
    }

    /// The runs folder held open, to stat many runs' logs through it;
    /// `None` when it cannot be opened (there is none yet).
    pub fn runs_folder(&self) -> Option<RunsFolder> {
        File::open(self.runs_dir()).ok().map(|dir| RunsFolder { dir })
    }

    /// `<root>/runs/<id>.json`, the run record. The id is not checked here.
    pub fn record_path(&self, id: &RunId) -> PathBuf {
        self.runs_dir().join(format!("{id}.json"))
    }

    /// `<root>/runs/<id>.snapshot`, the snapshot of the log's fold (see
    /// [`RunFold::load_snapshot`]). The id is not checked here.
    pub fn snapshot_path(&self, id: &RunId) -> PathBuf {
        self.runs_dir().join(format!("{id}.snapshot"))
    }

    /// `<root>/runs/<id>.raw.gz`, the compressed copies of an imported
    /// run's frames, when the import keeps them ([`crate::raw_ref`]). The
    /// id is not checked here.
    pub fn kept_copies_path(&self, id: &RunId) -> PathBuf {
        crate::raw_ref::copies_path(&self.log_path(id))
    }

    /// `<root>/runs/<id>.lock`, the claim a process holds on run `id`'s
    /// log while it appends to it ([`RunLock`](crate::RunLock)). The id is
    /// not checked here.
    pub fn run_lock_path(&self, id: &RunId) -> PathBuf {
        self.runs_dir().join(format!("{id}.lock"))
    }

    /// `<root>/hooks/<id>.jsonl`, the spool of run `id`'s Claude Code hook
    /// inputs waiting to be moved into its log (see
    /// [`Home::spool_hook_input`]). The id is not checked here.
    pub fn hook_spool_path(&self, id: &RunId) -> PathBuf {
        self.root.join("hooks").join(format!("{id}.jsonl"))
    }

    /// `<root>/import`, the import's folder: its lock (and, from older
    /// versions, the tables the catalog replaced).
    pub fn import_dir(&self) -> PathBuf {
        self.root.join("import")
    }

    /// `<root>/import/lock`, held while an import runs
    /// ([`ImportLock`](crate::ImportLock)).
    pub fn import_lock_path(&self) -> PathBuf {
        self.import_dir().join("lock")
    }

    /// What an import running in the background says (its stderr).
    pub fn background_import_log_path(&self) -> PathBuf {
        self.import_dir().join("background.log")
    }

    /// Notes that process `pid` imports into this home in the background
    /// (see [`Home::background_import`]).
    pub fn note_background_import(&self, pid: u32) -> Result<(), StoreError> {
        let path = self.import_dir().join("background.pid");
        crate::files::replace_unsynced(&path, pid.to_string().as_bytes(), "note the background import")
    }

    /// The pid of the import a first `agentrace` started in the background,
    /// while it is at work (it holds the import lock); `None` otherwise.
    pub fn background_import(&self) -> Option<u32> {
        let pid: u32 = fs::read_to_string(self.import_dir().join("background.pid")).ok()?.trim().parse().ok()?;
        (Path::new(&format!("/proc/{pid}")).exists() && crate::ImportLock::held_elsewhere(self)).then_some(pid)
    }

    /// [`Home::background_import_log_path`], made anew for an import about
    /// to start in the background, to hand it as its stderr.
    pub fn create_background_import_log(&self) -> Result<File, StoreError> {
        let dir = self.import_dir();
        fs::create_dir_all(&dir).map_err(|source| StoreError::io("create import directory", &dir, source))?;
        let path = self.background_import_log_path();
        File::create(&path).map_err(|source| StoreError::io("create background import log", &path, source))
    }

    /// `<root>/import/follower`, the lease of the follower (`watch`, `top`,
    /// `serve --watch`) that keeps the catalog current
    /// ([`FollowerLease`](crate::FollowerLease)).
    pub fn follower_path(&self) -> PathBuf {
        self.import_dir().join("follower")
    }

    /// The files older versions kept what the catalog now holds in: the
    /// import's tables in [`Home::import_dir`] and, before them, the usage
    /// index and import state in the root.
    pub fn retired_import_tables(&self) -> Vec<PathBuf> {
        let dir = self.import_dir();
        ["codex", "claude", "heads", "usage"]
            .iter()
            .flat_map(|name| [format!("{name}.jsonl"), format!("{name}.partial.jsonl")])
            .map(|name| dir.join(name))
            .chain([
                dir.join("usage.prices"),
                self.root.join("import-state.json"),
                self.root.join("usage-index.json"),
            ])
            .collect()
    }

    /// `<root>/catalog.sqlite`, the catalog ([`crate::catalog`]).
    pub fn catalog_path(&self) -> PathBuf {
        self.root.join(CATALOG_FILE)
    }

    /// `<root>/catalog.sqlite.anew-<pid>`, where `reindex` makes the
    /// catalog anew before copying it in (one per process: two at once
    /// must not fill one file).
    pub fn catalog_anew_path(&self) -> PathBuf {
        self.root.join(format!("{CATALOG_FILE}.anew-{}", std::process::id()))
    }

    /// `<root>/warnings.json`, the user's warning configuration, read when
    /// no other file is named.
    pub fn warning_config_path(&self) -> PathBuf {
        self.root.join(WARNING_CONFIG_FILE)
    }

    /// `<root>/top.log`, where `agentrace top` sends what is written on
    /// stderr while its screen is up ([`Home::create_top_log`]).
    pub fn top_log_path(&self) -> PathBuf {
        self.root.join("top.log")
    }

    /// `<root>/statusline/<session>.json`, the state `agentrace statusline`
    /// keeps between its calls for one Claude Code session (a cache: any
    /// doubt means reading the transcripts again). Refuses a session id that
    /// is not a plain file name, so a hostile id never names another path.
    pub fn statusline_state_path(&self, session_id: &str) -> Result<PathBuf, StoreError> {
        validate_run_id(session_id)?;
        Ok(self.root.join("statusline").join(format!("{session_id}.json")))
    }

    /// True when the run's log exists.
    pub fn exists(&self, id: &RunId) -> bool {
        validate_run_id(id.as_str()).is_ok() && self.log_path(id).is_file()
    }

    /// Starts a new run: creates the runs directory and an empty log.
    /// Refuses ([`StoreError::AlreadyExists`]) when the log exists, so a new
    /// run never writes into an old run's log.
    pub fn create_run(&self, id: &RunId) -> Result<RunWriter, StoreError> {
        self.create_run_with(id, true, true)
    }

    /// Like [`Home::create_run`] without the `fsync` of the runs directory:
    /// for runs rebuilt from their sources anyway (imports), where a
    /// thousand directory syncs would cost more than the work. A caller
    /// that listed the runs folder says whether a snapshot of an earlier
    /// log of this id may be there (`stale_snapshot`): removing a file that
    /// is not there still takes the folder's lock, which two threads
    /// creating runs then wait on.
    pub fn create_run_unsynced(&self, id: &RunId, stale_snapshot: bool) -> Result<RunWriter, StoreError> {
        self.create_run_with(id, false, stale_snapshot)
    }

    fn create_run_with(&self, id: &RunId, sync: bool, stale_snapshot: bool) -> Result<RunWriter, StoreError> {
        let id = validate_run_id(id.as_str())?;
        let runs_dir = self.runs_dir();
        let log_path = self.log_path(&id);
        let create = || OpenOptions::new().append(true).create_new(true).open(&log_path);
        // The folder is made when the log cannot be for want of it (making
        // it first, every time, was two system calls per imported run).
        let created = match create() {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(&runs_dir)
                    .map_err(|source| StoreError::io("create runs directory", &runs_dir, source))?;
                create()
            }
            created => created,
        };
        let file = match created {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                return Err(StoreError::AlreadyExists { id, path: log_path })
            }
            Err(source) => return Err(StoreError::io("create run log", &log_path, source)),
        };
        // A snapshot left by an earlier log of this id (a rebuilt import)
        // must not stand for the new one, even by a fingerprint collision.
        let snapshot_path = self.snapshot_path(&id);
        if stale_snapshot {
            crate::files::remove_if_present(&snapshot_path, "remove stale snapshot")?;
        }
        if sync {
            sync_directory(&runs_dir);
        }
        Ok(RunWriter::new(
            file,
            [log_path, self.record_path(&id), snapshot_path],
            id.clone(),
            1,
            Resumed {
                fold: Some(RunFold::priced(id, self.prices())),
                tail: Vec::new(),
                snapshot_offset: 0,
                judging: Arc::clone(&self.warnings),
            },
        ))
    }

    /// Reopens an existing log to continue it. The writer's next sequence
    /// follows the highest one in the log. A log that does not end with a
    /// newline (a line torn by a crash) first gets one, so the torn line
    /// stays a whole line of its own, skipped and counted, and the new lines
    /// are read intact. Nothing is locked: the caller makes sure no other
    /// writer has the log open.
    pub fn append_run(&self, id: &RunId) -> Result<RunWriter, StoreError> {
        let id = validate_run_id(id.as_str())?;
        let log_path = self.log_path(&id);
        let mut file = match OpenOptions::new().read(true).append(true).open(&log_path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(self.not_found(id.as_str()))
            }
            Err(source) => return Err(StoreError::io("open run log", &log_path, source)),
        };
        if !ends_with_newline(&mut file)
            .map_err(|source| StoreError::io("read run log", &log_path, source))?
        {
            file.write_all(b"\n")
                .map_err(|source| StoreError::io("append to run log", &log_path, source))?;
        }
        // The fold of the log so far, from its snapshot when one matches
        // (only the lines after it are read), else from the start. Its
        // highest sequence, not the last: a hand-edited or concatenated log
        // must still never get a repeated sequence.
        let snapshot_path = self.snapshot_path(&id);
        let mut fold = RunFold::load_snapshot(&snapshot_path, &log_path, &id, &self.prices)
            .unwrap_or_else(|_| RunFold::priced(id.clone(), self.prices()));
        let snapshot_offset = fold.offset();
        fold.follow(&log_path, |_| {})
            .map_err(|source| StoreError::io("read run log", &log_path, source))?;
        let tail = tail_of(&mut file, fold.offset())
            .map_err(|source| StoreError::io("read run log", &log_path, source))?;
        let next_sequence = fold.highest_sequence().saturating_add(1);
        let record_path = self.record_path(&id);
        Ok(RunWriter::new(
            file,
            [log_path, record_path, snapshot_path],
            id,
            next_sequence,
            Resumed {
                fold: Some(fold),
                tail,
                snapshot_offset,
                judging: Arc::clone(&self.warnings),
            },
        ))
    }

    /// One summary per `<id>.jsonl` in the runs directory, newest first (by
    /// `startedAt`, then id). A run's record is used when it is present and
    /// readable, else its log is folded. No runs directory is no runs.
    pub fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.list_these_runs(self.run_ids()?)
    }

    /// [`Home::list_runs`] with each run's warnings counted as `show` with
    /// `config` counts them (the codes it allows left out): what a list of
    /// runs shows.
    pub fn listed_runs(&self, config: &WarningConfig) -> Result<Vec<RunSummary>, StoreError> {
        Ok(self.list_runs()?.into_iter().map(|run| config.listed(run)).collect())
    }

    /// [`Home::list_runs`] of the runs `ids` only (those gone are left out).
    pub fn list_these_runs(&self, ids: impl IntoIterator<Item = RunId>) -> Result<Vec<RunSummary>, StoreError> {
        let mut summaries = Vec::new();
        for id in ids {
            summaries.extend(self.summary(&id)?);
        }
        summaries.sort_by(|a, b| (b.started_at, &b.id).cmp(&(a.started_at, &a.id)));
        Ok(summaries)
    }

    /// The summary of run `id`: its record, else the fold of its log (a
    /// run whose writer died before writing one), its warnings counted as
    /// a record counts them; `None` when the run is gone (deleted since it
    /// was listed).
    fn summary(&self, id: &RunId) -> Result<Option<RunSummary>, StoreError> {
        if let Some(summary) = self.read_record(id) {
            return Ok(Some(summary));
        }
        match self.load_run(id) {
            Ok(loaded) => Ok(Some(loaded.checked_view(self.warnings(), None).run)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Reads a run's log and folds every envelope into its state, counting
    /// the lines skipped.
    pub fn load_run(&self, id: &RunId) -> Result<LoadedRun, StoreError> {
        self.load_run_with(id, self.prices())
    }

    /// [`Home::load_run`], pricing with `prices` (a user's price file)
    /// instead of the database alone.
    pub fn load_run_with(&self, id: &RunId, prices: Arc<PriceBook>) -> Result<LoadedRun, StoreError> {
        let id = validate_run_id(id.as_str())?;
        let log_path = self.log_path(&id);
        let mut reader = match LogReader::open(&log_path) {
            Ok(reader) => reader.with_run_id(id.clone()),
            Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(self.not_found(id.as_str()))
            }
            Err(error) => return Err(error),
        };
        let mut book = RunBook::new(id).with_prices(prices);
        for envelope in reader.by_ref() {
            book.apply(&envelope?);
        }
        Ok(LoadedRun {
            book,
            skipped: reader.into_skipped(),
        })
    }

    /// The fold of run `id`'s log up to its last whole line: resumed from
    /// its snapshot when one matches (only the lines after it are read),
    /// else folded from the start. For readers that need the book but not
    /// each skipped line (the events' final actors, the records).
    pub fn fold_run(&self, id: &RunId) -> Result<RunFold, StoreError> {
        let id = validate_run_id(id.as_str())?;
        let log_path = self.log_path(&id);
        if !log_path.is_file() {
            return Err(self.not_found(id.as_str()));
        }
        let mut fold = RunFold::load_snapshot(&self.snapshot_path(&id), &log_path, &id, &self.prices)
            .unwrap_or_else(|_| RunFold::priced(id.clone(), self.prices()));
        fold.follow(&log_path, |_| {})
            .map_err(|source| StoreError::io("read run log", &log_path, source))?;
        Ok(fold)
    }

    /// The newest run (as [`Home::list_runs`] orders them), if any.
    pub fn newest_run(&self) -> Result<Option<RunId>, StoreError> {
        Ok(self
            .list_runs()?
            .into_iter()
            .next()
            .map(|summary| summary.id))
    }

    /// Finds the run a user means: the exact id, else `latest` / `last` for
    /// the newest run, else the one run whose id starts with `text`, or
    /// whose session starts with it: an imported run is named after its
    /// Codex root thread or Claude session (`codex-<thread>`,
    /// `claude-<session>`), the id the user has seen in Codex or Claude
    /// Code.
    ///
    /// The words come before prefixes so that `latest` always means the
    /// newest run, even when some run's id happens to start with it.
    pub fn resolve(&self, text: &str) -> Result<RunId, StoreError> {
        if let Ok(id) = validate_run_id(text) {
            if self.exists(&id) {
                return Ok(id);
            }
        }
        if NEWEST_KEYWORDS.contains(&text) {
            return self.newest_run()?.ok_or_else(|| self.not_found(text));
        }
        let prefix = validate_run_id(text)?;
        let mut candidates: Vec<RunId> = self
            .run_ids()?
            .into_iter()
            .filter(|id| {
                let session = IMPORTED_PREFIXES.iter().find_map(|provider| id.as_str().strip_prefix(provider));
                id.as_str().starts_with(prefix.as_str()) || session.is_some_and(|session| session.starts_with(prefix.as_str()))
            })
            .collect();
        match candidates.len() {
            0 => Err(self.not_found(text)),
            1 => Ok(candidates.remove(0)),
            _ => Err(StoreError::Ambiguous {
                query: text.to_owned(),
                runs_dir: self.runs_dir(),
                candidates,
            }),
        }
    }

    /// The ids of every `<id>.jsonl` in the runs directory, sorted. Files
    /// whose stem is not a valid run id are not runs agentrace could have
    /// written, and are left out.
    fn run_ids(&self) -> Result<Vec<RunId>, StoreError> {
        let runs_dir = self.runs_dir();
        let entries = match fs::read_dir(&runs_dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(StoreError::io("list runs directory", &runs_dir, source)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry =
                entry.map_err(|source| StoreError::io("list runs directory", &runs_dir, source))?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|name| name.strip_suffix(".jsonl")) else {
                continue;
            };
            if let Ok(id) = validate_run_id(stem) {
                if entry.path().is_file() {
                    ids.push(id);
                }
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// The files of each run in the runs folder, by id, from one listing
    /// (no stat per run: a few dozen bytes a run, for a caller that asks
    /// about thousands). Names are not checked as run ids: a caller asks by
    /// the ids it has. A folder that is missing, or cannot be listed, lists
    /// as empty.
    pub fn list_run_files(&self) -> crate::FastMap<String, RunFiles> {
        let Ok(entries) = fs::read_dir(self.runs_dir()) else {
            return crate::FastMap::default();
        };
        run_files_named(entries.flatten().map(|entry| entry.file_name().into_encoded_bytes()))
    }

    /// Which of run `id`'s files are there now: what
    /// [`Home::list_run_files`] gives for it, for a caller that asks about a
    /// few runs (three stats, not a listing of thousands of files).
    pub fn run_files(&self, id: &RunId) -> RunFiles {
        let there = |path: PathBuf| fs::symlink_metadata(path).is_ok();
        RunFiles {
            log: there(self.log_path(id)),
            record: there(self.record_path(id)),
            snapshot: there(self.snapshot_path(id)),
        }
    }

    /// True when the runs folder holds anything at all (a folder that is
    /// missing or cannot be listed holds nothing).
    pub fn runs_dir_has_entries(&self) -> bool {
        fs::read_dir(self.runs_dir()).is_ok_and(|mut entries| entries.next().is_some())
    }

    /// `<root>/placeholder-runs`: the runs recorded only so that a new
    /// user with no history had something to look at (the bundled
    /// samples), one id a line.
    fn placeholder_list_path(&self) -> PathBuf {
        self.root.join("placeholder-runs")
    }

    /// Notes `ids` as placeholders, to be removed once the user has runs
    /// of their own ([`Home::placeholder_runs`]).
    pub fn mark_placeholders(&self, ids: &[RunId]) -> Result<(), StoreError> {
        let text: String = ids.iter().map(|id| format!("{id}\n")).collect();
        fs::create_dir_all(&self.root).map_err(|source| StoreError::io("create home", &self.root, source))?;
        crate::files::replace_unsynced(&self.placeholder_list_path(), text.as_bytes(), "note placeholder runs")
    }

    /// The runs noted as placeholders (none when nothing was noted, or the
    /// note cannot be read: a run is never removed on a guess).
    pub fn placeholder_runs(&self) -> Vec<RunId> {
        fs::read_to_string(self.placeholder_list_path())
            .map(|text| text.lines().filter_map(|line| validate_run_id(line.trim()).ok()).collect())
            .unwrap_or_default()
    }

    /// Forgets that any run is a placeholder (the user asked for the
    /// samples, or they were removed).
    pub fn forget_placeholders(&self) -> Result<(), StoreError> {
        crate::files::remove_if_present(&self.placeholder_list_path(), "forget placeholder runs")
    }

    /// Removes run `id`: its log, record, snapshot and kept copies (the
    /// catalog's rows are the caller's to remove).
    pub fn remove_run(&self, id: &RunId) -> Result<(), StoreError> {
        let id = validate_run_id(id.as_str())?;
        for path in [self.log_path(&id), self.record_path(&id), self.snapshot_path(&id), self.kept_copies_path(&id)] {
            crate::files::remove_if_present(&path, "remove run")?;
        }
        Ok(())
    }

    /// Removes run `id`'s log and record where `listed` (from
    /// [`Home::list_run_files`]) says they are, so the run can be written
    /// anew with [`Home::create_run_unsynced`], which sees to its snapshot.
    /// Only listed files: removing one that is not there still takes the
    /// folder's lock, which the threads creating runs then wait on.
    pub fn remove_listed_run(&self, id: &RunId, listed: RunFiles) -> Result<(), StoreError> {
        let id = validate_run_id(id.as_str())?;
        for (path, present) in [(self.log_path(&id), listed.log), (self.record_path(&id), listed.record)] {
            if present {
                crate::files::remove_if_present(&path, "replace")?;
            }
        }
        Ok(())
    }

    /// The run record, when present, readable and about this run. Any
    /// problem just means the log gets folded instead: the log is the truth,
    /// the record only a shortcut.
    fn read_record(&self, id: &RunId) -> Option<RunSummary> {
        let bytes = fs::read(self.record_path(id)).ok()?;
        let summary: RunSummary = serde_json::from_slice(&bytes).ok()?;
        (summary.id == *id).then_some(summary)
    }

    /// The run record, when present, readable and about this run (for the
    /// catalog, which lists runs by their records).
    pub fn read_record_pub(&self, id: &RunId) -> Option<RunSummary> {
        self.read_record(id)
    }

    /// Replaces run `summary.id`'s record with `summary` (by a rename:
    /// readers see the old record or the new one), outside any recording:
    /// the catalog's repricing of a run that ended.
    pub(crate) fn replace_record(&self, summary: &RunSummary) -> Result<(), StoreError> {
        let path = self.record_path(&summary.id);
        crate::files::replace_unsynced(&path, &crate::writer::record_json(summary, &path)?, "write run record")
    }

    fn not_found(&self, query: &str) -> StoreError {
        StoreError::NotFound {
            query: query.to_owned(),
            runs_dir: self.runs_dir(),
        }
    }
}

/// Which files of one run a listing of the runs folder found
/// ([`Home::list_run_files`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunFiles {
    /// `<id>.jsonl`, the log.
    pub log: bool,
    /// `<id>.json`, the record.
    pub record: bool,
    /// `<id>.snapshot`, the snapshot of the log's fold.
    pub snapshot: bool,
}

/// The runs folder's files by run, given the names it holds (as
/// [`Home::list_run_files`] lists them; for a caller that kept the
/// listing). A name that is not UTF-8 is no run's.
pub fn run_files_named<N: AsRef<[u8]>>(names: impl IntoIterator<Item = N>) -> crate::FastMap<String, RunFiles> {
    let mut runs: crate::FastMap<String, RunFiles> = crate::FastMap::default();
    for name in names {
        let Ok(name) = std::str::from_utf8(name.as_ref()) else { continue };
        let file = RUN_FILE_ENDS.iter().find_map(|(end, kind)| Some((name.strip_suffix(end)?, *kind)));
        if let Some((id, kind)) = file {
            runs.entry(id.to_owned()).or_default().mark(kind);
        }
    }
    runs
}

/// Which of a run's files a name is, by how it ends.
#[derive(Debug, Clone, Copy)]
enum RunFileKind {
    Log,
    Record,
    Snapshot,
}

const RUN_FILE_ENDS: [(&str, RunFileKind); 3] = [
    (".jsonl", RunFileKind::Log),
    (".json", RunFileKind::Record),
    (".snapshot", RunFileKind::Snapshot),
];

impl RunFiles {
    fn mark(&mut self, kind: RunFileKind) {
        match kind {
            RunFileKind::Log => self.log = true,
            RunFileKind::Record => self.record = true,
            RunFileKind::Snapshot => self.snapshot = true,
        }
    }
}

/// True when the file is empty or its last byte is `\n`.
pub(crate) fn ends_with_newline(file: &mut File) -> io::Result<bool> {
    if file.metadata()?.len() == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0_u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}
