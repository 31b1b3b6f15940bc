//! A chat model as the catalogue and `models.json` describe it: ids, wire API, limits, prices.
//! Split from [`crate::types`], which re-exports these types.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::extra::Extra;
use crate::json::serialize_js_f64;

/// One price tier: applies when the request's input exceeds `input_tokens_above`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostTier {
    /// The tier applies above this many input tokens.
    pub input_tokens_above: u64,
    #[serde(serialize_with = "serialize_js_f64")]
    /// USD per million input tokens.
    pub input: f64,
    #[serde(serialize_with = "serialize_js_f64")]
    /// USD per million output tokens.
    pub output: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    /// USD per million cache-read tokens.
    pub cache_read: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    /// USD per million cache-write tokens.
    pub cache_write: f64,
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    #[serde(default, serialize_with = "serialize_js_f64")]
    /// USD per million input tokens.
    pub input: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    /// USD per million output tokens.
    pub output: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    /// USD per million cache-read tokens.
    pub cache_read: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    /// USD per million cache-write tokens.
    pub cache_write: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Prices for long inputs, when the model has them.
    pub tiers: Option<Vec<CostTier>>,
}

/// A chat model as the catalogue and `models.json` describe it.
///
/// `Debug` prints header names but never their values: `models.json` may put a literal API key
/// in a header, and models end up in logs.
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The model id the API expects.
    pub id: String,
    #[serde(default)]
    /// A display name.
    pub name: String,
    /// Wire protocol: `anthropic-messages`, `openai-completions`, `openai-responses`,
    /// `google-generative-ai`, ...
    pub api: String,
    /// The provider id (`anthropic`, `openrouter`, `ollama`, ...).
    pub provider: String,
    #[serde(default)]
    /// The API base URL.
    pub base_url: String,
    #[serde(default)]
    /// Whether the model can reason (thinking levels apply).
    pub reasoning: bool,
    /// Input modalities: `"text"`, `"image"`.
    #[serde(default = "text_only")]
    pub input: Vec<String>,
    #[serde(default)]
    /// Prices per million tokens.
    pub cost: ModelCost,
    #[serde(default)]
    /// Context window in tokens.
    pub context_window: u64,
    #[serde(default)]
    /// Largest output in tokens.
    pub max_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Extra request headers (values may name environment variables or `!commands`).
    pub headers: Option<Map<String, Value>>,
    /// Level → provider-native value; `null` marks a level unsupported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Per-model quirks that override the provider's detected ones.
    pub compat: Option<Value>,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
    pub extra: Extra,
}

fn text_only() -> Vec<String> {
    vec!["text".to_owned()]
}

impl Model {
    /// Whether the model accepts image input.
    pub fn supports_images(&self) -> bool {
        self.input.iter().any(|m| m == "image")
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Option<Vec<&String>> = self.headers.as_ref().map(|h| h.keys().collect());
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("api", &self.api)
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("reasoning", &self.reasoning)
            .field("input", &self.input)
            .field("cost", &self.cost)
            .field("context_window", &self.context_window)
            .field("max_tokens", &self.max_tokens)
            .field(
                "headers",
                &header_names.map(|names| format!("{names:?} (values hidden)")),
            )
            .field("thinking_level_map", &self.thinking_level_map)
            .field("compat", &self.compat)
            .field("extra", &self.extra)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_debug_hides_header_values() {
        let mut headers = Map::new();
        headers.insert(
            "x-api-key".to_owned(),
            Value::String("sk-secret-123".to_owned()),
        );
        let model = Model {
            id: "m".to_owned(),
            headers: Some(headers),
            ..Model::default()
        };
        let shown = format!("{model:?}");
        assert!(shown.contains("x-api-key"), "{shown}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
    }
}
