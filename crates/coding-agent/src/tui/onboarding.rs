//! The first screen when no model can be used (DECISIONS §23.170): the onboarding text (the
//! same print mode writes), an editor that takes `/login PROVIDER`, `/logout PROVIDER`,
//! `/help` and `/quit`, and the masked key prompt. After a key is stored the app is started
//! again in this process; once a model is found the caller opens the normal UI on it, so the
//! first prompt can go out at once.

use std::path::Path;
use std::sync::Arc;

use arbor_ai::models::ModelRegistry;
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::auth::{AuthStore, Credential};
use crate::cli::AgentArgs;
use crate::error::CliError;
use crate::notices::{Level, Notice};
use crate::provider::AppProvider;
use crate::startup::App;

use super::component::Flow;
use super::editor::{EditKey, Editor};
use super::login::{check_provider, providers_line, KeyPrompt};
use super::terminal::TerminalGuard;
use super::theme::Theme;
use super::transcript::{NoticeKind, TranscriptView};

/// The commands the onboarding screen takes.
const HELP: &str = "Without a model these commands work:\n  /login PROVIDER   store a provider's API key (/login alone lists providers)\n  /logout PROVIDER  remove a stored key\n  /quit             quit (Ctrl+C and Ctrl+D too)";

/// The screen's state: pure, drawn into a buffer.
pub struct Onboarding {
    home: std::path::PathBuf,
    editor: Editor,
    transcript: TranscriptView,
    prompt: Option<KeyPrompt>,
    theme: Theme,
}

/// What a key did.
#[derive(Debug, PartialEq)]
pub enum Step {
    Stay,
    Quit,
    /// A key was stored for this provider: try to start again.
    Stored(String),
}

impl Onboarding {
    pub fn new(home: &Path, models_json: &Path, theme: Theme) -> Self {
        let mut transcript = TranscriptView::new(theme);
        transcript.push_notice(
            NoticeKind::Info,
            crate::onboarding::no_model_text(models_json),
        );
        Onboarding {
            home: home.to_path_buf(),
            editor: Editor::new(),
            transcript,
            prompt: None,
            theme,
        }
    }

    pub fn notice(&mut self, level: Level, text: &str) {
        let kind = match level {
            Level::Info => NoticeKind::Info,
            Level::Warning => NoticeKind::Warning,
            Level::Error => NoticeKind::Error,
        };
        self.transcript
            .push_notice(kind, crate::notices::bare(text).to_owned());
    }

    /// The registry `/login` checks names against: the catalogue and `models.json`.
    fn registry(&mut self) -> ModelRegistry {
        let mut registry = match ModelRegistry::builtin() {
            Ok(r) => r,
            Err(e) => {
                self.notice(Level::Error, &e.to_string());
                return ModelRegistry::default();
            }
        };
        if let Err(e) =
            crate::models_json::load_models_json(&mut registry, &self.home.join("models.json"))
        {
            self.notice(Level::Error, &e.to_string());
        }
        registry
    }

    pub fn paste(&mut self, text: &str) {
        match &mut self.prompt {
            Some(p) => p.paste(text),
            None => self.editor.paste(text),
        }
    }

    pub fn key(&mut self, k: KeyEvent) -> Step {
        if k.kind == KeyEventKind::Release {
            return Step::Stay;
        }
        if let Some(prompt) = &mut self.prompt {
            match prompt.handle_key(k) {
                Flow::Pending => {}
                Flow::Cancel => {
                    self.prompt = None;
                    self.notice(Level::Info, "Login cancelled; nothing stored");
                }
                Flow::Done(key) => {
                    let provider = prompt.provider().to_owned();
                    self.prompt = None;
                    let stored = AuthStore::update(
                        &self.home,
                        &provider,
                        Some(Credential::ApiKey {
                            key: key.expose().to_owned(),
                        }),
                    );
                    match stored {
                        Ok(()) => {
                            self.notice(
                                Level::Info,
                                &format!(
                                    "Saved the API key for {provider} in {} (mode 0600)",
                                    self.home.join("auth.json").display()
                                ),
                            );
                            return Step::Stored(provider);
                        }
                        Err(e) => self.notice(Level::Error, &format!("The key was not saved: {e}")),
                    }
                }
            }
            return Step::Stay;
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Char('c') | KeyCode::Char('d') if ctrl => return Step::Quit,
            KeyCode::Enter if k.modifiers.contains(KeyModifiers::SHIFT) => {
                self.editor.key(EditKey::Newline)
            }
            KeyCode::Enter => return self.submit(),
            KeyCode::Char('u') if ctrl => self.editor.key(EditKey::DeleteToStart),
            KeyCode::Char('w') if ctrl => self.editor.key(EditKey::DeleteWord),
            KeyCode::Char(_) if ctrl => {}
            KeyCode::Char(c) => self.editor.key(EditKey::Char(c)),
            KeyCode::Backspace => self.editor.key(EditKey::Backspace),
            KeyCode::Delete => self.editor.key(EditKey::Delete),
            KeyCode::Left => self.editor.key(EditKey::Left),
            KeyCode::Right => self.editor.key(EditKey::Right),
            KeyCode::Home => self.editor.key(EditKey::Home),
            KeyCode::End => self.editor.key(EditKey::End),
            KeyCode::PageUp => self.transcript.scroll_page_up(),
            KeyCode::PageDown => self.transcript.scroll_page_down(),
            _ => {}
        }
        Step::Stay
    }

    fn submit(&mut self) -> Step {
        let text = self.editor.text().trim().to_owned();
        if text.is_empty() {
            return Step::Stay;
        }
        let (cmd, arg) = match text.split_once(char::is_whitespace) {
            Some((c, a)) => (c, Some(a.trim().to_owned()).filter(|a| !a.is_empty())),
            None => (text.as_str(), None),
        };
        match cmd {
            "/quit" | "/exit" => return Step::Quit,
            "/help" => {
                self.editor.take();
                self.notice(Level::Info, HELP);
            }
            "/login" => {
                self.editor.take();
                let registry = self.registry();
                match arg {
                    None => {
                        let auth = AuthStore::load(&self.home).map(Arc::new);
                        let line = match auth {
                            Ok(auth) => {
                                let provider =
                                    AppProvider::new(Arc::new(registry.clone()), auth, None);
                                providers_line(&registry, |p| provider.api_key(p).is_some())
                            }
                            Err(_) => providers_line(&registry, |_| false),
                        };
                        self.notice(Level::Info, &line);
                    }
                    Some(p) => match check_provider(&registry, &p) {
                        Ok(()) => {
                            self.prompt = Some(KeyPrompt::new(
                                &p,
                                &self.home.join("auth.json"),
                                self.theme,
                            ))
                        }
                        Err(e) => self.notice(Level::Error, &e.to_string()),
                    },
                }
            }
            "/logout" => {
                self.editor.take();
                match arg {
                    None => self.notice(Level::Error, "Usage: /logout PROVIDER"),
                    Some(p) => match AuthStore::update(&self.home, &p, None) {
                        Ok(()) => self.notice(
                            Level::Info,
                            &format!("Removed any stored API key for {p}"),
                        ),
                        Err(e) => self.notice(Level::Error, &e.to_string()),
                    },
                }
            }
            // The text stays in the editor: it is sent once there is a model.
            _ => self.notice(
                Level::Error,
                "There is no model yet: store a key with /login PROVIDER first (your text stays in the editor)",
            ),
        }
        Step::Stay
    }

    /// Draws the screen; returns the cursor position.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) -> (u16, u16) {
        let editor_h = self
            .editor
            .height(area.width, 4)
            .min(area.height.saturating_sub(2));
        let body_h = area.height.saturating_sub(editor_h + 2);
        let body = Rect::new(area.x, area.y, area.width, body_h);
        self.transcript.render(body, buf);
        if let Some(p) = &self.prompt {
            let h = body_h.min(8);
            let p_area = Rect::new(area.x, area.y + body_h - h, area.width, h);
            ratatui::widgets::Clear.render(p_area, buf);
            p.render(p_area, buf);
        }
        let mut y = area.y + body_h;
        if y < area.bottom() {
            buf.set_string(
                area.x,
                y,
                "─".repeat(usize::from(area.width)),
                self.theme.border,
            );
            y += 1;
        }
        let cursor =
            self.editor
                .render(Rect::new(area.x, y, area.width, editor_h), buf, &self.theme);
        y += editor_h;
        if y < area.bottom() {
            let footer = "no model yet · /login PROVIDER · /help · Ctrl+C quit";
            buf.set_string(area.x, y, footer, self.theme.dim);
        }
        cursor
    }

    /// The text left in the editor (sent as the first prompt once a model is found).
    pub fn take_text(&mut self) -> String {
        self.editor.take()
    }
}

/// Runs the onboarding screen until a model is found (`Some(app)`, plus any text left in the
/// editor) or the user quits (`None`).
pub(super) async fn run(
    guard: &mut TerminalGuard,
    args: &AgentArgs,
    session_dir: Option<&Path>,
    models_json: &Path,
    notices: &mut UnboundedReceiver<Notice>,
) -> Result<Option<(App, String)>, CliError> {
    let home = crate::config::arbor_home();
    let mut screen = Onboarding::new(&home, models_json, Theme::from_env());
    let mut events = EventStream::new();
    loop {
        guard
            .terminal
            .draw(|f| {
                let area = f.area();
                let (x, y) = screen.render(area, f.buffer_mut());
                f.set_cursor_position((x, y));
            })
            .map_err(|e| CliError::io("terminal", e))?;
        let step = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) => screen.key(k),
                Some(Ok(Event::Paste(p))) => {
                    screen.paste(&p);
                    Step::Stay
                }
                Some(Ok(_)) => Step::Stay,
                Some(Err(e)) => return Err(CliError::io("terminal input", e)),
                None => Step::Quit,
            },
            Some(n) = notices.recv() => {
                screen.notice(n.level, &n.text);
                Step::Stay
            }
        };
        match step {
            Step::Stay => {}
            Step::Quit => return Ok(None),
            Step::Stored(provider) => match crate::startup::start(args, session_dir).await {
                Ok(app) => return Ok(Some((app, screen.take_text()))),
                Err(CliError::NoModel { .. }) => screen.notice(
                    Level::Warning,
                    &format!(
                        "Still no model: {provider} has no models in the catalogue or models.json"
                    ),
                ),
                Err(e) => screen.notice(Level::Error, &e.to_string()),
            },
        }
    }
}
