//! The project-trust question shown before the session starts (DECISIONS §32.13): the folder,
//! what trusting it lets load, and pi's answers ([`crate::trust::choices`]). Up/Down pick,
//! Enter answers, Esc answers "Do not trust (this session only)", Ctrl+C quits without
//! starting. Nothing from the folder has been read when it shows.

use std::path::Path;

use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::terminal::TerminalGuard;
use super::theme::Theme;
use crate::error::CliError;
use crate::trust::{self, TrustChoice};

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustKey {
    Pending,
    Chosen(TrustChoice),
    /// Ctrl+C / Ctrl+D: do not start at all.
    Quit,
}

/// The question's state.
#[derive(Debug, Clone)]
pub struct TrustPrompt {
    cwd: String,
    found: Vec<String>,
    choices: Vec<TrustChoice>,
    selected: usize,
}

impl TrustPrompt {
    pub fn new(cwd: &Path) -> Self {
        TrustPrompt {
            cwd: trust::trust_key(cwd).display().to_string(),
            found: trust::protected_resources(cwd)
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            choices: trust::choices(cwd),
            selected: 0,
        }
    }

    pub fn handle_key(&mut self, k: KeyEvent) -> TrustKey {
        if k.kind == KeyEventKind::Release {
            return TrustKey::Pending;
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Char('c' | 'd') if ctrl => TrustKey::Quit,
            KeyCode::Up | KeyCode::Char('k') => {
                self.selected = self.selected.saturating_sub(1);
                TrustKey::Pending
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(self.choices.len().saturating_sub(1));
                TrustKey::Pending
            }
            KeyCode::Enter => self
                .choices
                .get(self.selected)
                .cloned()
                .map_or(TrustKey::Pending, TrustKey::Chosen),
            KeyCode::Esc => self
                .choices
                .last()
                .cloned()
                .map_or(TrustKey::Pending, TrustKey::Chosen),
            _ => TrustKey::Pending,
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let mut lines = vec![
            Line::from(Span::styled("Trust this project folder?", theme.heading)),
            Line::from(Span::styled(self.cwd.clone(), theme.accent)),
            Line::from(""),
            Line::from(Span::styled(
                "Trusting it lets Arbor load the folder's settings, skills, prompt templates, \
                 system-prompt files, MCP servers and hooks (hooks and MCP servers run programs). \
                 Found:",
                theme.text,
            )),
        ];
        for f in &self.found {
            lines.push(Line::from(Span::styled(format!("  {f}"), theme.dim)));
        }
        lines.push(Line::from(""));
        for (i, c) in self.choices.iter().enumerate() {
            let (mark, style) = if i == self.selected {
                ("> ", theme.selected)
            } else {
                ("  ", theme.text)
            };
            lines.push(Line::from(Span::styled(
                format!("{mark}{}", c.label),
                style,
            )));
        }
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "Up/Down choose · Enter answer · Esc do not trust (this session) · Ctrl+C quit",
            theme.dim,
        )));
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(theme.border),
            )
            .render(area, buf);
    }
}

/// Shows the question on the terminal until it is answered (`None`: the user quit).
pub async fn ask(cwd: &Path, theme: Theme) -> Result<Option<TrustChoice>, CliError> {
    let mut prompt = TrustPrompt::new(cwd);
    let mut guard = TerminalGuard::new().map_err(|e| CliError::io("terminal", e))?;
    let mut events = EventStream::new();
    loop {
        guard
            .terminal
            .draw(|f| {
                let area = f.area();
                prompt.render(area, f.buffer_mut(), &theme);
            })
            .map_err(|e| CliError::io("terminal", e))?;
        match events.next().await {
            Some(Ok(Event::Key(k))) => match prompt.handle_key(k) {
                TrustKey::Pending => {}
                TrustKey::Chosen(c) => return Ok(Some(c)),
                TrustKey::Quit => return Ok(None),
            },
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(CliError::io("terminal input", e)),
            None => return Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventState;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent {
            code,
            modifiers: KeyModifiers::NONE,
            kind: KeyEventKind::Press,
            state: KeyEventState::NONE,
        }
    }

    #[test]
    fn keys_pick_an_answer() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".arbor/skills")).unwrap();
        let mut p = TrustPrompt::new(dir.path());
        assert_eq!(p.handle_key(key(KeyCode::Down)), TrustKey::Pending);
        let TrustKey::Chosen(c) = p.handle_key(key(KeyCode::Enter)) else {
            panic!("no answer");
        };
        assert!(c.label.starts_with("Trust parent folder"));
        let TrustKey::Chosen(c) = p.handle_key(key(KeyCode::Esc)) else {
            panic!("no answer");
        };
        assert_eq!(c.label, "Do not trust (this session only)");
        assert!(c.saves.is_empty() && !c.trusted);
        let mut ctrl_c = key(KeyCode::Char('c'));
        ctrl_c.modifiers = KeyModifiers::CONTROL;
        assert_eq!(p.handle_key(ctrl_c), TrustKey::Quit);
        let mut buf = Buffer::empty(Rect::new(0, 0, 70, 20));
        p.render(buf.area, &mut buf, &Theme::monochrome());
        let text: String = buf
            .content
            .iter()
            .map(ratatui::buffer::Cell::symbol)
            .collect();
        assert!(text.contains("Trust this project folder?"), "{text}");
        assert!(text.contains("skills"), "{text}");
    }
}
