//! Typed tools: a tool whose arguments are its own Rust type, with the JSON Schema the model
//! sees derived from that type by `schemars` (DECISIONS §20.40).
//!
//! [`TypedTool`] is the convenient way to write a tool; [`Typed`] adapts one to the loop's
//! [`AgentTool`] contract, so the harness takes typed and untyped tools side by side. The loop
//! still validates (and coerces) the arguments against the derived schema first, so most
//! mistakes reach the model as pi's "Validation failed" list; whatever the schema cannot say
//! (a value serde still refuses) is reported with the path of the field that failed.

use std::fmt;
use std::sync::Arc;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::tool::{AgentTool, ToolError, ToolExecutionMode, ToolInvocation, ToolOutput, ToolRef};

/// A tool whose arguments deserialize into [`TypedTool::Args`].
///
/// ```
/// use arbor_agent::agent::{ToolError, ToolInvocation, ToolOutput, TypedTool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// /// The arguments; doc comments become the schema's descriptions.
/// #[derive(Deserialize, JsonSchema)]
/// struct Args {
///     /// The text to count the words of.
///     text: String,
/// }
///
/// struct WordCount;
///
/// #[arbor_agent::async_trait]
/// impl TypedTool for WordCount {
///     type Args = Args;
///     fn name(&self) -> &str { "word_count" }
///     fn description(&self) -> &str { "Counts the words of a text" }
///     async fn run(&self, args: Args, _call: ToolInvocation) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text(args.text.split_whitespace().count().to_string()))
///     }
/// }
///
/// let tool = WordCount.into_tool();
/// assert_eq!(tool.parameters()["required"], serde_json::json!(["text"]));
/// ```
#[async_trait::async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments object. Its `JsonSchema` is what the model is given.
    type Args: DeserializeOwned + JsonSchema + Send;

    /// What the model calls.
    fn name(&self) -> &str;
    /// Human-facing name (pi's `label`); the name by default.
    fn label(&self) -> &str {
        self.name()
    }
    /// What the tool does, for the model.
    fn description(&self) -> &str;
    /// See [`AgentTool::execution_mode`].
    fn execution_mode(&self) -> ToolExecutionMode {
        ToolExecutionMode::Parallel
    }
    /// See [`AgentTool::reports_cancellation`].
    fn reports_cancellation(&self) -> bool {
        false
    }
    /// Runs the call with its decoded arguments. `call` still carries the raw (validated)
    /// arguments, the cancellation token and the progress sink.
    async fn run(&self, args: Self::Args, call: ToolInvocation) -> Result<ToolOutput, ToolError>;

    /// This tool as a shared [`AgentTool`], ready for `HarnessOptions::tools`.
    fn into_tool(self) -> ToolRef
    where
        Self: Sized,
    {
        Arc::new(Typed::new(self))
    }
}

/// The JSON Schema of `T` as a tool's parameters: draft 7 (what the loop's validator and
/// every provider read), subschemas inlined (no `$ref`s for providers that do not follow
/// them), no `$schema` or `title` keys (noise in every request).
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft07();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let mut schema: Value = settings.into_generator().into_root_schema_for::<T>().into();
    if let Value::Object(map) = &mut schema {
        map.remove("title");
        map.remove("$schema");
    }
    schema
}

/// Adapts a [`TypedTool`] to [`AgentTool`]: the schema is derived once, at construction.
pub struct Typed<T: TypedTool> {
    tool: T,
    schema: Value,
}

impl<T: TypedTool> Typed<T> {
    /// Wraps `tool`, deriving its parameter schema.
    pub fn new(tool: T) -> Self {
        Typed {
            schema: schema_for::<T::Args>(),
            tool,
        }
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.tool
    }
}

impl<T: TypedTool> fmt::Debug for Typed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Typed")
            .field("name", &self.tool.name())
            .field("schema", &self.schema)
            .finish()
    }
}

/// Decodes the arguments, naming the field serde refused (`items[2].path: invalid type...`).
fn decode<A: DeserializeOwned>(tool: &str, arguments: &Value) -> Result<A, ToolError> {
    serde_path_to_error::deserialize(arguments).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            "root".to_string()
        } else {
            path
        };
        let message = format!("Invalid arguments for tool \"{tool}\": {at}: {}", e.inner());
        ToolError::new(message).with_source(e.into_inner())
    })
}

#[async_trait::async_trait]
impl<T: TypedTool> AgentTool for Typed<T> {
    fn name(&self) -> &str {
        self.tool.name()
    }
    fn label(&self) -> &str {
        self.tool.label()
    }
    fn description(&self) -> &str {
        self.tool.description()
    }
    fn parameters(&self) -> &Value {
        &self.schema
    }
    fn execution_mode(&self) -> ToolExecutionMode {
        self.tool.execution_mode()
    }
    fn reports_cancellation(&self) -> bool {
        self.tool.reports_cancellation()
    }
    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = decode::<T::Args>(self.tool.name(), &call.arguments)?;
        self.tool.run(args, call).await
    }
}
