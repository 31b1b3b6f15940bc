//! The provider trait and the process-wide table of registered implementations.
//!
//! A leaf below both the dispatch ([`crate::stream`]) and the HTTP clients
//! ([`crate::providers`]), so that layers without HTTP (the agent harness, tests with the faux
//! provider) can take an `Arc<dyn ApiProvider>` and the app can hand in the real clients
//! (`providers::BuiltinProvider`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use crate::emit::error_stream;
use crate::event::AssistantMessageEventStream;
use crate::options::{SimpleStreamOptions, StreamOptions};
use crate::types::{Context, Model};

/// A streaming implementation of one `api` kind. Built-in APIs are dispatched directly; others
/// (or overrides) are registered with [`register_api_provider`].
///
/// A provider for a custom `api` that answers through another one (here the faux provider,
/// standing in for an HTTP client) after adding a system prompt:
///
/// ```
/// use std::sync::Arc;
///
/// use arbor_ai::faux::{FauxProvider, FauxResponse, FauxStreamOptions};
/// use arbor_ai::prelude::*;
/// use arbor_ai::ApiProvider;
///
/// struct Polite(FauxProvider);
///
/// impl ApiProvider for Polite {
///     fn stream(
///         &self,
///         model: &Model,
///         context: &Context,
///         options: StreamOptions,
///     ) -> AssistantMessageEventStream {
///         let mut context = context.clone();
///         context.system_prompt = Some("Be polite.".into());
///         let mut faux = FauxStreamOptions::default();
///         faux.cancel = options.cancel;
///         self.0.stream(model, &context, faux)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Certainly."));
/// arbor_ai::register_api_provider("polite", Arc::new(Polite(faux.clone())));
///
/// let mut model = faux.model();
/// model.api = "polite".into();
/// let reply = complete(&model, &Context::default(), StreamOptions::default()).await;
/// assert_eq!(reply.text(), "Certainly.");
/// let seen = faux.last_request().map(|r| r.context.system_prompt);
/// assert_eq!(seen, Some(Some("Be polite.".into())));
///
/// assert!(arbor_ai::unregister_api_provider("polite"));
/// let orphan = complete(&model, &Context::default(), StreamOptions::default()).await;
/// assert_eq!(orphan.stop_reason, StopReason::Error);
/// # }
/// ```
pub trait ApiProvider: Send + Sync {
    /// Streams one assistant turn for `model` (whose `api` this provider serves). Must not
    /// panic or block: every failure becomes the stream's terminal `error` event.
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream;

    /// Default: map the unified level to provider-native options the way the built-in API of
    /// the same name would, then call [`ApiProvider::stream`].
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: SimpleStreamOptions,
    ) -> AssistantMessageEventStream {
        match crate::thinking::native::to_stream_options(model, context, options) {
            Ok(native) => self.stream(model, context, native),
            Err(err) => error_stream(model, err.to_string()),
        }
    }
}

type Registry = RwLock<HashMap<String, Arc<dyn ApiProvider>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Registers (or replaces) the implementation for an `api` kind. A registered provider wins
/// over the built-in one of the same name.
pub fn register_api_provider(api: &str, provider: Arc<dyn ApiProvider>) {
    let mut map = registry()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.insert(api.to_string(), provider);
}

/// Removes a registered implementation; returns whether one was registered.
pub fn unregister_api_provider(api: &str) -> bool {
    let mut map = registry()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.remove(api).is_some()
}

/// The registered implementation of `api`, if any.
pub fn registered(api: &str) -> Option<Arc<dyn ApiProvider>> {
    let map = registry()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.get(api).cloned()
}

/// The error text when no implementation serves `api` (pi's wording).
pub(crate) fn no_provider_message(api: &str) -> String {
    format!("No API provider registered for api: {api}")
}
