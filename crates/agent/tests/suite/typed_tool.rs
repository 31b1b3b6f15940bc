//! Typed tools (`TypedTool`): the derived schema the model is given, a call decoded into the
//! tool's own type, and bad arguments reaching the model as an error that names the field.

use std::sync::Arc;

use arbor_agent::agent::CancellationToken;
use arbor_agent::agent::{
    schema_for, ToolError, ToolInvocation, ToolOutput, ToolProgress, TypedTool,
};
use arbor_agent::harness::{AgentHarness, HarnessOptions};
use arbor_agent::session::{MemoryStorage, Session};
use arbor_ai::faux::{FauxProvider, FauxResponse};
use arbor_ai::types::Message;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct RepeatArgs {
    /// What to repeat.
    text: String,
    /// How many times.
    times: u8,
    #[serde(default)]
    separator: Option<String>,
}

struct Repeat;

#[arbor_agent::async_trait]
impl TypedTool for Repeat {
    type Args = RepeatArgs;
    fn name(&self) -> &str {
        "repeat"
    }
    fn description(&self) -> &str {
        "Repeats a text"
    }
    async fn run(&self, args: RepeatArgs, _: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let sep = args.separator.unwrap_or_else(|| " ".into());
        Ok(ToolOutput::text(
            vec![args.text; usize::from(args.times)].join(&sep),
        ))
    }
}

#[test]
fn the_schema_is_derived_from_the_argument_type() {
    assert_eq!(
        schema_for::<RepeatArgs>(),
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "What to repeat."},
                "times": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255, "description": "How many times."},
                "separator": {"type": ["string", "null"], "default": null}
            },
            "required": ["text", "times"]
        })
    );
    assert_eq!(Repeat.into_tool().parameters(), &schema_for::<RepeatArgs>());
}

/// The text of each tool result the harness wrote, with its error flag.
async fn tool_results(session: &Session) -> Vec<(bool, String)> {
    let context = session
        .build_context(&Default::default())
        .await
        .expect("context");
    arbor_agent::context::convert_to_llm(&context.messages)
        .into_iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.is_error, r.content.joined_text(""))),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_typed_tool_runs_and_bad_arguments_name_the_field() {
    let faux = FauxProvider::builder().seed(7).build();
    faux.push(FauxResponse::tool_call(
        "repeat",
        json!({"text": "ab", "times": 3, "separator": "-"}),
    ));
    faux.push(FauxResponse::tool_call(
        "repeat",
        json!({"text": "ab", "times": 300}),
    ));
    faux.push(FauxResponse::tool_call("repeat", json!({"times": 2})));
    faux.push(FauxResponse::text("done"));
    let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/p"))));
    let options = HarnessOptions::new(faux.model()).with_tool(Repeat.into_tool());
    let harness =
        AgentHarness::new(session.clone(), Arc::new(faux.clone()), options).expect("harness");
    harness.prompt("repeat it", &[]).await.expect("prompt");

    let results = tool_results(&session).await;
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0], (false, "ab-ab-ab".to_string()));
    let (error, text) = &results[1];
    assert!(*error);
    assert!(
        text.starts_with("Validation failed for tool \"repeat\":\n  - times: "),
        "{text}"
    );
    let (error, text) = &results[2];
    assert!(*error);
    assert!(text.contains("text"), "{text}");
}

#[tokio::test]
async fn arguments_serde_refuses_are_reported_with_their_path() {
    // Straight to the tool, past the loop's schema check: the decoder names the field.
    let tool = Repeat.into_tool();
    let call = |arguments| ToolInvocation {
        call_id: "c1".into(),
        arguments,
        cancel: CancellationToken::new(),
        progress: ToolProgress::disconnected(),
    };
    let err = tool
        .execute(call(json!({"text": "a", "times": "many"})))
        .await
        .expect_err("a string is no u8");
    assert!(
        err.message().starts_with(
            "Invalid arguments for tool \"repeat\": times: invalid type: string \"many\""
        ),
        "{}",
        err.message()
    );
    let err = tool
        .execute(call(json!("just text")))
        .await
        .expect_err("a string is no arguments object");
    assert!(
        err.message()
            .starts_with("Invalid arguments for tool \"repeat\": root: "),
        "{}",
        err.message()
    );
    assert!(std::error::Error::source(&err).is_some());
}
