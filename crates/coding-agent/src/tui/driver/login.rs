//! The driver's side of `/login`, `/logout` (DECISIONS §23.175) and the start-up banner
//! (DECISIONS §23.176).

use arbor_ai::models::ApiKey;

use crate::tui::help::{banner_text, BannerInfo};
use crate::tui::login::{check_provider, providers_line, KeyPrompt};
use crate::tui::state::{Outcome, Overlay};

use super::Driver;

impl Driver {
    /// `/login`: the providers, or the key prompt for one.
    pub(super) fn login(&mut self, provider: Option<String>) {
        let Some(logins) = self.app.logins.clone() else {
            self.done(Outcome::Error(
                "This session has no auth.json to store keys in".into(),
            ));
            return;
        };
        match provider {
            None => self.done(Outcome::Notice(providers_line(&self.app.registry, |p| {
                logins.has_key(p)
            }))),
            Some(p) => match check_provider(&self.app.registry, &p) {
                Ok(()) => {
                    let prompt = KeyPrompt::new(&p, &logins.auth_file(), self.theme);
                    self.state.overlay = Some(Overlay::Login(Box::new(prompt)));
                }
                Err(e) => self.done(Outcome::Error(e.to_string())),
            },
        }
    }

    /// Stores the key from the prompt and offers the provider's models at once.
    pub(super) fn save_key(&mut self, provider: &str, key: &ApiKey) {
        let Some(logins) = self.app.logins.clone() else {
            return;
        };
        match logins.login(provider, key) {
            Ok(()) => {
                self.refresh_cycle_models(&logins);
                self.done(Outcome::Notice(format!(
                    "Saved the API key for {provider} in {} (mode 0600); its models are in /model",
                    logins.auth_file().display()
                )));
            }
            Err(e) => self.done(Outcome::Error(format!("The key was not saved: {e}"))),
        }
    }

    /// `/logout PROVIDER`: removes the stored key (environment variables and `models.json`
    /// keys stay, as pi's `/logout`).
    pub(super) fn logout(&mut self, provider: Option<String>) {
        let Some(logins) = self.app.logins.clone() else {
            self.done(Outcome::Error(
                "This session has no auth.json to remove keys from".into(),
            ));
            return;
        };
        let Some(provider) = provider else {
            self.done(Outcome::Error(
                "Usage: /logout PROVIDER (removes its key from auth.json)".into(),
            ));
            return;
        };
        match logins.logout(&provider) {
            Ok(true) => {
                self.refresh_cycle_models(&logins);
                let still = if logins.has_key(&provider) {
                    " (a key from the environment or models.json still applies)"
                } else {
                    ""
                };
                self.done(Outcome::Notice(format!(
                    "Removed the stored API key for {provider} from {}{still}",
                    logins.auth_file().display()
                )));
            }
            Ok(false) => self.done(Outcome::Notice(format!(
                "No key for {provider} is stored in {}",
                logins.auth_file().display()
            ))),
            Err(e) => self.done(Outcome::Error(format!("The key was not removed: {e}"))),
        }
    }

    /// Ctrl+P's models after keys changed (a `--models` scope stays as it was).
    fn refresh_cycle_models(&mut self, logins: &crate::tui::login::Logins) {
        if logins.scoped() {
            return;
        }
        self.app.cycle_models = logins.usable_models(&self.app.registry);
    }

    /// The start-up banner: version, model, cwd, keys, what was found (the binary shows it
    /// once, when the UI opens).
    pub fn show_banner(&mut self) {
        let model = self.app.harness.model();
        let resources = self.app.resources.resources();
        let info = BannerInfo {
            model: format!("{}/{}", model.provider, model.id),
            cwd: self.app.cwd.display().to_string(),
            skills: resources.skills.len(),
            templates: resources.templates.len(),
            mcp_servers: self.app.mcp.as_ref().map_or(0, |m| m.status().len()),
        };
        self.transcript
            .push_notice(crate::tui::transcript::NoticeKind::Info, banner_text(&info));
    }

    /// A notice from the notice sink (start-up, hooks, MCP) as a transcript line.
    pub async fn push_sink_notice(&mut self, notice: crate::notices::Notice) {
        self.dispatch(crate::tui::state::AppEvent::Done(Outcome::Sink(notice)))
            .await;
    }
}
