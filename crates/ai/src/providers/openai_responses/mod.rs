//! OpenAI Responses API (`openai-responses`): `POST {baseUrl}/responses`, SSE of typed
//! `response.*` events keyed by `output_index`.
//!
//! Files: `request` builds the body, `tools` declares the tools, `convert` turns the
//! history into input items, `parse` reads the SSE reply.

mod convert;
mod parse;
mod request;
mod tools;

pub use parse::Parser;

use crate::error::AiError;
use crate::options::StreamOptions;
use crate::providers::api_client::{ApiClient, BuiltRequest};
use crate::providers::constrained::declared_grammar_inputs;
use crate::providers::http_error::openai_error_text;
use crate::providers::keys::resolve_api_key;
use crate::providers::{PreparedRequest, StreamParser, Transcript};
use crate::types::Model;

use request::{build_request, configuration_effort};

/// The OpenAI Responses client.
pub(crate) struct OpenAiResponses;

impl ApiClient for OpenAiResponses {
    fn build_request(
        &self,
        model: &Model,
        transcript: &Transcript,
        options: &StreamOptions,
        api_key: Option<&str>,
        _disable_preferred: Option<bool>,
    ) -> Result<BuiltRequest, AiError> {
        build_request(model, transcript, options, api_key)
            .map(BuiltRequest::from)
            .map_err(AiError::from)
    }

    fn parser(&self, model: &Model) -> Box<dyn StreamParser> {
        Box::new(Parser::new(model))
    }

    fn request_parser(
        &self,
        model: &Model,
        options: &StreamOptions,
        transcript: &Transcript,
        _request: &PreparedRequest,
    ) -> Box<dyn StreamParser> {
        // Responses usage is priced with the requested tier when the response names none.
        // Grammar tools' custom input maps to their one string property.
        let api_key = resolve_api_key(model, options).ok().flatten();
        Box::new(
            Parser::new(model)
                .with_thinking_level(configuration_effort(model, options, api_key.as_deref()))
                .with_service_tier(options.openai.service_tier.clone())
                .with_grammar_inputs(
                    declared_grammar_inputs(model, transcript).unwrap_or_default(),
                ),
        )
    }

    fn http_error(
        &self,
        model: &Model,
        status: u16,
        _content_type: Option<&str>,
        body: &str,
    ) -> String {
        let prefix = if model.provider == "openai" {
            "OpenAI API error".to_string()
        } else {
            format!("{} API error", model.provider)
        };
        openai_error_text(status, body, Some(&prefix))
    }
}
