//! Pickers: full-screen lists with search that return one choice.
//!
//! - [`session`]: `/resume` and `-r` (current dir / all, threaded by `parentSession`, delete).
//! - [`model`]: `/model` over the catalogue and `models.json`.
//! - [`search`]: `/search`, full-text search over every session and branch.

pub mod model;
pub mod search;
pub mod session;

/// Lower-cased search words; an entry matches when its text contains every one.
pub(crate) fn tokens(query: &str) -> Vec<String> {
    query
        .to_lowercase()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

pub(crate) fn matches(text: &str, tokens: &[String]) -> bool {
    if tokens.is_empty() {
        return true;
    }
    let text = text.to_lowercase();
    tokens.iter().all(|t| text.contains(t.as_str()))
}
