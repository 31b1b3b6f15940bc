//! `arbor-agent`: the agent loop, the harness that runs it over a session, compaction and
//! branch summaries.
//!
//! [`harness::AgentHarness`] runs one [`session::Session`] against a model: `prompt` runs turns
//! until the model stops calling tools, persisting every message as it ends; tools implement
//! [`agent::AgentTool`] or, with their own argument type, [`agent::TypedTool`];
//! `navigate_tree` moves to another point of the session tree, optionally leaving a summary of
//! the branch it leaves; `compact` summarizes older context. The model is reached only through
//! the [`arbor_ai::ApiProvider`] handed in (here the scripted faux provider, offline).
//!
//! # A harness with a typed tool, then back up the tree with a branch summary
//!
//! ```
//! use std::sync::Arc;
//! use arbor_agent::prelude::*;
//! use arbor_ai::faux::{FauxProvider, FauxResponse};
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Args {
//!     /// The text to count the words of.
//!     text: String,
//! }
//!
//! struct WordCount;
//!
//! #[async_trait]
//! impl TypedTool for WordCount {
//!     type Args = Args;
//!     fn name(&self) -> &str { "word_count" }
//!     fn description(&self) -> &str { "Counts the words of a text" }
//!     async fn run(&self, args: Args, _: ToolInvocation) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text(args.text.split_whitespace().count().to_string()))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let faux = FauxProvider::new();
//! faux.push(FauxResponse::tool_call("word_count", json!({"text": "a b c"})));
//! faux.push(FauxResponse::text("Three words."));
//! faux.push(FauxResponse::text("## Goal\nCount words."));
//!
//! let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/work/project"))));
//! let options = HarnessOptions::new(faux.model()).with_tool(WordCount.into_tool());
//! let harness = AgentHarness::new(session.clone(), Arc::new(faux.clone()), options)?;
//! harness.subscribe(|event: &AgentEvent| {
//!     if let AgentEvent::ToolExecutionEnd { tool_name, .. } = event {
//!         println!("tool {tool_name} ran");
//!     }
//! });
//! let reply = harness.prompt("How many words in 'a b c'?", &[]).await?;
//! assert_eq!(reply.text(), "Three words.");
//!
//! // Re-edit the prompt: the leaf goes before it, and what was left behind is summarized.
//! let prompt = session.entries().await?.into_iter().find(|e| e.is_user_message());
//! let prompt = prompt.ok_or("no prompt")?;
//! let moved = harness
//!     .navigate_tree(Some(&prompt.id), NavigateOptions::summarized())
//!     .await?;
//! assert_eq!(moved.editor_text.as_deref(), Some("How many words in 'a b c'?"));
//! let summary = moved.summary_entry.ok_or("no summary")?;
//! assert_eq!(session.leaf_id().await?, Some(summary.id));
//! print!("{}", session.tree().await?.render());
//! # Ok(())
//! # }
//! ```
//!
//! Sessions themselves (entries, storage, projection) live in `arbor-session`, re-exported here
//! as [`session`] so a harness user needs one dependency. Layering: depends on `arbor-ai` for
//! messages and streaming and on `arbor-session` for the log; no HTTP client or terminal detail.

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

pub mod agent;
pub mod branch_summary;
pub mod compaction;
pub mod harness;
pub mod prelude;

/// The attribute for implementing [`agent::AgentTool`] and [`agent::TypedTool`] (their methods
/// are `async`).
pub use async_trait::async_trait;
/// The schema derivation [`agent::TypedTool`] uses (its `JsonSchema` derive), at the version this
/// crate builds with.
pub use schemars;

/// The session crate, whole: entries, storage backends, repositories, projection.
pub use arbor_session as session;
pub use arbor_session::{context, error, ids, message, time};
pub use arbor_session::{AgentMessage, Result, SessionError};
