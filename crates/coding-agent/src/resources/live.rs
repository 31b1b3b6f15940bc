//! The resources a running session uses, shared by the system prompt, the modes that expand
//! `/template` and `/skill:name` lines, and `/reload`, which reads every file again and swaps
//! the whole set at once (DECISIONS §32.14).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::{skills, LoadOptions, ResourceError, Resources};
use arbor_tools::files::{FileError, ProjectFiles};
use arbor_tools::system_prompt::{self as prompt, PromptParts};

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

/// Reads the set; a system-prompt file that is a device, a FIFO or leads outside the project
/// is an error naming it (DECISIONS §30.4), a context file that does is a warning.
fn load(opts: &LoadOptions, inputs: &PromptInputs) -> Result<(Loaded, Vec<String>), FileError> {
    let resources = Arc::new(Resources::load(opts));
    let (home, cwd) = (&opts.home, &opts.cwd);
    let files = ProjectFiles::for_cwd(cwd);
    let custom = match inputs.system_prompt.as_deref() {
        Some(v) => Some(prompt::text_or_file(v, cwd)?),
        None => match opts.trusted {
            true => prompt::prompt_file(&cwd.join(".arbor").join("SYSTEM.md"), &files)?,
            false => None,
        },
    };
    let custom = match custom {
        Some(text) => Some(text),
        None => prompt::prompt_file(&home.join("SYSTEM.md"), &files)?,
    };
    let mut append: Vec<String> = inputs
        .append_system_prompt
        .iter()
        .map(|v| prompt::text_or_file(v, cwd))
        .collect::<Result<_, _>>()?;
    append.extend(prompt::prompt_file(&home.join("APPEND_SYSTEM.md"), &files)?);
    if opts.trusted {
        append.extend(prompt::prompt_file(
            &cwd.join(".arbor").join("APPEND_SYSTEM.md"),
            &files,
        )?);
    }
    let (context_files, warnings) = if inputs.no_context_files {
        (Vec::new(), Vec::new())
    } else {
        prompt::load_context_files(home, cwd)
    };
    let loaded = Loaded {
        resources,
        parts: PromptParts {
            custom,
            append,
            active_tools: Vec::new(),
            context_files,
            skills: None,
            cwd: cwd.display().to_string(),
        },
    };
    Ok((loaded, warnings))
}

impl LiveResources {
    /// Loads everything once; the warnings name context files left out.
    pub fn load(
        opts: LoadOptions,
        inputs: PromptInputs,
    ) -> Result<(LiveResources, Vec<String>), FileError> {
        let (loaded, warnings) = load(&opts, &inputs)?;
        let live = LiveResources {
            opts: Arc::new(opts),
            inputs: Arc::new(inputs),
            state: Arc::new(RwLock::new(Arc::new(loaded))),
        };
        Ok((live, warnings))
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
    /// the set in; the next request uses it. On an error the old set stays.
    pub fn reload(&self) -> Result<(Arc<Resources>, Vec<String>), FileError> {
        let (loaded, warnings) = load(&self.opts, &self.inputs)?;
        let loaded = Arc::new(loaded);
        let resources = loaded.resources.clone();
        let mut guard = self
            .state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *guard = loaded;
        Ok((resources, warnings))
    }

    /// See [`Resources::expand`].
    pub fn expand(&self, text: &str) -> Result<String, ResourceError> {
        self.resources().expand(text)
    }
}
