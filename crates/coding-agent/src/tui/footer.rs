//! The footer (DECISIONS §23.8): two rows under the editor.
//!
//! - row 1: a spinner with the elapsed time while working (or the compaction state), the cwd
//!   (shortened from the left, `~` for the home directory) and the session name;
//! - row 2: cumulative tokens and cost, context usage in % of the window, and the model with
//!   its thinking level on the right.
//!
//! Both rows fit any width: the parts that matter least are dropped or shortened first.

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::theme::Theme;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// What the footer shows; the app keeps it current from harness events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FooterInfo {
    pub cwd: String,
    pub session_name: Option<String>,
    pub provider: String,
    pub model: String,
    /// `None` for a model without reasoning.
    pub thinking: Option<String>,
    /// Tokens of the last answer's context (input + output + cache), if known.
    pub context_tokens: Option<u64>,
    pub context_window: u64,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost: f64,
    /// Elapsed time of the running operation (`None`: idle).
    pub working: Option<Duration>,
    /// A compaction or branch summary in progress.
    pub compacting: Option<String>,
    /// A resumed session still loads behind the first frame (DECISIONS §23.102).
    pub loading: bool,
    /// Spinner frame counter (ticks).
    pub frame: usize,
    /// A short-lived hint ("Press Ctrl+C again to quit"), gone with the next key: it says what
    /// a key will do, which the transcript must not keep (DECISIONS §23.152).
    pub hint: Option<String>,
}

/// `1234` → `1.2k`, `1_234_567` → `1.2M`.
pub fn tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 10_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else if n < 1_000_000 {
        format!("{}k", (n as f64 / 1000.0).round() as u64)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// Shortens `s` to `width` columns, cutting at the end with `…`.
pub fn fit_end(s: &str, width: usize) -> String {
    if UnicodeWidthStr::width(s) <= width {
        return s.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// Shortens `s` to `width` columns, keeping the end (paths: the last components matter).
pub fn fit_start(s: &str, width: usize) -> String {
    if UnicodeWidthStr::width(s) <= width {
        return s.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut rev = Vec::new();
    let mut w = 0;
    for c in s.chars().rev() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        rev.push(c);
        w += cw;
    }
    let mut out = String::from("…");
    out.extend(rev.into_iter().rev());
    out
}

/// `cwd` with the home directory as `~`.
pub fn home_relative(cwd: &str) -> String {
    match std::env::var("HOME") {
        Ok(h) if !h.is_empty() && cwd.starts_with(&h) => format!("~{}", &cwd[h.len()..]),
        _ => cwd.to_owned(),
    }
}

impl FooterInfo {
    fn status(&self) -> Option<String> {
        if let Some(h) = &self.hint {
            return Some(h.clone());
        }
        let spin = SPINNER[self.frame % SPINNER.len()];
        if let Some(c) = &self.compacting {
            return Some(format!("{spin} {c}"));
        }
        if self.loading {
            let waits = if self.working.is_some() {
                " (your message is sent when it is ready)"
            } else {
                ""
            };
            return Some(format!("{spin} loading session…{waits}"));
        }
        self.working
            .map(|d| format!("{spin} working {} (esc to abort)", elapsed(d)))
    }

    fn usage(&self) -> String {
        let mut parts = vec![
            format!("↑{}", tokens(self.input)),
            format!("↓{}", tokens(self.output)),
        ];
        if self.cache_read > 0 {
            parts.push(format!("R{}", tokens(self.cache_read)));
        }
        if self.cache_write > 0 {
            parts.push(format!("W{}", tokens(self.cache_write)));
        }
        parts.push(format!("${:.3}", self.cost));
        let ctx = match self.context_tokens {
            Some(t) if self.context_window > 0 => format!(
                "{:.1}%/{}",
                t as f64 * 100.0 / self.context_window as f64,
                tokens(self.context_window)
            ),
            _ => format!("?/{}", tokens(self.context_window)),
        };
        parts.push(ctx);
        parts.join(" ")
    }

    fn model_text(&self) -> String {
        let base = format!("{}/{}", self.provider, self.model);
        match &self.thinking {
            Some(t) => format!("{base} • {t}"),
            None => base,
        }
    }

    /// The two rows as lines of exactly `width` columns or less.
    pub fn lines(&self, width: u16, theme: &Theme) -> [Line<'static>; 2] {
        let w = usize::from(width);
        // Row 1: status, cwd, name.
        let mut first: Vec<Span<'static>> = Vec::new();
        let mut left = w;
        if let Some(s) = self.status() {
            let s = fit_end(&s, left);
            left = left.saturating_sub(s.width() + 1);
            first.push(Span::styled(s, theme.accent));
            first.push(Span::raw(" "));
        }
        let name = self
            .session_name
            .as_deref()
            .map(|n| fit_end(n, (left / 3).max(8)));
        let name_w = name.as_ref().map_or(0, |n| n.width() + 3);
        let cwd = fit_start(&home_relative(&self.cwd), left.saturating_sub(name_w));
        first.push(Span::styled(cwd, theme.dim));
        if let Some(n) = name {
            if left >= name_w + 4 {
                first.push(Span::styled(" • ", theme.dim));
                first.push(Span::styled(n, theme.text));
            }
        }
        // Row 2: usage left, model right; the model yields to the usage on narrow screens.
        let usage = fit_end(&self.usage(), w);
        let room = w.saturating_sub(usage.width() + 2);
        // Narrow: the provider goes first, then the model id is cut at its end.
        let full = self.model_text();
        let model = if full.width() <= room {
            full
        } else {
            match &self.thinking {
                // The thinking level stays whole; the model id gives way.
                Some(t) if room > t.width() + 6 => {
                    let id = fit_end(&self.model, room - t.width() - 3);
                    format!("{id} • {t}")
                }
                _ => fit_end(&self.model, room),
            }
        };
        let gap = w.saturating_sub(usage.width() + model.width());
        let second = vec![
            Span::styled(usage, theme.dim),
            Span::raw(" ".repeat(gap)),
            Span::styled(model, theme.text),
        ];
        [Line::from(first), Line::from(second)]
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let lines = self.lines(area.width, theme);
        Paragraph::new(lines.to_vec()).render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_and_fitting() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(1234), "1.2k");
        assert_eq!(tokens(45_600), "46k");
        assert_eq!(tokens(2_500_000), "2.5M");
        assert_eq!(fit_end("abcdef", 4), "abc…");
        assert_eq!(fit_start("/a/b/project", 8), "…project");
        assert_eq!(fit_start("short", 8), "short");
        assert_eq!(elapsed(Duration::from_secs(75)), "1m15s");
    }
}
