//! `/mcp`: the servers' states and tools as text, and the actions on one server
//! (`reconnect`, `enable`, `disable`) for this run (DECISIONS §33.7).

use super::{McpError, McpManager, ServerState};

/// What `/mcp ARGS` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpAction {
    Status,
    Reconnect(String),
    Enable(String),
    Disable(String),
}

/// `/mcp` with words it does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Usage: /mcp [reconnect|enable|disable NAME]")]
pub struct UsageError;

/// Parses the words after `/mcp`.
pub fn parse(args: Option<&str>) -> Result<McpAction, UsageError> {
    let words: Vec<&str> = args.unwrap_or_default().split_whitespace().collect();
    match words.as_slice() {
        [] | ["status"] | ["list"] => Ok(McpAction::Status),
        ["reconnect", name] => Ok(McpAction::Reconnect((*name).to_owned())),
        ["enable", name] => Ok(McpAction::Enable((*name).to_owned())),
        ["disable", name] => Ok(McpAction::Disable((*name).to_owned())),
        _ => Err(UsageError),
    }
}

/// Runs an action; the text to show.
pub async fn run(manager: Option<&McpManager>, action: McpAction) -> Result<String, McpError> {
    let Some(manager) = manager else {
        return Ok("MCP is off for this run (--no-mcp).".to_owned());
    };
    match action {
        McpAction::Status => Ok(status_text(manager)),
        McpAction::Reconnect(name) => {
            manager.reconnect(&name)?;
            Ok(format!("Reconnecting MCP server \"{name}\"…"))
        }
        McpAction::Enable(name) => {
            manager.set_enabled(&name, true).await?;
            Ok(format!(
                "Enabled MCP server \"{name}\" for this run; starting it…"
            ))
        }
        McpAction::Disable(name) => {
            manager.set_enabled(&name, false).await?;
            Ok(format!("Disabled MCP server \"{name}\" for this run."))
        }
    }
}

/// Every server with its state, source and tools; failures with their reason; then the
/// configuration problems.
pub fn status_text(manager: &McpManager) -> String {
    let status = manager.status();
    let mut out = String::new();
    if status.is_empty() {
        out.push_str("No MCP servers configured (mcp.json; see `arbor mcp add`).\n");
    }
    // Servers that need attention first (pi's order).
    let mut ordered: Vec<_> = status.iter().collect();
    ordered.sort_by_key(|s| !matches!(s.state, ServerState::Failed(_)));
    for s in ordered {
        out.push_str(&format!(
            "{}: {} · {} tools · {}\n",
            s.name,
            s.state.label(),
            s.tools.len(),
            s.source.display()
        ));
        if let ServerState::Failed(reason) = &s.state {
            for line in reason.lines() {
                out.push_str(&format!("  ! {line}\n"));
            }
        }
        for (model_name, _) in &s.tools {
            out.push_str(&format!("  {model_name}\n"));
        }
    }
    for d in manager.diagnostics() {
        out.push_str(&format!("config: {d}\n"));
    }
    out.push_str("/mcp reconnect|enable|disable NAME");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_parse() {
        assert_eq!(parse(None), Ok(McpAction::Status));
        assert_eq!(
            parse(Some("reconnect fs")),
            Ok(McpAction::Reconnect("fs".into()))
        );
        assert_eq!(
            parse(Some("disable fs")),
            Ok(McpAction::Disable("fs".into()))
        );
        assert!(parse(Some("enable")).is_err());
    }
}
