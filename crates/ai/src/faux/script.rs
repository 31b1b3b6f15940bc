//! What a test scripts: a response per call (fixed or computed from the request), what the
//! provider saw of each call, per-call options.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::emit::ABORTED_MESSAGE;
use crate::types::{
    AssistantMessage, ContentBlock, Context, Model, StopReason, TextContent, ThinkingContent,
    ToolCall, Usage,
};

/// What a test scripts for one model call.
#[derive(Clone, Default)]
pub struct FauxResponse {
    pub(super) content: Vec<ContentBlock>,
    pub(super) stop_reason: Option<StopReason>,
    pub(super) error_message: Option<String>,
    pub(super) usage: Option<Usage>,
    pub(super) response_id: Option<String>,
    pub(super) setup_error: Option<String>,
    pub(super) start_delay: Option<Duration>,
    pub(super) chunk_delay: Option<Duration>,
    pub(super) stall_after_chunks: Option<usize>,
}

impl fmt::Debug for FauxResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FauxResponse")
            .field("content", &self.content.len())
            .field("stop_reason", &self.stop_reason)
            .field("error_message", &self.error_message)
            .field("setup_error", &self.setup_error)
            .finish_non_exhaustive()
    }
}

impl FauxResponse {
    /// An empty response; add blocks with the builder methods.
    pub fn new() -> Self {
        Self::default()
    }

    /// A response that is one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// A response that calls one tool (stop reason `toolUse`).
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::new().with_tool_call(name, arguments)
    }

    /// Replays a complete assistant message (its content, stop reason, error and usage).
    /// `api`, `provider` and `model` are replaced by the requested model's.
    pub fn from_message(message: &AssistantMessage) -> Self {
        let usage_is_zero = message.usage.input == 0
            && message.usage.output == 0
            && message.usage.cache_read == 0
            && message.usage.cache_write == 0;
        Self {
            content: message.content.clone(),
            stop_reason: Some(message.stop_reason),
            error_message: message.error_message.clone(),
            usage: (!usage_is_zero).then(|| Usage::clone(&message.usage)),
            response_id: message.response_id.clone(),
            ..Self::default()
        }
    }

    /// Appends a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(ContentBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
            extra: Default::default(),
        }));
        self
    }

    /// Appends a thinking block.
    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.content.push(ContentBlock::Thinking(ThinkingContent {
            thinking: thinking.into(),
            thinking_signature: None,
            redacted: None,
            extra: Default::default(),
        }));
        self
    }

    /// Appends a thinking block with a provider signature (kept on same-model replay).
    pub fn with_signed_thinking(
        mut self,
        thinking: impl Into<String>,
        signature: impl Into<String>,
    ) -> Self {
        self.content.push(ContentBlock::Thinking(ThinkingContent {
            thinking: thinking.into(),
            thinking_signature: Some(signature.into()),
            redacted: None,
            extra: Default::default(),
        }));
        self
    }

    /// Appends a tool call with a generated id (`faux_call_<call>_<index>`).
    pub fn with_tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.with_tool_call_id("", name, arguments)
    }

    /// Appends a tool call with the given id (an empty id is generated).
    pub fn with_tool_call_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.content.push(ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
            namespace: None,
            arguments_error: None,
            extra: Default::default(),
        }));
        self
    }

    /// Appends a content block as is. Only text, thinking and tool-call blocks are streamed;
    /// other kinds are dropped from the reply (an assistant never streams images).
    pub fn with_block(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }

    /// Sets the stop reason. Default: `toolUse` when there are tool calls, else `stop`.
    pub fn stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    /// Streams the content, then fails with `error` (stop reason `error`).
    pub fn error(mut self, message: impl Into<String>) -> Self {
        self.stop_reason = Some(StopReason::Error);
        self.error_message = Some(message.into());
        self
    }

    /// A response that fails before the stream starts (like an HTTP error status): a lone
    /// `error` event without `start`.
    pub fn setup_error(message: impl Into<String>) -> Self {
        Self {
            setup_error: Some(message.into()),
            ..Self::default()
        }
    }

    /// Streams the content, then ends as if the provider reported an abort.
    pub fn aborted(mut self) -> Self {
        self.stop_reason = Some(StopReason::Aborted);
        self.error_message = Some(ABORTED_MESSAGE.to_string());
        self
    }

    /// Uses this usage instead of the estimate (cost is still computed from the model).
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets the provider's response id.
    pub fn response_id(mut self, id: impl Into<String>) -> Self {
        self.response_id = Some(id.into());
        self
    }

    /// Waits this long before `start` (time to first byte). Cancelling during the wait gives
    /// a lone `aborted` error.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.start_delay = Some(delay);
        self
    }

    /// Waits this long before every delta (overrides the provider's tokens per second).
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = Some(delay);
        self
    }

    /// After `chunks` deltas the stream stops making progress until it is cancelled (it never
    /// finishes without cancellation): a deterministic way to test aborts mid-stream.
    pub fn stall_after(mut self, chunks: usize) -> Self {
        self.stall_after_chunks = Some(chunks);
        self
    }
}

/// What the faux provider saw of one call, for assertions.
#[derive(Debug, Clone)]
pub struct FauxRequest {
    /// 0-based number of the call.
    pub index: usize,
    /// The model asked.
    pub model: Model,
    /// The context it was given.
    pub context: Context,
    /// The call's session id, when it had one.
    pub session_id: Option<String>,
}

pub(super) type ResponseFactory = dyn Fn(&FauxRequest) -> FauxResponse + Send + Sync;

/// One queued step: a fixed response or one computed from the request.
#[derive(Clone)]
pub enum FauxStep {
    /// Play this response.
    Response(Box<FauxResponse>),
    /// Compute the response from the request.
    Dynamic(Arc<ResponseFactory>),
}

impl fmt::Debug for FauxStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Response(r) => f.debug_tuple("Response").field(r).finish(),
            Self::Dynamic(_) => f.write_str("Dynamic(..)"),
        }
    }
}

impl From<FauxResponse> for FauxStep {
    fn from(response: FauxResponse) -> Self {
        Self::Response(Box::new(response))
    }
}

impl FauxStep {
    /// A step whose response is computed from the request (e.g. echoing the last user text).
    pub fn dynamic(f: impl Fn(&FauxRequest) -> FauxResponse + Send + Sync + 'static) -> Self {
        Self::Dynamic(Arc::new(f))
    }
}

/// Per-call options.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FauxStreamOptions {
    /// Cancelling ends the stream with an `aborted` error.
    pub cancel: Option<CancellationToken>,
    /// Enables the simulated prompt cache for this session.
    pub session_id: Option<String>,
    /// `false` disables the simulated cache (pi's `cacheRetention: "none"`).
    pub cache: bool,
}

crate::setters::with_setters!(FauxStreamOptions {
    opt cancel => with_cancel: CancellationToken,
    opt session_id => with_session_id: String,
    val cache => with_cache: bool,
});

impl Default for FauxStreamOptions {
    fn default() -> Self {
        Self {
            cancel: None,
            session_id: None,
            cache: true,
        }
    }
}
