//! Wire types for the formats agentrace reads. They follow upstream and change
//! when upstream changes; they carry no meaning of our own (that lives in
//! `agentrace-core`). Every type here tolerates drift: unknown members are
//! ignored, later members default, unknown tags become `Unknown`.

pub mod claude;
pub mod codex;
pub mod codex_exec;
