//! `arbor-ai`: the LLM layer of Arbor.
//!
//! Provider-neutral message types in pi's exact JSON shape ([`types`]), the streaming event
//! protocol ([`event`]), the provider trait and dispatch ([`ApiProvider`], [`mod@stream`]),
//! cross-provider history transforms, the model catalogue and token/cost math. This crate knows
//! nothing of sessions, terminals or tools' implementations.
//!
//! Features: `providers` (default) adds the HTTP clients ([`providers`], reqwest); `faux` adds
//! the scripted in-process provider for tests (`faux`). Without them the crate compiles no
//! HTTP stack, which is how `arbor-agent` uses it.

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
// per-turn work tally, the RPC mode's parse-error text, tool-argument repair); not part of
// the documented surface.
#[doc(hidden)]
pub mod json_error;
#[doc(hidden)]
pub mod json_stream;
#[doc(hidden)]
pub mod typed_json;
#[doc(hidden)]
pub mod work;

mod emit;
mod error;
mod estimate;
mod extra;
mod message_list;
mod options;
mod pi_options;
mod registry;

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
