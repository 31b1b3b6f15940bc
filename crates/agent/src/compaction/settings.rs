//! The compaction settings (pi's `compaction` block of `settings.json`) and their defaults,
//! which branch summaries share.

use serde::{Deserialize, Serialize};

/// The three compaction settings (pi's `compaction` block of `settings.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionSettings {
    /// Whether automatic compaction runs.
    pub enabled: bool,
    /// Head-room kept free in the context window.
    pub reserve_tokens: u64,
    /// Approximate size of the recent tail kept verbatim.
    pub keep_recent_tokens: u64,
}

/// Default reserve (compaction and branch summaries).
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
/// Default size of the kept tail.
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
            keep_recent_tokens: DEFAULT_KEEP_RECENT_TOKENS,
        }
    }
}
