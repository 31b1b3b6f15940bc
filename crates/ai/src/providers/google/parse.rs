//! Gemini stream parsing: `GenerateContentResponse` chunks into content updates.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::providers::output::StreamFailure;
use crate::providers::sse::SseEvent;
use crate::providers::{CowStr, Halt, Output, StreamParser};
use crate::time::now_ms;
use crate::types::{Model, StopReason, Usage};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(borrow, default)]
    response_id: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    candidates: Option<Vec<Candidate<'a>>>,
    #[serde(default)]
    usage_metadata: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow, default)]
    content: Option<CandidateContent<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct CandidateContent<'a> {
    #[serde(borrow, default)]
    parts: Option<Vec<Part<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(borrow, default)]
    text: Option<CowStr<'a>>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Clone, Copy, PartialEq)]
enum Current {
    Text(usize),
    Thinking(usize),
}

pub struct Parser {
    current: Option<Current>,
    counter: u64,
    raw_stop: Option<String>,
    /// Ids of the tool calls so far (duplicates get a generated id).
    call_ids: HashSet<String>,
}

impl Parser {
    pub fn new(_model: &Model) -> Self {
        Self {
            current: None,
            counter: 0,
            raw_stop: None,
            call_ids: HashSet::new(),
        }
    }

    fn close_current(&mut self, out: &mut Output) {
        match self.current.take() {
            Some(Current::Text(i)) => out.text_end(i),
            Some(Current::Thinking(i)) => out.thinking_end(i),
            None => {}
        }
    }

    fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Output) -> Result<(), StreamFailure> {
        if out.message.response_id.is_none() {
            out.message.response_id = chunk.response_id.map(|c| c.0.into_owned());
        }
        let candidate = chunk.candidates.and_then(|c| c.into_iter().next());
        let (parts, finish) = match candidate {
            Some(c) => (
                c.content.and_then(|c| c.parts).unwrap_or_default(),
                c.finish_reason,
            ),
            None => (Vec::new(), None),
        };
        for part in parts {
            if let Some(text) = &part.text {
                let thinking = part.thought == Some(true);
                let index = match (self.current, thinking) {
                    (Some(Current::Thinking(i)), true) | (Some(Current::Text(i)), false) => i,
                    _ => {
                        self.close_current(out);
                        if thinking {
                            let i = out.thinking_start(String::new(), None, false);
                            self.current = Some(Current::Thinking(i));
                            i
                        } else {
                            let i = out.text_start(String::new());
                            self.current = Some(Current::Text(i));
                            i
                        }
                    }
                };
                let incoming = part.thought_signature.as_deref().filter(|s| !s.is_empty());
                if thinking {
                    out.thinking_delta(index, text);
                    if let (Some(sig), Some(t)) = (incoming, out.thinking_mut(index)) {
                        t.thinking_signature = Some(sig.to_string());
                    }
                } else {
                    out.text_delta(index, text);
                    if let (Some(sig), Some(t)) = (incoming, out.text_mut(index)) {
                        t.text_signature = Some(sig.to_string());
                    }
                }
            }
            if let Some(call) = part.function_call {
                self.close_current(out);
                let name = call.name.unwrap_or_default();
                let id = match call
                    .id
                    .filter(|id| !id.is_empty() && !self.call_ids.contains(id))
                {
                    Some(id) => id,
                    None => {
                        self.counter += 1;
                        format!("{name}_{}_{}", now_ms(), self.counter)
                    }
                };
                self.call_ids.insert(id.clone());
                let args = match call.args {
                    Some(v @ Value::Object(_)) => v,
                    _ => json!({}),
                };
                let delta = args.to_string();
                let index = out.toolcall_start(id, name, args);
                if let (Some(sig), Some(c)) = (
                    part.thought_signature.filter(|s| !s.is_empty()),
                    out.toolcall_mut(index),
                ) {
                    c.thought_signature = Some(sig);
                }
                out.toolcall_delta(index, &delta);
                out.toolcall_end_with(index);
            }
        }
        if let Some(reason) = finish {
            out.set_raw_stop_reason(&reason);
            out.message.stop_reason = match reason.as_str() {
                "STOP" => StopReason::Stop,
                "MAX_TOKENS" | "CONTINUATION" => StopReason::Length,
                r if ERROR_FINISH_REASONS.contains(&r) => StopReason::Error,
                // pi fails the stream at once, leaving the open block unclosed.
                _ => return Err(StreamFailure(format!("Unhandled stop reason: {reason}"))),
            };
            if out.message.stop_reason == StopReason::Stop && out.has_tool_calls() {
                out.message.stop_reason = StopReason::ToolUse;
            }
            self.raw_stop = Some(reason);
        }
        if let Some(meta) = chunk.usage_metadata.filter(serde_json::Value::is_object) {
            let n = |k: &str| meta.get(k).and_then(Value::as_u64).unwrap_or(0);
            let cached = n("cachedContentTokenCount");
            let thoughts = n("thoughtsTokenCount");
            let mut usage: Usage = Usage::clone(&out.message.usage);
            usage.input = n("promptTokenCount").saturating_sub(cached);
            usage.output = n("candidatesTokenCount") + thoughts;
            usage.cache_read = cached;
            usage.cache_write = 0;
            usage.reasoning = Some(thoughts);
            usage.total_tokens = Some(n("totalTokenCount"));
            out.set_usage(usage);
        }
        Ok(())
    }
}

/// `finishReason` values that end the reply in an error (`Provider stopped with: <reason>`);
/// any value outside these and `STOP`/`MAX_TOKENS`/`CONTINUATION` is unknown.
const ERROR_FINISH_REASONS: &[&str] = &[
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "SAFETY",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "IMAGE_OTHER",
    "RECITATION",
    "FINISH_REASON_UNSPECIFIED",
    "OTHER",
    "LANGUAGE",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "NO_IMAGE",
];

impl StreamParser for Parser {
    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        // pi surfaces JavaScript's `JSON.parse` message for a malformed chunk.
        let chunk: Chunk<'_> = serde_json::from_str(event.data).map_err(|e| {
            Halt::Fail(
                crate::json_error::js_json_parse_error(event.data)
                    .unwrap_or_else(|| format!("Could not read Google stream chunk: {e}")),
            )
        })?;
        if let Some(err) = chunk.error.as_ref().filter(|e| e.is_object()) {
            let status = err.get("status").map_or_else(
                || "undefined".to_string(),
                |s| s.as_str().map_or_else(|| s.to_string(), str::to_string),
            );
            let full: Value = serde_json::from_str(event.data).unwrap_or(Value::Null);
            return Err(Halt::Fail(format!("got status: {status}. {full}")));
        }
        self.chunk(chunk, out).map_err(Halt::from)
    }

    fn unterminated_tail_error(&self) -> Option<String> {
        // @google/genai's reader refuses a trailing event without its blank line.
        Some("Incomplete JSON segment at the end".to_string())
    }

    fn finish(&mut self, out: &mut Output) -> Result<(), StreamFailure> {
        self.close_current(out);
        match out.message.stop_reason {
            StopReason::Pending => Err("Google stream ended without a finish reason".into()),
            StopReason::Error | StopReason::Aborted => Err(StreamFailure(match &self.raw_stop {
                Some(r) => format!("Provider stopped with: {r}"),
                None => "An unknown error occurred".into(),
            })),
            _ => Ok(()),
        }
    }
}
