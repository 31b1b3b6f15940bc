//! The scrollable conversation: every message along the active path plus what streams in live,
//! drawn incrementally (its decisions: DECISIONS §23.40 onward).
//!
//! - [`item`]: the transcript's own model, built from agent messages.
//! - `events`: live [`AgentEvent`]s applied to that model.
//! - `layout`, `markdown`, `tool`, `wrap`: one item to wrapped, styled lines.
//!
//! Incremental by construction: each item caches its lines for one width and toggle state; a
//! change marks only the items it touched; heights are kept as a running total so a frame finds
//! its first visible item by binary search and draws only visible rows (DECISIONS §23.41).

mod events;
pub mod item;
mod layout;
mod markdown;
mod tool;
mod wrap;

use std::collections::HashMap;

use arbor_agent::agent::AgentEvent;
use arbor_agent::message::AgentMessage;
use arbor_ai::types::Message;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::tui::theme::Theme;
pub use item::NoticeKind;
use item::{body_of, Body, Item, ToolOutputView, ToolState, ToolView};

/// The live assistant message being streamed.
#[derive(Debug, Clone)]
struct Streaming {
    item: usize,
    /// `(content index, tool item)` for tool calls the stream has started.
    tools: Vec<(usize, usize)>,
}

/// The transcript widget. Feed it with [`load`](Self::load) and [`apply`](Self::apply), draw it
/// with [`render`](Self::render).
#[derive(Debug, Clone)]
pub struct Transcript {
    theme: Theme,
    items: Vec<Item>,
    /// Tool call id → its item, so results and execution events find their call.
    tools: HashMap<String, usize>,
    streaming: Option<Streaming>,
    /// The item a non-assistant `message_start` pushed, replaced on its `message_end`.
    open: Option<usize>,
    show_thinking: bool,
    expand_tools: bool,
    /// `ends[i]`: rows of items `0..=i` (each item's rows include one blank row above it).
    ends: Vec<usize>,
    /// The first item whose layout or height may be stale (`items.len()`: none).
    dirty_from: usize,
    /// The width the heights in `ends` were computed for.
    width: u16,
    /// First visible row when the user scrolled away from the bottom; `None` follows the bottom.
    top: Option<usize>,
    /// Rows of the last drawn area, for paging.
    viewport: u16,
    layouts: u64,
}

impl Transcript {
    /// An empty transcript drawn with `theme`.
    pub fn new(theme: Theme) -> Self {
        Transcript {
            theme,
            items: Vec::new(),
            tools: HashMap::new(),
            streaming: None,
            open: None,
            show_thinking: false,
            expand_tools: false,
            ends: Vec::new(),
            dirty_from: 0,
            width: 0,
            top: None,
            viewport: 0,
            layouts: 0,
        }
    }

    /// Empties the transcript (`/new`); toggles and theme stay.
    pub fn clear(&mut self) {
        self.items.clear();
        self.tools.clear();
        self.streaming = None;
        self.open = None;
        self.ends.clear();
        self.dirty_from = 0;
        self.top = None;
    }

    /// Replaces the content with `messages`: a resumed session's projected context along the
    /// active path (compaction and branch summaries arrive as their summary roles).
    pub fn load<'a>(&mut self, messages: impl IntoIterator<Item = &'a AgentMessage>) {
        self.clear();
        for m in messages {
            self.push_message(m);
        }
    }

    /// Adds one finished message at the end.
    pub fn push_message(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::Llm(Message::Assistant(a)) => {
                self.push(Body::Assistant(item::AssistantView::from_message(a, false)));
                // Every call gets its own item; an id seen before (providers that number calls
                // per turn) now names this newer call, since results follow their call.
                for call in a.tool_calls() {
                    let i = self.push(Body::Tool(ToolView::from_call(call)));
                    self.tools.insert(call.id.clone(), i);
                }
            }
            AgentMessage::Llm(Message::ToolResult(r)) => {
                let view = ToolOutputView::from_content(&r.content, r.details.as_ref());
                self.finish_tool(&r.tool_call_id, &r.tool_name, view, r.is_error);
            }
            other => {
                if let Some(body) = body_of(other) {
                    self.push(body);
                }
            }
        }
    }

    /// Applies one live event; events that change nothing visible are ignored.
    pub fn apply(&mut self, event: &AgentEvent) {
        events::apply(self, event);
    }

    /// Adds a notice (an error, a warning, or information from the app).
    pub fn push_notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.push(Body::Notice {
            kind,
            text: text.into(),
        });
    }

    /// Ctrl+T: show or hide every thinking block.
    pub fn toggle_thinking(&mut self) {
        self.show_thinking = !self.show_thinking;
        self.dirty_from = 0;
    }

    /// Ctrl+O: expand or collapse every tool output and summary.
    pub fn toggle_tools(&mut self) {
        self.expand_tools = !self.expand_tools;
        self.dirty_from = 0;
    }

    pub fn thinking_shown(&self) -> bool {
        self.show_thinking
    }

    pub fn tools_expanded(&self) -> bool {
        self.expand_tools
    }

    /// Number of items (hidden custom messages included).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many item layouts were computed so far (tests and benchmarks check incrementality).
    pub fn layout_count(&self) -> u64 {
        self.layouts
    }

    /// Rows of the whole transcript at the last rendered width (for a scrollbar).
    pub fn total_rows(&self) -> usize {
        self.total()
    }

    /// Whether the view follows the bottom (new output scrolls into view; DECISIONS §23.53).
    pub fn follows_bottom(&self) -> bool {
        self.top.is_none()
    }

    /// Scrolls up `n` rows (line up, mouse wheel); stops following the bottom.
    pub fn scroll_up(&mut self, n: usize) {
        let top = self.current_top();
        self.top = Some(top.saturating_sub(n));
    }

    /// Scrolls down `n` rows; reaching the bottom follows it again.
    pub fn scroll_down(&mut self, n: usize) {
        if let Some(top) = self.top {
            let next = top.saturating_add(n);
            self.top = if next >= self.max_top() {
                None
            } else {
                Some(next)
            };
        }
    }

    /// PageUp: one screen up, keeping one row of context.
    pub fn scroll_page_up(&mut self) {
        self.scroll_up(self.page());
    }

    /// PageDown: one screen down.
    pub fn scroll_page_down(&mut self) {
        self.scroll_down(self.page());
    }

    /// Home: the first row.
    pub fn scroll_to_top(&mut self) {
        self.top = Some(0);
    }

    /// End: back to the bottom, following new output.
    pub fn scroll_to_bottom(&mut self) {
        self.top = None;
    }

    fn page(&self) -> usize {
        usize::from(self.viewport).saturating_sub(1).max(1)
    }

    fn total(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    fn max_top(&self) -> usize {
        self.total().saturating_sub(usize::from(self.viewport))
    }

    fn current_top(&self) -> usize {
        self.top.unwrap_or(usize::MAX).min(self.max_top())
    }

    /// Appends an item and returns its index.
    fn push(&mut self, body: Body) -> usize {
        self.items.push(Item::new(body));
        self.items.len() - 1
    }

    /// Marks item `i` changed: only it is laid out again.
    fn touch(&mut self, i: usize) {
        if let Some(item) = self.items.get_mut(i) {
            item.cache = None;
        }
        self.dirty_from = self.dirty_from.min(i);
    }

    fn tool_item(&mut self, id: &str, name: &str) -> usize {
        if let Some(&i) = self.tools.get(id) {
            return i;
        }
        let i = self.push(Body::Tool(ToolView {
            id: id.to_owned(),
            name: name.to_owned(),
            args: serde_json::Value::Object(Default::default()),
            streamed_bytes: 0,
            state: ToolState::Pending,
            output: None,
        }));
        self.tools.insert(id.to_owned(), i);
        i
    }

    fn finish_tool(&mut self, id: &str, name: &str, output: ToolOutputView, is_error: bool) {
        let i = self.tool_item(id, name);
        if let Some(Body::Tool(t)) = self.items.get_mut(i).map(|it| &mut it.body) {
            t.output = Some(output);
            t.state = if is_error {
                ToolState::Failed
            } else {
                ToolState::Done
            };
        }
        self.touch(i);
    }

    /// Lays out what is stale for `width` and brings the running totals up to date.
    fn relayout(&mut self, width: u16) {
        if width != self.width {
            self.width = width;
            self.dirty_from = 0;
        }
        self.ends.truncate(self.dirty_from.min(self.ends.len()));
        let mut total = self.ends.last().copied().unwrap_or(0);
        for i in self.ends.len()..self.items.len() {
            let item = &mut self.items[i];
            let key = item.key(width, self.show_thinking, self.expand_tools);
            let rows = match &item.cache {
                Some((k, lines)) if *k == key => lines.len(),
                _ => {
                    let lines = layout::layout(&item.body, key, &self.theme);
                    self.layouts += 1;
                    let n = lines.len();
                    item.cache = Some((key, lines));
                    n
                }
            };
            total += if rows == 0 { 0 } else { rows + 1 };
            self.ends.push(total);
        }
        self.dirty_from = self.items.len();
    }

    /// Draws the visible rows into `area` of `buf`.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        self.relayout(area.width);
        self.viewport = area.height;
        let top = self.current_top();
        if self.top.is_some() && top >= self.max_top() {
            // Content shrank under a scrolled view: follow again.
            self.top = None;
        }
        let mut i = self.ends.partition_point(|&end| end <= top);
        let mut row = top;
        let mut y = area.y;
        while y < area.bottom() && i < self.items.len() {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            let Some((_, lines)) = &self.items[i].cache else {
                break;
            };
            let rows = self.ends[i] - start;
            while row < start + rows && y < area.bottom() {
                let offset = row - start;
                // Row 0 of an item is the blank row above it.
                if offset > 0 {
                    if let Some(line) = lines.get(offset - 1) {
                        buf.set_line(area.x, y, line, area.width);
                    }
                }
                row += 1;
                y += 1;
            }
            i += 1;
        }
        self.below_hint(area, buf, top);
    }

    /// While scrolled up, the last row says how much is below (DECISIONS §23.53).
    fn below_hint(&self, area: Rect, buf: &mut Buffer, top: usize) {
        if self.top.is_none() {
            return;
        }
        let below = self.total().saturating_sub(top + usize::from(area.height));
        if below == 0 {
            return;
        }
        let hint = format!(" ↓ {below} more row{} ", if below == 1 { "" } else { "s" });
        let width = u16::try_from(wrap::str_width(&hint)).unwrap_or(u16::MAX);
        let x = area.right().saturating_sub(width).max(area.x);
        let y = area.bottom() - 1;
        buf.set_stringn(
            x,
            y,
            &hint,
            usize::from(area.right() - x),
            self.theme.selected,
        );
    }
}

#[cfg(test)]
mod tests;
