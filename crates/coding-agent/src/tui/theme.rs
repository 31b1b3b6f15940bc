//! Styles of the interactive UI. Every colour the UI draws comes from here, so `NO_COLOR`
//! (<https://no-color.org>: set and not empty) turns colour off in one place while bold,
//! dim and reverse keep the structure readable.

use ratatui::style::{Color, Modifier, Style};

/// The named styles the widgets use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
    pub text: Style,
    pub dim: Style,
    pub accent: Style,
    pub user: Style,
    pub assistant: Style,
    pub thinking: Style,
    pub tool: Style,
    pub tool_error: Style,
    pub error: Style,
    pub warning: Style,
    pub success: Style,
    pub diff_added: Style,
    pub diff_removed: Style,
    pub code: Style,
    pub heading: Style,
    pub link: Style,
    pub marker: Style,
    pub label: Style,
    pub selected: Style,
    pub border: Style,
}

impl Theme {
    /// The theme for this process: no colour when `NO_COLOR` is set and not empty.
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if no_color {
            Self::monochrome()
        } else {
            Self::colored()
        }
    }

    /// The default coloured theme (16-colour palette, so it follows the user's terminal scheme).
    pub fn colored() -> Self {
        let plain = Style::new();
        Self {
            color: true,
            text: plain,
            dim: plain.fg(Color::DarkGray),
            accent: plain.fg(Color::Cyan),
            user: plain.fg(Color::Blue).add_modifier(Modifier::BOLD),
            assistant: plain,
            thinking: plain.fg(Color::DarkGray).add_modifier(Modifier::ITALIC),
            tool: plain.fg(Color::Yellow),
            tool_error: plain.fg(Color::Red),
            error: plain.fg(Color::Red).add_modifier(Modifier::BOLD),
            warning: plain.fg(Color::Yellow),
            success: plain.fg(Color::Green),
            diff_added: plain.fg(Color::Green),
            diff_removed: plain.fg(Color::Red),
            code: plain.fg(Color::Magenta),
            heading: plain.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            link: plain.fg(Color::Blue).add_modifier(Modifier::UNDERLINED),
            marker: plain.fg(Color::Magenta),
            label: plain.fg(Color::Green),
            selected: plain.add_modifier(Modifier::REVERSED),
            border: plain.fg(Color::DarkGray),
        }
    }

    /// No colours at all: structure through modifiers only.
    pub fn monochrome() -> Self {
        let plain = Style::new();
        Self {
            color: false,
            text: plain,
            dim: plain.add_modifier(Modifier::DIM),
            accent: plain.add_modifier(Modifier::BOLD),
            user: plain.add_modifier(Modifier::BOLD),
            assistant: plain,
            thinking: plain.add_modifier(Modifier::DIM | Modifier::ITALIC),
            tool: plain.add_modifier(Modifier::BOLD),
            tool_error: plain.add_modifier(Modifier::BOLD),
            error: plain.add_modifier(Modifier::BOLD),
            warning: plain.add_modifier(Modifier::BOLD),
            success: plain,
            diff_added: plain.add_modifier(Modifier::BOLD),
            diff_removed: plain.add_modifier(Modifier::DIM),
            code: plain,
            heading: plain.add_modifier(Modifier::BOLD),
            link: plain.add_modifier(Modifier::UNDERLINED),
            marker: plain.add_modifier(Modifier::BOLD),
            label: plain.add_modifier(Modifier::ITALIC),
            selected: plain.add_modifier(Modifier::REVERSED),
            border: plain,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monochrome_sets_no_colour_anywhere() {
        let t = Theme::monochrome();
        for s in [
            t.text,
            t.dim,
            t.accent,
            t.user,
            t.assistant,
            t.thinking,
            t.tool,
            t.tool_error,
            t.error,
            t.warning,
            t.success,
            t.diff_added,
            t.diff_removed,
            t.code,
            t.heading,
            t.link,
            t.marker,
            t.label,
            t.selected,
            t.border,
        ] {
            assert_eq!(s.fg, None);
            assert_eq!(s.bg, None);
        }
        assert_ne!(Theme::colored(), t);
    }
}
