//! pi's remaining slash commands (DECISIONS §23.155–§23.158): `/scoped-models`, `/import`,
//! `/changelog`, `/debug`. Kept apart from `slash.rs`'s table so the two lists grow without
//! touching each other; `slash::parse`, `slash::candidates` and `slash::is_builtin` read both.

/// The commands with their one-line help, in the order the popup lists them (after the
/// built-ins of `slash.rs`).
pub const COMMANDS: &[(&str, &str)] = &[
    (
        "scoped-models",
        "Models Ctrl+P cycles through [patterns | all]",
    ),
    ("import", "Import a JSONL session file and open it <path>"),
    ("changelog", "Show what changed in each Arbor version"),
    ("debug", "Write the screen and the context to a debug log"),
];

/// One of these commands, parsed (`slash::Slash::Extra` carries it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtraCommand {
    /// `/scoped-models [patterns | all]`.
    ScopedModels(Option<String>),
    /// `/import <path>`.
    Import(Option<String>),
    Changelog,
    Debug,
}

/// Parses one of these commands (`None`: not one of them).
pub fn parse(cmd: &str, arg: Option<String>) -> Option<ExtraCommand> {
    Some(match cmd {
        "scoped-models" => ExtraCommand::ScopedModels(arg),
        "import" => ExtraCommand::Import(arg),
        "changelog" => ExtraCommand::Changelog,
        "debug" => ExtraCommand::Debug,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::slash::{self, Slash};

    #[test]
    fn the_extra_commands_parse_complete_and_count_as_built_in() {
        assert_eq!(
            slash::parse("/scoped-models sonnet, haiku"),
            Some(Ok(Slash::Extra(ExtraCommand::ScopedModels(Some(
                "sonnet, haiku".into()
            )))))
        );
        assert_eq!(
            slash::parse("/import ~/s.jsonl"),
            Some(Ok(Slash::Extra(ExtraCommand::Import(Some(
                "~/s.jsonl".into()
            )))))
        );
        assert_eq!(
            slash::parse("/import"),
            Some(Ok(Slash::Extra(ExtraCommand::Import(None))))
        );
        assert_eq!(
            slash::parse("/changelog"),
            Some(Ok(Slash::Extra(ExtraCommand::Changelog)))
        );
        assert_eq!(
            slash::parse("/debug"),
            Some(Ok(Slash::Extra(ExtraCommand::Debug)))
        );
        let names: Vec<String> = slash::candidates("/c", &[])
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(names, ["clone", "compact", "copy", "changelog"]);
        assert!(slash::is_builtin("debug") && slash::is_builtin("scoped-models"));
    }
}
