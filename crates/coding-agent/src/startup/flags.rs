//! The flags checked before anything starts: combinations pi refuses, and the active tools.

use crate::cli::AgentArgs;
use crate::config::Settings;
use crate::error::CliError;
use arbor_tools as tools;

/// Checks flag combinations pi refuses (exit 1 with its texts).
pub fn check_conflicts(a: &AgentArgs) -> Result<(), CliError> {
    let u = |m: &str| Err(CliError::Startup(format!("Error: {m}")));
    if a.fork.is_some() {
        if a.session.is_some() {
            return u("--fork cannot be combined with --session");
        }
        if a.continue_ {
            return u("--fork cannot be combined with --continue");
        }
        if a.resume {
            return u("--fork cannot be combined with --resume");
        }
        if a.no_session {
            return u("--fork cannot be combined with --no-session");
        }
    }
    if a.session_id.is_some() {
        if a.continue_ {
            return u("--session-id cannot be combined with --continue");
        }
        if a.session.is_some() {
            return u("--session-id cannot be combined with --session");
        }
        if a.resume {
            return u("--session-id cannot be combined with --resume");
        }
    }
    if let Some(name) = &a.name {
        if name.trim().is_empty() {
            return u("--name requires a non-empty value");
        }
    }
    Ok(())
}

/// The active tool names per `--tools`, `--no-tools`, `--exclude-tools` and `defaultTools`.
pub fn active_tools(a: &AgentArgs, settings: &Settings) -> Result<Vec<String>, CliError> {
    let base: Vec<String> = settings.default_tools().unwrap_or_else(|| {
        tools::DEFAULT_TOOLS
            .iter()
            .map(std::string::ToString::to_string)
            .collect()
    });
    let mut names: Vec<String> = if a.no_tools {
        Vec::new()
    } else if let Some(list) = &a.tools {
        let items: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let signed = items
            .iter()
            .filter(|s| s.starts_with('+') || s.starts_with('-'))
            .count();
        if signed > 0 && signed != items.len() {
            return Err(CliError::Startup(
                "Error: --tools cannot mix plain names with +name/-name changes".into(),
            ));
        }
        if signed > 0 {
            let mut set = base;
            for item in items {
                let name = &item[1..];
                if item.starts_with('+') {
                    if !set.iter().any(|n| n == name) {
                        set.push(name.to_owned());
                    }
                } else {
                    set.retain(|n| n != name);
                }
            }
            set
        } else {
            let mut out = Vec::new();
            let mut globs = Vec::new();
            for item in &items {
                let glob = globset::Glob::new(item)
                    .map_err(|e| {
                        CliError::Startup(format!("Error: bad --tools pattern '{item}': {e}"))
                    })?
                    .compile_matcher();
                if !tools::ALL_TOOLS.iter().any(|t| glob.is_match(t)) {
                    return Err(CliError::Startup(format!("Error: Unknown tool: {item}")));
                }
                globs.push(glob);
            }
            // The built-in order, so the request does not depend on how the flag was written.
            for t in tools::ALL_TOOLS {
                if globs.iter().any(|g| g.is_match(t)) {
                    out.push(t.to_owned());
                }
            }
            out
        }
    } else {
        base
    };
    if let Some(ex) = &a.exclude_tools {
        let ex: Vec<&str> = ex.split(',').map(str::trim).collect();
        names.retain(|n| !ex.contains(&n.as_str()));
    }
    for n in &names {
        if tools::spec(n).is_none() {
            return Err(CliError::Startup(format!("Error: Unknown tool: {n}")));
        }
    }
    Ok(names)
}
