//! One configured provider: connection settings, unresolved credentials, its models.

use std::fmt;

use serde_json::{Map, Value};

use crate::types::Model;

/// One provider as configured: connection settings plus its models.
#[derive(Clone)]
pub struct ProviderConfig {
    /// The provider id (`anthropic`, `ollama`, ...).
    pub id: String,
    /// A display name.
    pub name: String,
    /// Default base URL of the provider's models.
    pub base_url: Option<String>,
    /// Default API of the provider's models.
    pub api: Option<String>,
    /// Unresolved `apiKey` from `models.json` (literal, `$VAR` or `!command`); see
    /// [`resolve_config_value`](super::resolve_config_value). Kept unresolved so nothing secret sits in memory or logs early.
    pub api_key_config: Option<SecretConfig>,
    /// Unresolved header values (resolved like the API key at request time).
    pub headers: Map<String, Value>,
    /// Send the key as `Authorization: Bearer` instead of the API's own header.
    pub auth_header: bool,
    /// The provider's models, in catalogue order.
    pub models: Vec<Model>,
}

impl fmt::Debug for ProviderConfig {
    // Header values may be literal secrets (`Authorization: Bearer …`): only names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api", &self.api)
            .field("api_key_config", &self.api_key_config)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("auth_header", &self.auth_header)
            .field(
                "models",
                &self.models.iter().map(|m| &m.id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// An unresolved credential reference; redacted in `Debug` because a literal key may be in it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretConfig(pub String);

impl fmt::Debug for SecretConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.starts_with('!') {
            f.write_str("SecretConfig(<command>)")
        } else if self.0.starts_with('$') {
            // An environment reference is no secret; show it for diagnostics.
            write!(f, "SecretConfig({})", self.0)
        } else {
            f.write_str("SecretConfig(<redacted>)")
        }
    }
}
