//! A Codex home's rollouts grouped into sessions (a child rollout with its
//! root's, parents before children), kept packed: every rollout of a
//! history is listed and grouped before any session is read (a child joins
//! its root wherever its rollout lies), so what each costs to keep is what
//! `import` and `usage` grow by. Owns no I/O: heads come in, sessions go
//! out.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use agentrace_core::model::Timestamp;

use crate::import::{path_sort_bytes, FileStamp, RolloutHead};

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
#[derive(Debug, Default)]
pub struct Packer {
    texts: Texts,
    rollouts: Vec<Packed>,
}

impl Packer {
    /// Room for about `rollouts` heads.
    pub fn with_capacity(rollouts: usize) -> Self {
        Self {
            texts: Texts {
                // About 100 bytes of path and 70 of ids.
                paths: Vec::with_capacity(rollouts * 100),
                ids: String::with_capacity(rollouts * 70),
            },
            rollouts: Vec::with_capacity(rollouts),
        }
    }

    /// Adds a rollout's head: its file, thread and parent, and `rest`
    /// (whose own path, thread and parent are not read).
    pub fn push(&mut self, path: &Path, thread: &str, parent: Option<&str>, rest: &Rest) {
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
    }

    /// Adds a rollout's head.
    pub fn push_head(&mut self, head: &RolloutHead) {
        let rest = Rest {
            depth: head.depth,
            started: head.started,
            stamp: head.stamp,
        };
        self.push(&head.path, &head.thread, head.parent.as_deref(), &rest);
    }

    /// The heads added, in path order (a separator before any other byte,
    /// as the listing sorts), each made as it is asked for.
    pub fn heads_by_path(&self) -> impl Iterator<Item = RolloutHead> + '_ {
        let key = |packed: &Packed| path_sort_bytes(self.texts.path(packed.path).as_os_str().as_bytes());
        let mut order: Vec<&Packed> = self.rollouts.iter().collect();
        order.sort_by(|a, b| key(a).cmp(key(b)));
        order.into_iter().map(|packed| self.texts.head(packed))
    }

    /// Groups the rollouts into sessions: each under its top-most known
    /// ancestor (a parent not listed ends the climb), the sessions in the
    /// order of their roots' ids, each session's rollouts by depth, then
    /// path.
    pub fn group(self) -> CodexSessions {
        let Packer { texts, mut rollouts } = self;
        let text = |span: Span| texts.id(span);
        // By index, not by copies of the ids: this runs over every rollout.
        // Of two rollouts of one thread, the last listed stands for it.
        let by_thread: HashMap<&str, usize> = rollouts
            .iter()
            .enumerate()
            .map(|(at, packed)| (text(packed.thread), at))
            .collect();
        let tops: Vec<usize> = (0..rollouts.len())
            .map(|at| {
                let mut top = at;
                let mut hops = 0;
                while let Some(parent) = rollouts[top].parent {
                    match by_thread.get(text(parent)) {
                        // A bound keeps a cycle in hand-edited files finite.
                        Some(&next) if hops <= 1000 => {
                            top = next;
                            hops += 1;
                        }
                        _ => break,
                    }
                }
                top
            })
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
        CodexSessions { texts, rollouts, sessions }
    }
}

/// Rollouts grouped into sessions (see [`Packer::group`]).
#[derive(Debug, Default)]
pub struct CodexSessions {
    /// The rollouts' paths and ids.
    texts: Texts,
    /// Every rollout, each session's together, in reading order.
    rollouts: Vec<Packed>,
    /// Each session: its root's id and where its rollouts end.
    sessions: Vec<(Span, usize)>,
}

impl CodexSessions {
    /// How many sessions.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Session `index`: its root's id and its rollouts (parents first).
    pub fn session(&self, index: usize) -> Option<(String, Vec<RolloutHead>)> {
        let &(root, end) = self.sessions.get(index)?;
        let start = match index {
            0 => 0,
            _ => self.sessions.get(index - 1).map_or(0, |&(_, end)| end),
        };
        let files = self.rollouts.get(start..end)?.iter().map(|packed| self.texts.head(packed)).collect();
        Some((self.texts.id(root).to_owned(), files))
    }

    /// Every session in turn, as [`CodexSessions::session`] gives it.
    pub fn iter(&self) -> impl Iterator<Item = (String, Vec<RolloutHead>)> + '_ {
        (0..self.len()).filter_map(|index| self.session(index))
    }
}

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

    fn grouped(heads: &[RolloutHead]) -> Vec<(String, Vec<(String, String)>)> {
        let mut packer = Packer::default();
        for head in heads {
            packer.push_head(head);
        }
        packer
            .group()
            .iter()
            .map(|(root, files)| {
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
        let mut packer = Packer::default();
        let mut head = rollout("sessions/x/rollout-1.jsonl", "t", Some("p"), 3);
        head.started = None;
        let other = rollout("sessions/x-y/rollout-0.jsonl", "u", None, 0);
        packer.push_head(&other);
        packer.push_head(&head);
        // In path order: `x/` before `x-y/`.
        let back: Vec<RolloutHead> = packer.heads_by_path().collect();
        assert_eq!(format!("{back:?}"), format!("{:?}", vec![head, other]));
    }

    #[test]
    fn a_parent_cycle_ends() {
        let heads = [rollout("a", "x", Some("y"), 1), rollout("b", "y", Some("x"), 1)];
        let sessions = grouped(&heads);
        assert_eq!(sessions.iter().map(|(_, files)| files.len()).sum::<usize>(), 2);
    }

    #[test]
    fn no_rollouts_no_sessions() {
        assert_eq!(Packer::default().group().len(), 0);
    }
}
