//! The `/fork` overlay: the user messages of the current branch, newest
//! first; the chosen one becomes the fork point (the new session ends before it and the text
//! goes into the editor) (DECISIONS §23.14).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::component::Flow;
use super::list::ListCursor;
use super::theme::Theme;

/// A user message to fork before: its entry id and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkPoint {
    pub entry_id: String,
    pub text: String,
    /// A workspace checkpoint lies above the message, so the fork can restore the code too.
    pub has_checkpoint: bool,
}

pub struct ForkPicker {
    theme: Theme,
    /// Newest first.
    items: Vec<ForkPoint>,
    cursor: ListCursor,
}

impl ForkPicker {
    /// `points` oldest first (branch order); shown newest first.
    pub fn new(mut points: Vec<ForkPoint>, theme: Theme) -> Self {
        points.reverse();
        Self {
            theme,
            items: points,
            cursor: ListCursor::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Flow<ForkPoint> {
        if self.cursor.handle_key(&key, self.items.len()) {
            return Flow::Pending;
        }
        match key.code {
            KeyCode::Esc => Flow::Cancel,
            KeyCode::Enter => match self.items.get(self.cursor.selected) {
                Some(p) => Flow::Done(p.clone()),
                None => Flow::Cancel,
            },
            _ => Flow::Pending,
        }
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border)
            .title(Span::styled(
                " Fork from before which message? (Enter: fork, Esc: cancel) ",
                t.accent,
            ));
        let inner = block.inner(area);
        block.render(area, buf);
        let range = self
            .cursor
            .window(usize::from(inner.height), self.items.len());
        let width = usize::from(inner.width).saturating_sub(2);
        let lines: Vec<Line> = range
            .map(|i| {
                let first = self.items[i].text.lines().next().unwrap_or("");
                let text = super::footer::fit_end(first, width);
                let style = if i == self.cursor.selected {
                    t.selected
                } else {
                    t.text
                };
                Line::from(vec![Span::styled("› ", t.user), Span::styled(text, style)])
            })
            .collect();
        Paragraph::new(lines).render(inner, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn lists_newest_first_and_picks() {
        let points = ["one", "two", "three"]
            .iter()
            .enumerate()
            .map(|(i, t)| ForkPoint {
                entry_id: format!("e{i}"),
                text: (*t).to_owned(),
                has_checkpoint: false,
            })
            .collect();
        let mut p = ForkPicker::new(points, Theme::monochrome());
        assert_eq!(p.handle_key(key(KeyCode::Down)), Flow::Pending);
        assert_eq!(
            p.handle_key(key(KeyCode::Enter)),
            Flow::Done(ForkPoint {
                entry_id: "e1".into(),
                text: "two".into(),
                has_checkpoint: false,
            })
        );
        assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Cancel);
    }
}
