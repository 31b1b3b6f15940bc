//! The rows of a tree view, laid out for reading (DECISIONS §25.1): shared by `arbor session
//! tree` and the TUI's `/tree`.
//!
//! - A single-child chain stays in its column; only a node with several children opens a
//!   branch, drawn with `├─`/`└─` connectors and `│` gutters.
//! - Indentation is bounded: past [`Layout::max_levels`] branch levels the leftmost levels are
//!   folded into a depth marker (`[+N] `), so a 20,000-fork "comb" stays as wide as a shallow
//!   tree.
//! - Rows are produced one at a time ([`Rows::next_row`]); the layout keeps one gutter flag per
//!   open level and a work stack, never the text of earlier rows, so memory is O(entries) and a
//!   caller can stream rows straight to its output.
//! - Entries no root reaches (a `parentId` cycle) come last, after [`Row::first_detached`].

/// The links a tree view needs. Node indices are `0..len()`.
pub trait TreeShape {
    /// How many nodes the tree has; nodes are `0..len()`.
    fn len(&self) -> usize;
    /// No nodes at all (the view draws no row).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Root nodes, in display order.
    fn roots(&self) -> &[usize];
    /// One node per group of entries that no root reaches (each on or under a cycle).
    fn detached(&self) -> &[usize];
    /// A node's children, in display order.
    fn children(&self, node: usize) -> &[usize];
}

/// Layout settings.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Branch levels drawn before deeper ones fold into a depth marker.
    pub max_levels: usize,
}

impl Default for Layout {
    fn default() -> Self {
        Layout { max_levels: 12 }
    }
}

/// One row of the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row<'a> {
    /// The node index.
    pub node: usize,
    /// Branch levels above this row (0 for a flush-left chain).
    pub level: usize,
    /// What to draw left of the row's text: gutters, the connector, a depth marker.
    pub gutter: &'a str,
    /// The first row of the entries no root reaches (a caller prints a heading before it).
    pub first_detached: bool,
}

#[derive(Debug)]
struct Pending {
    node: usize,
    level: usize,
    /// `Some(is_last)` when the row starts a branch (draws a connector).
    connector: Option<bool>,
    first_detached: bool,
}

/// The row producer; see the module docs.
///
/// A caller draws each row its own way: the gutter, then whatever it shows of node
/// [`Row::node`] (for a [`SessionTree`](crate::tree::SessionTree), `tree.nodes[row.node]`).
///
/// ```
/// use std::sync::Arc;
/// use arbor_session::prelude::*;
/// use arbor_session::tree_view::{Layout, Rows};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), SessionError> {
/// let storage = MemoryRepository::new().create(CreateOptions::new("/work/app")).await?;
/// let session = Session::new(Arc::new(storage));
/// let first = session.append_message(arbor_ai::Message::user("first", 0).into()).await?;
/// session.append_message(arbor_ai::Message::user("second", 1).into()).await?;
/// session.move_to(Some(&first), None).await?; // a `leaf` entry, hidden in the tree
/// session.append_message(arbor_ai::Message::user("other way", 2).into()).await?;
///
/// let tree = session.tree().await?;
/// let mut rows = Rows::new(&tree.links, Layout::default());
/// let mut lines = Vec::new();
/// while let Some(row) = rows.next_row() {
///     let node = &tree.nodes[row.node];
///     let mark = if node.is_leaf { " *" } else { "" };
///     lines.push(format!("{}{}{mark}", row.gutter, node.row.kind.preview().unwrap_or("")));
/// }
/// assert_eq!(lines, ["first", "├─ second", "└─ other way *"]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Rows<'t, T: TreeShape> {
    tree: &'t T,
    layout: Layout,
    stack: Vec<Pending>,
    /// Per open branch level: whether a later sibling follows (draws `│`).
    more: Vec<bool>,
    /// Guards detached groups, whose child links lead back around their cycle.
    seen: Vec<bool>,
    detached_next: usize,
    gutter: String,
}

impl<'t, T: TreeShape> Rows<'t, T> {
    /// Rows of `tree` laid out with `layout`.
    pub fn new(tree: &'t T, layout: Layout) -> Self {
        let mut rows = Rows {
            tree,
            layout: Layout {
                max_levels: layout.max_levels.max(1),
            },
            stack: Vec::new(),
            more: Vec::new(),
            seen: vec![false; tree.len()],
            detached_next: 0,
            gutter: String::new(),
        };
        rows.push_group(tree.roots(), 0, false);
        rows
    }

    /// Children of one parent (or a group of roots): one child continues the column, several
    /// open a branch level each.
    fn push_group(&mut self, nodes: &[usize], level: usize, first_detached: bool) {
        let branching = nodes.len() > 1;
        let last = nodes.len().saturating_sub(1);
        for (i, &node) in nodes.iter().enumerate().rev() {
            self.stack.push(Pending {
                node,
                level: if branching { level + 1 } else { level },
                connector: branching.then_some(i == last),
                first_detached: first_detached && i == 0,
            });
        }
    }

    /// The next row, or `None` when every node was shown.
    pub fn next_row(&mut self) -> Option<Row<'_>> {
        let p = loop {
            match self.stack.pop() {
                Some(p) if self.seen.get(p.node).copied().unwrap_or(true) => continue,
                Some(p) => break p,
                None => {
                    let detached = self.tree.detached();
                    let next = detached
                        .get(self.detached_next..)?
                        .iter()
                        .position(|&n| !self.seen.get(n).copied().unwrap_or(true))?;
                    let node = detached[self.detached_next + next];
                    let first = self.detached_next == 0;
                    self.detached_next += next + 1;
                    self.more.clear();
                    self.stack.push(Pending {
                        node,
                        level: 0,
                        connector: None,
                        first_detached: first,
                    });
                }
            }
        };
        self.seen[p.node] = true;
        match p.connector {
            Some(is_last) => {
                self.more.truncate(p.level.saturating_sub(1));
                self.more.push(!is_last);
            }
            None => self.more.truncate(p.level),
        }
        self.draw_gutter(p.level, p.connector);
        let children = self.tree.children(p.node);
        self.push_group(children, p.level, false);
        Some(Row {
            node: p.node,
            level: p.level,
            gutter: &self.gutter,
            first_detached: p.first_detached,
        })
    }

    fn draw_gutter(&mut self, level: usize, connector: Option<bool>) {
        self.gutter.clear();
        let max = self.layout.max_levels;
        let first_shown = if level > max {
            use std::fmt::Write as _;
            let _ = write!(self.gutter, "[+{}] ", level - max);
            level - max + 1
        } else {
            1
        };
        for k in first_shown..=level {
            let more = self.more.get(k - 1).copied().unwrap_or(false);
            let cell = match connector {
                Some(is_last) if k == level => {
                    if is_last {
                        "└─ "
                    } else {
                        "├─ "
                    }
                }
                _ if more => "│  ",
                _ => "   ",
            };
            self.gutter.push_str(cell);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree given as a parent list (`None` = root), children in index order.
    struct Links {
        roots: Vec<usize>,
        detached: Vec<usize>,
        children: Vec<Vec<usize>>,
    }

    impl Links {
        fn new(parents: &[Option<usize>], detached: Vec<usize>) -> Links {
            let mut children = vec![Vec::new(); parents.len()];
            let mut roots = Vec::new();
            for (i, p) in parents.iter().enumerate() {
                match p {
                    Some(p) => children[*p].push(i),
                    None => roots.push(i),
                }
            }
            Links {
                roots,
                detached,
                children,
            }
        }
    }

    impl TreeShape for Links {
        fn len(&self) -> usize {
            self.children.len()
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

    fn draw(links: &Links, layout: Layout) -> String {
        let mut rows = Rows::new(links, layout);
        let mut out = String::new();
        while let Some(r) = rows.next_row() {
            if r.first_detached {
                out.push_str("-- detached --\n");
            }
            out.push_str(&format!("{}{}\n", r.gutter, r.node));
        }
        out
    }

    #[test]
    fn chains_stay_flat_and_branches_indent_once() {
        // 0-1 then 1 forks into 2(-3) and 4(-5).
        let links = Links::new(&[None, Some(0), Some(1), Some(2), Some(1), Some(4)], vec![]);
        assert_eq!(
            draw(&links, Layout::default()),
            "0\n1\n├─ 2\n│  3\n└─ 4\n   5\n"
        );
    }

    #[test]
    fn deep_combs_fold_into_a_depth_marker() {
        // A main path 0..6 where every node also has a side child.
        let mut parents = vec![None];
        for i in 1..6 {
            parents.push(Some((i - 1) * 2));
            parents.push(Some((i - 1) * 2));
        }
        let links = Links::new(&parents, vec![]);
        let text = draw(&links, Layout { max_levels: 2 });
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= "[+3] │  └─ 10".chars().count(), "{text}");
        assert!(text.contains("[+3] "), "{text}");
        assert_eq!(text.lines().count(), parents.len());
    }

    #[test]
    fn detached_cycles_are_shown_once_after_the_tree() {
        // 0 is a root; 1 and 2 point at each other (2's children link back to 1).
        let links = Links {
            roots: vec![0],
            detached: vec![1],
            children: vec![vec![], vec![2], vec![1]],
        };
        assert_eq!(draw(&links, Layout::default()), "0\n-- detached --\n1\n2\n");
    }
}
