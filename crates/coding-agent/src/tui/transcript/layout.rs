//! One item to its wrapped lines for a width and the two toggles. Pure: the transcript caches
//! the result per item and calls this again only when the item or its [`LayoutKey`] changed.
//! What each kind looks like: DECISIONS §23.47 to §23.51, §23.54, §23.55.
//!
//! [`LayoutKey`]: super::item::LayoutKey

use ratatui::text::{Line, Span};

use super::item::{AssistantView, BashView, Body, LayoutKey, NoticeKind, Part};
use super::markdown;
use super::tool::{self, output_lines, Fold, COLLAPSED_LINES};
use super::wrap::{Mode, Wrapper};
use crate::tui::theme::Theme;
use arbor_ai::types::StopReason;

/// Lays out one item.
pub(crate) fn layout(body: &Body, key: LayoutKey, theme: &Theme) -> Vec<Line<'static>> {
    let width = usize::from(key.width).max(1);
    match body {
        Body::User { text, images } => user(text, images, width, theme),
        Body::Assistant(a) => assistant(a, width, key.thinking, theme),
        Body::Tool(t) => tool::layout(t, width, key.tools, theme),
        Body::Bash(b) => bash(b, width, key.tools, theme),
        Body::Custom { display: false, .. } => Vec::new(),
        Body::Custom { kind, text, .. } => {
            let mut out = vec![Line::from(Span::styled(format!("[{kind}]"), theme.marker))];
            out.extend(markdown::render(text, width, theme, theme.text));
            out
        }
        Body::Notice { kind, text } => {
            let (glyph, style) = match kind {
                NoticeKind::Info => ("", theme.dim),
                NoticeKind::Warning => ("⚠ ", theme.warning),
                NoticeKind::Error => ("✗ ", theme.error),
            };
            plain(glyph, text, style, width)
        }
        Body::Compaction {
            summary,
            tokens_before,
        } => marker(
            &format!("Compacted from {} tokens", thousands(*tokens_before)),
            summary,
            width,
            key.tools,
            theme,
        ),
        Body::BranchSummary { summary } => {
            marker("Branch summary", summary, width, key.tools, theme)
        }
        Body::Unknown { role } => plain(
            "",
            &format!("[message with unknown role \"{role}\" not shown]"),
            theme.dim,
            width,
        ),
    }
}

/// A cheap guess of an item's rows (blank row above included) before it is laid out: wrapped
/// text lines from byte lengths and line breaks, collapsed tools at their fold. Only scroll
/// positions far from the view depend on it (DECISIONS §23.101).
pub(crate) fn estimate(body: &Body, width: usize) -> usize {
    let width = width.saturating_sub(2).max(1);
    let text = |t: &str| {
        t.split('\n')
            .map(|line| 1 + line.len() / width)
            .sum::<usize>()
    };
    let rows = match body {
        Body::Custom { display: false, .. } => return 0,
        Body::User { text: t, images } => text(t) + images.len(),
        Body::Assistant(a) => a
            .parts
            .iter()
            .map(|(_, p)| match p {
                Part::Text(t) => text(t) + 1,
                Part::Thinking { .. } => 2,
            })
            .sum::<usize>()
            .max(1),
        Body::Custom { text: t, .. } | Body::Notice { text: t, .. } => text(t) + 1,
        Body::Tool(_) | Body::Bash(_) => COLLAPSED_LINES + 2,
        Body::Compaction { .. } | Body::BranchSummary { .. } | Body::Unknown { .. } => 1,
    };
    rows + 1
}

fn plain(
    glyph: &str,
    text: &str,
    style: ratatui::style::Style,
    width: usize,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let first = [Span::styled(glyph.to_owned(), style)];
    let rest = [Span::raw(" ".repeat(super::wrap::str_width(glyph)))];
    let mut w = Wrapper::new(width, &first, &rest, Mode::Words, &mut out);
    w.push(text, style);
    w.finish();
    out
}

fn user(text: &str, images: &[String], width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let first = [Span::styled("› ", theme.user)];
    let rest = [Span::raw("  ")];
    let mut w = Wrapper::new(width, &first, &rest, Mode::Words, &mut out);
    w.push(text, theme.text);
    for (i, label) in images.iter().enumerate() {
        if i > 0 || !text.is_empty() {
            w.push("\n", theme.text);
        }
        w.push(label, theme.dim);
    }
    w.finish();
    out
}

fn assistant(a: &AssistantView, width: usize, thinking: bool, theme: &Theme) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    for (_, part) in &a.parts {
        match part {
            Part::Text(text) => {
                if text.trim().is_empty() {
                    continue;
                }
                if !out.is_empty() {
                    out.push(Line::default());
                }
                out.extend(markdown::render(text, width, theme, theme.assistant));
            }
            Part::Thinking { text, redacted } => {
                if text.trim().is_empty() && !redacted {
                    continue;
                }
                if !out.is_empty() {
                    out.push(Line::default());
                }
                if *redacted {
                    out.push(Line::from(Span::styled(
                        "∴ Thinking (redacted)",
                        theme.thinking,
                    )));
                } else if thinking {
                    let first = [Span::styled("∴ ", theme.thinking)];
                    let rest = [Span::raw("  ")];
                    let mut w = Wrapper::new(width, &first, &rest, Mode::Words, &mut out);
                    w.push(text.trim_end(), theme.thinking);
                    w.finish();
                } else {
                    let lines = text.trim_end().lines().count();
                    out.push(Line::from(vec![
                        Span::styled("∴ Thinking", theme.thinking),
                        Span::styled(
                            format!(
                                " ({lines} line{}, ctrl+t to show)",
                                if lines == 1 { "" } else { "s" }
                            ),
                            theme.dim,
                        ),
                    ]));
                }
            }
        }
    }
    let ending = match a.stop {
        StopReason::Error => Some((
            format!(
                "Error: {}",
                a.error.as_deref().unwrap_or("the request failed")
            ),
            theme.error,
        )),
        StopReason::Aborted => Some((
            match a.error.as_deref() {
                Some(e) if !e.is_empty() => format!("Aborted: {e}"),
                _ => "Aborted".to_owned(),
            },
            theme.warning,
        )),
        StopReason::Length if !a.streaming => Some((
            "Stopped: the response reached the output token limit".to_owned(),
            theme.warning,
        )),
        _ => None,
    };
    if let Some((text, style)) = ending {
        if !out.is_empty() {
            out.push(Line::default());
        }
        out.extend(plain("✗ ", &text, style, width));
    }
    out
}

fn bash(b: &BashView, width: usize, expanded: bool, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    {
        let first = [Span::styled("$ ", theme.tool)];
        let rest = [Span::raw("  ")];
        let mut w = Wrapper::new(width, &first, &rest, Mode::Words, &mut out);
        w.push(&b.command, theme.tool);
        if b.excluded {
            w.push("  (not sent to the model)", theme.dim);
        }
        w.finish();
    }
    let style = theme.dim;
    output_lines(
        &b.output,
        &|_| style,
        Fold {
            keep: COLLAPSED_LINES,
            tail: true,
            expanded,
            width,
            wrap: false,
        },
        theme,
        &mut out,
    );
    let mut notes = Vec::new();
    if b.cancelled {
        notes.push(("cancelled".to_owned(), theme.warning));
    } else if let Some(code) = b.exit_code.filter(|c| *c != 0) {
        notes.push((format!("exit code {code}"), theme.error));
    }
    if b.truncated {
        let where_ = b
            .full_output_path
            .as_deref()
            .map(|p| format!("; full output: {p}"))
            .unwrap_or_default();
        notes.push((format!("output truncated{where_}"), theme.dim));
    }
    for (text, style) in notes {
        out.extend(plain("  ", &text, style, width));
    }
    out
}

fn marker(
    title: &str,
    summary: &str,
    width: usize,
    expanded: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let hint = if expanded { "" } else { " (ctrl+o to expand)" };
    let mut out = plain("── ", &format!("{title}{hint} ──"), theme.marker, width);
    if expanded {
        // Indented under its marker so it does not read as part of the conversation.
        for line in markdown::render(summary, width.saturating_sub(2).max(1), theme, theme.dim) {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(line.spans);
            out.push(Line::from(spans));
        }
    }
    out
}

/// `12345` → `12,345`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
