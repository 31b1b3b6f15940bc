//! Tool `constrainedSampling` (JSON-schema strict mode): which tools are sent strict, and the
//! strict form of their schema (DECISIONS §26.12).
//!
//! A tool asks with `constrainedSampling: {type: "json_schema", strict: "prefer" | "require"}`.
//! Where the API and model accept strict tools and the schema fits the strict subset, the tool
//! is sent with `strict: true` and its schema rewritten: every object lists all its properties
//! as `required`, optional ones become `anyOf [T, {type: null}]`, and `additionalProperties` is
//! `false`. A `prefer` tool that cannot be strict is sent as it is; a `require` tool refuses the
//! request with pi's text, before anything is sent.

use serde_json::{json, Map, Value};

use crate::types::Tool;

/// Keywords no provider's strict mode accepts.
const UNSUPPORTED_KEYS: [&str; 16] = [
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
];

/// Extra keyword rule of one provider: `true` when `(key, value)` cannot be strict there.
pub(crate) type KeywordRule = fn(&str, &Value) -> bool;

/// Why a schema has no strict form (the text completes pi's refusal sentence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotStrict(String);

impl NotStrict {
    fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }
}

/// The tool's JSON-schema request: `None` without one, else whether strict is required.
fn json_schema_request(tool: &Tool) -> Option<bool> {
    let config = tool.extra.get("constrainedSampling")?.as_object()?;
    if config.get("type").and_then(Value::as_str) != Some("json_schema") {
        return None;
    }
    Some(config.get("strict").and_then(Value::as_str) == Some("require"))
}

/// Whether `tool` asks for strict JSON-schema sampling as a preference (`prefer`).
pub(crate) fn prefers_strict(tool: &Tool) -> bool {
    json_schema_request(tool) == Some(false)
}

/// Decides whether `tool` is sent strict. `Ok(None)`: not strict (no request, or `prefer` that
/// cannot be met); `Ok(Some(schema))`: strict, with the rewritten schema; `Err(text)`: a
/// `require` tool that cannot be strict, with the refusal message.
pub(crate) fn resolve(
    tool: &Tool,
    supported: bool,
    rule: Option<KeywordRule>,
) -> Result<Option<Value>, String> {
    let Some(require) = json_schema_request(tool) else {
        return Ok(None);
    };
    if !supported {
        return if require {
            Err(format!(
                "Tool \"{}\" requires JSON-schema constrained sampling, but strict tools are unsupported.",
                tool.name
            ))
        } else {
            Ok(None)
        };
    }
    match strict_schema(&tool.parameters, rule) {
        Ok(schema) => Ok(Some(schema)),
        Err(_) if !require => Ok(None),
        Err(NotStrict(why)) => Err(format!(
            "Tool \"{}\" requires JSON-schema constrained sampling, but {why}.",
            tool.name
        )),
    }
}

/// The strict form of a tool's parameter schema (the root must be an object schema).
pub(crate) fn strict_schema(schema: &Value, rule: Option<KeywordRule>) -> Result<Value, NotStrict> {
    let mut out = schema.clone();
    if !out.is_object() {
        return Err(NotStrict::new("root schema must have type object"));
    }
    make_strict(&mut out, rule)?;
    if out.get("type").and_then(Value::as_str) != Some("object") {
        return Err(NotStrict::new("root schema must have type object"));
    }
    Ok(out)
}

/// A node that describes an object or array (a union of such is not allowed in strict mode).
fn is_structured(schema: &Value) -> bool {
    let Some(obj) = schema.as_object() else {
        return false;
    };
    let has_type = |t: &str| match obj.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(list)) => list.iter().any(|v| v.as_str() == Some(t)),
        _ => false,
    };
    has_type("object")
        || has_type("array")
        || obj.contains_key("properties")
        || obj.contains_key("items")
}

/// Whether the node already admits `null` (then an optional property needs no `anyOf` wrap).
fn allows_null(schema: &Value) -> bool {
    let Some(obj) = schema.as_object() else {
        return false;
    };
    let type_null = match obj.get("type") {
        Some(Value::String(s)) => s == "null",
        Some(Value::Array(list)) => list.iter().any(|v| v.as_str() == Some("null")),
        _ => false,
    };
    type_null
        || obj.get("const") == Some(&Value::Null)
        || obj
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
        || obj
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(allows_null))
}

/// `JSON.stringify` of a keyword value for the refusal text (integral numbers without `.0`).
fn js_text(value: &Value) -> String {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn make_strict(schema: &mut Value, rule: Option<KeywordRule>) -> Result<(), NotStrict> {
    let Some(obj) = schema.as_object_mut() else {
        return Err(NotStrict::new("boolean schemas are unsupported"));
    };
    if let Some(key) = UNSUPPORTED_KEYS.iter().find(|k| obj.contains_key(**k)) {
        return Err(NotStrict::new(format!("{key} schemas are unsupported")));
    }
    if let Some(rule) = rule {
        if let Some((key, value)) = obj.iter().find(|(k, v)| rule(k, v)) {
            return Err(NotStrict::new(format!(
                "{key}: {} is unsupported",
                js_text(value)
            )));
        }
    }
    // A bare `enum` counts as typed, a bare `const` does not.
    if !obj.contains_key("type") && !obj.contains_key("anyOf") && !obj.contains_key("enum") {
        return Err(NotStrict::new("schemas without a type are unsupported"));
    }
    if let Some(any_of) = obj.get_mut("anyOf") {
        let variants = match any_of.as_array_mut() {
            Some(v) if !v.is_empty() => v,
            _ => return Err(NotStrict::new("anyOf must contain at least one schema")),
        };
        for variant in variants {
            if is_structured(variant) {
                return Err(NotStrict::new("object and array unions are unsupported"));
            }
            make_strict(variant, rule)?;
        }
    }
    if let Some(items) = obj.get_mut("items") {
        if items.is_array() {
            return Err(NotStrict::new("tuple schemas are unsupported"));
        }
        make_strict(items, rule)?;
    }
    let is_object = obj.get("type").and_then(Value::as_str) == Some("object");
    if obj.contains_key("properties") && !is_object {
        return Err(NotStrict::new("properties require type object"));
    }
    if !is_object {
        return Ok(());
    }
    if obj
        .get("additionalProperties")
        .is_some_and(|v| v != &Value::Bool(false))
    {
        return Err(NotStrict::new(
            "schema-valued or true additionalProperties is unsupported",
        ));
    }
    if obj.get("properties").is_some_and(|p| !p.is_object()) {
        return Err(NotStrict::new("object properties must be a schema map"));
    }
    let required: Vec<String> = match obj.get("required") {
        None => Vec::new(),
        Some(Value::Array(list)) if list.iter().all(Value::is_string) => list
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(_) => {
            return Err(NotStrict::new("object required must be a string array"));
        }
    };
    let mut empty = Map::new();
    let properties = match obj.get_mut("properties") {
        Some(Value::Object(p)) => p,
        // pi works on a fresh map here, so an absent `properties` stays absent.
        _ => &mut empty,
    };
    if required.iter().any(|k| !properties.contains_key(k)) {
        return Err(NotStrict::new("required contains an unknown property"));
    }
    for (key, property) in properties.iter_mut() {
        make_strict(property, rule)?;
        if !required.contains(key) && !allows_null(property) {
            let inner = property.take();
            *property = json!({"anyOf": [inner, {"type": "null"}]});
        }
    }
    let names: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
    obj.insert("required".into(), Value::Array(names));
    obj.insert("additionalProperties".into(), Value::Bool(false));
    Ok(())
}

/// Anthropic's strict tool use rejects these with a 400 for the whole request.
const ANTHROPIC_UNSUPPORTED: [&str; 11] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "maxItems",
    "uniqueItems",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
];

/// String formats Anthropic's strict mode accepts.
const ANTHROPIC_FORMATS: [&str; 10] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Anthropic's extra strict-mode keyword rule.
pub(crate) fn anthropic_rule(key: &str, value: &Value) -> bool {
    if ANTHROPIC_UNSUPPORTED.contains(&key) {
        return true;
    }
    match key {
        "minItems" => !matches!(value.as_f64(), Some(v) if v == 0.0 || v == 1.0),
        "format" => !value
            .as_str()
            .is_some_and(|f| ANTHROPIC_FORMATS.contains(&f)),
        _ => false,
    }
}
