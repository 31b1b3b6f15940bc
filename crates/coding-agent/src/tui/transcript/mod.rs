//! The scrollable conversation: every message along the active path plus what streams in live,
//! drawn incrementally (its decisions: DECISIONS §23.40 onward).
//!
//! - [`item`]: the transcript's own model, built from agent messages.
//! - `events`: live [`AgentEvent`]s applied to that model.
//! - `layout`, `markdown`, `tool`, `wrap`: one item to wrapped, styled lines.
//!
//! Incremental by construction: each item caches its lines for one width and toggle state; a
//! change marks only the items it touched; heights are kept as prefix sums so a frame finds its
//! first visible item in O(log n) and draws only visible rows (DECISIONS §23.41).
//!
//! Lazy from the bottom (DECISIONS §23.100): a frame lays out only the items it shows plus one
//! screen above them; every other item keeps an estimated height (or its height at the last
//! width) until a scroll brings it near the view. A resumed 45,000-message session therefore
//! costs its first frame a few dozen layouts, and a resize or Ctrl+T re-lays out only what is
//! on screen.

mod events;
pub mod item;
mod layout;
mod markdown;
mod rows;
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
pub struct TranscriptView {
    theme: Theme,
    items: Vec<Item>,
    /// Tool call id → its item, so results and execution events find their call.
    tools: HashMap<String, usize>,
    streaming: Option<Streaming>,
    /// The item a non-assistant `message_start` pushed, replaced on its `message_end`.
    open: Option<usize>,
    show_thinking: bool,
    expand_tools: bool,
    /// Rows of each item (one blank row above it included; 0 for hidden items): exact for items
    /// laid out at the current width and toggles, an estimate for the rest.
    rows: rows::Rows,
    /// The width of the last frame (estimates for new items use it).
    width: u16,
    /// First visible row when the user scrolled away from the bottom; `None` follows the bottom.
    top: Option<usize>,
    /// Rows of the last drawn area, for paging.
    viewport: u16,
    /// Items [`load`](Self::load) put in; those after it came live.
    loaded: usize,
    layouts: u64,
}

impl TranscriptView {
    /// An empty transcript drawn with `theme`.
    pub fn new(theme: Theme) -> Self {
        TranscriptView {
            theme,
            items: Vec::new(),
            tools: HashMap::new(),
            streaming: None,
            open: None,
            show_thinking: false,
            expand_tools: false,
            rows: rows::Rows::default(),
            width: 0,
            top: None,
            viewport: 0,
            loaded: 0,
            layouts: 0,
        }
    }

    /// Empties the transcript (`/new`); toggles and theme stay.
    pub fn clear(&mut self) {
        self.items.clear();
        self.tools.clear();
        self.streaming = None;
        self.open = None;
        self.rows.clear();
        self.loaded = 0;
        self.top = None;
    }

    /// Replaces the content with `messages`: a resumed session's projected context along the
    /// active path (compaction and branch summaries arrive as their summary roles).
    pub fn load<'a>(&mut self, messages: impl IntoIterator<Item = &'a AgentMessage>) {
        self.clear();
        for m in messages {
            self.push_message(m);
        }
        self.loaded = self.items.len();
    }

    /// Takes over `full`'s content (a whole branch loaded behind the first frame, which showed
    /// only its tail; DECISIONS §23.102), keeping the toggles and the items that arrived after
    /// [`load`](Self::load) (notices). The view follows the bottom again.
    pub fn adopt(&mut self, full: TranscriptView) {
        let live: Vec<Item> = self
            .items
            .drain(self.loaded.min(self.items.len())..)
            .collect();
        let (thinking, tools, width, viewport, layouts) = (
            self.show_thinking,
            self.expand_tools,
            self.width,
            self.viewport,
            self.layouts,
        );
        *self = full;
        self.loaded = self.items.len();
        (
            self.show_thinking,
            self.expand_tools,
            self.width,
            self.viewport,
        ) = (thinking, tools, width, viewport);
        self.layouts += layouts;
        for item in live {
            let tool = match &item.body {
                Body::Tool(t) => Some(t.id.clone()),
                _ => None,
            };
            let i = self.push(item.body);
            if let Some(id) = tool {
                self.tools.insert(id, i);
            }
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
        // Lazy: items re-lay out as they come into view (their keys no longer match).
        self.show_thinking = !self.show_thinking;
    }

    /// Ctrl+O: expand or collapse every tool output and summary.
    pub fn toggle_tools(&mut self) {
        self.expand_tools = !self.expand_tools;
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

    /// Rows of the whole transcript at the last rendered width (for a scrollbar): exact for the
    /// items laid out so far, estimated for the others.
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
        self.rows.total()
    }

    fn max_top(&self) -> usize {
        self.total().saturating_sub(usize::from(self.viewport))
    }

    fn current_top(&self) -> usize {
        self.top.unwrap_or(usize::MAX).min(self.max_top())
    }

    /// Appends an item and returns its index.
    fn push(&mut self, body: Body) -> usize {
        let width = if self.width == 0 { 80 } else { self.width };
        self.rows.push(layout::estimate(&body, usize::from(width)));
        self.items.push(Item::new(body));
        self.items.len() - 1
    }

    /// Marks item `i` changed: only it is laid out again (when next in view; until then its
    /// old height stands as the estimate).
    fn touch(&mut self, i: usize) {
        if let Some(item) = self.items.get_mut(i) {
            item.cache = None;
        }
    }

    /// Whether item `i` has lines for the current width and toggles.
    fn is_laid_out(&self, i: usize) -> bool {
        self.items.get(i).is_some_and(|item| {
            let key = item.key(self.width, self.show_thinking, self.expand_tools);
            matches!(&item.cache, Some((k, _)) if *k == key)
        })
    }

    /// Lays out item `i` if it is stale and returns its exact height.
    fn ensure(&mut self, i: usize) -> usize {
        let Some(item) = self.items.get_mut(i) else {
            return 0;
        };
        let key = item.key(self.width, self.show_thinking, self.expand_tools);
        if let Some((k, _)) = &item.cache {
            if *k == key {
                return self.rows.height(i);
            }
        }
        let lines = layout::layout(&item.body, key, &self.theme);
        self.layouts += 1;
        let height = if lines.is_empty() { 0 } else { lines.len() + 1 };
        item.cache = Some((key, lines));
        self.rows.set(i, height);
        height
    }

    /// How many items are laid out for the current width and toggles (tests check laziness).
    pub fn laid_out_items(&self) -> usize {
        (0..self.items.len())
            .filter(|&i| self.is_laid_out(i))
            .count()
    }

    /// Following the bottom: lays out the last items until they fill the view and one more
    /// screen above it; returns the first visible row.
    fn settle_bottom(&mut self, view: usize) -> usize {
        let mut covered = 0;
        let mut i = self.items.len();
        while i > 0 && covered < 2 * view {
            i -= 1;
            covered += self.ensure(i);
        }
        self.total().saturating_sub(view)
    }

    /// Scrolled to row `top`: lays out the items in view and one screen above them, keeping
    /// the first visible row where it was (an item above it that changes height moves `top`
    /// with it); returns the adjusted first row.
    fn settle_at(&mut self, top: usize, view: usize) -> usize {
        // The live end (a streaming answer grows there) stays exact so the "more rows" hint
        // counts what arrived; it is one item, laid out once per change.
        if let Some(last) = self.items.len().checked_sub(1) {
            self.ensure(last);
        }
        let top = top.min(self.max_top());
        let first = self.rows.locate(top);
        if first >= self.items.len() {
            return top;
        }
        let offset = top - self.rows.start(first);
        let height = self.ensure(first);
        let offset = offset.min(height.saturating_sub(1));
        let mut top = self.rows.start(first) + offset;
        let mut covered = height - offset.min(height);
        let mut j = first + 1;
        while covered < view && j < self.items.len() {
            covered += self.ensure(j);
            j += 1;
        }
        let mut above = 0;
        let mut k = first;
        while k > 0 && above < view {
            k -= 1;
            let before = self.rows.height(k);
            let after = self.ensure(k);
            top = (top + after).saturating_sub(before);
            above += after;
        }
        top.min(self.max_top())
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

    /// Draws the visible rows into `area` of `buf`.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        self.width = area.width;
        self.viewport = area.height;
        let view = usize::from(area.height);
        let top = match self.top {
            None => self.settle_bottom(view),
            Some(top) => {
                let top = self.settle_at(top, view);
                // Content shrank under a scrolled view (or it reached the end): follow again.
                self.top = (top < self.max_top()).then_some(top);
                top
            }
        };
        let mut i = self.rows.locate(top);
        let mut row = top;
        let mut y = area.y;
        while y < area.bottom() && i < self.items.len() {
            // Everything in view is laid out already; this only guards the invariant.
            self.ensure(i);
            let start = self.rows.start(i);
            let rows = self.rows.height(i);
            let Some((_, lines)) = &self.items[i].cache else {
                break;
            };
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
