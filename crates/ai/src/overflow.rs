//! Recognising "the prompt no longer fits" from a finished assistant message.
//!
//! Providers report context overflow in many different words (and a few silently), so the
//! agent asks this module before deciding between compaction and an ordinary error. The
//! pattern list is pi-ai 1.6.0's (`utils/overflow.ts`), matched case-insensitively.

use std::sync::OnceLock;

use regex_lite::Regex;

use crate::types::{AssistantMessage, StopReason};

/// Error texts that mean "context too large", one per provider wording.
pub const OVERFLOW_PATTERNS: &[&str] = &[
    r"prompt (?:is )?too long",               // Anthropic, z.ai
    r"prompt exceeds max length",             // z.ai CN
    r"request_too_large",                     // Anthropic HTTP 413
    r"input is too long for requested model", // Amazon Bedrock
    r"exceeds the context window",            // OpenAI
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))", // LiteLLM / OpenAI-compatible
    r"context window exceeded",                // LiteLLM pre-call check
    r"input token count.*exceeds the maximum", // Google Gemini
    r"maximum prompt length is \d+",           // xAI
    r"reduce the length of the messages",      // Groq
    r"maximum context length is \d+ tokens",   // OpenRouter
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?", // OpenRouter/Poolside
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)", // Together
    r"exceeds the limit of \d+",               // GitHub Copilot
    r"exceeds the available context size",     // llama.cpp
    r"greater than the context length",        // LM Studio
    r"context window exceeds limit",           // MiniMax
    r"exceeded model token limit",             // Kimi For Coding
    r"too large for model with \d+ maximum context length", // Mistral
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?", // DS4
    r"model_context_window_exceeded",          // z.ai finish reason as text
    r"prompt too long; exceeded (?:max )?context length", // Ollama
    r"range of input length should be",        // DashScope / Qwen
    r"context[_ ]length[_ ]exceeded",          // generic
    r"too many tokens",                        // generic
    r"token limit exceeded",                   // generic
    r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))", // any HTTP 413
];

/// Texts that look like overflow but are throttling or outages (checked first).
pub const NON_OVERFLOW_PATTERNS: &[&str] = &[
    r"^(Throttling error|Service unavailable):",
    r"rate limit",
    r"too many requests",
];

/// Cerebras answers an oversized request with a bare 400/413 and no body.
pub const CEREBRAS_BODYLESS_OVERFLOW_PATTERN: &str =
    r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)";

struct Patterns {
    overflow: Vec<Regex>,
    non_overflow: Vec<Regex>,
    cerebras: Option<Regex>,
}

fn compile(patterns: &[&str]) -> Vec<Regex> {
    // The patterns are constants checked by the unit tests, so a failure cannot happen at
    // runtime; skipping instead of panicking keeps library code free of `expect`.
    patterns
        .iter()
        .filter_map(|p| Regex::new(&format!("(?i){p}")).ok())
        .collect()
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| Patterns {
        overflow: compile(OVERFLOW_PATTERNS),
        non_overflow: compile(NON_OVERFLOW_PATTERNS),
        cerebras: Regex::new(&format!("(?i){CEREBRAS_BODYLESS_OVERFLOW_PATTERN}")).ok(),
    })
}

/// Whether an error text from `provider` says the request exceeded the context.
pub fn is_overflow_error_text(error_message: &str, provider: &str) -> bool {
    let p = patterns();
    if p.non_overflow.iter().any(|r| r.is_match(error_message)) {
        return false;
    }
    if p.overflow.iter().any(|r| r.is_match(error_message)) {
        return true;
    }
    provider == "cerebras"
        && p.cerebras
            .as_ref()
            .is_some_and(|r| r.is_match(error_message))
}

/// Whether `message` shows a context overflow: an overflow error text, or (with the model's
/// `context_window`) a successful reply whose input exceeded the window (silent overflow), or
/// a `length` stop with no output and the input filling ≥ 99 % of the window (server-side
/// truncation).
pub fn is_context_overflow(message: &AssistantMessage, context_window: Option<u64>) -> bool {
    if message.stop_reason == StopReason::Error {
        if let Some(text) = message.error_message.as_deref() {
            if !text.is_empty() && is_overflow_error_text(text, &message.provider) {
                return true;
            }
        }
    }
    let Some(window) = context_window.filter(|w| *w > 0) else {
        return false;
    };
    let input = message.usage.input + message.usage.cache_read;
    match message.stop_reason {
        StopReason::Stop => input > window,
        StopReason::Length => message.usage.output == 0 && (input as f64) >= window as f64 * 0.99,
        _ => false,
    }
}

/// A `length` stop below the output limit the caller wanted: the context squeezed the answer,
/// so one compact-and-retry may help. `desired_max_output` is the limit before any clamping.
pub fn is_recoverable_length(message: &AssistantMessage, desired_max_output: u64) -> bool {
    message.stop_reason == StopReason::Length
        && desired_max_output > 0
        && message.usage.output < desired_max_output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        let p = patterns();
        assert_eq!(p.overflow.len(), OVERFLOW_PATTERNS.len());
        assert_eq!(p.non_overflow.len(), NON_OVERFLOW_PATTERNS.len());
        assert!(p.cerebras.is_some());
    }
}
