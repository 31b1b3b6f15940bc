//! Run modes: [`print`] (`-p`, or any run without a terminal), [`json`]
//! (`--mode json`: the session header, then one JSON event per line) and [`rpc`] (`--mode rpc`:
//! commands on stdin, responses and events on stdout) (DECISIONS §22.8). The interactive TUI plugs in here as
//! one more mode ([`crate::tui::run`]).

pub mod events;
pub mod json;
pub mod print;
pub mod rpc;

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;

use crate::cli::AgentArgs;
use crate::error::CliError;

/// Which mode a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Interactive,
    Print,
    Json,
    Rpc,
}

/// pi's rule: `--mode json|rpc` win; `-p` prints; a redirected stdin or stdout prints too;
/// otherwise (both terminals) the TUI.
pub fn select(args: &AgentArgs, stdin_tty: bool, stdout_tty: bool) -> Mode {
    match args.mode.as_deref() {
        Some("json") => Mode::Json,
        Some("rpc") => Mode::Rpc,
        _ if args.print || !stdin_tty || !stdout_tty => Mode::Print,
        _ => Mode::Interactive,
    }
}

/// Runs the agent per the flags.
pub async fn run(args: AgentArgs, session_dir: Option<&Path>) -> Result<ExitCode, CliError> {
    if let Some(export) = &args.export {
        return crate::export::run(export).await;
    }
    if let Some(search) = &args.list_models {
        return list_models(&args, search);
    }
    let stdin_tty = std::io::stdin().is_terminal();
    let mode = select(&args, stdin_tty, std::io::stdout().is_terminal());
    if mode == Mode::Interactive {
        return crate::tui::run(args, session_dir).await;
    }
    if mode == Mode::Rpc && args.messages.iter().any(|m| m.starts_with('@')) {
        return Err(CliError::Startup(
            "Error: @file arguments are not supported in RPC mode".into(),
        ));
    }
    let cwd = std::env::current_dir().map_err(|e| CliError::io("current directory", e))?;
    let stdin = if mode != Mode::Rpc && !stdin_tty {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .map_err(|e| CliError::io("stdin", e))?;
        Some(buf)
    } else {
        None
    };
    let prompts = crate::initial_prompts::collect_prompts(&args, stdin, &cwd)?;
    if mode != Mode::Rpc && prompts.is_empty() {
        // Checked before anything is opened, so no empty session file is left behind.
        return Err(CliError::Startup(
            "Error: no message given: pass one (arbor -p \"...\"), pipe one on stdin, or use --mode rpc".into(),
        ));
    }
    let app = crate::startup::start(&args, session_dir).await?;
    // What was found and every warning, before the run's own output (DECISIONS §32.5).
    for line in app.resources.resources().report() {
        eprintln!("{line}");
    }
    match mode {
        Mode::Json => json::run(app, prompts).await,
        Mode::Rpc => rpc::run(app, args, session_dir.map(Path::to_path_buf)).await,
        _ => print::run(app, prompts).await,
    }
}

fn list_models(args: &AgentArgs, search: &str) -> Result<ExitCode, CliError> {
    let home = crate::config::arbor_home();
    let mut registry =
        arbor_ai::models::ModelRegistry::builtin().map_err(|e| CliError::Config(e.to_string()))?;
    crate::models_json::load_models_json(&mut registry, &home.join("models.json"))?;
    let registry = std::sync::Arc::new(registry);
    let auth = std::sync::Arc::new(crate::auth::AuthStore::load(&home)?);
    let provider = crate::provider::AppProvider::new(
        registry.clone(),
        auth,
        args.api_key.clone().map(arbor_ai::models::ApiKey::new),
    );
    let needle = search.to_lowercase();
    let mut out = String::from("provider\tmodel\tcontext\tmax-out\tthinking\timages\n");
    let mut any = false;
    for m in registry.models() {
        let keyed = crate::command::models::usable(&provider, m);
        let hay = format!("{}/{} {}", m.provider, m.id, m.name).to_lowercase();
        if !keyed || (!needle.is_empty() && !hay.contains(&needle)) {
            continue;
        }
        any = true;
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\n",
            m.provider,
            m.id,
            m.context_window,
            m.max_tokens,
            if m.reasoning { "yes" } else { "no" },
            if m.supports_images() { "yes" } else { "no" }
        ));
    }
    if !any {
        eprintln!(
            "No models available. Set an API key or add a provider to {}",
            home.join("models.json").display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_selection_follows_pi() {
        let mut a = AgentArgs::default();
        assert_eq!(select(&a, true, true), Mode::Interactive);
        assert_eq!(select(&a, false, true), Mode::Print);
        assert_eq!(select(&a, true, false), Mode::Print);
        a.mode = Some("text".into());
        assert_eq!(select(&a, true, true), Mode::Interactive);
        a.print = true;
        assert_eq!(select(&a, true, true), Mode::Print);
        a.mode = Some("rpc".into());
        assert_eq!(select(&a, true, true), Mode::Rpc);
    }
}
