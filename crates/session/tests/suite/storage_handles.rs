//! A storage reached through `&T`, `Arc<T>`, `Box<T>` or `Arc<dyn SessionStorage>` is a storage
//! itself (DECISIONS §12.15): the views generic over a storage read the session a `Session`
//! holds, without a second handle, and see what the backend itself shows.

use std::sync::Arc;

use arbor_session::rows::RowCaps;
use arbor_session::{
    visit_row_summaries, EntryDraft, EntryKind, MemoryStorage, Session, SessionStorage,
};
use serde_json::json;

/// The ids and parents a generic reader sees through `storage`.
async fn rows_of<S: SessionStorage>(storage: S) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    visit_row_summaries(
        &storage,
        RowCaps::TREE,
        &|r| (r.id.to_string(), r.parent_id.map(|p| p.to_string())),
        &mut |r| out.push(r),
    )
    .await
    .unwrap();
    out
}

#[tokio::test]
async fn shared_handles_read_like_the_storage_they_point_at() {
    let storage = MemoryStorage::new("/p");
    for text in ["one", "two"] {
        let m: arbor_session::AgentMessage =
            serde_json::from_value(json!({"role": "user", "content": text, "timestamp": 1}))
                .unwrap();
        storage
            .append(EntryDraft::new(EntryKind::message(m)))
            .await
            .unwrap();
    }
    let direct = rows_of(&storage).await;
    assert_eq!(direct.len(), 2);
    assert_eq!(direct[1].1.as_deref(), Some(direct[0].0.as_str()));

    let shared = Arc::new(storage);
    assert_eq!(rows_of(shared.clone()).await, direct);
    assert_eq!(rows_of(&shared).await, direct);

    // The handle a `Session` (and so a harness) holds.
    let session = Session::new(shared.clone());
    assert_eq!(rows_of(session.storage().clone()).await, direct);
    assert_eq!(rows_of(session.storage()).await, direct);
    let boxed: Box<dyn SessionStorage> = Box::new(MemoryStorage::new("/q"));
    assert!(rows_of(boxed).await.is_empty());

    // Writes through a handle land in the one session.
    let handle: &dyn SessionStorage = session.storage().as_ref();
    let leaf = handle.leaf_id().await.unwrap();
    assert_eq!(leaf.as_deref(), Some(direct[1].0.as_str()));
    handle.set_leaf(Some(&direct[0].0)).await.unwrap();
    assert_eq!(
        shared.leaf_id().await.unwrap().as_deref(),
        Some(direct[0].0.as_str())
    );
}

#[tokio::test]
async fn a_session_tree_renders_with_its_layout() {
    let storage = Arc::new(MemoryStorage::new("/p"));
    let session = Session::new(storage.clone());
    let m = |text: &str| -> arbor_session::AgentMessage {
        serde_json::from_value(json!({"role": "user", "content": text, "timestamp": 1})).unwrap()
    };
    let first = session.append_message(m("first")).await.unwrap();
    session.append_message(m("second")).await.unwrap();
    session.move_to(Some(&first), None).await.unwrap();
    session.append_message(m("other")).await.unwrap();
    let text = session.tree().await.unwrap().render();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].ends_with(" message user: first"), "{text}");
    assert!(
        lines[1].starts_with("├─ ") && lines[1].ends_with(": second"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("└─ ") && lines[2].ends_with(": other <- leaf"),
        "{text}"
    );
}
