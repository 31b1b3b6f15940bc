//! `arbor-tools`: Arbor's built-in coding tools — `read`, `write`, `edit`, `bash`, `grep`,
//! `find`, `ls` — as [`arbor_agent::agent::AgentTool`]s any `AgentHarness` can be given, and the
//! system prompt the app builds around them ([`system_prompt`]: the tool list and rules, and the
//! `AGENTS.md`/`CLAUDE.md` files from the filesystem root down to the working directory).
//!
//! The tools keep pi 1.6.0's schemas, limits and texts (DECISIONS §22.1). Each module holds one
//! tool's schema and behaviour; they share output limits ([`truncate`]), path handling
//! ([`path`]), the per-file write queue ([`mutation`]), atomic writes ([`atomic_write`]) and
//! image preparation ([`image`]). `bash` runs every command in a process group of its own
//! ([`process`]) with the key variables taken out of its environment ([`env_policy`]). Files the
//! prompt reads go through the bounded reader ([`files`]). Nothing here reads the app's settings:
//! the tools take a plain [`ToolSettings`] (DECISIONS §22.80).
//!
//! A tool returns [`ToolOutput`] on success; a failure is a [`BuiltinToolError`] whose text is what the
//! model sees as an error result. Nothing here panics on bad input.
//!
//! ```
//! use arbor_tools::{builtin_tools, ToolEnv, ToolSettings};
//!
//! let dir = std::env::temp_dir();
//! let tools = builtin_tools(&ToolEnv::new(dir, ToolSettings::default()));
//! let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
//! assert_eq!(names, ["read", "bash", "edit", "write", "grep", "find", "ls"]);
//! ```
//!
//! `examples/coding_harness.rs` gives the tools and the prompt to an `AgentHarness` on the
//! offline faux provider.
#![deny(missing_docs)]

pub mod ansi;
pub mod atomic_write;
pub mod bash;
pub mod edit;
pub mod env_policy;
pub mod files;
pub mod find;
pub mod grep;
pub mod image;
pub mod ls;
pub mod mutation;
pub mod path;
pub mod process;
pub mod read;
pub mod system_prompt;
pub mod truncate;
pub mod write;

use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use mutation::MutationQueue;

/// The names of every built-in tool, in the order the system prompt lists them.
pub const ALL_TOOLS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];
/// The tools on when no tool flag or setting says otherwise.
pub const DEFAULT_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// What a tool call produced (the agent loop's type, so no conversion is needed).
pub use arbor_agent::agent::ToolOutput;

/// A failed tool call; the message becomes the error result's text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuiltinToolError {
    /// The call could not be carried out (missing file, no match, non-zero exit...).
    #[error("{message}")]
    Failed {
        /// The text the model sees.
        message: String,
        /// Extra structure for the result (`details`), e.g. bash's truncation record.
        details: Option<Value>,
    },
    /// The call was cancelled (abort or shutdown).
    #[error("{0}")]
    Aborted(String),
}

impl BuiltinToolError {
    /// A failure with `message` and no details.
    pub fn failed(message: impl Into<String>) -> Self {
        BuiltinToolError::Failed {
            message: message.into(),
            details: None,
        }
    }
}

/// What a built-in tool call returns.
pub type ToolResult = Result<ToolOutput, BuiltinToolError>;

/// Receives partial results while a tool runs (bash output as it arrives).
pub type Progress = Arc<dyn Fn(ToolOutput) + Send + Sync>;

/// Settings the tools read (the `settings.json` keys that apply to them).
#[derive(Debug, Clone, Default)]
pub struct ToolSettings {
    /// `shellPath`: the shell bash runs commands with.
    pub shell_path: Option<PathBuf>,
    /// `shellCommandPrefix`: a line put before every command.
    pub shell_command_prefix: Option<String>,
    /// `images.autoResize` (default on): `false` sends images unchanged.
    pub no_image_resize: bool,
    /// `bashTimeoutSeconds`: the model's `bash` calls without a `timeout` stop after this
    /// many seconds (`None`: never; the user's own `!cmd` has none).
    pub bash_timeout_seconds: Option<f64>,
    /// Extra environment for bash (session id, model...), never secrets.
    pub env: Vec<(String, String)>,
    /// The variables bash commands do not get (DECISIONS §30.7).
    pub env_policy: Arc<crate::env_policy::EnvPolicy>,
}

/// What every tool call shares: the session's working directory, the write queue and settings.
#[derive(Debug, Clone)]
pub struct ToolEnv {
    /// The working directory relative paths start from.
    pub cwd: PathBuf,
    /// The per-file write queue shared by `write` and `edit`.
    pub mutations: MutationQueue,
    /// The settings the tools read.
    pub settings: Arc<ToolSettings>,
}

impl ToolEnv {
    /// An environment over `cwd` with a fresh write queue.
    pub fn new(cwd: PathBuf, settings: ToolSettings) -> Self {
        ToolEnv {
            cwd,
            mutations: MutationQueue::default(),
            settings: Arc::new(settings),
        }
    }
}

/// A tool's declaration as sent to the model.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: &'static str,
    /// A human-readable label.
    pub label: &'static str,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON schema of the arguments.
    pub parameters: Value,
    /// One line for the system prompt's tool list.
    pub snippet: &'static str,
}

/// The declaration of a built-in tool by name.
pub fn spec(name: &str) -> Option<ToolSpec> {
    Some(match name {
        "read" => read::spec(),
        "write" => write::spec(),
        "edit" => edit::spec(),
        "bash" => bash::spec(),
        "grep" => grep::spec(),
        "find" => find::spec(),
        "ls" => ls::spec(),
        _ => return None,
    })
}

/// A built-in tool bound to a session's [`ToolEnv`], as the agent loop calls it.
#[derive(Debug, Clone)]
pub struct BuiltinTool {
    spec: ToolSpec,
    env: ToolEnv,
}

impl BuiltinTool {
    /// The named built-in tool, or `None` for an unknown name.
    pub fn new(name: &str, env: ToolEnv) -> Option<Self> {
        spec(name).map(|spec| BuiltinTool { spec, env })
    }

    /// The tool's declaration.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }
}

/// Every built-in tool over one environment (one write queue for all of them).
pub fn builtin_tools(env: &ToolEnv) -> Vec<arbor_agent::agent::ToolRef> {
    ALL_TOOLS
        .iter()
        .filter_map(|n| BuiltinTool::new(n, env.clone()))
        .map(|t| std::sync::Arc::new(t) as arbor_agent::agent::ToolRef)
        .collect()
}

#[async_trait::async_trait]
impl arbor_agent::agent::AgentTool for BuiltinTool {
    fn name(&self) -> &str {
        self.spec.name
    }
    fn label(&self) -> &str {
        self.spec.label
    }
    fn description(&self) -> &str {
        &self.spec.description
    }
    fn parameters(&self) -> &Value {
        &self.spec.parameters
    }
    /// Every built-in tool ends promptly on cancellation and says what happened: bash's
    /// process group ended, a write or edit applied or not (DECISIONS §28.5).
    fn reports_cancellation(&self) -> bool {
        true
    }
    /// `edit` still takes pi's older forms (top-level `oldText`/`newText`, `edits` as a JSON
    /// string or a single object); they become `edits[]` before the schema check.
    fn prepare_arguments(&self, arguments: Value) -> Value {
        if self.spec.name == "edit" {
            edit::normalize_args(arguments)
        } else {
            arguments
        }
    }
    async fn execute(
        &self,
        call: arbor_agent::agent::ToolInvocation,
    ) -> Result<ToolOutput, arbor_agent::agent::ToolError> {
        let progress = call.progress.clone();
        let sink: Progress = Arc::new(move |out| progress.update(out));
        run(
            self.spec.name,
            &self.env,
            call.arguments,
            call.cancel,
            Some(sink),
        )
        .await
        .map_err(|e| match e {
            BuiltinToolError::Failed { message, details } => {
                let err = arbor_agent::agent::ToolError::new(message);
                match details {
                    Some(d) => err.with_details(d),
                    None => err,
                }
            }
            BuiltinToolError::Aborted(message) => arbor_agent::agent::ToolError::new(message),
        })
    }
}

/// Runs a built-in tool by name.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use arbor_tools::{run, ToolEnv, ToolSettings};
/// use tokio_util::sync::CancellationToken;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("a.txt"), "one\ntwo\n")?;
/// let env = ToolEnv::new(dir.path().to_path_buf(), ToolSettings::default());
/// let args = serde_json::json!({"path": "a.txt", "offset": 2});
/// let out = run("read", &env, args, CancellationToken::new(), None).await?;
/// assert_eq!(out.content[0].as_text(), Some("two\n"));
/// # Ok(())
/// # }
/// ```
pub async fn run(
    name: &str,
    env: &ToolEnv,
    args: Value,
    cancel: tokio_util::sync::CancellationToken,
    progress: Option<Progress>,
) -> ToolResult {
    match name {
        "read" => read::run(env, args, &cancel)
            .await
            .map(read::with_structured_content),
        "write" => write::run(env, args, &cancel).await,
        "edit" => edit::run(env, args, &cancel).await,
        "bash" => bash::run(env, args, cancel, progress).await,
        "grep" => grep::run(env, args, cancel).await,
        "find" => find::run(env, args, cancel).await,
        "ls" => ls::run(env, args).await,
        other => Err(BuiltinToolError::failed(format!("Tool {other} not found"))),
    }
}

/// Parses a tool's arguments; a mismatch names the field, like pi's validation message.
pub(crate) fn parse_args<T: DeserializeOwned>(
    tool: &str,
    args: &Value,
) -> Result<T, BuiltinToolError> {
    serde_path_to_error::deserialize(args.clone()).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // serde says "missing field `path`"; pi says "path: missing".
        let (path, inner) = match inner.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
            Some(name) if path == "." => (name.to_owned(), "missing".to_owned()),
            Some(name) => (format!("{path}.{name}"), "missing".to_owned()),
            None => (path, inner),
        };
        let field = if path == "." { String::new() } else { format!("{path}: ") };
        let pretty = serde_json::to_string_pretty(args).unwrap_or_default();
        BuiltinToolError::failed(format!(
            "Validation failed for tool \"{tool}\":\n  - {field}{inner}\n\nReceived arguments:\n{pretty}"
        ))
    })
}

/// A JSON number argument as a whole count (fractions dropped); `None` when absent or null.
pub(crate) fn count_arg(v: Option<f64>) -> Option<i64> {
    v.filter(|x| x.is_finite()).map(|x| x.floor() as i64)
}

/// Node-style text for an I/O failure on `path` (`ENOENT: no such file or directory, access
/// '<path>'`), the wording pi's tools return.
/// The record of a write or edit cancelled before its rename: nothing changed on disk
/// (DECISIONS §28.8).
pub(crate) fn aborted_unchanged(shown: &str) -> BuiltinToolError {
    BuiltinToolError::Aborted(format!("Operation aborted; {shown} was not changed"))
}

pub(crate) fn io_error_text(err: &std::io::Error, syscall: &str, path: &std::path::Path) -> String {
    use std::io::ErrorKind;
    let (code, text) = match err.kind() {
        ErrorKind::NotFound => ("ENOENT", "no such file or directory"),
        ErrorKind::PermissionDenied => ("EACCES", "permission denied"),
        ErrorKind::IsADirectory => ("EISDIR", "illegal operation on a directory"),
        ErrorKind::NotADirectory => ("ENOTDIR", "not a directory"),
        _ => return format!("{err}, {syscall} '{}'", path.display()),
    };
    format!("{code}: {text}, {syscall} '{}'", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_spec_with_an_object_schema() {
        for name in ALL_TOOLS {
            let s = spec(name).unwrap();
            assert_eq!(s.name, name);
            assert_eq!(s.parameters["type"], "object");
            assert!(!s.description.is_empty());
        }
        assert!(spec("nope").is_none());
    }

    #[test]
    fn validation_errors_name_the_field_and_show_the_arguments() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct A {
            path: String,
        }
        let err = parse_args::<A>("read", &serde_json::json!({"path": 3})).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("Validation failed for tool \"read\":\n  - path: "),
            "{text}"
        );
        assert!(
            text.ends_with("Received arguments:\n{\n  \"path\": 3\n}"),
            "{text}"
        );
    }
}
