//! The model catalogue: built-in models, user models from `models.json`, cost and API keys.
//!
//! The built-in catalogue (`models/catalog.json`, a selection of pi-ai 1.6.0's data files)
//! uses the same format as the user's `models.json`, so one loader reads both and user files
//! layer over the built-ins exactly like pi's: a provider entry may move a built-in provider
//! (`baseUrl`), add or replace models, patch single models (`modelOverrides`) or define a new
//! provider (a local llama.cpp, Ollama or vLLM server).

use std::fmt;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::AiError;
use crate::json::Num;
use crate::types::{Model, ThinkingLevel, Usage};

/// The built-in catalogue, in `models.json` format.
pub const BUILTIN_CATALOG_JSON: &str = include_str!("models/catalog.json");
/// Name used for the built-in catalogue in error messages.
pub const BUILTIN_CATALOG_NAME: &str = "built-in catalog";

/// Context window of a user model that does not state one.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Output limit of a user model that does not state one.
pub const DEFAULT_MAX_TOKENS: u64 = 16_384;

// ---------------------------------------------------------------------------------------------
// API keys
// ---------------------------------------------------------------------------------------------

/// A secret credential. It never shows in `Debug` or `Display` output, so it cannot leak into
/// logs, panics or error messages by accident; [`ApiKey::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The secret, for building the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Environment variables holding a provider's API key, in lookup order (pi's table).
pub fn api_key_env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "github-copilot" => &["COPILOT_GITHUB_TOKEN"],
        "google" => &["GEMINI_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "azure" => &["AZURE_OPENAI_API_KEY"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "zai-coding-cn" => &["ZAI_CODING_CN_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "baseten" => &["BASETEN_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "meta" => &["META_API_KEY"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "typesafe" => &["TYPESAFE_API_KEY"],
        "radius" => &["RADIUS_API_KEY"],
        "ant-ling" => &["ANT_LING_API_KEY"],
        "qwen-token-plan" => &["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"],
        "qwen-token-plan-cn" => &[
            "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "qwen-token-plan-individual" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
            "QWEN_TOKEN_PLAN_API_KEY",
        ],
        "qwen-token-plan-individual-cn" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        _ => &[],
    }
}

/// Anthropic bearer token variable; sent as `Authorization: Bearer`, not as an API key.
pub const ANTHROPIC_AUTH_TOKEN_ENV: &str = "ANTHROPIC_AUTH_TOKEN";

/// The provider's API key from the process environment (first non-empty variable).
pub fn env_api_key(provider: &str) -> Option<ApiKey> {
    env_api_key_with(provider, |name| std::env::var(name).ok())
}

/// [`env_api_key`] with an explicit variable lookup (scoped environments, tests).
pub fn env_api_key_with(provider: &str, lookup: impl Fn(&str) -> Option<String>) -> Option<ApiKey> {
    api_key_env_vars(provider)
        .iter()
        .find_map(|name| lookup(name).filter(|v| !v.is_empty()))
        .map(ApiKey::new)
}

/// Resolves a `models.json` credential or header value: `!command` runs the command through
/// `sh -c` and takes its trimmed stdout; otherwise `$NAME` / `${NAME}` are replaced by
/// environment variables (`$$` is a literal `$`, `$!` a literal `!`). `None` when a variable is
/// unset or empty, or the command fails or prints nothing.
pub fn resolve_config_value(config: &str) -> Option<String> {
    resolve_config_value_with(config, |name| std::env::var(name).ok())
}

/// [`resolve_config_value`] with an explicit variable lookup.
pub fn resolve_config_value_with(
    config: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    if let Some(command) = config.strip_prefix('!') {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !output.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
        return (!text.is_empty()).then_some(text);
    }
    let mut out = String::with_capacity(config.len());
    let mut rest = config;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(stripped) = after.strip_prefix('!') {
            out.push('!');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('{') {
            match body.find('}') {
                Some(end) if is_env_name(&body[..end]) => {
                    out.push_str(&lookup(&body[..end]).filter(|v| !v.is_empty())?);
                    rest = &body[end + 1..];
                }
                Some(end) => {
                    // Not a variable name: kept literally, braces included.
                    out.push_str("${");
                    out.push_str(&body[..end]);
                    out.push('}');
                    rest = &body[end + 1..];
                }
                None => {
                    out.push('$');
                    rest = after;
                }
            }
        } else {
            let len = env_name_prefix_len(after);
            if len > 0 {
                out.push_str(&lookup(&after[..len]).filter(|v| !v.is_empty())?);
                rest = &after[len..];
            } else {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

fn env_name_prefix_len(s: &str) -> usize {
    let mut len = 0;
    for (i, c) in s.char_indices() {
        let ok = c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit());
        if !ok {
            break;
        }
        len = i + 1;
    }
    len
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty() && env_name_prefix_len(s) == s.len()
}

// ---------------------------------------------------------------------------------------------
// Cost
// ---------------------------------------------------------------------------------------------

/// Fills `usage.cost` from the model's per-million prices. When the prompt (input + cache
/// read + cache write) exceeds a tier's `inputTokensAbove`, the whole request is priced at the
/// highest such tier. One-hour cache writes cost twice the input price.
pub fn calculate_cost(model: &Model, usage: &mut Usage) {
    let prompt_tokens = usage.input + usage.cache_read + usage.cache_write;
    let base = &model.cost;
    let (mut input, mut output, mut cache_read, mut cache_write) =
        (base.input, base.output, base.cache_read, base.cache_write);
    let mut threshold: Option<u64> = None;
    for tier in base.tiers.iter().flatten() {
        let above = tier.input_tokens_above;
        if prompt_tokens > above && threshold.is_none_or(|t| above > t) {
            threshold = Some(above);
            (input, output, cache_read, cache_write) =
                (tier.input, tier.output, tier.cache_read, tier.cache_write);
        }
    }
    let long_write = usage.cache_write_1h.unwrap_or(0).min(usage.cache_write);
    let short_write = usage.cache_write - long_write;
    let c_input = input / 1e6 * usage.input as f64;
    let c_output = output / 1e6 * usage.output as f64;
    let c_read = cache_read / 1e6 * usage.cache_read as f64;
    let c_write = (cache_write * short_write as f64 + input * 2.0 * long_write as f64) / 1e6;
    let cost = &mut usage.cost;
    cost.input = Num::new(c_input);
    cost.output = Num::new(c_output);
    cost.cache_read = Num::new(c_read);
    cost.cache_write = Num::new(c_write);
    cost.total = Num::new(c_input + c_output + c_read + c_write);
    cost.total_from_provider = Some(false);
}

// ---------------------------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------------------------

/// One provider as configured: connection settings plus its models.
#[derive(Clone)]
pub struct ProviderConfig {
    pub id: String,
    pub name: String,
    /// Default base URL of the provider's models.
    pub base_url: Option<String>,
    /// Default API of the provider's models.
    pub api: Option<String>,
    /// Unresolved `apiKey` from `models.json` (literal, `$VAR` or `!command`); see
    /// [`resolve_config_value`]. Kept unresolved so nothing secret sits in memory or logs early.
    pub api_key_config: Option<SecretConfig>,
    /// Unresolved header values (resolved like the API key at request time).
    pub headers: Map<String, Value>,
    /// Send the key as `Authorization: Bearer` instead of the API's own header.
    pub auth_header: bool,
    pub models: Vec<Model>,
}

impl fmt::Debug for ProviderConfig {
    // Header values may be literal secrets (`Authorization: Bearer …`): only names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api", &self.api)
            .field("api_key_config", &self.api_key_config)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("auth_header", &self.auth_header)
            .field(
                "models",
                &self.models.iter().map(|m| &m.id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// An unresolved credential reference; redacted in `Debug` because a literal key may be in it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretConfig(pub String);

impl fmt::Debug for SecretConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.starts_with('!') {
            f.write_str("SecretConfig(<command>)")
        } else if self.0.starts_with('$') {
            // An environment reference is no secret; show it for diagnostics.
            write!(f, "SecretConfig({})", self.0)
        } else {
            f.write_str("SecretConfig(<redacted>)")
        }
    }
}

/// All known providers and models, in catalogue order.
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
                .map_err(|message| models_error(source, message))?;
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

fn models_error(source: &str, message: String) -> AiError {
    AiError::ModelsConfig {
        source_name: source.to_string(),
        message,
    }
}

fn apply_provider(
    id: &str,
    existing: Option<ProviderConfig>,
    config: &Map<String, Value>,
    path: &str,
) -> Result<ProviderConfig, String> {
    let base_url = opt_string(config, "baseUrl", path)?;
    let api = opt_string(config, "api", path)?;
    let name = opt_string(config, "name", path)?;
    let api_key = opt_string(config, "apiKey", path)?;
    let headers = opt_object(config, "headers", path)?;
    let compat = opt_object(config, "compat", path)?;
    let auth_header = match config.get("authHeader") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(format!("{path}.authHeader: expected a boolean")),
    };
    let model_defs = match config.get("models") {
        None => None,
        Some(Value::Array(a)) => Some(a),
        Some(_) => return Err(format!("{path}.models: expected an array")),
    };
    let overrides = opt_object(config, "modelOverrides", path)?;
    if let Some(h) = headers {
        for (k, v) in h {
            if !v.is_string() {
                return Err(format!("{path}.headers.{k}: expected a string"));
            }
        }
    }
    let has_anything = model_defs.is_some_and(|m| !m.is_empty())
        || base_url.is_some()
        || headers.is_some()
        || compat.is_some()
        || overrides.is_some_and(|o| !o.is_empty())
        || api_key.is_some()
        || auth_header.is_some();
    if !has_anything {
        return Err(format!(
            "Provider {id}: must specify \"baseUrl\", \"headers\", \"compat\", \"modelOverrides\", or \"models\"."
        ));
    }

    let mut provider = existing.unwrap_or_else(|| ProviderConfig {
        id: id.to_string(),
        name: id.to_string(),
        base_url: None,
        api: None,
        api_key_config: None,
        headers: Map::new(),
        auth_header: false,
        models: Vec::new(),
    });
    if let Some(name) = name {
        provider.name = name.to_string();
    }
    if let Some(url) = base_url {
        provider.base_url = Some(url.to_string());
    }
    if let Some(api) = api {
        provider.api = Some(api.to_string());
    }
    if let Some(key) = api_key {
        provider.api_key_config = Some(SecretConfig(key.to_string()));
    }
    if let Some(h) = headers {
        for (k, v) in h {
            provider.headers.insert(k.clone(), v.clone());
        }
    }
    if let Some(flag) = auth_header {
        provider.auth_header = flag;
    }

    // A provider-level base URL and compat apply to the models already there.
    for model in &mut provider.models {
        if let Some(url) = base_url {
            model.base_url = url.to_string();
        }
        if let Some(c) = compat {
            model.compat = merge_compat(model.compat.take(), c);
        }
    }

    for (i, def) in model_defs.into_iter().flatten().enumerate() {
        let def_path = format!("{path}.models[{i}]");
        let def = def
            .as_object()
            .ok_or_else(|| format!("{def_path}: expected an object"))?;
        let model = model_from_definition(id, def, &provider, compat, &def_path)?;
        match provider.models.iter().position(|m| m.id == model.id) {
            Some(existing) => provider.models[existing] = model,
            None => provider.models.push(model),
        }
    }

    for (model_id, patch) in overrides.into_iter().flatten() {
        let patch_path = format!("{path}.modelOverrides.{model_id}");
        let patch = patch
            .as_object()
            .ok_or_else(|| format!("{patch_path}: expected an object"))?;
        if let Some(model) = provider.models.iter_mut().find(|m| &m.id == model_id) {
            *model = apply_override(model, patch, &patch_path)?;
        }
    }
    Ok(provider)
}

/// Builds one model from a `models[]` entry, falling back to the provider's settings and then
/// to a similar existing model (same id, same API, any Chat Completions model, the first).
fn model_from_definition(
    provider_id: &str,
    def: &Map<String, Value>,
    provider: &ProviderConfig,
    provider_compat: Option<&Map<String, Value>>,
    path: &str,
) -> Result<Model, String> {
    let id = match def.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(format!("{path}.id: expected a non-empty string")),
        None => return Err(format!("{path}.id: required field is missing")),
    };
    let api_override = opt_string(def, "api", path)?;
    let defaults = {
        let wanted_api = api_override.or(provider.api.as_deref());
        provider
            .models
            .iter()
            .find(|m| m.id == id)
            .or_else(|| wanted_api.and_then(|a| provider.models.iter().find(|m| m.api == a)))
            .or_else(|| {
                provider
                    .models
                    .iter()
                    .find(|m| m.api == "openai-completions")
            })
            .or_else(|| provider.models.first())
    };
    let api = api_override
        .map(str::to_string)
        .or_else(|| provider.api.clone())
        .or_else(|| defaults.map(|m| m.api.clone()))
        .ok_or_else(|| {
            format!("Provider {provider_id}, model {id}: no \"api\" specified. Set at provider or model level.")
        })?;
    let base_url = opt_string(def, "baseUrl", path)?
        .map(str::to_string)
        .or_else(|| provider.base_url.clone())
        .or_else(|| defaults.map(|m| m.base_url.clone()))
        .ok_or_else(|| {
            format!("Provider {provider_id}: \"baseUrl\" is required when defining custom models.")
        })?;

    let mut obj = Map::new();
    obj.insert("id".into(), Value::String(id.clone()));
    obj.insert(
        "name".into(),
        Value::String(opt_string(def, "name", path)?.unwrap_or(&id).to_string()),
    );
    obj.insert("api".into(), Value::String(api));
    obj.insert("provider".into(), Value::String(provider_id.to_string()));
    obj.insert("baseUrl".into(), Value::String(base_url));
    obj.insert(
        "reasoning".into(),
        Value::Bool(opt_bool(def, "reasoning", path)?.unwrap_or(false)),
    );
    obj.insert(
        "input".into(),
        match def.get("input") {
            Some(v) => {
                check_input(v, &format!("{path}.input"))?;
                v.clone()
            }
            None => serde_json::json!(["text"]),
        },
    );
    obj.insert(
        "cost".into(),
        match def.get("cost") {
            Some(v) => {
                check_cost(v, &format!("{path}.cost"), true)?;
                v.clone()
            }
            None => serde_json::json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}),
        },
    );
    obj.insert(
        "contextWindow".into(),
        Value::from(opt_positive(def, "contextWindow", path)?.unwrap_or(DEFAULT_CONTEXT_WINDOW)),
    );
    obj.insert(
        "maxTokens".into(),
        Value::from(opt_positive(def, "maxTokens", path)?.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if let Some(map) = def.get("thinkingLevelMap") {
        check_level_map(map, &format!("{path}.thinkingLevelMap"))?;
        obj.insert("thinkingLevelMap".into(), map.clone());
    }
    if let Some(h) = opt_object(def, "headers", path)? {
        obj.insert("headers".into(), Value::Object(h.clone()));
    }
    let model_compat = opt_object(def, "compat", path)?;
    let compat = match (provider_compat, model_compat) {
        (None, None) => None,
        (Some(p), None) => Some(Value::Object(p.clone())),
        (base, Some(m)) => merge_compat(base.map(|b| Value::Object(b.clone())), m),
    };
    if let Some(c) = compat {
        obj.insert("compat".into(), c);
    }
    // Metadata other parts of the stack read (prompt cache TTLs, image limits, sampling).
    for key in [
        "promptCache",
        "inputLimits",
        "samplingParams",
        "samplingParamsByThinkingLevel",
    ] {
        if let Some(v) = def.get(key) {
            obj.insert(key.into(), v.clone());
        }
    }
    serde_json::from_value(Value::Object(obj)).map_err(|e| format!("{path}: {e}"))
}

/// Patches an existing model with a `modelOverrides` entry (objects merge, scalars replace).
fn apply_override(model: &Model, patch: &Map<String, Value>, path: &str) -> Result<Model, String> {
    let mut value = serde_json::to_value(model).map_err(|e| format!("{path}: {e}"))?;
    let Some(obj) = value.as_object_mut() else {
        return Err(format!("{path}: model is not an object"));
    };
    for (key, v) in patch {
        match key.as_str() {
            "name" => {
                opt_string(patch, "name", path)?;
                obj.insert(key.clone(), v.clone());
            }
            "reasoning" => {
                opt_bool(patch, "reasoning", path)?;
                obj.insert(key.clone(), v.clone());
            }
            "contextWindow" | "maxTokens" => {
                opt_positive(patch, key, path)?;
                obj.insert(key.clone(), v.clone());
            }
            "input" => {
                check_input(v, &format!("{path}.input"))?;
                obj.insert(key.clone(), v.clone());
            }
            "cost" => {
                check_cost(v, &format!("{path}.cost"), false)?;
                merge_into(obj, key, v);
            }
            "thinkingLevelMap" => {
                check_level_map(v, &format!("{path}.thinkingLevelMap"))?;
                merge_into(obj, key, v);
            }
            "compat" => {
                let Value::Object(c) = v else {
                    return Err(format!("{path}.compat: expected an object"));
                };
                let merged = merge_compat(obj.remove("compat"), c);
                if let Some(m) = merged {
                    obj.insert("compat".into(), m);
                }
            }
            "promptCache"
            | "samplingParams"
            | "headers"
            | "inputLimits"
            | "samplingParamsByThinkingLevel" => merge_into(obj, key, v),
            _ => {}
        }
    }
    serde_json::from_value(value).map_err(|e| format!("{path}: {e}"))
}

/// Shallow merge of `v` into `obj[key]` when both are objects; otherwise replace.
fn merge_into(obj: &mut Map<String, Value>, key: &str, v: &Value) {
    match (obj.get_mut(key), v) {
        (Some(Value::Object(base)), Value::Object(patch)) => {
            for (k, pv) in patch {
                base.insert(k.clone(), pv.clone());
            }
        }
        _ => {
            obj.insert(key.to_string(), v.clone());
        }
    }
}

/// Compat merge: later fields win; the routing and template objects merge one level deeper.
fn merge_compat(base: Option<Value>, patch: &Map<String, Value>) -> Option<Value> {
    let mut merged = match base {
        Some(Value::Object(b)) => b,
        _ => Map::new(),
    };
    for (k, v) in patch {
        let nested = matches!(
            k.as_str(),
            "openRouterRouting"
                | "vercelGatewayRouting"
                | "chatTemplateKwargs"
                | "chatTemplateArgs"
        );
        if nested {
            if let (Some(Value::Object(b)), Value::Object(p)) = (merged.get_mut(k), v) {
                for (pk, pv) in p {
                    b.insert(pk.clone(), pv.clone());
                }
                continue;
            }
        }
        merged.insert(k.clone(), v.clone());
    }
    Some(Value::Object(merged))
}

fn opt_string<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a str>, String> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
        Some(_) => Err(format!("{path}.{key}: expected a non-empty string")),
    }
}

fn opt_bool(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Option<bool>, String> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("{path}.{key}: expected a boolean")),
    }
}

fn opt_object<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a Map<String, Value>>, String> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(format!("{path}.{key}: expected an object")),
    }
}

fn opt_positive(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Option<u64>, String> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f > 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => Ok(Some(f as u64)),
            _ => Err(format!(
                "{path}.{key}: expected a positive whole number, got {n}"
            )),
        },
        Some(_) => Err(format!("{path}.{key}: expected a positive whole number")),
    }
}

fn check_input(v: &Value, path: &str) -> Result<(), String> {
    let Value::Array(items) = v else {
        return Err(format!("{path}: expected an array of \"text\" / \"image\""));
    };
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some("text") | Some("image") => {}
            _ => {
                return Err(format!(
                    "{path}[{i}]: expected \"text\" or \"image\", got {item}"
                ))
            }
        }
    }
    Ok(())
}

fn check_cost(v: &Value, path: &str, all_required: bool) -> Result<(), String> {
    let Value::Object(cost) = v else {
        return Err(format!("{path}: expected an object"));
    };
    for key in ["input", "output", "cacheRead", "cacheWrite"] {
        match cost.get(key) {
            Some(Value::Number(n)) if n.as_f64().is_some_and(|f| f >= 0.0) => {}
            None if !all_required => {}
            None => return Err(format!("{path}.{key}: required field is missing")),
            Some(other) => {
                return Err(format!(
                    "{path}.{key}: expected a non-negative number, got {other}"
                ))
            }
        }
    }
    if let Some(tiers) = cost.get("tiers") {
        let Value::Array(tiers) = tiers else {
            return Err(format!("{path}.tiers: expected an array"));
        };
        for (i, tier) in tiers.iter().enumerate() {
            let tier_path = format!("{path}.tiers[{i}]");
            check_cost(tier, &tier_path, true)?;
            if tier
                .get("inputTokensAbove")
                .is_none_or(|n| n.as_u64().is_none())
            {
                return Err(format!(
                    "{tier_path}.inputTokensAbove: expected a whole number"
                ));
            }
        }
    }
    Ok(())
}

fn check_level_map(v: &Value, path: &str) -> Result<(), String> {
    let Value::Object(map) = v else {
        return Err(format!("{path}: expected an object"));
    };
    for (k, val) in map {
        if ThinkingLevel::parse(k).is_none() {
            return Err(format!(
                "{path}.{k}: unknown thinking level (expected off, minimal, low, medium, high, xhigh or max)"
            ));
        }
        if !(val.is_string() || val.is_null()) {
            return Err(format!("{path}.{k}: expected a string or null"));
        }
    }
    Ok(())
}

/// Removes `//` and `/* */` comments outside strings (pi accepts commented `models.json`).
pub fn strip_json_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '/' if chars.peek() == Some(&'/') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = '\0';
                for n in chars.by_ref() {
                    if n == '\n' {
                        // Keep line numbers of later errors right.
                        out.push('\n');
                    }
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

// Compat flags (`model.compat`), read by the request builders and the thinking mapping.

/// `model.compat[key]` as a bool.
pub fn compat_bool(model: &Model, key: &str) -> Option<bool> {
    model.compat.as_ref()?.get(key)?.as_bool()
}

/// `model.compat[key]` as a string.
pub fn compat_str<'a>(model: &'a Model, key: &str) -> Option<&'a str> {
    model.compat.as_ref()?.get(key)?.as_str()
}

/// `model.compat[key]` as it stands.
pub fn compat_value<'a>(model: &'a Model, key: &str) -> Option<&'a Value> {
    model.compat.as_ref()?.get(key)
}
