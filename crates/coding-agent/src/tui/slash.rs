//! Slash commands: the table, parsing an editor line into a [`Slash`], and
//! the completion popup's candidates (DECISIONS §23.24).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use super::theme::Theme;

/// The built-in commands with their one-line help, in the order the popup lists them.
pub const COMMANDS: &[(&str, &str)] = &[
    ("tree", "Navigate the session tree"),
    ("fork", "New session from before an earlier user message"),
    ("clone", "New session copying the current branch"),
    ("new", "Start a new session"),
    ("resume", "Resume another session"),
    ("search", "Search every session and branch [words]"),
    (
        "undo-restore",
        "Put the files back as they were before the last code restore",
    ),
    ("name", "Set or show the session name"),
    ("session", "Session info and stats"),
    ("model", "Choose the model"),
    ("thinking", "Set the thinking level"),
    (
        "login",
        "Store a provider's API key in auth.json [provider]",
    ),
    ("logout", "Remove a provider's stored API key [provider]"),
    ("compact", "Compact the context [instructions]"),
    ("export", "Export the session (HTML, or .jsonl) [path]"),
    (
        "share",
        "Write the session as one self-contained HTML page to send",
    ),
    ("copy", "Copy the last assistant message"),
    (
        "settings",
        "Show the settings in force [key value: set one]",
    ),
    (
        "reload",
        "Read settings, skills, templates and context files again",
    ),
    (
        "mcp",
        "MCP servers: status and tools [reconnect|enable|disable NAME]",
    ),
    ("help", "Commands and keys"),
    ("hotkeys", "Show the keyboard shortcuts"),
    ("quit", "Quit"),
];

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Tree,
    Fork,
    Clone,
    New,
    Resume,
    Search(Option<String>),
    UndoRestore,
    Name(Option<String>),
    Session,
    Model(Option<String>),
    Thinking(Option<String>),
    /// `/login [provider]` (DECISIONS §23.175).
    Login(Option<String>),
    Logout(Option<String>),
    Help,
    Compact(Option<String>),
    Export(Option<String>),
    Share,
    Copy,
    /// `/settings` with an optional `key value` to set.
    Settings(Option<String>),
    Reload,
    Mcp(Option<String>),
    Hotkeys,
    Quit,
    /// pi's `/scoped-models`, `/import`, `/changelog`, `/debug` (`slash_extra`).
    Extra(super::slash_extra::ExtraCommand),
}

/// Why a line starting with `/` is not a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashError {
    Unknown(String),
}

impl std::fmt::Display for SlashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SlashError::Unknown(c) => write!(f, "Unknown command: /{c} (type / to see the list)"),
        }
    }
}

/// Parses `/cmd args`. `None` when the text is not a command line at all (no leading `/`, or a
/// path such as `/etc/hosts is odd`: a first word containing another `/`).
pub fn parse(text: &str) -> Option<Result<Slash, SlashError>> {
    let rest = text.trim().strip_prefix('/')?;
    let (cmd, args) = match rest.split_once(char::is_whitespace) {
        Some((c, a)) => (c, a.trim()),
        None => (rest, ""),
    };
    if cmd.contains('/') || cmd.is_empty() {
        return None;
    }
    let arg = (!args.is_empty()).then(|| args.to_owned());
    Some(Ok(match cmd {
        "tree" => Slash::Tree,
        "fork" => Slash::Fork,
        "clone" => Slash::Clone,
        "new" => Slash::New,
        "resume" => Slash::Resume,
        "search" => Slash::Search(arg),
        "undo-restore" => Slash::UndoRestore,
        "name" => Slash::Name(arg),
        "session" => Slash::Session,
        "model" => Slash::Model(arg),
        "thinking" => Slash::Thinking(arg),
        "login" => Slash::Login(arg),
        "logout" => Slash::Logout(arg),
        "help" => Slash::Help,
        "compact" => Slash::Compact(arg),
        "export" => Slash::Export(arg),
        "share" => Slash::Share,
        "copy" => Slash::Copy,
        "settings" => Slash::Settings(arg),
        "reload" => Slash::Reload,
        "mcp" => Slash::Mcp(arg),
        "hotkeys" => Slash::Hotkeys,
        "quit" | "exit" => Slash::Quit,
        other => match super::slash_extra::parse(other, arg) {
            Some(c) => Slash::Extra(c),
            None => return Some(Err(SlashError::Unknown(other.to_owned()))),
        },
    }))
}

/// Commands whose name starts with what is typed after `/` (only while the editor holds a single
/// word starting with `/`): the built-ins, then `extra` (prompt templates and `skill:name`
/// commands, DECISIONS §32.8).
pub fn candidates(text: &str, extra: &[(String, String)]) -> Vec<(String, String)> {
    let Some(typed) = text.strip_prefix('/') else {
        return Vec::new();
    };
    if typed.contains(char::is_whitespace) || text.contains('\n') {
        return Vec::new();
    }
    COMMANDS
        .iter()
        .chain(super::slash_extra::COMMANDS)
        .map(|(n, h)| ((*n).to_owned(), (*h).to_owned()))
        .chain(extra.iter().cloned())
        .filter(|(name, _)| name.starts_with(typed))
        .collect()
}

/// Whether `name` is a built-in command (a template of that name is never reached in the TUI).
pub fn is_builtin(name: &str) -> bool {
    name == "exit"
        || COMMANDS
            .iter()
            .chain(super::slash_extra::COMMANDS)
            .any(|(n, _)| *n == name)
}

/// The completion popup: candidates with their help, the selected one reversed.
pub fn render_popup(
    items: &[(String, String)],
    selected: usize,
    area: Rect,
    buf: &mut Buffer,
    theme: &Theme,
) {
    if items.is_empty() || area.height < 3 {
        return;
    }
    Clear.render(area, buf);
    let inner_h = usize::from(area.height - 2);
    // The name column fits the longest name; the help gets the rest of the terminal's width
    // (DECISIONS §23.177).
    let name_w = items
        .iter()
        .map(|(n, _)| unicode_width::UnicodeWidthStr::width(n.as_str()))
        .max()
        .unwrap_or(0)
        .max(12)
        + 2;
    let first = selected.saturating_sub(inner_h.saturating_sub(1));
    let lines: Vec<Line> = items
        .iter()
        .enumerate()
        .skip(first)
        .take(inner_h)
        .map(|(i, (name, help))| {
            let style = if i == selected {
                theme.selected
            } else {
                theme.text
            };
            Line::from(vec![
                Span::styled(format!("{name:<name_w$}"), style.patch(theme.accent)),
                Span::styled(help.clone(), if i == selected { style } else { theme.dim }),
            ])
        })
        .collect();
    Paragraph::new(lines)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.border),
        )
        .render(area, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_arguments() {
        assert_eq!(parse("/tree"), Some(Ok(Slash::Tree)));
        assert_eq!(
            parse("/compact  keep the API notes "),
            Some(Ok(Slash::Compact(Some("keep the API notes".into()))))
        );
        assert_eq!(parse("/name"), Some(Ok(Slash::Name(None))));
        assert_eq!(
            parse("/nope x"),
            Some(Err(SlashError::Unknown("nope".into())))
        );
        assert_eq!(parse("/etc/hosts looks odd"), None);
        assert_eq!(parse("hello /tree"), None);
    }

    #[test]
    fn completion_filters_by_prefix() {
        let extra = vec![
            ("review".to_owned(), "Review [focus]".to_owned()),
            ("skill:pdf".to_owned(), "PDFs".to_owned()),
        ];
        let names: Vec<String> = candidates("/co", &extra).into_iter().map(|c| c.0).collect();
        assert_eq!(names, ["compact", "copy"]);
        let all = COMMANDS.len() + super::super::slash_extra::COMMANDS.len();
        assert_eq!(candidates("/", &[]).len(), all);
        assert_eq!(candidates("/", &extra).len(), all + 2);
        let names: Vec<String> = candidates("/re", &extra).into_iter().map(|c| c.0).collect();
        assert_eq!(names, ["resume", "reload", "review"]);
        assert_eq!(candidates("/skill:", &extra)[0].0, "skill:pdf");
        assert!(candidates("/compact x", &extra).is_empty());
        assert!(candidates("plain", &extra).is_empty());
        assert_eq!(parse("/reload"), Some(Ok(Slash::Reload)));
        assert!(is_builtin("settings") && !is_builtin("review"));
    }
}
