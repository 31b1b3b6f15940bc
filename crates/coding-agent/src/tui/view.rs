//! The screen layout (DECISIONS §23.7): the transcript fills the top; under it the queued
//! steering / follow-up messages, a rule, the editor (1–8 rows, growing with its text) and the
//! two footer rows. The completion popup floats above the editor.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::footer::fit_end;
use super::slash;
use super::state::{AppState, Overlay};
use super::theme::Theme;
use super::transcript::TranscriptView;

/// Editor rows at most.
const EDITOR_MAX: u16 = 8;
/// Queued-message rows at most (the rest are counted).
const QUEUE_MAX: usize = 4;

/// Draws the whole screen into `buf`; returns where the terminal cursor goes.
pub fn render(
    state: &mut AppState,
    transcript: &mut TranscriptView,
    area: Rect,
    buf: &mut Buffer,
    theme: &Theme,
) -> (u16, u16) {
    let footer_h = 2u16.min(area.height);
    let editor_h = state
        .editor
        .height(area.width, EDITOR_MAX)
        .min(area.height.saturating_sub(footer_h + 1));
    let mut queued: Vec<Line> = Vec::new();
    let all: Vec<(&str, &String)> = state
        .steering
        .iter()
        .map(|t| ("steer", t))
        .chain(state.follow_ups.iter().map(|t| ("follow-up", t)))
        .collect();
    for (kind, text) in all.iter().take(QUEUE_MAX) {
        let first = text.lines().next().unwrap_or("");
        let label = format!("  {kind}: ");
        let room = usize::from(area.width).saturating_sub(label.len());
        queued.push(Line::from(vec![
            Span::styled(label, theme.accent),
            Span::styled(fit_end(first, room), theme.dim),
        ]));
    }
    if all.len() > QUEUE_MAX {
        queued.push(Line::styled(
            format!("  … {} more queued", all.len() - QUEUE_MAX),
            theme.dim,
        ));
    }
    let queue_h = u16::try_from(queued.len()).unwrap_or(0);
    let fixed = footer_h + editor_h + 1 + queue_h;
    let transcript_h = area.height.saturating_sub(fixed);
    let mut y = area.y;
    let t_area = Rect::new(area.x, y, area.width, transcript_h);
    transcript.render(t_area, buf);
    y += transcript_h;
    let q_area = Rect::new(
        area.x,
        y,
        area.width,
        queue_h.min(area.height - (y - area.y)),
    );
    Paragraph::new(queued).render(q_area, buf);
    y += q_area.height;
    if y < area.bottom() {
        let rule_style = if state.is_running() {
            theme.accent
        } else {
            theme.border
        };
        let rule = "─".repeat(usize::from(area.width));
        buf.set_string(area.x, y, rule, rule_style);
        y += 1;
    }
    let e_area = Rect::new(area.x, y, area.width, editor_h);
    let cursor = state.editor.render(e_area, buf, theme);
    y += editor_h;
    let f_area = Rect::new(area.x, y, area.width, area.bottom().saturating_sub(y));
    state.footer.render(f_area, buf, theme);
    if let Some(o) = &mut state.overlay {
        // Overlays take the transcript's area (the editor and footer stay visible).
        let o_area = Rect::new(area.x, area.y, area.width, transcript_h + queue_h);
        ratatui::widgets::Clear.render(o_area, buf);
        match o {
            Overlay::Tree(t) => t.render(o_area, buf),
            Overlay::Summarize { prompt, .. } | Overlay::ForkRestore { prompt, .. } => {
                prompt.render(o_area, buf)
            }
            Overlay::Progress(p) => p.render(o_area, buf),
            Overlay::Sessions(p) => p.render(o_area, buf),
            Overlay::Search(p) => p.render(o_area, buf),
            Overlay::Models(p) => p.render(o_area, buf),
            Overlay::Fork(p) => p.render(o_area, buf),
            Overlay::ConfirmRestore { confirm, .. } => confirm.render(o_area, buf),
            Overlay::Login(p) => p.render(o_area, buf),
        }
    }
    if let Some(c) = &state.completion {
        let h = u16::try_from(c.items.len().min(8)).unwrap_or(8) + 2;
        let h = h.min(e_area.y.saturating_sub(area.y));
        // The whole width: descriptions are not cut at a fixed column (DECISIONS §23.177).
        let w = area.width;
        let p_area = Rect::new(area.x, e_area.y.saturating_sub(h + 1), w, h);
        slash::render_popup(&c.items, c.selected, p_area, buf, theme);
    }
    cursor
}
