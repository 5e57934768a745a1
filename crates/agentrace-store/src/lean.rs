//! The leaner line on disk (log format v3): what a v3 line and a definition
//! line are, the dictionary that turns a v3 line back into the v2
//! [`Envelope`] it stands for, and the writer's side that numbers actors
//! and source paths. It owns the encoding only: which writer writes v3 is
//! the writer's choice, and nothing a reader prints ever shows v3 (every
//! v3 line is expanded to version 2 by [`crate::LogReader`]).
//!
//! A v3 line leaves out `runId` (the log's file name is the run id) and
//! `version`, and is told from v2 by `"v":3`. It names its actor by an
//! integer, and writes `rawRef` as `[pathIndex, offset, length, crc32]`:
//!
//! ```json
//! {"v":3,"define":"actor","index":0,"actor":{"threadId":"01a2…","role":"root","label":"Main","depth":0,"confidence":"provider"}}
//! {"v":3,"define":"path","index":0,"path":"/home/me/.codex/sessions/2026/11/29/rollout-….jsonl"}
//! {"v":3,"timestamp":"2026-11-29T23:05:40.127Z","sequence":3,"actor":0,"event":{"type":"turn_started",…},"rawRef":[0,22621,493,3971420193]}
//! ```
//!
//! Definitions are immutable and never reused within a file (each kind,
//! `actor` and `path`, numbered on its own), so a dictionary taken at any
//! later point of the file decodes every earlier line; a writer puts a
//! definition in the same batch as, and before, the first line using it.

use std::collections::{BTreeMap, HashMap};

use agentrace_core::model::{Actor, Direction, Envelope, EventBody, RawFrame, RawRef, RawUnavailable, RunId, Timestamp};
use agentrace_core::LOG_VERSION;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The value of the `v` member that marks a v3 line.
pub const LEAN_VERSION: u32 = 3;

/// How every definition line begins, as this build writes it: readers that
/// pass over lines by their bytes never pass over one that begins so.
pub const DEFINITION_PREFIX: &[u8] = b"{\"v\":3,\"define\":";

/// The actors and source paths a log's definition lines have named so far,
/// by index: what a reader needs to expand a v3 line. A reader that starts
/// mid-file (a resumed fold, a page of events) is given one taken at or
/// after the point it starts from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dictionary {
    /// `define: "actor"` lines, by index.
    #[serde(default)]
    actors: BTreeMap<u32, Actor>,
    /// `define: "path"` lines, by index.
    #[serde(default)]
    paths: BTreeMap<u32, String>,
}

/// One definition: what an index stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Definition {
    /// An actor, named by v3 lines' `actor`.
    Actor(u32, Actor),
    /// A source file's absolute path, the first item of v3 lines' `rawRef`.
    Path(u32, String),
}

impl Dictionary {
    /// Adds `definition`; refused (with a reason for people) when its index
    /// already stands for something else. The same definition again is
    /// accepted: a writer that failed part way may have written it twice.
    pub fn define(&mut self, definition: Definition) -> Result<(), String> {
        fn put<T: PartialEq>(map: &mut BTreeMap<u32, T>, index: u32, value: T, kind: &str) -> Result<(), String> {
            match map.get(&index) {
                Some(known) if *known == value => Ok(()),
                Some(_) => Err(format!("{kind} {index} defined again as something else")),
                None => {
                    map.insert(index, value);
                    Ok(())
                }
            }
        }
        match definition {
            Definition::Actor(index, actor) => put(&mut self.actors, index, actor, "actor"),
            Definition::Path(index, path) => put(&mut self.paths, index, path, "path"),
        }
    }

    /// True when nothing is defined (every log without v3 lines).
    pub fn is_empty(&self) -> bool {
        self.actors.is_empty() && self.paths.is_empty()
    }
}

/// A definition line as read (tolerant: an unknown kind is reported, not
/// guessed at).
#[derive(Deserialize)]
struct DefinitionLine {
    define: String,
    index: u32,
    #[serde(default)]
    actor: Option<Actor>,
    #[serde(default)]
    path: Option<String>,
}

/// A v3 envelope line as read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanLine {
    timestamp: Timestamp,
    sequence: u64,
    #[serde(default)]
    direction: Option<Direction>,
    actor: u32,
    event: EventBody,
    #[serde(default)]
    raw: Option<Box<RawValue>>,
    #[serde(default)]
    raw_ref: Option<(u32, u64, u64, u32)>,
    #[serde(default)]
    raw_unavailable: Option<RawUnavailable>,
}

/// Reads a definition line (the whole line's text) into `dictionary`.
pub(crate) fn read_definition(text: &str, dictionary: &mut Dictionary) -> Result<(), String> {
    let line = serde_json::from_str::<DefinitionLine>(text).map_err(|error| format!("invalid v3 definition: {error}"))?;
    let definition = match (line.define.as_str(), line.actor, line.path) {
        ("actor", Some(actor), _) => Definition::Actor(line.index, actor),
        ("path", _, Some(path)) => Definition::Path(line.index, path),
        ("actor" | "path", _, _) => return Err(format!("v3 definition of {} {} without its value", line.define, line.index)),
        (kind, _, _) => return Err(format!("v3 definition of an unknown kind `{kind}`")),
    };
    dictionary.define(definition)
}

/// Expands a v3 line (the whole line's text) to the v2 envelope it stands
/// for; `raw` is its `raw` member when present, `null` included.
pub(crate) fn expand(text: &str, raw: Option<&RawValue>, dictionary: &Dictionary, run_id: &RunId) -> Result<Envelope, String> {
    let line = serde_json::from_str::<LeanLine>(text).map_err(|error| format!("invalid v3 line: {error}"))?;
    let actor = dictionary
        .actors
        .get(&line.actor)
        .ok_or_else(|| format!("v3 line names actor {}, which no definition before it gives", line.actor))?
        .clone();
    let raw_ref = match line.raw_ref {
        Some((path, offset, length, crc32)) => Some(RawRef {
            path: dictionary
                .paths
                .get(&path)
                .ok_or_else(|| format!("v3 line names path {path}, which no definition before it gives"))?
                .clone(),
            offset,
            length,
            crc32,
        }),
        None => None,
    };
    Ok(Envelope {
        version: LOG_VERSION,
        timestamp: line.timestamp,
        sequence: line.sequence,
        run_id: run_id.clone(),
        direction: line.direction,
        actor,
        event: line.event,
        // As for v2: a frame that was the JSON `null` is still a frame.
        raw: line.raw.or_else(|| raw.map(ToOwned::to_owned)).map(RawFrame::from),
        raw_ref,
        raw_unavailable: line.raw_unavailable,
    })
}

/// A definition line as written.
#[derive(Serialize)]
struct DefinitionRef<'a> {
    v: u32,
    define: &'static str,
    index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    actor: Option<&'a Actor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
}

/// A v3 envelope line as written (members in this order, so that
/// `{"v":3,"timestamp"` begins every one).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LeanLineRef<'a> {
    v: u32,
    timestamp: Timestamp,
    sequence: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    direction: Option<Direction>,
    actor: u32,
    event: &'a EventBody,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a RawFrame>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_ref: Option<(u32, u64, u64, u32)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_unavailable: Option<RawUnavailable>,
}

/// The writer's side: the index of every actor and path already defined
/// in the log, and the definitions it made that are not yet known to be on
/// disk (forgotten when their write fails, so a value whose definition may
/// be torn is defined again under a new index, never used undefined).
#[derive(Debug, Default)]
pub(crate) struct Encoder {
    actors: HashMap<Actor, u32>,
    paths: HashMap<String, u32>,
    next_actor: u32,
    next_path: u32,
    /// The actor and path encoded last, with their indices: most envelopes
    /// repeat their neighbour's, found by one comparison rather than a
    /// hash of each of their strings (a hundredth of an import).
    last_actor: Option<(Actor, u32)>,
    last_path: Option<(String, u32)>,
    /// Definitions made since the last successful write, in order.
    pending: Vec<Definition>,
}

impl Encoder {
    /// An encoder continuing the numbering of a log whose definitions so
    /// far are `dictionary`.
    pub(crate) fn continuing(dictionary: &Dictionary) -> Self {
        Self {
            actors: dictionary.actors.iter().map(|(index, actor)| (actor.clone(), *index)).collect(),
            paths: dictionary.paths.iter().map(|(index, path)| (path.clone(), *index)).collect(),
            next_actor: dictionary.actors.keys().next_back().map_or(0, |last| last.saturating_add(1)),
            next_path: dictionary.paths.keys().next_back().map_or(0, |last| last.saturating_add(1)),
            last_actor: None,
            last_path: None,
            pending: Vec::new(),
        }
    }

    /// How many definitions are pending: a mark to [`Encoder::forget_since`].
    pub(crate) fn pending_mark(&self) -> usize {
        self.pending.len()
    }

    /// The pending definitions from `mark` on.
    pub(crate) fn pending_since(&self, mark: usize) -> &[Definition] {
        &self.pending[mark.min(self.pending.len())..]
    }

    /// The pending definitions are on disk.
    pub(crate) fn written(&mut self) {
        self.pending.clear();
    }

    /// Forgets the definitions made from `mark` on (their bytes were cut
    /// from the batch, or their write failed). Their indices stay used.
    pub(crate) fn forget_since(&mut self, mark: usize) {
        self.last_actor = None;
        self.last_path = None;
        for definition in self.pending.drain(mark.min(self.pending.len())..) {
            match definition {
                Definition::Actor(_, actor) => {
                    self.actors.remove(&actor);
                }
                Definition::Path(_, path) => {
                    self.paths.remove(&path);
                }
            }
        }
    }

    /// Writes `envelope` onto `out` as a v3 line, after the definition
    /// lines it needs (each ending in `\n`); returns where the envelope's
    /// own line starts in `out`, for the caller to end it.
    pub(crate) fn encode(&mut self, envelope: &Envelope, out: &mut Vec<u8>) -> serde_json::Result<usize> {
        let actor = match self.last_actor.as_ref().filter(|(last, _)| *last == envelope.actor).map(|(_, index)| *index) {
            Some(index) => index,
            None => self.actor_index(envelope, out)?,
        };
        let raw_ref = match &envelope.raw_ref {
            Some(reference) => {
                let path = match self.last_path.as_ref().filter(|(last, _)| *last == reference.path).map(|(_, index)| *index) {
                    Some(index) => index,
                    None => self.path_index(&reference.path, out)?,
                };
                Some((path, reference.offset, reference.length, reference.crc32))
            }
            None => None,
        };
        let start = out.len();
        serde_json::to_writer(
            &mut *out,
            &LeanLineRef {
                v: LEAN_VERSION,
                timestamp: envelope.timestamp,
                sequence: envelope.sequence,
                direction: envelope.direction,
                actor,
                event: &envelope.event,
                raw: envelope.raw.as_ref(),
                raw_ref,
                raw_unavailable: envelope.raw_unavailable,
            },
        )?;
        Ok(start)
    }

    /// The index of `envelope`'s actor, defined on `out` when new.
    fn actor_index(&mut self, envelope: &Envelope, out: &mut Vec<u8>) -> serde_json::Result<u32> {
        let actor = match self.actors.get(&envelope.actor) {
            Some(index) => *index,
            None => {
                let index = self.next_actor;
                self.next_actor = self.next_actor.saturating_add(1);
                write_definition(out, "actor", index, Some(&envelope.actor), None)?;
                self.actors.insert(envelope.actor.clone(), index);
                self.pending.push(Definition::Actor(index, envelope.actor.clone()));
                index
            }
        };
        self.last_actor = Some((envelope.actor.clone(), actor));
        Ok(actor)
    }

    /// The index of `path`, defined on `out` when new.
    fn path_index(&mut self, path: &str, out: &mut Vec<u8>) -> serde_json::Result<u32> {
        let index = match self.paths.get(path) {
            Some(index) => *index,
            None => {
                let index = self.next_path;
                self.next_path = self.next_path.saturating_add(1);
                write_definition(out, "path", index, None, Some(path))?;
                self.paths.insert(path.to_owned(), index);
                self.pending.push(Definition::Path(index, path.to_owned()));
                index
            }
        };
        self.last_path = Some((path.to_owned(), index));
        Ok(index)
    }
}

fn write_definition(out: &mut Vec<u8>, define: &'static str, index: u32, actor: Option<&Actor>, path: Option<&str>) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *out, &DefinitionRef { v: LEAN_VERSION, define, index, actor, path })?;
    out.push(b'\n');
    Ok(())
}
