//! The library snippets of docs/USAGE.md for `arbor-session` and `arbor-agent` are the crates'
//! documentation examples, word for word, so `cargo test --doc` compiles and runs what the
//! guide shows.

use std::path::Path;

/// The body of each ```rust block in the USAGE section whose heading contains `heading`.
fn usage_blocks(usage: &str, heading: &str) -> Vec<String> {
    let start = usage
        .find(heading)
        .unwrap_or_else(|| panic!("USAGE.md has no section {heading:?}"));
    let section = &usage[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    let section = &section[..end];
    let mut blocks = Vec::new();
    let mut rest = section;
    while let Some(open) = rest.find("\n```rust\n") {
        let body = &rest[open + "\n```rust\n".len()..];
        let close = body.find("\n```").expect("closed block");
        blocks.push(body[..close + 1].to_string());
        rest = &body[close..];
    }
    blocks
}

/// The crate-level documentation of `lib.rs` as markdown.
fn crate_docs(lib: &Path) -> String {
    let text = std::fs::read_to_string(lib).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn usage_library_snippets_are_the_crate_doctests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let usage = std::fs::read_to_string(root.join("docs/USAGE.md")).unwrap();
    for (heading, lib) in [
        (
            "## Library: opening a session store with `arbor-session`",
            "crates/session/src/lib.rs",
        ),
        (
            "## Library: an agent with tools with `arbor-agent`",
            "crates/agent/src/lib.rs",
        ),
    ] {
        let blocks = usage_blocks(&usage, heading);
        assert!(!blocks.is_empty(), "no rust snippet under {heading:?}");
        let docs = crate_docs(&root.join(lib));
        // The first block is the crate example; later ones (other crates) are not checked.
        assert!(
            docs.contains(&blocks[0]),
            "the snippet under {heading:?} differs from the example in {lib}:\n{}",
            blocks[0]
        );
    }
}
