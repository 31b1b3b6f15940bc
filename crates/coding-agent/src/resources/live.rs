//! The resources a running session uses, shared by the system prompt, the modes that expand
//! `/template` and `/skill:name` lines, and `/reload`, which reads every file again and swaps
//! the whole set at once (DECISIONS §32.14).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::{read_text, skills, LoadOptions, ResourceError, Resources};
use crate::prompt::{self, PromptParts};

/// The system-prompt flags, kept so `/reload` reads the same files again.
#[derive(Debug, Clone, Default)]
pub struct PromptInputs {
    /// `--system-prompt`.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt` values.
    pub append_system_prompt: Vec<String>,
    /// `--no-context-files`.
    pub no_context_files: bool,
}

/// One consistent load: the resources and the prompt's files.
#[derive(Debug)]
struct Loaded {
    resources: Arc<Resources>,
    parts: PromptParts,
}

/// The current set; clones share it.
#[derive(Debug, Clone)]
pub struct LiveResources {
    opts: Arc<LoadOptions>,
    inputs: Arc<PromptInputs>,
    state: Arc<RwLock<Arc<Loaded>>>,
}

fn load(opts: &LoadOptions, inputs: &PromptInputs) -> Loaded {
    let resources = Arc::new(Resources::load(opts));
    let (home, cwd) = (&opts.home, &opts.cwd);
    let project = |name: &str| -> Option<String> {
        opts.trusted
            .then(|| read_optional(&cwd.join(".arbor").join(name)))
            .flatten()
    };
    let custom = inputs
        .system_prompt
        .as_deref()
        .map(|v| prompt::text_or_file(v, cwd))
        .or_else(|| project("SYSTEM.md"))
        .or_else(|| read_optional(&home.join("SYSTEM.md")));
    let mut append: Vec<String> = inputs
        .append_system_prompt
        .iter()
        .map(|v| prompt::text_or_file(v, cwd))
        .collect();
    append.extend(read_optional(&home.join("APPEND_SYSTEM.md")));
    append.extend(project("APPEND_SYSTEM.md"));
    let context_files = if inputs.no_context_files {
        Vec::new()
    } else {
        prompt::load_context_files(home, cwd)
    };
    Loaded {
        resources,
        parts: PromptParts {
            custom,
            append,
            active_tools: Vec::new(),
            context_files,
            skills: None,
            cwd: cwd.display().to_string(),
        },
    }
}

fn read_optional(p: &Path) -> Option<String> {
    read_text(p).ok()
}

impl LiveResources {
    /// Loads everything once.
    pub fn load(opts: LoadOptions, inputs: PromptInputs) -> LiveResources {
        let loaded = load(&opts, &inputs);
        LiveResources {
            opts: Arc::new(opts),
            inputs: Arc::new(inputs),
            state: Arc::new(RwLock::new(Arc::new(loaded))),
        }
    }

    /// A set with nothing loaded (tests that build the TUI's app by hand).
    pub fn empty(cwd: &Path) -> LiveResources {
        let opts = LoadOptions {
            cwd: cwd.to_path_buf(),
            ..Default::default()
        };
        LiveResources {
            opts: Arc::new(opts),
            inputs: Arc::new(PromptInputs::default()),
            state: Arc::new(RwLock::new(Arc::new(Loaded {
                resources: Arc::new(Resources::default()),
                parts: PromptParts {
                    cwd: cwd.display().to_string(),
                    ..Default::default()
                },
            }))),
        }
    }

    fn current(&self) -> Arc<Loaded> {
        // A writer cannot panic half-way (it swaps one Arc), so a poisoned lock still holds a
        // whole set.
        let guard = self
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.clone()
    }

    /// The skills and templates in use.
    pub fn resources(&self) -> Arc<Resources> {
        self.current().resources.clone()
    }

    /// The project folder these were loaded for.
    pub fn cwd(&self) -> &PathBuf {
        &self.opts.cwd
    }

    /// Whether the project's folders were read.
    pub fn project_trusted(&self) -> bool {
        self.opts.trusted
    }

    /// The system prompt for the tools now active.
    pub fn system_prompt(&self, active_tools: Vec<String>) -> String {
        let loaded = self.current();
        let mut parts = loaded.parts.clone();
        parts.skills = skills::prompt_section(&loaded.resources.skills, &active_tools);
        parts.active_tools = active_tools;
        prompt::render(&parts)
    }

    /// Reads every file again (skills, templates, system-prompt and context files) and swaps
    /// the set in; the next request uses it.
    pub fn reload(&self) -> Arc<Resources> {
        let loaded = Arc::new(load(&self.opts, &self.inputs));
        let resources = loaded.resources.clone();
        let mut guard = self
            .state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *guard = loaded;
        resources
    }

    /// See [`Resources::expand`].
    pub fn expand(&self, text: &str) -> Result<String, ResourceError> {
        self.resources().expand(text)
    }
}
