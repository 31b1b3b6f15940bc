//! Typed errors (DECISIONS §8.9): no library code of a crate under `crates/` carries an error as
//! a bare `String`. Flagged: a `Result<…, String>` (also `std::result::Result`, and nested, as in
//! `Option<Result<T, String>>`) in a function's signature (any visibility, trait methods
//! included, signatures over several lines too; parameters and callbacks as well as the return
//! type), in a type alias, or in a struct or enum field; each one found is a problem. Test code
//! (`#[cfg(test)]` items) is not read.

use std::path::Path;

use super::rust_source::{self, matching_close, Kind, Token};

/// Every `Result<…, String>` in the `src/` code of the crates under `crates/`.
pub fn check(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for krate in super::crate_dirs(root) {
        if krate.file_name().is_some_and(|n| n == "xtask") {
            continue;
        }
        super::rust_files(&krate.join("src"), &mut files);
    }
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
        for (line, what) in string_errors(&text) {
            problems.push(format!(
                "{}:{line}: {what} carries a Result<_, String>; give it a typed error",
                super::relative(root, &file)
            ));
        }
    }
    problems
}

/// Each `Result<…, String>` in a signature, alias or field of `text`'s non-test code: its line
/// and the item (`fn parse`, `type Alias`, `a field of Config`).
pub fn string_errors(text: &str) -> Vec<(usize, String)> {
    let lexed = rust_source::lex(text);
    let tokens = rust_source::without_test_items(&lexed.tokens);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i];
        let name = tokens.get(i + 1).filter(|n| n.kind == Kind::Ident);
        let what = match (t.text, name) {
            ("fn", Some(name)) if t.kind == Kind::Ident => {
                signature(&tokens, i + 2).map(|sig| (sig, format!("fn {}", name.text)))
            }
            ("type", Some(name)) if t.kind == Kind::Ident => {
                let end = position(&tokens, i, ";");
                let eq = position(&tokens[..end], i, "=");
                Some((&tokens[eq.min(end)..end], format!("type {}", name.text)))
            }
            ("struct" | "enum" | "union", Some(name)) if t.kind == Kind::Ident => {
                item_body(&tokens, i + 2).map(|body| (body, format!("a field of {}", name.text)))
            }
            _ => None,
        };
        if let Some((types, what)) = what {
            out.extend(
                string_results(types)
                    .into_iter()
                    .map(|line| (line, what.clone())),
            );
        }
        i += 1;
    }
    out
}

/// The index of the first `text` at or after `from` (the slice's length when there is none).
fn position(tokens: &[Token<'_>], from: usize, text: &str) -> usize {
    tokens
        .iter()
        .skip(from)
        .position(|t| t.is(text))
        .map_or(tokens.len(), |n| from + n)
}

/// The signature of the function whose generics or parameters start at `at`: its generics,
/// parameters and return type, up to its body or `;`.
fn signature<'t, 'a>(tokens: &'t [Token<'a>], at: usize) -> Option<&'t [Token<'a>]> {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(at) {
        if t.kind != Kind::Punct {
            continue;
        }
        match t.text {
            "(" | "[" | "<" => depth += 1,
            ")" | "]" | ">" => depth = depth.saturating_sub(1),
            "{" | ";" if depth == 0 => return Some(&tokens[at..i]),
            _ => {}
        }
    }
    None
}

/// The body of a struct, enum or union whose generics start at `at`: the tokens inside its
/// `{}` or `()`.
fn item_body<'t, 'a>(tokens: &'t [Token<'a>], at: usize) -> Option<&'t [Token<'a>]> {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(at) {
        match t.text {
            "<" => depth += 1,
            ">" => depth = depth.saturating_sub(1),
            ";" if depth == 0 => return None,
            "{" | "(" if depth == 0 && t.kind == Kind::Punct => {
                let close = matching_close(tokens, i)?;
                return Some(&tokens[i + 1..close]);
            }
            _ => {}
        }
    }
    None
}

/// The line of each `Result<…, String>` in `tokens`.
fn string_results(tokens: &[Token<'_>]) -> Vec<usize> {
    let mut lines = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if !(t.is("Result") && tokens.get(i + 1).is_some_and(|n| n.is("<"))) {
            continue;
        }
        let args = generic_arguments(tokens, i + 1);
        let is_string = args.get(1).is_some_and(|error| {
            error.last().is_some_and(|t| t.is("String"))
                && error.iter().all(|t| t.kind == Kind::Ident || t.is("::"))
        });
        if is_string {
            lines.push(t.line);
        }
    }
    lines
}

/// The top-level arguments of the generic list opening at `open` (a `<`), each as its tokens.
fn generic_arguments<'t, 'a>(tokens: &'t [Token<'a>], open: usize) -> Vec<&'t [Token<'a>]> {
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut start = open + 1;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        if t.kind != Kind::Punct {
            continue;
        }
        match t.text {
            "<" | "(" | "[" => depth += 1,
            ">" | ")" | "]" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    args.push(&tokens[start..i]);
                    break;
                }
            }
            "," if depth == 1 => {
                args.push(&tokens[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_errors_are_found_in_signatures_aliases_and_fields() {
        let text = "pub fn a() -> Result<u8, String> {\n}\npub(crate) fn b() -> Result<u8, String> {}\n\
                    pub async fn c(\n    x: u8,\n) -> Result<Vec<String>, Error> {\n}\n\
                    pub fn d<T, F: Fn(u8)>(f: impl Fn() -> Result<T, String>) -> Result<T, AiError> {}\n\
                    fn e<T: Into<u8>>(\n    x: T,\n) -> Option<std::result::Result<(), std::string::String>>\nwhere T: Copy {}\n\
                    type Alias<T> = Result<T, String>;\n\
                    struct S {\n    ok: Result<u8, Error>,\n    bad: Vec<Result<(), String>>,\n}\n\
                    enum E { A(Result<u8, String>), B(Result<(), String>) }\n\
                    trait T { fn t(&self) -> Result<(), String>; }\n\
                    fn f() -> Result<HashMap<String, u8>, Error> { let x: Result<u8, String> = Ok(1); }\n\
                    #[cfg(test)]\nmod tests {\n    fn g() -> Result<(), String> {}\n}\n";
        let got: Vec<String> = string_errors(text)
            .into_iter()
            .map(|(line, what)| format!("{line} {what}"))
            .collect();
        assert_eq!(
            got,
            [
                "1 fn a",
                "3 fn b",
                "8 fn d",
                "11 fn e",
                "13 type Alias",
                "16 a field of S",
                "18 a field of E",
                "18 a field of E",
                "19 fn t",
            ]
        );
    }
}
