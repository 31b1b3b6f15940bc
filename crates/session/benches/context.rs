//! `build_context` speed on big trees (memory backend), reported as medians.
//!
//! Session shapes: a 5 000-entry active path plus side branches, for 10k and 100k entries in
//! total. Measured: a cold build (fresh `Session`: ancestry read + full projection), a warm
//! build (leaf unchanged), an append followed by a build (the incremental path), and the pure
//! projection function over the same ancestry without any cache.
//!
//! Run: `cargo bench -p arbor-session --bench context`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_session::context::projection::build_session_context;
use arbor_session::context::ContextOptions;
use arbor_session::message::AgentMessage;
use arbor_session::{EntryDraft, EntryKind, MemoryStorage, Session, SessionStorage};
use serde_json::json;

fn message(i: usize) -> AgentMessage {
    let text = format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8));
    let v = match i % 3 {
        0 => json!({"role": "user", "content": text, "timestamp": i}),
        1 => json!({
            "role": "assistant",
            "content": [{"type": "text", "text": text}, {"type": "toolCall", "id": format!("c{i}"), "name": "read", "arguments": {"path": "src/lib.rs"}}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
                      "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}},
            "stopReason": "toolUse", "timestamp": i
        }),
        _ => json!({
            "role": "toolResult", "toolCallId": format!("c{}", i - 1), "toolName": "read",
            "content": [{"type": "text", "text": "fn main() {}\n".repeat(40)}], "isError": false, "timestamp": i
        }),
    };
    serde_json::from_value(v).unwrap()
}

async fn append(storage: &MemoryStorage, i: usize) -> String {
    storage
        .append(EntryDraft::new(EntryKind::Message(
            arbor_session::MessageEntry {
                message: message(i),
                extra: Default::default(),
            },
        )))
        .await
        .unwrap()
        .id
}

/// A session of about `total` entries whose leaf has a `path`-entry ancestry.
async fn build(total: usize, path: usize) -> Arc<MemoryStorage> {
    let storage = Arc::new(MemoryStorage::new("/bench"));
    let side = total.saturating_sub(path);
    let branches = (side / 1000).max(1);
    let per_branch = side / branches;
    let mut main_tip: Option<String> = None;
    let mut main_ids: Vec<String> = Vec::with_capacity(path);
    let mut n = 0;
    for b in 0..branches {
        // grow the main path a little, then hang a side branch off it
        let grow = path / branches;
        storage.set_leaf(main_tip.as_deref()).await.unwrap();
        for _ in 0..grow {
            n += 1;
            let id = append(&storage, n).await;
            main_ids.push(id.clone());
            main_tip = Some(id);
        }
        let fork_at = main_ids[(b * 7919) % main_ids.len()].clone();
        storage.set_leaf(Some(&fork_at)).await.unwrap();
        for _ in 0..per_branch.saturating_sub(2) {
            n += 1;
            append(&storage, n).await;
        }
    }
    storage.set_leaf(main_tip.as_deref()).await.unwrap();
    while main_ids.len() < path {
        n += 1;
        let id = append(&storage, n).await;
        main_ids.push(id);
    }
    storage
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn fmt(d: Duration) -> String {
    format!("{:>10.1} µs", d.as_secs_f64() * 1e6)
}

async fn run(total: usize, path: usize) {
    let setup = Instant::now();
    let storage = build(total, path).await;
    let count = storage.entry_count().await.unwrap();
    let leaf = storage.leaf_id().await.unwrap();
    let ancestry = storage.ancestry(leaf.as_deref()).await.unwrap();
    println!(
        "session: {count} entries, active path {} entries (built in {:.1}s)",
        ancestry.len(),
        setup.elapsed().as_secs_f64()
    );
    let opts = ContextOptions::default();

    let mut cold = Vec::new();
    for _ in 0..15 {
        let s = Session::new(storage.clone());
        let t = Instant::now();
        let ctx = s.build_context(&opts).await.unwrap();
        cold.push(t.elapsed());
        assert!(!ctx.messages.is_empty());
    }

    let mut read = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        let a = storage.ancestry(leaf.as_deref()).await.unwrap();
        read.push(t.elapsed());
        assert_eq!(a.len(), ancestry.len());
    }

    let mut pure = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        let ctx = build_session_context(&ancestry, &opts);
        pure.push(t.elapsed());
        assert!(!ctx.messages.is_empty());
    }

    let s = Session::new(storage.clone());
    s.build_context(&opts).await.unwrap();
    let mut warm = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        s.build_context(&opts).await.unwrap();
        warm.push(t.elapsed());
    }

    let mut after_append = Vec::new();
    for i in 0..30 {
        s.append_message(message(1_000_000 + i)).await.unwrap();
        let t = Instant::now();
        s.build_context(&opts).await.unwrap();
        after_append.push(t.elapsed());
    }

    println!(
        "  cold build_context (fresh Session, reads ancestry): {}",
        fmt(median(cold))
    );
    println!(
        "    of which storage.ancestry() (memory backend):     {}",
        fmt(median(read))
    );
    println!(
        "  pure build_session_context over the ancestry:       {}",
        fmt(median(pure))
    );
    println!(
        "  warm build_context (leaf unchanged):                {}",
        fmt(median(warm))
    );
    println!(
        "  build_context after one append (incremental):      {}",
        fmt(median(after_append))
    );
}

/// One-shot `arbor session context FILE --json` pipeline on a real file, by phase
/// (`ARBOR_BIG_SESSION=FILE`, e.g. made with `shared/tools/gen_big.py`).
async fn one_shot(path: &str) {
    use arbor_session::context::{build_session_context_owned, write_expected_json};
    use arbor_session::jsonl::JsonlRepository;
    let dir = std::path::Path::new(path).parent().unwrap();
    let repo = JsonlRepository::flat(dir);
    let names = [
        "open (read-only)",
        "ancestry",
        "project (owned)",
        "write JSON",
        "total",
    ];
    let mut phases: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    let mut bytes = 0;
    let mut path_len = 0;
    for _ in 0..5 {
        let t0 = Instant::now();
        let storage = repo.open_read_only(path).await.unwrap();
        let t1 = Instant::now();
        let leaf = storage.leaf_id().await.unwrap();
        let ancestry = storage.ancestry(leaf.as_deref()).await.unwrap();
        path_len = ancestry.len();
        let t2 = Instant::now();
        let ctx = build_session_context_owned(ancestry, &ContextOptions::default());
        let t3 = Instant::now();
        let mut out = Vec::new();
        write_expected_json(&mut out, &ctx, leaf.as_deref()).unwrap();
        let t4 = Instant::now();
        bytes = out.len();
        for (i, d) in [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0]
            .into_iter()
            .enumerate()
        {
            phases[i].push(d);
        }
    }
    println!(
        "one-shot context of {path} (ancestry {path_len} entries, {bytes} bytes of JSON out):"
    );
    for (name, ds) in names.iter().zip(phases) {
        println!("  {name:<18} {}", fmt(median(ds)));
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        if let Ok(path) = std::env::var("ARBOR_BIG_SESSION") {
            one_shot(&path).await;
            return;
        }
        run(10_000, 5_000).await;
        run(100_000, 5_000).await;
    });
}
