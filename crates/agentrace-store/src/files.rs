//! Replacing a file whole, the way the run record and the snapshot are
//! rewritten, and the stable digest that names what a file holds: helpers
//! shared by the writer, the fold and the price file, kept apart so none
//! imports another for them. It owns how the bytes reach the disk, never
//! which file is written nor what it says.

use std::fs;
use std::path::Path;

use crate::error::StoreError;

/// FNV-1a, 64 bits, of `bytes`: a stable digest (what it names outlives
/// the process that wrote it: a snapshot's log, a price file's table).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

/// Removes the file `path`; one that is not there is already removed.
pub(crate) fn remove_if_present(path: &Path, action: &'static str) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(StoreError::io(action, path, source)),
    }
}

/// Writes `bytes` to `<path>.tmp-<pid>` and renames it over `path`, without
/// `fsync`: readers see the old file or the new one, never a mix.
pub(crate) fn replace_unsynced(path: &Path, bytes: &[u8], action: &'static str) -> Result<(), StoreError> {
    let mut temporary_name = path.file_name().unwrap_or_default().to_os_string();
    temporary_name.push(format!(".tmp-{}", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
    fs::write(&temporary, bytes).map_err(|source| StoreError::io(action, &temporary, source))?;
    fs::rename(&temporary, path).map_err(|source| StoreError::io(action, path, source))
}
