//! The provider the app hands the harness: the built-in HTTP clients of arbor-ai, with the
//! credential and headers of each request resolved here, at request time (`!command` keys and
//! headers run per request, as models.json documents; auth.json `!command` keys once per
//! process). Key order: `--api-key`, auth.json, models.json `apiKey`, then the provider's
//! environment variables (DECISIONS §22.5).

use std::sync::Arc;

use arbor_ai::models::{ApiKey, ModelRegistry, SecretConfig};
use arbor_ai::stream::{ApiProvider, StreamOptions};
use arbor_ai::{AssistantMessageEventStream, Context, Model};

use crate::auth::AuthStore;
use crate::key_command::{self, KeyCommandError};
use crate::secrets::Redactor;

/// Resolves credentials and streams through arbor-ai's clients.
pub struct AppProvider {
    registry: Arc<ModelRegistry>,
    auth: Arc<AuthStore>,
    /// `--api-key`: wins for every provider, never stored.
    explicit: Option<ApiKey>,
    /// Learns every key and header value a request carries, so a `!command` key resolved
    /// at request time is redacted too (DECISIONS §30.9).
    redactor: Option<Arc<Redactor>>,
}

impl std::fmt::Debug for AppProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppProvider")
            .field("explicit_key", &self.explicit.is_some())
            .finish()
    }
}

impl AppProvider {
    pub fn new(
        registry: Arc<ModelRegistry>,
        auth: Arc<AuthStore>,
        explicit: Option<ApiKey>,
    ) -> Self {
        AppProvider {
            registry,
            auth,
            explicit,
            redactor: None,
        }
    }

    /// Hands every credential a request carries to `redactor`.
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Self {
        self.redactor = Some(redactor);
        self
    }

    /// Whether `models.json` names a key for `provider` (resolved or not).
    pub fn declares_key(&self, provider: &str) -> bool {
        self.registry
            .provider(provider)
            .is_some_and(|p| p.api_key_config.is_some())
    }

    /// The auth.json store this provider reads (`/login` and `/logout` update it).
    pub fn auth(&self) -> &Arc<AuthStore> {
        &self.auth
    }

    /// The key a request to `provider` will carry.
    pub fn api_key(&self, provider: &str) -> Option<ApiKey> {
        self.api_key_checked(provider).ok().flatten()
    }

    /// [`Self::api_key`], with a failed `!command` reported rather than read as "no key"
    /// (DECISIONS §28.6).
    pub fn api_key_checked(&self, provider: &str) -> Result<Option<ApiKey>, KeyCommandError> {
        if let Some(k) = &self.explicit {
            return Ok(Some(k.clone()));
        }
        if let Some(k) = self.auth.api_key_checked(provider)? {
            return Ok(Some(k));
        }
        let configured = self
            .registry
            .provider(provider)
            .and_then(|p| p.api_key_config.as_ref());
        if let Some(SecretConfig(config)) = configured {
            if let Some(k) = key_command::resolve(provider, "models.json", config)? {
                return Ok(Some(ApiKey::new(k)));
            }
        }
        Ok(arbor_ai::models::env_api_key(provider))
    }

    /// The provider's `headers`, then the model's (later wins, names compared
    /// case-insensitively), each `!command` run bounded; a value that resolves to nothing is
    /// left out, as arbor-ai's own resolution does.
    fn headers(&self, model: &Model) -> Result<Vec<(String, String)>, KeyCommandError> {
        let mut out: Vec<(String, String)> = Vec::new();
        let provider_headers = self.registry.provider(&model.provider).map(|p| &p.headers);
        for headers in provider_headers.into_iter().chain(model.headers.as_ref()) {
            for (name, value) in headers {
                out.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
                let Some(raw) = value.as_str() else { continue };
                if let Some(v) = key_command::resolve(&model.provider, "models.json", raw)? {
                    out.push((name.clone(), v));
                }
            }
        }
        Ok(out)
    }
}

impl ApiProvider for AppProvider {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        mut options: StreamOptions,
    ) -> AssistantMessageEventStream {
        if options.api_key.is_none() {
            match self.api_key_checked(&model.provider) {
                Ok(key) => options.api_key = key.map(|k| k.expose().to_owned()),
                Err(e) => return arbor_ai::error_stream(model, e.to_string()),
            }
        }
        let headers = match self.headers(model) {
            Ok(h) => h,
            Err(e) => return arbor_ai::error_stream(model, e.to_string()),
        };
        for (name, value) in headers {
            if !options
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(&name))
            {
                options.headers.push((name, Some(value)));
            }
        }
        if let Some(redactor) = &self.redactor {
            redactor.add_all(options.api_key.iter().map(String::as_str));
            redactor.add_all(
                options
                    .headers
                    .iter()
                    .filter(|(name, _)| crate::secrets::is_credential_header(name))
                    .filter_map(|(_, v)| v.as_deref()),
            );
        }
        arbor_ai::providers::BuiltinProvider.stream(model, context, options)
    }
}
