//! `arbor-ai`: the LLM layer of Arbor.
//!
//! Provider-neutral message types in pi's exact JSON shape ([`types`]), the streaming event
//! protocol ([`event`]), the provider trait and dispatch ([`ApiProvider`], [`mod@stream`]),
//! cross-provider history transforms, the model catalogue and token/cost math. This crate knows
//! nothing of sessions, terminals or tools' implementations.
//!
//! Features: `providers` (default) adds the HTTP clients ([`providers`], reqwest); `faux` adds
//! the scripted in-process provider for tests (`faux`). Without them the crate compiles no
//! HTTP stack, which is how `arbor-agent` uses it. `unstable-internals` exposes hidden helpers
//! for Arbor's own crates, without any stability promise.
//!
//! A one-shot call, offline on the faux provider (any model of [`ModelRegistry::builtin`]
//! works the same way, with its key in the provider's environment variable):
//!
//! ```
//! use std::sync::Arc;
//!
//! use arbor_ai::faux::{FauxProvider, FauxResponse};
//! use arbor_ai::prelude::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let faux = FauxProvider::new();
//! faux.push(FauxResponse::text("Paris."));
//! arbor_ai::register_api_provider(faux.api(), Arc::new(faux.clone()));
//!
//! let context = Context {
//!     messages: vec![Message::user("Capital of France?", 0)].into(),
//!     ..Context::default()
//! };
//! let reply = complete(&faux.model(), &context, StreamOptions::default()).await;
//! assert_eq!(reply.stop_reason, StopReason::Stop);
//! assert_eq!(reply.text(), "Paris.");
//! # }
//! ```

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

// The facade: what a user of the crate needs.
pub mod event;
#[cfg(feature = "faux")]
pub mod faux;
pub mod json;
pub mod kept;
pub mod models;
pub mod overflow;
#[cfg(feature = "providers")]
pub mod providers;
pub mod retry;
pub mod stream;
pub mod thinking;
pub mod time;
pub mod transform;
pub mod types;

// Internals that Arbor's other crates reach into (the session loader's typed reader, the
// per-turn work tally, the RPC mode's parse-error text, tool-argument repair). Public only with
// the `unstable-internals` feature, which carries no stability promise (DECISIONS §10.10).
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod json_error;
#[cfg(not(feature = "unstable-internals"))]
#[allow(dead_code)]
mod json_error;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod json_stream;
#[cfg(not(feature = "unstable-internals"))]
#[allow(dead_code)]
mod json_stream;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod typed_json;
#[cfg(not(feature = "unstable-internals"))]
#[allow(dead_code)]
mod typed_json;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod work;
#[cfg(not(feature = "unstable-internals"))]
#[allow(dead_code)]
mod work;

mod emit;
mod error;
mod estimate;
mod extra;
mod message_list;
mod model;
mod options;
#[cfg(feature = "unstable-internals")]
mod pi_options;
mod registry;
mod setters;
mod usage;

pub use emit::error_stream;
pub use error::{AiError, Result};
pub use event::{AssistantMessageEvent, AssistantMessageEventStream, MessageAccumulator};
pub use kept::Kept;
pub use models::{calculate_cost, ApiKey, ModelRegistry};
pub use registry::{register_api_provider, unregister_api_provider, ApiProvider};
pub use stream::{
    complete, complete_simple, stream, stream_simple, AnthropicOptions, CacheRetention,
    GoogleOptions, GoogleThinking, OpenAiOptions, SimpleStreamOptions, StreamOptions,
    ThinkingBudgets,
};
pub use types::*;

/// Re-exported because [`StreamOptions::cancel`] takes one.
pub use tokio_util::sync::CancellationToken;

/// The types a one-shot call needs: `use arbor_ai::prelude::*;`.
pub mod prelude {
    pub use crate::event::{AssistantMessageEvent, AssistantMessageEventStream};
    pub use crate::models::ModelRegistry;
    pub use crate::options::{SimpleStreamOptions, StreamOptions};
    pub use crate::stream::{complete, complete_simple, stream, stream_simple};
    pub use crate::types::{
        AssistantMessage, ContentBlock, Context, Message, Model, StopReason, ThinkingLevel, Tool,
        UserMessage,
    };
    pub use crate::{AiError, CancellationToken};
}
