//! Entry points for talking to a model: [`stream`] / [`complete`] with provider-native options
//! and [`stream_simple`] / [`complete_simple`] with one unified [`ThinkingLevel`].
//!
//! Every call returns an [`AssistantMessageEventStream`] at once. The request runs lazily while
//! the stream is polled, so dropping the stream drops the HTTP connection. The stream keeps the
//! event contract of the provider layer: `start` only after the response headers arrived with a
//! success status, `*_start/_delta/_end` per content index, exactly one terminal `done` or
//! `error`, and no panic or `Err` after the stream was returned — every failure becomes an
//! `error` event whose message has `stopReason` `error` or `aborted` and an `errorMessage`.
//!
//! Dispatch order: a provider registered for `model.api`, else (with the `providers` feature)
//! the built-in HTTP client of that API, else an `error` event.
//!
//! [`ThinkingLevel`]: crate::types::ThinkingLevel

use futures::StreamExt;

use crate::emit::empty_message;
use crate::event::{AssistantMessageEvent, AssistantMessageEventStream};
pub use crate::options::{
    AnthropicOptions, CacheRetention, GoogleOptions, GoogleThinking, OpenAiOptions,
    SimpleStreamOptions, StreamOptions, ThinkingBudgets,
};
#[cfg(feature = "providers")]
pub use crate::providers::sse;
pub use crate::registry::{register_api_provider, unregister_api_provider, ApiProvider};
use crate::types::{AssistantMessage, Context, Model, StopReason};

/// Streams one assistant turn with provider-native options.
///
/// Offline, with the scripted `faux` provider (feature `faux`) registered for its own `api`:
///
/// ```
/// use std::sync::Arc;
///
/// use arbor_ai::faux::{FauxProvider, FauxResponse};
/// use arbor_ai::prelude::*;
/// use futures::StreamExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("The Nile."));
/// arbor_ai::register_api_provider(faux.api(), Arc::new(faux.clone()));
///
/// let context = Context {
///     system_prompt: Some("You are terse.".into()),
///     messages: vec![Message::user("Name a river.", 0)].into(),
///     tools: None,
/// };
/// let mut text = String::new();
/// let mut events = stream(&faux.model(), &context, StreamOptions::default());
/// while let Some(event) = events.next().await {
///     match event {
///         AssistantMessageEvent::TextDelta { delta, .. } => text.push_str(&delta),
///         AssistantMessageEvent::Done { message, .. } => assert_eq!(message.text(), text),
///         AssistantMessageEvent::Error { error, .. } => panic!("{:?}", error.error_message),
///         _ => {}
///     }
/// }
/// assert_eq!(text, "The Nile.");
/// # }
/// ```
pub fn stream(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    #[cfg(feature = "providers")]
    {
        ApiProvider::stream(&crate::providers::BuiltinProvider, model, context, options)
    }
    #[cfg(not(feature = "providers"))]
    {
        match crate::registry::registered(&model.api) {
            Some(provider) => provider.stream(model, context, options),
            None => {
                crate::emit::error_stream(model, crate::registry::no_provider_message(&model.api))
            }
        }
    }
}

/// Streams one assistant turn with a unified reasoning level (DECISIONS §10.6).
pub fn stream_simple(
    model: &Model,
    context: &Context,
    options: SimpleStreamOptions,
) -> AssistantMessageEventStream {
    #[cfg(feature = "providers")]
    {
        ApiProvider::stream_simple(&crate::providers::BuiltinProvider, model, context, options)
    }
    #[cfg(not(feature = "providers"))]
    {
        match crate::registry::registered(&model.api) {
            Some(provider) => provider.stream_simple(model, context, options),
            None => {
                crate::emit::error_stream(model, crate::registry::no_provider_message(&model.api))
            }
        }
    }
}

/// [`stream`] to completion: the final message (`stopReason` tells success from failure).
///
/// A failure is not an `Err`: the returned message has [`StopReason::Error`] (or `Aborted`) and
/// an `error_message`.
///
/// ```
/// use std::sync::Arc;
///
/// use arbor_ai::faux::{FauxProvider, FauxResponse};
/// use arbor_ai::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("4"));
/// faux.push(FauxResponse::new().error("Overloaded"));
/// arbor_ai::register_api_provider(faux.api(), Arc::new(faux.clone()));
///
/// let context = Context {
///     messages: vec![Message::user("2 + 2?", 0)].into(),
///     ..Context::default()
/// };
/// let answer = complete(&faux.model(), &context, StreamOptions::default()).await;
/// assert_eq!(answer.stop_reason, StopReason::Stop);
/// assert_eq!(answer.text(), "4");
///
/// let failed = complete(&faux.model(), &context, StreamOptions::default()).await;
/// assert_eq!(failed.stop_reason, StopReason::Error);
/// assert_eq!(failed.error_message.as_deref(), Some("Overloaded"));
/// # }
/// ```
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
