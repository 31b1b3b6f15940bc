//! Entry row keys: `sid * 2^32 + seq`, so one session's entries are one contiguous rowid range
//! in log order (seq starts at 1).

/// Entries per session the key layout can address.
pub(crate) const MAX_SEQ: i64 = 0xFFFF_FFFF;

pub(crate) fn key(sid: i64, seq: i64) -> i64 {
    (sid << 32) | seq
}

pub(crate) fn seq(key: i64) -> i64 {
    key & MAX_SEQ
}

/// Inclusive rowid bounds of a session's entries.
pub(crate) fn range(sid: i64) -> (i64, i64) {
    (sid << 32, (sid << 32) | MAX_SEQ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_ranges_do_not_overlap() {
        let k = key(7, 42);
        assert_eq!(seq(k), 42);
        let (lo, hi) = range(7);
        assert!(lo < k && k <= hi);
        assert!(hi < range(8).0);
        assert_eq!(seq(key(1, MAX_SEQ)), MAX_SEQ);
    }
}
