//! The real terminal (DECISIONS §23.2): raw mode, the alternate screen, bracketed paste, mouse
//! capture and the keyboard enhancement that reports Shift+Enter where the terminal supports it.
//! Whatever way the UI ends — normal exit, a panic, Ctrl+C, SIGTERM or SIGHUP — the terminal
//! is restored: [`TerminalGuard`] restores on drop, and a panic hook restores before the panic
//! message is printed.

use std::io::{self, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// Whether the terminal is in UI mode (so restoring twice is harmless).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: std::sync::Once = std::sync::Once::new();

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Puts the terminal into UI mode; restores it when dropped.
pub struct TerminalGuard {
    pub terminal: Term,
}

fn enter() -> io::Result<()> {
    enable_raw_mode()?;
    let mut out = io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableMouseCapture,
        cursor::Show
    )?;
    // Kitty-protocol terminals then report Shift+Enter and Alt+Enter distinctly; others ignore
    // the sequence.
    let _ = execute!(
        out,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    );
    ACTIVE.store(true, Ordering::SeqCst);
    Ok(())
}

/// Leaves UI mode. Safe to call more than once and from a panic hook.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    let _ = execute!(out, PopKeyboardEnhancementFlags);
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

impl TerminalGuard {
    pub fn new() -> io::Result<Self> {
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        enter()?;
        let terminal = match Terminal::new(CrosstermBackend::new(io::stdout())) {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        Ok(Self { terminal })
    }

    /// Leaves UI mode for a child that needs the terminal (the external editor), then comes back.
    pub fn suspended<T>(&mut self, f: impl FnOnce() -> T) -> io::Result<T> {
        self.pause();
        let out = f();
        self.resume()?;
        Ok(out)
    }

    /// Gives the terminal back (as on exit) until [`Self::resume`].
    pub fn pause(&mut self) {
        restore();
    }

    /// Takes the terminal again after [`Self::pause`] and draws the whole screen next.
    pub fn resume(&mut self) -> io::Result<()> {
        enter()?;
        self.redraw_all()
    }

    /// Clears the screen and makes the next frame draw every cell. Unlike ratatui's
    /// `Terminal::clear`, it never asks the terminal where its cursor is: that answer can take
    /// seconds on a loaded machine (or never come), and a `fg` after Ctrl+Z must not fail on it.
    pub fn redraw_all(&mut self) -> io::Result<()> {
        use ratatui::backend::Backend as _;
        self.terminal
            .backend_mut()
            .clear_region(ratatui::backend::ClearType::All)?;
        // Both buffers blank: the next draw writes the whole frame.
        self.terminal.swap_buffers();
        self.terminal.swap_buffers();
        Ok(())
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}
