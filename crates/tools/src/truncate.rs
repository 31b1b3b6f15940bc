//! Output limits shared by the file tools: head truncation (keep the start, whole lines only) for
//! reads and searches, tail truncation (keep the end) for command output (DECISIONS §22.1). The limits and the
//! record's field names are pi's, so `details.truncation` reads the same.

use serde::Serialize;

/// Most lines a tool result carries.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Most bytes (UTF-8) a tool result carries: 50 KiB.
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest line `grep` shows, in characters.
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// Which limit cut the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    /// The line limit was reached first.
    Lines,
    /// The byte limit was reached first.
    Bytes,
}

/// What truncation kept; serialized into `details.truncation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The text kept.
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit cut it.
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the whole input.
    pub total_lines: usize,
    /// Bytes in the whole input.
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// Whether the last kept line was cut part-way.
    pub last_line_partial: bool,
    /// Whether the first line alone is over the byte limit.
    pub first_line_exceeds_limit: bool,
    /// The line limit applied.
    pub max_lines: usize,
    /// The byte limit applied.
    pub max_bytes: usize,
}

/// `N B`, `N.N KB` or `N.N MB` without the space, as pi prints sizes.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Lines for counting: a trailing newline does not start another line.
fn split_lines(content: &str) -> Vec<&str> {
    if content.is_empty() {
        return Vec::new();
    }
    let body = content.strip_suffix('\n').unwrap_or(content);
    body.split('\n').collect()
}

fn untouched(content: &str, lines: usize, max_lines: usize, max_bytes: usize) -> Truncation {
    Truncation {
        content: content.to_owned(),
        truncated: false,
        truncated_by: None,
        total_lines: lines,
        total_bytes: content.len(),
        output_lines: lines,
        output_bytes: content.len(),
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// Keeps the first whole lines within both limits. A first line over the byte limit yields
/// empty content with `first_line_exceeds_limit`.
pub fn truncate_head(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines = split_lines(content);
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return untouched(content, total_lines, max_lines, max_bytes);
    }
    let mut out = Truncation {
        content: String::new(),
        truncated: true,
        truncated_by: Some(TruncatedBy::Bytes),
        total_lines,
        total_bytes: content.len(),
        output_lines: 0,
        output_bytes: 0,
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    };
    if lines.first().is_some_and(|l| l.len() > max_bytes) {
        out.first_line_exceeds_limit = true;
        return out;
    }
    let mut bytes = 0;
    let mut kept = 0;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().take(max_lines).enumerate() {
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        bytes += cost;
        kept += 1;
    }
    if kept >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    out.content = lines[..kept].join("\n");
    out.truncated_by = Some(by);
    out.output_lines = kept;
    out.output_bytes = out.content.len();
    out
}

/// Keeps the last whole lines within both limits; if even the last line is too long, keeps its
/// end (`last_line_partial`).
pub fn truncate_tail(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines = split_lines(content);
    let total_lines = lines.len();
    let content_len = content.len();
    if total_lines <= max_lines && content_len <= max_bytes {
        return untouched(content, total_lines, max_lines, max_bytes);
    }
    let mut bytes = 0;
    let mut first_kept = lines.len();
    let mut by = TruncatedBy::Lines;
    let mut partial: Option<&str> = None;
    while first_kept > 0 && lines.len() - first_kept < max_lines {
        let line = lines[first_kept - 1];
        let cost = line.len() + usize::from(first_kept < lines.len());
        if bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            if first_kept == lines.len() {
                let tail = tail_bytes(line, max_bytes);
                bytes = tail.len();
                partial = Some(tail);
            }
            break;
        }
        bytes += cost;
        first_kept -= 1;
    }
    let kept_lines = lines.len() - first_kept + usize::from(partial.is_some());
    if kept_lines >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    let content = match partial {
        Some(tail) => tail.to_owned(),
        None => lines[first_kept..].join("\n"),
    };
    Truncation {
        output_bytes: content.len(),
        content,
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes: content_len,
        output_lines: kept_lines,
        last_line_partial: partial.is_some(),
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// The last at most `max` bytes of `s`, starting on a character boundary.
fn tail_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Cuts a line to `max_chars` characters plus `... [truncated]`; the flag says whether it was cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    match line.char_indices().nth(max_chars) {
        None => (line.to_owned(), false),
        Some((cut, _)) => (format!("{}... [truncated]", &line[..cut]), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_like_pi() {
        assert_eq!(format_size(512), "512B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(3 * 1024 * 1024 + 100_000), "3.1MB");
    }

    #[test]
    fn head_keeps_whole_lines_and_says_which_limit_cut() {
        let text: String = (1..=3000).map(|i| format!("{i}\n")).collect();
        let t = truncate_head(&text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        assert_eq!(t.output_lines, 2000);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert!(t.content.ends_with("\n2000"));
        let long = "x".repeat(100);
        let text = vec![long.as_str(); 1000].join("\n");
        let t = truncate_head(&text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        // 100 + 505 * 101 = 51105 fits; one more line would be 51206.
        assert_eq!(t.output_lines, 506);
    }

    #[test]
    fn head_gives_nothing_when_the_first_line_is_too_long() {
        let text = format!("{}\nshort", "y".repeat(60_000));
        let t = truncate_head(&text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
    }

    #[test]
    fn tail_keeps_the_end_of_an_overlong_last_line_on_a_char_boundary() {
        let text = format!("a\n{}", "é".repeat(40_000));
        let t = truncate_tail(&text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        assert!(t.last_line_partial);
        assert!(t.content.len() <= DEFAULT_MAX_BYTES);
        assert!(t.content.chars().all(|c| c == 'é'));
        let text: String = (1..=3000).map(|i| format!("{i}\n")).collect();
        let t = truncate_tail(&text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        assert!(t.content.starts_with("1001\n"));
        assert!(t.content.ends_with("\n3000"));
    }

    #[test]
    fn long_lines_are_cut_by_characters() {
        let (t, cut) = truncate_line(&"ä".repeat(600), 500);
        assert!(cut);
        assert_eq!(t.chars().count(), 500 + "... [truncated]".len());
        assert_eq!(truncate_line("short", 500), ("short".into(), false));
    }
}

/// The bracketed line a listing tool (`grep`, `find`, `ls`) ends with when a limit cut its
/// output, and the same facts under `details`, in the order pi writes them.
#[derive(Debug, Default)]
pub struct LimitNotices {
    texts: Vec<String>,
    details: serde_json::Map<String, serde_json::Value>,
}

impl LimitNotices {
    /// One notice, with its `details` key.
    pub fn add(&mut self, text: String, key: &str, value: serde_json::Value) {
        self.texts.push(text);
        self.details.insert(key.to_owned(), value);
    }

    /// The output-size notice, when `truncation` cut the text.
    pub fn byte_limit(&mut self, truncation: &Truncation) {
        if truncation.truncated {
            self.add(
                format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)),
                "truncation",
                serde_json::to_value(truncation).unwrap_or_default(),
            );
        }
    }

    /// `text` with the notices appended (`\n\n[a. b]`), details attached when there are any.
    pub fn finish(self, mut text: String) -> crate::ToolOutput {
        if self.texts.is_empty() {
            return crate::ToolOutput::text(text);
        }
        text.push_str(&format!("\n\n[{}]", self.texts.join(". ")));
        crate::ToolOutput::text(text).with_details(serde_json::Value::Object(self.details))
    }
}
