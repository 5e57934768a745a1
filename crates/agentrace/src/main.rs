//! The `agentrace` binary: parses the command line, wires sources to the
//! recorder and the store, and prints. Data goes to stdout, diagnostics to
//! stderr; a closed stdout pipe ends the program quietly with exit 0.

mod agent_process;
mod catalog;
mod clock;
mod commands;
mod day_range;
mod home_files;
mod run_ids;
mod sources;
mod cli;
mod live;
mod recording;
mod memory;
mod output;
mod parallel;
mod render;
mod report;
mod trace_context;
mod secrets;
mod usage_index;
mod warning_config;
mod zone;

use std::process::ExitCode;

use clap::Parser;

// Attribution allocates many small, short-lived values per line (events,
// ids, decoded fields); mimalloc serves them markedly faster than glibc's
// malloc, which was a fifth of `usage`'s CPU time straight from folders.
// Version 2: version 3 kept three times the memory at the peak of a cold
// import (126 MB against 40 MB on a 200 MB corpus). Built without
// transparent huge pages (`no_thp`): memory the kernel has handed back to
// its host (a VM's freed pages, seconds after a process ends) cost five
// times more to touch again 2 MB at a time than in small pages (2 against
// 0.4 ms a megabyte here), and a command run after a pause, as people run
// them, paid it: `ingest` of 40 MiB spent 0.19 s of system time, 0.08 s
// without, and `usage` after an import 0.047 s, 0.025 s without. Run back
// to back, both builds take the same time.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Said after the error of a run that is not there.
const NO_SUCH_RUN_HINT: &str = "hint: a run is named by its id, a unique prefix of one, or `latest` (the run that started last); `agentrace runs` lists them\n";

/// The open files this process asks for, when its hard limit allows.
const OPEN_FILES: u64 = 8192;

/// Raises the soft limit on open files to [`OPEN_FILES`] (or the hard
/// limit, when lower). A walk of the Claude folders holds a folder open per
/// session being stat'ed, up to a few hundred at once: under a soft limit
/// of 256 (macOS's, or a shell's `ulimit -n`), a history of more project
/// folders than that could not be read. Capped, not raised to the hard
/// limit: children (the agents `run` starts, hook commands) inherit it,
/// and one that loops over every possible descriptor stays quick.
fn more_open_files() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let wanted = hard.min(OPEN_FILES);
        if soft < wanted {
            // Not raised: a history that needs more says so when read.
            let _ = setrlimit(Resource::RLIMIT_NOFILE, wanted, hard);
        }
    }
}

fn main() -> ExitCode {
    more_open_files();
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(code) => code,
        Err(error) if output::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => match error.downcast::<clap::Error>() {
            // A usage error found once the command line was parsed (a
            // `--since` after its `--until`): exit 2, in clap's words.
            Ok(usage) => usage.exit(),
            Err(error) => {
                let mut stderr = std::io::stderr().lock();
                let _ = std::io::Write::write_fmt(&mut stderr, format_args!("error: {error:#}\n"));
                // A run that is not there: what a run may be named by.
                let missing = error.chain().find_map(|cause| match cause.downcast_ref() {
                    Some(agentrace_store::StoreError::NotFound { query, .. }) => Some(query.clone()),
                    _ => None,
                });
                if let Some(query) = missing {
                    let _ = std::io::Write::write_all(&mut stderr, NO_SUCH_RUN_HINT.as_bytes());
                    // A helper's thread id, found in its own files: the run
                    // that holds it.
                    if let Ok(home) = agentrace_store::Home::from_env() {
                        for hint in catalog::thread_hints(&home, &query) {
                            let _ = std::io::Write::write_fmt(&mut stderr, format_args!("{hint}\n"));
                        }
                    }
                }
                ExitCode::FAILURE
            }
        },
    }
}
