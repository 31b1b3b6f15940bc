//! A deterministic in-process model for tests ("faux" provider).
//!
//! Tests of the agent loop, compaction and branch summaries need a model that answers on
//! cue, offline and reproducibly. A [`FauxProvider`] holds a queue of scripted responses;
//! each `stream` call takes the next one and plays it back as a real provider would: `start`,
//! per-block `*_start` / `*_delta` / `*_end` in chunks of 3–5 "tokens" (4 characters each),
//! then exactly one `done` or `error`. Cancelling the token ends the stream with an `aborted`
//! error carrying the partial message. Usage is estimated from the prompt (≈ 4 characters per
//! token), including a simulated prompt cache per session, so cost and compaction thresholds
//! can be exercised too. Chunk sizes come from a seeded generator: same seed, same events.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::emit::{lazy_event_stream, Emitter};
use crate::event::{AssistantMessageEvent, AssistantMessageEventStream, MessageAccumulator};
use crate::models::calculate_cost;
use crate::options::{CacheRetention, StreamOptions};
use crate::registry::ApiProvider;
use crate::types::{
    AssistantMessage, Content, ContentBlock, Context, Message, Model, ModelCost, StopReason,
    TextContent, ThinkingContent, ToolCall, Usage,
};

/// Provider id of the default faux provider.
pub const FAUX_PROVIDER: &str = "faux";
/// API id of the default faux provider.
pub const FAUX_API: &str = "faux";
/// Id of the default faux model.
pub const FAUX_MODEL_ID: &str = "faux-1";
/// Error text when a request finds the response queue empty.
pub const NO_MORE_RESPONSES: &str = "No more faux responses queued";
/// Error text of an aborted faux stream (pi's wording, shared with the HTTP providers).
pub use crate::emit::ABORTED_MESSAGE;

/// What a test scripts for one model call.
#[derive(Clone, Default)]
pub struct FauxResponse {
    content: Vec<ContentBlock>,
    stop_reason: Option<StopReason>,
    error_message: Option<String>,
    usage: Option<Usage>,
    response_id: Option<String>,
    setup_error: Option<String>,
    start_delay: Option<Duration>,
    chunk_delay: Option<Duration>,
    stall_after_chunks: Option<usize>,
}

impl fmt::Debug for FauxResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FauxResponse")
            .field("content", &self.content.len())
            .field("stop_reason", &self.stop_reason)
            .field("error_message", &self.error_message)
            .field("setup_error", &self.setup_error)
            .finish_non_exhaustive()
    }
}

impl FauxResponse {
    /// An empty response; add blocks with the builder methods.
    pub fn new() -> Self {
        Self::default()
    }

    /// A response that is one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// A response that calls one tool (stop reason `toolUse`).
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::new().with_tool_call(name, arguments)
    }

    /// Replays a complete assistant message (its content, stop reason, error and usage).
    /// `api`, `provider` and `model` are replaced by the requested model's.
    pub fn from_message(message: &AssistantMessage) -> Self {
        let usage_is_zero = message.usage.input == 0
            && message.usage.output == 0
            && message.usage.cache_read == 0
            && message.usage.cache_write == 0;
        Self {
            content: message.content.clone(),
            stop_reason: Some(message.stop_reason),
            error_message: message.error_message.clone(),
            usage: (!usage_is_zero).then(|| Usage::clone(&message.usage)),
            response_id: message.response_id.clone(),
            ..Self::default()
        }
    }

    /// Appends a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(ContentBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
            extra: Default::default(),
        }));
        self
    }

    /// Appends a thinking block.
    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.content.push(ContentBlock::Thinking(ThinkingContent {
            thinking: thinking.into(),
            thinking_signature: None,
            redacted: None,
            extra: Default::default(),
        }));
        self
    }

    /// Appends a thinking block with a provider signature (kept on same-model replay).
    pub fn with_signed_thinking(
        mut self,
        thinking: impl Into<String>,
        signature: impl Into<String>,
    ) -> Self {
        self.content.push(ContentBlock::Thinking(ThinkingContent {
            thinking: thinking.into(),
            thinking_signature: Some(signature.into()),
            redacted: None,
            extra: Default::default(),
        }));
        self
    }

    /// Appends a tool call with a generated id (`faux_call_<call>_<index>`).
    pub fn with_tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.with_tool_call_id("", name, arguments)
    }

    /// Appends a tool call with the given id (an empty id is generated).
    pub fn with_tool_call_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.content.push(ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
            namespace: None,
            arguments_error: None,
            extra: Default::default(),
        }));
        self
    }

    /// Appends a content block as is. Only text, thinking and tool-call blocks are streamed;
    /// other kinds are dropped from the reply (an assistant never streams images).
    pub fn with_block(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }

    /// Sets the stop reason. Default: `toolUse` when there are tool calls, else `stop`.
    pub fn stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    /// Streams the content, then fails with `error` (stop reason `error`).
    pub fn error(mut self, message: impl Into<String>) -> Self {
        self.stop_reason = Some(StopReason::Error);
        self.error_message = Some(message.into());
        self
    }

    /// A response that fails before the stream starts (like an HTTP error status): a lone
    /// `error` event without `start`.
    pub fn setup_error(message: impl Into<String>) -> Self {
        Self {
            setup_error: Some(message.into()),
            ..Self::default()
        }
    }

    /// Streams the content, then ends as if the provider reported an abort.
    pub fn aborted(mut self) -> Self {
        self.stop_reason = Some(StopReason::Aborted);
        self.error_message = Some(ABORTED_MESSAGE.to_string());
        self
    }

    /// Uses this usage instead of the estimate (cost is still computed from the model).
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets the provider's response id.
    pub fn response_id(mut self, id: impl Into<String>) -> Self {
        self.response_id = Some(id.into());
        self
    }

    /// Waits this long before `start` (time to first byte). Cancelling during the wait gives
    /// a lone `aborted` error.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.start_delay = Some(delay);
        self
    }

    /// Waits this long before every delta (overrides the provider's tokens per second).
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = Some(delay);
        self
    }

    /// After `chunks` deltas the stream stops making progress until it is cancelled (it never
    /// finishes without cancellation): a deterministic way to test aborts mid-stream.
    pub fn stall_after(mut self, chunks: usize) -> Self {
        self.stall_after_chunks = Some(chunks);
        self
    }
}

/// What the faux provider saw of one call, for assertions.
#[derive(Debug, Clone)]
pub struct FauxRequest {
    /// 0-based number of the call.
    pub index: usize,
    pub model: Model,
    pub context: Context,
    pub session_id: Option<String>,
}

type ResponseFactory = dyn Fn(&FauxRequest) -> FauxResponse + Send + Sync;

/// One queued step: a fixed response or one computed from the request.
#[derive(Clone)]
pub enum FauxStep {
    Response(Box<FauxResponse>),
    Dynamic(Arc<ResponseFactory>),
}

impl fmt::Debug for FauxStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Response(r) => f.debug_tuple("Response").field(r).finish(),
            Self::Dynamic(_) => f.write_str("Dynamic(..)"),
        }
    }
}

impl From<FauxResponse> for FauxStep {
    fn from(response: FauxResponse) -> Self {
        Self::Response(Box::new(response))
    }
}

impl FauxStep {
    /// A step whose response is computed from the request (e.g. echoing the last user text).
    pub fn dynamic(f: impl Fn(&FauxRequest) -> FauxResponse + Send + Sync + 'static) -> Self {
        Self::Dynamic(Arc::new(f))
    }
}

/// Per-call options.
#[derive(Debug, Clone)]
pub struct FauxStreamOptions {
    /// Cancelling ends the stream with an `aborted` error.
    pub cancel: Option<CancellationToken>,
    /// Enables the simulated prompt cache for this session.
    pub session_id: Option<String>,
    /// `false` disables the simulated cache (pi's `cacheRetention: "none"`).
    pub cache: bool,
}

impl Default for FauxStreamOptions {
    fn default() -> Self {
        Self {
            cancel: None,
            session_id: None,
            cache: true,
        }
    }
}

/// A model offered by a faux provider.
#[derive(Debug, Clone)]
pub struct FauxModelSpec {
    pub id: String,
    pub name: Option<String>,
    pub reasoning: bool,
    pub input: Vec<String>,
    pub context_window: u64,
    pub max_tokens: u64,
    /// USD per million tokens: input, output, cache read, cache write.
    pub cost: [f64; 4],
    /// Optional `thinkingLevelMap`.
    pub thinking_level_map: Option<Map<String, Value>>,
}

impl FauxModelSpec {
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: None,
            reasoning: false,
            input: vec!["text".into(), "image".into()],
            context_window: 128_000,
            max_tokens: 16_384,
            cost: [0.0; 4],
            thinking_level_map: None,
        }
    }
}

/// Configuration of a [`FauxProvider`].
#[derive(Debug, Clone)]
pub struct FauxProviderBuilder {
    api: String,
    provider: String,
    models: Vec<FauxModelSpec>,
    min_token_size: usize,
    max_token_size: usize,
    tokens_per_second: Option<f64>,
    seed: u64,
}

impl Default for FauxProviderBuilder {
    fn default() -> Self {
        Self {
            api: FAUX_API.into(),
            provider: FAUX_PROVIDER.into(),
            models: Vec::new(),
            min_token_size: 3,
            max_token_size: 5,
            tokens_per_second: None,
            seed: 0x5eed,
        }
    }
}

impl FauxProviderBuilder {
    pub fn api(mut self, api: impl Into<String>) -> Self {
        self.api = api.into();
        self
    }

    pub fn provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = provider.into();
        self
    }

    /// Adds a model; without any, the provider offers `faux-1` (128k window, text + image).
    pub fn model(mut self, spec: FauxModelSpec) -> Self {
        self.models.push(spec);
        self
    }

    /// Chunk size range in "tokens" of 4 characters (default 3–5).
    pub fn token_size(mut self, min: usize, max: usize) -> Self {
        self.min_token_size = min.max(1);
        self.max_token_size = max.max(self.min_token_size);
        self
    }

    /// Paces deltas like a real model (a chunk of n tokens waits n / rate seconds).
    pub fn tokens_per_second(mut self, rate: f64) -> Self {
        self.tokens_per_second = (rate > 0.0).then_some(rate);
        self
    }

    /// Seed of the chunk-size generator.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    pub fn build(self) -> FauxProvider {
        let specs = if self.models.is_empty() {
            let mut spec = FauxModelSpec::new(FAUX_MODEL_ID);
            spec.name = Some("Faux Model".into());
            vec![spec]
        } else {
            self.models.clone()
        };
        let models = specs
            .iter()
            .map(|s| build_model(s, &self.api, &self.provider))
            .collect();
        FauxProvider {
            config: Arc::new(FauxConfig {
                api: self.api,
                provider: self.provider,
                models,
                min_token_size: self.min_token_size,
                max_token_size: self.max_token_size,
                tokens_per_second: self.tokens_per_second,
            }),
            state: Arc::new(Mutex::new(FauxState {
                queue: VecDeque::new(),
                requests: Vec::new(),
                prompt_cache: HashMap::new(),
                rng: SplitMix64(self.seed),
            })),
        }
    }
}

fn build_model(spec: &FauxModelSpec, api: &str, provider: &str) -> Model {
    Model {
        id: spec.id.clone(),
        name: spec.name.clone().unwrap_or_else(|| spec.id.clone()),
        api: api.to_string(),
        provider: provider.to_string(),
        base_url: "http://localhost:0".into(),
        reasoning: spec.reasoning,
        input: spec.input.clone(),
        cost: ModelCost {
            input: spec.cost[0],
            output: spec.cost[1],
            cache_read: spec.cost[2],
            cache_write: spec.cost[3],
            tiers: None,
        },
        context_window: spec.context_window,
        max_tokens: spec.max_tokens,
        thinking_level_map: spec.thinking_level_map.clone(),
        ..Model::default()
    }
}

#[derive(Debug)]
struct FauxConfig {
    api: String,
    provider: String,
    models: Vec<Model>,
    min_token_size: usize,
    max_token_size: usize,
    tokens_per_second: Option<f64>,
}

#[derive(Debug)]
struct FauxState {
    queue: VecDeque<FauxStep>,
    requests: Vec<FauxRequest>,
    prompt_cache: HashMap<String, Vec<String>>,
    rng: SplitMix64,
}

/// The faux provider. Cheap to clone; clones share the queue and the request log.
#[derive(Debug, Clone)]
pub struct FauxProvider {
    config: Arc<FauxConfig>,
    state: Arc<Mutex<FauxState>>,
}

impl Default for FauxProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl FauxProvider {
    /// The default provider (`faux` / `faux-1`).
    pub fn new() -> Self {
        Self::builder().build()
    }

    pub fn builder() -> FauxProviderBuilder {
        FauxProviderBuilder::default()
    }

    /// The first model.
    pub fn model(&self) -> Model {
        // `build` always makes at least one model.
        self.config.models.first().cloned().unwrap_or_default()
    }

    /// The model with this id.
    pub fn get_model(&self, id: &str) -> Option<Model> {
        self.config.models.iter().find(|m| m.id == id).cloned()
    }

    /// All models of this provider.
    pub fn models(&self) -> &[Model] {
        &self.config.models
    }

    pub fn provider_id(&self) -> &str {
        &self.config.provider
    }

    pub fn api(&self) -> &str {
        &self.config.api
    }

    fn lock(&self) -> MutexGuard<'_, FauxState> {
        // A panicking test thread must not poison the provider for the others.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Replaces the queue.
    pub fn set_responses<I, S>(&self, steps: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<FauxStep>,
    {
        let mut state = self.lock();
        state.queue = steps.into_iter().map(Into::into).collect();
    }

    /// Appends to the queue.
    pub fn push_responses<I, S>(&self, steps: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<FauxStep>,
    {
        let mut state = self.lock();
        state.queue.extend(steps.into_iter().map(Into::into));
    }

    /// Appends one step.
    pub fn push(&self, step: impl Into<FauxStep>) {
        self.lock().queue.push_back(step.into());
    }

    /// Responses still queued.
    pub fn pending_responses(&self) -> usize {
        self.lock().queue.len()
    }

    /// Number of `stream` calls so far.
    pub fn call_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// Every request seen so far, oldest first.
    pub fn requests(&self) -> Vec<FauxRequest> {
        self.lock().requests.clone()
    }

    /// The most recent request.
    pub fn last_request(&self) -> Option<FauxRequest> {
        self.lock().requests.last().cloned()
    }

    /// Answers one call with the next queued response, as an event stream.
    ///
    /// The response, its usage and its chunking are fixed at call time (in call order), so
    /// concurrent consumers cannot change each other's results.
    pub fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: FauxStreamOptions,
    ) -> AssistantMessageEventStream {
        let timestamp = crate::time::now_ms();
        let mut state = self.lock();
        let request = FauxRequest {
            index: state.requests.len(),
            model: model.clone(),
            context: context.clone(),
            session_id: options.session_id.clone(),
        };
        state.requests.push(request.clone());
        let step = state.queue.pop_front();
        let prompt = render_prompt(context);
        let mut base = AssistantMessage {
            content: Vec::new(),
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            response_model: None,
            response_id: None,
            usage: Usage::zero().into(),
            stop_reason: StopReason::Pending,
            error_message: None,
            timestamp: timestamp.into(),
            duration_ms: None,
            extra: Default::default(),
        };

        let response = match step {
            None => {
                base.usage = estimate_usage(&mut state, &prompt, "", &options).into();
                calculate_cost(model, &mut base.usage);
                base.stop_reason = StopReason::Error;
                base.error_message = Some(NO_MORE_RESPONSES.to_string());
                drop(state);
                return lone_error(base, options.cancel, None);
            }
            Some(FauxStep::Response(r)) => *r,
            Some(FauxStep::Dynamic(f)) => {
                // Run user code without holding the lock (it may inspect the provider).
                drop(state);
                let r = f(&request);
                state = self.lock();
                r
            }
        };

        if let Some(message) = response.setup_error.clone() {
            base.usage = estimate_usage(&mut state, &prompt, "", &options).into();
            calculate_cost(model, &mut base.usage);
            base.stop_reason = StopReason::Error;
            base.error_message = Some(message);
            drop(state);
            return lone_error(base, options.cancel, response.start_delay);
        }

        // The final message. Only text, thinking and tool calls can be streamed; anything else
        // (an image, an unknown block from a recorded message) is left out so that content
        // indices of events and message agree.
        let mut content: Vec<ContentBlock> = response
            .content
            .iter()
            .filter(|b| {
                matches!(
                    b,
                    ContentBlock::Text(_) | ContentBlock::Thinking(_) | ContentBlock::ToolCall(_)
                )
            })
            .cloned()
            .collect();
        let mut call_number = 0;
        for block in &mut content {
            if let ContentBlock::ToolCall(tc) = block {
                if tc.id.is_empty() {
                    tc.id = format!("faux_call_{}_{call_number}", request.index);
                }
                call_number += 1;
            }
        }
        let has_calls = call_number > 0;
        let mut message = base.clone();
        message.content = content;
        message.stop_reason = response.stop_reason.unwrap_or(if has_calls {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        });
        if message.stop_reason == StopReason::Pending {
            message.stop_reason = StopReason::Error;
            message.error_message = Some("Faux response ended without a stop reason".into());
        } else {
            message.error_message = response.error_message.clone();
        }
        if matches!(message.stop_reason, StopReason::Error) && message.error_message.is_none() {
            message.error_message = Some("Faux error".into());
        }
        message.response_id = response.response_id.clone();
        message.usage = match &response.usage {
            Some(u) => u.clone().into(),
            None => estimate_usage(
                &mut state,
                &prompt,
                &assistant_text(&message.content),
                &options,
            )
            .into(),
        };
        calculate_cost(model, &mut message.usage);

        // The plan: every event with the wait before it.
        let chunk_wait = |chars: usize| -> Option<Duration> {
            response.chunk_delay.or_else(|| {
                self.config
                    .tokens_per_second
                    .map(|rate| Duration::from_secs_f64(chars.div_ceil(4) as f64 / rate))
            })
        };
        let mut plan: VecDeque<Planned> = VecDeque::new();
        let mut partial = base.clone();
        partial.response_id = message.response_id.clone();
        partial.usage = message.usage.clone();
        plan.push_back(Planned::checked(
            AssistantMessageEvent::Start {
                partial: partial.clone(),
            },
            response.start_delay,
        ));
        let mut deltas = 0usize;
        let stall_at = response.stall_after_chunks;
        for (index, block) in message.content.iter().enumerate() {
            match block {
                ContentBlock::Text(t) => {
                    plan.push_back(Planned::checked(
                        AssistantMessageEvent::TextStart {
                            content_index: index,
                        },
                        None,
                    ));
                    for chunk in self.chunks(&mut state, &t.text) {
                        let wait = chunk_wait(chunk.chars().count());
                        plan.push_back(Planned::delta(
                            AssistantMessageEvent::TextDelta {
                                content_index: index,
                                delta: chunk,
                            },
                            wait,
                            stall_at == Some(deltas),
                        ));
                        deltas += 1;
                    }
                    plan.push_back(Planned::unchecked(AssistantMessageEvent::TextEnd {
                        content_index: index,
                        content: t.text.clone(),
                    }));
                }
                ContentBlock::Thinking(t) => {
                    plan.push_back(Planned::checked(
                        AssistantMessageEvent::ThinkingStart {
                            content_index: index,
                        },
                        None,
                    ));
                    for chunk in self.chunks(&mut state, &t.thinking) {
                        let wait = chunk_wait(chunk.chars().count());
                        plan.push_back(Planned::delta(
                            AssistantMessageEvent::ThinkingDelta {
                                content_index: index,
                                delta: chunk,
                            },
                            wait,
                            stall_at == Some(deltas),
                        ));
                        deltas += 1;
                    }
                    plan.push_back(Planned::unchecked(AssistantMessageEvent::ThinkingEnd {
                        content_index: index,
                        content: t.thinking.clone(),
                    }));
                }
                ContentBlock::ToolCall(tc) => {
                    plan.push_back(Planned::checked(
                        AssistantMessageEvent::ToolcallStart {
                            content_index: index,
                        },
                        None,
                    ));
                    let json = serde_json::to_string(&tc.arguments).unwrap_or_else(|_| "{}".into());
                    for chunk in self.chunks(&mut state, &json) {
                        let wait = chunk_wait(chunk.chars().count());
                        plan.push_back(Planned::delta(
                            AssistantMessageEvent::ToolcallDelta {
                                content_index: index,
                                delta: chunk,
                            },
                            wait,
                            stall_at == Some(deltas),
                        ));
                        deltas += 1;
                    }
                    plan.push_back(Planned::unchecked(AssistantMessageEvent::ToolcallEnd {
                        content_index: index,
                        tool_call: tc.clone(),
                    }));
                }
                // Filtered out above.
                _ => {}
            }
        }
        if stall_at.is_some_and(|n| n >= deltas) {
            // Stall point at or past the end of the content: stall before the terminal event.
            plan.push_back(Planned::stall());
        }
        let terminal = match message.stop_reason {
            StopReason::Error | StopReason::Aborted => AssistantMessageEvent::Error {
                reason: message.stop_reason,
                error: message,
            },
            reason => AssistantMessageEvent::Done { reason, message },
        };
        plan.push_back(Planned::unchecked(terminal));
        drop(state);
        play(plan, partial, options.cancel)
    }

    fn chunks(&self, state: &mut FauxState, text: &str) -> Vec<String> {
        split_chunks(
            text,
            self.config.min_token_size,
            self.config.max_token_size,
            &mut state.rng,
        )
    }
}

/// Splits `text` into chunks of `size·4` characters, `size` drawn from `[min, max]`. Empty
/// text gives one empty chunk (a real stream still sends a delta).
fn split_chunks(text: &str, min: usize, max: usize, rng: &mut SplitMix64) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let mut out = Vec::with_capacity(chars.len() / (min * 4) + 1);
    let mut index = 0;
    while index < chars.len() {
        let span = (max - min + 1) as u64;
        let tokens = min + (rng.next() % span) as usize;
        let end = (index + tokens * 4).min(chars.len());
        out.push(chars[index..end].iter().collect());
        index = end;
    }
    out
}

/// A small, fast, seedable generator (SplitMix64): reproducible chunking without a dependency.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[derive(Debug)]
struct Planned {
    event: Option<AssistantMessageEvent>,
    wait: Option<Duration>,
    /// Cancellation is honoured before this event (block starts and deltas, like pi).
    cancellable: bool,
    /// Before this event, wait until cancelled.
    stall: bool,
}

impl Planned {
    fn checked(event: AssistantMessageEvent, wait: Option<Duration>) -> Self {
        Self {
            event: Some(event),
            wait,
            cancellable: true,
            stall: false,
        }
    }
    fn delta(event: AssistantMessageEvent, wait: Option<Duration>, stall: bool) -> Self {
        Self {
            event: Some(event),
            wait,
            cancellable: true,
            stall,
        }
    }
    fn unchecked(event: AssistantMessageEvent) -> Self {
        Self {
            event: Some(event),
            wait: None,
            cancellable: false,
            stall: false,
        }
    }
    fn stall() -> Self {
        Self {
            event: None,
            wait: None,
            cancellable: true,
            stall: true,
        }
    }
}

/// Plays a plan through the same [`Emitter`] the HTTP providers use. The live partial (the
/// `error` message of an abort) is rebuilt by the same [`MessageAccumulator`] consumers use.
/// One event per poll: the producer yields after each event, so a consumer that cancels
/// between two events sees the abort next, as with a real connection.
fn play(
    plan: VecDeque<Planned>,
    template: AssistantMessage,
    cancel: Option<CancellationToken>,
) -> AssistantMessageEventStream {
    lazy_event_stream(template.clone(), move |mut emitter: Emitter| async move {
        // Faux replies carry no `durationMs`: final messages must not depend on timing.
        emitter.set_timed(false);
        let mut plan = plan;
        let mut acc = MessageAccumulator::new();
        let mut started = false;
        let cancelled = || {
            cancel
                .as_ref()
                .is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
        };
        while let Some(step) = plan.pop_front() {
            if let Some(wait) = step.wait.filter(|w| !w.is_zero()) {
                if !wait_or_cancel(cancel.as_ref(), wait).await && step.cancellable {
                    return abort(&mut emitter, &acc, started, &template, &plan);
                }
            }
            if step.stall {
                match &cancel {
                    Some(token) => token.cancelled().await,
                    None => futures::future::pending::<()>().await,
                }
            }
            if step.cancellable && cancelled() {
                return abort(&mut emitter, &acc, started, &template, &plan);
            }
            let Some(event) = step.event else { continue };
            acc.apply(&event);
            match event {
                AssistantMessageEvent::Done { message, .. } => return emitter.done(message),
                AssistantMessageEvent::Error { reason, error } => {
                    return emitter.error(error, reason)
                }
                event => {
                    started |= matches!(event, AssistantMessageEvent::Start { .. });
                    emitter.push(event);
                }
            }
            YieldOnce(false).await;
        }
    })
}

/// Returns `Pending` once (waking itself), handing control back to the stream's consumer.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// Sleeps for `wait`; `false` if cancelled first.
async fn wait_or_cancel(cancel: Option<&CancellationToken>, wait: Duration) -> bool {
    match cancel {
        Some(token) => tokio::select! {
            _ = tokio::time::sleep(wait) => true,
            _ = token.cancelled() => false,
        },
        None => {
            tokio::time::sleep(wait).await;
            true
        }
    }
}

/// The terminal event for a cancelled stream: the partial message so far, marked aborted.
/// Tool calls still streaming show the id and name the API announced at their start and
/// their arguments once the streamed text is a complete object.
fn abort(
    emitter: &mut Emitter,
    acc: &MessageAccumulator,
    started: bool,
    template: &AssistantMessage,
    rest: &VecDeque<Planned>,
) {
    let mut error = if started {
        acc.partial().clone()
    } else {
        // Nothing was generated: no content, no usage (like a request that never went out).
        let mut message = template.clone();
        message.content.clear();
        message.usage = Usage::zero().into();
        message
    };
    for (index, block) in error.content.iter_mut().enumerate() {
        let ContentBlock::ToolCall(call) = block else {
            continue;
        };
        let announced = rest.iter().find_map(|p| match &p.event {
            Some(AssistantMessageEvent::ToolcallEnd {
                content_index,
                tool_call,
            }) if *content_index == index => Some(tool_call),
            _ => None,
        });
        let Some(announced) = announced else { continue };
        call.id.clone_from(&announced.id);
        call.name.clone_from(&announced.name);
        let text = acc.tool_arguments_text(index).unwrap_or("");
        if let Ok(arguments @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
            call.arguments = arguments;
        }
    }
    error.error_message = Some(ABORTED_MESSAGE.to_string());
    emitter.error(error, StopReason::Aborted);
}

/// A stream that is one `error` event (after an optional delay; cancellation during the
/// delay turns it into an abort).
fn lone_error(
    message: AssistantMessage,
    cancel: Option<CancellationToken>,
    delay: Option<Duration>,
) -> AssistantMessageEventStream {
    let mut plan = VecDeque::new();
    let reason = message.stop_reason;
    let mut partial = message.clone();
    partial.content.clear();
    plan.push_back(Planned {
        event: Some(AssistantMessageEvent::Error {
            reason,
            error: message,
        }),
        wait: delay,
        cancellable: true,
        stall: false,
    });
    play(plan, partial, cancel)
}

/// Length in UTF-16 code units, the unit pi's estimates count.
fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Usage estimate: ⌈chars/4⌉ of the rendered prompt as input and of the reply as output;
/// with a session and caching on, the prompt is split into read (common prefix with the
/// session's previous prompt) and written parts, and `input` is 0.
fn estimate_usage(
    state: &mut FauxState,
    prompt: &[String],
    output_text: &str,
    options: &FauxStreamOptions,
) -> Usage {
    let prompt_tokens = joined_len(prompt, prompt.len()).div_ceil(4) as u64;
    let output = js_len(output_text).div_ceil(4) as u64;
    let mut usage = Usage::zero();
    usage.input = prompt_tokens;
    usage.output = output;
    if let (Some(session), true) = (&options.session_id, options.cache) {
        match state.prompt_cache.get(session) {
            Some(previous) => {
                let cached = common_prompt_prefix_len(previous, prompt).div_ceil(4) as u64;
                usage.cache_read = cached;
                usage.cache_write = prompt_tokens.saturating_sub(cached);
            }
            None => usage.cache_write = prompt_tokens,
        }
        usage.input = 0;
        state.prompt_cache.insert(session.clone(), prompt.to_vec());
    }
    usage.total_tokens = Some(usage.input + usage.output + usage.cache_read + usage.cache_write);
    usage
}

/// Length of the first `count` parts joined with blank lines.
fn joined_len(parts: &[String], count: usize) -> usize {
    let separators = count.saturating_sub(1) * 2;
    separators + parts[..count].iter().map(|p| js_len(p)).sum::<usize>()
}

/// Common prefix length of two joined prompts: equal leading parts whole, then characters.
fn common_prompt_prefix_len(previous: &[String], current: &[String]) -> usize {
    let mut index = 0;
    while index < previous.len() && index < current.len() && previous[index] == current[index] {
        index += 1;
    }
    let rest = |parts: &[String]| -> Vec<u16> {
        if index == parts.len() {
            return Vec::new();
        }
        let mut s = String::new();
        if index > 0 {
            s.push_str("\n\n");
        }
        s.push_str(&parts[index..].join("\n\n"));
        s.encode_utf16().collect()
    };
    let (a, b) = (rest(previous), rest(current));
    let common = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
    joined_len(previous, index) + common
}

/// One text per message (`role:text`), as the usage estimate sees the prompt. A system prompt
/// and tools form a leading system message, like pi's transcript normalisation.
fn render_prompt(context: &Context) -> Vec<String> {
    let mut out = Vec::with_capacity(context.messages.len() + 1);
    let prompt = context.system_prompt.clone().unwrap_or_default();
    let tools = context.tools.as_deref().unwrap_or_default();
    if !prompt.is_empty() || !tools.is_empty() {
        let mut parts = Vec::new();
        if !prompt.is_empty() {
            parts.push(prompt);
        }
        for tool in tools {
            parts.push(format!(
                "tool+:{}",
                serde_json::to_string(tool).unwrap_or_default()
            ));
        }
        out.push(format!("system:{}", parts.join("\n")));
    }
    for message in &context.messages {
        out.push(match message {
            Message::System(s) => {
                let mut parts = vec![s.content.joined_text("\n")];
                for text in s.sections.iter().flat_map(|m| m.values()) {
                    if let Some(t) = text.as_str() {
                        parts.push(t.to_string());
                    }
                }
                let mut text: Vec<String> = vec![parts
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n\n")];
                for removed in s.tools_removed.iter().flatten() {
                    text.push(format!("tool-:{removed}"));
                }
                for added in s.tools_added.iter().flatten() {
                    text.push(format!(
                        "tool+:{}",
                        serde_json::to_string(added).unwrap_or_default()
                    ));
                }
                let text: Vec<String> = text.into_iter().filter(|p| !p.is_empty()).collect();
                format!("system:{}", text.join("\n"))
            }
            Message::User(u) => format!("user:{}", user_text(&u.content)),
            Message::Assistant(a) => format!("assistant:{}", assistant_text(&a.content)),
            Message::ToolResult(r) => {
                let mut parts = vec![r.tool_name.clone()];
                match &r.content {
                    Content::Text(t) => parts.push(t.clone()),
                    Content::Blocks(blocks) => {
                        parts.extend(blocks.iter().map(user_text_block));
                    }
                }
                format!("toolResult:{}", parts.join("\n"))
            }
        });
    }
    out
}

fn user_text(content: &Content) -> String {
    match content {
        Content::Text(t) => t.clone(),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(user_text_block)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn user_text_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image:{}:{}]", i.mime_type, js_len(&i.data)),
        other => assistant_text(std::slice::from_ref(other)),
    }
}

/// Assistant content as the estimate sees it: text, thinking, `name:args` per tool call.
fn assistant_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Thinking(t) => t.thinking.clone(),
            ContentBlock::ToolCall(tc) => format!(
                "{}:{}",
                tc.name,
                serde_json::to_string(&tc.arguments).unwrap_or_default()
            ),
            ContentBlock::Image(i) => format!("[image:{}:{}]", i.mime_type, js_len(&i.data)),
            ContentBlock::Unknown(_) => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The faux provider serves `stream()` like any other API once registered
/// (`register_api_provider(faux.api(), Arc::new(faux.clone()))`) or handed to a layer that
/// takes an `Arc<dyn ApiProvider>`.
impl ApiProvider for FauxProvider {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let cache = options.resolved_cache_retention() != CacheRetention::None;
        FauxProvider::stream(
            self,
            model,
            context,
            FauxStreamOptions {
                cancel: options.cancel,
                session_id: options.session_id,
                cache,
            },
        )
    }
}
