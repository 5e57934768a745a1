//! Integration tests of the pure core: every real capture, the attribution
//! rules, and the properties (live equals replay, any split, no panics).

mod all {
    pub mod book;
    pub mod childwork;
    pub mod childwork_fixtures;
    pub mod claude;
    pub mod costs;
    pub mod days;
    pub mod exec;
    pub mod fixtures;
    pub mod properties;
    pub mod redact;
    pub mod rollouts;
    pub mod rules;
    pub mod saved;
    pub mod support;
    pub mod warnings;
}
