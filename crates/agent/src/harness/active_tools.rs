//! Tool names: the checks a tool set and an active selection must pass (no duplicates, no
//! unknown names) and the [`ToolSet`] the model may call.

use crate::agent::{AgentError, ErrorCode, ToolRef, ToolSet};

pub(super) fn names_of(tools: &[ToolRef]) -> Vec<String> {
    tools.iter().map(|t| t.name().to_string()).collect()
}

pub(super) fn duplicates(names: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut dups = Vec::new();
    for n in names {
        if !seen.insert(n.as_str()) && !dups.contains(n) {
            dups.push(n.clone());
        }
    }
    dups
}

pub(super) fn check_tools(tools: &[ToolRef]) -> Result<(), AgentError> {
    let dups = duplicates(&names_of(tools));
    if dups.is_empty() {
        Ok(())
    } else {
        Err(AgentError::new(
            ErrorCode::InvalidArgument,
            format!("Duplicate tool name(s): {}", dups.join(", ")),
        ))
    }
}

pub(super) fn check_active(tools: &[ToolRef], active: &[String]) -> Result<(), AgentError> {
    let dups = duplicates(active);
    if !dups.is_empty() {
        return Err(AgentError::new(
            ErrorCode::InvalidArgument,
            format!("Duplicate active tool name(s): {}", dups.join(", ")),
        ));
    }
    let unknown: Vec<&str> = active
        .iter()
        .filter(|n| !tools.iter().any(|t| t.name() == n.as_str()))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(AgentError::new(
            ErrorCode::InvalidArgument,
            format!("Unknown tool(s): {}", unknown.join(", ")),
        ));
    }
    Ok(())
}

pub(super) fn active_set(tools: &[ToolRef], active: &[String]) -> ToolSet {
    ToolSet::new(
        active
            .iter()
            .filter_map(|n| tools.iter().find(|t| t.name() == n.as_str()).cloned())
            .collect(),
    )
}
