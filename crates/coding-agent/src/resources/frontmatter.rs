//! The YAML frontmatter of SKILL.md files and prompt templates: a block between a first line
//! `---` and the next line `---`, parsed with a YAML crate (DECISIONS §32.2). Problems carry the
//! file's line number so a diagnostic can point at it.

use serde_norway::{Mapping, Value};

/// A problem at one line of the file (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProblem {
    pub line: usize,
    pub message: String,
}

/// A file split into its frontmatter fields and its body.
#[derive(Debug, Clone, Default)]
pub struct Frontmatter {
    fields: Mapping,
    /// (key, line) of each top-level key, for diagnostics.
    key_lines: Vec<(String, usize)>,
    pub body: String,
}

impl Frontmatter {
    /// Splits `text`. A file without a leading `---` line has no fields and is all body.
    pub fn parse(text: &str) -> Result<Frontmatter, LineProblem> {
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
        let mut lines = text.split_inclusive('\n');
        let first = lines.next().unwrap_or("");
        if first.trim_end() != "---" {
            return Ok(Frontmatter {
                body: text.to_owned(),
                ..Default::default()
            });
        }
        let mut yaml = String::new();
        let mut consumed = first.len();
        let mut closed = false;
        for l in lines {
            consumed += l.len();
            if l.trim_end() == "---" {
                closed = true;
                break;
            }
            yaml.push_str(l);
        }
        if !closed {
            return Err(LineProblem {
                line: 1,
                message: "the frontmatter opened here is never closed with a '---' line".into(),
            });
        }
        let key_lines = yaml
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.starts_with([' ', '\t', '#', '-']) && l.contains(':'))
            .filter_map(|(i, l)| {
                let key = l.split(':').next()?.trim().trim_matches(['"', '\'']);
                Some((key.to_owned(), i + 2))
            })
            .collect();
        let fields = if yaml.trim().is_empty() {
            Mapping::new()
        } else {
            // One blank line in front makes the parser's line numbers the file's.
            match serde_norway::from_str::<Value>(&format!("\n{yaml}")) {
                Ok(Value::Mapping(m)) => m,
                Ok(Value::Null) => Mapping::new(),
                Ok(_) => {
                    return Err(LineProblem {
                        line: 2,
                        message: "the frontmatter must be a YAML mapping (key: value lines)".into(),
                    })
                }
                Err(e) => {
                    let line = e.location().map_or(2, |l| l.line());
                    return Err(LineProblem {
                        line,
                        message: format!("invalid YAML frontmatter: {e}"),
                    });
                }
            }
        };
        Ok(Frontmatter {
            fields,
            key_lines,
            body: text[consumed..].to_owned(),
        })
    }

    /// The line of a top-level key (the opening `---` when it cannot be found).
    pub fn line_of(&self, key: &str) -> usize {
        self.key_lines
            .iter()
            .find(|(k, _)| k == key)
            .map_or(1, |(_, l)| *l)
    }

    /// A string field: `Ok(None)` when absent or null, a problem when it has another type.
    pub fn string(&self, key: &str) -> Result<Option<String>, LineProblem> {
        match self.fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(LineProblem {
                line: self.line_of(key),
                message: format!("'{key}' must be a string"),
            }),
        }
    }

    /// A boolean field, `false` when absent; a problem when it has another type.
    pub fn flag(&self, key: &str) -> Result<bool, LineProblem> {
        match self.fields.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(LineProblem {
                line: self.line_of(key),
                message: format!("'{key}' must be true or false"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_body_and_lines() {
        let f = Frontmatter::parse("---\nname: a\ndescription: \"b: c\"\n---\nBody\n").unwrap();
        assert_eq!(f.string("name").unwrap().as_deref(), Some("a"));
        assert_eq!(f.string("description").unwrap().as_deref(), Some("b: c"));
        assert_eq!(f.line_of("description"), 3);
        assert_eq!(f.body, "Body\n");
        let plain = Frontmatter::parse("just text").unwrap();
        assert_eq!(plain.body, "just text");
        assert_eq!(plain.string("name").unwrap(), None);
    }

    #[test]
    fn problems_name_the_line() {
        let e = Frontmatter::parse("---\nname: a\ndescription: [unclosed\n---\n").unwrap_err();
        assert!(e.line >= 3, "{e:?}");
        let e = Frontmatter::parse("---\nname: a\n").unwrap_err();
        assert_eq!(e.line, 1);
        let f = Frontmatter::parse("---\nname: a\nname2: [1]\n---\n").unwrap();
        assert_eq!(f.string("name2").unwrap_err().line, 3);
    }
}
