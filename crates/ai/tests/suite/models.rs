//! Built-in catalogue, `models.json` layering, cost, API keys.

use arbor_ai::models::*;
use arbor_ai::types::{Model, Usage};
use serde_json::json;

fn builtin() -> ModelRegistry {
    ModelRegistry::builtin().unwrap()
}

fn usage(
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cache_write_1h: Option<u64>,
) -> Usage {
    let mut v = json!({
        "input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    });
    if let Some(h) = cache_write_1h {
        v["cacheWrite1h"] = json!(h);
    }
    serde_json::from_value(v).unwrap()
}

fn close(a: arbor_ai::json::Num, b: f64) -> bool {
    let a = a.get();
    (a - b).abs() < 1e-12
}

// ----- built-in catalogue ------------------------------------------------------------------

#[test]
fn builtin_catalog_covers_the_four_apis_and_main_providers() {
    let r = builtin();
    assert_eq!(
        r.provider_ids(),
        [
            "anthropic",
            "openai",
            "google",
            "openrouter",
            "groq",
            "xai",
            "deepseek"
        ]
    );
    let apis: std::collections::BTreeSet<&str> = r.models().map(|m| m.api.as_str()).collect();
    for api in [
        "anthropic-messages",
        "openai-completions",
        "openai-responses",
        "google-generative-ai",
    ] {
        assert!(apis.contains(api), "{api}");
    }
    for m in r.models() {
        assert!(m.context_window > 0 && m.max_tokens > 0, "{}", m.id);
        assert!(!m.base_url.is_empty() && !m.name.is_empty(), "{}", m.id);
        assert!(
            m.input.iter().all(|i| i == "text" || i == "image"),
            "{}",
            m.id
        );
        assert_eq!(
            r.get(&m.provider, &m.id).map(|x| &x.id),
            Some(&m.id),
            "lookup by provider + id"
        );
    }
}

#[test]
fn builtin_model_fields_are_pis() {
    let r = builtin();
    let m = r.get("anthropic", "claude-sonnet-4-5").unwrap();
    let v = serde_json::to_value(m).unwrap();
    assert_eq!(v["name"], "Claude Sonnet 4.5 (latest)");
    assert_eq!(v["api"], "anthropic-messages");
    assert_eq!(v["baseUrl"], "https://api.anthropic.com");
    assert_eq!(v["reasoning"], true);
    assert_eq!(v["input"], json!(["text", "image"]));
    assert_eq!(
        v["cost"],
        json!({"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75})
    );
    assert_eq!(v["contextWindow"], 200000);
    assert_eq!(v["maxTokens"], 64000);
    assert_eq!(v["compat"], json!({"supportsStrictTools": true}));
    assert_eq!(
        v["promptCache"],
        json!({"short": 300, "long": 3600}),
        "extra metadata survives"
    );

    let g = r.get("google", "gemini-2.5-pro").unwrap();
    assert_eq!(
        g.base_url,
        "https://generativelanguage.googleapis.com/v1beta"
    );
    assert_eq!(
        g.cost.tiers.as_ref().unwrap()[0].input_tokens_above,
        200_000
    );
    let gpt = r.get("openai", "gpt-5.2").unwrap();
    assert_eq!(gpt.api, "openai-responses");
    assert_eq!(gpt.thinking_level_map.as_ref().unwrap()["off"], "none");
    assert!(r.get("groq", "llama-3.3-70b-versatile").is_some());
    assert!(r.get("xai", "grok-4.3").is_some());
    assert!(r.get("deepseek", "deepseek-v4-pro").is_some());
    assert!(r.get("openrouter", "openai/gpt-5.2-codex").is_some());
}

#[test]
fn unknown_lookups_are_none() {
    let r = builtin();
    assert!(
        r.get("anthropic", "gpt-5.2").is_none(),
        "ids are per provider"
    );
    assert!(r.get("nope", "claude-sonnet-4-5").is_none());
    assert!(r.provider_models("nope").is_empty());
    assert_eq!(r.provider_models("xai").len(), 2);
}

// ----- models.json -------------------------------------------------------------------------

#[test]
fn local_ollama_server_from_models_json() {
    let mut r = builtin();
    r.apply_models_json_str(
        r#"{
            // a local server, as in pi's docs
            "providers": {
                "ollama": {
                    "baseUrl": "http://localhost:11434/v1",
                    "api": "openai-completions",
                    "apiKey": "ollama",
                    "models": [{"id": "qwen3:32b"}]
                }
            }
        }"#,
        "models.json",
    )
    .unwrap();
    let m = r.get("ollama", "qwen3:32b").unwrap();
    let v = serde_json::to_value(m).unwrap();
    assert_eq!(
        v,
        json!({
            "id": "qwen3:32b", "name": "qwen3:32b", "api": "openai-completions", "provider": "ollama",
            "baseUrl": "http://localhost:11434/v1", "reasoning": false, "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 128000, "maxTokens": 16384
        })
    );
    assert_eq!(r.api_key("ollama", None).unwrap().expose(), "ollama");
    assert_eq!(r.provider_ids().last(), Some(&"ollama"));
}

#[test]
fn llama_cpp_with_reasoning_compat_and_model_level_settings() {
    let mut r = ModelRegistry::empty();
    r.apply_models_json_str(
        &json!({"providers": {"llamacpp": {
            "name": "llama.cpp", "baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions",
            "compat": {"supportsDeveloperRole": false, "openRouterRouting": {"order": ["a"]}},
            "headers": {"X-Token": "$LLAMA_TOKEN"},
            "models": [
                {"id": "glm", "name": "GLM local", "reasoning": true, "input": ["text", "image"],
                 "thinkingLevelMap": {"minimal": null, "xhigh": "max-effort"},
                 "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0},
                 "contextWindow": 32768, "maxTokens": 4096,
                 "compat": {"thinkingFormat": "qwen", "openRouterRouting": {"only": ["b"]}}},
                {"id": "other", "api": "anthropic-messages", "baseUrl": "http://127.0.0.1:9090"}
            ]
        }}})
        .to_string(),
        "models.json",
    )
    .unwrap();
    let p = r.provider("llamacpp").unwrap();
    assert_eq!(p.name, "llama.cpp");
    assert_eq!(
        p.headers["X-Token"], "$LLAMA_TOKEN",
        "header values stay unresolved"
    );
    let glm = r.get("llamacpp", "glm").unwrap();
    assert!(glm.reasoning);
    assert_eq!(glm.context_window, 32768);
    assert_eq!(
        glm.compat.as_ref().unwrap(),
        &json!({"supportsDeveloperRole": false, "openRouterRouting": {"order": ["a"], "only": ["b"]}, "thinkingFormat": "qwen"})
    );
    assert_eq!(
        glm.thinking_level_map.as_ref().unwrap()["xhigh"],
        "max-effort"
    );
    let other = r.get("llamacpp", "other").unwrap();
    assert_eq!(other.api, "anthropic-messages");
    assert_eq!(other.base_url, "http://127.0.0.1:9090");
}

#[test]
fn provider_base_url_moves_builtin_models() {
    let mut r = builtin();
    r.apply_models_json_str(
        r#"{"providers": {"anthropic": {"baseUrl": "http://proxy.local", "compat": {"supportsEagerToolInputStreaming": false}}}}"#,
        "models.json",
    )
    .unwrap();
    for m in r.provider_models("anthropic") {
        assert_eq!(m.base_url, "http://proxy.local", "{}", m.id);
        assert_eq!(
            m.compat.as_ref().unwrap()["supportsEagerToolInputStreaming"],
            false
        );
        assert_eq!(
            m.compat.as_ref().unwrap()["supportsStrictTools"],
            true,
            "merged, not replaced"
        );
    }
    assert_eq!(
        r.get("openai", "gpt-5.2").unwrap().base_url,
        "https://api.openai.com/v1"
    );
}

#[test]
fn model_overrides_patch_single_builtin_models() {
    let mut r = builtin();
    r.apply_models_json_str(
        r#"{"providers": {"openai": {"modelOverrides": {
            "gpt-5.2": {"contextWindow": 1000, "cost": {"input": 9}, "thinkingLevelMap": {"minimal": "minimal"}, "name": "Mine"},
            "no-such-model": {"contextWindow": 5}
        }}}}"#,
        "models.json",
    )
    .unwrap();
    let m = r.get("openai", "gpt-5.2").unwrap();
    assert_eq!(m.context_window, 1000);
    assert_eq!(m.name, "Mine");
    assert_eq!(m.cost.input, 9.0);
    assert_eq!(m.cost.output, 14.0, "other prices kept");
    let map = m.thinking_level_map.as_ref().unwrap();
    assert_eq!(map["minimal"], "minimal");
    assert_eq!(map["xhigh"], "xhigh", "map merged");
    assert!(
        r.get("openai", "no-such-model").is_none(),
        "overrides do not create models"
    );
}

#[test]
fn models_entries_replace_or_extend_builtin_providers() {
    let mut r = builtin();
    r.apply_models_json_str(
        r#"{"providers": {"groq": {"models": [
            {"id": "llama-3.3-70b-versatile", "contextWindow": 64000},
            {"id": "brand-new"}
        ]}}}"#,
        "models.json",
    )
    .unwrap();
    let replaced = r.get("groq", "llama-3.3-70b-versatile").unwrap();
    assert_eq!(replaced.context_window, 64000);
    assert_eq!(
        replaced.max_tokens, DEFAULT_MAX_TOKENS,
        "a replacement is a fresh definition"
    );
    assert_eq!(
        replaced.base_url, "https://api.groq.com/openai/v1",
        "base URL from the built-in model"
    );
    let new = r.get("groq", "brand-new").unwrap();
    assert_eq!(
        new.api, "openai-completions",
        "api from a similar built-in model"
    );
    assert_eq!(r.provider_models("groq").len(), 5);
}

#[test]
fn later_files_layer_over_earlier_ones() {
    let mut r = ModelRegistry::empty();
    r.apply_models_json_str(r#"{"providers": {"p": {"baseUrl": "http://a", "api": "openai-completions", "models": [{"id": "m"}]}}}"#, "one").unwrap();
    r.apply_models_json_str(r#"{"providers": {"p": {"baseUrl": "http://b"}}}"#, "two")
        .unwrap();
    assert_eq!(r.get("p", "m").unwrap().base_url, "http://b");
}

#[test]
fn bad_models_json_is_refused_with_a_precise_message_and_changes_nothing() {
    let cases = [
        ("{", "invalid JSON at line 1"),
        ("[]", "root: expected an object"),
        (r#"{"providers": []}"#, "providers: expected an object"),
        (r#"{}"#, "providers: required field is missing"),
        (
            r#"{"providers": {"x": {}}}"#,
            "Provider x: must specify \"baseUrl\"",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "models": [{"name": "n"}]}}}"#,
            "providers.x.models[0].id: required field is missing",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "models": [{"id": "m"}]}}}"#,
            "Provider x, model m: no \"api\" specified",
        ),
        (
            r#"{"providers": {"x": {"api": "openai-completions", "models": [{"id": "m"}]}}}"#,
            "Provider x: \"baseUrl\" is required",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "api": "a", "models": [{"id": "m", "contextWindow": -1}]}}}"#,
            "providers.x.models[0].contextWindow: expected a positive whole number",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "api": "a", "models": [{"id": "m", "input": ["audio"]}]}}}"#,
            "providers.x.models[0].input[0]: expected \"text\" or \"image\"",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "api": "a", "models": [{"id": "m", "cost": {"input": 1}}]}}}"#,
            "providers.x.models[0].cost.output: required field is missing",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "api": "a", "models": [{"id": "m", "thinkingLevelMap": {"ultra": "u"}}]}}}"#,
            "providers.x.models[0].thinkingLevelMap.ultra: unknown thinking level",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": 5}}}"#,
            "providers.x.baseUrl: expected a non-empty string",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "headers": {"a": 1}}}}"#,
            "providers.x.headers.a: expected a string",
        ),
        (
            r#"{"providers": {"openai": {"modelOverrides": {"gpt-5.2": {"maxTokens": 0}}}}}"#,
            "providers.openai.modelOverrides.gpt-5.2.maxTokens",
        ),
    ];
    for (text, expected) in cases {
        let mut r = builtin();
        let before = r.models().count();
        let err = r
            .apply_models_json_str(text, "/home/u/.arbor/models.json")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(expected),
            "{text}\n  got: {err}\n  want: {expected}"
        );
        assert!(
            err.contains("/home/u/.arbor/models.json"),
            "names the file: {err}"
        );
        assert_eq!(r.models().count(), before);
        assert_eq!(r.get("openai", "gpt-5.2").unwrap().max_tokens, 128_000);
    }
}

#[test]
fn models_json_files_missing_commented_and_with_bom() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = ModelRegistry::empty();
    r.load_models_json(&dir.path().join("absent.json")).unwrap();
    assert_eq!(r.models().count(), 0, "a missing file is no error");

    let path = dir.path().join("models.json");
    std::fs::write(
        &path,
        "\u{feff}{\n  /* block\n comment */ \"providers\": {\"vllm\": {\"baseUrl\": \"http://h//not-a-comment\", // line\n \"api\": \"openai-completions\", \"models\": [{\"id\": \"m\"}]}}}",
    )
    .unwrap();
    r.load_models_json(&path).unwrap();
    assert_eq!(
        r.get("vllm", "m").unwrap().base_url,
        "http://h//not-a-comment"
    );

    std::fs::write(&path, "{\n\n  \"providers\": {,}\n}").unwrap();
    let err = r.load_models_json(&path).unwrap_err().to_string();
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("models.json"), "{err}");
}

// ----- cost ----------------------------------------------------------------------------------

#[test]
fn cost_uses_per_million_prices() {
    let r = builtin();
    let m = r.get("anthropic", "claude-sonnet-4-5").unwrap();
    let mut u = usage(1_000_000, 100_000, 2_000_000, 400_000, None);
    calculate_cost(m, &mut u);
    assert!(close(u.cost.input, 3.0));
    assert!(close(u.cost.output, 1.5));
    assert!(close(u.cost.cache_read, 0.6));
    assert!(close(u.cost.cache_write, 1.5));
    assert!(close(u.cost.total, 6.6));
    assert_eq!(u.cost.total_from_provider, Some(false));
}

#[test]
fn one_hour_cache_writes_cost_twice_the_input_price() {
    let r = builtin();
    let m = r.get("anthropic", "claude-sonnet-4-5").unwrap();
    let mut u = usage(0, 0, 0, 1_000_000, Some(400_000));
    calculate_cost(m, &mut u);
    // 600k short writes at 3.75 + 400k long writes at 2 × 3.
    assert!(
        close(u.cost.cache_write, 0.6 * 3.75 + 0.4 * 6.0),
        "{}",
        u.cost.cache_write
    );
}

#[test]
fn tiers_price_the_whole_request_once_the_prompt_crosses_them() {
    let r = builtin();
    let m = r.get("google", "gemini-2.5-pro").unwrap();
    let mut below = usage(150_000, 1_000_000, 50_000, 0, None);
    calculate_cost(m, &mut below);
    assert!(
        close(below.cost.output, 10.0),
        "exactly at the threshold: base price"
    );
    let mut above = usage(150_001, 1_000_000, 50_000, 0, None);
    calculate_cost(m, &mut above);
    assert!(close(above.cost.output, 15.0));
    assert!(close(above.cost.input, 2.5 * 0.150_001));
    assert!(close(above.cost.cache_read, 0.25 * 0.05));

    // With several tiers the highest crossed threshold wins, whatever their order.
    let multi: Model = serde_json::from_value(json!({
        "id": "t", "name": "t", "api": "a", "provider": "p", "baseUrl": "u", "reasoning": false,
        "input": ["text"], "contextWindow": 1, "maxTokens": 1,
        "cost": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "tiers": [
            {"inputTokensAbove": 200, "input": 3, "output": 3, "cacheRead": 0, "cacheWrite": 0},
            {"inputTokensAbove": 100, "input": 2, "output": 2, "cacheRead": 0, "cacheWrite": 0}
        ]}
    }))
    .unwrap();
    for (prompt, price) in [(100, 1.0), (150, 2.0), (250, 3.0)] {
        let mut u = usage(prompt, 1_000_000, 0, 0, None);
        calculate_cost(&multi, &mut u);
        assert!(close(u.cost.output, price), "{prompt}: {}", u.cost.output);
    }
}

// ----- keys ----------------------------------------------------------------------------------

#[test]
fn api_keys_never_show_in_debug_output() {
    let key = ApiKey::new("sk-live-123456");
    assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
    assert_eq!(format!("{key}"), "<redacted>");
    assert_eq!(key.expose(), "sk-live-123456");

    let mut r = ModelRegistry::empty();
    r.apply_models_json_str(
        r#"{"providers": {"p": {"baseUrl": "http://h", "api": "openai-completions", "apiKey": "sk-secret-literal",
            "headers": {"Authorization": "Bearer sk-secret-header"}, "models": [{"id": "m"}]}}}"#,
        "models.json",
    )
    .unwrap();
    let debug = format!("{:?}", r.provider("p").unwrap());
    assert!(!debug.contains("sk-secret-literal"), "{debug}");
    assert!(!debug.contains("sk-secret-header"), "{debug}");
    assert!(
        debug.contains("Authorization"),
        "header names stay visible: {debug}"
    );
    assert!(!format!("{r:?}").contains("sk-secret-literal"));
    assert_eq!(
        format!("{:?}", SecretConfig("!pass show x".into())),
        "SecretConfig(<command>)"
    );
    assert_eq!(
        format!("{:?}", SecretConfig("$MY_KEY".into())),
        "SecretConfig($MY_KEY)"
    );
}

#[test]
fn environment_keys_follow_pis_table() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let anthropic = env(&[
        ("ANTHROPIC_AUTH_TOKEN", "bearer"),
        ("ANTHROPIC_OAUTH_TOKEN", ""),
        ("ANTHROPIC_API_KEY", "sk-ant"),
    ]);
    assert_eq!(
        env_api_key_with("anthropic", anthropic).unwrap().expose(),
        "sk-ant",
        "auth token skipped, empty skipped"
    );
    let oauth = env(&[
        ("ANTHROPIC_OAUTH_TOKEN", "oat"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
    ]);
    assert_eq!(
        env_api_key_with("anthropic", oauth).unwrap().expose(),
        "oat"
    );
    let all = env(&[
        ("OPENAI_API_KEY", "o"),
        ("GEMINI_API_KEY", "g"),
        ("OPENROUTER_API_KEY", "r"),
        ("GROQ_API_KEY", "q"),
        ("XAI_API_KEY", "x"),
        ("DEEPSEEK_API_KEY", "d"),
        ("QWEN_TOKEN_PLAN_API_KEY", "w"),
        ("MOONSHOT_API_KEY", "k"),
    ]);
    for (provider, key) in [
        ("openai", "o"),
        ("google", "g"),
        ("openrouter", "r"),
        ("groq", "q"),
        ("xai", "x"),
        ("deepseek", "d"),
        ("qwen-token-plan", "w"),
        ("moonshotai-cn", "k"),
    ] {
        assert_eq!(
            env_api_key_with(provider, all)
                .map(|k| k.expose().to_string())
                .as_deref(),
            Some(key),
            "{provider}"
        );
    }
    assert!(env_api_key_with("ollama", all).is_none());
    assert_eq!(api_key_env_vars("zai"), ["ZAI_API_KEY"]);
}

#[test]
fn config_values_resolve_env_and_commands() {
    let env = |name: &str| match name {
        "A" => Some("alpha".to_string()),
        "B_2" => Some("beta".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    };
    let r = |s: &str| resolve_config_value_with(s, env);
    assert_eq!(r("literal-key").as_deref(), Some("literal-key"));
    assert_eq!(r("$A").as_deref(), Some("alpha"));
    assert_eq!(r("${B_2}").as_deref(), Some("beta"));
    assert_eq!(
        r("Bearer $A-${B_2}!").as_deref(),
        Some("Bearer alpha-beta!")
    );
    assert_eq!(r("$MISSING"), None);
    assert_eq!(r("x$EMPTY"), None, "empty variables count as unset");
    assert_eq!(r("cost$$5 $!bang").as_deref(), Some("cost$5 !bang"));
    assert_eq!(r("${not valid}").as_deref(), Some("${not valid}"));
    assert_eq!(r("${unclosed").as_deref(), Some("${unclosed"));
    assert_eq!(r("trailing$").as_deref(), Some("trailing$"));
    assert_eq!(r("$1").as_deref(), Some("$1"));
    assert_eq!(
        r("!printf '  from-command \\n'").as_deref(),
        Some("from-command")
    );
    assert_eq!(r("!exit 3"), None);
    assert_eq!(r("!true"), None, "no output");
}

#[test]
fn registry_key_precedence() {
    let var = "ARBOR_TEST_MODELS_KEY_PRECEDENCE";
    std::env::set_var(var, "from-env-reference");
    let mut r = ModelRegistry::empty();
    r.apply_models_json_str(
        &format!(r#"{{"providers": {{"p": {{"baseUrl": "http://h", "api": "openai-completions", "apiKey": "${var}", "models": [{{"id": "m"}}]}},
                 "q": {{"baseUrl": "http://h", "api": "openai-completions", "apiKey": "$ARBOR_TEST_UNSET_VARIABLE_X", "models": [{{"id": "m"}}]}}}}}}"#),
        "models.json",
    )
    .unwrap();
    assert_eq!(r.api_key("p", None).unwrap().expose(), "from-env-reference");
    assert_eq!(
        r.api_key("p", Some(ApiKey::new("explicit")))
            .unwrap()
            .expose(),
        "explicit"
    );
    assert!(
        r.api_key("q", None).is_none(),
        "unresolvable reference and no env key"
    );
    std::env::remove_var(var);
}

#[test]
fn find_by_provider_slash_id_or_unique_bare_id() {
    let mut r = builtin();
    assert_eq!(
        r.find("anthropic/claude-sonnet-4-5").unwrap().provider,
        "anthropic"
    );
    assert_eq!(
        r.find("openrouter/openai/gpt-5.2").unwrap().id,
        "openai/gpt-5.2",
        "split at the first slash"
    );
    assert_eq!(
        r.find("claude-opus-4-6").unwrap().provider,
        "anthropic",
        "unique bare id"
    );
    assert_eq!(
        r.find("openai/gpt-5.2").unwrap().provider,
        "openai",
        "provider/id wins over a bare id"
    );
    let err = r.find("nope-1").unwrap_err().to_string();
    assert_eq!(err, "unknown model nope-1");
    // grok-4.3 is only offered by xai; add a second provider with the same id.
    r.apply_models_json_str(r#"{"providers": {"proxy": {"baseUrl": "http://p", "api": "openai-completions", "models": [{"id": "grok-4.3"}]}}}"#, "m").unwrap();
    let err = r.find("grok-4.3").unwrap_err().to_string();
    assert!(
        err.contains("ambiguous") && err.contains("xai/grok-4.3") && err.contains("proxy/grok-4.3"),
        "{err}"
    );
}

#[test]
fn headers_resolve_at_request_time_model_over_provider() {
    let var = "ARBOR_TEST_MODELS_HEADER_TOKEN";
    std::env::set_var(var, "tok");
    let mut r = ModelRegistry::empty();
    r.apply_models_json_str(
        &format!(r#"{{"providers": {{"p": {{"baseUrl": "http://h", "api": "openai-completions",
            "headers": {{"X-Team": "core", "Authorization": "Bearer ${var}", "X-Missing": "$ARBOR_TEST_UNSET_HEADER_VAR"}},
            "models": [{{"id": "m", "headers": {{"x-team": "model-level", "X-Cmd": "!echo from-cmd"}}}}]}}}}}}"#),
        "models.json",
    )
    .unwrap();
    let model = r.get("p", "m").unwrap().clone();
    let headers = r.resolved_headers(&model);
    assert_eq!(
        headers,
        [
            ("Authorization".to_string(), "Bearer tok".to_string()),
            ("x-team".to_string(), "model-level".to_string()),
            ("X-Cmd".to_string(), "from-cmd".to_string()),
        ]
    );
    std::env::remove_var(var);
}
