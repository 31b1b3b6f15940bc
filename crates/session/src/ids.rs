//! Identifiers: short random entry ids, UUIDv7 session ids, caller-id validation.

use rand::RngCore;

/// Entry ids are 8 lowercase hex characters; after this many collisions we fall back to a UUID.
/// Backends that detect collisions themselves (a UNIQUE index) follow the same rule.
pub const ENTRY_ID_TRIES: usize = 100;

/// One random entry id candidate: 8 lowercase hex characters.
pub fn random_entry_id() -> String {
    format!("{:08x}", rand::thread_rng().next_u32())
}

/// The id used once [`ENTRY_ID_TRIES`] candidates all collided: a full UUIDv7.
pub fn fallback_entry_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The id a v1 entry (a file older than ids) gets when it is read: 8 lowercase hex characters
/// derived from the session id and the entry's position in the file, so every open of the
/// same file gives the same ids (DECISIONS §25.12). `exists` turns a collision into the next
/// candidate of the same sequence, so that stays deterministic too.
pub fn derived_entry_id(session_id: &str, position: u64, exists: impl Fn(&str) -> bool) -> String {
    // FNV-1a over the inputs, then murmur3's finalizer: fixed arithmetic, the same on every
    // platform and Rust version (std's hashers promise neither).
    let mut base: u64 = 0xcbf2_9ce4_8422_2325;
    for b in session_id
        .bytes()
        .chain([0xff])
        .chain(position.to_le_bytes())
    {
        base = (base ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    for attempt in 0..ENTRY_ID_TRIES as u64 {
        let mut z = base ^ attempt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z ^= z >> 33;
        z = z.wrapping_mul(0xff51_afd7_ed55_8ccd);
        z ^= z >> 33;
        z = z.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        z ^= z >> 33;
        let id = format!("{:08x}", z as u32);
        if !exists(&id) {
            return id;
        }
    }
    format!("{session_id}-{position}")
}

/// A fresh entry id not accepted by `exists`: 8 random lowercase hex characters, or a full
/// UUIDv7 when 100 tries all collide (a session with billions of entries, or a broken RNG).
pub fn new_entry_id(exists: impl Fn(&str) -> bool) -> String {
    for _ in 0..ENTRY_ID_TRIES {
        let id = random_entry_id();
        if !exists(&id) {
            return id;
        }
    }
    fallback_entry_id()
}

/// A new session id (UUIDv7: time-ordered, so ids sort by creation).
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Checks a caller-given session id against `^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`
/// (safe as a file name on every platform, no leading dot or dash); `invalid_session` otherwise.
pub fn validate_session_id(id: &str) -> Result<(), crate::error::SessionError> {
    let bytes = id.as_bytes();
    let alnum = |b: &u8| b.is_ascii_alphanumeric();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    let ok = match bytes {
        [] => false,
        [one] => alnum(one),
        [first, middle @ .., last] => alnum(first) && alnum(last) && middle.iter().all(inner),
    };
    if ok {
        Ok(())
    } else {
        Err(crate::error::SessionError::InvalidSession(format!(
            "invalid session id {id:?}: use letters, digits, '.', '_' or '-', starting and ending with a letter or digit"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_are_8_hex_and_avoid_existing() {
        let id = new_entry_id(|_| false);
        assert_eq!(id.len(), 8);
        assert!(id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        let fallback = new_entry_id(|_| true);
        assert_eq!(fallback.len(), 36, "falls back to a UUID: {fallback}");
    }

    #[test]
    fn session_id_validation() {
        for ok in [
            "a",
            "abc",
            "a.b-c_d",
            "01a22c74-06be-7675-8af3-d71302c7ca5f",
            "X9",
        ] {
            assert!(validate_session_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "a-", ".a", "a b", "a/b", "ä", "a..b/"] {
            assert!(validate_session_id(bad).is_err(), "{bad}");
        }
    }
}
