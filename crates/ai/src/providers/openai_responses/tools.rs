//! Tool declarations of a Responses request: function and grammar tools, and how the tool
//! changes of later system messages are expressed (request-level list, in-place additions, a
//! client tool search).

use serde_json::{json, Map, Value};

use crate::providers::constrained::Refusal;
use crate::providers::{compat_bool, Transcript};
use crate::transform::short_hash;
use crate::types::{Model, Tool};

/// Function tools; `constrainedSampling` tools are sent strict where `compat.supportsStrictMode`
/// allows (DECISIONS §26.12). `deferred` marks tools returned by a client tool search
/// (`defer_loading: true`, DECISIONS §26.50).
pub(super) fn convert_tools(
    model: &Model,
    tools: &[Tool],
    deferred: bool,
) -> Result<Vec<Value>, Refusal> {
    let supports_strict = compat_bool(model, "supportsStrictMode") == Some(true);
    let supports_grammar = compat_bool(model, "supportsOpenAIGrammarTools") == Some(true);
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        if let Some(g) = crate::providers::constrained::grammar(tool, supports_grammar)? {
            let mut t = json!({"type": "custom", "name": tool.name, "description": tool.description,
                "format": {"type": "grammar", "syntax": g.syntax, "definition": g.definition}});
            if deferred {
                t["defer_loading"] = json!(true);
            }
            out.push(t);
            continue;
        }
        let strict = crate::providers::constrained::resolve(tool, supports_strict, None)?;
        let is_strict = strict.is_some();
        let mut t = Map::new();
        t.insert("type".into(), json!("function"));
        t.insert("name".into(), json!(tool.name));
        t.insert("description".into(), json!(tool.description));
        t.insert(
            "parameters".into(),
            strict.unwrap_or_else(|| tool.parameters.clone()),
        );
        if deferred {
            t.insert("defer_loading".into(), json!(true));
        }
        if supports_strict {
            t.insert("strict".into(), json!(is_strict));
        }
        out.push(Value::Object(t));
    }
    Ok(out)
}

/// How the request expresses the tool changes of later system messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ToolSupport {
    /// The request-level list is the current tool set (collapsed transcript, or no compat).
    Current,
    /// Every tool is declared in `additional_tools` input items (`compat.supportsAdditionalTools`
    /// with system messages in place, DECISIONS §26.22).
    Changes,
    /// Additions are announced as a completed client tool search (`compat.supportsToolSearch`
    /// with system messages in place and no `additional_tools`, DECISIONS §26.50).
    Additions,
}

pub(super) fn tool_support(model: &Model, transcript: &Transcript) -> ToolSupport {
    if !transcript.in_place {
        ToolSupport::Current
    } else if compat_bool(model, "supportsAdditionalTools") == Some(true) {
        ToolSupport::Changes
    } else if compat_bool(model, "supportsToolSearch") == Some(true) {
        ToolSupport::Additions
    } else {
        ToolSupport::Current
    }
}

/// A later system message's additions as a client tool search that already ran: a
/// `tool_search_call` for their names and its `tool_search_output` with the tools deferred
/// (DECISIONS §26.50). The call id is derived from the message's position and the names, so
/// the same transcript always yields the same bytes (the prompt cache depends on it).
pub(super) fn push_tool_search(
    model: &Model,
    tools: &[Tool],
    msg_index: usize,
    items: &mut Vec<Value>,
) -> Result<(), Refusal> {
    if tools.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let call_id = format!(
        "pi_tool_load_{}",
        short_hash(&format!("system:{msg_index}:{}", names.join(",")))
    );
    items.push(
        json!({"type": "tool_search_call", "call_id": call_id, "execution": "client",
        "status": "completed", "arguments": {"query": names.join(" "), "limit": names.len()}}),
    );
    items.push(
        json!({"type": "tool_search_output", "call_id": call_id, "execution": "client",
        "status": "completed", "tools": convert_tools(model, tools, true)?}),
    );
    Ok(())
}

/// `additional_tools` items can add and redefine tools but not remove one, so removals are
/// announced as text and every later item is framed as incremental (pi's wording, which the
/// request must repeat byte for byte to keep the prompt cache shared, DECISIONS §26.22).
#[derive(Default)]
pub(super) struct ToolDeclarations {
    declared: bool,
    /// Announced as removed and not declared again, in announcement order.
    unavailable: Vec<String>,
}

impl ToolDeclarations {
    pub(super) fn add(
        &mut self,
        model: &Model,
        tools: &[Tool],
        instruction_role: &str,
        items: &mut Vec<Value>,
    ) -> Result<(), Refusal> {
        self.unavailable
            .retain(|name| !tools.iter().any(|t| &t.name == name));
        if tools.is_empty() {
            return Ok(());
        }
        if self.declared {
            let mut notice = String::from(
                "This is an incremental tools update. Previously declared tools remain available unless explicitly marked unavailable. A tool declared again here is available again, and its latest definition replaces the earlier one.",
            );
            if !self.unavailable.is_empty() {
                notice.push_str(&format!(
                    "\nStill unavailable: {}.",
                    self.unavailable.join(", ")
                ));
            }
            items.push(json!({"role": instruction_role, "content": notice}));
        }
        self.declared = true;
        items.push(json!({"type": "additional_tools", "role": "developer",
            "tools": convert_tools(model, tools, false)?}));
        Ok(())
    }

    /// The removal notice for `system` (names re-added by the same message are redefinitions,
    /// not removals); the names stay unavailable until declared again.
    pub(super) fn removal_notice(
        &mut self,
        system: &crate::types::SystemMessage,
    ) -> Option<String> {
        let added = system.tools_added.as_deref().unwrap_or(&[]);
        let removed: Vec<&str> = system
            .tools_removed
            .iter()
            .flatten()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .filter(|name| !added.iter().any(|t| t.name == *name))
            .collect();
        if removed.is_empty() {
            return None;
        }
        let mut notice =
            String::from("The following tools are no longer available. Do not call them:");
        for name in &removed {
            notice.push_str(&format!("\n- {name}"));
            if !self.unavailable.iter().any(|n| n == name) {
                self.unavailable.push((*name).to_string());
            }
        }
        Some(notice)
    }
}
