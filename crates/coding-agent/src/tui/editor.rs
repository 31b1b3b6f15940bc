//! The prompt editor: a multi-line text buffer with a cursor, input history, and large pastes
//! folded into markers that expand when the text is taken (DECISIONS §23.4–§23.6).
//!
//! It knows keys only as [`EditKey`]s (the state machine maps terminal keys to them), so it has
//! no terminal dependency and is tested by typing.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use unicode_width::UnicodeWidthStr;

use super::kill_ring::{KillDirection, KillRing};
use super::theme::Theme;

/// A paste longer than this many lines (or bytes) becomes a marker (DECISIONS §23.5).
pub const PASTE_MARKER_LINES: usize = 10;
pub const PASTE_MARKER_BYTES: usize = 1000;
/// History entries kept per process.
const HISTORY_LIMIT: usize = 500;

/// An editing action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditKey {
    Char(char),
    Newline,
    Backspace,
    Delete,
    Left,
    Right,
    Home,
    End,
    Up,
    Down,
    /// Delete the word before the cursor (Ctrl+W).
    DeleteWord,
    /// Delete to the start of the line (Ctrl+U).
    DeleteToStart,
    /// Delete to the end of the line (Ctrl+K).
    DeleteToEnd,
    /// Insert the most recently deleted text (Ctrl+Y).
    Yank,
    /// Right after a yank: swap the yanked text for the deletion before it (Alt+Y).
    YankPop,
}

/// A folded large paste.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Paste {
    marker: String,
    text: String,
}

/// The editor's text, cursor and history.
#[derive(Debug, Default, Clone)]
pub struct Editor {
    text: String,
    /// Byte offset into `text`, always on a char boundary.
    cursor: usize,
    history: Vec<String>,
    /// Position while browsing history (`None`: editing the draft).
    browsing: Option<usize>,
    draft: String,
    pastes: Vec<Paste>,
    paste_count: usize,
    kills: KillRing,
}

impl Editor {
    pub fn new() -> Self {
        Self::default()
    }

    /// The text as shown (paste markers folded).
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text, cursor at the end (a `/tree` user message, an external editor).
    pub fn set_text(&mut self, text: &str) {
        self.kills.other_action();
        self.text = text.to_owned();
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// The text with every paste marker expanded, for sending.
    pub fn expanded(&self) -> String {
        let mut out = self.text.clone();
        for p in &self.pastes {
            if let Some(at) = out.find(&p.marker) {
                out.replace_range(at..at + p.marker.len(), &p.text);
            }
        }
        out
    }

    /// Takes the (expanded) text for sending: clears the editor and records the shown text in
    /// the history (markers expanded, so a recalled entry is what was sent).
    pub fn take(&mut self) -> String {
        let sent = self.expanded();
        if !sent.trim().is_empty() && self.history.last() != Some(&sent) {
            self.history.push(sent.clone());
            if self.history.len() > HISTORY_LIMIT {
                self.history.remove(0);
            }
        }
        self.text.clear();
        self.cursor = 0;
        self.pastes.clear();
        self.browsing = None;
        self.draft.clear();
        self.kills.other_action();
        sent
    }

    /// Seeds the history (oldest first), e.g. from the user messages of a resumed session.
    pub fn set_history(&mut self, entries: Vec<String>) {
        self.history = entries;
        let extra = self.history.len().saturating_sub(HISTORY_LIMIT);
        self.history.drain(..extra);
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Inserts pasted text: large pastes become a `[paste #N +L lines]` marker.
    pub fn paste(&mut self, text: &str) {
        self.kills.other_action();
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines > PASTE_MARKER_LINES || text.len() > PASTE_MARKER_BYTES {
            self.paste_count += 1;
            let marker = if lines > 1 {
                format!("[paste #{} +{lines} lines]", self.paste_count)
            } else {
                format!(
                    "[paste #{} {} chars]",
                    self.paste_count,
                    text.chars().count()
                )
            };
            self.insert_str(&marker);
            self.pastes.push(Paste { marker, text });
        } else {
            self.insert_str(&text);
        }
    }

    pub fn insert_str(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
        self.browsing = None;
    }

    /// The word being typed before the cursor when it starts with `prefix` (`@` completion).
    pub fn current_token(&self) -> &str {
        let before = &self.text[..self.cursor];
        let start = before.rfind(|c: char| c.is_whitespace()).map_or(0, |i| {
            i + before[i..].chars().next().map_or(1, char::len_utf8)
        });
        &before[start..]
    }

    /// Replaces the token before the cursor with `with`.
    pub fn replace_token(&mut self, with: &str) {
        let len = self.current_token().len();
        let start = self.cursor - len;
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
    }

    /// Applies one key. Up/Down move between lines, and at the first/last line browse history.
    pub fn key(&mut self, key: EditKey) {
        if !matches!(
            key,
            EditKey::DeleteWord
                | EditKey::DeleteToStart
                | EditKey::DeleteToEnd
                | EditKey::Yank
                | EditKey::YankPop
        ) {
            self.kills.other_action();
        }
        match key {
            EditKey::Char(c) => {
                let mut b = [0u8; 4];
                self.insert_str(c.encode_utf8(&mut b));
            }
            EditKey::Newline => self.insert_str("\n"),
            EditKey::Backspace => {
                if let Some(prev) = self.prev_boundary() {
                    let _ = self.remove_span(prev, self.cursor);
                }
            }
            EditKey::Delete => {
                if let Some(next) = self.next_boundary() {
                    let _ = self.remove_span(self.cursor, next);
                }
            }
            EditKey::Left => {
                if let Some(p) = self.prev_boundary() {
                    self.cursor = p;
                }
            }
            EditKey::Right => {
                if let Some(n) = self.next_boundary() {
                    self.cursor = n;
                }
            }
            EditKey::Home => self.cursor = self.line_start(),
            EditKey::End => self.cursor = self.line_end(),
            EditKey::Up => {
                if self.line_start() == 0 {
                    self.history_prev();
                } else {
                    self.move_vertical(false);
                }
            }
            EditKey::Down => {
                if self.line_end() == self.text.len() {
                    self.history_next();
                } else {
                    self.move_vertical(true);
                }
            }
            EditKey::DeleteWord => {
                let before = &self.text[..self.cursor];
                let trimmed = before.trim_end_matches([' ', '\t']);
                let start = trimmed.rfind(char::is_whitespace).map_or(0, |i| {
                    i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
                });
                let gone = self.remove_span(start, self.cursor);
                self.kills.kill(&gone, KillDirection::Backward);
            }
            EditKey::DeleteToStart => {
                let s = self.line_start();
                let gone = self.remove_span(s, self.cursor);
                self.kills.kill(&gone, KillDirection::Backward);
            }
            EditKey::DeleteToEnd => {
                let e = self.line_end();
                let gone = self.remove_span(self.cursor, e);
                self.kills.kill(&gone, KillDirection::Forward);
            }
            EditKey::Yank => {
                if let Some(text) = self.kills.yank() {
                    let start = self.cursor;
                    self.insert_str(&text);
                    self.kills.yanked_at(start, self.cursor);
                }
            }
            EditKey::YankPop => {
                // The range is still the yank's: nothing else ran since (any other key ends
                // the yank), so it lies inside the text.
                if let Some((y, text)) = self.kills.pop() {
                    if y.end <= self.text.len() && self.text.is_char_boundary(y.start) {
                        self.text.replace_range(y.start..y.end, &text);
                        self.cursor = y.start + text.len();
                        self.kills.yanked_at(y.start, self.cursor);
                    }
                }
            }
        }
    }

    /// Removes `start..end` and returns it with paste markers expanded (for the kill ring); a
    /// paste marker the range touches goes as a whole.
    fn remove_span(&mut self, mut start: usize, mut end: usize) -> String {
        let mut gone = Vec::new();
        for (i, p) in self.pastes.iter().enumerate() {
            if let Some(at) = self.text.find(&p.marker) {
                let m_end = at + p.marker.len();
                if start < m_end && end > at {
                    start = start.min(at);
                    end = end.max(m_end);
                    gone.push(i);
                }
            }
        }
        let mut removed = self.text[start..end].to_owned();
        for i in gone.into_iter().rev() {
            let p = self.pastes.remove(i);
            removed = removed.replacen(&p.marker, &p.text, 1);
        }
        self.text.replace_range(start..end, "");
        self.cursor = start;
        self.browsing = None;
        removed
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    fn move_vertical(&mut self, down: bool) {
        let start = self.line_start();
        let col = self.text[start..self.cursor].chars().count();
        let (from, to) = if down {
            let next = self.line_end() + 1;
            let end = self.text[next..]
                .find('\n')
                .map_or(self.text.len(), |i| next + i);
            (next, end)
        } else {
            let prev_end = start - 1;
            let prev_start = self.text[..prev_end].rfind('\n').map_or(0, |i| i + 1);
            (prev_start, prev_end)
        };
        let line = &self.text[from..to];
        let off = line.char_indices().nth(col).map_or(line.len(), |(i, _)| i);
        self.cursor = from + off;
    }

    fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let next = match self.browsing {
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => 0,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
    }

    fn history_next(&mut self) {
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            self.text = self.history[i + 1].clone();
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
    }

    /// Rows the editor needs at `width` (wrapped), between 1 and `max`.
    pub fn height(&self, width: u16, max: u16) -> u16 {
        let w = usize::from(width.saturating_sub(2).max(1));
        let rows: usize = self
            .text
            .split('\n')
            .map(|l| UnicodeWidthStr::width(l).div_ceil(w).max(1))
            .sum();
        u16::try_from(rows).unwrap_or(u16::MAX).clamp(1, max.max(1))
    }

    /// Draws the text with a `> ` prompt and returns the cursor's screen position.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) -> (u16, u16) {
        if area.width < 3 || area.height == 0 {
            return (area.x, area.y);
        }
        let w = usize::from(area.width - 2);
        // Wrap by display width; track where the cursor lands.
        let mut rows: Vec<String> = Vec::new();
        let mut cursor_row = 0usize;
        let mut cursor_col = 0usize;
        let mut offset = 0usize;
        for line in self.text.split('\n') {
            let mut row = String::new();
            let mut row_w = 0usize;
            for (i, c) in line.char_indices() {
                let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                if row_w + cw > w {
                    rows.push(std::mem::take(&mut row));
                    row_w = 0;
                }
                if offset + i == self.cursor {
                    cursor_row = rows.len();
                    cursor_col = row_w;
                }
                row.push(c);
                row_w += cw;
            }
            if offset + line.len() == self.cursor {
                if row_w >= w {
                    rows.push(std::mem::take(&mut row));
                    row_w = 0;
                }
                cursor_row = rows.len();
                cursor_col = row_w;
            }
            rows.push(row);
            offset += line.len() + 1;
        }
        // Keep the cursor's row visible.
        let h = usize::from(area.height);
        let first = cursor_row.saturating_sub(h - 1);
        let lines: Vec<Line> = rows
            .iter()
            .enumerate()
            .skip(first)
            .take(h)
            .map(|(i, r)| {
                let prompt = if i == 0 { "> " } else { "  " };
                Line::from(vec![
                    Span::styled(prompt, theme.accent),
                    Span::styled(r.clone(), theme.text),
                ])
            })
            .collect();
        Paragraph::new(lines).render(area, buf);
        let x = area.x + 2 + u16::try_from(cursor_col).unwrap_or(0);
        let y = area.y + u16::try_from(cursor_row - first).unwrap_or(0);
        (x.min(area.right().saturating_sub(1)), y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &str) -> Editor {
        let mut e = Editor::new();
        for c in s.chars() {
            e.key(if c == '\n' {
                EditKey::Newline
            } else {
                EditKey::Char(c)
            });
        }
        e
    }

    /// DECISIONS §23.151: Ctrl+Y puts back what Ctrl+W/U/K took, Alt+Y cycles older kills.
    #[test]
    fn yank_puts_back_deleted_text_and_yank_pop_cycles() {
        let mut e = typed("alpha beta gamma");
        e.key(EditKey::DeleteWord);
        e.key(EditKey::DeleteWord);
        assert_eq!(e.text(), "alpha ");
        e.key(EditKey::Yank);
        assert_eq!(
            e.text(),
            "alpha beta gamma",
            "two kills in a row yank as one"
        );
        e.key(EditKey::Home);
        e.key(EditKey::DeleteToEnd);
        assert_eq!(e.text(), "");
        e.key(EditKey::Char('>'));
        e.key(EditKey::Yank);
        assert_eq!(e.text(), ">alpha beta gamma");
        e.key(EditKey::YankPop);
        assert_eq!(e.text(), ">beta gamma", "Alt+Y swaps in the kill before");
        e.key(EditKey::Char('!'));
        e.key(EditKey::YankPop);
        assert_eq!(e.text(), ">beta gamma!", "Alt+Y after typing does nothing");
        let mut p = Editor::new();
        p.paste(&"line\n".repeat(20));
        p.key(EditKey::DeleteToStart);
        assert!(p.is_empty());
        p.key(EditKey::Yank);
        assert_eq!(
            p.text(),
            "line\n".repeat(20),
            "a killed paste marker yanks as its text"
        );
    }

    #[test]
    fn typing_editing_and_lines() {
        let mut e = typed("héllo\nwörld");
        e.key(EditKey::Backspace);
        assert_eq!(e.text(), "héllo\nwörl");
        e.key(EditKey::Up);
        e.key(EditKey::Home);
        e.key(EditKey::Delete);
        assert_eq!(e.text(), "éllo\nwörl");
        e.key(EditKey::End);
        e.key(EditKey::Char('!'));
        assert_eq!(e.text(), "éllo!\nwörl");
        e.key(EditKey::Down);
        e.key(EditKey::DeleteToStart);
        assert_eq!(e.text(), "éllo!\n");
        let mut w = typed("one two  ");
        w.key(EditKey::DeleteWord);
        assert_eq!(w.text(), "one ");
    }

    #[test]
    fn history_walks_back_and_restores_the_draft() {
        let mut e = typed("first");
        assert_eq!(e.take(), "first");
        e.insert_str("second");
        e.take();
        e.insert_str("draft");
        e.key(EditKey::Up);
        assert_eq!(e.text(), "second");
        e.key(EditKey::Up);
        e.key(EditKey::Up);
        assert_eq!(e.text(), "first");
        e.key(EditKey::Down);
        e.key(EditKey::Down);
        assert_eq!(e.text(), "draft");
    }

    #[test]
    fn a_large_paste_is_a_marker_that_expands_and_deletes_whole() {
        let big: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let mut e = typed("see ");
        e.paste(&big);
        assert_eq!(e.text(), "see [paste #1 +30 lines]");
        e.insert_str(" ok");
        assert_eq!(e.expanded(), format!("see {big} ok"));
        for _ in 0..3 {
            e.key(EditKey::Backspace);
        }
        e.key(EditKey::Backspace);
        assert_eq!(e.text(), "see ");
        assert_eq!(e.expanded(), "see ");
        e.paste("small\r\npaste");
        assert_eq!(e.take(), "see small\npaste");
    }

    #[test]
    fn tokens_for_completion() {
        let mut e = typed("look at @src/ma");
        assert_eq!(e.current_token(), "@src/ma");
        e.replace_token("@src/main.rs ");
        assert_eq!(e.text(), "look at @src/main.rs ");
    }

    #[test]
    fn height_wraps_and_caps() {
        let e = typed("abcdefghij\nx");
        assert_eq!(e.height(7, 10), 3);
        assert_eq!(e.height(7, 2), 2);
        assert_eq!(Editor::new().height(40, 5), 1);
    }
}
