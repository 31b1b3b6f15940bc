//! The commands, typed: one variant per RPC `type`, deserialized from pi's JSON shapes
//! (`{"type":"fork","entryId":…}`). Fields are read leniently, as pi reads them: a field of
//! the wrong JSON type counts as absent, so "Missing required field" is the one answer for
//! both; required fields are checked when the command runs (after the session gate), which
//! keeps the order of answers of pipelined commands.

use arbor_ai::ImageContent;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::CommandError;

/// One command of the app, whichever client sent it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Command {
    Prompt {
        #[serde(default, deserialize_with = "lenient")]
        message: Option<String>,
        #[serde(default, deserialize_with = "lenient")]
        images: Option<Vec<ImageContent>>,
        /// `steer` or `followUp`: what to do with a prompt sent while a run is going.
        #[serde(default, deserialize_with = "lenient")]
        streaming_behavior: Option<String>,
    },
    Steer {
        #[serde(default, deserialize_with = "lenient")]
        message: Option<String>,
        #[serde(default, deserialize_with = "lenient")]
        images: Option<Vec<ImageContent>>,
    },
    FollowUp {
        #[serde(default, deserialize_with = "lenient")]
        message: Option<String>,
        #[serde(default, deserialize_with = "lenient")]
        images: Option<Vec<ImageContent>>,
    },
    Abort,
    ClearQueue,
    NewSession {
        #[serde(default, deserialize_with = "lenient")]
        parent_session: Option<String>,
    },
    SwitchSession {
        #[serde(default, deserialize_with = "lenient")]
        session_path: Option<String>,
    },
    Fork {
        #[serde(default, deserialize_with = "lenient")]
        entry_id: Option<String>,
    },
    Clone,
    SetAutoCompaction {
        #[serde(default, deserialize_with = "lenient")]
        enabled: Option<bool>,
    },
    SetAutoRetry {
        #[serde(default, deserialize_with = "lenient")]
        enabled: Option<bool>,
    },
    AbortRetry,
    AbortBash,
    CycleModel,
    GetState,
    GetMessages,
    SetModel {
        #[serde(default, deserialize_with = "lenient")]
        provider: Option<String>,
        #[serde(default, deserialize_with = "lenient")]
        model_id: Option<String>,
    },
    GetAvailableModels,
    SetThinkingLevel {
        #[serde(default, deserialize_with = "lenient")]
        level: Option<String>,
    },
    GetAvailableThinkingLevels,
    CycleThinkingLevel,
    SetSteeringMode {
        #[serde(default, deserialize_with = "lenient")]
        mode: Option<String>,
    },
    SetFollowUpMode {
        #[serde(default, deserialize_with = "lenient")]
        mode: Option<String>,
    },
    GetSessionStats,
    GetEntries {
        /// Only the entries after this one.
        #[serde(default, deserialize_with = "lenient")]
        since: Option<String>,
    },
    GetTree,
    GetLastAssistantText,
    GetForkMessages,
    SetSessionName {
        #[serde(default, deserialize_with = "lenient")]
        name: Option<String>,
    },
    GetCommands,
    Compact {
        #[serde(default, deserialize_with = "lenient")]
        custom_instructions: Option<String>,
    },
    Bash {
        #[serde(default, deserialize_with = "lenient")]
        command: Option<String>,
        #[serde(default, deserialize_with = "lenient")]
        exclude_from_context: Option<bool>,
    },
    ExportHtml {
        #[serde(default, deserialize_with = "lenient")]
        output_path: Option<String>,
    },
    /// Searches every session of the app's session directory (DECISIONS §34.8).
    Search {
        #[serde(default, deserialize_with = "lenient")]
        query: Option<String>,
        /// `active`, `abandoned` or `any` (the default).
        #[serde(default, deserialize_with = "lenient")]
        branch: Option<String>,
        #[serde(default, deserialize_with = "lenient")]
        since: Option<String>,
        /// Only the sessions of the app's working directory.
        #[serde(default, deserialize_with = "lenient")]
        cwd_only: Option<bool>,
        #[serde(default, deserialize_with = "lenient")]
        limit: Option<usize>,
    },
    /// A `type` this app does not know (answered "Unknown command").
    #[serde(other)]
    Unknown,
}

/// Where a command waits relative to the commands that replace the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Never waits: the abort commands must reach work in flight, and `bash` is cancelled by a
    /// session switch rather than waited for.
    None,
    /// Replaces the session: waits for every other command and holds the rest back.
    Exclusive,
    /// Acts on the current session: waits for a session replacement in progress.
    Shared,
}

impl Command {
    /// Parses a command object; `Ok(None)` when the object has no string `type`.
    pub fn from_value(v: &Value) -> Result<Option<Command>, CommandError> {
        if !v.get("type").is_some_and(Value::is_string) {
            return Ok(None);
        }
        Command::deserialize(v)
            .map(Some)
            .map_err(CommandError::Decode)
    }

    /// How the command is ordered against session replacements (DECISIONS §22.32).
    pub fn gate(&self) -> Gate {
        match self {
            Command::Abort | Command::AbortBash | Command::AbortRetry | Command::Bash { .. } => {
                Gate::None
            }
            Command::NewSession { .. }
            | Command::SwitchSession { .. }
            | Command::Fork { .. }
            | Command::Clone => Gate::Exclusive,
            _ => Gate::Shared,
        }
    }
}

/// A field the command cannot run without.
pub fn required<T>(field: Option<T>, name: &'static str) -> Result<T, CommandError> {
    field.ok_or(CommandError::MissingField(name))
}

/// Reads a field whatever its JSON type: a value of the wrong type is `None`.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Command {
        Command::from_value(&v).unwrap().unwrap()
    }

    #[test]
    fn pi_shapes_parse_and_wrong_types_read_as_absent() {
        assert_eq!(
            parse(json!({"type": "fork", "entryId": "e1", "id": 3})),
            Command::Fork {
                entry_id: Some("e1".into())
            }
        );
        assert_eq!(
            parse(json!({"type": "prompt", "message": 5, "images": "x"})),
            Command::Prompt {
                message: None,
                images: None,
                streaming_behavior: None
            }
        );
        assert_eq!(parse(json!({"type": "abort", "x": [1]})), Command::Abort);
        assert_eq!(parse(json!({"type": "nope"})), Command::Unknown);
        assert_eq!(Command::from_value(&json!({"type": 1})).unwrap(), None);
        assert_eq!(parse(json!({"type": "clone"})).gate(), Gate::Exclusive);
        assert_eq!(
            parse(json!({"type": "bash", "command": "ls"})).gate(),
            Gate::None
        );
    }
}
