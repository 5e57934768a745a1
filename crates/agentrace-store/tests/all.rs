//! Integration tests of the store: writing and reading logs back, the run
//! record, the home and its runs, the home's other files (spool, locks,
//! scratch), the catalog brought up to the runs folder, the fold's
//! snapshot, the v3 line on disk, and round-trip properties.

mod all {
    pub mod fold;
    pub mod home;
    pub mod house;
    pub mod lean;
    pub mod properties;
    pub mod raw_ref;
    pub mod reader;
    pub mod search;
    pub mod support;
    pub mod sync;
    pub mod writer;
}
