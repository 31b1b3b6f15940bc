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

/// Resolves credentials and streams through arbor-ai's clients.
pub struct AppProvider {
    registry: Arc<ModelRegistry>,
    auth: Arc<AuthStore>,
    /// `--api-key`: wins for every provider, never stored.
    explicit: Option<ApiKey>,
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
        }
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
        arbor_ai::providers::BuiltinProvider.stream(model, context, options)
    }
}
