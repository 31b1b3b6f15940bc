//! Decoding entry rows. The payload column is the entry's complete JSON line; the indexed
//! columns are copies of its envelope, so a row whose payload disagrees with them is corrupt.

use arbor_session::error::SessionError;
use arbor_session::SessionEntry;

use crate::keys;

/// Parses a stored payload, naming session, log position and entry id when it is unusable.
pub(crate) fn decode_payload(
    session_id: &str,
    key: i64,
    id: &str,
    payload: &str,
) -> Result<SessionEntry, SessionError> {
    let entry = SessionEntry::from_json(payload).map_err(|e| {
        SessionError::InvalidSession(format!(
            "session {session_id}: entry {id} (seq {}) has a corrupt payload: {e}",
            keys::seq(key)
        ))
    })?;
    if entry.id != id {
        return Err(SessionError::InvalidSession(format!(
            "session {session_id}: entry row {id} (seq {}) holds a payload for id {}",
            keys::seq(key),
            entry.id
        )));
    }
    Ok(entry)
}
