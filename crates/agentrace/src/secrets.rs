//! `--keep-secrets`: whether recorders store frames exactly as read. By
//! default they redact values that look like API keys or bearer tokens
//! (`agentrace_core::redact`). The choice is made once per process, by the
//! recording command's flag, so every recorder it creates follows it.

use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;

static KEEP: AtomicBool = AtomicBool::new(false);

/// The flag, flattened into the recording commands' arguments.
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct KeepSecretsArg {
    /// Store frames exactly as read; by default values that look like API
    /// keys or bearer tokens (`sk-…`, `Bearer …`, `ANTHROPIC_API_KEY=…`) are
    /// redacted in the run log.
    #[arg(long)]
    pub keep_secrets: bool,
}

impl KeepSecretsArg {
    /// Makes the choice for this process.
    pub fn apply(self) {
        KEEP.store(self.keep_secrets, Ordering::Relaxed);
    }
}

/// True when the user asked to keep secrets.
pub fn keep() -> bool {
    KEEP.load(Ordering::Relaxed)
}
