//! Which model a run starts with: `--model provider/id[:thinking]`, then the settings, then
//! the first model that has credentials.

use arbor_ai::models::ModelRegistry;
use arbor_ai::{Model, ThinkingLevel};

use crate::cli::AgentArgs;
use crate::config::Settings;
use crate::error::CliError;
use crate::provider::AppProvider;

/// Parses `provider/id[:thinking]` or `id[:thinking]`.
pub fn split_thinking(spec: &str) -> (&str, Option<ThinkingLevel>) {
    if let Some((m, t)) = spec.rsplit_once(':') {
        if let Some(level) = ThinkingLevel::parse(t) {
            return (m, Some(level));
        }
    }
    (spec, None)
}

/// Picks the model: flags, then settings, then the first model whose provider has a key.
pub(super) fn choose_model(
    a: &AgentArgs,
    settings: &Settings,
    registry: &ModelRegistry,
    provider: &AppProvider,
) -> Result<(Model, Option<ThinkingLevel>), CliError> {
    let unknown = |e: arbor_ai::AiError| CliError::Startup(format!("Error: {e}"));
    if let Some(spec) = &a.model {
        let (m, level) = split_thinking(spec);
        let model = match &a.provider {
            Some(p) if !m.contains('/') => registry
                .get(p, m)
                .cloned()
                .ok_or_else(|| CliError::Startup(format!("Error: Model not found: {p}/{m}")))?,
            _ => registry.find(m).map_err(unknown)?.clone(),
        };
        return Ok((model, level));
    }
    let wanted_provider = a.provider.clone().or_else(|| settings.default_provider());
    if let Some(id) = settings.default_model() {
        let found = match &wanted_provider {
            Some(p) => registry.get(p, &id).cloned(),
            None => registry.find(&id).ok().cloned(),
        };
        if let Some(m) = found {
            return Ok((m, None));
        }
    }
    if let Some(p) = &wanted_provider {
        return registry
            .provider_models(p)
            .first()
            .cloned()
            .map(|m| (m, None))
            .ok_or_else(|| CliError::Startup(format!("Error: Unknown provider: {p}")));
    }
    for pid in registry.provider_ids() {
        let models = registry.provider_models(pid);
        let Some(first) = models.first() else {
            continue;
        };
        if crate::command::models::usable(provider, first) {
            return Ok((first.clone(), None));
        }
    }
    // The onboarding text (DECISIONS §23.170): the TUI opens on it, print mode prints it.
    Err(CliError::NoModel {
        models_json: crate::config::arbor_home().join("models.json"),
    })
}
