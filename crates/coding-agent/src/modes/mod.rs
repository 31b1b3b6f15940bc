//! Run modes (coding-agent.md §10): [`print`] (`-p`, or any run without a terminal), [`json`]
//! (`--mode json`: the session header, then one JSON event per line) and [`rpc`] (`--mode rpc`:
//! commands on stdin, responses and events on stdout). The interactive TUI plugs in here as
//! one more mode ([`crate::tui::run`]).

pub mod events;
pub mod json;
pub mod print;
pub mod rpc;

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;

use arbor_ai::ImageContent;

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

/// One prompt: text plus attached images.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub images: Vec<ImageContent>,
}

/// Builds the prompts: piped stdin, then `@file` texts, then the first message make the first
/// prompt (concatenated as they are); later messages follow one by one.
pub fn collect_prompts(
    args: &AgentArgs,
    stdin: Option<String>,
    cwd: &Path,
) -> Result<Vec<Prompt>, CliError> {
    let mut first = Prompt {
        text: stdin.unwrap_or_default(),
        images: Vec::new(),
    };
    let mut messages = Vec::new();
    for m in &args.messages {
        if let Some(raw) = m.strip_prefix('@') {
            let abs = crate::tools::path::resolve_for_read(raw, cwd);
            let bytes = std::fs::read(&abs).map_err(|_| {
                CliError::Startup(format!("Error: File not found: {}", abs.display()))
            })?;
            if bytes.is_empty() {
                continue;
            }
            if let Some(mime) = crate::tools::image::sniff(&bytes[..bytes.len().min(64)]) {
                first
                    .text
                    .push_str(&format!("<file name=\"{}\"></file>\n", abs.display()));
                if let Ok(p) = crate::tools::image::prepare(&bytes, mime, true) {
                    first.images.push(ImageContent {
                        data: p.data,
                        mime_type: p.mime_type.to_owned(),
                        ..Default::default()
                    });
                }
            } else {
                let text = String::from_utf8_lossy(&bytes);
                first.text.push_str(&format!(
                    "<file name=\"{}\">\n{text}\n</file>\n",
                    abs.display()
                ));
            }
        } else {
            messages.push(m.clone());
        }
    }
    let mut rest = messages.into_iter();
    if let Some(m) = rest.next() {
        first.text.push_str(&m);
    }
    let mut out = Vec::new();
    if !first.text.is_empty() || !first.images.is_empty() {
        out.push(first);
    }
    out.extend(rest.map(|text| Prompt {
        text,
        images: Vec::new(),
    }));
    Ok(out)
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
    let prompts = collect_prompts(&args, stdin, &cwd)?;
    if mode != Mode::Rpc && prompts.is_empty() {
        // Checked before anything is opened, so no empty session file is left behind.
        return Err(CliError::Startup(
            "Error: no message given: pass one (arbor -p \"...\"), pipe one on stdin, or use --mode rpc".into(),
        ));
    }
    let app = crate::startup::start(&args, session_dir).await?;
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
    registry
        .load_models_json(&home.join("models.json"))
        .map_err(|e| CliError::Config(e.to_string()))?;
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
        let keyed = provider.api_key(&m.provider).is_some()
            || m.base_url.contains("://localhost")
            || m.base_url.contains("://127.0.0.1");
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

/// Aborts the run (tools are cancelled, bash process groups killed) and waits for it to write
/// its last entries; a second signal exits at once.
pub async fn stop<T>(
    harness: &arbor_agent::harness::AgentHarness,
    work: tokio::task::JoinHandle<T>,
) {
    let wind_down = async {
        harness.abort().await;
        let _ = work.await;
    };
    tokio::select! {
        _ = wind_down => {}
        code = shutdown_signal() => std::process::exit(i32::from(code)),
    }
}

/// Resolves on SIGTERM (143) or SIGHUP (129) with the exit code.
pub async fn shutdown_signal() -> u8 {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => 143,
        _ = hup.recv() => 129,
    }
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

    #[test]
    fn stdin_files_and_messages_make_the_prompts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let a = AgentArgs {
            messages: vec![
                "@a.txt".into(),
                "@empty.txt".into(),
                "first".into(),
                "second".into(),
            ],
            ..Default::default()
        };
        let p = collect_prompts(&a, Some("piped\n".into()), dir.path()).unwrap();
        let abs = dir.path().join("a.txt");
        assert_eq!(
            p[0].text,
            format!(
                "piped\n<file name=\"{}\">\nalpha\n</file>\nfirst",
                abs.display()
            )
        );
        assert_eq!(p[1].text, "second");
        let missing = AgentArgs {
            messages: vec!["@nope.txt".into()],
            ..Default::default()
        };
        let e = collect_prompts(&missing, None, dir.path())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "Error: File not found: {}",
                dir.path().join("nope.txt").display()
            )
        );
    }
}
