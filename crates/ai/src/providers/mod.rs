//! Built-in provider clients and the machinery they share.
//!
//! Each wire API has a folder (`anthropic`, `openai_completions`, `openai_responses`,
//! `google`) with `request` (the body and headers), `convert` (history → wire messages) and
//! `parse` (the SSE reply → content updates on an `Output`), and one `ApiClient` impl in its
//! `mod.rs`: what the shared driver asks of that API. `dispatch` maps a model's `api` string
//! to its client; the driver sends the request (with optional retries), emits `start` once the
//! headers are in, pumps body bytes through the SSE decoder into the parser, honours
//! cancellation and turns every failure into the terminal `error` event. Request building is
//! snapshot-tested byte for byte; the parsers are the same code the benchmark feeds from
//! memory.
//!
//! Files: `dispatch` (which client, [`BuiltinProvider`]), `api_client` (the trait),
//! `keys` (credentials, headers), `transcript` (the context as providers see it, built
//! once per request), `output` (what parsers write into), `http_error` (error texts),
//! `driver` (send, retry, pump), [`sse`] (the byte decoder), `constrained` (strict and
//! grammar tools).

pub(crate) mod anthropic;
pub(crate) mod google;
pub(crate) mod openai_completions;
pub(crate) mod openai_responses;
pub mod sse;

mod api_client;
mod constrained;
mod dispatch;
mod driver;
mod http_error;
mod keys;
mod output;
mod transcript;

pub use crate::thinking::native as simple;
pub use dispatch::{build_request, parse_recorded, BuiltinProvider};
pub use driver::{MAX_EVENT_BYTES, MAX_RESPONSE_BYTES};
pub use keys::PreparedRequest;
pub(crate) use keys::{anthropic_auth_token, cache_key, final_headers, user_agent};
pub(crate) use output::CowStr;
pub(crate) use output::{Halt, Output, StreamParser};
pub(crate) use transcript::Transcript;

/// Chat Completions quirk detection, for Arbor's own tests (unstable, DECISIONS §10.10).
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub use openai_completions::{compat_for, Compat, ThinkingFormat};

pub(crate) use crate::models::{compat_bool, compat_str, compat_value};
pub(crate) use crate::thinking::{level_mapping, mapped_level, LevelMapping};
