//! The session listing: one row per session, newest first, aligned columns.

use std::fmt::Write as _;

use arbor_agent::session::SessionInfo;

use super::text::{preview, short_time};

const TITLE_CHARS: usize = 60;

/// Rows for `sessions` (already sorted newest first). `with_cwd` adds the working directory
/// (for `--all`, where sessions of many projects are mixed).
pub fn render(sessions: &[SessionInfo], with_cwd: bool) -> String {
    let id_width = sessions
        .iter()
        .map(|s| s.id.chars().count())
        .max()
        .unwrap_or(0)
        .max(2);
    let cwd_width = sessions
        .iter()
        .map(|s| s.cwd.chars().count())
        .max()
        .unwrap_or(0)
        .max(3);
    let mut out = String::new();
    let _ = write!(
        out,
        "{:<16}  {:<id_width$}  {:>7}",
        "MODIFIED (UTC)", "ID", "ENTRIES"
    );
    if with_cwd {
        let _ = write!(out, "  {:<cwd_width$}", "CWD");
    }
    out.push_str("  NAME / FIRST MESSAGE\n");
    for s in sessions {
        let _ = write!(
            out,
            "{:<16}  {:<id_width$}  {:>7}",
            short_time(s.modified_ms),
            s.id,
            s.entry_count
                .map_or_else(|| "?".to_string(), |n| n.to_string())
        );
        if with_cwd {
            let _ = write!(out, "  {:<cwd_width$}", s.cwd);
        }
        out.push_str("  ");
        out.push_str(&title(s));
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
    }
    out
}

/// `[name] first message`, or just the first message.
fn title(s: &SessionInfo) -> String {
    let first = s
        .first_message
        .as_deref()
        .map(|m| preview(m, TITLE_CHARS))
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "(no messages)".to_string());
    match s.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => format!("[{}] {first}", preview(name, 40)),
        None => first,
    }
}
