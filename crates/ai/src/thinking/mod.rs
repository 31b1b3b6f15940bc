//! Which thinking levels a model offers, and the token budgets behind them.
//!
//! The user picks one level for the session; models differ in what they accept. These
//! functions are model-level only (pi-ai 1.6.0 `models.ts` and `api/simple-options.ts`);
//! mapping a level to wire parameters is each provider adapter's job.

pub mod native;

use serde_json::Value;

use crate::types::{Model, ThinkingLevel};

/// All levels, weakest first; clamping walks this order.
pub const ALL_LEVELS: [ThinkingLevel; 7] = ThinkingLevel::ALL;

/// Answer room kept free of thinking when a budget has to shrink to fit `max_tokens`.
pub const MIN_ANSWER_TOKENS: u64 = 1024;

/// The model's entry for `level` in its `thinkingLevelMap`:
/// `None` = no entry, `Some(Value::Null)` = unsupported, `Some(value)` = native value.
pub fn level_map_entry(model: &Model, level: ThinkingLevel) -> Option<&Value> {
    model.thinking_level_map.as_ref()?.get(level.as_str())
}

/// The native value to send for `level`, when the model's map names one.
pub fn mapped_level_value(model: &Model, level: ThinkingLevel) -> Option<&str> {
    level_map_entry(model, level)?.as_str()
}

/// Levels the model accepts, weakest first. A model without reasoning only has `off`; a
/// level mapped to `null` is unsupported; `xhigh` and `max` need an explicit entry.
pub fn supported_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    ALL_LEVELS
        .into_iter()
        .filter(|level| match level_map_entry(model, *level) {
            Some(Value::Null) => false,
            Some(_) => true,
            None => !matches!(level, ThinkingLevel::Xhigh | ThinkingLevel::Max),
        })
        .collect()
}

/// Whether the model accepts `level` as is.
pub fn supports_level(model: &Model, level: ThinkingLevel) -> bool {
    supported_levels(model).contains(&level)
}

/// The nearest level the model accepts: `level` itself, else the first supported level above
/// it, else the first below it, else `off`.
pub fn clamp_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let available = supported_levels(model);
    if available.contains(&level) {
        return level;
    }
    let index = ALL_LEVELS.iter().position(|l| *l == level).unwrap_or(0);
    if let Some(up) = ALL_LEVELS[index..].iter().find(|l| available.contains(l)) {
        return *up;
    }
    if let Some(down) = ALL_LEVELS[..index]
        .iter()
        .rev()
        .find(|l| available.contains(l))
    {
        return *down;
    }
    available.first().copied().unwrap_or(ThinkingLevel::Off)
}

/// Per-level thinking token budgets; unset levels use [`ThinkingBudgets::DEFAULT`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThinkingBudgets {
    /// Budget of `minimal`.
    pub minimal: Option<u64>,
    /// Budget of `low`.
    pub low: Option<u64>,
    /// Budget of `medium`.
    pub medium: Option<u64>,
    /// Budget of `high` (also used for `xhigh` and `max`).
    pub high: Option<u64>,
}

crate::setters::with_setters!(ThinkingBudgets {
    opt minimal => with_minimal: u64,
    opt low => with_low: u64,
    opt medium => with_medium: u64,
    opt high => with_high: u64,
});

impl ThinkingBudgets {
    /// pi's defaults: 1024 / 2048 / 8192 / 16384 tokens.
    pub const DEFAULT: ThinkingBudgets = ThinkingBudgets {
        minimal: Some(1024),
        low: Some(2048),
        medium: Some(8192),
        high: Some(16384),
    };

    /// Budget for `level`: the caller's override, else the default. `xhigh` and `max` use the
    /// `high` budget; `off` has none.
    pub fn budget_for(&self, level: ThinkingLevel) -> u64 {
        let pick = |own: Option<u64>, default: Option<u64>| own.or(default).unwrap_or(0);
        let d = Self::DEFAULT;
        match level {
            ThinkingLevel::Off => 0,
            ThinkingLevel::Minimal => pick(self.minimal, d.minimal),
            ThinkingLevel::Low => pick(self.low, d.low),
            ThinkingLevel::Medium => pick(self.medium, d.medium),
            ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => {
                pick(self.high, d.high)
            }
        }
    }
}

/// Caps a thinking budget so that at least [`MIN_ANSWER_TOKENS`] remain under `ceiling`.
pub fn clamp_budget_to_answer_room(budget: u64, ceiling: u64) -> u64 {
    budget.min(ceiling.saturating_sub(MIN_ANSWER_TOKENS))
}

/// `max_tokens` and thinking budget for budget-based thinking (Anthropic pre-adaptive models,
/// Bedrock Claude). Without a caller limit the model's maximum is used; with one, the budget
/// is added on top (capped at the model maximum). A budget that would eat the whole limit
/// shrinks to leave answer room.
pub fn adjust_max_tokens_for_thinking(
    base_max_tokens: Option<u64>,
    model_max_tokens: u64,
    level: ThinkingLevel,
    budgets: &ThinkingBudgets,
) -> (u64, u64) {
    let mut budget = budgets.budget_for(level);
    let max_tokens = match base_max_tokens {
        None => model_max_tokens,
        Some(base) => base.saturating_add(budget).min(model_max_tokens),
    };
    if max_tokens <= budget {
        budget = clamp_budget_to_answer_room(budget, max_tokens);
    }
    (max_tokens, budget)
}

/// Google models configured with `thinkingLevel` rather than a token budget.
pub fn uses_thinking_level(model: &Model) -> bool {
    let id = model.id.to_ascii_lowercase();
    let after = |prefix: &str| id.find(prefix).map(|i| &id[i + prefix.len()..]);
    let gemini3 = after("gemini-3").is_some_and(|rest| {
        let rest = rest
            .strip_prefix('.')
            .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()))
            .unwrap_or(rest);
        rest.starts_with("-pro") || rest.starts_with("-flash")
    });
    let gemini4plus = id.match_indices("gemini-").any(|(i, _)| {
        let rest = &id[i + 7..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().is_ok_and(|v| v >= 4)
    });
    gemini3
        || gemini4plus
        || id == "gemini-flash-latest"
        || id == "gemini-flash-lite-latest"
        || id.contains("gemma4")
        || id.contains("gemma-4")
}

/// What `thinkingLevelMap[level]` says.
#[derive(Debug, Clone, PartialEq)]
pub enum LevelMapping {
    /// No entry: provider default.
    Missing,
    /// `null`: level unsupported.
    Unsupported,
    /// The provider-native value.
    Value(String),
}

/// What the model's `thinkingLevelMap` says about the level named `level`.
pub fn level_mapping(model: &Model, level: &str) -> LevelMapping {
    match model.thinking_level_map.as_ref().and_then(|m| m.get(level)) {
        None => LevelMapping::Missing,
        Some(Value::Null) => LevelMapping::Unsupported,
        Some(Value::String(s)) => LevelMapping::Value(s.clone()),
        Some(other) => LevelMapping::Value(other.to_string()),
    }
}

/// `map[level] ?? level`.
pub fn mapped_level(model: &Model, level: &str) -> String {
    match level_mapping(model, level) {
        LevelMapping::Value(v) => v,
        _ => level.to_string(),
    }
}
