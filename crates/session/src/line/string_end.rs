//! Word-at-a-time search for the bytes that end the plain part of a JSON string.
//!
//! Shared by the open's skim and the row scanner: both read short strings (ids, types,
//! timestamps) where a per-byte loop costs ~7 instructions a byte and `memchr`'s set-up more
//! than the string; eight bytes per step cost about one.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

#[inline]
fn has_zero(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// One flag bit per byte of `w` that is `"`, `\` or below 0x20.
#[inline]
fn special_mask(w: u64) -> u64 {
    let quote = has_zero(w ^ (ONES * u64::from(b'"')));
    let slash = has_zero(w ^ (ONES * u64::from(b'\\')));
    // Bytes below 0x20: (w - 0x20..) & !w & 0x80.. flags them (and only them, for bytes < 0x80;
    // bytes >= 0x80 have their high bit set in `w`, so `!w` clears the flag). A borrow from a
    // lower byte can set a false flag only above a true one, and only the lowest flag is read.
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    quote | slash | control
}

/// Position of the first `"`, `\` or control byte in `b` at or after `i`.
#[inline]
pub(crate) fn next_special(b: &[u8], mut i: usize) -> Option<usize> {
    while i + 8 <= b.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i..i + 8]);
        let m = special_mask(u64::from_le_bytes(w));
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\\' || c < 0x20 {
            return Some(i);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::next_special;
    use proptest::prelude::*;

    proptest! {
        /// The word-at-a-time search finds what a byte loop finds, at every alignment.
        #[test]
        fn finds_the_first_special_byte(bytes in proptest::collection::vec(any::<u8>(), 0..40), from in 0usize..40) {
            let slow = bytes.iter().enumerate().skip(from)
                .find(|(_, &c)| c == b'"' || c == b'\\' || c < 0x20)
                .map(|(i, _)| i);
            prop_assert_eq!(next_special(&bytes, from), slow);
        }
    }
}
