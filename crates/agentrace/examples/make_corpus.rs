//! Writes a synthetic, realistic `CODEX_HOME` and Claude config dir of a
//! given size for benchmarks and tests (`cargo run --release -p agentrace
//! --example make_corpus -- --out DIR --mb 1024`). Every session is a real
//! capture from `fixtures/` with fresh ids and shifted times: Codex roots
//! with V1, V2 (forked, with the replayed parent prefix) and nested children;
//! Claude sessions of every transcript layout, with their duplicated
//! per-content-block lines. Codex sessions are spread over day folders
//! (`sessions/YYYY/MM/DD/`, [`CODEX_PER_DAY`] a day, going back from the
//! captures' day), as Codex files them.

// It writes the corpus folder it is told to, no file of an agentrace home.
#![expect(clippy::disallowed_methods, reason = "writes the folder named by --out")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Codex captures used as templates.
const CODEX: &[&str] = &["v1_basic", "v1_parallel", "v2_basic", "real_model_nested", "v1_followup", "v2_interrupt_agent"];
/// How many Codex sessions (a root with its children) one day's folder
/// holds.
const CODEX_PER_DAY: u64 = 32;

/// The day folder (`YYYY/MM/DD`) of the `day`-th day back from the
/// captures' (2026-11-29); months of 28 days keep every date real.
fn day_folder(day: u64) -> String {
    let (year, month, date) = (2026 - day / 336, 11 - (day / 28) % 12, 29 - day % 28);
    let (year, month) = if month == 0 { (year - 1, 12) } else { (year, month) };
    format!("{year:04}/{month:02}/{date:02}")
}

/// Claude captures used as templates.
const CLAUDE: &[&str] = &["nested_fg", "parallel_bg", "single_fg", "v2.1.197_parallel", "bash_then_agent_fg", "followup_same_subagent"];

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every UUID-shaped token in `text` (8-4-4-4-12 hex).
fn uuids(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let shape = [8, 4, 4, 4, 12];
    let mut index = 0;
    while index + 36 <= bytes.len() {
        let mut position = index;
        let mut ok = true;
        for (group, length) in shape.iter().enumerate() {
            for _ in 0..*length {
                if !bytes[position].is_ascii_hexdigit() {
                    ok = false;
                    break;
                }
                position += 1;
            }
            if !ok {
                break;
            }
            if group < 4 {
                if bytes[position] != b'-' {
                    ok = false;
                    break;
                }
                position += 1;
            }
        }
        let boundary = |at: usize| at >= bytes.len() || !bytes[at].is_ascii_hexdigit();
        if ok && (index == 0 || !bytes[index - 1].is_ascii_hexdigit()) && boundary(position) {
            found.push(text[index..position].to_owned());
            index = position;
        } else {
            index += 1;
        }
    }
    found
}

/// Replaces every id of a template with one unique to copy `copy`.
struct Renamer {
    copy: u64,
    map: BTreeMap<String, String>,
}

impl Renamer {
    fn id(&mut self, old: &str) -> String {
        let copy = self.copy;
        let next = self.map.len() as u64;
        self.map
            .entry(old.to_owned())
            .or_insert_with(|| {
                // Keep the UUIDv7 time prefix so file names still sort by time.
                format!("{}-{:04x}-7{:03x}-8{:03x}-{:012x}", &old[..8], copy >> 48 & 0xffff, copy >> 36 & 0xfff, next & 0xfff, copy & 0xffff_ffff_ffff)
            })
            .clone()
    }

    fn text(&mut self, text: &str) -> String {
        let mut out = text.to_owned();
        for old in uuids(text) {
            let new = self.id(&old);
            out = out.replace(&old, &new);
        }
        // Claude message and request ids are deduplicated across files by
        // ccusage and agentrace alike: make them unique per copy too.
        for prefix in ["\"msg_", "\"req_", "\"toolu_"] {
            out = out.replace(prefix, &format!("{prefix}c{}x", self.copy));
        }
        out
    }
}

fn main() {
    let mut out: Option<PathBuf> = None;
    let mut megabytes: u64 = 10;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = args.next().map(PathBuf::from),
            "--mb" => megabytes = args.next().and_then(|v| v.parse().ok()).unwrap_or(10),
            _ => {
                eprintln!("usage: make_corpus --out DIR [--mb N]");
                std::process::exit(2);
            }
        }
    }
    let Some(out) = out else {
        eprintln!("usage: make_corpus --out DIR [--mb N]");
        std::process::exit(2);
    };
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let templates: Vec<(bool, Vec<(PathBuf, String)>)> = CODEX
        .iter()
        .map(|name| (true, fixtures.join("codex").join(name).join("rollouts")))
        .chain(CLAUDE.iter().map(|name| (false, fixtures.join("claude").join(name).join("home_claude/projects"))))
        .map(|(codex, dir)| {
            let files = files_under(&dir)
                .into_iter()
                .map(|path| {
                    let relative = path.strip_prefix(&dir).map(Path::to_path_buf).unwrap_or_default();
                    (relative, std::fs::read_to_string(&path).unwrap_or_default())
                })
                .collect();
            (codex, files)
        })
        .collect();
    let target = megabytes * 1024 * 1024;
    let mut written = 0u64;
    let mut copy = 0u64;
    let mut codex_copies = 0u64;
    while written < target {
        for (codex, files) in &templates {
            copy += 1;
            let day = day_folder(codex_copies / CODEX_PER_DAY);
            if *codex {
                codex_copies += 1;
            }
            let mut renamer = Renamer { copy, map: BTreeMap::new() };
            for (relative, text) in files {
                let relative = renamer.text(&relative.to_string_lossy());
                let path = if *codex {
                    // The captures' own day folder, replaced.
                    let name = Path::new(&relative).file_name().map(PathBuf::from).unwrap_or_default();
                    out.join("codex/sessions").join(&day).join(name)
                } else {
                    out.join("claude/projects").join(&relative)
                };
                let text = renamer.text(text);
                if let Some(parent) = path.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                if let Err(error) = std::fs::write(&path, &text) {
                    eprintln!("cannot write {}: {error}", path.display());
                    std::process::exit(1);
                }
                written += text.len() as u64;
            }
            if written >= target {
                break;
            }
        }
    }
    eprintln!("wrote {} MB in {copy} sessions under {}", written / (1024 * 1024), out.display());
}
