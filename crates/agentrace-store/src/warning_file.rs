//! A user's warning config (`--config FILE`, and `warnings.json` in the
//! home, which every record of a run is judged by): which codes are
//! allowed or denied, and the rules and budgets the detectors read.

use std::path::Path;

use agentrace_core::warnings::WarningConfig;

use crate::StoreError;

/// The shape a warning config must have, for the error that names it.
const EXPECTED: &str = "hint: expected JSON like {\"allow\": [\"orphan_child\"], \"deny\": [\"lost_turn\"]}";

/// The config in the file at `path`, checked: an error names the file and
/// says what is wrong.
pub fn read_warning_file(path: &Path) -> Result<WarningConfig, StoreError> {
    let bytes = std::fs::read(path).map_err(|source| StoreError::io("read", path, source))?;
    parse_warning_file(path, &bytes)
}

/// [`read_warning_file`] of bytes already read.
pub(crate) fn parse_warning_file(path: &Path, bytes: &[u8]) -> Result<WarningConfig, StoreError> {
    let config: WarningConfig = serde_json::from_slice(bytes).map_err(|error| StoreError::WarningFile {
        path: path.to_owned(),
        cause: format!("not a warning config: {error}\n{EXPECTED}"),
    })?;
    if let Some(limit) = config.max_cost {
        if !(limit.is_finite() && limit >= 0.0) {
            return Err(StoreError::WarningFile {
                path: path.to_owned(),
                cause: format!("maxCost {limit} is not an amount of US dollars\nhint: write a number of at least 0, e.g. \"maxCost\": 0.25"),
            });
        }
    }
    Ok(config)
}

/// What names the config of a home that has none (every code at its own
/// level, no rules, no budgets).
pub fn no_config_id() -> &'static str {
    // Worked out once: every home without a config (each command's start)
    // and every catalog sync asks for it.
    static ID: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| config_id(&WarningConfig::default()));
    &ID
}

/// What names a config among others: a digest of what it says (not of
/// its bytes, so a file rewritten with other spacing judges as before, and
/// an empty one as none).
pub fn config_id(config: &WarningConfig) -> String {
    let said = serde_json::to_vec(config).unwrap_or_default();
    format!("{:016x}", crate::files::fnv1a(&said))
}
