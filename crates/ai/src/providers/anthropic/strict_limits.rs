//! Claude's limits on strict tools (DECISIONS §26.25): a request whose strict tools exceed
//! them is rejected with a 400; the request is sent once more with its `prefer` tools
//! non-strict, and the session keeps sending them so from then on (switching back would
//! rewrite the tool list and lose the prompt cache).

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use serde_json::Value;

/// Texts of Claude's strict-tool limit rejections (observed: 20 strict tools, 16 optional or
/// union-typed parameters across them).
const LIMIT_MESSAGES: [&str; 3] = [
    "The compiled grammar is too large",
    "Too many strict tools (",
    "Schemas contains too many parameters with union types (",
];

/// Sessions remembered at most; the oldest is forgotten first (it then pays one more 400).
const MAX_SESSIONS: usize = 10_000;

#[derive(Default)]
struct Sessions {
    set: HashSet<String>,
    order: VecDeque<String>,
}

static SESSIONS: Mutex<Option<Sessions>> = Mutex::new(None);

/// Whether an HTTP error response is Claude's strict-tool limit rejection: status 400, an
/// `invalid_request_error`, and one of the limit texts in its message.
pub(crate) fn is_limit_rejection(status: u16, body: &str) -> bool {
    if status != 400 {
        return false;
    }
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return false;
    };
    let error = value.get("error").unwrap_or(&Value::Null);
    error.get("type").and_then(Value::as_str) == Some("invalid_request_error")
        && error
            .get("message")
            .and_then(Value::as_str)
            .is_some_and(|m| LIMIT_MESSAGES.iter().any(|limit| m.contains(limit)))
}

/// Remembers that `session`'s strict tools exceeded the limits (nothing without a session).
pub(crate) fn mark(session: Option<&str>) {
    let Some(session) = session else { return };
    let Ok(mut guard) = SESSIONS.lock() else {
        return;
    };
    let sessions = guard.get_or_insert_with(Sessions::default);
    if sessions.set.insert(session.to_string()) {
        sessions.order.push_back(session.to_string());
        if sessions.order.len() > MAX_SESSIONS {
            if let Some(oldest) = sessions.order.pop_front() {
                sessions.set.remove(&oldest);
            }
        }
    }
}

/// Whether an earlier request of `session` was rejected for its strict tools.
pub(crate) fn exceeded(session: Option<&str>) -> bool {
    let Some(session) = session else {
        return false;
    };
    SESSIONS
        .lock()
        .ok()
        .and_then(|guard| guard.as_ref().map(|s| s.set.contains(session)))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_only_the_limit_rejections() {
        let body = |t: &str, m: &str| {
            format!(r#"{{"type":"error","error":{{"type":"{t}","message":"{m}"}}}}"#)
        };
        assert!(is_limit_rejection(
            400,
            &body("invalid_request_error", "Too many strict tools (21 > 20)")
        ));
        assert!(is_limit_rejection(
            400,
            &body(
                "invalid_request_error",
                "x: The compiled grammar is too large"
            )
        ));
        assert!(!is_limit_rejection(
            429,
            &body("invalid_request_error", "Too many strict tools (21)")
        ));
        assert!(!is_limit_rejection(
            400,
            &body("api_error", "Too many strict tools (21)")
        ));
        assert!(!is_limit_rejection(
            400,
            &body("invalid_request_error", "prompt is too long")
        ));
        assert!(!is_limit_rejection(400, "not json"));
    }

    #[test]
    fn sessions_are_remembered() {
        assert!(!exceeded(Some("strict-limits-test")));
        mark(Some("strict-limits-test"));
        assert!(exceeded(Some("strict-limits-test")));
        mark(None);
        assert!(!exceeded(None));
    }
}
