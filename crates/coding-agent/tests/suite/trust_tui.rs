//! The project-trust question and `/reload` in a real terminal (tmux) against the mock model
//! server (DECISIONS §32.13, §32.14): refusing for the session leaves the project's skills and
//! templates out; trusting saves the decision (0600) and loads them; `/reload` picks up a skill
//! added while the session runs. Skipped with a notice when tmux is missing, unless
//! `ARBOR_TEST_TMUX_REQUIRE=1`.

use std::path::{Path, PathBuf};

use arbor_test_support::scripts::openai_text;
use arbor_test_support::MockServer;
use serde_json::json;

use super::tmux::{tmux_or_skip, Tmux};

/// `arbor` in a 110×40 pane that stays open after it exits (so its last words can be read).
async fn start(name: &str, repo: &Path, home: &Path) -> Tmux {
    let pane = Tmux::named(&format!("trust-{name}"));
    let cmd = format!(
        "\"{}\" --model mock/mock-model; exec sleep 60",
        env!("CARGO_BIN_EXE_arbor")
    );
    pane.open(repo, home, (110, 40), &["sh", "-c", &cmd]).await;
    pane
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn setup(server: &MockServer) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let models = json!({"providers": {
        "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "test-key",
                 "models": [{"id": "mock-model", "contextWindow": 32000, "maxTokens": 4096}]}
    }});
    put(&home.join("models.json"), &models.to_string());
    put(
        &repo.join(".arbor/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Ship a release.\n---\nRun ship.sh.\n",
    );
    put(&repo.join(".arbor/prompts/review.md"), "Review $1 now.\n");
    (dir, home, repo)
}

fn last_user_text(server: &MockServer) -> String {
    let body = server.requests().last().expect("a request").json();
    let msgs = body["messages"].as_array().unwrap();
    let user = msgs.iter().rev().find(|m| m["role"] == "user").unwrap();
    user["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trust_question_gates_project_resources_and_reload_finds_new_skills() {
    if !tmux_or_skip("the_trust_question_gates_project_resources_and_reload_finds_new_skills") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    let (_dir, home, repo) = setup(&server);

    // Refused for this session (Esc): nothing of the project loads and nothing is saved.
    let pane = start("refuse", &repo, &home).await;
    let screen = pane.wait_for("Trust this project folder?").await;
    assert!(screen.contains(".arbor/skills"), "{screen}");
    pane.keys(&["Escape"]).await;
    pane.wait_for("this folder is not trusted").await;
    pane.type_line("/review code").await;
    pane.wait_for("Unknown command: /review").await;
    drop(pane);
    assert!(!home.join("trust.json").exists());

    // Trusted (Enter on "Trust"): saved owner-only, the skill and template load.
    let pane = start("trust", &repo, &home).await;
    pane.wait_for("Trust this project folder?").await;
    pane.keys(&["Enter"]).await;
    pane.wait_for("Skills (1): deploy").await;
    let saved = std::fs::read_to_string(home.join("trust.json")).unwrap();
    let key = std::fs::canonicalize(&repo).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&saved).unwrap(),
        json!({key.display().to_string(): true})
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(home.join("trust.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    server.push(openai_text("Reviewing."));
    pane.type_line("/review code").await;
    pane.wait_for("Reviewing.").await;
    assert_eq!(last_user_text(&server), "Review code now.\n");

    // A skill added while the session runs is found by /reload.
    put(
        &home.join("skills/fresh/SKILL.md"),
        "---\nname: fresh\ndescription: Fresh skill.\n---\nFresh body.\n",
    );
    pane.type_line("/reload").await;
    pane.wait_for("Skills (2): deploy, fresh").await;
    server.push(openai_text("Done fresh."));
    pane.type_line("/skill:fresh go").await;
    pane.wait_for("Done fresh.").await;
    let sent = last_user_text(&server);
    assert!(sent.starts_with("<skill name=\"fresh\""), "{sent}");
    assert!(sent.ends_with("Fresh body.\n</skill>\n\ngo"), "{sent}");
    let system = server.requests().last().unwrap().json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("<skill name=\"fresh\""), "{system}");

    // A saved decision is not asked again.
    drop(pane);
    let pane = start("again", &repo, &home).await;
    let screen = pane.wait_for("Skills (2)").await;
    assert!(!screen.contains("Trust this project folder?"), "{screen}");
}
