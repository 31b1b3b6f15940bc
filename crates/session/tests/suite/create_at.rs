//! `JsonlRepository::create_at`: a session file at a path the caller chooses (DECISIONS
//! §12.16).

use arbor_session::{CreateOptions, JsonlRepository, SessionRepository, SessionStorage};
use serde_json::json;

#[tokio::test]
async fn a_session_is_created_at_the_chosen_path_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let path = dir.path().join("deep/er/mine.jsonl");
    let storage = repo
        .create_at(
            &path,
            CreateOptions::new("/work/p")
                .with_id("chosen-id")
                .with_metadata(json!({"k": 1})),
        )
        .await
        .unwrap();
    assert_eq!(storage.location(), path.display().to_string());
    let m: arbor_session::AgentMessage =
        serde_json::from_value(json!({"role": "user", "content": "hi", "timestamp": 1})).unwrap();
    let entry = storage
        .append(arbor_session::EntryKind::message(m).into())
        .await
        .unwrap();
    drop(storage);

    let text = std::fs::read_to_string(&path).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["id"], "chosen-id");
    assert_eq!(header["cwd"], "/work/p");
    assert_eq!(header["metadata"], json!({"k": 1}));
    assert_eq!(text.lines().count(), 2);

    let again = repo.open(&path.display().to_string()).await.unwrap();
    assert_eq!(again.leaf_id().await.unwrap(), Some(entry.id));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[tokio::test]
async fn an_existing_file_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taken.jsonl");
    std::fs::write(&path, "mine\n").unwrap();
    let err = JsonlRepository::flat(dir.path())
        .create_at(&path, CreateOptions::new("/p"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_session");
    assert!(err.to_string().contains("taken.jsonl"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine\n");
}
