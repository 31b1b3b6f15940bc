//! Streamable HTTP for MCP: rmcp's transport (sessions, the server's event stream, resumption,
//! re-initialisation after an expired session) sends through Arbor's own reqwest 0.12 client,
//! which implements rmcp's `StreamableHttpClient` here, so the build keeps one HTTP stack
//! (DECISIONS §33.14). This file is only the HTTP exchange: headers out, status, content type
//! and bounded bodies in.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::stream::{BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// How long a connection to the server may take to open; the rest of an exchange is bounded
/// by the start and call timeouts around it (an event stream may stay open for the run).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest event one server-sent event stream may send when rmcp names no limit.
const DEFAULT_EVENT_LIMIT: usize = 16 * 1024 * 1024;

/// Headers the transport sets itself; an `mcp.json` entry may not set them (the check at load
/// time uses this list too).
pub const RESERVED_HEADERS: &[&str] = &["accept", SESSION_ID, LAST_EVENT_ID, "content-type"];

/// What the HTTP layer itself reports (rmcp wraps it in its `StreamableHttpError::Client`).
#[derive(Debug, thiserror::Error)]
pub enum HttpClientError {
    #[error("{}", request_text(.0))]
    Request(#[source] reqwest::Error),
    #[error("HTTP {status}{}", body_suffix(.body))]
    Status { status: u16, body: String },
}

fn request_text(e: &reqwest::Error) -> String {
    // reqwest's own text hides the cause ("error sending request"); the cause names it
    // ("Connection refused").
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn body_suffix(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

/// A header of an `mcp.json` entry that cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("header name {0:?} is not a valid HTTP header name")]
    Name(String),
    #[error(
        "header \"{0}\" has a value that cannot be sent (control characters or non-visible bytes)"
    )]
    Value(String),
    #[error("header \"{0}\" is set by the MCP transport itself")]
    Reserved(String),
}

/// An entry's `headers` as the transport sends them; checked when `mcp.json` is read, so a bad
/// one is a diagnostic with the file and line rather than a failed connection.
pub fn header_map(
    headers: &[(String, String)],
) -> Result<HashMap<HeaderName, HeaderValue>, HeaderError> {
    headers
        .iter()
        .map(|(name, value)| {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HeaderError::Name(name.clone()))?;
            if RESERVED_HEADERS.contains(&header.as_str()) || header.as_str() == PROTOCOL_VERSION {
                return Err(HeaderError::Reserved(name.clone()));
            }
            let value =
                HeaderValue::from_str(value).map_err(|_| HeaderError::Value(name.clone()))?;
            Ok((header, value))
        })
        .collect()
}

/// An entry's `url` that cannot name a streamable-HTTP server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("\"url\" {url:?} is not a valid URL ({reason})")]
    Invalid { url: String, reason: String },
    #[error("\"url\" {0:?} is not an http(s) URL")]
    Scheme(String),
}

/// Checks an entry's `url`: absolute, `http` or `https`, with a host.
pub fn check_url(url: &str) -> Result<(), UrlError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| UrlError::Invalid {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UrlError::Scheme(url.to_owned()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(UrlError::Invalid {
            url: url.to_owned(),
            reason: "no host".to_owned(),
        });
    }
    Ok(())
}

type HttpResult<T> = Result<T, StreamableHttpError<HttpClientError>>;

fn request_error(e: reqwest::Error) -> StreamableHttpError<HttpClientError> {
    StreamableHttpError::Client(HttpClientError::Request(e))
}

/// Arbor's HTTP client for MCP servers (cheap to clone: one connection pool per run).
#[derive(Debug, Clone)]
pub struct McpHttpClient {
    client: reqwest::Client,
}

impl McpHttpClient {
    /// The shared client (built once; reqwest pools connections per host).
    pub fn shared() -> Self {
        static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
        let client = CLIENT
            .get_or_init(|| {
                reqwest::Client::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .build()
                    .unwrap_or_else(|_| reqwest::Client::new())
            })
            .clone();
        McpHttpClient { client }
    }

    fn request(
        &self,
        builder: reqwest::RequestBuilder,
        session_id: Option<&str>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<reqwest::RequestBuilder> {
        let mut builder = builder;
        for (name, value) in headers {
            if RESERVED_HEADERS.contains(&name.as_str()) && name.as_str() != PROTOCOL_VERSION {
                return Err(StreamableHttpError::ReservedHeaderConflict(
                    name.as_str().to_owned(),
                ));
            }
            builder = builder.header(name, value);
        }
        if let Some(id) = session_id {
            builder = builder.header(SESSION_ID, id);
        }
        if let Some(token) = auth {
            builder = builder.bearer_auth(token);
        }
        Ok(builder)
    }
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// True when `content_type` is `media` (parameters such as `charset` ignored).
fn is_media(content_type: Option<&str>, media: &str) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
    })
}

/// A 401 with a challenge: rmcp reports it as "auth required" (Arbor has no OAuth sign-in; the
/// entry's `headers` carry credentials).
fn auth_challenge(response: &reqwest::Response) -> Option<AuthRequiredError> {
    if response.status() != StatusCode::UNAUTHORIZED {
        return None;
    }
    let header = response.headers().get(WWW_AUTHENTICATE)?;
    Some(AuthRequiredError::new(
        String::from_utf8_lossy(header.as_bytes()).into_owned(),
    ))
}

/// Rate limits and server errors keep their status for rmcp's retry policy.
fn retryable_status(response: &reqwest::Response) -> Option<HttpStatusError> {
    let status = response.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

/// Reads a body up to `limit` bytes. `Err(None)` when it is longer.
async fn read_limited(
    response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, Option<reqwest::Error>> {
    if response
        .content_length()
        .is_some_and(|n| usize::try_from(n).map_or(true, |n| n > limit))
    {
        return Err(None);
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(Some)?;
        if body.len() + chunk.len() > limit {
            return Err(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The first `limit` bytes of an error body, as text, for the report.
async fn error_text(response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        let room = limit.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= limit {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Server-sent events of a response, each event bounded by `limit` bytes (an endless event is
/// an error, not memory without end).
fn event_stream(
    response: reqwest::Response,
    limit: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut bound = EventBound::new(limit);
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| std::io::Error::other(request_text(&e)))?;
        bound.feed(&chunk)?;
        Ok::<_, std::io::Error>(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// Counts the bytes of the event being received; a blank line ends an event.
struct EventBound {
    limit: usize,
    size: usize,
    line_empty: bool,
    after_cr: bool,
}

impl EventBound {
    fn new(limit: usize) -> Self {
        EventBound {
            limit,
            size: 0,
            line_empty: true,
            after_cr: false,
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), std::io::Error> {
        for &b in bytes {
            let after_cr = std::mem::replace(&mut self.after_cr, b == b'\r');
            match b {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    if self.line_empty {
                        self.size = 0;
                        continue;
                    }
                    self.line_empty = true;
                }
                _ => self.line_empty = false,
            }
            self.size += 1;
            if self.size > self.limit {
                return Err(std::io::Error::other(format!(
                    "a server-sent event is larger than {} bytes",
                    self.limit
                )));
            }
        }
        Ok(())
    }
}

impl StreamableHttpClient for McpHttpClient {
    type Error = HttpClientError;

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            DEFAULT_EVENT_LIMIT,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut builder = self.request(
            self.client.get(uri.as_ref()).header(ACCEPT, ACCEPT_BOTH),
            session_id.as_deref(),
            auth_header,
            custom_headers,
        )?;
        if let Some(id) = last_event_id {
            builder = builder.header(LAST_EVENT_ID, id);
        }
        let response = builder.send().await.map_err(request_error)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(challenge) = auth_challenge(&response) {
            return Err(StreamableHttpError::AuthRequired(challenge));
        }
        if let Some(status) = retryable_status(&response) {
            return Err(status.into());
        }
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let body = error_text(response, 1024).await;
            return Err(StreamableHttpError::Client(HttpClientError::Status {
                status,
                body,
            }));
        }
        let ct = content_type(response.headers());
        if !is_media(ct.as_deref(), EVENT_STREAM) && !is_media(ct.as_deref(), JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(ct));
        }
        Ok(event_stream(response, max_sse_event_size))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let response = self
            .request(
                self.client.delete(uri.as_ref()),
                Some(&session_id),
                auth_header,
                custom_headers,
            )?
            .send()
            .await
            .map_err(request_error)?;
        let status = response.status();
        // A server that keeps no sessions, or already forgot this one, has nothing to end.
        if status.is_success()
            || status == StatusCode::METHOD_NOT_ALLOWED
            || status == StatusCode::NOT_FOUND
        {
            return Ok(());
        }
        Err(StreamableHttpError::Client(HttpClientError::Status {
            status: status.as_u16(),
            body: error_text(response, 1024).await,
        }))
    }

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let had_session = session_id.is_some();
        let body = serde_json::to_vec(&message)?;
        let response = self
            .request(
                self.client
                    .post(uri.as_ref())
                    .header(ACCEPT, ACCEPT_BOTH)
                    .header(CONTENT_TYPE, JSON)
                    .body(body),
                session_id.as_deref(),
                auth_header,
                custom_headers,
            )?
            .send()
            .await
            .map_err(request_error)?;
        let status = response.status();
        if let Some(challenge) = auth_challenge(&response) {
            return Err(StreamableHttpError::AuthRequired(challenge));
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        // The server forgot the session (it restarted): rmcp initialises a new one.
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let ct = content_type(response.headers());
        let new_session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if !status.is_success() {
            // A JSON-RPC error in the body is the server's answer; anything else is the status.
            if is_media(ct.as_deref(), JSON) && status != StatusCode::TOO_MANY_REQUESTS {
                let retryable = retryable_status(&response);
                let body = read_limited(response, limits.max_error_response_size)
                    .await
                    .unwrap_or_default();
                if let Ok(reply @ ServerJsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(reply, new_session));
                }
                if let Some(retryable) = retryable {
                    return Err(retryable.into());
                }
                return Err(StreamableHttpError::Client(HttpClientError::Status {
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&body).into_owned(),
                }));
            }
            if let Some(retryable) = retryable_status(&response) {
                return Err(retryable.into());
            }
            return Err(StreamableHttpError::Client(HttpClientError::Status {
                status: status.as_u16(),
                body: error_text(response, limits.max_error_response_size.min(1024)).await,
            }));
        }
        let expects_reply = matches!(message, ClientJsonRpcMessage::Request(_));
        if is_media(ct.as_deref(), EVENT_STREAM) {
            return Ok(StreamableHttpPostResponse::Sse(
                event_stream(response, limits.max_sse_event_size),
                new_session,
            ));
        }
        if is_media(ct.as_deref(), JSON) {
            let body = match read_limited(response, limits.max_json_response_size).await {
                Ok(body) => body,
                Err(Some(e)) => return Err(request_error(e)),
                Err(None) => {
                    return Err(StreamableHttpError::ResponseBodyTooLarge {
                        max_size: limits.max_json_response_size,
                    })
                }
            };
            if body.iter().all(u8::is_ascii_whitespace) && !expects_reply {
                return Ok(StreamableHttpPostResponse::Accepted);
            }
            let reply: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
            return Ok(StreamableHttpPostResponse::Json(reply, new_session));
        }
        // Some servers answer a notification with an empty 200 instead of 202.
        if !expects_reply && response.content_length() == Some(0) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!(
                "HTTP {} with content type {}",
                status.as_u16(),
                ct.as_deref().unwrap_or("(none)")
            ),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_bounded_and_a_blank_line_starts_the_count_again() {
        let mut bound = EventBound::new(12);
        assert!(bound.feed(b"data: 12345\n\n").is_ok());
        assert!(bound.feed(b"data: 1234\r\n\r\ndata: 1").is_ok());
        assert!(bound.feed(b"234\r\r").is_ok());
        assert!(bound.feed(b"data: 12345\ndata").is_err());
    }

    #[test]
    fn media_types_ignore_parameters_and_case() {
        assert!(is_media(Some("Application/JSON; charset=utf-8"), JSON));
        assert!(is_media(Some("text/event-stream"), EVENT_STREAM));
        assert!(!is_media(Some("text/html"), JSON));
        assert!(!is_media(None, JSON));
    }
}
