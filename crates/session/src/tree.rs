//! The tree view a `/tree` UI needs: every entry as a node, children ordered by time, labels
//! resolved, the active path marked and `leaf` control entries hidden.
//!
//! Nodes live in one arena (`Vec`) with index links rather than nested boxes: a linear
//! session is a tree as deep as it is long, and nested nodes would recurse that deep on drop
//! and on serialization.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use serde::Serialize;

use crate::entry::SessionEntry;
use crate::error::Result;
use crate::rows::{EntryRows, RowCaps, RowKind, RowSourceRef, RowSummary};

/// One visible entry of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    /// What the node's row shows ([`RowCaps::TREE`] previews; DECISIONS §25.80).
    pub row: RowSummary,
    /// Index of the visible parent node (`None` for roots).
    pub parent: Option<usize>,
    /// The entry's current label (latest `label` entry for it).
    pub label: Option<String>,
    /// When that label was set (the label entry's timestamp).
    pub label_timestamp: Option<String>,
    /// On the root→leaf path of the current leaf.
    pub on_active_path: bool,
    /// The current leaf itself.
    pub is_leaf: bool,
}

impl TreeNode {
    /// The entry id.
    pub fn id(&self) -> &str {
        &self.row.id
    }
}

/// The whole entry tree of a session.
#[derive(Debug, Clone)]
pub struct SessionTree {
    /// Every visible entry, in log order.
    pub nodes: Vec<TreeNode>,
    /// Root nodes, oldest first: entries without a parent, their own parent, or whose parent
    /// is missing.
    pub roots: Vec<usize>,
    /// Nodes no root reaches (on or under a `parentId` cycle), in log order. They are not
    /// dropped: [`SessionTree::walk`] and the tree view list them after the rest.
    pub unreachable: Vec<usize>,
    /// The current leaf.
    pub leaf_id: Option<String>,
    /// The links the view layout walks ([`crate::tree_view`]); `links.item[node]` is
    /// the node's position in the log.
    pub links: TreeLinks,
    /// The log the rows came from, for summaries with other caps (search; DECISIONS §25.82).
    source: Option<RowSourceRef>,
}

/// A multiply-rotate hash for entry ids (short ASCII strings): several times cheaper than the
/// default SipHash on the 100k-entry `/tree` build, which hashes every id twice. Ids come from
/// the user's own session file, so flooding resistance buys nothing here (DECISIONS §23.103).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
    }
    fn write_u8(&mut self, b: u8) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    /// A full avalanche (murmur3's finalizer): ids differ mostly in their last characters,
    /// which the multiply leaves in the high bits, while the table indexes by the low bits.
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z ^= z >> 33;
        z = z.wrapping_mul(0xff51_afd7_ed55_8ccd);
        z ^= z >> 33;
        z = z.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        z ^ (z >> 33)
    }
}

pub(crate) type IdBuild = BuildHasherDefault<IdHasher>;

/// One log entry as the tree links see it.
#[derive(Debug)]
pub struct LinkItem<'a> {
    /// The entry id.
    pub id: &'a str,
    /// Its `parentId`.
    pub parent_id: Option<&'a str>,
    /// Control entries (`leaf`) are not shown; their children hang from their own parent.
    pub hidden: bool,
    /// Children are ordered by this key, then by log order.
    pub time: i64,
}

/// The parent/child links of a tree view over the visible entries of a log.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeLinks {
    /// The visible parent node of each node.
    pub parent: Vec<Option<usize>>,
    /// Children of each node, oldest first.
    pub children: Vec<Vec<usize>>,
    /// Nodes without a (visible, existing, other) parent, oldest first.
    pub roots: Vec<usize>,
    /// Nodes no root reaches (on or under a `parentId` cycle), in log order.
    pub unreachable: Vec<usize>,
    /// One node per group of unreachable nodes: where a view starts drawing that group.
    pub detached: Vec<usize>,
    /// The log item each node shows.
    pub item: Vec<usize>,
}

impl TreeLinks {
    /// Builds the links in O(n) (DECISIONS §25.2): each hidden entry's forwarding target is
    /// resolved once and remembered, so long runs of `leaf` entries cost nothing extra.
    pub fn build(items: &[LinkItem<'_>]) -> TreeLinks {
        let mut by_id: HashMap<&str, usize, IdBuild> =
            HashMap::with_capacity_and_hasher(items.len(), IdBuild::default());
        // Whether each item is its id's first (the one a `parentId` names).
        let mut first = vec![false; items.len()];
        for (i, it) in items.iter().enumerate() {
            if let std::collections::hash_map::Entry::Vacant(v) = by_id.entry(it.id) {
                v.insert(i);
                first[i] = true;
            }
        }
        // Each item's parent, resolved once. Most items continue the one before them: comparing
        // with its id spares a probe into a table larger than the cache (DECISIONS §25.118).
        let raw: Vec<Option<usize>> = items
            .iter()
            .enumerate()
            .map(|(i, it)| {
                let pid = it.parent_id?;
                let p = match i.checked_sub(1) {
                    Some(q) if first[q] && items[q].id == pid => q,
                    _ => by_id.get(pid).copied()?,
                };
                (p != i).then_some(p)
            })
            .collect();
        drop(by_id);
        let raw_parent = |i: usize| raw[i];
        // Forwarding of hidden items: the nearest visible ancestor. `Pending` marks items on
        // the walk in progress, so a cycle of hidden items forwards to nothing.
        #[derive(Clone, Copy, PartialEq)]
        enum Fwd {
            Unknown,
            Pending,
            Done(Option<usize>),
        }
        let mut fwd = vec![Fwd::Unknown; items.len()];
        let mut chain: Vec<usize> = Vec::new();
        let mut visible_parent = |i: usize, fwd: &mut Vec<Fwd>| -> Option<usize> {
            let mut cur = raw_parent(i);
            let result = loop {
                let Some(p) = cur else { break None };
                if !items[p].hidden {
                    break Some(p);
                }
                match fwd[p] {
                    Fwd::Done(r) => break r,
                    Fwd::Pending => break None,
                    Fwd::Unknown => {
                        fwd[p] = Fwd::Pending;
                        chain.push(p);
                        cur = raw_parent(p);
                    }
                }
            };
            for h in chain.drain(..) {
                fwd[h] = Fwd::Done(result);
            }
            result
        };

        let mut node_of: Vec<Option<usize>> = vec![None; items.len()];
        let mut item = Vec::new();
        for (i, it) in items.iter().enumerate() {
            if !it.hidden && first[i] {
                node_of[i] = Some(item.len());
                item.push(i);
            }
        }
        let n = item.len();
        let mut links = TreeLinks {
            parent: vec![None; n],
            children: vec![Vec::new(); n],
            roots: Vec::new(),
            unreachable: Vec::new(),
            detached: Vec::new(),
            item,
        };
        for node in 0..n {
            let i = links.item[node];
            match visible_parent(i, &mut fwd).and_then(|p| node_of[p]) {
                Some(p) => {
                    links.parent[node] = Some(p);
                    links.children[p].push(node);
                }
                None => links.roots.push(node),
            }
        }
        let key = |node: usize| (items[links.item[node]].time, node);
        for c in links.children.iter_mut() {
            if c.len() > 1 {
                c.sort_by_key(|&x| key(x));
            }
        }
        links.roots.sort_by_key(|&r| key(r));
        links.find_unreachable();
        links
    }

    /// Marks what the roots reach; every other node is on or under a cycle. One node per such
    /// group (the cycle member met first walking up from its earliest entry) becomes a
    /// detached start.
    fn find_unreachable(&mut self) {
        let n = self.parent.len();
        let mut seen = vec![false; n];
        let mut stack: Vec<usize> = self.roots.clone();
        let mark = |stack: &mut Vec<usize>, seen: &mut Vec<bool>, children: &[Vec<usize>]| {
            while let Some(x) = stack.pop() {
                if std::mem::replace(&mut seen[x], true) {
                    continue;
                }
                stack.extend(children[x].iter().copied().filter(|&c| !seen[c]));
            }
        };
        mark(&mut stack, &mut seen, &self.children);
        self.unreachable = (0..n).filter(|&x| !seen[x]).collect();
        let mut on_walk = vec![false; n];
        for &start in &self.unreachable {
            if seen[start] {
                continue;
            }
            // Walk up until a node repeats: that node is on the cycle.
            let mut cur = start;
            while let Some(p) = self.parent[cur] {
                if std::mem::replace(&mut on_walk[cur], true) || seen[p] {
                    break;
                }
                cur = p;
            }
            self.detached.push(cur);
            stack.push(cur);
            mark(&mut stack, &mut seen, &self.children);
        }
    }
}

impl crate::tree_view::TreeShape for TreeLinks {
    fn len(&self) -> usize {
        self.parent.len()
    }
    fn roots(&self) -> &[usize] {
        &self.roots
    }
    fn detached(&self) -> &[usize] {
        &self.detached
    }
    fn children(&self, node: usize) -> &[usize] {
        &self.children[node]
    }
}

impl SessionTree {
    /// Builds the tree from parsed entries (log order), the current leaf and its full
    /// ancestry; the entries stay in the tree as its [`SessionTree::summaries`] source.
    pub fn build(entries: Vec<SessionEntry>, leaf: Option<&str>, active: &[SessionEntry]) -> Self {
        let rows: Vec<RowSummary> = entries
            .iter()
            .map(|e| RowSummary::from_entry(e, RowCaps::TREE))
            .collect();
        let active: Vec<&str> = active.iter().map(|e| e.id.as_str()).collect();
        let source: RowSourceRef = Arc::new(EntryRows(entries));
        Self::from_rows(rows, leaf, &active, Some(source))
    }

    /// Builds the tree from every entry's row summary (log order), the current leaf and the ids
    /// of its full ancestry. `source` is where [`SessionTree::summaries`] reads again.
    pub fn from_rows(
        rows: Vec<RowSummary>,
        leaf: Option<&str>,
        active: &[&str],
        source: Option<RowSourceRef>,
    ) -> Self {
        let mut active_ids: HashSet<&str, IdBuild> =
            HashSet::with_capacity_and_hasher(active.len(), IdBuild::default());
        active_ids.extend(active.iter().copied());

        // Labels in log order; the latest wins and a blank one clears.
        let mut labels: HashMap<Box<str>, (String, String), IdBuild> = HashMap::default();
        for r in &rows {
            if let Some((target, text, timestamp)) = r.label_set() {
                match text {
                    Some(text) => {
                        labels.insert(target.into(), (text.to_string(), timestamp.to_string()));
                    }
                    None => {
                        labels.remove(target);
                    }
                }
            }
        }

        let items: Vec<LinkItem<'_>> = rows
            .iter()
            .map(|r| LinkItem {
                id: &r.id,
                parent_id: r.parent_id.as_deref(),
                hidden: r.is_leaf_entry(),
                time: r.time,
            })
            .collect();
        let links = TreeLinks::build(&items);
        drop(items);
        // Nodes are in log order (`links.item` ascends), so the rows move straight into their
        // nodes in one pass.
        let mut nodes = Vec::with_capacity(links.item.len());
        let mut next = links.item.iter().copied().enumerate().peekable();
        for (i, row) in rows.into_iter().enumerate() {
            let Some((node, _)) = next.next_if(|&(_, item)| item == i) else {
                continue;
            };
            let found = if labels.is_empty() {
                None
            } else {
                labels.remove(&*row.id)
            };
            let (label, label_timestamp) = match found {
                Some((l, t)) => (Some(l), Some(t)),
                None => (None, None),
            };
            nodes.push(TreeNode {
                on_active_path: active_ids.contains(&*row.id),
                is_leaf: leaf == Some(&*row.id),
                row,
                parent: links.parent[node],
                label,
                label_timestamp,
            });
        }

        SessionTree {
            nodes,
            roots: links.roots.clone(),
            unreachable: links.unreachable.clone(),
            leaf_id: leaf.map(str::to_string),
            links,
            source,
        }
    }

    /// The node of an entry id.
    pub fn find(&self, id: &str) -> Option<&TreeNode> {
        self.nodes.iter().find(|n| n.id() == id)
    }

    /// A node's children, oldest first.
    pub fn children(&self, node: usize) -> &[usize] {
        self.links.children.get(node).map_or(&[], Vec::as_slice)
    }

    /// Every node's row summarized again with `caps`, in node order (the TUI's search reads
    /// longer texts this way; DECISIONS §25.82). `None` when the tree has no source; an error
    /// when the log can no longer be read.
    pub fn summaries(&self, caps: RowCaps) -> Result<Option<Vec<RowSummary>>> {
        let Some(source) = &self.source else {
            return Ok(None);
        };
        let mut all: Vec<Option<RowSummary>> =
            source.summaries(caps)?.into_iter().map(Some).collect();
        let rows = self
            .links
            .item
            .iter()
            .map(|&i| all.get_mut(i).and_then(Option::take))
            .collect::<Option<Vec<_>>>();
        Ok(rows)
    }

    /// The tree as text, one line per visible entry, laid out like `arbor session tree`
    /// ([`crate::tree_view`]): `<gutter><id> <type>[ <role>][ [label]][: preview][ <- leaf]`.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut rows =
            crate::tree_view::Rows::new(&self.links, crate::tree_view::Layout::default());
        let mut out = String::new();
        while let Some(row) = rows.next_row() {
            if row.first_detached {
                out.push_str("(entries no root reaches)\n");
            }
            let Some(node) = self.nodes.get(row.node) else {
                continue;
            };
            let _ = write!(
                out,
                "{}{} {}",
                row.gutter,
                node.id(),
                node.row.kind.entry_type()
            );
            if let RowKind::Message(m) = &node.row.kind {
                let _ = write!(out, " {}", m.role());
            }
            if let Some(label) = &node.label {
                let _ = write!(out, " [{label}]");
            }
            if let Some(preview) = node.row.kind.preview() {
                let _ = write!(out, ": {preview}");
            }
            if node.is_leaf {
                out.push_str(" <- leaf");
            }
            out.push('\n');
        }
        out
    }

    /// Every node with its depth (edges from a root) as `(node index, depth)`, depth-first and
    /// pre-order, children oldest first: roots oldest first, then the groups no root reaches,
    /// each from depth 0. Iterative, so arbitrarily deep sessions are fine.
    pub fn walk(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut seen = vec![false; self.nodes.len()];
        let starts = self.roots.iter().chain(self.links.detached.iter());
        for &start in starts {
            let mut stack = vec![(start, 0usize)];
            while let Some((i, depth)) = stack.pop() {
                if std::mem::replace(&mut seen[i], true) {
                    continue;
                }
                out.push((i, depth));
                for &c in self.children(i).iter().rev() {
                    stack.push((c, depth + 1));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::IdBuild;
    use std::hash::BuildHasher;

    /// Sequential ids (the same prefix, differing in the last characters) must spread over the
    /// low bits a hash table indexes by; otherwise a 100k-entry build degrades to quadratic.
    #[test]
    fn sequential_ids_spread_over_the_low_bits() {
        let build = IdBuild::default();
        let mut buckets = std::collections::HashSet::new();
        for i in 0..100_000u32 {
            for id in [format!("e{i:07}"), format!("{i:08x}")] {
                buckets.insert(build.hash_one(id.as_str()) & 0xffff);
            }
        }
        // 200k hashes into 65,536 buckets: a uniform hash fills nearly all of them.
        assert!(buckets.len() > 60_000, "{} buckets", buckets.len());
    }
}
