//! The dry-run form of a compaction preparation: the JSON `arbor session compact --dry-run
//! --json` prints and pi prints for the same session (`cargo xtask plans` asks it) (same keys, same values).

use serde_json::{json, Value};

use crate::compaction::prepare::CompactionPreparation;
use crate::compaction::serialize::serialize_conversation;
use crate::message::AgentMessage;

/// `{firstKeptEntryId, isSplitTurn, tokensBefore, previousSummary, messagesToSummarize,
/// turnPrefixMessages, readFiles, modifiedFiles, conversation, turnPrefixConversation}`, or
/// `null` for nothing to compact.
pub fn compaction_plan_json(preparation: Option<&CompactionPreparation>) -> Value {
    let Some(p) = preparation else {
        return Value::Null;
    };
    let lists = p.file_ops.file_lists();
    json!({
        "firstKeptEntryId": p.first_kept_entry_id,
        "isSplitTurn": p.is_split_turn,
        "tokensBefore": p.tokens_before,
        "previousSummary": p.previous_summary,
        "messagesToSummarize": messages_json(&p.messages_to_summarize),
        "turnPrefixMessages": messages_json(&p.turn_prefix_messages),
        "readFiles": lists.read_files,
        "modifiedFiles": lists.modified_files,
        "conversation": serialize_conversation(&p.messages_to_summarize),
        "turnPrefixConversation": serialize_conversation(&p.turn_prefix_messages),
    })
}

/// Messages as pi writes them (integral numbers without a fraction).
pub(crate) fn messages_json(messages: &[AgentMessage]) -> Value {
    let mut v = serde_json::to_value(messages).unwrap_or(Value::Null);
    crate::context::js_numbers(&mut v);
    v
}
