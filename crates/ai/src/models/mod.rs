//! The model catalogue: built-in models, user models from `models.json`, cost and API keys.
//!
//! The built-in catalogue (`models/catalog.json`, a selection of pi-ai 1.6.0's data files)
//! uses the same format as the user's `models.json`, so one loader reads both and user files
//! layer over the built-ins exactly like pi's: a provider entry may move a built-in provider
//! (`baseUrl`), add or replace models, patch single models (`modelOverrides`) or define a new
//! provider (a local llama.cpp, Ollama or vLLM server).
//!
//! Files: `registry` ([`ModelRegistry`]), `definitions` (the `models.json` format),
//! `provider` ([`ProviderConfig`]), `api_key` ([`ApiKey`], environment and command
//! references), `cost` ([`calculate_cost`]), `compat` (`model.compat` flags).

mod api_key;
mod compat;
mod cost;
mod definitions;
mod provider;
mod registry;

pub use api_key::{
    api_key_env_vars, env_api_key, env_api_key_with, resolve_config_value,
    resolve_config_value_with, ApiKey, ANTHROPIC_AUTH_TOKEN_ENV,
};
pub use compat::{compat_bool, compat_str, compat_value};
pub use cost::calculate_cost;
pub use definitions::{strip_json_comments, DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS};
pub use provider::{ProviderConfig, SecretConfig};
pub use registry::{ModelRegistry, BUILTIN_CATALOG_JSON, BUILTIN_CATALOG_NAME};
