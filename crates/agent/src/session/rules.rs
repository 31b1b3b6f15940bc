//! Append rules every backend applies the same way, so that a session behaves identically
//! whether it lives in memory, a JSONL file or SQLite.

use arbor_ai::json::Nullable;
use serde_json::Value;

use crate::error::{Result, SessionError};
use crate::session::entry::EntryKind;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
