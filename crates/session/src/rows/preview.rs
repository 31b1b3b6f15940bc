//! One-line previews of entry texts, cut while reading so a row keeps ~100 bytes
//! (DECISIONS §25.81).

use std::fmt;

/// The start of a text as a one-line preview sees it: runs of whitespace and control
/// characters become one space, leading and trailing ones go, and at most `cap` characters are
/// kept. Cutting a `preview` of up to `cap - 2` characters from it gives the same result as
/// cutting it from the whole text (DECISIONS §25.81).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Preview(pub(crate) Box<str>);

impl Preview {
    /// The preview text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// No text.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The preview of one text.
    pub fn of(text: &str, cap: usize) -> Preview {
        let mut s = Squash::new(cap);
        s.push(text);
        s.finish()
    }
}

impl fmt::Display for Preview {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `text` squeezed onto one line (every run of whitespace or control characters becomes one
/// space) and cut to at most `max` characters, ending in `…` when cut: the one-line preview
/// every view prints (`arbor session tree`, the TUI's rows and pickers).
pub fn preview(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(max.min(text.len()) + 3);
    preview_into(text, max, &mut out);
    out
}

/// [`preview`] appended to `out` (what came before is left alone).
pub fn preview_into(text: &str, max: usize, out: &mut String) {
    // Most texts a row prints are previews already squashed (DECISIONS §25.113): printable
    // ASCII words with single spaces. Then the preview is the text, or its first `max - 1`
    // characters and the ellipsis, which is what the walk below gives for such a text.
    if max > 0 && squashed_ascii(text.as_bytes()) {
        if text.len() <= max {
            out.push_str(text);
        } else {
            out.push_str(&text[..max - 1]);
            out.push('…');
        }
        return;
    }
    preview_walk(text, max, out);
}

/// Non-empty printable ASCII, words separated by single spaces, none at either end.
fn squashed_ascii(b: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    visible_ascii(first)
        && visible_ascii(last)
        && b.windows(2)
            .all(|w| visible_ascii(w[1]) || (w[1] == b' ' && visible_ascii(w[0])))
}

/// [`preview_into`] for any text.
fn preview_walk(text: &str, max: usize, out: &mut String) {
    let mut count = 0usize;
    let mut pending_space = false;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if visible_ascii(c) {
            // A run of visible ASCII: as many as fit in one go.
            let start = i;
            while i < b.len() && visible_ascii(b[i]) {
                i += 1;
            }
            let room = max.saturating_sub(count + usize::from(pending_space));
            let fit = (i - start).min(room);
            if fit > 0 {
                if pending_space {
                    out.push(' ');
                    count += 1;
                    pending_space = false;
                }
                out.push_str(&text[start..start + fit]);
                count += fit;
            }
            if fit < i - start {
                ellipsis(out, count, max);
                return;
            }
            continue;
        }
        let ch = if c < 0x80 {
            i += 1;
            char::from(c)
        } else {
            match text[i..].chars().next() {
                Some(ch) => {
                    i += ch.len_utf8();
                    ch
                }
                None => return,
            }
        };
        if ch.is_whitespace() || ch.is_control() {
            pending_space = count > 0;
            continue;
        }
        let needed = usize::from(pending_space) + 1;
        if count + needed > max {
            ellipsis(out, count, max);
            return;
        }
        if pending_space {
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        out.push(ch);
        count += 1;
    }
}

/// Ends a cut preview: drops characters (of the `count` this preview wrote) until the
/// ellipsis fits in `max`, then adds it.
fn ellipsis(out: &mut String, mut count: usize, max: usize) {
    while count + 1 > max && count > 0 {
        out.pop();
        count -= 1;
    }
    out.push('…');
}

/// An ASCII character that is neither whitespace nor a control character.
#[inline]
fn visible_ascii(c: u8) -> bool {
    c > b' ' && c < 0x7f
}

/// Builds a [`Preview`] from one or more pieces (text blocks joined by a space).
pub(crate) struct Squash {
    out: String,
    count: usize,
    cap: usize,
    pending_space: bool,
    pub(crate) full: bool,
}

impl Squash {
    pub(crate) fn new(cap: usize) -> Squash {
        Squash {
            out: String::new(),
            count: 0,
            cap,
            pending_space: false,
            full: false,
        }
    }

    pub(crate) fn push(&mut self, text: &str) {
        self.push_text(text, None);
    }

    /// [`Squash::push`] that also notes whether `text` has a non-whitespace character
    /// (`nonblank`; the assistant's "has text" flag, which counts control characters).
    pub(crate) fn push_tracking(&mut self, text: &str, nonblank: &mut bool) {
        self.push_text(text, Some(nonblank));
    }

    /// Runs of visible ASCII go in at once; other characters one by one (DECISIONS §25.93).
    pub(crate) fn push_text(&mut self, text: &str, mut nonblank: Option<&mut bool>) {
        if self.full {
            return;
        }
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if visible_ascii(c) {
                let start = i;
                while i < b.len() && visible_ascii(b[i]) {
                    i += 1;
                }
                if let Some(n) = nonblank.as_deref_mut() {
                    *n = true;
                }
                let space = usize::from(self.pending_space);
                let room = self.cap.saturating_sub(self.count + space);
                let fit = (i - start).min(room);
                if fit > 0 {
                    if self.out.capacity() == 0 {
                        self.out.reserve(self.cap.min(96));
                    }
                    if self.pending_space {
                        self.out.push(' ');
                        self.pending_space = false;
                    }
                    self.out.push_str(&text[start..start + fit]);
                    self.count += space + fit;
                }
                if fit < i - start {
                    self.full = true;
                    return;
                }
                continue;
            }
            let ch = if c < 0x80 {
                i += 1;
                char::from(c)
            } else {
                match text[i..].chars().next() {
                    Some(ch) => {
                        i += ch.len_utf8();
                        ch
                    }
                    None => return,
                }
            };
            if let Some(n) = nonblank.as_deref_mut() {
                if !ch.is_whitespace() {
                    *n = true;
                }
            }
            if !self.push_char(ch) {
                return;
            }
        }
    }

    /// One character; `false` once the preview is full.
    #[inline]
    pub(crate) fn push_char(&mut self, ch: char) -> bool {
        if ch.is_whitespace() || ch.is_control() {
            self.pending_space = self.count > 0;
            return true;
        }
        let needed = usize::from(self.pending_space) + 1;
        if self.count + needed > self.cap {
            self.full = true;
            return false;
        }
        if self.out.capacity() == 0 {
            self.out.reserve(self.cap.min(96));
        }
        if self.pending_space {
            self.out.push(' ');
            self.count += 1;
            self.pending_space = false;
        }
        self.out.push(ch);
        self.count += 1;
        true
    }

    #[inline]
    pub(crate) fn push_char_tracking(&mut self, ch: char, nonblank: &mut bool) -> bool {
        if !ch.is_whitespace() {
            *nonblank = true;
        }
        self.push_char(ch)
    }

    /// The space between two joined pieces.
    pub(crate) fn separator(&mut self) {
        self.pending_space = self.count > 0;
    }

    pub(crate) fn finish(self) -> Preview {
        Preview(self.out.into_boxed_str())
    }
}

#[cfg(test)]
mod preview_fast_path {
    use proptest::prelude::*;

    proptest! {
        /// The squashed-text shortcut gives what the general walk gives, for every text.
        #[test]
        fn shortcut_equals_the_walk(text in "[ab \t\u{e9}\n.]{0,14}", max in 0usize..16) {
            let mut fast = String::from(">");
            super::preview_into(&text, max, &mut fast);
            let mut slow = String::from(">");
            super::preview_walk(&text, max, &mut slow);
            prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn the_shortcut_is_taken_for_squashed_text() {
        assert!(super::squashed_ascii(b"ab cd.e"));
        for no in [&b""[..], b" ab", b"ab ", b"a  b", b"a\tb", b"caf\xc3\xa9"] {
            assert!(!super::squashed_ascii(no), "{no:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic mix of words, whitespace runs and control characters.
    fn texts() -> Vec<String> {
        let pieces = [
            "ab", " ", "\n\n", "\t ", "é", "\u{1}", "xyz", "  ", "ü€", "\u{7f}",
        ];
        let mut out = vec![String::new(), " ".into(), "a".into()];
        let mut state = 7u64;
        for n in 0..400 {
            let mut s = String::new();
            for _ in 0..(n % 60) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            out.push(s);
        }
        out
    }

    #[test]
    fn a_preview_of_the_head_equals_a_preview_of_the_whole_text() {
        for text in texts() {
            for cap in [3, 8, 20, 40] {
                let head = Preview::of(&text, cap);
                assert!(head.as_str().chars().count() <= cap);
                for max in 1..=cap - 2 {
                    assert_eq!(
                        preview(head.as_str(), max),
                        preview(&text, max),
                        "{text:?} cap {cap} max {max}"
                    );
                }
            }
        }
    }

    #[test]
    fn joined_blocks_preview_like_their_joined_text() {
        let all = texts();
        for pair in all.chunks(2) {
            let joined = pair.join(" ");
            let mut s = Squash::new(30);
            for p in pair {
                s.separator();
                s.push(p);
            }
            let head = s.finish();
            for max in 1..=28 {
                assert_eq!(
                    preview(head.as_str(), max),
                    preview(&joined, max),
                    "{pair:?}"
                );
            }
        }
    }
}
