//! Cleaning the output of a user's own shell command (RPC `bash`, the TUI's `!`) the way pi's
//! bash executor does (DECISIONS §22.30): terminal escape sequences removed, control
//! characters other than tab and newline dropped, `\r` removed. The model's `bash` tool keeps
//! its output as it is. DECISIONS §22.30.
//!
//! The escape grammar is pi's (the `ansi-regex` shape): an OSC sequence runs to its first string
//! terminator (BEL, `ESC \` or 0x9C); a CSI-like sequence is an introducer, optional parameters
//! and one final byte. Streamed output can end inside a sequence, so [`Cleaner`] holds such an
//! unfinished tail back (up to [`MAX_PENDING`] bytes) until the next chunk completes it.

use std::sync::LazyLock;

use regex_lite::Regex;

/// Introducer, then optional `digits[;:digits]*` parameters (no final byte).
const CSI_START: &str =
    r"(?:(?:\x{1B}\[|\x{9B})[<=>]|[\x{1B}\x{9B}][\[\]()#;?]*)(?:[0-9]{1,4}(?:[;:][0-9]{0,4})*)?";
const CSI_FINAL: &str = r"[0-9A-PR-TZcf-nq-uy=><~]";
/// The longest unfinished sequence held back while streaming; longer ones pass as they are.
pub const MAX_PENDING: usize = 256;

static COMPLETE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?:\x{{1B}}\][\s\S]*?(?:\x{{07}}|\x{{1B}}\\|\x{{9C}}))|{CSI_START}{CSI_FINAL}"
    ))
    .ok()
});

static UNFINISHED_CSI: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{CSI_START}$")).ok());

/// `text` without its escape sequences.
pub fn strip_ansi(text: &str) -> String {
    if !has_escape(text) {
        return text.to_owned();
    }
    match COMPLETE.as_ref() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_owned(),
    }
}

fn has_escape(text: &str) -> bool {
    text.contains('\u{1B}') || text.contains('\u{9B}')
}

/// Control characters pi drops from shell output (tab, LF and CR stay here; CR goes later),
/// and the interlinear annotation marks U+FFF9–U+FFFB.
fn is_dropped(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}' | '\u{FFF9}'..='\u{FFFB}')
}

/// One finished piece of output cleaned: escapes stripped, control characters and `\r` removed.
pub fn clean(text: &str) -> String {
    strip_ansi(text)
        .chars()
        .filter(|&c| c != '\r' && !is_dropped(c))
        .collect()
}

/// Where an unfinished escape sequence starts at the end of `text` (the leftmost start within
/// the last [`MAX_PENDING`] bytes whose rest is an OSC without terminator or a CSI without final
/// byte).
fn unfinished_suffix(text: &str) -> Option<usize> {
    if !has_escape(text) {
        return None;
    }
    let mut from = text.len().saturating_sub(MAX_PENDING);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    text[from..]
        .char_indices()
        .filter(|&(_, c)| c == '\u{1B}' || c == '\u{9B}')
        .map(|(i, _)| from + i)
        .find(|&at| {
            let rest = &text[at..];
            unfinished_osc(rest) || UNFINISHED_CSI.as_ref().is_some_and(|re| re.is_match(rest))
        })
}

/// `ESC ]` followed by text with no BEL, no 0x9C and no `ESC \` (a lone ESC at the end may
/// still become `ESC \`).
fn unfinished_osc(rest: &str) -> bool {
    let Some(body) = rest.strip_prefix("\u{1B}]") else {
        return false;
    };
    !body.contains(['\u{7}', '\u{9C}']) && !body.contains("\u{1B}\\")
}

/// Cleans streamed output chunk by chunk, holding back an escape sequence cut by a chunk end.
#[derive(Debug, Default)]
pub struct Cleaner {
    pending: String,
}

impl Cleaner {
    /// The cleaned text of `chunk` that is final now (possibly empty).
    pub fn push(&mut self, chunk: &str) -> String {
        let mut text = std::mem::take(&mut self.pending);
        text.push_str(chunk);
        if let Some(at) = unfinished_suffix(&text) {
            self.pending = text.split_off(at);
        }
        clean(&text)
    }

    /// The cleaned rest once the output has ended.
    pub fn finish(&mut self) -> String {
        clean(&std::mem::take(&mut self.pending))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_cursor_moves_and_titles_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[1;31mred\u{1b}[0m plain"), "red plain");
        assert_eq!(strip_ansi("a\u{1b}[2Kb\u{1b}[10Cc"), "abc");
        assert_eq!(strip_ansi("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(
            strip_ansi("\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
        assert_eq!(strip_ansi("\u{9b}32mgreen"), "green");
        assert_eq!(strip_ansi("\u{1b}[<35;59;1Mafter"), "after");
        assert_eq!(strip_ansi("no escapes"), "no escapes");
    }

    #[test]
    fn clean_drops_control_characters_and_carriage_returns() {
        assert_eq!(
            clean("50%\r100%\r\n\u{7}bell\u{8} tab\there\u{1b}[K"),
            "50%100%\nbell tab\there"
        );
        assert_eq!(clean("ünïcode ✓\u{fffa}"), "ünïcode ✓");
    }

    #[test]
    fn a_sequence_cut_by_a_chunk_end_is_completed_by_the_next_chunk() {
        let mut c = Cleaner::default();
        assert_eq!(c.push("one \u{1b}[3"), "one ");
        assert_eq!(c.push("1mred\u{1b}]0;ti"), "red");
        assert_eq!(c.push("tle\u{7}done\n"), "done\n");
        assert_eq!(c.finish(), "");
        // An unfinished sequence at the very end is cleaned as it is: the ESC goes, "[" stays.
        let mut c = Cleaner::default();
        assert_eq!(c.push("x\u{1b}["), "x");
        assert_eq!(c.finish(), "[");
    }

    #[test]
    fn an_overlong_unfinished_sequence_is_not_held_back() {
        let mut c = Cleaner::default();
        let long = format!("\u{1b}]0;{}", "t".repeat(MAX_PENDING + 10));
        let out = c.push(&long);
        assert!(out.ends_with("ttt"), "{out:?}");
        assert_eq!(c.finish(), "");
    }
}
