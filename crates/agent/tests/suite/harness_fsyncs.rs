//! The JSONL `save_point` policy under the harness: exactly one fsync per turn, none per
//! message.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arbor_agent::session::jsonl::{FileWriter, SessionWriter};
use arbor_agent::session::{
    CreateOptions, JsonlRepository, Session, SessionRepository, SyncPolicy,
};
use arbor_ai::faux::FauxResponse;
use serde_json::json;

use super::harness_support::{faux, rig_on};

struct Counting {
    inner: FileWriter,
    syncs: Arc<AtomicUsize>,
}

impl SessionWriter for Counting {
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.append(bytes)
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.syncs.fetch_add(1, Ordering::SeqCst);
        self.inner.sync()
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.inner.truncate(len)
    }
}

#[tokio::test]
async fn one_fsync_per_turn() {
    let dir = tempfile::tempdir().unwrap();
    let syncs = Arc::new(AtomicUsize::new(0));
    let s = syncs.clone();
    let repo = JsonlRepository::flat(dir.path())
        .with_sync(SyncPolicy::SavePoint)
        .with_writer(Arc::new(move |file| {
            Box::new(Counting {
                inner: FileWriter::new(file),
                syncs: s.clone(),
            }) as Box<dyn SessionWriter>
        }));
    let storage = repo.create(CreateOptions::new("/p")).await.unwrap();
    let r = rig_on(faux(), Arc::new(Session::new(Arc::new(storage))), None);
    let before = syncs.load(Ordering::SeqCst);
    // Three turns: two tool calls, then text. Seven messages.
    r.faux
        .push(FauxResponse::tool_call("echo", json!({"text": "a"})));
    r.faux.push(
        FauxResponse::new()
            .with_tool_call("echo", json!({"text": "b"}))
            .with_tool_call("echo", json!({"text": "c"})),
    );
    r.faux.push(FauxResponse::text("done"));
    r.harness.prompt("go", &[]).await.unwrap();
    assert_eq!(r.session.entries().await.unwrap().len(), 7);
    assert_eq!(
        syncs.load(Ordering::SeqCst) - before,
        3,
        "one fsync per turn"
    );
    let save_points = r.types().iter().filter(|t| *t == "save_point").count();
    assert_eq!(save_points, 3);
}
