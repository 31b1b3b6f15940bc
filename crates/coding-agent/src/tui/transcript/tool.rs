//! How a tool call reads in the transcript: a one-line summary of its arguments (`read path`,
//! `bash $ cmd`, …) and its output shortened to a few lines until Ctrl+O
//! (DECISIONS §23.45, §23.46).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::item::{ToolState, ToolView};
use super::wrap::{char_width, clean, Mode, Wrapper};
use crate::tui::theme::Theme;

/// Output lines shown while collapsed (bash shows the last ones, other tools the first ones).
pub(crate) const COLLAPSED_LINES: usize = 5;
/// Diff lines shown while collapsed: a diff is what the user wants to check, so it gets more.
pub(crate) const COLLAPSED_DIFF_LINES: usize = 20;
/// Longest argument summary before it is cut.
const SUMMARY_CHARS: usize = 200;

const INDENT: &str = "  ";

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn shorten(s: &str, max: usize) -> String {
    let one_line = s.lines().next().unwrap_or("");
    let more_lines = s.lines().nth(1).is_some();
    let mut out: String = one_line.chars().take(max).collect();
    if one_line.chars().count() > max || more_lines {
        out.push('…');
    }
    out
}

/// The argument summary after the tool's name.
pub(crate) fn summary(name: &str, args: &Value) -> String {
    let path = || {
        arg(args, "path")
            .or_else(|| arg(args, "file_path"))
            .unwrap_or("")
    };
    let s = match name {
        "read" => {
            let mut s = path().to_owned();
            let offset = args.get("offset").and_then(Value::as_u64);
            let limit = args.get("limit").and_then(Value::as_u64);
            match (offset, limit) {
                (Some(o), Some(l)) if l > 0 => s.push_str(&format!(":{o}-{}", o + l - 1)),
                (Some(o), None) => s.push_str(&format!(":{o}")),
                (None, Some(l)) if l > 0 => s.push_str(&format!(":1-{l}")),
                _ => {}
            }
            s
        }
        "write" => {
            let lines = arg(args, "content").map_or(0, |c| c.lines().count());
            format!(
                "{} ({lines} line{})",
                path(),
                if lines == 1 { "" } else { "s" }
            )
        }
        "edit" | "ls" => {
            let p = path();
            if p.is_empty() && name == "ls" {
                ".".to_owned()
            } else {
                p.to_owned()
            }
        }
        "bash" => {
            let cmd = arg(args, "command").unwrap_or("");
            let lines = cmd.lines().count();
            let mut s = format!("$ {}", shorten(cmd, SUMMARY_CHARS));
            if lines > 1 {
                s.push_str(&format!(" ({lines} lines)"));
            }
            s
        }
        "grep" => {
            let mut s = format!(
                "/{}/ in {}",
                arg(args, "pattern").unwrap_or(""),
                arg(args, "path").unwrap_or(".")
            );
            if let Some(g) = arg(args, "glob") {
                s.push_str(&format!(" ({g})"));
            }
            s
        }
        "find" => format!(
            "{} in {}",
            arg(args, "pattern").unwrap_or(""),
            arg(args, "path").unwrap_or(".")
        ),
        _ => match args {
            Value::Object(m) if m.is_empty() => String::new(),
            other => other.to_string(),
        },
    };
    shorten(&s, SUMMARY_CHARS)
}

/// Cuts one line to `width` cells, marking the cut with `…`.
pub(crate) fn truncate_line(text: &str, style: Style, prefix: &str, width: usize) -> Line<'static> {
    let text = clean(text);
    let avail = width.saturating_sub(prefix.len());
    let mut used = 0;
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        let w = char_width(c);
        if used + w > avail {
            end = i;
            break;
        }
        used += w;
    }
    let mut shown = text[..end].to_owned();
    if end < text.len() {
        // Make room for the marker.
        while shown.chars().map(char_width).sum::<usize>() + 1 > avail && shown.pop().is_some() {}
        shown.push('…');
    }
    Line::from(vec![
        Span::raw(prefix.to_owned()),
        Span::styled(shown, style),
    ])
}

/// How output is shortened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fold {
    /// Lines kept while collapsed.
    pub keep: usize,
    /// Keep the last lines (bash) instead of the first.
    pub tail: bool,
    pub expanded: bool,
    pub width: usize,
    /// Wrap collapsed lines instead of cutting them (errors: the whole message matters).
    pub wrap: bool,
}

/// Output lines, collapsed (first or last `keep`, one row each) or expanded (wrapped).
pub(crate) fn output_lines(
    text: &str,
    style_of: &dyn Fn(&str) -> Style,
    fold: Fold,
    theme: &Theme,
    out: &mut Vec<Line<'static>>,
) {
    let Fold {
        keep,
        tail,
        expanded,
        width,
        wrap,
    } = fold;
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let indent = [Span::raw(INDENT)];
    let wrapped = |l: &str, mode: Mode, out: &mut Vec<Line<'static>>| {
        let mut w = Wrapper::new(width, &indent, &indent, mode, out);
        w.push(l, style_of(l));
        w.finish();
    };
    if expanded {
        for l in &lines {
            wrapped(l, Mode::Chars, out);
        }
        return;
    }
    let hidden = lines.len().saturating_sub(keep);
    let hint = |n: usize, what: &str| {
        Line::from(vec![
            Span::raw(INDENT),
            Span::styled(
                format!(
                    "… {n} {what} line{} (ctrl+o to expand)",
                    if n == 1 { "" } else { "s" }
                ),
                theme.dim,
            ),
        ])
    };
    let shown: &[&str] = if tail {
        &lines[hidden..]
    } else {
        &lines[..lines.len() - hidden]
    };
    if tail && hidden > 0 {
        out.push(hint(hidden, "earlier"));
    }
    for l in shown {
        if wrap {
            wrapped(l, Mode::Words, out);
        } else {
            out.push(truncate_line(l, style_of(l), INDENT, width));
        }
    }
    if !tail && hidden > 0 {
        out.push(hint(hidden, "more"));
    }
}

/// The lines of one tool call.
pub(crate) fn layout(
    t: &ToolView,
    width: usize,
    expanded: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let (glyph, glyph_style) = match t.state {
        ToolState::Streaming | ToolState::Pending | ToolState::Running => ("◌ ", theme.dim),
        ToolState::Done => ("● ", theme.success),
        ToolState::Failed => ("✗ ", theme.error),
    };
    let first = [Span::styled(glyph, glyph_style)];
    let rest = [Span::raw(INDENT)];
    {
        let mut w = Wrapper::new(width, &first, &rest, Mode::Words, &mut out);
        if t.state == ToolState::Streaming && t.name.is_empty() {
            w.push(
                &format!("preparing tool call ({} bytes)", t.streamed_bytes),
                theme.dim,
            );
        } else {
            w.push(&t.name, theme.tool);
            let s = summary(&t.name, &t.args);
            if !s.is_empty() {
                w.push(" ", theme.text);
                w.push(&s, theme.text);
            }
        }
        w.finish();
    }
    let Some(output) = &t.output else {
        return out;
    };
    let failed = t.state == ToolState::Failed;
    if let (Some(diff), false) = (&output.diff, failed) {
        let style_of = |l: &str| {
            if l.starts_with('+') {
                theme.diff_added
            } else if l.starts_with('-') {
                theme.diff_removed
            } else {
                theme.dim
            }
        };
        output_lines(
            diff,
            &style_of,
            Fold {
                keep: COLLAPSED_DIFF_LINES,
                tail: false,
                expanded,
                width,
                wrap: false,
            },
            theme,
            &mut out,
        );
    } else {
        let style = if failed { theme.tool_error } else { theme.dim };
        let style_of = |_: &str| style;
        let tail = t.name == "bash";
        output_lines(
            &output.text,
            &style_of,
            Fold {
                keep: COLLAPSED_LINES,
                tail,
                expanded,
                width,
                wrap: failed,
            },
            theme,
            &mut out,
        );
    }
    for label in &output.images {
        out.push(Line::from(vec![
            Span::raw(INDENT),
            Span::styled(label.clone(), theme.dim),
        ]));
    }
    out
}
