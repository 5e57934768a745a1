//! A recorder's reading kept as data ([`Recorder::saved`]): what a later
//! process needs to go on from where a reading of a session's files
//! stopped, without feeding those files again from their start. An import
//! of a session that grew replayed every line read before to bring its
//! recorder where the last import left it: a second at every `agentrace`
//! for a live 60 MB transcript. A cache, never a contract: one written by
//! another build, another attribution or another price book is not
//! restored, and its reader replays instead.
//!
//! Only the attributors of the files an import reads (Codex rollouts,
//! Claude transcripts) are kept so.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::model::Source;

/// Everything a recorder has learnt but its run id and price book (the
/// restoring caller's own); `S` is its run state, `A` its attributor's.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Saved<S, A> {
    /// The build that wrote it (its attributors' shapes are its own).
    pub build: String,
    /// [`crate::ATTRIBUTION`] when it was written.
    pub attribution: u32,
    /// The id of the price book its state's costs were worked out with.
    pub prices: String,
    pub format: SavedFormat,
    pub next_sequence: u64,
    pub session_open: bool,
    pub source: Option<Source>,
    pub keep_secrets: bool,
    pub keeps_frames: bool,
    pub state: S,
    pub attributor: A,
}

/// The formats whose readings are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SavedFormat {
    CodexRollout,
    ClaudeTranscript,
}

/// The build a reading is kept by.
pub(crate) const BUILD: &str = env!("CARGO_PKG_VERSION");

/// An attributor's state, as [`Saved::attributor`] holds it until its
/// format says which attributor it is.
pub(crate) type RawState = Box<RawValue>;

/// A map whose keys are not strings (a thread and a call id, a response's
/// message and request ids) kept as a list of pairs: JSON objects name
/// their members by strings only.
pub(crate) mod pairs {
    use std::collections::HashMap;
    use std::hash::Hash;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(map: &HashMap<K, V>, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(map.iter())
    }

    pub fn deserialize<'de, K, V, D>(deserializer: D) -> Result<HashMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Eq + Hash,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(deserializer)?.into_iter().collect())
    }
}

/// Responses' token counts (a map from a key to the counts and whether
/// they are final) kept as a list of `[key, figures, final]`, the figures
/// one array in the order of [`TokenUsage`]'s fields: a long transcript's
/// reading holds one per response, and with each figure named they were
/// most of its bytes (2.7 of 4.3 MB for 15,000 turns).
pub(crate) mod usages {
    use std::collections::HashMap;
    use std::hash::Hash;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::model::TokenUsage;

    type Figures = [u64; 8];

    fn figures(usage: &TokenUsage) -> Figures {
        [
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.cache_creation_input_tokens,
            usage.cache_creation_1h_input_tokens,
            usage.web_search_requests,
            usage.output_tokens,
            usage.reasoning_output_tokens,
            usage.total_tokens,
        ]
    }

    fn usage(figures: Figures) -> TokenUsage {
        let [input_tokens, cached_input_tokens, cache_creation_input_tokens, cache_creation_1h_input_tokens, web_search_requests, output_tokens, reasoning_output_tokens, total_tokens] = figures;
        TokenUsage {
            input_tokens,
            cached_input_tokens,
            cache_creation_input_tokens,
            cache_creation_1h_input_tokens,
            web_search_requests,
            output_tokens,
            reasoning_output_tokens,
            total_tokens,
        }
    }

    pub fn serialize<K: Serialize, S: Serializer>(map: &HashMap<K, (TokenUsage, bool)>, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(map.iter().map(|(key, (counts, is_final))| (key, figures(counts), is_final)))
    }

    pub fn deserialize<'de, K, D>(deserializer: D) -> Result<HashMap<K, (TokenUsage, bool)>, D::Error>
    where
        K: Deserialize<'de> + Eq + Hash,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, Figures, bool)>::deserialize(deserializer)?
            .into_iter()
            .map(|(key, counts, is_final)| (key, (usage(counts), is_final)))
            .collect())
    }
}
