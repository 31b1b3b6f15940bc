//! `/search` in the real `arbor` binary in tmux: search every session, open a hit on an
//! abandoned branch, land on its entry in `/tree` (DECISIONS §34.11). Skipped with a notice
//! when tmux is missing, unless `ARBOR_TEST_TMUX_REQUIRE=1`.

use serde_json::json;

use super::tmux::{tmux_or_skip, Tmux};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_opens_a_hit_on_its_entry_in_the_tree() {
    if !tmux_or_skip("tui_search") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    // An older session of another project: the flamingo idea was tried and left.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let cwd = elsewhere.to_str().unwrap();
    let folder = home
        .join("sessions")
        .join(arbor_agent::session::jsonl::layout::encode_cwd(cwd));
    std::fs::create_dir_all(&folder).unwrap();
    let user = |id: &str, parent: Option<&str>, minute: u32, text: &str| {
        json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": format!("2026-06-20T15:{minute:02}:00.000Z"),
            "message": {"role": "user", "content": text, "timestamp": 1}})
        .to_string()
    };
    let lines = [
        json!({"type": "session", "version": 3, "id": "019a0000-0000-7000-8000-0000000000e1",
            "timestamp": "2026-06-20T15:00:00.000Z", "cwd": cwd})
        .to_string(),
        user("e1", None, 1, "plan the cache work"),
        user("e2", Some("e1"), 2, "try the flamingo cache idea"),
        user("e3", Some("e2"), 3, "flamingo cache is too slow"),
        user("e4", Some("e1"), 4, "use the plain cache instead"),
        user("e5", Some("e4"), 5, "the plain cache works"),
    ];
    std::fs::write(
        folder.join("2026-06-20T15-00-00-000Z_019a0000-0000-7000-8000-0000000000e1.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    // A model that is never called (nothing is prompted); the port refuses connections.
    let models = json!({"providers": {
        "mock": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "test-key",
                 "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096}]}
    }});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    let tmux = Tmux::named("search");
    tmux.open_arbor(&repo, &home, &[]).await;
    tmux.wait_for("mock/mock-model").await;
    tmux.literal("/search flamingo slow").await;
    tmux.keys(&["Enter"]).await;
    let screen = tmux.wait_for("1 hit").await;
    assert!(!screen.contains("1 hits"), "{screen}");
    assert!(screen.contains("abandoned"), "{screen}");
    assert!(screen.contains("flamingo cache is too slow"), "{screen}");
    tmux.keys(&["Enter"]).await;
    let tree = tmux.wait_for("Session tree").await;
    // The cursor (›) is on the hit's entry, on the abandoned branch.
    let selected: Vec<&str> = tree.lines().filter(|l| l.contains('›')).collect();
    assert_eq!(selected.len(), 1, "{tree}");
    assert!(selected[0].contains("flamingo cache is too slow"), "{tree}");
    // The same hit again, now in the session open: the tree opens on it, nothing is switched
    // (a second open would find the file locked by this run; DECISIONS §34.22).
    close_tree(&tmux).await;
    tmux.literal("/search flamingo slow").await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("1 hit").await;
    tmux.keys(&["Enter"]).await;
    let tree = tmux.wait_for("Session tree").await;
    let selected: Vec<&str> = tree.lines().filter(|l| l.contains('›')).collect();
    assert_eq!(selected.len(), 1, "{tree}");
    assert!(selected[0].contains("flamingo cache is too slow"), "{tree}");
    close_tree_and_quit(&tmux).await;
}

/// With the agent on a PostgreSQL store (`--session-store`), `/search` finds a session of the
/// store, marks it `[store]`, and Enter opens it with `/tree` on the hit's entry (DECISIONS
/// §34.9, §34.21). Needs `ARBOR_TEST_POSTGRES_URL` (the postgres tests' convention).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_opens_a_store_hit_on_its_entry_in_the_tree() {
    let Some(url) = super::postgres::server() else {
        return;
    };
    if !tmux_or_skip("tui_search") {
        return;
    }
    let schema = arbor_session_postgres::scratch::ScratchSchema::new(&url);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    use super::search_store::{import_session, user_line};
    let id = import_session(
        &schema,
        dir.path(),
        "019a0000-0000-7000-8000-0000000000e2",
        "/work/elsewhere",
        &[
            user_line("e1", None, 1, "plan the cache work"),
            user_line("e2", Some("e1"), 2, "try the flamingo cache idea"),
            user_line("e3", Some("e2"), 3, "flamingo cache is too slow"),
            user_line("e4", Some("e1"), 4, "use the plain cache instead"),
            user_line("e5", Some("e4"), 5, "the plain cache works"),
        ],
    )
    .await;
    // And a session file of this project.
    super::session_search::session(
        &home,
        repo.to_str().unwrap(),
        "019a0000-0000-7000-8000-0000000000e3",
        &[(
            "p1",
            None,
            super::session_search::user("the pelican file note"),
        )],
    );
    let models = json!({"providers": {
        "mock": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "test-key",
                 "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096}]}
    }});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    let tmux = Tmux::named("search-store");
    let schema_var = format!("ARBOR_POSTGRES_SCHEMA={}", schema.name);
    tmux.open(
        &repo,
        &home,
        (100, 30),
        &[
            "env",
            &schema_var,
            env!("CARGO_BIN_EXE_arbor"),
            "--model",
            "mock/mock-model",
            "--session-store",
            &url,
        ],
    )
    .await;
    tmux.wait_for("mock/mock-model").await;
    tmux.literal("/search flamingo slow").await;
    tmux.keys(&["Enter"]).await;
    let screen = tmux.wait_for("1 hit").await;
    assert!(!screen.contains("1 hits"), "{screen}");
    let heading = screen
        .lines()
        .find(|l| l.contains("abandoned"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(heading.contains("e3  [store]"), "{screen}");
    assert!(heading.contains(&id[..8]), "{screen}");
    assert!(screen.contains("flamingo cache is too slow"), "{screen}");
    tmux.keys(&["Enter"]).await;
    let tree = tmux.wait_for("Session tree").await;
    // The cursor (›) is on the hit's entry, on the abandoned branch of the store session.
    let selected: Vec<&str> = tree.lines().filter(|l| l.contains('›')).collect();
    assert_eq!(selected.len(), 1, "{tree}");
    assert!(selected[0].contains("flamingo cache is too slow"), "{tree}");
    assert!(tree.contains("the plain cache works"), "{tree}");
    // A session file's hit opens that file, though the run is on the store (DECISIONS §34.22).
    close_tree(&tmux).await;
    tmux.literal("/search pelican").await;
    tmux.keys(&["Enter"]).await;
    let screen = tmux.wait_for("1 hit").await;
    assert!(!screen.contains("[store]"), "{screen}");
    tmux.keys(&["Enter"]).await;
    let tree = tmux.wait_for("Session tree").await;
    let selected: Vec<&str> = tree.lines().filter(|l| l.contains('›')).collect();
    assert_eq!(selected.len(), 1, "{tree}");
    assert!(selected[0].contains("the pelican file note"), "{tree}");
    close_tree_and_quit(&tmux).await;
}

/// Closes the tree with Escape and waits until it is gone: what is typed right after Escape
/// may be read with it as one Alt key (Alt+/ loses the `/` of a command).
async fn close_tree(tmux: &Tmux) {
    tmux.keys(&["Escape"]).await;
    let start = std::time::Instant::now();
    while tmux.capture().await.contains("Session tree") {
        assert!(start.elapsed().as_secs() < 15, "Escape left the tree open");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Closes the tree and quits.
async fn close_tree_and_quit(tmux: &Tmux) {
    close_tree(tmux).await;
    tmux.literal("/quit").await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_gone().await;
}
