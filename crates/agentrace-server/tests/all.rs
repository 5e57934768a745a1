//! Integration tests of the server: the API through `oneshot` (no socket),
//! and the viewer in a real headless Chromium.

mod all {
    pub mod api;
    pub mod browser;
    pub mod support;
}
