//! The arrows out of one module file: every path in its non-test code that starts at `crate`,
//! `self` or `super` — in `use` trees (nested `{}` groups included) and inline in code
//! (`crate::time::now()`) — resolved to the module file it names.
//!
//! A path names the file of its longest prefix that is a module file (`a/b.rs` or `a/b/mod.rs`),
//! so an item re-exported through a `mod.rs` is an arrow to that `mod.rs`. A re-export itself
//! (`pub use`, `pub(crate) use`) draws no arrow: it hands names on, the file's own code does not
//! use them. Paths that start at an extern crate or at a module's own child by its bare name
//! (`mod x; use x::Y;`) are no arrows either: the first is another crate, the second the
//! parent→child edge every `mod` already is.

use super::module_tree::ModuleTree;
use super::rust_source::{self, Kind, Token};

/// One arrow: the importing file takes `name` from file `target` (an index into the tree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    pub target: usize,
    pub name: String,
    pub line: usize,
}

/// The arrows out of `tree.files[file]`, self-references left out.
pub fn imports(tree: &ModuleTree, file: usize) -> Vec<Import> {
    let Some(source) = tree.files.get(file) else {
        return Vec::new();
    };
    let lexed = rust_source::lex(&source.text);
    let tokens = rust_source::without_test_items(&lexed.tokens);
    let mut out = Vec::new();
    for (module, path, line) in paths(&tokens) {
        let mut here = source.module.clone();
        here.extend(module);
        let Some(absolute) = absolute(&path, &here) else {
            continue;
        };
        let Some(target) = (0..=absolute.len())
            .rev()
            .find_map(|n| tree.file_of(source.root, &absolute[..n]))
        else {
            continue;
        };
        if target != file {
            let name = path
                .iter()
                .rev()
                .find(|s| *s != "self")
                .cloned()
                .unwrap_or_default();
            out.push(Import { target, name, line });
        }
    }
    out
}

/// `path` from the crate root, for a path written in module `here`; `None` unless it starts at
/// `crate`, `self` or `super` (or climbs above the root).
fn absolute(path: &[String], here: &[String]) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut base = match first.as_str() {
        "crate" => Vec::new(),
        "self" | "super" => here.to_vec(),
        _ => return None,
    };
    let mut rest = rest;
    if first == "super" {
        base.pop()?;
    }
    while let Some((next, tail)) = rest.split_first() {
        if next != "super" {
            break;
        }
        base.pop()?;
        rest = tail;
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(base)
}

/// Every `crate`/`self`/`super` path in `tokens` with the inline modules it is written in and
/// its line.
fn paths(tokens: &[Token<'_>]) -> Vec<(Vec<String>, Vec<String>, usize)> {
    let mut out = Vec::new();
    let mut braces: Vec<Option<String>> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i];
        if t.is("use") {
            let mut trees = Vec::new();
            let re_export = is_re_export(tokens, i);
            i = use_tree(tokens, i + 1, Vec::new(), &mut trees);
            if !re_export {
                for path in trees {
                    out.push((inline(&braces), path, t.line));
                }
            }
            // Past the `;` that ends the declaration.
            while let Some(t) = tokens.get(i) {
                i += 1;
                if t.is(";") {
                    break;
                }
            }
            continue;
        }
        if t.is("mod") && tokens.get(i + 2).is_some_and(|b| b.is("{")) {
            braces.push(Some(tokens[i + 1].text.to_string()));
            i += 3;
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
        let starts_path = matches!(t.text, "crate" | "self" | "super")
            && t.kind == Kind::Ident
            && tokens.get(i + 1).is_some_and(|n| n.is("::"))
            && !i
                .checked_sub(1)
                .and_then(|p| tokens.get(p))
                .is_some_and(|p| p.is("::") || p.is("$") || p.is("in"));
        if starts_path {
            let mut path = vec![t.text.to_string()];
            let mut j = i + 1;
            while tokens.get(j).is_some_and(|n| n.is("::"))
                && tokens.get(j + 1).is_some_and(|n| n.kind == Kind::Ident)
            {
                path.push(tokens[j + 1].text.to_string());
                j += 2;
            }
            out.push((inline(&braces), path, t.line));
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Whether the `use` at `at` has a visibility (`pub use`, `pub(crate) use`): a re-export.
fn is_re_export(tokens: &[Token<'_>], at: usize) -> bool {
    let before = |n: usize| at.checked_sub(n).and_then(|i| tokens.get(i));
    if before(1).is_some_and(|t| t.is("pub")) {
        return true;
    }
    if !before(1).is_some_and(|t| t.is(")")) {
        return false;
    }
    // `pub(crate)`, `pub(super)`, `pub(in path)`.
    (2..8)
        .find(|n| before(*n).is_some_and(|t| t.is("(")))
        .is_some_and(|n| before(n + 1).is_some_and(|t| t.is("pub")))
}

/// The names of the inline modules open at this point.
fn inline(braces: &[Option<String>]) -> Vec<String> {
    braces.iter().flatten().cloned().collect()
}

/// Reads the use tree starting at `at` under `prefix`, pushing each full path (a glob ends in
/// `*`); returns the index after the tree.
fn use_tree(
    tokens: &[Token<'_>],
    at: usize,
    prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut path = prefix;
    let mut i = at;
    if tokens.get(i).is_some_and(|t| t.is("::")) {
        // `use ::std::…`: an extern crate.
        path.push("::".to_string());
        i += 1;
    }
    loop {
        let Some(t) = tokens.get(i) else {
            return i;
        };
        match t.text {
            "{" if t.kind == Kind::Punct => {
                i += 1;
                loop {
                    match tokens.get(i) {
                        None => return i,
                        Some(t) if t.is("}") => {
                            i += 1;
                            break;
                        }
                        Some(t) if t.is(",") => i += 1,
                        Some(_) => i = use_tree(tokens, i, path.clone(), out),
                    }
                }
                break;
            }
            "*" => {
                path.push("*".to_string());
                out.push(path.clone());
                i += 1;
                break;
            }
            _ if t.kind == Kind::Ident => {
                path.push(t.text.to_string());
                i += 1;
                if tokens.get(i).is_some_and(|n| n.is("as")) {
                    i += 2;
                }
                if tokens.get(i).is_some_and(|n| n.is("::")) {
                    i += 1;
                    continue;
                }
                out.push(path.clone());
                break;
            }
            _ => break,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths_of(src: &str) -> Vec<String> {
        let lexed = rust_source::lex(src);
        paths(&lexed.tokens)
            .into_iter()
            .map(|(inline, path, line)| format!("{line}:{}:{}", inline.join("/"), path.join("::")))
            .collect()
    }

    #[test]
    fn use_trees_expand_across_lines() {
        let src = "use crate::{\n    a::{self, B as C},\n    d::*,\n};\nuse std::fmt;\npub use super::e::F;\n\
                   pub(crate) use crate::g;\nuse self::h::I;\n";
        assert_eq!(
            paths_of(src),
            [
                "1::crate::a::self",
                "1::crate::a::B",
                "1::crate::d::*",
                "5::std::fmt",
                "8::self::h::I"
            ]
        );
    }

    #[test]
    fn inline_paths_start_at_crate_self_or_super() {
        let src = "fn f() { crate::time::now(); x::crate_like(); $crate::m!(); }\n\
                   mod inner {\n    fn g() { super::h::<u8>(); }\n}\npub(in crate::a) fn v() {}\n";
        assert_eq!(paths_of(src), ["1::crate::time::now", "3:inner:super::h"]);
    }

    #[test]
    fn paths_are_made_absolute() {
        let here: Vec<String> = vec!["a".into(), "b".into()];
        let path = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
        assert_eq!(absolute(&path("super::c::D"), &here), Some(path("a::c::D")));
        assert_eq!(absolute(&path("super::super::E"), &here), Some(path("E")));
        assert_eq!(absolute(&path("self::x"), &here), Some(path("a::b::x")));
        assert_eq!(absolute(&path("crate::a::self"), &here), Some(path("a")));
        assert_eq!(absolute(&path("std::fmt"), &here), None);
        assert_eq!(absolute(&path("super::super::super::x"), &here), None);
    }
}
