//! The bundled sample runs: real captures of Codex 0.169 (V1, V2, nested)
//! embedded in the binary, so a new user sees agentrace work before
//! recording anything of their own.

use agentrace_core::model::RunId;
use agentrace_store::Home;

use crate::cli::FormatArg;
use crate::ingest::{ingest_reader, IngestOptions};
use crate::output::Out;
use crate::render;

/// (run id, what it shows, the captured app-server stdout).
const SAMPLES: &[(&str, &str, &[u8])] = &[
    (
        "sample-codex-v1-basic",
        "Codex V1: the root spawns one helper, waits, closes it, answers",
        include_bytes!("../../../fixtures/codex/v1_basic/server.jsonl"),
    ),
    (
        "sample-codex-v2-basic",
        "Codex V2: a helper linked by subAgentActivity after it first spoke",
        include_bytes!("../../../fixtures/codex/v2_basic/server.jsonl"),
    ),
    (
        "sample-codex-nested",
        "Codex with a real model slug: root → helper → grandchild",
        include_bytes!("../../../fixtures/codex/real_model_nested/server.jsonl"),
    ),
];

/// Records every sample that is not recorded yet; returns their ids.
pub fn record(home: &Home) -> anyhow::Result<Vec<RunId>> {
    let mut ids = Vec::new();
    for (id, _, bytes) in SAMPLES {
        let run_id = RunId::from(*id);
        if !home.exists(&run_id) {
            let options = IngestOptions {
                format: Some(FormatArg::CodexAppServer),
                run_id: Some((*id).to_owned()),
                quiet: true,
            };
            ingest_reader(home, id, *bytes, &options)?;
        }
        ids.push(run_id);
    }
    Ok(ids)
}

/// `agentrace samples`.
pub fn record_and_list(home: &Home, out: &mut Out) -> anyhow::Result<()> {
    record(home)?;
    for (id, what, _) in SAMPLES {
        out.line(format!("{id:<24} {what}"))?;
    }
    eprintln!("hint: `agentrace show sample-codex-v1-basic` shows one; `agentrace runs` lists all");
    Ok(())
}

/// Says which sessions already on this machine `agentrace import` would read.
fn local_sessions_hint() {
    let home = std::env::var_os("HOME").filter(|value| !value.is_empty()).map(std::path::PathBuf::from);
    let codex = std::env::var_os("CODEX_HOME")
        .filter(|value| !value.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| home.as_ref().map(|home| home.join(".codex")));
    let claude = crate::claude_ingest::claude_config_dir();
    let rollouts = codex.as_ref().map_or(0, |dir| crate::import::rollout_files(dir).len());
    let projects = claude
        .as_ref()
        .and_then(|dir| std::fs::read_dir(dir.join("projects")).ok())
        .map_or(0, |entries| entries.flatten().count());
    if rollouts > 0 || projects > 0 {
        eprintln!(
            "found {rollouts} Codex rollout file{} and {projects} Claude Code project folder{} on this machine",
            if rollouts == 1 { "" } else { "s" },
            if projects == 1 { "" } else { "s" },
        );
        eprintln!("hint: `agentrace import` turns them into runs; `agentrace usage` then shows tokens per agent");
    }
}

/// `agentrace` with no command: your runs, or the samples when there are none.
pub fn default_action(home: &Home, out: &mut Out) -> anyhow::Result<()> {
    let runs = crate::check::listed_runs(home)?;
    if runs.is_empty() {
        eprintln!(
            "No runs in {} yet; recording the bundled sample runs.",
            home.root().display()
        );
        record(home)?;
        let runs = crate::check::listed_runs(home)?;
        render::runs(out, &runs)?;
        eprintln!(
            "hint: `agentrace show sample-codex-v1-basic` shows the agent tree and who answered"
        );
        eprintln!("hint: `agentrace ingest FILE` records your own `codex app-server` output");
        local_sessions_hint();
        return Ok(());
    }
    render::runs(out, &runs)?;
    eprintln!(
        "hint: `agentrace show latest` shows the newest run; `agentrace --help` lists commands"
    );
    Ok(())
}
