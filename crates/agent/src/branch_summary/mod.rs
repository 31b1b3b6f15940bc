//! Branch summaries: when the user moves the leaf to another point of the tree, what the
//! abandoned branch found is summarized into a `branch_summary` entry under the new position
//! (DECISIONS §2.1–§2.2, §6.1, §21).
//!
//! - `collect`: the entries between the old leaf and the deepest common ancestor.
//! - `prepare`: newest first within a token budget, file operations.
//! - `generate`: the summary request.
//! - `plan`: the dry-run JSON (`arbor session navigate --summarize --dry-run --json`).

mod collect;
mod generate;
mod plan;
mod prepare;

pub use crate::compaction::error::BranchSummaryError;
pub use collect::{
    collect_branch_entries, collect_entries_for_branch_summary, BranchSummaryCollection,
};
pub use generate::{
    branch_token_budget, generate_branch_summary, BranchSummaryOptions, BranchSummaryResult,
};
pub use plan::branch_plan_json;
pub use prepare::{prepare_branch_entries, BranchPreparation};
