//! A UTF-8 validity check tuned for session files: long ASCII runs broken by frequent short
//! multibyte characters (CJK, accents, emoji). `std::str::from_utf8` only takes its word-at-a-
//! time path from aligned positions, which such text rarely reaches; this check reads a word at
//! any position and jumps straight to its first non-ASCII byte. Same answer as std (tested).

/// The byte offset where the first invalid sequence starts (std's `valid_up_to`), or `None`.
pub(crate) fn first_invalid(bytes: &[u8]) -> Option<usize> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = bytes.len();
    let mut i = 0;
    while i < n {
        if i + 8 <= n {
            // Jump straight to the first byte with the high bit set, or past 8 ASCII bytes.
            let high = word(bytes, i) & HIGH;
            if high == 0 {
                i += 8;
                continue;
            }
            i += (high.trailing_zeros() / 8) as usize;
        }
        let c = bytes[i];
        if c < 0x80 {
            i += 1;
            continue;
        }
        // Allowed range of the second byte and the sequence length (RFC 3629, table 3-7).
        let (len, lo, hi) = match c {
            0xC2..=0xDF => (2, 0x80, 0xBF),
            0xE0 => (3, 0xA0, 0xBF),
            0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80, 0xBF),
            0xED => (3, 0x80, 0x9F),
            0xF0 => (4, 0x90, 0xBF),
            0xF1..=0xF3 => (4, 0x80, 0xBF),
            0xF4 => (4, 0x80, 0x8F),
            _ => return Some(i),
        };
        let Some(seq) = bytes.get(i..i + len) else {
            return Some(i);
        };
        if !(lo..=hi).contains(&seq[1]) || seq[2..].iter().any(|b| b & 0xC0 != 0x80) {
            return Some(i);
        }
        i += len;
    }
    None
}

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::first_invalid;
    use proptest::prelude::*;

    fn std_answer(b: &[u8]) -> Option<usize> {
        std::str::from_utf8(b).err().map(|e| e.valid_up_to())
    }

    #[test]
    fn agrees_with_std_on_edge_cases() {
        let cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"plain ascii text that is longer than sixteen bytes".to_vec(),
            "你好 ünï 😀 mixed".as_bytes().to_vec(),
            vec![0xC0, 0x80],
            vec![0xE0, 0x80, 0x80],
            vec![0xED, 0xA0, 0x80],
            vec![0xF4, 0x90, 0x80, 0x80],
            vec![0xF5, 0x80, 0x80, 0x80],
            vec![b'a'; 17].into_iter().chain([0xFF]).collect(),
            "é".as_bytes()[..1].to_vec(),
            [
                b"0123456789abcdef".as_slice(),
                "😀".as_bytes(),
                &[0xF0, 0x9F],
            ]
            .concat(),
        ];
        for c in cases {
            assert_eq!(first_invalid(&c), std_answer(&c), "{c:?}");
        }
    }

    proptest! {
        #[test]
        fn agrees_with_std_on_random_bytes(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(first_invalid(&b), std_answer(&b));
        }

        #[test]
        fn agrees_with_std_on_mostly_valid_text(s in "\\PC{0,80}", cut in 0usize..400, junk in any::<u8>()) {
            let mut b = s.into_bytes();
            if !b.is_empty() {
                let at = cut % b.len();
                b[at] = junk;
            }
            prop_assert_eq!(first_invalid(&b), std_answer(&b));
        }
    }
}
