//! An agent with a tool of its own, on a session file; then back up the tree with a summary
//! of the abandoned branch, as `/tree` does.
//!
//! `cargo run -p arbor-agent --example agent_with_tool` runs offline on the scripted faux
//! provider; the session file is written to a temporary directory and its path printed.

use std::sync::{Arc, OnceLock};

use arbor_agent::agent::{AgentEvent, AgentTool, ToolError, ToolInvocation, ToolOutput};
use arbor_agent::harness::{AgentHarness, HarnessOptions, NavigateOptions, SystemPrompt};
use arbor_agent::session::{CreateOptions, JsonlRepository, Session, SessionRepository};
use arbor_ai::faux::{FauxProvider, FauxResponse};
use serde::Deserialize;
use serde_json::{json, Value};

/// `word_count {text}`: how many words the text has.
struct WordCount;

#[derive(Deserialize)]
struct WordCountArgs {
    text: String,
}

#[async_trait::async_trait]
impl AgentTool for WordCount {
    fn name(&self) -> &str {
        "word_count"
    }
    fn description(&self) -> &str {
        "Counts the words of a text"
    }
    fn parameters(&self) -> &Value {
        static SCHEMA: OnceLock<Value> = OnceLock::new();
        SCHEMA.get_or_init(|| {
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
        })
    }
    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        // Arguments arrive validated against the schema above.
        let args: WordCountArgs = serde_json::from_value(call.arguments)
            .map_err(|e| ToolError::new(format!("bad arguments: {e}")))?;
        Ok(ToolOutput::text(
            args.text.split_whitespace().count().to_string(),
        ))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let repo = JsonlRepository::flat(dir.path());
    let storage = repo
        .create(CreateOptions {
            cwd: dir.path().display().to_string(),
            ..Default::default()
        })
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

    let options = HarnessOptions {
        model: faux.model(),
        tools: vec![Arc::new(WordCount)],
        system_prompt: SystemPrompt::Text("You count words.".into()),
        ..HarnessOptions::default()
    };
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
    let tree = session.tree().await?;
    let target = tree
        .walk()
        .into_iter()
        .map(|(i, _)| &tree.nodes[i])
        .filter(|n| {
            matches!(
                &n.row.kind,
                arbor_agent::session::RowKind::Message(
                    arbor_agent::session::rows::MessageRow::User { .. }
                )
            )
        })
        .nth(1)
        .map(|n| n.id().to_string())
        .ok_or("no second user message")?;
    let moved = harness
        .navigate_tree(
            Some(&target),
            NavigateOptions {
                summarize: true,
                ..Default::default()
            },
        )
        .await?;
    if let Some(summary) = moved.summary_entry {
        println!("branch summary entry {} written", summary.id);
    }
    println!(
        "editor text to re-send: {:?}",
        moved.editor_text.unwrap_or_default()
    );

    let tree = session.tree().await?;
    for (index, depth) in tree.walk() {
        let node = &tree.nodes[index];
        let leaf = if tree.leaf_id.as_deref() == Some(node.id()) {
            "  <- leaf"
        } else {
            ""
        };
        println!("{}{}{leaf}", "  ".repeat(depth), node.id());
    }
    println!(
        "session file (removed with its temporary directory): {}",
        session.storage().location()
    );
    Ok(())
}
