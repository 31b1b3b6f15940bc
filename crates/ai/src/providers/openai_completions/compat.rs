//! The quirks table of OpenAI-compatible servers: detected from provider id and base URL,
//! overridable per field through `model.compat`.

use serde_json::Value;

use crate::models::compat_value;
use crate::types::Model;

/// How a server wants reasoning switched on and off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingFormat {
    /// OpenAI's `reasoning_effort`.
    OpenAi,
    /// OpenRouter's `reasoning: {effort}` object.
    OpenRouter,
    /// DeepSeek's `thinking: {type}` switch.
    DeepSeek,
    /// z.ai's `thinking: {type}` switch.
    Zai,
    /// Qwen's top-level `enable_thinking` flag.
    Qwen,
    /// `chat_template_kwargs.enable_thinking` (Qwen through vLLM and similar).
    QwenChatTemplate,
    /// Together's `reasoning: {enabled}`.
    Together,
    /// `thinking` set to the level's (mapped) name.
    StringThinking,
    /// `reasoning: {effort}` with the model's mapped value only (Ant Ling).
    AntLing,
}

impl ThinkingFormat {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "openai" => Self::OpenAi,
            "openrouter" => Self::OpenRouter,
            "deepseek" => Self::DeepSeek,
            "zai" => Self::Zai,
            "qwen" => Self::Qwen,
            "qwen-chat-template" => Self::QwenChatTemplate,
            "together" => Self::Together,
            "string-thinking" => Self::StringThinking,
            "ant-ling" => Self::AntLing,
            _ => return None,
        })
    }
}

/// Resolved server quirks (DECISIONS §9.21).
#[derive(Debug, Clone, PartialEq)]
pub struct Compat {
    /// Accepts `store`.
    pub supports_store: bool,
    /// Accepts the `developer` role for the system prompt.
    pub supports_developer_role: bool,
    /// Accepts `reasoning_effort`.
    pub supports_reasoning_effort: bool,
    /// Reports usage in the stream (`stream_options.include_usage`).
    pub supports_usage_in_streaming: bool,
    /// Sends `finish_reason`.
    pub supports_finish_reason: bool,
    /// `max_tokens` or `max_completion_tokens`.
    pub max_tokens_field: String,
    /// Tool results need the tool `name`.
    pub requires_tool_result_name: bool,
    /// A user message may not follow a tool result directly.
    pub requires_assistant_after_tool_result: bool,
    /// Assistant messages need non-null `content`.
    pub requires_non_null_assistant_content: bool,
    /// A history with tool calls needs the `tools` list.
    pub requires_tools_with_tool_history: bool,
    /// Replayed thinking goes as text.
    pub requires_thinking_as_text: bool,
    /// Assistant messages carry `reasoning_content`.
    pub requires_reasoning_content_on_assistant_messages: bool,
    /// How reasoning is switched on and off.
    pub thinking_format: ThinkingFormat,
    /// Accepts `strict` tools.
    pub supports_strict_mode: bool,
    /// `anthropic` = OpenRouter-to-Claude cache markers.
    pub cache_control_anthropic: bool,
    /// Sends session-affinity headers with a session id.
    pub send_session_affinity_headers: bool,
    /// The affinity header format.
    pub session_affinity_format: String,
    /// Accepts long prompt-cache retention.
    pub supports_long_cache_retention: bool,
    /// `thinking_token_budget`-style field name, when the server takes a budget.
    pub thinking_token_budget_field: Option<String>,
    /// `auto` (default), `enabled`, `disabled`.
    pub prompt_cache_key_mode: String,
    /// z.ai's `tool_stream: true` (stream tool-call arguments); off unless `compat.zaiToolStream`.
    pub zai_tool_stream: bool,
}

/// Detects the quirks of the server behind `model`, then applies `model.compat` overrides.
pub fn compat_for(model: &Model) -> Compat {
    let provider = model.provider.as_str();
    let url = model.base_url.as_str();
    let is_zai = matches!(provider, "zai" | "zai-coding-cn")
        || url.contains("api.z.ai")
        || url.contains("open.bigmodel.cn");
    let is_together = provider == "together"
        || url.contains("api.together.ai")
        || url.contains("api.together.xyz");
    let is_moonshot =
        matches!(provider, "moonshotai" | "moonshotai-cn") || url.contains("api.moonshot.");
    let is_openrouter = provider == "openrouter" || url.contains("openrouter.ai");
    let is_cf_workers = provider == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
    let is_cf_gateway =
        provider == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
    let is_nvidia = provider == "nvidia" || url.contains("integrate.api.nvidia.com");
    let is_ant_ling = provider == "ant-ling" || url.contains("api.ant-ling.com");
    let is_cerebras = provider == "cerebras" || url.contains("cerebras.ai");
    let is_deepseek = provider == "deepseek" || url.to_ascii_lowercase().contains("deepseek.com");
    let is_xai = provider == "xai" || url.contains("api.x.ai");
    let is_opencode = provider == "opencode" || url.contains("opencode.ai");
    let is_chutes = url.contains("chutes.ai");
    let is_openai = provider == "openai" || url.contains("api.openai.com");
    // Local servers (Arbor addition): llama.cpp, Ollama, LM Studio and vLLM take the classic
    // `max_tokens` and have no use for `store`.
    let is_ollama = provider == "ollama" || url.contains(":11434");
    let is_llama_cpp = matches!(provider, "llama.cpp" | "llamacpp" | "llama-cpp");
    let is_lmstudio = matches!(provider, "lmstudio" | "lm-studio") || url.contains(":1234/");
    let is_vllm = provider == "vllm";
    let is_local_server = is_ollama || is_llama_cpp || is_lmstudio || is_vllm;

    let non_standard = is_nvidia
        || is_cerebras
        || is_xai
        || is_together
        || is_chutes
        || is_deepseek
        || is_zai
        || is_moonshot
        || is_opencode
        || is_cf_workers
        || is_cf_gateway
        || is_ant_ling
        || is_local_server;
    let use_max_tokens = is_chutes
        || is_deepseek
        || is_moonshot
        || is_cf_gateway
        || is_together
        || is_nvidia
        || is_ant_ling
        || is_zai
        || is_ollama
        || is_llama_cpp
        || is_lmstudio;
    let thinking_format = if is_deepseek {
        ThinkingFormat::DeepSeek
    } else if is_zai {
        ThinkingFormat::Zai
    } else if is_together {
        ThinkingFormat::Together
    } else if is_ant_ling {
        ThinkingFormat::AntLing
    } else if is_openrouter {
        ThinkingFormat::OpenRouter
    } else {
        ThinkingFormat::OpenAi
    };
    let mut c = Compat {
        supports_store: !non_standard,
        supports_developer_role: is_openai,
        supports_reasoning_effort: !(is_xai
            || is_zai
            || is_moonshot
            || is_together
            || is_cf_gateway
            || is_nvidia
            || is_ant_ling),
        supports_usage_in_streaming: true,
        supports_finish_reason: true,
        max_tokens_field: if use_max_tokens {
            "max_tokens"
        } else {
            "max_completion_tokens"
        }
        .into(),
        requires_tool_result_name: false,
        requires_assistant_after_tool_result: false,
        requires_non_null_assistant_content: false,
        requires_tools_with_tool_history: false,
        requires_thinking_as_text: false,
        requires_reasoning_content_on_assistant_messages: is_deepseek,
        thinking_format,
        supports_strict_mode: false,
        cache_control_anthropic: provider == "openrouter" && model.id.starts_with("anthropic/"),
        send_session_affinity_headers: is_openrouter,
        session_affinity_format: if is_openrouter {
            "openrouter"
        } else {
            "openai"
        }
        .into(),
        supports_long_cache_retention: !(is_together
            || is_cf_workers
            || is_cf_gateway
            || is_nvidia
            || is_ant_ling),
        thinking_token_budget_field: None,
        prompt_cache_key_mode: "auto".into(),
        zai_tool_stream: false,
    };
    // Explicit overrides, field by field.
    let b = |k: &str| compat_value(model, k).and_then(Value::as_bool);
    let s = |k: &str| {
        compat_value(model, k)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    macro_rules! over_bool {
        ($field:ident, $key:literal) => {
            if let Some(v) = b($key) {
                c.$field = v;
            }
        };
    }
    over_bool!(supports_store, "supportsStore");
    over_bool!(supports_developer_role, "supportsDeveloperRole");
    over_bool!(supports_reasoning_effort, "supportsReasoningEffort");
    over_bool!(supports_usage_in_streaming, "supportsUsageInStreaming");
    over_bool!(supports_finish_reason, "supportsFinishReason");
    over_bool!(requires_tool_result_name, "requiresToolResultName");
    over_bool!(
        requires_assistant_after_tool_result,
        "requiresAssistantAfterToolResult"
    );
    over_bool!(
        requires_non_null_assistant_content,
        "requiresNonNullAssistantContent"
    );
    over_bool!(
        requires_tools_with_tool_history,
        "requiresToolsWithToolHistory"
    );
    over_bool!(requires_thinking_as_text, "requiresThinkingAsText");
    over_bool!(
        requires_reasoning_content_on_assistant_messages,
        "requiresReasoningContentOnAssistantMessages"
    );
    over_bool!(supports_strict_mode, "supportsStrictMode");
    over_bool!(send_session_affinity_headers, "sendSessionAffinityHeaders");
    over_bool!(supports_long_cache_retention, "supportsLongCacheRetention");
    over_bool!(zai_tool_stream, "zaiToolStream");
    if let Some(v) = s("maxTokensField") {
        c.max_tokens_field = v;
    }
    if let Some(f) = s("thinkingFormat")
        .as_deref()
        .and_then(ThinkingFormat::parse)
    {
        c.thinking_format = f;
    }
    if let Some(v) = s("cacheControlFormat") {
        c.cache_control_anthropic = v == "anthropic";
    }
    if let Some(v) = s("sessionAffinityFormat") {
        c.session_affinity_format = v;
    }
    if let Some(v) = s("promptCacheKeyMode") {
        c.prompt_cache_key_mode = v;
    }
    c.thinking_token_budget_field = s("thinkingTokenBudgetField").or_else(|| {
        (b("supportsThinkingTokenBudget") == Some(true)).then(|| "thinking_token_budget".into())
    });
    c
}
