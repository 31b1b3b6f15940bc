//! Messages stream parsing: `message_*` and `content_block_*` SSE events into content updates.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::json_stream::repair_json;
use crate::providers::output::StreamFailure;
use crate::providers::sse::SseEvent;
use crate::providers::{CowStr, Halt, Output, StreamParser};
use crate::types::{ContentBlock, Model, StopReason, Tool, Usage};

// ---------------------------------------------------------------------------------------------
// Stream parsing.

#[derive(Deserialize)]
struct BlockDelta<'a> {
    index: u64,
    #[serde(borrow)]
    delta: DeltaBody<'a>,
}

#[derive(Deserialize)]
struct DeltaBody<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    thinking: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    signature: Option<CowStr<'a>>,
}

#[derive(Deserialize)]
struct BlockStart {
    index: u64,
    content_block: Value,
}

#[derive(Deserialize)]
struct BlockStop {
    index: u64,
}

/// Strict JSON parse of an event payload, retried on the repaired text.
pub(crate) fn parse_repaired<'a, T: Deserialize<'a>>(
    data: &'a str,
    slot: &'a mut Option<String>,
) -> Result<T, serde_json::Error> {
    match serde_json::from_str::<T>(data) {
        Ok(v) => Ok(v),
        Err(err) => match repair_json(data) {
            Cow::Owned(repaired) => {
                let repaired: &'a str = slot.insert(repaired);
                serde_json::from_str(repaired)
            }
            Cow::Borrowed(_) => Err(err),
        },
    }
}

#[derive(Deserialize)]
struct TypeOnly<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

enum HandleError {
    /// The event's JSON did not parse (the message is JavaScript's, rebuilt from the data).
    Parse,
    Fail(String),
}

impl HandleError {
    fn parse(_: serde_json::Error) -> Self {
        HandleError::Parse
    }
}

struct OpenBlock {
    content_index: usize,
    /// Argument text of a tool call (None for text/thinking).
    arguments: Option<String>,
}

pub struct Parser {
    blocks: HashMap<u64, OpenBlock>,
    saw_message_start: bool,
    saw_message_stop: bool,
    /// Caller-side tool names, to map Claude Code casing back (OAuth).
    tool_names: Vec<String>,
    oauth: bool,
    /// `compat.allowedFallbackModels` of the model's provider that carry their own prices.
    fallback_prices: Vec<(String, crate::types::ModelCost)>,
    /// The managed effort the request ran at, recorded as `providerThinkingLevel`.
    thinking_level: Option<String>,
}

impl Parser {
    pub fn new(model: &Model) -> Self {
        let fallback_prices = crate::providers::compat_value(model, "allowedFallbackModels")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter(|f| f.get("provider").and_then(Value::as_str) == Some(&model.provider))
                    .filter_map(|f| {
                        let id = f.get("model")?.as_str()?.to_string();
                        let cost = serde_json::from_value(f.get("cost")?.clone()).ok()?;
                        Some((id, cost))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            blocks: HashMap::new(),
            saw_message_start: false,
            saw_message_stop: false,
            tool_names: Vec::new(),
            oauth: false,
            fallback_prices,
            thinking_level: None,
        }
    }

    /// Records `level` as the reply's `providerThinkingLevel` (managed effort, DECISIONS §26.21).
    pub fn with_thinking_level(mut self, level: Option<String>) -> Self {
        self.thinking_level = level;
        self
    }

    /// Enables mapping Claude Code tool names back to the caller's names.
    pub fn with_oauth_tools(mut self, tools: &[Tool]) -> Self {
        self.oauth = true;
        self.tool_names = tools.iter().map(|t| t.name.clone()).collect();
        self
    }

    /// `Err(Ok(parse error))` for payloads that are not JSON, `Err(Err(message))` for protocol
    /// failures.
    fn handle(&mut self, name: &str, data: &str, out: &mut Output) -> Result<(), HandleError> {
        let mut slot = None;
        match name {
            "content_block_delta" => {
                let ev: BlockDelta<'_> =
                    parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                let Some(open) = self.blocks.get_mut(&ev.index) else {
                    return Ok(());
                };
                let index = open.content_index;
                let d = ev.delta;
                match d.kind.as_ref() {
                    "text_delta" => {
                        if let Some(text) = d.text {
                            out.text_delta(index, &text);
                        }
                    }
                    "thinking_delta" => {
                        if let Some(thinking) = d.thinking {
                            out.thinking_delta(index, &thinking);
                        }
                    }
                    "input_json_delta" => {
                        if let (Some(args), Some(fragment)) =
                            (open.arguments.as_mut(), d.partial_json)
                        {
                            args.push_str(&fragment);
                            out.toolcall_delta(index, &fragment);
                        }
                    }
                    "signature_delta" => {
                        if let (Some(t), Some(sig)) = (out.thinking_mut(index), d.signature) {
                            t.thinking_signature
                                .get_or_insert_with(String::new)
                                .push_str(&sig);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_start" => {
                let ev: BlockStart = parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                let block = &ev.content_block;
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                let str_field = |k: &str| {
                    block
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let (content_index, arguments) = match kind {
                    "text" => (out.text_start(str_field("text")), None),
                    "thinking" => (
                        out.thinking_start(
                            str_field("thinking"),
                            Some(str_field("signature")),
                            false,
                        ),
                        None,
                    ),
                    "redacted_thinking" => (
                        out.thinking_start(
                            "[Reasoning redacted]".into(),
                            Some(str_field("data")),
                            true,
                        ),
                        None,
                    ),
                    "tool_use" => {
                        let mut name = str_field("name");
                        if self.oauth {
                            if let Some(n) = self
                                .tool_names
                                .iter()
                                .find(|t| t.eq_ignore_ascii_case(&name))
                            {
                                name = n.clone();
                            }
                        }
                        let input = match block.get("input") {
                            Some(v @ Value::Object(_)) => v.clone(),
                            _ => json!({}),
                        };
                        (
                            out.toolcall_start(str_field("id"), name, input),
                            Some(String::new()),
                        )
                    }
                    "fallback" => {
                        if !out.message.content.is_empty() {
                            return Err(HandleError::Fail(
                                "Anthropic performed an unsupported mid-output model fallback"
                                    .into(),
                            ));
                        }
                        return Ok(());
                    }
                    _ => return Ok(()),
                };
                self.blocks.insert(
                    ev.index,
                    OpenBlock {
                        content_index,
                        arguments,
                    },
                );
            }
            "content_block_stop" => {
                let ev: BlockStop = parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                if let Some(open) = self.blocks.remove(&ev.index) {
                    match (&open.arguments, out.message.content.get(open.content_index)) {
                        (_, Some(ContentBlock::Text(_))) => out.text_end(open.content_index),
                        (_, Some(ContentBlock::Thinking(_))) => {
                            out.thinking_end(open.content_index)
                        }
                        (Some(args), Some(ContentBlock::ToolCall(_))) => {
                            // Decision: a tool_use that carried its full `input` at start and
                            // got no deltas keeps that input (pi would reset it to {}).
                            if args.trim().is_empty() {
                                out.toolcall_end_with(open.content_index);
                            } else {
                                out.toolcall_end(open.content_index, args);
                            }
                        }
                        _ => {}
                    }
                }
            }
            "message_start" => {
                self.saw_message_start = true;
                let ev: Value = parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                let message = ev.get("message").cloned().unwrap_or(Value::Null);
                if let Some(id) = message.get("id").and_then(Value::as_str) {
                    out.message.response_id = Some(id.to_string());
                }
                if let Some(m) = message.get("model").and_then(Value::as_str) {
                    if m != out.model().id {
                        out.message.response_model = Some(m.to_string());
                        // A fallback model that answered is priced at its own rates when the
                        // catalogue lists them (DECISIONS §26.24).
                        if let Some((id, cost)) =
                            self.fallback_prices.iter().find(|(id, _)| id == m)
                        {
                            out.price_as(id, cost.clone());
                        }
                    }
                }
                let u = message.get("usage").cloned().unwrap_or(Value::Null);
                let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                let mut usage: Usage = Usage::clone(&out.message.usage);
                usage.input = n("input_tokens");
                usage.output = n("output_tokens");
                usage.cache_read = n("cache_read_input_tokens");
                usage.cache_write = n("cache_creation_input_tokens");
                usage.cache_write_1h = Some(
                    u.pointer("/cache_creation/ephemeral_1h_input_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                );
                usage.total_tokens =
                    Some(usage.input + usage.output + usage.cache_read + usage.cache_write);
                out.set_usage(usage);
            }
            "message_delta" => {
                let ev: Value = parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                if let Some(reason) = ev.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    out.set_raw_stop_reason(reason);
                    let (stop, message) =
                        map_stop_reason(reason, ev.pointer("/delta/stop_details"))
                            .map_err(|StreamFailure(message)| HandleError::Fail(message))?;
                    out.message.stop_reason = stop;
                    if message.is_some() {
                        out.message.error_message = message;
                    }
                }
                let mut usage: Usage = Usage::clone(&out.message.usage);
                if let Some(u) = ev.get("usage").filter(|u| u.is_object()) {
                    let n = |k: &str| u.get(k).and_then(Value::as_u64);
                    if let Some(v) = n("input_tokens") {
                        usage.input = v;
                    }
                    if let Some(v) = n("output_tokens") {
                        usage.output = v;
                    }
                    if let Some(v) = n("cache_read_input_tokens") {
                        usage.cache_read = v;
                    }
                    if let Some(v) = n("cache_creation_input_tokens") {
                        usage.cache_write = v;
                    }
                    if let Some(v) = u
                        .pointer("/cache_creation/ephemeral_1h_input_tokens")
                        .and_then(Value::as_u64)
                    {
                        usage.cache_write_1h = Some(v);
                    }
                    if let Some(v) = u
                        .pointer("/output_tokens_details/thinking_tokens")
                        .and_then(Value::as_u64)
                    {
                        usage.reasoning = Some(v);
                    }
                }
                usage.total_tokens =
                    Some(usage.input + usage.output + usage.cache_read + usage.cache_write);
                out.set_usage(usage);
            }
            "message_stop" => {
                self.saw_message_stop = true;
            }
            _ => {}
        }
        Ok(())
    }
}

fn map_stop_reason(
    reason: &str,
    details: Option<&Value>,
) -> Result<(StopReason, Option<String>), StreamFailure> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => (StopReason::Stop, None),
        "max_tokens" => (StopReason::Length, None),
        "tool_use" => (StopReason::ToolUse, None),
        "refusal" => (
            StopReason::Error,
            Some(
                details
                    .and_then(|d| d.get("explanation"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or("The model refused to complete the request")
                    .to_string(),
            ),
        ),
        "sensitive" => (
            StopReason::Error,
            Some("Provider stopped with: sensitive".to_string()),
        ),
        other => return Err(StreamFailure(format!("Unhandled stop reason: {other}"))),
    })
}

const MESSAGE_EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

impl StreamParser for Parser {
    fn init_output(&self, out: &mut Output) {
        if let Some(level) = &self.thinking_level {
            out.message
                .extra
                .insert("providerThinkingLevel".into(), Value::String(level.clone()));
        }
    }

    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt> {
        // Decision: a gateway that drops `event:` lines still sends the `type` in the data;
        // fall back to it instead of silently ignoring the whole stream.
        let fallback;
        let name = match event.event {
            Some(name) => name,
            None => {
                fallback = serde_json::from_str::<TypeOnly<'_>>(event.data)
                    .map(|t| t.kind)
                    .unwrap_or_default();
                fallback.as_ref()
            }
        };
        if name == "error" {
            return Err(Halt::Fail(event.data.to_string()));
        }
        if !MESSAGE_EVENTS.contains(&name) {
            return Ok(());
        }
        self.handle(name, event.data, out).map_err(|err| match err {
            // pi quotes JavaScript's parser message (serde's differs in wording).
            HandleError::Parse => Halt::Fail(format!(
                "Could not parse Anthropic SSE event {name}: {}; data={}; raw={}",
                crate::json_stream::js_parse_error_with_repair(event.data),
                event.data,
                event.raw
            )),
            HandleError::Fail(message) => Halt::Fail(message),
        })
    }

    fn finish(&mut self, out: &mut Output) -> Result<(), StreamFailure> {
        if self.saw_message_start && !self.saw_message_stop {
            return Err("Anthropic stream ended before message_stop".into());
        }
        match out.message.stop_reason {
            StopReason::Pending => Err("Anthropic stream ended without a stop reason".into()),
            StopReason::Error | StopReason::Aborted => Err(StreamFailure(
                out.message
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "An unknown error occurred".into()),
            )),
            _ => Ok(()),
        }
    }

    fn wants_raw_lines(&self) -> bool {
        true
    }

    fn on_failure(&mut self, out: &mut Output) {
        for open in self.blocks.values() {
            if let Some(args) = &open.arguments {
                if !args.trim().is_empty() {
                    out.set_partial_arguments(open.content_index, args);
                }
            }
        }
    }
}
