//! The TUI's side of skills, prompt templates, `/reload` and `/settings` (DECISIONS §32.5,
//! §32.14, §32.15): the completion list, the start-up report as a notice, expanding a
//! submitted line, and re-reading everything on `/reload`.

use crate::config::{arbor_home, Settings};
use crate::resources::{ResourceError, Resources};
use crate::tui::slash;
use crate::tui::state::Outcome;

use super::Driver;

impl Driver {
    /// Offers the templates and skill commands for completion and reports what was found
    /// (and every warning) as a notice.
    pub(super) fn announce_resources(&mut self, resources: &Resources, reloaded: bool) {
        self.state.user_commands = resources
            .commands()
            .into_iter()
            .filter(|(name, _)| !slash::is_builtin(name))
            .collect();
        let mut lines = resources.report();
        for t in &resources.templates {
            if slash::is_builtin(&t.name) {
                lines.push(format!(
                    "Warning: {}: the built-in /{} takes precedence over this template",
                    t.file.display(),
                    t.name
                ));
            }
        }
        if !self.app.trust.is_trusted()
            && !crate::trust::protected_resources(&self.app.cwd).is_empty()
        {
            lines.push(
                "Project resources (.arbor, .pi, .agents) are not loaded: this folder is not trusted (start with --approve to trust it)"
                    .into(),
            );
        }
        if reloaded {
            lines.insert(
                0,
                "Reloaded settings, skills, prompt templates and context files".into(),
            );
        }
        if !lines.is_empty() {
            self.done(Outcome::Notice(lines.join("\n")));
        }
    }

    /// `--verbose` (pi's flag, DECISIONS §23.160): one notice at start with what this run
    /// loaded, each skill and template with its file, so "why is X (not) there" has an answer
    /// on screen.
    pub fn announce_startup(&mut self) {
        let m = self.app.harness.model();
        let mut lines = vec![
            format!("arbor {}", env!("CARGO_PKG_VERSION")),
            format!("Working directory: {}", self.app.cwd.display()),
            format!(
                "Session: {}",
                self.app
                    .session_file
                    .as_ref()
                    .map_or("in memory (not saved)".to_owned(), |p| p
                        .display()
                        .to_string())
            ),
            format!(
                "Model: {}/{} (context window {})",
                m.provider, m.id, m.context_window
            ),
            format!("Tools: {}", self.app.harness.active_tool_names().join(", ")),
            format!("Project trust: {}", self.app.trust.describe()),
        ];
        let resources = self.app.resources.resources();
        for s in &resources.skills {
            lines.push(format!("Skill {}: {}", s.name, s.file.display()));
        }
        for t in &resources.templates {
            lines.push(format!("Template /{}: {}", t.name, t.file.display()));
        }
        match &self.app.mcp {
            Some(mcp) => {
                for s in mcp.status() {
                    lines.push(format!("MCP server {}: {}", s.name, s.source.display()));
                }
            }
            None => lines.push("MCP servers: off for this run".into()),
        }
        self.done(Outcome::Notice(lines.join("\n")));
    }

    /// A submitted line with its `/template` or `/skill:name` expanded (`Err`: shown instead
    /// of sending anything).
    pub(super) fn expand_line(&self, text: &str) -> Result<String, ResourceError> {
        self.app.resources.expand(text)
    }

    /// `/reload`: settings (the policy of the next prompt), skills, templates, the system
    /// prompt's files. A broken settings file keeps the old settings and says why.
    pub(super) fn reload_resources(&mut self) {
        match Settings::load_with_trust(&arbor_home(), &self.app.cwd, self.app.trust.is_trusted()) {
            Ok(s) => self.app.settings = s,
            Err(e) => self.done(Outcome::Error(format!(
                "Settings not reloaded (the previous ones stay): {e}"
            ))),
        }
        match self.app.resources.reload() {
            Ok((resources, warnings)) => {
                for warning in warnings {
                    self.done(Outcome::Error(format!("Warning: {warning}")));
                }
                self.announce_resources(&resources, true);
            }
            Err(e) => self.done(Outcome::Error(format!(
                "Resources not reloaded (the previous ones stay): {e}"
            ))),
        }
    }

    /// `/settings`: the settings in force, the trust decision and the loaded resources;
    /// `/settings key value` sets one in the global file first.
    pub(super) fn show_settings(&mut self, arg: Option<String>) {
        if let Some(arg) = arg {
            let (key, value) = match arg.split_once(char::is_whitespace) {
                Some((k, v)) => (k, v.trim()),
                None => {
                    self.done(Outcome::Error(
                        "Usage: /settings (show) or /settings <key> <value> (set)".into(),
                    ));
                    return;
                }
            };
            match crate::settings_edit::set_global(&arbor_home(), key, value) {
                Ok(v) => {
                    match Settings::load_with_trust(
                        &arbor_home(),
                        &self.app.cwd,
                        self.app.trust.is_trusted(),
                    ) {
                        Ok(s) => self.app.settings = s,
                        Err(e) => self.done(Outcome::Error(e.to_string())),
                    }
                    self.done(Outcome::Notice(format!(
                        "Set {key} = {v} in {}",
                        arbor_home().join("settings.json").display()
                    )));
                }
                Err(e) => self.done(Outcome::Error(e.to_string())),
            }
            return;
        }
        let json = serde_json::to_string_pretty(&self.app.settings.as_value())
            .unwrap_or_else(|e| e.to_string());
        let resources = self.app.resources.resources();
        let known: Vec<&str> = crate::settings_edit::KNOWN_KEYS
            .iter()
            .map(|(k, _)| *k)
            .collect();
        let text = format!(
            "Settings in force ({} merged with the project's .arbor/settings.json when trusted):\n{json}\n\
             Project trust: {}\nSkills: {}, prompt templates: {}\n\
             Set one with /settings <key> <value>; keys: {}",
            arbor_home().join("settings.json").display(),
            self.app.trust.describe(),
            resources.skills.len(),
            resources.templates.len(),
            known.join(", ")
        );
        self.done(Outcome::Notice(text));
    }
}
