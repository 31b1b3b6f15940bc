//! Integration tests, one module per topic, plus shared helpers.

mod absent_fields;
mod agreement;
mod conformance_jsonl;
mod conformance_memory;
mod context_stream;
mod context_support;
mod create_at;
mod fork_copy;
mod projection;
mod proptests;
mod reader_equivalence;
mod roundtrip;
mod rows;
mod session;
mod sizes;
mod storage_handles;
mod store_files;
mod store_jsonl;
mod store_lazy;
mod surrogates;
mod tree;
mod v1_ids;

pub use arbor_test_support::fixtures::{fixture_files, testdata_dir};
