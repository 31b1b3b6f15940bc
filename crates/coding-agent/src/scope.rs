//! The model scope (`--models`, settings `enabledModels`): the models `cycle_model` steps
//! through, each with an optional thinking level. Patterns follow pi's resolver (DECISIONS §22.15):
//! `provider/id` or `id`, exact first, else a case-insensitive substring of
//! the id or name (aliases before dated ids, then the highest id); globs (`*`, `?`, `[`) match
//! `provider/id` or the bare id; a `:level` suffix sets the thinking level.

use arbor_ai::{Model, ThinkingLevel};

/// One model of the scope.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedModel {
    pub model: Model,
    /// `None`: keep the session's level when cycling to it.
    pub thinking: Option<ThinkingLevel>,
}

/// The scope and pi's warnings about patterns that matched nothing or several providers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scope {
    pub models: Vec<ScopedModel>,
    pub warnings: Vec<String>,
}

/// Splits `--models a,b , c` into its non-empty patterns.
pub fn split_patterns(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

fn is_glob(p: &str) -> bool {
    p.contains('*') || p.contains('?') || p.contains('[')
}

/// A trailing `:level` that names a thinking level.
fn split_level(p: &str) -> Option<(&str, ThinkingLevel)> {
    let (base, level) = p.rsplit_once(':')?;
    ThinkingLevel::parse(level).map(|l| (base, l))
}

/// pi prefers aliases (`claude-sonnet-4-5`) over dated ids (`…-20250929`), then the highest id.
fn best_fuzzy<'a>(matches: &[&'a Model]) -> Option<&'a Model> {
    let dated = |id: &str| {
        !id.ends_with("-latest")
            && id.len() > 9
            && id.as_bytes()[id.len() - 9] == b'-'
            && id[id.len() - 8..].bytes().all(|b| b.is_ascii_digit())
    };
    let aliases: Vec<&Model> = matches.iter().copied().filter(|m| !dated(&m.id)).collect();
    let pool = if aliases.is_empty() {
        matches.to_vec()
    } else {
        aliases
    };
    pool.into_iter().max_by(|a, b| a.id.cmp(&b.id))
}

/// Exact (`provider/id` or `id`, case-insensitive) or, with `fuzzy`, substring matches.
fn lookup<'a>(text: &str, pool: &'a [Model], fuzzy: bool) -> Vec<&'a Model> {
    let lower = text.to_lowercase();
    let mut named: Option<&Model> = None;
    if let Some((provider, rest)) = text.split_once('/') {
        let of: Vec<&Model> = pool.iter().filter(|m| m.provider == provider).collect();
        let rest_lower = rest.to_lowercase();
        named = of
            .iter()
            .copied()
            .find(|m| m.id.to_lowercase() == rest_lower)
            .or_else(|| {
                if !fuzzy {
                    return None;
                }
                let hits: Vec<&Model> = of
                    .iter()
                    .copied()
                    .filter(|m| {
                        m.id.to_lowercase().contains(&rest_lower)
                            || m.name.to_lowercase().contains(&rest_lower)
                    })
                    .collect();
                best_fuzzy(&hits)
            });
    }
    let raw: Vec<&Model> = pool
        .iter()
        .filter(|m| m.id.to_lowercase() == lower)
        .filter(|m| named.is_none_or(|n| !std::ptr::eq(*m, n)))
        .collect();
    if let Some(n) = named {
        // The named provider wins (pi's rule when it is usable; every scope model is).
        return vec![n];
    }
    if !raw.is_empty() || !fuzzy {
        return raw;
    }
    let hits: Vec<&Model> = pool
        .iter()
        .filter(|m| m.id.to_lowercase().contains(&lower) || m.name.to_lowercase().contains(&lower))
        .collect();
    let Some(best) = best_fuzzy(&hits) else {
        return Vec::new();
    };
    // The same id on several providers: all of them, with a warning.
    hits.into_iter().filter(|m| m.id == best.id).collect()
}

/// Resolves `patterns` against `available` (the models with credentials), in pattern order,
/// without duplicates.
pub fn resolve(patterns: &[String], available: &[Model]) -> Scope {
    let mut scope = Scope::default();
    let add = |scope: &mut Scope, m: &Model, thinking: Option<ThinkingLevel>| {
        if !scope
            .models
            .iter()
            .any(|s| s.model.provider == m.provider && s.model.id == m.id)
        {
            scope.models.push(ScopedModel {
                model: m.clone(),
                thinking,
            });
        }
    };
    for pattern in patterns {
        let (base, thinking) = match split_level(pattern) {
            Some((b, l)) => (b, Some(l)),
            None => (pattern.as_str(), None),
        };
        let matches: Vec<&Model> = if is_glob(base) {
            let exact = lookup(base, available, false);
            if exact.is_empty() {
                match globset::GlobBuilder::new(base)
                    .case_insensitive(true)
                    .literal_separator(false)
                    .build()
                {
                    Ok(g) => {
                        let g = g.compile_matcher();
                        available
                            .iter()
                            .filter(|m| {
                                g.is_match(format!("{}/{}", m.provider, m.id)) || g.is_match(&m.id)
                            })
                            .collect()
                    }
                    Err(_) => Vec::new(),
                }
            } else {
                exact
            }
        } else {
            if thinking.is_none() {
                if let Some((_, suffix)) = pattern.rsplit_once(':') {
                    if !lookup(
                        &pattern[..pattern.len() - suffix.len() - 1],
                        available,
                        true,
                    )
                    .is_empty()
                        && lookup(pattern, available, true).is_empty()
                    {
                        scope.warnings.push(format!(
                            "Invalid thinking level \"{suffix}\" in pattern \"{pattern}\". Using default instead."
                        ));
                        let inner = &pattern[..pattern.len() - suffix.len() - 1];
                        for m in lookup(inner, available, true) {
                            add(&mut scope, m, None);
                        }
                        continue;
                    }
                }
            }
            lookup(base, available, true)
        };
        if matches.is_empty() {
            scope
                .warnings
                .push(format!("No models match pattern \"{pattern}\""));
            continue;
        }
        let mut providers: Vec<&str> = matches.iter().map(|m| m.provider.as_str()).collect();
        providers.sort_unstable();
        providers.dedup();
        if providers.len() > 1 && !is_glob(base) {
            scope.warnings.push(format!(
                "Pattern \"{pattern}\" matches several providers: {}. Use provider/id to choose one.",
                providers.join(", ")
            ));
        }
        for m in matches {
            add(&mut scope, m, thinking);
        }
    }
    scope
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(provider: &str, id: &str, name: &str) -> Model {
        Model {
            provider: provider.into(),
            id: id.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    fn pool() -> Vec<Model> {
        vec![
            model("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5"),
            model(
                "anthropic",
                "claude-sonnet-4-5-20250929",
                "Claude Sonnet 4.5 (dated)",
            ),
            model("anthropic", "claude-haiku-4-5", "Claude Haiku 4.5"),
            model("openai", "gpt-5", "GPT-5"),
            model("openai", "gpt-5-mini", "GPT-5 mini"),
            model("openrouter", "gpt-5", "GPT-5 via OpenRouter"),
        ]
    }

    fn ids(s: &Scope) -> Vec<String> {
        s.models
            .iter()
            .map(|m| {
                format!(
                    "{}/{}{}",
                    m.model.provider,
                    m.model.id,
                    m.thinking
                        .map_or(String::new(), |t| format!(":{}", t.as_str()))
                )
            })
            .collect()
    }

    #[test]
    fn fuzzy_patterns_prefer_aliases_and_keep_thinking_suffixes() {
        let s = resolve(&split_patterns("sonnet:high, haiku:low ,"), &pool());
        assert_eq!(
            ids(&s),
            [
                "anthropic/claude-sonnet-4-5:high",
                "anthropic/claude-haiku-4-5:low"
            ]
        );
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn globs_match_provider_slash_id_or_the_bare_id() {
        let s = resolve(&split_patterns("openai/*"), &pool());
        assert_eq!(ids(&s), ["openai/gpt-5", "openai/gpt-5-mini"]);
        let s = resolve(&split_patterns("*MINI*:low"), &pool());
        assert_eq!(ids(&s), ["openai/gpt-5-mini:low"]);
    }

    #[test]
    fn ambiguous_and_unmatched_patterns_warn_in_pis_words() {
        let s = resolve(
            &split_patterns("gpt-5,nothing-like-this,openai/gpt-5"),
            &pool(),
        );
        assert_eq!(ids(&s), ["openai/gpt-5", "openrouter/gpt-5"]);
        assert_eq!(
            s.warnings,
            [
                "Pattern \"gpt-5\" matches several providers: openai, openrouter. Use provider/id to choose one.",
                "No models match pattern \"nothing-like-this\"",
            ]
        );
    }

    #[test]
    fn an_invalid_suffix_warns_and_uses_the_default_level() {
        let s = resolve(&split_patterns("gpt-5-mini:turbo"), &pool());
        assert_eq!(ids(&s), ["openai/gpt-5-mini"]);
        assert_eq!(
            s.warnings,
            ["Invalid thinking level \"turbo\" in pattern \"gpt-5-mini:turbo\". Using default instead."]
        );
    }
}
