//! The agent registry of one run (§3): which threads are roots, which are
//! helpers and who spawned them, and how each is labelled. Pure data: links
//! go in, actors come out. It never guesses: a thread is a helper only once a
//! spawn link names it, and an unlinked thread stays `unknown`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::{Actor, Confidence, Role, ThreadId, UNKNOWN_LABEL};

/// Label of the (primary) root.
pub const ROOT_LABEL: &str = "Main";

/// What the registry knows of one thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadEntry {
    /// Root, helper, or not linked yet.
    pub kind: ThreadKind,
    /// The spawner, for a helper.
    pub parent: Option<ThreadId>,
    /// What revealed the link.
    pub link_via: Option<String>,
    /// V2 task path (`/root/child_a`).
    pub agent_path: Option<String>,
    /// Provider nickname.
    pub nickname: Option<String>,
    /// Provider role (`explorer`).
    pub agent_role: Option<String>,
    /// Free-form description (a Claude `subagent_type`, say).
    pub description: Option<String>,
    /// `Helper N` number, in link order.
    pub helper_number: Option<u32>,
    /// `Main N` number among roots (1 = the primary root).
    pub root_number: Option<u32>,
}

/// Where a thread stands in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreadKind {
    /// A thread the user (client) started.
    Root,
    /// A thread a spawn link names.
    Helper,
    /// Seen on the wire, not linked yet.
    Unlinked,
}

/// The result of offering a spawn link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkOutcome {
    /// A new edge.
    Linked,
    /// The same edge again: nothing changes.
    Known,
    /// The child already has another parent (kept) or is a root.
    Conflict {
        /// The link kept.
        existing: Option<ThreadId>,
    },
    /// The link would make a cycle; refused.
    Cycle,
}

/// Optional facts about a child that come with some links.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildDetails {
    /// V2 task path.
    pub agent_path: Option<String>,
    /// Nickname.
    pub nickname: Option<String>,
    /// Role.
    pub agent_role: Option<String>,
    /// Free-form description.
    pub description: Option<String>,
}

/// The registry of one run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Registry {
    threads: BTreeMap<ThreadId, ThreadEntry>,
    /// Each helper under its parent, kept with the links: a subtree was
    /// found by a pass over every thread, once per link, which made a run
    /// with thousands of helpers quadratic.
    children: BTreeMap<ThreadId, BTreeSet<ThreadId>>,
    primary_root: Option<ThreadId>,
    helpers: u32,
    roots: u32,
    /// How many times the registry was changed in this process (not saved:
    /// a reader of [`Registry::changes`] keeps what it worked out from one
    /// registry only while the count stands).
    #[serde(skip)]
    changes: u64,
}

impl Registry {
    /// The primary root: the first thread marked root.
    pub fn primary_root(&self) -> Option<&ThreadId> {
        self.primary_root.as_ref()
    }

    /// The entry of a thread.
    pub fn get(&self, thread: &ThreadId) -> Option<&ThreadEntry> {
        self.threads.get(thread)
    }

    /// Every known thread.
    pub fn threads(&self) -> impl Iterator<Item = (&ThreadId, &ThreadEntry)> {
        self.threads.iter()
    }

    /// How many changes this registry has seen (a thread added, marked a
    /// root, linked, or given a detail; an offer that changes nothing is
    /// none): an actor worked out from it stays right while the count
    /// stands.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Notes that a thread exists (unlinked if new).
    pub fn observe(&mut self, thread: &ThreadId) {
        if self.threads.contains_key(thread) {
            return;
        }
        self.changes += 1;
        self.threads.insert(
            thread.clone(),
            ThreadEntry {
                kind: ThreadKind::Unlinked,
                parent: None,
                link_via: None,
                agent_path: None,
                nickname: None,
                agent_role: None,
                description: None,
                helper_number: None,
                root_number: None,
            },
        );
    }

    /// Marks a thread the client started as a root. Returns false when the
    /// thread is already a helper (the link is kept).
    pub fn mark_root(&mut self, thread: &ThreadId) -> bool {
        self.observe(thread);
        let Some(entry) = self.threads.get_mut(thread) else {
            return false;
        };
        match entry.kind {
            ThreadKind::Root => true,
            ThreadKind::Helper => false,
            ThreadKind::Unlinked => {
                self.changes += 1;
                self.roots += 1;
                entry.kind = ThreadKind::Root;
                entry.root_number = Some(self.roots);
                if self.primary_root.is_none() {
                    self.primary_root = Some(thread.clone());
                }
                true
            }
        }
    }

    /// Offers a spawn link `parent → child`. The first link wins.
    pub fn link(&mut self, parent: &ThreadId, child: &ThreadId, via: &str) -> LinkOutcome {
        if parent == child || self.is_ancestor(child, parent) {
            return LinkOutcome::Cycle;
        }
        self.observe(parent);
        self.observe(child);
        let Some(entry) = self.threads.get_mut(child) else {
            return LinkOutcome::Cycle;
        };
        match entry.kind {
            ThreadKind::Root => LinkOutcome::Conflict { existing: None },
            ThreadKind::Helper if entry.parent.as_ref() == Some(parent) => LinkOutcome::Known,
            ThreadKind::Helper => LinkOutcome::Conflict {
                existing: entry.parent.clone(),
            },
            ThreadKind::Unlinked => {
                self.changes += 1;
                self.helpers += 1;
                entry.kind = ThreadKind::Helper;
                entry.parent = Some(parent.clone());
                entry.link_via = Some(via.to_owned());
                entry.helper_number = Some(self.helpers);
                self.children.entry(parent.clone()).or_default().insert(child.clone());
                LinkOutcome::Linked
            }
        }
    }

    /// Adds what is known of a child; the first value of each fact stays.
    /// Returns true when anything changed.
    pub fn add_details(&mut self, child: &ThreadId, details: &ChildDetails) -> bool {
        self.observe(child);
        let Some(entry) = self.threads.get_mut(child) else {
            return false;
        };
        let mut changed = false;
        for (slot, value) in [
            (&mut entry.agent_path, &details.agent_path),
            (&mut entry.nickname, &details.nickname),
            (&mut entry.agent_role, &details.agent_role),
            (&mut entry.description, &details.description),
        ] {
            if slot.is_none() {
                if let Some(value) = value.as_ref().filter(|value| !value.is_empty()) {
                    *slot = Some(value.clone());
                    changed = true;
                }
            }
        }
        self.changes += u64::from(changed);
        changed
    }

    /// True when `ancestor` is on `thread`'s parent chain.
    pub fn is_ancestor(&self, ancestor: &ThreadId, thread: &ThreadId) -> bool {
        let mut seen = BTreeSet::new();
        let mut current = self
            .threads
            .get(thread)
            .and_then(|entry| entry.parent.as_ref());
        while let Some(parent) = current {
            if parent == ancestor {
                return true;
            }
            if !seen.insert(parent.clone()) {
                return false;
            }
            current = self
                .threads
                .get(parent)
                .and_then(|entry| entry.parent.as_ref());
        }
        false
    }

    /// Depth below a root, when the whole chain up to a root is known.
    pub fn depth(&self, thread: &ThreadId) -> Option<u32> {
        let mut depth = 0u32;
        let mut current = thread;
        loop {
            let entry = self.threads.get(current)?;
            match entry.kind {
                ThreadKind::Root => return Some(depth),
                ThreadKind::Unlinked => return None,
                ThreadKind::Helper => {
                    current = entry.parent.as_ref()?;
                    depth += 1;
                    if depth > 10_000 {
                        return None;
                    }
                }
            }
        }
    }

    /// A thread and every thread below it.
    pub fn subtree(&self, thread: &ThreadId) -> Vec<ThreadId> {
        // Breadth first, each level's children in id order. A link never
        // makes a cycle (refused in `link`), so no thread comes twice.
        let mut out = vec![thread.clone()];
        let mut index = 0;
        while let Some(current) = out.get(index) {
            if let Some(children) = self.children.get(current) {
                let children: Vec<ThreadId> = children.iter().cloned().collect();
                out.extend(children);
            }
            index += 1;
        }
        out
    }

    /// The label of a thread (§3).
    pub fn label(&self, thread: &ThreadId) -> String {
        let Some(entry) = self.threads.get(thread) else {
            return UNKNOWN_LABEL.to_owned();
        };
        match entry.kind {
            ThreadKind::Root => match entry.root_number {
                Some(1) | None => ROOT_LABEL.to_owned(),
                Some(number) => format!("{ROOT_LABEL} {number}"),
            },
            ThreadKind::Unlinked => UNKNOWN_LABEL.to_owned(),
            ThreadKind::Helper => helper_label(entry),
        }
    }

    /// The actor of a frame the provider stated to be `thread`'s.
    pub fn actor(&self, thread: &ThreadId) -> Actor {
        let Some(entry) = self.threads.get(thread) else {
            return unlinked_actor(thread);
        };
        match entry.kind {
            ThreadKind::Unlinked => unlinked_actor(thread),
            ThreadKind::Root => Actor {
                thread_id: Some(thread.clone()),
                role: Role::Root,
                parent_thread_id: None,
                label: self.label(thread),
                depth: Some(0),
                confidence: Confidence::Provider,
                reason: None,
            },
            ThreadKind::Helper => Actor {
                thread_id: Some(thread.clone()),
                role: Role::Helper,
                parent_thread_id: entry.parent.clone(),
                label: self.label(thread),
                depth: self.depth(thread),
                confidence: Confidence::Provider,
                reason: None,
            },
        }
    }
}

fn helper_label(entry: &ThreadEntry) -> String {
    if let Some(path) = &entry.agent_path {
        return path.clone();
    }
    let number = entry.helper_number.unwrap_or(0);
    match (&entry.nickname, &entry.agent_role, &entry.description) {
        (Some(nickname), Some(role), _) => format!("{nickname} [{role}]"),
        (Some(nickname), None, _) => nickname.clone(),
        (None, Some(role), _) => format!("Helper {number} [{role}]"),
        (None, None, Some(description)) => description.clone(),
        (None, None, None) => format!("Helper {number}"),
    }
}

fn unlinked_actor(thread: &ThreadId) -> Actor {
    Actor {
        thread_id: Some(thread.clone()),
        role: Role::Unknown,
        parent_thread_id: None,
        label: UNKNOWN_LABEL.to_owned(),
        depth: None,
        confidence: Confidence::Provider,
        reason: Some("thread not in registry".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> ThreadId {
        ThreadId::from(text)
    }

    fn ids(texts: &[&str]) -> Vec<ThreadId> {
        texts.iter().map(|text| id(text)).collect()
    }

    #[test]
    fn a_subtree_is_the_thread_then_its_helpers_level_by_level_in_id_order() {
        let mut registry = Registry::default();
        registry.mark_root(&id("root"));
        assert_eq!(registry.link(&id("root"), &id("b"), "spawn"), LinkOutcome::Linked);
        assert_eq!(registry.link(&id("root"), &id("a"), "spawn"), LinkOutcome::Linked);
        assert_eq!(registry.link(&id("b"), &id("b1"), "spawn"), LinkOutcome::Linked);
        assert_eq!(registry.link(&id("a"), &id("a1"), "spawn"), LinkOutcome::Linked);
        // Refused or repeated links add no edge.
        assert_eq!(registry.link(&id("b"), &id("a1"), "spawn"), LinkOutcome::Conflict { existing: Some(id("a")) });
        assert_eq!(registry.link(&id("a1"), &id("root"), "spawn"), LinkOutcome::Cycle);
        assert_eq!(registry.link(&id("a"), &id("a1"), "spawn"), LinkOutcome::Known);
        registry.observe(&id("stray"));

        assert_eq!(registry.subtree(&id("root")), ids(&["root", "a", "b", "a1", "b1"]));
        assert_eq!(registry.subtree(&id("b")), ids(&["b", "b1"]));
        assert_eq!(registry.subtree(&id("stray")), ids(&["stray"]));
        assert_eq!(registry.subtree(&id("never seen")), ids(&["never seen"]));
    }

    #[test]
    fn a_subtree_of_a_long_chain_holds_every_thread_once() {
        let mut registry = Registry::default();
        registry.mark_root(&id("t0"));
        for n in 1..500 {
            assert_eq!(registry.link(&id(&format!("t{}", n - 1)), &id(&format!("t{n}")), "spawn"), LinkOutcome::Linked);
        }
        let expected: Vec<ThreadId> = (0..500).map(|n| id(&format!("t{n}"))).collect();
        assert_eq!(registry.subtree(&id("t0")), expected);
    }
}
