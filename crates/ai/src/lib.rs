//! arbor-ai
pub mod json_stream;
