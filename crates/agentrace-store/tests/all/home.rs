//! The home: run ids, paths, listing, loading and resolving runs.

use std::fs;
use std::path::PathBuf;

use agentrace_core::RunId;
use agentrace_store::{validate_run_id, Home, StoreError};

use crate::all::support::{
    line_of, record, record_at, record_bytes, run_id, temporary_home, write_run, Fallible,
    TestResult, SESSION, T0,
};

#[test]
fn unsafe_run_ids_are_refused() {
    let long = "a".repeat(200);
    for text in [
        "../x", "a/b", "a\\b", "", ".hidden", "..", "a..b", "-flag", "a b", "é", &long,
    ] {
        let result = validate_run_id(text);
        assert!(
            matches!(result, Err(StoreError::InvalidRunId { .. })),
            "{text:?}: {result:?}"
        );
    }
}

#[test]
fn ordinary_run_ids_are_accepted() -> TestResult {
    let longest = "b".repeat(128);
    for text in ["run-01JABC", "my.run_1", "a", "0", &longest] {
        assert_eq!(validate_run_id(text)?, RunId::from(text));
    }
    Ok(())
}

#[test]
fn a_refused_id_says_why_and_stays_short() -> TestResult {
    let long = "z".repeat(5_000);

    let traversal = validate_run_id("../x").err().ok_or("accepted")?;
    let too_long = validate_run_id(&long).err().ok_or("accepted")?;

    assert_eq!(
        traversal.to_string(),
        "invalid run id \"../x\": it must start with a letter or a digit"
    );
    assert!(too_long.to_string().len() < 200, "{too_long}");
    Ok(())
}

#[test]
fn runs_live_in_the_runs_directory_of_the_home() {
    let home = Home::at("/data/agentrace");
    let id = run_id("run-1");

    assert_eq!(home.root(), PathBuf::from("/data/agentrace"));
    assert_eq!(home.runs_dir(), PathBuf::from("/data/agentrace/runs"));
    assert_eq!(
        home.log_path(&id),
        PathBuf::from("/data/agentrace/runs/run-1.jsonl")
    );
    assert_eq!(
        home.record_path(&id),
        PathBuf::from("/data/agentrace/runs/run-1.json")
    );
}

#[test]
fn the_home_comes_from_agentrace_home_when_it_is_set_and_not_empty() -> TestResult {
    // The only test that touches the environment, so it races with nothing.
    std::env::set_var("AGENTRACE_HOME", "/somewhere/else");
    let set = Home::from_env();
    std::env::set_var("AGENTRACE_HOME", "");
    let empty = Home::from_env();
    std::env::remove_var("AGENTRACE_HOME");

    assert_eq!(set?.root(), PathBuf::from("/somewhere/else"));
    if let Some(data) = dirs::data_dir() {
        assert_eq!(empty?.root(), data.join("agentrace"));
    }
    Ok(())
}

#[test]
fn a_home_without_a_runs_directory_has_no_runs() -> TestResult {
    let (_directory, home) = temporary_home()?;

    assert_eq!(home.list_runs()?, vec![]);
    assert_eq!(home.newest_run()?, None);
    assert!(!home.exists(&run_id("run-a")));
    Ok(())
}

#[test]
fn runs_are_listed_newest_first_then_by_id() -> TestResult {
    let (_directory, home) = temporary_home()?;
    for (id, started) in [
        ("run-old", T0),
        ("run-new", T0 + 5_000),
        ("tie-a", T0 + 1_000),
        ("tie-b", T0 + 1_000),
    ] {
        let (_, envelopes) = record_at(id, started, SESSION);
        write_run(&home, &envelopes, id)?;
    }

    let ids: Vec<String> = home.list_runs()?.into_iter().map(|run| run.id.0).collect();

    assert_eq!(ids, vec!["run-new", "tie-b", "tie-a", "run-old"]);
    assert_eq!(home.newest_run()?, Some(run_id("run-new")));
    Ok(())
}

#[test]
fn files_that_are_not_run_logs_are_not_listed() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (_, envelopes) = record("run-a", SESSION);
    write_run(&home, &envelopes, "run-a")?;
    for name in [
        "notes.txt",
        ".hidden.jsonl",
        "run-a.json.tmp-12",
        "bad name.jsonl",
    ] {
        fs::write(home.runs_dir().join(name), b"{}\n")?;
    }
    fs::create_dir(home.runs_dir().join("folder.jsonl"))?;

    let ids: Vec<RunId> = home.list_runs()?.into_iter().map(|run| run.id).collect();

    assert_eq!(ids, vec![run_id("run-a")]);
    Ok(())
}

#[test]
fn a_run_without_a_usable_record_is_listed_from_its_log() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (recorder, envelopes) = record("run-a", SESSION);
    write_run(&home, &envelopes, "run-a")?;
    let (other, _) = record("run-b", SESSION);
    let expected = recorder.state().summary();

    fs::write(
        home.record_path(&run_id("run-a")),
        b"{\"id\": \"run-a\", \"stat",
    )?;
    let from_garbage = home.list_runs()?;
    fs::write(
        home.record_path(&run_id("run-a")),
        serde_json::to_vec(&other.state().summary())?,
    )?;
    let from_another_run = home.list_runs()?;

    assert_eq!(from_garbage, vec![expected.clone()]);
    assert_eq!(from_another_run, vec![expected]);
    Ok(())
}

#[test]
fn a_loaded_run_counts_its_skipped_lines() -> TestResult {
    let (_directory, home) = temporary_home()?;
    let (recorder, envelopes) = record("run-a", SESSION);
    let mut bytes = Vec::new();
    for envelope in &envelopes {
        bytes.extend(line_of(envelope)?);
        bytes.extend(b"garbage\n");
    }
    fs::create_dir_all(home.runs_dir())?;
    fs::write(home.log_path(&run_id("run-a")), bytes)?;

    let loaded = home.load_run(&run_id("run-a"))?;

    let mut expected = recorder.state().view();
    expected.run.counts.skipped_log_lines = envelopes.len() as u64;
    assert_eq!(loaded.skipped.len(), envelopes.len());
    assert_eq!(loaded.view(), expected);
    assert_eq!(loaded.summary(), expected.run);
    assert_eq!(home.list_runs()?, vec![expected.run]);
    Ok(())
}

#[test]
fn loading_a_missing_run_is_not_found() -> TestResult {
    let (_directory, home) = temporary_home()?;

    let error = home.load_run(&run_id("run-x")).err().ok_or("loaded")?;

    assert!(matches!(error, StoreError::NotFound { .. }), "{error:?}");
    Ok(())
}

/// Every Codex capture in the repository's `fixtures/` (both versions'),
/// by name (`0.171-<scenario>` for the 0.171 captures).
pub fn codex_captures() -> Fallible<Vec<(String, Vec<u8>)>> {
    let mut captures = Vec::new();
    for (folder, prefix) in [("codex", ""), ("codex-0.171", "0.171-")] {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(folder);
        for entry in fs::read_dir(&root)? {
            let directory = entry?.path();
            let server = directory.join("server.jsonl");
            if server.is_file() {
                let name = directory
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                captures.push((format!("{prefix}{name}"), fs::read(server)?));
            }
        }
    }
    captures.sort();
    Ok(captures)
}

#[test]
fn every_capture_written_and_loaded_back_rebuilds_the_live_state() -> TestResult {
    let captures = codex_captures()?;
    assert!(!captures.is_empty(), "no captures in fixtures/codex");
    let (_directory, home) = temporary_home()?;
    for (name, bytes) in captures {
        let lines: Vec<&[u8]> = bytes
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.is_empty())
            .collect();
        let (recorder, envelopes) = record_bytes(&name, T0, &lines);
        write_run(&home, &envelopes, &name)?;

        let loaded = home.load_run(&run_id(&name))?;

        assert_eq!(loaded.state(), recorder.state(), "{name}");
        assert_eq!(loaded.skipped, vec![], "{name}");
    }
    Ok(())
}

#[test]
fn resolve_takes_an_exact_id_first() -> TestResult {
    let (_directory, home) = temporary_home()?;
    for id in ["run-1", "run-10"] {
        write_run(&home, &record(id, SESSION).1, id)?;
    }

    assert_eq!(home.resolve("run-1")?, run_id("run-1"));
    Ok(())
}

#[test]
fn resolve_takes_a_unique_prefix() -> TestResult {
    let (_directory, home) = temporary_home()?;
    for id in ["run-01JABC", "run-01JXYZ"] {
        write_run(&home, &record(id, SESSION).1, id)?;
    }

    assert_eq!(home.resolve("run-01JA")?, run_id("run-01JABC"));
    Ok(())
}

#[test]
fn an_ambiguous_prefix_lists_the_runs_it_matches() -> TestResult {
    let (_directory, home) = temporary_home()?;
    for id in ["run-01JABC", "run-01JXYZ", "other"] {
        write_run(&home, &record(id, SESSION).1, id)?;
    }

    let error = home.resolve("run-01J").err().ok_or("resolved")?;

    match &error {
        StoreError::Ambiguous { candidates, .. } => {
            assert_eq!(
                candidates,
                &vec![run_id("run-01JABC"), run_id("run-01JXYZ")]
            );
        }
        other => return Err(format!("expected Ambiguous, got {other:?}").into()),
    }
    let message = error.to_string();
    assert!(
        message.starts_with("\"run-01J\" matches 2 runs in "),
        "{message}"
    );
    assert!(
        message.ends_with(": run-01JABC, run-01JXYZ; give more of the id"),
        "{message}"
    );
    Ok(())
}

#[test]
fn latest_and_last_mean_the_newest_run_even_when_an_id_starts_with_them() -> TestResult {
    let (_directory, home) = temporary_home()?;
    for (id, started) in [("latest-experiment", T0), ("run-b", T0 + 1_000)] {
        write_run(&home, &record_at(id, started, SESSION).1, id)?;
    }

    assert_eq!(home.resolve("latest")?, run_id("run-b"));
    assert_eq!(home.resolve("last")?, run_id("run-b"));
    assert_eq!(
        home.resolve("latest-experiment")?,
        run_id("latest-experiment")
    );
    Ok(())
}

#[test]
fn resolve_says_what_it_could_not_find() -> TestResult {
    let (_directory, home) = temporary_home()?;

    let nothing = home.resolve("latest").err().ok_or("resolved")?;
    write_run(&home, &record("run-a", SESSION).1, "run-a")?;
    let no_match = home.resolve("zzz").err().ok_or("resolved")?;
    let traversal = home.resolve("../etc/passwd").err().ok_or("resolved")?;

    assert!(
        matches!(nothing, StoreError::NotFound { .. }),
        "{nothing:?}"
    );
    assert!(
        matches!(no_match, StoreError::NotFound { .. }),
        "{no_match:?}"
    );
    assert!(
        no_match
            .to_string()
            .starts_with("no run matches \"zzz\" in "),
        "{no_match}"
    );
    assert!(
        matches!(traversal, StoreError::InvalidRunId { .. }),
        "{traversal:?}"
    );
    Ok(())
}

#[test]
fn resolve_finds_an_imported_run_by_its_session_or_thread_id_or_a_prefix_of_it() -> TestResult {
    // What Codex and Claude Code show the user is the thread or session
    // id; an import names the run after it, behind its provider.
    let (_directory, home) = temporary_home()?;
    let claude = "claude-d882d213-4da9-4bcb-bd05-cb557061dd59";
    let codex = "codex-01a2298e-95f7-7860-9d07-bbdef83673ed";
    for id in [claude, codex, "run-d882", "d88-own"] {
        write_run(&home, &record(id, SESSION).1, id)?;
    }

    assert_eq!(home.resolve("d882d213-4da9-4bcb-bd05-cb557061dd59")?, run_id(claude));
    assert_eq!(home.resolve("01a2298e")?, run_id(codex));
    assert_eq!(home.resolve("claude-d882")?, run_id(claude));
    // Only a run's own id or its session is matched, not any part of it.
    assert_eq!(home.resolve("d882")?, run_id(claude));
    // An id and a session that both start with it are two candidates.
    match home.resolve("d88") {
        Err(StoreError::Ambiguous { candidates, .. }) => assert_eq!(candidates, vec![run_id(claude), run_id("d88-own")]),
        other => return Err(format!("expected Ambiguous, got {other:?}").into()),
    }
    Ok(())
}
