//! "Restore anyway?": the question a code restore asks before it removes or overwrites
//! untracked files (DECISIONS §27.43). The restore waits in its task; the answer goes back
//! through a one-shot channel. Closing the question any other way (Esc, another overlay, the
//! app ending) drops the channel, which the restore reads as "no".

use std::sync::{Arc, Mutex};

use arbor_checkpoint::{Change, ChangeStatus};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::component::Flow;
use super::theme::Theme;

/// Where the answer goes: taken by the first answer, so a question is answered once.
#[derive(Clone, Default)]
pub struct ReplySlot(Arc<Mutex<Option<tokio::sync::oneshot::Sender<bool>>>>);

impl std::fmt::Debug for ReplySlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplySlot")
    }
}

impl ReplySlot {
    /// A slot and the receiver the restore waits on.
    pub fn new() -> (ReplySlot, tokio::sync::oneshot::Receiver<bool>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (ReplySlot(Arc::new(Mutex::new(Some(tx)))), rx)
    }

    /// Sends the answer (once; later answers and a gone restore are ignored).
    pub fn answer(&self, yes: bool) {
        let sender = self.0.lock().ok().and_then(|mut s| s.take());
        if let Some(tx) = sender {
            let _ = tx.send(yes);
        }
    }
}

/// A restore's question: the untracked files it would remove or overwrite.
#[derive(Debug, Clone)]
pub struct ConfirmRequest {
    pub files: Vec<Change>,
    pub reply: ReplySlot,
}

/// At most this many files are listed on screen; the rest are counted.
const LISTED: usize = 12;

/// The overlay.
pub struct RestoreConfirm {
    theme: Theme,
    request: ConfirmRequest,
}

impl RestoreConfirm {
    pub fn new(request: ConfirmRequest, theme: Theme) -> Self {
        RestoreConfirm { theme, request }
    }

    /// `y` or Enter: restore; `n` or Esc: do not. Either answers the waiting restore.
    pub fn handle_key(&mut self, key: KeyEvent) -> Flow<bool> {
        let answer = match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => true,
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => false,
            _ => return Flow::Pending,
        };
        self.request.reply.answer(answer);
        Flow::Done(answer)
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let files = &self.request.files;
        let mut lines: Vec<Line<'static>> = vec![Line::styled(
            if files.len() == 1 {
                "This restore removes or overwrites 1 untracked file:".to_owned()
            } else {
                format!(
                    "This restore removes or overwrites {} untracked files:",
                    files.len()
                )
            },
            t.heading,
        )];
        for c in files.iter().take(LISTED) {
            let what = if c.status == ChangeStatus::Deleted {
                "removed    "
            } else {
                "overwritten"
            };
            lines.push(Line::from(vec![
                Span::styled(format!("  {what}  "), t.dim),
                Span::styled(c.path.clone(), t.text),
            ]));
        }
        if files.len() > LISTED {
            lines.push(Line::styled(
                format!("  … and {} more", files.len() - LISTED),
                t.dim,
            ));
        }
        lines.push(Line::default());
        lines.push(Line::styled(
            "They are kept in the checkpoint taken just now: /undo-restore brings them back.",
            t.dim,
        ));
        lines.push(Line::styled("Restore anyway?", t.heading));
        lines.push(Line::styled("y / Enter restore · n / Esc cancel", t.dim));
        let skip = lines.len().saturating_sub(area.height as usize);
        for (i, line) in lines.iter().skip(skip).enumerate() {
            buf.set_line(area.x, area.y + i as u16, line, area.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[tokio::test]
    async fn an_answer_reaches_the_waiting_restore_once() {
        let (slot, rx) = ReplySlot::new();
        let files = vec![Change {
            status: ChangeStatus::Deleted,
            path: "notes.txt".into(),
        }];
        let mut c = RestoreConfirm::new(
            ConfirmRequest {
                files,
                reply: slot.clone(),
            },
            Theme::monochrome(),
        );
        assert_eq!(c.handle_key(key(KeyCode::Char('x'))), Flow::Pending);
        assert_eq!(c.handle_key(key(KeyCode::Char('n'))), Flow::Done(false));
        slot.answer(true); // too late: the first answer stands
        assert_eq!(rx.await, Ok(false));
    }

    #[tokio::test]
    async fn a_dropped_question_is_a_no() {
        let (slot, rx) = ReplySlot::new();
        drop(slot);
        assert!(rx.await.is_err());
    }
}
