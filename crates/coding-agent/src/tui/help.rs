//! The start-up banner and `/help` (DECISIONS §23.176): both read the one command table the
//! `/` popup lists (`slash::COMMANDS`) and the key table `/hotkeys` shows, so they
//! never list a command that does not exist.

use super::slash::COMMANDS;
use super::state::HOTKEYS;

/// What the banner says about the run.
#[derive(Debug, Clone, Default)]
pub struct BannerInfo {
    pub model: String,
    pub cwd: String,
    pub skills: usize,
    pub templates: usize,
    pub mcp_servers: usize,
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The banner: version, model, cwd, the keys that matter most, what was found.
pub fn banner_text(info: &BannerInfo) -> String {
    [
        format!(
            "arbor {} · {} · {}",
            env!("CARGO_PKG_VERSION"),
            info.model,
            info.cwd
        ),
        "Enter send · Esc abort · Ctrl+C clear / twice quit · / commands · /help keys and commands"
            .to_owned(),
        format!(
            "{} · {} · {}",
            count(info.skills, "skill", "skills"),
            count(info.templates, "prompt template", "prompt templates"),
            count(info.mcp_servers, "MCP server", "MCP servers")
        ),
    ]
    .join("\n")
}

/// `/help`: every command with its help, the templates and skills, then the keys.
pub fn help_text(user_commands: &[(String, String)]) -> String {
    // The popup's table: the core commands, then pi's others (`slash_extra`).
    let built_in = || COMMANDS.iter().chain(super::slash_extra::COMMANDS);
    let names = built_in()
        .map(|(n, _)| n.len() + 1)
        .chain(user_commands.iter().map(|(n, _)| n.len() + 1));
    let w = names.max().unwrap_or(0);
    let mut out = vec!["Commands".to_owned()];
    for (name, help) in built_in() {
        out.push(format!("  {:<w$}  {help}", format!("/{name}")));
    }
    if !user_commands.is_empty() {
        out.push("Prompt templates and skills".to_owned());
        for (name, help) in user_commands {
            out.push(format!("  {:<w$}  {help}", format!("/{name}")));
        }
    }
    out.push("Keys".to_owned());
    let kw = HOTKEYS.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in HOTKEYS {
        out.push(format!("  {k:<kw$}  {v}"));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_command_of_the_popup_and_every_key() {
        let extra = vec![("review".to_owned(), "Review a diff".to_owned())];
        let text = help_text(&extra);
        for (name, help) in COMMANDS.iter().chain(crate::tui::slash_extra::COMMANDS) {
            assert!(text.contains(&format!("/{name} ")), "{name}");
            assert!(text.contains(help), "{help}");
        }
        for (k, _) in HOTKEYS {
            assert!(text.contains(k), "{k}");
        }
        assert!(text.contains("/review") && text.contains("Review a diff"));
    }

    #[test]
    fn the_banner_counts_in_words() {
        let text = banner_text(&BannerInfo {
            model: "mock/m".into(),
            cwd: "/p".into(),
            skills: 1,
            templates: 2,
            mcp_servers: 0,
        });
        assert!(
            text.contains("1 skill · 2 prompt templates · 0 MCP servers"),
            "{text}"
        );
        assert!(text.starts_with(&format!(
            "arbor {} · mock/m · /p",
            env!("CARGO_PKG_VERSION")
        )));
    }
}
