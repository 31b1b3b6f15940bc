//! Claude OAuth tokens (`sk-ant-oat…`): such requests go out as Claude Code sends them, with
//! its tool names' casing (mapped back when the reply is parsed).

/// Tool names Claude Code uses; OAuth requests send matching tools in this casing.
pub(super) const CLAUDE_CODE_TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

pub(super) fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_string(), |t| (*t).to_string())
}

pub(super) fn is_oauth_token(key: Option<&str>) -> bool {
    key.is_some_and(|k| k.contains("sk-ant-oat"))
}
