//! The cursor of a scrolling list (tree rows, sessions, models): which row is selected and
//! which row is at the top of the window. Shared so every overlay moves the same way.

use crossterm::event::{KeyCode, KeyEvent};

/// Selection and scroll position over `len` rows shown `height` at a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListCursor {
    pub selected: usize,
    pub top: usize,
    /// Rows the last frame had room for (PageUp/PageDown step); at least 1.
    pub height: usize,
}

impl ListCursor {
    /// Moves for Up/Down/PageUp/PageDown/Home/End; `true` when the key was one of them.
    pub fn handle_key(&mut self, key: &KeyEvent, len: usize) -> bool {
        let page = self.height.max(1);
        let last = len.saturating_sub(1);
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(page),
            KeyCode::PageDown => self.selected = (self.selected + page).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            _ => return false,
        }
        true
    }

    /// Keeps the selection inside `0..len`.
    pub fn clamp(&mut self, len: usize) {
        self.selected = self.selected.min(len.saturating_sub(1));
    }

    /// Sets the window height and scrolls just enough to keep the selection visible; returns
    /// the range of rows to draw.
    pub fn window(&mut self, height: usize, len: usize) -> std::ops::Range<usize> {
        self.height = height.max(1);
        self.clamp(len);
        if self.selected < self.top {
            self.top = self.selected;
        } else if self.selected >= self.top + self.height {
            self.top = self.selected + 1 - self.height;
        }
        let max_top = len.saturating_sub(self.height);
        self.top = self.top.min(max_top);
        self.top..(self.top + self.height).min(len)
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
    fn moves_stay_in_range_and_the_window_follows() {
        let mut c = ListCursor::default();
        assert_eq!(c.window(3, 10), 0..3);
        assert!(c.handle_key(&key(KeyCode::PageDown), 10));
        assert_eq!(c.selected, 3);
        assert_eq!(c.window(3, 10), 1..4);
        c.handle_key(&key(KeyCode::End), 10);
        assert_eq!(c.window(3, 10), 7..10);
        c.handle_key(&key(KeyCode::Down), 10);
        assert_eq!(c.selected, 9);
        c.handle_key(&key(KeyCode::Home), 10);
        assert_eq!(c.window(3, 10), 0..3);
        c.handle_key(&key(KeyCode::Up), 10);
        assert_eq!(c.selected, 0);
        assert!(!c.handle_key(&key(KeyCode::Enter), 10));
        assert_eq!(c.window(3, 0), 0..0);
    }
}
