//! The `/tree` navigator (DECISIONS §23.60–§23.69): the whole entry tree of a session, not only
//! the active path, laid out by `arbor_agent::session::tree_view` (bounded indent, single-child
//! chains flat, a depth marker past the limit).
//!
//! The navigator takes a [`SessionTree`] and returns choices ([`TreeAction`]); it never writes
//! to the session. A filter, a search or a fold hides entries; their visible descendants hang
//! from the nearest visible ancestor, so the shape stays readable. Every change of what is shown
//! re-lays out the rows once (O(entries), compact: one small record per row), and a frame draws
//! only the rows in its window, with previews made for those rows alone — so opening a
//! 100,000-entry session and scrolling through it stays fast (benchmark `tree_view`).

use std::collections::HashSet;

use arbor_agent::session::rows::{MessageRow, RowCaps, RowKind, RowSummary, Stop};
use arbor_agent::session::tree_view::{Layout, Rows, TreeShape};
use arbor_agent::session::SessionTree;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::component::Flow;
use super::list::ListCursor;
use super::theme::Theme;
use crate::render::text::preview;

/// Branch levels drawn before the depth marker (narrower than the CLI's: the TUI must fit 60
/// columns; DECISIONS §23.62).
pub const TUI_LAYOUT: Layout = Layout { max_levels: 8 };

/// Characters of one entry that search looks at (DECISIONS §23.64).
pub const SEARCH_CHARS: usize = 8 * 1024;

/// How far up a tool result looks for the assistant message that made its call.
const CALL_LOOKUP_STEPS: usize = 64;

const NONE: u32 = u32::MAX;

/// Which entries the navigator shows (pi's `treeFilterMode` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TreeFilter {
    /// Conversation entries; settings and bookkeeping (labels, model/thinking changes, custom
    /// entries, names, context edits) hidden.
    #[default]
    Default,
    /// The default view without tool results.
    NoTools,
    /// User messages only.
    UserOnly,
    /// Entries with a label only.
    LabeledOnly,
    /// Everything.
    All,
}

impl TreeFilter {
    /// The order Ctrl+O cycles through.
    pub const CYCLE: [TreeFilter; 5] = [
        TreeFilter::Default,
        TreeFilter::NoTools,
        TreeFilter::UserOnly,
        TreeFilter::LabeledOnly,
        TreeFilter::All,
    ];

    /// The setting value (`default`, `no-tools`, `user-only`, `labeled-only`, `all`).
    pub fn name(self) -> &'static str {
        match self {
            TreeFilter::Default => "default",
            TreeFilter::NoTools => "no-tools",
            TreeFilter::UserOnly => "user-only",
            TreeFilter::LabeledOnly => "labeled-only",
            TreeFilter::All => "all",
        }
    }

    /// Parses a setting value; `None` for anything else.
    pub fn from_name(name: &str) -> Option<TreeFilter> {
        Self::CYCLE.into_iter().find(|f| f.name() == name)
    }

    fn position(self) -> usize {
        Self::CYCLE.iter().position(|f| *f == self).unwrap_or(0)
    }

    pub fn next(self) -> TreeFilter {
        Self::CYCLE[(self.position() + 1) % Self::CYCLE.len()]
    }

    pub fn prev(self) -> TreeFilter {
        Self::CYCLE[(self.position() + Self::CYCLE.len() - 1) % Self::CYCLE.len()]
    }

    /// A direct filter key: on when off, back to the default when already on.
    fn toggle(self, to: TreeFilter) -> TreeFilter {
        if self == to {
            TreeFilter::Default
        } else {
            to
        }
    }
}

/// What the user chose in the navigator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeAction {
    /// Move to this entry (the shell asks "Summarize branch?" next, then navigates).
    Navigate { target_id: String },
    /// Set (`Some`) or clear (`None`) the label of an entry. The navigator already shows the
    /// new label; the shell writes the `label` entry and keeps the navigator open
    /// ([`TreeAction::keeps_open`]).
    SetLabel { id: String, label: Option<String> },
}

impl TreeAction {
    /// Whether the shell should keep the navigator open after acting on this choice.
    pub fn keeps_open(&self) -> bool {
        matches!(self, TreeAction::SetLabel { .. })
    }
}

/// Per-node facts the filters need, computed once when the navigator opens.
mod class {
    pub const SETTINGS: u8 = 1;
    pub const USER: u8 = 2;
    pub const TOOL_RESULT: u8 = 4;
    /// Never shown: usage records, and assistant messages with only tool calls (unless they
    /// are the leaf or ended in an error or abort).
    pub const NEVER: u8 = 8;
}

fn classify(row: &RowSummary, is_leaf: bool) -> u8 {
    match &row.kind {
        RowKind::Message(m) => match m {
            MessageRow::User { .. } => class::USER,
            MessageRow::ToolResult { .. } => class::TOOL_RESULT,
            MessageRow::Assistant { has_text, stop, .. } => {
                let failed = matches!(stop, Stop::Error | Stop::Aborted);
                if *has_text || failed || is_leaf {
                    0
                } else {
                    class::NEVER
                }
            }
            _ => 0,
        },
        RowKind::Usage { .. } => class::NEVER,
        RowKind::Label { .. }
        | RowKind::ContextEdit { .. }
        | RowKind::Custom { .. }
        | RowKind::ModelChange { .. }
        | RowKind::ThinkingLevelChange { .. }
        | RowKind::ActiveToolsChange { .. }
        | RowKind::SessionInfo { .. }
        | RowKind::Leaf { .. }
        | RowKind::Other { .. } => class::SETTINGS,
        RowKind::Compaction { .. }
        | RowKind::BranchSummary { .. }
        | RowKind::CustomMessage { .. } => 0,
    }
}

/// One drawn row: which node, and where its gutter text lives in [`View::gutters`].
#[derive(Debug, Clone, Copy)]
struct ViewRow {
    node: u32,
    gutter_start: u32,
    gutter_len: u32,
    first_detached: bool,
}

/// The filtered tree as the layout walks it: visible nodes only, children in compressed
/// rows (one offset per node, one flat list).
struct Shape {
    len: usize,
    roots: Vec<usize>,
    detached: Vec<usize>,
    child_start: Vec<u32>,
    child_list: Vec<usize>,
}

impl TreeShape for Shape {
    fn len(&self) -> usize {
        self.len
    }
    fn roots(&self) -> &[usize] {
        &self.roots
    }
    fn detached(&self) -> &[usize] {
        &self.detached
    }
    fn children(&self, node: usize) -> &[usize] {
        let start = self.child_start[node] as usize;
        let end = self.child_start[node + 1] as usize;
        &self.child_list[start..end]
    }
}

/// The rows of the current filter, search and folds.
#[derive(Default)]
struct View {
    rows: Vec<ViewRow>,
    gutters: String,
    /// Per node: its row, or `NONE` when hidden.
    row_of: Vec<u32>,
    /// Per node: the visible parent in this view, or `NONE`.
    parent: Vec<u32>,
    /// Per node: visible children in this view (0 for folded nodes).
    child_count: Vec<u32>,
    /// Per node: its first visible child in this view, or `NONE`.
    first_child: Vec<u32>,
}

struct LabelEdit {
    node: usize,
    text: String,
}

/// The `/tree` overlay.
pub struct TreeNavigator {
    tree: SessionTree,
    theme: Theme,
    class: Vec<u8>,
    filter: TreeFilter,
    query: String,
    tokens: Vec<String>,
    /// Lower-cased searchable text per node (without its label, which is matched on its own),
    /// made on the first search from summaries with longer texts (DECISIONS §25.82).
    search_text: Option<Vec<Box<str>>>,
    folded: HashSet<usize>,
    view: View,
    cursor: ListCursor,
    label_edit: Option<LabelEdit>,
    show_label_times: bool,
    status: Option<String>,
}

impl TreeNavigator {
    /// Opens on `tree` with the selection on the current leaf (or its nearest shown ancestor).
    pub fn new(tree: SessionTree, filter: TreeFilter, theme: Theme) -> Self {
        let class = tree
            .nodes
            .iter()
            .map(|n| classify(&n.row, n.is_leaf))
            .collect();
        let mut nav = TreeNavigator {
            tree,
            theme,
            class,
            filter,
            query: String::new(),
            tokens: Vec::new(),
            search_text: None,
            folded: HashSet::new(),
            view: View::default(),
            cursor: ListCursor::default(),
            label_edit: None,
            show_label_times: false,
            status: None,
        };
        let leaf = nav.tree.nodes.iter().position(|n| n.is_leaf);
        nav.relayout(leaf);
        nav
    }

    pub fn filter(&self) -> TreeFilter {
        self.filter
    }

    pub fn query(&self) -> &str {
        &self.query
    }

    /// Rows the current filter, search and folds show.
    pub fn row_count(&self) -> usize {
        self.view.rows.len()
    }

    /// The entry id of the selected row.
    pub fn selected_id(&self) -> Option<&str> {
        let node = self.selected_node()?;
        Some(self.tree.nodes[node].id())
    }

    /// The entry ids of the shown rows, top to bottom (for tests and the shell's status).
    pub fn shown_ids(&self) -> impl Iterator<Item = &str> {
        self.view
            .rows
            .iter()
            .map(|r| self.tree.nodes[r.node as usize].id())
    }

    /// Whether the inline label input is open.
    pub fn is_editing_label(&self) -> bool {
        self.label_edit.is_some()
    }

    /// Puts the selection on `id`, or on its nearest shown ancestor (pi's `initialSelectedId`,
    /// e.g. reopening where the user was); `false` for an unknown id.
    pub fn select(&mut self, id: &str) -> bool {
        let Some(node) = self.tree.nodes.iter().position(|n| n.id() == id) else {
            return false;
        };
        let mut cur = Some(node);
        let mut steps = 0;
        while let Some(x) = cur {
            if self.view.row_of.get(x).is_some_and(|&r| r != NONE) {
                self.cursor.selected = self.view.row_of[x] as usize;
                return true;
            }
            steps += 1;
            if steps > self.tree.nodes.len() {
                break;
            }
            cur = self.tree.nodes[x].parent;
        }
        false
    }

    /// The one-line preview of an entry as its row shows it (for the "Go to:" line of the
    /// summarize prompt); `None` for an unknown id.
    pub fn entry_preview(&self, id: &str, max: usize) -> Option<String> {
        let node = self.tree.nodes.iter().position(|n| n.id() == id)?;
        Some(
            self.describe(node, max)
                .iter()
                .map(|s| s.content.as_ref())
                .collect(),
        )
    }

    /// The tree shown (the shell reads the chosen entry from it).
    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    fn selected_node(&self) -> Option<usize> {
        self.view
            .rows
            .get(self.cursor.selected)
            .map(|r| r.node as usize)
    }

    /// Handles one key.
    pub fn handle_key(&mut self, key: KeyEvent) -> Flow<TreeAction> {
        if key.kind == KeyEventKind::Release {
            return Flow::Pending;
        }
        if self.label_edit.is_some() {
            return self.label_key(key);
        }
        self.status = None;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let len = self.view.rows.len();
        match key.code {
            KeyCode::Esc => {
                if self.query.is_empty() {
                    return Flow::Cancel;
                }
                self.set_query(String::new());
            }
            KeyCode::Enter => return self.choose(),
            KeyCode::Left if ctrl => self.fold_or_up(),
            KeyCode::Right if ctrl => self.unfold_or_down(),
            KeyCode::Left => {
                self.cursor
                    .handle_key(&KeyEvent::from(KeyCode::PageUp), len);
            }
            KeyCode::Right => {
                self.cursor
                    .handle_key(&KeyEvent::from(KeyCode::PageDown), len);
            }
            KeyCode::Backspace => {
                let mut q = self.query.clone();
                if q.pop().is_some() {
                    self.set_query(q);
                }
            }
            KeyCode::Char(c) if ctrl => match c.to_ascii_lowercase() {
                'd' => self.set_filter(TreeFilter::Default),
                't' => self.set_filter(self.filter.toggle(TreeFilter::NoTools)),
                'u' => self.set_filter(self.filter.toggle(TreeFilter::UserOnly)),
                'l' => self.set_filter(self.filter.toggle(TreeFilter::LabeledOnly)),
                'a' => self.set_filter(self.filter.toggle(TreeFilter::All)),
                'o' if key.modifiers.contains(KeyModifiers::SHIFT) || c == 'O' => {
                    self.set_filter(self.filter.prev());
                }
                'o' => self.set_filter(self.filter.next()),
                _ => {}
            },
            KeyCode::Char('L') => self.start_label_edit(),
            KeyCode::Char('T') => self.show_label_times = !self.show_label_times,
            KeyCode::Char(c) if !c.is_control() => {
                let mut q = self.query.clone();
                q.push(c);
                self.set_query(q);
            }
            _ => {
                self.cursor.handle_key(&key, len);
            }
        }
        Flow::Pending
    }

    fn choose(&mut self) -> Flow<TreeAction> {
        let Some(node) = self.selected_node() else {
            return Flow::Pending;
        };
        let n = &self.tree.nodes[node];
        if n.is_leaf {
            self.status = Some("Already at this point".into());
            return Flow::Pending;
        }
        Flow::Done(TreeAction::Navigate {
            target_id: n.id().to_string(),
        })
    }

    fn start_label_edit(&mut self) {
        if let Some(node) = self.selected_node() {
            let text = self.tree.nodes[node].label.clone().unwrap_or_default();
            self.label_edit = Some(LabelEdit { node, text });
        }
    }

    fn label_key(&mut self, key: KeyEvent) -> Flow<TreeAction> {
        let Some(edit) = self.label_edit.as_mut() else {
            return Flow::Pending;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => self.label_edit = None,
            KeyCode::Enter => {
                let node = edit.node;
                let trimmed = edit.text.trim();
                let label = (!trimmed.is_empty()).then(|| trimmed.to_string());
                self.label_edit = None;
                if self.tree.nodes[node].label == label {
                    return Flow::Pending;
                }
                let id = self.tree.nodes[node].id().to_string();
                self.tree.nodes[node].label.clone_from(&label);
                self.tree.nodes[node].label_timestamp = None;
                if self.filter == TreeFilter::LabeledOnly || !self.tokens.is_empty() {
                    self.relayout(Some(node));
                }
                return Flow::Done(TreeAction::SetLabel { id, label });
            }
            KeyCode::Backspace => {
                edit.text.pop();
            }
            KeyCode::Char('u') if ctrl => edit.text.clear(),
            KeyCode::Char(c) if !ctrl && !c.is_control() => edit.text.push(c),
            _ => {}
        }
        Flow::Pending
    }

    fn set_filter(&mut self, filter: TreeFilter) {
        self.filter = filter;
        self.folded.clear();
        let keep = self.selected_node();
        self.relayout(keep);
    }

    fn set_query(&mut self, query: String) {
        self.query = query;
        self.tokens = self
            .query
            .to_lowercase()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if !self.tokens.is_empty() && self.search_text.is_none() {
            self.search_text = Some(self.search_texts());
        }
        self.folded.clear();
        let keep = self.selected_node();
        self.relayout(keep);
    }

    /// The search text of every node, from summaries with search-length texts; when the log
    /// cannot be read again, from the rows' own (shorter) previews, with a note.
    fn search_texts(&mut self) -> Vec<Box<str>> {
        match self.tree.summaries(RowCaps::SEARCH) {
            Ok(Some(rows)) => return rows.iter().map(searchable).collect(),
            Ok(None) => {}
            Err(e) => self.status = Some(format!("Search covers row previews only: {e}")),
        }
        self.tree.nodes.iter().map(|n| searchable(&n.row)).collect()
    }

    /// Ctrl+Left: folds the selected branch start, or else jumps to the start of its segment.
    fn fold_or_up(&mut self) {
        let Some(node) = self.selected_node() else {
            return;
        };
        if self.foldable(node) && !self.folded.contains(&node) {
            self.folded.insert(node);
            self.relayout(Some(node));
            return;
        }
        // To the first node of this segment; from a segment start, to the one above.
        let target = if self.segment_start(node) {
            match self.view.parent[node] {
                NONE => node,
                p => self.start_of_segment(p as usize),
            }
        } else {
            self.start_of_segment(node)
        };
        let cur = target;
        self.select_node(cur);
    }

    /// Ctrl+Right: unfolds a folded node, or else jumps down the first-child chain to the next
    /// branch start.
    fn unfold_or_down(&mut self) {
        let Some(node) = self.selected_node() else {
            return;
        };
        if self.folded.remove(&node) {
            self.relayout(Some(node));
            return;
        }
        let mut cur = node;
        loop {
            let count = self.view.child_count[cur];
            let first = self.view.first_child[cur];
            if count == 0 || first == NONE {
                break;
            }
            cur = first as usize;
            if count > 1 {
                break;
            }
        }
        self.select_node(cur);
    }

    /// A root, or the first node of a branch (its visible parent has several children).
    fn segment_start(&self, node: usize) -> bool {
        match self.view.parent[node] {
            NONE => true,
            p => self.view.child_count[p as usize] > 1,
        }
    }

    fn start_of_segment(&self, mut node: usize) -> usize {
        while !self.segment_start(node) {
            node = self.view.parent[node] as usize;
        }
        node
    }

    /// A node with visible children that is a root or starts a branch.
    fn foldable(&self, node: usize) -> bool {
        if self.view.child_count[node] == 0 {
            return false;
        }
        self.segment_start(node)
    }

    fn select_node(&mut self, node: usize) {
        if let Some(&row) = self.view.row_of.get(node) {
            if row != NONE {
                self.cursor.selected = row as usize;
            }
        }
    }

    fn is_shown(&self, node: usize) -> bool {
        let c = self.class[node];
        if c & class::NEVER != 0 {
            return false;
        }
        let passes = match self.filter {
            TreeFilter::Default => c & class::SETTINGS == 0,
            TreeFilter::NoTools => c & (class::SETTINGS | class::TOOL_RESULT) == 0,
            TreeFilter::UserOnly => c & class::USER != 0,
            TreeFilter::LabeledOnly => self.tree.nodes[node].label.is_some(),
            TreeFilter::All => true,
        };
        if !passes {
            return false;
        }
        match (&self.search_text, self.tokens.is_empty()) {
            (_, true) => true,
            (Some(texts), false) => {
                let text = &texts[node];
                let label = self.tree.nodes[node]
                    .label
                    .as_deref()
                    .map(str::to_lowercase);
                self.tokens.iter().all(|t| {
                    text.contains(t.as_str())
                        || label.as_deref().is_some_and(|l| l.contains(t.as_str()))
                })
            }
            (None, false) => false,
        }
    }

    /// Lays the rows out again and puts the selection on `keep` or its nearest shown ancestor.
    fn relayout(&mut self, keep: Option<usize>) {
        let n = self.tree.nodes.len();
        let links = &self.tree.links;
        let mut parent = vec![NONE; n];
        let mut child_count = vec![0u32; n];
        let mut order: Vec<usize> = Vec::new();
        let mut roots = Vec::new();
        let mut detached = Vec::new();
        let mut seen = vec![false; n];
        let mut stack: Vec<(usize, u32)> = Vec::new();
        let active = |x: usize| self.tree.nodes.get(x).is_some_and(|t| t.on_active_path);
        // The branch holding the leaf comes first among its siblings (pi's order); the others
        // keep their time order.
        let mut root_order: Vec<usize> = links.roots.clone();
        root_order.sort_by_key(|&r| !active(r));
        for (is_detached, starts) in [(false, &root_order), (true, &links.detached)] {
            for &start in starts.iter() {
                stack.push((start, NONE));
                while let Some((node, anc)) = stack.pop() {
                    if node >= n || std::mem::replace(&mut seen[node], true) {
                        continue;
                    }
                    let below = if self.is_shown(node) {
                        order.push(node);
                        parent[node] = anc;
                        if anc == NONE {
                            if is_detached {
                                detached.push(node);
                            } else {
                                roots.push(node);
                            }
                        } else {
                            child_count[anc as usize] += 1;
                        }
                        if self.folded.contains(&node) {
                            continue;
                        }
                        node as u32
                    } else {
                        anc
                    };
                    let kids = links.children.get(node).map_or(&[][..], Vec::as_slice);
                    let first = kids.iter().position(|&c| active(c));
                    // Pushed in reverse display order, so the active child pops first.
                    for (i, &c) in kids.iter().enumerate().rev() {
                        if Some(i) != first && c < n && !seen[c] {
                            stack.push((c, below));
                        }
                    }
                    if let Some(c) = first.map(|i| kids[i]) {
                        if c < n && !seen[c] {
                            stack.push((c, below));
                        }
                    }
                }
            }
        }
        // Compressed children in pre-order, which is display order.
        let mut child_start = Vec::with_capacity(n + 1);
        let mut total = 0u32;
        for &c in &child_count {
            child_start.push(total);
            total += c;
        }
        child_start.push(total);
        let mut fill = child_start.clone();
        let mut child_list = vec![0usize; total as usize];
        let mut first_child = vec![NONE; n];
        for &node in &order {
            let p = parent[node];
            if p != NONE {
                let p = p as usize;
                if first_child[p] == NONE {
                    first_child[p] = node as u32;
                }
                child_list[fill[p] as usize] = node;
                fill[p] += 1;
            }
        }
        drop(fill);
        let shape = Shape {
            len: n,
            roots,
            detached,
            child_start,
            child_list,
        };
        let mut rows_out = Vec::with_capacity(order.len());
        let mut gutters = String::new();
        let mut row_of = vec![NONE; n];
        let mut rows = Rows::new(&shape, TUI_LAYOUT);
        while let Some(row) = rows.next_row() {
            row_of[row.node] = rows_out.len() as u32;
            rows_out.push(ViewRow {
                node: row.node as u32,
                gutter_start: gutters.len() as u32,
                gutter_len: row.gutter.len() as u32,
                first_detached: row.first_detached,
            });
            gutters.push_str(row.gutter);
        }
        self.view = View {
            rows: rows_out,
            gutters,
            row_of,
            parent,
            child_count,
            first_child,
        };
        // Nearest shown ancestor of the node to keep.
        if let Some(id) = keep
            .and_then(|k| self.tree.nodes.get(k))
            .map(|n| n.id().to_string())
        {
            if self.select(&id) {
                return;
            }
        }
        self.cursor.clamp(self.view.rows.len());
    }

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
        if node.is_leaf {
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
    fn describe(&self, node: usize, max: usize) -> Vec<Span<'static>> {
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

/// What search matches for one node besides its label, lower-cased and capped at
/// [`SEARCH_CHARS`]: pi's words for the kind, and the entry's text (more of it than pi's first
/// 200 characters, plus tool names, tool results and compaction summaries; DECISIONS §23.64).
fn searchable(row: &RowSummary) -> Box<str> {
    let mut text = String::new();
    // pi's words for each kind come first ("branch summary", "model", "title", …).
    let word = match &row.kind {
        RowKind::Message(_) | RowKind::CustomMessage { .. } => "",
        RowKind::Compaction { .. } => "compaction",
        RowKind::BranchSummary { .. } => "branch summary",
        RowKind::SessionInfo { .. } => "title",
        RowKind::ModelChange { .. } => "model",
        RowKind::ThinkingLevelChange { .. } => "thinking",
        RowKind::Custom { .. } => "custom",
        RowKind::ContextEdit { omit, .. } => {
            if *omit {
                "context edit omit"
            } else {
                "context edit replace"
            }
        }
        RowKind::Label { .. } => "label",
        RowKind::ActiveToolsChange { .. } => "tools",
        RowKind::Usage { .. } => "usage",
        RowKind::Leaf { .. } => "leaf",
        RowKind::Other { entry_type } => entry_type,
    };
    if !word.is_empty() {
        text.push_str(word);
        text.push(' ');
    }
    match &row.kind {
        RowKind::Message(m) => {
            text.push_str(m.role());
            text.push(' ');
            match m {
                MessageRow::User { text: t } => text.push_str(t.as_str()),
                MessageRow::Assistant {
                    text: t,
                    calls,
                    error,
                    ..
                } => {
                    text.push_str(t.as_str());
                    for c in calls {
                        text.push(' ');
                        text.push_str(&c.name);
                    }
                    if let Some(e) = error {
                        text.push(' ');
                        text.push_str(e.as_str());
                    }
                }
                MessageRow::ToolResult {
                    tool_name, text: t, ..
                } => {
                    text.push_str(tool_name);
                    text.push(' ');
                    text.push_str(t.as_str());
                }
                MessageRow::System { text: t, .. } => text.push_str(t.as_str()),
                MessageRow::BashExecution { command } => text.push_str(command.as_str()),
                MessageRow::Custom {
                    custom_type,
                    text: t,
                } => {
                    text.push_str(custom_type);
                    text.push(' ');
                    text.push_str(t.as_str());
                }
                MessageRow::BranchSummary { summary }
                | MessageRow::CompactionSummary { summary } => text.push_str(summary.as_str()),
                MessageRow::Other { .. } => {}
            }
        }
        RowKind::CustomMessage {
            custom_type,
            text: t,
        } => {
            text.push_str(custom_type);
            text.push(' ');
            text.push_str(t.as_str());
        }
        RowKind::Compaction { summary, .. } | RowKind::BranchSummary { summary, .. } => {
            text.push_str(summary.as_str())
        }
        RowKind::ModelChange { provider, model_id } => {
            text.push_str(provider);
            text.push('/');
            text.push_str(model_id);
        }
        RowKind::ThinkingLevelChange { level } => text.push_str(level),
        RowKind::Custom { custom_type } => text.push_str(custom_type),
        RowKind::Label { label, .. } => text.push_str(label.as_deref().unwrap_or("")),
        RowKind::SessionInfo { name } => text.push_str(name.as_deref().unwrap_or("")),
        RowKind::ContextEdit { target_id, .. } => text.push_str(target_id),
        RowKind::ActiveToolsChange { names: Some(names) } => text.push_str(&names.join(" ")),
        _ => {}
    }
    let mut end = text.len().min(SEARCH_CHARS);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.to_lowercase().into_boxed_str()
}

/// The entry id of the nearest `arbor.checkpoint` (or workspace restore) entry at or above
/// `target_id` on its path, so the shell knows whether to offer the restore choice.
pub fn nearest_checkpoint<'t>(tree: &'t SessionTree, target_id: &str) -> Option<&'t str> {
    let mut cur = tree.nodes.iter().position(|n| n.id() == target_id);
    let mut steps = 0;
    while let Some(i) = cur {
        let n = &tree.nodes[i];
        if let RowKind::Custom { custom_type } = &n.row.kind {
            if &**custom_type == crate::checkpoints::CHECKPOINT_TYPE
                || &**custom_type == crate::checkpoints::RESTORE_TYPE
            {
                return Some(n.id());
            }
        }
        steps += 1;
        if steps > tree.nodes.len() {
            return None;
        }
        cur = n.parent;
    }
    None
}
