//! Which built-in client serves a model, building its request, and [`BuiltinProvider`]: the
//! real clients behind the [`ApiProvider`] trait for callers that take one.

use crate::emit::{empty_message, error_stream, lazy_event_stream};
use crate::error::AiError;
use crate::event::AssistantMessageEventStream;
use crate::options::{SimpleStreamOptions, StreamOptions};
use crate::registry::{no_provider_message, registered, ApiProvider};
use crate::types::{Context, Message, Model, StopReason};

use super::driver::run;
use super::keys::{resolve_api_key, PreparedRequest};
use super::output::StreamParser;
use super::transcript::Transcript;
use super::{anthropic, google, openai_completions, openai_responses};

/// The built-in API kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinApi {
    AnthropicMessages,
    OpenAiCompletions,
    OpenAiResponses,
    GoogleGenerativeAi,
}

pub(crate) fn builtin(api: &str) -> Option<BuiltinApi> {
    match api {
        "anthropic-messages" => Some(BuiltinApi::AnthropicMessages),
        "openai-completions" => Some(BuiltinApi::OpenAiCompletions),
        "openai-responses" => Some(BuiltinApi::OpenAiResponses),
        "google-generative-ai" => Some(BuiltinApi::GoogleGenerativeAi),
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
            Some(api) => stream_builtin(api, model, context, options),
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
    build_flagged(model, context, options, None).map(|(request, _)| request)
}

/// The request plus whether an Anthropic `prefer` tool went out strict. `disable_preferred`
/// overrides the session's memory of a strict-limits rejection (DECISIONS §26.25).
fn build_flagged(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    disable_preferred: Option<bool>,
) -> Result<(PreparedRequest, bool), AiError> {
    let api = builtin(&model.api).ok_or_else(|| AiError::UnsupportedApi(model.api.clone()))?;
    let api_key = resolve_api_key(model, options)?;
    let transcript = Transcript::from_context(model, context);
    if api == BuiltinApi::AnthropicMessages {
        let disable = disable_preferred
            .unwrap_or_else(|| super::strict_limits::exceeded(options.session_id.as_deref()));
        return anthropic::build_request_with(
            model,
            &transcript,
            options,
            api_key.as_deref(),
            disable,
        )
        .map_err(AiError::InvalidRequest);
    }
    let built = match api {
        BuiltinApi::AnthropicMessages => {
            anthropic::build_request(model, &transcript, options, api_key.as_deref())
        }
        BuiltinApi::OpenAiCompletions => {
            openai_completions::build_request(model, &transcript, options, api_key.as_deref())
        }
        BuiltinApi::OpenAiResponses => {
            openai_responses::build_request(model, &transcript, options, api_key.as_deref())
        }
        BuiltinApi::GoogleGenerativeAi => {
            google::build_request(model, &transcript, options, api_key.as_deref())
        }
    };
    built.map(|r| (r, false)).map_err(AiError::InvalidRequest)
}

/// Creates the stream parser of a built-in API (used by the client and the benchmark).
pub fn new_parser(api: BuiltinApi, model: &Model) -> Box<dyn StreamParser> {
    match api {
        BuiltinApi::AnthropicMessages => Box::new(anthropic::Parser::new(model)),
        BuiltinApi::OpenAiCompletions => Box::new(openai_completions::Parser::new(model)),
        BuiltinApi::OpenAiResponses => Box::new(openai_responses::Parser::new(model)),
        BuiltinApi::GoogleGenerativeAi => Box::new(google::Parser::new(model)),
    }
}

pub(crate) fn stream_builtin(
    api: BuiltinApi,
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    let model = model.clone();
    let built = build_flagged(&model, context, &options, None);
    // Only when a `prefer` tool went out strict can Claude's strict-tool limits reject the
    // request; then the context is kept to build the one resend (DECISIONS §26.25).
    let strict_fallback: Option<super::driver::StrictFallback> = match &built {
        Ok((_, true)) => {
            let (model, context, options) = (model.clone(), context.clone(), options.clone());
            Some(Box::new(move || {
                build_flagged(&model, &context, &options, Some(true))
                    .ok()
                    .map(|(request, _)| request)
            }))
        }
        _ => None,
    };
    let request = built.map(|(request, _)| request);
    // A request built with `thread` belongs to a session that may continue its thread
    // (DECISIONS §26.23, §26.40).
    let thread = match (&request, &options.session_id) {
        (Ok(built), Some(session))
            if api == BuiltinApi::AnthropicMessages && built.body.get("thread").is_some() =>
        {
            Some(super::threads::ThreadSession {
                session: session.clone(),
                oauth: model.provider != "github-copilot"
                    && built
                        .header("authorization")
                        .is_some_and(|v| v.contains("sk-ant-oat")),
            })
        }
        _ => None,
    };
    // Only the tool list matters to the parsers (OAuth name mapping).
    let context_for_parser = Context {
        system_prompt: None,
        messages: context
            .messages
            .iter()
            .filter(|m| matches!(m, Message::System(_)))
            .cloned()
            .collect(),
        tools: context.tools.clone(),
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
        let mut parser: Box<dyn StreamParser> = match api {
            // OAuth requests rename tools to Claude Code casing; map them back on the way in.
            BuiltinApi::AnthropicMessages
                if request
                    .header("authorization")
                    .is_some_and(|v| v.contains("sk-ant-oat")) =>
            {
                let tools = Transcript::from_context(&model, &context_for_parser).tools;
                Box::new(
                    anthropic::Parser::new(&model)
                        .with_oauth_tools(&tools)
                        .with_thinking_level(anthropic::managed_effort(&model, &options)),
                )
            }
            BuiltinApi::AnthropicMessages => Box::new(
                anthropic::Parser::new(&model)
                    .with_thinking_level(anthropic::managed_effort(&model, &options)),
            ),
            // Responses usage is priced with the requested tier when the response names none.
            // Grammar tools' custom input maps to their one string property.
            BuiltinApi::OpenAiResponses => {
                let transcript = Transcript::from_context(&model, &context_for_parser);
                let api_key = resolve_api_key(&model, &options).ok().flatten();
                Box::new(
                    openai_responses::Parser::new(&model)
                        .with_thinking_level(openai_responses::configuration_effort(
                            &model,
                            &options,
                            api_key.as_deref(),
                        ))
                        .with_service_tier(options.openai.service_tier.clone())
                        .with_grammar_inputs(
                            openai_responses::grammar_inputs(&model, &transcript)
                                .unwrap_or_default(),
                        ),
                )
            }
            BuiltinApi::OpenAiCompletions => {
                let transcript = Transcript::from_context(&model, &context_for_parser);
                Box::new(openai_completions::Parser::new(&model).with_grammar_inputs(
                    openai_responses::grammar_inputs(&model, &transcript).unwrap_or_default(),
                ))
            }
            _ => new_parser(api, &model),
        };
        run(
            &mut emitter,
            &model,
            &options,
            request,
            parser.as_mut(),
            api,
            strict_fallback,
            thread,
        )
        .await;
    })
}
