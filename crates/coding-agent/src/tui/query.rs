//! The search line of a picker (sessions, models): typed characters go in, Backspace takes
//! one out, Ctrl+U and Esc clear it (DECISIONS §23.125). Shared so every picker edits its query the same way;
//! [`super::list::ListCursor`] is its companion for moving through the matches.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

use super::theme::Theme;

/// A picker's search text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryInput {
    text: String,
}

impl QueryInput {
    /// Pre-filled (`/model sonnet`).
    pub fn new(text: &str) -> Self {
        QueryInput {
            text: text.to_owned(),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The picker's `Search: <query>▏` line, drawn the same in every picker.
    pub fn line(&self, t: &Theme) -> Line<'static> {
        Line::from(vec![
            Span::styled("Search: ", t.accent),
            Span::styled(format!("{}▏", self.text), t.text),
        ])
    }

    /// Applies `key` when it edits the query: `Some(changed)` (the caller refilters when
    /// `changed`); `None` for every other key, including Esc on an empty query (which closes
    /// the picker).
    pub fn handle_key(&mut self, key: &KeyEvent) -> Option<bool> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc if !self.text.is_empty() => {
                self.text.clear();
                Some(true)
            }
            KeyCode::Backspace => Some(self.text.pop().is_some()),
            KeyCode::Char('u') if ctrl => Some(!std::mem::take(&mut self.text).is_empty()),
            KeyCode::Char(c) if !ctrl && !c.is_control() => {
                self.text.push(c);
                Some(true)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn typing_erasing_and_clearing() {
        let mut q = QueryInput::new("so");
        assert_eq!(q.handle_key(&key(KeyCode::Char('n'))), Some(true));
        assert_eq!(q.as_str(), "son");
        assert_eq!(q.handle_key(&key(KeyCode::Backspace)), Some(true));
        assert_eq!(q.as_str(), "so");
        let ctrl_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(q.handle_key(&ctrl_u), Some(true));
        assert!(q.is_empty());
        assert_eq!(q.handle_key(&ctrl_u), Some(false));
        assert_eq!(q.handle_key(&key(KeyCode::Backspace)), Some(false));
        // Esc clears a query, and is left to the picker once the query is empty.
        q.handle_key(&key(KeyCode::Char('x')));
        assert_eq!(q.handle_key(&key(KeyCode::Esc)), Some(true));
        assert_eq!(q.handle_key(&key(KeyCode::Esc)), None);
        // Other control keys and navigation are not the query's.
        let ctrl_d = KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL);
        assert_eq!(q.handle_key(&ctrl_d), None);
        assert_eq!(q.handle_key(&key(KeyCode::Down)), None);
        assert_eq!(q.handle_key(&key(KeyCode::Enter)), None);
    }
}
