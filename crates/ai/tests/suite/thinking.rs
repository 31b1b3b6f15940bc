//! Supported thinking levels, clamping and budgets.

use arbor_ai::models::ModelRegistry;
use arbor_ai::thinking::*;
use arbor_ai::types::{Model, ThinkingLevel};
use serde_json::{json, Value};

use ThinkingLevel::*;

fn model(reasoning: bool, map: Option<Value>) -> Model {
    let mut v = json!({
        "id": "m", "name": "m", "api": "openai-completions", "provider": "p", "baseUrl": "u",
        "reasoning": reasoning, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100000, "maxTokens": 32000
    });
    if let Some(map) = map {
        v["thinkingLevelMap"] = map;
    }
    serde_json::from_value(v).unwrap()
}

#[test]
fn non_reasoning_models_only_have_off() {
    let m = model(false, Some(json!({"high": "high", "xhigh": "xhigh"})));
    assert_eq!(supported_levels(&m), [Off]);
    for level in ALL_LEVELS {
        assert_eq!(clamp_level(&m, level), Off);
    }
}

#[test]
fn reasoning_without_map_stops_at_high() {
    let m = model(true, None);
    assert_eq!(supported_levels(&m), [Off, Minimal, Low, Medium, High]);
    assert_eq!(clamp_level(&m, Xhigh), High, "nothing above: scan down");
    assert_eq!(clamp_level(&m, Max), High);
    assert_eq!(clamp_level(&m, Low), Low);
}

#[test]
fn map_entries_enable_and_disable_levels() {
    let m = model(
        true,
        Some(json!({"off": null, "minimal": null, "low": "low", "xhigh": "xhigh", "max": null})),
    );
    assert_eq!(supported_levels(&m), [Low, Medium, High, Xhigh]);
    assert_eq!(clamp_level(&m, Off), Low, "scan up first");
    assert_eq!(clamp_level(&m, Minimal), Low);
    assert_eq!(clamp_level(&m, Max), Xhigh);
    assert_eq!(mapped_level_value(&m, Xhigh), Some("xhigh"));
    assert_eq!(mapped_level_value(&m, Medium), None);
    assert!(supports_level(&m, Xhigh));
    assert!(!supports_level(&m, Max));
}

#[test]
fn catalog_models_clamp_like_pi() {
    let r = ModelRegistry::builtin().unwrap();
    let gpt = r.get("openai", "gpt-5.2").unwrap();
    assert_eq!(supported_levels(gpt), [Off, Low, Medium, High, Xhigh]);
    assert_eq!(clamp_level(gpt, Minimal), Low);
    assert_eq!(clamp_level(gpt, Max), Xhigh);
    assert_eq!(mapped_level_value(gpt, Off), Some("none"));

    let deepseek = r.get("deepseek", "deepseek-v4-pro").unwrap();
    assert_eq!(supported_levels(deepseek), [Off, High, Max]);
    assert_eq!(clamp_level(deepseek, Low), High);
    assert_eq!(clamp_level(deepseek, Xhigh), Max);

    let opus = r.get("anthropic", "claude-opus-4-6").unwrap();
    assert_eq!(
        supported_levels(opus),
        [Off, Minimal, Low, Medium, High, Max]
    );
    assert_eq!(clamp_level(opus, Xhigh), Max, "upwards before downwards");

    let o3 = r.get("openai", "o3").unwrap();
    assert_eq!(clamp_level(o3, Off), Low, "o3 cannot turn reasoning off");

    let gpt4 = r.get("openai", "gpt-4.1").unwrap();
    assert_eq!(clamp_level(gpt4, High), Off);
}

#[test]
fn level_names_round_trip() {
    for level in ALL_LEVELS {
        assert_eq!(ThinkingLevel::parse(level.as_str()), Some(level));
        assert_eq!(serde_json::to_value(level).unwrap(), json!(level.as_str()));
    }
    assert_eq!(ThinkingLevel::parse("ultra"), None);
}

#[test]
fn budgets_default_and_override() {
    let d = ThinkingBudgets::default();
    assert_eq!(
        [Minimal, Low, Medium, High, Xhigh, Max].map(|l| d.budget_for(l)),
        [1024, 2048, 8192, 16384, 16384, 16384]
    );
    assert_eq!(d.budget_for(Off), 0);
    let custom = ThinkingBudgets::default()
        .with_medium(5000)
        .with_high(30000);
    assert_eq!(custom.budget_for(Medium), 5000);
    assert_eq!(custom.budget_for(Max), 30000, "xhigh/max follow high");
    assert_eq!(custom.budget_for(Low), 2048);
}

#[test]
fn max_tokens_grow_by_the_budget_within_the_model_limit() {
    let b = ThinkingBudgets::default();
    assert_eq!(
        adjust_max_tokens_for_thinking(None, 64000, High, &b),
        (64000, 16384)
    );
    assert_eq!(
        adjust_max_tokens_for_thinking(Some(4000), 64000, Medium, &b),
        (12192, 8192)
    );
    assert_eq!(
        adjust_max_tokens_for_thinking(Some(60000), 64000, High, &b),
        (64000, 16384)
    );
    // The model limit leaves no room: the budget shrinks to keep 1024 answer tokens.
    assert_eq!(
        adjust_max_tokens_for_thinking(None, 8192, High, &b),
        (8192, 7168)
    );
    assert_eq!(
        adjust_max_tokens_for_thinking(None, 1000, Minimal, &b),
        (1000, 0)
    );
    assert_eq!(clamp_budget_to_answer_room(5000, 4000), 2976);
    assert_eq!(MIN_ANSWER_TOKENS, 1024);
}
