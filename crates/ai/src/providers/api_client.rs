//! What the shared driver needs from one built-in API: the trait each API folder implements
//! once, so the driver, the dispatcher and the error texts never match on which API it is.

use crate::error::AiError;
use crate::options::StreamOptions;
use crate::types::Model;

use super::anthropic::threads::ThreadSession;
use super::keys::PreparedRequest;
use super::output::StreamParser;
use super::transcript::Transcript;

/// A request as built for sending, with what the driver needs to resend it.
#[derive(Debug, Clone)]
pub(crate) struct BuiltRequest {
    pub request: PreparedRequest,
    /// A `prefer` tool went out strict: a strict-limits rejection is answered by one resend
    /// with those tools non-strict (DECISIONS §26.25). Only Anthropic sets it.
    pub strict_prefer: bool,
}

impl From<PreparedRequest> for BuiltRequest {
    fn from(request: PreparedRequest) -> Self {
        Self {
            request,
            strict_prefer: false,
        }
    }
}

/// One built-in wire API (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses,
/// Google Generative AI). Implementations are stateless unit structs; the dispatcher maps a
/// model's `api` string to one of them.
pub(crate) trait ApiClient: Send + Sync {
    /// Builds the request body, URL and headers. `disable_preferred` overrides the session's
    /// memory of a strict-limits rejection (DECISIONS §26.25); APIs without strict `prefer`
    /// tools ignore it.
    fn build_request(
        &self,
        model: &Model,
        transcript: &Transcript,
        options: &StreamOptions,
        api_key: Option<&str>,
        disable_preferred: Option<bool>,
    ) -> Result<BuiltRequest, AiError>;

    /// A parser with no knowledge of the request (the benchmark and recorded bodies).
    fn parser(&self, model: &Model) -> Box<dyn StreamParser>;

    /// The parser for the reply to `request`, built from `transcript`: what the parser must
    /// know of the request (tool names, efforts, tiers). Defaults to [`ApiClient::parser`].
    fn request_parser(
        &self,
        model: &Model,
        _options: &StreamOptions,
        _transcript: &Transcript,
        _request: &PreparedRequest,
    ) -> Box<dyn StreamParser> {
        self.parser(model)
    }

    /// The session whose thread `request` may continue (DECISIONS §26.23, §26.40). Only
    /// Anthropic has threads.
    fn thread_session(
        &self,
        _model: &Model,
        _options: &StreamOptions,
        _request: &PreparedRequest,
    ) -> Option<ThreadSession> {
        None
    }

    /// The `errorMessage` of an HTTP failure, in this API's official SDK wording.
    fn http_error(
        &self,
        model: &Model,
        status: u16,
        content_type: Option<&str>,
        body: &str,
    ) -> String;
}
