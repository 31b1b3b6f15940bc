//! Integration tests, one module per topic, plus shared helpers.

mod compaction;
mod harness;
mod harness_crash;
mod harness_fsyncs;
mod harness_incremental;
mod harness_per_turn_work;
mod harness_prompt_policy;
mod harness_support;
mod harness_tree;
mod message_support;
mod plans;
mod typed_tool;
mod usage_snippets;

pub use arbor_test_support::fixtures::testdata_dir;
