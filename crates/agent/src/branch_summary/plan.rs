//! The dry-run form of a branch-summary preparation, the JSON `ref-plan.mjs branch` prints
//! for pi: `{commonAncestorId, entryIds, messages, readFiles, modifiedFiles, totalTokens,
//! conversation}`.

use serde_json::{json, Value};

use crate::branch_summary::collect::BranchSummaryCollection;
use crate::branch_summary::prepare::BranchPreparation;
use crate::compaction::plan::messages_json;
use crate::compaction::serialize::serialize_conversation;

/// The JSON plan of a branch summary, key for key what pi's reference script prints, so the
/// two can be diffed (DECISIONS §21.9); computed without a model.
pub fn branch_plan_json(
    collection: &BranchSummaryCollection,
    preparation: &BranchPreparation,
) -> Value {
    let lists = preparation.file_ops.file_lists();
    json!({
        "commonAncestorId": collection.common_ancestor_id,
        "entryIds": collection.entries.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        "messages": messages_json(&preparation.messages),
        "readFiles": lists.read_files,
        "modifiedFiles": lists.modified_files,
        "totalTokens": preparation.total_tokens,
        "conversation": serialize_conversation(&preparation.messages),
    })
}
