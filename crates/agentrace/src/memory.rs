//! How the process's memory is backed.

/// Asks the kernel to back the process's memory with small pages only, for
/// commands whose peak memory matters more than the last few percent of
/// their speed. With transparent huge pages, the allocator's arenas take
/// memory 2 MB at a time, and a repeated `import` of 2 GB of sessions
/// peaked at 45 MB instead of 31 MB (a cold one at 58 instead of 35 MB);
/// small pages cost `import` nothing measurable. The allocator itself no
/// longer asks for huge pages (see `main.rs`); this also keeps them away
/// where the kernel gives them unasked (`enabled` set to `always`). Not
/// for a command that starts agents: the setting passes to its children.
/// A kernel that refuses is not an error.
pub fn prefer_small_pages() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_thp_disable(true);
}
