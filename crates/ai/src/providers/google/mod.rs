//! Google Generative AI (`google-generative-ai`):
//! `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`, SSE of `GenerateContentResponse`.
//!
//! Files: `request` builds the body, `convert` turns the history into `contents`, `parse`
//! reads the SSE reply.

mod convert;
mod parse;
mod request;

pub use parse::Parser;

use crate::error::AiError;
use crate::options::StreamOptions;
use crate::providers::api_client::{ApiClient, BuiltRequest};
use crate::providers::http_error::google_error_text;
use crate::providers::{StreamParser, Transcript};
use crate::types::Model;

use request::build_request;

/// The Google Generative AI client.
pub(crate) struct GoogleGenerativeAi;

impl ApiClient for GoogleGenerativeAi {
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

    fn http_error(
        &self,
        _model: &Model,
        status: u16,
        content_type: Option<&str>,
        body: &str,
    ) -> String {
        google_error_text(status, content_type, body)
    }
}
