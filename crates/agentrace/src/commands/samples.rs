//! The bundled sample runs: real captures of Codex 0.169 (V1, V2, nested)
//! embedded in the binary, so a new user sees agentrace work before
//! recording anything of their own.

use agentrace_core::model::RunId;
use agentrace_store::{Catalog, Home};

use crate::commands::ingest::FormatArg;
use crate::commands::ingest::{ingest_reader, Ends, IngestOptions};
use crate::output::Out;

/// (run id, what it shows, the captured app-server stdout).
const SAMPLES: &[(&str, &str, &[u8])] = &[
    (
        "sample-codex-v1-basic",
        "Codex V1: the root spawns one helper, waits, closes it, answers",
        include_bytes!("../../../../fixtures/codex/v1_basic/server.jsonl"),
    ),
    (
        "sample-codex-v2-basic",
        "Codex V2: a helper linked by subAgentActivity after it first spoke",
        include_bytes!("../../../../fixtures/codex/v2_basic/server.jsonl"),
    ),
    (
        "sample-codex-nested",
        "Codex with a real model slug: root → helper → grandchild",
        include_bytes!("../../../../fixtures/codex/real_model_nested/server.jsonl"),
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
                codex_home: None,
            };
            ingest_reader(home, id, *bytes, Ends::Surely, &options)?;
        }
        ids.push(run_id);
    }
    Ok(ids)
}

/// Records the samples for a new user with no history, noted as
/// placeholders: [`retire_placeholders`] removes them once the user has
/// runs of their own.
pub fn record_placeholders(home: &Home) -> anyhow::Result<Vec<RunId>> {
    let ids = record(home)?;
    home.mark_placeholders(&ids)?;
    Ok(ids)
}

/// Removes the placeholder samples once the catalog (brought up to the
/// runs folder) holds a run that is not one of them: the samples appear
/// only when there is no history at all, and their tokens and cost must
/// not add to the user's own. Says so on stderr. Returns how many were
/// removed.
pub fn retire_placeholders(home: &Home, catalog: &Catalog) -> anyhow::Result<usize> {
    let placeholders: Vec<RunId> = home.placeholder_runs().into_iter().filter(|id| home.exists(id)).collect();
    if placeholders.is_empty() || catalog.run_count()? <= placeholders.len() as u64 {
        return Ok(0);
    }
    for id in &placeholders {
        home.remove_run(id)?;
        catalog.remove_run(id.as_str())?;
    }
    home.forget_placeholders()?;
    eprintln!("note: your own runs are here, so the bundled sample runs recorded when there were none are removed (`agentrace samples` records them again)");
    Ok(placeholders.len())
}

/// Arguments of `agentrace samples`.
#[derive(Debug, clap::Args)]
pub struct SamplesArgs {
    /// Print `{"samples": [{"id", "what"}]}` instead of a list.
    #[arg(long)]
    pub json: bool,
}

/// `agentrace samples`: asked for, they are kept.
pub fn record_and_list(home: &Home, args: &SamplesArgs, out: &mut Out) -> anyhow::Result<()> {
    record(home)?;
    home.forget_placeholders()?;
    if args.json {
        let samples: Vec<serde_json::Value> = SAMPLES.iter().map(|(id, what, _)| serde_json::json!({"id": id, "what": what})).collect();
        return out.json_pretty(&serde_json::json!({ "samples": samples }));
    }
    for (id, what, _) in SAMPLES {
        out.line(format!("{id:<24} {what}"))?;
    }
    eprintln!("hint: `agentrace show sample-codex-v1-basic` shows one; `agentrace runs` lists all");
    Ok(())
}
