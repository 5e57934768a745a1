//! Folder listings kept between imports: a folder whose stamp (mtime,
//! ctime, inode) is what the catalog kept is not listed again; its entries
//! come from the catalog. Listing each of thousands of folders was most of
//! what was left of a repeated import (issue 19).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use agentrace_store::catalog::DirRow;

/// How long after a folder's mtime its listing must have been taken to be
/// trusted: a file added in the same tick of a coarse clock leaves the
/// mtime as it was (git's "racy" rule).
const RACY_NS: u64 = 2_000_000_000;

/// An entry's kind as listed; a link is resolved by whoever reads it,
/// each time (where it points may change while its folder does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    Link,
    Other,
}

impl Kind {
    pub(crate) fn of(kind: Option<std::fs::FileType>) -> Kind {
        match kind {
            Some(kind) if kind.is_dir() => Kind::Dir,
            Some(kind) if kind.is_file() => Kind::File,
            Some(kind) if kind.is_symlink() => Kind::Link,
            Some(_) => Kind::Other,
            // Unknown kind: resolved by a stat, as a link is.
            None => Kind::Link,
        }
    }

    fn byte(self) -> u8 {
        match self {
            Kind::Dir => b'd',
            Kind::File => b'f',
            Kind::Link => b'l',
            Kind::Other => b'o',
        }
    }

    fn of_byte(byte: u8) -> Kind {
        match byte {
            b'd' => Kind::Dir,
            b'f' => Kind::File,
            b'o' => Kind::Other,
            _ => Kind::Link,
        }
    }
}

/// A folder's entries: names and kinds, unsorted.
pub(crate) type Entries = Vec<(Box<[u8]>, Kind)>;

/// The folder listings of the last import and the ones this import takes.
#[derive(Debug, Default)]
pub(crate) struct DirCache {
    known: agentrace_store::FastMap<Vec<u8>, DirRow>,
    /// The known paths in byte order, made when first needed: the rows
    /// under a folder are a range of it.
    sorted: std::sync::OnceLock<Vec<Vec<u8>>>,
    /// Rows to keep (`Some`) or forget (`None`), by path.
    changed: Mutex<Vec<(Vec<u8>, Option<DirRow>)>>,
    /// Folders listed (read_dir) by this import: what a test counts.
    listed: AtomicU64,
}

/// A folder's stamp: its mtime, ctime and inode (nanoseconds).
fn stamp_of(stat: &nix::sys::stat::FileStat) -> (u64, u64, u64) {
    let ns = |seconds: i64, nanoseconds: i64| match (u64::try_from(seconds), u64::try_from(nanoseconds)) {
        (Ok(seconds), Ok(nanoseconds)) => seconds.saturating_mul(1_000_000_000).saturating_add(nanoseconds),
        _ => 0,
    };
    (ns(stat.st_mtime, stat.st_mtime_nsec), ns(stat.st_ctime, stat.st_ctime_nsec), stat.st_ino)
}

impl DirCache {
    /// The listings `known` (as the catalog keeps them).
    pub(crate) fn new(known: agentrace_store::FastMap<Vec<u8>, DirRow>) -> Self {
        Self { known, ..Self::default() }
    }

    /// How many folders were listed.
    #[cfg(test)]
    pub(crate) fn listed(&self) -> u64 {
        self.listed.load(Ordering::Relaxed)
    }

    /// What to write to the catalog: rows kept anew, and the paths of
    /// those to forget: a folder listed again forgets the rows of each
    /// subfolder it no longer holds, and of everything under it (a folder
    /// gone is never asked for again, so its row would stay for good).
    pub(crate) fn take_changes(&self) -> Vec<(Vec<u8>, Option<DirRow>)> {
        self.changed.lock().map(|mut changed| std::mem::take(&mut *changed)).unwrap_or_default()
    }

    /// The entries of `dir`, whose open handle's stat is `stat`: from the
    /// catalog when its stamp is the one kept, else listed now (and kept
    /// when the listing is old enough to trust).
    pub(crate) fn entries(&self, dir: &Path, stat: &nix::sys::stat::FileStat) -> std::io::Result<Entries> {
        let key = dir.as_os_str().as_bytes();
        let (mtime_ns, ctime_ns, inode) = stamp_of(stat);
        if let Some(row) = self.known.get(key) {
            if (row.mtime_ns, row.ctime_ns, row.inode) == (mtime_ns, ctime_ns, inode) {
                return Ok(decode(&row.entries));
            }
        }
        self.listed.fetch_add(1, Ordering::Relaxed);
        let entries: Entries = std::fs::read_dir(dir)?
            .flatten()
            .map(|entry| (entry.file_name().into_encoded_bytes().into_boxed_slice(), Kind::of(entry.file_type().ok())))
            .collect();
        let now_ns = u64::try_from(crate::clock::now().millis()).unwrap_or(0).saturating_mul(1_000_000);
        let row = (now_ns.saturating_sub(mtime_ns) >= RACY_NS).then(|| DirRow { mtime_ns, ctime_ns, inode, entries: encode(&entries) });
        let gone = self.gone_under(key, &entries);
        if row.is_some() || self.known.contains_key(key) || !gone.is_empty() {
            if let Ok(mut changed) = self.changed.lock() {
                changed.push((key.to_vec(), row));
                changed.extend(gone.into_iter().map(|path| (path, None)));
            }
        }
        Ok(entries)
    }

    /// The known rows of the folders under `dir` whose first folder below
    /// it is not among its `entries` as listed now: a subfolder gone, and
    /// everything under it. Found among the known rows, not in `dir`'s kept
    /// listing, which a listing too young to trust never was.
    fn gone_under(&self, dir: &[u8], entries: &Entries) -> Vec<Vec<u8>> {
        let prefix = [dir, b"/"].concat();
        let sorted = self.sorted.get_or_init(|| {
            let mut paths: Vec<Vec<u8>> = self.known.keys().cloned().collect();
            paths.sort_unstable();
            paths
        });
        let from = sorted.partition_point(|path| path[..] < prefix[..]);
        // Nothing known under it (every folder of a first import): the
        // listing is not even looked at.
        if !sorted.get(from).is_some_and(|path| path.starts_with(&prefix)) {
            return Vec::new();
        }
        let here: agentrace_store::FastSet<&[u8]> = entries.iter().map(|(name, _)| &name[..]).collect();
        sorted[from..]
            .iter()
            .map_while(|path| Some((path, path.strip_prefix(&prefix[..])?)))
            .filter(|(_, below)| !here.contains(below.split(|byte| *byte == b'/').next().unwrap_or_default()))
            .map(|(path, _)| path.clone())
            .collect()
    }
}

/// Entries as the catalog keeps them: a kind byte, the name, a NUL.
fn encode(entries: &Entries) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(entries.iter().map(|(name, _)| name.len() + 2).sum());
    for (name, kind) in entries {
        bytes.push(kind.byte());
        bytes.extend_from_slice(name);
        bytes.push(0);
    }
    bytes
}

fn decode(bytes: &[u8]) -> Entries {
    bytes
        .split(|byte| *byte == 0)
        .filter_map(|entry| {
            let (kind, name) = entry.split_first()?;
            Some((name.into(), Kind::of_byte(*kind)))
        })
        .collect()
}

/// Opens `dir` and stats it through its handle: the handle is kept to
/// stat its files by name.
pub(crate) fn open(dir: &Path) -> std::io::Result<(std::fs::File, nix::sys::stat::FileStat)> {
    let handle = std::fs::File::open(dir)?;
    let stat = nix::sys::stat::fstat(&handle).map_err(std::io::Error::from)?;
    Ok((handle, stat))
}

/// Whether the entry `name` of `dir` of kind `kind` is a folder (a link
/// is resolved).
pub(crate) fn is_dir(dir: &Path, name: &[u8], kind: Kind) -> bool {
    match kind {
        Kind::Dir => true,
        Kind::Link => dir.join(OsStr::from_bytes(name)).is_dir(),
        Kind::File | Kind::Other => false,
    }
}
