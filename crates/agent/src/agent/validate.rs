//! Tool-argument validation: coerce what a model loosely typed, then check against the tool's
//! JSON Schema with the `jsonschema` crate (DECISIONS §20.4, pi's `validateToolArguments`).
//!
//! Coercions (a port of the rules pi applies, not of its code): an optional property sent as
//! `null` whose schema rejects `null` is dropped; strings become numbers, integers (truncated)
//! and booleans where the schema wants them, numbers and booleans become strings; a single
//! value becomes a one-item array; `const`/`enum` take the literal an input converts to; a
//! union takes the first branch whose conversion validates. A value that cannot be coerced is
//! left alone and the check reports it. The arguments in the transcript are never changed: the
//! tool gets a coerced copy.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Number, Value};

use super::tool::{ToolError, ToolRef};

/// The tools of one turn with their compiled schemas (compiled once per tool set, not per call).
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<ToolRef>,
    validators: HashMap<String, CompiledSchema>,
}

/// A tool's compiled parameter schema, or why it does not compile (reported on every call).
type CompiledSchema = Result<Arc<jsonschema::Validator>, Arc<jsonschema::ValidationError<'static>>>;

fn compile(tool: &ToolRef) -> CompiledSchema {
    jsonschema::validator_for(tool.parameters())
        .map(Arc::new)
        .map_err(Arc::new)
}

/// Why the arguments of a call were not accepted. The text is pi's wording: it is what the
/// model reads in the error result.
#[derive(Debug, thiserror::Error)]
enum ArgumentError {
    /// The provider could not parse the streamed arguments as JSON.
    #[error("Invalid arguments for tool \"{tool}\": {reason}")]
    Unparsed { tool: String, reason: String },
    #[error(
        "Validation failed for tool \"{tool}\":\n  - root: the tool's parameter schema is invalid: {source}"
    )]
    InvalidSchema {
        tool: String,
        source: Arc<jsonschema::ValidationError<'static>>,
    },
    /// One line per schema failure, then the arguments as the model sent them.
    #[error(
        "Validation failed for tool \"{tool}\":\n{failures}\n\nReceived arguments:\n{received}"
    )]
    Rejected {
        tool: String,
        failures: String,
        received: String,
    },
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.name()))
            .finish()
    }
}

impl ToolSet {
    /// The set of `tools`, their schemas compiled now.
    pub fn new(tools: Vec<ToolRef>) -> Self {
        let validators = tools
            .iter()
            .map(|t| (t.name().to_string(), compile(t)))
            .collect();
        ToolSet { tools, validators }
    }

    /// The tools, in the order given.
    pub fn tools(&self) -> &[ToolRef] {
        &self.tools
    }

    /// No tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&ToolRef> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Validated, coerced arguments for a call of `tool`, or an error whose message is pi's
    /// text for the model.
    pub fn validate(&self, tool: &ToolRef, call: &arbor_ai::ToolCall) -> Result<Value, ToolError> {
        self.check(tool, call)
            .map_err(|e| ToolError::new(e.to_string()).with_source(e))
    }

    fn check(&self, tool: &ToolRef, call: &arbor_ai::ToolCall) -> Result<Value, ArgumentError> {
        if let Some(err) = &call.arguments_error {
            return Err(ArgumentError::Unparsed {
                tool: call.name.clone(),
                reason: err.clone(),
            });
        }
        let compiled = match self.validators.get(tool.name()) {
            Some(v) => v.clone(),
            None => compile(tool),
        };
        let validator = compiled.map_err(|source| ArgumentError::InvalidSchema {
            tool: call.name.clone(),
            source,
        })?;
        // The tool may first rewrite forms it still accepts (pi's `prepareArguments`).
        let prepared = tool.prepare_arguments(call.arguments.clone());
        let coerced = coerce(tool.parameters(), prepared);
        let lines: Vec<String> = validator
            .iter_errors(&coerced)
            .flat_map(|e| explain(&e))
            .map(|(path, message)| format!("  - {}: {message}", dotted(&path)))
            .collect();
        if lines.is_empty() {
            return Ok(coerced);
        }
        let received =
            serde_json::to_string_pretty(&call.arguments).unwrap_or_else(|_| "null".to_string());
        Err(ArgumentError::Rejected {
            tool: call.name.clone(),
            failures: lines.join("\n"),
            received,
        })
    }
}

/// One schema failure as pi-schema words it: `(JSON Pointer, message)` pairs, e.g.
/// `("/path", "missing")`, `("/limit", "expected integer, got string")`. A required property
/// and an unknown field are reported at the property's own path.
fn explain(e: &jsonschema::ValidationError<'_>) -> Vec<(String, String)> {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let at = e.instance_path().as_str().to_owned();
    let child = |key: &str| format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
    let json = |v: &Value| serde_json::to_string(v).unwrap_or_default();
    let one = |m: String| vec![(at.clone(), m)];
    match e.kind() {
        K::Required { property } => {
            vec![(
                child(property.as_str().unwrap_or(&json(property))),
                "missing".to_owned(),
            )]
        }
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            unexpected
                .iter()
                .map(|k| (child(k), "unknown field".to_owned()))
                .collect()
        }
        K::Type { kind } => {
            let wanted: Vec<String> = match kind {
                TypeKind::Single(t) => vec![t.to_string()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
            };
            one(format!(
                "expected {}, got {}",
                wanted.join(" or "),
                type_name(e.instance())
            ))
        }
        K::Enum { options } => one(format!("expected one of {}", json(options))),
        K::Constant { expected_value } => one(format!("expected {}", json(expected_value))),
        K::MinLength { limit } => one(format!("expected at least {limit} characters")),
        K::MaxLength { limit } => one(format!("expected at most {limit} characters")),
        K::Pattern { pattern } => one(format!("expected to match {pattern}")),
        K::Format { format } => one(format!("expected format {format}")),
        K::Minimum { limit } => one(format!("expected >= {limit}")),
        K::Maximum { limit } => one(format!("expected <= {limit}")),
        K::ExclusiveMinimum { limit } => one(format!("expected > {limit}")),
        K::ExclusiveMaximum { limit } => one(format!("expected < {limit}")),
        K::MultipleOf { multiple_of, .. } => one(format!("expected a multiple of {multiple_of}")),
        K::MinItems { limit } => one(format!("expected at least {limit} items")),
        K::MaxItems { limit } => one(format!("expected at most {limit} items")),
        K::UniqueItems => one("expected unique items".to_owned()),
        K::MinProperties { limit } => one(format!("expected at least {limit} properties")),
        K::MaxProperties { limit } => one(format!("expected at most {limit} properties")),
        K::AnyOf { .. } | K::OneOfNotValid { .. } => one("matches no alternative".to_owned()),
        K::OneOfMultipleValid { .. } => one("matches more than one alternative".to_owned()),
        K::Not { .. } => one("must not match the schema in not".to_owned()),
        K::FalseSchema => one("no value is allowed here".to_owned()),
        K::Contains => one("expected at least 1 matching item".to_owned()),
        _ => one(e.to_string()),
    }
}

/// pi-schema's name for a value's type (`integer` for whole numbers).
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A JSON Pointer as the dotted path the model sees: `/edits/0/oldText` → `edits.0.oldText`.
fn dotted(pointer: &str) -> String {
    if pointer.is_empty() {
        return "root".to_string();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

/// `value` coerced towards `schema` (see the module docs).
pub fn coerce(schema: &Value, value: Value) -> Value {
    let value = drop_optional_nulls(schema, value);
    let value = convert(schema, value);
    coerce_type_arrays(schema, value)
}

fn accepts(schema: &Value, value: &Value) -> bool {
    jsonschema::is_valid(schema, value)
}

fn types_of(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn drop_optional_nulls(schema: &Value, value: Value) -> Value {
    let Some(s) = schema.as_object() else {
        return value;
    };
    match value {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| match item_schema(s, i) {
                    Some(is) => drop_optional_nulls(is, item),
                    None => item,
                })
                .collect(),
        ),
        Value::Object(map) => {
            let Some(props) = s.get("properties").and_then(Value::as_object) else {
                return Value::Object(map);
            };
            let required: Vec<&str> = s
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                match props.get(&k) {
                    Some(p) => {
                        let is_ref = p.get("$ref").is_some();
                        if v.is_null()
                            && !required.contains(&k.as_str())
                            && !is_ref
                            && !accepts(p, &Value::Null)
                        {
                            continue;
                        }
                        let v = drop_optional_nulls(p, v);
                        out.insert(k, v);
                    }
                    None => {
                        out.insert(k, v);
                    }
                }
            }
            Value::Object(out)
        }
        other => other,
    }
}

fn item_schema(s: &Map<String, Value>, i: usize) -> Option<&Value> {
    match (s.get("items"), s.get("prefixItems")) {
        (Some(Value::Array(tuple)), _) => tuple.get(i),
        (items, Some(Value::Array(prefix))) if i < prefix.len() => prefix.get(i).or(items),
        (items, _) => items.filter(|v| v.is_object()),
    }
}

fn convert(schema: &Value, value: Value) -> Value {
    let Some(s) = schema.as_object() else {
        return value;
    };
    if let Some(lit) = s.get("const") {
        return convert_literal(lit, value);
    }
    if let Some(Value::Array(members)) = s.get("enum") {
        if members.contains(&value) {
            return value;
        }
        for m in members {
            let c = convert_literal(m, value.clone());
            if &c == m {
                return c;
            }
        }
        return value;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(key) {
            if branches.iter().any(|b| accepts(b, &value)) {
                return convert_members(s, value);
            }
            for b in branches {
                let candidate = convert_members(s, convert(b, value.clone()));
                if accepts(schema, &candidate) {
                    return candidate;
                }
            }
            return convert_members(s, value);
        }
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        let mut next = value;
        for m in all {
            next = convert(m, next);
        }
        return convert_members(s, next);
    }
    match s.get("type").and_then(Value::as_str) {
        Some("string") => try_string(&value).unwrap_or(value),
        Some("number") => try_number(&value).unwrap_or(value),
        Some("integer") => try_number(&value).map(truncate).unwrap_or(value),
        Some("boolean") => try_boolean(&value).unwrap_or(value),
        Some("null") => try_null(&value).unwrap_or(value),
        Some("array") => convert_array(s, value),
        Some("object") => convert_object(s, value),
        None if s.contains_key("properties") => convert_object(s, value),
        None if s.contains_key("items") || s.contains_key("prefixItems") => convert_array(s, value),
        _ => value,
    }
}

fn convert_members(s: &Map<String, Value>, value: Value) -> Value {
    if s.contains_key("properties") || s.contains_key("additionalProperties") {
        convert_object(s, value)
    } else {
        value
    }
}

fn convert_array(s: &Map<String, Value>, value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| match item_schema(s, i) {
                    Some(is) => convert(is, item),
                    None => item,
                })
                .collect(),
        ),
        single => match s.get("items") {
            Some(items @ Value::Object(_)) => Value::Array(vec![convert(items, single)]),
            _ => Value::Array(vec![single]),
        },
    }
}

fn convert_object(s: &Map<String, Value>, value: Value) -> Value {
    let Value::Object(map) = value else {
        return value;
    };
    let props = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties").filter(|a| a.is_object());
    Value::Object(
        map.into_iter()
            .map(|(k, v)| {
                let v = match (props.and_then(|p| p.get(&k)), additional) {
                    (Some(p), _) => convert(p, v),
                    (None, Some(a)) => convert(a, v),
                    (None, None) => v,
                };
                (k, v)
            })
            .collect(),
    )
}

/// Pass 3: primitive coercion for type arrays (`["integer", "null"]`) the conversion pass left.
fn coerce_type_arrays(schema: &Value, value: Value) -> Value {
    let Some(s) = schema.as_object() else {
        return value;
    };
    let types = types_of(s);
    let mut next = value;
    if types.len() > 1 && !types.iter().any(|t| matches_type(&next, t)) {
        for t in &types {
            let candidate = match *t {
                "string" => try_string(&next),
                "number" => try_number(&next),
                "integer" => try_number(&next).map(truncate),
                "boolean" => try_boolean(&next),
                "null" => try_null(&next),
                _ => None,
            };
            if let Some(c) = candidate {
                next = c;
                break;
            }
        }
    }
    match next {
        Value::Object(map) if types.contains(&"object") || s.contains_key("properties") => {
            let props = s.get("properties").and_then(Value::as_object);
            Value::Object(
                map.into_iter()
                    .map(|(k, v)| match props.and_then(|p| p.get(&k)) {
                        Some(p) => {
                            let v = coerce_type_arrays(p, v);
                            (k, v)
                        }
                        None => (k, v),
                    })
                    .collect(),
            )
        }
        Value::Array(items) if types.contains(&"array") => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| match item_schema(s, i) {
                    Some(is) => coerce_type_arrays(is, item),
                    None => item,
                })
                .collect(),
        ),
        other => other,
    }
}

fn matches_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => false,
    }
}

fn convert_literal(lit: &Value, value: Value) -> Value {
    if lit == &value {
        return value;
    }
    let candidate = match lit {
        Value::String(_) => try_string(&value),
        Value::Number(_) => try_number(&value),
        Value::Bool(_) => try_boolean(&value),
        _ => None,
    };
    match candidate {
        Some(c) if numeric_eq(&c, lit) => lit.clone(),
        _ => value,
    }
}

fn numeric_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn number_value(f: f64) -> Option<Value> {
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        // Integral values stay integers, as JSON text would write them.
        Some(Value::Number(Number::from(f as i64)))
    } else {
        Number::from_f64(f).map(Value::Number)
    }
}

fn truncate(v: Value) -> Value {
    match v.as_f64() {
        Some(f) if v.is_f64() => number_value(f.trunc()).unwrap_or(v),
        _ => v,
    }
}

fn try_string(v: &Value) -> Option<Value> {
    match v {
        Value::String(_) => Some(v.clone()),
        Value::Bool(b) => Some(Value::String(b.to_string())),
        Value::Number(n) => Some(Value::String(n.to_string())),
        Value::Null => Some(Value::String("null".to_string())),
        _ => None,
    }
}

fn try_number(v: &Value) -> Option<Value> {
    match v {
        Value::Number(_) => Some(v.clone()),
        Value::Bool(b) => Some(Value::from(u8::from(*b))),
        Value::Null => Some(Value::from(0)),
        Value::String(s) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Some(Value::from(i));
            }
            if let Ok(f) = t.parse::<f64>() {
                if f.is_finite() && !t.is_empty() {
                    return number_value(f);
                }
            }
            match s.to_ascii_lowercase().as_str() {
                "true" => Some(Value::from(1)),
                "false" => Some(Value::from(0)),
                _ => None,
            }
        }
        _ => None,
    }
}

fn try_boolean(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(_) => Some(v.clone()),
        Value::Number(n) => {
            let f = n.as_f64()?;
            if f == 0.0 {
                Some(Value::Bool(false))
            } else if f == 1.0 {
                Some(Value::Bool(true))
            } else {
                None
            }
        }
        Value::Null => Some(Value::Bool(false)),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "false" | "0" => Some(Value::Bool(false)),
            "true" | "1" => Some(Value::Bool(true)),
            _ => None,
        },
        _ => None,
    }
}

fn try_null(v: &Value) -> Option<Value> {
    match v {
        Value::Null => Some(Value::Null),
        Value::String(s) if s.is_empty() || s.eq_ignore_ascii_case("null") => Some(Value::Null),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn coerces_the_usual_model_mistakes() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer"},
                "limit": {"type": "number"},
                "all": {"type": "boolean"},
                "paths": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": [1, 2]},
                "opt": {"type": "string"}
            },
            "required": ["path"]
        });
        let got = coerce(
            &schema,
            json!({"path": 7, "offset": "12.7", "limit": "3", "all": "true", "paths": "a", "mode": "2", "opt": null}),
        );
        assert_eq!(
            got,
            json!({"path": "7", "offset": 12, "limit": 3, "all": true, "paths": ["a"], "mode": 2})
        );
    }

    #[test]
    fn type_arrays_and_unions() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": ["integer", "null"]},
            "u": {"anyOf": [{"type": "boolean"}, {"type": "integer"}]}
        }});
        assert_eq!(
            coerce(&schema, json!({"n": "5", "u": "9"})),
            json!({"n": 5, "u": 9})
        );
        assert_eq!(coerce(&schema, json!({"n": ""})), json!({"n": null}));
    }

    #[test]
    fn dotted_paths() {
        assert_eq!(dotted(""), "root");
        assert_eq!(dotted("/edits/0/old~1Text"), "edits.0.old/Text");
    }

    struct SchemaTool(Value);

    #[async_trait::async_trait]
    impl crate::agent::AgentTool for SchemaTool {
        fn name(&self) -> &str {
            "t"
        }
        fn description(&self) -> &str {
            ""
        }
        fn parameters(&self) -> &Value {
            &self.0
        }
        async fn execute(
            &self,
            _call: crate::agent::ToolInvocation,
        ) -> Result<crate::agent::ToolOutput, ToolError> {
            Ok(crate::agent::ToolOutput::default())
        }
    }

    fn call(arguments: Value, arguments_error: Option<&str>) -> arbor_ai::ToolCall {
        serde_json::from_value(json!({"id": "c1", "name": "t", "arguments": arguments}))
            .map(|c: arbor_ai::ToolCall| arbor_ai::ToolCall {
                arguments_error: arguments_error.map(str::to_owned),
                ..c
            })
            .unwrap_or_else(|e| panic!("tool call: {e}"))
    }

    /// The three rejections keep pi's text for the model; a schema that does not compile
    /// keeps the compiler's error as the source.
    #[test]
    fn rejections_read_as_pi_words_them() {
        let tool: ToolRef = Arc::new(SchemaTool(json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"]
        })));
        let set = ToolSet::new(vec![tool.clone()]);
        let unparsed = set
            .validate(&tool, &call(json!({}), Some("bad JSON")))
            .err()
            .map(|e| e.message().to_owned());
        assert_eq!(
            unparsed.as_deref(),
            Some("Invalid arguments for tool \"t\": bad JSON")
        );
        let rejected = set
            .validate(&tool, &call(json!({}), None))
            .err()
            .map(|e| e.message().to_owned());
        assert_eq!(
            rejected.as_deref(),
            Some("Validation failed for tool \"t\":\n  - path: missing\n\nReceived arguments:\n{}")
        );

        let broken: ToolRef = Arc::new(SchemaTool(json!({"type": 5})));
        let set = ToolSet::new(vec![broken.clone()]);
        let Err(e) = set.validate(&broken, &call(json!({}), None)) else {
            panic!("a broken schema accepts nothing");
        };
        assert!(e.message().starts_with(
            "Validation failed for tool \"t\":\n  - root: the tool's parameter schema is invalid: "
        ));
        let rejection = std::error::Error::source(&e);
        assert_eq!(
            rejection.map(ToString::to_string).as_deref(),
            Some(e.message())
        );
        let compiler = rejection.and_then(std::error::Error::source);
        assert_eq!(
            compiler.map(ToString::to_string).as_deref(),
            e.message().rsplit("is invalid: ").next()
        );
    }
}
