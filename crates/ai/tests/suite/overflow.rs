//! Context-overflow detection on every error text the reference quotes, per provider, plus the
//! usage-based (silent and length-stop) cases and the throttling negatives.

use arbor_ai::overflow::*;
use arbor_ai::types::AssistantMessage;
use serde_json::json;

fn message(
    provider: &str,
    stop: &str,
    error: Option<&str>,
    input: u64,
    cache_read: u64,
    output: u64,
) -> AssistantMessage {
    let mut v = json!({
        "role": "assistant", "content": [], "api": "openai-completions", "provider": provider,
        "model": "m", "stopReason": stop, "timestamp": 1,
        "usage": {"input": input, "output": output, "cacheRead": cache_read, "cacheWrite": 0,
                  "totalTokens": input + output + cache_read,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    });
    if let Some(e) = error {
        v["errorMessage"] = json!(e);
    }
    serde_json::from_value(v).unwrap()
}

fn error(provider: &str, text: &str) -> AssistantMessage {
    message(provider, "error", Some(text), 0, 0, 0)
}

/// (provider, error text) pairs that are context overflows.
const OVERFLOWS: &[(&str, &str)] = &[
    ("anthropic", "prompt is too long: 213462 tokens > 200000 maximum"),
    ("anthropic", r#"400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#),
    ("anthropic", r#"413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#),
    ("zai", r#"{"code":"1261","message":"Prompt too long"}"#),
    ("zai-coding-cn", r#"{"code":"1261","message":"Prompt exceeds max length"}"#),
    ("amazon-bedrock", "Input is too long for requested model."),
    ("openai", "Your input exceeds the context window of this model"),
    ("openai", r#"400: {"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}"#),
    ("openai", "Requested token count exceeds the model's maximum context length of 131072 tokens"),
    ("litellm", "Error: 503 litellm.ServiceUnavailableError: litellm.MidStreamFallbackError: litellm.APIConnectionError: APIConnectionError: OpenAIException - Requested token count exceeds the model's maximum context length of 131072 tokens."),
    ("vllm", "Error: 400 Input length (265330) exceeds model's maximum context length (262144)."),
    ("litellm", "litellm.ContextWindowExceededError: litellm.BadRequestError: Context Window exceeded for given call."),
    ("google", "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)"),
    ("xai", "This model's maximum prompt length is 131072 but the request contains 537812 tokens"),
    ("groq", "Please reduce the length of the messages or completion"),
    ("openrouter", "This endpoint's maximum context length is 200000 tokens. However, you requested about 250000 tokens"),
    ("openrouter", "Provider returned error: Input length 131393 exceeds the maximum allowed input length of 131040 tokens."),
    ("together", "400 The input (516368 tokens) is longer than the model's context length (262144 tokens)."),
    ("llama.cpp", "the request exceeds the available context size, try increasing it"),
    ("lmstudio", "tokens to keep from the initial prompt is greater than the context length"),
    ("github-copilot", "prompt token count of 128500 exceeds the limit of 128000"),
    ("github-copilot", r#"github-copilot API error (413): {"message":"failed to parse request","code":""}"#),
    ("minimax", "invalid params, context window exceeds limit"),
    ("kimi-coding", "Your request exceeded model token limit: 262144 (requested: 300000)"),
    ("mistral", "Prompt contains 200 tokens ... too large for model with 100 maximum context length"),
    ("ds4", "400 Prompt has 256468 tokens, but the configured context size is 256000 tokens"),
    ("ds4", "Prompt has 5,958,968 tokens, but the configured context size is 256,000 tokens"),
    ("zai", "model_context_window_exceeded"),
    ("ollama", "400 `prompt too long; exceeded max context length by 100918 tokens`"),
    ("ollama", "400 prompt too long; exceeded context length by 12 tokens"),
    ("qwen-token-plan", "Range of input length should be [1, 100]"),
    ("custom", "context_length_exceeded"),
    ("custom", "CONTEXT LENGTH EXCEEDED"),
    ("custom", "too many tokens"),
    ("custom", "token limit exceeded"),
    ("custom", "413 Payload Too Large"),
    ("custom", "413: request entity too large"),
    ("custom", "413"),
    ("custom", "OpenAI API error (413): body too big"),
    ("cerebras", "400 status code (no body)"),
    ("cerebras", "413 status code (no body)"),
];

/// Texts that must not count as overflow.
const NOT_OVERFLOWS: &[(&str, &str)] = &[
    ("ollama", "500 `model runner crashed unexpectedly`"),
    (
        "amazon-bedrock",
        "Throttling error: Too many tokens, please wait before trying again.",
    ),
    (
        "amazon-bedrock",
        "Service unavailable: The service is temporarily unavailable.",
    ),
    (
        "openai",
        "Rate limit exceeded, please retry after 30 seconds.",
    ),
    ("openai", "Too many requests. Please slow down."),
    // A rate-limit text wins even when it also mentions an overflow code.
    (
        "openai",
        "rate limit: too many requests; context_length_exceeded",
    ),
    // The bodyless Cerebras form only counts for Cerebras.
    ("openai", "400 status code (no body)"),
    ("anthropic", "overloaded_error: Overloaded"),
    ("custom", "4130 items"),
    ("custom", "Error 500: 413 retries"),
];

#[test]
fn every_quoted_overflow_text_is_detected() {
    for (provider, text) in OVERFLOWS {
        assert!(
            is_context_overflow(&error(provider, text), None),
            "{provider}: {text}"
        );
        assert!(is_overflow_error_text(text, provider), "{provider}: {text}");
    }
}

#[test]
fn throttling_and_unrelated_errors_are_not_overflow() {
    for (provider, text) in NOT_OVERFLOWS {
        assert!(
            !is_context_overflow(&error(provider, text), Some(200_000)),
            "{provider}: {text}"
        );
    }
}

#[test]
fn every_overflow_pattern_has_a_positive_example() {
    // Guards against a pattern that can never match (e.g. a typo when porting).
    use regex_lite::Regex;
    for pattern in OVERFLOW_PATTERNS {
        let re = Regex::new(&format!("(?i){pattern}")).unwrap();
        assert!(
            OVERFLOWS.iter().any(|(_, text)| re.is_match(text)),
            "no example for {pattern}"
        );
    }
}

#[test]
fn only_error_messages_are_classified_by_text() {
    let stopped = message("anthropic", "stop", Some("prompt is too long"), 10, 0, 5);
    assert!(!is_context_overflow(&stopped, None));
    let aborted = message("anthropic", "aborted", Some("prompt is too long"), 10, 0, 5);
    assert!(!is_context_overflow(&aborted, Some(100)));
    let no_text = message("anthropic", "error", None, 10, 0, 5);
    assert!(!is_context_overflow(&no_text, Some(100)));
}

#[test]
fn silent_overflow_needs_the_context_window() {
    // z.ai: a successful answer whose input (with cache reads) exceeds the window.
    let m = message("zai", "stop", None, 150_000, 60_000, 100);
    assert!(is_context_overflow(&m, Some(200_000)));
    assert!(!is_context_overflow(&m, None));
    assert!(!is_context_overflow(&m, Some(0)), "0 means unknown");
    let exact = message("zai", "stop", None, 150_000, 50_000, 100);
    assert!(
        !is_context_overflow(&exact, Some(200_000)),
        "equal is not over"
    );
}

#[test]
fn length_stop_with_filled_window_and_no_output_is_overflow() {
    // Xiaomi MiMo truncates the input to the window and returns nothing.
    assert!(is_context_overflow(
        &message("xiaomi", "length", None, 58, 1_048_512, 0),
        Some(1_048_576)
    ));
    assert!(
        is_context_overflow(&message("xiaomi", "length", None, 99, 0, 0), Some(100)),
        "99 % is enough"
    );
    assert!(!is_context_overflow(
        &message("xiaomi", "length", None, 98, 0, 0),
        Some(100)
    ));
    assert!(!is_context_overflow(
        &message("xiaomi", "length", None, 1000, 0, 4096),
        Some(200_000)
    ));
    assert!(!is_context_overflow(
        &message("xiaomi", "length", None, 100, 0, 0),
        Some(200_000)
    ));
    assert!(!is_context_overflow(
        &message("xiaomi", "length", None, 200_000, 0, 0),
        None
    ));
}

#[test]
fn recoverable_length_is_a_length_stop_below_the_wanted_output() {
    let m = message("openai", "length", None, 1000, 0, 500);
    assert!(is_recoverable_length(&m, 4096));
    assert!(!is_recoverable_length(&m, 500));
    assert!(!is_recoverable_length(&m, 0));
    assert!(!is_recoverable_length(
        &message("openai", "stop", None, 1000, 0, 500),
        4096
    ));
}
