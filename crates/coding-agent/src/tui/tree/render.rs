//! Drawing the navigator: the rows in the window with their previews (made for those rows
//! alone), the status line and the key hints.

use arbor_agent::session::rows::{MessageRow, RowKind, Stop};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::render::text::preview;

use super::filter::TreeFilter;
use super::TreeNavigator;

/// How far up a tool result looks for the assistant message that made its call.
const CALL_LOOKUP_STEPS: usize = 64;

impl TreeNavigator {
    /// Draws the navigator into `area`: a title, the rows in the window, a status or input
    /// line and the key hints.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let t = self.theme;
        let width = area.width;
        let len = self.view.rows.len();
        let list_height = area.height.saturating_sub(3) as usize;
        let range = self.cursor.window(list_height.max(1), len);
        let position = if len == 0 {
            "0/0".to_string()
        } else {
            format!("{}/{}", self.cursor.selected + 1, len)
        };
        let mut title = vec![
            Span::styled("Session tree", t.heading),
            Span::styled(format!("  {position}"), t.dim),
        ];
        if self.filter != TreeFilter::Default {
            title.push(Span::styled(
                format!("  [{}]", self.filter.name()),
                t.accent,
            ));
        }
        if self.show_label_times {
            title.push(Span::styled("  [label times]", t.dim));
        }
        buf.set_line(area.x, area.y, &Line::from(title), width);

        if len == 0 && list_height > 0 {
            buf.set_line(
                area.x,
                area.y + 1,
                &Line::styled("  No entries match", t.dim),
                width,
            );
        }
        for (y, i) in (area.y + 1..).zip(range.take(list_height)) {
            let line = self.row_line(i, width as usize);
            buf.set_line(area.x, y, &line, width);
        }

        let input_y = area.y + area.height.saturating_sub(2);
        let hints_y = area.y + area.height.saturating_sub(1);
        if area.height >= 3 {
            let input = if let Some(edit) = &self.label_edit {
                let id = self.tree.nodes[edit.node].id();
                Line::from(vec![
                    Span::styled(format!("Label for {id}: "), t.accent),
                    Span::styled(format!("{}▏", edit.text), t.text),
                    Span::styled("  Enter saves · empty clears · Esc cancels", t.dim),
                ])
            } else if !self.query.is_empty() {
                Line::from(vec![
                    Span::styled("Search: ", t.accent),
                    Span::styled(format!("{}▏", self.query), t.text),
                ])
            } else if let Some(status) = &self.status {
                Line::styled(status.clone(), t.warning)
            } else {
                Line::styled("Type to search", t.dim)
            };
            buf.set_line(area.x, input_y, &input, width);
        }
        if area.height >= 2 {
            let hints = if self.label_edit.is_some() {
                "Enter save · Esc back"
            } else {
                "↑↓ move · Enter go · ^O filter · ^←/→ fold · ⇧L label · Esc close"
            };
            buf.set_line(area.x, hints_y, &Line::styled(hints, t.dim), width);
        }
    }

    fn row_line(&self, i: usize, width: usize) -> Line<'static> {
        let t = self.theme;
        let row = self.view.rows[i];
        let node_index = row.node as usize;
        let node = &self.tree.nodes[node_index];
        let selected = i == self.cursor.selected;
        let mut spans: Vec<Span<'static>> = Vec::with_capacity(8);
        if row.first_detached {
            spans.push(Span::styled("(unreachable) ", t.warning));
        }
        spans.push(Span::styled(if selected { "› " } else { "  " }, t.accent));
        let start = row.gutter_start as usize;
        let gutter = &self.view.gutters[start..start + row.gutter_len as usize];
        let folded = self.folded.contains(&node_index);
        let mark = if folded {
            Some('⊞')
        } else if self.foldable(node_index) {
            Some('⊟')
        } else {
            None
        };
        match (mark, gutter.strip_suffix("─ ")) {
            (Some(m), Some(head)) => {
                spans.push(Span::styled(format!("{head}{m} "), t.dim));
            }
            _ => {
                spans.push(Span::styled(gutter.to_string(), t.dim));
                if folded {
                    spans.push(Span::styled("⊞ ", t.accent));
                }
            }
        }
        if node.on_active_path {
            spans.push(Span::styled("• ", t.accent));
        }
        if let Some(label) = &node.label {
            spans.push(Span::styled(format!("[{label}] "), t.label));
            if self.show_label_times {
                if let Some(ts) = node.label_timestamp.as_deref().and_then(|s| s.get(11..16)) {
                    spans.push(Span::styled(format!("{ts} "), t.dim));
                }
            }
        }
        let used: usize = spans.iter().map(Span::width).sum();
        let room = width.saturating_sub(used).max(8);
        spans.extend(self.describe(node_index, room));
        if self.marks_leaf(node_index) {
            spans.push(Span::styled(" ← leaf", t.marker));
        }
        let line = Line::from(spans);
        if selected {
            line.patch_style(t.selected)
        } else {
            line
        }
    }

    /// The one-line preview of an entry, at most `max` characters of text.
    pub(super) fn describe(&self, node: usize, max: usize) -> Vec<Span<'static>> {
        let t = self.theme;
        let row = &self.tree.nodes[node].row;
        let tagged = |tag: String, style: Style, text: &str| {
            vec![
                Span::styled(tag.clone(), style),
                Span::styled(
                    preview(text, max.saturating_sub(tag.chars().count()).max(1)),
                    t.text,
                ),
            ]
        };
        let plain = |text: String, style: Style| vec![Span::styled(preview(&text, max), style)];
        match &row.kind {
            RowKind::Message(m) => match m {
                MessageRow::User { text } => tagged("user: ".into(), t.user, text.as_str()),
                MessageRow::Assistant {
                    text,
                    has_text,
                    calls,
                    stop,
                    error,
                    ..
                } => {
                    if *has_text {
                        tagged("assistant: ".into(), t.success, text.as_str())
                    } else if *stop == Stop::Aborted {
                        vec![
                            Span::styled("assistant: ", t.success),
                            Span::styled("(aborted)", t.dim),
                        ]
                    } else if let Some(err) = error {
                        vec![
                            Span::styled("assistant: ", t.success),
                            Span::styled(
                                preview(err.as_str(), max.saturating_sub(11).max(1)),
                                t.error,
                            ),
                        ]
                    } else {
                        let names: Vec<&str> = calls.iter().map(|c| &*c.name).collect();
                        let note = if names.is_empty() {
                            "(no content)".to_string()
                        } else {
                            format!("→ {}", names.join(", "))
                        };
                        vec![
                            Span::styled("assistant: ", t.success),
                            Span::styled(preview(&note, max.saturating_sub(11).max(1)), t.dim),
                        ]
                    }
                }
                MessageRow::ToolResult {
                    call_id,
                    tool_name,
                    is_error,
                    ..
                } => {
                    let empty = serde_json::Value::Object(Default::default());
                    let text = match self.find_call(node, call_id) {
                        Some((name, args)) => tool_call_summary(name, args.unwrap_or(&empty)),
                        None => format!("[{tool_name}]"),
                    };
                    let style = if *is_error { t.tool_error } else { t.tool };
                    plain(text, style)
                }
                MessageRow::System { text, .. } => {
                    tagged("[system]: ".into(), t.dim, text.as_str())
                }
                MessageRow::BashExecution { command } => {
                    tagged("[bash]: ".into(), t.tool, command.as_str())
                }
                MessageRow::Custom { custom_type, text } => {
                    tagged(format!("[{custom_type}]: "), t.accent, text.as_str())
                }
                MessageRow::BranchSummary { summary } => {
                    tagged("[branch summary]: ".into(), t.warning, summary.as_str())
                }
                MessageRow::CompactionSummary { summary } => {
                    tagged("[compaction]: ".into(), t.marker, summary.as_str())
                }
                MessageRow::Other { role } => plain(format!("[{role}]"), t.dim),
            },
            RowKind::CustomMessage { custom_type, text } => {
                tagged(format!("[{custom_type}]: "), t.accent, text.as_str())
            }
            RowKind::Compaction { tokens_before, .. } => plain(
                format!("[compaction: {}k tokens]", (tokens_before + 500) / 1000),
                t.marker,
            ),
            RowKind::BranchSummary { summary, .. } => {
                tagged("[branch summary]: ".into(), t.warning, summary.as_str())
            }
            RowKind::ModelChange { model_id, .. } => plain(format!("[model: {model_id}]"), t.dim),
            RowKind::ThinkingLevelChange { level } => plain(format!("[thinking: {level}]"), t.dim),
            RowKind::ActiveToolsChange { names } => plain(
                match names {
                    Some(names) => format!("[tools: {}]", names.join(", ")),
                    None => "[tools: all]".to_string(),
                },
                t.dim,
            ),
            RowKind::Custom { custom_type } => plain(format!("[custom: {custom_type}]"), t.dim),
            RowKind::ContextEdit { target_id, omit } => plain(
                format!(
                    "[context {}: {}]",
                    if *omit { "omit" } else { "replace" },
                    target_id
                ),
                t.dim,
            ),
            RowKind::Label { label, .. } => plain(
                format!("[label: {}]", label.as_deref().unwrap_or("(cleared)")),
                t.dim,
            ),
            RowKind::SessionInfo { name } => plain(
                format!("[title: {}]", name.as_deref().unwrap_or("(empty)")),
                t.dim,
            ),
            RowKind::Leaf { target_id } => plain(
                format!("[leaf: {}]", target_id.as_deref().unwrap_or("(root)")),
                t.dim,
            ),
            RowKind::Usage { kind, .. } => plain(format!("[usage: {kind}]"), t.dim),
            RowKind::Other { entry_type } => plain(format!("[{entry_type}]"), t.dim),
        }
    }

    /// The tool call a result answers: the nearest assistant message above it with that id
    /// (its name, and its arguments with strings cut to the row previews' length).
    fn find_call(&self, node: usize, call_id: &str) -> Option<(&str, Option<&serde_json::Value>)> {
        let mut cur = self.tree.nodes[node].parent;
        for _ in 0..CALL_LOOKUP_STEPS {
            let n = &self.tree.nodes[cur?];
            if let RowKind::Message(MessageRow::Assistant { calls, .. }) = &n.row.kind {
                if let Some(c) = calls.iter().find(|c| &*c.id == call_id) {
                    return Some((&c.name, c.args.as_ref()));
                }
            }
            cur = n.parent;
        }
        None
    }
}

/// `[read: src/main.rs]`, `[bash: cargo test]`: a tool call in a few words.
fn tool_call_summary(name: &str, args: &serde_json::Value) -> String {
    let arg = |key: &str| args.get(key).and_then(|v| v.as_str());
    let detail = match name {
        "read" | "write" | "edit" => arg("path").or_else(|| arg("file_path")).map(str::to_string),
        "bash" => arg("command").map(str::to_string),
        "grep" => arg("pattern").map(|p| match arg("path") {
            Some(path) => format!("/{p}/ in {path}"),
            None => format!("/{p}/"),
        }),
        "find" => arg("pattern").map(|p| match arg("path") {
            Some(path) => format!("{p} in {path}"),
            None => p.to_string(),
        }),
        "ls" => Some(arg("path").unwrap_or(".").to_string()),
        _ => match args {
            serde_json::Value::Object(map) if map.is_empty() => None,
            other => Some(other.to_string()),
        },
    };
    match detail {
        Some(d) => format!("[{name}: {d}]"),
        None => format!("[{name}]"),
    }
}
