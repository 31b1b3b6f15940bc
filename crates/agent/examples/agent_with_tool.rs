//! An agent with a typed tool of its own, on a session file; then back up the tree with a
//! summary of the abandoned branch, as `/tree` does, and print the tree.
//!
//! `cargo run -p arbor-agent --example agent_with_tool` runs offline on the scripted faux
//! provider; the session file is written to a temporary directory and its path printed.

use std::sync::Arc;

use arbor_agent::prelude::*;
use arbor_ai::faux::{FauxProvider, FauxResponse};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// `word_count {text}`: how many words the text has.
struct WordCount;

#[derive(Deserialize, JsonSchema)]
struct WordCountArgs {
    /// The text to count the words of.
    text: String,
}

#[async_trait]
impl TypedTool for WordCount {
    type Args = WordCountArgs;
    fn name(&self) -> &str {
        "word_count"
    }
    fn description(&self) -> &str {
        "Counts the words of a text"
    }
    async fn run(&self, args: WordCountArgs, _: ToolInvocation) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(
            args.text.split_whitespace().count().to_string(),
        ))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("words.jsonl");
    let storage = JsonlRepository::flat(dir.path())
        .create_at(&file, CreateOptions::new(dir.path().display().to_string()))
        .await?;
    let session = Arc::new(Session::new(Arc::new(storage)));

    // The model's side, scripted: a tool call, the answer after it, a second answer, and the
    // summary the branch-summary request will get.
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "word_count",
        json!({"text": "the quick brown fox"}),
    ));
    faux.push(FauxResponse::text("Four words."));
    faux.push(FauxResponse::text("Plan B: count characters instead."));
    faux.push(FauxResponse::text(
        "## Goal\nCount words; plan B (characters) was tried.",
    ));

    let options = HarnessOptions::new(faux.model())
        .with_tool(WordCount.into_tool())
        .with_system_prompt(SystemPrompt::Text("You count words.".into()));
    let harness = AgentHarness::new(session.clone(), Arc::new(faux.clone()), options)?;
    harness.subscribe(|event: &AgentEvent| {
        if let AgentEvent::ToolExecutionEnd { tool_name, .. } = event {
            println!("(tool {tool_name} ran)");
        }
    });

    let first = harness
        .prompt("How many words in 'the quick brown fox'?", &[])
        .await?;
    println!("assistant: {}", first.text());
    let second = harness.prompt("Try another way.", &[]).await?;
    println!("assistant: {}", second.text());

    // Leave the second exchange: navigate to the second user message (the leaf goes to its
    // parent, so it can be edited), summarizing what is left behind.
    let user_messages: Vec<SessionEntry> = session
        .entries()
        .await?
        .into_iter()
        .filter(SessionEntry::is_user_message)
        .collect();
    let target = user_messages.get(1).ok_or("no second user message")?;
    let moved = harness
        .navigate_tree(Some(&target.id), NavigateOptions::summarized())
        .await?;
    if let Some(summary) = &moved.summary_entry {
        println!("branch summary entry {} written", summary.id);
    }
    println!("editor text to re-send: {:?}", moved.editor_text);

    // The harness's own session prints its tree; no second handle needed.
    print!("{}", session.tree().await?.render());
    println!(
        "session file (removed with its temporary directory): {}",
        file.display()
    );
    Ok(())
}
