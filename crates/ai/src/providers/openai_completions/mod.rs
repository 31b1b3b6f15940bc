//! OpenAI Chat Completions (`openai-completions`): `POST {baseUrl}/chat/completions`, SSE of
//! `chat.completion.chunk` objects. Also the API of most OpenAI-compatible servers, whose quirks
//! are captured by [`Compat`] (detected from provider id and base URL, overridable per field
//! through `model.compat`).

mod compat;
mod parse;
mod request;

pub use compat::{compat_for, Compat, ThinkingFormat};
pub use parse::Parser;
pub(crate) use request::build_request;
