//! OpenAI Chat Completions (`openai-completions`): `POST {baseUrl}/chat/completions`, SSE of
//! `chat.completion.chunk` objects. Also the API of most OpenAI-compatible servers, whose quirks
//! are captured by [`Compat`] (detected from provider id and base URL, overridable per field
//! through `model.compat`).

mod compat;
mod convert;
mod parse;
mod request;

// Re-exported from `providers` with `unstable-internals` (for tests) only.
#[cfg_attr(not(feature = "unstable-internals"), allow(unused_imports))]
pub use compat::{compat_for, Compat, ThinkingFormat};
pub use parse::Parser;

use crate::error::AiError;
use crate::options::StreamOptions;
use crate::providers::api_client::{ApiClient, BuiltRequest};
use crate::providers::constrained::declared_grammar_inputs;
use crate::providers::http_error::openai_error_text;
use crate::providers::keys::PreparedRequest;
use crate::providers::output::StreamParser;
use crate::providers::transcript::Transcript;
use crate::types::Model;

/// The OpenAI Chat Completions client (and most OpenAI-compatible servers).
pub(crate) struct OpenAiCompletions;

impl ApiClient for OpenAiCompletions {
    fn build_request(
        &self,
        model: &Model,
        transcript: &Transcript,
        options: &StreamOptions,
        api_key: Option<&str>,
        _disable_preferred: Option<bool>,
    ) -> Result<BuiltRequest, AiError> {
        request::build_request(model, transcript, options, api_key)
            .map(BuiltRequest::from)
            .map_err(AiError::from)
    }

    fn parser(&self, model: &Model) -> Box<dyn StreamParser> {
        Box::new(Parser::new(model))
    }

    fn request_parser(
        &self,
        model: &Model,
        _options: &StreamOptions,
        transcript: &Transcript,
        _request: &PreparedRequest,
    ) -> Box<dyn StreamParser> {
        Box::new(
            Parser::new(model).with_grammar_inputs(
                declared_grammar_inputs(model, transcript).unwrap_or_default(),
            ),
        )
    }

    fn http_error(
        &self,
        _model: &Model,
        status: u16,
        _content_type: Option<&str>,
        body: &str,
    ) -> String {
        openai_error_text(status, body, None)
    }
}
