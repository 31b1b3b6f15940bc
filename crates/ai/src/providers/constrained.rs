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

use crate::error::AiError;
use crate::types::{Message, Model, Tool};

use super::transcript::Transcript;

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

/// Why a request cannot be built for a model: a tool the API or model cannot serve as asked,
/// in pi's words. It becomes [`AiError::InvalidRequest`], the text of the stream's `error`
/// event.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refusal(pub(crate) String);

impl From<Refusal> for AiError {
    fn from(refusal: Refusal) -> Self {
        AiError::InvalidRequest(refusal.0)
    }
}

/// A [`Refusal`] with a `format!` text.
macro_rules! refusal {
    ($($arg:tt)*) => { Refusal(format!($($arg)*)) };
}

/// A grammar tool's streamed input that contradicts what already streamed; it fails the
/// stream.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct GrammarInputError(pub(crate) String);

/// A [`GrammarInputError`] with a `format!` text.
macro_rules! grammar_input_error {
    ($($arg:tt)*) => { GrammarInputError(format!($($arg)*)) };
}

/// Decides whether `tool` is sent strict. `Ok(None)`: not strict (no request, or `prefer` that
/// cannot be met); `Ok(Some(schema))`: strict, with the rewritten schema; `Err(text)`: a
/// `require` tool that cannot be strict, with the refusal message.
pub(crate) fn resolve(
    tool: &Tool,
    supported: bool,
    rule: Option<KeywordRule>,
) -> Result<Option<Value>, Refusal> {
    let Some(require) = json_schema_request(tool) else {
        return Ok(None);
    };
    if !supported {
        return if require {
            Err(refusal!(
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
        Err(NotStrict(why)) => Err(refusal!(
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

/// A tool sent as an OpenAI custom tool whose input follows a grammar (`constrainedSampling`
/// `{type: "grammar", variants: {openai_lark?, openai_regex?}}`, DECISIONS §26.26).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grammar {
    /// `lark` (preferred when both are given) or `regex`.
    pub syntax: &'static str,
    pub definition: String,
    /// The one required string property the free-form input maps to.
    pub input_property: String,
}

/// The grammar `tool` is sent with, where the model takes grammar tools
/// (`compat.supportsOpenAIGrammarTools`); an unusable grammar request is an error.
pub(crate) fn grammar(tool: &Tool, supported: bool) -> Result<Option<Grammar>, Refusal> {
    let Some(config) = tool
        .extra
        .get("constrainedSampling")
        .and_then(Value::as_object)
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("grammar"))
    else {
        return Ok(None);
    };
    if !supported {
        return Ok(None);
    }
    let variant = |key: &str| {
        config
            .get("variants")
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty())
    };
    let (syntax, definition) = match (variant("openai_lark"), variant("openai_regex")) {
        (Some(lark), _) => ("lark", lark),
        (None, Some(regex)) => ("regex", regex),
        (None, None) => {
            return Err(refusal!(
                "Tool \"{}\" cannot use grammar constrained sampling: no supported grammar variant was provided.",
                tool.name
            ))
        }
    };
    let input_property = grammar_input_property(&tool.parameters).map_err(|why| {
        refusal!(
            "Tool \"{}\" cannot use grammar constrained sampling: {why}.",
            tool.name
        )
    })?;
    Ok(Some(Grammar {
        syntax,
        definition: definition.to_string(),
        input_property,
    }))
}

/// The property a grammar tool's input fills: its schema must be an object with exactly one
/// required property, of type string.
fn grammar_input_property(schema: &Value) -> Result<String, Refusal> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(Refusal(
            "grammar constrained sampling requires an object parameter schema".into(),
        ));
    }
    let property = match schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([Value::String(name)]) => name.clone(),
        _ => {
            return Err(Refusal(
                "grammar constrained sampling requires exactly one required string property".into(),
            ))
        }
    };
    let Some(definition) = schema.get("properties").and_then(|p| p.get(&property)) else {
        return Err(refusal!(
            "grammar constrained sampling requires a properties entry for {property}"
        ));
    };
    if definition.get("type").and_then(Value::as_str) != Some("string") {
        return Err(refusal!(
            "grammar constrained sampling property {property} must have type string"
        ));
    }
    Ok(property)
}

/// Grammar input properties by tool name, for every tool in `tools` sent as a grammar tool.
pub(crate) fn grammar_inputs<'a>(
    tools: impl IntoIterator<Item = &'a Tool>,
    supported: bool,
) -> Result<Vec<(String, String)>, Refusal> {
    let mut out: Vec<(String, String)> = Vec::new();
    for tool in tools {
        if let Some(g) = grammar(tool, supported)? {
            match out.iter_mut().find(|(name, _)| *name == tool.name) {
                Some(slot) => slot.1 = g.input_property,
                None => out.push((tool.name.clone(), g.input_property)),
            }
        }
    }
    Ok(out)
}

/// A grammar tool call's free-form input, which its arguments hold as `{<property>: input}`.
pub(crate) fn grammar_call_input<'a>(
    name: &str,
    arguments: &'a Value,
    property: &str,
) -> Result<&'a str, Refusal> {
    arguments
        .get(property)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            refusal!(
                "Grammar tool call \"{name}\" requires argument \"{property}\" to be a string."
            )
        })
}

/// A streaming grammar tool input turned into the JSON text of `{<property>: input}`, piece
/// by piece, in time linear in each piece.
#[derive(Debug, Clone)]
pub(crate) struct GrammarInput {
    pub property: String,
    pub input: String,
    started: bool,
    closed: bool,
    /// JSON text produced before the call's first delta event, sent with the next one.
    unsent: String,
}

fn json_string_body(text: &str) -> String {
    let quoted = Value::String(text.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

impl GrammarInput {
    pub fn new(property: &str, initial: &str) -> Self {
        let mut input = Self {
            property: property.to_string(),
            input: String::new(),
            started: false,
            closed: false,
            unsent: String::new(),
        };
        // Appending to a fresh input cannot fail.
        input.unsent = input.append_raw(initial).ok().flatten().unwrap_or_default();
        input
    }

    fn opening(&mut self) -> String {
        if self.started {
            return String::new();
        }
        self.started = true;
        format!("{{{}:\"", Value::String(self.property.clone()))
    }

    fn append_raw(&mut self, delta: &str) -> Result<Option<String>, GrammarInputError> {
        if self.closed {
            return Err(grammar_input_error!(
                "grammar tool input for property \"{}\" changed after it was closed",
                self.property
            ));
        }
        if delta.is_empty() {
            return Ok(None);
        }
        self.input.push_str(delta);
        Ok(Some(self.opening() + &json_string_body(delta)))
    }

    fn send(&mut self, piece: Option<String>) -> Option<String> {
        if self.unsent.is_empty() {
            return piece;
        }
        let sent = std::mem::take(&mut self.unsent) + piece.as_deref().unwrap_or("");
        Some(sent)
    }

    /// Appends a delta; returns the JSON text piece to emit, if any.
    pub(crate) fn append(&mut self, delta: &str) -> Result<Option<String>, GrammarInputError> {
        let piece = self.append_raw(delta)?;
        Ok(self.send(piece))
    }

    /// Closes the input with the provider's complete input (when sent), which must continue
    /// what streamed so far; returns the rest of the JSON text. Closing twice with the same
    /// input yields nothing.
    pub(crate) fn close(
        &mut self,
        final_input: Option<&str>,
    ) -> Result<Option<String>, GrammarInputError> {
        if self.closed {
            return match final_input {
                None => Ok(self.send(None)),
                Some(f) if f == self.input => Ok(self.send(None)),
                Some(_) => Err(grammar_input_error!(
                    "grammar tool input for property \"{}\" changed after it was closed",
                    self.property
                )),
            };
        }
        let rest = match final_input {
            Some(f) => {
                let Some(rest) = f.strip_prefix(self.input.as_str()) else {
                    return Err(grammar_input_error!(
                        "grammar tool input for property \"{}\" changed non-monotonically",
                        self.property
                    ));
                };
                rest.to_string()
            }
            None => String::new(),
        };
        self.input.push_str(&rest);
        self.closed = true;
        let piece = format!("{}{}\"}}", self.opening(), json_string_body(&rest));
        Ok(self.send(Some(piece)))
    }

    /// The call's arguments as they stand.
    pub fn arguments(&self) -> Value {
        let mut map = serde_json::Map::new();
        map.insert(self.property.clone(), Value::String(self.input.clone()));
        Value::Object(map)
    }
}
/// Input properties of the grammar tools among every tool the transcript declares (pi's
/// `getDeclaredTools`: with system messages in place, earlier definitions count too).
pub(crate) fn declared_grammar_inputs(
    model: &Model,
    transcript: &Transcript,
) -> Result<Vec<(String, String)>, Refusal> {
    let supported = crate::models::compat_bool(model, "supportsOpenAIGrammarTools") == Some(true);
    if !supported {
        return Ok(Vec::new());
    }
    if !transcript.in_place {
        return grammar_inputs(&transcript.tools, true);
    }
    let later = transcript.messages.iter().flat_map(|m| match m {
        Message::System(s) => s.tools_added.as_deref().unwrap_or(&[]),
        _ => &[],
    });
    // One definition per name, the latest, at the name's first position (pi's
    // `getDeclaredTools`): a tool redefined without a grammar is no grammar tool, and an
    // earlier, replaced definition is not validated (DECISIONS §26.56).
    let mut declared: Vec<&Tool> = Vec::new();
    for tool in transcript.initial_tools.iter().chain(later) {
        match declared.iter_mut().find(|t| t.name == tool.name) {
            Some(slot) => *slot = tool,
            None => declared.push(tool),
        }
    }
    grammar_inputs(declared, true)
}
