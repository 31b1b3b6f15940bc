//! Small text helpers shared by the renderers: one-line previews and times.

/// `text` squeezed onto one line (every run of whitespace or control characters becomes one
/// space) and cut to at most `max` characters, ending in `…` when cut. The rule lives beside
/// the row summaries it must agree with (DECISIONS §25.81).
pub use arbor_agent::session::rows::preview;

/// Unix ms as `2026-11-30 12:35` (UTC, minutes): stable and sortable for listings.
pub fn short_time(ms: i64) -> String {
    let iso = arbor_agent::time::ms_to_iso(ms);
    format!("{} {}", &iso[..10], &iso[11..16])
}

/// Number of lines and characters in a text, for compact summaries (`3 lines, 120 chars`).
pub fn size_note(text: &str) -> String {
    let chars = text.chars().count();
    let lines = text.lines().count().max(1);
    if lines > 1 {
        format!("{lines} lines, {chars} chars")
    } else {
        format!("{chars} chars")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_squeeze_whitespace_and_cut_with_ellipsis() {
        assert_eq!(preview("  hello\n\n  world \t", 40), "hello world");
        assert_eq!(preview("abcdefghij", 5), "abcd…");
        assert_eq!(preview("abcde", 5), "abcde");
        assert_eq!(preview("ab cd ef", 6), "ab cd…");
        assert_eq!(preview("日本語のテキスト", 4), "日本語…");
        assert_eq!(preview("", 10), "");
    }

    #[test]
    fn short_time_is_utc_minutes() {
        assert_eq!(short_time(0), "1970-01-01 00:00");
        assert_eq!(short_time(1_764_505_522_918), "2025-11-30 12:25");
    }
}
