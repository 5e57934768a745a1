//! Tables of JSON lines sorted by key (`["key",value]` per line), read and
//! rewritten as streams, so what an import keeps about each session never
//! has to fit in memory at once: a reader walks the last table in step with
//! the keys asked for, a writer merges the entries put into it with the
//! last table's, line by line.
//!
//! A table is `<name>.jsonl`; a rewrite in progress is saved as
//! `<name>.partial.jsonl` (the first entries of the new table, up to its
//! last line), which readers put before the entries of `<name>.jsonl` with
//! greater keys: an interrupted import loses none of what it had saved.

use std::cmp::Ordering;
use std::fs::{self, File};
use std::io::{BufRead as _, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Serialize;

/// How a table's keys are ordered.
pub type Order = fn(&str, &str) -> Ordering;

/// Plain byte order of the keys.
pub fn by_bytes(a: &str, b: &str) -> Ordering {
    a.cmp(b)
}

/// The files of one table.
#[derive(Debug, Clone)]
pub struct Table {
    complete: PathBuf,
    partial: PathBuf,
    order: Order,
}

impl Table {
    /// The table named `name` in `dir`, its keys in `order`.
    pub fn new(dir: &Path, name: &str, order: Order) -> Self {
        Self {
            complete: dir.join(format!("{name}.jsonl")),
            partial: dir.join(format!("{name}.partial.jsonl")),
            order,
        }
    }

    /// Removes the new files of rewrites interrupted before their first
    /// save (named after their processes).
    fn remove_leftovers(&self) {
        let (Some(dir), Some(name)) = (self.complete.parent(), self.complete.file_name().and_then(|name| name.to_str())) else {
            return;
        };
        let prefix = format!("{name}.tmp-");
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            if entry.file_name().to_str().is_some_and(|file| file.starts_with(&prefix)) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// True when the table has ever been written.
    pub fn exists(&self) -> bool {
        self.complete.exists() || self.partial.exists()
    }

    /// Reads the table in key order.
    pub fn reader<V: DeserializeOwned>(&self) -> Reader<V> {
        Reader {
            source: Source::open(self),
            ahead: None,
            started: false,
        }
    }

    /// Rewrites the table: the entries put into the writer replace those
    /// of the same keys, the others are kept.
    pub fn writer(&self) -> Writer {
        Writer {
            table: self.clone(),
            old: None,
            ahead: None,
            out: None,
            last: None,
        }
    }

    /// Replaces the table with `entries`, which must come in key order
    /// (one out of order is left out).
    pub fn write_all<K: AsRef<str>, V: Serialize>(&self, entries: impl IntoIterator<Item = (K, V)>) -> anyhow::Result<()> {
        let mut writer = Writer {
            table: self.clone(),
            // Nothing of the old table is kept.
            old: Some(Source::empty(self)),
            ahead: None,
            out: None,
            last: None,
        };
        writer.open()?;
        for (key, value) in entries {
            writer.put(key.as_ref(), &value)?;
        }
        writer.finish()
    }
}

/// Where an entry's line is, to read it again (see [`Lines`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    /// In the saved part of an interrupted rewrite, else in the table.
    partial: bool,
    offset: u64,
    len: usize,
}

/// The files a reader reads, to read an entry again by its position (the
/// files as they were opened, whatever was renamed over them since).
#[derive(Clone, Default)]
pub struct Lines {
    partial: Option<Arc<File>>,
    complete: Option<Arc<File>>,
}

impl Lines {
    /// The value of the entry at `at`.
    pub fn read<V: DeserializeOwned>(&self, at: Position) -> anyhow::Result<V> {
        use std::os::unix::fs::FileExt as _;
        let file = if at.partial { &self.partial } else { &self.complete };
        let file = file.as_ref().context("a table entry's file is not open")?;
        let mut line = vec![0; at.len];
        file.read_exact_at(&mut line, at.offset).context("cannot read a table entry again")?;
        let (_, value): (IgnoredAny, V) = sonic_rs::from_slice(&line).context("a table entry changed since it was read")?;
        Ok(value)
    }
}

/// The lines of a table as they are on disk: the saved part of an
/// interrupted rewrite, then the complete table's entries past it.
struct Source {
    order: Order,
    lines: Lines,
    partial: Option<BufReader<File>>,
    complete: Option<BufReader<File>>,
    /// Bytes read so far from each.
    read: [u64; 2],
    /// The last key given (a line whose key does not come after it is left
    /// out: the table's order is what lets readers walk it once).
    last: Option<String>,
    line: Vec<u8>,
}

impl Source {
    fn open(table: &Table) -> Self {
        let open = |path: &Path| File::open(path).ok().map(Arc::new);
        let lines = Lines {
            partial: open(&table.partial),
            complete: open(&table.complete),
        };
        let reader = |file: &Option<Arc<File>>| {
            let file = file.as_ref()?.try_clone().ok()?;
            Some(BufReader::with_capacity(64 * 1024, file))
        };
        Self {
            order: table.order,
            partial: reader(&lines.partial),
            complete: reader(&lines.complete),
            lines,
            read: [0; 2],
            last: None,
            line: Vec::new(),
        }
    }

    fn empty(table: &Table) -> Self {
        Self {
            order: table.order,
            lines: Lines::default(),
            partial: None,
            complete: None,
            read: [0; 2],
            last: None,
            line: Vec::new(),
        }
    }

    /// The next entry, as `T`, as its line and where that is; `None` at
    /// the end.
    fn next<T: DeserializeOwned>(&mut self) -> Option<(String, T, Vec<u8>, Position)> {
        while let Some(reader) = self.partial.as_mut() {
            self.line.clear();
            let parsed = match reader.read_until(b'\n', &mut self.line) {
                Ok(read) if read > 0 && self.line.ends_with(b"\n") => sonic_rs::from_slice::<(String, T)>(&self.line).ok(),
                _ => None,
            };
            let at = Position {
                partial: true,
                offset: self.read[0],
                len: self.line.len(),
            };
            self.read[0] += self.line.len() as u64;
            match parsed {
                Some((key, value)) if self.comes_next(&key) => {
                    self.last = Some(key.clone());
                    return Some((key, value, std::mem::take(&mut self.line), at));
                }
                // The saved part ends at its last whole line: what an
                // interrupted write left after it is not trusted.
                _ => self.partial = None,
            }
        }
        while let Some(reader) = self.complete.as_mut() {
            self.line.clear();
            match reader.read_until(b'\n', &mut self.line) {
                Ok(0) | Err(_) => self.complete = None,
                Ok(read) => {
                    let at = Position {
                        partial: false,
                        offset: self.read[1],
                        len: read,
                    };
                    self.read[1] += read as u64;
                    // An unreadable line or one out of order is skipped:
                    // its session is read again as new.
                    if let Ok((key, value)) = sonic_rs::from_slice::<(String, T)>(&self.line) {
                        if self.comes_next(&key) {
                            self.last = Some(key.clone());
                            if !self.line.ends_with(b"\n") {
                                self.line.push(b'\n');
                            }
                            return Some((key, value, std::mem::take(&mut self.line), at));
                        }
                    }
                }
            }
        }
        None
    }

    fn comes_next(&self, key: &str) -> bool {
        self.last.as_deref().is_none_or(|last| (self.order)(last, key) == Ordering::Less)
    }
}

/// A table read in key order.
pub struct Reader<V> {
    source: Source,
    ahead: Option<(String, V, Position)>,
    started: bool,
}

impl<V: DeserializeOwned> Reader<V> {
    /// The entry of `key`; keys must be asked for in the table's order
    /// (the entries before `key` are passed over for good).
    pub fn get(&mut self, key: &str) -> Option<V> {
        self.get_placed(key).map(|(value, _)| value)
    }

    /// [`Reader::get`], with where the entry is (to read it again through
    /// [`Reader::lines`]).
    pub fn get_placed(&mut self, key: &str) -> Option<(V, Position)> {
        self.get_noting(key, |_| Ok(())).ok().flatten()
    }

    /// [`Reader::get_placed`], calling `passed` with the key of each entry
    /// passed over (in order) before `key`'s; its error ends the reading.
    pub fn get_noting(&mut self, key: &str, mut passed: impl FnMut(&str) -> anyhow::Result<()>) -> anyhow::Result<Option<(V, Position)>> {
        if !self.started {
            self.started = true;
            self.advance();
        }
        loop {
            let Some((ahead, _, _)) = self.ahead.as_ref() else {
                return Ok(None);
            };
            match (self.source.order)(ahead, key) {
                Ordering::Less => {
                    passed(ahead)?;
                    self.advance();
                }
                Ordering::Equal => {
                    let found = self.ahead.take().map(|(_, value, at)| (value, at));
                    self.advance();
                    return Ok(found);
                }
                Ordering::Greater => return Ok(None),
            }
        }
    }

    /// Calls `left` with the key of each entry after the last one asked
    /// for, in order, passing them over.
    pub fn rest(&mut self, mut left: impl FnMut(&str) -> anyhow::Result<()>) -> anyhow::Result<()> {
        while self.has_more() {
            if let Some((key, _, _)) = &self.ahead {
                left(key)?;
            }
            self.advance();
        }
        Ok(())
    }

    /// The files this reader reads, to read an entry again by its place.
    pub fn lines(&self) -> Lines {
        self.source.lines.clone()
    }

    /// True when entries are left after the last one asked for.
    pub fn has_more(&mut self) -> bool {
        if !self.started {
            self.started = true;
            self.advance();
        }
        self.ahead.is_some()
    }

    fn advance(&mut self) {
        self.ahead = self.source.next::<V>().map(|(key, value, _, at)| (key, value, at));
    }
}

/// A table being rewritten. Nothing is written until the first entry is
/// put: a table nothing changed in is left as it is.
pub struct Writer {
    table: Table,
    /// The old table, once opened (at the first put).
    old: Option<Source>,
    /// The old table's next entry: its key and line.
    ahead: Option<(String, Vec<u8>)>,
    /// The new table and its file's name.
    out: Option<(BufWriter<File>, PathBuf)>,
    last: Option<String>,
}

impl Writer {
    /// Puts `key`'s entry in place of the old one; keys must be put in the
    /// table's order (a key put again, or out of order, is left out: the
    /// first entry of a key stays).
    pub fn put<V: Serialize + ?Sized>(&mut self, key: &str, value: &V) -> anyhow::Result<()> {
        self.open()?;
        if self.last.as_deref().is_some_and(|last| (self.table.order)(last, key) != Ordering::Less) {
            return Ok(());
        }
        // The old entries before `key` are kept; `key`'s own is replaced.
        self.pass_to(key)?;
        let (out, path) = self.out.as_mut().context("the table is not open")?;
        let write = |out: &mut BufWriter<File>| -> anyhow::Result<()> {
            serde_json::to_writer(&mut *out, &(key, value))?;
            out.write_all(b"\n")?;
            Ok(())
        };
        write(out).with_context(|| format!("cannot write {}", path.display()))?;
        self.last = Some(key.to_owned());
        Ok(())
    }

    /// Leaves `key`'s entry out of the new table (the old entries before
    /// it are kept); keys are removed and put in the table's order.
    pub fn remove(&mut self, key: &str) -> anyhow::Result<()> {
        self.open()?;
        if self.last.as_deref().is_some_and(|last| (self.table.order)(last, key) != Ordering::Less) {
            return Ok(());
        }
        self.pass_to(key)?;
        self.last = Some(key.to_owned());
        Ok(())
    }

    /// Keeps the old entries before `key` and drops `key`'s own.
    fn pass_to(&mut self, key: &str) -> anyhow::Result<()> {
        while let Some((ahead, _)) = &self.ahead {
            match (self.table.order)(ahead, key) {
                Ordering::Greater => break,
                ordering => {
                    if ordering == Ordering::Less {
                        self.keep_ahead()?;
                    }
                    self.advance();
                }
            }
        }
        Ok(())
    }

    /// Saves what was put so far (as the table's saved part, which readers
    /// take before the old table); nothing when nothing was put.
    pub fn checkpoint(&mut self) -> anyhow::Result<()> {
        let Some((out, path)) = self.out.as_mut() else {
            return Ok(());
        };
        out.flush().with_context(|| format!("cannot write {}", path.display()))?;
        if *path != self.table.partial {
            // Renamed over the saved part of an interrupted rewrite, which
            // this writer has read from its start already (it stays open).
            fs::rename(&*path, &self.table.partial).with_context(|| format!("cannot write {}", self.table.partial.display()))?;
            *path = self.table.partial.clone();
        }
        Ok(())
    }

    /// Ends the rewrite: the old entries left are kept and the new table
    /// replaces the old. An interrupted rewrite's saved part, if any, is
    /// merged in even when nothing was put.
    pub fn finish(mut self) -> anyhow::Result<()> {
        if self.out.is_none() {
            if !self.table.partial.exists() {
                return Ok(());
            }
            self.open()?;
        }
        while self.ahead.is_some() {
            self.keep_ahead()?;
            self.advance();
        }
        // Through the saved part's name: at every moment the two files
        // read together hold every entry.
        self.checkpoint()?;
        self.out = None;
        fs::rename(&self.table.partial, &self.table.complete).with_context(|| format!("cannot write {}", self.table.complete.display()))?;
        self.table.remove_leftovers();
        Ok(())
    }

    /// Opens the old table and the new file, once.
    fn open(&mut self) -> anyhow::Result<()> {
        if self.out.is_some() {
            return Ok(());
        }
        if self.old.is_none() {
            self.old = Some(Source::open(&self.table));
        }
        let dir = self.table.complete.parent().context("a table has a folder")?;
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = self.table.complete.with_extension(format!("jsonl.tmp-{}", std::process::id()));
        let file = File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
        self.out = Some((BufWriter::with_capacity(256 * 1024, file), path));
        self.advance();
        Ok(())
    }

    fn advance(&mut self) {
        self.ahead = self
            .old
            .as_mut()
            .and_then(|old| old.next::<IgnoredAny>())
            .map(|(key, _, line, _)| (key, line));
    }

    /// Writes the old table's next entry as it was.
    fn keep_ahead(&mut self) -> anyhow::Result<()> {
        let (Some((key, line)), Some((out, path))) = (&self.ahead, self.out.as_mut()) else {
            return Ok(());
        };
        out.write_all(line).with_context(|| format!("cannot write {}", path.display()))?;
        self.last = Some(key.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(table: &Table, keys: &[&str]) -> Vec<(String, Option<u32>)> {
        let mut reader = table.reader::<u32>();
        keys.iter().map(|key| ((*key).to_owned(), reader.get(key))).collect()
    }

    fn read_all(table: &Table) -> Vec<(String, u32)> {
        let mut source = Source::open(table);
        std::iter::from_fn(|| source.next::<u32>().map(|(key, value, _, _)| (key, value))).collect()
    }

    /// A table of `entries` in a folder of its own.
    fn table_of(entries: &[(&str, u32)]) -> (tempfile::TempDir, Table) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let table = Table::new(dir.path(), "t", by_bytes);
        table.write_all(entries.iter().map(|(key, value)| (*key, value))).unwrap_or_else(|e| panic!("{e}"));
        (dir, table)
    }

    fn owned(pairs: &[(&str, u32)]) -> Vec<(String, u32)> {
        pairs.iter().map(|(key, value)| ((*key).to_owned(), *value)).collect()
    }

    #[test]
    fn a_rewrite_keeps_the_entries_not_put_and_replaces_those_put() {
        let (_dir, table) = table_of(&[("a", 1u32), ("c", 3), ("e", 5)]);
        let mut writer = table.writer();
        writer.put("b", &20u32).unwrap_or_else(|e| panic!("{e}"));
        writer.put("c", &30u32).unwrap_or_else(|e| panic!("{e}"));
        writer.put("f", &60u32).unwrap_or_else(|e| panic!("{e}"));
        writer.finish().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_all(&table), owned(&[("a", 1), ("b", 20), ("c", 30), ("e", 5), ("f", 60)]));
        assert!(!table.partial.exists());
    }

    #[test]
    fn entries_removed_are_left_out_and_a_reader_names_those_it_passes_over() {
        let (_dir, table) = table_of(&[("a", 1u32), ("b", 2), ("c", 3), ("e", 5), ("g", 7)]);
        let mut reader = table.reader::<u32>();
        let mut writer = table.writer();
        let mut passed = Vec::new();
        for key in ["c", "d", "f"] {
            let found = reader
                .get_noting(key, |gone| {
                    passed.push(gone.to_owned());
                    writer.remove(gone)
                })
                .unwrap_or_else(|e| panic!("{e}"));
            if key == "d" {
                writer.put(key, &40u32).unwrap_or_else(|e| panic!("{e}"));
            }
            assert_eq!(found.map(|(value, _)| value), (key == "c").then_some(3));
        }
        reader
            .rest(|gone| {
                passed.push(gone.to_owned());
                writer.remove(gone)
            })
            .unwrap_or_else(|e| panic!("{e}"));
        writer.finish().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(passed, vec!["a", "b", "e", "g"]);
        assert_eq!(read_all(&table), owned(&[("c", 3), ("d", 40)]));
    }

    #[test]
    fn a_reader_gives_the_entries_of_the_keys_asked_for_in_order() {
        let (_dir, table) = table_of(&[("a", 1u32), ("c", 3), ("e", 5)]);
        assert_eq!(
            entries(&table, &["b", "c", "d", "e", "f"]),
            vec![("b".into(), None), ("c".into(), Some(3)), ("d".into(), None), ("e".into(), Some(5)), ("f".into(), None)]
        );
        let mut reader = table.reader::<u32>();
        assert_eq!(reader.get("a"), Some(1));
        assert!(reader.has_more());
        let mut passed = Vec::new();
        let found = reader.get_noting("e", |key| {
            passed.push(key.to_owned());
            Ok(())
        });
        assert_eq!(found.ok().flatten().map(|(value, _)| value), Some(5));
        assert_eq!(passed, vec!["c"]);
        assert!(!reader.has_more());
    }

    #[test]
    fn an_entry_is_read_again_by_its_place_in_either_file() {
        let (_dir, table) = table_of(&[("a", 1u32), ("c", 3), ("e", 5)]);
        let mut writer = table.writer();
        writer.put("b", &20u32).unwrap_or_else(|e| panic!("{e}"));
        writer.checkpoint().unwrap_or_else(|e| panic!("{e}"));
        drop(writer);
        let mut reader = table.reader::<u32>();
        let placed: Vec<(u32, Position)> = ["a", "b", "c", "e"].iter().filter_map(|key| reader.get_placed(key)).collect();
        assert_eq!(placed.iter().map(|(value, _)| *value).collect::<Vec<_>>(), vec![1, 20, 3, 5]);
        assert_eq!(placed.iter().map(|(_, at)| at.partial).collect::<Vec<_>>(), vec![true, true, false, false]);
        // Read again after the table was rewritten under the reader.
        table.writer().finish().unwrap_or_else(|e| panic!("{e}"));
        let lines = reader.lines();
        let again: Vec<u32> = placed.iter().map(|(_, at)| lines.read(*at).unwrap_or_else(|e| panic!("{e}"))).collect();
        assert_eq!(again, vec![1, 20, 3, 5]);
    }

    #[test]
    fn a_table_nothing_was_put_in_is_not_written() {
        let (dir, table) = table_of(&[("a", 1u32)]);
        let inode = |path: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(path).unwrap_or_else(|e| panic!("{e}")));
        let before = inode(&table.complete);
        table.writer().finish().unwrap_or_else(|e| panic!("{e}"));
        // The same file, not one renamed over it.
        assert_eq!(inode(&table.complete), before);
        assert_eq!(fs::read_dir(dir.path()).unwrap_or_else(|e| panic!("{e}")).count(), 1);
    }

    #[test]
    fn an_interrupted_rewrite_is_read_as_its_saved_part_then_the_old_entries_after_it() {
        let (dir, table) = table_of(&[("a", 1u32), ("c", 3), ("e", 5)]);
        let mut writer = table.writer();
        writer.put("c", &30u32).unwrap_or_else(|e| panic!("{e}"));
        writer.checkpoint().unwrap_or_else(|e| panic!("{e}"));
        // Put after the last save: lost with the process.
        writer.put("e", &50u32).unwrap_or_else(|e| panic!("{e}"));
        std::mem::forget(writer);
        // Interrupted before its first save: its new file is left behind.
        fs::write(dir.path().join("t.jsonl.tmp-1"), "[\"a\",9]\n").unwrap_or_else(|e| panic!("{e}"));
        // A line torn by the interruption is not trusted.
        let mut saved = fs::read(&table.partial).unwrap_or_else(|e| panic!("{e}"));
        saved.extend_from_slice(b"[\"d\",4");
        fs::write(&table.partial, saved).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_all(&table), owned(&[("a", 1), ("c", 30), ("e", 5)]));
        // The next rewrite finishes the interrupted one, even with nothing put.
        table.writer().finish().unwrap_or_else(|e| panic!("{e}"));
        assert!(!table.partial.exists());
        assert_eq!(read_all(&table), owned(&[("a", 1), ("c", 30), ("e", 5)]));
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap_or_else(|e| panic!("{e}")).map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("t.jsonl")]);
    }

    #[test]
    fn a_second_interrupted_rewrite_keeps_what_the_first_saved() {
        let (dir, table) = table_of(&[("a", 1u32), ("c", 3), ("e", 5), ("g", 7)]);
        let mut first = table.writer();
        first.put("c", &30u32).unwrap_or_else(|e| panic!("{e}"));
        first.checkpoint().unwrap_or_else(|e| panic!("{e}"));
        drop(first);
        let mut second = table.writer();
        second.put("e", &50u32).unwrap_or_else(|e| panic!("{e}"));
        second.checkpoint().unwrap_or_else(|e| panic!("{e}"));
        drop(second);
        assert_eq!(read_all(&table), owned(&[("a", 1), ("c", 30), ("e", 50), ("g", 7)]));
        let mut third = table.writer();
        third.put("g", &70u32).unwrap_or_else(|e| panic!("{e}"));
        third.finish().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_all(&table), owned(&[("a", 1), ("c", 30), ("e", 50), ("g", 70)]));
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap_or_else(|e| panic!("{e}")).map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).file_name()).collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("t.jsonl")]);
    }

    #[test]
    fn lines_out_of_order_or_unreadable_are_left_out_and_keys_are_put_once() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let table = Table::new(dir.path(), "t", by_bytes);
        fs::write(&table.complete, "[\"b\",2]\n[\"a\",1]\nnot json\n[\"c\",3]").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_all(&table), owned(&[("b", 2), ("c", 3)]));
        let mut writer = table.writer();
        writer.put("c", &30u32).unwrap_or_else(|e| panic!("{e}"));
        writer.put("c", &31u32).unwrap_or_else(|e| panic!("{e}"));
        writer.put("a", &10u32).unwrap_or_else(|e| panic!("{e}"));
        writer.finish().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_all(&table), owned(&[("b", 2), ("c", 30)]));
    }

    #[test]
    fn a_table_can_be_ordered_otherwise() {
        fn reversed(a: &str, b: &str) -> Ordering {
            b.cmp(a)
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let table = Table::new(dir.path(), "t", reversed);
        table.write_all([("c", &3u32), ("a", &1)]).unwrap_or_else(|e| panic!("{e}"));
        let mut writer = table.writer();
        writer.put("b", &2u32).unwrap_or_else(|e| panic!("{e}"));
        writer.finish().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_all(&table), owned(&[("c", 3), ("b", 2), ("a", 1)]));
    }
}
