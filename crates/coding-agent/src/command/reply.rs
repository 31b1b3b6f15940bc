//! What a command answers, typed. Serialized, each is the `data` of pi's RPC response with
//! its keys in pi's order; `None` in place of a reply means the response has no `data`.

use arbor_agent::session::SessionEntry;
use arbor_ai::Model;
use serde::Serialize;
use serde_json::Value;

use super::session_stats::SessionStatsReply;

/// The data of a successful command.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Reply {
    /// `data: null`: nothing to switch to (`cycle_model`, `cycle_thinking_level`).
    Null,
    Disposition(Disposition),
    Queues(Queues),
    SessionReplaced(SessionReplaced),
    Forked(Forked),
    CycledModel(Box<CycledModel>),
    State(Box<State>),
    Messages(MessagesReply),
    Model(Box<Model>),
    Models(ModelsReply),
    Levels(LevelsReply),
    Level(LevelReply),
    Stats(Box<SessionStatsReply>),
    Entries(EntriesReply),
    Tree(TreeReply),
    Text(TextReply),
    ForkMessages(ForkMessagesReply),
    Commands(CommandsReply),
    Compacted(Box<Compacted>),
    Bash(Box<BashReply>),
    Exported(Exported),
    Search(SearchReply),
}

/// `search`: ranked hits and the warnings of the index refresh (skipped files).
#[derive(Debug, Clone, Serialize)]
pub struct SearchReply {
    pub hits: Vec<arbor_search::Hit>,
    pub warnings: Vec<String>,
}

/// `prompt`, `steer`, `follow_up`: whether the message started a run or was queued.
#[derive(Debug, Clone, Serialize)]
pub struct Disposition {
    pub disposition: &'static str,
}

impl Disposition {
    pub const STARTED: Disposition = Disposition {
        disposition: "started",
    };
    pub const QUEUED: Disposition = Disposition {
        disposition: "queued",
    };
}

/// `clear_queue`: the texts taken off the queues, for the client to restore.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Queues {
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

/// `new_session`, `switch_session`, `clone`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionReplaced {
    pub cancelled: bool,
}

/// `fork`: the user message forked before, handed back for editing.
#[derive(Debug, Clone, Serialize)]
pub struct Forked {
    pub text: String,
    pub cancelled: bool,
}

/// `cycle_model`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CycledModel {
    pub model: Model,
    pub thinking_level: &'static str,
    pub is_scoped: bool,
}

/// `get_state`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    pub model: Model,
    pub thinking_level: &'static str,
    pub is_streaming: bool,
    pub is_compacting: bool,
    pub steering_mode: &'static str,
    pub follow_up_mode: &'static str,
    pub session_file: Option<String>,
    pub session_id: String,
    pub auto_compaction_enabled: bool,
    pub message_count: usize,
    pub pending_message_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
}

/// `get_messages`: the projected context, pi's system message first.
#[derive(Debug, Clone, Serialize)]
pub struct MessagesReply {
    pub messages: Vec<Value>,
}

/// `get_available_models`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelsReply {
    pub models: Vec<Model>,
}

/// `get_available_thinking_levels`.
#[derive(Debug, Clone, Serialize)]
pub struct LevelsReply {
    pub levels: Vec<&'static str>,
}

/// `cycle_thinking_level`.
#[derive(Debug, Clone, Serialize)]
pub struct LevelReply {
    pub level: &'static str,
}

/// `get_entries`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntriesReply {
    pub entries: Vec<SessionEntry>,
    pub leaf_id: Option<String>,
}

/// `get_tree`: every entry in its place, with labels.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeReply {
    pub tree: Vec<TreeNode>,
    pub leaf_id: Option<String>,
}

/// One node of [`TreeReply`].
#[derive(Debug, Clone, Serialize)]
pub struct TreeNode {
    pub entry: Option<SessionEntry>,
    pub children: Vec<TreeNode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// `get_last_assistant_text`: `{}` when there is no text, as pi answers.
#[derive(Debug, Clone, Serialize)]
pub struct TextReply {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `get_fork_messages`: the user messages of the branch.
#[derive(Debug, Clone, Serialize)]
pub struct ForkMessagesReply {
    pub messages: Vec<ForkMessage>,
}

/// One user message a fork can start before.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkMessage {
    pub entry_id: String,
    pub text: String,
}

/// `get_commands`: the commands a client can run by sending `/name` as a prompt.
#[derive(Debug, Clone, Serialize)]
pub struct CommandsReply {
    pub commands: Vec<DiscoverableCommand>,
}

/// One `get_commands` entry in pi's shape. Each kind of resource that adds slash commands
/// (prompt templates as `source: "prompt"`, skills as `source: "skill"` named `skill:<name>`)
/// contributes its entries to [`CommandsReply`]; Arbor runs no extensions, so none has
/// `source: "extension"` (DECISIONS §31.5).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverableCommand {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub source: &'static str,
    pub source_info: SourceInfo,
}

/// Where a [`DiscoverableCommand`] comes from (pi's `sourceInfo`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    /// Absolute path of the resource.
    pub path: String,
    /// How it was found: `local`, `auto`, `cli`.
    pub source: String,
    /// `user`, `project` or `temporary`.
    pub scope: String,
    /// `top-level` or `package`.
    pub origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
}

/// `compact`: the compaction entry's fields as stored, and the context's size after it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Compacted {
    pub summary: Option<Value>,
    pub first_kept_entry_id: Option<Value>,
    pub tokens_before: Option<Value>,
    pub estimated_tokens_after: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    pub details: Value,
}

/// `bash`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BashReply {
    pub output: String,
    /// Absent when the command was cancelled (pi has no code for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    pub cancelled: bool,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// `export_html`.
#[derive(Debug, Clone, Serialize)]
pub struct Exported {
    pub path: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_serialize_as_pis_data() {
        let s = |r: Reply| serde_json::to_string(&r).unwrap();
        assert_eq!(s(Reply::Null), "null");
        assert_eq!(
            s(Reply::Commands(CommandsReply {
                commands: vec![DiscoverableCommand {
                    name: "fix-tests".into(),
                    description: Some("Fix failing tests".into()),
                    source: "prompt",
                    source_info: SourceInfo {
                        path: "/p/fix-tests.md".into(),
                        source: "local".into(),
                        scope: "project".into(),
                        origin: "top-level".into(),
                        base_dir: None,
                    },
                }]
            })),
            r#"{"commands":[{"name":"fix-tests","description":"Fix failing tests","source":"prompt","sourceInfo":{"path":"/p/fix-tests.md","source":"local","scope":"project","origin":"top-level"}}]}"#
        );
        assert_eq!(
            s(Reply::Disposition(Disposition::QUEUED)),
            r#"{"disposition":"queued"}"#
        );
        assert_eq!(
            s(Reply::Queues(Queues {
                steering: vec!["a".into()],
                follow_up: Vec::new()
            })),
            r#"{"steering":["a"],"followUp":[]}"#
        );
        assert_eq!(
            s(Reply::Bash(Box::new(BashReply {
                output: "x".into(),
                exit_code: Some(0),
                cancelled: false,
                truncated: false,
                full_output_path: None
            }))),
            r#"{"output":"x","exitCode":0,"cancelled":false,"truncated":false}"#
        );
        assert_eq!(
            s(Reply::Tree(TreeReply {
                tree: vec![TreeNode {
                    entry: None,
                    children: Vec::new(),
                    label: Some("l".into())
                }],
                leaf_id: None
            })),
            r#"{"tree":[{"entry":null,"children":[],"label":"l"}],"leafId":null}"#
        );
    }
}
