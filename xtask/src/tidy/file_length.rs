//! File length: no source file holds more than [`MAX_LINES`] lines of code before its
//! `#[cfg(test)]` module. A file that long holds more than one concern; it is split by concern
//! (not by line count). Files that are test modules themselves are not counted.

use std::path::Path;

use super::module_tree::ModuleTree;
use super::rust_source;

pub const MAX_LINES: usize = 800;

/// Every `.rs` file under `crates/*/src` and `xtask/src` over the limit.
pub fn check(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for krate in super::crate_dirs(root) {
        let src = krate.join("src");
        let tests = ModuleTree::load(&src).test_files;
        let mut files = Vec::new();
        super::rust_files(&src, &mut files);
        for file in files.iter().filter(|f| !tests.contains(*f)) {
            let text = match std::fs::read_to_string(file) {
                Ok(text) => text,
                Err(e) => {
                    problems.push(format!("{}: cannot read: {e}", super::relative(root, file)));
                    continue;
                }
            };
            let lines = code_lines(&text);
            if lines > MAX_LINES {
                problems.push(format!(
                    "{}: {lines} lines before its test module (at most {MAX_LINES})",
                    super::relative(root, file)
                ));
            }
        }
    }
    problems
}

/// The lines of `text` above its first `#[cfg(test)]` module (all of them without one).
pub fn code_lines(text: &str) -> usize {
    let lexed = rust_source::lex(text);
    match rust_source::test_module_line(&lexed.tokens) {
        Some(line) => line - 1,
        None => text.lines().count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_up_to_the_test_module() {
        assert_eq!(code_lines("fn a() {}\n\nfn b() {}\n"), 3);
        let text = "fn a() {}\n#[cfg(test)]\nfn helper() {}\n// #[cfg(test)]\n#[cfg(test)]\n\
                    #[allow(clippy::x)]\nmod tests {\n}\n";
        assert_eq!(code_lines(text), 4);
        assert_eq!(code_lines("#[cfg(test)]\npub(crate) mod tests;\n"), 0);
    }
}
