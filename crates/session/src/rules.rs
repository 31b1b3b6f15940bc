//! Append rules every backend applies the same way, so that a session behaves identically
//! whether it lives in memory, a JSONL file or SQLite.

use arbor_ai::json::Nullable;
use serde_json::Value;

use crate::entry::EntryKind;
use crate::error::{Result, SessionError};

/// pi's session-name rule: every run of CR/LF becomes one space, then the name is trimmed.
pub fn normalize_session_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_break = false;
    for c in name.chars() {
        if c == '\r' || c == '\n' {
            if !in_break {
                out.push(' ');
            }
            in_break = true;
        } else {
            out.push(c);
            in_break = false;
        }
    }
    out.trim().to_owned()
}

/// Normalizes a draft before it is stored (today: the `session_info` name).
pub fn normalize_draft(kind: &mut EntryKind) {
    if let EntryKind::SessionInfo(info) = kind {
        if let Nullable::Value(name) = &info.name {
            info.name = Nullable::Value(normalize_session_name(name));
        }
    }
}

/// DECISIONS §3.5, the shape half: a `context_edit` replacement is `null` (omit the target) or
/// an object whose `content` is a string or a block list. (Where the target may be is checked
/// by each backend against its own index.)
pub fn check_replacement_shape(target: &str, replacement: &Value) -> Result<()> {
    match replacement {
        Value::Null => Ok(()),
        Value::Object(m)
            if matches!(m.get("content"), Some(Value::String(_) | Value::Array(_))) =>
        {
            Ok(())
        }
        _ => Err(SessionError::InvalidEntry(format!(
            "context_edit for {target}: replacement must be null or {{content: string | blocks}}"
        ))),
    }
}

/// DECISIONS §3.5, the placement half, given what the backend found about the target: it must
/// be on the active branch and be a user, assistant or toolResult message or a custom_message.
/// `role` is the message role when `entry_type` is `message`.
pub fn check_context_edit_target(
    target: &str,
    on_active_branch: bool,
    entry_type: &str,
    role: Option<&str>,
) -> Result<()> {
    if !on_active_branch {
        return Err(SessionError::InvalidEntry(format!(
            "context_edit target {target} is not on the active branch"
        )));
    }
    let editable = match entry_type {
        "custom_message" => true,
        "message" => matches!(role, Some("user" | "assistant" | "toolResult")),
        _ => false,
    };
    if !editable {
        return Err(SessionError::InvalidEntry(format!(
            "context_edit target {target} must be a user, assistant or toolResult message or a custom_message (it is a {entry_type} entry)"
        )));
    }
    Ok(())
}

/// A page of entries holds at least one: `limit: Some(0)` is refused the same way on every
/// backend.
pub fn check_page_limit(limit: Option<usize>) -> Result<()> {
    if limit == Some(0) {
        return Err(SessionError::InvalidEntry(
            "limit must be a positive integer".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_empty_page_is_refused_and_any_other_limit_taken() {
        let err = check_page_limit(Some(0))
            .map(|()| "taken")
            .unwrap_or_else(|e| {
                assert_eq!(e.code(), "invalid_entry");
                "refused"
            });
        assert_eq!(err, "refused");
        assert!(check_page_limit(None).is_ok());
        assert!(check_page_limit(Some(1)).is_ok());
    }

    #[test]
    fn context_edits_target_conversation_messages_on_the_active_branch() {
        for (ty, role) in [
            ("message", Some("user")),
            ("message", Some("assistant")),
            ("message", Some("toolResult")),
            ("custom_message", None),
        ] {
            assert!(
                check_context_edit_target("e1", true, ty, role).is_ok(),
                "{ty} {role:?}"
            );
        }
        let off = check_context_edit_target("e1", false, "message", Some("user")).unwrap_err();
        assert_eq!(off.code(), "invalid_entry");
        assert!(
            off.to_string().contains("is not on the active branch"),
            "{off}"
        );
        for (ty, role) in [
            ("message", Some("bashExecution")),
            ("message", None),
            ("compaction", None),
            ("label", None),
        ] {
            let e = check_context_edit_target("e1", true, ty, role).unwrap_err();
            assert!(
                e.to_string().contains(&format!("(it is a {ty} entry)")),
                "{e}"
            );
        }
    }

    #[test]
    fn names_collapse_line_breaks_and_trim() {
        assert_eq!(normalize_session_name("  a\r\n\nb \n"), "a b");
        assert_eq!(normalize_session_name("\n"), "");
        assert_eq!(normalize_session_name("plain"), "plain");
    }

    #[test]
    fn replacement_shapes() {
        assert!(check_replacement_shape("t", &Value::Null).is_ok());
        assert!(check_replacement_shape("t", &json!({"content": "x"})).is_ok());
        assert!(
            check_replacement_shape("t", &json!({"content": [{"type": "text", "text": "x"}]}))
                .is_ok()
        );
        for bad in [json!({}), json!({"content": 1}), json!("x"), json!([])] {
            let err = check_replacement_shape("t", &bad).unwrap_err();
            assert_eq!(err.code(), "invalid_entry", "{bad}");
        }
    }
}
