//! Credentials and headers: the prepared request (redacted in `Debug`), API-key resolution,
//! header merging.

use serde_json::Value;

use crate::error::AiError;
use crate::options::StreamOptions;
use crate::types::Model;

use super::transcript::Transcript;

/// A fully built HTTP request.
#[derive(Clone, PartialEq)]
pub struct PreparedRequest {
    /// The endpoint URL.
    pub url: String,
    /// Final header list (names as sent). Contains credentials: never log it.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
}

/// Headers that carry credentials; their values never appear in `Debug` output.
const SECRET_HEADERS: [&str; 4] = [
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "cf-aig-authorization",
];

/// Name parts that mark a custom header (e.g. from `models.json`) as a credential.
const SECRET_NAME_PARTS: [&str; 8] = [
    "auth",
    "key",
    "token",
    "secret",
    "password",
    "cookie",
    "credential",
    "signature",
];

/// Whether a header's value is a credential: the known ones, and any header whose name says
/// so (DECISIONS §25.6).
pub(crate) fn is_secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_HEADERS.contains(&lower.as_str()) || SECRET_NAME_PARTS.iter().any(|p| lower.contains(p))
}

/// What replaces a credential in any text Arbor keeps or shows.
pub(crate) const REDACTED: &str = "<redacted>";

/// Shorter values are not scrubbed: they would match ordinary words in error texts.
const MIN_SECRET_LEN: usize = 6;

/// Every credential one request carries (secret header values, the token of a `Bearer`
/// value, secret query parameters), to scrub from error texts before they leave the provider
/// layer: a proxy or local server that echoes request headers must not put them in a session.
#[derive(Default)]
pub(crate) struct Secrets(Vec<String>);

impl Secrets {
    pub(crate) fn of(request: &PreparedRequest) -> Secrets {
        let mut found: Vec<String> = Vec::new();
        let mut add = |v: &str| {
            let v = v.trim();
            if v.len() >= MIN_SECRET_LEN && !found.iter().any(|f| f == v) {
                found.push(v.to_string());
            }
        };
        for (name, value) in &request.headers {
            if is_secret_header(name) {
                add(value);
                if let Some((_, token)) = value.split_once(' ') {
                    add(token);
                }
            }
        }
        if let Some((_, query)) = request.url.split_once('?') {
            for pair in query.split('&') {
                if let Some((k, v)) = pair.split_once('=') {
                    if is_secret_header(k) {
                        add(v);
                    }
                }
            }
        }
        // Longest first, so a whole `Bearer <token>` goes before its token alone.
        found.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Secrets(found)
    }

    /// `text` with every credential replaced by `<redacted>`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.0 {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }
}

impl std::fmt::Debug for PreparedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| {
                let shown = if is_secret_header(n) {
                    REDACTED
                } else {
                    v.as_str()
                };
                (n.as_str(), shown)
            })
            .collect();
        f.debug_struct("PreparedRequest")
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &self.body)
            .finish()
    }
}

impl PreparedRequest {
    /// Header value by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// API key from the options, else the provider's environment variable. Callers holding a
/// `models::ModelRegistry` pass `registry.api_key(..)` (models.json keys) as `options.api_key`.
pub(crate) fn resolve_api_key(
    model: &Model,
    options: &StreamOptions,
) -> Result<Option<String>, AiError> {
    if let Some(key) = options.api_key.as_ref().filter(|k| !k.is_empty()) {
        return Ok(Some(key.clone()));
    }
    if let Some(key) = env_api_key(&model.provider) {
        return Ok(Some(key));
    }
    // Local OpenAI-compatible servers (llama.cpp, vLLM, Ollama, LM Studio) usually need no key,
    // and a caller-supplied authorization header replaces the key.
    let has_auth_header = options
        .headers
        .iter()
        .any(|(n, v)| v.is_some() && is_secret_header(n));
    if has_auth_header || is_local_url(&model.base_url) || anthropic_auth_token(model).is_some() {
        return Ok(None);
    }
    Err(AiError::NoApiKey(model.provider.clone()))
}

/// The provider's key from the environment (pi's variable table in [`crate::models`]).
fn env_api_key(provider: &str) -> Option<String> {
    crate::models::env_api_key(provider).map(|k| k.expose().to_string())
}

/// `ANTHROPIC_AUTH_TOKEN`: a bearer token for Anthropic (gateways, proxies), used when no API
/// key is given; not an API key, so the key table skips it.
pub(crate) fn anthropic_auth_token(model: &Model) -> Option<String> {
    if model.api != "anthropic-messages" || model.provider != "anthropic" {
        return None;
    }
    std::env::var("ANTHROPIC_AUTH_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
}

fn is_local_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, p)| {
        if p.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "0.0.0.0")
}

/// Applies header overrides case-insensitively: a later value replaces an earlier header of the
/// same name; `None` removes it.
pub(crate) fn merge_headers(
    headers: &mut Vec<(String, String)>,
    overrides: impl IntoIterator<Item = (String, Option<String>)>,
) {
    for (name, value) in overrides {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        if let Some(value) = value {
            headers.push((name, value));
        }
    }
}

/// Headers a provider needs per request (DECISIONS §26.13): GitHub Copilot's `X-Initiator`
/// (`agent` unless the last message is the user's), `Openai-Intent` and, when a user message or
/// tool result carries an image, `Copilot-Vision-Request` (Chat Completions, Responses and
/// Anthropic, like pi); OpenCode's `x-opencode-session` (the session id) for provider
/// `opencode`/`opencode-go` or a base URL on `opencode.ai`.
pub(crate) fn provider_headers(
    model: &Model,
    transcript: &Transcript,
    options: &StreamOptions,
) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let copilot_api = matches!(
        model.api.as_str(),
        "openai-completions" | "openai-responses" | "anthropic-messages"
    );
    if model.provider == "github-copilot" && copilot_api {
        let facts = transcript.copilot;
        // pi reads the conversation without its system messages.
        let initiator = if facts.initiated_by_user {
            "user"
        } else {
            "agent"
        };
        out.push(("X-Initiator".to_string(), Some(initiator.to_string())));
        out.push((
            "Openai-Intent".to_string(),
            Some("conversation-edits".to_string()),
        ));
        if facts.has_images {
            out.push((
                "Copilot-Vision-Request".to_string(),
                Some("true".to_string()),
            ));
        }
    }
    if let Some(session) = &options.session_id {
        if is_opencode(model) {
            out.push(("x-opencode-session".to_string(), Some(session.clone())));
        }
    }
    out
}

fn is_opencode(model: &Model) -> bool {
    matches!(model.provider.as_str(), "opencode" | "opencode-go")
        || reqwest::Url::parse(&model.base_url)
            .ok()
            .is_some_and(|u| u.host_str() == Some("opencode.ai"))
}

/// Model headers, then the provider's per-request headers ([`provider_headers`]), then option
/// headers over `defaults`.
pub(crate) fn final_headers(
    mut defaults: Vec<(String, String)>,
    model: &Model,
    transcript: &Transcript,
    options: &StreamOptions,
) -> Vec<(String, String)> {
    if let Some(model_headers) = &model.headers {
        merge_headers(
            &mut defaults,
            model_headers.iter().map(|(k, v)| {
                let value = match v {
                    Value::Null => None,
                    Value::String(s) => Some(s.clone()),
                    other => Some(other.to_string()),
                };
                (k.clone(), value)
            }),
        );
    }
    merge_headers(&mut defaults, provider_headers(model, transcript, options));
    merge_headers(&mut defaults, options.headers.iter().cloned());
    defaults
}

pub(crate) fn user_agent() -> String {
    format!("arbor/{}", env!("CARGO_PKG_VERSION"))
}

/// `sessionId` truncated to 64 characters (prompt cache keys).
pub(crate) fn cache_key(session_id: &str) -> String {
    session_id.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_credentials() {
        let request = PreparedRequest {
            url: "https://x".into(),
            headers: vec![
                ("Authorization".into(), "Bearer sk-secret".into()),
                ("x-api-key".into(), "sk-ant-secret".into()),
                ("accept".into(), "text/event-stream".into()),
            ],
            body: Value::Null,
        };
        let text = format!("{request:?}");
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains("text/event-stream"));
    }

    #[test]
    fn local_urls() {
        assert!(is_local_url("http://127.0.0.1:8080/v1"));
        assert!(is_local_url("http://localhost/v1"));
        assert!(!is_local_url("https://api.openai.com/v1"));
    }
}
