//! Skills (the Agent Skills format as pi reads it; DECISIONS §32.3–§32.6): a folder holding
//! `SKILL.md`, whose frontmatter `name` and `description` are advertised to the model and whose
//! body the model reads when a task matches.
//!
//! Folders searched, first found wins a name: `--skill` paths; then, in a trusted project,
//! `.arbor/skills`, `.pi/skills` and `.agents/skills` from the cwd up to the repository root;
//! then `<ARBOR_HOME>/skills`, `~/.pi/agent/skills` and `~/.agents/skills`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::frontmatter::Frontmatter;
use super::{read_text, Diagnostic, LoadOptions, ResourceError, Scope};

/// The Agent Skills limits.
pub const MAX_NAME_LEN: usize = 64;
pub const MAX_DESCRIPTION_LEN: usize = 1024;
/// How deep a skills folder is searched (a symlink loop ends here too).
const MAX_DEPTH: usize = 8;

/// One loaded skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's file (`SKILL.md`, or a standalone Markdown file).
    pub file: PathBuf,
    /// The folder its relative paths resolve against.
    pub dir: PathBuf,
    /// `false` with `disable-model-invocation: true`: only `/skill:name` uses it.
    pub model_invocable: bool,
    pub scope: Scope,
}

impl Skill {
    /// The text `/skill:name args` sends: the instructions (frontmatter removed) in a
    /// `<skill>` block naming where they live, then the user's request.
    pub fn invocation(&self, args: &str) -> Result<String, ResourceError> {
        let text = read_text(&self.file).map_err(|source| ResourceError::SkillUnreadable {
            name: self.name.clone(),
            path: self.file.clone(),
            source,
        })?;
        let body = match Frontmatter::parse(&text) {
            Ok(f) => f.body,
            Err(_) => text,
        };
        let block = format!(
            "<skill name=\"{}\" location=\"{}\">\nPaths in this skill are relative to {}.\n\n{}\n</skill>",
            self.name,
            self.file.display(),
            self.dir.display(),
            body.trim()
        );
        Ok(if args.is_empty() {
            block
        } else {
            format!("{block}\n\n{args}")
        })
    }
}

/// The problems with a name, per the Agent Skills rules.
pub fn name_problems(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if name.chars().count() > MAX_NAME_LEN {
        out.push(format!(
            "name is longer than {MAX_NAME_LEN} characters ({})",
            name.chars().count()
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        out.push("name may hold only lowercase a-z, 0-9 and hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push("name must not start or end with a hyphen".into());
    }
    if name.contains("--") {
        out.push("name must not hold two hyphens in a row".into());
    }
    out
}

/// A folder to search, and whether Markdown files directly in it count as skills.
struct Root {
    dir: PathBuf,
    scope: Scope,
    loose_files: bool,
}

/// Finds every skill per `opts`, in precedence order.
pub fn discover(opts: &LoadOptions, diags: &mut Vec<Diagnostic>) -> Vec<Skill> {
    let mut found: Vec<Skill> = Vec::new();
    for raw in &opts.skill_paths {
        let path = arbor_tools::path::resolve(raw, &opts.cwd);
        if path.is_dir() {
            let mut seen = HashSet::new();
            walk(&path, Scope::Flag, true, 0, &mut seen, &mut found, diags);
        } else if path.is_file() {
            if path.extension().is_some_and(|e| e == "md") {
                if let Some(s) = load_file(&path, Scope::Flag, diags) {
                    found.push(s);
                }
            } else {
                diags.push(warn(
                    &path,
                    None,
                    "--skill: not a Markdown file or a folder",
                ));
            }
        } else {
            diags.push(warn(&path, None, "--skill: no such file or folder"));
        }
    }
    let mut roots = Vec::new();
    if opts.trusted {
        for d in [".arbor", ".pi"] {
            roots.push(Root {
                dir: opts.cwd.join(d).join("skills"),
                scope: Scope::Project,
                loose_files: true,
            });
        }
        let user_agents = opts
            .user_home
            .as_ref()
            .map(|h| h.join(".agents").join("skills"));
        for dir in crate::trust::ancestor_agents_skill_dirs(&opts.cwd) {
            if Some(&dir) != user_agents.as_ref() {
                roots.push(Root {
                    dir,
                    scope: Scope::Project,
                    loose_files: false,
                });
            }
        }
    }
    roots.push(Root {
        dir: opts.home.join("skills"),
        scope: Scope::User,
        loose_files: true,
    });
    if let Some(pi) = opts.pi_agent_dir() {
        roots.push(Root {
            dir: pi.join("skills"),
            scope: Scope::User,
            loose_files: true,
        });
    }
    if let Some(h) = &opts.user_home {
        roots.push(Root {
            dir: h.join(".agents").join("skills"),
            scope: Scope::User,
            loose_files: false,
        });
    }
    let mut seen_dirs = HashSet::new();
    for r in roots {
        walk(
            &r.dir,
            r.scope,
            r.loose_files,
            0,
            &mut seen_dirs,
            &mut found,
            diags,
        );
    }
    // First found keeps the name; the same file reached twice (a symlink) is not a collision.
    let mut out: Vec<Skill> = Vec::new();
    for s in found {
        if let Some(first) = out.iter().find(|o| o.name == s.name) {
            if canonical(&first.file) != canonical(&s.file) {
                diags.push(warn(
                    &s.file,
                    None,
                    &format!(
                        "skill name \"{}\" is taken by {}; this one is not loaded",
                        s.name,
                        first.file.display()
                    ),
                ));
            }
            continue;
        }
        out.push(s);
    }
    out
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn warn(path: &Path, line: Option<usize>, message: &str) -> Diagnostic {
    Diagnostic {
        path: path.to_path_buf(),
        line,
        message: message.to_owned(),
    }
}

/// A folder holding `SKILL.md` is one skill (not searched further); otherwise its folders are
/// searched and, at the root of a pi-style folder, its Markdown files are skills.
fn walk(
    dir: &Path,
    scope: Scope,
    loose_files: bool,
    depth: usize,
    seen: &mut HashSet<PathBuf>,
    found: &mut Vec<Skill>,
    diags: &mut Vec<Diagnostic>,
) {
    if depth > MAX_DEPTH || !dir.is_dir() || !seen.insert(canonical(dir)) {
        return;
    }
    let skill_md = dir.join("SKILL.md");
    if skill_md.is_file() {
        if let Some(s) = load_file(&skill_md, scope, diags) {
            found.push(s);
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.') && n != "node_modules")
        })
        .collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            walk(&p, scope, false, depth + 1, seen, found, diags);
        } else if loose_files
            && depth == 0
            && p.extension().is_some_and(|e| e == "md")
            && p.is_file()
        {
            if let Some(s) = load_file(&p, scope, diags) {
                found.push(s);
            }
        }
    }
}

/// Loads one file. A `SKILL.md` that cannot be used says why; a loose Markdown file without a
/// description is simply not a skill.
fn load_file(path: &Path, scope: Scope, diags: &mut Vec<Diagnostic>) -> Option<Skill> {
    let declared = path.file_name().is_some_and(|n| n == "SKILL.md");
    let text = match read_text(path) {
        Ok(t) => t,
        Err(e) => {
            diags.push(warn(path, None, &format!("cannot read: {e}")));
            return None;
        }
    };
    let fm = match Frontmatter::parse(&text) {
        Ok(f) => f,
        Err(p) => {
            if declared {
                diags.push(warn(path, Some(p.line), &p.message));
            }
            return None;
        }
    };
    let description = match fm.string("description") {
        Ok(d) => d.filter(|d| !d.trim().is_empty()),
        Err(p) => {
            diags.push(warn(path, Some(p.line), &p.message));
            None
        }
    };
    let Some(description) = description else {
        if declared {
            diags.push(warn(
                path,
                Some(fm.line_of("description")),
                "description is required; the skill is not loaded",
            ));
        }
        return None;
    };
    if description.chars().count() > MAX_DESCRIPTION_LEN {
        diags.push(warn(
            path,
            Some(fm.line_of("description")),
            &format!(
                "description is longer than {MAX_DESCRIPTION_LEN} characters ({})",
                description.chars().count()
            ),
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let declared_name = match fm.string("name") {
        Ok(n) => n.filter(|n| !n.is_empty()),
        Err(p) => {
            diags.push(warn(path, Some(p.line), &p.message));
            None
        }
    };
    let name = match declared_name {
        Some(n) => n,
        None if declared => dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        None => path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    for problem in name_problems(&name) {
        diags.push(warn(path, Some(fm.line_of("name")), &problem));
    }
    let model_invocable = match fm.flag("disable-model-invocation") {
        Ok(b) => !b,
        Err(p) => {
            diags.push(warn(path, Some(p.line), &p.message));
            true
        }
    };
    Some(Skill {
        name,
        description,
        file: path.to_path_buf(),
        dir,
        model_invocable,
        scope,
    })
}

/// XML-escapes text for the prompt.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The system prompt's `<skills>` section body: how to use them, then one line per skill the
/// model may pick (`None`: nothing to advertise, or no tool that can read a file).
pub fn prompt_section(skills: &[Skill], active_tools: &[String]) -> Option<String> {
    let visible: Vec<&Skill> = skills.iter().filter(|s| s.model_invocable).collect();
    let has = |n: &str| active_tools.iter().any(|t| t == n);
    let how = if has("read") {
        "read its file with the read tool"
    } else if has("bash") {
        "print its file with bash"
    } else {
        return None;
    };
    if visible.is_empty() {
        return None;
    }
    let mut body = format!(
        "Skills hold instructions for particular kinds of work. When the task matches a skill's \
         description, {how} before you start and follow it. Paths inside a skill are relative \
         to the folder its file is in; use absolute paths in tool calls.\n"
    );
    for s in visible {
        body.push_str(&format!(
            "\n<skill name=\"{}\" path=\"{}\">{}</skill>",
            escape(&s.name),
            escape(&s.file.display().to_string()),
            escape(&s.description)
        ));
    }
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(home: &Path, cwd: &Path) -> LoadOptions {
        LoadOptions {
            home: home.to_path_buf(),
            user_home: None,
            cwd: cwd.to_path_buf(),
            trusted: true,
            ..Default::default()
        }
    }

    #[test]
    fn names_follow_the_agent_skills_rules() {
        assert!(name_problems("pdf-tools2").is_empty());
        assert_eq!(name_problems("PDF").len(), 1);
        assert_eq!(name_problems("-a--b").len(), 2);
        assert_eq!(name_problems(&"a".repeat(65)).len(), 1);
    }

    #[test]
    fn discovery_validation_and_collisions() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        std::fs::create_dir(proj.path().join(".git")).unwrap();
        let put = |p: PathBuf, text: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            proj.path().join(".arbor/skills/one/SKILL.md"),
            "---\nname: one\ndescription: First.\n---\nDo one.\n",
        );
        put(
            proj.path().join(".agents/skills/nested/deep/SKILL.md"),
            "---\ndescription: Deep one.\ndisable-model-invocation: true\n---\n",
        );
        put(
            home.path().join("skills/dup/SKILL.md"),
            "---\nname: one\ndescription: Shadowed.\n---\n",
        );
        put(
            home.path().join("skills/Bad_Name/SKILL.md"),
            "---\ndescription: Odd name.\n---\n",
        );
        put(
            home.path().join("skills/broken/SKILL.md"),
            "---\nname: broken\ndescription: [x\n---\n",
        );
        put(
            home.path().join("skills/nodesc/SKILL.md"),
            "---\nname: nodesc\n---\n",
        );
        put(
            home.path().join("skills/loose.md"),
            "---\ndescription: Loose.\n---\n",
        );
        put(home.path().join("skills/notes.md"), "no frontmatter\n");
        let mut diags = Vec::new();
        let skills = discover(&opts(home.path(), proj.path()), &mut diags);
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["one", "deep", "Bad_Name", "loose"]);
        assert!(!skills[1].model_invocable);
        let text: Vec<String> = diags.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 4, "{text:#?}");
        assert!(
            text[0].contains("Bad_Name/SKILL.md:1: name may hold only"),
            "{text:#?}"
        );
        assert!(
            text[1].contains("broken/SKILL.md:4: invalid YAML"),
            "{text:#?}"
        );
        assert!(
            text[2].contains("nodesc/SKILL.md:1: description is required"),
            "{text:#?}"
        );
        assert!(
            text[3].contains("dup/SKILL.md: skill name \"one\" is taken"),
            "{text:#?}"
        );
        // An untrusted project's folders are not read.
        let mut o = opts(home.path(), proj.path());
        o.trusted = false;
        let names: Vec<String> = discover(&o, &mut Vec::new())
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["Bad_Name", "one", "loose"]);
        let s = &skills[0];
        let inv = s.invocation("now please").unwrap();
        assert!(inv.starts_with("<skill name=\"one\" location=\""), "{inv}");
        assert!(inv.ends_with("Do one.\n</skill>\n\nnow please"), "{inv}");
        let sec = prompt_section(&skills, &["read".into()]).unwrap();
        assert!(sec.contains("<skill name=\"one\" path=\""));
        assert!(!sec.contains("Deep one"));
        assert!(prompt_section(&skills, &["edit".into()]).is_none());
    }
}
