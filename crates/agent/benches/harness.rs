//! Per-turn overhead of `AgentHarness` (criterion).
//!
//! `cargo bench -p arbor-agent --bench harness -- --warm-up-time 1 --measurement-time 3`
//!
//! - `turn/faux/memory`: one prompt → one streamed text reply with the faux provider on the
//!   memory store (the faux provider's own cost included; `faux/stream_only` is that cost alone);
//! - `turn/const/memory` and `turn/const/jsonl_save_point`: the same with a provider that
//!   answers with a fixed three-event stream without reading the context, so what remains is
//!   the harness (persistence, events, context building); JSONL makes one fsync per turn;
//! - `scaling/…` (printed, not criterion): the mean of 200 turns continuing a session of 10,
//!   1,000 and 4,000 turns, to show whether anything grows with the session (the request
//!   messages are kept across turns, DECISIONS §20.13: it should not).

// A benchmark may stop on an unexpected failure; the workspace lint is for library code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_agent::harness::{AgentHarness, HarnessOptions};
use arbor_agent::session::{
    CreateOptions, JsonlRepository, MemoryStorage, Session, SessionRepository, SyncPolicy,
};
use arbor_ai::event::{AssistantMessageEvent, AssistantMessageEventStream};
use arbor_ai::faux::{FauxProvider, FauxResponse, FauxStreamOptions};
use arbor_ai::stream::{ApiProvider, StreamOptions};
use arbor_ai::{AssistantMessage, ContentBlock, Context, Model, StopReason};
use criterion::{criterion_group, Criterion};
use futures::StreamExt;
use tokio::runtime::Runtime;

/// Answers every request with "ok" at once (reporting usage), never looking at the context.
struct ConstProvider;

impl ApiProvider for ConstProvider {
    fn stream(
        &self,
        model: &Model,
        _context: &Context,
        _options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let partial = AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            stop_reason: StopReason::Pending,
            timestamp: arbor_ai::time::now_ms().into(),
            ..AssistantMessage::default()
        };
        let mut done = partial.clone();
        done.content = vec![ContentBlock::text("ok")];
        done.stop_reason = StopReason::Stop;
        // Usage as real providers report it: the next request's token estimate starts from it
        // instead of measuring the whole context.
        done.usage.input = 100;
        done.usage.output = 1;
        Box::pin(futures::stream::iter([
            AssistantMessageEvent::Start { partial },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "ok".into(),
            },
            AssistantMessageEvent::Done {
                reason: StopReason::Stop,
                message: done,
            },
        ]))
    }
}

fn harness(session: Arc<Session>, provider: Arc<dyn ApiProvider>, model: Model) -> AgentHarness {
    AgentHarness::new(session, provider, HarnessOptions::new(model)).expect("harness")
}

fn memory_session() -> Arc<Session> {
    Arc::new(Session::new(Arc::new(MemoryStorage::new("/bench"))))
}

/// Times `iters` turns, each on an empty context: the leaf is moved back to the root between
/// turns (untimed; cheap, the projection of an empty path is empty).
fn timed_turns(rt: &Runtime, h: &AgentHarness, iters: u64, before: impl Fn()) -> Duration {
    let session = h.session().clone();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        before();
        let start = Instant::now();
        rt.block_on(h.prompt("hi", &[])).expect("turn");
        total += start.elapsed();
        rt.block_on(session.move_to(None, None)).expect("rewind");
    }
    total
}

/// Mean time of `n` consecutive turns continuing the session (no rewind).
fn mean_turn(rt: &Runtime, h: &AgentHarness, n: u32) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        rt.block_on(h.prompt("hi", &[])).expect("turn");
    }
    start.elapsed() / n
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().expect("runtime");
    let faux = FauxProvider::builder().token_size(64, 64).build();
    let model = faux.model();

    c.bench_function("faux/stream_only", |b| {
        let ctx = Context::default();
        b.iter(|| {
            faux.push(FauxResponse::text("ok"));
            rt.block_on(async {
                let mut s = faux.stream(&model, &ctx, FauxStreamOptions::default());
                while s.next().await.is_some() {}
            })
        })
    });

    {
        let faux = FauxProvider::builder().token_size(64, 64).build();
        let h = harness(memory_session(), Arc::new(faux.clone()), model.clone());
        c.bench_function("turn/faux/memory", |b| {
            b.iter_custom(|iters| {
                timed_turns(&rt, &h, iters, || faux.push(FauxResponse::text("ok")))
            })
        });
    }

    let constant: Arc<dyn ApiProvider> = Arc::new(ConstProvider);
    {
        let h = harness(memory_session(), constant.clone(), model.clone());
        c.bench_function("turn/const/memory", |b| {
            b.iter_custom(|iters| timed_turns(&rt, &h, iters, || ()))
        });
    }

    {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = JsonlRepository::flat(dir.path()).with_sync(SyncPolicy::SavePoint);
        let storage = rt
            .block_on(repo.create(CreateOptions::new("/bench")))
            .expect("create");
        let h = harness(
            Arc::new(Session::new(Arc::new(storage))),
            constant.clone(),
            model.clone(),
        );
        c.bench_function("turn/const/jsonl_save_point", |b| {
            b.iter_custom(|iters| timed_turns(&rt, &h, iters, || ()))
        });
    }
}

/// The per-turn cost as the session grows (plain timing; a growing session does not fit
/// criterion's fixed-input model): 200 turns continuing a session of 10, 1,000 and 4,000 turns.
fn scaling() {
    let rt = Runtime::new().expect("runtime");
    let model = FauxProvider::new().model();
    let h = harness(memory_session(), Arc::new(ConstProvider), model);
    let mut done = 0u32;
    for at in [10u32, 1000, 4000] {
        while done < at {
            rt.block_on(h.prompt("hi", &[])).expect("warm-up turn");
            done += 1;
        }
        let mean = mean_turn(&rt, &h, 200);
        done += 200;
        println!("scaling/turn/const/memory at {at} turns: {mean:?} per turn");
    }
}

/// The turns counted by `ARBOR_HARNESS_PROBE` (a symbol of its own for
/// `valgrind --tool=callgrind --toggle-collect='*probe_turns*'`).
#[inline(never)]
fn probe_turns(rt: &Runtime, h: &AgentHarness, n: u32) -> Duration {
    mean_turn(rt, h, n)
}

/// `ARBOR_HARNESS_PROBE=AT:N`: grows a session to `AT` turns untimed, then runs `N` more in
/// [`probe_turns`] and prints their mean. Under callgrind, the instructions of the `N` turns
/// divided by `N` are the per-turn cost at `AT` turns, repeatable on a loaded machine.
fn probe(spec: &str) {
    let (at, n) = spec
        .split_once(':')
        .and_then(|(a, n)| Some((a.parse::<u32>().ok()?, n.parse::<u32>().ok()?)))
        .expect("ARBOR_HARNESS_PROBE=AT:N (two integers)");
    let rt = Runtime::new().expect("runtime");
    let model = FauxProvider::new().model();
    let h = harness(memory_session(), Arc::new(ConstProvider), model);
    for _ in 0..at {
        rt.block_on(h.prompt("hi", &[])).expect("warm-up turn");
    }
    let mean = probe_turns(&rt, &h, n);
    println!("probe/turn/const/memory at {at} turns: {mean:?} per turn ({n} turns)");
}

fn all(c: &mut Criterion) {
    bench(c);
    scaling();
}

criterion_group!(benches, all);

fn main() {
    if let Ok(spec) = std::env::var("ARBOR_HARNESS_PROBE") {
        probe(&spec);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
