//! The `hooks` key of `settings.json` (user file, and the project's when it is trusted): per
//! event name, a list of commands with an optional tool-name matcher and a timeout
//! (DECISIONS §33.10). User hooks run before project hooks; a bad entry is reported with its
//! file and line and skipped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::mcp::config::read_config_text;
use crate::mcp::Diagnostic;

/// Timeout of a hook without `timeout` (seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The events a hook can be attached to (pi's event names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// The session is open (runs in the background; its reply is not used).
    SessionStart,
    /// A prompt was submitted (harness `before_agent_start`).
    Input,
    /// Before a tool runs: may block it or change its arguments.
    ToolCall,
    /// After a tool ran: may replace its result.
    ToolResult,
    /// Before a compaction: may cancel it.
    SessionBeforeCompact,
    /// Before `/tree` navigation: may cancel it.
    SessionBeforeTree,
    /// The run is over.
    AgentEnd,
}

impl HookEvent {
    pub const ALL: [HookEvent; 7] = [
        HookEvent::SessionStart,
        HookEvent::Input,
        HookEvent::ToolCall,
        HookEvent::ToolResult,
        HookEvent::SessionBeforeCompact,
        HookEvent::SessionBeforeTree,
        HookEvent::AgentEnd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session_start",
            HookEvent::Input => "input",
            HookEvent::ToolCall => "tool_call",
            HookEvent::ToolResult => "tool_result",
            HookEvent::SessionBeforeCompact => "session_before_compact",
            HookEvent::SessionBeforeTree => "session_before_tree",
            HookEvent::AgentEnd => "agent_end",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// One configured command.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: HookEvent,
    /// Run with `sh -c` in the session's directory.
    pub command: String,
    /// Tool-name pattern (a regular expression matched against the whole name); `None`
    /// matches every tool. Only for `tool_call` and `tool_result`.
    pub matcher: Option<regex_lite::Regex>,
    pub timeout: Duration,
    /// The settings file that defines it.
    pub source: PathBuf,
}

impl Hook {
    pub fn matches(&self, tool: &str) -> bool {
        self.matcher.as_ref().is_none_or(|m| m.is_match(tool))
    }
}

/// Every hook of a run and what was wrong with the configuration.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    pub hooks: Vec<Hook>,
    pub diagnostics: Vec<Diagnostic>,
}

impl HookSet {
    pub fn for_event(&self, event: HookEvent) -> impl Iterator<Item = &Hook> {
        self.hooks.iter().filter(move |h| h.event == event)
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}

/// Reads the hooks of the user settings file and, when `trusted`, of the project's
/// (`.arbor/settings.json`). The project-trust gate decides `trusted` (DECISIONS §33.8).
pub fn load(arbor_home: &Path, cwd: &Path, trusted: bool) -> HookSet {
    let mut files = vec![arbor_home.join("settings.json")];
    if trusted {
        files.push(cwd.join(".arbor").join("settings.json"));
    }
    let mut set = HookSet::default();
    for file in files {
        load_file(&file, &mut set);
    }
    set
}

fn load_file(path: &Path, set: &mut HookSet) {
    let diag = |line: Option<usize>, message: String| Diagnostic {
        file: path.to_path_buf(),
        line,
        message,
    };
    let text = match read_config_text(path) {
        Ok(Some(t)) => t,
        Ok(None) => return,
        Err(e) => {
            set.diagnostics.push(diag(None, e.to_string()));
            return;
        }
    };
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    if text.trim().is_empty() {
        return;
    }
    // A settings file that is not JSON at all is reported by the settings loader.
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let Some(hooks) = root.get("hooks") else {
        return;
    };
    let line_of = |key: &str| crate::mcp::config::line_of(text, key);
    let Value::Object(events) = hooks else {
        set.diagnostics.push(diag(
            line_of("hooks"),
            "\"hooks\" must be an object of event names".to_owned(),
        ));
        return;
    };
    for (name, list) in events {
        let line = line_of(name);
        let Some(event) = HookEvent::parse(name) else {
            let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
            set.diagnostics.push(diag(
                line,
                format!(
                    "hooks: unknown event \"{name}\" (known: {})",
                    known.join(", ")
                ),
            ));
            continue;
        };
        let Value::Array(items) = list else {
            set.diagnostics.push(diag(
                line,
                format!("hooks.{name} must be an array of hook objects"),
            ));
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            match hook_from(event, item, path) {
                Ok(h) => set.hooks.push(h),
                Err(m) => set
                    .diagnostics
                    .push(diag(line, format!("hooks.{name}[{i}]: {m}"))),
            }
        }
    }
}

/// Why one hook entry is not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EntryError(pub String);

fn hook_from(event: HookEvent, item: &Value, path: &Path) -> Result<Hook, EntryError> {
    let Value::Object(m) = item else {
        return Err(EntryError(
            "must be an object with a \"command\"".to_owned(),
        ));
    };
    let command = match m.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        Some(Value::String(_)) => return Err(EntryError("\"command\" is empty".to_owned())),
        Some(_) => return Err(EntryError("\"command\" must be a string".to_owned())),
        None => return Err(EntryError("needs a \"command\"".to_owned())),
    };
    let matcher = match m.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.is_empty() || p == "*" => None,
        Some(Value::String(p)) => {
            if !matches!(event, HookEvent::ToolCall | HookEvent::ToolResult) {
                return Err(EntryError(format!(
                    "\"matcher\" applies to tool_call and tool_result only, not {}",
                    event.name()
                )));
            }
            Some(regex_lite::Regex::new(&format!("^(?:{p})$")).map_err(|e| {
                EntryError(format!("\"matcher\" {p:?} is not a valid pattern: {e}"))
            })?)
        }
        Some(_) => return Err(EntryError("\"matcher\" must be a string".to_owned())),
    };
    let timeout = match m.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s),
            _ => {
                return Err(EntryError(
                    "\"timeout\" must be a positive number of seconds".to_owned(),
                ))
            }
        },
    };
    Ok(Hook {
        event,
        command,
        matcher,
        timeout,
        source: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_load_with_matchers_and_bad_entries_name_file_and_line() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("settings.json");
        std::fs::write(
            &path,
            "{\n  \"hooks\": {\n    \"tool_call\": [{\"matcher\": \"bash|edit\", \"command\": \"x\", \"timeout\": 2}],\n    \"tool_reslt\": [],\n    \"agent_end\": [{\"command\": 3}]\n  }\n}",
        )
        .unwrap();
        let set = load(home.path(), home.path(), false);
        assert_eq!(set.hooks.len(), 1);
        let h = &set.hooks[0];
        assert!(h.matches("bash") && h.matches("edit") && !h.matches("bash2"));
        assert_eq!(h.timeout, Duration::from_secs(2));
        let texts: Vec<String> = set.diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert!(texts[0].starts_with(&format!(
            "{}:4: hooks: unknown event \"tool_reslt\"",
            path.display()
        )));
        assert_eq!(
            texts[1],
            format!(
                "{}:5: hooks.agent_end[0]: \"command\" must be a string",
                path.display()
            )
        );
    }
}
