//! Anthropic Messages API (`anthropic-messages`): `POST {baseUrl}/v1/messages?beta=true` (the SDK endpoint pi uses), SSE response.
//!
//! Files: `request` builds the body and headers, `convert` turns the history into wire
//! messages, `parse` reads the SSE reply; `oauth` holds what Claude OAuth requests change.

mod convert;
mod oauth;
mod parse;
mod request;
pub(crate) mod strict_limits;
pub(crate) mod threads;

pub use parse::Parser;

use crate::error::AiError;
use crate::options::StreamOptions;
use crate::providers::api_client::{ApiClient, BuiltRequest};
use crate::providers::http_error::anthropic_error_text;
use crate::providers::{PreparedRequest, StreamParser, Transcript};
use crate::types::Model;
use threads::ThreadSession;

use request::{build_request_with, managed_effort};

/// The Anthropic Messages client.
pub(crate) struct AnthropicMessages;

impl ApiClient for AnthropicMessages {
    fn build_request(
        &self,
        model: &Model,
        transcript: &Transcript,
        options: &StreamOptions,
        api_key: Option<&str>,
        disable_preferred: Option<bool>,
    ) -> Result<BuiltRequest, AiError> {
        let disable = disable_preferred
            .unwrap_or_else(|| strict_limits::exceeded(options.session_id.as_deref()));
        build_request_with(model, transcript, options, api_key, disable)
            .map(|(request, strict_prefer)| BuiltRequest {
                request,
                strict_prefer,
            })
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
        request: &PreparedRequest,
    ) -> Box<dyn StreamParser> {
        let parser = Parser::new(model);
        // OAuth requests rename tools to Claude Code casing; map them back on the way in.
        let parser = if sent_with_oauth(request) {
            parser.with_oauth_tools(&transcript.tools)
        } else {
            parser
        };
        Box::new(parser.with_thinking_level(managed_effort(model, options)))
    }

    fn thread_session(
        &self,
        model: &Model,
        options: &StreamOptions,
        request: &PreparedRequest,
    ) -> Option<ThreadSession> {
        // A request built with `thread` belongs to a session that may continue its thread
        // (DECISIONS §26.23, §26.40).
        let session = options.session_id.as_ref()?;
        request.body.get("thread")?;
        Some(ThreadSession {
            session: session.clone(),
            oauth: model.provider != "github-copilot" && sent_with_oauth(request),
        })
    }

    fn http_error(
        &self,
        _model: &Model,
        status: u16,
        _content_type: Option<&str>,
        body: &str,
    ) -> String {
        anthropic_error_text(status, body)
    }
}

/// The request went out with a Claude OAuth token.
fn sent_with_oauth(request: &PreparedRequest) -> bool {
    request
        .header("authorization")
        .is_some_and(|v| v.contains("sk-ant-oat"))
}
