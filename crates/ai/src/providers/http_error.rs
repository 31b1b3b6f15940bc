//! The `errorMessage` text of HTTP failures, in each official SDK's wording.

use serde_json::Value;

/// The Anthropic SDK's message: `<status> <body.message | JSON body | raw text>`.
pub(crate) fn anthropic_error_text(status: u16, body: &str) -> String {
    let trimmed = body.trim();
    let parsed: Option<Value> = serde_json::from_str(trimmed).ok();
    sdk_message(status, parsed.as_ref(), trimmed, false)
}

/// OpenAI SDK + pi's normalization: `[<prefix> (<status>): ]<status>: <JSON of the error
/// member>`.
pub(crate) fn openai_error_text(status: u16, body: &str, prefix: Option<&str>) -> String {
    let trimmed = body.trim();
    let parsed: Option<Value> = serde_json::from_str(trimmed).ok();
    openai_error(status, parsed.as_ref(), trimmed, prefix)
}

/// @google/genai: the JSON body (or a synthesized error object for non-JSON bodies).
pub(crate) fn google_error_text(status: u16, content_type: Option<&str>, body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body.trim()).ok();
    let is_json = content_type.is_some_and(|c| c.contains("application/json"));
    match parsed {
        Some(v) if is_json => v.to_string(),
        _ => serde_json::json!({
            "error": {"message": body, "code": status, "status": reason_phrase(status)}
        })
        .to_string(),
    }
}

/// The official SDKs' `<status> <message>` text.
fn sdk_message(status: u16, parsed: Option<&Value>, raw: &str, error_member: bool) -> String {
    let error = if error_member {
        parsed.and_then(|v| v.get("error"))
    } else {
        parsed
    };
    let msg = match error {
        Some(e) => match e.get("message") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(m) if !m.is_null() && m != &Value::Bool(false) => Some(m.to_string()),
            _ => Some(e.to_string()),
        },
        None if parsed.is_none() && !raw.is_empty() => Some(raw.to_string()),
        None => None,
    };
    match msg {
        Some(m) => format!("{status} {m}"),
        None => format!("{status} status code (no body)"),
    }
}

fn openai_error(status: u16, parsed: Option<&Value>, raw: &str, prefix: Option<&str>) -> String {
    let body = match parsed {
        Some(v) => match v.get("error") {
            Some(e @ Value::Object(m)) if !m.is_empty() => Some(truncate_body(&e.to_string())),
            // Decision: a JSON body without an `error` member is shown as is (the SDK would
            // say "status code (no body)").
            Some(_) | None => Some(truncate_body(&v.to_string())),
        },
        None => None,
    };
    match (body, prefix) {
        (Some(body), Some(prefix)) => format!("{prefix} ({status}): {body}"),
        (Some(body), None) => format!("{status}: {body}"),
        (None, prefix) => {
            let message = if raw.is_empty() {
                format!("{status} status code (no body)")
            } else {
                format!("{status} {}", truncate_body(raw))
            };
            match prefix {
                Some(prefix) => format!("{prefix} ({status}): {message}"),
                None => message,
            }
        }
    }
}

const MAX_ERROR_BODY_CHARS: usize = 4000;

fn truncate_body(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_ERROR_BODY_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_ERROR_BODY_CHARS).collect();
    format!("{kept}… [truncated {} chars]", count - MAX_ERROR_BODY_CHARS)
}

fn reason_phrase(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

/// `Connection error.: <deepest cause> (<url>)` for transport failures (the prefix matches
/// the retry classifier). The URL says which server could not be reached — a wrong `baseUrl`
/// is the usual cause — without its query or user info, where credentials may sit
/// (DECISIONS §9.40).
pub(crate) fn transport_error_text(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        return "Request timed out.".to_string();
    }
    let mut deepest: Option<String> = None;
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        deepest = Some(s.to_string());
        source = s.source();
    }
    match (deepest, err.url().map(shown_url)) {
        (Some(cause), Some(url)) => format!("Connection error.: {cause} ({url})"),
        (Some(cause), None) => format!("Connection error.: {cause}"),
        // reqwest's own text names the URL already.
        (None, _) => format!("Connection error.: {err}"),
    }
}

/// `scheme://host[:port]/path` of a request URL: no user info, query or fragment.
fn shown_url(url: &reqwest::Url) -> String {
    let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or(""));
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(url.path());
    shown
}

/// The error text of a request that could not be built (DECISIONS §29.4): names the part of the
/// model's configuration at fault (the URL, or the header by name; header values may be
/// credentials and are never shown) so the user knows what to fix; never retried.
pub(crate) fn invalid_request_text(
    model: &crate::types::Model,
    url: &str,
    headers: &[(String, String)],
    err: &reqwest::Error,
) -> String {
    let who = format!("{}/{}", model.provider, model.id);
    if let Err(e) = reqwest::Url::parse(url) {
        return format!(
            "Invalid request URL {url:?} for model {who} ({e}): check the provider's baseUrl"
        );
    }
    let bad_header = headers.iter().find(|(name, value)| {
        reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
            || reqwest::header::HeaderValue::from_str(value).is_err()
    });
    if let Some((name, _)) = bad_header {
        return format!(
            "Invalid request header {name:?} for model {who}: names and values may not hold \
             line breaks or other control characters"
        );
    }
    let mut cause = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    format!("Invalid request for model {who}: {cause}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdk_messages() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let v: Value = serde_json::from_str(body).ok().unwrap_or_default();
        assert_eq!(
            sdk_message(529, Some(&v), body, false),
            format!("529 {body}")
        );
        assert_eq!(
            sdk_message(502, None, "bad gateway", false),
            "502 bad gateway"
        );
        assert_eq!(
            sdk_message(500, None, "", false),
            "500 status code (no body)"
        );
    }
}
