//! The `/search` overlay (DECISIONS §34.11): full-text search over every session and branch.
//! Type words, Enter searches; the hits list date, branch state, session and a snippet; Enter
//! on a hit opens that session with `/tree` on the hit's entry.
//!
//! The overlay only reports: running the search and opening a session are the driver's.

use arbor_search::Hit;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::render::text::preview;
use crate::tui::component::Flow;
use crate::tui::list::ListCursor;
use crate::tui::query::QueryInput;
use crate::tui::theme::Theme;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchPick {
    /// Search for these words (the overlay stays open; [`SearchPick::keeps_open`]).
    Run(String),
    /// Open this session file with the tree navigator on this entry.
    Open { location: String, entry_id: String },
}

impl SearchPick {
    pub fn keeps_open(&self) -> bool {
        matches!(self, SearchPick::Run(_))
    }
}

/// The search overlay's state.
pub struct SearchPicker {
    theme: Theme,
    query: QueryInput,
    /// The words the shown hits answer; `None` before the first search.
    searched: Option<String>,
    hits: Vec<Hit>,
    cursor: ListCursor,
    status: Option<String>,
}

impl SearchPicker {
    pub fn new(query: &str, theme: Theme) -> Self {
        SearchPicker {
            theme,
            query: QueryInput::new(query),
            searched: None,
            hits: Vec::new(),
            cursor: ListCursor::default(),
            status: None,
        }
    }

    pub fn query(&self) -> &str {
        self.query.as_str()
    }

    pub fn hits(&self) -> &[Hit] {
        &self.hits
    }

    /// Shows the hits of a finished search for `query` and its warnings: a store left out
    /// in its own words (it names the store, DECISIONS §34.21), skipped files by their count.
    pub fn set_results(&mut self, query: &str, hits: Vec<Hit>, warnings: &[String]) {
        self.searched = Some(query.to_owned());
        self.hits = hits;
        self.cursor = ListCursor::default();
        let (store, files): (Vec<&String>, Vec<&String>) = warnings
            .iter()
            .partition(|w| crate::session_search::is_store_warning(w));
        let files = (!files.is_empty()).then(|| {
            format!(
                "{} session file(s) skipped (`arbor session search` names them)",
                files.len()
            )
        });
        let parts: Vec<String> = store.into_iter().cloned().chain(files).collect();
        self.status = (!parts.is_empty()).then(|| parts.join("; "));
    }

    /// Shows why a search failed; the previous hits stay.
    pub fn set_error(&mut self, text: String) {
        self.status = Some(text);
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Flow<SearchPick> {
        if key.kind == KeyEventKind::Release {
            return Flow::Pending;
        }
        if key.code == KeyCode::Enter {
            let fresh = self.searched.as_deref() == Some(self.query.as_str());
            if fresh {
                if let Some(hit) = self.hits.get(self.cursor.selected) {
                    return Flow::Done(SearchPick::Open {
                        location: hit.path.clone(),
                        entry_id: hit.entry_id.clone(),
                    });
                }
            }
            if self.query.as_str().trim().is_empty() {
                self.status = Some("Type the words to search for".into());
                return Flow::Pending;
            }
            self.status = Some("Searching…".into());
            return Flow::Done(SearchPick::Run(self.query.as_str().to_owned()));
        }
        if key.code == KeyCode::Esc {
            return Flow::Cancel;
        }
        if self.query.handle_key(&key).is_some() {
            return Flow::Pending;
        }
        self.cursor.handle_key(&key, self.hits.len());
        Flow::Pending
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 {
            return;
        }
        let t = self.theme;
        let w = area.width;
        let count = match &self.searched {
            Some(_) => match self.hits.len() {
                1 => "  1 hit".to_owned(),
                n => format!("  {n} hits"),
            },
            None => String::new(),
        };
        buf.set_line(
            area.x,
            area.y,
            &Line::from(vec![
                Span::styled("Search all sessions", t.heading),
                Span::styled(count, t.dim),
            ]),
            w,
        );
        if area.height > 1 {
            buf.set_line(area.x, area.y + 1, &self.query.line(&t), w);
        }
        // Two lines per hit: heading and snippet.
        let list_h = usize::from(area.height.saturating_sub(4)) / 2;
        let len = self.hits.len();
        if len == 0 && list_h > 0 && self.searched.is_some() {
            buf.set_line(
                area.x,
                area.y + 2,
                &Line::styled("  No session matches", t.dim),
                w,
            );
        }
        let range = self.cursor.window(list_h.max(1), len);
        for (y, pos) in range.take(list_h).enumerate() {
            let hit = &self.hits[pos];
            let selected = pos == self.cursor.selected;
            let date = hit
                .timestamp
                .get(..16)
                .unwrap_or(&hit.timestamp)
                .replace('T', " ");
            let session = hit.session_name.clone().unwrap_or_else(|| {
                hit.session_id
                    .get(..8)
                    .unwrap_or(&hit.session_id)
                    .to_owned()
            });
            let head = Line::from(vec![
                Span::styled(if selected { "› " } else { "  " }, t.accent),
                Span::styled(format!("{date}  "), t.dim),
                Span::styled(
                    format!("{:<9}  ", hit.branch.as_str()),
                    if hit.branch == arbor_search::BranchState::Active {
                        t.accent
                    } else {
                        t.warning
                    },
                ),
                Span::styled(preview(&session, 40), t.text),
                Span::styled(
                    format!(
                        "  {} {}{}",
                        hit.kind,
                        hit.entry_id,
                        crate::session_search::store_mark(hit)
                    ),
                    t.dim,
                ),
            ]);
            let snippet = Line::styled(
                format!(
                    "    {}",
                    preview(&hit.snippet, usize::from(w).saturating_sub(5))
                ),
                t.dim,
            );
            let (head, snippet) = if selected {
                (
                    head.patch_style(t.selected),
                    snippet.patch_style(t.selected),
                )
            } else {
                (head, snippet)
            };
            let row = area.y + 2 + 2 * y as u16;
            buf.set_line(area.x, row, &head, w);
            buf.set_line(area.x, row + 1, &snippet, w);
        }
        if area.height > 3 {
            let status = match &self.status {
                Some(s) => Line::styled(s.clone(), t.warning),
                None => Line::default(),
            };
            buf.set_line(area.x, area.y + area.height - 2, &status, w);
        }
        if area.height > 2 {
            buf.set_line(
                area.x,
                area.y + area.height - 1,
                &Line::styled(
                    "type words · Enter search / open hit in /tree · ↑↓ move · Esc close",
                    t.dim,
                ),
                w,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store left out of the search is named in the status line; skipped files are counted
    /// (DECISIONS §34.11, §34.21).
    #[test]
    fn the_status_names_a_left_out_store_and_counts_skipped_files() {
        let mut picker = SearchPicker::new("heron", Theme::monochrome());
        let store = "postgres://me@db/x (schema arbor) was not searched: storage error: refused; \
                     the hits are from session files only"
            .to_owned();
        let file = |n: u8| format!("/s/{n}.jsonl: line 2: not JSON; skipped by search");
        picker.set_results("heron", Vec::new(), &[file(1), store.clone(), file(2)]);
        assert_eq!(
            picker.status.as_deref(),
            Some(
                format!("{store}; 2 session file(s) skipped (`arbor session search` names them)")
                    .as_str()
            )
        );
        picker.set_results("heron", Vec::new(), &[file(1)]);
        assert_eq!(
            picker.status.as_deref(),
            Some("1 session file(s) skipped (`arbor session search` names them)")
        );
        picker.set_results("heron", Vec::new(), &[]);
        assert_eq!(picker.status, None);
    }
}
