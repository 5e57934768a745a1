//! Test support: a temporary agentrace home with runs recorded from the
//! real captures (or from hand-made frames), the way `ingest` records them.

use std::path::PathBuf;

use agentrace_core::lines::LineAssembler;
use agentrace_core::model::{RunId, Timestamp};
use agentrace_core::recorder::Format;
use agentrace_core::recorder::SourcePart;
use agentrace_core::{InputLine, Recorder};
use agentrace_store::{Home, RunWriter};

/// A capture's `server.jsonl`.
pub fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/codex")
        .join(name)
        .join("server.jsonl")
}

/// A scratch home.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}")),
        }
    }

    pub fn home(&self) -> Home {
        Home::at(self.dir.path())
    }

    /// Records Codex app-server lines as run `id`; returns the writer and
    /// recorder so a test can go on appending (a live run).
    pub fn record(&self, id: &str, bytes: &[u8], finish: bool) -> (RunWriter, Recorder) {
        let mut writer = self
            .home()
            .create_run(&RunId::from(id))
            .unwrap_or_else(|e| panic!("create run: {e}"));
        let mut recorder = Recorder::new(RunId::from(id), Format::CodexAppServer);
        let start = recorder.start(Timestamp::from_millis(1_795_993_400_000));
        writer.append(&start).unwrap_or_else(|e| panic!("{e}"));
        push(&mut writer, &mut recorder, bytes);
        if finish {
            let last = recorder.finish();
            writer.append(&last).unwrap_or_else(|e| panic!("{e}"));
        }
        (writer, recorder)
    }

    /// Records a capture as run `id`.
    pub fn capture(&self, id: &str, name: &str) {
        let bytes = std::fs::read(capture(name)).unwrap_or_else(|e| panic!("{e}"));
        self.record(id, &bytes, true);
    }
}

/// Appends lines to a live run.
pub fn push(writer: &mut RunWriter, recorder: &mut Recorder, bytes: &[u8]) {
    let mut assembler = LineAssembler::new(64 * 1024 * 1024);
    let mut lines = assembler.push(bytes);
    lines.extend(assembler.finish());
    for line in lines {
        if agentrace_core::decode::is_blank(&line.bytes) {
            continue;
        }
        let envelopes = recorder.push(&InputLine {
            bytes: &line.bytes,
            line_number: line.line_number,
            observed_at: Timestamp::from_millis(1_795_993_400_000),
            direction: None,
            truncated_from: line.truncated_from,
        });
        writer.append(&envelopes).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Records a generated run of `events` events (the root spawns four
/// helpers, then messages alternate between them, every tenth pair of
/// events a short tool call of one agent, 1 ms each; the message at
/// `needle`'s sequence holds its text) the way a recorder does, through
/// `RunWriter`, record included.
pub fn record_generated_run(scratch: &Scratch, id: &str, events: u64, needle: Option<(u64, &str)>) {
    record_generated_run_as(scratch, id, events, needle, false);
}

/// [`record_generated_run`], written as v3 lines when `lean` (as an import
/// writes them), with a `rawRef` into one of three sources on each event.
pub fn record_generated_run_as(scratch: &Scratch, id: &str, events: u64, needle: Option<(u64, &str)>, lean: bool) {
    use agentrace_core::model::{
        Actor, Confidence, Envelope, Event, EventBody, Role, RunId, ThreadId, Timestamp,
        LOG_VERSION,
    };
    let helpers = 4_u64;
    let actor = |index: u64| {
        if index == 0 {
            Actor {
                thread_id: Some(ThreadId::from("root")),
                role: Role::Root,
                parent_thread_id: None,
                label: "Main".to_owned(),
                depth: Some(0),
                confidence: Confidence::Provider,
                reason: None,
            }
        } else {
            Actor {
                thread_id: Some(ThreadId::from(format!("helper-{index}"))),
                role: Role::Helper,
                parent_thread_id: Some(ThreadId::from("root")),
                label: format!("Helper {index}"),
                depth: Some(1),
                confidence: Confidence::Provider,
                reason: None,
            }
        }
    };
    let run_id = RunId::from(id);
    let mut writer = scratch
        .home()
        .create_run(&run_id)
        .unwrap_or_else(|e| panic!("{e}"));
    if lean {
        writer = writer.with_lean_lines();
    }
    let mut state = agentrace_core::RunState::new(run_id.clone());
    let mut batch = Vec::new();
    for sequence in 1..=events {
        let (index, event) = if sequence <= helpers {
            (
                0,
                Event::AgentSpawned {
                    parent_thread_id: ThreadId::from("root"),
                    child_thread_id: ThreadId::from(format!("helper-{sequence}")),
                    prompt: Some(format!("work item {sequence}")),
                    model: None,
                    reasoning_effort: None,
                    via: "spawnAgent".to_owned(),
                },
            )
        } else if sequence % 10 < 2 && needle.is_none_or(|(at, _)| at != sequence) {
            let call = sequence / 10;
            let item_id = Some(agentrace_core::model::ItemId::from(format!("call-{call}")));
            let event = if sequence % 10 == 0 {
                Event::ToolUse {
                    tool_kind: "command".to_owned(),
                    name: "shell".to_owned(),
                    input: format!("cargo test step {call}"),
                    item_id,
                    turn_id: None,
                    process_id: None,
                }
            } else {
                Event::ToolResult {
                    tool_kind: "command".to_owned(),
                    name: "shell".to_owned(),
                    status: Some("completed".to_owned()),
                    exit_code: Some(0),
                    duration_ms: Some(1),
                    output: "ok".to_owned(),
                    item_id,
                    turn_id: None,
                    receiver_thread_ids: Vec::new(),
                }
            };
            (call % (helpers + 1), event)
        } else {
            let text = match needle {
                Some((at, needle)) if at == sequence => {
                    format!("step {sequence}: found the {needle}")
                }
                _ => format!("step {sequence}: reading the parser and checking the tests"),
            };
            (
                sequence % (helpers + 1),
                Event::Message {
                    role: "assistant".to_owned(),
                    phase: None,
                    text,
                    item_id: None,
                    turn_id: None,
                },
            )
        };
        let envelope = Envelope {
            version: LOG_VERSION,
            timestamp: Timestamp::from_millis(1_795_993_400_000 + sequence as i64),
            sequence,
            run_id: run_id.clone(),
            direction: None,
            actor: actor(index),
            event: EventBody::Known(event),
            raw: None,
            raw_ref: lean.then(|| agentrace_core::model::RawRef {
                path: format!("/sources/session-{}.jsonl", sequence % 3),
                offset: sequence * 100,
                length: 99,
                crc32: sequence as u32,
            }),
            raw_unavailable: None,
        };
        state.apply(&envelope);
        batch.push(envelope);
        if batch.len() == 1000 {
            writer.append(&batch).unwrap_or_else(|e| panic!("{e}"));
            batch.clear();
        }
    }
    writer.append(&batch).unwrap_or_else(|e| panic!("{e}"));
    writer
        .write_record(&state.summary())
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A Claude capture's session as its transcripts hold it: the main file's
/// and each subagent file's lines, merged by their times as Claude Code
/// wrote them.
pub struct Transcripts {
    pub lines: Vec<(SourcePart, String, Timestamp)>,
}

impl Transcripts {
    /// The session of the Claude capture `name` (its one project).
    pub fn of(name: &str) -> Self {
        let projects = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/claude").join(name).join("home_claude/projects");
        let project = std::fs::read_dir(&projects).unwrap_or_else(|e| panic!("{e}")).next().unwrap_or_else(|| panic!("no project")).unwrap_or_else(|e| panic!("{e}")).path();
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&project).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.extension().is_some_and(|extension| extension == "jsonl") {
                files.push((SourcePart::Main, path));
            } else if path.is_dir() {
                for agent in std::fs::read_dir(path.join("subagents")).unwrap_or_else(|e| panic!("{e}")) {
                    let agent = agent.unwrap_or_else(|e| panic!("{e}")).path();
                    let name = agent.file_name().and_then(|name| name.to_str()).unwrap_or_default().to_owned();
                    if let Some(id) = name.strip_prefix("agent-").and_then(|rest| rest.strip_suffix(".jsonl")) {
                        files.push((SourcePart::AgentFile { agent_id: id.to_owned() }, agent));
                    }
                }
            }
        }
        let mut lines = Vec::new();
        for (part, path) in files {
            let mut last = Timestamp::from_millis(0);
            for line in std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}")).lines() {
                let at = serde_json::from_str::<serde_json::Value>(line)
                    .ok()
                    .and_then(|value| value["timestamp"].as_str().and_then(Timestamp::parse))
                    .unwrap_or(last);
                last = at;
                lines.push((part.clone(), line.to_owned(), at));
            }
        }
        // Stable: a file's lines of one time keep their order.
        lines.sort_by_key(|(_, _, at)| *at);
        Self { lines }
    }

    /// Feeds `lines` to the recorder and the writer, as an import does.
    pub fn feed(lines: &[(SourcePart, String, Timestamp)], writer: &mut RunWriter, recorder: &mut Recorder) {
        for (number, (part, line, at)) in lines.iter().enumerate() {
            let envelopes = recorder.push_part(part, &InputLine {
                bytes: line.as_bytes(),
                line_number: number as u64 + 1,
                observed_at: *at,
                direction: None,
                truncated_from: None,
            });
            writer.append(&envelopes).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
