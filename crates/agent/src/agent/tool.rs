//! The tool contract: what the agent loop needs from a tool (`read`, `bash`, an MCP bridge...).
//!
//! The loop owns validation (JSON Schema plus pi's coercions, see [`super::validate`]),
//! cancellation and event emission; a tool only turns validated arguments into content. A tool
//! never panics to report failure: it returns a [`ToolError`], whose message the model sees as
//! the error result's text.

use std::fmt;
use std::sync::Arc;

use arbor_ai::ContentBlock;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Whether the calls of one assistant message may run together. One `Sequential` tool among
/// the calls makes the whole batch sequential (pi's rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolExecutionMode {
    /// The calls start together; their results are still recorded in call order.
    #[default]
    Parallel,
    /// Each call finishes before the next starts (for tools whose calls must not overlap).
    Sequential,
}

/// A tool the model can call, written against raw JSON. [`super::TypedTool`] is the shorter
/// way when the arguments fit a Rust type; implement this one for a schema known only at run
/// time (an MCP server's tool) or to take arguments apart by hand.
///
/// The loop validates and coerces the model's arguments against [`AgentTool::parameters`]
/// before `execute` sees them ([`super::ToolSet::validate`] is that step, shown here):
///
/// ```
/// use arbor_agent::agent::{
///     AgentTool, CancellationToken, ToolError, ToolInvocation, ToolOutput, ToolProgress,
///     ToolRef, ToolSet,
/// };
/// use serde_json::{json, Value};
/// use std::sync::Arc;
///
/// /// `repeat {text, times}`: the text, `times` times.
/// struct Repeat {
///     schema: Value,
/// }
///
/// #[arbor_agent::async_trait]
/// impl AgentTool for Repeat {
///     fn name(&self) -> &str { "repeat" }
///     fn description(&self) -> &str { "Repeats a text a number of times" }
///     fn parameters(&self) -> &Value { &self.schema }
///     async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
///         // Validated already: both fields are present and of their schema's type.
///         let text = call.arguments["text"].as_str().unwrap_or_default();
///         let times = call.arguments["times"].as_u64().unwrap_or_default();
///         if times > 100 {
///             return Err(ToolError::new(format!("times is {times}; at most 100")));
///         }
///         call.progress.update(ToolOutput::text("repeating"));
///         let out = text.repeat(usize::try_from(times).unwrap_or_default());
///         Ok(ToolOutput::text(out).with_details(json!({ "times": times })))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let tool: ToolRef = Arc::new(Repeat {
///     schema: json!({
///         "type": "object",
///         "properties": { "text": { "type": "string" }, "times": { "type": "integer" } },
///         "required": ["text", "times"]
///     }),
/// });
/// // The model sent `times` as a string; validation coerces it to the schema's integer.
/// let call = serde_json::from_value(json!({
///     "id": "call_1", "name": "repeat", "arguments": { "text": "ab", "times": "3" }
/// }))?;
/// let arguments = ToolSet::new(vec![tool.clone()]).validate(&tool, &call)?;
/// assert_eq!(arguments, json!({ "text": "ab", "times": 3 }));
///
/// let (progress, mut updates) = ToolProgress::channel();
/// let invocation = ToolInvocation {
///     call_id: call.id.clone(),
///     arguments,
///     cancel: CancellationToken::new(),
///     progress,
/// };
/// let output = tool.execute(invocation).await?;
/// assert_eq!(output, ToolOutput::text("ababab").with_details(json!({ "times": 3 })));
/// assert_eq!(updates.recv().await, Some(ToolOutput::text("repeating")));
/// # Ok(())
/// # }
/// ```
#[async_trait::async_trait]
pub trait AgentTool: Send + Sync {
    /// What the model calls: `"read"`, `"bash"`, ...
    fn name(&self) -> &str;
    /// Human-facing name (pi's `label`).
    fn label(&self) -> &str {
        self.name()
    }
    /// What the tool does and when to use it; sent to the model with the schema.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> &Value;
    /// Rewrites argument forms the tool still accepts into its schema's form before
    /// validation (pi's `prepareArguments`); the transcript keeps what the model sent.
    fn prepare_arguments(&self, arguments: Value) -> Value {
        arguments
    }
    /// Whether this tool's calls may overlap with others of the same reply (default:
    /// parallel). One sequential tool in a reply makes that whole batch sequential.
    fn execution_mode(&self) -> ToolExecutionMode {
        ToolExecutionMode::Parallel
    }
    /// `true` when the tool answers cancellation itself, promptly, with a result that says what
    /// it did (a killed process group, a file already replaced): after an abort the loop then
    /// records that answer, waiting at most [`CANCEL_REPORT_LIMIT`] for it, instead of
    /// dropping the call with "Operation aborted".
    fn reports_cancellation(&self) -> bool {
        false
    }
    /// Runs the call. `call.arguments` are already validated and coerced against
    /// [`AgentTool::parameters`]. Should return promptly once `call.cancel` fires.
    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError>;
}

/// How long the loop waits, after an abort, for a tool that [reports its cancellation]
/// (AgentTool::reports_cancellation) (longer than the coding agent's 2 s process-group grace).
pub const CANCEL_REPORT_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The model-facing description of a tool (what goes into the provider request).
pub fn llm_tool(tool: &dyn AgentTool) -> arbor_ai::Tool {
    arbor_ai::Tool {
        name: tool.name().to_string(),
        description: tool.description().to_string(),
        parameters: tool.parameters().clone(),
        extra: Default::default(),
    }
}

/// Shared handle to a tool.
pub type ToolRef = Arc<dyn AgentTool>;

/// One call of a tool, as handed to [`AgentTool::execute`]. (Named apart from
/// [`arbor_ai::ToolCall`], the content block the model wrote.)
#[derive(Debug, Clone)]
pub struct ToolInvocation {
    /// The id the model gave the call.
    pub call_id: String,
    /// Validated and coerced against the tool's schema.
    pub arguments: Value,
    /// Fires when the run is aborted.
    pub cancel: CancellationToken,
    /// Partial results for the UI (`tool_execution_update` events).
    pub progress: ToolProgress,
}

/// What a tool produced: model-visible content (text and image blocks), UI-only details, and
/// the machine-readable result pi's tools give programmatic callers (`structuredContent`, seen
/// in `tool_execution_end.result`, never stored on the message; DECISIONS §31.14).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// What the model sees: text and image blocks.
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Data for the UI only; never sent to the model.
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A machine-readable result for programmatic callers (`structuredContent`); reported in
    /// `tool_execution_end` only, never sent to the model or stored.
    pub structured_content: Option<Value>,
    /// A result the tool itself reports as failed while keeping its structure (bash's non-zero
    /// exit: output and exit code stay), as pi's tools return `isError: true`. A thrown
    /// failure is a [`ToolError`] instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl ToolOutput {
    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            ..ToolOutput::default()
        }
    }

    /// Adds UI-only details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Adds the machine-readable result (see [`ToolOutput::structured_content`]).
    pub fn with_structured_content(mut self, structured: Value) -> Self {
        self.structured_content = Some(structured);
        self
    }

    /// Marks the result failed (see [`ToolOutput::is_error`]).
    pub fn failed(mut self) -> Self {
        self.is_error = true;
        self
    }
}

/// A failed tool call. `message` becomes the error result's text for the model.
#[derive(Debug)]
pub struct ToolError {
    message: String,
    details: Option<Value>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ToolError {
    /// A failure whose text the model reads.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            details: None,
            source: None,
        }
    }

    /// UI-only details kept on the error result (`details` of the toolResult message).
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Keeps the underlying error for logs; the model only sees [`ToolError::message`].
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The text the model reads.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The UI-only details.
    pub fn details(&self) -> Option<&Value> {
        self.details.as_ref()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError::new(e.to_string()).with_source(e)
    }
}

/// Sink for partial results. Cheap to clone; updates sent after the call finished are dropped
/// (pi ignores late updates).
#[derive(Clone)]
pub struct ToolProgress {
    sink: Option<Arc<ProgressFn>>,
}

type ProgressFn = dyn Fn(ToolOutput) + Send + Sync;

impl fmt::Debug for ToolProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolProgress")
            .field("connected", &self.sink.is_some())
            .finish()
    }
}

impl ToolProgress {
    /// A sink that drops everything (for calling a tool outside the loop, e.g. in tests).
    pub fn disconnected() -> Self {
        ToolProgress { sink: None }
    }

    /// A sink calling `f` for every update.
    pub fn from_fn(f: impl Fn(ToolOutput) + Send + Sync + 'static) -> Self {
        ToolProgress {
            sink: Some(Arc::new(f)),
        }
    }

    /// A connected sink and the receiver of its updates.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<ToolOutput>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let progress = ToolProgress::from_fn(move |out| {
            // A closed receiver means the call is over; late updates are ignored by design.
            let _ = tx.send(out);
        });
        (progress, rx)
    }

    /// Reports a partial result.
    pub fn update(&self, partial: ToolOutput) {
        if let Some(sink) = &self.sink {
            sink(partial);
        }
    }
}
