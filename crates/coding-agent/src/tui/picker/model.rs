//! The `/model` picker (DECISIONS §23.82–§23.84): every model of the registry (built-in
//! catalogue plus `models.json`), searched by provider, id and name, the current one marked.

use arbor_ai::models::ModelRegistry;
use arbor_ai::types::Model;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{matches, tokens};
use crate::tui::component::Flow;
use crate::tui::list::ListCursor;
use crate::tui::query::QueryInput;
use crate::tui::theme::Theme;

/// The chosen model, as `provider/id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    pub provider: String,
    pub id: String,
}

struct Item {
    provider: String,
    id: String,
    name: String,
    context_window: u64,
    reasoning: bool,
    /// `provider/id name`, for search.
    haystack: String,
}

/// The `/model` overlay.
pub struct ModelPicker {
    theme: Theme,
    items: Vec<Item>,
    current: Option<usize>,
    query: QueryInput,
    shown: Vec<usize>,
    cursor: ListCursor,
}

impl ModelPicker {
    /// Over every model of `registry`; `current` (`provider`, `id`) is marked and selected.
    /// `query` pre-fills the search (`/model sonnet`).
    pub fn new(
        registry: &ModelRegistry,
        current: Option<(&str, &str)>,
        query: &str,
        theme: Theme,
    ) -> Self {
        Self::from_models(registry.models(), current, query, theme)
    }

    /// Over a given list of models (e.g. only those with credentials).
    pub fn from_models<'m>(
        models: impl IntoIterator<Item = &'m Model>,
        current: Option<(&str, &str)>,
        query: &str,
        theme: Theme,
    ) -> Self {
        let items: Vec<Item> = models
            .into_iter()
            .map(|m| Item {
                haystack: format!("{}/{} {}", m.provider, m.id, m.name),
                provider: m.provider.clone(),
                id: m.id.clone(),
                name: m.name.clone(),
                context_window: m.context_window,
                reasoning: m.reasoning,
            })
            .collect();
        let current =
            current.and_then(|(p, id)| items.iter().position(|i| i.provider == p && i.id == id));
        let mut picker = ModelPicker {
            theme,
            items,
            current,
            query: QueryInput::new(query),
            shown: Vec::new(),
            cursor: ListCursor::default(),
        };
        picker.refilter();
        if let Some(pos) = current.and_then(|c| picker.shown.iter().position(|&i| i == c)) {
            picker.cursor.selected = pos;
        }
        picker
    }

    pub fn query(&self) -> &str {
        self.query.as_str()
    }

    /// `provider/id` of the shown models, top to bottom.
    pub fn shown(&self) -> impl Iterator<Item = String> + '_ {
        self.shown
            .iter()
            .map(|&i| format!("{}/{}", self.items[i].provider, self.items[i].id))
    }

    pub fn selected(&self) -> Option<ModelChoice> {
        let item = &self.items[*self.shown.get(self.cursor.selected)?];
        Some(ModelChoice {
            provider: item.provider.clone(),
            id: item.id.clone(),
        })
    }

    fn refilter(&mut self) {
        let words = tokens(self.query.as_str());
        self.shown = (0..self.items.len())
            .filter(|&i| matches(&self.items[i].haystack, &words))
            .collect();
        self.cursor.selected = 0;
        self.cursor.top = 0;
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Flow<ModelChoice> {
        if key.kind == KeyEventKind::Release {
            return Flow::Pending;
        }
        if let Some(changed) = self.query.handle_key(&key) {
            if changed {
                self.refilter();
            }
            return Flow::Pending;
        }
        match key.code {
            KeyCode::Esc => return Flow::Cancel,
            KeyCode::Enter => {
                if let Some(choice) = self.selected() {
                    return Flow::Done(choice);
                }
            }
            _ => {
                self.cursor.handle_key(&key, self.shown.len());
            }
        }
        Flow::Pending
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 {
            return;
        }
        let t = self.theme;
        let w = area.width;
        let len = self.shown.len();
        buf.set_line(
            area.x,
            area.y,
            &Line::from(vec![
                Span::styled("Select model", t.heading),
                Span::styled(format!("  {len} of {}", self.items.len()), t.dim),
            ]),
            w,
        );
        if area.height > 1 {
            buf.set_line(area.x, area.y + 1, &self.query.line(&t), w);
        }
        let list_h = usize::from(area.height.saturating_sub(3));
        let range = self.cursor.window(list_h.max(1), len);
        if len == 0 && list_h > 0 {
            buf.set_line(
                area.x,
                area.y + 2,
                &Line::styled("  No models match", t.dim),
                w,
            );
        }
        let id_width = self
            .shown
            .iter()
            .map(|&i| self.items[i].provider.chars().count() + self.items[i].id.chars().count() + 1)
            .max()
            .unwrap_or(0)
            .min(usize::from(w) / 2);
        let name_width = self
            .shown
            .iter()
            .map(|&i| &self.items[i])
            .filter(|i| i.name != i.id)
            .map(|i| i.name.chars().count())
            .max()
            .unwrap_or(0)
            .min(usize::from(w) / 3);
        for (y, pos) in range.take(list_h).enumerate() {
            let index = self.shown[pos];
            let item = &self.items[index];
            let selected = pos == self.cursor.selected;
            let is_current = self.current == Some(index);
            let spec = format!("{}/{}", item.provider, item.id);
            let mut spans = vec![
                Span::styled(if selected { "› " } else { "  " }, t.accent),
                Span::styled(
                    format!("{spec:<id_width$}"),
                    if is_current { t.accent } else { t.text },
                ),
            ];
            let name = if item.name.is_empty() || item.name == item.id {
                ""
            } else {
                item.name.as_str()
            };
            spans.push(Span::styled(format!("  {name:<name_width$}"), t.dim));
            if item.context_window > 0 {
                spans.push(Span::styled(
                    format!("  {}k", item.context_window / 1000),
                    t.dim,
                ));
            }
            if item.reasoning {
                spans.push(Span::styled("  thinking", t.dim));
            }
            if is_current {
                spans.push(Span::styled("  ✓ current", t.success));
            }
            let line = Line::from(spans);
            let line = if selected {
                line.patch_style(t.selected)
            } else {
                line
            };
            buf.set_line(area.x, area.y + 2 + y as u16, &line, w);
        }
        if area.height > 2 {
            buf.set_line(
                area.x,
                area.y + area.height - 1,
                &Line::styled("↑↓ move · type to search · Enter select · Esc close", t.dim),
                w,
            );
        }
    }
}
