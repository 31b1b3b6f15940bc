//! The `models.json` format (the built-in catalogue uses it too): provider entries, model
//! definitions and overrides, checked field by field with the offending path in the error.

use serde_json::{Map, Value};

use crate::error::AiError;
use crate::types::{Model, ThinkingLevel};

use super::provider::{ProviderConfig, SecretConfig};

/// Context window of a user model that does not state one.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Output limit of a user model that does not state one.
pub const DEFAULT_MAX_TOKENS: u64 = 16_384;

/// A field of a `models.json` entry without the shape it needs; the text starts with the
/// field's path (`providers.x.models[0].id: ...`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct FieldError(String);

impl From<FieldError> for String {
    fn from(error: FieldError) -> Self {
        error.0
    }
}

/// A [`FieldError`] with a `format!` text.
macro_rules! field_error {
    ($($arg:tt)*) => { FieldError(format!($($arg)*)) };
}

pub(super) fn models_error(source: &str, message: String) -> AiError {
    AiError::ModelsConfig {
        source_name: source.to_string(),
        message,
    }
}

pub(super) fn apply_provider(
    id: &str,
    existing: Option<ProviderConfig>,
    config: &Map<String, Value>,
    path: &str,
) -> Result<ProviderConfig, FieldError> {
    let base_url = opt_string(config, "baseUrl", path)?;
    let api = opt_string(config, "api", path)?;
    let name = opt_string(config, "name", path)?;
    let api_key = opt_string(config, "apiKey", path)?;
    let headers = opt_object(config, "headers", path)?;
    let compat = opt_object(config, "compat", path)?;
    let auth_header = match config.get("authHeader") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(field_error!("{path}.authHeader: expected a boolean")),
    };
    let model_defs = match config.get("models") {
        None => None,
        Some(Value::Array(a)) => Some(a),
        Some(_) => return Err(field_error!("{path}.models: expected an array")),
    };
    let overrides = opt_object(config, "modelOverrides", path)?;
    if let Some(h) = headers {
        for (k, v) in h {
            if !v.is_string() {
                return Err(field_error!("{path}.headers.{k}: expected a string"));
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
        return Err(field_error!(
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
            .ok_or_else(|| field_error!("{def_path}: expected an object"))?;
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
            .ok_or_else(|| field_error!("{patch_path}: expected an object"))?;
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
) -> Result<Model, FieldError> {
    let id = match def.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(field_error!("{path}.id: expected a non-empty string")),
        None => return Err(field_error!("{path}.id: required field is missing")),
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
            field_error!("Provider {provider_id}, model {id}: no \"api\" specified. Set at provider or model level.")
        })?;
    let base_url = opt_string(def, "baseUrl", path)?
        .map(str::to_string)
        .or_else(|| provider.base_url.clone())
        .or_else(|| defaults.map(|m| m.base_url.clone()))
        .ok_or_else(|| {
            field_error!(
                "Provider {provider_id}: \"baseUrl\" is required when defining custom models."
            )
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
    serde_json::from_value(Value::Object(obj)).map_err(|e| field_error!("{path}: {e}"))
}

/// Patches an existing model with a `modelOverrides` entry (objects merge, scalars replace).
fn apply_override(
    model: &Model,
    patch: &Map<String, Value>,
    path: &str,
) -> Result<Model, FieldError> {
    let mut value = serde_json::to_value(model).map_err(|e| field_error!("{path}: {e}"))?;
    let Some(obj) = value.as_object_mut() else {
        return Err(field_error!("{path}: model is not an object"));
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
                    return Err(field_error!("{path}.compat: expected an object"));
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
    serde_json::from_value(value).map_err(|e| field_error!("{path}: {e}"))
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
) -> Result<Option<&'a str>, FieldError> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
        Some(_) => Err(field_error!("{path}.{key}: expected a non-empty string")),
    }
}

fn opt_bool(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Option<bool>, FieldError> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(field_error!("{path}.{key}: expected a boolean")),
    }
}

fn opt_object<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a Map<String, Value>>, FieldError> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(field_error!("{path}.{key}: expected an object")),
    }
}

fn opt_positive(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<u64>, FieldError> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f > 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => Ok(Some(f as u64)),
            _ => Err(field_error!(
                "{path}.{key}: expected a positive whole number, got {n}"
            )),
        },
        Some(_) => Err(field_error!(
            "{path}.{key}: expected a positive whole number"
        )),
    }
}

fn check_input(v: &Value, path: &str) -> Result<(), FieldError> {
    let Value::Array(items) = v else {
        return Err(field_error!(
            "{path}: expected an array of \"text\" / \"image\""
        ));
    };
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some("text") | Some("image") => {}
            _ => {
                return Err(field_error!(
                    "{path}[{i}]: expected \"text\" or \"image\", got {item}"
                ))
            }
        }
    }
    Ok(())
}

fn check_cost(v: &Value, path: &str, all_required: bool) -> Result<(), FieldError> {
    let Value::Object(cost) = v else {
        return Err(field_error!("{path}: expected an object"));
    };
    for key in ["input", "output", "cacheRead", "cacheWrite"] {
        match cost.get(key) {
            Some(Value::Number(n)) if n.as_f64().is_some_and(|f| f >= 0.0) => {}
            None if !all_required => {}
            None => return Err(field_error!("{path}.{key}: required field is missing")),
            Some(other) => {
                return Err(field_error!(
                    "{path}.{key}: expected a non-negative number, got {other}"
                ))
            }
        }
    }
    if let Some(tiers) = cost.get("tiers") {
        let Value::Array(tiers) = tiers else {
            return Err(field_error!("{path}.tiers: expected an array"));
        };
        for (i, tier) in tiers.iter().enumerate() {
            let tier_path = format!("{path}.tiers[{i}]");
            check_cost(tier, &tier_path, true)?;
            if tier
                .get("inputTokensAbove")
                .is_none_or(|n| n.as_u64().is_none())
            {
                return Err(field_error!(
                    "{tier_path}.inputTokensAbove: expected a whole number"
                ));
            }
        }
    }
    Ok(())
}

fn check_level_map(v: &Value, path: &str) -> Result<(), FieldError> {
    let Value::Object(map) = v else {
        return Err(field_error!("{path}: expected an object"));
    };
    for (k, val) in map {
        if ThinkingLevel::parse(k).is_none() {
            return Err(field_error!(
                "{path}.{k}: unknown thinking level (expected off, minimal, low, medium, high, xhigh or max)"
            ));
        }
        if !(val.is_string() || val.is_null()) {
            return Err(field_error!("{path}.{k}: expected a string or null"));
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
