//! An MCP server's tool as an [`AgentTool`]: the model sees `mcp__<server>__<tool>` with the
//! server's description and JSON Schema; a call goes through the manager (which reconnects a
//! dropped server) and the MCP result is mapped to a tool result (DECISIONS §33.4).

use arbor_agent::agent::{AgentTool, ToolError, ToolInvocation, ToolOutput};
use arbor_ai::{ContentBlock, ImageContent};
use serde_json::{json, Value};

use super::McpError;

/// What an [`McpTool`] calls through: the manager, which owns the connections (a trait, so
/// the tool does not depend on the manager that makes it).
#[async_trait::async_trait]
pub trait ToolCaller: Send + Sync {
    /// Calls `tool` on the server `server` (canonical key); the `CallToolResult` as JSON.
    async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<Value, McpError>;
}

/// One tool of one server.
pub struct McpTool {
    pub(super) manager: std::sync::Arc<dyn ToolCaller>,
    /// The canonical server key (see [`super::config::canonical_name`]).
    pub(super) server: String,
    /// The tool's name on the server.
    pub(super) remote_name: String,
    /// The name the model calls.
    pub(super) name: String,
    pub(super) description: String,
    pub(super) parameters: Value,
}

#[async_trait::async_trait]
impl AgentTool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let arguments = match call.arguments {
            Value::Object(m) => m,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::new(format!(
                    "MCP tool arguments must be an object, got {other}"
                )))
            }
        };
        let call_fut = self
            .manager
            .call(&self.server, &self.remote_name, arguments);
        let result = tokio::select! {
            r = call_fut => r,
            _ = call.cancel.cancelled() => return Err(ToolError::new("Operation aborted")),
        };
        let value = result.map_err(|e| ToolError::new(e.to_string()).with_source(e))?;
        map_result(&value, &self.server, &self.remote_name)
    }
}

/// Maps a `CallToolResult` (as JSON) to a tool result: text and images pass through, embedded
/// text resources become text, other blocks a line naming them; `isError` makes it an error
/// result with the text the server gave.
pub fn map_result(value: &Value, server: &str, tool: &str) -> Result<ToolOutput, ToolError> {
    let mut content = Vec::new();
    for block in value
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let text_of = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
        match kind {
            "text" => content.push(ContentBlock::text(text_of("text"))),
            "image" => content.push(ContentBlock::Image(ImageContent {
                data: text_of("data").to_owned(),
                mime_type: text_of("mimeType").to_owned(),
                extra: Default::default(),
            })),
            "resource" => {
                let res = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = res.get("uri").and_then(Value::as_str).unwrap_or_default();
                match res.get("text").and_then(Value::as_str) {
                    Some(t) => content.push(ContentBlock::text(t)),
                    None => content.push(ContentBlock::text(format!(
                        "[binary resource {uri} omitted]"
                    ))),
                }
            }
            "resource_link" => content.push(ContentBlock::text(format!(
                "Resource link: {} ({})",
                text_of("uri"),
                text_of("name")
            ))),
            other => content.push(ContentBlock::text(format!(
                "[{other} content from the MCP server omitted]"
            ))),
        }
    }
    if content.is_empty() {
        if let Some(s) = value.get("structuredContent").filter(|v| !v.is_null()) {
            content.push(ContentBlock::text(s.to_string()));
        }
    }
    let details = json!({"server": server, "tool": tool});
    if value.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<String> = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect();
        let message = if text.is_empty() {
            format!("MCP tool {tool} on server {server} reported an error")
        } else {
            text.join("\n")
        };
        return Err(ToolError::new(message).with_details(details));
    }
    if content.is_empty() {
        content.push(ContentBlock::text("(no output)"));
    }
    Ok(ToolOutput {
        content,
        details: Some(details),
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_images_and_errors_are_mapped() {
        let ok = map_result(
            &json!({"content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
                {"type": "audio", "data": "x", "mimeType": "audio/wav"}
            ]}),
            "s",
            "t",
        )
        .unwrap();
        assert_eq!(ok.content.len(), 4);
        assert!(matches!(&ok.content[1], ContentBlock::Image(i) if i.mime_type == "image/png"));
        assert!(matches!(&ok.content[3], ContentBlock::Text(t) if t.text.contains("audio")));
        let err = map_result(
            &json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
            "s",
            "t",
        )
        .unwrap_err();
        assert_eq!(err.message(), "boom");
        let structured = map_result(
            &json!({"content": [], "structuredContent": {"a": 1}}),
            "s",
            "t",
        )
        .unwrap();
        assert!(matches!(&structured.content[0], ContentBlock::Text(t) if t.text == "{\"a\":1}"));
    }
}
