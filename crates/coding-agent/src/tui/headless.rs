//! The interactive mode's start-up up to its first frame, drawn into an off-screen buffer: what
//! `arbor` does before the user sees anything (settings, trust, models, skills, templates, MCP
//! servers and hooks set going, the driver, the frame), without a terminal to set up. The
//! start-up benchmark measures it (docs/PERFORMANCE.md); the trust question is not asked, so
//! the arguments decide trust (`--approve` / `--no-approve`) or the settings do.

use clap::Parser;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::driver::{Driver, TuiApp};
use super::theme::Theme;
use crate::cli::Cli;
use crate::error::CliError;

/// Runs the start-up for `argv` (with the program name first, as on a command line) and draws
/// the first frame into a buffer of `area`. Returns the run's MCP servers, still connecting in
/// the background, so the caller can end them (`McpManager::shutdown`).
pub async fn first_frame(
    argv: &[&str],
    area: Rect,
) -> Result<(Buffer, Option<crate::mcp::McpManager>), CliError> {
    let cli = Cli::try_parse_from(argv).map_err(|e| CliError::Usage(e.to_string()))?;
    let app = crate::startup::start(&cli.agent, cli.session_dir.as_deref()).await?;
    let mcp = app.mcp.clone();
    let mut driver = Driver::new(TuiApp::from_app(app), Theme::from_env()).await?;
    let mut buf = Buffer::empty(area);
    driver.render(area, &mut buf);
    Ok((buf, mcp))
}
