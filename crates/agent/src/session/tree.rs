//! The tree view a `/tree` UI needs: every entry as a node, children ordered by time, labels
//! resolved, the active path marked and `leaf` control entries hidden.
//!
//! Nodes live in one arena (`Vec`) with index links rather than nested boxes: a linear
//! session is a tree as deep as it is long, and nested nodes would recurse that deep on drop
//! and on serialization.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::session::entry::{EntryKind, SessionEntry};

/// One visible entry of the tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeNode {
    pub entry: SessionEntry,
    /// Index of the visible parent node (`None` for roots).
    pub parent: Option<usize>,
    /// Indices of child nodes, oldest first.
    pub children: Vec<usize>,
    /// The entry's current label (latest `label` entry for it).
    pub label: Option<String>,
    /// When that label was set (the label entry's timestamp).
    pub label_timestamp: Option<String>,
    /// On the root→leaf path of the current leaf.
    pub on_active_path: bool,
    /// The current leaf itself.
    pub is_leaf: bool,
}

/// The whole entry tree of a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionTree {
    pub nodes: Vec<TreeNode>,
    /// Root nodes, oldest first: entries without a parent, their own parent, or whose parent
    /// is missing.
    pub roots: Vec<usize>,
    pub leaf_id: Option<String>,
}

/// Orders entries by their ISO timestamp (as milliseconds when parsable), then log order.
fn time_key(entry: &SessionEntry) -> i64 {
    crate::time::iso_to_ms(&entry.timestamp).unwrap_or(i64::MAX)
}

impl SessionTree {
    /// Builds the tree from the log (`entries`, log order), the current leaf and its full
    /// ancestry.
    pub fn build(entries: Vec<SessionEntry>, leaf: Option<&str>, active: &[SessionEntry]) -> Self {
        let active_ids: HashSet<&str> = active.iter().map(|e| e.id.as_str()).collect();

        // Labels in log order; the latest wins and a blank one clears.
        let mut labels: HashMap<String, (String, String)> = HashMap::new();
        for e in &entries {
            if let EntryKind::Label(l) = &e.kind {
                match l.label.get().map(|s| s.trim()).filter(|s| !s.is_empty()) {
                    Some(text) => {
                        labels.insert(l.target_id.clone(), (text.to_string(), e.timestamp.clone()));
                    }
                    None => {
                        labels.remove(&l.target_id);
                    }
                }
            }
        }

        // Hidden control entries forward their children to their own parent.
        let parent_of: HashMap<&str, Option<&str>> = entries
            .iter()
            .map(|e| (e.id.as_str(), e.parent_id.as_deref()))
            .collect();
        let hidden: HashSet<&str> = entries
            .iter()
            .filter(|e| matches!(e.kind, EntryKind::Leaf(_)))
            .map(|e| e.id.as_str())
            .collect();
        let visible_parent = |e: &SessionEntry| -> Option<String> {
            let mut p = e.parent_id.as_deref();
            let mut hops = 0usize;
            while let Some(pid) = p {
                if pid == e.id || !parent_of.contains_key(pid) {
                    return None;
                }
                if !hidden.contains(pid) {
                    return Some(pid.to_string());
                }
                hops += 1;
                if hops > parent_of.len() {
                    return None;
                }
                p = parent_of.get(pid).copied().flatten();
            }
            None
        };
        let parents: Vec<Option<String>> = entries
            .iter()
            .map(|e| {
                if hidden.contains(e.id.as_str()) {
                    None
                } else {
                    visible_parent(e)
                }
            })
            .collect();

        let mut nodes = Vec::with_capacity(entries.len());
        let mut index: HashMap<String, usize> = HashMap::with_capacity(entries.len());
        let mut node_parents = Vec::with_capacity(entries.len());
        for (entry, parent) in entries.into_iter().zip(parents) {
            if matches!(entry.kind, EntryKind::Leaf(_)) {
                continue;
            }
            let (label, label_timestamp) = match labels.remove(&entry.id) {
                Some((l, t)) => (Some(l), Some(t)),
                None => (None, None),
            };
            index.insert(entry.id.clone(), nodes.len());
            node_parents.push(parent);
            nodes.push(TreeNode {
                on_active_path: active_ids.contains(entry.id.as_str()),
                is_leaf: leaf == Some(entry.id.as_str()),
                entry,
                parent: None,
                children: Vec::new(),
                label,
                label_timestamp,
            });
        }

        let mut roots = Vec::new();
        for (i, parent) in node_parents.into_iter().enumerate() {
            match parent.and_then(|p| index.get(&p).copied()) {
                Some(p) => {
                    nodes[i].parent = Some(p);
                    nodes[p].children.push(i);
                }
                None => roots.push(i),
            }
        }
        let keys: Vec<i64> = nodes.iter().map(|n| time_key(&n.entry)).collect();
        for n in nodes.iter_mut() {
            n.children.sort_by_key(|&c| (keys[c], c));
        }
        roots.sort_by_key(|&r| (keys[r], r));

        SessionTree {
            nodes,
            roots,
            leaf_id: leaf.map(str::to_string),
        }
    }

    /// The node of an entry id.
    pub fn find(&self, id: &str) -> Option<&TreeNode> {
        self.nodes.iter().find(|n| n.entry.id == id)
    }

    /// Depth-first, pre-order, children oldest first: `(node index, depth)` — the order a
    /// tree view draws its rows. Iterative, so arbitrarily deep sessions are fine.
    pub fn walk(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack: Vec<(usize, usize)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((i, depth)) = stack.pop() {
            out.push((i, depth));
            for &c in self.nodes[i].children.iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        out
    }
}
