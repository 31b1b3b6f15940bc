//! The secrets Arbor holds — provider keys and credential header values — kept out of what the
//! model's commands can see ([`EnvPolicy`]) and out of what Arbor persists or exports
//! ([`Redactor`], applied by [`RedactingStorage`] to every entry before it is appended and to
//! the HTML export). DECISIONS §30.7–§30.10.

mod redact;
mod storage;

use std::collections::BTreeSet;
use std::sync::Arc;

use arbor_ai::models::{
    api_key_env_vars, resolve_config_value, ModelRegistry, ANTHROPIC_AUTH_TOKEN_ENV,
};
use arbor_tools::env_policy::{EnvPolicy, EnvPolicyInput};

pub use redact::{Redactor, MIN_FRAGMENT, REDACTED};
pub use storage::RedactingStorage;

use crate::auth::AuthStore;
use crate::config::Settings;
use crate::error::CliError;

/// The redactor and tool environment policy of one run.
#[derive(Debug, Clone)]
pub struct Secrets {
    pub redactor: Arc<Redactor>,
    pub env_policy: Arc<EnvPolicy>,
}

/// Where a run's secrets come from.
pub struct SecretSources<'a> {
    pub registry: &'a ModelRegistry,
    pub auth: Option<&'a AuthStore>,
    /// `--api-key`.
    pub explicit_key: Option<&'a str>,
    pub settings: &'a Settings,
}

impl Secrets {
    /// Gathers the key variables and secret values Arbor knows at start-up. `!command` values
    /// are not run for this: their output joins the redactor when a request resolves it
    /// ([`Redactor::add`] from the provider, DECISIONS §30.9).
    pub fn gather(sources: &SecretSources<'_>) -> Result<Secrets, CliError> {
        let lookup = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut names: BTreeSet<String> = BTreeSet::new();
        let mut values: Vec<String> = Vec::new();
        names.insert(ANTHROPIC_AUTH_TOKEN_ENV.to_owned());
        for id in sources.registry.provider_ids() {
            names.extend(api_key_env_vars(id).iter().map(|s| (*s).to_owned()));
            let Some(provider) = sources.registry.provider(id) else {
                continue;
            };
            if let Some(config) = &provider.api_key_config {
                secret_config(&config.0, true, &mut names, &mut values);
            }
            let model_headers = provider.models.iter().filter_map(|m| m.headers.as_ref());
            for headers in std::iter::once(&provider.headers).chain(model_headers) {
                for (name, value) in headers {
                    if let Some(v) = value.as_str() {
                        secret_config(v, is_credential_header(name), &mut names, &mut values);
                    }
                }
            }
        }
        if let Some(auth) = sources.auth {
            for raw in auth.configured_values() {
                secret_config(&raw, true, &mut names, &mut values);
            }
        }
        values.extend(sources.explicit_key.map(str::to_owned));
        values.extend(names.iter().filter_map(|n| lookup(n)));
        let redactor = Redactor::new();
        for v in &values {
            redactor.add(v);
        }
        let (exclude, include) = sources.settings.tool_environment();
        let env_policy = EnvPolicy::build(
            &EnvPolicyInput {
                key_variables: names,
                exclude: &exclude,
                include: &include,
            },
            std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()),
        )?;
        Ok(Secrets {
            redactor: Arc::new(redactor),
            env_policy: Arc::new(env_policy),
        })
    }

    /// The secrets of a run in the current directory, loading settings, models.json and
    /// auth.json itself (commands that run without a started agent: the export).
    pub fn for_current_run() -> Result<Secrets, CliError> {
        let home = crate::config::arbor_home();
        let cwd = std::env::current_dir().map_err(|e| CliError::io("current directory", e))?;
        let settings = Settings::load(&home, &cwd)?;
        let mut registry = ModelRegistry::builtin().map_err(|e| CliError::Config(e.to_string()))?;
        crate::models_json::load_models_json(&mut registry, &home.join("models.json"))?;
        let auth = AuthStore::load(&home)?;
        Secrets::gather(&SecretSources {
            registry: &registry,
            auth: Some(&auth),
            explicit_key: None,
            settings: &settings,
        })
    }

    /// Nothing known: no redaction, every variable passed (tests, tools built without a run).
    pub fn none() -> Secrets {
        Secrets {
            redactor: Arc::new(Redactor::new()),
            env_policy: Arc::new(EnvPolicy::default()),
        }
    }
}

/// A header whose value is a credential by its name (the rest — `X-Title`, `HTTP-Referer` —
/// are redacted only when they come from a variable or command).
pub fn is_credential_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "auth", "key", "token", "secret", "cookie", "password", "session",
    ]
    .iter()
    .any(|w| name.contains(w))
}

/// Notes a models.json / auth.json value: the variables it names, and its value when it is a
/// secret (`secret`, or taken from a variable). `!command` values are left to request time.
fn secret_config(raw: &str, secret: bool, names: &mut BTreeSet<String>, values: &mut Vec<String>) {
    if raw.starts_with('!') {
        return;
    }
    let referenced = variable_names(raw);
    // A bare variable name (`"apiKey": "MY_KEY"`) set in the environment counts as one too.
    if referenced.is_empty() && is_env_name(raw) && std::env::var_os(raw).is_some() {
        names.insert(raw.to_owned());
    }
    let from_variable = !referenced.is_empty();
    names.extend(referenced);
    if secret || from_variable {
        values.extend(resolve_config_value(raw));
    }
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c == '_' || c.is_ascii_uppercase() || c.is_ascii_digit())
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// The variables `$NAME` / `${NAME}` in a config value names (`$$` and `$!` are literals).
fn variable_names(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = raw;
    while let Some(pos) = rest.find('$') {
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$').or_else(|| after.strip_prefix('!')) {
            rest = tail;
            continue;
        }
        let (body, tail) = match after.strip_prefix('{') {
            Some(braced) => match braced.find('}') {
                Some(end) => (&braced[..end], &braced[end + 1..]),
                None => ("", braced),
            },
            None => {
                let len = after
                    .char_indices()
                    .take_while(|(i, c)| {
                        *c == '_' || c.is_ascii_alphabetic() || (*i > 0 && c.is_ascii_digit())
                    })
                    .count();
                (&after[..len], &after[len..])
            }
        };
        if !body.is_empty() && body.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
            out.push(body.to_owned());
        }
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_names_follow_the_config_syntax() {
        assert_eq!(variable_names("$A_KEY"), ["A_KEY"]);
        assert_eq!(variable_names("Bearer ${TOKEN_1}x $B"), ["TOKEN_1", "B"]);
        assert!(variable_names("$$LITERAL $!bang plain").is_empty());
    }

    #[test]
    fn credential_headers_are_known_by_name() {
        assert!(is_credential_header("Authorization"));
        assert!(is_credential_header("x-api-key"));
        assert!(!is_credential_header("X-Title"));
    }
}
