//! The run book (issue 18): the one fold every reader shares. For every
//! capture and every cut of its envelopes, the records a reader gets by
//! keeping the last change of each equal the book's records, whether the
//! log ends with `session_ended` or not (the fallback rule); and a
//! `session_ended` settles what is live, once, by one rule.

use std::path::{Path, PathBuf};

use agentrace_core::book::RunBook;
use agentrace_core::childwork::{fold, ChangeKind, ChildWorkChange, ChildWorkRecord, ChildWorkState, Outcome};
use agentrace_core::model::{
    Actor, Envelope, Event, EventBody, RunId, RunStatus, SessionEndReason, Timestamp, LOG_VERSION,
};

use super::support::{record, record_claude};

fn fixtures() -> Vec<(String, Vec<Envelope>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut all = Vec::new();
    for folder in ["codex", "codex-0.171"] {
        for dir in dirs(&root.join(folder)) {
            let input = dir.join("server.jsonl");
            if input.is_file() {
                let bytes = std::fs::read(&input).unwrap_or_else(|e| panic!("{e}"));
                all.push((input.display().to_string(), record(&bytes).1));
            }
        }
    }
    for dir in dirs(&root.join("claude")) {
        let input = dir.join("stream.jsonl");
        if input.is_file() {
            all.push((input.display().to_string(), claude(&input)));
        }
    }
    all
}

fn dirs(folder: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(folder)
        .map(|entries| entries.filter_map(Result::ok).map(|entry| entry.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

fn claude(input: &Path) -> Vec<Envelope> {
    let bytes = std::fs::read(input).unwrap_or_else(|e| panic!("{e}"));
    record_claude(&bytes)
}

/// The `session_ended` envelope after `envelopes`.
fn session_end(envelopes: &[Envelope]) -> Envelope {
    let last = envelopes.last().unwrap_or_else(|| panic!("no envelopes"));
    Envelope {
        version: LOG_VERSION,
        timestamp: last.timestamp,
        sequence: last.sequence + 1,
        run_id: last.run_id.clone(),
        direction: None,
        actor: Actor::unknown("agentrace"),
        event: EventBody::Known(Event::SessionEnded {
            reason: SessionEndReason::EndOfInput,
        }),
        raw: None,
        raw_ref: None,
        raw_unavailable: None,
    }
}

/// The last change of each record, in admission order: what a reader of
/// the changes (attach, the stream) holds.
fn last_of_each(changes: &[ChildWorkChange]) -> Vec<ChildWorkRecord> {
    let mut records: Vec<ChildWorkRecord> = Vec::new();
    for change in changes {
        match records
            .iter_mut()
            .find(|record| record.child_work_id == change.record.child_work_id)
        {
            Some(record) => *record = change.record.clone(),
            None => records.push(change.record.clone()),
        }
    }
    records
}

/// `records` without their cost, as the bare reducer has them: it knows
/// no prices (the book hands it the run state's), so neither a cost nor the
/// `updatedAt` a change of cost alone moved (taken from the reducer's
/// record: not compared here, but by the changes-equal-records test).
fn unpriced(records: Vec<ChildWorkRecord>, reducer: &[ChildWorkRecord]) -> Vec<ChildWorkRecord> {
    records
        .into_iter()
        .map(|record| ChildWorkRecord {
            updated_at: reducer
                .iter()
                .find(|bare| bare.child_work_id == record.child_work_id)
                .map_or(record.updated_at, |bare| bare.updated_at),
            cost: None,
            cost_status: None,
            previous_invocations: record
                .previous_invocations
                .iter()
                .map(|invocation| agentrace_core::childwork::Invocation { cost: None, ..invocation.clone() })
                .collect(),
            ..record
        })
        .collect()
}

fn book_of(envelopes: &[Envelope]) -> (RunBook, Vec<ChildWorkChange>) {
    let mut book = RunBook::new(RunId::from("run-test"));
    let mut changes = Vec::new();
    for envelope in envelopes {
        changes.extend(book.apply(envelope).records);
    }
    (book, changes)
}

#[test]
fn the_changes_of_every_cut_of_every_capture_end_at_the_records_the_book_shows() {
    for (name, envelopes) in fixtures() {
        for cut in 1..=envelopes.len() {
            let mut log = envelopes[..cut].to_vec();
            let (book, changes) = book_of(&log);
            assert_eq!(last_of_each(&changes), book.records(), "{name} cut at {cut}");
            log.push(session_end(&log));
            let (book, changes) = book_of(&log);
            assert_eq!(
                (last_of_each(&changes), book.session_over()),
                (book.records(), true),
                "{name} cut at {cut}, session ended"
            );
        }
    }
}

#[test]
fn a_session_ended_settles_what_is_live_as_the_reducer_would_at_the_session_end() {
    for (name, envelopes) in fixtures() {
        for cut in 1..=envelopes.len() {
            let mut log = envelopes[..cut].to_vec();
            log.push(session_end(&log));
            let (book, _) = book_of(&log);
            let (reducer, _) = fold(&envelopes[..cut], true);
            let reducer = reducer.records();
            assert_eq!(unpriced(book.records(), &reducer), reducer, "{name} cut at {cut}");
        }
    }
}

/// Without a `session_ended` nothing is settled by a guess: the records
/// are the reducer's as folded (a child at work after its root's turn
/// ended still reads live), and the session is over once the run is not
/// running, no record is live, and no Claude child's report waits for the
/// root (a child that ended after its root's turn completed, with no root
/// turn since: Claude Code hands the root its report, which it answers).
#[test]
fn a_log_without_session_ended_shows_its_records_as_folded_and_is_over_once_nothing_runs() {
    let mut live_after_the_root = 0;
    let mut reports_waiting = 0;
    for (name, envelopes) in fixtures() {
        // After each envelope: whether a Claude child's report waits for
        // the root, from the reducer's endings and the run's status.
        let claude = name.contains("/claude/");
        let mut waiting_after = Vec::new();
        let (mut reducer, mut waiting) = (agentrace_core::childwork::ChildWork::new(), false);
        let mut state = agentrace_core::RunState::new(RunId::from("run-test"));
        for envelope in &envelopes {
            state.apply(envelope);
            let ended = reducer.apply(envelope).iter().any(|change| change.change == ChangeKind::Ended);
            if state.status() == RunStatus::Running {
                waiting = false;
            } else if claude && ended && state.status() == RunStatus::Done {
                waiting = true;
            }
            waiting_after.push(waiting);
        }
        for cut in 1..=envelopes.len() {
            let (book, _) = book_of(&envelopes[..cut]);
            let (reducer, _) = fold(&envelopes[..cut], false);
            let reducer = reducer.records();
            let live = reducer.iter().any(|record| record.state != ChildWorkState::Ended);
            let running = book.state().status() == RunStatus::Running;
            let waiting = waiting_after[cut - 1];
            if live && !running {
                live_after_the_root += 1;
            }
            if waiting && !live {
                reports_waiting += 1;
            }
            assert_eq!(
                (unpriced(book.records(), &reducer), book.session_over(), book.children_working()),
                (reducer, !running && !live && !waiting, live),
                "{name} cut at {cut}"
            );
        }
    }
    assert!(live_after_the_root > 0, "no capture has a child at work after its root's turn");
    assert!(reports_waiting > 0, "no capture has a report waiting for its root");
}

/// The envelopes of `v1_parallel`'s first 20 lines: a child is mid-turn.
fn cut_mid_child() -> Vec<Envelope> {
    let bytes = std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex/v1_parallel/server.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&bytes);
    let cut: String = text.lines().take(20).map(|line| format!("{line}\n")).collect();
    record(cut.as_bytes()).1
}

/// id, change, state, outcome, end.
type Settled = (String, ChangeKind, ChildWorkState, Option<Outcome>, Option<Timestamp>);

#[test]
fn a_child_cut_mid_turn_settles_unknown_on_session_ended_with_one_settled_change() {
    let mut envelopes = cut_mid_child();
    let (mut book, _) = book_of(&envelopes);
    let live: Vec<String> = book
        .records()
        .iter()
        .filter(|record| record.state == ChildWorkState::Working)
        .map(|record| record.child_work_id.to_string())
        .collect();
    assert!(!live.is_empty(), "a child is mid-turn at line 20");
    let end = session_end(&envelopes);
    let changes = book.apply(&end).records;
    envelopes.push(end.clone());
    let settled: Vec<Settled> = changes
        .iter()
        .map(|change| {
            (
                change.record.child_work_id.to_string(),
                change.change,
                change.record.state,
                change.record.outcome,
                change.record.ended_at,
            )
        })
        .collect();
    let expected: Vec<_> = live
        .iter()
        .map(|id| (id.clone(), ChangeKind::Settled, ChildWorkState::Ended, Some(Outcome::Unknown), Some(end.timestamp)))
        .collect();
    assert_eq!((settled, book.session_over()), (expected, true));
    // A line trailing the end leaves the session ended; nothing settles
    // twice.
    let mut trailing = end.clone();
    trailing.sequence += 1;
    trailing.event = EventBody::Known(Event::Dropped {
        direction: None,
        bytes: 0,
    });
    let changes = book.apply(&trailing);
    assert_eq!((changes.records, book.session_over()), (vec![], true));
}

/// A session that ends while its root's turn and a child's are open is
/// over though its run is `running`: the record says `sessionEnded`, and
/// its child is no longer `silent_agent` (it is gone, not quiet: a reading
/// a week later called it silent for a week). Before the end, neither.
#[test]
fn a_session_ended_mid_turn_is_marked_and_its_helpers_are_not_silent() {
    use agentrace_core::warnings::WarningConfig;
    let envelopes = cut_mid_child();
    let (mut book, _) = book_of(&envelopes);
    let end = session_end(&envelopes);
    let an_hour_later = Timestamp::from_millis(end.timestamp.millis() + 3_600_000);
    let judged = |book: &RunBook| {
        let (view, _) = book.checked_view(&WarningConfig::default(), Some(an_hour_later), 0);
        let silent = view.warnings.iter().filter(|warning| warning.code == "silent_agent").count();
        let record = serde_json::to_value(book.state().summary()).unwrap_or_default();
        (view.run.status, view.run.session_ended, record.get("sessionEnded").cloned(), silent > 0)
    };
    let before = judged(&book);
    book.apply(&end);
    assert_eq!(
        (before, judged(&book)),
        ((RunStatus::Running, false, None, true), (RunStatus::Running, true, Some(serde_json::json!(true)), false))
    );
}

#[test]
fn a_turn_after_session_ended_opens_the_session_again() {
    let bytes = std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex/v1_followup/server.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, envelopes) = record(&bytes);
    let second_turn = envelopes
        .iter()
        .rposition(|envelope| {
            matches!(envelope.event, EventBody::Known(Event::TurnStarted { .. }))
                && envelope.actor.role == agentrace_core::model::Role::Root
        })
        .unwrap_or_else(|| panic!("no root turn"));
    let mut book = RunBook::new(RunId::from("run-test"));
    for envelope in &envelopes[..second_turn] {
        book.apply(envelope);
    }
    book.apply(&session_end(&envelopes[..second_turn]));
    let over_at_end = book.session_over();
    book.apply(&envelopes[second_turn]);
    assert_eq!((over_at_end, book.session_over()), (true, false));
}

/// Every agent of the tree, depth first.
fn all_agents(nodes: &[agentrace_core::state::AgentNode]) -> Vec<&agentrace_core::state::AgentNode> {
    let mut all = Vec::new();
    for node in nodes {
        all.push(node);
        all.extend(all_agents(&node.children));
    }
    all
}

/// A child's record carries what its requests cost, priced by the same
/// rule as its agent in the tree: after the whole of every capture, each
/// agent record that reported usage shows its agent's cost and how
/// complete it is; while it works, each change of its cost is an `updated`
/// change of its record, so a reader of the changes sees it move.
#[test]
fn a_child_record_carries_its_agents_cost_as_the_tree_prices_it() {
    let mut priced = 0;
    for (name, envelopes) in fixtures() {
        let (book, changes) = book_of(&envelopes);
        let agents = book.state().agents();
        let agents = all_agents(&agents);
        for record in book.records() {
            let Some(node) = agents.iter().find(|node| node.thread_id.as_str() == record.provider_id) else {
                continue;
            };
            if node.tokens.is_none() {
                assert_eq!((record.cost, record.cost_status), (None, None), "{name}: {}", record.label);
                continue;
            }
            priced += 1;
            assert_eq!(
                (record.cost, record.cost_status),
                (node.cost, Some(node.cost_status)),
                "{name}: {}",
                record.label
            );
        }
        assert_eq!(last_of_each(&changes), book.records(), "{name}");
    }
    assert!(priced > 5, "only {priced} records were priced");
}

/// A Claude capture's transcripts (main file, agent metas and files), their
/// lines merged by time as Claude Code wrote them, fed as an import does.
fn claude_transcripts_in_time_order(name: &str) -> Vec<Envelope> {
    use agentrace_core::recorder::{Format, SourcePart};
    let mut lines: Vec<(Timestamp, SourcePart, Vec<u8>)> = Vec::new();
    for (part, path) in super::claude::transcript_parts(&super::claude::capture(name)) {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        if matches!(part, SourcePart::AgentMeta { .. }) {
            // Written at the spawn: before the helper's first line.
            lines.push((Timestamp::from_millis(0), part, text.into_bytes()));
            continue;
        }
        for line in text.lines() {
            let at = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|value| value["timestamp"].as_str().and_then(Timestamp::parse))
                .unwrap_or_else(|| lines.last().map_or(Timestamp::from_millis(0), |last| last.0));
            lines.push((at, part.clone(), line.as_bytes().to_vec()));
        }
    }
    lines.sort_by_key(|(at, _, _)| *at);
    let mut recorder = agentrace_core::Recorder::new(RunId::from("run-test"), Format::ClaudeTranscript);
    let mut envelopes = recorder.start(Timestamp::from_millis(0));
    for (number, (at, part, bytes)) in lines.iter().enumerate() {
        envelopes.extend(recorder.push_part(
            part,
            &agentrace_core::InputLine { bytes, line_number: number as u64 + 1, observed_at: *at, direction: None, truncated_from: None },
        ));
    }
    envelopes
}

/// In a Claude session whose helper works in the background, the helper's
/// report goes to the root, which answers it in a new turn: the session is
/// over only once the root's last turn ended, at no cut before (it was
/// over between the helper's end and the root's next turn, and `watch
/// --on-end` fired there with the root's interim answer).
#[test]
fn a_claude_session_is_not_over_while_a_background_helpers_report_waits_for_the_root() {
    let mut waiting = Vec::new();
    for name in ["single_bg", "parallel_bg", "sdk_single_bg", "followup_same_subagent"] {
        let envelopes = claude_transcripts_in_time_order(name);
        let last_root_end = envelopes
            .iter()
            .rposition(|envelope| {
                matches!(envelope.event, EventBody::Known(Event::TurnCompleted { .. }))
                    && envelope.actor.role == agentrace_core::model::Role::Root
            })
            .unwrap_or_else(|| panic!("{name}: the root's turn never ends"));
        let mut book = RunBook::new(RunId::from("run-test"));
        let mut over_before_the_end = Vec::new();
        let mut pending = 0;
        for (index, envelope) in envelopes.iter().enumerate() {
            book.apply(envelope);
            let by_the_old_rule = book.state().status() != RunStatus::Running && !book.children_working();
            if by_the_old_rule && !book.session_over() {
                pending += 1;
            }
            if index < last_root_end && book.session_over() {
                over_before_the_end.push(index);
            }
        }
        assert_eq!((over_before_the_end, book.session_over()), (vec![], true), "{name}");
        if pending > 0 {
            waiting.push(name);
        }
    }
    // The captures where a cut has a report waiting for the root (the
    // case this test is about). In `parallel_bg` the root's next turn opens
    // at the `<task-notification>` line, written as the second helper's
    // report comes: no cut falls between.
    assert_eq!(waiting, ["single_bg", "sdk_single_bg", "followup_same_subagent"]);
}

/// The run record says what keeps such a session going: between the root's
/// interim answer and its last turn, `helpersWorking` is true at every cut
/// where the session is not over with the root's turn ended, and the
/// record of the whole session no longer has it.
#[test]
fn the_run_record_says_helpers_are_working_while_the_roots_turn_ended_and_the_session_goes_on() {
    for name in ["single_bg", "parallel_bg", "sdk_single_bg", "followup_same_subagent"] {
        let mut book = RunBook::new(RunId::from("run-test"));
        let mut working_cuts = 0;
        let mut mismatches = Vec::new();
        for (index, envelope) in claude_transcripts_in_time_order(name).iter().enumerate() {
            book.apply(envelope);
            let expected = book.state().status() != RunStatus::Running && !book.session_over();
            let summary = book.state().summary();
            if summary.helpers_working != expected || book.state().view().run != summary {
                mismatches.push(index);
            }
            working_cuts += usize::from(summary.helpers_working);
        }
        let summary = serde_json::to_value(book.state().summary()).unwrap_or_default();
        assert_eq!((mismatches, summary.get("helpersWorking")), (vec![], None), "{name}");
        assert!(working_cuts > 0, "{name}: no cut had helpers working after the root's turn");
    }
}


/// A background helper that goes quiet after its root's turn ended is
/// `silent_agent` once it has been quiet for the limit, as a helper under a
/// running root is: the run reads `done`, yet the session waits on it, and
/// a stuck helper looked like a working one.
#[test]
fn a_background_helper_quiet_after_its_roots_turn_ended_is_silent_agent() {
    use agentrace_core::warnings::WarningConfig;
    for name in ["single_bg", "parallel_bg", "sdk_single_bg"] {
        let mut book = RunBook::new(RunId::from("run-test"));
        let mut judged = None;
        for envelope in claude_transcripts_in_time_order(name) {
            book.apply(&envelope);
            if book.state().summary().helpers_working {
                judged = Some(envelope.timestamp);
                break;
            }
        }
        let at = judged.unwrap_or_else(|| panic!("{name}: no cut had helpers working after the root's turn"));
        let codes = |after_ms: i64| -> Vec<String> {
            let (view, _) = book.checked_view(&WarningConfig::default(), Some(agentrace_core::model::Timestamp::from_millis(at.millis() + after_ms)), 0);
            view.warnings.into_iter().filter(|warning| warning.code == "silent_agent").map(|warning| warning.message).collect()
        };
        let quiet = codes(600_000);
        assert_eq!(
            (codes(1_000), !quiet.is_empty(), quiet.iter().all(|message| message.contains("is running but has shown no activity for"))),
            (Vec::<String>::new(), true, true),
            "{name}: {quiet:?}"
        );
    }
}

/// A background helper at work after its root's turn ended is working, not
/// lost: while the session goes on no cut has a `lost_turn` (it fired at
/// the root's interim answer, so `top` and the run list showed `2
/// warnings`, `attach` printed them and they vanished at the end), and a
/// session that ends with the helper's turn still open has it then.
#[test]
fn a_background_helper_at_work_after_its_roots_turn_ended_is_no_lost_turn() {
    use agentrace_core::warnings::WarningConfig;
    for name in ["single_bg", "parallel_bg", "sdk_single_bg", "followup_same_subagent"] {
        let lost = |book: &RunBook| -> Vec<String> {
            let (view, _) = book.checked_view(&WarningConfig::default(), None, 0);
            view.warnings.into_iter().filter(|warning| warning.code == "lost_turn").map(|warning| warning.message).collect()
        };
        let mut book = RunBook::new(RunId::from("run-test"));
        let mut lost_while_working = Vec::new();
        let mut cut_short = None;
        let envelopes = claude_transcripts_in_time_order(name);
        for (index, envelope) in envelopes.iter().enumerate() {
            book.apply(envelope);
            if book.state().summary().helpers_working {
                lost_while_working.extend(lost(&book));
                cut_short.get_or_insert_with(|| (book.clone(), index));
            }
        }
        let (mut cut_short, at) = cut_short.unwrap_or_else(|| panic!("{name}: no cut had helpers working after the root's turn"));
        cut_short.apply(&session_end(&envelopes[..=at]));
        let lost_at_the_end = lost(&cut_short);
        assert_eq!(
            (lost_while_working, lost(&book), lost_at_the_end.is_empty()),
            (Vec::<String>::new(), Vec::<String>::new(), false),
            "{name}"
        );
    }
}

/// A Codex app-server stream may name a child's thread a moment before the
/// spawn that made it (`thread/status/changed`, then the `spawnAgent`
/// item's end): until its run is over that child's spawner may yet be seen,
/// so no cut of a capture's stream has an `orphan_child` the whole stream
/// does not have (`attach` printed one for `v1_parallel`'s second helper,
/// which `show` never lists, and `top` counted it for a moment).
#[test]
fn a_child_named_before_its_spawn_is_no_orphan_child_while_the_run_goes_on() {
    use agentrace_core::warnings::WarningConfig;
    let orphans = |book: &RunBook| -> Vec<String> {
        let (view, _) = book.checked_view(&WarningConfig::default(), None, 0);
        view.warnings.into_iter().filter(|warning| warning.code == "orphan_child").map(|warning| warning.message).collect()
    };
    let mut transient = Vec::new();
    for (name, envelopes) in fixtures() {
        let mut book = RunBook::new(RunId::from("run-test"));
        let mut seen = Vec::new();
        for envelope in &envelopes {
            book.apply(envelope);
            for orphan in orphans(&book) {
                if !seen.contains(&orphan) {
                    seen.push(orphan);
                }
            }
        }
        let whole = orphans(&book);
        transient.extend(seen.into_iter().filter(|orphan| !whole.contains(orphan)).map(|orphan| format!("{name}: {orphan}")));
    }
    assert_eq!(transient, Vec::<String>::new());
}

/// A Claude background shell read from the session's transcripts (the Bash
/// call's result names its task, `backgroundTaskId`; a `<task-notification>`
/// ends it) is a command record as the stream makes it, at work after the
/// root's interim answer: the transcripts made none, so `watch`, `top` and
/// `status` of a live session showed no command, and the session read done,
/// 0 live, while its shell ran.
#[test]
fn a_background_shell_read_from_claude_transcripts_is_a_command_as_the_stream_makes_it() {
    use agentrace_core::childwork::ChildWorkKind;
    let envelopes = claude_transcripts_in_time_order("bg_shell_task");
    let first_root_end = envelopes
        .iter()
        .position(|envelope| {
            matches!(envelope.event, EventBody::Known(Event::TurnCompleted { .. }))
                && envelope.actor.role == agentrace_core::model::Role::Root
        })
        .unwrap_or_else(|| panic!("the root's turn never ends"));
    let mut book = RunBook::new(RunId::from("run-test"));
    let mut at_the_interim_answer = None;
    for (index, envelope) in envelopes.iter().enumerate() {
        book.apply(envelope);
        if index == first_root_end {
            at_the_interim_answer = Some((
                book.session_over(),
                book.records().iter().map(|record| (record.kind, record.state, record.label.clone())).collect::<Vec<_>>(),
            ));
        }
    }
    let records: Vec<_> = book.records().iter().map(|record| (record.kind, record.state, record.outcome, record.label.clone())).collect();
    let label = "Background sleep then echo".to_owned();
    assert_eq!(
        (at_the_interim_answer, records, book.session_over()),
        (
            Some((false, vec![(ChildWorkKind::Command, ChildWorkState::Working, label.clone())])),
            vec![(ChildWorkKind::Command, ChildWorkState::Ended, Some(Outcome::Succeeded), label)],
            true
        )
    );
}

/// A background command the root launched (a Claude root's
/// `run_in_background` shell: its record has no parent record, the root
/// having none) is a row under the root in the session at a glance, as a
/// child's command is under its child: `top` and the viewer's `/live` left
/// it out, so a session `helpers working` showed no one at work.
#[test]
fn a_command_the_root_launched_is_a_row_under_the_root_at_a_glance() {
    let mut book = RunBook::new(RunId::from("run-test"));
    for envelope in claude_transcripts_in_time_order("bg_shell_task") {
        book.apply(&envelope);
        if book.state().summary().helpers_working {
            break;
        }
    }
    let view = book.state().view();
    let session = agentrace_core::overview::session_of(view.run, &view.agents, &book.records(), book.session_over());
    let rows: Vec<(usize, String, String, bool, bool)> = session
        .agents
        .iter()
        .map(|row| (row.depth, row.label.clone(), row.state.clone(), row.live, row.command))
        .collect();
    assert_eq!(
        (session.live, rows),
        (
            true,
            vec![
                (0, "Main".to_owned(), "waiting on helpers".to_owned(), false, false),
                (1, "$ Background sleep then echo".to_owned(), "working".to_owned(), true, true),
            ]
        )
    );
}

/// Once the last of a Claude root's background helpers has ended, its
/// report on the way to the root (the `<task-notification>` that starts the
/// root's next turn), the root is at work on it: `top` and the viewer's
/// `/live` read `waiting on helpers` on the root's row, not live, above
/// helpers all `ended succeeded`, until the root's reply came.
#[test]
fn a_root_whose_helpers_all_ended_reads_working_on_their_reports_not_waiting_on_helpers() {
    let mut book = RunBook::new(RunId::from("run-test"));
    let mut at_the_reports = None;
    for envelope in claude_transcripts_in_time_order("parallel_bg") {
        book.apply(&envelope);
        let records = book.records();
        if at_the_reports.is_none() && !records.is_empty() && records.iter().all(|record| record.state == ChildWorkState::Ended) && !book.session_over() {
            let view = book.state().view();
            let session = agentrace_core::overview::session_of(view.run, &view.agents, &records, book.session_over());
            let rows: Vec<(usize, String, String, bool)> = session
                .agents
                .iter()
                .map(|row| (row.depth, row.label.clone(), row.state.clone(), row.live))
                .collect();
            at_the_reports = Some((session.live, rows));
        }
    }
    assert_eq!(
        at_the_reports,
        Some((
            true,
            vec![
                (0, "Main".to_owned(), "working".to_owned(), true),
                (1, "Echo task A [general-purpose]".to_owned(), "ended succeeded".to_owned(), false),
                (1, "Echo task B [Explore]".to_owned(), "ended succeeded".to_owned(), false),
            ]
        ))
    );
}

/// A live helper at a glance was last heard from when its last line came
/// (what `silent_agent` counts from), not when its record last changed: a
/// Claude helper's transcript lines that change no record (its
/// attachments, its requests) are its activity too, and `top`'s silent
/// column read 9.9 s on a helper `silent_agent` (limit 4 s) did not call
/// silent, the two counting from different times.
#[test]
fn a_live_helper_at_a_glance_was_last_heard_from_at_its_last_line() {
    let mut book = RunBook::new(RunId::from("run-test"));
    let mut apart = Vec::new();
    let mut live_rows = 0;
    for envelope in claude_transcripts_in_time_order("parallel_bg") {
        book.apply(&envelope);
        let view = book.state().view();
        let session = agentrace_core::overview::session_of_view(view, &book);
        for row in session.agents.iter().filter(|row| row.live && !row.command && row.depth > 0) {
            live_rows += 1;
            let last = book.evidence().last_activity(&agentrace_core::model::ThreadId::from(row.thread_id.as_str()));
            if row.heard_at != last {
                apart.push((envelope.sequence, row.label.clone(), row.heard_at, last));
            }
        }
    }
    assert!(live_rows > 0, "no live helper row");
    assert_eq!(apart, Vec::new());
}
