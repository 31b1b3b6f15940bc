//! What a provider's stream parser writes into: the message being built and the events not yet
//! handed to the consumer.

use serde_json::Value;

use crate::emit::empty_message;
use crate::event::AssistantMessageEvent;
use crate::json_stream::{parse_partial_json, parse_tool_arguments};
use crate::types::{
    AssistantMessage, ContentBlock, Model, TextContent, ThinkingContent, ToolCall, Usage,
};

use super::sse::SseEvent;

/// A JSON string borrowed from the event data when it has no escapes, owned otherwise.
///
/// serde only borrows a bare `Cow<str>` field; inside `Option` it always allocates. Wrapping
/// the `Cow` keeps the hot delta fields allocation-free.
#[derive(Debug)]
pub(crate) struct CowStr<'a>(pub std::borrow::Cow<'a, str>);

impl std::ops::Deref for CowStr<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = CowStr<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(std::borrow::Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(std::borrow::Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visit(std::marker::PhantomData))
    }
}

/// Why the SSE callback stopped early.
pub enum Halt {
    /// The provider signalled the end of the stream (`data: [DONE]`).
    Stop,
    /// A fatal error; the text becomes `errorMessage`.
    Fail(String),
}

impl From<String> for Halt {
    fn from(message: String) -> Self {
        Halt::Fail(message)
    }
}

/// Why a stream ended in failure: the reply's `errorMessage` (an incomplete stream, a
/// provider-reported error, an unknown stop reason), in pi's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StreamFailure(pub String);

impl From<String> for StreamFailure {
    fn from(message: String) -> Self {
        StreamFailure(message)
    }
}

impl From<&str> for StreamFailure {
    fn from(message: &str) -> Self {
        StreamFailure(message.to_string())
    }
}

impl From<StreamFailure> for Halt {
    fn from(StreamFailure(message): StreamFailure) -> Self {
        Halt::Fail(message)
    }
}

/// Turns one provider's SSE events into content updates.
pub trait StreamParser: Send {
    /// Handles one event.
    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt>;
    /// The body ended (or `[DONE]` arrived): close open blocks and settle the stop reason.
    /// `Err` = the stream is incomplete or ended in a provider-reported error.
    fn finish(&mut self, out: &mut Output) -> Result<(), StreamFailure>;
    /// The stream failed or was aborted: give partial tool calls their best-effort arguments.
    fn on_failure(&mut self, _out: &mut Output) {}

    /// Fills in what the reply carries from the start (before the request is sent), such
    /// as the managed effort level.
    fn init_output(&self, _out: &mut Output) {}
    /// The error for a body that ends inside an unterminated event, when the API's client
    /// refuses such a tail instead of flushing it (`None`: flush it as an event).
    fn unterminated_tail_error(&self) -> Option<String> {
        None
    }
    /// Whether error messages quote raw SSE lines (keeps the decoder's raw-line copy).
    fn wants_raw_lines(&self) -> bool {
        false
    }
}

/// The message being built plus the events not yet handed to the consumer.
pub struct Output {
    pub message: AssistantMessage,
    pub events: Vec<AssistantMessageEvent>,
    model: Model,
    /// The model whose prices apply when a server-side fallback model answered.
    pricing: Option<Model>,
}

impl Output {
    pub fn new(model: &Model) -> Self {
        Self {
            message: empty_message(model),
            events: Vec::new(),
            model: model.clone(),
            pricing: None,
        }
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn text_start(&mut self, text: String) -> usize {
        let index = self.message.content.len();
        self.message.content.push(ContentBlock::Text(TextContent {
            text,
            text_signature: None,
            extra: Default::default(),
        }));
        self.events.push(AssistantMessageEvent::TextStart {
            content_index: index,
        });
        index
    }

    pub fn text_delta(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Text(t)) = self.message.content.get_mut(index) {
            t.text.push_str(delta);
            self.events.push(AssistantMessageEvent::TextDelta {
                content_index: index,
                delta: delta.to_string(),
            });
        }
    }

    pub fn text_end(&mut self, index: usize) {
        if let Some(ContentBlock::Text(t)) = self.message.content.get(index) {
            let content = t.text.clone();
            self.events.push(AssistantMessageEvent::TextEnd {
                content_index: index,
                content,
            });
        }
    }

    pub fn text_mut(&mut self, index: usize) -> Option<&mut TextContent> {
        match self.message.content.get_mut(index) {
            Some(ContentBlock::Text(t)) => Some(t),
            _ => None,
        }
    }

    pub fn thinking_start(
        &mut self,
        thinking: String,
        signature: Option<String>,
        redacted: bool,
    ) -> usize {
        let index = self.message.content.len();
        self.message
            .content
            .push(ContentBlock::Thinking(ThinkingContent {
                thinking,
                thinking_signature: signature,
                redacted: redacted.then_some(true),
                extra: Default::default(),
            }));
        self.events.push(AssistantMessageEvent::ThinkingStart {
            content_index: index,
        });
        index
    }

    pub fn thinking_delta(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Thinking(t)) = self.message.content.get_mut(index) {
            t.thinking.push_str(delta);
            self.events.push(AssistantMessageEvent::ThinkingDelta {
                content_index: index,
                delta: delta.to_string(),
            });
        }
    }

    pub fn thinking_end(&mut self, index: usize) {
        if let Some(ContentBlock::Thinking(t)) = self.message.content.get(index) {
            let content = t.thinking.clone();
            self.events.push(AssistantMessageEvent::ThinkingEnd {
                content_index: index,
                content,
            });
        }
    }

    pub fn thinking_mut(&mut self, index: usize) -> Option<&mut ThinkingContent> {
        match self.message.content.get_mut(index) {
            Some(ContentBlock::Thinking(t)) => Some(t),
            _ => None,
        }
    }

    pub fn toolcall_start(&mut self, id: String, name: String, arguments: Value) -> usize {
        let index = self.message.content.len();
        let (call_id, tool_name) = (id.clone(), name.clone());
        self.message.content.push(ContentBlock::ToolCall(ToolCall {
            id,
            name,
            arguments,
            thought_signature: None,
            namespace: None,
            arguments_error: None,
            extra: Default::default(),
        }));
        self.events.push(AssistantMessageEvent::ToolcallStart {
            content_index: index,
            id: call_id,
            tool_name,
        });
        index
    }

    /// Emits a raw argument fragment (the accumulated text is kept by the parser).
    pub fn toolcall_delta(&mut self, index: usize, delta: &str) {
        self.events.push(AssistantMessageEvent::ToolcallDelta {
            content_index: index,
            delta: delta.to_string(),
        });
    }

    /// Parses the complete argument text strictly and emits `toolcall_end`.
    pub fn toolcall_end(&mut self, index: usize, arguments_text: &str) {
        let parsed = parse_tool_arguments(arguments_text);
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get_mut(index) {
            call.arguments = parsed.arguments;
            call.arguments_error = parsed.arguments_error;
            let tool_call = call.clone();
            self.events.push(AssistantMessageEvent::ToolcallEnd {
                content_index: index,
                tool_call,
            });
        }
    }

    /// Emits `toolcall_end` for a call whose arguments are already final.
    pub fn toolcall_end_with(&mut self, index: usize) {
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get(index) {
            let tool_call = call.clone();
            self.events.push(AssistantMessageEvent::ToolcallEnd {
                content_index: index,
                tool_call,
            });
        }
    }

    /// Best-effort arguments for an unfinished call (failure paths).
    pub fn set_partial_arguments(&mut self, index: usize, arguments_text: &str) {
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get_mut(index) {
            call.arguments = parse_partial_json(arguments_text);
        }
    }

    pub fn toolcall_mut(&mut self, index: usize) -> Option<&mut ToolCall> {
        match self.message.content.get_mut(index) {
            Some(ContentBlock::ToolCall(t)) => Some(t),
            _ => None,
        }
    }

    pub fn has_tool_calls(&self) -> bool {
        self.message
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall(_)))
    }

    /// Records the provider's raw stop reason (pi's `rawStopReason`).
    pub fn set_raw_stop_reason(&mut self, raw: &str) {
        self.message
            .extra
            .insert("rawStopReason".into(), Value::String(raw.to_string()));
    }

    /// Sets the token counts and recomputes the cost.
    pub fn set_usage(&mut self, usage: Usage) {
        self.message.usage = usage.into();
        compute_cost(
            self.pricing.as_ref().unwrap_or(&self.model),
            &mut self.message.usage,
        );
    }

    /// Prices usage from now on as `id` at `cost` (a fallback model that answered instead).
    pub fn price_as(&mut self, id: &str, cost: crate::types::ModelCost) {
        let mut model = self.model.clone();
        model.id = id.to_string();
        model.cost = cost;
        self.pricing = Some(model);
    }
}

pub(crate) fn compute_cost(model: &Model, usage: &mut Usage) {
    crate::models::calculate_cost(model, usage);
}
