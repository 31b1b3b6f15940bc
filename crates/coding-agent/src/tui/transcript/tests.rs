//! Unit tests of the transcript's text primitives: wrapping, markdown, tool summaries.

use proptest::prelude::*;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::json;

use super::layout::thousands;
use super::markdown;
use super::tool::{summary, truncate_line};
use super::wrap::{str_width, Mode, Wrapper};
use crate::tui::theme::Theme;

fn plain(lines: &[Line<'_>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

fn wrap(text: &str, width: usize, mode: Mode) -> Vec<String> {
    let mut out = Vec::new();
    let first = [Span::raw("> ")];
    let rest = [Span::raw("  ")];
    let mut w = Wrapper::new(width, &first, &rest, mode, &mut out);
    w.push(text, Style::new());
    w.finish();
    plain(&out)
}

fn md(text: &str, width: usize) -> Vec<String> {
    plain(&markdown::render(
        text,
        width,
        &Theme::colored(),
        Style::new(),
    ))
}

#[test]
fn words_wrap_at_spaces_and_long_words_break() {
    assert_eq!(
        wrap("one two three four", 11, Mode::Words),
        ["> one two", "  three", "  four"]
    );
    assert_eq!(
        wrap("abcdefghijkl", 6, Mode::Words),
        ["> abcd", "  efgh", "  ijkl"]
    );
    // Spaces at a wrap point are dropped, spaces the author wrote at a line start are kept.
    assert_eq!(wrap("aaaa    bbbb", 8, Mode::Words), ["> aaaa", "  bbbb"]);
    assert_eq!(
        wrap("a\n  indented", 20, Mode::Words),
        ["> a", "    indented"]
    );
    // Indentation wider than the line is clipped so the text still starts on it.
    assert_eq!(wrap("a\n          b", 6, Mode::Words), ["> a", "     b"]);
}

#[test]
fn wide_characters_count_two_cells_and_controls_are_dropped() {
    // Each CJK character is two cells: three fit in 6 cells after the 2-cell prefix + 0.
    assert_eq!(
        wrap("漢字漢字漢字", 8, Mode::Chars),
        ["> 漢字漢", "  字漢字"]
    );
    assert_eq!(wrap("a\u{1b}[31mred\u{7}", 20, Mode::Chars), ["> a[31mred"]);
    assert_eq!(wrap("a\tb", 20, Mode::Chars), ["> a    b"]);
}

#[test]
fn chars_mode_keeps_every_space() {
    assert_eq!(wrap("a   b", 20, Mode::Chars), ["> a   b"]);
    assert_eq!(wrap("abcdef", 5, Mode::Chars), ["> abc", "  def"]);
}

#[test]
fn nested_and_numbered_lists_keep_their_markers_and_indent() {
    let text = "3. third item that wraps around\n4. fourth\n   - sub a\n   - sub b\n     1. deep\n";
    assert_eq!(
        md(text, 20),
        [
            "3. third item that",
            "   wraps around",
            "4. fourth",
            "   - sub a",
            "   - sub b",
            "     1. deep",
        ]
    );
}

#[test]
fn headings_quotes_rules_and_code_fences_stay_visible_as_text() {
    let text = "# Title\n\n> quoted\n> text\n\n---\n\n```\nplain code\n```";
    assert_eq!(
        md(text, 14),
        [
            "# Title",
            "",
            "│ quoted text",
            "",
            "──────────────",
            "",
            "```",
            "plain code",
            "```"
        ]
    );
}

#[test]
fn links_show_their_target_unless_it_is_the_text() {
    assert_eq!(
        md("[docs](https://d.io) and <https://x.io>", 80),
        ["docs (https://d.io) and https://x.io"]
    );
    assert_eq!(md("mail <me@x.io>", 80), ["mail me@x.io"]);
}

#[test]
fn a_code_block_in_a_list_item_is_indented_under_the_item() {
    let text = "- run:\n\n  ```sh\n  make\n  ```\n";
    assert_eq!(md(text, 40), ["- run:", "", "  ```sh", "  make", "  ```"]);
}

#[test]
fn tool_summaries_read_like_the_call() {
    assert_eq!(summary("read", &json!({"path": "a.rs"})), "a.rs");
    assert_eq!(
        summary("read", &json!({"path": "a.rs", "offset": 5})),
        "a.rs:5"
    );
    assert_eq!(
        summary("bash", &json!({"command": "make\nmake test"})),
        "$ make… (2 lines)"
    );
    assert_eq!(summary("ls", &json!({})), ".");
    assert_eq!(summary("find", &json!({"pattern": "*.rs"})), "*.rs in .");
    assert_eq!(summary("mystery", &json!({})), "");
    assert_eq!(summary("mystery", &json!({"a": 1})), "{\"a\":1}");
    let long = "x".repeat(500);
    assert_eq!(summary("edit", &json!({"path": long})).chars().count(), 201);
}

#[test]
fn truncated_lines_end_with_an_ellipsis_inside_the_width() {
    let l = truncate_line("abcdefghij", Style::new(), "  ", 8);
    assert_eq!(plain(&[l]), ["  abcde…"]);
    let l = truncate_line("abc", Style::new(), "  ", 8);
    assert_eq!(plain(&[l]), ["  abc"]);
}

#[test]
fn thousands_groups_digits() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(123456789), "123,456,789");
}

proptest! {
    /// Whatever the text, no rendered line is wider than the width and no control character
    /// reaches the buffer.
    #[test]
    fn markdown_lines_fit_the_width(text in "(?s)[ -~\t\n漢é\u{1b}#*`>\\-\\[\\]()|]{0,300}", width in 4usize..50) {
        for line in md(&text, width) {
            prop_assert!(!line.chars().any(char::is_control), "{line:?}");
            // A prefix deeper than the width may overflow by design (one text cell is kept),
            // so check only lines that start with text.
            if !line.starts_with(' ') && !line.starts_with('│') && !line.starts_with('-') {
                prop_assert!(str_width(&line) <= width.max(2), "{line:?} wider than {width}");
            }
        }
    }

    /// (Down to the narrowest line that still holds the prefix and one wide character.)
    #[test]
    fn wrapped_lines_fit_the_width(text in "(?s)[ -~\t\n漢é]{0,200}", width in 4usize..40) {
        for mode in [Mode::Words, Mode::Chars] {
            for line in wrap(&text, width, mode) {
                prop_assert!(str_width(&line) <= width, "{line:?} wider than {width}");
            }
        }
    }
}
