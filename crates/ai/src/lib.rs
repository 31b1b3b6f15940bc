//! `arbor-ai`: the LLM layer of Arbor.
//!
//! Provider-neutral message types in pi's exact JSON shape ([`types`]), the streaming event
//! protocol ([`event`]), the provider trait and dispatch ([`ApiProvider`], [`mod@stream`]),
//! cross-provider history transforms, the model catalogue and token/cost math. This crate knows
//! nothing of sessions, terminals or tools' implementations.
//!
//! Features: `providers` (default) adds the HTTP clients ([`providers`], reqwest); `faux` adds
//! the scripted in-process provider for tests ([`faux`]). Without them the crate compiles no
//! HTTP stack, which is how `arbor-agent` uses it.

pub mod emit;
pub mod error;
pub mod estimate;
pub mod event;
pub mod extra;
#[doc(hidden)]
pub mod fast;
#[cfg(feature = "faux")]
pub mod faux;
pub mod json;
pub mod json_error;
pub mod json_stream;
pub mod kept;
pub mod message_list;
pub mod models;
pub mod options;
pub mod overflow;
pub mod pi_options;
#[cfg(feature = "providers")]
pub mod providers;
pub mod registry;
pub mod retry;
pub mod stream;
pub mod thinking;
pub mod time;
pub mod transform;
pub mod types;
pub mod work;

pub use error::{AiError, Result};
pub use event::{AssistantMessageEvent, AssistantMessageEventStream, MessageAccumulator};
pub use kept::Kept;
pub use registry::{register_api_provider, unregister_api_provider, ApiProvider};
pub use stream::{
    complete, complete_simple, stream, stream_simple, CacheRetention, SimpleStreamOptions,
    StreamOptions, ThinkingBudgets,
};
pub use types::*;
