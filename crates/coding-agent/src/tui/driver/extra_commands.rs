//! The driver's side of pi's remaining commands and keys (DECISIONS §23.154–§23.158): Alt+Up
//! (queued messages back to the editor), `/scoped-models`, `/import`, `/changelog`, `/debug`.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;

use arbor_agent::context::projection::ContextOptions;
use arbor_agent::message::AgentMessage;
use arbor_ai::Message;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::config::arbor_home;
use crate::tui::state::{Effect, Outcome};

use super::Driver;

/// Arbor's changelog, newest version first (shown oldest first, so the newest ends up next
/// to the editor, as pi shows its own).
const CHANGELOG: &str = include_str!("../../../CHANGELOG.md");

/// The file `/debug` writes, in the Arbor home directory.
pub const DEBUG_LOG: &str = "arbor-debug.log";

fn queued_text(m: &AgentMessage) -> String {
    match m {
        AgentMessage::Llm(Message::User(u)) => u.content.joined_text(""),
        _ => String::new(),
    }
}

impl Driver {
    /// Alt+Up: takes every queued steering and follow-up message off the harness's queues and
    /// puts them in the editor above what is typed there (pi's `restoreQueuedMessagesToEditor`),
    /// so a message is never both queued and in the editor.
    pub(super) fn dequeue(&mut self) {
        let (steer, follow) = self.app.harness.clear_queues();
        self.state.steering.clear();
        self.state.follow_ups.clear();
        let texts: Vec<String> = steer.iter().chain(&follow).map(queued_text).collect();
        if texts.is_empty() {
            self.state.footer.hint = Some("No queued messages to restore".into());
            return;
        }
        let current = self.state.editor.expanded();
        let combined: Vec<&str> = texts
            .iter()
            .map(String::as_str)
            .chain([current.as_str()])
            .filter(|t| !t.trim().is_empty())
            .collect();
        self.state.editor.set_text(&combined.join("\n\n"));
        let n = texts.len();
        let s = if n == 1 { "" } else { "s" };
        self.state.footer.hint = Some(format!("Restored {n} queued message{s} to the editor"));
    }

    /// `/scoped-models`: shows the models Ctrl+P cycles through; with patterns (as `--models`
    /// takes them) sets them for this run; `all` goes back to every usable model.
    pub(super) fn scoped_models(&mut self, arg: Option<String>) {
        let arg = arg.as_deref().map(str::trim).unwrap_or_default();
        if arg.is_empty() {
            let current = self.app.harness.model();
            let rows: Vec<String> = self
                .app
                .cycle_models
                .iter()
                .map(|(p, id)| {
                    let mark = if *p == current.provider && *id == current.id {
                        "*"
                    } else {
                        " "
                    };
                    format!("{mark} {p}/{id}")
                })
                .collect();
            self.done(Outcome::Notice(format!(
                "Ctrl+P cycles through {} model{}:\n{}\nSet them with /scoped-models <patterns> \
                 (comma-separated, as --models), or /scoped-models all; save them with \
                 /settings enabledModels [\"…\"]",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" },
                rows.join("\n")
            )));
            return;
        }
        if arg == "all" {
            self.app.cycle_models = self.app.usable_models.clone();
            self.done(Outcome::Notice(format!(
                "Ctrl+P cycles through every usable model ({})",
                self.app.cycle_models.len()
            )));
            return;
        }
        let usable: Vec<arbor_ai::Model> = self
            .app
            .usable_models
            .iter()
            .filter_map(|(p, id)| self.app.registry.get(p, id).cloned())
            .collect();
        let scope = crate::scope::resolve(&crate::scope::split_patterns(arg), &usable);
        for w in &scope.warnings {
            self.done(Outcome::Error(format!("Warning: {w}")));
        }
        if scope.models.is_empty() {
            self.done(Outcome::Error(format!(
                "/scoped-models: no usable model matches '{arg}'; the scope is unchanged"
            )));
            return;
        }
        self.app.cycle_models = scope
            .models
            .iter()
            .map(|s| (s.model.provider.clone(), s.model.id.clone()))
            .collect();
        let names: Vec<String> = self
            .app
            .cycle_models
            .iter()
            .map(|(p, id)| format!("{p}/{id}"))
            .collect();
        self.done(Outcome::Notice(format!(
            "Ctrl+P now cycles through: {}",
            names.join(", ")
        )));
    }

    /// `/import PATH`: copies the file into the store and switches to it.
    pub(super) async fn import(&mut self, path: String) {
        let Some(repo) = &self.app.repo else {
            self.done(Outcome::Error("No session store to import into".into()));
            return;
        };
        let file = arbor_tools::path::resolve(&path, &self.app.cwd);
        match crate::session_import::import_jsonl(repo, &file).await {
            Ok(dest) => {
                self.terminal_effects
                    .push(Effect::OpenSession(dest.display().to_string()));
            }
            Err(e) => self.done(Outcome::Error(format!(
                "Failed to import session: {}",
                e.to_string().trim_start_matches("/import: ")
            ))),
        }
    }

    /// `/changelog`: every version's notes, oldest first.
    pub(super) fn changelog(&mut self) {
        let body = CHANGELOG
            .split_once("\n## ")
            .map_or("", |(_, rest)| rest)
            .trim_end();
        let mut entries: Vec<String> = body.split("\n## ").map(|e| format!("## {e}")).collect();
        entries.reverse();
        let text = if entries.iter().all(|e| e.trim() == "##") {
            "No changelog entries found.".to_owned()
        } else {
            format!("What's new\n\n{}", entries.join("\n\n"))
        };
        self.done(Outcome::Notice(text));
    }

    /// `/debug`: writes the screen as drawn now (one line per row, with its width) and the
    /// context's messages as JSONL to `<ARBOR_HOME>/arbor-debug.log` (0600: it holds the
    /// conversation), for a bug report.
    pub(super) async fn debug(&mut self) {
        let (w, h) = self.state.size;
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        self.render(area, &mut buf);
        let mut out = format!(
            "Debug output at {}\nTerminal: {w}x{h}\n\n=== Screen rows ===\n",
            arbor_ai::time::now_iso()
        );
        for y in 0..h {
            let row: String = (0..w)
                .filter_map(|x| buf.cell((x, y)).map(|c| c.symbol().to_owned()))
                .collect();
            let row = row.trim_end();
            out.push_str(&format!(
                "[{y}] (w={}) {}\n",
                unicode_width::UnicodeWidthStr::width(row),
                serde_json::Value::String(row.to_owned())
            ));
        }
        out.push_str("\n=== Context messages (JSONL) ===\n");
        match self
            .app
            .session
            .build_context(&ContextOptions::default())
            .await
        {
            Ok(ctx) => {
                for m in ctx.messages.iter() {
                    match serde_json::to_string(m) {
                        Ok(line) => out.push_str(&line),
                        Err(e) => out.push_str(&format!("(unserializable message: {e})")),
                    }
                    out.push('\n');
                }
            }
            Err(e) => out.push_str(&format!("(the context could not be built: {e})\n")),
        }
        let path = arbor_home().join(DEBUG_LOG);
        match write_private(&path, out.as_bytes()) {
            Ok(()) => self.done(Outcome::Notice(format!(
                "Debug log written\n{}",
                path.display()
            ))),
            Err(e) => self.done(Outcome::Error(format!(
                "Debug log not written: {}: {e}",
                path.display()
            ))),
        }
    }
}

/// Writes `bytes` to `path` (0600, replacing an older log), making its folder 0700.
fn write_private(path: &PathBuf, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An older log made with other bits keeps them on open: set them.
    use std::os::unix::fs::PermissionsExt as _;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(bytes)
}
