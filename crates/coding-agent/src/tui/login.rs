//! `/login PROVIDER` and `/logout PROVIDER` (DECISIONS §23.175): the masked key prompt (an
//! overlay: it takes keys and pastes and answers the key), and [`Logins`], which stores a key
//! in `auth.json` (0600, the file and format the app reads, DECISIONS §22.6) and in the running
//! provider, so the session uses it from its next request without a restart. The onboarding
//! screen (no model yet) uses the same prompt and the same file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_ai::models::{ApiKey, ModelRegistry};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use crate::auth::Credential;
use crate::error::CliError;
use crate::provider::AppProvider;
use crate::secrets::Redactor;

use super::component::Flow;
use super::theme::Theme;

/// The masked input for one provider's key.
#[derive(Debug)]
pub struct KeyPrompt {
    provider: String,
    auth_file: PathBuf,
    key: ApiKey,
    theme: Theme,
}

impl KeyPrompt {
    pub fn new(provider: &str, auth_file: &Path, theme: Theme) -> Self {
        KeyPrompt {
            provider: provider.to_owned(),
            auth_file: auth_file.to_path_buf(),
            key: ApiKey::new(""),
            theme,
        }
    }

    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// A paste goes into the key, without line breaks or surrounding blanks.
    pub fn paste(&mut self, text: &str) {
        let mut key = self.key.expose().to_owned();
        key.extend(text.chars().filter(|c| !c.is_control()));
        self.key = ApiKey::new(key.trim().to_owned());
    }

    /// Enter answers the key (an empty one is refused by staying open); Esc cancels.
    pub fn handle_key(&mut self, k: KeyEvent) -> Flow<ApiKey> {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let mut key = self.key.expose().to_owned();
        match k.code {
            KeyCode::Esc => return Flow::Cancel,
            KeyCode::Char('c') if ctrl => return Flow::Cancel,
            KeyCode::Enter => {
                let trimmed = key.trim();
                if trimmed.is_empty() {
                    return Flow::Pending;
                }
                return Flow::Done(ApiKey::new(trimmed.to_owned()));
            }
            KeyCode::Backspace => {
                key.pop();
            }
            KeyCode::Char('u') if ctrl => key.clear(),
            KeyCode::Char(c) if !ctrl => key.push(c),
            _ => {}
        }
        self.key = ApiKey::new(key);
        Flow::Pending
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let t = &self.theme;
        let n = self.key.expose().chars().count();
        let masked = if n == 0 {
            "(type or paste the key)".to_owned()
        } else {
            format!("{} ({n} characters)", "•".repeat(n.min(32)))
        };
        let lines = vec![
            Line::styled(format!("API key for {}:", self.provider), t.text),
            Line::styled(format!("  {masked}"), t.accent),
            Line::raw(""),
            Line::styled(
                format!(
                    "Saved in {} (mode 0600); /logout {} removes it.",
                    self.auth_file.display(),
                    self.provider
                ),
                t.dim,
            ),
            Line::styled("Enter save · Esc cancel", t.dim),
        ];
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(t.border)
                    .title(format!(" /login {} ", self.provider)),
            )
            .render(area, buf);
    }
}

/// The providers `/login` knows, for its usage line: `name` (`✓` when it has a key now).
pub fn providers_line(registry: &ModelRegistry, has_key: impl Fn(&str) -> bool) -> String {
    let names: Vec<String> = registry
        .provider_ids()
        .into_iter()
        .map(|p| {
            if has_key(p) {
                format!("{p} ✓")
            } else {
                p.to_owned()
            }
        })
        .collect();
    format!(
        "Usage: /login PROVIDER, then paste its API key. Providers (✓ has a key): {}",
        names.join(", ")
    )
}

/// Whether `/login` may store a key for `provider`: one of the registry's providers.
pub fn check_provider(registry: &ModelRegistry, provider: &str) -> Result<(), CliError> {
    if registry.provider_ids().contains(&provider) {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "Unknown provider: {provider} (/login alone lists them; models.json adds more)"
        )))
    }
}

/// Stores and removes keys for the running app.
#[derive(Clone)]
pub struct Logins {
    provider: Arc<AppProvider>,
    redactor: Arc<Redactor>,
    /// A `--models` / `enabledModels` scope decides Ctrl+P's models; keys do not change it.
    scoped: bool,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Logins")
    }
}

impl Logins {
    pub(crate) fn new(provider: Arc<AppProvider>, redactor: Arc<Redactor>, scoped: bool) -> Self {
        Logins {
            provider,
            redactor,
            scoped,
        }
    }

    pub fn scoped(&self) -> bool {
        self.scoped
    }

    pub fn auth_file(&self) -> PathBuf {
        self.provider.auth().path().to_path_buf()
    }

    /// Whether a request to `provider` would carry a key now.
    pub fn has_key(&self, provider: &str) -> bool {
        self.provider.api_key(provider).is_some()
    }

    /// Saves `key` for `provider` in `auth.json` and in the running provider; the key is
    /// redacted from everything stored from now on (DECISIONS §30.9).
    pub fn login(&self, provider: &str, key: &ApiKey) -> Result<(), CliError> {
        self.redactor.add(key.expose());
        self.provider.auth().store(
            provider,
            Some(Credential::ApiKey {
                key: key.expose().to_owned(),
            }),
        )
    }

    /// Removes `provider`'s stored key; `false` when none was stored.
    pub fn logout(&self, provider: &str) -> Result<bool, CliError> {
        let auth = self.provider.auth();
        if !auth.providers().iter().any(|p| p == provider) {
            return Ok(false);
        }
        auth.store(provider, None)?;
        Ok(true)
    }

    /// Models Ctrl+P cycles after a change of keys (no `--models` scope).
    pub fn usable_models(&self, registry: &ModelRegistry) -> Vec<(String, String)> {
        registry
            .models()
            .filter(|m| crate::command::models::usable(&self.provider, m))
            .map(|m| (m.provider.clone(), m.id.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn the_prompt_masks_the_key_and_refuses_an_empty_one() {
        let mut p = KeyPrompt::new("openai", Path::new("/h/auth.json"), Theme::monochrome());
        assert_eq!(p.handle_key(key(KeyCode::Enter)), Flow::Pending);
        for c in "sk-abc".chars() {
            assert_eq!(p.handle_key(key(KeyCode::Char(c))), Flow::Pending);
        }
        p.paste("def\n");
        let area = Rect::new(0, 0, 60, 8);
        let mut buf = Buffer::empty(area);
        p.render(area, &mut buf);
        let screen: String = buf
            .content
            .iter()
            .map(ratatui::buffer::Cell::symbol)
            .collect();
        assert!(!screen.contains("sk-abc"), "{screen}");
        assert!(screen.contains("(9 characters)"), "{screen}");
        assert!(format!("{p:?}").contains("<redacted>") || !format!("{p:?}").contains("sk-"));
        match p.handle_key(key(KeyCode::Enter)) {
            Flow::Done(k) => assert_eq!(k.expose(), "sk-abcdef"),
            other => panic!("{other:?}"),
        }
        assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Cancel);
    }
}
