//! A Codex home's rollouts grouped into sessions (a child rollout with its
//! root's, parents before children). Every rollout of a history is listed
//! and grouped before any session is read (a child joins its root wherever
//! its rollout lies): rollouts are kept packed (their paths and ids in two
//! shared buffers, a few dozen bytes of fixed fields each), so 50,000
//! rollouts hold about 10 MB. Heads come in, sessions go out
//! ([`codex_sessions`] walks a home and reads its heads through
//! [`crate::sources::rollouts`]). It never feeds a session's lines to a
//! recorder.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use agentrace_core::model::Timestamp;

use crate::sources::rollouts::{rollout_head_or_why, RolloutHead, RolloutWalk};
use crate::sources::stamps::FileStamp;

/// How many bytes of packed rollouts are reserved at first (some 12,000
/// rollouts).
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
}

impl Default for Packer {
    fn default() -> Self {
        // Room for a few thousand rollouts from the start: memory is taken
        // only as it is written to, while growing by doubling left each
        // old buffer to the allocator.
        Self {
            texts: Texts {
                paths: Vec::with_capacity(BUDGET),
                ids: String::with_capacity(BUDGET),
            },
            rollouts: Vec::with_capacity(BUDGET / std::mem::size_of::<Packed>()),
        }
    }
}

impl Packer {
    /// Adds a rollout's head: its file, thread and parent, and `rest`
    /// (whose own path, thread and parent are not read).
    pub fn push(&mut self, path: &Path, thread: &str, parent: Option<&str>, rest: &Rest) -> anyhow::Result<()> {
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

    /// Groups the rollouts into sessions: each under its top-most known
    /// ancestor (a parent not listed ends the climb), the sessions in the
    /// order of their roots' ids, each session's rollouts by depth, then
    /// path. Of two rollouts of one thread, the last pushed stands for it.
    pub fn group(self) -> anyhow::Result<CodexSessions> {
        Ok(group_packed(self.texts, self.rollouts))
    }
}

/// [`Packer::group`] of rollouts all held packed.
fn group_packed(texts: Texts, mut rollouts: Vec<Packed>) -> CodexSessions {
    let text = |span: Span| texts.id(span);
    // By index, not by copies of the ids: this runs over every rollout.
    let by_thread: agentrace_store::FastMap<&str, usize> = rollouts
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
        }
    }
}

impl Iterator for CodexSessions {
    type Item = anyhow::Result<(String, Vec<RolloutHead>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_session().transpose()
    }
}

/// Rollouts grouped into sessions: top-most known ancestor → files,
/// parents before children (see [`Packer::group`]); rollouts are set aside
/// in the system's temporary folder past the packer's budget.
pub fn codex_sessions(codex_home: &Path) -> anyhow::Result<CodexSessions> {
    codex_sessions_said(codex_home).map(|(sessions, _, _)| sessions)
}

/// [`codex_sessions`], with why each rollout left out had no head (it
/// cannot be opened, its whole first line is no `session_meta`), for the
/// caller to say: a root so left out makes its children sessions of their
/// own.
/// Also returns the folders that could not be read, each as `cannot read
/// FOLDER: REASON` (the rollouts in them are left out).
pub fn codex_sessions_said(codex_home: &Path) -> anyhow::Result<(CodexSessions, Vec<String>, Vec<String>)> {
    let mut packer = Packer::default();
    let mut headless = Vec::new();
    let mut walk = RolloutWalk::new(codex_home, false);
    loop {
        let chunk: Vec<PathBuf> = walk.by_ref().take(HEADS_CHUNK).map(|(path, _)| path).collect();
        if chunk.is_empty() {
            break;
        }
        for head in crate::parallel::map(&chunk, |path| Ok(rollout_head_or_why(path)))? {
            match head {
                Ok(Some(head)) => packer.push_head(&head)?,
                Ok(None) => {}
                Err(why) => headless.push(why),
            }
        }
    }
    Ok((packer.group()?, headless, walk.take_unreadable()))
}

/// How many rollout heads are read together on every core (each is a
/// first line of tens of KB to read and check); the heads of all
/// rollouts are never held unpacked at once.
pub(crate) const HEADS_CHUNK: usize = 1024;

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

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

    /// The sessions of `heads` grouped, each rollout as its `Debug` text.
    fn sessions_of(heads: &[RolloutHead]) -> Vec<(String, Vec<String>)> {
        let mut packer = Packer::default();
        for head in heads {
            packer.push_head(head).unwrap_or_else(|e| panic!("{e}"));
        }
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

    /// The sessions of `heads` as paths and threads.
    fn grouped(heads: &[RolloutHead]) -> Vec<(String, Vec<(String, String)>)> {
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
    fn a_head_comes_back_as_it_went_in() {
        let mut head = rollout("sessions/x/rollout-1.jsonl", "t", Some("p"), 3);
        head.started = None;
        head.stamp = Some(FileStamp::of(&fs_metadata()));
        let mut other = rollout("sessions/x-y/rollout-0.jsonl", "0190a6c4-5e7b-7c2e-9d1a-3f4b5c6d7e8f", None, 0);
        other.started = Some(Timestamp::from_millis(-5));
        assert_eq!(
            sessions_of(&[other.clone(), head.clone()]),
            vec![
                (other.thread.clone(), vec![format!("{other:?}")]),
                ("t".to_owned(), vec![format!("{head:?}")]),
            ]
        );
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
    fn a_chain_deeper_than_the_bound_is_cut() {
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
}
