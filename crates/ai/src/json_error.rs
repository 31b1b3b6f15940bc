//! JavaScript's `JSON.parse` error messages (V8's wording), for text that failed to parse.
//!
//! pi shows these messages to the user and, in a tool call's `argumentsError`, to the model.
//! Arbor parses with serde and, only when that fails, walks the text once more to describe the
//! first error the way V8 would: the same message template and the same position (in UTF-16
//! code units).

/// V8's message for the first error in `text`, or `None` when the text is valid JSON.
pub fn js_json_parse_error(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut p = Walker {
        chars: &chars,
        i: 0,
    };
    let result = p.value().and_then(|()| {
        p.skip_ws();
        if p.i < chars.len() {
            Err(SyntaxError(format!(
                "Unexpected non-whitespace character after JSON at position {}",
                p.utf16_pos()
            )))
        } else {
            Ok(())
        }
    });
    result.err().map(|SyntaxError(message)| message)
}

/// The first syntax error of a text, in V8's words.
#[derive(Debug)]
struct SyntaxError(String);

struct Walker<'a> {
    chars: &'a [char],
    i: usize,
}

/// How many JSON values deep the walker goes before giving up (V8 would overflow its stack
/// far later; serde stops at 128 anyway, so deeper texts never reach here as valid).
const MAX_DEPTH: usize = 512;

impl Walker<'_> {
    fn utf16_pos(&self) -> usize {
        self.chars[..self.i.min(self.chars.len())]
            .iter()
            .map(|c| c.len_utf16())
            .sum()
    }

    fn at_text(&self, template: &str) -> String {
        format!("{template} in JSON at position {}", self.utf16_pos())
    }

    fn at(&self, template: &str) -> SyntaxError {
        SyntaxError(self.at_text(template))
    }

    fn unexpected(&self) -> SyntaxError {
        SyntaxError(self.unexpected_text())
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.i += 1;
        }
    }

    /// V8's generic message for an unexpected token (where a value was expected, and at the
    /// colon of every property after the first: V8 gives that one no message of its own).
    fn unexpected_text(&self) -> String {
        match self.peek() {
            None => "Unexpected end of JSON input".to_string(),
            Some('-' | '0'..='9') => self.at_text("Unexpected number"),
            Some('"') => self.at_text("Unexpected string"),
            Some(c) => {
                const CONTEXT: usize = 10;
                let len = self.chars.len();
                let source: String = if len < CONTEXT * 2 + 1 {
                    return format!(
                        "Unexpected token '{c}', \"{}\" is not valid JSON",
                        self.chars.iter().collect::<String>()
                    );
                } else {
                    let start = self.i.saturating_sub(CONTEXT);
                    let end = (self.i + CONTEXT).min(len);
                    let excerpt: String = self.chars[start..end].iter().collect();
                    match (start == 0, end == len) {
                        (true, _) => format!("\"{excerpt}\"..."),
                        (false, true) => format!("...\"{excerpt}\""),
                        (false, false) => format!("...\"{excerpt}\"..."),
                    }
                };
                format!("Unexpected token '{c}', {source} is not valid JSON")
            }
        }
    }

    fn value(&mut self) -> Result<(), SyntaxError> {
        self.value_at(0)
    }

    fn value_at(&mut self, depth: usize) -> Result<(), SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(SyntaxError("Maximum call stack size exceeded".to_string()));
        }
        self.skip_ws();
        match self.peek() {
            Some('{') => self.object(depth),
            Some('[') => self.array(depth),
            Some('"') => self.string(),
            Some('-' | '0'..='9') => self.number(),
            Some('t') => self.literal("true"),
            Some('f') => self.literal("false"),
            Some('n') => self.literal("null"),
            _ => Err(self.unexpected()),
        }
    }

    fn literal(&mut self, word: &str) -> Result<(), SyntaxError> {
        for expected in word.chars() {
            if self.peek() != Some(expected) {
                return Err(self.unexpected());
            }
            self.i += 1;
        }
        Ok(())
    }

    fn object(&mut self, depth: usize) -> Result<(), SyntaxError> {
        self.i += 1;
        self.skip_ws();
        if self.peek() == Some('}') {
            self.i += 1;
            return Ok(());
        }
        let mut first = true;
        loop {
            if self.peek() != Some('"') {
                return Err(self.at(if first {
                    "Expected property name or '}'"
                } else {
                    "Expected double-quoted property name"
                }));
            }
            self.string()?;
            self.skip_ws();
            if self.peek() != Some(':') {
                return Err(if first {
                    self.at("Expected ':' after property name")
                } else {
                    self.unexpected()
                });
            }
            self.i += 1;
            first = false;
            self.value_at(depth + 1)?;
            self.skip_ws();
            match self.peek() {
                Some(',') => {
                    self.i += 1;
                    self.skip_ws();
                }
                Some('}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.at("Expected ',' or '}' after property value")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), SyntaxError> {
        self.i += 1;
        self.skip_ws();
        if self.peek() == Some(']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.value_at(depth + 1)?;
            self.skip_ws();
            match self.peek() {
                Some(',') => self.i += 1,
                Some(']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.at("Expected ',' or ']' after array element")),
            }
        }
    }

    fn string(&mut self) -> Result<(), SyntaxError> {
        self.i += 1;
        loop {
            match self.peek() {
                None => return Err(self.at("Unterminated string")),
                Some('"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.i += 1;
                    match self.peek() {
                        None => return Err(self.at("Unterminated string")),
                        Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => self.i += 1,
                        Some('u') => {
                            self.i += 1;
                            for _ in 0..4 {
                                match self.peek() {
                                    Some(c) if c.is_ascii_hexdigit() => self.i += 1,
                                    None => return Err(self.at("Unterminated string")),
                                    Some(_) => return Err(self.at("Bad Unicode escape")),
                                }
                            }
                        }
                        Some(_) => return Err(self.at("Bad escaped character")),
                    }
                }
                Some(c) if (c as u32) < 0x20 => {
                    return Err(self.at("Bad control character in string literal"))
                }
                Some(_) => self.i += 1,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<(), SyntaxError> {
        if self.peek() == Some('-') {
            self.i += 1;
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return Err(self.at("No number after minus sign"));
            }
        }
        if self.peek() == Some('0') {
            self.i += 1;
        } else {
            self.digits();
        }
        if self.peek() == Some('.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(self.at("Unterminated fractional number"));
            }
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            self.i += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(self.at("Exponent part is missing a number"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::js_json_parse_error as e;

    #[test]
    fn messages_match_v8() {
        assert_eq!(e(r#"{"a": [1, {"b": null}]}"#), None);
        assert_eq!(e(""), Some("Unexpected end of JSON input".into()));
        assert_eq!(
            e(r#"{"candidates": ["#),
            Some("Unexpected end of JSON input".into())
        );
        assert_eq!(
            e(r#"{"p": 1"#),
            Some("Expected ',' or '}' after property value in JSON at position 7".into())
        );
        assert_eq!(
            e(r#"{"type":"content_block_del"#),
            Some("Unterminated string in JSON at position 26".into())
        );
        assert_eq!(
            e("b3BhcXVl"),
            Some("Unexpected token 'b', \"b3BhcXVl\" is not valid JSON".into())
        );
        assert_eq!(
            e("[1,2] x"),
            Some("Unexpected non-whitespace character after JSON at position 6".into())
        );
        assert_eq!(
            e(r#"{"k": "😀", "x" 1}"#),
            Some("Unexpected number in JSON at position 16".into())
        );
        assert_eq!(
            e(r#"{"a":1,}"#),
            Some("Expected double-quoted property name in JSON at position 7".into())
        );
        assert_eq!(
            e("[1,]"),
            Some("Unexpected token ']', \"[1,]\" is not valid JSON".into())
        );
        assert_eq!(
            e("abcdefghijklmnopqrstuvwxyz"),
            Some("Unexpected token 'a', \"abcdefghij\"... is not valid JSON".into())
        );
        assert_eq!(e("tru"), Some("Unexpected end of JSON input".into()));
        assert_eq!(
            e(r#"{"a":1,"b""#),
            Some("Unexpected end of JSON input".into())
        );
        assert_eq!(
            e(r#"{"a" 1"#),
            Some("Expected ':' after property name in JSON at position 5".into())
        );
        assert_eq!(
            e(r#"{"a":1,"b" 2"#),
            Some("Unexpected number in JSON at position 11".into())
        );
        assert_eq!(e("[1,"), Some("Unexpected end of JSON input".into()));
        assert_eq!(
            e("[1,2 x"),
            Some("Expected ',' or ']' after array element in JSON at position 5".into())
        );
        assert_eq!(
            e("1e"),
            Some("Exponent part is missing a number in JSON at position 2".into())
        );
    }
}
