//! Citations: what a comment cites must be in the repository, so a reader can follow it.
//!
//! Only comments (`//`, `///`, `//!`, `/* */`) of the `.rs` files under `crates/` and `xtask/`
//! are read — strings and code name files the programs handle (`AGENTS.md`, `notes.md` in a
//! fixture), which are not citations. Consecutive comment lines are read as one text, a word
//! broken after a hyphen joined again. A comment cites:
//! - `DECISIONS §3.5` (and its siblings `, §3.6`, `/§3.6`, ` and §3.6`, `–§3.7`): the item must
//!   be defined in docs/DECISIONS.md;
//! - a document named by a `.md` file name or path that a `§` follows (`<name>.md §9`), that
//!   lies under `docs` or `shared` (`docs/<NAME>.md`, a path under `shared/reference`), or whose
//!   name is lower-case words joined by hyphens (`<two-words>.md`; the files the app handles are
//!   upper-case, `AGENTS.md`, or one word): the file must exist — a path from the repository
//!   root, a bare name anywhere in the repository;
//! - a document named without `.md` but with a section, lower-case words joined by hyphens
//!   (`<two-words> §6.3`): `<two-words>.md` must exist in the repository.
//!
//! `DECISIONS §x.y` in a string literal (a message that explains itself by a rule) is checked
//! as well. A bare `§3.5` names no document and is not checked; paths under `shared` that are
//! no `.md` file (its tools and fixtures) are data and tools beside the checkout, not documents,
//! except under `shared/reference`.

use std::collections::BTreeSet;
use std::path::Path;

use super::rust_source::{self, CommentLine, Kind};

/// Every citation in a comment under `crates/` and `xtask/` that names a missing item or document.
pub fn check(root: &Path) -> Vec<String> {
    let decisions = root.join("docs/DECISIONS.md");
    let items = match std::fs::read_to_string(&decisions) {
        Ok(text) => decision_items(&text),
        Err(e) => return vec![format!("cannot read {}: {e}", decisions.display())],
    };
    let repository = Repository::scan(root);
    let mut files = Vec::new();
    super::rust_files(&root.join("crates"), &mut files);
    super::rust_files(&root.join("xtask"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) => {
                problems.push(format!(
                    "{}: cannot read: {e}",
                    super::relative(root, &file)
                ));
                continue;
            }
        };
        let lexed = rust_source::lex(&text);
        let mut found = missing(&lexed.comments, &items, &repository);
        // A message may cite a rule too (`"explained by DECISIONS §26.4"`).
        for literal in lexed.tokens.iter().filter(|t| t.kind == Kind::Literal) {
            for (at, number) in cited_at(literal.text) {
                if !items.contains(&number) {
                    let line = literal.line + literal.text[..at].matches('\n').count();
                    found.push((line, missing_item(&number)));
                }
            }
        }
        found.sort();
        for (line, problem) in found {
            problems.push(format!(
                "{}:{line}: {problem}",
                super::relative(root, &file)
            ));
        }
    }
    problems
}

/// The `.md` files of the repository: their paths from the root and their bare names.
#[derive(Default)]
pub struct Repository {
    paths: BTreeSet<String>,
    names: BTreeSet<String>,
}

impl Repository {
    fn scan(root: &Path) -> Repository {
        let mut repository = Repository::default();
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if !(name.starts_with('.') || name == "target") {
                        pending.push(path);
                    }
                } else if name.ends_with(".md") {
                    repository.insert(&super::relative(root, &path));
                }
            }
        }
        repository
    }

    fn insert(&mut self, path: &str) {
        let name = path.rsplit('/').next().unwrap_or(path);
        self.names.insert(name.to_string());
        self.paths.insert(path.to_string());
    }

    fn has(&self, cited: &str) -> bool {
        if cited.contains('/') {
            let path = cited.trim_start_matches("./");
            self.paths.contains(path) || self.paths.iter().any(|p| p.starts_with(path))
        } else {
            self.names.contains(cited)
        }
    }
}

/// The citations in `comments` that name a missing DECISIONS item or document, with their lines.
fn missing(
    comments: &[CommentLine],
    items: &BTreeSet<String>,
    repository: &Repository,
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for block in blocks(comments) {
        for (at, number) in cited_at(&block.text) {
            if !items.contains(&number) {
                out.push((block.line_at(at), missing_item(&number)));
            }
        }
        for (at, document, shown) in documents(&block.text) {
            if !repository.has(&document) {
                out.push((
                    block.line_at(at),
                    format!("`{shown}` cites {document}, which is not in the repository"),
                ));
            }
        }
    }
    out
}

fn missing_item(number: &str) -> String {
    format!("DECISIONS §{number} is not an item of docs/DECISIONS.md")
}

/// Consecutive comment lines read as one text, with the offset where each line starts.
struct Block {
    text: String,
    starts: Vec<(usize, usize)>,
}

impl Block {
    fn line_at(&self, offset: usize) -> usize {
        self.starts
            .iter()
            .take_while(|(start, _)| *start <= offset)
            .last()
            .map_or(0, |(_, line)| *line)
    }
}

fn blocks(comments: &[CommentLine]) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut last_line = 0;
    for comment in comments {
        let joined_to_last = comment.line == last_line + 1 && !out.is_empty();
        last_line = comment.line;
        let block = match out.last_mut() {
            Some(block) if joined_to_last => block,
            _ => {
                out.push(Block {
                    text: String::new(),
                    starts: Vec::new(),
                });
                match out.last_mut() {
                    Some(block) => block,
                    None => continue,
                }
            }
        };
        let broken_word = block.text.ends_with('-')
            && block
                .text
                .chars()
                .rev()
                .nth(1)
                .is_some_and(char::is_alphanumeric);
        if !block.text.is_empty() && !broken_word {
            block.text.push(' ');
        }
        block.starts.push((block.text.len(), comment.line));
        block.text.push_str(&comment.text);
    }
    out
}

/// Item numbers docs/DECISIONS.md defines: `## 3. Title` gives `3`, `**3.5**` or `3.5 ` at a
/// line start (list items, `### 3.5`) gives `3.5`.
pub fn decision_items(text: &str) -> BTreeSet<String> {
    let mut items = BTreeSet::new();
    for line in text.lines() {
        let line = line
            .trim_start_matches('#')
            .trim_start_matches(['-', '*', ' '])
            .trim_start_matches("**");
        let number: String = line
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let number = number.trim_end_matches('.');
        if !number.is_empty() && number.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            items.insert(number.to_string());
        }
    }
    items
}

/// `§x.y` numbers cited right after `DECISIONS` in `text` (`DECISIONS §3.5`, `§3.5/§3.6`).
#[cfg(test)]
fn cited(text: &str) -> Vec<String> {
    cited_at(text).into_iter().map(|(_, n)| n).collect()
}

/// [`cited`] with the byte offset of each number in `text`.
fn cited_at(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut searched = 0;
    while let Some(found) = text[searched..].find("DECISIONS") {
        let at = searched + found + "DECISIONS".len();
        searched = at;
        let rest = &text[at..];
        let rest = rest.strip_prefix(".md").unwrap_or(rest);
        let Some(mut tail) = rest.strip_prefix(" §") else {
            continue;
        };
        // One citation may name several items: `§3.5, §3.6`, `§3.5/§3.6`, `§3.5–§3.7`.
        loop {
            let number: String = tail
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let number = number.trim_end_matches('.').to_string();
            if !number.is_empty() {
                out.push((text.len() - tail.len() - '§'.len_utf8(), number.clone()));
            }
            let after = &tail[number.len()..];
            match [", §", "/§", " and §", "–§", "-§"]
                .iter()
                .find_map(|joint| after.strip_prefix(joint))
            {
                Some(next) => tail = next,
                None => break,
            }
        }
    }
    out
}

/// The documents `text` cites (see the module doc): the offset of each, the document's file name
/// or path, and the words as written.
fn documents(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (is_path_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    for (at, word) in words {
        let word = word.trim_end_matches(['.', '-']);
        let after = &text[at + word.len()..];
        let sectioned = after.trim_start_matches([' ', '.']).starts_with('§');
        let path = word.trim_start_matches("./");
        let name = path.rsplit('/').next().unwrap_or(path);
        let kebab = |s: &str| {
            s.contains('-')
                && !s.starts_with('-')
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        };
        if let Some(stem) = name.strip_suffix(".md") {
            let documentary = sectioned
                || path.starts_with("docs/")
                || path.starts_with("shared/")
                || !path.contains('/') && kebab(stem);
            if documentary && !stem.is_empty() {
                out.push((at, path.to_string(), word.to_string()));
            }
        } else if path.starts_with("shared/reference/") {
            out.push((at, path.to_string(), word.to_string()));
        } else if sectioned && kebab(word) {
            let shown = format!("{word} §");
            out.push((at, format!("{word}.md"), shown));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_are_read_with_their_siblings() {
        assert_eq!(cited("see DECISIONS §3.5."), vec!["3.5"]);
        assert_eq!(cited("DECISIONS §3.5/§3.6 and"), vec!["3.5", "3.6"]);
        assert_eq!(cited("(DECISIONS §12, §9.3)"), vec!["12", "9.3"]);
        assert!(cited("ai-layer §6.3").is_empty());
        assert_eq!(cited("DECISIONS §3.3–§3.5 and §4"), vec!["3.3", "3.5", "4"]);
        assert_eq!(cited("DECISIONS.md §7"), vec!["7"]);
        let text = "x DECISIONS §1, §22.5";
        let offsets: Vec<&str> = cited_at(text).iter().map(|(at, _)| &text[*at..]).collect();
        assert_eq!(offsets, ["§1, §22.5", "§22.5"]);
    }

    #[test]
    fn items_are_headings_and_numbered_entries() {
        let items =
            decision_items("## 3. Storage\n**3.5** Lines…\n### 9.3 Ids\n- 9.4 more\nText 7.1 no");
        let want: BTreeSet<String> = ["3", "3.5", "9.3", "9.4"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(items, want);
    }

    #[test]
    fn documents_are_cited_by_section_place_or_kebab_name() {
        let cited: Vec<String> = documents(
            "per coding-agent.md §9, ai-layer §6.3 and compaction-and-harness.md; \
             docs/PERFORMANCE.md, ./docs/X.md. shared/reference/session-layer.md \
             shared/tools/gen.py, AGENTS.md, notes.md, build/notes.md, RFC 9110 §5.6.7, \
             seed 001 §16, eventsource-stream's faults",
        )
        .into_iter()
        .map(|(_, document, _)| document)
        .collect();
        assert_eq!(
            cited,
            [
                "coding-agent.md",
                "ai-layer.md",
                "compaction-and-harness.md",
                "docs/PERFORMANCE.md",
                "docs/X.md",
                "shared/reference/session-layer.md",
            ]
        );
    }

    #[test]
    fn missing_documents_and_items_are_reported_on_their_lines() {
        let src =
            "//! The harness (compaction-and-\n//! harness.md §C.4), see docs/ARCHITECTURE.md.\n\
                   fn f() {\n    let _ = \"coding-agent.md §9\";\n}\n/// DECISIONS §3.5 and §9.9\n";
        let comments = rust_source::lex(src).comments;
        let items: BTreeSet<String> = ["3.5".to_string()].into();
        let mut repository = Repository::default();
        repository.insert("docs/ARCHITECTURE.md");
        let got: Vec<String> = missing(&comments, &items, &repository)
            .into_iter()
            .map(|(line, problem)| format!("{line}: {problem}"))
            .collect();
        assert_eq!(
            got,
            [
                "1: `compaction-and-harness.md` cites compaction-and-harness.md, which is not in the repository",
                "6: DECISIONS §9.9 is not an item of docs/DECISIONS.md",
            ]
        );
    }
}
