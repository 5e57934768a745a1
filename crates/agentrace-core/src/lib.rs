//! The pure core of agentrace: bytes of a source in, attributed envelopes and
//! run state out. It never reads the clock, mints random ids, logs or touches
//! files: the shell stamps time on each input line and owns all I/O. The
//! dependency graph enforces it (no tokio, no filesystem crates here).

// A match on one of our own enums names every variant, so a new variant is
// a compile error at each place that must decide what it means (a `_` arm
// would decide silently).
#![deny(clippy::wildcard_enum_match_arm)]

pub mod attribute;
pub mod book;
pub mod childwork;
pub mod claude;
pub mod codex;
pub mod days;
pub mod decode;
pub mod exec;
pub mod html;
mod legacy_facts;
pub mod lines;
pub mod model;
pub mod overview;
pub mod prices;
mod raw_frame;
mod pairs;
pub mod recorder;
pub mod redact;
pub mod registry;
pub mod rollout;
mod saved;
pub mod state;
mod summary;
pub mod warnings;
pub mod waterfall;
pub mod compare;

/// What the attributors make of the providers' files, as a number: raised
/// whenever a line of a capture is attributed otherwise (an agent's end,
/// a status, a record the files now give). An import keeps the number its
/// runs were made under, and reads every session again under a new one:
/// it reads only what grew, so a fix would otherwise never reach the
/// history a user imported before (the agentrace crate's
/// `the_attribution_number_moves_with_what_the_captures_are_attributed`
/// fails until it is raised with the captures' snapshots).
pub const ATTRIBUTION: u32 = 5;

pub use model::*;
pub use book::{Changes, RunBook};
pub use recorder::{InputLine, Recorder};
pub use state::RunState;
