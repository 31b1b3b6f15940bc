//! Settings: `<ARBOR_HOME>/settings.json` (global) and `<cwd>/.arbor/settings.json` (project),
//! merged key by key with the project winning (DECISIONS §22.22). Only the keys Arbor
//! uses are read; unknown keys are kept in the merged value and ignored.
//!
//! Keys that run programs or reach outside the project (`shellPath`, `shellCommandPrefix`, and
//! pi's global-only keys) are taken from the global file only: opening a cloned repository must
//! not be enough to make Arbor run a program of the repository's choosing (DECISIONS §22.4).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::CliError;
use arbor_tools::files::{FileKind, ProjectFiles};

/// Keys a project file may not set.
pub const GLOBAL_ONLY_KEYS: [&str; 7] = [
    "shellPath",
    "shellCommandPrefix",
    "defaultProjectTrust",
    "httpProxy",
    "selfUpdateCommand",
    "cacheWarming",
    // A project must not hand the provider keys back to its own commands (DECISIONS §30.7).
    "toolEnvironment",
];

/// The `bash` tool's timeout when neither the model nor `bashTimeoutSeconds` gives one.
pub const DEFAULT_BASH_TIMEOUT_SECONDS: f64 = 1800.0;

/// `ARBOR_HOME`, else `~/.arbor`: settings, auth, models and sessions live there.
pub fn arbor_home() -> PathBuf {
    arbor_agent::session::jsonl::layout::arbor_home()
}

/// Compaction settings (`compaction.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSettings {
    pub enabled: bool,
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
}

/// Retry settings (`retry.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySettings {
    pub enabled: bool,
    pub max_retries: u32,
    pub base_delay_ms: u64,
    pub max_agent_delay_ms: u64,
    /// `retry.provider.maxRetryDelayMs` (legacy `retry.maxDelayMs`): the longest wait a server
    /// may ask for; 0 = no limit (DECISIONS §29.3).
    pub max_retry_delay_ms: u64,
}

/// The merged settings.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    merged: Map<String, Value>,
}

/// Merges `over` into `base`: objects key by key (recursively), anything else replaced.
fn merge(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn read_object(
    path: &Path,
    project: &ProjectFiles,
) -> Result<Option<Map<String, Value>>, CliError> {
    // Bounded, regular files only, inside the project (DECISIONS §30.3).
    let Some(file) = project.read(path, FileKind::SETTINGS)? else {
        return Ok(None);
    };
    let text = file.text();
    let text = text.as_str();
    if text.trim().is_empty() {
        return Ok(Some(Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => Err(CliError::Config(format!(
            "{}: settings must be a JSON object",
            path.display()
        ))),
        Err(e) => Err(CliError::Config(format!(
            "{}: invalid JSON at line {} column {}: {e}",
            path.display(),
            e.line(),
            e.column()
        ))),
    }
}

impl Settings {
    /// `mcpStartTimeoutMs`: how long an MCP server may take to start, and how long a prompt
    /// waits for servers still starting (default 10 s; DECISIONS §33.5).
    pub fn mcp_start_timeout(&self) -> std::time::Duration {
        self.merged
            .get("mcpStartTimeoutMs")
            .and_then(Value::as_u64)
            .map_or(
                crate::mcp::manager::DEFAULT_START_TIMEOUT,
                std::time::Duration::from_millis,
            )
    }

    /// Reads and merges the global and project files (either may be missing).
    pub fn load(home: &Path, cwd: &Path) -> Result<Settings, CliError> {
        Settings::load_with_trust(home, cwd, true)
    }

    /// The global file alone: what decides project trust (`defaultProjectTrust`) is read
    /// before any project file may be.
    pub fn load_global(home: &Path) -> Result<Settings, CliError> {
        let files = ProjectFiles::for_cwd(home);
        Ok(Settings {
            merged: read_object(&home.join("settings.json"), &files)?.unwrap_or_default(),
        })
    }

    /// [`Settings::load`], with the project file read only when the folder is trusted
    /// (DECISIONS §32.11).
    pub fn load_with_trust(home: &Path, cwd: &Path, trusted: bool) -> Result<Settings, CliError> {
        let files = ProjectFiles::for_cwd(cwd);
        let mut merged = read_object(&home.join("settings.json"), &files)?.unwrap_or_default();
        if !trusted {
            return Ok(Settings { merged });
        }
        if let Some(mut project) = read_object(&cwd.join(".arbor").join("settings.json"), &files)? {
            for key in GLOBAL_ONLY_KEYS {
                project.remove(key);
            }
            merge(&mut merged, project);
        }
        Ok(Settings { merged })
    }

    /// Settings from a JSON object (tests, RPC).
    pub fn from_value(v: Value) -> Settings {
        Settings {
            merged: v.as_object().cloned().unwrap_or_default(),
        }
    }

    fn get(&self, path: &[&str]) -> Option<&Value> {
        let mut cur = self.merged.get(path[0])?;
        for k in &path[1..] {
            cur = cur.get(k)?;
        }
        Some(cur)
    }

    fn str(&self, path: &[&str]) -> Option<String> {
        self.get(path).and_then(Value::as_str).map(str::to_owned)
    }

    fn bool_or(&self, path: &[&str], default: bool) -> bool {
        self.get(path).and_then(Value::as_bool).unwrap_or(default)
    }

    fn u64_or(&self, path: &[&str], default: u64) -> u64 {
        self.get(path).and_then(Value::as_u64).unwrap_or(default)
    }

    /// `defaultProjectTrust`: `ask` (default), `always` or `never`.
    pub fn default_project_trust(&self) -> crate::trust::DefaultTrust {
        crate::trust::DefaultTrust::parse(self.str(&["defaultProjectTrust"]).as_deref())
    }

    /// The merged settings as JSON (`/settings` shows them).
    pub fn as_value(&self) -> Value {
        Value::Object(self.merged.clone())
    }

    pub fn default_provider(&self) -> Option<String> {
        self.str(&["defaultProvider"])
    }
    pub fn default_model(&self) -> Option<String> {
        self.str(&["defaultModel"])
    }
    pub fn default_thinking_level(&self) -> Option<String> {
        self.str(&["defaultThinkingLevel"])
    }
    /// `defaultTools`: the tools on when no tool flag is given.
    pub fn default_tools(&self) -> Option<Vec<String>> {
        let list = self.get(&["defaultTools"])?.as_array()?;
        Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        )
    }
    /// `sessionDir`, resolved against `cwd` when relative and `~`-expanded.
    pub fn session_dir(&self, cwd: &Path) -> Option<PathBuf> {
        let raw = self.str(&["sessionDir"])?;
        let expanded = arbor_tools::path::expand(&raw);
        let p = PathBuf::from(expanded);
        Some(if p.is_absolute() { p } else { cwd.join(p) })
    }
    /// `sessionStore`: a PostgreSQL connection string for the agent's sessions.
    pub fn session_store(&self) -> Option<String> {
        self.str(&["sessionStore"]).filter(|s| !s.is_empty())
    }
    pub fn shell_path(&self) -> Option<PathBuf> {
        self.str(&["shellPath"]).map(PathBuf::from)
    }
    pub fn shell_command_prefix(&self) -> Option<String> {
        self.str(&["shellCommandPrefix"])
    }
    /// `bashTimeoutSeconds`: the `bash` tool's timeout when the model gives none; default 1800
    /// (30 minutes), `0` for none (DECISIONS §28.4).
    pub fn bash_timeout_seconds(&self) -> Option<f64> {
        let secs = self
            .get(&["bashTimeoutSeconds"])
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite() && *s >= 0.0)
            .unwrap_or(DEFAULT_BASH_TIMEOUT_SECONDS);
        (secs > 0.0).then_some(secs)
    }
    pub fn image_auto_resize(&self) -> bool {
        self.bool_or(&["images", "autoResize"], true)
    }
    pub fn steering_mode(&self) -> Option<String> {
        self.str(&["steeringMode"])
    }
    pub fn follow_up_mode(&self) -> Option<String> {
        self.str(&["followUpMode"])
    }
    /// `enabledModels`: the model scope patterns used when `--models` is not given.
    pub fn enabled_models(&self) -> Option<Vec<String>> {
        let list = self.get(&["enabledModels"])?.as_array()?;
        Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        )
    }
    pub fn http_idle_timeout_ms(&self) -> u64 {
        self.u64_or(&["httpIdleTimeoutMs"], 300_000)
    }
    /// `toolEnvironment.exclude` and `.include`: glob lists of variable names bash commands
    /// lose or keep on top of the default policy (DECISIONS §30.7).
    pub fn tool_environment(&self) -> (Vec<String>, Vec<String>) {
        let list = |key: &str| -> Vec<String> {
            self.get(&["toolEnvironment", key])
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        (list("exclude"), list("include"))
    }
    /// `httpMaxResponseBytes`: the most one provider response may hold (DECISIONS §30.1);
    /// `None` (absent, zero or not a number) keeps arbor-ai's default.
    pub fn http_max_response_bytes(&self) -> Option<u64> {
        self.get(&["httpMaxResponseBytes"])
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
    }
    /// `httpMaxEventBytes`: the most one server-sent event may hold (DECISIONS §30.1).
    pub fn http_max_event_bytes(&self) -> Option<usize> {
        self.get(&["httpMaxEventBytes"])
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .and_then(|n| usize::try_from(n).ok())
    }
    /// The request options every model call starts from — the turn's, compaction's and branch
    /// summaries' alike, so none of them can hang or flood (DECISIONS §30.1).
    pub fn base_stream_options(&self) -> arbor_ai::StreamOptions {
        let mut options = arbor_ai::StreamOptions::default()
            .with_timeout(std::time::Duration::from_millis(
                self.http_idle_timeout_ms(),
            ))
            .with_max_retry_delay(std::time::Duration::from_millis(
                self.retry().max_retry_delay_ms,
            ));
        options.max_response_bytes = self.http_max_response_bytes();
        options.max_event_bytes = self.http_max_event_bytes();
        options
    }
    pub fn compaction(&self) -> CompactionSettings {
        CompactionSettings {
            enabled: self.bool_or(&["compaction", "enabled"], true),
            reserve_tokens: self.u64_or(&["compaction", "reserveTokens"], 16_384),
            keep_recent_tokens: self.u64_or(&["compaction", "keepRecentTokens"], 20_000),
        }
    }
    /// `branchSummary.skipPrompt`: `/tree` moves without asking "Summarize branch?" (no
    /// summary), as pi does (DECISIONS §23.120).
    pub fn branch_summary_skip_prompt(&self) -> bool {
        self.bool_or(&["branchSummary", "skipPrompt"], false)
    }
    pub fn retry(&self) -> RetrySettings {
        RetrySettings {
            enabled: self.bool_or(&["retry", "enabled"], true),
            max_retries: self
                .u64_or(&["retry", "maxRetries"], 3)
                .min(u64::from(u32::MAX)) as u32,
            base_delay_ms: self.u64_or(&["retry", "baseDelayMs"], 2000),
            max_agent_delay_ms: self.u64_or(&["retry", "maxAgentDelayMs"], 60_000),
            max_retry_delay_ms: self
                .get(&["retry", "provider", "maxRetryDelayMs"])
                .or_else(|| self.get(&["retry", "maxDelayMs"]))
                .and_then(Value::as_u64)
                .unwrap_or(arbor_ai::retry::DEFAULT_MAX_RETRY_DELAY_MS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn project_settings_merge_over_global_ones_but_cannot_pick_the_shell() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("settings.json"),
            r#"{"defaultModel":"a","compaction":{"reserveTokens":1000,"enabled":true},"shellPath":"/bin/sh"}"#,
        )
        .unwrap();
        std::fs::create_dir(cwd.path().join(".arbor")).unwrap();
        std::fs::write(
            cwd.path().join(".arbor/settings.json"),
            r#"{"defaultModel":"b","compaction":{"enabled":false},"shellPath":"/tmp/evil","retry":{"maxRetries":5}}"#,
        )
        .unwrap();
        let s = Settings::load(home.path(), cwd.path()).unwrap();
        assert_eq!(s.default_model().as_deref(), Some("b"));
        assert_eq!(
            s.compaction(),
            CompactionSettings {
                enabled: false,
                reserve_tokens: 1000,
                keep_recent_tokens: 20_000
            }
        );
        assert_eq!(s.shell_path(), Some(PathBuf::from("/bin/sh")));
        assert_eq!(s.retry().max_retries, 5);
        assert_eq!(s.retry().base_delay_ms, 2000);
        assert!(!s.branch_summary_skip_prompt());
        let s = Settings::from_value(json!({"branchSummary": {"skipPrompt": true}}));
        assert!(s.branch_summary_skip_prompt());
    }

    #[test]
    fn broken_files_are_named_with_line_and_column() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("settings.json"), "{\n  \"a\": ,\n}").unwrap();
        let err = Settings::load(home.path(), home.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("settings.json: invalid JSON at line 2 column"),
            "{err}"
        );
        let s = Settings::from_value(json!({"sessionDir": "rel/dir"}));
        assert_eq!(
            s.session_dir(Path::new("/p")),
            Some(PathBuf::from("/p/rel/dir"))
        );
    }
}
