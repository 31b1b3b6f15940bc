//! The editor's kill ring (pi's `tui.editor.yank` / `yankPop`, Emacs's model): text deleted
//! by Ctrl+W, Ctrl+U, Ctrl+K and Alt+Backspace is kept; Ctrl+Y inserts the newest, Alt+Y right
//! after a yank swaps it for the one before. Kills in a row join into one entry, so Ctrl+W
//! pressed three times yanks back as the three words (DECISIONS §23.151).

/// Entries kept; older kills are dropped.
const RING_LIMIT: usize = 30;

/// Which side of the cursor a kill took text from: backward kills join in front of the
/// previous one, forward kills after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillDirection {
    Backward,
    Forward,
}

/// The ring and whether the last editing action was a kill (to join) or a yank (for yank-pop).
#[derive(Debug, Default, Clone)]
pub struct KillRing {
    /// Oldest first.
    entries: Vec<String>,
    /// The last action was a kill: the next kill joins its entry.
    joining: bool,
    /// The last action was a yank: the byte range it inserted and the entry it came from.
    yanked: Option<Yanked>,
}

/// What the last yank inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Yanked {
    pub start: usize,
    pub end: usize,
    /// Index into the ring's entries.
    index: usize,
}

impl KillRing {
    /// Records killed text (empty kills change nothing but still count as a kill).
    pub fn kill(&mut self, text: &str, direction: KillDirection) {
        self.yanked = None;
        if text.is_empty() {
            return;
        }
        match self.entries.last_mut() {
            Some(last) if self.joining => match direction {
                KillDirection::Backward => last.insert_str(0, text),
                KillDirection::Forward => last.push_str(text),
            },
            _ => {
                self.entries.push(text.to_owned());
                if self.entries.len() > RING_LIMIT {
                    self.entries.remove(0);
                }
            }
        }
        self.joining = true;
    }

    /// Any action other than a kill or a yank: the next kill starts a new entry and Alt+Y has
    /// nothing to replace.
    pub fn other_action(&mut self) {
        self.joining = false;
        self.yanked = None;
    }

    /// The newest entry, to insert at the cursor; the caller reports where it went with
    /// [`KillRing::yanked_at`].
    pub fn yank(&mut self) -> Option<String> {
        self.joining = false;
        self.entries.last().cloned()
    }

    /// Remembers the range a yank of the newest entry (or a yank-pop) inserted.
    pub fn yanked_at(&mut self, start: usize, end: usize) {
        let index = match self.yanked {
            Some(y) => y.index,
            None => self.entries.len().saturating_sub(1),
        };
        self.yanked = Some(Yanked { start, end, index });
    }

    /// Right after a yank: the range to replace and the entry before the one yanked (wrapping),
    /// or `None` when the last action was not a yank.
    pub fn pop(&mut self) -> Option<(Yanked, String)> {
        let y = self.yanked?;
        if self.entries.is_empty() {
            return None;
        }
        let index = y.index.checked_sub(1).unwrap_or(self.entries.len() - 1);
        let text = self.entries.get(index)?.clone();
        self.yanked = Some(Yanked { index, ..y });
        Some((y, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kills_in_a_row_join_and_other_actions_split_them() {
        let mut r = KillRing::default();
        r.kill("world", KillDirection::Backward);
        r.kill("hello ", KillDirection::Backward);
        assert_eq!(r.yank().as_deref(), Some("hello world"));
        r.other_action();
        r.kill("tail", KillDirection::Forward);
        r.kill("!", KillDirection::Forward);
        assert_eq!(r.yank().as_deref(), Some("tail!"));
    }

    #[test]
    fn pop_walks_back_through_the_ring_and_wraps() {
        let mut r = KillRing::default();
        for w in ["one", "two", "three"] {
            r.kill(w, KillDirection::Backward);
            r.other_action();
        }
        assert_eq!(r.pop(), None, "no yank yet");
        assert_eq!(r.yank().as_deref(), Some("three"));
        r.yanked_at(0, 5);
        let (y, text) = r.pop().unwrap();
        assert_eq!((y.start, y.end, text.as_str()), (0, 5, "two"));
        r.yanked_at(0, 3);
        assert_eq!(r.pop().unwrap().1, "one");
        r.yanked_at(0, 3);
        assert_eq!(r.pop().unwrap().1, "three", "wraps to the newest");
        r.other_action();
        assert_eq!(r.pop(), None);
    }
}
