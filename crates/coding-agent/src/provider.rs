//! The provider the app hands the harness: the built-in HTTP clients of arbor-ai, with the
//! credential and headers of each request resolved here, at request time (`!command` keys and
//! headers run per request, as models.json documents; auth.json `!command` keys once per
//! process). Key order: `--api-key`, auth.json, models.json `apiKey`, then the provider's
//! environment variables (DECISIONS §22.5).

use std::sync::Arc;

use arbor_ai::models::{ApiKey, ModelRegistry};
use arbor_ai::stream::{ApiProvider, StreamOptions};
use arbor_ai::{AssistantMessageEventStream, Context, Model};

use crate::auth::AuthStore;
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

    /// The key a request to `provider` will carry.
    pub fn api_key(&self, provider: &str) -> Option<ApiKey> {
        let stored = self
            .explicit
            .clone()
            .or_else(|| self.auth.api_key(provider));
        self.registry.api_key(provider, stored)
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
            options.api_key = self.api_key(&model.provider).map(|k| k.expose().to_owned());
        }
        for (name, value) in self.registry.resolved_headers(model) {
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
