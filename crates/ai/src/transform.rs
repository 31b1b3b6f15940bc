//! Replaying a stored history to a (possibly different) target model.
//!
//! Every provider adapter runs [`transform_messages`] before converting messages to its wire
//! format. It makes a transcript written by one model safe to send to another: provider-bound
//! reasoning is dropped, tool-call ids are rewritten to what the target API accepts, images are
//! replaced for text-only models, failed turns are removed and every tool call gets a result.
//! Behaviour follows pi-ai 1.6.0 (`api/transform-messages.ts`) rule for rule.

use std::collections::{HashMap, HashSet};

use crate::message_list::TransformTarget;
use crate::types::{
    AssistantMessage, Content, ContentBlock, Message, Model, StopReason, TextContent, ToolCall,
    ToolResultMessage,
};

/// Placeholder for an image in a user message sent to a model without image input.
pub const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
/// Placeholder for an image in a tool result sent to a model without image input.
pub const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";
/// Text of the synthetic result added for a tool call that never got one.
pub const MISSING_TOOL_RESULT_TEXT: &str = "No result provided";

/// Target providers whose Responses API accepts `call_id|item_id` pairs (OpenAI, Codex, OpenCode).
pub const OPENAI_RESPONSES_TOOL_CALL_PROVIDERS: &[&str] = &["openai", "openai-codex", "opencode"];
/// Same list for Azure OpenAI, which also accepts its own ids.
pub const AZURE_RESPONSES_TOOL_CALL_PROVIDERS: &[&str] =
    &["openai", "openai-codex", "opencode", "azure"];

/// Rewrites the id of a tool call written by another model: `(id, target model, source message)`.
pub type ToolCallIdNormalizer<'a> = dyn FnMut(&str, &Model, &AssistantMessage) -> String + 'a;

/// Prepares `messages` for `model`, choosing the tool-call id rule of the model's API.
///
/// APIs without an id rule keep ids unchanged; everything else still applies.
pub fn transform_messages(messages: &[Message], model: &Model) -> Vec<Message> {
    let mut t = ModelTransform::new(model);
    for m in messages {
        t.push(m);
    }
    t.finish()
}

/// [`transform_messages`] with an explicit id normalizer (or none).
pub fn transform_messages_with(
    messages: &[Message],
    model: &Model,
    mut normalize_id: Option<&mut ToolCallIdNormalizer<'_>>,
) -> Vec<Message> {
    let mut state = TransformState::new(model);
    for m in messages {
        state.push(m, model, normalize_id.as_deref_mut());
    }
    state.finish()
}

/// The tool-call id rule of a target API, with the state a rule keeps across one transcript
/// (Mistral's collision map).
#[derive(Debug)]
enum IdRule {
    None,
    Anthropic,
    Completions,
    Responses(&'static [&'static str]),
    Google,
    Mistral(MistralToolCallIds),
}

impl IdRule {
    fn for_api(api: &str) -> Self {
        match api {
            "anthropic-messages" | "bedrock-converse-stream" => IdRule::Anthropic,
            "openai-completions" => IdRule::Completions,
            "openai-responses" | "openai-codex-responses" => {
                IdRule::Responses(OPENAI_RESPONSES_TOOL_CALL_PROVIDERS)
            }
            "azure-openai-responses" => IdRule::Responses(AZURE_RESPONSES_TOOL_CALL_PROVIDERS),
            "google-generative-ai" | "google-vertex" => IdRule::Google,
            "mistral-conversations" => IdRule::Mistral(MistralToolCallIds::default()),
            _ => IdRule::None,
        }
    }

    fn normalize(&mut self, id: &str, target: &Model, source: &AssistantMessage) -> String {
        match self {
            IdRule::None => id.to_string(),
            IdRule::Anthropic => normalize_anthropic_tool_call_id(id),
            IdRule::Completions => normalize_completions_tool_call_id(id, &target.provider),
            IdRule::Responses(pairs) => normalize_responses_tool_call_id(id, target, source, pairs),
            IdRule::Google => normalize_google_tool_call_id(id, &target.id),
            IdRule::Mistral(ids) => ids.normalize(id),
        }
    }
}

/// [`transform_messages`] fed one message at a time, for a transcript that only grows: the
/// output of the messages pushed so far stays valid, except for the open tail (results still
/// owed to the last assistant message's tool calls and system messages held behind them),
/// which [`Self::tail`] renders on demand. Pushing `a` then `b` and finishing equals
/// `transform_messages(&[a, b])` (up to the timestamps of synthetic results).
#[derive(Debug)]
pub struct ModelTransform {
    model: Model,
    rule: IdRule,
    state: TransformState,
}

impl ModelTransform {
    /// An empty transform towards `model`.
    pub fn new(model: &Model) -> Self {
        ModelTransform {
            model: model.clone(),
            rule: IdRule::for_api(&model.api),
            state: TransformState::new(model),
        }
    }

    /// Whether this transform's output would be the same for `model` (the fields the rules
    /// read: API, provider, id and image input).
    pub fn fits(&self, model: &Model) -> bool {
        TransformTarget::of(&self.model).fits(model)
    }

    /// Feeds the next message of the history.
    pub fn push(&mut self, message: &Message) {
        let rule = &mut self.rule;
        if matches!(rule, IdRule::None) {
            self.state.push(message, &self.model, None);
        } else {
            let mut f = |id: &str, target: &Model, source: &AssistantMessage| {
                rule.normalize(id, target, source)
            };
            self.state.push(message, &self.model, Some(&mut f));
        }
    }

    /// The settled output so far (the open tail excluded).
    pub fn settled(&self) -> &[Message] {
        &self.state.result
    }

    /// Moves the settled output out (a caller that keeps its own copy of the output; later
    /// [`Self::settled`] calls return only what settled since).
    pub fn take_settled(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.state.result)
    }

    /// What finishing now would append after [`Self::settled`].
    pub fn tail(&self) -> Vec<Message> {
        self.state.tail()
    }

    /// The whole output: the settled messages and the closed tail.
    pub fn finish(self) -> Vec<Message> {
        self.state.finish()
    }
}

/// Both passes of the transform over a growing transcript. The first pass (per-message
/// rewriting) only depends on earlier messages, and the second consumes its output in order,
/// so running them message by message equals running them one after the other.
#[derive(Debug)]
struct TransformState {
    supports_images: bool,
    id_map: HashMap<String, String>,
    result: Vec<Message>,
    /// Tool calls of the last assistant message still owed a result: `(id, name)`.
    pending: Vec<(String, String)>,
    seen_results: HashSet<String>,
    held_system: Vec<Message>,
}

impl TransformState {
    fn new(model: &Model) -> Self {
        TransformState {
            supports_images: model.input.iter().any(|m| m == "image"),
            id_map: HashMap::new(),
            result: Vec::new(),
            pending: Vec::new(),
            seen_results: HashSet::new(),
            held_system: Vec::new(),
        }
    }

    fn push(
        &mut self,
        msg: &Message,
        model: &Model,
        mut normalize_id: Option<&mut ToolCallIdNormalizer<'_>>,
    ) {
        crate::work::add(crate::work::Work::Transformed, 1);
        // First pass: per-message rewriting.
        let out = match msg {
            Message::System(_) => msg.clone(),
            Message::User(user) => {
                if self.supports_images {
                    msg.clone()
                } else {
                    let mut user = user.clone();
                    if let Content::Blocks(blocks) = &user.content {
                        user.content =
                            Content::Blocks(replace_images(blocks, USER_IMAGE_PLACEHOLDER));
                    }
                    Message::User(user)
                }
            }
            Message::ToolResult(result) => {
                let mut result = result.clone();
                if !self.supports_images {
                    if let Content::Blocks(blocks) = &result.content {
                        result.content =
                            Content::Blocks(replace_images(blocks, TOOL_IMAGE_PLACEHOLDER));
                    }
                }
                // pi skips an empty replacement here (a falsy lookup), so a call whose id
                // normalizes to "" loses its result and gets a synthetic one; kept for parity.
                if let Some(new_id) = self
                    .id_map
                    .get(&result.tool_call_id)
                    .filter(|id| !id.is_empty())
                {
                    result.tool_call_id = new_id.clone();
                }
                Message::ToolResult(result)
            }
            Message::Assistant(assistant) => Message::Assistant(transform_assistant(
                assistant,
                model,
                &mut normalize_id,
                &mut self.id_map,
            )),
        };

        // Second pass: drop failed turns, give every tool call a result, keep system
        // messages from splitting a call from its results.
        match out {
            Message::Assistant(assistant) => {
                self.close_pending();
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    return;
                }
                let calls: Vec<(String, String)> = assistant
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolCall(tc) => Some((tc.id.clone(), tc.name.clone())),
                        _ => None,
                    })
                    .collect();
                if !calls.is_empty() {
                    self.pending = calls;
                    self.seen_results.clear();
                }
                self.result.push(Message::Assistant(assistant));
            }
            Message::ToolResult(tr) => {
                self.seen_results.insert(tr.tool_call_id.clone());
                self.result.push(Message::ToolResult(tr));
            }
            Message::System(sys) => {
                if self.pending.is_empty() {
                    self.result.push(Message::System(sys));
                } else {
                    self.held_system.push(Message::System(sys));
                }
            }
            Message::User(user) => {
                self.close_pending();
                self.result.push(Message::User(user));
            }
        }
    }

    fn close_pending(&mut self) {
        let tail = self.tail();
        self.result.extend(tail);
        self.pending.clear();
        self.seen_results.clear();
        self.held_system.clear();
    }

    /// Synthetic results for the calls still owed one, then the held system messages.
    fn tail(&self) -> Vec<Message> {
        let mut out = Vec::new();
        if !self.pending.is_empty() {
            let now = crate::time::now_ms();
            for (id, name) in &self.pending {
                if !self.seen_results.contains(id) {
                    out.push(Message::ToolResult(missing_tool_result(
                        id.clone(),
                        name.clone(),
                        now,
                    )));
                }
            }
        }
        out.extend(self.held_system.iter().cloned());
        out
    }

    fn finish(mut self) -> Vec<Message> {
        self.close_pending();
        self.result
    }
}

fn transform_assistant(
    msg: &AssistantMessage,
    model: &Model,
    normalize_id: &mut Option<&mut ToolCallIdNormalizer<'_>>,
    id_map: &mut HashMap<String, String>,
) -> AssistantMessage {
    let same_model =
        msg.provider == model.provider && msg.api == model.api && msg.model == model.id;
    let mut content = Vec::with_capacity(msg.content.len());
    for block in &msg.content {
        match block {
            ContentBlock::Thinking(t) => {
                // Reasoning (readable, signed or encrypted) only means something to the model
                // that produced it; another model would read it as part of the visible reply.
                if !same_model {
                    continue;
                }
                let signed = t
                    .thinking_signature
                    .as_deref()
                    .is_some_and(|s| !s.is_empty());
                if t.redacted == Some(true) || signed || !t.thinking.trim().is_empty() {
                    content.push(block.clone());
                }
            }
            ContentBlock::Text(t) => {
                if same_model {
                    content.push(block.clone());
                } else {
                    content.push(ContentBlock::Text(plain_text(t.text.clone())));
                }
            }
            ContentBlock::ToolCall(tc) => {
                if same_model {
                    content.push(block.clone());
                    continue;
                }
                let mut call: ToolCall = tc.clone();
                call.thought_signature = None;
                if let Some(normalize) = normalize_id.as_deref_mut() {
                    let new_id = normalize(&tc.id, model, msg);
                    if new_id != tc.id {
                        id_map.insert(tc.id.clone(), new_id.clone());
                        call.id = new_id;
                    }
                }
                content.push(ContentBlock::ToolCall(call));
            }
            _ => content.push(block.clone()),
        }
    }
    let mut out = msg.clone();
    out.content = content;
    out
}

fn missing_tool_result(
    tool_call_id: String,
    tool_name: String,
    timestamp: i64,
) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id,
        tool_name,
        content: Content::Blocks(vec![ContentBlock::Text(plain_text(
            MISSING_TOOL_RESULT_TEXT.to_string(),
        ))]),
        details: None,
        is_error: true,
        duration_ms: None,
        timestamp: timestamp.into(),
        extra: Default::default(),
    }
}

fn plain_text(text: String) -> TextContent {
    TextContent {
        text,
        text_signature: None,
        extra: Default::default(),
    }
}

/// Replaces each run of images by one placeholder text block. An image right after a text
/// block that already is the placeholder adds nothing.
fn replace_images(blocks: &[ContentBlock], placeholder: &str) -> Vec<ContentBlock> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut previous_was_placeholder = false;
    for block in blocks {
        match block {
            ContentBlock::Image(_) => {
                if !previous_was_placeholder {
                    out.push(ContentBlock::Text(plain_text(placeholder.to_string())));
                }
                previous_was_placeholder = true;
            }
            ContentBlock::Text(t) => {
                previous_was_placeholder = t.text == placeholder;
                out.push(block.clone());
            }
            other => {
                previous_was_placeholder = false;
                out.push(other.clone());
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tool-call id rules
// ---------------------------------------------------------------------------------------------

/// pi's 64-bit string hash (`utils/hash.ts`), bit for bit: two 32-bit multiply-xor lanes over
/// the UTF-16 code units, printed as base-36 of the second lane followed by the first.
pub fn short_hash(s: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for ch in s.encode_utf16() {
        let ch = u32::from(ch);
        h1 = (h1 ^ ch).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ ch).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    let mut out = to_base36(h2);
    out.push_str(&to_base36(h1));
    out
}

fn to_base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".to_string();
    }
    let mut buf = Vec::with_capacity(7);
    while n > 0 {
        buf.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    buf.reverse();
    buf.into_iter().map(char::from).collect()
}

/// Replaces every character outside `[A-Za-z0-9_-]` by `_`.
fn sanitize_id(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// First `n` UTF-16 code units of `s` (JavaScript `slice(0, n)` on an already-sanitized,
/// hence ASCII, string).
fn truncate_ascii(mut s: String, n: usize) -> String {
    if s.len() > n {
        s.truncate(n);
    }
    s
}

/// Anthropic (and Bedrock): `[A-Za-z0-9_-]`, at most 64 characters.
pub fn normalize_anthropic_tool_call_id(id: &str) -> String {
    truncate_ascii(sanitize_id(id), 64)
}

/// OpenAI Chat Completions: Responses-style `call|item` ids become `call_item` (≤ 40 chars,
/// else a prefix plus 8 hash characters); plain ids are cut to 40 for OpenAI itself only.
pub fn normalize_completions_tool_call_id(id: &str, target_provider: &str) -> String {
    if let Some((call, item)) = id.split_once('|') {
        let call_id = sanitize_id(call);
        let item_id = sanitize_id(item);
        let combined = if item_id.is_empty() {
            call_id.clone()
        } else {
            format!("{call_id}_{item_id}")
        };
        if combined.len() <= 40 {
            return combined;
        }
        let hash: String = short_hash(id).chars().take(8).collect();
        let keep = 40usize.saturating_sub(hash.len() + 1).max(1);
        let prefix = truncate_ascii(call_id, keep);
        return format!("{prefix}_{hash}");
    }
    if target_provider == "openai" && id.encode_utf16().count() > 40 {
        return js_slice_utf16(id, 40);
    }
    id.to_string()
}

/// OpenAI Responses: ids become `[A-Za-z0-9_-]{≤64}` without trailing `_`; for providers that
/// accept `call_id|item_id` pairs the item part is kept (same source API) or replaced by
/// `fc_<hash>` (foreign source), and always starts with `fc_`.
pub fn normalize_responses_tool_call_id(
    id: &str,
    target: &Model,
    source: &AssistantMessage,
    pair_providers: &[&str],
) -> String {
    if !pair_providers.contains(&target.provider.as_str()) || !id.contains('|') {
        return normalize_id_part(id);
    }
    let mut parts = id.split('|');
    let call = parts.next().unwrap_or_default();
    let item = parts.next().unwrap_or_default();
    let call_id = normalize_id_part(call);
    let foreign = source.provider != target.provider || source.api != target.api;
    let mut item_id = if foreign {
        truncate_ascii(format!("fc_{}", short_hash(item)), 64)
    } else {
        normalize_id_part(item)
    };
    if !item_id.starts_with("fc_") {
        item_id = normalize_id_part(&format!("fc_{item_id}"));
    }
    format!("{call_id}|{item_id}")
}

fn normalize_id_part(part: &str) -> String {
    let mut s = truncate_ascii(sanitize_id(part), 64);
    while s.ends_with('_') {
        s.pop();
    }
    s
}

/// Google: ids are only rewritten for targets that require them (Claude and gpt-oss through
/// Vertex, Gemini 3 and later).
pub fn normalize_google_tool_call_id(id: &str, target_model_id: &str) -> String {
    if !google_requires_tool_call_id(target_model_id) {
        return id.to_string();
    }
    truncate_ascii(sanitize_id(id), 64)
}

/// Whether a model served through a Google API needs explicit function-call ids.
pub fn google_requires_tool_call_id(model_id: &str) -> bool {
    model_id.starts_with("claude-")
        || model_id.starts_with("gpt-oss-")
        || gemini_major_version(model_id).is_some_and(|v| v >= 3)
}

fn gemini_major_version(model_id: &str) -> Option<u64> {
    let lower = model_id.to_ascii_lowercase();
    let rest = lower.strip_prefix("gemini-")?;
    let rest = rest.strip_prefix("live-").unwrap_or(rest);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        return None;
    }
    digits.parse().ok()
}

/// Mistral wants exactly nine alphanumeric characters; distinct source ids must stay distinct
/// within one request, so the mapping is stateful.
#[derive(Debug, Default)]
pub struct MistralToolCallIds {
    by_source: HashMap<String, String>,
    owner: HashMap<String, String>,
}

/// Length of a Mistral tool-call id.
pub const MISTRAL_TOOL_CALL_ID_LENGTH: usize = 9;

impl MistralToolCallIds {
    /// The nine-character id for `id`, stable for repeated calls.
    pub fn normalize(&mut self, id: &str) -> String {
        if let Some(existing) = self.by_source.get(id) {
            return existing.clone();
        }
        let mut attempt = 0u32;
        loop {
            let candidate = derive_mistral_tool_call_id(id, attempt);
            let free = match self.owner.get(&candidate) {
                None => true,
                Some(owner) => owner == id,
            };
            if free {
                self.by_source.insert(id.to_string(), candidate.clone());
                self.owner.insert(candidate.clone(), id.to_string());
                return candidate;
            }
            attempt += 1;
        }
    }
}

/// One Mistral id candidate: the alphanumeric characters of `id` when they are exactly nine,
/// else nine characters of a hash of them (seeded with the attempt number on collisions).
pub fn derive_mistral_tool_call_id(id: &str, attempt: u32) -> String {
    let normalized: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && normalized.len() == MISTRAL_TOOL_CALL_ID_LENGTH {
        return normalized;
    }
    let base = if normalized.is_empty() {
        id
    } else {
        normalized.as_str()
    };
    let seed = if attempt == 0 {
        base.to_string()
    } else {
        format!("{base}:{attempt}")
    };
    short_hash(&seed)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(MISTRAL_TOOL_CALL_ID_LENGTH)
        .collect()
}

/// JavaScript `s.slice(0, n)` measured in UTF-16 code units; a surrogate pair cut in half is
/// dropped (a Rust string cannot hold the lone half).
fn js_slice_utf16(s: &str, n: usize) -> String {
    let mut units = 0usize;
    let mut out = String::new();
    for c in s.chars() {
        let len = c.len_utf16();
        if units + len > n {
            break;
        }
        units += len;
        out.push(c);
    }
    out
}
