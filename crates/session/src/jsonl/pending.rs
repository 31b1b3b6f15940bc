//! A new session's file before its first conversation message (DECISIONS §29.5): pi creates
//! the file with the first user or assistant message, so a start that fails or ends without
//! one leaves no file to resume, list or pick. Arbor writes the header (and any settings
//! entries) to a locked temporary beside the final name, and gives it that name just before
//! the first such message is appended.

use std::path::{Path, PathBuf};

use super::files::sync_dir;
use super::writer::SyncPolicy;
use crate::error::{Result, SessionError};

/// Whether an entry line is a user or assistant message (pi's rule) or a command the user ran
/// (`bashExecution`: theirs as much as a prompt, so kept too).
pub(super) fn is_conversation_line(line: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
        return false;
    };
    v.get("type").and_then(|t| t.as_str()) == Some("message")
        && matches!(
            v.pointer("/message/role").and_then(|r| r.as_str()),
            Some("user" | "assistant" | "bashExecution")
        )
}

/// Names the file (taking `pending`) when `line` is its first conversation message; whether it
/// did.
pub(super) fn name_on_message(
    pending: &mut Option<PathBuf>,
    line: &str,
    path: &Path,
    sync: SyncPolicy,
) -> Result<bool> {
    if pending.is_none() || !is_conversation_line(line) {
        return Ok(false);
    }
    if let Some(tmp) = pending.take() {
        if let Err(e) = take_name(&tmp, path, sync) {
            // Still unnamed: the temporary stays ours (and is removed with the session).
            *pending = Some(tmp);
            return Err(e);
        }
    }
    Ok(true)
}

/// Removes the temporary of a session dropped before its first message (nothing of the user's
/// was written); whether there was one.
pub(super) fn discard(pending: Option<PathBuf>) -> bool {
    let Some(tmp) = pending else { return false };
    let _ = std::fs::remove_file(tmp);
    true
}

/// Gives the temporary `tmp` its final name `path`, refusing to replace a file already there.
fn take_name(tmp: &Path, path: &Path, sync: SyncPolicy) -> Result<()> {
    let io = |e: std::io::Error| SessionError::io(path.display().to_string(), e);
    // A hard link never replaces an existing file; a file system without links falls back to
    // a rename after the same check.
    match std::fs::hard_link(tmp, path) {
        Ok(()) => std::fs::remove_file(tmp).map_err(io)?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(SessionError::InvalidSession(format!(
                "session file {} already exists; nothing was written",
                path.display()
            )))
        }
        Err(_) => {
            if path.exists() {
                return Err(SessionError::InvalidSession(format!(
                    "session file {} already exists; nothing was written",
                    path.display()
                )));
            }
            std::fs::rename(tmp, path).map_err(io)?;
        }
    }
    if sync != SyncPolicy::Never {
        if let Some(dir) = path.parent() {
            sync_dir(dir);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_user_and_assistant_messages_count() {
        let line = |t: &str, role: &str| {
            format!(
                r#"{{"type":"{t}","id":"a","parentId":null,"timestamp":"x","message":{{"role":"{role}"}}}}"#
            )
        };
        assert!(is_conversation_line(&line("message", "user")));
        assert!(is_conversation_line(&line("message", "assistant")));
        assert!(is_conversation_line(&line("message", "bashExecution")));
        assert!(!is_conversation_line(&line("message", "toolResult")));
        assert!(!is_conversation_line(&line("model_change", "user")));
        assert!(!is_conversation_line("not json"));
    }
}
