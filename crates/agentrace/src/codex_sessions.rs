//! A Codex home's rollouts grouped into sessions (a child rollout with its
//! root's, parents before children). Every rollout of a history is listed
//! and grouped before any session is read (a child joins its root wherever
//! its rollout lies), so what each costs to keep is what `import` and
//! `usage` grow by: rollouts are kept packed, and past a budget
//! ([`BUDGET`], some 12,000 rollouts or 2 GB of history) they are set aside
//! in a temporary file and grouped by an external sort
//! ([`crate::external_sort`]), keeping in memory only each rollout's thread
//! and parent as keys of about 16 bytes. Heads come in, sessions go out;
//! the only I/O is those temporary files.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufReader, BufWriter, Seek as _};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

use agentrace_core::model::Timestamp;
use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::external_sort::{self, read_record, temporary, write_record, ExternalSort, Sorted};
use crate::import::{FileStamp, RolloutHead};

/// How many bytes of packed rollouts are held before they are set aside
/// (some 12,000 rollouts, 2 GB of history): below it a Codex home is
/// grouped in memory, as fast as it can be; above it memory stays at
/// about this much.
const BUDGET: usize = 4 << 20;

/// Where a path or an id is in its [`Texts`] buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    len: usize,
}

/// One rollout's head, its path and ids kept in the shared buffer.
#[derive(Debug, Clone, Copy)]
struct Packed {
    path: Span,
    thread: Span,
    /// Its session's root thread (set by the grouping).
    root: Span,
    parent: Option<Span>,
    depth: u64,
    started: Option<Timestamp>,
    stamp: Option<FileStamp>,
}

/// What a head holds besides its file and ids.
#[derive(Debug, Clone, Copy)]
pub struct Rest {
    /// Spawn depth.
    pub depth: u64,
    /// When the session started.
    pub started: Option<Timestamp>,
    /// The file's stamp.
    pub stamp: Option<FileStamp>,
}

/// The paths and ids of packed rollouts, one after another: ids in a
/// string of their own, so reading one back needs no UTF-8 check (the
/// grouping compares ids many times).
#[derive(Debug, Default)]
struct Texts {
    paths: Vec<u8>,
    ids: String,
}

impl Texts {
    fn keep_path(&mut self, path: &Path) -> Span {
        let bytes = path.as_os_str().as_bytes();
        let start = self.paths.len();
        self.paths.extend_from_slice(bytes);
        Span { start, len: bytes.len() }
    }

    fn keep_id(&mut self, id: &str) -> Span {
        let start = self.ids.len();
        self.ids.push_str(id);
        Span { start, len: id.len() }
    }

    fn path(&self, span: Span) -> &Path {
        Path::new(OsStr::from_bytes(self.paths.get(span.start..span.start + span.len).unwrap_or_default()))
    }

    fn id(&self, span: Span) -> &str {
        self.ids.get(span.start..span.start + span.len).unwrap_or_default()
    }

    fn head(&self, packed: &Packed) -> RolloutHead {
        RolloutHead {
            path: self.path(packed.path).to_path_buf(),
            thread: self.id(packed.thread).to_owned(),
            parent: packed.parent.map(|parent| self.id(parent).to_owned()),
            depth: packed.depth,
            started: packed.started,
            stamp: packed.stamp,
        }
    }
}

/// Rollout heads as they are found (in any order), then grouped.
#[derive(Debug)]
pub struct Packer {
    texts: Texts,
    rollouts: Vec<Packed>,
    budget: usize,
    /// Where spilled files go (the system's temporary folder when `None`).
    spill_dir: Option<PathBuf>,
    /// The rollouts set aside, once they outgrew the budget.
    spill: Option<Spill>,
}

impl Default for Packer {
    fn default() -> Self {
        Self::with_budget(BUDGET, None)
    }
}

impl Packer {
    /// A packer that sets rollouts aside in `dir` (the system's temporary
    /// folder when `None`) once they outgrow the budget.
    pub fn spilling_in(dir: Option<PathBuf>) -> Self {
        Self::with_budget(BUDGET, dir)
    }

    fn with_budget(budget: usize, spill_dir: Option<PathBuf>) -> Self {
        // Room for the whole budget in each from the start: memory is
        // taken only as it is written to, while growing by doubling left
        // each old buffer to the allocator (several MB at the peak).
        Self {
            texts: Texts {
                paths: Vec::with_capacity(budget),
                ids: String::with_capacity(budget),
            },
            rollouts: Vec::with_capacity(budget / std::mem::size_of::<Packed>()),
            budget,
            spill_dir,
            spill: None,
        }
    }

    /// Adds a rollout's head: its file, thread and parent, and `rest`
    /// (whose own path, thread and parent are not read).
    pub fn push(&mut self, path: &Path, thread: &str, parent: Option<&str>, rest: &Rest) -> anyhow::Result<()> {
        if let Some(spill) = self.spill.as_mut() {
            return spill.push(path, thread, parent, rest);
        }
        let path = self.texts.keep_path(path);
        let thread = self.texts.keep_id(thread);
        let parent = parent.map(|parent| self.texts.keep_id(parent));
        self.rollouts.push(Packed {
            path,
            thread,
            root: thread,
            parent,
            depth: rest.depth,
            started: rest.started,
            stamp: rest.stamp,
        });
        let held = self.texts.paths.len() + self.texts.ids.len() + self.rollouts.len() * std::mem::size_of::<Packed>();
        if held > self.budget {
            self.set_aside()?;
        }
        Ok(())
    }

    /// Adds a rollout's head.
    pub fn push_head(&mut self, head: &RolloutHead) -> anyhow::Result<()> {
        let rest = Rest {
            depth: head.depth,
            started: head.started,
            stamp: head.stamp,
        };
        self.push(&head.path, &head.thread, head.parent.as_deref(), &rest)
    }

    /// Moves the packed rollouts to a spill file, where every rollout
    /// pushed from now on goes.
    fn set_aside(&mut self) -> anyhow::Result<()> {
        let mut spill = Spill::new(self.spill_dir.as_deref())?;
        let texts = std::mem::take(&mut self.texts);
        for packed in std::mem::take(&mut self.rollouts) {
            let rest = Rest {
                depth: packed.depth,
                started: packed.started,
                stamp: packed.stamp,
            };
            let parent = packed.parent.map(|parent| texts.id(parent));
            spill.push(texts.path(packed.path), texts.id(packed.thread), parent, &rest)?;
        }
        self.spill = Some(spill);
        Ok(())
    }

    /// Groups the rollouts into sessions: each under its top-most known
    /// ancestor (a parent not listed ends the climb), the sessions in the
    /// order of their roots' ids, each session's rollouts by depth, then
    /// path. Of two rollouts of one thread, the last pushed stands for it.
    pub fn group(self) -> anyhow::Result<CodexSessions> {
        match self.spill {
            Some(spill) => spill.group(self.budget, self.spill_dir.as_deref()),
            None => Ok(group_packed(self.texts, self.rollouts)),
        }
    }
}

/// [`Packer::group`] of rollouts all held packed.
fn group_packed(texts: Texts, mut rollouts: Vec<Packed>) -> CodexSessions {
    let text = |span: Span| texts.id(span);
    // By index, not by copies of the ids: this runs over every rollout.
    let by_thread: HashMap<&str, usize> = rollouts
        .iter()
        .enumerate()
        .map(|(at, packed)| (text(packed.thread), at))
        .collect();
    let tops: Vec<usize> = (0..rollouts.len())
        .map(|at| climb(at, |top| rollouts[top].parent.and_then(|parent| by_thread.get(text(parent)).copied())))
        .collect();
    drop(by_thread);
    for (at, &top) in tops.iter().enumerate() {
        let root = rollouts[top].thread;
        rollouts[at].root = root;
    }
    drop(tops);
    // Sorted in place, without scratch (a copy in the new order doubled
    // the peak); no two rollouts share a path, so order is total.
    let path = |packed: &Packed| texts.path(packed.path);
    rollouts.sort_unstable_by(|a, b| (text(a.root), a.depth, path(a)).cmp(&(text(b.root), b.depth, path(b))));
    let mut sessions: Vec<(Span, usize)> = Vec::new();
    for (end, pair) in rollouts.windows(2).enumerate() {
        if text(pair[0].root) != text(pair[1].root) {
            sessions.push((pair[0].root, end + 1));
        }
    }
    if let Some(last) = rollouts.last() {
        sessions.push((last.root, rollouts.len()));
    }
    CodexSessions {
        len: sessions.len(),
        held: Held::Packed { texts, rollouts, sessions, next: 0 },
    }
}

/// The top-most ancestor of rollout `at`, given each rollout's listed
/// parent.
fn climb(at: usize, parent: impl Fn(usize) -> Option<usize>) -> usize {
    let mut top = at;
    // A bound keeps a cycle in hand-edited files finite.
    for _ in 0..=1000 {
        match parent(top) {
            Some(next) => top = next,
            None => break,
        }
    }
    top
}

/// A thread's id as a key of 16 bytes: a UUID (as Codex writes them, in
/// lowercase) is its own bytes, which sort as its text does; any other id
/// is numbered in [`Ids`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Key {
    Uuid([u8; 16]),
    Other(u32),
}

/// The ids that are not UUIDs, numbered.
#[derive(Debug, Default)]
struct Ids {
    numbers: HashMap<Box<str>, u32>,
    texts: Vec<Box<str>>,
}

impl Ids {
    fn key(&mut self, id: &str) -> Key {
        if let Ok(uuid) = uuid::Uuid::try_parse(id) {
            let mut text = [0; uuid::fmt::Hyphenated::LENGTH];
            if uuid.hyphenated().encode_lower(&mut text) == id {
                return Key::Uuid(uuid.into_bytes());
            }
        }
        if let Some(&number) = self.numbers.get(id) {
            return Key::Other(number);
        }
        let number = u32::try_from(self.texts.len()).unwrap_or(u32::MAX);
        self.texts.push(id.into());
        self.numbers.insert(id.into(), number);
        Key::Other(number)
    }

    fn text(&self, key: Key) -> String {
        match key {
            Key::Uuid(bytes) => uuid::Uuid::from_bytes(bytes).hyphenated().to_string(),
            Key::Other(number) => self.texts.get(number as usize).map(|text| text.to_string()).unwrap_or_default(),
        }
    }
}

/// A rollout's head as written to a spill file.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    path: Vec<u8>,
    thread: String,
    parent: Option<String>,
    depth: u64,
    started: Option<i64>,
    stamp: Option<FileStamp>,
}

impl Record {
    fn head(self) -> RolloutHead {
        RolloutHead {
            path: PathBuf::from(std::ffi::OsString::from_vec(self.path)),
            thread: self.thread,
            parent: self.parent,
            depth: self.depth,
            started: self.started.map(Timestamp::from_millis),
            stamp: self.stamp,
        }
    }

    /// About what it holds in memory.
    fn size(&self) -> usize {
        std::mem::size_of::<Self>() + self.path.len() + self.thread.len() + self.parent.as_ref().map_or(0, String::len)
    }
}

/// Rollouts set aside in push order, with what the grouping needs of each
/// in memory: its thread and parent.
#[derive(Debug)]
struct Spill {
    records: BufWriter<File>,
    threads: Vec<Key>,
    parents: Vec<Option<Key>>,
    ids: Ids,
}

impl Spill {
    fn new(dir: Option<&Path>) -> anyhow::Result<Self> {
        Ok(Self {
            records: BufWriter::with_capacity(64 * 1024, temporary(dir)?),
            threads: Vec::new(),
            parents: Vec::new(),
            ids: Ids::default(),
        })
    }

    fn push(&mut self, path: &Path, thread: &str, parent: Option<&str>, rest: &Rest) -> anyhow::Result<()> {
        let thread_key = self.ids.key(thread);
        let parent_key = parent.map(|parent| self.ids.key(parent));
        self.threads.push(thread_key);
        self.parents.push(parent_key);
        let record = Record {
            path: path.as_os_str().as_bytes().to_vec(),
            thread: thread.to_owned(),
            parent: parent.map(str::to_owned),
            depth: rest.depth,
            started: rest.started.map(|started| started.0),
            stamp: rest.stamp,
        };
        write_record(&mut self.records, &record)
    }

    /// Each rollout's top-most listed ancestor (by push index), as
    /// [`group_packed`] finds it, in a few bytes per rollout: the rollouts
    /// by thread, each parent found there (the last pushed of a thread
    /// stands for it), then the climbs.
    fn tops(threads: &[Key], parents: Vec<Option<Key>>) -> (Vec<u32>, Vec<u32>) {
        let mut by_thread: Vec<u32> = (0..threads.len()).filter_map(|at| u32::try_from(at).ok()).collect();
        by_thread.sort_unstable_by_key(|&at| (threads[at as usize], at));
        let parent_at: Vec<u32> = parents
            .into_iter()
            .map(|parent| {
                parent
                    .and_then(|parent| {
                        let end = by_thread.partition_point(|&at| threads[at as usize] <= parent);
                        end.checked_sub(1).map(|last| by_thread[last]).filter(|&at| threads[at as usize] == parent)
                    })
                    .unwrap_or(u32::MAX)
            })
            .collect();
        let tops = (0..parent_at.len())
            .map(|at| {
                let top = climb(at, |top| parent_at.get(top).filter(|&&parent| parent != u32::MAX).map(|&parent| parent as usize));
                u32::try_from(top).unwrap_or(u32::MAX)
            })
            .collect();
        (tops, by_thread)
    }

    /// The grouping of [`Packer::group`]: each rollout's root from the
    /// threads and parents, then the rollouts read back and sorted by root
    /// in runs of at most `budget` bytes, merged as the sessions are asked
    /// for.
    fn group(self, budget: usize, dir: Option<&Path>) -> anyhow::Result<CodexSessions> {
        let Spill { records, threads, parents, ids } = self;
        let (tops, by_thread) = Self::tops(&threads, parents);
        // Sessions: the distinct threads of the tops.
        let mut is_top = vec![false; threads.len()];
        for &top in &tops {
            if let Some(mark) = is_top.get_mut(top as usize) {
                *mark = true;
            }
        }
        let mut len = 0;
        let mut last: Option<Key> = None;
        for &at in &by_thread {
            let key = threads[at as usize];
            if is_top[at as usize] && last != Some(key) {
                len += 1;
                last = Some(key);
            }
        }
        drop((is_top, by_thread));
        let mut file = records.into_inner().map_err(|error| error.into_error()).context("cannot write a spill file")?;
        file.rewind().context("cannot read a spill file")?;
        let mut input = BufReader::with_capacity(64 * 1024, file);
        let mut buffer = Vec::new();
        let mut sort = ExternalSort::new(budget.min(external_sort::BUDGET), dir.map(Path::to_path_buf), session_order, |(root, record)| root.len() + record.size());
        for top in tops {
            let record: Record = read_record(&mut input, &mut buffer)?.context("a spill file ended early")?;
            let root = threads.get(top as usize).context("a rollout's root is not listed")?;
            sort.push((ids.text(*root), record))?;
        }
        Ok(CodexSessions {
            len,
            held: Held::Merged {
                sorted: sort.sorted()?,
                next: None,
            },
        })
    }
}

/// The order of rollouts in sessions: by root, then depth, then path.
fn session_order(a: &(String, Record), b: &(String, Record)) -> Ordering {
    fn path(record: &Record) -> &Path {
        Path::new(OsStr::from_bytes(&record.path))
    }
    (&a.0, a.1.depth, path(&a.1)).cmp(&(&b.0, b.1.depth, path(&b.1)))
}

/// Where grouped rollouts are.
enum Held {
    /// All in memory: every rollout, each session's together, and each
    /// session's root and where its rollouts end.
    Packed {
        texts: Texts,
        rollouts: Vec<Packed>,
        sessions: Vec<(Span, usize)>,
        next: usize,
    },
    /// Sorted by root (through runs on disk), with the first rollout of
    /// the next session once read.
    Merged {
        sorted: Sorted<(String, Record)>,
        next: Option<(String, Record)>,
    },
}

/// Rollouts grouped into sessions (see [`Packer::group`]), each given in
/// turn: its root's id and its rollouts, parents first.
pub struct CodexSessions {
    len: usize,
    held: Held,
}

impl Default for CodexSessions {
    fn default() -> Self {
        group_packed(Texts::default(), Vec::new())
    }
}

impl CodexSessions {
    /// How many sessions (given or not).
    pub fn len(&self) -> usize {
        self.len
    }

    fn next_session(&mut self) -> anyhow::Result<Option<(String, Vec<RolloutHead>)>> {
        match &mut self.held {
            Held::Packed { texts, rollouts, sessions, next } => {
                let Some(&(root, end)) = sessions.get(*next) else {
                    return Ok(None);
                };
                let start = match *next {
                    0 => 0,
                    at => sessions.get(at - 1).map_or(0, |&(_, end)| end),
                };
                *next += 1;
                let files = rollouts.get(start..end).unwrap_or_default().iter().map(|packed| texts.head(packed)).collect();
                Ok(Some((texts.id(root).to_owned(), files)))
            }
            Held::Merged { sorted, next } => {
                let Some((root, first)) = next.take().map(Ok).or_else(|| sorted.next()).transpose()? else {
                    return Ok(None);
                };
                let mut files = vec![first.head()];
                while let Some((other, record)) = sorted.next().transpose()? {
                    if other != root {
                        *next = Some((other, record));
                        break;
                    }
                    files.push(record.head());
                }
                Ok(Some((root, files)))
            }
        }
    }
}

impl Iterator for CodexSessions {
    type Item = anyhow::Result<(String, Vec<RolloutHead>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_session().transpose()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn rollout(path: &str, thread: &str, parent: Option<&str>, depth: u64) -> RolloutHead {
        RolloutHead {
            path: PathBuf::from(path),
            thread: thread.to_owned(),
            parent: parent.map(str::to_owned),
            depth,
            started: Some(Timestamp::from_millis(depth as i64)),
            stamp: None,
        }
    }

    /// The sessions of `heads` grouped by a packer of `budget` bytes, each
    /// rollout as its `Debug` text.
    fn sessions_within(heads: &[RolloutHead], budget: usize) -> Vec<(String, Vec<String>)> {
        let mut packer = Packer::with_budget(budget, None);
        for head in heads {
            packer.push_head(head).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(packer.spill.is_some(), budget == 0 && !heads.is_empty());
        let sessions = packer.group().unwrap_or_else(|e| panic!("{e}"));
        let len = sessions.len();
        let all: Vec<(String, Vec<String>)> = sessions
            .map(|session| {
                let (root, files) = session.unwrap_or_else(|e| panic!("{e}"));
                (root, files.iter().map(|head| format!("{head:?}")).collect())
            })
            .collect();
        assert_eq!(all.len(), len);
        all
    }

    /// [`sessions_within`] as paths and threads, the same whether the
    /// rollouts were held or set aside.
    fn grouped(heads: &[RolloutHead]) -> Vec<(String, Vec<(String, String)>)> {
        let held = sessions_within(heads, BUDGET);
        assert_eq!(sessions_within(heads, 0), held, "set aside");
        let mut packer = Packer::default();
        for head in heads {
            packer.push_head(head).unwrap_or_else(|e| panic!("{e}"));
        }
        packer
            .group()
            .unwrap_or_else(|e| panic!("{e}"))
            .map(|session| {
                let (root, files) = session.unwrap_or_else(|e| panic!("{e}"));
                let files = files.into_iter().map(|head| (head.path.to_string_lossy().into_owned(), head.thread)).collect();
                (root, files)
            })
            .collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(path, thread)| ((*path).to_owned(), (*thread).to_owned())).collect()
    }

    #[test]
    fn children_join_their_top_most_listed_ancestor_parents_first_sessions_by_root_id() {
        let heads = [
            rollout("d/3", "c2", Some("c1"), 2),
            rollout("a/1", "root-b", None, 0),
            rollout("z/1", "root-a", None, 0),
            rollout("b/2", "c1", Some("root-b"), 1),
            rollout("a/2", "c3", Some("root-b"), 1),
            // Its parent is not listed: a session of its own.
            rollout("e/1", "orphan", Some("gone"), 1),
        ];
        assert_eq!(
            grouped(&heads),
            vec![
                ("orphan".to_owned(), pairs(&[("e/1", "orphan")])),
                ("root-a".to_owned(), pairs(&[("z/1", "root-a")])),
                ("root-b".to_owned(), pairs(&[("a/1", "root-b"), ("a/2", "c3"), ("b/2", "c1"), ("d/3", "c2")])),
            ]
        );
    }

    #[test]
    fn a_head_comes_back_as_it_went_in_held_or_set_aside() {
        let mut head = rollout("sessions/x/rollout-1.jsonl", "t", Some("p"), 3);
        head.started = None;
        head.stamp = Some(FileStamp::of(&fs_metadata()));
        let mut other = rollout("sessions/x-y/rollout-0.jsonl", "0190a6c4-5e7b-7c2e-9d1a-3f4b5c6d7e8f", None, 0);
        other.started = Some(Timestamp::from_millis(-5));
        for budget in [BUDGET, 0] {
            assert_eq!(
                sessions_within(&[other.clone(), head.clone()], budget),
                vec![
                    (other.thread.clone(), vec![format!("{other:?}")]),
                    ("t".to_owned(), vec![format!("{head:?}")]),
                ]
            );
        }
    }

    fn fs_metadata() -> std::fs::Metadata {
        std::fs::metadata(env!("CARGO_MANIFEST_DIR")).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_parent_cycle_ends() {
        let heads = [rollout("a", "x", Some("y"), 1), rollout("b", "y", Some("x"), 1)];
        let sessions = grouped(&heads);
        assert_eq!(sessions.iter().map(|(_, files)| files.len()).sum::<usize>(), 2);
    }

    #[test]
    fn no_rollouts_no_sessions() {
        assert_eq!(Packer::default().group().unwrap_or_else(|e| panic!("{e}")).len(), 0);
        assert_eq!(CodexSessions::default().count(), 0);
    }

    #[test]
    fn ids_that_are_not_lowercase_uuids_are_kept_as_they_are() {
        let mut ids = Ids::default();
        let upper = "0190A6C4-5E7B-7C2E-9D1A-3F4B5C6D7E8F";
        for id in ["0190a6c4-5e7b-7c2e-9d1a-3f4b5c6d7e8f", upper, "0190a6c45e7b7c2e9d1a3f4b5c6d7e8f", "root", ""] {
            let key = ids.key(id);
            assert_eq!(ids.text(key), id);
            assert_eq!(ids.key(id), key);
        }
        assert!(matches!(ids.key(upper), Key::Other(_)));
    }

    /// Threads to draw from: UUIDs (some sharing a prefix) and plain names.
    const THREADS: [&str; 8] = [
        "0190a6c4-5e7b-7c2e-9d1a-3f4b5c6d7e8f",
        "0190a6c4-5e7b-7c2e-9d1a-3f4b5c6d7e80",
        "ffffffff-0000-7000-8000-000000000000",
        "00000000-0000-7000-8000-000000000001",
        "root",
        "0190A6C4-5E7B-7C2E-9D1A-3F4B5C6D7E8F",
        "child-1",
        "zz",
    ];

    proptest! {
        /// Held or set aside in runs of any size, the same sessions in the
        /// same order.
        #[test]
        fn setting_rollouts_aside_groups_them_as_holding_them_does(
            links in proptest::collection::vec((0..THREADS.len(), proptest::option::of(0..THREADS.len()), 0u64..3), 0..24),
            budget in 0usize..2000,
        ) {
            let heads: Vec<RolloutHead> = links
                .iter()
                .enumerate()
                .map(|(at, (thread, parent, depth))| rollout(&format!("s/{}/r-{at}", at % 3), THREADS[*thread], parent.map(|parent| THREADS[parent]), *depth))
                .collect();
            let held = sessions_within(&heads, BUDGET);
            let mut packer = Packer::with_budget(budget, None);
            for head in &heads {
                packer.push_head(head).unwrap_or_else(|e| panic!("{e}"));
            }
            let set_aside: Vec<(String, Vec<String>)> = packer
                .group()
                .unwrap_or_else(|e| panic!("{e}"))
                .map(|session| {
                    let (root, files) = session.unwrap_or_else(|e| panic!("{e}"));
                    (root, files.iter().map(|head| format!("{head:?}")).collect())
                })
                .collect();
            prop_assert_eq!(set_aside, held);
        }
    }
}
