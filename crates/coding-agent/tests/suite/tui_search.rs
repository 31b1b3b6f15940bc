//! `/search` in the real `arbor` binary in tmux: search every session, open a hit on an
//! abandoned branch, land on its entry in `/tree` (DECISIONS §34.11). Skipped with a notice
//! when tmux is missing, unless `ARBOR_TEST_TMUX_REQUIRE=1`.

use std::time::{Duration, Instant};

use serde_json::json;

struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> (bool, String) {
        let out = std::process::Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "arbor"]).1
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "arbor"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).0, "send-keys {keys:?}");
    }

    fn literal(&self, text: &str) {
        assert!(self.run(&["send-keys", "-t", "arbor", "-l", text]).0);
    }

    /// Waits until the pane shows `needle` (15 s), returning the screen.
    fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "the screen never showed {needle:?}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

#[test]
fn search_opens_a_hit_on_its_entry_in_the_tree() {
    let tmux_ok = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !tmux_ok {
        assert!(
            std::env::var("ARBOR_TEST_TMUX_REQUIRE").as_deref() != Ok("1"),
            "tmux is required (ARBOR_TEST_TMUX_REQUIRE=1) but not installed"
        );
        eprintln!("tui_search: tmux is not installed; skipping the real-terminal test");
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
    let tmux = Tmux {
        socket: format!("arbor-search-{}", std::process::id()),
    };
    let arbor = env!("CARGO_BIN_EXE_arbor");
    let (ok, _) = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "arbor",
        "-x",
        "100",
        "-y",
        "30",
        "-c",
        &repo.display().to_string(),
        "-e",
        &format!("ARBOR_HOME={}", home.display()),
        "-e",
        &format!("HOME={}", home.join("user").display()),
        "-e",
        "NO_COLOR=1",
        arbor,
        "--model",
        "mock/mock-model",
    ]);
    assert!(ok, "tmux started arbor");
    tmux.wait_for("mock/mock-model");
    tmux.literal("/search flamingo slow");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("1 hits");
    assert!(screen.contains("abandoned"), "{screen}");
    assert!(screen.contains("flamingo cache is too slow"), "{screen}");
    tmux.keys(&["Enter"]);
    let tree = tmux.wait_for("Session tree");
    // The cursor (›) is on the hit's entry, on the abandoned branch.
    let selected: Vec<&str> = tree.lines().filter(|l| l.contains('›')).collect();
    assert_eq!(selected.len(), 1, "{tree}");
    assert!(selected[0].contains("flamingo cache is too slow"), "{tree}");
    tmux.keys(&["Escape"]);
    tmux.literal("/quit");
    tmux.keys(&["Enter"]);
    let start = Instant::now();
    while tmux.run(&["has-session", "-t", "arbor"]).0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "arbor did not quit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
