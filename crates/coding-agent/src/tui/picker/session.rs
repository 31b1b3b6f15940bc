//! The session picker for `/resume` and `-r` (DECISIONS §23.76–§23.81): the sessions of the
//! current directory or of all directories (Tab), searched by name, first message and id,
//! threaded by `parentSession` (a fork sits under the session it came from; threads ordered
//! by their newest activity), and deleted after a confirmation.
//!
//! The picker takes the listing the repository gives ([`SessionInfo`], as `arbor session
//! list` shows it) and returns choices; deleting is the shell's job ([`SessionPick::Delete`]).

use std::collections::HashMap;

use arbor_agent::session::SessionInfo;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use super::{matches, tokens};
use crate::render::text::preview;
use crate::tui::component::Flow;
use crate::tui::list::ListCursor;
use crate::tui::query::QueryInput;
use crate::tui::theme::Theme;

/// Which sessions are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Sessions whose working directory is the current one.
    #[default]
    CurrentDir,
    /// Every session of the store.
    All,
}

/// Characters of a working directory shown in the all-folders scope.
const CWD_CHARS: usize = 30;

/// What the user chose.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionPick {
    /// Open this session (in its own working directory).
    Open(SessionInfo),
    /// Delete this session (confirmed). The shell deletes it, calls
    /// [`SessionPicker::remove`] and keeps the picker open ([`SessionPick::keeps_open`]).
    Delete { id: String, location: String },
    /// Search inside every session for these words (the `/search` overlay; ^F).
    Search(String),
}

impl SessionPick {
    pub fn keeps_open(&self) -> bool {
        matches!(self, SessionPick::Delete { .. })
    }
}

/// The `/resume` overlay.
pub struct SessionPicker {
    theme: Theme,
    sessions: Vec<SessionInfo>,
    /// Per session: lower-cased name, first message and id, for search.
    haystack: Vec<String>,
    cwd: String,
    current: Option<String>,
    now_ms: i64,
    scope: Scope,
    query: QueryInput,
    /// `(session index, thread depth)` in display order.
    rows: Vec<(usize, usize)>,
    cursor: ListCursor,
    confirm_delete: Option<usize>,
    status: Option<String>,
}

impl SessionPicker {
    /// `sessions`: every session of the store (newest first, as listings give them); `cwd`:
    /// the current directory (the `CurrentDir` scope); `current`: the location of the open
    /// session (never deleted from here); `now_ms`: the clock for ages.
    pub fn new(
        sessions: Vec<SessionInfo>,
        cwd: &str,
        current: Option<&str>,
        now_ms: i64,
        theme: Theme,
    ) -> Self {
        let haystack = sessions.iter().map(haystack).collect();
        let mut picker = SessionPicker {
            theme,
            sessions,
            haystack,
            cwd: cwd.to_string(),
            current: current.map(str::to_string),
            now_ms,
            scope: Scope::CurrentDir,
            query: QueryInput::default(),
            rows: Vec::new(),
            cursor: ListCursor::default(),
            confirm_delete: None,
            status: None,
        };
        picker.refilter();
        picker
    }

    pub fn scope(&self) -> Scope {
        self.scope
    }

    pub fn query(&self) -> &str {
        self.query.as_str()
    }

    /// Ids of the shown sessions, top to bottom, with their thread depth.
    pub fn shown(&self) -> impl Iterator<Item = (&str, usize)> {
        self.rows
            .iter()
            .map(|&(i, d)| (self.sessions[i].id.as_str(), d))
    }

    pub fn is_confirming_delete(&self) -> bool {
        self.confirm_delete.is_some()
    }

    /// Drops a deleted session from the list.
    pub fn remove(&mut self, location: &str) {
        if let Some(i) = self.sessions.iter().position(|s| s.location == location) {
            self.sessions.remove(i);
            self.haystack.remove(i);
            let keep = self.cursor.selected;
            self.refilter();
            self.cursor.selected = keep;
            self.cursor.clamp(self.rows.len());
        }
    }

    fn selected(&self) -> Option<usize> {
        self.rows.get(self.cursor.selected).map(|&(i, _)| i)
    }

    fn in_scope(&self, s: &SessionInfo) -> bool {
        self.scope == Scope::All || s.cwd == self.cwd
    }

    /// Rebuilds the rows: matches of the search in scope; threaded when not searching.
    fn refilter(&mut self) {
        let words = tokens(self.query.as_str());
        let candidates: Vec<usize> = (0..self.sessions.len())
            .filter(|&i| self.in_scope(&self.sessions[i]) && matches(&self.haystack[i], &words))
            .collect();
        self.rows = if words.is_empty() {
            thread(&self.sessions, &candidates)
        } else {
            let mut flat = candidates;
            flat.sort_by_key(|&i| std::cmp::Reverse(self.sessions[i].modified_ms));
            flat.into_iter().map(|i| (i, 0)).collect()
        };
        self.cursor.selected = 0;
        self.cursor.top = 0;
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Flow<SessionPick> {
        if key.kind == KeyEventKind::Release {
            return Flow::Pending;
        }
        self.status = None;
        if let Some(index) = self.confirm_delete {
            self.confirm_delete = None;
            if matches!(key.code, KeyCode::Char('y' | 'Y')) {
                let s = &self.sessions[index];
                return Flow::Done(SessionPick::Delete {
                    id: s.id.clone(),
                    location: s.location.clone(),
                });
            }
            self.status = Some("Not deleted".into());
            return Flow::Pending;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(changed) = self.query.handle_key(&key) {
            if changed {
                self.refilter();
            }
            return Flow::Pending;
        }
        match key.code {
            KeyCode::Esc => return Flow::Cancel,
            KeyCode::Enter => {
                if let Some(i) = self.selected() {
                    return Flow::Done(SessionPick::Open(self.sessions[i].clone()));
                }
            }
            KeyCode::Tab | KeyCode::BackTab => {
                self.scope = match self.scope {
                    Scope::CurrentDir => Scope::All,
                    Scope::All => Scope::CurrentDir,
                };
                self.refilter();
            }
            KeyCode::Char('f') if ctrl => {
                return Flow::Done(SessionPick::Search(self.query.as_str().to_owned()));
            }
            KeyCode::Char('d') if ctrl => {
                if let Some(i) = self.selected() {
                    if self.current.as_deref() == Some(self.sessions[i].location.as_str()) {
                        self.status = Some("The open session cannot be deleted here".into());
                    } else {
                        self.confirm_delete = Some(i);
                    }
                }
            }
            _ => {
                self.cursor.handle_key(&key, self.rows.len());
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
        let scope = match self.scope {
            Scope::CurrentDir => "current folder",
            Scope::All => "all folders",
        };
        buf.set_line(
            area.x,
            area.y,
            &Line::from(vec![
                Span::styled("Resume session", t.heading),
                Span::styled(format!("  [{scope}]"), t.accent),
                Span::styled(format!("  {} shown", self.rows.len()), t.dim),
            ]),
            w,
        );
        if area.height > 1 {
            buf.set_line(area.x, area.y + 1, &self.query.line(&t), w);
        }
        let list_h = usize::from(area.height.saturating_sub(4));
        let len = self.rows.len();
        let range = self.cursor.window(list_h.max(1), len);
        if len == 0 && list_h > 0 {
            let text = if self.scope == Scope::CurrentDir && self.query.is_empty() {
                "  No sessions in this folder (Tab shows all)"
            } else {
                "  No sessions match"
            };
            buf.set_line(area.x, area.y + 2, &Line::styled(text, t.dim), w);
        }
        for (y, pos) in range.take(list_h).enumerate() {
            let line = self.row_line(pos, usize::from(w));
            buf.set_line(area.x, area.y + 2 + y as u16, &line, w);
        }
        if area.height > 3 {
            let status = if let Some(i) = self.confirm_delete {
                Line::styled(
                    format!(
                        "Delete “{}”? y deletes, any other key keeps it",
                        title(&self.sessions[i], 40)
                    ),
                    t.warning,
                )
            } else if let Some(s) = &self.status {
                Line::styled(s.clone(), t.warning)
            } else {
                Line::default()
            };
            buf.set_line(area.x, area.y + area.height - 2, &status, w);
        }
        if area.height > 2 {
            buf.set_line(
                area.x,
                area.y + area.height - 1,
                &Line::styled(
                    "↑↓ move · type to search · Tab folder/all · ^D delete · Enter open · Esc close",
                    t.dim,
                ),
                w,
            );
        }
    }

    fn row_line(&self, pos: usize, width: usize) -> Line<'static> {
        let t = self.theme;
        let (i, depth) = self.rows[pos];
        let s = &self.sessions[i];
        let selected = pos == self.cursor.selected;
        let mut right = String::new();
        if self.scope == Scope::All {
            let cwd_width = self
                .rows
                .iter()
                .map(|&(k, _)| self.sessions[k].cwd.chars().count().min(CWD_CHARS))
                .max()
                .unwrap_or(0);
            right.push_str(&format!("{:<cwd_width$}  ", preview(&s.cwd, CWD_CHARS)));
        }
        match s.entry_count {
            Some(n) => right.push_str(&format!("{n:>5}  ")),
            None => right.push_str("       "),
        }
        right.push_str(&format!("{:>4}", age(self.now_ms, s.modified_ms)));
        let indent = if depth == 0 {
            String::new()
        } else {
            format!("{}└ ", "  ".repeat(depth - 1))
        };
        let is_current = self.current.as_deref() == Some(s.location.as_str());
        let open = if is_current { " (open)" } else { "" };
        let used = 2 + indent.width() + open.width() + right.width() + 2;
        let room = width.saturating_sub(used).max(10);
        let text = title(s, room);
        let gap =
            width.saturating_sub(2 + indent.width() + text.width() + open.width() + right.width());
        let spans = vec![
            Span::styled(if selected { "› " } else { "  " }, t.accent),
            Span::styled(indent, t.dim),
            Span::styled(
                text,
                if s.name.is_some() {
                    t.warning
                } else if is_current {
                    t.accent
                } else {
                    t.text
                },
            ),
            Span::styled(open, t.accent),
            Span::raw(" ".repeat(gap.max(2))),
            Span::styled(right, t.dim),
        ];
        let line = Line::from(spans);
        if selected {
            line.patch_style(t.selected)
        } else {
            line
        }
    }
}

/// The name when set, otherwise the first message, on one line.
fn title(s: &SessionInfo, max: usize) -> String {
    match s.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => preview(name, max),
        None => preview(s.first_message.as_deref().unwrap_or("(no messages)"), max),
    }
}

fn haystack(s: &SessionInfo) -> String {
    format!(
        "{} {} {}",
        s.name.as_deref().unwrap_or(""),
        s.first_message.as_deref().unwrap_or(""),
        s.id
    )
    .to_lowercase()
}

/// `now`, `5m`, `3h`, `2d`, `1w`, `4mo`, `1y` (pi's age column).
pub fn age(now_ms: i64, then_ms: i64) -> String {
    let secs = (now_ms - then_ms).max(0) / 1000;
    let mins = secs / 60;
    let hours = mins / 60;
    let days = hours / 24;
    if mins < 1 {
        "now".into()
    } else if hours < 1 {
        format!("{mins}m")
    } else if days < 1 {
        format!("{hours}h")
    } else if days < 7 {
        format!("{days}d")
    } else if days < 30 {
        format!("{}w", days / 7)
    } else if days < 365 {
        format!("{}mo", days / 30)
    } else {
        format!("{}y", days / 365)
    }
}

/// Orders `candidates` as threads: a session whose `parent_session` names another candidate's
/// location sits under it; threads and siblings by their newest activity, newest first.
fn thread(sessions: &[SessionInfo], candidates: &[usize]) -> Vec<(usize, usize)> {
    let by_location: HashMap<&str, usize> = candidates
        .iter()
        .map(|&i| (sessions[i].location.as_str(), i))
        .collect();
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for &i in candidates {
        let parent = sessions[i]
            .parent_session
            .as_deref()
            .and_then(|p| by_location.get(p).copied())
            .filter(|&p| p != i);
        match parent {
            Some(p) => children.entry(p).or_default().push(i),
            None => roots.push(i),
        }
    }
    // Newest activity per subtree (iterative post-order; a parent cycle is cut by `seen`).
    let mut newest: HashMap<usize, i64> = HashMap::new();
    let mut seen = vec![false; sessions.len()];
    let mut stack: Vec<(usize, bool)> = roots.iter().map(|&r| (r, false)).collect();
    while let Some((i, done)) = stack.pop() {
        if done {
            let own = sessions[i].modified_ms;
            let best = children
                .get(&i)
                .map(|c| {
                    c.iter()
                        .filter_map(|k| newest.get(k))
                        .copied()
                        .max()
                        .unwrap_or(own)
                })
                .unwrap_or(own)
                .max(own);
            newest.insert(i, best);
            continue;
        }
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        stack.push((i, true));
        if let Some(c) = children.get(&i) {
            stack.extend(c.iter().map(|&k| (k, false)));
        }
    }
    let key =
        |i: &usize| std::cmp::Reverse(newest.get(i).copied().unwrap_or(sessions[*i].modified_ms));
    roots.sort_by_key(key);
    for c in children.values_mut() {
        c.sort_by_key(key);
    }
    let mut out = Vec::with_capacity(candidates.len());
    let mut placed = vec![false; sessions.len()];
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if std::mem::replace(&mut placed[i], true) {
            continue;
        }
        out.push((i, depth));
        if let Some(c) = children.get(&i) {
            stack.extend(c.iter().rev().map(|&k| (k, depth + 1)));
        }
    }
    // Sessions on a parent cycle have no root; list them flat rather than lose them.
    for &i in candidates {
        if !placed[i] {
            placed[i] = true;
            out.push((i, 0));
        }
    }
    out
}
