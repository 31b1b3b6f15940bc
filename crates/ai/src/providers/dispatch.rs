//! Which built-in client serves a model, building its request, and [`BuiltinProvider`]: the
//! real clients behind the [`ApiProvider`] trait for callers that take one.

use crate::emit::{empty_message, error_stream, lazy_event_stream};
use crate::error::AiError;
use crate::event::AssistantMessageEventStream;
use crate::options::{SimpleStreamOptions, StreamOptions};
use crate::registry::{no_provider_message, registered, ApiProvider};
use crate::types::{AssistantMessage, Context, Model, StopReason};

use super::anthropic::AnthropicMessages;
use super::api_client::{ApiClient, BuiltRequest};
use super::driver::{parse_recorded_with, run, StrictFallback};
use super::google::GoogleGenerativeAi;
use super::keys::{resolve_api_key, PreparedRequest};
use super::openai_completions::OpenAiCompletions;
use super::openai_responses::OpenAiResponses;
use super::transcript::Transcript;

/// The built-in client of an `api` string, if any.
pub(crate) fn builtin(api: &str) -> Option<&'static dyn ApiClient> {
    match api {
        "anthropic-messages" => Some(&AnthropicMessages),
        "openai-completions" => Some(&OpenAiCompletions),
        "openai-responses" => Some(&OpenAiResponses),
        "google-generative-ai" => Some(&GoogleGenerativeAi),
        _ => None,
    }
}

/// The built-in HTTP clients as an [`ApiProvider`], dispatching like [`crate::stream::stream`]:
/// a provider registered for `model.api` first, else the built-in client of that API, else an
/// `error` event. The app hands this to layers that take a provider (`Arc<dyn ApiProvider>`).
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinProvider;

impl ApiProvider for BuiltinProvider {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        if let Some(provider) = registered(&model.api) {
            return provider.stream(model, context, options);
        }
        match builtin(&model.api) {
            Some(client) => stream_builtin(client, model, context, options),
            None => error_stream(model, no_provider_message(&model.api)),
        }
    }

    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: SimpleStreamOptions,
    ) -> AssistantMessageEventStream {
        if let Some(provider) = registered(&model.api) {
            return provider.stream_simple(model, context, options);
        }
        if builtin(&model.api).is_none() {
            return error_stream(model, no_provider_message(&model.api));
        }
        match crate::thinking::native::to_stream_options(model, context, options) {
            Ok(native) => self.stream(model, context, native),
            Err(err) => error_stream(model, err.to_string()),
        }
    }
}

/// Builds the request for a built-in API without sending it (for inspection and tests).
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<PreparedRequest, AiError> {
    let client = builtin(&model.api).ok_or_else(|| AiError::UnsupportedApi(model.api.clone()))?;
    let api_key = resolve_api_key(model, options)?;
    let transcript = Transcript::from_context(model, context);
    client
        .build_request(model, &transcript, options, api_key.as_deref(), None)
        .map(|built| built.request)
}

/// Streams one request through a built-in client. The transcript is built once and serves
/// the request, its one strict-limits resend and the parser.
pub(crate) fn stream_builtin(
    client: &'static dyn ApiClient,
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    let model = model.clone();
    let transcript = Transcript::from_context(&model, context);
    let built = resolve_api_key(&model, &options).and_then(|api_key| {
        client
            .build_request(&model, &transcript, &options, api_key.as_deref(), None)
            .map(|built| (built, api_key))
    });
    // Only when a `prefer` tool went out strict can Claude's strict-tool limits reject the
    // request; then the transcript is kept to build the one resend (DECISIONS §26.25).
    let strict_fallback: Option<StrictFallback> = match &built {
        Ok((
            BuiltRequest {
                strict_prefer: true,
                ..
            },
            api_key,
        )) => {
            let (model, transcript, options) = (model.clone(), transcript.clone(), options.clone());
            let api_key = api_key.clone();
            Some(Box::new(move || {
                client
                    .build_request(
                        &model,
                        &transcript,
                        &options,
                        api_key.as_deref(),
                        Some(true),
                    )
                    .ok()
                    .map(|built| built.request)
            }))
        }
        _ => None,
    };
    let request = built.map(|(built, _)| built.request);
    let thread = match &request {
        Ok(request) => client.thread_session(&model, &options, request),
        Err(_) => None,
    };
    lazy_event_stream(empty_message(&model), move |mut emitter| async move {
        let request = match request {
            Ok(request) => request,
            Err(err) => {
                let mut msg = empty_message(&model);
                msg.error_message = Some(err.to_string());
                emitter.error(msg, StopReason::Error);
                return;
            }
        };
        let mut parser = client.request_parser(&model, &options, &transcript, &request);
        run(
            &mut emitter,
            &model,
            &options,
            request,
            parser.as_mut(),
            client,
            strict_fallback,
            thread,
        )
        .await;
    })
}

/// Feeds a complete recorded body through the SSE decoder and the parser of `model.api` — the
/// client's code path without the network. Returns the final message (`stopReason` error on
/// failure) and the number of events produced. Used by the benchmark.
pub fn parse_recorded(
    model: &Model,
    body: &[u8],
    chunk_size: usize,
) -> Result<(AssistantMessage, usize), AiError> {
    let client = builtin(&model.api).ok_or_else(|| AiError::UnsupportedApi(model.api.clone()))?;
    let mut parser = client.parser(model);
    Ok(parse_recorded_with(
        parser.as_mut(),
        model,
        body,
        chunk_size,
    ))
}
