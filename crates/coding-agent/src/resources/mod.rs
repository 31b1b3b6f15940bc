//! Skills and prompt templates: the Markdown files users already keep for pi and other Agent
//! Skills clients, found in the same places and turned into what the model is told
//! ([`skills`]) and into `/name` commands ([`templates`]) (DECISIONS §32).
//!
//! - [`frontmatter`]: the YAML block at the top of each file.
//! - [`skills`], [`templates`]: discovery, validation and expansion.
//! - [`live`]: the loaded set a running session shares, with `/reload`.
//!
//! Nothing here stops start-up: every bad file becomes a [`Diagnostic`] naming the file and
//! line, and the rest loads. Project folders are read only when [`ProjectTrust`] allows.

pub mod frontmatter;
pub mod live;
pub mod skills;
pub mod templates;

use crate::command::{DiscoverableCommand, SourceInfo};
use std::path::{Path, PathBuf};

use crate::trust::ProjectTrust;
pub use live::LiveResources;
pub use skills::Skill;
pub use templates::Template;

/// Where a resource came from; also the `scope` pi's RPC `sourceInfo` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `--skill` / `--prompt-template` (pi: `temporary`).
    Flag,
    Project,
    User,
}

impl Scope {
    fn as_str(self) -> &'static str {
        match self {
            Scope::Flag => "temporary",
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// One warning about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// A resource command that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    #[error("Unknown skill: {0} (type /skill: to see the list)")]
    UnknownSkill(String),
    #[error("skill {name}: cannot read {path}: {source}")]
    SkillUnreadable {
        name: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The one way this module reads a file: bounded, regular files only (DECISIONS §30.4); a
/// SKILL.md or template over 1 MiB is refused.
fn read_text(path: &Path) -> std::io::Result<String> {
    const RESOURCE: arbor_tools::files::FileKind =
        arbor_tools::files::FileKind::refused("skill or prompt template", 1024 * 1024);
    match arbor_tools::files::read_bounded(path, RESOURCE) {
        Ok(Some(file)) => Ok(file.text_with_notice(path)),
        Ok(None) => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} not found", path.display()),
        )),
        Err(e) => Err(std::io::Error::other(e)),
    }
}

/// Where to look.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `ARBOR_HOME`.
    pub home: PathBuf,
    /// `$HOME` (`None`: unset, so pi's and the standard's user folders are skipped).
    pub user_home: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Whether project folders may be read.
    pub trusted: bool,
    /// `--skill` values (relative to `cwd`).
    pub skill_paths: Vec<String>,
    /// `--prompt-template` values (relative to `cwd`).
    pub template_paths: Vec<String>,
}

impl LoadOptions {
    pub fn new(home: &Path, cwd: &Path, trust: &ProjectTrust) -> LoadOptions {
        LoadOptions {
            home: home.to_path_buf(),
            user_home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            cwd: cwd.to_path_buf(),
            trusted: trust.is_trusted(),
            skill_paths: Vec::new(),
            template_paths: Vec::new(),
        }
    }

    /// pi's agent folder (`~/.pi/agent`), when `$HOME` is known.
    fn pi_agent_dir(&self) -> Option<PathBuf> {
        self.user_home.as_ref().map(|h| h.join(".pi").join("agent"))
    }
}

/// Everything loaded, with what went wrong.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    pub skills: Vec<Skill>,
    pub templates: Vec<Template>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Resources {
    /// Loads skills and templates; never fails (problems become diagnostics).
    pub fn load(opts: &LoadOptions) -> Resources {
        let mut diagnostics = Vec::new();
        let skills = skills::discover(opts, &mut diagnostics);
        let templates = templates::discover(opts, &mut diagnostics);
        Resources {
            skills,
            templates,
            diagnostics,
        }
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn template(&self, name: &str) -> Option<&Template> {
        self.templates.iter().find(|t| t.name == name)
    }

    /// What a submitted line becomes: `/skill:name args` → the skill's instructions and the
    /// request, `/template args` → the expanded template, anything else unchanged.
    pub fn expand(&self, text: &str) -> Result<String, ResourceError> {
        if let Some(rest) = text.strip_prefix("/skill:") {
            let (name, args) = split_command(rest);
            let skill = self
                .skill(name)
                .ok_or_else(|| ResourceError::UnknownSkill(name.to_owned()))?;
            return skill.invocation(args);
        }
        if let Some(rest) = text.strip_prefix('/') {
            let (name, args) = split_command(rest);
            if let Some(t) = self.template(name) {
                return Ok(t.expand(args));
            }
        }
        Ok(text.to_owned())
    }

    /// The commands these resources add, as `(name, help)` for completion: templates first,
    /// then `skill:name`.
    pub fn commands(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .templates
            .iter()
            .map(|t| {
                let help = match &t.argument_hint {
                    Some(h) => format!("{} {h}", t.description),
                    None => t.description.clone(),
                };
                (t.name.clone(), help)
            })
            .collect();
        out.extend(
            self.skills
                .iter()
                .map(|s| (format!("skill:{}", s.name), s.description.clone())),
        );
        out
    }

    /// RPC `get_commands` entries in pi's shape (`source: "prompt" | "skill"`).
    pub fn rpc_commands(&self) -> Vec<DiscoverableCommand> {
        let info = |path: &Path, dir: &Path, scope: Scope| SourceInfo {
            path: path.display().to_string(),
            source: "local".into(),
            scope: scope.as_str().into(),
            origin: "top-level".into(),
            base_dir: Some(dir.display().to_string()),
        };
        let mut out: Vec<DiscoverableCommand> = self
            .templates
            .iter()
            .map(|t| DiscoverableCommand {
                name: t.name.clone(),
                description: Some(t.description.clone()),
                source: "prompt",
                source_info: info(&t.file, t.file.parent().unwrap_or(Path::new("/")), t.scope),
            })
            .collect();
        out.extend(self.skills.iter().map(|s| DiscoverableCommand {
            name: format!("skill:{}", s.name),
            description: Some(s.description.clone()),
            source: "skill",
            source_info: info(&s.file, &s.dir, s.scope),
        }));
        out
    }

    /// The start-up report: what was found, then every warning (empty when there is neither).
    pub fn report(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.skills.is_empty() {
            let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            out.push(format!("Skills ({}): {}", names.len(), names.join(", ")));
        }
        if !self.templates.is_empty() {
            let names: Vec<String> = self
                .templates
                .iter()
                .map(|t| format!("/{}", t.name))
                .collect();
            out.push(format!(
                "Prompt templates ({}): {}",
                names.len(),
                names.join(", ")
            ));
        }
        out.extend(self.diagnostics.iter().map(|d| format!("Warning: {d}")));
        out
    }
}

/// `name rest…` → (`name`, `rest` trimmed).
fn split_command(rest: &str) -> (&str, &str) {
    match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    }
}

/// Every `*.md` file directly in `dir` (sorted; symlinks followed; a missing folder is none).
fn markdown_children(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    out.sort();
    out
}
