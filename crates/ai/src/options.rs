//! Options of one model call: provider-native ([`StreamOptions`]) and unified
//! ([`SimpleStreamOptions`]). Plain data, so that layers without an HTTP client (the agent,
//! the faux provider) can build and pass them.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::setters::with_setters;
pub use crate::thinking::ThinkingBudgets;
use crate::types::ThinkingLevel;

/// How long provider-side prompt caches should live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheRetention {
    /// No cache markers / cache keys at all.
    None,
    /// The provider's default (Anthropic: 5 minutes).
    Short,
    /// Long retention (Anthropic `ttl: "1h"`, OpenAI `prompt_cache_retention: "24h"`).
    Long,
}

/// Anthropic-specific options of [`stream`](crate::stream::stream).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AnthropicOptions {
    /// Sends `thinking: {type: "enabled"}` (or `disabled` when `false`).
    pub thinking_enabled: Option<bool>,
    /// Thinking token budget with budget (non-adaptive) thinking.
    pub thinking_budget_tokens: Option<u64>,
    /// `low|medium|high|xhigh|max`, sent as `output_config.effort` with adaptive thinking.
    pub effort: Option<String>,
    /// `summarized` (default) or `omitted`.
    pub thinking_display: Option<String>,
    /// Adds the interleaved-thinking beta with budget thinking (default true).
    pub interleaved_thinking: Option<bool>,
}

/// OpenAI-specific options (Chat Completions and Responses).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OpenAiOptions {
    /// A thinking level name (`minimal`..`max`); mapped through `thinkingLevelMap`.
    pub reasoning_effort: Option<String>,
    /// Responses only: `auto|detailed|concise`.
    pub reasoning_summary: Option<String>,
    /// Responses only: `flex|priority|...`.
    pub service_tier: Option<String>,
    /// Chat Completions only: token budget for servers with a thinking-budget field.
    pub thinking_budget: Option<u64>,
}

/// Google thinking configuration.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct GoogleThinking {
    /// Whether thinking is requested at all.
    pub enabled: bool,
    /// `-1` dynamic, `0` off.
    pub budget_tokens: Option<i64>,
    /// `MINIMAL|LOW|MEDIUM|HIGH` for thinking-level models.
    pub level: Option<String>,
}

/// Google-specific options of [`stream`](crate::stream::stream).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct GoogleOptions {
    /// `generationConfig.thinkingConfig`; `None` sends none.
    pub thinking: Option<GoogleThinking>,
}

/// Options of [`stream`](crate::stream::stream). Everything is optional; `Default` gives pi's defaults.
///
/// The struct grows with the providers (`#[non_exhaustive]`): build it from `Default` with the
/// `with_*` setters, or assign its public fields.
///
/// ```
/// use std::time::Duration;
///
/// use arbor_ai::{AnthropicOptions, CacheRetention, CancellationToken, StreamOptions};
///
/// let cancel = CancellationToken::new();
/// let options = StreamOptions::default()
///     .with_api_key("sk-test".into())
///     .with_max_tokens(1024)
///     .with_timeout(Duration::from_secs(30))
///     .with_cache_retention(CacheRetention::Long)
///     .with_cancel(cancel.clone())
///     .with_header("x-team", Some("docs".into()))
///     .with_anthropic(AnthropicOptions::default().with_thinking_enabled(false));
/// assert_eq!(options.max_tokens, Some(1024));
/// assert!(!options.is_cancelled());
/// cancel.cancel();
/// assert!(options.is_cancelled());
/// // The key never reaches a log.
/// assert!(!format!("{options:?}").contains("sk-test"));
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct StreamOptions {
    /// API key; when absent the provider's environment variable is consulted.
    pub api_key: Option<String>,
    /// Cancels the request: the stream ends promptly with an `aborted` error event and the HTTP
    /// connection is dropped.
    pub cancel: Option<CancellationToken>,
    /// Extra request headers (case-insensitive override of defaults; `None` removes a header).
    pub headers: Vec<(String, Option<String>)>,
    /// Longest silence allowed: the wait for the response headers and each wait for the next
    /// body chunk (not the whole stream, so a long generation that keeps streaming is never cut).
    pub timeout: Option<Duration>,
    /// The most one whole response body may hold before the attempt ends with an error
    /// (default `MAX_RESPONSE_BYTES`, 256 MiB; DECISIONS §30.1).
    pub max_response_bytes: Option<u64>,
    /// The most one server-sent event may hold before it ends (default `MAX_EVENT_BYTES`,
    /// 64 MiB; DECISIONS §9.22).
    pub max_event_bytes: Option<usize>,
    /// HTTP-level retries of the initial request (default 0 = off).
    pub max_retries: u32,
    /// Largest server-requested retry delay accepted (default 60 s; zero = no cap).
    pub max_retry_delay: Option<Duration>,
    /// Sampling temperature (not sent when absent; refused by some reasoning models).
    pub temperature: Option<f64>,
    /// Output token ceiling (the model's `max_tokens` when absent).
    pub max_tokens: Option<u64>,
    /// Default `Short`, or `Long` when `PI_CACHE_RETENTION=long` / `ARBOR_CACHE_RETENTION=long`.
    pub cache_retention: Option<CacheRetention>,
    /// Enables prompt-cache keys and session-affinity headers.
    pub session_id: Option<String>,
    /// Anthropic reads `user_id`.
    pub metadata: Option<Map<String, Value>>,
    /// Provider-native tool choice: a string (`auto|none|any|required`) or an object.
    pub tool_choice: Option<Value>,
    /// Request sampling parameters (`top_p`, `top_k`, `min_p`, …), merged last into
    /// OpenAI-compatible bodies over the model's own (DECISIONS §10.7).
    pub sampling_params: Option<Map<String, Value>>,
    /// Options only Anthropic's API reads.
    pub anthropic: AnthropicOptions,
    /// Options only OpenAI's APIs (Chat Completions, Responses) read.
    pub openai: OpenAiOptions,
    /// Options only Google's API reads.
    pub google: GoogleOptions,
    /// HTTP client to use (a shared default client otherwise).
    #[cfg(feature = "providers")]
    pub client: Option<reqwest::Client>,
}

impl std::fmt::Debug for StreamOptions {
    // Hand-written so the API key never reaches logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamOptions")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("max_event_bytes", &self.max_event_bytes)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("cache_retention", &self.cache_retention)
            .field("session_id", &self.session_id)
            .field("tool_choice", &self.tool_choice)
            .field("anthropic", &self.anthropic)
            .field("openai", &self.openai)
            .field("google", &self.google)
            .finish_non_exhaustive()
    }
}

impl StreamOptions {
    /// The effective cache retention (explicit, else environment, else `Short`).
    pub fn resolved_cache_retention(&self) -> CacheRetention {
        if let Some(r) = self.cache_retention {
            return r;
        }
        let long = ["ARBOR_CACHE_RETENTION", "PI_CACHE_RETENTION"]
            .iter()
            .any(|k| std::env::var(k).is_ok_and(|v| v == "long"));
        if long {
            CacheRetention::Long
        } else {
            CacheRetention::Short
        }
    }

    /// Whether the caller's token was cancelled already.
    pub fn is_cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
    }
}

/// Options of [`stream_simple`](crate::stream::stream_simple): the common options plus one provider-neutral reasoning level.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SimpleStreamOptions {
    /// The provider-native options the reasoning level is mapped onto.
    pub base: StreamOptions,
    /// `None` or `Some(Off)` = no reasoning requested.
    pub reasoning: Option<ThinkingLevel>,
    /// Token budgets per level for APIs that take a budget rather than an effort.
    pub thinking_budgets: ThinkingBudgets,
}

with_setters!(AnthropicOptions {
    opt thinking_enabled => with_thinking_enabled: bool,
    opt thinking_budget_tokens => with_thinking_budget_tokens: u64,
    opt effort => with_effort: String,
    opt thinking_display => with_thinking_display: String,
    opt interleaved_thinking => with_interleaved_thinking: bool,
});

with_setters!(OpenAiOptions {
    opt reasoning_effort => with_reasoning_effort: String,
    opt reasoning_summary => with_reasoning_summary: String,
    opt service_tier => with_service_tier: String,
    opt thinking_budget => with_thinking_budget: u64,
});

with_setters!(GoogleThinking {
    val enabled => with_enabled: bool,
    opt budget_tokens => with_budget_tokens: i64,
    opt level => with_level: String,
});

with_setters!(GoogleOptions {
    opt thinking => with_thinking: GoogleThinking,
});

with_setters!(StreamOptions {
    opt api_key => with_api_key: String,
    opt cancel => with_cancel: CancellationToken,
    val headers => with_headers: Vec<(String, Option<String>)>,
    opt timeout => with_timeout: Duration,
    opt max_response_bytes => with_max_response_bytes: u64,
    opt max_event_bytes => with_max_event_bytes: usize,
    val max_retries => with_max_retries: u32,
    opt max_retry_delay => with_max_retry_delay: Duration,
    opt temperature => with_temperature: f64,
    opt max_tokens => with_max_tokens: u64,
    opt cache_retention => with_cache_retention: CacheRetention,
    opt session_id => with_session_id: String,
    opt metadata => with_metadata: Map<String, Value>,
    opt tool_choice => with_tool_choice: Value,
    opt sampling_params => with_sampling_params: Map<String, Value>,
    val anthropic => with_anthropic: AnthropicOptions,
    val openai => with_openai: OpenAiOptions,
    val google => with_google: GoogleOptions,
});

#[cfg(feature = "providers")]
with_setters!(StreamOptions {
    opt client => with_client: reqwest::Client,
});

with_setters!(SimpleStreamOptions {
    val base => with_base: StreamOptions,
    opt reasoning => with_reasoning: ThinkingLevel,
    val thinking_budgets => with_thinking_budgets: ThinkingBudgets,
});

impl StreamOptions {
    /// Adds one request header (`None` removes a default header of that name).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: Option<String>) -> Self {
        self.headers.push((name.into(), value));
        self
    }
}
