//! A Rust source file as the checks read it: tokens of code (string and char literals kept as
//! one opaque token each, so a brace or `::` inside a string never counts) and the text of its
//! comments, each with its 1-based line.
//!
//! Hand-written rather than a parser crate: xtask depends on no Rust parser, and the checks need
//! only paths, item heads and bracket depth, which a token stream gives exactly.

/// What a token is; the checks only ever look at identifiers and punctuation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An identifier, keyword or number.
    Ident,
    /// One punctuation character, or one of `::`, `->`, `=>`.
    Punct,
    /// A string, byte string or char literal (its text is not kept apart from the token).
    Literal,
    /// A lifetime or loop label (`'a`).
    Lifetime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: Kind,
    pub text: &'a str,
    pub line: usize,
}

impl Token<'_> {
    pub fn is(&self, text: &str) -> bool {
        self.text == text && self.kind != Kind::Literal
    }
}

/// One line of one comment (`//`, `///`, `//!` or a line of a `/* */` block), without its markers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommentLine {
    pub line: usize,
    pub text: String,
}

pub struct Lexed<'a> {
    pub tokens: Vec<Token<'a>>,
    pub comments: Vec<CommentLine>,
}

/// Splits `text` into code tokens and comment lines.
pub fn lex(text: &str) -> Lexed<'_> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut comments = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        let start_line = line;
        match b {
            b'\n' => {
                line += 1;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                let body = text[i + 2..end].trim_start_matches(['/', '!']);
                comments.push(CommentLine {
                    line,
                    text: body.trim().to_string(),
                });
                i = end;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = block_comment(text, i, &mut line, &mut comments);
                continue;
            }
            b'"' => {
                i = quoted(bytes, i + 1, b'"', &mut line);
                tokens.push(token(Kind::Literal, text, start, i, start_line));
                continue;
            }
            b'\'' => {
                let (end, kind) = quote_or_lifetime(text, i, &mut line);
                i = end;
                tokens.push(token(kind, text, start, i, start_line));
                continue;
            }
            _ => {}
        }
        if let Some(end) = raw_or_byte_literal(text, i, &mut line) {
            i = end;
            tokens.push(token(Kind::Literal, text, start, i, start_line));
        } else if b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80 && is_ident_start(text, i) {
            i = ident_end(text, i);
            tokens.push(token(Kind::Ident, text, start, i, start_line));
        } else {
            let pair = text.get(i..i + 2).unwrap_or("");
            let len = if matches!(pair, "::" | "->" | "=>") {
                2
            } else {
                text[i..].chars().next().map_or(1, char::len_utf8)
            };
            i += len;
            tokens.push(token(Kind::Punct, text, start, i, start_line));
        }
    }
    Lexed { tokens, comments }
}

fn token(kind: Kind, text: &str, start: usize, end: usize, line: usize) -> Token<'_> {
    Token {
        kind,
        text: &text[start..end],
        line,
    }
}

fn is_ident_start(text: &str, at: usize) -> bool {
    text[at..].chars().next().is_some_and(char::is_alphabetic)
}

fn ident_end(text: &str, start: usize) -> usize {
    text[start..]
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(text.len(), |(n, _)| start + n)
}

/// A `/* */` comment (nested ones included) starting at `start`; returns the index after it.
fn block_comment(
    text: &str,
    start: usize,
    line: &mut usize,
    comments: &mut Vec<CommentLine>,
) -> usize {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = start;
    let mut segment = start + 2;
    while i < bytes.len() {
        if text[i..].starts_with("/*") {
            depth += 1;
            i += 2;
        } else if text[i..].starts_with("*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                push_block_line(&text[segment..i - 2], *line, comments);
                return i;
            }
        } else if bytes[i] == b'\n' {
            push_block_line(&text[segment..i], *line, comments);
            *line += 1;
            i += 1;
            segment = i;
        } else {
            i += 1;
        }
    }
    push_block_line(&text[segment.min(bytes.len())..], *line, comments);
    bytes.len()
}

fn push_block_line(text: &str, line: usize, comments: &mut Vec<CommentLine>) {
    let text = text.trim().trim_start_matches(['*', '!']).trim();
    comments.push(CommentLine {
        line,
        text: text.to_string(),
    });
}

/// The index after a quoted literal whose body starts at `i` and ends at `close` (escapes kept).
fn quoted(bytes: &[u8], mut i: usize, close: u8, line: &mut usize) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                if bytes.get(i + 1) == Some(&b'\n') {
                    *line += 1;
                }
                i += 2;
            }
            b'\n' => {
                *line += 1;
                i += 1;
            }
            b if b == close => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// A char literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`) at `start`.
fn quote_or_lifetime(text: &str, start: usize, line: &mut usize) -> (usize, Kind) {
    let rest = &text[start + 1..];
    if rest.starts_with('\\') {
        return (
            quoted(text.as_bytes(), start + 1, b'\'', line),
            Kind::Literal,
        );
    }
    let Some(first) = rest.chars().next() else {
        return (text.len(), Kind::Punct);
    };
    let after = start + 1 + first.len_utf8();
    if text[after..].starts_with('\'') {
        return (after + 1, Kind::Literal);
    }
    if first.is_alphabetic() || first == '_' {
        return (ident_end(text, start + 1), Kind::Lifetime);
    }
    (start + 1, Kind::Punct)
}

/// Raw strings (`r"…"`, `r#"…"#`, `br"…"`), byte and C strings (`b"…"`, `c"…"`) and byte chars
/// (`b'x'`) starting at `i`; `None` when `i` starts none of them (a raw identifier `r#x` included).
fn raw_or_byte_literal(text: &str, i: usize, line: &mut usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let prefix_ok = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
    if !prefix_ok {
        return None;
    }
    let rest = &text[i..];
    let raw_at = if rest.starts_with("br") || rest.starts_with("cr") {
        Some(i + 2)
    } else if rest.starts_with('r') {
        Some(i + 1)
    } else {
        None
    };
    if let Some(mut j) = raw_at {
        let hashes = text[j..].bytes().take_while(|b| *b == b'#').count();
        j += hashes;
        if bytes.get(j) != Some(&b'"') {
            return None;
        }
        let close = format!("\"{}", "#".repeat(hashes));
        let body = j + 1;
        let end = text[body..].find(&close).map_or(text.len(), |n| body + n);
        *line += text[body..end].matches('\n').count();
        return Some((end + close.len()).min(text.len()));
    }
    if rest.starts_with("b\"") || rest.starts_with("c\"") {
        return Some(quoted(bytes, i + 2, b'"', line));
    }
    if rest.starts_with("b'") {
        return Some(quoted(bytes, i + 2, b'\'', line));
    }
    None
}

/// Whether the attribute whose inner tokens are `inner` (between `#[` and `]`) compiles its item
/// for tests only: `cfg(test)` or `cfg(all(test, …))`.
pub fn is_test_cfg(inner: &[Token<'_>]) -> bool {
    let joined: String = inner.iter().map(|t| t.text).collect();
    if joined == "cfg(test)" {
        return true;
    }
    joined
        .strip_prefix("cfg(all(")
        .and_then(|rest| rest.strip_suffix("))"))
        .is_some_and(|list| list.split(',').any(|part| part == "test"))
}

/// The index after the attribute starting at `at` (`#[…]` or `#![…]`), and its inner tokens;
/// `None` when `at` starts no attribute.
pub fn attribute_at<'t, 'a>(
    tokens: &'t [Token<'a>],
    at: usize,
) -> Option<(usize, &'t [Token<'a>])> {
    if !tokens.get(at)?.is("#") {
        return None;
    }
    let mut open = at + 1;
    if tokens.get(open)?.is("!") {
        open += 1;
    }
    if !tokens.get(open)?.is("[") {
        return None;
    }
    let close = matching_close(tokens, open)?;
    Some((close + 1, &tokens[open + 1..close]))
}

/// The index of the bracket closing the one at `open` (`(`, `[` or `{`; the others nest inside).
pub fn matching_close(tokens: &[Token<'_>], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        if t.kind != Kind::Punct {
            continue;
        }
        match t.text {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The index after the item starting at `start`: its `;` at bracket depth 0, or the `}` that
/// closes its body. Stops before a closing bracket that belongs to the enclosing block.
fn item_end(tokens: &[Token<'_>], start: usize) -> usize {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(start) {
        if t.kind != Kind::Punct {
            continue;
        }
        match t.text {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                let Some(d) = depth.checked_sub(1) else {
                    return i;
                };
                depth = d;
                if depth == 0 && t.text == "}" {
                    return i + 1;
                }
            }
            ";" if depth == 0 => return i + 1,
            _ => {}
        }
    }
    tokens.len()
}

/// The index of the bracket that closes the block `at` lies in (the end for the file).
fn block_end(tokens: &[Token<'_>], at: usize) -> usize {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(at) {
        match t.text {
            "(" | "[" | "{" if t.kind == Kind::Punct => depth += 1,
            ")" | "]" | "}" if t.kind == Kind::Punct => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return i,
            },
            _ => {}
        }
    }
    tokens.len()
}

/// The tokens of non-test code: every item (module, function, `use`, impl, static…) under a
/// `#[cfg(test)]` attribute is left out with its attributes.
pub fn without_test_items<'a>(tokens: &[Token<'a>]) -> Vec<Token<'a>> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let Some((mut after, inner)) = attribute_at(tokens, i) else {
            out.push(tokens[i]);
            i += 1;
            continue;
        };
        if is_test_cfg(inner) && tokens.get(i + 1).is_some_and(|t| t.is("!")) {
            // `#![cfg(test)]`: the whole enclosing module is test code.
            i = block_end(tokens, after);
            continue;
        }
        let mut test = is_test_cfg(inner);
        // The item's other attributes belong to it too.
        while let Some((next, inner)) = attribute_at(tokens, after) {
            test |= is_test_cfg(inner);
            after = next;
        }
        if test {
            i = item_end(tokens, after);
        } else {
            out.extend_from_slice(&tokens[i..after]);
            i = after;
        }
    }
    out
}

/// The line of the first `#[cfg(test)]` attribute that stands on a module (`mod tests { … }` or
/// `mod tests;`): the code of the file ends just above it.
pub fn test_module_line(tokens: &[Token<'_>]) -> Option<usize> {
    let mut i = 0;
    while i < tokens.len() {
        let Some((mut after, inner)) = attribute_at(tokens, i) else {
            i += 1;
            continue;
        };
        let mut test = is_test_cfg(inner);
        while let Some((next, inner)) = attribute_at(tokens, after) {
            test |= is_test_cfg(inner);
            after = next;
        }
        if test && is_mod_item(tokens, after) {
            return Some(tokens[i].line);
        }
        i = after;
    }
    None
}

/// Whether a `mod` item (with any visibility) starts at `at`.
pub fn is_mod_item(tokens: &[Token<'_>], at: usize) -> bool {
    let mut j = at;
    if tokens.get(j).is_some_and(|t| t.is("pub")) {
        j += 1;
        if tokens.get(j).is_some_and(|t| t.is("(")) {
            match matching_close(tokens, j) {
                Some(close) => j = close + 1,
                None => return false,
            }
        }
    }
    tokens.get(j).is_some_and(|t| t.is("mod"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        lex(text)
            .tokens
            .iter()
            .map(|t| t.text.to_string())
            .collect()
    }

    #[test]
    fn literals_and_comments_hide_their_contents() {
        let src = "let a = \"{ crate::x }\"; // crate::y\nlet b = r#\"\"#; /* a\n b */ 'c'; '\\n'; x::<'a>";
        let lexed = lex(src);
        let idents: Vec<&str> = lexed
            .tokens
            .iter()
            .filter(|t| t.kind == Kind::Ident)
            .map(|t| t.text)
            .collect();
        assert_eq!(idents, ["let", "a", "let", "b", "x"]);
        assert_eq!(
            lexed.comments,
            vec![
                CommentLine {
                    line: 1,
                    text: "crate::y".into()
                },
                CommentLine {
                    line: 2,
                    text: "a".into()
                },
                CommentLine {
                    line: 3,
                    text: "b".into()
                },
            ]
        );
        let last = lexed.tokens.last().map(|t| (t.text, t.line));
        assert_eq!(last, Some((">", 3)));
    }

    #[test]
    fn paths_and_arrows_are_single_tokens() {
        assert_eq!(
            texts("fn f() -> a::B { x => 1 }"),
            ["fn", "f", "(", ")", "->", "a", "::", "B", "{", "x", "=>", "1", "}"]
        );
        assert_eq!(
            texts("r#type b'x' br\"y\""),
            ["r", "#", "type", "b'x'", "br\"y\""]
        );
    }

    #[test]
    fn test_items_are_left_out() {
        let src = "use a::b;\n#[cfg(test)]\nuse c::d;\n#[cfg(test)]\n#[allow(x)]\nimpl X { fn f() {} }\n\
                   #[cfg(all(test, unix))]\nstatic S: T = T::new(|| { 1 });\nfn keep() {}\n\
                   #[cfg(not(test))]\nfn also() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n";
        let lexed = lex(src);
        let kept: Vec<&str> = without_test_items(&lexed.tokens)
            .iter()
            .map(|t| t.text)
            .collect();
        assert_eq!(
            kept.join(" "),
            "use a :: b ; fn keep ( ) { } # [ cfg ( not ( test ) ) ] fn also ( ) { }"
        );
        assert_eq!(test_module_line(&lexed.tokens), Some(12));
        let lexed = lex("mod a {\n    #![cfg(test)]\n    use x;\n}\nfn b() {}\n");
        let kept: Vec<&str> = without_test_items(&lexed.tokens)
            .iter()
            .map(|t| t.text)
            .collect();
        assert_eq!(kept.join(" "), "mod a { } fn b ( ) { }");
    }
}
