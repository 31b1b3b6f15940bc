//! Integration tests, one module per topic, plus shared helpers.

mod agreement;
mod conformance_jsonl;
mod conformance_memory;
mod context_support;
mod projection;
mod proptests;
mod roundtrip;
mod session;
mod store_files;
mod store_jsonl;
mod surrogates;
mod tree;

pub use arbor_test_support::fixtures::{fixture_files, shared_dir};
