//! Integration tests, one module per topic, plus shared helpers.

mod absent_fields;
mod agreement;
mod compaction;
mod conformance_jsonl;
mod conformance_memory;
mod context_stream;
mod context_support;
mod fast_parse;
mod harness;
mod harness_crash;
mod harness_fsyncs;
mod harness_incremental;
mod harness_per_turn_work;
mod harness_prompt_policy;
mod harness_support;
mod harness_tree;
mod plans;
mod projection;
mod proptests;
mod roundtrip;
mod rows;
mod rows_scan;
mod session;
mod sizes;
mod store_files;
mod store_jsonl;
mod store_lazy;
mod surrogates;
mod tree;

pub use arbor_test_support::fixtures::{fixture_files, shared_dir};
