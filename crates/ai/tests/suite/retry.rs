//! Transient-error classification and backoff arithmetic.

use std::time::Duration;

use arbor_ai::retry::*;
use arbor_ai::types::AssistantMessage;
use serde_json::json;

fn error(text: &str) -> AssistantMessage {
    serde_json::from_value(json!({
        "role": "assistant", "content": [], "api": "anthropic-messages", "provider": "anthropic",
        "model": "m", "stopReason": "error", "errorMessage": text, "timestamp": 1,
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    }))
    .unwrap()
}

const RETRYABLE: &[&str] = &[
    r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    "server_busy",
    "Our servers are currently busy",
    "We are currently experiencing high demand",
    "The model is at capacity",
    "Rate limit reached for requests",
    "ratelimit",
    "429 Too Many Requests",
    "429",
    "Error: 500",
    "status 502 bad gateway",
    "(503)",
    "504 Gateway Timeout",
    "520",
    "HTTP 524",
    "The service is temporarily unavailable",
    "Service Unavailable",
    "Internal server error",
    "internal_error",
    "Provider returned error",
    "The upstream provider returned an error",
    "exceeded request buffer limit while retrying upstream",
    "unable to forward upstream response",
    "upstream request failed",
    "upstream_stream_read_error",
    "the stream was interrupted",
    "http2 stream failed",
    "HTTP/2 stream failed",
    "Network error",
    "Connection error.: connect ECONNREFUSED 127.0.0.1:443 (ECONNREFUSED)",
    "connection refused",
    "Connection lost",
    r#"{"type":"error","error":{"type":"api_error","message":"Connection closed."}}"#,
    "other side closed",
    "TypeError: fetch failed",
    "request to https://oauth2.googleapis.com/token failed, reason: ",
    "getaddrinfo EAI_AGAIN api.example.com",
    "read ECONNRESET",
    "write EPIPE",
    "connect ETIMEDOUT 1.2.3.4:443",
    "ECONNABORTED",
    "connection reset by peer",
    "ENOTFOUND",
    "upstream connect error or disconnect/reset before headers",
    "socket hang up",
    "The socket connection was closed unexpectedly",
    "Request timed out",
    "request time out",
    "timeout",
    "terminated",
    "WebSocket closed",
    "websocket error",
    "Responses websocket connection limit reached",
    "websocket_connection_limit_reached",
    "Anthropic stream ended without a stop reason",
    "Anthropic stream ended before message_stop",
    "stream ended before a terminal response event",
    "http2 request did not get a response",
    "stream disconnected before completion: stream closed before response.completed",
    "Claude Code's stream from Anthropic was cut short after the reply had begun",
    "pending stream has been canceled",
    "An error occurred. You can retry your request.",
    "Please try your request again",
    "please retry your request",
    "ResourceExhausted: out of capacity",
    "subscription_sharing_usage_unavailable",
    "subscription_sharing_user_unavailable",
];

const NOT_RETRYABLE: &[&str] = &[
    "GoUsageLimitError: weekly limit",
    "FreeUsageLimitError",
    "Monthly usage limit reached",
    "Enable available balance usage",
    r#"429 {"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}"#,
    "429 out of budget",
    "429 Quota exceeded for model",
    "429 check your billing details",
    "subscription_sharing_usage_limit_exceeded",
    "subscription_sharing_workplace_individual_usage_limit_exceeded",
    r#"429 {"error":{"code":"1308","message":"Usage limit reached"}}"#,
    r#"429 {"code": 1308}"#,
    // Not transient at all.
    "400 invalid_request_error: tools.0.name is invalid",
    "401 Unauthorized",
    // Status codes inside longer numbers or words do not count.
    "request id req_5003abc failed validation",
    "wrote 15000 bytes",
    "x429",
    "4290",
    "ECONNRESETX",
    "MY_ECONNRESET",
    "",
];

#[test]
fn transient_errors_are_retryable() {
    for text in RETRYABLE {
        assert!(is_retryable_error_text(text), "should retry: {text}");
        assert!(
            is_retryable_assistant_error(&error(text)),
            "should retry: {text}"
        );
    }
}

#[test]
fn a_delay_above_the_cap_matches_the_classifier_but_is_not_retried() {
    // pi-ai's classifier takes it as transient ("retry delay"); the agent does not retry what
    // the user's cap refused (DECISIONS §29.3).
    let text = "Server requested 120s retry delay (max: 60s). 429 rate limited";
    assert!(is_retryable_error_text(text));
    assert!(!is_retryable_assistant_error(&error(text)));
}

#[test]
fn quota_limits_and_permanent_errors_are_not_retryable() {
    for text in NOT_RETRYABLE {
        assert!(!is_retryable_error_text(text), "should not retry: {text}");
    }
}

#[test]
fn quota_code_1308_needs_a_word_boundary() {
    // "13080" is another code: the retryable 429 decides.
    assert!(is_retryable_error_text(r#"429 {"code":"13080"}"#));
    assert!(!is_retryable_error_text(r#"429 {"code":"1308"}"#));
}

#[test]
fn standalone_status_found_after_a_rejected_overlapping_match() {
    // The first "500" is part of "5003"; a later standalone one still counts.
    assert!(is_retryable_error_text("id 5003 then 500"));
    assert!(is_retryable_error_text("ECONNRESET_x ECONNRESET"));
}

#[test]
fn only_error_stops_are_retried() {
    let mut m = error("overloaded");
    m.stop_reason = arbor_ai::types::StopReason::Aborted;
    assert!(!is_retryable_assistant_error(&m));
    m.stop_reason = arbor_ai::types::StopReason::Stop;
    assert!(!is_retryable_assistant_error(&m));
}

#[test]
fn turn_backoff_doubles_and_caps() {
    let policy = RetryPolicy::default();
    assert_eq!(policy.max_retries, 3);
    assert_eq!(retry_delay_ms(&policy, 1), 2_000);
    assert_eq!(retry_delay_ms(&policy, 2), 4_000);
    assert_eq!(retry_delay_ms(&policy, 3), 8_000);
    assert_eq!(retry_delay_ms(&policy, 6), 60_000, "capped at 60 s");
    assert_eq!(
        retry_delay_ms(&policy, 200),
        60_000,
        "no overflow on huge attempts"
    );
    let uncapped = policy.clone();
    assert_eq!(
        retry_delay_ms(&uncapped, 10),
        60_000,
        "None means the default cap"
    );
    let tight = policy.with_max_agent_delay_ms(5_000);
    assert_eq!(retry_delay_ms(&tight, 3), 5_000);
}

#[test]
fn next_retry_follows_policy_and_classification() {
    let policy = RetryPolicy::default();
    let transient = error("503 Service Unavailable");
    assert_eq!(
        next_retry(&policy, 0, &transient),
        RetryDecision::RetryAfter {
            attempt: 1,
            delay: Duration::from_secs(2)
        }
    );
    assert_eq!(
        next_retry(&policy, 2, &transient),
        RetryDecision::RetryAfter {
            attempt: 3,
            delay: Duration::from_secs(8)
        }
    );
    assert_eq!(
        next_retry(&policy, 3, &transient),
        RetryDecision::Finish,
        "budget exhausted"
    );
    assert_eq!(
        next_retry(&policy, 0, &error("insufficient_quota")),
        RetryDecision::Finish
    );
    let disabled = RetryPolicy::default().with_enabled(false);
    assert_eq!(next_retry(&disabled, 0, &transient), RetryDecision::Finish);
}

#[test]
fn request_level_retryable_statuses() {
    assert!(is_retryable_request_failure(None, None), "connection error");
    for s in [408, 409, 429, 500, 502, 503, 504, 529] {
        assert!(is_retryable_request_failure(Some(s), None), "{s}");
    }
    for s in [400, 401, 403, 404, 413, 422] {
        assert!(!is_retryable_request_failure(Some(s), None), "{s}");
    }
    assert!(
        is_retryable_request_failure(Some(400), Some("true")),
        "header forces retry"
    );
    assert!(
        !is_retryable_request_failure(Some(503), Some("false")),
        "header forbids retry"
    );
    assert!(
        is_retryable_request_failure(Some(503), Some("maybe")),
        "other values ignored"
    );
}

#[test]
fn request_backoff_is_exponential_with_jitter() {
    let none = RetryAfterHeaders::default();
    let d = |i, jitter| request_retry_delay(i, &none, None, 0, jitter, "x").unwrap();
    assert_eq!(d(0, 0.0), Duration::from_millis(500));
    assert_eq!(d(1, 0.0), Duration::from_secs(1));
    assert_eq!(d(4, 0.0), Duration::from_secs(8));
    assert_eq!(d(10, 0.0), Duration::from_secs(8), "capped at 8 s");
    assert_eq!(
        d(0, 0.5),
        Duration::from_millis(437) + Duration::from_micros(500),
        "−12.5 %"
    );
    assert!(d(3, 0.999_999) > Duration::from_secs(3), "at most −25 %");
}

#[test]
fn server_requested_delays_win_and_are_capped() {
    let now = 1_700_000_000_000;
    let ms = RetryAfterHeaders {
        retry_after_ms: Some("1500"),
        retry_after: Some("30"),
    };
    assert_eq!(
        request_retry_delay(0, &ms, None, now, 0.0, "x").unwrap(),
        Duration::from_millis(1_500)
    );
    let secs = RetryAfterHeaders {
        retry_after_ms: None,
        retry_after: Some("7"),
    };
    assert_eq!(
        request_retry_delay(0, &secs, None, now, 0.9, "x").unwrap(),
        Duration::from_secs(7)
    );
    let bad_ms = RetryAfterHeaders {
        retry_after_ms: Some("soon"),
        retry_after: Some("2"),
    };
    assert_eq!(
        request_retry_delay(0, &bad_ms, None, now, 0.0, "x").unwrap(),
        Duration::from_secs(2)
    );

    // An HTTP date relative to now.
    let date = RetryAfterHeaders {
        retry_after_ms: None,
        retry_after: Some("Tue, 14 Nov 2023 22:13:30 GMT"),
    };
    let now_for_date = parse_http_date_ms("Tue, 14 Nov 2023 22:13:20 GMT").unwrap();
    assert_eq!(
        request_retry_delay(0, &date, None, now_for_date, 0.0, "x").unwrap(),
        Duration::from_secs(10)
    );

    // Above the cap: an error with pi's wording, original message appended.
    let long = RetryAfterHeaders {
        retry_after_ms: None,
        retry_after: Some("120"),
    };
    let err = request_retry_delay(0, &long, None, now, 0.0, "429 rate limited").unwrap_err();
    assert_eq!(
        err.message,
        "Server requested 120s retry delay (max: 60s). 429 rate limited"
    );
    assert!(
        is_retryable_error_text(&err.message),
        "the classifier takes it as transient (pi-ai's pattern)"
    );
    assert!(
        !is_retryable_assistant_error(&error(&err.message)),
        "the agent does not retry it (DECISIONS §29.3)"
    );
    // 0 disables the cap.
    assert_eq!(
        request_retry_delay(0, &long, Some(0), now, 0.0, "x").unwrap(),
        Duration::from_secs(120)
    );
    let custom = request_retry_delay(0, &long, Some(90_500), now, 0.0, "m").unwrap_err();
    assert_eq!(
        custom.message,
        "Server requested 120s retry delay (max: 91s). m"
    );
}

#[test]
fn http_dates() {
    assert_eq!(parse_http_date_ms("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(
        parse_http_date_ms("Sun, 06 Nov 1994 08:49:37 GMT"),
        Some(784_111_777_000)
    );
    assert_eq!(
        parse_http_date_ms("Thu, 29 Feb 2024 12:00:00 GMT"),
        Some(1_709_208_000_000)
    );
    // RFC 850 and asctime, which RFC 9110 also requires recipients to accept.
    assert_eq!(
        parse_http_date_ms("Sunday, 06-Nov-94 08:49:37 GMT"),
        parse_http_date_ms("Sun, 06 Nov 1994 08:49:37 GMT")
    );
    assert_eq!(
        parse_http_date_ms("Sun Nov  6 08:49:37 1994"),
        Some(784_111_777_000)
    );
    assert_eq!(parse_http_date_ms("not a date"), None);
    assert_eq!(parse_http_date_ms("Sun, 06 Foo 1994 08:49:37 GMT"), None);
}

// ----- the final failure of a request (DECISIONS §29.3) --------------------------------------

#[test]
fn a_final_failure_notes_the_servers_wait_or_refuses_one_above_the_cap() {
    let secs = |v| RetryAfterHeaders {
        retry_after_ms: None,
        retry_after: Some(v),
    };
    let noted = final_request_failure("429 slow down".into(), true, &secs("30"), None, 0);
    assert_eq!(noted, "429 slow down (the server asks to retry in 30 s)");
    assert_eq!(
        requested_retry_delay(&error(&noted)),
        Some(Duration::from_secs(30))
    );
    assert!(is_retryable_assistant_error(&error(&noted)));
    let ms = RetryAfterHeaders {
        retry_after_ms: Some("1500"),
        retry_after: None,
    };
    let noted = final_request_failure("503 busy".into(), true, &ms, None, 0);
    assert_eq!(
        requested_retry_delay(&error(&noted)),
        Some(Duration::from_millis(1500))
    );
    // An HTTP date, relative to now.
    let date = final_request_failure(
        "503 busy".into(),
        true,
        &secs("Thu, 01 Jan 1970 00:00:10 GMT"),
        None,
        4_000,
    );
    assert_eq!(
        requested_retry_delay(&error(&date)),
        Some(Duration::from_secs(6))
    );

    // Above the cap: pi-ai's text, and the agent does not retry it.
    let long = final_request_failure("429 slow down".into(), true, &secs("3600"), None, 0);
    assert_eq!(
        long,
        "Server requested 3600s retry delay (max: 60s). 429 slow down"
    );
    assert!(is_retry_delay_above_cap(&long));
    assert!(!is_retryable_assistant_error(&error(&long)));
    assert_eq!(requested_retry_delay(&error(&long)), None);
    let custom = final_request_failure("429 x".into(), true, &secs("2"), Some(1_000), 0);
    assert!(
        custom.starts_with("Server requested 2s retry delay (max: 1s)."),
        "{custom}"
    );
    // 0 = no cap.
    let none = final_request_failure("429 x".into(), true, &secs("3600"), Some(0), 0);
    assert_eq!(
        requested_retry_delay(&error(&none)),
        Some(Duration::from_secs(3600))
    );

    // Not transient, or no header: the text is the provider's.
    assert_eq!(
        final_request_failure("400 bad".into(), false, &secs("5"), None, 0),
        "400 bad"
    );
    assert_eq!(
        final_request_failure("500 x".into(), true, &RetryAfterHeaders::default(), None, 0),
        "500 x"
    );
    assert_eq!(requested_retry_delay(&error("500 x")), None);
    assert!(!is_retry_delay_above_cap("Server requested a coffee"));
}
