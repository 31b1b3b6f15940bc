//! Built-in provider clients and the machinery they share.
//!
//! A provider is two pure halves plus a shared driver:
//! * a request builder (`build_request`) turning model + context + options into a
//!   [`PreparedRequest`] (URL, headers, JSON body) — snapshot-tested byte for byte;
//! * a [`StreamParser`] turning decoded SSE events into content updates on an [`Output`] — the
//!   same code the benchmark feeds from memory;
//! * `run`, which sends the request (with optional retries), emits `start` once the headers
//!   are in, pumps body bytes through the SSE decoder into the parser, honours cancellation and
//!   turns every failure into the terminal `error` event.
//!
//! Files: [`dispatch`] (which client, [`BuiltinProvider`]), [`keys`] (credentials, headers),
//! [`transcript`] (the context as providers see it), [`output`] (what parsers write into),
//! [`http_error`] (error texts), [`driver`] (send, retry, pump), [`sse`] (the byte decoder).

pub mod anthropic;
pub mod google;
pub mod openai_completions;
pub mod openai_responses;
pub mod sse;

mod api_client;
mod constrained;
mod dispatch;
mod driver;
mod http_error;
mod keys;
mod output;
mod strict_limits;
mod threads;
mod transcript;

pub use crate::thinking::native as simple;
pub use dispatch::{build_request, parse_recorded, BuiltinProvider};
pub use keys::PreparedRequest;
pub(crate) use keys::{anthropic_auth_token, cache_key, final_headers, user_agent};
pub(crate) use output::CowStr;
pub use output::{Halt, Output, StreamParser};
pub use transcript::Transcript;

pub(crate) use crate::models::{compat_bool, compat_str, compat_value};
pub(crate) use crate::thinking::{level_mapping, mapped_level, LevelMapping};
