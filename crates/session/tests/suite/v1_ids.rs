//! A v1 file (entries without ids) reads with the same derived ids on every open, read-only
//! or writable, so an id from one open names the same entry in the next (DECISIONS §25.12).

use arbor_session::{
    ForkOptions, JsonlRepository, JsonlStorage, Session, SessionRepository, SessionStorage,
};
use std::sync::Arc;

use super::testdata_dir;

async fn ids(storage: &JsonlStorage) -> Vec<String> {
    let page = storage.entries(None, None).await.unwrap();
    page.entries.into_iter().map(|(_, e)| e.id).collect()
}

#[tokio::test]
async fn every_open_of_a_v1_file_gives_the_same_ids_and_fork_accepts_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v1.jsonl");
    std::fs::copy(
        testdata_dir().join("pi-sessions/v1-before-compaction.pi-mono.jsonl"),
        &file,
    )
    .unwrap();
    let before = std::fs::read(&file).unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let location = file.display().to_string();

    let first = ids(&repo.open_read_only(&location).await.unwrap()).await;
    let second = ids(&repo.open_read_only(&location).await.unwrap()).await;
    assert!(first.len() > 3);
    assert_eq!(first, second);
    assert!(first.iter().all(|id| id.len() == 8), "{first:?}");
    let unique: std::collections::HashSet<_> = first.iter().collect();
    assert_eq!(unique.len(), first.len());
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "looking changes nothing"
    );

    // An id from the first open forks (the CLI's `fork --entry` path).
    let target = first[2].clone();
    let fork = repo
        .fork(&location, ForkOptions::at(target.clone()))
        .await
        .unwrap();
    let forked = Session::new(Arc::new(fork));
    assert_eq!(forked.leaf_id().await.unwrap(), Some(target.clone()));
    assert_eq!(forked.ancestry(None).await.unwrap().len(), 3);

    // A writable open (which rewrites the file as v3 on its first write) keeps them too.
    let writable = repo.open(&location).await.unwrap();
    assert_eq!(ids(&writable).await, first);
}
