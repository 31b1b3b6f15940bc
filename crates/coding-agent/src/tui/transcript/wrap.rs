//! Fitting styled text to a width, measured in terminal cells (unicode-width), so that wide
//! characters and combining marks line up. Control characters never reach the buffer: they would
//! move the real terminal's cursor (DECISIONS §23.44).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// How a run of text may be broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Prose: break at spaces, hard-break only words longer than a line.
    Words,
    /// Preformatted (code, tool output): keep every space, break at the last cell.
    Chars,
}

/// Cells one character takes; tabs are expanded by [`clean`] before measuring.
pub(crate) fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Cells a string takes.
pub(crate) fn str_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// Cells a list of spans takes.
pub(crate) fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| str_width(&s.content)).sum()
}

/// Expands tabs to four spaces and drops other control characters (keeping `\n`).
pub(crate) fn clean(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\n' => out.push('\n'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Builds lines of at most `width` cells, each starting with a prefix (`first` on the first
/// line, `rest` on the others).
pub(crate) struct Wrapper<'a> {
    width: usize,
    first: &'a [Span<'static>],
    rest: &'a [Span<'static>],
    mode: Mode,
    line: Vec<Span<'static>>,
    used: usize,
    avail: usize,
    started: bool,
    /// The current line began at a wrap point (its leading spaces are not the author's).
    soft: bool,
    out: &'a mut Vec<Line<'static>>,
}

impl<'a> Wrapper<'a> {
    pub(crate) fn new(
        width: usize,
        first: &'a [Span<'static>],
        rest: &'a [Span<'static>],
        mode: Mode,
        out: &'a mut Vec<Line<'static>>,
    ) -> Self {
        let mut w = Wrapper {
            width,
            first,
            rest,
            mode,
            line: Vec::new(),
            used: 0,
            avail: 0,
            started: false,
            soft: false,
            out,
        };
        w.begin_line();
        w
    }

    fn begin_line(&mut self) {
        let prefix = if self.started { self.rest } else { self.first };
        self.started = true;
        self.line.clear();
        self.line.extend(prefix.iter().cloned());
        // A prefix wider than the line still leaves one cell for text, so nothing loops.
        self.avail = self.width.saturating_sub(spans_width(prefix)).max(1);
        self.used = 0;
        self.soft = false;
    }

    fn end_line(&mut self) {
        let spans = std::mem::take(&mut self.line);
        self.out.push(Line::from(spans));
        self.begin_line();
    }

    fn put(&mut self, text: &str, style: Style, width: usize) {
        self.used += width;
        if let Some(last) = self.line.last_mut() {
            if last.style == style && self.used > width {
                last.content.to_mut().push_str(text);
                return;
            }
        }
        self.line.push(Span::styled(text.to_owned(), style));
    }

    /// Adds text in one style; `\n` ends the line.
    pub(crate) fn push(&mut self, text: &str, style: Style) {
        let text = clean(text);
        let mut first = true;
        for segment in text.split('\n') {
            if !first {
                self.end_line();
            }
            first = false;
            match self.mode {
                Mode::Chars => self.push_chars(segment, style),
                Mode::Words => self.push_words(segment, style),
            }
        }
    }

    fn push_chars(&mut self, text: &str, style: Style) {
        let mut start = 0;
        let mut run = 0;
        for (i, c) in text.char_indices() {
            let cw = char_width(c);
            if self.used + run + cw > self.avail && self.used + run > 0 {
                if run > 0 {
                    self.put(&text[start..i], style, run);
                }
                self.end_line();
                start = i;
                run = 0;
            }
            run += cw;
        }
        if start < text.len() {
            self.put(&text[start..], style, run);
        }
    }

    fn push_words(&mut self, text: &str, style: Style) {
        let mut rest = text;
        while !rest.is_empty() {
            let space = rest.starts_with(' ');
            let end = rest
                .find(|c: char| (c == ' ') != space)
                .unwrap_or(rest.len());
            let (token, tail) = rest.split_at(end);
            rest = tail;
            let w = str_width(token);
            if space {
                if self.used == 0 && self.soft {
                    // Spaces at a wrap point are dropped.
                    continue;
                }
                if self.used + w <= self.avail {
                    self.put(token, style, w);
                } else if self.used == 0 {
                    // Indentation wider than the line: keep what leaves room for one cell.
                    let keep = self.avail.saturating_sub(1);
                    if keep > 0 {
                        self.put(&token[..keep], style, keep);
                    }
                } else {
                    self.end_line_soft();
                }
            } else if self.used + w <= self.avail {
                self.put(token, style, w);
            } else if w <= self.avail {
                self.end_line_soft();
                self.put(token, style, w);
            } else {
                self.push_chars(token, style);
            }
        }
    }

    fn end_line_soft(&mut self) {
        // Trailing spaces would only pad the line (the prefix is not the text's to trim).
        if self.used > 0 {
            if let Some(last) = self.line.last_mut() {
                let trimmed = last.content.trim_end_matches(' ').len();
                last.content.to_mut().truncate(trimmed);
            }
        }
        self.end_line();
        self.soft = true;
    }

    /// Ends the last line.
    pub(crate) fn finish(mut self) {
        let spans = std::mem::take(&mut self.line);
        self.out.push(Line::from(spans));
    }
}
