//! Scratch copies of the repository's fixtures for tests that need them as
//! files on disk (a Codex home, a Claude config dir).

use std::path::{Path, PathBuf};

/// The repository's `fixtures/` folder.
pub fn fixtures() -> PathBuf {
    crate::agents::repo_root().join("fixtures")
}

/// Copies the folder `from` into `to` (made if missing), recursively.
/// Panics on any error: a test cannot go on without its files.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
        }
    }
}
