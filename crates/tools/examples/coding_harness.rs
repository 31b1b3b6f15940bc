//! A harness with Arbor's built-in coding tools and its system prompt, outside the app: the
//! model reads a file in a temporary directory, then edits it.
//!
//! `cargo run -p arbor-tools --example coding_harness` runs offline on the scripted faux
//! provider; the tools act on real files.

use std::sync::Arc;

use arbor_agent::agent::AgentEvent;
use arbor_agent::harness::{AgentHarness, HarnessOptions, SystemPrompt};
use arbor_agent::session::{MemoryStorage, Session};
use arbor_ai::faux::{FauxProvider, FauxResponse};
use arbor_tools::system_prompt::{self, PromptParts};
use arbor_tools::{builtin_tools, ToolEnv, ToolSettings, DEFAULT_TOOLS};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("greeting.txt");
    std::fs::write(&file, "hello world\n")?;
    std::fs::write(dir.path().join("AGENTS.md"), "Keep greetings short.\n")?;

    // The tools, bound to the directory the model works in (one write queue for all).
    let env = ToolEnv::new(dir.path().to_path_buf(), ToolSettings::default());
    let tools = builtin_tools(&env);

    // The system prompt as the app builds it: the tool list and rules for the active tools,
    // and the AGENTS.md files from the filesystem root down to the directory.
    let home = dir.path().join("no-home");
    let (context_files, warnings) = system_prompt::load_context_files(&home, dir.path());
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    let prompt = system_prompt::render(&PromptParts {
        active_tools: DEFAULT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
        context_files,
        cwd: dir.path().display().to_string(),
        ..PromptParts::default()
    });

    // The model's side, scripted: read the file, edit it, then answer.
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "read",
        json!({"path": "greeting.txt"}),
    ));
    faux.push(FauxResponse::tool_call(
        "edit",
        json!({"path": "greeting.txt", "edits": [{"oldText": "world", "newText": "Arbor"}]}),
    ));
    faux.push(FauxResponse::text("The greeting now says hello to Arbor."));

    let session = Arc::new(Session::new(Arc::new(MemoryStorage::new(
        dir.path().display().to_string(),
    ))));
    let options = HarnessOptions::new(faux.model())
        .with_tools(tools)
        .with_system_prompt(SystemPrompt::Text(prompt));
    let harness = AgentHarness::new(session, Arc::new(faux.clone()), options)?;
    harness.subscribe(|event: &AgentEvent| {
        if let AgentEvent::ToolExecutionEnd {
            tool_name,
            is_error,
            ..
        } = event
        {
            let outcome = if *is_error { "failed" } else { "ok" };
            println!("(tool {tool_name}: {outcome})");
        }
    });

    let answer = harness
        .prompt("Make the greeting say hello to Arbor.", &[])
        .await?;
    println!("assistant: {}", answer.text());

    let edited = std::fs::read_to_string(&file)?;
    print!("greeting.txt: {edited}");
    if edited != "hello Arbor\n" {
        return Err(format!("the edit did not land: {edited:?}").into());
    }
    Ok(())
}
