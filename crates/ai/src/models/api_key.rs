//! API keys: the secret type, the environment variables each provider reads, and the
//! `$VAR` / `!command` references of `models.json`.

use std::fmt;

/// A secret credential. It never shows in `Debug` or `Display` output, so it cannot leak into
/// logs, panics or error messages by accident; [`ApiKey::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The secret, for building the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Environment variables holding a provider's API key, in lookup order (pi's table).
pub fn api_key_env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "github-copilot" => &["COPILOT_GITHUB_TOKEN"],
        "google" => &["GEMINI_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "azure" => &["AZURE_OPENAI_API_KEY"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "zai-coding-cn" => &["ZAI_CODING_CN_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "baseten" => &["BASETEN_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "meta" => &["META_API_KEY"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "typesafe" => &["TYPESAFE_API_KEY"],
        "radius" => &["RADIUS_API_KEY"],
        "ant-ling" => &["ANT_LING_API_KEY"],
        "qwen-token-plan" => &["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"],
        "qwen-token-plan-cn" => &[
            "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "qwen-token-plan-individual" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
            "QWEN_TOKEN_PLAN_API_KEY",
        ],
        "qwen-token-plan-individual-cn" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        _ => &[],
    }
}

/// Anthropic bearer token variable; sent as `Authorization: Bearer`, not as an API key.
pub const ANTHROPIC_AUTH_TOKEN_ENV: &str = "ANTHROPIC_AUTH_TOKEN";

/// The provider's API key from the process environment (first non-empty variable).
pub fn env_api_key(provider: &str) -> Option<ApiKey> {
    env_api_key_with(provider, |name| std::env::var(name).ok())
}

/// [`env_api_key`] with an explicit variable lookup (scoped environments, tests).
pub fn env_api_key_with(provider: &str, lookup: impl Fn(&str) -> Option<String>) -> Option<ApiKey> {
    api_key_env_vars(provider)
        .iter()
        .find_map(|name| lookup(name).filter(|v| !v.is_empty()))
        .map(ApiKey::new)
}

/// Resolves a `models.json` credential or header value: `!command` runs the command through
/// `sh -c` and takes its trimmed stdout; otherwise `$NAME` / `${NAME}` are replaced by
/// environment variables (`$$` is a literal `$`, `$!` a literal `!`). `None` when a variable is
/// unset or empty, or the command fails or prints nothing.
pub fn resolve_config_value(config: &str) -> Option<String> {
    resolve_config_value_with(config, |name| std::env::var(name).ok())
}

/// [`resolve_config_value`] with an explicit variable lookup.
pub fn resolve_config_value_with(
    config: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    if let Some(command) = config.strip_prefix('!') {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !output.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
        return (!text.is_empty()).then_some(text);
    }
    let mut out = String::with_capacity(config.len());
    let mut rest = config;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(stripped) = after.strip_prefix('!') {
            out.push('!');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('{') {
            match body.find('}') {
                Some(end) if is_env_name(&body[..end]) => {
                    out.push_str(&lookup(&body[..end]).filter(|v| !v.is_empty())?);
                    rest = &body[end + 1..];
                }
                Some(end) => {
                    // Not a variable name: kept literally, braces included.
                    out.push_str("${");
                    out.push_str(&body[..end]);
                    out.push('}');
                    rest = &body[end + 1..];
                }
                None => {
                    out.push('$');
                    rest = after;
                }
            }
        } else {
            let len = env_name_prefix_len(after);
            if len > 0 {
                out.push_str(&lookup(&after[..len]).filter(|v| !v.is_empty())?);
                rest = &after[len..];
            } else {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

fn env_name_prefix_len(s: &str) -> usize {
    let mut len = 0;
    for (i, c) in s.char_indices() {
        let ok = c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit());
        if !ok {
            break;
        }
        len = i + 1;
    }
    len
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty() && env_name_prefix_len(s) == s.len()
}
