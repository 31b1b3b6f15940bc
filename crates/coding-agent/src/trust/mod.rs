//! Project trust (DECISIONS §32.10–§32.13): whether the resources a working folder supplies —
//! project settings, skills, prompt templates, system-prompt files, and the MCP servers and
//! hooks other modules load — may be used. A cloned repository must not be able to change what
//! Arbor runs or tells the model before the user agrees.
//!
//! Every loader asks one value, [`ProjectTrust`], decided once per start-up by [`resolve`]:
//! the `--approve` / `--no-approve` flag first, then the closest saved decision in the trust
//! file ([`store`]), then the global `defaultProjectTrust` setting. Only the TUI can ask
//! (its trust question); the other modes treat "ask" as "no".

pub mod store;

use std::path::{Path, PathBuf};

pub use store::{TrustError, TrustStore};

/// The protected entries of a project configuration folder (`.arbor` or `.pi`): their presence
/// is what makes a folder need a decision.
const PROTECTED_IN_CONFIG_DIR: [&str; 9] = [
    "settings.json",
    "mcp.json",
    "hooks",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
];

/// The project configuration folders Arbor reads: its own and pi's.
pub const PROJECT_CONFIG_DIRS: [&str; 2] = [".arbor", ".pi"];

/// Where a decision came from (shown by `/settings` and in diagnostics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustSource {
    /// `--approve` / `--no-approve`, or the TUI's "this session only" answers.
    Flag,
    /// A decision saved in the trust file for this folder or a parent.
    Saved(PathBuf),
    /// The `defaultProjectTrust` setting (`always` / `never`, or `ask` without a prompt).
    Default,
    /// The folder has nothing to protect.
    NothingToProtect,
}

/// The trust decision for one working folder. Cheap to clone; pass it to every loader of
/// project resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectTrust {
    trusted: bool,
    source: TrustSource,
}

impl ProjectTrust {
    /// A decision made elsewhere (tests, the TUI prompt).
    pub fn new(trusted: bool, source: TrustSource) -> Self {
        ProjectTrust { trusted, source }
    }

    /// Whether project resources may load.
    pub fn is_trusted(&self) -> bool {
        self.trusted
    }

    pub fn source(&self) -> &TrustSource {
        &self.source
    }

    /// One line for `/settings` and the start-up notice.
    pub fn describe(&self) -> String {
        let verdict = if self.trusted {
            "trusted"
        } else {
            "not trusted"
        };
        match &self.source {
            TrustSource::Flag => format!("{verdict} (command line or this session's answer)"),
            TrustSource::Saved(p) => format!("{verdict} (saved for {})", p.display()),
            TrustSource::Default => format!("{verdict} (defaultProjectTrust)"),
            TrustSource::NothingToProtect => "nothing to trust (no project resources)".to_owned(),
        }
    }
}

/// The global `defaultProjectTrust` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DefaultTrust {
    #[default]
    Ask,
    Always,
    Never,
}

impl DefaultTrust {
    /// Parses the setting; anything but `always` / `never` is `ask` (pi's default).
    pub fn parse(v: Option<&str>) -> DefaultTrust {
        match v {
            Some("always") => DefaultTrust::Always,
            Some("never") => DefaultTrust::Never,
            _ => DefaultTrust::Ask,
        }
    }
}

/// What [`resolve`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Decided(ProjectTrust),
    /// No flag, no saved decision, `defaultProjectTrust: ask`: only a UI can decide.
    Ask,
}

/// The directory a decision for `cwd` is saved under: the canonical path.
pub fn trust_key(cwd: &Path) -> PathBuf {
    std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf())
}

/// The nearest repository root at or above `dir` (a folder holding `.git`).
pub fn repo_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The `.agents/skills` folders from `cwd` up to the repository root (or the filesystem
/// root when there is no repository), nearest first.
pub fn ancestor_agents_skill_dirs(cwd: &Path) -> Vec<PathBuf> {
    let root = repo_root(cwd);
    let mut out = Vec::new();
    for dir in cwd.ancestors() {
        out.push(dir.join(".agents").join("skills"));
        if root.as_deref() == Some(dir) {
            break;
        }
    }
    out
}

/// The protected project resources present under `cwd` (empty: no decision needed).
pub fn protected_resources(cwd: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in PROJECT_CONFIG_DIRS {
        for name in PROTECTED_IN_CONFIG_DIR {
            let p = cwd.join(dir).join(name);
            if p.exists() {
                found.push(p);
            }
        }
    }
    found.extend(
        ancestor_agents_skill_dirs(cwd)
            .into_iter()
            .filter(|p| p.is_dir()),
    );
    found
}

/// Decides trust for `cwd` without asking anyone. `flag` is `--approve` (`Some(true)`) or
/// `--no-approve` (`Some(false)`).
pub fn resolve(
    flag: Option<bool>,
    store: &TrustStore,
    cwd: &Path,
    default: DefaultTrust,
) -> Resolution {
    if let Some(t) = flag {
        return Resolution::Decided(ProjectTrust::new(t, TrustSource::Flag));
    }
    let saved = store.nearest(&trust_key(cwd));
    if protected_resources(cwd).is_empty() {
        // Nothing can load; a saved "no" is still reported as such.
        return Resolution::Decided(match saved {
            Some((path, false)) => ProjectTrust::new(false, TrustSource::Saved(path)),
            _ => ProjectTrust::new(true, TrustSource::NothingToProtect),
        });
    }
    if let Some((path, decision)) = saved {
        return Resolution::Decided(ProjectTrust::new(decision, TrustSource::Saved(path)));
    }
    match default {
        DefaultTrust::Always => Resolution::Decided(ProjectTrust::new(true, TrustSource::Default)),
        DefaultTrust::Never => Resolution::Decided(ProjectTrust::new(false, TrustSource::Default)),
        DefaultTrust::Ask => Resolution::Ask,
    }
}

impl Resolution {
    /// The decision where no one can be asked: "ask" loads nothing (pi's rule for print, JSON
    /// and RPC).
    pub fn without_prompt(self) -> ProjectTrust {
        match self {
            Resolution::Decided(t) => t,
            Resolution::Ask => ProjectTrust::new(false, TrustSource::Default),
        }
    }
}

/// One answer the TUI prompt offers: whether it trusts, and the decisions it saves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustChoice {
    pub label: String,
    pub trusted: bool,
    /// (directory, decision) pairs written to the trust file; empty: this run only.
    pub saves: Vec<(PathBuf, Option<bool>)>,
}

/// The answers for `cwd`, in the order they are offered (pi's set: this folder, its parent,
/// this session only, and the same refusals).
pub fn choices(cwd: &Path) -> Vec<TrustChoice> {
    let key = trust_key(cwd);
    let mut out = vec![TrustChoice {
        label: "Trust".into(),
        trusted: true,
        saves: vec![(key.clone(), Some(true))],
    }];
    if let Some(parent) = key.parent() {
        out.push(TrustChoice {
            label: format!("Trust parent folder ({})", parent.display()),
            trusted: true,
            saves: vec![(parent.to_path_buf(), Some(true)), (key.clone(), None)],
        });
    }
    out.push(TrustChoice {
        label: "Trust (this session only)".into(),
        trusted: true,
        saves: Vec::new(),
    });
    out.push(TrustChoice {
        label: "Do not trust".into(),
        trusted: false,
        saves: vec![(key, Some(false))],
    });
    out.push(TrustChoice {
        label: "Do not trust (this session only)".into(),
        trusted: false,
        saves: Vec::new(),
    });
    out
}

/// Writes a chosen answer's decisions.
pub fn save_choice(store: &mut TrustStore, choice: &TrustChoice) -> Result<(), TrustError> {
    for (dir, decision) in &choice.saves {
        store.set(dir, *decision)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_then_saved_then_default_decide() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let sub = proj.path().join("sub");
        std::fs::create_dir_all(sub.join(".arbor/skills")).unwrap();
        let store = TrustStore::load(&home.path().join("trust.json")).unwrap();
        assert_eq!(
            resolve(None, &store, &sub, DefaultTrust::Ask),
            Resolution::Ask
        );
        assert!(!resolve(None, &store, &sub, DefaultTrust::Ask)
            .without_prompt()
            .is_trusted());
        assert!(resolve(None, &store, &sub, DefaultTrust::Always)
            .without_prompt()
            .is_trusted());
        assert!(resolve(Some(true), &store, &sub, DefaultTrust::Never)
            .without_prompt()
            .is_trusted());
        let mut store = store;
        store.set(&trust_key(proj.path()), Some(true)).unwrap();
        let t = resolve(None, &store, &sub, DefaultTrust::Never).without_prompt();
        assert!(t.is_trusted());
        assert_eq!(t.source(), &TrustSource::Saved(trust_key(proj.path())));
        // The closest decision wins.
        store.set(&trust_key(&sub), Some(false)).unwrap();
        assert!(!resolve(None, &store, &sub, DefaultTrust::Always)
            .without_prompt()
            .is_trusted());
        assert!(!resolve(Some(false), &store, &sub, DefaultTrust::Always)
            .without_prompt()
            .is_trusted());
    }

    #[test]
    fn a_bare_config_folder_needs_no_decision() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(proj.path().join(".arbor")).unwrap();
        std::fs::create_dir_all(proj.path().join(".git")).unwrap();
        let store = TrustStore::load(&home.path().join("trust.json")).unwrap();
        let t = resolve(None, &store, proj.path(), DefaultTrust::Never).without_prompt();
        assert!(t.is_trusted());
        assert_eq!(t.source(), &TrustSource::NothingToProtect);
        std::fs::create_dir_all(proj.path().join(".agents/skills")).unwrap();
        assert_eq!(
            protected_resources(proj.path()),
            vec![proj.path().join(".agents/skills")]
        );
        // The walk stops at the repository root.
        assert_eq!(
            ancestor_agents_skill_dirs(&proj.path().join("a/b")).len(),
            3
        );
    }
}
