//! The home's files beside the runs: the names the store gives them, the
//! hook spool, the locks, the runs folder's listing, the import's retired
//! tables, the statusline's state, top's log and the tap's spill, each
//! also with what goes wrong (a torn line, a stale lock, a home that cannot
//! be written).

use std::fs;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use agentrace_core::model::Timestamp;
use agentrace_store::{Catalog, Home, ImportLock, RunFiles, RunLock, StoreError};
use serde_json::{json, Value};

use crate::all::support::{run_id, temporary_home, Fallible, TestResult};

/// The names in `dir`, sorted (none when it is not there).
fn names_in(dir: &Path) -> Fallible<Vec<String>> {
    let mut names = Vec::new();
    match fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                names.push(entry?.file_name().to_string_lossy().into_owned());
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error.into()),
    }
    names.sort();
    Ok(names)
}

/// A home whose root is a regular file: nothing can be made under it,
/// whoever runs the test (permission bits do not stop root).
fn unwritable_home() -> Fallible<(tempfile::TempDir, Home)> {
    let directory = tempfile::tempdir()?;
    let root = directory.path().join("home");
    fs::write(&root, "not a folder")?;
    Ok((directory, Home::at(root)))
}

/// What an `Io` error says: its action, its path and its cause's kind.
fn io_parts(error: StoreError) -> Fallible<(&'static str, PathBuf, std::io::ErrorKind)> {
    match error {
        StoreError::Io { action, path, source } => Ok((action, path, source.kind())),
        other => Err(format!("not an I/O error: {other:?}").into()),
    }
}

/// A pid no process has: Linux never hands out one above 2^22.
const GONE_PID: u32 = 4_194_305;

#[test]
fn the_home_names_every_file_it_keeps() {
    let home = Home::at("/data/agentrace");
    let id = run_id("run-1");

    let named: Vec<(&str, PathBuf)> = vec![
        ("kept copies", home.kept_copies_path(&id)),
        ("run lock", home.run_lock_path(&id)),
        ("hook spool", home.hook_spool_path(&id)),
        ("import dir", home.import_dir()),
        ("import lock", home.import_lock_path()),
        ("catalog", home.catalog_path()),
        ("warning config", home.warning_config_path()),
        ("top log", home.top_log_path()),
    ];

    let expected: Vec<(&str, PathBuf)> = vec![
        ("kept copies", PathBuf::from("/data/agentrace/runs/run-1.raw.gz")),
        ("run lock", PathBuf::from("/data/agentrace/runs/run-1.lock")),
        ("hook spool", PathBuf::from("/data/agentrace/hooks/run-1.jsonl")),
        ("import dir", PathBuf::from("/data/agentrace/import")),
        ("import lock", PathBuf::from("/data/agentrace/import/lock")),
        ("catalog", PathBuf::from("/data/agentrace/catalog.sqlite")),
        ("warning config", PathBuf::from("/data/agentrace/warnings.json")),
        ("top log", PathBuf::from("/data/agentrace/top.log")),
    ];
    assert_eq!(named, expected);
}

#[test]
fn the_catalog_is_opened_where_the_home_names_it() -> TestResult {
    let (_directory, home) = temporary_home()?;

    let catalog = Catalog::open(&home)?;

    assert_eq!(catalog.path(), home.catalog_path());
    // SQLite's write-ahead log and its index sit beside it.
    assert_eq!(
        names_in(home.root())?,
        vec!["catalog.sqlite".to_owned(), "catalog.sqlite-shm".to_owned(), "catalog.sqlite-wal".to_owned()]
    );
    Ok(())
}

#[test]
fn spooled_inputs_are_one_line_each_and_taking_the_spool_leaves_none() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("claude-s1");

    home.spool_hook_input(&id, Timestamp::from_millis(1_000), b"{\"session_id\": \"s1\",\n \"x\": [1,\r\n2]}\n")?;
    home.spool_hook_input(&id, Timestamp::from_millis(2_000), b"  not json\n")?;
    let taken = home.take_hook_spool(&id)?.ok_or("nothing was taken")?;
    let bytes = String::from_utf8(taken.bytes().to_vec())?;
    let while_taken = names_in(&home.root().join("hooks"))?;
    taken.finish()?;
    let again = home.take_hook_spool(&id)?;

    assert_eq!(
        bytes,
        "{\"t\":1000,\"input\":{\"session_id\": \"s1\",  \"x\": [1,  2]}}\n{\"t\":2000,\"input\":\"not json\"}\n"
    );
    assert_eq!(while_taken, vec![format!("claude-s1.draining-{}", std::process::id())]);
    assert!(again.is_none(), "{again:?}");
    assert_eq!(names_in(&home.root().join("hooks"))?, Vec::<String>::new());
    Ok(())
}

#[test]
fn a_torn_spool_line_stays_a_line_of_its_own_and_the_next_input_is_whole() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("claude-s1");
    home.spool_hook_input(&id, Timestamp::from_millis(1_000), b"{\"a\":1}")?;
    // A hook that died part way through its write.
    let mut torn = fs::read(home.hook_spool_path(&id))?;
    torn.extend_from_slice(b"{\"t\":1500,\"inp");
    fs::write(home.hook_spool_path(&id), &torn)?;

    home.spool_hook_input(&id, Timestamp::from_millis(2_000), b"{\"b\":2}")?;
    let taken = home.take_hook_spool(&id)?.ok_or("nothing was taken")?;

    assert_eq!(
        String::from_utf8(taken.bytes().to_vec())?,
        "{\"t\":1000,\"input\":{\"a\":1}}\n{\"t\":1500,\"inp\n{\"t\":2000,\"input\":{\"b\":2}}\n"
    );
    Ok(())
}

#[test]
fn a_spool_taken_but_never_finished_is_kept_apart_from_the_next_one_never_overwritten() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("claude-s1");
    home.spool_hook_input(&id, Timestamp::from_millis(1_000), b"{\"a\":1}")?;

    let first = home.take_hook_spool(&id)?.ok_or("nothing was taken")?;
    let left = first.path().to_owned();
    drop(first);
    home.spool_hook_input(&id, Timestamp::from_millis(2_000), b"{\"b\":2}")?;
    let second = home.take_hook_spool(&id)?.ok_or("nothing was taken")?;
    let pid = std::process::id();

    assert_eq!(String::from_utf8(fs::read(&left)?)?, "{\"t\":1000,\"input\":{\"a\":1}}\n");
    assert_eq!(String::from_utf8(second.bytes().to_vec())?, "{\"t\":2000,\"input\":{\"b\":2}}\n");
    assert_eq!(
        names_in(&home.root().join("hooks"))?,
        vec![format!("claude-s1.draining-{pid}"), format!("claude-s1.draining-{pid}-1")]
    );
    Ok(())
}

#[test]
fn a_spool_in_a_home_that_cannot_be_written_is_a_clear_error() -> TestResult {
    let (_directory, home) = unwritable_home()?;
    let id = run_id("claude-s1");

    let error = home
        .spool_hook_input(&id, Timestamp::from_millis(1_000), b"{}")
        .err()
        .ok_or("spooled into a file")?;
    let message = error.to_string();

    assert_eq!(
        io_parts(error)?,
        ("open hook spool", home.hook_spool_path(&id), std::io::ErrorKind::NotADirectory)
    );
    assert_eq!(message, format!("cannot open hook spool {}", home.hook_spool_path(&id).display()));
    Ok(())
}

#[test]
fn a_spool_of_an_unsafe_run_id_is_refused() -> TestResult {
    let (_directory, home) = temporary_home()?;

    let spooled = home.spool_hook_input(&run_id("../x"), Timestamp::from_millis(1_000), b"{}");
    let taken = home.take_hook_spool(&run_id("../x"));

    assert!(matches!(spooled, Err(StoreError::InvalidRunId { .. })), "{spooled:?}");
    assert!(matches!(taken, Err(StoreError::InvalidRunId { .. })), "{taken:?}");
    assert_eq!(names_in(home.root())?, Vec::<String>::new());
    Ok(())
}

#[test]
fn a_run_lock_is_exclusive_until_it_is_dropped() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("run-1");

    let first = RunLock::acquire(&home, &id, Duration::ZERO)?.ok_or("the free lock was not taken")?;
    let held = fs::read_to_string(first.path())?;
    let second = RunLock::acquire(&home, &id, Duration::ZERO)?;
    drop(first);
    let after = names_in(&home.runs_dir())?;
    let third = RunLock::acquire(&home, &id, Duration::ZERO)?;

    assert_eq!(held, std::process::id().to_string());
    assert!(second.is_none(), "a held lock was taken again");
    assert_eq!(after, Vec::<String>::new());
    assert!(third.is_some(), "a let-go lock was not taken");
    Ok(())
}

#[test]
fn a_stale_run_lock_whose_owner_is_gone_is_taken_over() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("run-1");
    fs::create_dir_all(home.runs_dir())?;
    fs::write(home.run_lock_path(&id), GONE_PID.to_string())?;

    let lock = RunLock::acquire(&home, &id, Duration::ZERO)?.ok_or("the stale lock was not taken over")?;

    assert_eq!(fs::read_to_string(lock.path())?, std::process::id().to_string());
    Ok(())
}

#[test]
fn a_young_empty_run_lock_is_one_being_written_and_is_not_taken() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let id = run_id("run-1");
    fs::create_dir_all(home.runs_dir())?;
    fs::write(home.run_lock_path(&id), "")?;

    let lock = RunLock::acquire(&home, &id, Duration::ZERO)?;

    assert!(lock.is_none(), "a lock being written was taken over");
    assert_eq!(fs::read_to_string(home.run_lock_path(&id))?, "");
    Ok(())
}

#[test]
fn a_run_lock_in_a_home_that_cannot_be_written_is_a_clear_error() -> TestResult {
    let (_directory, home) = unwritable_home()?;

    let error = RunLock::acquire(&home, &run_id("run-1"), Duration::ZERO)
        .err()
        .ok_or("locked a run in a file")?;

    assert_eq!(
        io_parts(error)?,
        ("create runs directory", home.runs_dir(), std::io::ErrorKind::NotADirectory)
    );
    Ok(())
}

#[test]
fn a_second_import_lock_says_once_that_it_waits_and_gets_the_lock_when_the_first_lets_go() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let first = ImportLock::acquire(&home, || panic!("the free lock was waited for"))?;
    let (said, told) = mpsc::channel();
    let (locked, got) = mpsc::channel();

    let second = std::thread::spawn({
        let home = home.clone();
        move || {
            let lock = ImportLock::acquire(&home, || {
                let _ = said.send("waiting");
            });
            let _ = locked.send(lock.is_ok());
            lock.map(drop).map_err(|error| error.to_string())
        }
    });
    let waiting = told.recv_timeout(Duration::from_secs(30));
    let before_the_first_let_go = got.try_recv().ok();
    drop(first);
    let got_it = got.recv_timeout(Duration::from_secs(30));
    let joined = second.join().map_err(|_| "the second import's thread panicked")?;
    let told_again = told.try_recv().ok();

    assert_eq!(waiting, Ok("waiting"));
    assert_eq!(before_the_first_let_go, None);
    assert_eq!(got_it, Ok(true));
    assert_eq!(joined, Ok(()));
    assert_eq!(told_again, None);
    assert_eq!(names_in(&home.import_dir())?, vec!["lock".to_owned()]);
    Ok(())
}

#[test]
fn an_import_lock_in_a_home_that_cannot_be_written_is_a_clear_error() -> TestResult {
    let (_directory, home) = unwritable_home()?;

    let error = ImportLock::acquire(&home, || {}).err().ok_or("locked an import in a file")?;

    assert_eq!(
        io_parts(error)?,
        ("create import directory", home.import_dir(), std::io::ErrorKind::NotADirectory)
    );
    Ok(())
}

#[test]
fn the_retired_import_tables_are_removed_and_nothing_else_is() -> TestResult {
    let (_directory, home) = temporary_home()?;
    fs::create_dir_all(home.import_dir())?;
    for path in home.retired_import_tables() {
        fs::write(path, "old")?;
    }
    fs::write(home.import_lock_path(), "")?;
    fs::write(home.catalog_path(), "")?;

    home.remove_retired_import_tables();
    // Nothing to remove is no error either.
    home.remove_retired_import_tables();

    assert_eq!(home.retired_import_tables().len(), 11);
    assert_eq!(names_in(&home.import_dir())?, vec!["lock".to_owned()]);
    assert_eq!(names_in(home.root())?, vec!["catalog.sqlite".to_owned(), "import".to_owned()]);
    Ok(())
}

#[test]
fn a_logs_stamp_through_the_open_runs_folder_is_its_stamp_by_path() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let unopened = home.runs_folder().is_none();
    fs::create_dir_all(home.runs_dir())?;
    let (written, empty) = (run_id("written"), run_id("empty"));
    fs::write(home.log_path(&written), "{\"v\":3}\n")?;
    fs::write(home.log_path(&empty), "")?;
    // A record alone is no log.
    fs::write(home.record_path(&run_id("recorded")), "{}")?;
    let folder = home.runs_folder().ok_or("the runs folder did not open")?;

    let stamps: Vec<_> = ["written", "empty", "recorded", "gone"].iter().map(|id| folder.log_stamp(&run_id(id))).collect();

    let by_path = |id: &str| agentrace_store::catalog::log_stamp(&home.log_path(&run_id(id)));
    assert!(unopened);
    assert_eq!(stamps, vec![by_path("written"), by_path("empty"), None, None]);
    assert_eq!(stamps[0].map(|stamp| stamp.bytes), Some(8));
    assert!(stamps[0].is_some_and(|stamp| stamp.modified_ns > 0));
    Ok(())
}

#[test]
fn the_runs_folder_lists_each_runs_files_by_id() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let before = home.list_run_files();
    fs::create_dir_all(home.runs_dir())?;
    let empty_has_entries = home.runs_dir_has_entries();
    let names = [
        "claude-a.jsonl", "claude-a.json", "claude-a.snapshot", "claude-a-b.jsonl", "claude-b.jsonl",
        "codex-x.json", "live1.jsonl", "live1.json", "live1.lock", "live1.raw.gz", "notes.txt",
    ];
    for name in names {
        fs::write(home.runs_dir().join(name), "")?;
    }

    let listed = home.list_run_files();
    let has_entries = home.runs_dir_has_entries();

    let files = |log, record, snapshot| RunFiles { log, record, snapshot };
    // `claude-a-b` is a run of its own, not a file of `claude-a`.
    let expected: agentrace_store::FastMap<String, RunFiles> = [
        ("claude-a", files(true, true, true)),
        ("claude-a-b", files(true, false, false)),
        ("claude-b", files(true, false, false)),
        ("codex-x", files(false, true, false)),
        ("live1", files(true, true, false)),
    ]
    .into_iter()
    .map(|(id, files)| (id.to_owned(), files))
    .collect();
    assert_eq!(before, agentrace_store::FastMap::default());
    assert!(!empty_has_entries);
    assert!(has_entries);
    assert_eq!(listed, expected);
    Ok(())
}

#[test]
fn removing_a_listed_run_removes_only_the_log_and_record_it_was_listed_with() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (whole, half) = (run_id("codex-a"), run_id("codex-b"));
    fs::create_dir_all(home.runs_dir())?;
    for id in [&whole, &half] {
        for path in [home.log_path(id), home.record_path(id), home.snapshot_path(id)] {
            fs::write(path, "")?;
        }
    }

    home.remove_listed_run(&whole, RunFiles { log: true, record: true, snapshot: true })?;
    home.remove_listed_run(&half, RunFiles { log: true, record: false, snapshot: false })?;
    // Listed, but gone since: no error.
    home.remove_listed_run(&whole, RunFiles { log: true, record: true, snapshot: false })?;

    assert_eq!(
        names_in(&home.runs_dir())?,
        vec!["codex-a.snapshot".to_owned(), "codex-b.json".to_owned(), "codex-b.snapshot".to_owned()]
    );
    Ok(())
}

#[test]
fn a_statusline_state_reads_back_as_kept_and_leaves_no_temporary_file() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let state = json!({"version": 2, "files": {"a.jsonl": {"offset": 120}}});

    let before: Option<Value> = home.statusline_state("s1")?;
    home.save_statusline_state("s1", &json!({"version": 1}))?;
    home.save_statusline_state("s1", &state)?;
    let after: Option<Value> = home.statusline_state("s1")?;

    assert_eq!(before, None);
    assert_eq!(after, Some(state));
    assert_eq!(names_in(&home.root().join("statusline"))?, vec!["s1.json".to_owned()]);
    Ok(())
}

#[test]
fn a_torn_or_foreign_statusline_state_reads_as_none() -> TestResult {
    let (_directory, home) = temporary_home()?;
    home.save_statusline_state("s1", &json!({"version": 2}))?;
    fs::write(home.statusline_state_path("s2")?, "{\"version\": 2, \"fil")?;

    let foreign: Option<Vec<u32>> = home.statusline_state("s1")?;
    let torn: Option<Value> = home.statusline_state("s2")?;

    assert_eq!(foreign, None);
    assert_eq!(torn, None);
    Ok(())
}

#[test]
fn a_statusline_state_of_an_unsafe_session_or_an_unwritable_home_is_an_error() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_other, unwritable) = unwritable_home()?;

    let read = home.statusline_state::<Value>("../s1");
    let saved = home.save_statusline_state("../s1", &json!({}));
    let error = unwritable.save_statusline_state("s1", &json!({})).err().ok_or("saved into a file")?;

    assert!(matches!(read, Err(StoreError::InvalidRunId { .. })), "{read:?}");
    assert!(matches!(saved, Err(StoreError::InvalidRunId { .. })), "{saved:?}");
    assert_eq!(
        io_parts(error)?,
        ("create statusline directory", unwritable.root().join("statusline"), std::io::ErrorKind::NotADirectory)
    );
    Ok(())
}

#[test]
fn top_s_log_is_made_empty_over_the_last_one_and_never_makes_the_home() -> TestResult {
    let (directory, home) = temporary_home()?;
    fs::write(home.top_log_path(), "the last screen's stderr")?;
    let missing = Home::at(directory.path().join("not-yet"));

    drop(home.create_top_log()?);
    let error = missing.create_top_log().err().ok_or("made a home for top's log")?;

    assert_eq!(fs::read_to_string(home.top_log_path())?, "");
    assert_eq!(io_parts(error)?, ("create", missing.top_log_path(), std::io::ErrorKind::NotFound));
    assert!(!missing.root().exists());
    Ok(())
}

#[test]
fn a_spill_file_is_made_in_the_runs_folder_without_a_name() -> TestResult {
    let (_directory, home) = temporary_home()?;

    let spill = home.create_spill()?;
    spill.write_all_at(b"copied bytes", 0)?;
    let mut back = [0_u8; 5];
    spill.read_exact_at(&mut back, 7)?;

    assert_eq!(&back, b"bytes");
    assert_eq!(names_in(&home.runs_dir())?, Vec::<String>::new());
    Ok(())
}

#[test]
fn a_spill_file_in_a_home_that_cannot_be_written_is_a_clear_error() -> TestResult {
    let (_directory, home) = unwritable_home()?;

    let error = home.create_spill().err().ok_or("spilled into a file")?;

    assert_eq!(
        io_parts(error)?,
        ("create a spill file in", home.runs_dir(), std::io::ErrorKind::NotADirectory)
    );
    Ok(())
}
