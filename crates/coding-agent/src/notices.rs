//! Where arbor's own notices go — warnings at start-up, hook output, MCP crashes, failed
//! automatic compactions (DECISIONS §23.172). Outside the TUI they are stderr lines; while the
//! TUI owns the terminal it installs a sink with [`redirect`] and every notice becomes a
//! transcript line instead of text written behind the screen.
//!
//! One prefix style (DECISIONS §23.173): on stderr an error is `arbor: TEXT`, a warning
//! `Warning: TEXT` (pi's word), information plain; in the TUI the glyph is the prefix, so [`bare`] strips these prefixes
//! (and doubled ones) from texts that reach it.

use std::sync::{Arc, Mutex, PoisonError};

/// How much a notice matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// One notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub level: Level,
    pub text: String,
}

impl Notice {
    /// The line stderr gets: information as it is, `Warning: …`, `arbor: …` for an error.
    pub fn stderr_line(&self) -> String {
        let text = bare(&self.text);
        match self.level {
            Level::Info => text.to_owned(),
            Level::Warning => format!("Warning: {text}"),
            Level::Error => format!("arbor: {text}"),
        }
    }
}

type Sink = Arc<dyn Fn(Notice) + Send + Sync>;

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// Reports a notice: to the installed sink, else to stderr.
pub fn emit(level: Level, text: impl Into<String>) {
    let notice = Notice {
        level,
        text: text.into(),
    };
    let sink = SINK.lock().unwrap_or_else(PoisonError::into_inner).clone();
    match sink {
        Some(s) => s(notice),
        None => to_stderr(&notice),
    }
}

/// Writes `notice` to stderr (notices gathered while no one could see them).
pub fn to_stderr(notice: &Notice) {
    eprintln!("{}", notice.stderr_line());
}

pub fn info(text: impl Into<String>) {
    emit(Level::Info, text);
}

pub fn warn(text: impl Into<String>) {
    emit(Level::Warning, text);
}

/// [`warn`] for a callback that hands over an owned text (hooks).
pub fn warn_text(text: String) {
    warn(text);
}

pub fn error(text: impl Into<String>) {
    emit(Level::Error, text);
}

/// Whether a sink is installed (the TUI runs).
pub fn redirected() -> bool {
    SINK.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some()
}

/// Sends every notice to `sink` until the guard drops (then stderr again).
#[must_use = "notices go back to stderr when the guard drops"]
pub fn redirect(sink: impl Fn(Notice) + Send + Sync + 'static) -> Redirect {
    *SINK.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(sink));
    Redirect(())
}

/// Restores stderr as the notices' place on drop.
pub struct Redirect(());

impl Drop for Redirect {
    fn drop(&mut self) {
        *SINK.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// `text` without leading `arbor:`, `Error:` and `Warning:` prefixes (any number, any order):
/// a TUI line's glyph already says what it is.
pub fn bare(text: &str) -> &str {
    let mut t = text.trim_start();
    loop {
        let next = ["arbor:", "Error:", "error:", "Warning:", "warning:"]
            .iter()
            .find_map(|p| t.strip_prefix(p));
        match next {
            Some(rest) => t = rest.trim_start(),
            None => return t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_stripped_once_and_for_all() {
        assert_eq!(bare("arbor: compaction failed: x"), "compaction failed: x");
        assert_eq!(bare("arbor: Warning: arbor: odd"), "odd");
        assert_eq!(bare("Error: Model not found"), "Model not found");
        assert_eq!(bare("plain text"), "plain text");
        let w = Notice {
            level: Level::Warning,
            text: "Warning: a skill is broken".into(),
        };
        assert_eq!(w.stderr_line(), "Warning: a skill is broken");
        let e = Notice {
            level: Level::Error,
            text: "arbor: arbor: doubled".into(),
        };
        assert_eq!(e.stderr_line(), "arbor: doubled");
    }
}
