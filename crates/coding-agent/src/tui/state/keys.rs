//! What each key does: the editor's submit (slash commands, `!cmd`, prompts, steering), the
//! completion popup, the overlays' keys and the app-wide shortcuts.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::checkpoints::RestoreMode;
use crate::tui::component::Flow;
use crate::tui::editor::EditKey;
use crate::tui::picker::search::SearchPick;
use crate::tui::picker::session::SessionPick;
use crate::tui::slash::{self, Slash};
use crate::tui::slash_extra::ExtraCommand;
use crate::tui::summarize::{SummarizePrompt, SummaryChoice, SummaryProgress};
use crate::tui::tree::TreeAction;

use super::{AppState, Completion, Effect, Overlay, DOUBLE_CTRL_C, DOUBLE_ESC, HOTKEYS};

impl AppState {
    /// Sends what the editor holds: a command, a shell command, a prompt, or (while running)
    /// a steering message.
    fn submit(&mut self) -> Vec<Effect> {
        let shown = self.editor.text().trim().to_owned();
        if shown.is_empty() {
            return Vec::new();
        }
        if let Some(cmd) = slash::parse(&shown) {
            match cmd {
                Ok(c) => {
                    self.editor.take();
                    return self.command(c);
                }
                // A template or skill command is a prompt; the driver expands it.
                Err(slash::SlashError::Unknown(name))
                    if name.starts_with("skill:")
                        || self.user_commands.iter().any(|(n, _)| *n == name) => {}
                Err(e) => {
                    self.error(e.to_string());
                    return Vec::new();
                }
            }
        }
        if let Some(rest) = shown.strip_prefix('!') {
            let (include, command) = match rest.strip_prefix('!') {
                Some(c) => (false, c.trim()),
                None => (true, rest.trim()),
            };
            if command.is_empty() {
                return Vec::new();
            }
            if self.is_running() || self.background.is_some() {
                self.error("Wait for the agent to finish (or press Esc) before running a command");
                return Vec::new();
            }
            if self.loading {
                self.error("Wait for the session to finish loading before running a command");
                return Vec::new();
            }
            let command = command.to_owned();
            self.editor.take();
            self.background = Some(format!("running {command}"));
            return vec![Effect::Bash { command, include }];
        }
        let text = self.editor.take();
        if self.is_running() {
            vec![Effect::Steer(text)]
        } else if self.background.is_some() {
            self.error("Busy: wait for the current operation to finish (Esc cancels it)");
            self.editor.set_text(&text);
            Vec::new()
        } else {
            self.prompt(text)
        }
    }

    fn command(&mut self, c: Slash) -> Vec<Effect> {
        // Commands that change the session or start work need an idle agent.
        let needs_idle = !matches!(
            c,
            Slash::Hotkeys
                | Slash::Quit
                | Slash::Session
                | Slash::Copy
                | Slash::Name(None)
                | Slash::Settings(None)
                | Slash::Mcp(_)
                | Slash::Extra(
                    ExtraCommand::ScopedModels(_) | ExtraCommand::Changelog | ExtraCommand::Debug
                )
                | Slash::Help
                | Slash::Login(_)
                | Slash::Logout(_)
        );
        if needs_idle && (self.is_running() || self.background.is_some()) {
            self.error("Wait for the agent to finish (or press Esc) before running this command");
            return Vec::new();
        }
        if needs_idle && self.loading {
            self.error("Wait for the session to finish loading before running this command");
            return Vec::new();
        }
        match c {
            Slash::Tree => vec![Effect::OpenTree],
            Slash::Fork => vec![Effect::Fork],
            Slash::Clone => vec![Effect::Clone],
            Slash::New => vec![Effect::New],
            Slash::Resume => vec![Effect::Resume],
            Slash::Search(words) => vec![Effect::OpenSearch(words)],
            Slash::UndoRestore => {
                self.background = Some("restoring the workspace".into());
                vec![Effect::UndoRestore]
            }
            Slash::Name(Some(n)) => vec![Effect::SetName(n)],
            Slash::Name(None) => vec![Effect::ShowName],
            Slash::Session => vec![Effect::SessionStats],
            Slash::Model(spec) => vec![Effect::SetModel(spec)],
            Slash::Thinking(level) => vec![Effect::SetThinking(level)],
            Slash::Compact(instr) => {
                self.begin_operation("Compacting the session…".to_owned());
                self.background = Some("compacting".into());
                self.footer.compacting = Some("compacting…".into());
                vec![Effect::Compact(instr)]
            }
            Slash::Export(p) => vec![Effect::Export(p)],
            Slash::Share => vec![Effect::Share],
            Slash::Copy => vec![Effect::Copy],
            Slash::Settings(arg) => vec![Effect::Settings(arg)],
            Slash::Reload => vec![Effect::Reload],
            Slash::Mcp(args) => vec![Effect::Mcp(args)],
            Slash::Help => {
                self.notice(crate::tui::help::help_text(&self.user_commands));
                Vec::new()
            }
            Slash::Login(p) => vec![Effect::Login(p)],
            Slash::Logout(p) => vec![Effect::Logout(p)],
            Slash::Hotkeys => {
                let w = HOTKEYS.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
                let table: Vec<String> = HOTKEYS
                    .iter()
                    .map(|(k, v)| format!("{k:<w$}  {v}"))
                    .collect();
                self.notice(table.join("\n"));
                Vec::new()
            }
            Slash::Quit => {
                self.quit = true;
                vec![Effect::Quit]
            }
            Slash::Extra(ExtraCommand::ScopedModels(arg)) => vec![Effect::ScopedModels(arg)],
            Slash::Extra(ExtraCommand::Import(Some(path))) => vec![Effect::Import(path)],
            Slash::Extra(ExtraCommand::Import(None)) => {
                self.error("Usage: /import <path.jsonl>");
                Vec::new()
            }
            Slash::Extra(ExtraCommand::Changelog) => vec![Effect::Changelog],
            Slash::Extra(ExtraCommand::Debug) => vec![Effect::Debug],
        }
    }

    /// Recomputes the completion popup from the editor text.
    pub(super) fn refresh_completion(&mut self) {
        let text = self.editor.text();
        let items: Vec<(String, String)> = if text.starts_with('/') {
            slash::candidates(text, &self.user_commands)
                .into_iter()
                .map(|(n, h)| (format!("/{n}"), h))
                .collect()
        } else {
            let token = self.editor.current_token();
            match token.strip_prefix('@') {
                Some(typed) => {
                    let typed = typed.to_lowercase();
                    self.files
                        .iter()
                        .filter(|f| f.to_lowercase().contains(&typed))
                        .take(50)
                        .map(|f| (format!("@{f}"), String::new()))
                        .collect()
                }
                None => Vec::new(),
            }
        };
        self.completion = (!items.is_empty()).then_some(Completion { items, selected: 0 });
    }

    /// Applies the selected completion. Returns whether one was applied.
    fn accept_completion(&mut self) -> bool {
        let Some(c) = self.completion.take() else {
            return false;
        };
        let Some((with, _)) = c.items.get(c.selected) else {
            return false;
        };
        if with.starts_with('/') {
            self.editor.set_text(with);
        } else {
            self.editor.replace_token(&format!("{with} "));
        }
        true
    }

    /// Hands a key to the open overlay and acts on what it reports.
    fn overlay_key(&mut self, k: KeyEvent, now: Instant) -> Vec<Effect> {
        let Some(overlay) = self.overlay.take() else {
            return Vec::new();
        };
        match overlay {
            Overlay::Tree(mut nav) => match nav.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Tree(nav)),
                Flow::Cancel => {}
                Flow::Done(TreeAction::SetLabel { id, label }) => {
                    self.overlay = Some(Overlay::Tree(nav));
                    return vec![Effect::SetLabel { id, label }];
                }
                Flow::Done(TreeAction::Navigate { target_id }) => {
                    let tree = nav.tree();
                    if tree.leaf_id.as_deref() == Some(target_id.as_str()) {
                        self.notice("Already at this point");
                        return Vec::new();
                    }
                    let preview = nav.entry_preview(&target_id, 80).unwrap_or_default();
                    // The restore question comes only when this run records checkpoints and the
                    // target has one at or above it (DECISIONS §23.12).
                    let has_checkpoint = self.code_restore
                        && crate::tui::tree::nearest_checkpoint(tree, &target_id).is_some();
                    if self.skip_summary_prompt && !has_checkpoint {
                        self.background = Some("navigating".into());
                        return vec![Effect::NavigateTree {
                            target: Some(target_id),
                            summarize: false,
                            custom_instructions: None,
                            restore: RestoreMode::ConversationOnly,
                        }];
                    }
                    let prompt = if self.skip_summary_prompt {
                        SummarizePrompt::restore_only(&preview, self.theme)
                    } else {
                        SummarizePrompt::new(&preview, has_checkpoint, self.theme)
                    };
                    self.overlay = Some(Overlay::Summarize {
                        prompt: Box::new(prompt),
                        target: target_id,
                    });
                }
            },
            Overlay::Summarize { mut prompt, target } => match prompt.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Summarize { prompt, target }),
                Flow::Cancel => {}
                Flow::Done(choice) => {
                    let (summarize, custom) = match choice.summary {
                        SummaryChoice::None => (false, None),
                        SummaryChoice::Summarize => (true, None),
                        SummaryChoice::Custom(c) => (true, Some(c)),
                    };
                    if summarize {
                        self.overlay = Some(Overlay::Progress(Box::new(SummaryProgress::new(
                            self.theme,
                        ))));
                        self.summary_since = Some(now);
                        self.begin_operation("Summarizing the branch…".to_owned());
                    }
                    self.background = Some("navigating".into());
                    return vec![Effect::NavigateTree {
                        target: Some(target),
                        summarize,
                        custom_instructions: custom,
                        restore: choice.restore,
                    }];
                }
            },
            Overlay::Progress(mut p) => {
                let flow = p.handle_key(k);
                self.overlay = Some(Overlay::Progress(p));
                if flow == Flow::Cancel {
                    return vec![Effect::Abort];
                }
            }
            Overlay::Sessions(mut picker) => match picker.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Sessions(picker)),
                Flow::Cancel => {}
                Flow::Done(SessionPick::Open(info)) => {
                    return vec![Effect::OpenSession(info.location)]
                }
                Flow::Done(SessionPick::Delete { location, .. }) => {
                    picker.remove(&location);
                    self.overlay = Some(Overlay::Sessions(picker));
                    return vec![Effect::DeleteSession(location)];
                }
                Flow::Done(SessionPick::Search(words)) => {
                    return vec![Effect::OpenSearch(
                        Some(words).filter(|w| !w.trim().is_empty()),
                    )]
                }
            },
            Overlay::Search(mut picker) => match picker.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Search(picker)),
                Flow::Cancel => {}
                Flow::Done(SearchPick::Run(words)) => {
                    self.overlay = Some(Overlay::Search(picker));
                    return vec![Effect::RunSearch(words)];
                }
                Flow::Done(SearchPick::Open { location, entry_id }) => {
                    return vec![Effect::OpenSessionAt { location, entry_id }]
                }
            },
            Overlay::Fork(mut picker) => match picker.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Fork(picker)),
                Flow::Cancel => {}
                Flow::Done(p) if self.code_restore && p.has_checkpoint => {
                    let prompt = SummarizePrompt::fork(&p.text, self.theme);
                    self.overlay = Some(Overlay::ForkRestore {
                        prompt: Box::new(prompt),
                        point: p,
                    });
                }
                Flow::Done(p) => {
                    return vec![Effect::ForkAt {
                        entry_id: p.entry_id,
                        text: p.text,
                        restore: RestoreMode::ConversationOnly,
                    }]
                }
            },
            Overlay::ForkRestore { mut prompt, point } => match prompt.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::ForkRestore { prompt, point }),
                Flow::Cancel => {}
                Flow::Done(choice) => {
                    return vec![Effect::ForkAt {
                        entry_id: point.entry_id,
                        text: point.text,
                        restore: choice.restore,
                    }]
                }
            },
            Overlay::ConfirmRestore { mut confirm, under } => match confirm.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::ConfirmRestore { confirm, under }),
                // The restore's task hears the answer and reports what it did.
                Flow::Done(true) => self.overlay = under.map(|o| *o),
                Flow::Done(false) | Flow::Cancel => {}
            },
            Overlay::Login(mut prompt) => match prompt.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Login(prompt)),
                Flow::Cancel => self.notice("Login cancelled; nothing stored"),
                Flow::Done(key) => {
                    return vec![Effect::SaveKey {
                        provider: prompt.provider().to_owned(),
                        key,
                    }]
                }
            },
            Overlay::Models(mut picker) => match picker.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Models(picker)),
                Flow::Cancel => {}
                Flow::Done(m) => {
                    return vec![Effect::SetModel(Some(format!("{}/{}", m.provider, m.id)))]
                }
            },
        }
        Vec::new()
    }

    pub(super) fn key(&mut self, k: KeyEvent, now: Instant) -> Vec<Effect> {
        if k.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if self.overlay.is_some() {
            return self.overlay_key(k, now);
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        let shift = k.modifiers.contains(KeyModifiers::SHIFT);
        // A hint lasts until the next key (DECISIONS §23.152).
        self.footer.hint = None;
        if k.code != KeyCode::Esc {
            self.last_esc = None;
        }
        if !(ctrl && k.code == KeyCode::Char('c')) {
            self.last_ctrl_c = None;
        }
        // The completion popup takes navigation keys first.
        if let Some(c) = &mut self.completion {
            match k.code {
                KeyCode::Up => {
                    c.selected = c.selected.checked_sub(1).unwrap_or(c.items.len() - 1);
                    return Vec::new();
                }
                KeyCode::Down => {
                    c.selected = (c.selected + 1) % c.items.len();
                    return Vec::new();
                }
                KeyCode::Tab => {
                    self.accept_completion();
                    self.refresh_completion_after_accept();
                    return Vec::new();
                }
                KeyCode::Esc => {
                    self.completion = None;
                    return Vec::new();
                }
                KeyCode::Enter if !alt && !shift => {
                    let is_slash = self.editor.text().starts_with('/');
                    self.accept_completion();
                    if !is_slash {
                        return Vec::new();
                    }
                }
                _ => {}
            }
        }
        let effects = match k.code {
            KeyCode::Enter if shift => self.edit(EditKey::Newline),
            KeyCode::Enter if alt => {
                if self.is_running() {
                    let text = self.editor.take();
                    if text.trim().is_empty() {
                        Vec::new()
                    } else {
                        vec![Effect::FollowUp(text)]
                    }
                } else {
                    self.edit(EditKey::Newline)
                }
            }
            KeyCode::Enter => self.submit(),
            KeyCode::Char('j') if ctrl => self.edit(EditKey::Newline),
            KeyCode::Esc => {
                if self.is_running() || self.background.is_some() {
                    vec![Effect::Abort]
                } else if self.editor.is_empty() {
                    match self.last_esc.take() {
                        Some(t) if now.saturating_duration_since(t) <= DOUBLE_ESC => {
                            vec![Effect::OpenTree]
                        }
                        _ => {
                            self.last_esc = Some(now);
                            Vec::new()
                        }
                    }
                } else {
                    Vec::new()
                }
            }
            KeyCode::Char('c') if ctrl => {
                if !self.editor.is_empty() {
                    self.editor.take();
                    self.completion = None;
                    Vec::new()
                } else if self.is_running() {
                    vec![Effect::Abort]
                } else {
                    match self.last_ctrl_c.take() {
                        Some(t) if now.saturating_duration_since(t) <= DOUBLE_CTRL_C => {
                            self.quit = true;
                            vec![Effect::Quit]
                        }
                        _ => {
                            self.last_ctrl_c = Some(now);
                            self.footer.hint = Some("Press Ctrl+C again to quit".into());
                            Vec::new()
                        }
                    }
                }
            }
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() && !self.is_running() {
                    self.quit = true;
                    vec![Effect::Quit]
                } else {
                    self.edit(EditKey::Delete)
                }
            }
            KeyCode::Char('g') if ctrl => vec![Effect::ExternalEditor(self.editor.expanded())],
            // pi's app.model.select, app.message.copy, app.suspend (DECISIONS §23.153).
            KeyCode::Char('l') if ctrl => vec![Effect::SetModel(None)],
            KeyCode::Char('x') if ctrl => vec![Effect::Copy],
            KeyCode::Char('z') if ctrl => vec![Effect::Suspend],
            KeyCode::Char('y') if ctrl => self.edit(EditKey::Yank),
            KeyCode::Char('y') if alt => self.edit(EditKey::YankPop),
            KeyCode::Char('p') if ctrl => vec![Effect::CycleModel],
            KeyCode::Char('t') if ctrl => vec![Effect::ToggleThinking],
            KeyCode::Char('o') if ctrl => vec![Effect::ToggleTools],
            KeyCode::Char('a') if ctrl => self.edit(EditKey::Home),
            KeyCode::Char('e') if ctrl => self.edit(EditKey::End),
            KeyCode::Char('u') if ctrl => self.edit(EditKey::DeleteToStart),
            KeyCode::Char('k') if ctrl => self.edit(EditKey::DeleteToEnd),
            KeyCode::Char('w') if ctrl => self.edit(EditKey::DeleteWord),
            KeyCode::Backspace if ctrl || alt => self.edit(EditKey::DeleteWord),
            KeyCode::Char(_) if ctrl => Vec::new(),
            KeyCode::Char(c) => self.edit(EditKey::Char(c)),
            KeyCode::BackTab => vec![Effect::CycleThinking],
            KeyCode::Tab => {
                self.refresh_completion();
                if self.completion.as_ref().is_some_and(|c| c.items.len() == 1) {
                    self.accept_completion();
                }
                Vec::new()
            }
            KeyCode::Backspace => self.edit(EditKey::Backspace),
            KeyCode::Delete => self.edit(EditKey::Delete),
            KeyCode::Left => self.edit(EditKey::Left),
            KeyCode::Right => self.edit(EditKey::Right),
            KeyCode::Home => self.edit(EditKey::Home),
            KeyCode::End if ctrl => vec![Effect::ScrollBottom],
            KeyCode::End => self.edit(EditKey::End),
            // pi's app.message.dequeue: the queued messages come back to the editor, so they
            // are not sent twice (DECISIONS §23.154).
            KeyCode::Up if alt => vec![Effect::Dequeue],
            KeyCode::Up => self.edit(EditKey::Up),
            KeyCode::Down => self.edit(EditKey::Down),
            KeyCode::PageUp => vec![Effect::ScrollPage(-1)],
            KeyCode::PageDown => vec![Effect::ScrollPage(1)],
            _ => Vec::new(),
        };
        effects
    }

    fn refresh_completion_after_accept(&mut self) {
        // A completed command name waits for Enter; a completed file closes the popup.
        self.completion = None;
    }

    fn edit(&mut self, key: EditKey) -> Vec<Effect> {
        let typing = matches!(
            key,
            EditKey::Char(_)
                | EditKey::Backspace
                | EditKey::Delete
                | EditKey::DeleteWord
                | EditKey::Yank
                | EditKey::YankPop
        );
        self.editor.key(key);
        if typing {
            self.refresh_completion();
        } else {
            self.completion = None;
        }
        Vec::new()
    }
}
