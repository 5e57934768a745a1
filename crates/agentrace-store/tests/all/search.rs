//! The catalog's contentless search: where the writer and the reader say
//! each line is, and hits whose snippets are cut from those lines, left
//! out when the log was rewritten or deleted after it was indexed.

use agentrace_core::{Envelope, RunId};
use agentrace_store::catalog::{texts_of_log, SearchHit, SearchQuery, TextRow};
use agentrace_store::{Catalog, Home, LineAt, LogReader};

use crate::all::support::{record, run_id, temporary_home, write_run, Fallible, TestResult, SESSION};

/// Every search of these tests: the words, the whole home, a page of 10.
fn query(text: &str) -> SearchQuery {
    SearchQuery { text: text.to_owned(), run: None, actor: None, provider: None, project: None, since: None, until: None, limit: 10 }
}

/// The hit a search gives for run `id`'s answer, with `snippet`.
fn answer_hit(envelopes: &[Envelope], id: &str, snippet: &str) -> Fallible<SearchHit> {
    let answer = envelopes.iter().find(|envelope| TextRow::of(envelope, LineAt::default()).is_some_and(|row| row.kind == "message")).ok_or("no answer")?;
    Ok(SearchHit {
        run_id: id.to_owned(),
        sequence: answer.sequence,
        thread_id: answer.actor.thread_id.as_ref().map(|thread| thread.to_string()),
        label: answer.actor.label.clone(),
        role: "root".to_owned(),
        timestamp: answer.timestamp,
        snippet: snippet.to_owned(),
    })
}

fn indexed(home: &Home) -> Fallible<Catalog> {
    let catalog = Catalog::open(home)?;
    catalog.sync(home)?;
    Ok(catalog)
}

/// Writes `envelopes` as run `name` in two writers (the second continuing
/// the log), v3 lines when `lean`, and gives where each writer said each
/// line went and where a reader finds each envelope's line.
fn lines_written_and_read(home: &Home, envelopes: &[Envelope], name: &str, lean: bool) -> Fallible<(Vec<LineAt>, Vec<LineAt>)> {
    let lean_if = |writer: agentrace_store::RunWriter| if lean { writer.with_lean_lines() } else { writer };
    let (first, rest) = envelopes.split_at(3);
    let mut queued = Vec::new();
    let mut writer = lean_if(home.create_run(&run_id(name))?);
    writer.append(first)?;
    queued.extend_from_slice(writer.queued_lines().ok_or("known")?);
    drop(writer);
    // A writer that continues the log knows where its lines land too.
    let mut writer = lean_if(home.append_run(&run_id(name))?);
    writer.queue(rest)?;
    queued.extend_from_slice(writer.queued_lines().ok_or("known")?);
    writer.flush()?;
    drop(writer);
    let mut reader = LogReader::open(&home.log_path(&run_id(name)))?;
    let mut read = Vec::new();
    while let Some(envelope) = reader.next() {
        envelope?;
        read.push(reader.last_line().ok_or("a line")?);
    }
    Ok((queued, read))
}

#[test]
fn the_lines_a_writer_queues_are_where_the_reader_finds_them_and_the_text_rows_say_so() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("lines", SESSION);
    let (queued, read) = lines_written_and_read(&home, &envelopes, "lines", false)?;
    assert_eq!(queued, read);
    let expected: Vec<TextRow> = envelopes.iter().zip(&queued).filter_map(|(envelope, line)| TextRow::of(envelope, *line)).collect();
    assert!(!expected.is_empty(), "the session has text");
    assert_eq!(texts_of_log(&home.log_path(&run_id("lines")))?, expected);
    Ok(())
}

#[test]
fn the_lines_of_a_v3_log_are_its_envelopes_own_lines_after_their_definitions() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("lean", SESSION);
    let (queued, read) = lines_written_and_read(&home, &envelopes, "lean", true)?;
    assert_eq!(queued, read);
    let log = std::fs::read(home.log_path(&run_id("lean")))?;
    let starts: Vec<bool> = queued.iter().map(|line| log[line.offset as usize..].starts_with(b"{\"v\":3,\"timestamp\"")).collect();
    assert_eq!(starts, vec![true; envelopes.len()]);
    let expected: Vec<TextRow> = envelopes.iter().zip(&queued).filter_map(|(envelope, line)| TextRow::of(envelope, *line)).collect();
    assert_eq!(texts_of_log(&home.log_path(&run_id("lean")))?, expected);
    // A search cuts its snippet from the v3 line.
    let catalog = indexed(&home)?;
    assert_eq!(catalog.search(&home, &query("done"))?, vec![answer_hit(&envelopes, "lean", "All [done]: it said \"hi\" ✓")?]);
    Ok(())
}

#[test]
fn a_hit_is_cut_from_its_log_line_and_left_out_once_its_log_was_rewritten_or_deleted() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("a", SESSION);
    write_run(&home, &envelopes, "a")?;
    let (_, other) = record("b", SESSION);
    write_run(&home, &other, "b")?;
    let catalog = indexed(&home)?;
    let snippet = "All done: it [said] \"hi\" ✓";
    let both = vec![answer_hit(&envelopes, "a", snippet)?, answer_hit(&other, "b", snippet)?];
    assert_eq!(catalog.search(&home, &query("said"))?, both);

    // Rewritten in place, every line where it was: the text there no
    // longer has the word, so no snippet of it is made up.
    let log_b = home.log_path(&RunId::from("b"));
    let rewritten = std::fs::read_to_string(&log_b)?.replace("it said", "it told");
    std::fs::write(&log_b, rewritten)?;
    assert_eq!(catalog.search(&home, &query("said"))?, vec![both[0].clone()]);
    // And run b is synced again by the next reader, whatever its stamp.
    let stamps = catalog.run_stamps(false)?;
    let (stamp, texts, _) = stamps.get("b").ok_or("b is known")?;
    assert_ne!(*texts, stamp.bytes);
    assert_eq!(catalog.search(&home, &query("told"))?, vec![]);
    catalog.sync(&home)?;
    assert_eq!(catalog.search(&home, &query("told"))?, vec![answer_hit(&other, "b", "All done: it [told] \"hi\" ✓")?]);

    // Deleted: its hits are left out before a sync forgets it.
    std::fs::remove_file(home.log_path(&RunId::from("a")))?;
    assert_eq!(catalog.search(&home, &query("said"))?, vec![]);
    assert_eq!(catalog.search(&home, &query("done"))?, vec![answer_hit(&other, "b", "All [done]: it told \"hi\" ✓")?]);
    Ok(())
}

#[test]
fn a_hit_whose_line_now_holds_another_sequence_is_left_out() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("seq", SESSION);
    write_run(&home, &envelopes, "seq")?;
    let catalog = indexed(&home)?;
    assert_eq!(catalog.search(&home, &query("done"))?, vec![answer_hit(&envelopes, "seq", "All [done]: it said \"hi\" ✓")?]);
    // The same bytes, renumbered: the line at the offset is another envelope.
    let log = home.log_path(&RunId::from("seq"));
    let answer = answer_hit(&envelopes, "seq", "")?;
    let text = std::fs::read_to_string(&log)?;
    let from = format!("\"sequence\":{},", answer.sequence);
    let to = format!("\"sequence\":{},", answer.sequence + 1);
    assert!(text.contains(&from), "the log names the sequence");
    std::fs::write(&log, text.replace(&from, &to))?;
    assert_eq!(catalog.search(&home, &query("done"))?, vec![]);
    Ok(())
}

#[test]
fn a_search_whose_hits_span_more_runs_than_it_keeps_open_gives_every_hit() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let mut expected = Vec::new();
    // More runs than the search keeps open at once (64).
    for index in 0..80 {
        let id = format!("run-{index:02}");
        let (_, envelopes) = record(&id, SESSION);
        write_run(&home, &envelopes, &id)?;
        expected.push(answer_hit(&envelopes, &id, "All [done]: it said \"hi\" ✓")?);
    }
    let catalog = indexed(&home)?;
    let found = catalog.search(&home, &SearchQuery { limit: 200, ..query("done") })?;
    // Newest first; these runs' answers share one timestamp, then by run.
    assert_eq!(found, expected);
    Ok(())
}
