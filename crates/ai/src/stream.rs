//! Entry points for talking to a model: [`stream`] / [`complete`] with provider-native options
//! and [`stream_simple`] / [`complete_simple`] with one unified [`ThinkingLevel`].
//!
//! Every call returns an [`AssistantMessageEventStream`] at once. The request runs lazily while
//! the stream is polled, so dropping the stream drops the HTTP connection. The stream keeps the
//! event contract of the provider layer: `start` only after the response headers arrived with a
//! success status, `*_start/_delta/_end` per content index, exactly one terminal `done` or
//! `error`, and no panic or `Err` after the stream was returned — every failure becomes an
//! `error` event whose message has `stopReason` `error` or `aborted` and an `errorMessage`.

pub mod pi_options;
pub mod sse;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, RwLock};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use futures::channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures::{FutureExt, Stream, StreamExt};
use serde_json::{Map, Value};

use crate::json::Num;
use tokio_util::sync::CancellationToken;

use crate::event::{AssistantMessageEvent, AssistantMessageEventStream};
use crate::types::{AssistantMessage, Context, Cost, Model, StopReason, ThinkingLevel, Usage};

/// How long provider-side prompt caches should live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheRetention {
    /// No cache markers / cache keys at all.
    None,
    /// The provider's default (Anthropic: 5 minutes).
    Short,
    /// Long retention (Anthropic `ttl: "1h"`, OpenAI `prompt_cache_retention: "24h"`).
    Long,
}

/// Anthropic-specific options of [`stream`].
#[derive(Debug, Clone, Default)]
pub struct AnthropicOptions {
    pub thinking_enabled: Option<bool>,
    pub thinking_budget_tokens: Option<u64>,
    /// `low|medium|high|xhigh|max`, sent as `output_config.effort` with adaptive thinking.
    pub effort: Option<String>,
    /// `summarized` (default) or `omitted`.
    pub thinking_display: Option<String>,
    /// Adds the interleaved-thinking beta with budget thinking (default true).
    pub interleaved_thinking: Option<bool>,
}

/// OpenAI-specific options (Chat Completions and Responses).
#[derive(Debug, Clone, Default)]
pub struct OpenAiOptions {
    /// A thinking level name (`minimal`..`max`); mapped through `thinkingLevelMap`.
    pub reasoning_effort: Option<String>,
    /// Responses only: `auto|detailed|concise`.
    pub reasoning_summary: Option<String>,
    /// Responses only: `flex|priority|...`.
    pub service_tier: Option<String>,
    /// Chat Completions only: token budget for servers with a thinking-budget field.
    pub thinking_budget: Option<u64>,
}

/// Google thinking configuration.
#[derive(Debug, Clone, Default)]
pub struct GoogleThinking {
    pub enabled: bool,
    /// `-1` dynamic, `0` off.
    pub budget_tokens: Option<i64>,
    /// `MINIMAL|LOW|MEDIUM|HIGH` for thinking-level models.
    pub level: Option<String>,
}

/// Google-specific options of [`stream`].
#[derive(Debug, Clone, Default)]
pub struct GoogleOptions {
    pub thinking: Option<GoogleThinking>,
}

/// Options of [`stream`]. Everything is optional; `Default` gives pi's defaults.
#[derive(Clone, Default)]
pub struct StreamOptions {
    /// API key; when absent the provider's environment variable is consulted.
    pub api_key: Option<String>,
    /// Cancels the request: the stream ends promptly with an `aborted` error event and the HTTP
    /// connection is dropped.
    pub cancel: Option<CancellationToken>,
    /// Extra request headers (case-insensitive override of defaults; `None` removes a header).
    pub headers: Vec<(String, Option<String>)>,
    /// Maximum wait for the response headers (not the whole stream).
    pub timeout: Option<Duration>,
    /// HTTP-level retries of the initial request (default 0 = off).
    pub max_retries: u32,
    /// Largest server-requested retry delay accepted (default 60 s; zero = no cap).
    pub max_retry_delay: Option<Duration>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    /// Default `Short`, or `Long` when `PI_CACHE_RETENTION=long` / `ARBOR_CACHE_RETENTION=long`.
    pub cache_retention: Option<CacheRetention>,
    /// Enables prompt-cache keys and session-affinity headers.
    pub session_id: Option<String>,
    /// Anthropic reads `user_id`.
    pub metadata: Option<Map<String, Value>>,
    /// Provider-native tool choice: a string (`auto|none|any|required`) or an object.
    pub tool_choice: Option<Value>,
    /// Request sampling parameters (`top_p`, `top_k`, `min_p`, …), merged last into
    /// OpenAI-compatible bodies over the model's own (ai-layer §2.3).
    pub sampling_params: Option<Map<String, Value>>,
    pub anthropic: AnthropicOptions,
    pub openai: OpenAiOptions,
    pub google: GoogleOptions,
    /// HTTP client to use (a shared default client otherwise).
    pub client: Option<reqwest::Client>,
}

impl std::fmt::Debug for StreamOptions {
    // Hand-written so the API key never reaches logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamOptions")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("cache_retention", &self.cache_retention)
            .field("session_id", &self.session_id)
            .field("tool_choice", &self.tool_choice)
            .field("anthropic", &self.anthropic)
            .field("openai", &self.openai)
            .field("google", &self.google)
            .finish_non_exhaustive()
    }
}

impl StreamOptions {
    /// The effective cache retention (explicit, else environment, else `Short`).
    pub fn resolved_cache_retention(&self) -> CacheRetention {
        if let Some(r) = self.cache_retention {
            return r;
        }
        let long = ["ARBOR_CACHE_RETENTION", "PI_CACHE_RETENTION"]
            .iter()
            .any(|k| std::env::var(k).is_ok_and(|v| v == "long"));
        if long {
            CacheRetention::Long
        } else {
            CacheRetention::Short
        }
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.is_cancelled())
    }
}

/// Per-level thinking budgets (defaults 1024 / 2048 / 8192 / 16384).
pub use crate::thinking::ThinkingBudgets;

/// Options of [`stream_simple`]: the common options plus one provider-neutral reasoning level.
#[derive(Debug, Clone, Default)]
pub struct SimpleStreamOptions {
    pub base: StreamOptions,
    /// `None` or `Some(Off)` = no reasoning requested.
    pub reasoning: Option<ThinkingLevel>,
    pub thinking_budgets: ThinkingBudgets,
}

/// A streaming implementation of one `api` kind. Built-in APIs are dispatched directly; others
/// (or overrides) are registered with [`register_api_provider`].
pub trait ApiProvider: Send + Sync {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream;

    /// Default: map the unified level to provider-native options the way the built-in API of
    /// the same name would, then call [`ApiProvider::stream`].
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: SimpleStreamOptions,
    ) -> AssistantMessageEventStream {
        let native = crate::providers::simple::to_stream_options(model, context, options);
        match native {
            Ok(native) => self.stream(model, context, native),
            Err(message) => error_stream(model, message),
        }
    }
}

type Registry = RwLock<HashMap<String, Arc<dyn ApiProvider>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Registers (or replaces) the implementation for an `api` kind. A registered provider wins
/// over the built-in one of the same name.
pub fn register_api_provider(api: &str, provider: Arc<dyn ApiProvider>) {
    let mut map = registry().write().unwrap_or_else(|p| p.into_inner());
    map.insert(api.to_string(), provider);
}

/// Removes a registered implementation; returns whether one was registered.
pub fn unregister_api_provider(api: &str) -> bool {
    let mut map = registry().write().unwrap_or_else(|p| p.into_inner());
    map.remove(api).is_some()
}

fn registered(api: &str) -> Option<Arc<dyn ApiProvider>> {
    let map = registry().read().unwrap_or_else(|p| p.into_inner());
    map.get(api).cloned()
}

/// Streams one assistant turn with provider-native options.
pub fn stream(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    if let Some(provider) = registered(&model.api) {
        return provider.stream(model, context, options);
    }
    match crate::providers::builtin(&model.api) {
        Some(api) => crate::providers::stream_builtin(api, model, context, options),
        None => error_stream(
            model,
            format!("No API provider registered for api: {}", model.api),
        ),
    }
}

/// Streams one assistant turn with a unified reasoning level (see ai-layer §3).
pub fn stream_simple(
    model: &Model,
    context: &Context,
    options: SimpleStreamOptions,
) -> AssistantMessageEventStream {
    if let Some(provider) = registered(&model.api) {
        return provider.stream_simple(model, context, options);
    }
    if crate::providers::builtin(&model.api).is_none() {
        return error_stream(
            model,
            format!("No API provider registered for api: {}", model.api),
        );
    }
    match crate::providers::simple::to_stream_options(model, context, options) {
        Ok(native) => stream(model, context, native),
        Err(message) => error_stream(model, message),
    }
}

/// [`stream`] to completion: the final message (`stopReason` tells success from failure).
pub async fn complete(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessage {
    final_message(model, stream(model, context, options)).await
}

/// [`stream_simple`] to completion.
pub async fn complete_simple(
    model: &Model,
    context: &Context,
    options: SimpleStreamOptions,
) -> AssistantMessage {
    final_message(model, stream_simple(model, context, options)).await
}

/// Drains a stream and returns the message of its terminal event.
pub async fn final_message(
    model: &Model,
    mut events: AssistantMessageEventStream,
) -> AssistantMessage {
    while let Some(event) = events.next().await {
        match event {
            AssistantMessageEvent::Done { message, .. } => return message,
            AssistantMessageEvent::Error { error, .. } => return error,
            _ => {}
        }
    }
    let mut message = empty_message(model);
    message.stop_reason = StopReason::Error;
    message.error_message = Some("Stream ended without a terminal event".to_string());
    message
}

/// The initial assistant message of a request: no content, zero usage, `pending`.
pub(crate) fn empty_message(model: &Model) -> AssistantMessage {
    AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        usage: zero_usage(),
        stop_reason: StopReason::Pending,
        timestamp: now_ms(),
        ..AssistantMessage::default()
    }
}

/// pi's initial usage: every count zero (with `totalTokens`), zero cost.
pub(crate) fn zero_usage() -> Usage {
    Usage {
        total_tokens: Some(0),
        cost: Cost::default(),
        ..Usage::default()
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A stream holding a single `error` event (request-setup failures).
pub(crate) fn error_stream(model: &Model, message: String) -> AssistantMessageEventStream {
    let model = model.clone();
    lazy_event_stream(empty_message(&model), move |mut emitter| async move {
        let mut msg = empty_message(&model);
        msg.error_message = Some(message);
        emitter.error(msg, StopReason::Error);
    })
}

/// The producer side of an event stream. Guarantees a single terminal event and stamps
/// `durationMs` on the final message.
pub(crate) struct Emitter {
    tx: UnboundedSender<AssistantMessageEvent>,
    created: Instant,
    terminated: bool,
    /// Used for the safety-net error if the producer ends without a terminal event.
    template: AssistantMessage,
}

impl Emitter {
    pub(crate) fn push(&mut self, event: AssistantMessageEvent) {
        if self.terminated {
            return;
        }
        // A closed receiver means the consumer is gone; nothing to do.
        let _ = self.tx.unbounded_send(event);
    }

    pub(crate) fn done(&mut self, mut message: AssistantMessage) {
        if self.terminated {
            return;
        }
        self.stamp(&mut message);
        let reason = message.stop_reason;
        self.push(AssistantMessageEvent::Done { reason, message });
        self.terminated = true;
    }

    /// Emits the terminal error; `reason` must be `Error` or `Aborted`.
    pub(crate) fn error(&mut self, mut message: AssistantMessage, reason: StopReason) {
        if self.terminated {
            return;
        }
        message.stop_reason = reason;
        if message.error_message.is_none() {
            message.error_message = Some(match reason {
                StopReason::Aborted => ABORTED_MESSAGE.to_string(),
                _ => "Unknown error".to_string(),
            });
        }
        self.stamp(&mut message);
        self.push(AssistantMessageEvent::Error {
            reason,
            error: message,
        });
        self.terminated = true;
    }

    fn stamp(&self, message: &mut AssistantMessage) {
        if message.duration_ms.is_none() {
            let ms = self.created.elapsed().as_secs_f64() * 1000.0;
            message.duration_ms = Some(Num::new(ms.round()));
        }
    }
}

impl Drop for Emitter {
    fn drop(&mut self) {
        if !self.terminated && !self.tx.is_closed() {
            let mut message = self.template.clone();
            message.error_message = Some(if std::thread::panicking() {
                PANIC_MESSAGE.into()
            } else {
                "Provider stream ended without a terminal event".into()
            });
            self.error(message, StopReason::Error);
        }
    }
}

const PANIC_MESSAGE: &str = "Internal error: provider stream panicked";

/// The text of every abort error.
pub(crate) const ABORTED_MESSAGE: &str = "Request was aborted";

/// Builds an event stream driven by polling it (no task is spawned, so dropping the stream
/// cancels the producer and its HTTP connection). A panic in the producer becomes
/// an `error` event instead of unwinding into the consumer.
pub(crate) fn lazy_event_stream<F, Fut>(
    template: AssistantMessage,
    producer: F,
) -> AssistantMessageEventStream
where
    F: FnOnce(Emitter) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = unbounded();
    let panic_tx = tx.clone();
    let panic_template = template.clone();
    let emitter = Emitter {
        tx,
        created: Instant::now(),
        terminated: false,
        template,
    };
    let fut = std::panic::AssertUnwindSafe(producer(emitter))
        .catch_unwind()
        .map(move |result| {
            if result.is_err() {
                let mut message = panic_template;
                message.stop_reason = StopReason::Error;
                message.error_message = Some(PANIC_MESSAGE.into());
                // The emitter was dropped during unwinding and already sent its safety-net
                // error when the receiver was open; this send is then ignored by consumers
                // because the stream ends at the first terminal event.
                let _ = panic_tx.unbounded_send(AssistantMessageEvent::Error {
                    reason: StopReason::Error,
                    error: message,
                });
            }
        });
    Box::pin(DrivenStream {
        producer: Some(Box::pin(fut)),
        rx,
        finished: false,
    })
}

struct DrivenStream {
    producer: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    rx: UnboundedReceiver<AssistantMessageEvent>,
    /// Set after the terminal event was yielded: later events are dropped.
    finished: bool,
}

impl Stream for DrivenStream {
    type Item = AssistantMessageEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        if self.finished {
            return Poll::Ready(None);
        }
        if let Some(producer) = self.producer.as_mut() {
            if producer.as_mut().poll(cx).is_ready() {
                self.producer = None;
            }
        }
        match self.rx.poll_next_unpin(cx) {
            Poll::Ready(Some(event)) => {
                if matches!(
                    event,
                    AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
                ) {
                    self.finished = true;
                    // Dropping the producer closes the HTTP connection right away.
                    self.producer = None;
                }
                Poll::Ready(Some(event))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The faux provider serves `stream()` like any other API once registered:
/// `register_api_provider(faux.api(), Arc::new(faux.clone()))`.
impl ApiProvider for crate::faux::FauxProvider {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let cache = options.resolved_cache_retention() != CacheRetention::None;
        crate::faux::FauxProvider::stream(
            self,
            model,
            context,
            crate::faux::FauxStreamOptions {
                cancel: options.cancel,
                session_id: options.session_id,
                cache,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        Model {
            id: "m".into(),
            api: "test".into(),
            provider: "p".into(),
            ..Model::default()
        }
    }

    async fn drain(mut s: AssistantMessageEventStream) -> Vec<AssistantMessageEvent> {
        let mut out = Vec::new();
        while let Some(e) = s.next().await {
            out.push(e);
        }
        out
    }

    #[tokio::test]
    async fn a_panicking_provider_ends_with_one_error_event() {
        let m = model();
        let s = lazy_event_stream(empty_message(&m), |mut emitter: Emitter| async move {
            emitter.push(AssistantMessageEvent::Start {
                partial: AssistantMessage::default(),
            });
            panic!("boom");
        });
        let events = drain(s).await;
        assert_eq!(events.len(), 2);
        match &events[1] {
            AssistantMessageEvent::Error { reason, error } => {
                assert_eq!(*reason, StopReason::Error);
                assert_eq!(
                    error.error_message.as_deref(),
                    Some("Internal error: provider stream panicked")
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_producer_without_terminal_event_gets_one_and_later_events_are_dropped() {
        let m = model();
        let s = lazy_event_stream(empty_message(&m), |mut emitter: Emitter| async move {
            emitter.push(AssistantMessageEvent::TextStart { content_index: 0 });
        });
        let events = drain(s).await;
        assert_eq!(events.len(), 2);
        assert!(events[1].is_terminal());

        let s = lazy_event_stream(empty_message(&m), |mut emitter: Emitter| async move {
            let mut done = empty_message(&model());
            done.stop_reason = StopReason::Stop;
            emitter.done(done.clone());
            emitter.done(done);
            emitter.push(AssistantMessageEvent::TextStart { content_index: 0 });
        });
        let events = drain(s).await;
        assert_eq!(events.len(), 1);
        assert!(events[0]
            .final_message()
            .is_some_and(|m| m.duration_ms.is_some()));
    }
}
