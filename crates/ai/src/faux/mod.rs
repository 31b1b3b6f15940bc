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
//!
//! Files: `script` (what a test queues), `playback` (events in chunks, aborts), `usage`
//! (the prompt rendering and usage estimate).

mod playback;
mod script;
mod usage;

pub use script::{FauxRequest, FauxResponse, FauxStep, FauxStreamOptions};

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::event::{AssistantMessageEvent, AssistantMessageEventStream};
use crate::models::calculate_cost;
use crate::options::{CacheRetention, StreamOptions};
use crate::registry::ApiProvider;
use crate::types::{AssistantMessage, ContentBlock, Context, Model, ModelCost, StopReason, Usage};

use playback::{lone_error, play, split_chunks, Planned, SplitMix64};
use usage::{assistant_text, estimate_usage, render_prompt};

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

/// A model offered by a faux provider.
#[derive(Debug, Clone)]
pub struct FauxModelSpec {
    /// The model id.
    pub id: String,
    /// A display name (the id when absent).
    pub name: Option<String>,
    /// Whether the model reasons (thinking levels apply).
    pub reasoning: bool,
    /// Input modalities (`text`, `image`).
    pub input: Vec<String>,
    /// Context window in tokens.
    pub context_window: u64,
    /// Largest output in tokens.
    pub max_tokens: u64,
    /// USD per million tokens: input, output, cache read, cache write.
    pub cost: [f64; 4],
    /// Optional `thinkingLevelMap`.
    pub thinking_level_map: Option<Map<String, Value>>,
}

impl FauxModelSpec {
    /// A text-and-image model with a 128k window and no cost.
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
    /// The `api` the provider serves (default `faux`).
    pub fn api(mut self, api: impl Into<String>) -> Self {
        self.api = api.into();
        self
    }

    /// The provider id its models carry (default `faux`).
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

    /// The provider (a `faux-1` model when none was added).
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
///
/// Queue responses, register it for its `api`, call it through the ordinary entry points, then
/// inspect what it was asked:
///
/// ```
/// use std::sync::Arc;
///
/// use arbor_ai::faux::{FauxProvider, FauxResponse};
/// use arbor_ai::prelude::*;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::tool_call("read", json!({"path": "README.md"})));
/// faux.push(FauxResponse::text("It is a README."));
/// arbor_ai::register_api_provider(faux.api(), Arc::new(faux.clone()));
///
/// let context = Context {
///     messages: vec![Message::user("What is in README.md?", 0)].into(),
///     ..Context::default()
/// };
/// let first = complete(&faux.model(), &context, StreamOptions::default()).await;
/// assert_eq!(first.stop_reason, StopReason::ToolUse);
/// assert_eq!(first.tool_calls().next().map(|c| c.name.as_str()), Some("read"));
///
/// let second = complete(&faux.model(), &context, StreamOptions::default()).await;
/// assert_eq!(second.text(), "It is a README.");
/// assert_eq!(faux.call_count(), 2);
/// assert_eq!(faux.pending_responses(), 0);
/// # }
/// ```
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

    /// A builder for other ids, models, chunking or seed.
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

    /// The provider id of its models.
    pub fn provider_id(&self) -> &str {
        &self.config.provider
    }

    /// The `api` to register it for ([`register_api_provider`](crate::register_api_provider)).
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
                base.usage = estimate_usage(&mut state.prompt_cache, &prompt, "", &options).into();
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
            base.usage = estimate_usage(&mut state.prompt_cache, &prompt, "", &options).into();
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
                &mut state.prompt_cache,
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
                            id: tc.id.clone(),
                            tool_name: tc.name.clone(),
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
