//! Prompt templates (DECISIONS §32.7–§32.9): each `*.md` file directly in a prompts folder is a
//! `/name` command whose text, after pi's argument substitutions, is sent as the prompt.
//!
//! Folders, first found wins a name: `--prompt-template` paths; in a trusted project
//! `.arbor/prompts` and `.pi/prompts`; then `<ARBOR_HOME>/prompts` and `~/.pi/agent/prompts`.

use std::path::{Path, PathBuf};

use super::frontmatter::Frontmatter;
use super::{markdown_children, read_text, Diagnostic, LoadOptions, Scope};

/// How much of the first line stands in for a missing description.
const DESCRIPTION_FROM_BODY: usize = 60;

/// One loaded template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The file name without `.md`.
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    /// The text after the frontmatter.
    pub body: String,
    pub file: PathBuf,
    pub scope: Scope,
}

impl Template {
    /// The prompt for `/name args`.
    pub fn expand(&self, args: &str) -> String {
        substitute(&self.body, &split_args(args))
    }
}

/// Finds every template per `opts`.
pub fn discover(opts: &LoadOptions, diags: &mut Vec<Diagnostic>) -> Vec<Template> {
    let mut files: Vec<(PathBuf, Scope)> = Vec::new();
    for raw in &opts.template_paths {
        let path = arbor_tools::path::resolve(raw, &opts.cwd);
        if path.is_dir() {
            files.extend(
                markdown_children(&path)
                    .into_iter()
                    .map(|p| (p, Scope::Flag)),
            );
        } else if path.is_file() && path.extension().is_some_and(|e| e == "md") {
            files.push((path, Scope::Flag));
        } else if path.is_file() {
            diags.push(Diagnostic {
                path,
                line: None,
                message: "--prompt-template: not a Markdown (.md) file".into(),
            });
        } else {
            diags.push(Diagnostic {
                path,
                line: None,
                message: "--prompt-template: no such file or folder".into(),
            });
        }
    }
    let mut dirs: Vec<(PathBuf, Scope)> = Vec::new();
    if opts.trusted {
        for d in [".arbor", ".pi"] {
            dirs.push((opts.cwd.join(d).join("prompts"), Scope::Project));
        }
    }
    dirs.push((opts.home.join("prompts"), Scope::User));
    if let Some(pi) = opts.pi_agent_dir() {
        dirs.push((pi.join("prompts"), Scope::User));
    }
    for (dir, scope) in dirs {
        files.extend(markdown_children(&dir).into_iter().map(|p| (p, scope)));
    }
    let mut out: Vec<Template> = Vec::new();
    for (file, scope) in files {
        let Some(t) = load_file(&file, scope, diags) else {
            continue;
        };
        if let Some(first) = out.iter().find(|o| o.name == t.name) {
            let same =
                std::fs::canonicalize(&first.file).ok() == std::fs::canonicalize(&t.file).ok();
            if !same {
                diags.push(Diagnostic {
                    path: t.file.clone(),
                    line: None,
                    message: format!(
                        "template /{} is taken by {}; this one is not loaded",
                        t.name,
                        first.file.display()
                    ),
                });
            }
            continue;
        }
        out.push(t);
    }
    out
}

fn load_file(path: &Path, scope: Scope, diags: &mut Vec<Diagnostic>) -> Option<Template> {
    let warn = |line, message: String| Diagnostic {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text = match read_text(path) {
        Ok(t) => t,
        Err(e) => {
            diags.push(warn(None, format!("cannot read: {e}")));
            return None;
        }
    };
    let fm = match Frontmatter::parse(&text) {
        Ok(f) => f,
        Err(p) => {
            diags.push(warn(
                Some(p.line),
                format!("{}; the template is not loaded", p.message),
            ));
            return None;
        }
    };
    let name = path.file_stem()?.to_string_lossy().into_owned();
    if name.is_empty() || name.contains(char::is_whitespace) {
        diags.push(warn(None, "a template name may not contain spaces".into()));
        return None;
    }
    let mut field = |key: &str| match fm.string(key) {
        Ok(v) => v,
        Err(p) => {
            diags.push(warn(Some(p.line), p.message));
            None
        }
    };
    let description = field("description").filter(|d| !d.is_empty());
    let argument_hint = field("argument-hint").filter(|d| !d.is_empty());
    let description = description.unwrap_or_else(|| {
        let first = fm.body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let short: String = first.chars().take(DESCRIPTION_FROM_BODY).collect();
        if first.chars().count() > DESCRIPTION_FROM_BODY {
            format!("{short}...")
        } else {
            short
        }
    });
    Some(Template {
        name,
        description,
        argument_hint,
        body: fm.body,
        file: path.to_path_buf(),
        scope,
    })
}

/// Splits arguments the way pi does: whitespace separates; a quote (`"` or `'`) opens quoting
/// only at the start of an argument; inside, a backslash before that same quote keeps it; a
/// quote never closed is kept as an ordinary character.
pub fn split_args(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut has_token = false;
    let mut quote: Option<(char, usize)> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some((q, start)) => {
                if c == '\\' && chars.get(i + 1) == Some(&q) {
                    cur.push(q);
                    i += 1;
                } else if c == q {
                    quote = None;
                } else {
                    cur.push(c);
                }
                if quote.is_some() && i + 1 >= chars.len() {
                    // Never closed: the quote was plain text; go on after it.
                    quote = None;
                    cur = q.to_string();
                    i = start;
                }
            }
            None if (c == '"' || c == '\'') && !has_token => {
                quote = Some((c, i));
                has_token = true;
                if i + 1 >= chars.len() {
                    cur.push(c);
                }
            }
            None if c.is_whitespace() => {
                if has_token {
                    out.push(std::mem::take(&mut cur));
                    has_token = false;
                }
            }
            None => {
                cur.push(c);
                has_token = true;
            }
        }
        i += 1;
    }
    if has_token {
        out.push(cur);
    }
    out
}

/// Reads a run of ASCII digits at `i`.
fn digits(chars: &[char], i: usize) -> (Option<usize>, usize) {
    let mut j = i;
    while j < chars.len() && chars[j].is_ascii_digit() {
        j += 1;
    }
    if j == i {
        return (None, i);
    }
    let n: String = chars[i..j].iter().collect();
    (n.parse().ok(), j)
}

/// Replaces `$1`…, `$@`, `$ARGUMENTS`, `${N:-default}`, `${@:-default}`,
/// `${ARGUMENTS:-default}`, `${@:N}` and `${@:N:L}` in one pass (values are not substituted
/// again).
pub fn substitute(body: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let chars: Vec<char> = body.chars().collect();
    let mut out = String::with_capacity(body.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '$' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let rest: String = chars[i + 1..chars.len().min(i + 11)].iter().collect();
        // `${…}` forms.
        if chars.get(i + 1) == Some(&'{') {
            if let Some(close) = chars[i + 2..].iter().position(|&c| c == '}') {
                let inner: String = chars[i + 2..i + 2 + close].iter().collect();
                if let Some(r) = braced(&inner, args, &all) {
                    out.push_str(&r);
                    i += close + 3;
                    continue;
                }
            }
        } else if rest.starts_with("ARGUMENTS") {
            out.push_str(&all);
            i += 10;
            continue;
        } else if rest.starts_with('@') {
            out.push_str(&all);
            i += 2;
            continue;
        } else if let (Some(n), end) = digits(&chars, i + 1) {
            out.push_str(nth(args, n));
            i = end;
            continue;
        }
        out.push('$');
        i += 1;
    }
    out
}

/// The `n`th argument (1-based), empty when missing.
fn nth(args: &[String], n: usize) -> &str {
    n.checked_sub(1)
        .and_then(|k| args.get(k))
        .map_or("", String::as_str)
}

/// The value of `${inner}`, `None` when it is not one of the forms.
fn braced(inner: &str, args: &[String], all: &str) -> Option<String> {
    if let Some((target, default)) = inner.split_once(":-") {
        let value = match target {
            "@" | "ARGUMENTS" => all,
            t if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) => {
                nth(args, t.parse().ok()?)
            }
            _ => return None,
        };
        return Some(if value.is_empty() {
            default.to_owned()
        } else {
            value.to_owned()
        });
    }
    let slice = inner.strip_prefix("@:")?;
    let (start, len) = match slice.split_once(':') {
        Some((s, l)) => (s, Some(l)),
        None => (slice, None),
    };
    let numeric = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
    if !numeric(start) || len.is_some_and(|l| !numeric(l)) {
        return None;
    }
    let start = start
        .parse::<usize>()
        .ok()?
        .saturating_sub(1)
        .min(args.len());
    let end = match len {
        Some(l) => start
            .saturating_add(l.parse::<usize>().ok()?)
            .min(args.len()),
        None => args.len(),
    };
    Some(args[start..end].join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn arguments_split_like_pi() {
        assert_eq!(split_args("a  b"), v(&["a", "b"]));
        assert_eq!(split_args("\"API compat\" x"), v(&["API compat", "x"]));
        assert_eq!(split_args("doesn't work"), v(&["doesn't", "work"]));
        assert_eq!(
            split_args(r#""the \"fast\" path""#),
            v(&["the \"fast\" path"])
        );
        assert_eq!(split_args("\"open end"), v(&["\"open", "end"]));
        assert_eq!(split_args("a \\n"), v(&["a", "\\n"]));
        assert!(split_args("   ").is_empty());
    }

    #[test]
    fn substitutions_follow_pis_table() {
        let a = v(&["one", "two", "three"]);
        assert_eq!(substitute("$1-$2-$4.", &a), "one-two-.");
        assert_eq!(
            substitute("[$@] [$ARGUMENTS]", &a),
            "[one two three] [one two three]"
        );
        assert_eq!(substitute("${1:-x} ${5:-fallback}", &a), "one fallback");
        assert_eq!(
            substitute("${@:2} | ${@:2:1} | ${@:9}", &a),
            "two three | two | "
        );
        assert_eq!(substitute("${@:-none}", &[]), "none");
        assert_eq!(substitute("${ARGUMENTS:-none}", &a), "one two three");
        assert_eq!(substitute("cost $ 5, ${x}, $", &a), "cost $ 5, ${x}, $");
        // Values are not substituted again.
        assert_eq!(substitute("$1", &v(&["$2"])), "$2");
    }
}
