//! The catalog as the commands use it: opened with its note on stderr when
//! it had to be made anew, brought up to the runs folder before it is read
//! (see [`agentrace_store::catalog`]), and a recorded run indexed from what
//! its recorder holds. Its tables and files are the store's: nothing here
//! writes them but through the store's calls.

use agentrace_core::model::RunId;
use agentrace_core::state::{AgentNode, FinalActors, RunSummary};
use agentrace_core::Envelope;
use agentrace_store::catalog::{Rebuilt, TextRow};
use agentrace_store::LineAt;
use agentrace_store::{Catalog, Home};

/// Opens the home's catalog; says on stderr when it was made anew over one
/// that could not be used (or, with runs already recorded, when there was
/// none).
pub fn open(home: &Home) -> anyhow::Result<Catalog> {
    let catalog = Catalog::open(home)?;
    match catalog.rebuilt() {
        Some(Rebuilt::Missing) if home.runs_dir_has_entries() => {
            eprintln!("note: no catalog in {} yet; building it from the run logs", home.root().display());
        }
        Some(Rebuilt::Missing) | None => {}
        Some(reason) => {
            if let Some(note) = reason.note(catalog.path()) {
                eprintln!("{note}");
            }
        }
    }
    Ok(catalog)
}

/// What to say of a run name that matched no run but is (the start of) an
/// agent's thread id: a helper's id is what a user finds in its own files
/// (a Codex child's rollout, a Claude `agent-<id>.jsonl`), never a run's.
/// One `hint:` line per agent it names (at most three), none when the
/// catalog names none or cannot be read: it is said after an error, and
/// must not add one.
pub fn thread_hints(home: &Home, query: &str) -> Vec<String> {
    // A file named as given: a Claude subagent's is `agent-<id>.jsonl`, a
    // Codex rollout's `rollout-<time>-<thread>.jsonl` (a thread id is 36
    // characters).
    let thread = query.strip_suffix(".jsonl").unwrap_or(query);
    let thread = match thread.strip_prefix("rollout-") {
        Some(rest) if rest.len() > 36 => rest.get(rest.len() - 36..).unwrap_or(rest),
        _ => thread.strip_prefix("agent-").unwrap_or(thread),
    };
    // A few characters would match threads by chance.
    if thread.len() < 6 || !home.catalog_path().exists() {
        return Vec::new();
    }
    // Opened, not synced: a sync prices and judges runs, with the home's
    // files the failed command read and this path did not; a run the
    // catalog lacks yet is one the user just recorded, not a helper's.
    let Ok(catalog) = Catalog::open(home) else {
        return Vec::new();
    };
    let Ok(agents) = catalog.agents_by_thread(thread, 3) else {
        return Vec::new();
    };
    agents
        .into_iter()
        .map(|(run, thread, label, depth)| {
            let role = if depth == 0 { "the root" } else { "a helper" };
            format!("hint: {thread} is the thread of {label}, {role} of run {run}: `agentrace show {run}`, its events `agentrace events {run} --actor {thread}`")
        })
        .collect()
}

/// The catalog, brought up to the runs folder.
pub fn synced(home: &Home) -> anyhow::Result<Catalog> {
    let catalog = open(home)?;
    let count = catalog.sync(home)?;
    // What was worked out again, for a file of the home that changed.
    let again = |runs: u64, done: &str, file: &str, path: std::path::PathBuf, since: &str| {
        if runs > 0 {
            let plural = if runs == 1 { "" } else { "s" };
            // A file the user removed did not "change": said so, so the
            // note does not name a file as if it were there.
            let how = if path.exists() { "changed" } else { "was removed" };
            eprintln!("note: {done} {runs} run{plural} again: the home's {file} ({}) {how} since they were {since}", path.display());
        }
    };
    if count.database_changed {
        again(count.repriced, "priced", "price database", home.price_database_path(), "priced");
    } else {
        again(count.repriced, "priced", "price file", home.prices_path(), "priced");
    }
    again(count.rejudged, "counted the warnings of", "warning config", home.warning_config_path(), "counted");
    Ok(catalog)
}

/// The searchable text of the envelopes a run is written with, collected
/// on the way to its log: a recorder that just wrote a log must not read it
/// back (twice, for the final actors) to index it.
/// Past [`TEXTS_HELD`] bytes of text held it lets go of them, and the log
/// is read back instead: memory stays flat in a run's size.
/// A recording of an input that ends (`ingest` of a file) may write the
/// rows into the catalog while it waits for input ([`Texts::write_some`]),
/// in one transaction its end commits: the text was most of the work left
/// after its last line.
pub struct Texts {
    rows: Vec<TextRow>,
    /// Bytes of text held: of the rows not written yet.
    bytes: usize,
    /// The bytes of text held at most.
    held: usize,
    /// More text came than is held: read the log back.
    overflowed: bool,
    finals: FinalActors,
    early: Early,
}

/// Rows written to the catalog before the recording's end.
enum Early {
    /// Not asked for: every row is written at the end.
    Off,
    /// Asked for; the catalog is opened when the recording first waits
    /// with text to write.
    Allowed { home: Home, id: RunId },
    /// `rows[..written.len()]` are in the catalog's open transaction, with
    /// these row ids.
    Writing { catalog: Catalog, id: RunId, written: Vec<i64> },
    /// The catalog could not be opened, or another process held it: every
    /// row is written at the end, as when not asked for.
    GaveUp,
}

/// The text a recorder holds for the catalog before it reads the log back
/// instead.
const TEXTS_HELD: usize = 16 * 1024 * 1024;

impl Default for Texts {
    fn default() -> Self {
        Self { rows: Vec::new(), bytes: 0, held: TEXTS_HELD, overflowed: false, finals: FinalActors::default(), early: Early::Off }
    }
}

/// The rows of a run's text as its end writes them.
struct Settled {
    /// Every row, each with its thread's final actor; those written early
    /// hold no text any more.
    rows: Vec<TextRow>,
    /// The catalog the first rows were written to, in its open
    /// transaction, and their row ids.
    early: Option<(Catalog, Vec<i64>)>,
    /// The rows whose actor settling changed.
    changed: Vec<usize>,
}

impl Texts {
    /// Writes the text to `home`'s catalog as run `id`'s while the
    /// recording waits for input ([`Texts::write_some`]), for an input that
    /// ends: the catalog's write lock is held from the first row written to
    /// the recording's end.
    pub fn write_early(&mut self, home: &Home, id: &RunId) {
        if matches!(self.early, Early::Off) {
            self.early = Early::Allowed { home: home.clone(), id: id.clone() };
        }
    }

    /// Notes the text of envelopes as they go to the log, at `lines`
    /// there (the writer's [`agentrace_store::RunWriter::queued_lines`]);
    /// when the writer does not know where they are, the log is read back
    /// instead.
    pub fn observe(&mut self, envelopes: &[Envelope], lines: Option<&[LineAt]>) {
        if self.overflowed {
            return;
        }
        let Some(lines) = lines.filter(|lines| lines.len() == envelopes.len()) else {
            self.overflow();
            return;
        };
        for (envelope, line) in envelopes.iter().zip(lines) {
            self.finals.observe(envelope);
            if let Some(row) = TextRow::of(envelope, *line) {
                self.bytes += row.text.len();
                self.rows.push(row);
            }
        }
        if self.bytes > self.held {
            self.overflow();
        }
    }

    /// Lets go of the rows; rows written early are taken back (their
    /// transaction is rolled back as the catalog closes).
    fn overflow(&mut self) {
        self.overflowed = true;
        self.rows = Vec::new();
        self.early = Early::GaveUp;
    }

    /// Writes up to `count` rows not written yet to the catalog (opening
    /// it and starting its transaction first, when [`Texts::write_early`]
    /// asked for it); true when there are rows left to write. Gives up at
    /// once, leaving every row to the end, when another process holds the
    /// catalog's write lock or the catalog cannot be opened (the end says
    /// what went wrong, as before).
    pub fn write_some(&mut self, count: usize) -> bool {
        let written = match &self.early {
            Early::Writing { written, .. } => written.len(),
            Early::Off | Early::Allowed { .. } | Early::GaveUp => 0,
        };
        // Nothing to write yet: the catalog is not opened (nor its lock
        // taken) before the first text.
        if self.overflowed || self.rows.len() <= written {
            return false;
        }
        if let Early::Allowed { home, id } = &self.early {
            self.early = match open_early(home, id) {
                Ok(Some(catalog)) => Early::Writing { catalog, id: id.clone(), written: Vec::new() },
                Ok(None) | Err(_) => Early::GaveUp,
            };
        }
        let Early::Writing { catalog, id, written } = &mut self.early else {
            return false;
        };
        let from = written.len();
        let until = self.rows.len().min(from + count);
        if catalog.insert_texts(id, self.rows.get(from..until).unwrap_or_default(), |rowid| written.push(rowid)).is_err() {
            // What was written is rolled back with the transaction; the end
            // writes every row (and says what failed, if it fails again).
            self.early = Early::GaveUp;
            return false;
        }
        for row in self.rows.get_mut(from..until).unwrap_or_default() {
            self.bytes -= row.text.len();
            row.text = String::new();
        }
        until < self.rows.len()
    }

    /// The rows, each with its thread's final actor (`None` when they
    /// were let go of).
    pub fn settled(self, id: &RunId) -> Option<Vec<TextRow>> {
        self.settle(id).map(|settled| settled.rows)
    }

    fn settle(mut self, id: &RunId) -> Option<Settled> {
        if self.overflowed {
            return None;
        }
        let changed = agentrace_store::catalog::settle_texts(&mut self.rows, &self.finals, id);
        let early = match self.early {
            Early::Writing { catalog, written, .. } => Some((catalog, written)),
            Early::Off | Early::Allowed { .. } | Early::GaveUp => None,
        };
        Some(Settled { rows: self.rows, early, changed })
    }

    /// The settled rows, or the log's text read back when they were let go
    /// of.
    pub fn settled_or_read(self, home: &Home, id: &RunId) -> anyhow::Result<Vec<TextRow>> {
        match self.settled(id) {
            Some(rows) => Ok(rows),
            None => Ok(agentrace_store::catalog::texts_of_log(&home.log_path(id))?),
        }
    }
}

/// The home's catalog, ready to take run `id`'s text in a transaction of
/// its own; `None` when another process holds its write lock.
fn open_early(home: &Home, id: &RunId) -> anyhow::Result<Option<Catalog>> {
    let catalog = Catalog::open(home)?;
    catalog.unsynced_appends()?;
    if !catalog.try_begin()? {
        return Ok(None);
    }
    // Text left by a run of the same id, since removed.
    catalog.forget_texts(id)?;
    Ok(Some(catalog))
}

/// What a recording hands its indexing once its record is worked out.
pub struct Recorded {
    /// The record as written.
    pub summary: RunSummary,
    /// The working folder, the run's project.
    pub project: Option<String>,
    /// The agent tree.
    pub agents: Vec<AgentNode>,
}

/// Indexes run `id` at the end of its recording from what the recorder
/// holds (its record, working folder and agent tree, given by `recorded`
/// once the log is flushed, and the text collected as it was written), so
/// the log is not read again; a failure is only said: the next reader
/// syncs the run anyway. The catalog is opened (made, in a new home) and
/// the text written before `recorded` is asked (its rows need nothing of
/// the record): a recording indexing on a second thread works its record
/// out meanwhile (the end of a 40 MB ingest, from its last line to the
/// command's return, went from about 40 to 30 ms). Text written while
/// the recording waited ([`Texts::write_some`]) is not written again: its
/// rows whose thread's actor settled after them are relabelled, and the
/// rest written. `recorded` giving `None` (the record was not written)
/// indexes nothing: the text written is never committed.
pub fn index_recorded(home: &Home, id: &RunId, texts: Texts, recorded: impl FnOnce() -> Option<Recorded>) {
    let done = (|| -> anyhow::Result<()> {
        // Whether the text was held (else it is read back from the log).
        let (catalog, held) = match texts.settle(id) {
            // Part of the text is written already, in the transaction this
            // one commits.
            Some(Settled { rows, early: Some((catalog, written)), changed }) => {
                // Rows written before their thread's actor was settled.
                catalog.relabel_texts(
                    changed
                        .iter()
                        .filter_map(|index| Some((*written.get(*index)?, rows.get(*index)?)))
                        .map(|(rowid, row)| (rowid, row.label.as_str(), row.role.as_str())),
                )?;
                catalog.insert_texts(id, rows.get(written.len()..).unwrap_or_default(), |_| {})?;
                (catalog, true)
            }
            held => {
                let catalog = Catalog::open(home)?;
                // The recording's last syncs are its log's and record's:
                // the catalog is derived, and checkpointed by the next
                // command.
                catalog.unsynced_appends()?;
                // One transaction: the run's text is thousands of rows, and
                // each row committed on its own was a WAL commit (a third
                // of a 40 MB ingest's time); and no search finds the text
                // of a run the list does not have yet.
                catalog.begin()?;
                if let Some(Settled { rows, .. }) = &held {
                    // How much of the log they cover is set below, once the
                    // log is flushed and the run has its row.
                    catalog.put_texts(id, rows, 0)?;
                }
                (catalog, held.is_some())
            }
        };
        let Some(Recorded { summary, project, agents }) = recorded() else {
            return Ok(());
        };
        let stamp = agentrace_store::catalog::log_stamp(&home.log_path(id)).unwrap_or_default();
        let agents = agentrace_store::catalog::agent_rows(&agents);
        // Its project now, not once `usage` has kept its usage: `runs
        // --project` found a recorded run only after that.
        catalog.put_run(&summary, project.as_deref(), None, &agents, stamp, None)?;
        if held {
            // How much of the log the text written covers: the whole of it,
            // now that the run has its row.
            catalog.add_texts(id, &[], stamp.bytes, false)?;
        } else {
            // Text let go of is read back from the log, flushed by now.
            catalog.put_texts(id, &agentrace_store::catalog::texts_of_log(&home.log_path(id))?, stamp.bytes)?;
        }
        catalog.commit()?;
        Ok(())
    })();
    if let Err(error) = done {
        eprintln!("warning: run {id} is not in the catalog yet: {error:#}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentrace_core::model::Timestamp;
    use agentrace_core::recorder::Format;
    use agentrace_core::{InputLine, Recorder};

    /// The envelopes a recorder makes of fixture `path`'s lines.
    fn recorded(path: &str, id: &str, format: Format) -> Vec<Envelope> {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut recorder = Recorder::new(RunId::from(id), format);
        let mut all = recorder.start(Timestamp::from_millis(0));
        for (index, line) in text.lines().enumerate() {
            all.extend(recorder.push(&InputLine {
                bytes: line.as_bytes(),
                line_number: index as u64 + 1,
                observed_at: Timestamp::from_millis(0),
                direction: None,
                truncated_from: None,
            }));
        }
        all.extend(recorder.finish());
        all
    }

    fn envelopes() -> Vec<Envelope> {
        recorded(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/claude/single_fg/stream.jsonl"), "texts", Format::ClaudeStream)
    }

    /// The log as a writer writes `envelopes`, and each one's line in it.
    fn log_of(envelopes: &[Envelope]) -> (String, Vec<LineAt>) {
        let (mut log, mut lines) = (String::new(), Vec::new());
        for envelope in envelopes {
            let line = serde_json::to_string(envelope).unwrap_or_else(|e| panic!("{e}"));
            lines.push(LineAt { offset: log.len() as u64, length: line.len() as u64 });
            log.push_str(&line);
            log.push('\n');
        }
        (log, lines)
    }

    #[test]
    fn texts_held_are_the_rows_of_every_envelope_at_their_lines_and_past_the_bound_none_are_held() {
        let envelopes = envelopes();
        let lines: Vec<LineAt> = (0..envelopes.len() as u64).map(|index| LineAt { offset: index * 100, length: 99 }).collect();
        let expected: Vec<TextRow> = envelopes.iter().zip(&lines).filter_map(|(envelope, line)| TextRow::of(envelope, *line)).collect();
        assert!(!expected.is_empty(), "the capture has text");
        let mut held = Texts::default();
        held.observe(&envelopes, Some(&lines));
        let rows = held.settled(&RunId::from("texts")).unwrap_or_else(|| panic!("held"));
        assert_eq!(rows, expected);
        let mut bounded = Texts { held: 8, ..Texts::default() };
        bounded.observe(&envelopes, Some(&lines));
        assert!(bounded.rows.is_empty());
        assert!(bounded.settled(&RunId::from("texts")).is_none());
    }

    /// A recording's end indexes its run and text in one transaction, the
    /// text written before the record is handed over: given the record,
    /// the run is listed and its text found; not given one (the record was
    /// not written), neither is, though the text was written first.
    #[test]
    fn a_recorded_run_is_indexed_with_its_text_only_once_its_record_is_handed_over() {
        let envelopes = envelopes();
        // The log as a writer writes it: search cuts its snippets from it.
        let (log, lines) = log_of(&envelopes);
        let id = RunId::from("texts");
        let mut recorder = Recorder::new(id.clone(), Format::ClaudeStream);
        recorder.start(Timestamp::from_millis(0));
        let recorded = || Recorded { summary: recorder.state().summary(), project: Some("/work".to_owned()), agents: recorder.state().agents() };
        let indexed = |given: bool| -> (u64, usize) {
            let (_dir, home) = home_with_log(&id, &log);
            let mut texts = Texts::default();
            texts.observe(&envelopes, Some(&lines));
            index_recorded(&home, &id, texts, || given.then(recorded));
            let catalog = Catalog::open(&home).unwrap_or_else(|e| panic!("{e}"));
            let (_, listed) = catalog.list_runs(&agentrace_store::catalog::RunFilter::default()).unwrap_or_else(|e| panic!("{e}"));
            let query = agentrace_store::catalog::SearchQuery { text: "delegate".to_owned(), run: None, actor: None, provider: None, project: None, since: None, until: None, limit: 10 };
            let hits = catalog.search(&home, &query).unwrap_or_else(|e| panic!("{e}"));
            (listed, hits.len())
        };
        let (listed, hits) = indexed(true);
        assert_eq!(listed, 1);
        assert!(hits > 0, "the run's text is found");
        assert_eq!(indexed(false), (0, 0));
    }

    /// The envelopes of a Codex capture whose helpers' text comes before
    /// they are linked (their rows get their names only at the end), each
    /// with its line in the log as a writer writes it, and the log.
    fn codex_envelopes_and_log() -> (Vec<Envelope>, Vec<LineAt>, String) {
        let envelopes = recorded(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/codex/v1_parallel/server.jsonl"), "early", Format::CodexAppServer);
        let (log, lines) = log_of(&envelopes);
        (envelopes, lines, log)
    }

    /// A home holding run `id`'s log `log`.
    fn home_with_log(id: &RunId, log: &str) -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        #[expect(clippy::disallowed_methods, reason = "the test writes the log a recording would have")]
        std::fs::create_dir_all(dir.path().join("runs")).and_then(|()| std::fs::write(home.log_path(id), log)).unwrap_or_else(|e| panic!("{e}"));
        (dir, home)
    }

    /// Every text row of the catalog (all but its row id), in sequence
    /// order, and the sequences search finds for "sub-agent".
    fn catalog_texts(home: &Home) -> (Vec<Vec<String>>, Vec<u64>) {
        let catalog = Catalog::open(home).unwrap_or_else(|e| panic!("{e}"));
        let mut statement = catalog
            .connection()
            .prepare("SELECT run_id, sequence, thread_id, label, role, timestamp, kind, line_offset, line_length FROM texts ORDER BY sequence")
            .unwrap_or_else(|e| panic!("{e}"));
        let rows = statement
            .query_map([], |row| (0..9).map(|index| row.get::<_, rusqlite::types::Value>(index).map(|value| format!("{value:?}"))).collect::<Result<Vec<_>, _>>())
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .unwrap_or_else(|e| panic!("{e}"));
        let query = agentrace_store::catalog::SearchQuery { text: "sub-agent".to_owned(), run: None, actor: None, provider: None, project: None, since: None, until: None, limit: 1000 };
        let hits = catalog.search(home, &query).unwrap_or_else(|e| panic!("{e}")).into_iter().map(|hit| hit.sequence).collect();
        (rows, hits)
    }

    /// The record a recording of run `id` hands its indexing.
    fn recorded_of(id: &RunId) -> Recorded {
        let mut recorder = Recorder::new(id.clone(), Format::CodexAppServer);
        recorder.start(Timestamp::from_millis(0));
        Recorded { summary: recorder.state().summary(), project: None, agents: recorder.state().agents() }
    }

    /// Text written to the catalog while a recording waits, a row at a
    /// time as the envelopes come, ends as the same rows and hits as text
    /// written at the end: rows written before their helper was named are
    /// given its name at the end.
    #[test]
    fn text_written_early_ends_as_text_written_at_the_end() {
        let (envelopes, lines, log) = codex_envelopes_and_log();
        let id = RunId::from("early");
        let (_at_end_dir, at_end) = home_with_log(&id, &log);
        let mut texts = Texts::default();
        texts.observe(&envelopes, Some(&lines));
        index_recorded(&at_end, &id, texts, || Some(recorded_of(&id)));
        let expected = catalog_texts(&at_end);
        assert!(!expected.0.is_empty() && !expected.1.is_empty(), "the capture has text, and search finds it");

        let (_early_dir, early) = home_with_log(&id, &log);
        let mut texts = Texts::default();
        texts.write_early(&early, &id);
        let mut written_before_the_end = 0;
        for (index, (envelope, line)) in envelopes.iter().zip(&lines).enumerate() {
            texts.observe(std::slice::from_ref(envelope), Some(std::slice::from_ref(line)));
            while texts.write_some(1) {}
            if index == 0 {
                // The run's start holds no text: no catalog opened, no lock taken.
                assert!(TextRow::of(envelope, *line).is_none() && matches!(texts.early, Early::Allowed { .. }), "opened before the first text");
            }
            written_before_the_end = match &texts.early {
                Early::Writing { written, .. } => written.len(),
                // Not opened before the first text.
                Early::Allowed { .. } => 0,
                Early::Off | Early::GaveUp => panic!("the text is written early"),
            };
        }
        assert_eq!(written_before_the_end, expected.0.len(), "every row was written before the end");
        // Written as they came, some rows had another actor than they end
        // with.
        let as_written: Vec<[String; 2]> = envelopes
            .iter()
            .zip(&lines)
            .filter_map(|(envelope, line)| TextRow::of(envelope, *line))
            .map(|row| [format!("Text({:?})", row.label), format!("Text({:?})", row.role)])
            .collect();
        let settled: Vec<[String; 2]> = expected.0.iter().map(|row| [row[3].clone(), row[4].clone()]).collect();
        assert_ne!(as_written, settled, "helpers are linked after their first text");
        index_recorded(&early, &id, texts, || Some(recorded_of(&id)));
        assert_eq!(catalog_texts(&early), expected);
    }

    /// While another process holds the catalog's write lock, nothing is
    /// written early (the recording does not wait for it): the end writes
    /// the text, as without asking.
    #[test]
    fn text_is_not_written_early_while_another_process_writes_the_catalog() {
        let (envelopes, lines, log) = codex_envelopes_and_log();
        let id = RunId::from("early");
        let (_dir, home) = home_with_log(&id, &log);
        let other = Catalog::open(&home).unwrap_or_else(|e| panic!("{e}"));
        other.begin().unwrap_or_else(|e| panic!("{e}"));
        let mut texts = Texts::default();
        texts.write_early(&home, &id);
        texts.observe(&envelopes, Some(&lines));
        assert!(!texts.write_some(1), "nothing written");
        assert!(matches!(texts.early, Early::GaveUp));
        other.commit().unwrap_or_else(|e| panic!("{e}"));
        index_recorded(&home, &id, texts, || Some(recorded_of(&id)));
        let (rows, hits) = catalog_texts(&home);
        assert_eq!((rows.len(), hits.is_empty()), (envelopes.iter().zip(&lines).filter_map(|(envelope, line)| TextRow::of(envelope, *line)).count(), false));
    }

    /// Text past the bound, after rows were written early: the rows written
    /// are taken back (no search finds them), and the end reads the log.
    #[test]
    fn text_written_early_is_taken_back_when_more_comes_than_is_held() {
        let (envelopes, lines, log) = codex_envelopes_and_log();
        let id = RunId::from("early");
        let (_dir, home) = home_with_log(&id, &log);
        let half = envelopes.len() / 2;
        let mut texts = Texts::default();
        texts.write_early(&home, &id);
        texts.observe(&envelopes[..half], Some(&lines[..half]));
        while texts.write_some(1) {}
        assert!(matches!(&texts.early, Early::Writing { written, .. } if !written.is_empty()), "rows written early");
        // Only the text not written yet is held: the bound is for it.
        texts.held = 1;
        texts.observe(&envelopes[half..], Some(&lines[half..]));
        assert!(matches!(texts.early, Early::GaveUp));
        assert_eq!(catalog_texts(&home), (Vec::new(), Vec::new()), "the rows written early were taken back");
        index_recorded(&home, &id, texts, || Some(recorded_of(&id)));
        let (rows, hits) = catalog_texts(&home);
        assert_eq!((rows.len(), hits.is_empty()), (envelopes.iter().zip(&lines).filter_map(|(envelope, line)| TextRow::of(envelope, *line)).count(), false));
    }

    #[test]
    fn texts_whose_lines_the_writer_does_not_know_are_read_back_from_the_log() {
        let envelopes = envelopes();
        let mut held = Texts::default();
        held.observe(&envelopes, None);
        assert!(held.settled(&RunId::from("texts")).is_none());
    }
}
