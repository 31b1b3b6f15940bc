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

use arbor_agent::session::rows::{RowCaps, RowKind};
use arbor_agent::session::tree_view::{Layout, Rows, TreeShape};
use arbor_agent::session::SessionTree;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::component::Flow;
use super::list::ListCursor;
use super::theme::Theme;

mod filter;
mod render;
mod search;

pub use filter::TreeFilter;
use filter::{class, classify};
use search::searchable;
pub use search::SEARCH_CHARS;

/// Branch levels drawn before the depth marker (narrower than the CLI's: the TUI must fit 60
/// columns; DECISIONS §23.62).
pub const TUI_LAYOUT: Layout = Layout { max_levels: 8 };

const NONE: u32 = u32::MAX;

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
    /// The node that carries `← leaf`: the leaf, or its nearest shown ancestor when the filter
    /// hides the leaf (a restore record after `/undo-restore`, DECISIONS §23.150).
    shown_leaf: Option<usize>,
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

    /// The row that stands for the leaf: the leaf when shown; when the filter hides it as
    /// bookkeeping (a restore record, a label, a model change), the nearest conversation entry
    /// above it, if shown. A leaf hidden by the search, a fold or a user-only filter is not
    /// moved: another row would look like the leaf. Bounded walk: a cycle ends it.
    fn leaf_position(&self, leaf: usize) -> Option<usize> {
        let shown = |x: usize| self.view.row_of.get(x).is_some_and(|&r| r != NONE);
        let mut cur = Some(leaf);
        let mut steps = 0;
        while let Some(x) = cur {
            if shown(x) {
                return Some(x);
            }
            if self.class.get(x).is_none_or(|c| c & class::SETTINGS == 0) {
                return None;
            }
            steps += 1;
            if steps > self.tree.nodes.len() {
                return None;
            }
            cur = self.tree.nodes[x].parent;
        }
        None
    }

    /// Whether `node`'s row carries the `← leaf` marker.
    pub(super) fn marks_leaf(&self, node: usize) -> bool {
        self.view.shown_leaf == Some(node)
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
        // The shown leaf stands for a hidden leaf below it: moving there would only leave that
        // entry (e.g. a restore record) on a side branch.
        if n.is_leaf || self.view.shown_leaf == Some(node) {
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
            shown_leaf: None,
        };
        self.view.shown_leaf = self
            .tree
            .nodes
            .iter()
            .position(|n| n.is_leaf)
            .and_then(|leaf| self.leaf_position(leaf));
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
