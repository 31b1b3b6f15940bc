//! `arbor-ai`: the LLM layer of Arbor.
//!
//! Provider-neutral message types in pi's exact JSON shape ([`types`]), the streaming event
//! protocol ([`event`]), streaming provider clients ([`mod@stream`], [`providers`]) and
//! cross-provider history transforms. This crate knows nothing of sessions, terminals or tools'
//! implementations.

pub mod error;
pub mod event;
pub mod faux;
pub mod json;
pub mod json_error;
pub mod json_stream;
pub mod models;
pub mod overflow;
pub mod providers;
pub mod retry;
pub mod stream;
pub mod thinking;
pub mod time;
pub mod transform;
pub mod types;

pub use error::{AiError, Result};
pub use event::{AssistantMessageEvent, AssistantMessageEventStream, MessageAccumulator};
pub use stream::{
    complete, complete_simple, register_api_provider, stream, stream_simple, CacheRetention,
    SimpleStreamOptions, StreamOptions, ThinkingBudgets,
};
pub use types::*;
