//! Token usage and dollar cost of one response, in pi's JSON shape. Split from
//! [`crate::types`], which re-exports these types.

use serde::{Deserialize, Serialize};

use crate::extra::Extra;
use crate::json::{deserialize_count, Num};

/// Dollar cost of one response, computed from the model's per-million prices.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Cost of the input tokens.
    pub input: Num,
    /// Cost of the output tokens.
    pub output: Num,
    /// Cost of the cache reads.
    pub cache_read: Num,
    /// Cost of the cache writes.
    pub cache_write: Num,
    /// Sum of the above (or the provider's own figure, see `total_from_provider`).
    pub total: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// `true` when `total` is the provider's reported cost rather than computed.
    pub total_from_provider: Option<bool>,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
    pub extra: Extra,
}

/// Token usage of one response. `input` excludes cache reads and writes in every adapter.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(deserialize_with = "deserialize_count")]
    /// Input tokens, excluding cache reads and writes.
    pub input: u64,
    #[serde(deserialize_with = "deserialize_count")]
    /// Output tokens (reasoning included).
    pub output: u64,
    #[serde(deserialize_with = "deserialize_count")]
    /// Tokens read from the prompt cache.
    pub cache_read: u64,
    #[serde(deserialize_with = "deserialize_count")]
    /// Tokens written to the prompt cache (five-minute tier where the provider has tiers).
    pub cache_write: u64,
    #[serde(
        default,
        rename = "cacheWrite1h",
        skip_serializing_if = "Option::is_none"
    )]
    /// Tokens written to Anthropic's one-hour cache tier, when reported separately.
    pub cache_write_1h: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Reasoning tokens, when the provider reports them.
    pub reasoning: Option<u64>,
    /// Absent in files from before pi recorded it; see [`Usage::total`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    #[serde(default)]
    /// The cost of this usage at the model's prices.
    pub cost: Cost,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
    pub extra: Extra,
}

impl Usage {
    /// pi's initial usage of a response: every count zero, `totalTokens` 0, zero cost.
    pub fn zero() -> Self {
        Usage {
            total_tokens: Some(0),
            ..Usage::default()
        }
    }

    /// `totalTokens`, or the sum of the parts when an old file did not record it.
    pub fn total(&self) -> u64 {
        self.total_tokens
            .unwrap_or(self.input + self.output + self.cache_read + self.cache_write)
    }
}
