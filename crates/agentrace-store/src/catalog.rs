//! The catalog: an SQLite database at `$AGENTRACE_HOME/catalog.sqlite` that
//! indexes what the run logs and the import sources hold (runs, agents,
//! usage rows, the import's offsets and file stamps, the searchable text).
//! It is derived data: the logs and the sources are the truth, and a
//! catalog that is missing, unreadable or of an older schema is made anew
//! (and refilled by [`Catalog::sync`] and the next import), never an error.
//! WAL and a busy timeout let two processes use it at once. The schema is
//! documented in the README: users may query it with `sqlite3`.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentrace_core::model::{Event, EventBody, Role, RunStatus, Timestamp};
use agentrace_core::prices::{database_label, database_of_id, PriceBook};
use agentrace_core::state::{FinalActors, RunSummary};
use agentrace_core::{Envelope, RunId};
use rusqlite::{params, Connection, OptionalExtension as _};
use serde::Serialize;

use crate::{read_log_line, validate_run_id, Home, LineAt, LogReader, Packed, StoreError};

/// The schema this build writes; a catalog of another is made anew, but
/// for the one before it, brought up to this one in place (see
/// `MIGRATIONS`).
pub const CATALOG_SCHEMA: i64 = 9;

/// How a catalog of an older schema becomes one of [`CATALOG_SCHEMA`] in
/// place, when that is cheaper than the rebuild (a cold import's work):
/// the rows of schema N taking a catalog to N + 1 (one step, or a few run
/// in order), and a catalog of schema N given every step from its own on
/// (one older than the first row is rebuilt). A new schema adds its steps.
/// Schema 3 filled a usage tree's head from a trigger; a trigger made
/// every usage write a statement with its own savepoint, at which SQLite
/// flushes the search index's pending text to disk, so an import wrote
/// one index segment per session and spent a fifth of its main thread
/// merging them. [`Catalog::put_usage`] now writes the head itself.
/// Schema 5 added the usage report beside the tree; the trees kept before
/// are of an older shape, which `usage` folds again (and keeps anew).
/// Schema 6 indexes the imported files by path: a pass of `watch` finds
/// the sessions of the files it saw written.
/// Schema 7 indexes the runs by each order `runs --sort` lists them in
/// (sorted at each call, the first page of 50,000 runs by cost read every
/// row, about 27 ms before the first line), and counts each run's
/// info-level notes apart from its warnings (`note_count`).
/// Schema 8 keeps a digest of each imported session's files
/// (`files_digest`): an import that finds a session's files as it left
/// them tells so from the session's row alone, where it read every file's
/// row (16,000 rows for 5,000 sessions, the largest part of a repeated
/// import's work in the catalog). A row of schema 7 has none until an
/// import finds its session unchanged and keeps it.
/// Schema 9 keeps the reading an import left a session open at
/// (`import_readings`): the next import of that session, grown, goes on
/// from it instead of feeding every line read before again.
const MIGRATIONS: &[(i64, &str)] = &[
    (3, "DROP TRIGGER IF EXISTS runs_usage_head;"),
    (4, "ALTER TABLE runs ADD COLUMN usage_report BLOB;"),
    (5, "CREATE INDEX import_files_by_path ON import_files (path);"),
    (6, "ALTER TABLE runs ADD COLUMN note_count INTEGER NOT NULL DEFAULT 0;"),
    (6, SORT_INDEXES),
    (7, "ALTER TABLE import_sessions ADD COLUMN files_digest BLOB;"),
    (8, IMPORT_READINGS),
];

/// Each run an import left open, with the reading it stopped at: its
/// recorder's state as `agentrace_core::Recorder::saved` writes it, packed
/// (a cache: a reading that cannot be restored is read again).
const IMPORT_READINGS: &str = "CREATE TABLE import_readings (
  run_id TEXT PRIMARY KEY,
  reading BLOB NOT NULL
);";

/// The indexes of the orders other than the newest first ([`RunSort`]).
/// Without the id that breaks the last ties (SQLite sorts a run of equal
/// keys as it reads them): with it, they were three times the size, 1.3 MB
/// of a cold import's writes of 5,000 sessions against 0.4 MB.
const SORT_INDEXES: &str = "CREATE INDEX runs_by_cost ON runs (cost DESC, started_at DESC);
CREATE INDEX runs_by_tokens ON runs (total_tokens DESC, started_at DESC);
CREATE INDEX runs_by_duration ON runs (duration_ms DESC, started_at DESC);
CREATE INDEX runs_by_warnings ON runs ((warning_count - note_count) DESC, started_at DESC);";

// Named in `home.rs` with every other file of the home; kept here too, where
// callers have always found them.
pub use crate::home::{log_stamp, LogStampRow, CATALOG_FILE};
use crate::home::stamp_of;

/// What a catalog made anew (or emptied by `reindex`) keeps as the price
/// book and the warning config of its runs (meta `prices`, `warnings`)
/// until its first sync has filled its rows: they come from the runs'
/// records, each priced and judged by the files the home had when it was
/// written, so that sync prices and judges them again once they are there.
/// Marked current while the catalog was still empty, a rebuild after a
/// `warnings.json` (or price file) was added listed every older run as
/// recorded: `runs --warning budget_exceeded` found none of the runs
/// `show` gave it.
const FILLED_FROM_RECORDS: &str = "INSERT INTO meta (key, value) VALUES ('prices', 'unknown'), ('warnings', 'unknown');";

/// The value [`FILLED_FROM_RECORDS`] keeps.
const UNKNOWN_BOOK: &str = "unknown";

/// The page size of a catalog made anew.
const PAGE_SIZE: u32 = 8192;

/// How long a writer waits for another process's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How much of one message, reasoning or tool text is kept for search (the
/// log has all of it): long tool outputs would otherwise make the catalog
/// as large as the history it indexes.
pub const TEXT_LIMIT: usize = 2000;

const SCHEMA: &str = r#"
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  provider TEXT NOT NULL,
  source TEXT,
  status TEXT NOT NULL,
  session_id TEXT,
  project TEXT,
  root_thread_id TEXT,
  started_at INTEGER,
  updated_at INTEGER,
  ended_at INTEGER,
  duration_ms INTEGER,
  agents INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  cached_input_tokens INTEGER NOT NULL,
  cache_creation_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  reasoning_tokens INTEGER NOT NULL,
  total_tokens INTEGER NOT NULL,
  cost REAL,
  cost_status TEXT NOT NULL,
  warning_count INTEGER NOT NULL,
  warning_codes TEXT NOT NULL,
  result TEXT,
  record TEXT NOT NULL,
  log_bytes INTEGER NOT NULL,
  log_modified_ns INTEGER NOT NULL,
  texts_bytes INTEGER NOT NULL DEFAULT 0,
  usage_tree BLOB,
  usage_total_tokens INTEGER,
  usage_log_bytes INTEGER,
  usage_log_modified_ns INTEGER,
  usage_prices TEXT,
  usage_format INTEGER,
  usage_provider TEXT,
  usage_session_id TEXT,
  usage_report BLOB,
  note_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_start ON runs (started_at DESC, id DESC);
CREATE INDEX runs_usage_heads ON runs (started_at DESC, id DESC, usage_log_bytes, usage_log_modified_ns, usage_prices, usage_format, usage_provider, usage_session_id, usage_total_tokens);
CREATE INDEX runs_by_status ON runs (status);
CREATE TABLE agents (
  run_id TEXT NOT NULL,
  thread_id TEXT NOT NULL,
  parent_thread_id TEXT,
  label TEXT NOT NULL,
  model TEXT,
  depth INTEGER NOT NULL,
  PRIMARY KEY (run_id, thread_id)
) WITHOUT ROWID;
CREATE TABLE usage (
  run_id TEXT NOT NULL,
  thread_id TEXT,
  label TEXT NOT NULL,
  model TEXT,
  day TEXT,
  hour INTEGER,
  input_tokens INTEGER NOT NULL,
  cached_input_tokens INTEGER NOT NULL,
  cache_creation_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  reasoning_tokens INTEGER NOT NULL,
  total_tokens INTEGER NOT NULL,
  cost REAL NOT NULL,
  unpriced_tokens INTEGER NOT NULL
);
CREATE INDEX usage_by_run ON usage (run_id);
CREATE INDEX usage_by_day ON usage (day);
CREATE TABLE import_sessions (
  provider TEXT NOT NULL,
  key TEXT NOT NULL,
  run_id TEXT NOT NULL,
  log_bytes INTEGER,
  merged INTEGER NOT NULL,
  open INTEGER NOT NULL DEFAULT 0,
  files_digest BLOB,
  PRIMARY KEY (provider, key)
) WITHOUT ROWID;
CREATE TABLE import_files (
  provider TEXT NOT NULL,
  key TEXT NOT NULL,
  path TEXT NOT NULL,
  size INTEGER NOT NULL,
  modified_ns INTEGER NOT NULL,
  read_offset INTEGER,
  read_lines INTEGER,
  read_torn INTEGER,
  read_number INTEGER,
  PRIMARY KEY (provider, key, path)
) WITHOUT ROWID;
CREATE INDEX import_files_by_path ON import_files (path);
CREATE TABLE import_readings (
  run_id TEXT PRIMARY KEY,
  reading BLOB NOT NULL
);
CREATE TABLE import_dirs (
  path BLOB PRIMARY KEY,
  mtime_ns INTEGER NOT NULL,
  ctime_ns INTEGER NOT NULL,
  inode INTEGER NOT NULL,
  entries BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE rollout_heads (
  path TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  modified_ns INTEGER NOT NULL,
  thread TEXT NOT NULL,
  parent TEXT,
  depth INTEGER NOT NULL,
  started_at INTEGER
) WITHOUT ROWID;
CREATE TABLE texts (
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  thread_id TEXT,
  label TEXT NOT NULL,
  role TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  kind TEXT NOT NULL,
  line_offset INTEGER NOT NULL,
  line_length INTEGER NOT NULL
);
CREATE INDEX texts_by_run ON texts (run_id);
CREATE VIRTUAL TABLE texts_fts USING fts5 (text, content='', contentless_delete=1);
"#;

/// Why the catalog was made anew when it was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebuilt {
    /// There was none.
    Missing,
    /// It could not be read (the cause).
    Unreadable(String),
    /// It was written by another schema.
    OtherSchema(i64),
}

impl Rebuilt {
    /// The note said on stderr, `None` for a catalog that simply was not
    /// there yet.
    pub fn note(&self, path: &Path) -> Option<String> {
        match self {
            Rebuilt::Missing => None,
            Rebuilt::Unreadable(cause) => Some(format!("note: the catalog {} could not be read ({cause}); rebuilding it from the run logs", path.display())),
            Rebuilt::OtherSchema(found) => Some(format!("note: the catalog {} has schema {found}, this agentrace writes {CATALOG_SCHEMA}; rebuilding it from the run logs", path.display())),
        }
    }
}

/// Why an open did not give a catalog.
enum NotOpened {
    /// Another process holds it locked: wait, never rebuild.
    Busy(rusqlite::Error),
    /// It must be made anew.
    Rebuild(Rebuilt),
}

/// An open catalog.
pub struct Catalog {
    conn: Connection,
    path: PathBuf,
    rebuilt: Option<Rebuilt>,
    /// The transaction open is [`Catalog::begin_read`]'s (it writes nothing).
    reading: std::cell::Cell<bool>,
}

/// Removes the files named `path` + each of `ends` that are there.
fn remove_beside(path: &Path, ends: &[&str]) -> Result<(), StoreError> {
    for end in ends {
        let file = PathBuf::from(format!("{}{end}", path.display()));
        match fs::remove_file(&file) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(StoreError::io("remove the old catalog", &file, source)),
        }
    }
    Ok(())
}

/// An SQLite failure on the catalog at `path`.
fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Catalog {
        path: path.to_path_buf(),
        source,
    }
}

impl Catalog {
    /// Opens the home's catalog, making it anew when it is missing,
    /// unreadable or of another schema ([`Catalog::rebuilt`] says why).
    pub fn open(home: &Home) -> Result<Catalog, StoreError> {
        fs::create_dir_all(home.root()).map_err(|source| StoreError::io("create home", home.root(), source))?;
        Self::open_at(&home.catalog_path())
    }

    /// [`Catalog::open`] of the file at `path`. A catalog another process
    /// holds locked is waited for, never taken for a broken one: removing
    /// the files under a process that was writing them left it a
    /// "malformed" database.
    pub fn open_at(path: &Path) -> Result<Catalog, StoreError> {
        let existed = path.exists();
        if !existed {
            // A write-ahead log left by a catalog since deleted (see
            // `unsynced_appends`) is not a log of the new one.
            remove_beside(path, &["-wal", "-shm"])?;
        }
        let started = std::time::Instant::now();
        let reason = loop {
            match Self::try_open(path, existed) {
                Ok(catalog) => return Ok(catalog),
                Err(NotOpened::Busy(source)) => {
                    if started.elapsed() >= BUSY_TIMEOUT {
                        return Err(StoreError::Catalog { path: path.to_path_buf(), source });
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(NotOpened::Rebuild(reason)) => break reason,
            }
        };
        remove_beside(path, &["", "-wal", "-shm"])?;
        let mut catalog = Self::try_open(path, false).map_err(|failure| match failure {
            NotOpened::Busy(source) => StoreError::Catalog { path: path.to_path_buf(), source },
            NotOpened::Rebuild(Rebuilt::Unreadable(cause)) => StoreError::CatalogBroken { path: path.to_path_buf(), cause },
            NotOpened::Rebuild(other) => StoreError::CatalogBroken { path: path.to_path_buf(), cause: format!("{other:?}") },
        })?;
        catalog.rebuilt = Some(reason);
        Ok(catalog)
    }

    fn try_open(path: &Path, existed: bool) -> Result<Catalog, NotOpened> {
        let unreadable = |error: rusqlite::Error| match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => NotOpened::Busy(error),
            _ => NotOpened::Rebuild(Rebuilt::Unreadable(error.to_string())),
        };
        let conn = Connection::open(path).map_err(unreadable)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(unreadable)?;
        // Not read through a map of the file: its pages would count in the
        // peak memory, which then grew with the history (64 MB a GB).
        // Pages of 8 KiB for a new file (an existing one keeps its own): a
        // run's row with its packed usage is about 2.2 kB, so 4 KiB pages
        // held one row each, half of them empty; at 8 KiB a cold import of
        // 1 GB wrote 6.5 MB less, and `usage` after it read a third of the
        // pages (54 -> 43 ms, 15 alternated runs).
        conn.execute_batch(&format!("PRAGMA page_size={PAGE_SIZE}; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")).map_err(unreadable)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(unreadable)?;
        let mut rebuilt = None;
        if version == 0 {
            // A new file (or one another process is making right now: the
            // schema is made in one exclusive transaction, and checked again
            // inside it).
            conn.execute_batch("BEGIN IMMEDIATE").map_err(unreadable)?;
            let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(unreadable)?;
            if version == 0 {
                let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0)).map_err(unreadable)?;
                if tables > 0 {
                    let _ = conn.execute_batch("ROLLBACK");
                    return Err(NotOpened::Rebuild(Rebuilt::OtherSchema(0)));
                }
                conn.execute_batch(SCHEMA).map_err(unreadable)?;
                conn.execute_batch(SORT_INDEXES).map_err(unreadable)?;
                conn.execute_batch(FILLED_FROM_RECORDS).map_err(unreadable)?;
                conn.execute_batch(&format!("PRAGMA user_version = {CATALOG_SCHEMA}")).map_err(unreadable)?;
                if !existed {
                    rebuilt = Some(Rebuilt::Missing);
                }
            } else if version != CATALOG_SCHEMA {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(NotOpened::Rebuild(Rebuilt::OtherSchema(version)));
            }
            conn.execute_batch("COMMIT").map_err(unreadable)?;
        } else if MIGRATIONS.iter().any(|(from, _)| *from == version) {
            // In one exclusive transaction, checked again inside it: another
            // process may have migrated it meanwhile.
            conn.execute_batch("BEGIN IMMEDIATE").map_err(unreadable)?;
            let again: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(unreadable)?;
            if again == version {
                for (_, step) in MIGRATIONS.iter().filter(|(from, _)| *from >= version) {
                    conn.execute_batch(step).map_err(unreadable)?;
                }
                conn.execute_batch(&format!("PRAGMA user_version = {CATALOG_SCHEMA}")).map_err(unreadable)?;
            } else if again != CATALOG_SCHEMA {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(NotOpened::Rebuild(Rebuilt::OtherSchema(again)));
            }
            conn.execute_batch("COMMIT").map_err(unreadable)?;
        } else if version != CATALOG_SCHEMA {
            return Err(NotOpened::Rebuild(Rebuilt::OtherSchema(version)));
        } else {
            // A quick look that the file is a database we can read.
            conn.query_row("SELECT count(*) FROM meta", [], |row| row.get::<_, i64>(0)).map_err(unreadable)?;
        }
        Ok(Catalog {
            conn,
            path: path.to_path_buf(),
            rebuilt,
            reading: std::cell::Cell::new(false),
        })
    }

    /// Empties every table in one transaction, the schema kept: what
    /// `reindex` starts from. Removing the files instead pulled them from
    /// under any other process using the catalog (it was left a
    /// "malformed" database); emptied in a transaction, the others see the
    /// old rows or none.
    pub fn clear(&self) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.begin()?;
        self.conn
            .execute_batch(
                "INSERT INTO texts_fts (texts_fts) VALUES ('delete-all'); \
                 DELETE FROM texts; DELETE FROM usage; DELETE FROM agents; DELETE FROM runs; \
                 DELETE FROM import_sessions; DELETE FROM import_files; DELETE FROM import_readings; DELETE FROM rollout_heads; DELETE FROM import_dirs; DELETE FROM meta;",
            )
            .map_err(&err)?;
        self.conn.execute_batch(FILLED_FROM_RECORDS).map_err(&err)?;
        self.commit()
    }

    /// Makes the home's catalog anew from the run logs (`reindex`): filled
    /// in a file beside it, then copied in whole in one write transaction.
    /// Emptied and filled in place in one long transaction, the catalog
    /// read empty meanwhile and every command that synced it waited on
    /// the rebuild's write lock (`runs` 30 s on a home of 5,000 runs); now
    /// readers see the old catalog until the copy commits. Never renamed
    /// over the old file: a process using it would keep its write-ahead
    /// log, which the new file would then take for its own.
    pub fn made_anew(home: &Home) -> Result<(Catalog, SyncCount), StoreError> {
        fs::create_dir_all(home.root()).map_err(|source| StoreError::io("create home", home.root(), source))?;
        let scratch = home.catalog_anew_path();
        remove_beside(&scratch, &["", "-wal", "-shm"])?;
        let made = (|| {
            let fresh = Self::open_at(&scratch)?;
            let count = fresh.sync(home)?;
            let mut catalog = Self::open(home)?;
            if catalog.copied_from(&fresh).is_err() {
                // A catalog the copy cannot write (pages of another size
                // in an older file) is emptied and filled in place.
                catalog.clear()?;
                let count = catalog.sync(home)?;
                return Ok((catalog, count));
            }
            Ok((catalog, count))
        })();
        let removed = remove_beside(&scratch, &["", "-wal", "-shm"]);
        let made = made?;
        removed?;
        Ok(made)
    }

    /// Replaces every page of this catalog with `fresh`'s, in one write
    /// transaction (waited for as long as any other).
    fn copied_from(&mut self, fresh: &Catalog) -> Result<(), StoreError> {
        let err = sql(&self.path);
        let backup = rusqlite::backup::Backup::new(&fresh.conn, &mut self.conn).map_err(&err)?;
        let started = std::time::Instant::now();
        loop {
            match backup.step(-1).map_err(&err)? {
                rusqlite::backup::StepResult::Done => return Ok(()),
                rusqlite::backup::StepResult::More => {}
                busy if started.elapsed() >= BUSY_TIMEOUT => {
                    return Err(StoreError::CatalogBroken { path: self.path.clone(), cause: format!("the catalog made anew could not be copied in: {busy:?}") });
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Makes this connection's writes cost no sync, for a live recording
    /// that indexes its run at its end: the checkpoint a last connection
    /// makes on closing, the write-ahead log's header and the folder it is
    /// made in were a third of a recording's syncs. The connection only
    /// appends to the log (no checkpoint on close, none as the log grows:
    /// the next command to close the catalog checkpoints it, and readers
    /// read through it until then), so a power loss can at worst drop the
    /// rows it wrote, never break the file; the catalog is derived data,
    /// and the run is indexed again from its log by the next sync.
    pub fn unsynced_appends(&self) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn
            .set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(&err)?;
        self.conn.execute_batch("PRAGMA synchronous=OFF; PRAGMA wal_autocheckpoint=0;").map_err(err)
    }

    /// Why the catalog was made anew when opened, if it was.
    pub fn rebuilt(&self) -> Option<&Rebuilt> {
        self.rebuilt.as_ref()
    }

    /// The catalog's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for a caller's own queries.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Starts a write transaction (writes between this and
    /// [`Catalog::commit`] are one: an import commits every few seconds).
    pub fn begin(&self) -> Result<(), StoreError> {
        // A read transaction is ended first: one upgraded to write after
        // another process wrote would fail, where `BEGIN IMMEDIATE` waits.
        if self.reading.get() {
            self.commit()?;
        }
        if self.conn.is_autocommit() {
            self.conn.execute_batch("BEGIN IMMEDIATE").map_err(sql(&self.path))?;
        }
        Ok(())
    }

    /// Starts a write transaction as [`Catalog::begin`] does, but only if
    /// no other connection holds the catalog's write lock now: `false`
    /// (and nothing started) when one does. For work that can wait for a
    /// later moment (a recording's text written while it waits for input)
    /// rather than stall on another process's transaction.
    pub fn try_begin(&self) -> Result<bool, StoreError> {
        let err = sql(&self.path);
        if self.reading.get() {
            self.commit()?;
        }
        if !self.conn.is_autocommit() {
            return Ok(true);
        }
        self.conn.busy_timeout(Duration::ZERO).map_err(&err)?;
        let begun = match self.conn.execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => Ok(true),
            Err(error) if matches!(error.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)) => Ok(false),
            Err(error) => Err(err(error)),
        };
        self.conn.busy_timeout(BUSY_TIMEOUT).map_err(&err)?;
        begun
    }

    /// Starts a read transaction unless a transaction is open: the lookups
    /// that follow (until [`Catalog::begin`] or [`Catalog::commit`]) share
    /// one snapshot and its locks. Taken and dropped by each statement, the
    /// locks were a third of the time of thousands of lookups.
    pub fn begin_read(&self) -> Result<(), StoreError> {
        if self.conn.is_autocommit() {
            self.conn.execute_batch("BEGIN").map_err(sql(&self.path))?;
            self.reading.set(true);
        }
        Ok(())
    }

    /// Commits the transaction [`Catalog::begin`] started, if any.
    pub fn commit(&self) -> Result<(), StoreError> {
        self.reading.set(false);
        if !self.conn.is_autocommit() {
            self.conn.execute_batch("COMMIT").map_err(sql(&self.path))?;
        }
        Ok(())
    }

    /// Forgets what the imports read (each session's offsets and stamps,
    /// the rollouts' heads), so that the next import reads every session
    /// again and writes its run anew, and keeps `value` as meta `key` in
    /// the same transaction. The folder listings stay: they say what is on
    /// disk, not what was made of it.
    pub fn forget_imports(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.begin()?;
        self.conn.execute_batch("DELETE FROM import_sessions; DELETE FROM import_files; DELETE FROM rollout_heads;").map_err(&err)?;
        self.set_meta(key, value)?;
        self.commit()
    }

    /// Whether any session was imported (the import state is not empty).
    pub fn has_imports(&self) -> Result<bool, StoreError> {
        self.conn
            .query_row("SELECT EXISTS (SELECT 1 FROM import_sessions)", [], |row| row.get(0))
            .map_err(sql(&self.path))
    }

    /// A value of the `meta` table.
    pub fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| row.get(0))
            .optional()
            .map_err(sql(&self.path))
    }

    /// Sets a value of the `meta` table.
    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn
            .execute("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, value])
            .map(|_| ())
            .map_err(sql(&self.path))
    }

    // ----- runs -----

    /// Puts (or replaces) run `summary`'s row, its log as stamped `log`.
    /// `texts`, when given, replace the run's searchable text (up to
    /// `log.bytes` of the log); `None` keeps them.
    pub fn put_run(&self, summary: &RunSummary, project: Option<&str>, session_id: Option<&str>, agents: &[AgentRow], log: LogStampRow, texts: Option<&[TextRow]>) -> Result<(), StoreError> {
        let err = sql(&self.path);
        let tokens = summary.tokens.unwrap_or_default();
        let duration = summary.duration_ms();
        let record = serde_json::to_string(summary).map_err(|error| StoreError::CatalogBroken { path: self.path.clone(), cause: error.to_string() })?;
        let project = project.map(str::to_owned).or_else(|| self.project_of(summary.id.as_str()).ok().flatten());
        let mut put = self
            .conn
            .prepare_cached(
                "INSERT INTO runs (id, provider, source, status, session_id, project, root_thread_id, started_at, updated_at, ended_at, duration_ms, agents, \
                 input_tokens, cached_input_tokens, cache_creation_tokens, output_tokens, reasoning_tokens, total_tokens, cost, cost_status, warning_count, warning_codes, result, record, log_bytes, log_modified_ns, note_count) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27) \
                 ON CONFLICT (id) DO UPDATE SET provider = excluded.provider, source = excluded.source, status = excluded.status, session_id = excluded.session_id, \
                 project = excluded.project, root_thread_id = excluded.root_thread_id, started_at = excluded.started_at, updated_at = excluded.updated_at, \
                 ended_at = excluded.ended_at, duration_ms = excluded.duration_ms, agents = excluded.agents, input_tokens = excluded.input_tokens, \
                 cached_input_tokens = excluded.cached_input_tokens, cache_creation_tokens = excluded.cache_creation_tokens, output_tokens = excluded.output_tokens, \
                 reasoning_tokens = excluded.reasoning_tokens, total_tokens = excluded.total_tokens, cost = excluded.cost, cost_status = excluded.cost_status, \
                 warning_count = excluded.warning_count, warning_codes = excluded.warning_codes, result = excluded.result, record = excluded.record, \
                 log_bytes = excluded.log_bytes, log_modified_ns = excluded.log_modified_ns, note_count = excluded.note_count",
            )
            .map_err(&err)?;
        put.execute(params![
            summary.id.as_str(),
            word(&summary.provider),
            word(&summary.source),
            summary.status.as_str(),
            session_id,
            project,
            summary.root_thread_id.as_ref().map(|id| id.as_str().to_owned()),
            summary.started_at.map(|at| at.0),
            summary.updated_at.map(|at| at.0),
            summary.ended_at.map(|at| at.0),
            duration,
            agents.len() as i64,
            tokens.input_tokens as i64,
            tokens.cached_input_tokens as i64,
            tokens.cache_creation_input_tokens as i64,
            tokens.output_tokens as i64,
            tokens.reasoning_output_tokens as i64,
            tokens.total_tokens as i64,
            summary.cost,
            word(&summary.cost_status),
            summary.warning_count as i64,
            summary.warning_codes.join(" "),
            summary.result.as_deref().or(summary.error.as_deref()),
            record,
            log.bytes as i64,
            log.modified_ns as i64,
            summary.note_codes.len() as i64,
        ])
        .map_err(&err)?;
        self.conn.prepare_cached("DELETE FROM agents WHERE run_id = ?1").map_err(&err)?.execute([summary.id.as_str()]).map_err(&err)?;
        let mut agent = self
            .conn
            .prepare_cached("INSERT OR REPLACE INTO agents (run_id, thread_id, parent_thread_id, label, model, depth) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
            .map_err(&err)?;
        for row in agents {
            agent
                .execute(params![summary.id.as_str(), row.thread_id, row.parent_thread_id, row.label, row.model, row.depth])
                .map_err(&err)?;
        }
        if let Some(texts) = texts {
            self.put_texts(&summary.id, texts, log.bytes)?;
        }
        Ok(())
    }

    fn project_of(&self, id: &str) -> rusqlite::Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT project FROM runs WHERE id = ?1")?
            .query_row([id], |row| row.get(0))
            .optional()
            .map(Option::flatten)
    }

    /// Replaces run `id`'s searchable text.
    pub fn put_texts(&self, id: &RunId, texts: &[TextRow], log_bytes: u64) -> Result<(), StoreError> {
        self.add_texts(id, texts, log_bytes, true)
    }

    /// Adds to run `id`'s searchable text (replacing what it had when
    /// `replace`), the log indexed up to `log_bytes`.
    pub fn add_texts(&self, id: &RunId, texts: &[TextRow], log_bytes: u64, replace: bool) -> Result<(), StoreError> {
        let err = sql(&self.path);
        if replace {
            self.forget_texts(id)?;
        }
        self.insert_texts(id, texts, |_| {})?;
        self.conn
            .prepare_cached("UPDATE runs SET texts_bytes = ?2 WHERE id = ?1")
            .map_err(&err)?
            .execute(params![id.as_str(), log_bytes as i64])
            .map_err(&err)?;
        Ok(())
    }

    /// Forgets run `id`'s searchable text, if it has any.
    pub fn forget_texts(&self, id: &RunId) -> Result<(), StoreError> {
        let err = sql(&self.path);
        // Asked first, as the delete below is a statement with a savepoint
        // of its own, at which SQLite flushes the search index's pending
        // text (see `MIGRATIONS`): a run indexed the first time (every run
        // of a cold import) has nothing to forget.
        let had: bool = self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM texts WHERE run_id = ?1)")
            .map_err(&err)?
            .query_row([id.as_str()], |row| row.get(0))
            .map_err(&err)?;
        if had {
            // Contentless: the index forgets a row by its rowid alone.
            self.conn
                .prepare_cached("DELETE FROM texts_fts WHERE rowid IN (SELECT id FROM texts WHERE run_id = ?1)")
                .map_err(&err)?
                .execute([id.as_str()])
                .map_err(&err)?;
            self.conn.prepare_cached("DELETE FROM texts WHERE run_id = ?1").map_err(&err)?.execute([id.as_str()]).map_err(&err)?;
        }
        Ok(())
    }

    /// Adds `texts` to run `id`'s searchable text, telling `written` each
    /// row's id in turn (for [`Catalog::relabel_texts`]); how much of the
    /// log they cover is the caller's to set.
    pub fn insert_texts(&self, id: &RunId, texts: &[TextRow], mut written: impl FnMut(i64)) -> Result<(), StoreError> {
        let err = sql(&self.path);
        let mut text = self
            .conn
            .prepare_cached("INSERT INTO texts (run_id, sequence, thread_id, label, role, timestamp, kind, line_offset, line_length) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
            .map_err(&err)?;
        let mut fts = self.conn.prepare_cached("INSERT INTO texts_fts (rowid, text) VALUES (?1, ?2)").map_err(&err)?;
        for row in texts {
            text.execute(params![id.as_str(), row.sequence as i64, row.thread_id, row.label, row.role, row.timestamp, row.kind, row.line.offset as i64, row.line.length as i64])
                .map_err(&err)?;
            let rowid = self.conn.last_insert_rowid();
            fts.execute(params![rowid, row.text]).map_err(&err)?;
            written(rowid);
        }
        Ok(())
    }

    /// Gives the text rows of the ids given the actor (label and role)
    /// their thread was settled on after they were written.
    pub fn relabel_texts<'a>(&self, rows: impl IntoIterator<Item = (i64, &'a str, &'a str)>) -> Result<(), StoreError> {
        let err = sql(&self.path);
        let mut update = self.conn.prepare_cached("UPDATE texts SET label = ?2, role = ?3 WHERE id = ?1").map_err(&err)?;
        for (rowid, label, role) in rows {
            update.execute(params![rowid, label, role]).map_err(&err)?;
        }
        Ok(())
    }

    /// Forgets run `id` (its row, agents, usage and text).
    pub fn remove_run(&self, id: &str) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached("DELETE FROM texts_fts WHERE rowid IN (SELECT id FROM texts WHERE run_id = ?1)")
            .map_err(&err)?
            .execute([id])
            .map_err(&err)?;
        for statement in ["DELETE FROM texts WHERE run_id = ?1", "DELETE FROM agents WHERE run_id = ?1", "DELETE FROM usage WHERE run_id = ?1", "DELETE FROM import_readings WHERE run_id = ?1", "DELETE FROM runs WHERE id = ?1"] {
            self.conn.prepare_cached(statement).map_err(&err)?.execute([id]).map_err(&err)?;
        }
        Ok(())
    }

    /// Each run's log stamp, indexed text length and status as the catalog
    /// has them, by id (only the running runs' when `running`).
    pub fn run_stamps(&self, running: bool) -> Result<HashMap<String, (LogStampRow, u64, String)>, StoreError> {
        let err = sql(&self.path);
        let filter = if running { " WHERE status = 'running'" } else { "" };
        let mut statement = self.conn.prepare(&format!("SELECT id, log_bytes, log_modified_ns, texts_bytes, status FROM runs{filter}")).map_err(&err)?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    (
                        LogStampRow {
                            bytes: row.get::<_, i64>(1)? as u64,
                            modified_ns: row.get::<_, i64>(2)? as u64,
                        },
                        row.get::<_, i64>(3)? as u64,
                        row.get::<_, String>(4)?,
                    ),
                ))
            })
            .map_err(&err)?;
        rows.collect::<Result<_, _>>().map_err(&err)
    }

    /// Brings the runs table up to the runs folder: a run whose log is new
    /// or changed is indexed again (its record, else its log's fold; its
    /// text once it is not running), a run whose log is gone is forgotten.
    /// Cheap when nothing changed: the runs folder's own stamp is kept, and
    /// only running runs are looked at then.
    pub fn sync(&self, home: &Home) -> Result<SyncCount, StoreError> {
        self.rows_as_recorded(home)?;
        // A catalog made anew is priced and judged once its rows are there
        // (see `FILLED_FROM_RECORDS`); any other before, so that the runs
        // it indexes now, recorded by the home's files, are not folded.
        let filled_from_records = [self.meta("prices")?, self.meta("warnings")?].iter().any(|known| known.as_deref() == Some(UNKNOWN_BOOK));
        let repriced = if filled_from_records { Repriced::default() } else { self.reprice(home)? };
        let mut count = self.sync_runs(home)?;
        let repriced = if filled_from_records { self.reprice(home)? } else { repriced };
        // After the rows are there: a catalog made anew is filled from
        // records an older agentrace wrote.
        self.stopped_runs_marked(home)?;
        self.notes_marked(home)?;
        count.repriced = if repriced.prices { repriced.runs } else { 0 };
        count.database_changed = repriced.database;
        count.rejudged = if repriced.warnings { repriced.runs } else { 0 };
        Ok(count)
    }

    /// Once per catalog: gives each run's row the warnings of its record.
    /// Imports indexed the recorder's state, which knows only the warnings
    /// raised while recording, so a catalog written before they indexed
    /// the record listed 0 for an imported run `show` gave warnings; its
    /// runs' records were right all along. Reads records, folds nothing.
    fn rows_as_recorded(&self, home: &Home) -> Result<(), StoreError> {
        if self.meta("rows_as_recorded")?.is_some() {
            return Ok(());
        }
        let err = sql(&self.path);
        let rows: Vec<(String, i64, String)> = {
            let mut statement = self.conn.prepare("SELECT id, warning_count, warning_codes FROM runs").map_err(&err)?;
            let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?))).map_err(&err)?;
            rows.collect::<Result<_, _>>().map_err(&err)?
        };
        self.begin()?;
        for (id, count, codes) in rows {
            let Ok(run_id) = validate_run_id(&id) else { continue };
            let Some(record) = home.read_record_pub(&run_id) else { continue };
            if (record.warning_count as i64, record.warning_codes.join(" ")) == (count, codes) {
                continue;
            }
            self.put_figures(&record)?;
        }
        self.set_meta("rows_as_recorded", "1")?;
        self.commit()
    }

    /// Once per catalog (meta `key`): each run `which` selects is mended by
    /// `mend`, which returns its record to write into the row, or `None`
    /// to leave it. For what records an older agentrace wrote lack.
    fn mend_once(&self, key: &str, which: &str, mut mend: impl FnMut(&RunId) -> Result<Option<RunSummary>, StoreError>) -> Result<(), StoreError> {
        if self.meta(key)?.is_some() {
            return Ok(());
        }
        let err = sql(&self.path);
        let ids: Vec<String> = {
            let mut statement = self.conn.prepare(&format!("SELECT id FROM runs WHERE {which}")).map_err(&err)?;
            let rows = statement.query_map([], |row| row.get::<_, String>(0)).map_err(&err)?;
            rows.collect::<Result<_, _>>().map_err(&err)?
        };
        self.begin()?;
        for id in ids {
            let Ok(run_id) = validate_run_id(&id) else { continue };
            if let Some(record) = mend(&run_id)? {
                self.put_figures(&record)?;
            }
        }
        self.set_meta(key, "1")?;
        self.commit()
    }

    /// Once per catalog: each `running` run whose session ended (its
    /// root's turn never did: a crash, a kill, a capture cut short) gets
    /// `sessionEnded` in its record and row. Records written before the
    /// field said nothing of it, so the list called such a run live (the
    /// first command's hint, the viewer following it) where `top` knew
    /// better. Folds the running runs' logs only.
    fn stopped_runs_marked(&self, home: &Home) -> Result<(), StoreError> {
        self.mend_once("stopped_runs_marked", "status = 'running'", |run_id| {
            let Ok(loaded) = home.load_run(run_id) else { return Ok(None) };
            if !loaded.book.state().summary().session_ended {
                return Ok(None);
            }
            match home.read_record_pub(run_id) {
                Some(mut record) if !record.session_ended => {
                    record.session_ended = true;
                    home.replace_record(&record)?;
                    Ok(Some(record))
                }
                Some(_) => Ok(None),
                None => Ok(Some(loaded.checked_view(home.warnings(), None).run)),
            }
        })
    }

    /// Once per catalog: each run with warnings gets `noteCodes` (which of
    /// them are info-level notes) in its record and row. Records written
    /// before the field said nothing of it, so the run list counted a note
    /// (`replayed_history`, on most Codex runs with a child) as a problem.
    /// Folds the logs of the runs with warnings, once (about a second for
    /// the 2,500 of a 1 GB history).
    fn notes_marked(&self, home: &Home) -> Result<(), StoreError> {
        self.mend_once("notes_marked", "warning_count > 0", |run_id| {
            let Some(mut record) = home.read_record_pub(run_id) else { return Ok(None) };
            // A run being recorded gets them in its recorder's next record.
            if !record.note_codes.is_empty() || record.at_work() {
                return Ok(None);
            }
            let Ok(loaded) = home.load_run(run_id) else { return Ok(None) };
            let notes = loaded.checked_view(home.warnings(), None).run.note_codes;
            if notes.is_empty() {
                return Ok(None);
            }
            record.note_codes = notes;
            home.replace_record(&record)?;
            Ok(Some(record))
        })
    }

    /// When the home prices with another book, or judges with another
    /// warning config, than the ones the catalog's runs were priced and
    /// judged with (its price file or `warnings.json` was added, changed or
    /// removed), works out each run's cost and warnings again from its log,
    /// and writes them into the run's record and row: `runs`, the first
    /// command and the viewer's list then give the cost and the warnings
    /// `show` and `check` give. A running run is left to its recorder.
    /// Returns how many runs changed, and whether the prices and the
    /// warning config had changed.
    fn reprice(&self, home: &Home) -> Result<Repriced, StoreError> {
        let prices = home.prices();
        let known = |key: &str| self.meta(key).map(|known| known.filter(|known| known != UNKNOWN_BOOK));
        let (known_prices, known_warnings) = (known("prices")?, known("warnings")?);

        // A catalog from before its price book (or warning config) was
        // kept: its runs were priced by the database (and judged by none).
        // So are those of a catalog made anew from records, which do not
        // say: a home with neither file folds no log for it, and one that
        // has either folds every run once.
        let prices_same = known_prices.as_deref().unwrap_or(PriceBook::shared_database().id()) == prices.id();
        let warnings_same = known_warnings.as_deref().unwrap_or(crate::warning_file::no_config_id()) == home.warnings_id();
        if prices_same && warnings_same {
            if known_prices.is_none() || known_warnings.is_none() {
                self.set_meta("prices", prices.id())?;
                self.set_meta("warnings", home.warnings_id())?;
            }
            return Ok(Repriced::default());
        }
        // A process that read the files before they changed (a `watch` or
        // `serve` left running) does nothing again: it and the commands
        // reading the files now would each undo the other's work.
        let now = Home::at(home.root()).with_home_prices().and_then(Home::with_home_warnings);
        let current = now.as_ref().is_ok_and(|now| now.prices().id() == prices.id() && now.warnings_id() == home.warnings_id());
        if !current {
            return Ok(Repriced::default());
        }
        let err = sql(&self.path);
        let ids: Vec<(String, bool)> = {
            let mut statement = self.conn.prepare("SELECT id, status = 'running' FROM runs").map_err(&err)?;
            let rows = statement.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, bool>(1)?))).map_err(&err)?;
            rows.collect::<Result<_, _>>().map_err(&err)?
        };
        let mut repriced = 0;
        self.begin()?;
        for (id, running) in ids {
            let Ok(run_id) = validate_run_id(&id) else { continue };
            let judged = match home.load_run(&run_id) {
                // A run still being recorded gets its recorder's next
                // record, priced and judged as the home is then. One whose
                // session is over with its root's turn never ended (a
                // crash, an interrupted capture) stays `running` and has
                // no recorder: skipped, it listed `$?` forever where
                // `show` priced it.
                Ok(loaded) if running && !loaded.book.session_over() => continue,
                Ok(loaded) => loaded.checked_view(home.warnings(), None).run,
                // Gone since it was listed: the sync forgets it.
                Err(StoreError::NotFound { .. }) => continue,
                Err(error) => {
                    let _ = self.commit();
                    return Err(error);
                }
            };
            // The record keeps what the recording knew (a traceparent):
            // only its cost and warnings change. A run without one is
            // listed by its log's fold, as it was indexed.
            let figures = |run: &RunSummary| (run.cost, run.cost_status, run.warning_count, run.warning_codes.clone());
            let record = match home.read_record_pub(&run_id) {
                Some(mut record) => {
                    if figures(&record) == figures(&judged) {
                        continue;
                    }
                    (record.cost, record.cost_status, record.warning_count, record.warning_codes) = figures(&judged);
                    home.replace_record(&record)?;
                    record
                }
                None => judged,
            };
            self.put_figures(&record)?;
            repriced += 1;
        }
        self.set_meta("prices", prices.id())?;
        self.set_meta("warnings", home.warnings_id())?;
        self.commit()?;
        let known_database = known_prices.as_deref().map_or_else(database_label, |id| database_of_id(id).to_owned());
        Ok(Repriced {
            runs: repriced,
            prices: !prices_same,
            database: !prices_same && known_database != database_of_id(prices.id()),
            warnings: !warnings_same,
        })
    }

    /// Writes `record`'s cost and warnings into its run's row, and the
    /// record itself (what the list shows).
    fn put_figures(&self, record: &RunSummary) -> Result<(), StoreError> {
        let json = serde_json::to_string(record).map_err(|error| StoreError::CatalogBroken { path: self.path.clone(), cause: error.to_string() })?;
        self.conn
            .prepare_cached("UPDATE runs SET cost = ?2, cost_status = ?3, warning_count = ?4, warning_codes = ?5, record = ?6, note_count = ?7 WHERE id = ?1")
            .map_err(sql(&self.path))?
            .execute(params![record.id.as_str(), record.cost, word(&record.cost_status), record.warning_count as i64, record.warning_codes.join(" "), json, record.note_codes.len() as i64])
            .map_err(sql(&self.path))?;
        Ok(())
    }

    /// [`Catalog::sync`] of the runs folder alone.
    fn sync_runs(&self, home: &Home) -> Result<SyncCount, StoreError> {
        let runs_dir = home.runs_dir();
        let folder = match fs::metadata(&runs_dir) {
            Ok(metadata) => stamp_of(&metadata),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => LogStampRow::default(),
            Err(source) => return Err(StoreError::io("read runs directory", &runs_dir, source)),
        };
        let folder_text = format!("{} {}", folder.bytes, folder.modified_ns);
        let mut count = SyncCount::default();
        let unchanged_folder = self.meta("runs_folder")?.as_deref() == Some(folder_text.as_str());
        // With the folder as it was, only running runs can have moved on
        // (a log appended to does not change its folder): the others are
        // not even read from the catalog.
        let known = self.run_stamps(unchanged_folder)?;
        let ids: Vec<String> = if unchanged_folder {
            if known.is_empty() {
                return Ok(count);
            }
            known.keys().cloned().collect()
        } else {
            let mut ids = Vec::new();
            for entry in fs::read_dir(&runs_dir).into_iter().flatten().flatten() {
                let name = entry.file_name();
                if let Some(stem) = name.to_str().and_then(|name| name.strip_suffix(".jsonl")) {
                    ids.push(stem.to_owned());
                }
            }
            // Looked up in a set of the listed ones: searching the listing
            // for each known run was quadratic (25 million comparisons for
            // 5,000 runs, on every import after a run was written, each
            // `watch` pass).
            let listed: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
            let gone: Vec<String> = known
                .keys()
                .filter(|id| !listed.contains(id.as_str()) && !home.log_path(&RunId::from(id.as_str())).exists())
                .cloned()
                .collect();
            ids.extend(gone);
            ids
        };
        self.begin()?;
        for id in ids {
            let Ok(run_id) = validate_run_id(&id) else { continue };
            let log = match fs::metadata(home.log_path(&run_id)) {
                Ok(metadata) if metadata.is_file() => stamp_of(&metadata),
                _ => {
                    if known.contains_key(&id) {
                        self.remove_run(&id)?;
                        count.removed += 1;
                    }
                    continue;
                }
            };
            let previous = known.get(&id);
            if previous.is_some_and(|(stamp, texts, status)| *stamp == log && (status == "running" || *texts == log.bytes)) {
                continue;
            }
            match self.index_run(home, &run_id, log) {
                Ok(()) => count.indexed += 1,
                // Gone (or unreadable) since it was listed: not a run now.
                Err(StoreError::NotFound { .. }) => {}
                Err(error) => {
                    let _ = self.commit();
                    return Err(error);
                }
            }
        }
        self.set_meta("runs_folder", &folder_text)?;
        self.commit()?;
        Ok(count)
    }

    /// Indexes run `id` from its files: the record (else the log's fold)
    /// and, once it is not running, its text.
    pub fn index_run(&self, home: &Home, id: &RunId, log: LogStampRow) -> Result<(), StoreError> {
        let record = home.read_record_pub(id);
        let loaded = home.load_run(id);
        let view = loaded.as_ref().ok().map(crate::LoadedRun::view);
        let agents = view.as_ref().map(|view| agent_rows(&view.agents)).unwrap_or_default();
        let events = view.map(|view| view.run.counts.events);
        // A record counting fewer envelopes than the log holds was written
        // before the log's last lines: its writer appends, then rewrites
        // it (a watch's idle end folds the log in between). Kept with the
        // log's stamp, that older record was never read again, the log
        // being still: the run listed `running` for good. The log, folded
        // here for the agents anyway, says what the record will.
        let summary = match (record, loaded) {
            (Some(record), Ok(loaded)) if events.is_some_and(|events| record.counts.events < events) => loaded.checked_view(home.warnings(), None).run,
            (Some(record), _) => record,
            (None, loaded) => loaded?.checked_view(home.warnings(), None).run,
        };
        let texts = if summary.status == RunStatus::Running { None } else { Some(texts_of_log(&home.log_path(id))?) };
        // A record names no folder: a run recorded by `run`, `tap` or
        // `hook` had no project (and `runs --project` missed it) until
        // `usage` kept its usage.
        let project = project_of_log(&home.log_path(id));
        self.put_run(&summary, project.as_deref(), None, &agents, log, texts.as_deref())
    }

    /// Runs matching `filter`, in its order (newest first unless it says
    /// otherwise), a page of them, with how many match in all.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<(Vec<ListedRun>, u64), StoreError> {
        let err = sql(&self.path);
        let (clause, values) = filter.clause();
        let total: i64 = self
            .conn
            .query_row(&format!("SELECT count(*) FROM runs{clause}"), rusqlite::params_from_iter(values.iter()), |row| row.get(0))
            .map_err(&err)?;
        let limit = filter.limit.map_or(-1, |limit| limit as i64);
        let mut statement = self
            .conn
            .prepare(&format!("SELECT record, project, agents FROM runs{clause} ORDER BY {} LIMIT {limit} OFFSET {}", filter.sort.order_by(), filter.offset))
            .map_err(&err)?;
        let rows = statement
            .query_map(rusqlite::params_from_iter(values.iter()), |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, Option<String>>(1)?, row.get::<_, i64>(2)?))
            })
            .map_err(&err)?;
        let mut runs = Vec::new();
        for row in rows {
            let (record, project, agents) = row.map_err(&err)?;
            if let Ok(run) = serde_json::from_str::<RunSummary>(&record) {
                runs.push(ListedRun { run, project, agents: agents.max(0) as u64 });
            }
        }
        Ok((runs, total as u64))
    }

    /// Every running run and the `recent` newest of the others, newest
    /// first (what `top` and the viewer's live page show): a running run
    /// older than the newest page is listed too. A run whose session ended
    /// before its root's turn did (`sessionEnded`) is one of the others:
    /// each crash of a long history would be followed forever.
    pub fn live_and_recent(&self, recent: usize) -> Result<Vec<RunId>, StoreError> {
        let listed = |status: Option<&str>, limit: Option<u64>| {
            let filter = RunFilter {
                status: status.map(str::to_owned),
                limit,
                ..RunFilter::default()
            };
            self.list_runs(&filter).map(|(runs, _)| runs)
        };
        let running = listed(Some(LIVE_STATUS), None)?;
        // The newest, running or not, hold the `recent` newest others.
        let newest = listed(None, Some((running.len() + recent) as u64))?;
        let mut ended = 0;
        let mut ids: Vec<RunId> = Vec::with_capacity(newest.len());
        for listed in newest {
            if listed.run.at_work() {
                ids.push(listed.run.id);
            } else if ended < recent {
                ended += 1;
                ids.push(listed.run.id);
            }
        }
        for listed in running {
            if !ids.contains(&listed.run.id) {
                ids.push(listed.run.id);
            }
        }
        Ok(ids)
    }

    /// How many provider sessions an import has read into runs (none on a
    /// home no import has read a history into yet).
    pub fn imported_session_count(&self) -> Result<u64, StoreError> {
        self.conn.query_row("SELECT count(*) FROM import_sessions", [], |row| row.get::<_, i64>(0)).map(|count| count as u64).map_err(sql(&self.path))
    }

    /// The agents whose thread id starts with `prefix`, as (run, thread,
    /// label, depth), at most `limit`, by run then thread: what names the
    /// run of a thread a user found in a helper's own file (a Codex child's
    /// rollout, a Claude `agent-<id>.jsonl`), asked as if it were a run.
    /// A scan of the agents (no index by thread): it is asked only once a
    /// run was not found.
    pub fn agents_by_thread(&self, prefix: &str, limit: u64) -> Result<Vec<(String, String, String, u32)>, StoreError> {
        let err = sql(&self.path);
        let mut statement = self
            .conn
            .prepare("SELECT run_id, thread_id, label, depth FROM agents WHERE substr(thread_id, 1, length(?1)) = ?1 ORDER BY run_id, thread_id LIMIT ?2")
            .map_err(&err)?;
        let rows = statement
            .query_map(params![prefix, limit as i64], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get::<_, i64>(3)?)))
            .map_err(&err)?;
        rows.map(|row| row.map(|(run, thread, label, depth)| (run, thread, label, u32::try_from(depth).unwrap_or(0))))
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    /// Whether an agent of any run (of run `run` when given) has `name` as
    /// its thread id or its label: what tells a search's `--actor` that
    /// found nothing from a name no agent has.
    pub fn names_agent(&self, run: Option<&str>, name: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM agents WHERE (thread_id = ?1 OR label = ?1) AND (?2 IS NULL OR run_id = ?2))",
                params![name, run],
                |row| row.get::<_, bool>(0),
            )
            .map_err(sql(&self.path))
    }

    /// How many runs the catalog holds.
    pub fn run_count(&self) -> Result<u64, StoreError> {
        self.conn.query_row("SELECT count(*) FROM runs", [], |row| row.get::<_, i64>(0)).map(|count| count as u64).map_err(sql(&self.path))
    }

    // ----- usage -----

    /// Run `id`'s kept usage tree (JSON, as the binary's `usage` keeps it).
    pub fn usage_tree(&self, id: &str) -> Result<Option<Packed>, StoreError> {
        self.kept(Kept::Tree, id)
    }

    /// Run `id`'s kept usage tree read from its row `row`
    /// ([`UsageListed::row`]): one descent of the table where the id takes
    /// two (its index, then the table); reading what a run keeps is about
    /// a third of `usage`'s reading thread after an import. A row since
    /// given to another run (removed, then another put) is not trusted: the
    /// tree is looked up by id.
    pub fn usage_tree_at(&self, row: i64, id: &str) -> Result<Option<Packed>, StoreError> {
        self.kept_at(Kept::Tree, row, id)
    }

    /// Run `id`'s kept usage report: its session as `usage --json` shows
    /// it (as the binary's `usage` keeps it).
    pub fn usage_report(&self, id: &str) -> Result<Option<Packed>, StoreError> {
        self.kept(Kept::Report, id)
    }

    /// Run `id`'s kept usage report, read from its row `row` as
    /// [`Catalog::usage_tree_at`] reads the tree.
    pub fn usage_report_at(&self, row: i64, id: &str) -> Result<Option<Packed>, StoreError> {
        self.kept_at(Kept::Report, row, id)
    }

    fn kept(&self, kept: Kept, id: &str) -> Result<Option<Packed>, StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached(&format!("SELECT {} FROM runs WHERE id = ?1", kept.column()))
            .map_err(&err)?
            .query_row([id], |row| row.get::<_, Option<Packed>>(0))
            .optional()
            .map(Option::flatten)
            .map_err(err)
    }

    fn kept_at(&self, kept: Kept, row: i64, id: &str) -> Result<Option<Packed>, StoreError> {
        let err = sql(&self.path);
        let found = self
            .conn
            .prepare_cached(&format!("SELECT id, {} FROM runs WHERE rowid = ?1", kept.column()))
            .map_err(&err)?
            .query_row([row], |found| Ok((found.get::<_, String>(0)?, found.get::<_, Option<Packed>>(1)?)))
            .optional()
            .map_err(&err)?;
        match found {
            Some((at, text)) if at == id => Ok(text),
            _ => self.kept(kept, id),
        }
    }

    /// Keeps run `id`'s usage (a run the catalog does not list yet is left
    /// as it is): its tree and report, the head `usage` checks them by,
    /// and its usage rows.
    pub fn put_usage(&self, id: &str, usage: &KeptUsage<'_>) -> Result<(), StoreError> {
        let err = sql(&self.path);
        let head = usage.head;
        // One row's update, with no trigger: see `MIGRATIONS` for why.
        self.conn
            .prepare_cached(
                "UPDATE runs SET usage_tree = ?2, usage_report = ?3, project = coalesce(?4, project), usage_total_tokens = ?5, \
                 usage_log_bytes = ?6, usage_log_modified_ns = ?7, usage_prices = ?8, usage_format = ?9, usage_provider = ?10, \
                 usage_session_id = ?11 WHERE id = ?1",
            )
            .map_err(&err)?
            .execute(params![
                id,
                usage.tree,
                usage.report,
                usage.project,
                head.total_tokens as i64,
                head.log.bytes as i64,
                head.log.modified_ns as i64,
                head.prices,
                i64::from(head.format),
                head.provider,
                head.session_id,
            ])
            .map_err(&err)?;
        self.conn.prepare_cached("DELETE FROM usage WHERE run_id = ?1").map_err(&err)?.execute([id]).map_err(&err)?;
        let mut put = self
            .conn
            .prepare_cached(
                "INSERT INTO usage (run_id, thread_id, label, model, day, hour, input_tokens, cached_input_tokens, cache_creation_tokens, output_tokens, reasoning_tokens, total_tokens, cost, unpriced_tokens) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            )
            .map_err(&err)?;
        for row in usage.rows {
            put.execute(params![
                id,
                row.thread_id,
                row.label,
                row.model,
                row.hour.map(day_text),
                row.hour,
                row.input_tokens as i64,
                row.cached_input_tokens as i64,
                row.cache_creation_tokens as i64,
                row.output_tokens as i64,
                row.reasoning_tokens as i64,
                row.total_tokens as i64,
                row.cost,
                row.unpriced_tokens as i64,
            ])
            .map_err(&err)?;
        }
        Ok(())
    }

    /// Every run, newest first, with the head of its kept usage tree (if
    /// any): what `usage` lists before it dedupes sessions, read from an
    /// index that covers it, without reading a single tree.
    pub fn usage_listing(&self) -> Result<Vec<UsageListed>, StoreError> {
        let err = sql(&self.path);
        let mut statement = self.conn.prepare(&format!("SELECT {USAGE_LISTED} FROM runs ORDER BY started_at DESC, id DESC")).map_err(&err)?;
        let rows = statement.query_map([], usage_listed).map_err(&err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    /// Run `id` as [`Catalog::usage_listing`] lists it, when the catalog
    /// has it.
    pub fn usage_listed(&self, id: &str) -> Result<Option<UsageListed>, StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached(&format!("SELECT {USAGE_LISTED} FROM runs WHERE id = ?1"))
            .map_err(&err)?
            .query_row([id], usage_listed)
            .optional()
            .map_err(err)
    }

    // ----- import state -----

    /// A page of what an import kept of `provider`'s sessions: those whose
    /// key is `from` or after, in key order, at most `limit`. An import
    /// asks for its sessions in key order, so a page read in one pass
    /// over both tables stands for `limit` point lookups (two queries
    /// each, which were most of a repeated import's last, one-core part).
    pub fn import_sessions_from(&self, provider: &str, from: &str, limit: usize) -> Result<Vec<(String, ImportedSession)>, StoreError> {
        let err = sql(&self.path);
        let mut page: Vec<(String, ImportedSession)> = self
            .conn
            .prepare_cached("SELECT key, run_id, log_bytes, merged, open FROM import_sessions WHERE provider = ?1 AND key >= ?2 ORDER BY key LIMIT ?3")
            .map_err(&err)?
            .query_map(params![provider, from, i64::try_from(limit).unwrap_or(i64::MAX)], |row| Ok((row.get::<_, String>(0)?, imported_head(row, 1)?)))
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)?;
        let Some(last) = page.last().map(|(key, _)| key.clone()) else {
            return Ok(page);
        };
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT key, path, size, modified_ns, read_offset, read_lines, read_torn, read_number FROM import_files \
                 WHERE provider = ?1 AND key >= ?2 AND key <= ?3 ORDER BY key, path",
            )
            .map_err(&err)?;
        let files = statement.query_map(params![provider, from, last], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, imported_file(row, 2)?))).map_err(&err)?;
        // Both in key order: each file goes to the session at or after the
        // one before's (a file whose session row is missing is left out,
        // as a point lookup leaves it).
        let mut at = 0;
        for file in files {
            let (key, path, file) = file.map_err(&err)?;
            while page.get(at).is_some_and(|(session, _)| *session < key) {
                at += 1;
            }
            match page.get_mut(at) {
                Some((session, imported)) if *session == key => {
                    imported.files.insert(path, file);
                }
                Some(_) => {}
                None => break,
            }
        }
        Ok(page)
    }

    /// The last import's sessions of `provider` from key `from` on, at
    /// most `limit`, in key order, each without its files (`files` is
    /// empty) but with the digest of them it kept ([`files_digest`]; none
    /// for a row an older agentrace wrote): what a repeated import needs of
    /// a session whose files are as it left them.
    pub fn import_session_heads_from(&self, provider: &str, from: &str, limit: usize) -> Result<Vec<(String, ImportedSession, Option<FilesDigest>)>, StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached("SELECT key, run_id, log_bytes, merged, open, files_digest FROM import_sessions WHERE provider = ?1 AND key >= ?2 ORDER BY key LIMIT ?3")
            .map_err(&err)?
            .query_map(params![provider, from, i64::try_from(limit).unwrap_or(i64::MAX)], |row| {
                let digest = row.get_ref(5)?.as_blob_or_null()?.and_then(|blob| FilesDigest::try_from(blob).ok());
                Ok((row.get::<_, String>(0)?, imported_head(row, 1)?, digest))
            })
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(err)
    }

    /// Keeps `digest` as the digest of session `key`'s files, for a row
    /// kept without one (see [`Catalog::import_session_heads_from`]) whose
    /// files an import found as they were.
    pub fn keep_import_files_digest(&self, provider: &str, key: &str, digest: &FilesDigest) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached("UPDATE import_sessions SET files_digest = ?3 WHERE provider = ?1 AND key = ?2")
            .map_err(&err)?
            .execute(params![provider, key, &digest[..]])
            .map_err(&err)?;
        Ok(())
    }

    /// What the last import kept of session `key` of `provider`.
    pub fn import_session(&self, provider: &str, key: &str) -> Result<Option<ImportedSession>, StoreError> {
        let err = sql(&self.path);
        let head = self
            .conn
            .prepare_cached("SELECT run_id, log_bytes, merged, open FROM import_sessions WHERE provider = ?1 AND key = ?2")
            .map_err(&err)?
            .query_row([provider, key], |row| imported_head(row, 0))
            .optional()
            .map_err(&err)?;
        let Some(mut session) = head else {
            return Ok(None);
        };
        let mut statement = self
            .conn
            .prepare_cached("SELECT path, size, modified_ns, read_offset, read_lines, read_torn, read_number FROM import_files WHERE provider = ?1 AND key = ?2")
            .map_err(&err)?;
        session.files = statement
            .query_map([provider, key], |row| Ok((row.get::<_, String>(0)?, imported_file(row, 1)?)))
            .map_err(&err)?
            .collect::<Result<BTreeMap<_, _>, _>>()
            .map_err(&err)?;
        Ok(Some(session))
    }

    /// The sessions an import left open (read while their files were
    /// young), by provider and key: what a follower must read on once their
    /// files have been still for the idle limit, with no change to wake it.
    /// Read at a follower's whole passes only: it reads every session's row.
    pub fn open_import_sessions(&self) -> Result<Vec<(String, String)>, StoreError> {
        let err = sql(&self.path);
        let mut statement = self.conn.prepare_cached("SELECT provider, key FROM import_sessions WHERE open != 0").map_err(&err)?;
        let rows = statement.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))).map_err(&err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    /// Session `key` of `provider`, when an import made run `run_id` of
    /// it, is no longer open: its run was ended outside an import (a
    /// watch's idle end), so no import is to read it on to end it.
    pub fn close_import_session(&self, provider: &str, key: &str, run_id: &str) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached("UPDATE import_sessions SET open = 0 WHERE provider = ?1 AND key = ?2 AND run_id = ?3")
            .map_err(&err)?
            .execute([provider, key, run_id])
            .map_err(&err)?;
        Ok(())
    }

    /// The sessions (provider and key) an import read the file `path`
    /// into: none for a file no import read.
    pub fn import_sessions_of(&self, path: &str) -> Result<Vec<(String, String)>, StoreError> {
        let err = sql(&self.path);
        let mut statement = self.conn.prepare_cached("SELECT provider, key FROM import_files WHERE path = ?1").map_err(&err)?;
        let rows = statement.query_map([path], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))).map_err(&err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    /// Forgets what an import made of session `key` of `provider` (its
    /// run is the caller's to remove).
    pub fn remove_import_session(&self, provider: &str, key: &str) -> Result<(), StoreError> {
        let err = sql(&self.path);
        for statement in ["DELETE FROM import_files WHERE provider = ?1 AND key = ?2", "DELETE FROM import_sessions WHERE provider = ?1 AND key = ?2"] {
            self.conn.prepare_cached(statement).map_err(&err)?.execute([provider, key]).map_err(&err)?;
        }
        Ok(())
    }

    /// Keeps `reading`, where an import left run `id`'s session open (a
    /// recorder's state, as `agentrace_core::Recorder::saved` writes it),
    /// in place of the one kept before.
    pub fn put_import_reading(&self, id: &str, reading: &str) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached("INSERT OR REPLACE INTO import_readings (run_id, reading) VALUES (?1, ?2)")
            .map_err(&err)?
            .execute(params![id, Packed::pack(reading)])
            .map_err(&err)?;
        Ok(())
    }

    /// The reading kept of run `id` ([`Catalog::put_import_reading`]);
    /// `None` when there is none, or one too damaged to unpack (it is a
    /// cache: its reader reads the session's lines again instead).
    pub fn import_reading(&self, id: &str) -> Result<Option<String>, StoreError> {
        let err = sql(&self.path);
        let packed: Option<Packed> = self
            .conn
            .prepare_cached("SELECT reading FROM import_readings WHERE run_id = ?1")
            .map_err(&err)?
            .query_row([id], |row| row.get(0))
            .optional()
            .map_err(&err)?;
        Ok(packed.and_then(|packed| packed.unpack("a kept reading").ok()))
    }

    /// Forgets the reading kept of run `id`, if any.
    pub fn remove_import_reading(&self, id: &str) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn.prepare_cached("DELETE FROM import_readings WHERE run_id = ?1").map_err(&err)?.execute([id]).map_err(&err)?;
        Ok(())
    }

    /// Keeps what an import made of session `key` of `provider`.
    pub fn put_import_session(&self, provider: &str, key: &str, session: &ImportedSession) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached("INSERT OR REPLACE INTO import_sessions (provider, key, run_id, log_bytes, merged, open, files_digest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
            .map_err(&err)?
            .execute(params![
                provider,
                key,
                session.run_id,
                session.log.map(|bytes| bytes as i64),
                i64::from(session.merged),
                i64::from(session.open),
                &session.files_digest()[..]
            ])
            .map_err(&err)?;
        self.conn
            .prepare_cached("DELETE FROM import_files WHERE provider = ?1 AND key = ?2")
            .map_err(&err)?
            .execute([provider, key])
            .map_err(&err)?;
        let mut put = self
            .conn
            .prepare_cached("INSERT INTO import_files (provider, key, path, size, modified_ns, read_offset, read_lines, read_torn, read_number) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
            .map_err(&err)?;
        for (path, file) in &session.files {
            put.execute(params![
                provider,
                key,
                path,
                file.size as i64,
                file.modified_ns as i64,
                file.read.map(|read| read.offset as i64),
                file.read.map(|read| read.lines as i64),
                file.read.map(|read| i64::from(read.torn)),
                file.read.map(|read| i64::from(read.number)),
            ])
            .map_err(&err)?;
        }
        Ok(())
    }

    /// Every folder listing the last import kept, by path.
    pub fn import_dirs(&self) -> Result<crate::FastMap<Vec<u8>, DirRow>, StoreError> {
        self.import_dirs_where("", [])
    }

    /// The listings the last import kept of the folders `paths` (those it
    /// kept), by path.
    pub fn import_dirs_of(&self, paths: &[&[u8]]) -> Result<crate::FastMap<Vec<u8>, DirRow>, StoreError> {
        let mut found = crate::FastMap::default();
        for path in paths {
            found.extend(self.import_dirs_where(" WHERE path = ?1", [path])?);
        }
        Ok(found)
    }

    fn import_dirs_where(&self, clause: &str, values: impl rusqlite::Params) -> Result<crate::FastMap<Vec<u8>, DirRow>, StoreError> {
        let err = sql(&self.path);
        let mut statement = self.conn.prepare_cached(&format!("SELECT path, mtime_ns, ctime_ns, inode, entries FROM import_dirs{clause}")).map_err(&err)?;
        let rows = statement
            .query_map(values, |row| {
                Ok((
                    row.get::<_, Vec<u8>>(0)?,
                    DirRow {
                        mtime_ns: row.get::<_, i64>(1)? as u64,
                        ctime_ns: row.get::<_, i64>(2)? as u64,
                        inode: row.get::<_, i64>(3)? as u64,
                        entries: row.get(4)?,
                    },
                ))
            })
            .map_err(&err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    /// Keeps folder `path`'s listing.
    pub fn put_import_dir(&self, path: &[u8], dir: &DirRow) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached("INSERT OR REPLACE INTO import_dirs (path, mtime_ns, ctime_ns, inode, entries) VALUES (?1, ?2, ?3, ?4, ?5)")
            .map_err(&err)?
            .execute(params![path, dir.mtime_ns as i64, dir.ctime_ns as i64, dir.inode as i64, dir.entries])
            .map_err(&err)?;
        Ok(())
    }

    /// Forgets folder `path`'s listing.
    pub fn remove_import_dir(&self, path: &[u8]) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn.prepare_cached("DELETE FROM import_dirs WHERE path = ?1").map_err(&err)?.execute([path]).map_err(&err)?;
        Ok(())
    }

    /// Every rollout head the last import kept, by path.
    pub fn rollout_heads(&self) -> Result<crate::FastMap<String, HeadRow>, StoreError> {
        let err = sql(&self.path);
        let mut statement = self.conn.prepare("SELECT path, size, modified_ns, thread, parent, depth, started_at FROM rollout_heads").map_err(&err)?;
        let rows = statement
            .query_map([], |row| Ok((row.get::<_, String>(0)?, head_row(row, 1)?)))
            .map_err(&err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    /// The head kept for rollout `path`, if any.
    pub fn rollout_head(&self, path: &str) -> Result<Option<HeadRow>, StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached("SELECT size, modified_ns, thread, parent, depth, started_at FROM rollout_heads WHERE path = ?1")
            .map_err(&err)?
            .query_row([path], |row| head_row(row, 0))
            .optional()
            .map_err(err)
    }

    /// Keeps rollout `path`'s head.
    pub fn put_rollout_head(&self, path: &str, head: &HeadRow) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn
            .prepare_cached("INSERT OR REPLACE INTO rollout_heads (path, size, modified_ns, thread, parent, depth, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
            .map_err(&err)?
            .execute(params![path, head.size as i64, head.modified_ns as i64, head.thread, head.parent, head.depth as i64, head.started.map(|at| at.0)])
            .map_err(&err)?;
        Ok(())
    }

    /// Forgets rollout `path`'s head.
    pub fn remove_rollout_head(&self, path: &str) -> Result<(), StoreError> {
        let err = sql(&self.path);
        self.conn.prepare_cached("DELETE FROM rollout_heads WHERE path = ?1").map_err(&err)?.execute([path]).map_err(&err)?;
        Ok(())
    }

    // ----- search -----

    /// The texts that match `query` (words, each matched as a prefix-free
    /// token; quotes are kept as a phrase), newest first. The index is
    /// contentless: each hit's text is read back from its line in the
    /// run's log (one positioned read) and its snippet cut from that. A hit
    /// whose line is not what was indexed (the log gone, or rewritten
    /// since: another sequence or event kind there, or a text that no
    /// longer matches) is left out, never shown with a wrong snippet, and
    /// its run's texts are marked stale (and the runs folder's stamp
    /// forgotten) so the next sync indexes them again; the hits after it
    /// fill the page.
    pub fn search(&self, home: &Home, query: &SearchQuery) -> Result<Vec<SearchHit>, StoreError> {
        let err = sql(&self.path);
        let Some(expression) = fts_expression(&query.text) else {
            return Ok(Vec::new());
        };
        let mut sql_text = String::from(
            "SELECT t.run_id, t.sequence, t.thread_id, t.label, t.role, t.timestamp, t.kind, t.line_offset, t.line_length \
             FROM texts_fts JOIN texts t ON t.id = texts_fts.rowid WHERE texts_fts MATCH ?1",
        );
        let mut values: Vec<rusqlite::types::Value> = vec![expression.clone().into()];
        if let Some(run) = &query.run {
            values.push(run.clone().into());
            sql_text.push_str(&format!(" AND t.run_id = ?{}", values.len()));
        }
        match &query.actor {
            None => {}
            Some(ActorQuery::Role(role)) => {
                values.push(role_word(*role).to_owned().into());
                sql_text.push_str(&format!(" AND t.role = ?{}", values.len()));
            }
            Some(ActorQuery::Agent(agent)) => {
                values.push(agent.clone().into());
                sql_text.push_str(&format!(" AND (t.thread_id = ?{0} OR t.label = ?{0})", values.len()));
            }
        }
        if let Some(since) = query.since {
            values.push(since.into());
            sql_text.push_str(&format!(" AND t.timestamp >= ?{}", values.len()));
        }
        if let Some(until) = query.until {
            values.push(until.into());
            sql_text.push_str(&format!(" AND t.timestamp < ?{}", values.len()));
        }
        // The run's own columns, as `runs` filters them.
        let of_runs = run_conditions(query.provider.as_ref(), query.project.as_ref(), &mut values);
        if !of_runs.is_empty() {
            sql_text.push_str(&format!(" AND t.run_id IN (SELECT id FROM runs WHERE {})", of_runs.join(" AND ")));
        }
        // No LIMIT: a hit left out (its line changed) makes room for the
        // next; the rows are stepped only as far as the page needs.
        sql_text.push_str(" ORDER BY t.timestamp DESC, t.run_id, t.sequence");
        let mut snippets = Snippets::new(&expression, &self.path)?;
        let mut logs: HashMap<String, Option<fs::File>> = HashMap::new();
        let mut hits = Vec::new();
        let mut stale = std::collections::BTreeSet::new();
        {
            let mut statement = self.conn.prepare(&sql_text).map_err(&err)?;
            let mut rows = statement.query(rusqlite::params_from_iter(values.iter())).map_err(&err)?;
            while (hits.len() as u64) < query.limit {
                let Some(row) = rows.next().map_err(&err)? else { break };
                let run_id: String = row.get(0).map_err(&err)?;
                let sequence = row.get::<_, i64>(1).map_err(&err)? as u64;
                let kind: String = row.get(6).map_err(&err)?;
                let line = LineAt {
                    offset: row.get::<_, i64>(7).map_err(&err)? as u64,
                    length: row.get::<_, i64>(8).map_err(&err)? as u64,
                };
                let text = indexed_text(home, &mut logs, &run_id, sequence, &kind, line)?;
                // Cut from the text as a reader reads it (JSON said as its
                // keys and values); from the text as indexed when the words
                // were only in what that leaves out.
                let snippet = match text {
                    Some(text) => match crate::readable::readable_text(&text) {
                        std::borrow::Cow::Borrowed(_) => snippets.of(&text)?,
                        std::borrow::Cow::Owned(readable) => match snippets.of(&readable)? {
                            Some(snippet) => Some(snippet),
                            None => snippets.of(&text)?,
                        },
                    },
                    None => None,
                };
                let Some(snippet) = snippet else {
                    stale.insert(run_id);
                    continue;
                };
                hits.push(SearchHit {
                    run_id,
                    sequence,
                    thread_id: row.get(2).map_err(&err)?,
                    label: row.get(3).map_err(&err)?,
                    role: row.get(4).map_err(&err)?,
                    timestamp: Timestamp(row.get(5).map_err(&err)?),
                    snippet,
                });
            }
        }
        for run in &stale {
            // Never equal to a log's length: the next sync reads it again.
            self.conn
                .prepare_cached("UPDATE runs SET texts_bytes = -1 WHERE id = ?1")
                .map_err(&err)?
                .execute([run.as_str()])
                .map_err(&err)?;
        }
        if !stale.is_empty() {
            // A log rewritten in place leaves its folder's stamp as it was,
            // and a sync then looks at running runs alone: forgetting the
            // stamp makes it look at every run.
            self.conn.prepare_cached("DELETE FROM meta WHERE key = 'runs_folder'").map_err(&err)?.execute([]).map_err(&err)?;
        }
        Ok(hits)
    }
}

/// Just the members of a log line a search hit needs: the leaner line
/// another format may write keeps these two names (its other members may
/// be encoded differently, and are not decoded).
#[derive(serde::Deserialize)]
struct LineEvent {
    /// Absent on a legacy line (whose reader numbers it).
    #[serde(default)]
    sequence: Option<u64>,
    event: EventBody,
}

/// Most run logs a search keeps open at once.
const OPEN_LOGS: usize = 64;

/// The text a hit's row was made from, read back from its line in run
/// `run_id`'s log (each log opened once per search); `None` when that
/// line is not the one indexed (the log gone or rewritten since).
fn indexed_text(home: &Home, logs: &mut HashMap<String, Option<fs::File>>, run_id: &str, sequence: u64, kind: &str, line: LineAt) -> Result<Option<String>, StoreError> {
    let Ok(id) = validate_run_id(run_id) else { return Ok(None) };
    let path = home.log_path(&id);
    if !logs.contains_key(run_id) {
        // A page of hits may span hundreds of runs: never more than
        // OPEN_LOGS files open at once (a user's limit may be 1,024).
        if logs.len() >= OPEN_LOGS {
            logs.clear();
        }
        let file = match fs::File::open(&path) {
            Ok(file) => Some(file),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            // Not the log's doing (out of descriptors, a permission): an
            // error, not hits left out and their runs indexed again.
            Err(source) => return Err(StoreError::io("open run log", &path, source)),
        };
        logs.insert(run_id.to_owned(), file);
    }
    let Some(Some(file)) = logs.get(run_id) else { return Ok(None) };
    let Some(bytes) = read_log_line(file, &path, line)? else { return Ok(None) };
    let Ok(decoded) = serde_json::from_slice::<LineEvent>(&bytes) else { return Ok(None) };
    if decoded.sequence.is_some_and(|found| found != sequence) {
        return Ok(None);
    }
    Ok(searchable_text(&decoded.event).filter(|(found, _)| *found == kind).map(|(_, text)| text))
}

/// Cuts search snippets: an in-memory FTS5 table (never on disk) that
/// each hit's text is put in and matched against the search's expression
/// again, so the snippet is what FTS5's `snippet()` gave when the catalog
/// kept the text (the same tokenizer, the same choice of the best 12
/// tokens, matches in `[`…`]`, `…` where cut), and a text that no longer
/// matches gives none.
struct Snippets<'p> {
    conn: Connection,
    expression: String,
    next: i64,
    path: &'p Path,
}

impl<'p> Snippets<'p> {
    fn new(expression: &str, path: &'p Path) -> Result<Self, StoreError> {
        let err = sql(path);
        let conn = Connection::open_in_memory().map_err(&err)?;
        conn.execute_batch("CREATE VIRTUAL TABLE hit USING fts5 (text);").map_err(&err)?;
        Ok(Self { conn, expression: expression.to_owned(), next: 0, path })
    }

    /// The snippet of `text`, `None` when it does not match.
    fn of(&mut self, text: &str) -> Result<Option<String>, StoreError> {
        let err = sql(self.path);
        self.next += 1;
        self.conn.prepare_cached("INSERT INTO hit (rowid, text) VALUES (?1, ?2)").map_err(&err)?.execute(params![self.next, text]).map_err(&err)?;
        let snippet = self
            .conn
            .prepare_cached("SELECT snippet(hit, 0, '[', ']', '…', 12) FROM hit WHERE hit MATCH ?1 AND rowid = ?2")
            .map_err(&err)?
            .query_row(params![self.expression, self.next], |row| row.get(0))
            .optional()
            .map_err(&err)?;
        // One text at a time: a search of many hits holds no more.
        self.conn.prepare_cached("DELETE FROM hit WHERE rowid = ?1").map_err(&err)?.execute([self.next]).map_err(err)?;
        Ok(snippet)
    }
}

/// An FTS5 expression of a user's words: each word quoted (so `-`, `:` or
/// `*` in it are text, not syntax), all required.
fn fts_expression(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| format!("\"{}\"", word.replace('"', "\"\"")))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The `YYYY-MM-DD` (UTC) of a time in milliseconds.
fn day_text(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    // Civil from days (Howard Hinnant's algorithm): no clock, no crate.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

/// A serde word (`"codex"` → `codex`).
fn word<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A role as the catalog and `--actor` spell it.
pub fn role_word(role: Role) -> &'static str {
    match role {
        Role::Root => "root",
        Role::Helper => "helper",
        Role::Unknown => "unknown",
    }
}

/// The agents of a view's tree, flattened, parents first.
pub fn agent_rows(agents: &[agentrace_core::state::AgentNode]) -> Vec<AgentRow> {
    fn walk(node: &agentrace_core::state::AgentNode, depth: u32, out: &mut Vec<AgentRow>) {
        out.push(AgentRow {
            thread_id: node.thread_id.to_string(),
            parent_thread_id: node.parent_thread_id.as_ref().map(|id| id.to_string()),
            label: node.label.clone(),
            model: node.model.clone(),
            depth,
        });
        for child in &node.children {
            walk(child, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    for agent in agents {
        walk(agent, 0, &mut out);
    }
    out
}

/// The envelopes of a log's start folded for its working folder: a
/// run's start or its root thread's names it, among its first lines.
const PROJECT_ENVELOPES: usize = 256;

/// A run's project (working folder), as the one fold of its log's first
/// [`PROJECT_ENVELOPES`] envelopes names it; `None` when they name none.
fn project_of_log(path: &Path) -> Option<String> {
    let reader = LogReader::open(path).ok()?;
    let mut state = agentrace_core::state::RunState::new(RunId::from(""));
    for envelope in reader.flatten().take(PROJECT_ENVELOPES) {
        state.apply(&envelope);
    }
    state.cwd().map(str::to_owned)
}

/// The searchable text of a log: two passes (the final actors first).
pub fn texts_of_log(path: &Path) -> Result<Vec<TextRow>, StoreError> {
    let mut finals = FinalActors::default();
    for envelope in LogReader::open(path)?.flatten() {
        finals.observe(&envelope);
    }
    let mut rows = Vec::new();
    let mut reader = LogReader::open(path)?;
    while let Some(envelope) = reader.next() {
        let Ok(mut envelope) = envelope else { continue };
        let Some(line) = reader.last_line() else { continue };
        finals.apply(&mut envelope);
        rows.extend(TextRow::of(&envelope, line));
    }
    Ok(rows)
}

/// Applies the final actors to rows collected as a run was written;
/// returns the positions of the rows whose label or role it changed.
pub fn settle_texts(rows: &mut [TextRow], finals: &FinalActors, run_id: &RunId) -> Vec<usize> {
    let mut changed = Vec::new();
    for (index, row) in rows.iter_mut().enumerate() {
        let Some(thread) = &row.thread_id else { continue };
        let mut probe = Envelope {
            version: 0,
            timestamp: Timestamp(row.timestamp),
            sequence: row.sequence,
            run_id: run_id.clone(),
            direction: None,
            actor: agentrace_core::model::Actor {
                thread_id: Some(agentrace_core::model::ThreadId::from(thread.as_str())),
                role: Role::Unknown,
                parent_thread_id: None,
                label: row.label.clone(),
                depth: None,
                confidence: agentrace_core::model::Confidence::Provider,
                reason: None,
            },
            event: EventBody::Foreign(serde_json::Value::Null),
            raw: None,
            raw_ref: None,
            raw_unavailable: None,
        };
        let before = probe.actor.clone();
        finals.apply(&mut probe);
        if probe.actor != before {
            let role = role_word(probe.actor.role);
            if row.label != probe.actor.label || row.role != role {
                changed.push(index);
            }
            row.label = probe.actor.label;
            row.role = role.to_owned();
        }
    }
    changed
}

/// One searchable text: a message, reasoning, a tool's input or output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRow {
    /// The envelope's sequence.
    pub sequence: u64,
    /// Its actor's thread.
    pub thread_id: Option<String>,
    /// Its actor's label.
    pub label: String,
    /// `root`, `helper` or `unknown`.
    pub role: String,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    /// `message`, `reasoning`, `tool_use` or `tool_result`.
    pub kind: String,
    /// The text, cut at [`TEXT_LIMIT`] bytes: what is indexed (the
    /// catalog keeps only the index of it and where its line is).
    pub text: String,
    /// Where the envelope's line is in the run's log.
    pub line: LineAt,
}

/// The searchable text of an event (its kind and text, cut at
/// [`TEXT_LIMIT`] bytes), if it has any: what a text row indexes, and what
/// a search hit's snippet is cut from, read back from the log line.
pub fn searchable_text(event: &EventBody) -> Option<(&'static str, String)> {
    let (kind, text) = match event {
        EventBody::Known(Event::Message { text, .. }) => ("message", text.clone()),
        EventBody::Known(Event::Reasoning { text, .. }) => ("reasoning", text.clone()),
        EventBody::Known(Event::ToolUse { name, input, .. }) => ("tool_use", format!("{name} {input}")),
        EventBody::Known(Event::ToolResult { name, output, .. }) => ("tool_result", format!("{name} {output}")),
        _ => return None,
    };
    if text.trim().is_empty() {
        return None;
    }
    let mut text = text;
    if text.len() > TEXT_LIMIT {
        let mut end = TEXT_LIMIT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    Some((kind, text))
}

impl TextRow {
    /// The searchable text of an envelope, if it has any, its line at
    /// `line` of the log.
    pub fn of(envelope: &Envelope, line: LineAt) -> Option<TextRow> {
        let (kind, text) = searchable_text(&envelope.event)?;
        Some(TextRow {
            sequence: envelope.sequence,
            thread_id: envelope.actor.thread_id.as_ref().map(|id| id.to_string()),
            label: envelope.actor.label.clone(),
            role: role_word(envelope.actor.role).to_owned(),
            timestamp: envelope.timestamp.0,
            kind: kind.to_owned(),
            text,
            line,
        })
    }
}

/// One agent of a run, as the `agents` table keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRow {
    /// Thread id.
    pub thread_id: String,
    /// Spawner.
    pub parent_thread_id: Option<String>,
    /// Label.
    pub label: String,
    /// Model, when known.
    pub model: Option<String>,
    /// Depth in the tree (root 0).
    pub depth: u32,
}

/// One agent's (or the outside rows') tokens with one model in one UTC
/// hour, as the `usage` table keeps them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UsageRow {
    /// The agent's thread (none outside the tree).
    pub thread_id: Option<String>,
    /// Its label.
    pub label: String,
    /// The model.
    pub model: Option<String>,
    /// The hour's start, ms (none when unknown).
    pub hour: Option<i64>,
    /// ccusage's convention: input without cache reads and writes.
    pub input_tokens: u64,
    /// Cache reads.
    pub cached_input_tokens: u64,
    /// Cache writes.
    pub cache_creation_tokens: u64,
    /// Output.
    pub output_tokens: u64,
    /// Reasoning.
    pub reasoning_tokens: u64,
    /// Total.
    pub total_tokens: u64,
    /// Dollars.
    pub cost: f64,
    /// Tokens of requests no price was found for.
    pub unpriced_tokens: u64,
}

/// Which kept usage text of a run.
#[derive(Debug, Clone, Copy)]
enum Kept {
    Tree,
    Report,
}

impl Kept {
    fn column(self) -> &'static str {
        match self {
            Kept::Tree => "usage_tree",
            Kept::Report => "usage_report",
        }
    }
}

/// A run's usage as [`Catalog::put_usage`] keeps it.
#[derive(Debug, Clone, Copy)]
pub struct KeptUsage<'a> {
    /// Its usage tree (what every grouping of `usage` is made from).
    pub tree: &'a Packed,
    /// Its usage report (the session as `usage --json` shows it).
    pub report: &'a Packed,
    /// What `usage` checks them by.
    pub head: &'a UsageHead,
    /// Its working folder, when known (the run keeps the one it has
    /// otherwise).
    pub project: Option<&'a str>,
    /// Its tokens by agent, model and hour.
    pub rows: &'a [UsageRow],
}

/// What `usage` checks of a kept usage tree before it reads the tree:
/// whether it is the tree of the log as it is, priced by the same book, in
/// the shape it reads, and what places the run in the report. Columns
/// beside the tree, written with it by [`Catalog::put_usage`], in an index
/// that covers them: listing thousands of runs reads neither their trees
/// nor their rows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UsageHead {
    /// The log's stamp when the tree was written.
    pub log: LogStampRow,
    /// The price book its costs come from.
    pub prices: String,
    /// The tree's shape.
    pub format: u32,
    /// `codex` or `claude`, as `usage` names them.
    pub provider: String,
    /// The session it reports.
    pub session_id: String,
    /// The total tokens of its agents.
    pub total_tokens: u64,
}

/// A run as [`Catalog::usage_listing`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageListed {
    /// Its id.
    pub id: String,
    /// Its row in the `runs` table (SQLite's rowid), for
    /// [`Catalog::usage_tree_at`].
    pub row: i64,
    /// When it started (ms since the epoch).
    pub started_at: Option<i64>,
    /// Its kept usage tree's head, when one is kept.
    pub head: Option<UsageHead>,
}

/// The columns [`usage_listed`] reads.
const USAGE_LISTED: &str = "id, started_at, usage_log_bytes, usage_log_modified_ns, usage_prices, usage_format, usage_provider, usage_session_id, usage_total_tokens, rowid";

/// A row of [`USAGE_LISTED`]. A tree that does not say its log's stamp
/// (unreadable, or written by hand) has no head: it is never trusted.
fn usage_listed(row: &rusqlite::Row<'_>) -> rusqlite::Result<UsageListed> {
    // A value of another type than the column's (a tree written by hand)
    // reads as none.
    fn get<T: rusqlite::types::FromSql>(row: &rusqlite::Row<'_>, index: usize) -> Option<T> {
        row.get::<_, Option<T>>(index).ok().flatten()
    }
    let head = match (get::<i64>(row, 2), get::<i64>(row, 3)) {
        (Some(bytes), Some(modified_ns)) => Some(UsageHead {
            log: LogStampRow { bytes: bytes as u64, modified_ns: modified_ns as u64 },
            prices: get(row, 4).unwrap_or_default(),
            format: get::<i64>(row, 5).and_then(|format| u32::try_from(format).ok()).unwrap_or(0),
            provider: get(row, 6).unwrap_or_default(),
            session_id: get(row, 7).unwrap_or_default(),
            total_tokens: get::<i64>(row, 8).unwrap_or(0) as u64,
        }),
        _ => None,
    };
    Ok(UsageListed {
        id: row.get(0)?,
        row: row.get(9)?,
        started_at: row.get(1)?,
        head,
    })
}

/// What [`Catalog::sync`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncCount {
    /// Runs indexed (new or changed).
    pub indexed: u64,
    /// Runs forgotten (their logs gone).
    pub removed: u64,
    /// Runs whose cost was worked out again, the home's price book having
    /// changed since the catalog last priced them.
    pub repriced: u64,
    /// Runs whose warnings were counted again, the home's warning config
    /// having changed since the catalog last judged them.
    pub rejudged: u64,
    /// When the runs were priced again: whether the database changed (a
    /// newer one kept, or it removed), not only the price file over it.
    pub database_changed: bool,
}

/// What [`Catalog::reprice`] did: how many runs it worked out again, and
/// what had changed since they were last (the price book, its database
/// under the file, the warning config).
#[derive(Debug, Clone, Copy, Default)]
struct Repriced {
    runs: u64,
    prices: bool,
    database: bool,
    warnings: bool,
}

/// A listed run: its record, with the catalog's project and agent count
/// beside it, as `agentrace runs --json` and `GET /api/runs` give it (the
/// record's members, then `project` and `agents`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListedRun {
    /// The run record.
    #[serde(flatten)]
    pub run: RunSummary,
    /// The working folder.
    pub project: Option<String>,
    /// How many agents its tree has.
    pub agents: u64,
}

/// Which runs a listing wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// `codex`, `claude` or `unknown`.
    pub provider: Option<String>,
    /// Text the project (working folder) contains.
    pub project: Option<String>,
    /// `running`, `done`, `failed`, `interrupted`, or [`LIVE_STATUS`]
    /// (running, its session not ended).
    pub status: Option<String>,
    /// Started at or after (ms).
    pub since: Option<i64>,
    /// Started before (ms).
    pub until: Option<i64>,
    /// Only runs with this warning (the codes left after the home's
    /// warning config judged them), or with any.
    pub warning: Option<WarningFilter>,
    /// In this order.
    pub sort: RunSort,
    /// At most this many (all when none).
    pub limit: Option<u64>,
    /// After skipping this many.
    pub offset: u64,
}

/// The status a listing takes for the runs still at work: `running` and
/// their session not ended (`sessionEnded` absent from the record).
pub const LIVE_STATUS: &str = "live";

/// Every status a listing takes ([`RunFilter::status`]): a record's, and
/// [`LIVE_STATUS`]. Anything else would list nothing, silently.
pub const RUN_STATUSES: [&str; 5] = ["running", "done", "failed", "interrupted", LIVE_STATUS];

/// The warnings a listing keeps to ([`RunFilter::warning`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarningFilter {
    /// A run with at least one warning that is not an info-level note.
    Any,
    /// A run with this code among its warnings.
    Code(String),
}

impl WarningFilter {
    /// `any`, or a code (as `runs --warning` and `warning=` take it);
    /// refused for a code no record may carry, which would list nothing
    /// and read as a clean history: a typo, or a code judged only when a
    /// run is read ([`agentrace_core::warnings::READ_TIME_CODES`]).
    pub fn parse(text: &str) -> Result<Self, UnlistedCode> {
        match text.trim() {
            "any" => Ok(Self::Any),
            code if agentrace_core::warnings::is_listable_code(code) => Ok(Self::Code(code.to_owned())),
            code if agentrace_core::warnings::is_known_code(code) => Err(UnlistedCode::ReadTime),
            _ => Err(UnlistedCode::Unknown),
        }
    }
}

/// Why a list of runs cannot keep to a warning code ([`WarningFilter::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnlistedCode {
    /// No run may carry it.
    Unknown,
    /// A code judged against the clock when a run is read
    /// (`silent_agent`), which no record carries.
    ReadTime,
}

/// The order of a listing: newest first, or the largest first of a figure
/// (ties newest first; a run without the figure, an unpriced cost or a
/// duration not known, last).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunSort {
    /// Newest first, by start.
    #[default]
    Started,
    /// The most costly first.
    Cost,
    /// The most tokens first.
    Tokens,
    /// The longest first.
    Duration,
    /// The most warnings first (notes left out, as the list's WARN).
    Warnings,
}

impl RunSort {
    /// Every order, as `--sort` and `sort=` name them.
    pub const ALL: [RunSort; 5] = [RunSort::Started, RunSort::Cost, RunSort::Tokens, RunSort::Duration, RunSort::Warnings];

    /// Its name (`started`, `cost`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RunSort::Started => "started",
            RunSort::Cost => "cost",
            RunSort::Tokens => "tokens",
            RunSort::Duration => "duration",
            RunSort::Warnings => "warnings",
        }
    }

    /// The order named `text`, if any.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|sort| sort.as_str() == text.trim())
    }

    /// Its `ORDER BY` terms, each an index's (`SORT_INDEXES`) but the id:
    /// SQLite puts a NULL below every number, so descending lists it last.
    fn order_by(self) -> &'static str {
        match self {
            RunSort::Started => "started_at DESC, id DESC",
            RunSort::Cost => "cost DESC, started_at DESC, id DESC",
            RunSort::Tokens => "total_tokens DESC, started_at DESC, id DESC",
            RunSort::Duration => "duration_ms DESC, started_at DESC, id DESC",
            RunSort::Warnings => "(warning_count - note_count) DESC, started_at DESC, id DESC",
        }
    }
}

impl RunFilter {
    fn clause(&self) -> (String, Vec<rusqlite::types::Value>) {
        let mut values: Vec<rusqlite::types::Value> = Vec::new();
        let mut parts = run_conditions(self.provider.as_ref(), self.project.as_ref(), &mut values);
        match self.status.as_deref() {
            None => {}
            // Running and at work: a run whose session ended mid-turn
            // stays `running` (SPEC §4) but nothing will end it.
            Some(LIVE_STATUS) => {
                parts.push("status = 'running' AND coalesce(json_extract(record, '$.sessionEnded'), 0) = 0".to_owned())
            }
            Some(status) => {
                values.push(status.to_owned().into());
                parts.push(format!("status = ?{}", values.len()));
            }
        }
        if let Some(since) = self.since {
            values.push(since.into());
            parts.push(format!("started_at >= ?{}", values.len()));
        }
        if let Some(until) = self.until {
            values.push(until.into());
            parts.push(format!("started_at < ?{}", values.len()));
        }
        match &self.warning {
            None => {}
            // A note is no problem: `any` is what the list's WARN counts.
            Some(WarningFilter::Any) => parts.push("warning_count > note_count".to_owned()),
            Some(WarningFilter::Code(code)) => {
                // The codes are kept joined by spaces.
                values.push(format!(" {code} ").into());
                parts.push(format!("instr(' ' || warning_codes || ' ', ?{}) > 0", values.len()));
            }
        }
        if parts.is_empty() {
            (String::new(), values)
        } else {
            (format!(" WHERE {}", parts.join(" AND ")), values)
        }
    }
}

/// The conditions on a run's provider and project (the project containing
/// the text) of the `runs` table, their values pushed onto `values` and
/// numbered after those already there.
fn run_conditions(provider: Option<&String>, project: Option<&String>, values: &mut Vec<rusqlite::types::Value>) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(provider) = provider {
        values.push(provider.clone().into());
        parts.push(format!("provider = ?{}", values.len()));
    }
    if let Some(project) = project {
        values.push(project.clone().into());
        parts.push(format!("instr(project, ?{}) > 0", values.len()));
    }
    parts
}

/// What a search looks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The words.
    pub text: String,
    /// Only this run.
    pub run: Option<String>,
    /// Only this actor.
    pub actor: Option<ActorQuery>,
    /// Only runs of this provider (`codex`, `claude`).
    pub provider: Option<String>,
    /// Only runs whose project (working folder) contains this text.
    pub project: Option<String>,
    /// Only what was written at or after this time (ms).
    pub since: Option<i64>,
    /// Only what was written before this time (ms).
    pub until: Option<i64>,
    /// At most this many hits.
    pub limit: u64,
}

/// `--actor` of a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActorQuery {
    /// Roots, helpers or unknown.
    Role(Role),
    /// The agents with this thread id or this label (final, as `show`
    /// prints it).
    Agent(String),
}

impl ActorQuery {
    /// The filter `--actor` (or the API's `actor=`) names: `main`,
    /// `helpers`, `unknown`, or an agent's thread id or label; `None` for
    /// `all`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "all" => None,
            "main" | "root" => Some(Self::Role(Role::Root)),
            "helpers" | "helper" => Some(Self::Role(Role::Helper)),
            "unknown" => Some(Self::Role(Role::Unknown)),
            agent => Some(Self::Agent(agent.to_owned())),
        }
    }
}

/// True for a value shaped as a thread id (a UUID, a Claude agent id, a
/// `toolu_` id: letters, digits, `-` and `_`, a digit among them), which
/// an older catalog may not list among its agents; a label such as `Main`
/// or `/root/child_a` is not. A search's actor of this shape that found
/// nothing is a quiet no-match; any other that no agent has
/// ([`Catalog::names_agent`]) is refused.
pub fn looks_like_a_thread_id(text: &str) -> bool {
    text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') && text.chars().any(|c| c.is_ascii_digit())
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    /// The run.
    pub run_id: String,
    /// The envelope.
    pub sequence: u64,
    /// Its actor's thread.
    pub thread_id: Option<String>,
    /// Its actor's label.
    pub label: String,
    /// `root`, `helper` or `unknown`.
    pub role: String,
    /// When.
    pub timestamp: Timestamp,
    /// The matching words in their context, each match in `[…]`.
    pub snippet: String,
}

/// A rollout head from the columns `size, modified_ns, thread, parent,
/// depth, started_at`, the first at `first`.
fn head_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<HeadRow> {
    Ok(HeadRow {
        size: row.get::<_, i64>(first)? as u64,
        modified_ns: row.get::<_, i64>(first + 1)? as u64,
        thread: row.get(first + 2)?,
        parent: row.get(first + 3)?,
        depth: row.get::<_, i64>(first + 4)? as u64,
        started: row.get::<_, Option<i64>>(first + 5)?.map(Timestamp),
    })
}

/// The session an `import_sessions` row holds, without its files, its
/// columns from `run_id` on starting at column `first`.
fn imported_head(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<ImportedSession> {
    Ok(ImportedSession {
        run_id: row.get(first)?,
        log: row.get::<_, Option<i64>>(first + 1)?.map(|bytes| bytes as u64),
        merged: row.get::<_, i64>(first + 2)? != 0,
        open: row.get::<_, i64>(first + 3)? != 0,
        files: BTreeMap::new(),
    })
}

/// The file an `import_files` row holds, its columns from `size` on
/// starting at column `first`.
fn imported_file(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<ImportedFile> {
    let offset: Option<i64> = row.get(first + 2)?;
    Ok(ImportedFile {
        size: row.get::<_, i64>(first)? as u64,
        modified_ns: row.get::<_, i64>(first + 1)? as u64,
        read: match offset {
            Some(offset) => Some(ReadRow {
                offset: offset as u64,
                lines: row.get::<_, i64>(first + 3)? as u64,
                torn: row.get::<_, i64>(first + 4)? != 0,
                number: row.get::<_, i64>(first + 5)? as u32,
            }),
            None => None,
        },
    })
}

/// What an import kept of one session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportedSession {
    /// Its run.
    pub run_id: String,
    /// The run log's length then.
    pub log: Option<u64>,
    /// Fed merged in time order.
    pub merged: bool,
    /// Read while its files were young (moved within the idle limit), so
    /// not ended by the idle rule: an import that finds them unchanged but
    /// still by then reads it on once (no line more) to end it. Cleared
    /// when its run is ended outside an import
    /// ([`Catalog::close_import_session`]).
    pub open: bool,
    /// Its files by path.
    pub files: BTreeMap<String, ImportedFile>,
}

impl ImportedSession {
    /// The digest of its files as kept ([`files_digest`]).
    pub fn files_digest(&self) -> FilesDigest {
        files_digest(self.files.iter().map(|(path, file)| (path.as_str(), file.size, file.modified_ns)))
    }
}

/// One file of an imported session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportedFile {
    /// Size when imported.
    pub size: u64,
    /// Modification time then (ns).
    pub modified_ns: u64,
    /// Where the reading stopped.
    pub read: Option<ReadRow>,
}

/// A digest of an imported session's files: their paths, sizes and
/// modification times (see [`files_digest`]).
pub type FilesDigest = [u8; 16];

/// The digest of a session's `files` (path, size, modification time in
/// ns), given in path order, as a `BTreeMap` keyed by path gives them:
/// equal for two lists exactly when they are equal, but for a collision
/// of a 128-bit hash (XXH3, whose output is fixed by its specification,
/// so a digest kept by one build is read alike by the next).
pub fn files_digest<'a>(files: impl IntoIterator<Item = (&'a str, u64, u64)>) -> FilesDigest {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for (path, size, modified_ns) in files {
        // Each path's length first: no two lists hash the same bytes.
        hasher.update(&(path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update(&size.to_le_bytes());
        hasher.update(&modified_ns.to_le_bytes());
    }
    hasher.digest128().to_le_bytes()
}

/// Where the reading of one file stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRow {
    /// Bytes read.
    pub offset: u64,
    /// Lines read.
    pub lines: u64,
    /// Its last line had no newline.
    pub torn: bool,
    /// The file's number among its session's.
    pub number: u32,
}

/// A folder's listing as an import kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirRow {
    /// The folder's modification time then (ns).
    pub mtime_ns: u64,
    /// Its change time then (ns).
    pub ctime_ns: u64,
    /// Its inode (a folder replaced by another has another).
    pub inode: u64,
    /// Its entries: for each a kind byte, the name and a NUL.
    pub entries: Vec<u8>,
}

/// A rollout's head as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadRow {
    /// The file's size then.
    pub size: u64,
    /// Its modification time then.
    pub modified_ns: u64,
    /// Its thread.
    pub thread: String,
    /// Its parent.
    pub parent: Option<String>,
    /// Spawn depth.
    pub depth: u64,
    /// When it started.
    pub started: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of kept sessions holds what point lookups of its keys give,
    /// each with its own files only, in key order from the key asked.
    #[test]
    fn a_page_of_kept_sessions_is_what_their_point_lookups_give() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let catalog = Catalog::open_at(&dir.path().join(CATALOG_FILE)).unwrap_or_else(|e| panic!("{e}"));
        let file = |size: u64, read: bool| ImportedFile { size, modified_ns: size * 7, read: read.then_some(ReadRow { offset: size, lines: 3, torn: size.is_multiple_of(2), number: 1 }) };
        // "b" has no files; "c" two; a file row whose session is missing
        // ("bb") is left out; another provider's "c" is not read.
        let kept = [
            ("a", ImportedSession { run_id: "r-a".into(), log: Some(10), merged: false, open: false, files: BTreeMap::from([("/a/1".into(), file(1, true))]) }),
            ("b", ImportedSession { run_id: "r-b".into(), log: None, merged: true, open: true, files: BTreeMap::new() }),
            ("c", ImportedSession { run_id: "r-c".into(), log: Some(30), merged: false, open: false, files: BTreeMap::from([("/c/1".into(), file(2, false)), ("/c/2".into(), file(3, true))]) }),
            ("d", ImportedSession { run_id: "r-d".into(), log: Some(40), merged: false, open: true, files: BTreeMap::from([("/d/1".into(), file(4, true))]) }),
        ];
        catalog.begin().unwrap_or_else(|e| panic!("{e}"));
        for (key, session) in &kept {
            catalog.put_import_session("codex", key, session).unwrap_or_else(|e| panic!("{e}"));
        }
        catalog.put_import_session("claude", "c", &kept[0].1).unwrap_or_else(|e| panic!("{e}"));
        catalog.put_import_session("codex", "bb", &kept[0].1).unwrap_or_else(|e| panic!("{e}"));
        catalog.conn.execute("DELETE FROM import_sessions WHERE provider = 'codex' AND key = 'bb'", []).unwrap_or_else(|e| panic!("{e}"));
        catalog.commit().unwrap_or_else(|e| panic!("{e}"));
        let page = |from: &str, limit: usize| catalog.import_sessions_from("codex", from, limit).unwrap_or_else(|e| panic!("{e}"));
        let looked_up = |keys: &[&str]| -> Vec<(String, ImportedSession)> {
            keys.iter().map(|key| ((*key).to_owned(), catalog.import_session("codex", key).unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("{key} kept")))).collect()
        };
        assert_eq!(page("", 10), looked_up(&["a", "b", "c", "d"]));
        assert_eq!(page("a", 10)[0].1, kept[0].1);
        assert_eq!(page("b", 2), looked_up(&["b", "c"]));
        assert_eq!(page("ba", 1), looked_up(&["c"]));
        assert_eq!(page("e", 10), Vec::new());
    }

    #[test]
    fn a_day_is_written_as_the_calendar_has_it() {
        assert_eq!(day_text(0), "1970-01-01");
        assert_eq!(day_text(1_764_547_200_000), "2025-12-01");
        assert_eq!(day_text(951_782_400_000), "2000-02-29");
    }

    #[test]
    fn words_are_searched_as_text_not_syntax() {
        assert_eq!(fts_expression("rm -rf \"x\""), Some("\"rm\" \"-rf\" \"\"\"x\"\"\"".to_owned()));
        assert_eq!(fts_expression("   "), None);
    }

    #[test]
    fn an_unreadable_catalog_is_made_anew_and_says_why() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(CATALOG_FILE);
        fs::write(&path, b"not a database, not at all, just bytes that are long enough to look like a header").unwrap_or_else(|e| panic!("{e}"));
        let catalog = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(catalog.rebuilt(), Some(Rebuilt::Unreadable(_))), "{:?}", catalog.rebuilt());
        assert_eq!(catalog.run_count().ok(), Some(0));
        drop(catalog);
        let again = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.rebuilt(), None);
    }

    /// A kept tree's head is listed as it was put, beside the log stamp the
    /// catalog has for the run; a run without a tree lists no head.
    #[test]
    fn a_usage_head_is_listed_as_it_was_kept() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let catalog = Catalog::open_at(&dir.path().join(CATALOG_FILE)).unwrap_or_else(|e| panic!("{e}"));
        for (id, started) in [("older", 1), ("newer", 2)] {
            catalog
                .connection()
                .execute(
                    "INSERT INTO runs (id, provider, status, started_at, agents, input_tokens, cached_input_tokens, cache_creation_tokens, output_tokens, \
                     reasoning_tokens, total_tokens, cost_status, warning_count, warning_codes, record, log_bytes, log_modified_ns) \
                     VALUES (?1, 'codex', 'completed', ?2, 1, 0, 0, 0, 0, 0, 0, 'exact', 0, '', '{}', 10, 20)",
                    params![id, started],
                )
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let (tree, report) = (Packed::pack(r#"{"agents":[]}"#), Packed::pack(r#"{"sessionId":"thread"}"#));
        let head = UsageHead {
            log: LogStampRow { bytes: 10, modified_ns: 19 },
            prices: "book".to_owned(),
            format: 2,
            provider: "codex".to_owned(),
            session_id: "thread".to_owned(),
            total_tokens: 42,
        };
        let kept = KeptUsage { tree: &tree, report: &report, head: &head, project: None, rows: &[] };
        catalog.put_usage("older", &kept).unwrap_or_else(|e| panic!("{e}"));
        let older = UsageListed { id: "older".to_owned(), row: 1, started_at: Some(1), head: Some(head.clone()) };
        let newer = UsageListed { id: "newer".to_owned(), row: 2, started_at: Some(2), head: None };
        assert_eq!(catalog.usage_listing().ok(), Some(vec![newer, older.clone()]));
        assert_eq!(catalog.usage_listed("older").ok(), Some(Some(older)));
        assert_eq!(catalog.usage_listed("gone").ok(), Some(None));
        // Read from its row, as by its id; a row that now holds another
        // run (or none) is not taken for it.
        assert_eq!(catalog.usage_tree_at(1, "older").ok(), Some(Some(tree.clone())));
        assert_eq!(catalog.usage_tree_at(2, "older").ok(), Some(Some(tree.clone())));
        assert_eq!(catalog.usage_tree_at(99, "older").ok(), Some(Some(tree.clone())));
        assert_eq!(catalog.usage_tree_at(1, "gone").ok(), Some(None));
        assert_eq!(catalog.usage_report_at(1, "older").ok(), Some(Some(report.clone())));
        assert_eq!(catalog.usage_report_at(2, "older").ok(), Some(Some(report.clone())));
        assert_eq!(catalog.usage_report_at(2, "newer").ok(), Some(None));
        // Put again, it is listed as it now says.
        let other = UsageHead { prices: "other".to_owned(), ..head.clone() };
        catalog.put_usage("older", &KeptUsage { head: &other, ..kept }).unwrap_or_else(|e| panic!("{e}"));
        let prices = catalog.usage_listed("older").ok().flatten().and_then(|listed| listed.head).map(|head| head.prices);
        assert_eq!(prices.as_deref(), Some("other"));
        // A tree an older agentrace kept as plain text reads as it is.
        catalog.connection().execute("UPDATE runs SET usage_tree = 'plain' WHERE id = 'older'", []).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(catalog.usage_tree("older").ok(), Some(Some(Packed::Plain("plain".to_owned()))));
    }

    /// A connection told to leave its write-ahead log when it closes; the
    /// next reads through it, and a catalog deleted by hand beside it is
    /// made anew, empty, never from that log.
    #[test]
    fn a_deleted_catalog_is_made_anew_without_the_log_it_left() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(CATALOG_FILE);
        let catalog = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
        catalog.unsynced_appends().unwrap_or_else(|e| panic!("{e}"));
        let row = DirRow { mtime_ns: 1, ctime_ns: 2, inode: 3, entries: b"fa\0".to_vec() };
        catalog.put_import_dir(b"/kept", &row).unwrap_or_else(|e| panic!("{e}"));
        drop(catalog);
        let wal = PathBuf::from(format!("{}-wal", path.display()));
        assert!(wal.exists(), "the log is left");
        let catalog = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(catalog.import_dirs().ok(), Some(crate::FastMap::from_iter([(b"/kept".to_vec(), row)])), "read through the log left");
        catalog.unsynced_appends().unwrap_or_else(|e| panic!("{e}"));
        drop(catalog);
        assert!(wal.exists(), "the log is left again");
        fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let catalog = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((catalog.rebuilt(), catalog.import_dirs().ok()), (Some(&Rebuilt::Missing), Some(crate::FastMap::default())));
    }

    /// A catalog made anew has pages of [`PAGE_SIZE`]; one made with
    /// another size (by an older agentrace) keeps its own and is used as
    /// it is.
    #[test]
    fn a_new_catalog_has_large_pages_and_an_older_one_keeps_its_own() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let page_size = |catalog: &Catalog| -> i64 { catalog.connection().query_row("PRAGMA page_size", [], |row| row.get(0)).unwrap_or_else(|e| panic!("{e}")) };
        let new = Catalog::open_at(&dir.path().join("new.sqlite")).unwrap_or_else(|e| panic!("{e}"));
        let older = dir.path().join("older.sqlite");
        Connection::open(&older).and_then(|conn| conn.execute_batch("PRAGMA page_size=4096; PRAGMA journal_mode=WAL;")).unwrap_or_else(|e| panic!("{e}"));
        let older = Catalog::open_at(&older).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((page_size(&new), page_size(&older), older.run_count().ok()), (i64::from(PAGE_SIZE), 4096, Some(0)));
    }

    #[test]
    fn a_catalog_of_another_schema_is_made_anew() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(CATALOG_FILE);
        let conn = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch("CREATE TABLE old (x); PRAGMA user_version = 0;").unwrap_or_else(|e| panic!("{e}"));
        drop(conn);
        let catalog = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(catalog.rebuilt(), Some(&Rebuilt::OtherSchema(0)));
        drop(catalog);
        let conn = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch("PRAGMA user_version = 99;").unwrap_or_else(|e| panic!("{e}"));
        drop(conn);
        let catalog = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(catalog.rebuilt(), Some(&Rebuilt::OtherSchema(99)));
    }

    /// Each order lists the largest first, a run without the figure (an
    /// unpriced cost, a duration not known) last, ties newest first; a
    /// warning filter keeps a code whole (`lost_turn` is not
    /// `lost_turns`' prefix) and pages count every match.
    #[test]
    fn runs_are_listed_in_each_order_and_kept_to_a_warning() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let catalog = Catalog::open_at(&dir.path().join("catalog.sqlite")).unwrap_or_else(|e| panic!("{e}"));
        // (id, started minute, ended minute, tokens, cost, warnings)
        type Row<'a> = (&'a str, i64, Option<i64>, u64, Option<f64>, &'a [&'a str]);
        let runs: [Row; 6] = [
            ("a", 1, Some(9), 300, Some(0.5), &[]),
            ("b", 2, Some(3), 900, None, &["lost_turn"]),
            ("c", 3, None, 100, Some(2.0), &["orphan_child", "lost_turn"]),
            ("d", 4, Some(6), 300, Some(0.5), &["link_conflict"]),
            ("e", 5, Some(5), 0, Some(0.0), &["budget_exceeded_x"]),
            // A note only: no problem for `any` and the order by warnings.
            ("f", 6, Some(7), 50, Some(0.1), &["replayed_history"]),
        ];
        catalog.begin().unwrap_or_else(|e| panic!("{e}"));
        for (id, start, end, tokens, cost, codes) in runs {
            let notes: Vec<&str> = codes.iter().copied().filter(|code| *code == "replayed_history").collect();
            let minute = |m: i64| format!("2026-11-29T10:{m:02}:00.000Z");
            let summary: RunSummary = serde_json::from_value(serde_json::json!({
                "id": id, "provider": "codex", "source": "codex-app-server", "status": if end.is_some() { "done" } else { "running" },
                "rootThreadId": null, "result": null, "resultSource": null, "error": null,
                "startedAt": minute(start), "updatedAt": minute(start), "endedAt": end.map(minute),
                "counts": {"events": 1, "unknownActor": 0, "undecodedLines": 0, "unknownFrames": 0, "skippedLogLines": 0, "droppedBytes": 0},
                "tokens": {"inputTokens": tokens, "cachedInputTokens": 0, "cacheCreationInputTokens": 0, "outputTokens": 0, "reasoningOutputTokens": 0, "totalTokens": tokens},
                "cost": cost, "costStatus": if cost.is_some() { "exact" } else { "unknown" },
                "warningCount": codes.len(), "warningCodes": codes, "noteCodes": notes,
            }))
            .unwrap_or_else(|e| panic!("{e}"));
            catalog.put_run(&summary, None, None, &[], LogStampRow { bytes: 1, modified_ns: 1 }, None).unwrap_or_else(|e| panic!("{e}"));
        }
        catalog.commit().unwrap_or_else(|e| panic!("{e}"));
        let listed = |sort: RunSort, warning: Option<&str>, limit: Option<u64>, offset: u64| -> (Vec<String>, u64) {
            let filter = RunFilter { sort, warning: warning.and_then(|text| WarningFilter::parse(text).ok()), limit, offset, ..RunFilter::default() };
            let (runs, total) = catalog.list_runs(&filter).unwrap_or_else(|e| panic!("{e}"));
            (runs.into_iter().map(|listed| listed.run.id.to_string()).collect(), total)
        };
        let ids = |ids: &[&str], total: u64| (ids.iter().map(|id| (*id).to_owned()).collect::<Vec<_>>(), total);
        assert_eq!(
            [
                listed(RunSort::Started, None, None, 0),
                listed(RunSort::Cost, None, None, 0),
                listed(RunSort::Tokens, None, None, 0),
                listed(RunSort::Duration, None, None, 0),
                listed(RunSort::Warnings, None, None, 0),
                listed(RunSort::Cost, None, Some(2), 1),
                listed(RunSort::Started, Some("lost_turn"), None, 0),
                listed(RunSort::Tokens, Some("any"), None, 0),
                listed(RunSort::Started, Some("budget_exceeded"), None, 0),
                listed(RunSort::Started, Some("replayed_history"), None, 0),
            ],
            [
                ids(&["f", "e", "d", "c", "b", "a"], 6),
                ids(&["c", "d", "a", "f", "e", "b"], 6),
                ids(&["b", "d", "a", "c", "f", "e"], 6),
                // c is running: its duration is to its last update.
                ids(&["a", "d", "f", "b", "e", "c"], 6),
                ids(&["c", "e", "d", "b", "f", "a"], 6),
                ids(&["d", "a"], 6),
                ids(&["c", "b"], 2),
                ids(&["b", "d", "c", "e"], 4),
                ids(&[], 0),
                ids(&["f"], 1),
            ]
        );
        assert_eq!(RunSort::ALL.map(|sort| RunSort::parse(sort.as_str())), RunSort::ALL.map(Some));
        assert_eq!(RunSort::parse("price"), None);
    }

    /// `top` and the live page follow every running run and the newest of
    /// the others; one whose session ended mid-turn is one of the others,
    /// listed only while it is among the newest.
    #[test]
    fn a_run_stopped_mid_turn_is_not_followed_as_live() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let catalog = Catalog::open_at(&dir.path().join("catalog.sqlite")).unwrap_or_else(|e| panic!("{e}"));
        catalog.begin().unwrap_or_else(|e| panic!("{e}"));
        for (id, minute, status, stopped) in [("live", 1, "running", false), ("done", 2, "done", false), ("stopped", 3, "running", true), ("older-stopped", 0, "running", true)] {
            let summary: RunSummary = serde_json::from_value(serde_json::json!({
                "id": id, "provider": "codex", "source": "codex-app-server", "status": status,
                "rootThreadId": null, "result": null, "resultSource": null, "error": null,
                "startedAt": format!("2026-11-29T10:{minute:02}:00.000Z"), "updatedAt": null, "endedAt": null,
                "counts": {"events": 1, "unknownActor": 0, "undecodedLines": 0, "unknownFrames": 0, "skippedLogLines": 0, "droppedBytes": 0},
                "tokens": null, "cost": null, "costStatus": "unknown", "warningCount": 0, "warningCodes": [],
                "sessionEnded": stopped,
            }))
            .unwrap_or_else(|e| panic!("{e}"));
            catalog.put_run(&summary, None, None, &[], LogStampRow { bytes: 1, modified_ns: 1 }, None).unwrap_or_else(|e| panic!("{e}"));
        }
        catalog.commit().unwrap_or_else(|e| panic!("{e}"));
        let followed = |recent| catalog.live_and_recent(recent).unwrap_or_else(|e| panic!("{e}")).into_iter().map(|id| id.to_string()).collect::<Vec<_>>();
        assert_eq!((followed(1), followed(2)), (vec!["stopped".to_owned(), "live".to_owned()], vec!["stopped".to_owned(), "done".to_owned(), "live".to_owned()]));
        // The list keeps to the runs at work with `live`; `running` is the
        // record's status, stopped runs included.
        let listed = |status: &str| {
            let filter = RunFilter { status: Some(status.to_owned()), ..RunFilter::default() };
            let (runs, total) = catalog.list_runs(&filter).unwrap_or_else(|e| panic!("{e}"));
            (runs.into_iter().map(|listed| listed.run.id.to_string()).collect::<Vec<_>>(), total)
        };
        assert_eq!(
            (listed(LIVE_STATUS), listed("running")),
            ((vec!["live".to_owned()], 1), (vec!["stopped".to_owned(), "live".to_owned(), "older-stopped".to_owned()], 3))
        );
    }

    /// A kept reading is put, read, replaced and removed by its run's id;
    /// one too damaged to unpack reads as none (the import reads the
    /// session again); removing the run, or clearing the catalog for a
    /// `reindex`, takes its reading too.
    #[test]
    fn a_kept_reading_is_read_back_replaced_and_gone_with_its_run() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let catalog = Catalog::open_at(&dir.path().join(CATALOG_FILE)).unwrap_or_else(|e| panic!("{e}"));
        let read = |id: &str| catalog.import_reading(id).unwrap_or_else(|e| panic!("{e}"));
        catalog.put_import_reading("claude-a", r#"{"first":1}"#).unwrap_or_else(|e| panic!("{e}"));
        catalog.put_import_reading("claude-b", r#"{"b":1}"#).unwrap_or_else(|e| panic!("{e}"));
        catalog.put_import_reading("claude-c", r#"{"c":1}"#).unwrap_or_else(|e| panic!("{e}"));
        catalog.put_import_reading("claude-a", r#"{"second":2}"#).unwrap_or_else(|e| panic!("{e}"));
        catalog.connection().execute_batch("INSERT INTO import_readings (run_id, reading) VALUES ('claude-d', X'FFFFFF7F00');").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!([read("claude-a"), read("claude-b"), read("claude-d"), read("claude-x")], [Some(r#"{"second":2}"#.to_owned()), Some(r#"{"b":1}"#.to_owned()), None, None]);
        catalog.remove_import_reading("claude-a").unwrap_or_else(|e| panic!("{e}"));
        catalog.remove_run("claude-b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!([read("claude-a"), read("claude-b"), read("claude-c")], [None, None, Some(r#"{"c":1}"#.to_owned())]);
        catalog.clear().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read("claude-c"), None);
    }

    /// A catalog of schema 3 (its usage head filled by a trigger), 4, 5, 6
    /// 7 or 8 is brought to this schema in place: its rows kept, the
    /// trigger gone, a column for the reports, the files indexed by path,
    /// the runs by each order `runs --sort` takes, a column for the digests
    /// of the imported sessions' files, a table of the readings imports
    /// left open, and no rebuild noted.
    #[test]
    fn a_catalog_of_the_schema_before_is_migrated_in_place() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(CATALOG_FILE);
        let catalog = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
        catalog.connection().execute_batch("INSERT INTO meta (key, value) VALUES ('kept', 'yes');").unwrap_or_else(|e| panic!("{e}"));
        drop(catalog);
        // Schema 3 had the trigger; 3 and 4 had no report; none had the
        // index of files by path.
        let trigger = "CREATE TRIGGER runs_usage_head AFTER UPDATE OF usage_tree ON runs BEGIN UPDATE runs SET usage_prices = 'x' WHERE id = NEW.id; END;";
        let no_report = "ALTER TABLE runs DROP COLUMN usage_report;";
        let no_sort_indexes = "DROP INDEX runs_by_cost; DROP INDEX runs_by_tokens; DROP INDEX runs_by_duration; DROP INDEX runs_by_warnings; ALTER TABLE runs DROP COLUMN note_count;";
        let no_digests = "DROP TABLE import_readings; ALTER TABLE import_sessions DROP COLUMN files_digest;";
        for (before, older) in [(3, format!("{no_report} {trigger}")), (4, no_report.to_owned()), (5, String::new()), (6, String::new()), (7, String::new()), (8, String::new())] {
            let catalog = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
            catalog
                .connection()
                .execute_batch(&match before {
                    8 => format!("DROP TABLE import_readings; PRAGMA user_version = {before};"),
                    7 => format!("{no_digests} PRAGMA user_version = {before};"),
                    6 => format!("{no_digests} {no_sort_indexes} PRAGMA user_version = {before};"),
                    _ => format!("{no_digests} DROP INDEX import_files_by_path; {no_sort_indexes} {older} PRAGMA user_version = {before};"),
                })
                .unwrap_or_else(|e| panic!("{e}"));
            drop(catalog);
            let catalog = Catalog::open_at(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(catalog.rebuilt(), None);
            let conn = catalog.connection();
            let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap_or_else(|e| panic!("{e}"));
            let triggers: i64 = conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'", [], |row| row.get(0)).unwrap_or_else(|e| panic!("{e}"));
            let kept: String = conn.query_row("SELECT value FROM meta WHERE key = 'kept'", [], |row| row.get(0)).unwrap_or_else(|e| panic!("{e}"));
            let reports: i64 = conn.query_row("SELECT count(usage_report) FROM runs", [], |row| row.get(0)).unwrap_or_else(|e| panic!("{e}"));
            let indexed: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('import_files_by_path', 'runs_by_cost', 'runs_by_tokens', 'runs_by_duration', 'runs_by_warnings')", [], |row| row.get(0))
                .unwrap_or_else(|e| panic!("{e}"));
            let notes: i64 = conn.query_row("SELECT count(note_count) FROM runs", [], |row| row.get(0)).unwrap_or_else(|e| panic!("{e}"));
            let digests: i64 = conn
                .query_row("SELECT count(*) FROM pragma_table_info('import_sessions') WHERE name = 'files_digest'", [], |row| row.get(0))
                .unwrap_or_else(|e| panic!("{e}"));
            let readings: i64 = conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'import_readings'", [], |row| row.get(0)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((version, triggers, kept.as_str(), reports, indexed, notes, digests, readings), (CATALOG_SCHEMA, 0, "yes", 0, 5, 0, 1, 1), "from schema {before}");
        }
    }
}
