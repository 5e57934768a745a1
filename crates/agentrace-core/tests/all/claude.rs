//! Every real Claude Code capture in `fixtures/claude` is a row: replay its
//! stdout (stream-json or Agent SDK messages), its transcripts, both merged,
//! and its hook inputs; check attribution, the tree and the result against
//! the frames themselves; snapshot the `show --json` views.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use agentrace_core::lines::LineAssembler;
use agentrace_core::model::{
    Confidence, Envelope, Event, EventBody, RawRef, Role, RunId, RunStatus, Timestamp,
};
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_core::state::RunView;
use agentrace_core::{InputLine, Recorder};
use serde_json::{json, Value};

use super::support::{finalized, T0};

pub(super) fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/claude")
        .join(name)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The capture's stdout: `stream.jsonl`, or the SDK's yielded messages;
/// none for an interactive session (a terminal, no stream-json), whose
/// transcripts and hook inputs are all there is.
fn stdout_of(dir: &Path) -> Option<Vec<u8>> {
    let stream = dir.join("stream.jsonl");
    let sdk = dir.join("sdk_messages.jsonl");
    if stream.exists() {
        // A `--resume` run of the same session continues the same run.
        let mut bytes = read(&stream);
        let resumed = dir.join("stream_resume.jsonl");
        if resumed.exists() {
            bytes.extend(read(&resumed));
        }
        Some(bytes)
    } else if sdk.exists() {
        Some(read(&sdk))
    } else {
        None
    }
}

fn hooks_of(dir: &Path) -> Vec<u8> {
    let hooks = dir.join("hooks.jsonl");
    if hooks.exists() {
        read(&hooks)
    } else {
        read(&dir.join("sdk_hooks.jsonl"))
    }
}

fn sorted_files(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| {
                    path.is_file()
                        && path
                            .file_name()
                            .and_then(|name| name.to_str())
                            .is_some_and(&keep)
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn agent_id_of(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    name.trim_start_matches("agent-")
        .trim_end_matches(".meta.json")
        .trim_end_matches(".jsonl")
        .to_owned()
}

/// The transcript files of the capture's one session, in the order the CLI
/// reads them: the session file, then each subagent's metadata and file.
pub(super) fn transcript_parts(dir: &Path) -> Vec<(SourcePart, PathBuf)> {
    let projects = dir.join("home_claude/projects");
    let project = sorted_files(&projects, |_| false);
    assert!(project.is_empty());
    let project = std::fs::read_dir(&projects)
        .unwrap_or_else(|error| panic!("{error}"))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.is_dir())
        .unwrap_or_else(|| panic!("no project dir in {}", projects.display()));
    let sessions = sorted_files(&project, |name| {
        name.ends_with(".jsonl") && !name.starts_with("agent-")
    });
    let [session] = sessions.as_slice() else {
        panic!("one session file expected in {}", project.display());
    };
    let mut parts = vec![(SourcePart::Main, session.clone())];
    let subagents = session.with_extension("").join("subagents");
    for file in sorted_files(&subagents, |name| {
        name.starts_with("agent-") && name.ends_with(".jsonl")
    }) {
        let agent_id = agent_id_of(&file);
        let meta = subagents.join(format!("agent-{agent_id}.meta.json"));
        if meta.exists() {
            parts.push((
                SourcePart::AgentMeta {
                    agent_id: agent_id.clone(),
                },
                meta,
            ));
        }
        parts.push((SourcePart::AgentFile { agent_id }, file));
    }
    for file in sorted_files(&project, |name| {
        name.starts_with("agent-") && name.ends_with(".jsonl")
    }) {
        let agent_id = agent_id_of(&file);
        parts.push((SourcePart::AgentFile { agent_id }, file));
    }
    parts
}

/// Feeds parts to a recorder as `agentrace ingest` does (as `import`
/// does, when its frames are `referenced`).
struct Feed {
    recorder: Recorder,
    envelopes: Vec<Envelope>,
    clock: Timestamp,
    referenced: bool,
}

impl Feed {
    fn new(format: Format) -> Self {
        let mut recorder = Recorder::new(RunId::from("run-test"), format);
        let envelopes = recorder.start(Timestamp::from_millis(T0));
        Self {
            recorder,
            envelopes,
            clock: Timestamp::from_millis(T0),
            referenced: false,
        }
    }

    fn referenced(format: Format) -> Self {
        let mut feed = Self::new(format);
        feed.recorder.reference_frames();
        feed.referenced = true;
        feed
    }

    fn part(&mut self, part: &SourcePart, bytes: &[u8]) {
        if matches!(part, SourcePart::AgentMeta { .. }) {
            self.line(part, bytes, 1);
            return;
        }
        let mut assembler = LineAssembler::default();
        let mut lines = assembler.push(bytes);
        lines.extend(assembler.finish());
        for line in lines {
            if !agentrace_core::decode::is_blank(&line.bytes) {
                self.line(part, &line.bytes, line.line_number);
            }
        }
    }

    fn line(&mut self, part: &SourcePart, bytes: &[u8], line_number: u64) {
        let line = InputLine {
            bytes,
            line_number,
            observed_at: self.clock,
            direction: None,
            truncated_from: None,
        };
        let produced = if self.referenced {
            self.recorder.push_referenced(part, &line, line_ref(part, line_number, bytes))
        } else {
            self.recorder.push_part(part, &line)
        };
        if let Some(last) = produced.last() {
            self.clock = last.timestamp;
        }
        self.envelopes.extend(produced);
    }

    fn transcripts(&mut self, dir: &Path) {
        for (part, path) in transcript_parts(dir) {
            self.part(&part, &read(&path));
        }
    }

    fn done(mut self) -> (RunView, Vec<Envelope>) {
        let last = self.recorder.finish();
        self.envelopes.extend(last);
        (self.recorder.state().view(), self.envelopes)
    }
}

/// A stand-in reference of a line, told apart by part and number.
fn line_ref(part: &SourcePart, line_number: u64, bytes: &[u8]) -> RawRef {
    RawRef {
        path: format!("{part:?}"),
        offset: line_number,
        length: bytes.len() as u64,
        crc32: 0,
    }
}

/// `envelopes` with each frame's copy put where its reference is (the
/// reference's line the one `frames` holds under it).
fn with_copies(envelopes: &[Envelope], copied: &[Envelope]) -> Vec<Envelope> {
    envelopes
        .iter()
        .zip(copied)
        .map(|(envelope, copy)| {
            let mut envelope = envelope.clone();
            if envelope.raw_ref.is_some() && envelope.raw.is_none() {
                envelope.raw_ref = None;
                envelope.raw = copy.raw.clone();
            }
            envelope
        })
        .collect()
}

fn raw_value(envelope: &Envelope) -> Option<Value> {
    envelope
        .raw
        .as_ref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
}

fn thread_of(envelope: &Envelope) -> Option<&str> {
    envelope.actor.thread_id.as_ref().map(|id| id.as_str())
}

/// Every helper of the tree: thread → (parent, label).
fn helpers(view: &RunView) -> BTreeMap<String, Option<String>> {
    fn walk(
        nodes: &[agentrace_core::state::AgentNode],
        out: &mut BTreeMap<String, Option<String>>,
    ) {
        for node in nodes {
            if node.role == Role::Helper {
                out.insert(
                    node.thread_id.0.clone(),
                    node.parent_thread_id.as_ref().map(|id| id.0.clone()),
                );
            }
            walk(&node.children, out);
        }
    }
    let mut out = BTreeMap::new();
    walk(&view.agents, &mut out);
    out
}

fn is_terminal(envelope: &Envelope) -> bool {
    matches!(
        envelope.event,
        EventBody::Known(Event::Done { .. } | Event::Failed { .. } | Event::Interrupted { .. })
    )
}

/// Stdout: the provider states every owner; check each line against it.
fn check_stream(name: &str, input: &[u8], view: &RunView, envelopes: &[Envelope]) {
    let finals = finalized(envelopes);
    let mut session = None;
    let mut helper_of_spawn: HashMap<String, String> = HashMap::new();
    let mut expected_helpers: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut last_result: Option<Value> = None;
    let mut last_text = None;
    for envelope in &finals {
        let Some(frame) = raw_value(envelope) else {
            continue;
        };
        if let Some(id) = frame["session_id"].as_str() {
            session.get_or_insert_with(|| id.to_owned());
        }
        let sequence = envelope.sequence;
        match frame["type"].as_str() {
            Some("user" | "assistant") => match frame["parent_tool_use_id"].as_str() {
                None => {
                    assert_eq!(
                        thread_of(envelope),
                        session.as_deref(),
                        "{name}: {sequence} is the root's"
                    );
                    assert_eq!(envelope.actor.role, Role::Root, "{name}: {sequence}");
                    assert_eq!(
                        envelope.actor.confidence,
                        Confidence::Provider,
                        "{name}: {sequence}"
                    );
                }
                Some(spawn) => {
                    assert_eq!(
                        envelope.actor.role,
                        Role::Helper,
                        "{name}: {sequence} is a helper's"
                    );
                    assert_eq!(
                        envelope.actor.confidence,
                        Confidence::Provider,
                        "{name}: {sequence}"
                    );
                    let thread = thread_of(envelope).unwrap_or_default().to_owned();
                    if let Some(agent) = frame["agent_id"].as_str() {
                        assert_eq!(thread, agent, "{name}: {sequence} is named by its agent id");
                    }
                    let named = helper_of_spawn
                        .entry(spawn.to_owned())
                        .or_insert_with(|| thread.clone());
                    assert_eq!(*named, thread, "{name}: a helper's name never changes");
                    expected_helpers
                        .entry(thread)
                        .or_insert_with(|| session.clone());
                }
            },
            Some("system")
                if frame["subtype"] == "task_started" && frame["task_type"] == "local_agent" =>
            {
                let task = frame["task_id"].as_str().unwrap_or_default();
                assert_eq!(
                    thread_of(envelope),
                    Some(task),
                    "{name}: {sequence} belongs to its task"
                );
                let parent = frame["parent_task_id"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| session.clone());
                expected_helpers.insert(task.to_owned(), parent);
            }
            Some("result") => last_result = Some(frame.clone()),
            _ => {}
        }
        if envelope.actor.role == Role::Root {
            if let EventBody::Known(Event::Message { role, text, .. }) = &envelope.event {
                if role == "assistant" {
                    last_text = Some(text.clone());
                }
            }
        }
        if is_terminal(envelope) {
            assert_eq!(
                envelope.actor.role,
                Role::Root,
                "{name}: only the root ends the run"
            );
        }
    }
    // Lossless: one raw per non-blank input line, in order.
    let input_lines: Vec<&[u8]> = input
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .collect();
    let raws: Vec<&[u8]> = envelopes
        .iter()
        .filter_map(|e| e.raw.as_ref().map(|r| r.get().as_bytes()))
        .collect();
    assert_eq!(
        raws.len(),
        input_lines.len(),
        "{name}: one raw per input line"
    );
    for (raw, line) in raws.iter().zip(&input_lines) {
        assert_eq!(*raw, line.trim_ascii(), "{name}: raw differs from input");
    }
    assert_eq!(helpers(view), expected_helpers, "{name}: the agent tree");
    assert_eq!(
        view.run.counts.unknown_actor, 0,
        "{name}: every message and tool has its owner"
    );
    assert_eq!(
        view.run.root_thread_id.as_ref().map(|id| id.0.clone()),
        session,
        "{name}: root"
    );
    let last_result = last_result.unwrap_or_else(|| panic!("{name}: no result line"));
    let aborted = last_result["terminal_reason"]
        .as_str()
        .is_some_and(|reason| reason.starts_with("aborted"));
    if aborted {
        assert_eq!(view.run.status, RunStatus::Interrupted, "{name}: status");
        assert_eq!(view.run.result, None, "{name}: no result");
    } else {
        // The last non-empty root `result`.
        let results: Vec<String> = finals
            .iter()
            .filter_map(raw_value)
            .filter(|frame| frame["type"] == "result")
            .filter_map(|frame| frame["result"].as_str().map(str::to_owned))
            .filter(|text| !text.is_empty())
            .collect();
        assert_eq!(view.run.status, RunStatus::Done, "{name}: status");
        assert_eq!(view.run.result, results.last().cloned(), "{name}: result");
        assert_eq!(
            view.run.result, last_text,
            "{name}: the result is the root's last text"
        );
        let source = view
            .run
            .result_source
            .clone()
            .unwrap_or_else(|| panic!("{name}: no source"));
        assert_eq!(source.role, Some(Role::Root), "{name}: result source");
    }
}

/// Transcripts: the session file is the root's, each subagent file its
/// agent's (warmup agents aside); 1.0.128 sidechains are derived.
fn check_transcript(name: &str, dir: &Path, view: &RunView, envelopes: &[Envelope]) {
    let finals = finalized(envelopes);
    let mut expected_helpers = BTreeSet::new();
    let mut last_root_text = None;
    for (part, path) in transcript_parts(dir) {
        if let SourcePart::AgentFile { agent_id } = &part {
            let first = String::from_utf8_lossy(&read(&path))
                .lines()
                .next()
                .map(str::to_owned)
                .unwrap_or_default();
            let warmup = serde_json::from_str::<Value>(&first)
                .ok()
                .is_some_and(|line| line["message"]["content"] == "Warmup");
            if !warmup {
                expected_helpers.insert(agent_id.clone());
            }
        }
    }
    let mut session = None;
    for envelope in &finals {
        let Some(frame) = raw_value(envelope) else {
            continue;
        };
        let sequence = envelope.sequence;
        if frame.get("sessionId").is_none() {
            continue;
        }
        session.get_or_insert_with(|| frame["sessionId"].as_str().unwrap_or_default().to_owned());
        match (frame["agentId"].as_str(), frame["isSidechain"].as_bool()) {
            (Some(agent), _) if expected_helpers.contains(agent) => {
                assert_eq!(
                    thread_of(envelope),
                    Some(agent),
                    "{name}: {sequence} is its file's agent's"
                );
                assert_eq!(envelope.actor.role, Role::Helper, "{name}: {sequence}");
            }
            (Some(_), _) => {
                assert_eq!(
                    thread_of(envelope),
                    None,
                    "{name}: {sequence}: a warmup agent stays out of the tree"
                );
            }
            (None, Some(true)) => {
                assert_ne!(
                    envelope.actor.confidence,
                    Confidence::Provider,
                    "{name}: {sequence}: an inline sidechain is never provider-stated"
                );
            }
            (None, _) => {
                assert_eq!(
                    thread_of(envelope),
                    session.as_deref(),
                    "{name}: {sequence} is the root's"
                );
                if frame["type"] == "assistant" && frame["message"]["stop_reason"] == "end_turn" {
                    last_root_text = frame["message"]["content"]
                        .as_array()
                        .and_then(|blocks| {
                            blocks.iter().rev().find_map(|block| block["text"].as_str())
                        })
                        .map(str::to_owned)
                        .or(last_root_text);
                }
            }
        }
    }
    let found: BTreeSet<String> = helpers(view).into_keys().collect();
    if name.starts_with("v1.0.128") {
        // No agent ids at all: each helper is named by its Task call.
        assert!(
            found.iter().all(|id| id.starts_with("toolu_")),
            "{name}: {found:?}"
        );
    } else {
        assert_eq!(found, expected_helpers, "{name}: the agent tree");
    }
    if last_root_text.is_some() {
        assert_eq!(view.run.result, last_root_text, "{name}: result");
    }
}

/// Merging: the transcripts add what stdout lacked, never a line twice.
fn check_merged(name: &str, stream: &RunView, merged: &RunView, envelopes: &[Envelope]) {
    let mut seen = BTreeSet::new();
    for envelope in finalized(envelopes) {
        if let EventBody::Known(Event::Message {
            item_id: Some(item),
            text,
            role,
            ..
        }) = &envelope.event
        {
            assert!(
                seen.insert((item.0.clone(), role.clone(), text.clone())),
                "{name}: message {item} recorded twice"
            );
        }
    }
    assert_eq!(
        merged.run.result, stream.run.result,
        "{name}: merging keeps the result"
    );
    assert_eq!(merged.run.counts.undecoded_lines, 0, "{name}");
    assert_eq!(
        merged.run.status, stream.run.status,
        "{name}: merging keeps the status"
    );
    let stream_helpers: BTreeSet<String> = helpers(stream).into_keys().collect();
    let merged_helpers: BTreeSet<String> = helpers(merged).into_keys().collect();
    assert!(
        stream_helpers.is_subset(&merged_helpers),
        "{name}: merging loses no helper: {stream_helpers:?} ⊄ {merged_helpers:?}"
    );
}

/// Hooks: `agent_id` names the owner; the root's hooks name none.
fn check_hooks(name: &str, envelopes: &[Envelope]) {
    for envelope in finalized(envelopes) {
        let Some(frame) = raw_value(&envelope) else {
            continue;
        };
        let input = if frame.get("input").is_some() {
            &frame["input"]
        } else {
            &frame
        };
        if let Some(agent) = input["agent_id"].as_str() {
            if thread_of(&envelope).is_some() {
                assert_eq!(
                    thread_of(&envelope),
                    Some(agent),
                    "{name}: {} is its agent's",
                    envelope.sequence
                );
            }
        }
    }
}

fn check(name: &str) {
    let dir = capture(name);
    let stdout = stdout_of(&dir);

    let stream = stdout.as_ref().map(|stdout| {
        let mut feed = Feed::new(Format::ClaudeStream);
        feed.part(&SourcePart::Main, stdout);
        let (stream, stream_envelopes) = feed.done();
        check_stream(name, stdout, &stream, &stream_envelopes);
        stream
    });

    let mut feed = Feed::new(Format::ClaudeTranscript);
    feed.transcripts(&dir);
    let (transcript, transcript_envelopes) = feed.done();
    check_transcript(name, &dir, &transcript, &transcript_envelopes);

    // An import references each line instead of copying it, and reads a
    // transcript's message lines straight into their records: the same
    // envelopes, each frame referenced where a copy was.
    let mut feed = Feed::referenced(Format::ClaudeTranscript);
    feed.transcripts(&dir);
    let (imported, imported_envelopes) = feed.done();
    assert_eq!(imported, transcript, "{name}: the imported view");
    assert_eq!(imported_envelopes.len(), transcript_envelopes.len(), "{name}");
    assert_eq!(with_copies(&imported_envelopes, &transcript_envelopes), transcript_envelopes, "{name}");
    assert_eq!(
        imported_envelopes.iter().filter(|envelope| envelope.raw_ref.is_some()).count(),
        transcript_envelopes.iter().filter(|envelope| envelope.raw.is_some()).count(),
        "{name}: every frame referenced"
    );

    let merged = stdout.as_ref().zip(stream.as_ref()).map(|(stdout, stream)| {
        let mut feed = Feed::new(Format::ClaudeStream);
        feed.part(&SourcePart::Main, stdout);
        feed.transcripts(&dir);
        let (merged, merged_envelopes) = feed.done();
        check_merged(name, stream, &merged, &merged_envelopes);
        merged
    });

    let mut feed = Feed::new(Format::ClaudeHook);
    feed.part(&SourcePart::Main, &hooks_of(&dir));
    let (hooks, hook_envelopes) = feed.done();
    check_hooks(name, &hook_envelopes);

    insta::assert_json_snapshot!(
        format!("claude_{name}"),
        json!({"stream": stream, "transcript": transcript, "merged": merged, "hooks": hooks})
    );
}

macro_rules! claude_fixture_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check($name);
            }
        )*
    };
}

claude_fixture_tests! {
    bash_then_agent_fg => "bash_then_agent_fg",
    bg_shell_task => "bg_shell_task",
    followup_same_subagent => "followup_same_subagent",
    interactive_local_commands => "interactive_local_commands",
    nested_fg => "nested_fg",
    parallel_bg => "parallel_bg",
    parallel_fg => "parallel_fg",
    parallel_fg_forward_text => "parallel_fg_forward_text",
    resumed_session => "resumed_session",
    sdk_single_bg => "sdk_single_bg",
    single_bg => "single_bg",
    single_fg => "single_fg",
    single_fg_partial => "single_fg_partial",
    subagent_tool_error_fg => "subagent_tool_error_fg",
    v1_0_128_parallel_explore_missing => "v1.0.128_parallel_explore_missing",
    v1_0_128_single => "v1.0.128_single",
    v2_0_77_single => "v2.0.77_single",
    v2_1_197_parallel => "v2.1.197_parallel",
    v2_1_197_single => "v2.1.197_single",
}

#[test]
fn every_claude_capture_in_the_fixtures_folder_has_a_row() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/claude");
    let source = include_str!("claude.rs");
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{e}")) {
        let entry = entry.unwrap_or_else(|e| panic!("{e}"));
        if entry.path().is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                source.contains(&format!("=> \"{name}\"")),
                "capture {name} has no row"
            );
        }
    }
}

mod copied_reports {
    //! A root that passes its subagent's report off as its own answer, on
    //! every Claude version we hold a single foreground subagent capture of.
    //! Stdout forwards no text of a foreground subagent, so its final message
    //! is the report taken from the root's tool_result (`derived`).

    use agentrace_core::model::{FinalMessageConfidence, Severity, ThreadId, Warning};
    use agentrace_core::recorder::{Format, SourcePart};
    use agentrace_core::state::{AgentNode, RunView};
    use agentrace_core::warnings::{with_detected, Evidence, WarningConfig};

    use super::{capture, read, Feed};

    /// What the subagent of every one of these captures reports.
    const REPORT: &str = "SUBAGENT-A-DONE: the command printed hello-from-A.";

    /// `(capture, the subagent's thread, the root's own final answer)`.
    const CAPTURES: [(&str, &str, &str); 4] = [
        (
            "single_fg",
            "a3723d29fe24feb6b",
            "ROOT-FINAL: all subagents finished for scenario single_fg.",
        ),
        (
            "v1.0.128_single",
            "toolu_mock0001_1",
            "ROOT-FINAL: all subagents finished for scenario single.",
        ),
        (
            "v2.0.77_single",
            "toolu_mock0004_1",
            "ROOT-FINAL: all subagents finished for scenario single.",
        ),
        (
            "v2.1.197_single",
            "acc4f874a9070d071",
            "ROOT-FINAL: all subagents finished for scenario single.",
        ),
    ];

    fn stdout(name: &str) -> String {
        String::from_utf8(read(&capture(name).join("stream.jsonl")))
            .unwrap_or_else(|error| panic!("{name}: {error}"))
    }

    /// The capture's stdout with the root's last text and the `result`
    /// line's `result` (the only two places the answer is) made the report.
    fn copied(name: &str, answer: &str) -> String {
        let text = stdout(name);
        assert_eq!(
            text.matches(answer).count(),
            2,
            "{name} changed; update this test"
        );
        text.replace(answer, REPORT)
    }

    /// The stream's view with the detectors' warnings, as `show` gives it.
    fn checked(stdout: &str) -> RunView {
        let mut feed = Feed::new(Format::ClaudeStream);
        feed.part(&SourcePart::Main, stdout.as_bytes());
        let (view, envelopes) = feed.done();
        let mut evidence = Evidence::default();
        for envelope in &envelopes {
            evidence.apply(envelope);
        }
        with_detected(view, &evidence, None, &WarningConfig::default()).0
    }

    /// The one helper's final message and how it is known.
    fn helper_final(view: &RunView) -> (Option<String>, Option<FinalMessageConfidence>) {
        let [root] = view.agents.as_slice() else {
            panic!("one root expected: {:?}", view.agents);
        };
        let [helper]: &[AgentNode] = root.children.as_slice() else {
            panic!("one helper expected: {:?}", root.children);
        };
        (
            helper.final_message.clone(),
            helper.final_message_confidence,
        )
    }

    #[test]
    fn a_root_answer_equal_to_its_foreground_subagent_report_is_helper_result_used_as_done() {
        for (name, helper, answer) in CAPTURES {
            let view = checked(&copied(name, answer));
            assert_eq!(
                (helper_final(&view), view.run.result.clone(), view.warnings),
                (
                    (Some(REPORT.to_owned()), Some(FinalMessageConfidence::Derived)),
                    Some(REPORT.to_owned()),
                    vec![Warning {
                        code: "helper_result_used_as_done".to_owned(),
                        severity: Severity::Error,
                        message: "the run's result is word for word the final message of Echo task A [general-purpose]".to_owned(),
                        event_sequence: None,
                        thread_id: Some(ThreadId::from(helper)),
                    }]
                ),
                "{name}"
            );
        }
    }

    #[test]
    fn a_root_answer_of_its_own_after_a_foreground_subagent_raises_no_warning() {
        for (name, _, answer) in CAPTURES {
            let view = checked(&stdout(name));
            assert_eq!(
                (helper_final(&view), view.run.result.clone(), view.warnings),
                (
                    (
                        Some(REPORT.to_owned()),
                        Some(FinalMessageConfidence::Derived)
                    ),
                    Some(answer.to_owned()),
                    Vec::new()
                ),
                "{name}"
            );
        }
    }
}

mod properties {
    //! Claude properties: no input makes the attributor panic, every line
    //! is kept, and the written log folds back into the live state.

    use agentrace_core::model::{Envelope, RunId};
    use agentrace_core::recorder::{Format, SourcePart};
    use agentrace_core::state::RunState;
    use proptest::prelude::*;
    use serde_json::json;

    use super::Feed;

    fn frame() -> impl Strategy<Value = serde_json::Value> {
        let spawn = prop_oneof![Just(None), Just(Some("toolu_1")), Just(Some("toolu_2"))];
        let agent = prop_oneof![Just(None), Just(Some("a1")), Just(Some("a2"))];
        (0..10u8, spawn, agent, "[a-z ]{0,8}").prop_map(|(kind, spawn, agent, text)| match kind {
            0 => json!({"type":"system","subtype":"init","session_id":"s"}),
            1 => json!({"type":"assistant","session_id":"s","parent_tool_use_id":null,"message":{"id":"m1","content":[{"type":"tool_use","id":spawn.unwrap_or("toolu_1"),"name":"Agent","input":{"prompt":text}}],"usage":{"input_tokens":3,"output_tokens":1}}}),
            2 => json!({"type":"assistant","session_id":"s","parent_tool_use_id":spawn,"agent_id":agent,"uuid":text,"message":{"id":text,"content":[{"type":"text","text":text}]}}),
            3 => json!({"type":"system","subtype":"task_started","session_id":"s","task_id":agent,"tool_use_id":spawn,"task_type":"local_agent","spawn_depth":1}),
            4 => json!({"type":"system","subtype":"task_notification","session_id":"s","task_id":agent,"tool_use_id":spawn,"status":"completed","summary":text}),
            5 => json!({"type":"user","session_id":"s","parent_tool_use_id":null,"message":{"content":[{"type":"tool_result","tool_use_id":spawn.unwrap_or("toolu_2"),"content":text}]},"tool_use_result":{"agentId":agent,"status":"completed"}}),
            6 => json!({"type":"result","subtype":"success","session_id":"s","result":text,"usage":{"input_tokens":5,"output_tokens":2}}),
            7 => json!({"sessionId":"s","isSidechain":true,"agentId":agent,"type":"user","uuid":text,"parentUuid":null,"message":{"role":"user","content":text}}),
            8 => json!({"session_id":"s","hook_event_name":"SubagentStart","agent_id":agent,"agent_type":"general-purpose"}),
            _ => json!({"session_id":"s","hook_event_name":"PreToolUse","agent_id":agent,"tool_name":"Agent","tool_use_id":spawn,"tool_input":{"prompt":text}}),
        })
    }

    fn lines(frames: &[serde_json::Value]) -> Vec<u8> {
        let mut out = Vec::new();
        for frame in frames {
            out.extend(serde_json::to_vec(frame).unwrap_or_default());
            out.push(b'\n');
        }
        out
    }

    fn replay(envelopes: &[Envelope]) -> RunState {
        let mut state = RunState::new(RunId::from("run-test"));
        for envelope in envelopes {
            let line = serde_json::to_string(envelope).unwrap_or_default();
            let read: Envelope =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            state.apply(&read);
        }
        state
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn claude_live_equals_replay(frames in proptest::collection::vec(frame(), 0..30)) {
            let mut feed = Feed::new(Format::ClaudeStream);
            feed.part(&SourcePart::Main, &lines(&frames));
            let (view, envelopes) = feed.done();
            prop_assert_eq!(replay(&envelopes).view(), view);
            prop_assert_eq!(envelopes.iter().filter(|e| e.raw.is_some()).count(), frames.len());
        }

        #[test]
        fn the_claude_decoder_never_panics_and_keeps_every_line(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let mut feed = Feed::new(Format::ClaudeTranscript);
            feed.part(&SourcePart::AgentFile { agent_id: "a1".to_owned() }, &bytes);
            let (_, envelopes) = feed.done();
            let non_blank = bytes
                .split(|byte| *byte == b'\n')
                .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
                .count();
            prop_assert_eq!(envelopes.iter().filter(|e| e.raw.is_some()).count(), non_blank);
        }
    }
}

mod rules {
    //! Claude rules on small frame lists shaped like the captures the notes
    //! describe (including the ones kept back as acceptance cases).

    use agentrace_core::model::{AgentStatus, FinalMessageConfidence, RunStatus};
    use agentrace_core::recorder::{Format, SourcePart};
    use agentrace_core::state::{AgentNode, RunView};
    use serde_json::{json, Value};

    use super::Feed;

    const SESSION: &str = "7516f388-0a94-4647-8ba5-1b6a0c75bc73";

    fn run(parts: &[(SourcePart, Vec<Value>)]) -> RunView {
        let mut feed = Feed::new(Format::ClaudeStream);
        for (part, frames) in parts {
            let mut bytes = Vec::new();
            for frame in frames {
                bytes.extend(serde_json::to_vec(frame).unwrap_or_default());
                bytes.push(b'\n');
            }
            feed.part(part, &bytes);
        }
        feed.done().0
    }

    fn stream(frames: Vec<Value>) -> RunView {
        run(&[(SourcePart::Main, frames)])
    }

    /// `(depth, threadId, status, final message)` depth first.
    fn tree(view: &RunView) -> Vec<(usize, String, AgentStatus, Option<String>)> {
        fn walk(
            nodes: &[AgentNode],
            depth: usize,
            out: &mut Vec<(usize, String, AgentStatus, Option<String>)>,
        ) {
            for node in nodes {
                out.push((
                    depth,
                    node.thread_id.0.clone(),
                    node.status,
                    node.final_message.clone(),
                ));
                walk(&node.children, depth + 1, out);
            }
        }
        let mut out = Vec::new();
        walk(&view.agents, 0, &mut out);
        out
    }

    fn init() -> Value {
        json!({"type":"system","subtype":"init","session_id":SESSION,"uuid":"init-1"})
    }

    fn agent_call(id: &str) -> Value {
        json!({"type":"assistant","session_id":SESSION,"parent_tool_use_id":null,"uuid":format!("u-{id}"),
               "message":{"id":format!("msg-{id}"),"role":"assistant","content":[{"type":"tool_use","id":id,"name":"Agent",
               "input":{"description":"Echo task S","prompt":"[[sub:S]] go","subagent_type":"general-purpose","run_in_background":false}}]}})
    }

    fn task_started(agent: &str, tool_use: &str) -> Value {
        json!({"type":"system","subtype":"task_started","task_id":agent,"tool_use_id":tool_use,"description":"Echo task S",
               "subagent_type":"general-purpose","is_backgrounded":false,"spawn_depth":1,"task_type":"local_agent","session_id":SESSION})
    }

    fn root_text(uuid: &str, text: &str) -> Value {
        json!({"type":"assistant","session_id":SESSION,"parent_tool_use_id":null,"uuid":uuid,
               "message":{"id":format!("msg-{uuid}"),"role":"assistant","content":[{"type":"text","text":text}]}})
    }

    fn node(
        depth: usize,
        thread: &str,
        status: AgentStatus,
        last: Option<&str>,
    ) -> (usize, String, AgentStatus, Option<String>) {
        (depth, thread.to_owned(), status, last.map(str::to_owned))
    }

    #[test]
    fn an_interrupted_query_interrupts_the_run_and_its_killed_subagent() {
        let view = stream(vec![
            init(),
            agent_call("toolu_1"),
            task_started("a8738dbc645e378d9", "toolu_1"),
            json!({"type":"system","subtype":"task_updated","task_id":"a8738dbc645e378d9","patch":{"status":"killed"},"session_id":SESSION}),
            json!({"type":"system","subtype":"task_notification","task_id":"a8738dbc645e378d9","tool_use_id":"toolu_1","status":"stopped","summary":"Echo task S","session_id":SESSION}),
            json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"The user doesn't want to proceed with this tool use.","is_error":true,"tool_use_id":"toolu_1"}]},
                   "parent_tool_use_id":null,"session_id":SESSION,"uuid":"u-rejected","tool_use_result":"User rejected tool use"}),
            json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"parent_tool_use_id":null,"session_id":SESSION,"uuid":"u-marker"}),
            json!({"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":3,"terminal_reason":"aborted_tools",
                   "errors":["[ede_diagnostic] result_type=user"],"session_id":SESSION,"uuid":"r-1"}),
        ]);
        assert_eq!(
            (
                view.run.status,
                view.run.result.clone(),
                view.run.error.clone(),
                tree(&view)
            ),
            (
                RunStatus::Interrupted,
                None,
                Some("[ede_diagnostic] result_type=user".to_owned()),
                vec![
                    node(0, SESSION, AgentStatus::Interrupted, None),
                    node(1, "a8738dbc645e378d9", AgentStatus::Interrupted, None),
                ]
            )
        );
    }

    #[test]
    fn a_subagent_that_fails_at_the_api_fails_alone_and_its_retries_are_its_own() {
        let error = "Agent terminated early due to an API error: API Error: 500";
        let view = stream(vec![
            init(),
            agent_call("toolu_1"),
            task_started("ab72255489152806e", "toolu_1"),
            json!({"type":"tool_progress","tool_use_id":"agent_msg_1","tool_name":"Agent","parent_tool_use_id":"toolu_1","session_id":SESSION,
                   "subagent_retry":{"agent_id":"ab72255489152806e","attempt":1,"max_retries":2,"error_status":500}}),
            json!({"type":"system","subtype":"task_updated","task_id":"ab72255489152806e","patch":{"status":"failed","error":error},"session_id":SESSION}),
            json!({"type":"system","subtype":"task_notification","task_id":"ab72255489152806e","tool_use_id":"toolu_1","status":"failed","summary":error,"session_id":SESSION}),
            json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":error,"is_error":true,"tool_use_id":"toolu_1"}]},
                   "parent_tool_use_id":null,"session_id":SESSION,"uuid":"u-error","tool_use_result":format!("Error: {error}")}),
            root_text("u-final", "ROOT-FINAL: a subagent call returned an error."),
            json!({"type":"result","subtype":"success","is_error":false,"result":"ROOT-FINAL: a subagent call returned an error.","session_id":SESSION,"uuid":"r-1"}),
        ]);
        assert_eq!(
            (
                view.run.status,
                view.run.result.clone(),
                tree(&view),
                view.run.counts.unknown_actor
            ),
            (
                RunStatus::Done,
                Some("ROOT-FINAL: a subagent call returned an error.".to_owned()),
                vec![
                    node(
                        0,
                        SESSION,
                        AgentStatus::Completed,
                        Some("ROOT-FINAL: a subagent call returned an error.")
                    ),
                    node(1, "ab72255489152806e", AgentStatus::Failed, Some(error)),
                ],
                0
            )
        );
    }

    #[test]
    fn a_background_shell_started_by_a_subagent_is_a_command_of_that_subagent() {
        let mut feed = Feed::new(Format::ClaudeStream);
        let frames = [
            init(),
            agent_call("toolu_1"),
            task_started("a6f30987afd19e947", "toolu_1"),
            json!({"type":"system","subtype":"task_started","task_id":"buzonh5jd","owned_by_subagent":true,"tool_use_id":"toolu_2",
                   "description":"Background shell of subagent G","is_backgrounded":true,"parent_task_id":"a6f30987afd19e947","task_type":"local_bash","session_id":SESSION}),
            json!({"type":"system","subtype":"task_notification","task_id":"buzonh5jd","owned_by_subagent":true,"tool_use_id":"toolu_2","status":"completed","session_id":SESSION}),
        ];
        let mut bytes = Vec::new();
        for frame in &frames {
            bytes.extend(serde_json::to_vec(frame).unwrap_or_default());
            bytes.push(b'\n');
        }
        feed.part(&SourcePart::Main, &bytes);
        let (view, envelopes) = feed.done();
        let commands: Vec<(String, Option<String>)> = envelopes
            .iter()
            .filter_map(|envelope| match &envelope.event {
                agentrace_core::model::EventBody::Known(
                    agentrace_core::model::Event::ItemStarted { item_type, .. }
                    | agentrace_core::model::Event::ItemCompleted { item_type, .. },
                ) if item_type == "backgroundCommand" => Some((
                    envelope.event.type_name(),
                    envelope.actor.thread_id.as_ref().map(|id| id.0.clone()),
                )),
                _ => None,
            })
            .collect();
        let owner = Some("a6f30987afd19e947".to_owned());
        assert_eq!(
            (commands, tree(&view).len()),
            (
                vec![
                    ("item_started".to_owned(), owner.clone()),
                    ("item_completed".to_owned(), owner)
                ],
                2
            )
        );
    }

    /// A 2.1.x foreground run of subagent `a1` ended by `task_updated`,
    /// then the root's tool_result with the hand-back frame as its only
    /// text (no structured result), and `between` in the middle.
    fn handed_back(between: Vec<Value>) -> Vec<Value> {
        let frame = "  <tools-used-before-summary>Bash</tools-used-before-summary>\n  \n[Subagent hand-back] The text below is the final report of a subagent. The report follows:\n  Line one of the report.\n  \n    [Subagent hand-back] indented, so the report's own text.\nagentId: a1 (use SendMessage with to: 'a1' to continue this agent)\n<usage>subagent_tokens: 2827\ntool_uses: 1</usage>";
        let mut frames = vec![init(), agent_call("toolu_1"), task_started("a1", "toolu_1")];
        frames.extend(between);
        frames.extend([
            json!({"type":"system","subtype":"task_updated","task_id":"a1","patch":{"status":"completed"},"session_id":SESSION}),
            json!({"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":[{"type":"text","text":frame}]}]},
                   "parent_tool_use_id":null,"session_id":SESSION,"uuid":"u-result"}),
        ]);
        frames
    }

    /// The first helper's `(final message, confidence)`.
    fn helper_final(view: &RunView) -> (Option<String>, Option<FinalMessageConfidence>) {
        let helper = &view.agents[0].children[0];
        (
            helper.final_message.clone(),
            helper.final_message_confidence,
        )
    }

    #[test]
    fn a_report_under_a_hand_back_frame_is_the_helpers_derived_final_message_without_the_frame() {
        let view = stream(handed_back(Vec::new()));
        assert_eq!(
            helper_final(&view),
            (
                Some("Line one of the report.\n\n  [Subagent hand-back] indented, so the report's own text.".to_owned()),
                Some(FinalMessageConfidence::Derived)
            )
        );
    }

    #[test]
    fn a_helpers_own_last_text_wins_over_the_report_its_spawner_received() {
        let own = json!({"type":"assistant","session_id":SESSION,"parent_tool_use_id":"toolu_1","agent_id":"a1","uuid":"u-own",
                         "message":{"id":"msg-own","role":"assistant","content":[{"type":"text","text":"My own last words."}]}});
        let before = stream(handed_back(vec![own.clone()]));
        // The same text read after the tool_result (a transcript joined later).
        let mut frames = handed_back(Vec::new());
        frames.push(own);
        let after = stream(frames);
        let stated = (
            Some("My own last words.".to_owned()),
            Some(FinalMessageConfidence::Stated),
        );
        assert_eq!(
            (helper_final(&before), helper_final(&after)),
            (stated.clone(), stated)
        );
    }

    #[test]
    fn a_helper_seen_before_its_agent_id_keeps_the_tool_use_name_and_its_file_joins_it() {
        let view = run(&[
            (
                SourcePart::Main,
                vec![
                    init(),
                    agent_call("toolu_mock0004_1"),
                    json!({"type":"assistant","session_id":SESSION,"parent_tool_use_id":"toolu_mock0004_1","uuid":"u-sub",
                           "message":{"id":"msg-sub","role":"assistant","content":[{"type":"tool_use","id":"toolu_bash","name":"Bash","input":{"command":"echo hi"}}]}}),
                    json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"SUBAGENT-A-DONE","tool_use_id":"toolu_mock0004_1"}]},
                           "parent_tool_use_id":null,"session_id":SESSION,"uuid":"u-result","tool_use_result":{"status":"completed","agentId":"ad839b7"}}),
                ],
            ),
            (
                SourcePart::AgentFile {
                    agent_id: "ad839b7".to_owned(),
                },
                vec![
                    json!({"parentUuid":"u-sub","isSidechain":true,"sessionId":SESSION,"agentId":"ad839b7","type":"assistant","uuid":"u-sub-text",
                            "message":{"id":"msg-sub-2","role":"assistant","content":[{"type":"text","text":"SUBAGENT-A-DONE"}]}}),
                ],
            ),
        ]);
        assert_eq!(
            tree(&view),
            vec![
                node(0, SESSION, AgentStatus::Running, None),
                node(
                    1,
                    "toolu_mock0004_1",
                    AgentStatus::Completed,
                    Some("SUBAGENT-A-DONE")
                ),
            ]
        );
    }

    /// An interactive 2.1.332 session writes its replies with the session
    /// named twice (`sessionId` and `session_id`, as in
    /// `interactive_local_commands`): such a line was read as nothing (a
    /// member and its alias make a duplicate member), so the session had
    /// no answer and its root no reply.
    #[test]
    fn a_reply_that_names_its_session_twice_is_read() {
        let view = stream(vec![
            json!({"parentUuid":null,"isSidechain":false,"sessionId":SESSION,"type":"user","uuid":"u-prompt","turnOrigin":"human",
                    "message":{"role":"user","content":"Say hello."}}),
            json!({"parentUuid":"u-prompt","isSidechain":false,"sessionId":SESSION,"session_id":SESSION,"type":"assistant","uuid":"u-reply",
                    "message":{"id":"msg-1","role":"assistant","content":[{"type":"text","text":"hello."}],"stop_reason":"end_turn"}}),
        ]);
        assert_eq!(
            (view.run.status, view.run.result.clone(), tree(&view)),
            (RunStatus::Done, Some("hello.".to_owned()), vec![node(0, SESSION, AgentStatus::Completed, Some("hello."))])
        );
    }

    /// `/compact` makes its summary as an agent of its own, and the hooks
    /// say so with a `SubagentStop` (after `PreCompact`, with no
    /// `SubagentStart`, its type empty): read from a session's hook inputs,
    /// the compaction was a helper of no name under the root, completed,
    /// with the summary as its answer.
    #[test]
    fn a_compaction_is_no_subagent_of_the_root_in_its_hooks() {
        let hooks = super::read(&super::capture("interactive_local_commands").join("hooks.jsonl"));
        let mut feed = Feed::new(agentrace_core::recorder::Format::ClaudeHook);
        feed.part(&SourcePart::Main, &hooks);
        let view = feed.done().0;
        assert_eq!(
            (view.run.result.clone(), tree(&view)),
            (
                Some("MOCK-REPLY-33: hello.".to_owned()),
                vec![node(0, "efd39c8b-8873-452e-95de-df5a92044bb7", AgentStatus::Completed, Some("MOCK-REPLY-33: hello."))]
            )
        );
    }
}
