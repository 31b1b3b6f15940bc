//! The system prompt: named sections in pi's order, the preamble as
//! plain text and every other section wrapped as `<name>…</name>`, joined by blank lines (DECISIONS §22.23). The
//! wording is Arbor's own. Context files follow §11.4: the global one first, then each
//! directory from the filesystem root down to the cwd; in each directory the first of
//! `AGENTS.override.md`, `AGENTS.md`, `AGENTS.MD`, `CLAUDE.md`, `CLAUDE.MD` that is a regular
//! file wins. No date or time goes in, so the prompt (and the provider's cache) stays stable.

use std::path::{Path, PathBuf};

use crate::files::{read_bounded, Bounded, FileError, FileKind, ProjectFiles};

/// Context file names in the order one directory is searched.
pub const CONTEXT_FILE_NAMES: [&str; 5] = [
    "AGENTS.override.md",
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
];

const PREAMBLE: &str =
    "You are Arbor, a coding agent working in the user's project. Read code, run \
    commands and change files to get the user's task done.";

/// One loaded context file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Where the file was found.
    pub path: PathBuf,
    /// Its text (a cut noted in it).
    pub content: String,
}

/// The first usable context file of `dir`. A name that exists but cannot be used (not a regular
/// file, a project file leading outside the project, unreadable) is passed over with a warning
/// naming it (DECISIONS §30.4); a large one is cut with a notice in its text.
fn context_file_in(
    dir: &Path,
    files: &ProjectFiles,
    warnings: &mut Vec<String>,
) -> Option<ContextFile> {
    for name in CONTEXT_FILE_NAMES {
        let path = dir.join(name);
        match files.read(&path, FileKind::CONTEXT) {
            Ok(None) => continue,
            Ok(Some(file)) => {
                let content = file.text_with_notice(&path);
                return Some(ContextFile { path, content });
            }
            // A directory of that name is passed over silently, as pi does.
            Err(FileError::NotRegular {
                is: "a directory", ..
            }) => continue,
            Err(err) => {
                warnings.push(format!("{err}; skipped"));
                continue;
            }
        }
    }
    None
}

/// The context files for `cwd`: `home`'s first, then root → cwd, each path once; and the
/// warnings about files passed over.
pub fn load_context_files(home: &Path, cwd: &Path) -> (Vec<ContextFile>, Vec<String>) {
    let files = ProjectFiles::for_cwd(cwd);
    let mut warnings = Vec::new();
    let mut out: Vec<ContextFile> = Vec::new();
    if let Some(global) = context_file_in(home, &files, &mut warnings) {
        out.push(global);
    }
    let mut dirs: Vec<&Path> = cwd.ancestors().collect();
    dirs.reverse();
    for dir in dirs {
        if let Some(f) = context_file_in(dir, &files, &mut warnings) {
            let real = std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone());
            let seen = out
                .iter()
                .any(|o| std::fs::canonicalize(&o.path).unwrap_or_else(|_| o.path.clone()) == real);
            if !seen {
                out.push(f);
            }
        }
    }
    (out, warnings)
}

/// Everything the prompt is made from.
#[derive(Debug, Clone, Default)]
pub struct PromptParts {
    /// `--system-prompt` or `SYSTEM.md`: replaces the preamble, tools and rules.
    pub custom: Option<String>,
    /// `--append-system-prompt` values and `APPEND_SYSTEM.md`.
    pub append: Vec<String>,
    /// The tools the prompt lists and writes rules for, in order.
    pub active_tools: Vec<String>,
    /// The context files, in the order they go in.
    pub context_files: Vec<ContextFile>,
    /// The `<skills>` section's body, already worded for the active tools (DECISIONS §32.5).
    pub skills: Option<String>,
    /// The working directory the prompt names.
    pub cwd: String,
}

fn wrap(name: &str, body: &str) -> String {
    format!("<{name}>\n{body}\n</{name}>")
}

/// Renders the prompt.
///
/// ```
/// use arbor_tools::system_prompt::{render, ContextFile, PromptParts};
///
/// let prompt = render(&PromptParts {
///     active_tools: vec!["read".into(), "edit".into()],
///     context_files: vec![ContextFile {
///         path: "/work/AGENTS.md".into(),
///         content: "Run the tests before you finish.".into(),
///     }],
///     cwd: "/work".into(),
///     ..PromptParts::default()
/// });
/// assert!(prompt.contains("<tools>\n- read: "));
/// assert!(prompt.contains("<project_instructions path=\"/work/AGENTS.md\">"));
/// assert!(prompt.ends_with("<cwd>\n/work\n</cwd>"));
/// ```
pub fn render(parts: &PromptParts) -> String {
    let mut sections: Vec<String> = Vec::new();
    match &parts.custom {
        Some(custom) => sections.push(custom.clone()),
        None => {
            sections.push(PREAMBLE.to_owned());
            let has = |n: &str| parts.active_tools.iter().any(|t| t == n);
            let mut list = String::new();
            for name in &parts.active_tools {
                if let Some(spec) = crate::spec(name) {
                    list.push_str(&format!("- {name}: {}\n", spec.snippet));
                }
            }
            list.push_str("\nOther tools may be offered as well.");
            sections.push(wrap("tools", &list));
            let mut rules: Vec<&str> = Vec::new();
            if has("bash") && !has("grep") && !has("find") && !has("ls") {
                rules.push("Use bash for file system work such as ls, rg and find.");
            }
            if has("read") {
                rules.push("Look at files with read rather than cat or sed.");
            }
            if has("bash") {
                rules.push("ARBOR_* environment variables describe the current session and model.");
            }
            if has("edit") {
                rules.push("Prefer edit for focused changes, and put all changes to one file into one call.");
                rules.push(
                    "Every edits[].oldText must match the original file exactly and only once; keep it short, \
                     never let two edits overlap, and join neighbouring changes instead of spanning unchanged text.",
                );
            }
            if has("write") {
                rules.push("Use write only to create files or to replace a file entirely.");
            }
            rules.push("Keep answers short.");
            rules.push("Name file paths explicitly when you work with files.");
            let body: Vec<String> = rules.iter().map(|r| format!("- {r}")).collect();
            sections.push(wrap("rules", &body.join("\n")));
        }
    }
    let append: Vec<&str> = parts
        .append
        .iter()
        .map(String::as_str)
        .filter(|s| !s.trim().is_empty())
        .collect();
    if !append.is_empty() {
        sections.push(wrap("addendum", &append.join("\n\n")));
    }
    if !parts.context_files.is_empty() {
        let mut body = String::from("Instructions for this project:\n");
        for f in &parts.context_files {
            let content = if f.content.ends_with('\n') {
                f.content.clone()
            } else {
                format!("{}\n", f.content)
            };
            body.push_str(&format!(
                "\n<project_instructions path=\"{}\">\n{content}</project_instructions>\n",
                f.path.display()
            ));
        }
        sections.push(wrap("project_context", body.trim_end()));
    }
    if let Some(skills) = &parts.skills {
        sections.push(wrap("skills", skills));
    }
    sections.push(wrap("cwd", &parts.cwd.replace('\\', "/")));
    sections.join("\n\n")
}

/// A `--system-prompt` / `--append-system-prompt` value: a regular file's contents (bounded,
/// DECISIONS §30.4), else the text itself.
pub fn text_or_file(value: &str, cwd: &Path) -> Result<String, FileError> {
    let p = crate::path::resolve(value, cwd);
    if value.len() < 4096 && p.is_file() {
        if let Some(file) = read_bounded(&p, FileKind::SYSTEM_PROMPT)? {
            return Ok(file.text_with_notice(&p));
        }
    }
    Ok(value.to_owned())
}

/// `SYSTEM.md` or `APPEND_SYSTEM.md` at `path` when present: bounded, with a cut noted, and a
/// project's copy only while it stays inside the project.
pub fn prompt_file(path: &Path, files: &ProjectFiles) -> Result<Option<String>, FileError> {
    Ok(files
        .read(path, FileKind::SYSTEM_PROMPT)?
        .map(|file: Bounded| file.text_with_notice(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_files_load_global_first_then_root_to_cwd() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let sub = proj.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(home.path().join("AGENTS.md"), "global").unwrap();
        std::fs::write(proj.path().join("CLAUDE.md"), "top claude").unwrap();
        std::fs::write(proj.path().join("AGENTS.md"), "\u{FEFF}top agents").unwrap();
        std::fs::create_dir(proj.path().join("a/AGENTS.md")).unwrap(); // a directory: skipped
        std::fs::write(sub.join("AGENTS.override.md"), "override").unwrap();
        std::fs::write(sub.join("AGENTS.md"), "shadowed").unwrap();
        let (files, warnings) = load_context_files(home.path(), &sub);
        assert!(warnings.is_empty(), "{warnings:?}");
        let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(contents, vec!["global", "top agents", "override"]);
    }

    #[test]
    fn sections_follow_pis_order_and_shape() {
        let parts = PromptParts {
            custom: None,
            append: vec!["Extra rule.".into()],
            active_tools: vec!["read".into(), "bash".into()],
            context_files: vec![ContextFile {
                path: "/p/AGENTS.md".into(),
                content: "Be terse.".into(),
            }],
            skills: Some("One skill.".into()),
            cwd: "/p".into(),
        };
        let p = render(&parts);
        assert!(p.starts_with(PREAMBLE));
        let order: Vec<usize> = [
            "<tools>",
            "<rules>",
            "<addendum>",
            "<project_context>",
            "<skills>\nOne skill.\n</skills>",
            "<cwd>\n/p\n</cwd>",
        ]
        .iter()
        .map(|s| p.find(s).unwrap())
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{p}");
        assert!(p.contains("- read: Read file contents\n- bash: "));
        assert!(p.contains("Use bash for file system work"));
        assert!(p.contains(
            "<project_instructions path=\"/p/AGENTS.md\">\nBe terse.\n</project_instructions>"
        ));
        let custom = render(&PromptParts {
            custom: Some("Only this.".into()),
            cwd: "/p".into(),
            ..Default::default()
        });
        assert_eq!(custom, "Only this.\n\n<cwd>\n/p\n</cwd>");
    }
}
