//! Deciding whether a failure is worth retrying, and how long to wait.
//!
//! Two layers, as in pi-ai 1.6.0:
//! * request level (`utils/provider-retry.ts`): an HTTP request that failed before streaming
//!   began is retried on connection errors and 408/409/429/5xx, honouring `retry-after(-ms)`;
//! * turn level (`utils/retry.ts`): a finished assistant message with `stopReason: "error"`
//!   is classified by its text, and the agent restarts the turn with exponential backoff.
//!
//! Everything here is a pure function; the sleeping and re-sending belong to the callers.

use std::sync::OnceLock;
use std::time::Duration;

use regex_lite::Regex;

use crate::types::{AssistantMessage, StopReason};

// ---------------------------------------------------------------------------------------------
// Turn level
// ---------------------------------------------------------------------------------------------

/// Account or quota limits: retrying soon cannot help (checked before the retryable set).
pub const NON_RETRYABLE_PATTERNS: &[&str] = &[
    "GoUsageLimitError",
    "FreeUsageLimitError",
    "Monthly usage limit reached",
    "available balance",
    "insufficient_quota",
    "out of budget",
    "quota exceeded",
    "billing",
    "subscription_sharing_usage_limit_exceeded",
    "subscription_sharing_workplace_individual_usage_limit_exceeded",
    // z.ai plan limit; the "not followed by a digit" part is checked in code.
    r#""code"\s*:\s*"?1308"#,
];

/// Transient provider, gateway and transport failures.
pub const RETRYABLE_PATTERNS: &[&str] = &[
    "overloaded",
    "server_busy",
    "servers are currently busy",
    "currently experiencing high demand",
    "model is at capacity",
    "rate.?limit",
    "too many requests",
    // Standalone HTTP statuses: checked in code (not part of a longer word or number).
    r"service.?(?:is.?)?(?:temporarily.?)?unavailable",
    "server.?error",
    "internal.?error",
    "provider.?returned.?(?:an.?)?error",
    "exceeded request buffer limit while retrying upstream",
    "unable to forward upstream",
    "upstream.?request.?failed",
    "upstream_stream_read_error",
    "stream was interrupted",
    "http/?2 stream failed",
    "network.?error",
    "connection.?error",
    "connection.?refused",
    "connection.?lost",
    "connection.?closed",
    "other side closed",
    "fetch failed",
    r"request to \S+ failed, reason:",
    "getaddrinfo",
    // Bare socket error codes: checked in code (not part of a longer identifier).
    "connection reset by peer",
    "ENOTFOUND",
    "EAI_AGAIN",
    "upstream.?connect",
    "reset before headers",
    "socket hang up",
    "socket connection was closed",
    "timed? out",
    "timeout",
    "terminated",
    "websocket.?closed",
    "websocket.?error",
    "websocket.?connection.?limit.?reached",
    "ended without",
    "stream ended before message_stop",
    "stream ended before a terminal response event",
    "http2 request did not get a response",
    "stream disconnected before completion",
    "cut short after the reply had begun",
    "pending stream has been canceled",
    "retry delay",
    "you can retry your request",
    "try your request again",
    "please retry your request",
    "ResourceExhausted",
    "subscription_sharing_usage_unavailable",
    "subscription_sharing_user_unavailable",
];

/// HTTP statuses that count as transient when they stand alone in an error text.
pub const RETRYABLE_STATUS_WORDS: &str = "429|500|502|503|504|520|524";
/// Socket error codes that count as transient when they stand alone in an error text.
pub const RETRYABLE_SOCKET_CODES: &str = "ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE";

struct Classifier {
    non_retryable: Regex,
    quota_1308: Regex,
    retryable: Regex,
    status: Regex,
    socket: Regex,
}

fn classifier() -> Option<&'static Classifier> {
    static C: OnceLock<Option<Classifier>> = OnceLock::new();
    C.get_or_init(|| {
        let join = |p: &[&str]| format!("(?i){}", p.join("|"));
        let plain_non_retryable = &NON_RETRYABLE_PATTERNS[..NON_RETRYABLE_PATTERNS.len() - 1];
        Some(Classifier {
            non_retryable: Regex::new(&join(plain_non_retryable)).ok()?,
            quota_1308: Regex::new(&format!(
                "(?i){}",
                NON_RETRYABLE_PATTERNS[NON_RETRYABLE_PATTERNS.len() - 1]
            ))
            .ok()?,
            retryable: Regex::new(&join(RETRYABLE_PATTERNS)).ok()?,
            status: Regex::new(&format!("(?i){RETRYABLE_STATUS_WORDS}")).ok()?,
            socket: Regex::new(&format!("(?i){RETRYABLE_SOCKET_CODES}")).ok()?,
        })
    })
    .as_ref()
}

/// Whether `re` matches somewhere in `text` with neither neighbour accepted by `is_word`
/// (a hand-written lookbehind/lookahead, which `regex-lite` lacks). Every start position is
/// tried, so a rejected match does not hide an overlapping accepted one.
fn matches_standalone(re: &Regex, text: &str, is_word: impl Fn(char) -> bool) -> bool {
    let mut start = 0;
    while start <= text.len() {
        let Some(m) = re.find_at(text, start) else {
            return false;
        };
        let before_ok = text[..m.start()]
            .chars()
            .next_back()
            .is_none_or(|c| !is_word(c));
        let after_ok = text[m.end()..].chars().next().is_none_or(|c| !is_word(c));
        if before_ok && after_ok {
            return true;
        }
        // Step one character past the start of this match and search again.
        start = m.start() + text[m.start()..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Whether `re` matches with no ASCII digit right after the match.
fn matches_not_followed_by_digit(re: &Regex, text: &str) -> bool {
    re.find_iter(text).any(|m| {
        !text[m.end()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

fn is_alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_alnum_or_underscore(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether an error text names a quota, budget or billing limit (never retried).
pub fn is_non_retryable_error_text(text: &str) -> bool {
    let Some(c) = classifier() else { return false };
    c.non_retryable.is_match(text) || matches_not_followed_by_digit(&c.quota_1308, text)
}

/// Whether an error text looks like a transient failure (and not like a quota limit).
pub fn is_retryable_error_text(text: &str) -> bool {
    let Some(c) = classifier() else { return false };
    if is_non_retryable_error_text(text) {
        return false;
    }
    c.retryable.is_match(text)
        || matches_standalone(&c.status, text, is_alnum)
        || matches_standalone(&c.socket, text, is_alnum_or_underscore)
}

/// Whether the agent should restart the turn that produced `message`. Context overflow is
/// the caller's business (compaction) and must be checked first. Unlike pi, a server-requested
/// delay above the cap is not retried (DECISIONS §29.3).
pub fn is_retryable_assistant_error(message: &AssistantMessage) -> bool {
    message.stop_reason == StopReason::Error
        && message.error_message.as_deref().is_some_and(|t| {
            !t.is_empty() && !is_retry_delay_above_cap(t) && is_retryable_error_text(t)
        })
}

/// Default cap of one turn-level backoff.
pub const DEFAULT_MAX_AGENT_RETRY_DELAY_MS: u64 = 60_000;

/// Turn-level retry settings (the coding agent's `settings.retry`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Whether transient failures are retried at all.
    pub enabled: bool,
    /// Retries after the first attempt (0 = none).
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each further one.
    pub base_delay_ms: u64,
    /// Cap of one delay; `None` = [`DEFAULT_MAX_AGENT_RETRY_DELAY_MS`].
    pub max_agent_delay_ms: Option<u64>,
}

crate::setters::with_setters!(RetryPolicy {
    val enabled => with_enabled: bool,
    val max_retries => with_max_retries: u32,
    val base_delay_ms => with_base_delay_ms: u64,
    opt max_agent_delay_ms => with_max_agent_delay_ms: u64,
});

impl Default for RetryPolicy {
    /// The coding agent's defaults: on, 3 retries, 2 s base, 60 s cap.
    fn default() -> Self {
        Self {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2_000,
            max_agent_delay_ms: Some(DEFAULT_MAX_AGENT_RETRY_DELAY_MS),
        }
    }
}

/// Delay before retry number `attempt` (1-based): `base · 2^(attempt−1)`, capped.
pub fn retry_delay_ms(policy: &RetryPolicy, attempt: u32) -> u64 {
    let exponent = attempt.saturating_sub(1);
    let factor = 1u64.checked_shl(exponent).unwrap_or(u64::MAX);
    let delay = policy.base_delay_ms.saturating_mul(factor);
    delay.min(
        policy
            .max_agent_delay_ms
            .unwrap_or(DEFAULT_MAX_AGENT_RETRY_DELAY_MS),
    )
}

/// What the turn-level loop should do after an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryDecision {
    /// Keep this message (success, abort, permanent error or no retries left).
    Finish,
    /// Wait, then run attempt number `attempt` (1-based retry count).
    RetryAfter {
        /// The retry's number (1-based).
        attempt: u32,
        /// How long to wait first.
        delay: Duration,
    },
}

/// Decides the next step after `retries_done` retries produced `message`.
pub fn next_retry(
    policy: &RetryPolicy,
    retries_done: u32,
    message: &AssistantMessage,
) -> RetryDecision {
    let max = if policy.enabled {
        policy.max_retries
    } else {
        0
    };
    if message.stop_reason != StopReason::Error
        || retries_done >= max
        || !is_retryable_assistant_error(message)
    {
        return RetryDecision::Finish;
    }
    let attempt = retries_done + 1;
    RetryDecision::RetryAfter {
        attempt,
        delay: Duration::from_millis(retry_delay_ms(policy, attempt)),
    }
}

// ---------------------------------------------------------------------------------------------
// Request level
// ---------------------------------------------------------------------------------------------

/// Default cap on a server-requested delay; 0 disables the cap.
pub const DEFAULT_MAX_RETRY_DELAY_MS: u64 = 60_000;

/// Whether a failed HTTP request may be re-sent. `status` is `None` for connection errors;
/// `x_should_retry` is the response header of that name, which overrides everything.
pub fn is_retryable_request_failure(status: Option<u16>, x_should_retry: Option<&str>) -> bool {
    match x_should_retry {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    match status {
        None => true,
        Some(s) => s == 408 || s == 409 || s == 429 || s >= 500,
    }
}

/// The rate-limit headers that steer a request retry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetryAfterHeaders<'a> {
    /// `retry-after-ms`: milliseconds as a float.
    pub retry_after_ms: Option<&'a str>,
    /// `retry-after`: seconds, or an HTTP date.
    pub retry_after: Option<&'a str>,
}

/// A server asked for a longer wait than the caller allows; the request fails at once.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryDelayTooLong {
    /// The wait the server asked for, in milliseconds.
    pub requested_ms: f64,
    /// The longest wait the caller allows, in milliseconds.
    pub max_ms: u64,
    /// `Server requested <s>s retry delay (max: <s>s). <original message>`
    pub message: String,
}

/// Delay before re-sending a failed request (0-based `retry_index`).
///
/// A server-requested delay (`retry-after-ms`, else `retry-after` as seconds or an HTTP date
/// relative to `now_unix_ms`) wins; above `max_retry_delay_ms` (default 60 s, 0 = no cap) it is
/// an error carrying `provider_message`. Otherwise `min(0.5·2^i, 8)` seconds, reduced by up to
/// 25 % through `jitter` ∈ [0, 1) (pass a random number; tests pass a fixed one).
pub fn request_retry_delay(
    retry_index: u32,
    headers: &RetryAfterHeaders<'_>,
    max_retry_delay_ms: Option<u64>,
    now_unix_ms: i64,
    jitter: f64,
    provider_message: &str,
) -> Result<Duration, RetryDelayTooLong> {
    if let Some(ms) = server_delay_ms(headers, now_unix_ms) {
        check_server_delay(ms, max_retry_delay_ms, provider_message)?;
        return Ok(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    let exponential = (0.5 * 2f64.powi(i32::try_from(retry_index).unwrap_or(i32::MAX))).min(8.0);
    let factor = 1.0 - jitter.clamp(0.0, 1.0) * 0.25;
    Ok(Duration::from_secs_f64(exponential * factor))
}

/// The delay a server asked for (`retry-after-ms`, else `retry-after` as seconds or an HTTP date
/// relative to `now_unix_ms`), in milliseconds.
pub fn server_delay_ms(headers: &RetryAfterHeaders<'_>, now_unix_ms: i64) -> Option<f64> {
    headers
        .retry_after_ms
        .and_then(parse_js_float)
        .or_else(|| {
            let value = headers.retry_after?;
            match parse_js_float(value) {
                Some(seconds) => Some(seconds * 1000.0),
                None => parse_http_date_ms(value).map(|at| (at - now_unix_ms) as f64),
            }
        })
        .filter(|v| v.is_finite())
}

/// Fails a server-requested delay above `max_retry_delay_ms` (default 60 s, 0 = no cap).
fn check_server_delay(
    ms: f64,
    max_retry_delay_ms: Option<u64>,
    provider_message: &str,
) -> Result<(), RetryDelayTooLong> {
    let max = max_retry_delay_ms.unwrap_or(DEFAULT_MAX_RETRY_DELAY_MS);
    if max > 0 && ms > max as f64 {
        return Err(RetryDelayTooLong {
            requested_ms: ms,
            max_ms: max,
            message: format!(
                "{TOO_LONG_PREFIX}{}s retry delay (max: {}s). {provider_message}",
                (ms / 1000.0).ceil(),
                (max as f64 / 1000.0).ceil()
            ),
        });
    }
    Ok(())
}

/// How the error text of a server-requested delay above the cap begins (pi-ai's words).
const TOO_LONG_PREFIX: &str = "Server requested ";

/// How the error text of a transient failure ends when the server said how long to wait; the
/// agent's retry reads it back ([`requested_retry_delay`], DECISIONS §29.3).
const WAIT_NOTE_PREFIX: &str = " (the server asks to retry in ";
const WAIT_NOTE_SUFFIX: &str = " s)";

/// The error text of a request that failed for good after a transient failure (`retryable`):
/// a server-requested delay within `max_retry_delay_ms` is noted at the end of the text, one
/// above it turns the text into pi-ai's "Server requested …s retry delay (max: …s)" error,
/// which no retry repeats (DECISIONS §29.3).
pub fn final_request_failure(
    message: String,
    retryable: bool,
    headers: &RetryAfterHeaders<'_>,
    max_retry_delay_ms: Option<u64>,
    now_unix_ms: i64,
) -> String {
    if !retryable {
        return message;
    }
    let Some(ms) = server_delay_ms(headers, now_unix_ms) else {
        return message;
    };
    match check_server_delay(ms, max_retry_delay_ms, &message) {
        Err(too_long) => too_long.message,
        Ok(()) => {
            let seconds = (ms.max(0.0) / 1000.0 * 1000.0).round() / 1000.0;
            format!("{message}{WAIT_NOTE_PREFIX}{seconds}{WAIT_NOTE_SUFFIX}")
        }
    }
}

/// The wait a failed answer's server asked for, as [`final_request_failure`] noted it.
pub fn requested_retry_delay(message: &AssistantMessage) -> Option<Duration> {
    let text = message.error_message.as_deref()?;
    let rest = text.strip_suffix(WAIT_NOTE_SUFFIX)?;
    let at = rest.rfind(WAIT_NOTE_PREFIX)?;
    let seconds: f64 = rest[at + WAIT_NOTE_PREFIX.len()..].parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// Whether an error text is the failure of a server-requested delay above the cap: waiting is
/// what the server asked for and the user refused, so no retry repeats it (DECISIONS §29.3).
pub fn is_retry_delay_above_cap(text: &str) -> bool {
    text.strip_prefix(TOO_LONG_PREFIX).is_some_and(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with("s retry delay (max: ")
    })
}

/// `Number.parseFloat`: the longest numeric prefix after leading whitespace, or `None`.
fn parse_js_float(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let bytes = s.as_bytes();
    let mut end = 0;
    let mut seen_digit = false;
    let mut seen_dot = false;
    if end < bytes.len() && (bytes[end] == b'+' || bytes[end] == b'-') {
        end += 1;
    }
    while end < bytes.len() {
        match bytes[end] {
            b'0'..=b'9' => seen_digit = true,
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        end += 1;
    }
    if !seen_digit {
        return s.starts_with("Infinity").then_some(f64::INFINITY);
    }
    // Optional exponent, only if complete.
    let mut exp_end = end;
    if exp_end < bytes.len() && (bytes[exp_end] == b'e' || bytes[exp_end] == b'E') {
        exp_end += 1;
        if exp_end < bytes.len() && (bytes[exp_end] == b'+' || bytes[exp_end] == b'-') {
            exp_end += 1;
        }
        let digits_start = exp_end;
        while exp_end < bytes.len() && bytes[exp_end].is_ascii_digit() {
            exp_end += 1;
        }
        if exp_end > digits_start {
            end = exp_end;
        }
    }
    s[..end].parse().ok()
}

/// Parses an HTTP date in any of the three forms RFC 9110 §5.6.7 requires recipients to accept
/// (IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`,
/// asctime `Sun Nov  6 08:49:37 1994`) into Unix milliseconds.
pub fn parse_http_date_ms(s: &str) -> Option<i64> {
    let at = httpdate::parse_http_date(s.trim()).ok()?;
    let since = at.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}
