//! The identity of one session inside the store, shared by every module that runs SQL for it.

use arbor_session::error::SessionError;

/// The identity of one session inside the store.
#[derive(Debug, Clone)]
pub(crate) struct Sid {
    pub sid: i32,
    pub id: String,
}

/// The error for a session whose row disappeared under an open handle.
pub(crate) fn gone(s: &Sid) -> SessionError {
    SessionError::NotFound(format!("Session not found: {} (it was deleted)", s.id))
}
