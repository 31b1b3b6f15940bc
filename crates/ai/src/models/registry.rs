//! [`ModelRegistry`]: every known provider and model, the built-in catalogue layered with
//! user `models.json` files.

use std::path::Path;

use serde_json::Value;

use crate::error::AiError;
use crate::types::Model;

use super::api_key::{env_api_key, resolve_config_value, ApiKey};
use super::definitions::{apply_provider, models_error, strip_json_comments};
use super::provider::{ProviderConfig, SecretConfig};

/// The built-in catalogue, in `models.json` format.
pub const BUILTIN_CATALOG_JSON: &str = include_str!("catalog.json");
/// Name used for the built-in catalogue in error messages.
pub const BUILTIN_CATALOG_NAME: &str = "built-in catalog";

/// All known providers and models, in catalogue order.
///
/// The built-in catalogue, extended by a `models.json` document (here a local Ollama server):
///
/// ```
/// use arbor_ai::ModelRegistry;
///
/// let mut registry = ModelRegistry::builtin()?;
/// assert_eq!(registry.find("anthropic/claude-sonnet-4-5")?.api, "anthropic-messages");
///
/// registry.apply_models_json_str(
///     r#"{"providers": {"ollama": {
///         "baseUrl": "http://localhost:11434/v1",
///         "api": "openai-completions",
///         "models": [{"id": "qwen3:32b"}]
///     }}}"#,
///     "models.json",
/// )?;
/// let local = registry.find("ollama/qwen3:32b")?;
/// assert_eq!(local.base_url, "http://localhost:11434/v1");
/// assert!(registry.find("no-such-model").is_err());
/// # Ok::<(), arbor_ai::AiError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ModelRegistry {
    providers: Vec<ProviderConfig>,
}

impl ModelRegistry {
    /// A registry without any model.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The built-in catalogue.
    pub fn builtin() -> Result<Self, AiError> {
        let mut registry = Self::empty();
        registry.apply_models_json_str(BUILTIN_CATALOG_JSON, BUILTIN_CATALOG_NAME)?;
        Ok(registry)
    }

    /// Layers a user `models.json` over the registry. A missing file changes nothing.
    pub fn load_models_json(&mut self, path: &Path) -> Result<(), AiError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(AiError::Io {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        self.apply_models_json_str(&text, &path.display().to_string())
    }

    /// Layers `models.json` text over the registry; `source` names it in errors. On error the
    /// registry is unchanged.
    pub fn apply_models_json_str(&mut self, text: &str, source: &str) -> Result<(), AiError> {
        let cleaned = strip_json_comments(text.strip_prefix('\u{feff}').unwrap_or(text));
        let root: Value = serde_json::from_str(&cleaned).map_err(|e| {
            models_error(
                source,
                format!(
                    "invalid JSON at line {}, column {}: {e}",
                    e.line(),
                    e.column()
                ),
            )
        })?;
        let root = root
            .as_object()
            .ok_or_else(|| models_error(source, "root: expected an object".into()))?;
        let providers = match root.get("providers") {
            Some(Value::Object(p)) => p,
            Some(_) => return Err(models_error(source, "providers: expected an object".into())),
            None => {
                return Err(models_error(
                    source,
                    "providers: required field is missing".into(),
                ))
            }
        };
        let mut next = self.providers.clone();
        for (id, config) in providers {
            let config = config.as_object().ok_or_else(|| {
                models_error(source, format!("providers.{id}: expected an object"))
            })?;
            let path = format!("providers.{id}");
            let index = next.iter().position(|p| &p.id == id);
            let existing = index.map(|i| next[i].clone());
            let merged = apply_provider(id, existing, config, &path)
                .map_err(|error| models_error(source, error.into()))?;
            match index {
                Some(i) => next[i] = merged,
                None => next.push(merged),
            }
        }
        self.providers = next;
        Ok(())
    }

    /// The model `id` of `provider`.
    pub fn get(&self, provider: &str, id: &str) -> Option<&Model> {
        self.provider(provider)?.models.iter().find(|m| m.id == id)
    }

    /// Resolves a user's model choice: `provider/id` (split at the first `/`, so
    /// `openrouter/openai/gpt-5.2` works) or a bare id that only one provider offers.
    pub fn find(&self, spec: &str) -> Result<&Model, AiError> {
        if let Some((provider, id)) = spec.split_once('/') {
            if let Some(model) = self.get(provider, id) {
                return Ok(model);
            }
        }
        let matches: Vec<&Model> = self.models().filter(|m| m.id == spec).collect();
        match matches.as_slice() {
            [one] => Ok(one),
            [] => Err(AiError::UnknownModel(spec.to_string())),
            many => Err(AiError::UnknownModel(format!(
                "{spec} is ambiguous; use one of: {}",
                many.iter()
                    .map(|m| format!("{}/{}", m.provider, m.id))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The configuration of `provider`.
    pub fn provider(&self, provider: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.id == provider)
    }

    /// Provider ids in catalogue order.
    pub fn provider_ids(&self) -> Vec<&str> {
        self.providers.iter().map(|p| p.id.as_str()).collect()
    }

    /// Every model, provider by provider.
    pub fn models(&self) -> impl Iterator<Item = &Model> {
        self.providers.iter().flat_map(|p| p.models.iter())
    }

    /// The models of one provider (empty for an unknown provider).
    pub fn provider_models(&self, provider: &str) -> &[Model] {
        self.provider(provider).map_or(&[], |p| p.models.as_slice())
    }

    /// The configured request headers for `model`, resolved now (values may be `$VAR` or
    /// `!command`): the provider's `headers`, then the model's (later wins, names compared
    /// case-insensitively). A value that cannot be resolved is left out, so a missing variable
    /// never sends a literal `$NAME`.
    pub fn resolved_headers(&self, model: &Model) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let provider_headers = self.provider(&model.provider).map(|p| &p.headers);
        for headers in provider_headers.into_iter().chain(model.headers.as_ref()) {
            for (name, value) in headers {
                out.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
                if let Some(v) = value.as_str().and_then(resolve_config_value) {
                    out.push((name.clone(), v));
                }
            }
        }
        out
    }

    /// The API key for `provider`: an explicit key wins, then the `models.json` `apiKey`, then
    /// the provider's environment variables.
    pub fn api_key(&self, provider: &str, explicit: Option<ApiKey>) -> Option<ApiKey> {
        if explicit.is_some() {
            return explicit;
        }
        if let Some(SecretConfig(config)) = self
            .provider(provider)
            .and_then(|p| p.api_key_config.as_ref())
        {
            if let Some(key) = resolve_config_value(config) {
                return Some(ApiKey::new(key));
            }
        }
        env_api_key(provider)
    }
}
