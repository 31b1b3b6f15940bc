//! Which models a run may switch to and the thinking levels a model offers: one rule for
//! `get_available_models`, `cycle_model`, `--list-models`, the TUI's Ctrl+P and Shift+Tab.

use arbor_ai::{Model, ThinkingLevel};

use crate::provider::AppProvider;
use crate::scope::ScopedModel;

/// Whether a model can be used now: its provider has credentials, or it is a local server
/// that asks for none. A provider whose `models.json` names a key (`apiKey`) that resolves to
/// nothing waits for one even on a local URL (DECISIONS §23.171): the user said it needs one.
/// One rule for start-up's choice, the scope, Ctrl+P, `--list-models` and RPC.
pub fn usable(provider: &AppProvider, m: &Model) -> bool {
    provider.api_key(&m.provider).is_some()
        || (is_local_url(&m.base_url) && !provider.declares_key(&m.provider))
}

/// Whether `url`'s host is this machine: `localhost` or a loopback address.
pub fn is_local_url(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// The thinking levels a model can be set to, in cycling order.
pub fn levels(model: &Model) -> Vec<&'static str> {
    if model.reasoning {
        vec!["off", "minimal", "low", "medium", "high"]
    } else {
        vec!["off"]
    }
}

/// `level` as `model` can run it: the highest of its levels not above the one asked for, so a
/// model without reasoning stays `off` (pi clamps the same way).
pub fn clamp_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    levels(model)
        .iter()
        .filter_map(|l| ThinkingLevel::parse(l))
        .filter(|l| *l <= level)
        .max()
        .unwrap_or(ThinkingLevel::Off)
}

/// The level after `current` for `model`, wrapping around (from the first when `current` is
/// not one of them); `None` when the model has a single level (no reasoning).
pub fn next_level(model: &Model, current: ThinkingLevel) -> Option<ThinkingLevel> {
    let all = levels(model);
    if all.len() <= 1 {
        return None;
    }
    let cur = current.as_str();
    let i = all
        .iter()
        .position(|l| *l == cur)
        .map_or(0, |i| (i + 1) % all.len());
    Some(ThinkingLevel::parse(all[i]).unwrap_or(ThinkingLevel::Off))
}

/// pi's `cycle_model` pool: the `--models` scope entries that are usable (with their thinking
/// levels), or else every usable model.
pub fn cycle_pool<'m>(
    usable_models: impl Iterator<Item = &'m Model>,
    scope: &[ScopedModel],
) -> Vec<(Model, Option<ThinkingLevel>)> {
    let available: Vec<&Model> = usable_models.collect();
    if scope.is_empty() {
        return available.into_iter().map(|m| (m.clone(), None)).collect();
    }
    scope
        .iter()
        .filter(|s| {
            available
                .iter()
                .any(|m| m.provider == s.model.provider && m.id == s.model.id)
        })
        .map(|s| (s.model.clone(), s.thinking))
        .collect()
}

/// The entry of `pool` after the `current` model (the first when `current` is not in it);
/// `None` when there is nothing to switch to.
pub fn next_in_pool<T>(pool: &[T], is_current: impl Fn(&T) -> bool) -> Option<&T> {
    let at = pool.iter().position(is_current);
    let next = match (at, pool.len()) {
        (_, 0) | (Some(_), 1) => return None,
        (None, _) => 0,
        (Some(i), n) => (i + 1) % n,
    };
    pool.get(next)
}
