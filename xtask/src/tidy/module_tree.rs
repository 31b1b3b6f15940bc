//! A crate's module files as the compiler finds them: from `src/lib.rs` and `src/main.rs`
//! through each `mod name;` to `name.rs` or `name/mod.rs`. Files reached only through a
//! `#[cfg(test)] mod` are test code and listed apart; files no `mod` reaches are not modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::rust_source::{self, attribute_at, is_test_cfg, Kind, Token};

/// One module file of a crate.
#[derive(Debug)]
pub struct ModuleFile {
    pub path: PathBuf,
    /// Its module path from the crate root (`[]` for the root, `["session", "entry"]`).
    pub module: Vec<String>,
    /// Which root it hangs under (`lib.rs` and `main.rs` are two crates of one package).
    pub root: usize,
    pub text: String,
}

#[derive(Debug, Default)]
pub struct ModuleTree {
    pub files: Vec<ModuleFile>,
    /// Files that only `#[cfg(test)] mod` declarations reach.
    pub test_files: BTreeSet<PathBuf>,
    /// `(root, module path)` → index in `files`.
    by_module: BTreeMap<(usize, Vec<String>), usize>,
    /// Files that could not be read, with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
}

impl ModuleTree {
    /// The module files under `src`, from each crate root found there.
    pub fn load(src: &Path) -> ModuleTree {
        let mut tree = ModuleTree::default();
        let roots = ["lib.rs", "main.rs"]
            .iter()
            .map(|name| src.join(name))
            .filter(|path| path.is_file());
        for (root, path) in roots.enumerate() {
            tree.visit(path, Vec::new(), root, false);
        }
        tree
    }

    /// The file holding module `module` under `root`, if it is a file of its own.
    pub fn file_of(&self, root: usize, module: &[String]) -> Option<usize> {
        self.by_module.get(&(root, module.to_vec())).copied()
    }

    fn visit(&mut self, path: PathBuf, module: Vec<String>, root: usize, test: bool) {
        if test {
            self.test_files.insert(path.clone());
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                self.unreadable.push((path, e.to_string()));
                return;
            }
        };
        let children = child_modules(&rust_source::lex(&text).tokens);
        let dir = children_dir(&path);
        if !test {
            self.by_module
                .insert((root, module.clone()), self.files.len());
            self.files.push(ModuleFile {
                path,
                module: module.clone(),
                root,
                text,
            });
        }
        for child in children {
            let mut child_dir = dir.clone();
            child_dir.extend(&child.inline);
            let file = child_dir.join(format!("{}.rs", child.name));
            let file = if file.is_file() {
                file
            } else {
                child_dir.join(&child.name).join("mod.rs")
            };
            if !file.is_file() {
                continue;
            }
            let mut child_module = module.clone();
            child_module.extend(child.inline);
            child_module.push(child.name);
            self.visit(file, child_module, root, test || child.test);
        }
    }
}

/// The folder where the files of `path`'s child modules live: beside a `lib.rs`, `main.rs` or
/// `mod.rs`, and in a folder named after the file otherwise (`a/b.rs` → `a/b/`).
fn children_dir(path: &Path) -> PathBuf {
    let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if matches!(name, "lib.rs" | "main.rs" | "mod.rs") {
        parent
    } else {
        parent.join(path.file_stem().unwrap_or_default())
    }
}

/// A `mod name;` declaration: its name, the inline modules it sits in, and whether a
/// `#[cfg(test)]` stands on it or on an inline module around it.
#[derive(Debug, PartialEq, Eq)]
struct ChildModule {
    name: String,
    inline: Vec<String>,
    test: bool,
}

fn child_modules(tokens: &[Token<'_>]) -> Vec<ChildModule> {
    let mut out = Vec::new();
    // One entry per open brace: the inline module it opens and whether that module is test code.
    let mut braces: Vec<Option<(String, bool)>> = Vec::new();
    let mut test_attr = false;
    let mut i = 0;
    while i < tokens.len() {
        if let Some((after, inner)) = attribute_at(tokens, i) {
            test_attr |= is_test_cfg(inner);
            i = after;
            continue;
        }
        let t = tokens[i];
        if t.is("mod") && tokens.get(i + 1).is_some_and(|n| n.kind == Kind::Ident) {
            let name = tokens[i + 1].text.to_string();
            let inside_test = braces.iter().flatten().any(|(_, test)| *test);
            match tokens.get(i + 2).map(|n| n.text) {
                Some(";") => out.push(ChildModule {
                    name,
                    inline: braces.iter().flatten().map(|(m, _)| m.clone()).collect(),
                    test: test_attr || inside_test,
                }),
                Some("{") => {
                    braces.push(Some((name, test_attr || inside_test)));
                    i += 3;
                    test_attr = false;
                    continue;
                }
                _ => {}
            }
            i += 2;
            test_attr = false;
            continue;
        }
        if t.kind == Kind::Punct {
            match t.text {
                "{" => braces.push(None),
                "}" => {
                    braces.pop();
                }
                _ => {}
            }
        }
        // An attribute stands on the next item only, which ends at one of these at the latest.
        if t.kind == Kind::Punct && matches!(t.text, ";" | "{" | "}") {
            test_attr = false;
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_modules_know_tests_and_inline_parents() {
        let src = "pub mod a;\n#[cfg(test)]\nmod tests;\nmod inline {\n    pub(crate) mod b;\n}\n\
                   #[cfg(test)]\nmod t {\n    mod c;\n}\n#[cfg(feature = \"x\")]\npub mod d;\n\
                   #[cfg(test)]\npub(crate) mod e;\n";
        let lexed = rust_source::lex(src);
        let got: Vec<(String, Vec<String>, bool)> = child_modules(&lexed.tokens)
            .into_iter()
            .map(|c| (c.name, c.inline, c.test))
            .collect();
        let want = vec![
            ("a".to_string(), vec![], false),
            ("tests".to_string(), vec![], true),
            ("b".to_string(), vec!["inline".to_string()], false),
            ("c".to_string(), vec!["t".to_string()], true),
            ("d".to_string(), vec![], false),
            ("e".to_string(), vec![], true),
        ];
        assert_eq!(got, want);
    }
}
