//! Test support, never shipped: scripted model servers on 127.0.0.1 that the
//! real `codex` and `claude` CLIs talk to, finders for those CLIs, and
//! scratch copies of the fixtures. Only the model is scripted; the agent
//! runtimes under test are the real ones.

pub mod agents;
pub mod browser;
pub mod files;
pub mod loopback;
pub mod anthropic;
pub mod responses;
