//! A Codex home's rollouts grouped into sessions (a child rollout with its
//! root's, parents before children). Every rollout of a history is listed
//! and grouped before any session is read (a child joins its root wherever
//! its rollout lies), so what each costs to keep is what `import` and
//! `usage` grow by: rollouts are kept packed, and past a budget
//! ([`BUDGET`], some 12,000 rollouts or 2 GB of history) they are set aside
//! in a temporary file and grouped by an external sort
//! ([`crate::external_sort`]): each rollout climbs to its root a step at a
//! time, joined on disk with the listed threads, so nothing is held per
//! rollout. Heads come in, sessions go out; the only I/O is those
//! temporary files.

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

use crate::external_sort::{self, read_record, rewound, temporary, write_record, ExternalSort, Sorted};
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

/// How many parents a rollout's climb to its session's root goes through
/// at most: a bound keeps a cycle in hand-edited files finite (and cheap,
/// as each step of the grouping on disk reads every thread once), far
/// above any spawn depth.
const HOPS: usize = 64;

/// The top-most ancestor of rollout `at`, given each rollout's listed
/// parent.
fn climb(at: usize, parent: impl Fn(usize) -> Option<usize>) -> usize {
    let mut top = at;
    for _ in 0..HOPS {
        match parent(top) {
            Some(next) => top = next,
            None => break,
        }
    }
    top
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

/// Rollouts set aside in push order: nothing of them is held in memory.
#[derive(Debug)]
struct Spill {
    records: BufWriter<File>,
}

/// A rollout's thread and its parent, as the grouping on disk joins them.
#[derive(Debug, Serialize, Deserialize)]
struct Link {
    thread: String,
    parent: Option<String>,
}

/// A rollout on its way to its root: its place in push order, the root
/// found so far, and the next ancestor to look for among the listed
/// threads.
#[derive(Debug, Serialize, Deserialize)]
struct Climb {
    at: u64,
    root: String,
    next: Option<String>,
}

impl Spill {
    fn new(dir: Option<&Path>) -> anyhow::Result<Self> {
        Ok(Self {
            records: BufWriter::with_capacity(64 * 1024, temporary(dir)?),
        })
    }

    fn push(&mut self, path: &Path, thread: &str, parent: Option<&str>, rest: &Rest) -> anyhow::Result<()> {
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

    /// The grouping of [`Packer::group`], as [`group_packed`] climbs but
    /// on disk, a step up for every rollout at a time: the rollouts still
    /// climbing, sorted by the ancestor they look for, are joined with the
    /// listed threads (each the last rollout pushed of its thread, with its
    /// parent), sorted by thread. Then the rollouts are read back with
    /// their roots and sorted into sessions. Every sort holds at most
    /// `budget` bytes; nothing is kept per rollout.
    fn group(self, budget: usize, dir: Option<&Path>) -> anyhow::Result<CodexSessions> {
        let sorter = |budget: usize| budget.min(external_sort::BUDGET);
        let spill_dir = dir.map(Path::to_path_buf);
        // Stable: a thread's rollouts stay in push order, the last standing
        // for it.
        let by_thread: external_sort::Order<Link> = |a, b| a.thread.cmp(&b.thread);
        let by_next: external_sort::Order<Climb> = |a, b| a.next.cmp(&b.next);
        let by_at: external_sort::Order<Climb> = |a, b| a.at.cmp(&b.at);
        let climb_size = |climb: &Climb| 64 + climb.root.len() + climb.next.as_ref().map_or(0, String::len);
        let mut links = ExternalSort::new(sorter(budget), spill_dir.clone(), by_thread, |link: &Link| 64 + link.thread.len() + link.parent.as_ref().map_or(0, String::len));
        let mut climbing = ExternalSort::new(sorter(budget), spill_dir.clone(), by_next, climb_size);
        let mut done = ExternalSort::new(sorter(budget), spill_dir.clone(), by_at, climb_size);
        let mut buffer = Vec::new();
        let mut count: u64 = 0;
        let mut input = BufReader::with_capacity(64 * 1024, rewound(self.records)?);
        while let Some(record) = read_record::<Record>(&mut input, &mut buffer)? {
            links.push(Link { thread: record.thread.clone(), parent: record.parent.clone() })?;
            let climb = Climb { at: count, root: record.thread, next: record.parent };
            if climb.next.is_some() {
                climbing.push(climb)?;
            } else {
                done.push(climb)?;
            }
            count += 1;
        }
        // The listed threads, each once (its last rollout's parent), in a
        // file read once for every step.
        let mut threads = BufWriter::with_capacity(64 * 1024, temporary(dir)?);
        let mut last: Option<Link> = None;
        for link in links.sorted()? {
            let link = link?;
            if let Some(previous) = last.take() {
                if previous.thread != link.thread {
                    write_record(&mut threads, &(previous.thread, previous.parent))?;
                }
            }
            last = Some(link);
        }
        if let Some(previous) = last {
            write_record(&mut threads, &(previous.thread, previous.parent))?;
        }
        let mut threads = rewound(threads)?;
        for _ in 0..HOPS {
            let mut still = ExternalSort::new(sorter(budget), spill_dir.clone(), by_next, climb_size);
            let mut any = false;
            threads.rewind().context("cannot read a spill file")?;
            let mut listed = BufReader::with_capacity(64 * 1024, threads.try_clone().context("cannot read a spill file")?);
            let mut ahead: Option<(String, Option<String>)> = read_record(&mut listed, &mut buffer)?;
            for climb in climbing.sorted()? {
                let mut climb = climb?;
                let Some(next) = climb.next.take() else {
                    done.push(climb)?;
                    continue;
                };
                while ahead.as_ref().is_some_and(|(thread, _)| *thread < next) {
                    ahead = read_record(&mut listed, &mut buffer)?;
                }
                match &ahead {
                    Some((thread, parent)) if *thread == next => {
                        climb.root = next;
                        climb.next = parent.clone();
                        if climb.next.is_some() {
                            any = true;
                            still.push(climb)?;
                        } else {
                            done.push(climb)?;
                        }
                    }
                    // Its ancestor is not listed: the climb ends.
                    _ => done.push(climb)?,
                }
            }
            climbing = still;
            if !any {
                break;
            }
        }
        // Past the bound: where the climb got to.
        for climb in climbing.sorted()? {
            done.push(climb?)?;
        }
        // The rollouts again, each with its root, into sessions; and their
        // roots, to count the sessions.
        let mut file = input.into_inner();
        file.rewind().context("cannot read a spill file")?;
        let mut input = BufReader::with_capacity(64 * 1024, file);
        let mut sessions = ExternalSort::new(sorter(budget), spill_dir.clone(), session_order, |(root, record)| root.len() + record.size());
        let by_text: external_sort::Order<String> = |a, b| a.cmp(b);
        let mut roots = ExternalSort::new(sorter(budget), spill_dir, by_text, |root| 40 + root.len());
        for climb in done.sorted()? {
            let climb = climb?;
            let record: Record = read_record(&mut input, &mut buffer)?.context("a spill file ended early")?;
            roots.push(climb.root.clone())?;
            sessions.push((climb.root, record))?;
        }
        let mut len = 0;
        let mut previous: Option<String> = None;
        for root in roots.sorted()? {
            let root = root?;
            if previous.as_ref() != Some(&root) {
                len += 1;
                previous = Some(root);
            }
        }
        Ok(CodexSessions {
            len,
            held: Held::Merged {
                sorted: sessions.sorted()?,
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
    fn a_chain_deeper_than_the_bound_is_cut_alike_held_or_set_aside() {
        let threads: Vec<String> = (0..HOPS + 10).map(|at| format!("t{at:03}")).collect();
        let heads: Vec<RolloutHead> = threads
            .iter()
            .enumerate()
            .map(|(at, thread)| rollout(&format!("r/{at:03}"), thread, at.checked_sub(1).map(|parent| threads[parent].as_str()), at as u64))
            .collect();
        let sessions = grouped(&heads);
        // The first 65 climb to the chain's start; each of the last 9 stops
        // HOPS steps up, at one of the 9 after the start.
        let roots: Vec<&str> = sessions.iter().map(|(root, _)| root.as_str()).collect();
        let expected: Vec<String> = (0..10).map(|at| format!("t{at:03}")).collect();
        assert_eq!(roots, expected);
        assert_eq!(sessions[0].1.len(), HOPS + 1);
    }

    #[test]
    fn no_rollouts_no_sessions() {
        assert_eq!(Packer::default().group().unwrap_or_else(|e| panic!("{e}")).len(), 0);
        assert_eq!(CodexSessions::default().count(), 0);
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
