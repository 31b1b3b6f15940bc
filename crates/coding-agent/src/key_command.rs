//! `!command` credentials and header values (`apiKey: "!pass show openai"` in auth.json or
//! models.json): run through [`arbor_tools::process::run_helper`] with a 10 s bound, in a process
//! group of their own, so a command that hangs neither holds start-up or a request forever
//! nor outlives arbor; a failure names the provider and the file (DECISIONS §28.6).

use std::sync::Arc;

use arbor_tools::process::helper::HELPER_TIMEOUT;
use arbor_tools::process::{run_helper, HelperError};

/// A `!command` credential that gave no value.
#[derive(Debug, Clone, thiserror::Error)]
#[error("The API key command for provider \"{provider}\" in {file} failed: {cause}")]
pub struct KeyCommandError {
    pub provider: String,
    /// `auth.json` or `models.json`.
    pub file: &'static str,
    #[source]
    pub cause: Arc<HelperError>,
}

/// Resolves one configured value: `!command` runs (bounded), anything else is expanded as
/// arbor-ai does (`$VAR`, `${VAR}`; `None` when a variable is unset).
pub fn resolve(
    provider: &str,
    file: &'static str,
    config: &str,
) -> Result<Option<String>, KeyCommandError> {
    match config.strip_prefix('!') {
        Some(command) => run_helper(command, HELPER_TIMEOUT)
            .map(Some)
            .map_err(|cause| KeyCommandError {
                provider: provider.to_owned(),
                file,
                cause: Arc::new(cause),
            }),
        None => Ok(arbor_ai::models::resolve_config_value(config)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_command_names_its_provider_and_file() {
        assert_eq!(
            resolve("openai", "auth.json", "!echo sk-1")
                .unwrap()
                .as_deref(),
            Some("sk-1")
        );
        let e = resolve("openai", "models.json", "!exit 2").unwrap_err();
        assert!(
            e.to_string().starts_with(
                "The API key command for provider \"openai\" in models.json failed: the command exited with"
            ),
            "{e}"
        );
        assert_eq!(
            resolve("x", "auth.json", "plain").unwrap().as_deref(),
            Some("plain")
        );
    }
}
