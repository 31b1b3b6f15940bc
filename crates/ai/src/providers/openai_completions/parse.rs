//! Chat Completions stream parsing: `chat.completion.chunk` objects into content updates.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Value};

use super::compat::compat_for;
use super::convert::is_reasoning_detail;
use crate::providers::constrained::GrammarInput;
use crate::providers::output::StreamFailure;
use crate::providers::sse::SseEvent;
use crate::providers::{CowStr, Halt, Output, StreamParser};
use crate::types::{ContentBlock, Model, StopReason, Usage};

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    id: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    model: Option<CowStr<'a>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(borrow, default)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<CowStr<'a>>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    reasoning: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    reasoning_text: Option<CowStr<'a>>,
    #[serde(default)]
    reasoning_details: Option<Value>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
    /// A grammar tool's call (DECISIONS §26.41): free-form `input` instead of JSON arguments.
    #[serde(borrow, default)]
    custom: Option<CustomDelta<'a>>,
}

#[derive(Deserialize)]
struct CustomDelta<'a> {
    #[serde(borrow, default)]
    name: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    input: Option<CowStr<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    arguments: Option<CowStr<'a>>,
}

struct ToolState {
    content_index: usize,
    stream_index: Option<u64>,
    id: String,
    arguments: String,
    /// A custom (grammar) call's input, spelled as the JSON of `{<property>: input}`.
    custom: Option<GrammarInput>,
}

pub struct Parser {
    text_index: Option<usize>,
    thinking_index: Option<usize>,
    tools: Vec<ToolState>,
    /// Position in `tools` by stream index and by id.
    by_index: HashMap<u64, usize>,
    by_id: HashMap<String, usize>,
    reasoning_details: Option<Vec<Value>>,
    has_finish_reason: bool,
    supports_finish_reason: bool,
    opencode_go: bool,
    /// `finish` already ended every block with strictly parsed arguments; a failure after that
    /// (no `finish_reason`) keeps them, as pi does.
    blocks_ended: bool,
    /// Input property of each grammar tool (others' custom input maps to `input`).
    grammar_inputs: Vec<(String, String)>,
}

impl Parser {
    pub fn new(model: &Model) -> Self {
        Self {
            text_index: None,
            thinking_index: None,
            tools: Vec::new(),
            by_index: HashMap::new(),
            by_id: HashMap::new(),
            reasoning_details: None,
            has_finish_reason: false,
            supports_finish_reason: compat_for(model).supports_finish_reason,
            opencode_go: model.provider == "opencode-go",
            blocks_ended: false,
            grammar_inputs: Vec::new(),
        }
    }

    /// Names the property each grammar tool's custom input fills (DECISIONS §26.41).
    pub(crate) fn with_grammar_inputs(mut self, inputs: Vec<(String, String)>) -> Self {
        self.grammar_inputs = inputs;
        self
    }

    fn grammar_property(&self, name: &str) -> String {
        self.grammar_inputs
            .iter()
            .find(|(n, _)| n == name)
            .map_or_else(|| "input".to_string(), |(_, p)| p.clone())
    }

    fn ensure_thinking(&mut self, out: &mut Output, signature: &str) -> usize {
        *self.thinking_index.get_or_insert_with(|| {
            out.thinking_start(String::new(), Some(signature.to_string()), false)
        })
    }

    fn apply_reasoning_details(&self, out: &mut Output) {
        if let (Some(details), Some(index)) = (&self.reasoning_details, self.thinking_index) {
            if let Some(t) = out.thinking_mut(index) {
                t.thinking_signature = Some(Value::Array(details.clone()).to_string());
            }
        }
    }

    fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Output) {
        if out.message.response_id.is_none() {
            if let Some(id) = chunk.id.as_deref().filter(|s| !s.is_empty()) {
                out.message.response_id = Some(id.to_string());
            }
        }
        if let Some(m) = chunk.model.as_deref().filter(|m| !m.is_empty()) {
            if m != out.model().id && out.message.response_model.is_none() {
                out.message.response_model = Some(m.to_string());
            }
        }
        if let Some(usage) = chunk.usage.as_ref().filter(|u| u.is_object()) {
            self.usage(usage, out);
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return;
        };
        if chunk.usage.as_ref().is_none_or(Value::is_null) {
            if let Some(usage) = choice.usage.as_ref().filter(|u| u.is_object()) {
                self.usage(usage, out);
            }
        }
        if let Some(reason) = choice.finish_reason.as_deref() {
            out.set_raw_stop_reason(reason);
            let (stop, message) = map_finish_reason(reason);
            out.message.stop_reason = stop;
            if message.is_some() {
                out.message.error_message = message;
            }
            self.has_finish_reason = true;
        }
        let Some(delta) = choice.delta else {
            return;
        };
        let reasoning = [
            ("reasoning_content", &delta.reasoning_content),
            ("reasoning", &delta.reasoning),
            ("reasoning_text", &delta.reasoning_text),
        ]
        .into_iter()
        .find_map(|(field, v)| v.as_deref().filter(|s| !s.is_empty()).map(|s| (field, s)));
        if let Some((field, text)) = reasoning {
            let signature = if self.opencode_go && field == "reasoning" {
                "reasoning_content"
            } else {
                field
            };
            let index = self.ensure_thinking(out, signature);
            out.thinking_delta(index, text);
        }
        if let Some(Value::Array(details)) = &delta.reasoning_details {
            for detail in details.iter().filter(|d| is_reasoning_detail(d)) {
                self.ensure_thinking(out, "");
                append_reasoning_detail(
                    self.reasoning_details.get_or_insert_with(Vec::new),
                    detail,
                );
            }
        }
        if let Some(content) = delta.content.as_deref().filter(|s| !s.is_empty()) {
            let index = *self
                .text_index
                .get_or_insert_with(|| out.text_start(String::new()));
            out.text_delta(index, content);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            // A call is custom when it carries `custom` and no `function`.
            let custom_only = call.custom.is_some() && call.function.is_none();
            let name = call
                .function
                .as_ref()
                .and_then(|f| f.name.as_deref())
                .or_else(|| call.custom.as_ref().and_then(|c| c.name.as_deref()))
                .unwrap_or("");
            let id = call.id.as_deref().unwrap_or("");
            let pos = call
                .index
                .and_then(|i| self.by_index.get(&i).copied())
                .or_else(|| self.by_id.get(id).copied().filter(|_| !id.is_empty()));
            let pos = match pos {
                Some(p) => p,
                None => {
                    let custom =
                        custom_only.then(|| GrammarInput::new(&self.grammar_property(name), ""));
                    let arguments = custom
                        .as_ref()
                        .map_or_else(|| json!({}), GrammarInput::arguments);
                    let content_index =
                        out.toolcall_start(id.to_string(), name.to_string(), arguments);
                    self.tools.push(ToolState {
                        content_index,
                        stream_index: call.index,
                        id: id.to_string(),
                        arguments: String::new(),
                        custom,
                    });
                    self.tools.len() - 1
                }
            };
            if let Some(i) = call.index {
                self.by_index.entry(i).or_insert(pos);
            }
            if !id.is_empty() {
                self.by_id.insert(id.to_string(), pos);
            }
            let content_index = self.tools[pos].content_index;
            if self.tools[pos].stream_index.is_none() {
                self.tools[pos].stream_index = call.index;
            }
            let mut call_name = String::new();
            if let Some(tc) = out.toolcall_mut(content_index) {
                if tc.id.is_empty() && !id.is_empty() {
                    tc.id = id.to_string();
                    self.tools[pos].id = id.to_string();
                }
                if tc.name.is_empty() && !name.is_empty() {
                    tc.name = name.to_string();
                }
                call_name = tc.name.clone();
            }
            // A call first streamed as a function may turn out to be custom.
            if custom_only && self.tools[pos].custom.is_none() {
                let input = GrammarInput::new(&self.grammar_property(&call_name), "");
                if let Some(tc) = out.toolcall_mut(content_index) {
                    tc.arguments = input.arguments();
                }
                self.tools[pos].custom = Some(input);
            }
            let state = &mut self.tools[pos];
            let mut piece = String::new();
            match &mut state.custom {
                None => {
                    if let Some(fragment) =
                        call.function.as_ref().and_then(|f| f.arguments.as_deref())
                    {
                        state.arguments.push_str(fragment);
                        piece.push_str(fragment);
                    }
                }
                Some(input) => {
                    if let Some(delta) = call
                        .custom
                        .as_ref()
                        .and_then(|c| c.input.as_deref())
                        .filter(|d| !d.is_empty())
                    {
                        // An open input never refuses a delta.
                        piece = input.append(delta).unwrap_or(None).unwrap_or_default();
                        let arguments = input.arguments();
                        if let Some(tc) = out.toolcall_mut(content_index) {
                            tc.arguments = arguments;
                        }
                    }
                }
            }
            out.toolcall_delta(content_index, &piece);
        }
    }

    fn usage(&self, raw: &Value, out: &mut Output) {
        let n = |p: &str| raw.pointer(p).and_then(Value::as_u64);
        let prompt = n("/prompt_tokens").unwrap_or(0);
        let cache_read = n("/prompt_tokens_details/cached_tokens")
            .or_else(|| n("/prompt_cache_hit_tokens"))
            .or_else(|| n("/cached_tokens"))
            .unwrap_or(0);
        let cache_write = n("/prompt_tokens_details/cache_write_tokens").unwrap_or(0);
        let output = n("/completion_tokens").unwrap_or(0);
        let input = prompt.saturating_sub(cache_read + cache_write);
        let mut usage: Usage = Usage::clone(&out.message.usage);
        usage.input = input;
        usage.output = output;
        usage.cache_read = cache_read;
        usage.cache_write = cache_write;
        usage.cache_write_1h = None;
        usage.reasoning = Some(
            n("/completion_tokens_details/reasoning_tokens")
                .filter(|v| *v > 0)
                .or_else(|| n("/reasoning_tokens"))
                .unwrap_or(0),
        );
        usage.total_tokens = Some(input + output + cache_read + cache_write);
        out.set_usage(usage);
        // OpenRouter reports what it billed.
        if let Some(billed) = raw.get("cost").and_then(Value::as_f64) {
            let upstream = if raw.get("is_byok").and_then(Value::as_bool) == Some(true) {
                raw.pointer("/cost_details/upstream_inference_cost")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0)
            } else {
                0.0
            };
            out.message.usage.cost.total = crate::json::Num::new(billed + upstream);
            out.message.usage.cost.total_from_provider = Some(true);
        }
    }
}

fn append_reasoning_detail(details: &mut Vec<Value>, detail: &Value) {
    let kind = detail.get("type").and_then(Value::as_str);
    if let Some(last) = details.last_mut() {
        let last_kind = last.get("type").and_then(Value::as_str).map(str::to_string);
        let field = match (kind, last_kind.as_deref()) {
            (Some("reasoning.text"), Some("reasoning.text")) => Some("text"),
            (Some("reasoning.summary"), Some("reasoning.summary")) => Some("summary"),
            _ => None,
        };
        if let (Some(field), Some(obj)) = (field, last.as_object_mut()) {
            let addition = detail.get(field).and_then(Value::as_str).unwrap_or("");
            let merged = format!(
                "{}{addition}",
                obj.get(field).and_then(Value::as_str).unwrap_or("")
            );
            obj.insert(field.into(), json!(merged));
            if field == "text" {
                let empty = obj
                    .get("signature")
                    .is_none_or(|s| s.is_null() || s.as_str() == Some(""));
                if empty {
                    if let Some(sig) = detail.get("signature").filter(|s| !s.is_null()) {
                        obj.insert("signature".into(), sig.clone());
                    }
                }
            }
            for key in ["id", "format", "index"] {
                let missing = obj
                    .get(key)
                    .is_none_or(|v| v.is_null() || v.as_str() == Some(""));
                if missing {
                    if let Some(v) = detail.get(key) {
                        obj.insert(key.into(), v.clone());
                    }
                }
            }
            return;
        }
    }
    details.push(detail.clone());
}

fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" => (StopReason::Stop, None),
        "length" => (StopReason::Length, None),
        "tool_calls" | "function_call" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

/// The message of an in-stream error object (`error.message`, else its JSON).
fn stream_error_text(error: &Value) -> String {
    match error.get("message") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => error.to_string(),
    }
}

impl StreamParser for Parser {
    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt> {
        if event.data == "[DONE]" {
            return Err(Halt::Stop);
        }
        let chunk: Chunk<'_> = serde_json::from_str(event.data).map_err(|_| {
            Halt::Fail("Error reading response: malformed server-sent event JSON.".to_string())
        })?;
        if event.event == Some("error") {
            let err = chunk
                .error
                .clone()
                .unwrap_or_else(|| serde_json::from_str(event.data).unwrap_or(Value::Null));
            return Err(Halt::Fail(stream_error_text(&err)));
        }
        if let Some(err) = chunk
            .error
            .as_ref()
            .filter(|e| !e.is_null() && e != &&Value::Bool(false))
        {
            let mut text = stream_error_text(err);
            if let Some(raw) = err.pointer("/metadata/raw") {
                let raw = raw.as_str().map_or_else(|| raw.to_string(), str::to_string);
                if !text.contains(&raw) {
                    text.push('\n');
                    text.push_str(&raw);
                }
            }
            return Err(Halt::Fail(text));
        }
        self.chunk(chunk, out);
        Ok(())
    }

    fn finish(&mut self, out: &mut Output) -> Result<(), StreamFailure> {
        // All blocks end after the stream, in content order.
        self.apply_reasoning_details(out);
        // Tool states are in content order: one forward walk pairs them with their blocks.
        let mut tool = 0;
        for index in 0..out.message.content.len() {
            match &out.message.content[index] {
                ContentBlock::Text(_) => out.text_end(index),
                ContentBlock::Thinking(_) => out.thinking_end(index),
                ContentBlock::ToolCall(_) => {
                    if let Some(state) = self
                        .tools
                        .get_mut(tool)
                        .filter(|t| t.content_index == index)
                    {
                        tool += 1;
                        match &mut state.custom {
                            // The JSON text ends with the input's closing quote and brace.
                            Some(input) => {
                                if let Some(piece) = input.close(None).unwrap_or(None) {
                                    out.toolcall_delta(index, &piece);
                                }
                                out.toolcall_end_with(index);
                            }
                            None => out.toolcall_end(index, &state.arguments),
                        }
                    }
                }
                _ => {}
            }
        }
        self.blocks_ended = true;
        if !self.has_finish_reason && !self.supports_finish_reason {
            out.message.stop_reason = if out.has_tool_calls() {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            };
        }
        if out.message.stop_reason == StopReason::Error {
            return Err(StreamFailure(
                out.message
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "Provider returned an error stop reason".into()),
            ));
        }
        if (self.supports_finish_reason && !self.has_finish_reason)
            || out.message.stop_reason == StopReason::Pending
        {
            return Err("Stream ended without finish_reason".into());
        }
        Ok(())
    }

    fn on_failure(&mut self, out: &mut Output) {
        self.apply_reasoning_details(out);
        if self.blocks_ended {
            return;
        }
        for state in &self.tools {
            if !state.arguments.trim().is_empty() {
                out.set_partial_arguments(state.content_index, &state.arguments);
            }
        }
    }
}
