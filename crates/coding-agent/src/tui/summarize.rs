//! What happens after a node is chosen in `/tree` (DECISIONS §23.70–§23.75): when the session
//! has checkpoints for the target, what to restore (conversation only / code only / both,
//! issue 16); then "Summarize branch?" (No summary / Summarize / Summarize with custom prompt,
//! the last with an inline multi-line input). [`SummaryProgress`] shows the summary while it
//! streams; the shell feeds it and aborts on its `Cancel`.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::component::Flow;
use super::theme::Theme;
use crate::checkpoints::RestoreMode;
use crate::render::text::preview;

/// Whether (and how) to summarize the branch being left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryChoice {
    /// Move without a summary.
    None,
    /// Summarize with the standard instructions.
    Summarize,
    /// Summarize with these extra instructions (the user's text, trimmed, not empty).
    Custom(String),
}

/// The full answer of the prompt: what to summarize and what to restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NavigateChoice {
    pub summary: SummaryChoice,
    /// [`RestoreMode::ConversationOnly`] when the target has no checkpoint.
    pub restore: RestoreMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Restore,
    Summary,
    CustomPrompt,
}

const RESTORE_OPTIONS: [(RestoreMode, &str, &str); 3] = [
    (
        RestoreMode::ConversationOnly,
        "Conversation only",
        "move in the tree; files stay as they are",
    ),
    (
        RestoreMode::CodeOnly,
        "Code only",
        "restore the files to this point; the conversation stays",
    ),
    (
        RestoreMode::Both,
        "Both",
        "move in the tree and restore the files",
    ),
];

/// The same choices for `/fork`, whose conversation side is a new session (DECISIONS §27.20).
const FORK_NOTES: [&str; 3] = [
    "new session from before it; files stay as they are",
    "restore the files to before it; no new session",
    "new session, with the files as they were before it",
];

const SUMMARY_OPTIONS: [&str; 3] = ["No summary", "Summarize", "Summarize with custom prompt"];

/// The prompt shown after a `/tree` choice.
pub struct SummarizePrompt {
    theme: Theme,
    target: String,
    stage: Stage,
    has_checkpoint: bool,
    /// `false` for `/fork`: only the restore question (a fork starts a new session, so there
    /// is no branch to summarize).
    ask_summary: bool,
    /// `/fork`'s wording ("Fork before:", [`FORK_NOTES`]).
    fork: bool,
    restore_index: usize,
    summary_index: usize,
    /// The custom prompt, lines kept as typed.
    input: String,
    error: Option<String>,
}

impl SummarizePrompt {
    /// `target_preview` names the chosen entry (one line); `has_checkpoint` adds the restore
    /// question (see [`crate::tui::tree::nearest_checkpoint`]).
    pub fn new(target_preview: &str, has_checkpoint: bool, theme: Theme) -> Self {
        SummarizePrompt {
            theme,
            target: preview(target_preview, 200),
            stage: if has_checkpoint {
                Stage::Restore
            } else {
                Stage::Summary
            },
            has_checkpoint,
            ask_summary: true,
            fork: false,
            restore_index: 0,
            summary_index: 0,
            input: String::new(),
            error: None,
        }
    }

    /// Only "Restore what?" (for `/fork` and `--fork` onto a node with a checkpoint): Enter
    /// answers with [`SummaryChoice::None`] and the chosen mode.
    pub fn restore_only(target_preview: &str, theme: Theme) -> Self {
        let mut prompt = Self::new(target_preview, true, theme);
        prompt.ask_summary = false;
        prompt
    }

    /// "Restore what?" for a `/fork` point with a checkpoint: `restore_only` worded for a fork
    /// (the conversation side is a new session).
    pub fn fork(target_preview: &str, theme: Theme) -> Self {
        let mut prompt = Self::restore_only(target_preview, theme);
        prompt.fork = true;
        prompt
    }

    /// The restore mode under the cursor (conversation only until the user moves).
    pub fn restore(&self) -> RestoreMode {
        RESTORE_OPTIONS[self.restore_index].0
    }

    /// Whether the custom prompt input is open.
    pub fn is_typing(&self) -> bool {
        self.stage == Stage::CustomPrompt
    }

    /// The custom prompt typed so far.
    pub fn input(&self) -> &str {
        &self.input
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Flow<NavigateChoice> {
        if key.kind == KeyEventKind::Release {
            return Flow::Pending;
        }
        self.error = None;
        match self.stage {
            Stage::Restore => self.restore_key(key),
            Stage::Summary => self.summary_key(key),
            Stage::CustomPrompt => self.input_key(key),
        }
    }

    fn restore_key(&mut self, key: KeyEvent) -> Flow<NavigateChoice> {
        match key.code {
            KeyCode::Esc => Flow::Cancel,
            KeyCode::Up => {
                self.restore_index = self.restore_index.saturating_sub(1);
                Flow::Pending
            }
            KeyCode::Down => {
                self.restore_index = (self.restore_index + 1).min(RESTORE_OPTIONS.len() - 1);
                Flow::Pending
            }
            KeyCode::Char(c @ '1'..='3') => {
                self.restore_index = usize::from(c as u8 - b'1');
                self.after_restore()
            }
            KeyCode::Enter => self.after_restore(),
            _ => Flow::Pending,
        }
    }

    /// Code only keeps the conversation where it is, so there is no branch to summarize.
    fn after_restore(&mut self) -> Flow<NavigateChoice> {
        if self.restore() == RestoreMode::CodeOnly || !self.ask_summary {
            return Flow::Done(NavigateChoice {
                summary: SummaryChoice::None,
                restore: self.restore(),
            });
        }
        self.stage = Stage::Summary;
        Flow::Pending
    }

    fn summary_key(&mut self, key: KeyEvent) -> Flow<NavigateChoice> {
        match key.code {
            KeyCode::Esc => {
                if self.has_checkpoint {
                    self.stage = Stage::Restore;
                    Flow::Pending
                } else {
                    Flow::Cancel
                }
            }
            KeyCode::Up => {
                self.summary_index = self.summary_index.saturating_sub(1);
                Flow::Pending
            }
            KeyCode::Down => {
                self.summary_index = (self.summary_index + 1).min(SUMMARY_OPTIONS.len() - 1);
                Flow::Pending
            }
            KeyCode::Char(c @ '1'..='3') => {
                self.summary_index = usize::from(c as u8 - b'1');
                self.after_summary()
            }
            KeyCode::Enter => self.after_summary(),
            _ => Flow::Pending,
        }
    }

    fn after_summary(&mut self) -> Flow<NavigateChoice> {
        let summary = match self.summary_index {
            0 => SummaryChoice::None,
            1 => SummaryChoice::Summarize,
            _ => {
                self.stage = Stage::CustomPrompt;
                return Flow::Pending;
            }
        };
        Flow::Done(NavigateChoice {
            summary,
            restore: self.restore(),
        })
    }

    fn input_key(&mut self, key: KeyEvent) -> Flow<NavigateChoice> {
        let newline = key
            .modifiers
            .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => self.stage = Stage::Summary,
            KeyCode::Enter if newline => self.input.push('\n'),
            KeyCode::Char('j') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.input.push('\n');
            }
            KeyCode::Enter => {
                let text = self.input.trim();
                if text.is_empty() {
                    self.error = Some("Type the focus for the summary, or Esc to go back".into());
                    return Flow::Pending;
                }
                return Flow::Done(NavigateChoice {
                    summary: SummaryChoice::Custom(text.to_string()),
                    restore: self.restore(),
                });
            }
            KeyCode::Backspace => {
                self.input.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.input.push(c);
            }
            _ => {}
        }
        Flow::Pending
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let w = area.width;
        let mut lines: Vec<Line<'static>> = vec![Line::from(vec![
            Span::styled(
                if self.fork {
                    "Fork before: "
                } else {
                    "Go to: "
                },
                t.dim,
            ),
            Span::styled(self.target.clone(), t.text),
        ])];
        lines.push(Line::default());
        let option = |selected: bool, n: usize, text: &str, note: Option<&str>| {
            let label = match note {
                Some(_) => format!("{n}. {text:<17}"),
                None => format!("{n}. {text}"),
            };
            let mut spans = vec![
                Span::styled(if selected { "› " } else { "  " }, t.accent),
                Span::styled(label, if selected { t.selected } else { t.text }),
            ];
            if let Some(note) = note {
                spans.push(Span::styled(format!("  {note}"), t.dim));
            }
            Line::from(spans)
        };
        match self.stage {
            Stage::Restore => {
                lines.push(Line::styled("Restore what?", t.heading));
                for (i, (_, name, note)) in RESTORE_OPTIONS.iter().enumerate() {
                    let note = if self.fork { FORK_NOTES[i] } else { note };
                    lines.push(option(i == self.restore_index, i + 1, name, Some(note)));
                }
                lines.push(Line::default());
                lines.push(Line::styled(
                    "↑↓ choose · Enter confirm · Esc cancel",
                    t.dim,
                ));
            }
            Stage::Summary | Stage::CustomPrompt => {
                if self.has_checkpoint {
                    lines.push(Line::from(vec![
                        Span::styled("Restore: ", t.dim),
                        Span::styled(RESTORE_OPTIONS[self.restore_index].1, t.accent),
                    ]));
                }
                lines.push(Line::styled("Summarize branch?", t.heading));
                for (i, name) in SUMMARY_OPTIONS.iter().enumerate() {
                    lines.push(option(i == self.summary_index, i + 1, name, None));
                }
                lines.push(Line::default());
                if self.stage == Stage::CustomPrompt {
                    lines.push(Line::styled("Custom prompt:", t.accent));
                    let mut typed: Vec<&str> = self.input.split('\n').collect();
                    if typed.is_empty() {
                        typed.push("");
                    }
                    let last = typed.len() - 1;
                    for (i, l) in typed.iter().enumerate() {
                        let cursor = if i == last { "▏" } else { "" };
                        lines.push(Line::styled(format!("  {l}{cursor}"), t.text));
                    }
                    lines.push(Line::styled(
                        "Enter summarize · Shift+Enter new line · Esc back",
                        t.dim,
                    ));
                } else {
                    let back = if self.has_checkpoint {
                        "Esc back"
                    } else {
                        "Esc cancel"
                    };
                    lines.push(Line::styled(
                        format!("↑↓ choose · Enter confirm · {back}"),
                        t.dim,
                    ));
                }
            }
        }
        if let Some(err) = &self.error {
            lines.push(Line::styled(err.clone(), t.error));
        }
        draw_lines(area, buf, &lines, w);
    }
}

/// Draws `lines` from the top of `area`, keeping the last ones when they do not fit (the
/// input and hints sit at the bottom).
fn draw_lines(area: Rect, buf: &mut Buffer, lines: &[Line<'_>], width: u16) {
    let h = area.height as usize;
    let skip = lines.len().saturating_sub(h);
    for (i, line) in lines.iter().skip(skip).enumerate() {
        buf.set_line(area.x, area.y + i as u16, line, width);
    }
}

/// The branch summary while it streams: the text so far (its last lines), the time spent,
/// and Esc to cancel.
pub struct SummaryProgress {
    theme: Theme,
    text: String,
    elapsed: Duration,
    frame: usize,
}

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl SummaryProgress {
    pub fn new(theme: Theme) -> Self {
        SummaryProgress {
            theme,
            text: String::new(),
            elapsed: Duration::ZERO,
            frame: 0,
        }
    }

    /// Appends streamed summary text.
    pub fn push_text(&mut self, delta: &str) {
        self.text.push_str(delta);
    }

    /// Advances the spinner and sets the time shown (the shell's clock, so frames are
    /// reproducible in tests).
    pub fn tick(&mut self, elapsed: Duration) {
        self.elapsed = elapsed;
        self.frame = self.frame.wrapping_add(1);
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Esc cancels (the shell aborts the summary and stays where it was); other keys wait.
    pub fn handle_key(&mut self, key: KeyEvent) -> Flow<()> {
        if key.kind == KeyEventKind::Release {
            return Flow::Pending;
        }
        match key.code {
            KeyCode::Esc => Flow::Cancel,
            _ => Flow::Pending,
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        if area.height == 0 {
            return;
        }
        let spin = SPINNER[self.frame % SPINNER.len()];
        let head = Line::from(vec![
            Span::styled(format!("{spin} Summarizing branch… "), t.accent),
            Span::styled(format!("{}s", self.elapsed.as_secs()), t.dim),
            Span::styled("  Esc cancels", t.dim),
        ]);
        buf.set_line(area.x, area.y, &head, area.width);
        // The last lines of the text that fit, wrapped at the width.
        let width = usize::from(area.width.max(1));
        let room = usize::from(area.height.saturating_sub(1));
        let mut wrapped: Vec<String> = Vec::new();
        for line in self.text.split('\n') {
            let chars: Vec<char> = line.chars().collect();
            if chars.is_empty() {
                wrapped.push(String::new());
            }
            for chunk in chars.chunks(width) {
                wrapped.push(chunk.iter().collect());
            }
        }
        let skip = wrapped.len().saturating_sub(room);
        for (i, l) in wrapped.iter().skip(skip).enumerate() {
            buf.set_line(
                area.x,
                area.y + 1 + i as u16,
                &Line::styled(l.clone(), t.text),
                area.width,
            );
        }
    }
}
