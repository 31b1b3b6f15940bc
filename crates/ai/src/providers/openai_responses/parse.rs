//! Responses stream parsing: `response.*` events keyed by `output_index` into content updates.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::providers::constrained::GrammarInputError;
use crate::providers::output::StreamFailure;
use crate::providers::sse::SseEvent;
use crate::providers::{CowStr, Halt, Output, StreamParser};
use crate::types::{Model, StopReason, Usage};

/// The hot delta events: `{"type":…,"output_index":…,"delta":…}`.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    arguments: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    input: Option<CowStr<'a>>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(borrow, default)]
    message: Option<CowStr<'a>>,
}

enum SlotKind {
    Thinking,
    Text,
    ToolCall {
        arguments: String,
    },
    /// A grammar tool's free-form input (DECISIONS §26.26).
    CustomCall(crate::providers::constrained::GrammarInput),
}

struct Slot {
    kind: SlotKind,
    content_index: usize,
}

pub struct Parser {
    slots: HashMap<u64, Slot>,
    saw_terminal: bool,
    unfinished_calls: Vec<usize>,
    reasoning_by_id: HashMap<String, usize>,
    service_tier: Option<String>,
    /// Input property of each grammar tool (others map custom input to `input`).
    grammar_inputs: Vec<(String, String)>,
    /// The managed effort the request ran at, recorded as `providerThinkingLevel`.
    thinking_level: Option<String>,
}

impl Parser {
    pub fn new(_model: &Model) -> Self {
        Self {
            slots: HashMap::new(),
            saw_terminal: false,
            unfinished_calls: Vec::new(),
            reasoning_by_id: HashMap::new(),
            service_tier: None,
            grammar_inputs: Vec::new(),
            thinking_level: None,
        }
    }

    /// Records `level` as the reply's `providerThinkingLevel` (managed effort, DECISIONS §26.55).
    pub(crate) fn with_thinking_level(mut self, level: Option<String>) -> Self {
        self.thinking_level = level;
        self
    }

    /// Names the property each grammar tool's custom input fills.
    pub(crate) fn with_grammar_inputs(mut self, inputs: Vec<(String, String)>) -> Self {
        self.grammar_inputs = inputs;
        self
    }

    /// Prices the usage with this service tier when the response does not name one.
    pub fn with_service_tier(mut self, tier: Option<String>) -> Self {
        self.service_tier = tier;
        self
    }

    fn create_slot(&mut self, output_index: u64, item: &Value, out: &mut Output) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let slot = match kind {
            "reasoning" => Slot {
                kind: SlotKind::Thinking,
                content_index: out.thinking_start(String::new(), None, false),
            },
            "message" => {
                if item.get("phase").and_then(Value::as_str) == Some("final_answer") {
                    out.message.stop_reason = StopReason::Stop;
                }
                Slot {
                    kind: SlotKind::Text,
                    content_index: out.text_start(String::new()),
                }
            }
            "function_call" => {
                let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
                let args = s("arguments").to_string();
                let index = out.toolcall_start(
                    format!("{}|{}", s("call_id"), s("id")),
                    s("name").to_string(),
                    json!({}),
                );
                if let (Some(ns), Some(call)) = (
                    item.get("namespace").and_then(Value::as_str),
                    out.toolcall_mut(index),
                ) {
                    call.namespace = Some(ns.to_string());
                }
                self.unfinished_calls.push(index);
                Slot {
                    kind: SlotKind::ToolCall { arguments: args },
                    content_index: index,
                }
            }
            "custom_tool_call" => {
                let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
                let property = self
                    .grammar_inputs
                    .iter()
                    .find(|(n, _)| n == s("name"))
                    .map_or("input", |(_, p)| p.as_str());
                let input = crate::providers::constrained::GrammarInput::new(property, s("input"));
                let index = out.toolcall_start(
                    format!("{}|{}", s("call_id"), s("id")),
                    s("name").to_string(),
                    input.arguments(),
                );
                if let (Some(ns), Some(call)) = (
                    item.get("namespace").and_then(Value::as_str),
                    out.toolcall_mut(index),
                ) {
                    call.namespace = Some(ns.to_string());
                }
                self.unfinished_calls.push(index);
                Slot {
                    kind: SlotKind::CustomCall(input),
                    content_index: index,
                }
            }
            _ => return,
        };
        self.slots.insert(output_index, slot);
    }

    /// Applies a custom input step: the call's arguments follow the input, and the JSON text
    /// piece (if any) goes out as a `toolcall_delta`.
    fn custom_step(
        &mut self,
        output_index: u64,
        out: &mut Output,
        step: impl FnOnce(
            &mut crate::providers::constrained::GrammarInput,
        ) -> Result<Option<String>, GrammarInputError>,
    ) -> Result<(), Halt> {
        let Some(Slot {
            kind: SlotKind::CustomCall(input),
            content_index,
        }) = self.slots.get_mut(&output_index)
        else {
            return Ok(());
        };
        let piece = step(input).map_err(|GrammarInputError(message)| Halt::Fail(message))?;
        let index = *content_index;
        if let Some(call) = out.toolcall_mut(index) {
            call.arguments = input.arguments();
        }
        if let Some(piece) = piece {
            out.toolcall_delta(index, &piece);
        }
        Ok(())
    }

    fn finalize(&mut self, response: &Value, out: &mut Output) {
        self.saw_terminal = true;
        // Azure may only put encrypted reasoning on the final output: backfill it.
        if let Some(items) = response.get("output").and_then(Value::as_array) {
            for item in items {
                let (Some("reasoning"), Some(id), Some(enc)) = (
                    item.get("type").and_then(Value::as_str),
                    item.get("id").and_then(Value::as_str),
                    item.get("encrypted_content")
                        .filter(|e| e.as_str().is_some_and(|s| !s.is_empty())),
                ) else {
                    continue;
                };
                let Some(&index) = self.reasoning_by_id.get(id) else {
                    continue;
                };
                if let Some(t) = out.thinking_mut(index) {
                    if let Some(mut stored) = t
                        .thinking_signature
                        .as_deref()
                        .and_then(|s| serde_json::from_str::<Map<String, Value>>(s).ok())
                    {
                        if stored
                            .get("encrypted_content")
                            .is_none_or(|e| e.is_null() || e.as_str() == Some(""))
                        {
                            stored.insert("encrypted_content".into(), enc.clone());
                            t.thinking_signature = Some(Value::Object(stored).to_string());
                        }
                    }
                }
            }
        }
        if let Some(id) = response.get("id").and_then(Value::as_str) {
            out.message.response_id = Some(id.to_string());
        }
        let mut usage: Usage = Usage::clone(&out.message.usage);
        if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let cached = n("/input_tokens_details/cached_tokens");
            let write = n("/input_tokens_details/cache_write_tokens");
            usage.input = n("/input_tokens").saturating_sub(cached + write);
            usage.output = n("/output_tokens");
            usage.cache_read = cached;
            usage.cache_write = write;
            usage.reasoning = Some(n("/output_tokens_details/reasoning_tokens"));
            usage.total_tokens = Some(n("/total_tokens"));
        }
        out.set_usage(usage);
        let tier = response
            .get("service_tier")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| self.service_tier.clone());
        let multiplier = match tier.as_deref() {
            Some("flex") => 0.5,
            Some("priority") if out.model().id.starts_with("gpt-5.5") => 2.5,
            Some("priority" | "fast") => 2.0,
            _ => 1.0,
        };
        if multiplier != 1.0 {
            let c = &mut out.message.usage.cost;
            for n in [
                &mut c.input,
                &mut c.output,
                &mut c.cache_read,
                &mut c.cache_write,
                &mut c.total,
            ] {
                *n = crate::json::Num::new(n.get() * multiplier);
            }
        }
        let status = response.get("status").and_then(Value::as_str);
        let reason = response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str);
        if let Some(status) = status {
            match reason {
                Some(r) => out.set_raw_stop_reason(&format!("{status}.{r}")),
                None => out.set_raw_stop_reason(status),
            }
        }
        let (stop, message) = match status {
            None | Some("completed" | "in_progress" | "queued") => (StopReason::Stop, None),
            Some("incomplete") if reason == Some("max_output_tokens") => (StopReason::Length, None),
            Some("incomplete") => (
                StopReason::Error,
                Some(match reason {
                    Some(r) => format!("Response incomplete: {r}"),
                    None => "Response incomplete without a provider reason".to_string(),
                }),
            ),
            Some("failed" | "cancelled") => (StopReason::Error, None),
            Some(other) => (
                StopReason::Error,
                Some(format!("Unhandled stop reason: {other}")),
            ),
        };
        out.message.stop_reason = stop;
        out.message.error_message = message;
        if stop == StopReason::Stop && out.has_tool_calls() {
            out.message.stop_reason = StopReason::ToolUse;
        }
    }

    fn item_done(&mut self, output_index: u64, item: &Value, out: &mut Output) -> Result<(), Halt> {
        if item.get("type").and_then(Value::as_str) == Some("message")
            && item.get("phase").and_then(Value::as_str) == Some("final_answer")
        {
            out.message.stop_reason = StopReason::Stop;
        }
        if !self.slots.contains_key(&output_index) {
            self.create_slot(output_index, item, out);
        }
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "custom_tool_call" {
            if let Some(Slot {
                kind: SlotKind::CustomCall(_),
                content_index,
            }) = self.slots.get(&output_index)
            {
                let index = *content_index;
                let final_input = item.get("input").and_then(Value::as_str);
                self.custom_step(output_index, out, |input| input.close(final_input))?;
                if let (Some(ns), Some(call)) = (
                    item.get("namespace").and_then(Value::as_str),
                    out.toolcall_mut(index),
                ) {
                    call.namespace = Some(ns.to_string());
                }
                out.toolcall_end_with(index);
                self.unfinished_calls.retain(|i| *i != index);
                self.slots.remove(&output_index);
            }
            return Ok(());
        }
        let Some(slot) = self.slots.get_mut(&output_index) else {
            return Ok(());
        };
        let index = slot.content_index;
        match (kind, &mut slot.kind) {
            ("reasoning", SlotKind::Thinking) => {
                let join = |key: &str| -> String {
                    item.get(key)
                        .and_then(Value::as_array)
                        .map(|parts| {
                            parts
                                .iter()
                                .map(|p| p.get("text").and_then(Value::as_str).unwrap_or(""))
                                .collect::<Vec<_>>()
                                .join("\n\n")
                        })
                        .unwrap_or_default()
                };
                let summary = join("summary");
                let content = join("content");
                if let Some(t) = out.thinking_mut(index) {
                    if !summary.is_empty() {
                        t.thinking = summary;
                    } else if !content.is_empty() {
                        t.thinking = content;
                    }
                    t.thinking_signature = Some(item.to_string());
                }
                if let Some(id) = item.get("id").and_then(Value::as_str) {
                    self.reasoning_by_id.insert(id.to_string(), index);
                }
                out.thinking_end(index);
            }
            ("message", SlotKind::Text) => {
                let text: String = item
                    .get("content")
                    .and_then(Value::as_array)
                    .map(|parts| {
                        parts
                            .iter()
                            .map(|p| {
                                let key = if p.get("type").and_then(Value::as_str)
                                    == Some("output_text")
                                {
                                    "text"
                                } else {
                                    "refusal"
                                };
                                p.get(key).and_then(Value::as_str).unwrap_or("")
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut signature = Map::new();
                signature.insert("v".into(), json!(1));
                signature.insert("id".into(), item.get("id").cloned().unwrap_or(Value::Null));
                if let Some(phase) = item.get("phase").filter(|p| p.is_string()) {
                    signature.insert("phase".into(), phase.clone());
                }
                if let Some(t) = out.text_mut(index) {
                    t.text = text;
                    t.text_signature = Some(Value::Object(signature).to_string());
                }
                out.text_end(index);
            }
            ("function_call", SlotKind::ToolCall { arguments }) => {
                if let Some(full) = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    *arguments = full.to_string();
                }
                let args = std::mem::take(arguments);
                if let (Some(ns), Some(call)) = (
                    item.get("namespace").and_then(Value::as_str),
                    out.toolcall_mut(index),
                ) {
                    call.namespace = Some(ns.to_string());
                }
                out.toolcall_end(index, &args);
                self.unfinished_calls.retain(|i| *i != index);
            }
            _ => return Ok(()),
        }
        self.slots.remove(&output_index);
        Ok(())
    }
}

impl StreamParser for Parser {
    fn init_output(&self, out: &mut Output) {
        if let Some(level) = &self.thinking_level {
            out.message
                .extra
                .insert("providerThinkingLevel".into(), Value::String(level.clone()));
        }
    }

    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt> {
        if event.data == "[DONE]" {
            return Err(Halt::Stop);
        }
        let ev: Event<'_> = serde_json::from_str(event.data).map_err(|_| {
            Halt::Fail("Error reading response: malformed server-sent event JSON.".to_string())
        })?;
        if event.event == Some("error") {
            // The SDK raises an API error carrying the event's message.
            let data: Value = serde_json::from_str(event.data).unwrap_or(Value::Null);
            let err = data.get("error").cloned().unwrap_or(data);
            let text = match err.get("message") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                _ => err.to_string(),
            };
            return Err(Halt::Fail(text));
        }
        let index = ev.output_index.unwrap_or(0);
        match ev.kind.as_ref() {
            "response.created" => {
                if let Some(id) = ev
                    .response
                    .as_ref()
                    .and_then(|r| r.get("id"))
                    .and_then(Value::as_str)
                {
                    out.message.response_id = Some(id.to_string());
                }
            }
            "response.output_item.added" => {
                if let Some(item) = &ev.item {
                    self.create_slot(index, item, out);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let (
                    Some(Slot {
                        kind: SlotKind::Thinking,
                        content_index,
                    }),
                    Some(d),
                ) = (self.slots.get(&index), ev.delta.as_deref())
                {
                    out.thinking_delta(*content_index, d);
                }
            }
            "response.reasoning_summary_part.done" => {
                if let Some(Slot {
                    kind: SlotKind::Thinking,
                    content_index,
                }) = self.slots.get(&index)
                {
                    out.thinking_delta(*content_index, "\n\n");
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let (
                    Some(Slot {
                        kind: SlotKind::Text,
                        content_index,
                    }),
                    Some(d),
                ) = (self.slots.get(&index), ev.delta.as_deref())
                {
                    out.text_delta(*content_index, d);
                }
            }
            "response.function_call_arguments.delta" => {
                if let (
                    Some(Slot {
                        kind: SlotKind::ToolCall { arguments },
                        content_index,
                    }),
                    Some(d),
                ) = (self.slots.get_mut(&index), ev.delta.as_deref())
                {
                    arguments.push_str(d);
                    out.toolcall_delta(*content_index, d);
                }
            }
            "response.function_call_arguments.done" => {
                if let (
                    Some(Slot {
                        kind: SlotKind::ToolCall { arguments },
                        content_index,
                    }),
                    Some(full),
                ) = (self.slots.get_mut(&index), ev.arguments.as_deref())
                {
                    let suffix = full
                        .strip_prefix(arguments.as_str())
                        .filter(|s| !s.is_empty())
                        .map(str::to_string);
                    *arguments = full.to_string();
                    if let Some(suffix) = suffix {
                        out.toolcall_delta(*content_index, &suffix);
                    }
                }
            }
            "response.custom_tool_call_input.delta" => {
                let delta = ev.delta.as_deref().unwrap_or("");
                self.custom_step(index, out, |input| input.append(delta))?;
            }
            "response.custom_tool_call_input.done" => {
                let final_input = ev.input.as_deref();
                self.custom_step(index, out, |input| input.close(final_input))?;
            }
            "response.output_item.done" => {
                if let Some(item) = &ev.item {
                    self.item_done(index, item, out)?;
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = ev.response.unwrap_or(Value::Null);
                self.finalize(&response, out);
            }
            "response.failed" => {
                self.saw_terminal = true;
                let response = ev.response.unwrap_or(Value::Null);
                if let Some(status) = response.get("status").and_then(Value::as_str) {
                    out.set_raw_stop_reason(status);
                }
                let message = if let Some(err) = response.get("error").filter(|e| e.is_object()) {
                    let code = err
                        .get("code")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .unwrap_or("unknown");
                    let msg = err
                        .get("message")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .unwrap_or("no message");
                    format!("{code}: {msg}")
                } else if let Some(reason) = response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                {
                    format!("incomplete: {reason}")
                } else {
                    "Unknown error (no error details in response)".to_string()
                };
                return Err(Halt::Fail(message));
            }
            "error" => {
                let code = match &ev.code {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => "undefined".into(),
                };
                let message = ev.message.as_deref().unwrap_or("undefined");
                return Err(Halt::Fail(format!("Error Code {code}: {message}")));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Output) -> Result<(), StreamFailure> {
        if !self.saw_terminal {
            return Err("OpenAI Responses stream ended before a terminal response event".into());
        }
        if out.message.stop_reason == StopReason::ToolUse {
            if let Some(&index) = self.unfinished_calls.first() {
                let (name, id) = out
                    .toolcall_mut(index)
                    .map(|c| (c.name.clone(), c.id.clone()))
                    .unwrap_or_default();
                return Err(StreamFailure(format!(
                    "OpenAI Responses stream completed with an unfinished tool call: {name} ({id})"
                )));
            }
        }
        // Decision: text/reasoning items the server never closed with `output_item.done` are
        // closed here, so every started block gets its `*_end` (pi leaves them open).
        let mut open: Vec<(u64, usize, bool)> = self
            .slots
            .iter()
            .filter_map(|(k, s)| match s.kind {
                SlotKind::Text => Some((*k, s.content_index, true)),
                SlotKind::Thinking => Some((*k, s.content_index, false)),
                SlotKind::ToolCall { .. } | SlotKind::CustomCall(_) => None,
            })
            .collect();
        open.sort_by_key(|(_, index, _)| *index);
        // A function call the server never closed keeps the arguments streamed so far, parsed
        // leniently, as pi's live arguments do.
        for slot in self.slots.values() {
            if let SlotKind::ToolCall { arguments } = &slot.kind {
                if !arguments.trim().is_empty() {
                    out.set_partial_arguments(slot.content_index, arguments);
                }
            }
        }
        for (key, index, is_text) in open {
            if is_text {
                out.text_end(index);
            } else {
                out.thinking_end(index);
            }
            self.slots.remove(&key);
        }
        match out.message.stop_reason {
            StopReason::Pending => {
                Err("OpenAI Responses stream ended without a stop reason".into())
            }
            StopReason::Error | StopReason::Aborted => Err(StreamFailure(
                out.message
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "An unknown error occurred".into()),
            )),
            _ => Ok(()),
        }
    }

    fn on_failure(&mut self, out: &mut Output) {
        for slot in self.slots.values() {
            if let SlotKind::ToolCall { arguments } = &slot.kind {
                if !arguments.trim().is_empty() {
                    out.set_partial_arguments(slot.content_index, arguments);
                }
            }
        }
    }
}
