//! A file's stamp (its size and modification time) as an import compares
//! it with the last import's: taken from a file's metadata, or through its
//! folder's open handle. It only stamps: what a changed stamp means (read
//! on, read again) is the import's to decide.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt as _;
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

/// Size and modification time of one file, as last imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileStamp {
    pub(crate) size: u64,
    /// Nanoseconds since the Unix epoch (64 bits last until 2554; a head is
    /// kept per rollout, so its size counts).
    pub(crate) modified_ns: u64,
}

impl FileStamp {
    /// The stamp of a file's metadata.
    pub(crate) fn of(metadata: &fs::Metadata) -> FileStamp {
        let modified_ns = metadata
            .modified()
            .ok()
            .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
            .map(|elapsed| u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        FileStamp {
            size: metadata.len(),
            modified_ns,
        }
    }

    /// The stamp of file `name` in the open folder `dir`, stat'ed through
    /// the folder's handle (a link where it points); as [`FileStamp::of`]
    /// gives it. `None` when it cannot be.
    pub(crate) fn at(dir: &fs::File, name: &[u8]) -> Option<FileStamp> {
        let stat = Self::stat_at(dir, name).ok()?;
        let modified_ns = match (u64::try_from(stat.st_mtime), u64::try_from(stat.st_mtime_nsec)) {
            (Ok(seconds), Ok(nanoseconds)) => seconds.saturating_mul(1_000_000_000).saturating_add(nanoseconds),
            // Before the epoch, as `of` has it.
            _ => 0,
        };
        Some(FileStamp {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            modified_ns,
        })
    }

    /// The stat of `name` (a name, or a path below it) in the open folder
    /// `dir`, a link where it points.
    pub(crate) fn stat_at(dir: &fs::File, name: &[u8]) -> std::io::Result<nix::sys::stat::FileStat> {
        nix::sys::stat::fstatat(dir, OsStr::from_bytes(name), nix::fcntl::AtFlags::empty()).map_err(std::io::Error::from)
    }

    /// The stamp of a listed file, stat'ed through its folder's handle
    /// (not by its whole path again: that was half the cost of each stat);
    /// a link is stat'ed where it points. `None` when it cannot be.
    pub(crate) fn of_entry(entry: &fs::DirEntry) -> Option<FileStamp> {
        let metadata = match entry.file_type() {
            Ok(kind) if !kind.is_symlink() => entry.metadata(),
            _ => fs::metadata(entry.path()),
        };
        metadata.ok().map(|metadata| FileStamp::of(&metadata))
    }
}
