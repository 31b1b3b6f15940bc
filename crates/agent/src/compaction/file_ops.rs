//! Which files a stretch of conversation read and changed, from `read` / `write` / `edit` tool
//! calls (and calls nested in a tool result), carried from summary to summary through the
//! `details` of compaction and branch-summary entries.

use std::collections::BTreeSet;

use arbor_ai::{ContentBlock, Message};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compaction::js::utf16_cmp;
use crate::message::AgentMessage;

/// Paths by operation. Sets, so repeats collapse.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOperations {
    /// Paths read.
    pub read: BTreeSet<String>,
    /// Paths written whole.
    pub written: BTreeSet<String>,
    /// Paths edited.
    pub edited: BTreeSet<String>,
}

/// The `details` of a compaction or branch-summary entry: files only read, files changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileLists {
    /// Files only read.
    pub read_files: Vec<String>,
    /// Files written or edited.
    pub modified_files: Vec<String>,
}

impl FileOperations {
    /// Adds the tool calls of an assistant message, or the nested calls a tool result records
    /// (`nestedCalls.calls`); other messages add nothing.
    pub fn add_message(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::Llm(Message::Assistant(a)) => {
                for block in &a.content {
                    if let ContentBlock::ToolCall(call) = block {
                        self.add_call(&call.name, &call.arguments);
                    }
                }
            }
            AgentMessage::Llm(Message::ToolResult(t)) => {
                let calls = t
                    .extra
                    .get("nestedCalls")
                    .and_then(|n| n.get("calls"))
                    .and_then(Value::as_array);
                for call in calls.into_iter().flatten() {
                    if let Some(name) = call.get("name").and_then(Value::as_str) {
                        self.add_call(name, call.get("arguments").unwrap_or(&Value::Null));
                    }
                }
            }
            _ => {}
        }
    }

    fn add_call(&mut self, tool: &str, arguments: &Value) {
        let Some(path) = arguments.get("path").and_then(Value::as_str) else {
            return;
        };
        if path.is_empty() {
            return;
        }
        let set = match tool {
            "read" => &mut self.read,
            "write" => &mut self.written,
            "edit" => &mut self.edited,
            _ => return,
        };
        set.insert(path.to_string());
    }

    /// Seeds from an earlier summary's `details`: `readFiles` count as read, `modifiedFiles`
    /// as edited. Non-string items are ignored.
    pub fn add_details(&mut self, details: &Value) {
        let strings = |key: &str| {
            details
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        self.read.extend(strings("readFiles"));
        self.edited.extend(strings("modifiedFiles"));
    }

    /// Modified = edited ∪ written; read = read − modified; both sorted in JavaScript's order.
    pub fn file_lists(&self) -> FileLists {
        let modified: BTreeSet<&String> = self.edited.iter().chain(&self.written).collect();
        let mut modified_files: Vec<String> = modified
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let mut read_files: Vec<String> = self
            .read
            .iter()
            .filter(|f| !modified.contains(f))
            .cloned()
            .collect();
        modified_files.sort_by(|a, b| utf16_cmp(a, b));
        read_files.sort_by(|a, b| utf16_cmp(a, b));
        FileLists {
            read_files,
            modified_files,
        }
    }
}

/// The block appended to a summary: `<read-files>` and `<modified-files>` sections (each only
/// when non-empty) after a blank line; empty when there is nothing to list.
pub fn format_file_operations(lists: &FileLists) -> String {
    let mut sections = Vec::new();
    if !lists.read_files.is_empty() {
        sections.push(format!(
            "<read-files>\n{}\n</read-files>",
            lists.read_files.join("\n")
        ));
    }
    if !lists.modified_files.is_empty() {
        sections.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            lists.modified_files.join("\n")
        ));
    }
    if sections.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", sections.join("\n\n"))
    }
}
