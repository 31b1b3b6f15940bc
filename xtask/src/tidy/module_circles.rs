//! Module circles: files of one crate that import each other in a loop. A circle means no file
//! of it can be read, tested or moved without the others, so every one is reported: each
//! strongly connected component of two or more files of the import graph (see [`super::imports`]
//! for what an arrow is), with its files and the arrows between them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::imports::imports;
use super::module_tree::ModuleTree;

/// The circles of every crate under `crates/` and of `xtask`.
pub fn check(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for krate in super::crate_dirs(root) {
        let tree = ModuleTree::load(&krate.join("src"));
        for (path, e) in &tree.unreadable {
            problems.push(format!("{}: cannot read: {e}", super::relative(root, path)));
        }
        problems.extend(circles(&tree).iter().map(|c| describe(root, &tree, c)));
    }
    problems
}

/// One circle: its files (indices into the tree) and the arrows among them with the names each
/// takes from the other.
#[derive(Debug, PartialEq, Eq)]
pub struct Circle {
    pub files: Vec<usize>,
    pub arrows: BTreeMap<(usize, usize), BTreeSet<String>>,
}

/// Every strongly connected component of two or more files of `tree`'s import graph.
pub fn circles(tree: &ModuleTree) -> Vec<Circle> {
    let mut arrows: BTreeMap<(usize, usize), BTreeSet<String>> = BTreeMap::new();
    let mut next: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); tree.files.len()];
    for (file, successors) in next.iter_mut().enumerate() {
        for import in imports(tree, file) {
            successors.insert(import.target);
            arrows
                .entry((file, import.target))
                .or_default()
                .insert(import.name);
        }
    }
    strongly_connected(&next)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|files| {
            let members: BTreeSet<usize> = files.iter().copied().collect();
            let arrows = arrows
                .iter()
                .filter(|((from, to), _)| members.contains(from) && members.contains(to))
                .map(|(k, v)| (*k, v.clone()))
                .collect();
            Circle { files, arrows }
        })
        .collect()
}

fn describe(root: &Path, tree: &ModuleTree, circle: &Circle) -> String {
    let name = |i: usize| {
        tree.files
            .get(i)
            .map_or_else(String::new, |f| super::relative(root, &f.path))
    };
    let files: Vec<String> = circle.files.iter().map(|i| name(*i)).collect();
    let arrows: Vec<String> = circle
        .arrows
        .iter()
        .map(|((from, to), names)| {
            let mut shown: Vec<&str> = names.iter().map(String::as_str).take(4).collect();
            let more = names.len().saturating_sub(shown.len());
            let tail = format!("{more} more");
            if more > 0 {
                shown.push(&tail);
            }
            format!("{} -> {} ({})", name(*from), name(*to), shown.join(", "))
        })
        .collect();
    format!(
        "{} files: {}; arrows: {}",
        files.len(),
        files.join(", "),
        arrows.join("; ")
    )
}

/// Tarjan's strongly connected components of the graph `next` (node → successors); each
/// component sorted, components in the order of their smallest node.
fn strongly_connected(next: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'g> {
        next: &'g [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        out: Vec<Vec<usize>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.counter);
            self.low[v] = self.counter;
            self.counter += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in self.next[v].iter() {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                component.sort_unstable();
                self.out.push(component);
            }
        }
    }
    let n = next.len();
    let mut walk = Walk {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if walk.index[v].is_none() {
            walk.visit(v);
        }
    }
    walk.out.sort();
    walk.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A crate in a temporary folder from `(path under src/, text)` pairs.
    fn krate(files: &[(&str, &str)]) -> (tempfile::TempDir, ModuleTree) {
        let dir = match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(e) => panic!("tempdir: {e}"),
        };
        for (path, text) in files {
            let path: PathBuf = dir.path().join("src").join(path);
            if let Some(parent) = path.parent() {
                if let Err(e) = std::fs::create_dir_all(parent) {
                    panic!("mkdir: {e}");
                }
            }
            if let Err(e) = std::fs::write(&path, text) {
                panic!("write: {e}");
            }
        }
        let tree = ModuleTree::load(&dir.path().join("src"));
        (dir, tree)
    }

    fn described(files: &[(&str, &str)]) -> Vec<String> {
        let (dir, tree) = krate(files);
        let root = dir.path().join("src");
        circles(&tree)
            .iter()
            .map(|c| describe(&root, &tree, c))
            .collect()
    }

    #[test]
    fn a_circle_through_crate_paths_is_found() {
        let got = described(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            ("b.rs", "pub struct B;\nfn f() { crate::c::g(); }\n"),
            ("c.rs", "pub fn g() {}\nfn h(_: crate::a::A) {}\n"),
        ]);
        assert_eq!(
            got,
            ["3 files: a.rs, b.rs, c.rs; arrows: a.rs -> b.rs (B); b.rs -> c.rs (g); c.rs -> a.rs (A)"]
        );
    }

    #[test]
    fn a_circle_through_super_is_found() {
        let got = described(&[
            ("lib.rs", "mod tui;\n"),
            ("tui/mod.rs", "mod state;\nmod view;\n"),
            (
                "tui/state.rs",
                "use super::view::{\n    draw,\n    Frame,\n};\npub struct State;\n",
            ),
            (
                "tui/view.rs",
                "pub fn draw(_: &super::state::State) {}\npub struct Frame;\n",
            ),
        ]);
        assert_eq!(
            got,
            ["2 files: tui/state.rs, tui/view.rs; arrows: tui/state.rs -> tui/view.rs (Frame, draw); tui/view.rs -> tui/state.rs (State)"]
        );
    }

    #[test]
    fn a_parent_that_declares_and_re_exports_its_child_is_no_circle() {
        let got = described(&[
            ("lib.rs", "pub mod session;\npub use session::Entry;\n"),
            (
                "session/mod.rs",
                "mod entry;\npub use entry::Entry;\nuse self::entry::parse;\n",
            ),
            ("session/entry.rs", "pub struct Entry;\npub fn parse() {}\n"),
        ]);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn a_re_export_hands_names_on_without_an_arrow() {
        let got = described(&[
            ("lib.rs", "mod list;\nmod types;\n"),
            (
                "types.rs",
                "pub use crate::list::List;\npub struct Message;\n",
            ),
            (
                "list.rs",
                "use crate::types::Message;\npub struct List(Vec<Message>);\n",
            ),
        ]);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn test_code_draws_no_arrow() {
        let got = described(&[
            ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod tests;\n"),
            ("a.rs", "pub fn a() { crate::b::b(); }\n"),
            (
                "b.rs",
                "pub fn b() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::a;\n}\n",
            ),
            ("tests.rs", "use crate::a::a;\nuse crate::b::b;\n"),
        ]);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn components_are_found_in_any_order() {
        let next: Vec<BTreeSet<usize>> = vec![
            BTreeSet::from([1]),
            BTreeSet::from([2]),
            BTreeSet::from([0, 3]),
            BTreeSet::new(),
            BTreeSet::from([4]),
        ];
        assert_eq!(
            strongly_connected(&next),
            vec![vec![0, 1, 2], vec![3], vec![4]]
        );
    }
}
