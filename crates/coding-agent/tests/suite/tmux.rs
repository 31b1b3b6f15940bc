//! One real terminal for the TUI tests: `arbor` in a private tmux server (its own socket), read
//! with `capture-pane`, driven with `send-keys`, and killed with its server when dropped so no
//! test leaves a process behind.

use std::path::Path;
use std::time::{Duration, Instant};

/// How long a test waits for the screen to show something.
const PATIENCE: Duration = Duration::from_secs(15);

pub(super) struct Tmux {
    pub(super) socket: String,
}

impl Tmux {
    /// A server named after the test (and this process, so parallel runs never share one).
    pub(super) fn named(name: &str) -> Tmux {
        Tmux {
            socket: format!("arbor-{name}-{}", std::process::id()),
        }
    }

    /// Starts `command` in pane `arbor` of a new session, `cols`×`rows`, in `repo`, with
    /// `ARBOR_HOME=home`, `HOME=home/user` and no colour.
    pub(super) async fn open(&self, repo: &Path, home: &Path, size: (u16, u16), command: &[&str]) {
        let (cols, rows) = (size.0.to_string(), size.1.to_string());
        let (repo, arbor_home) = (repo.display().to_string(), home.display().to_string());
        let user_home = home.join("user").display().to_string();
        let mut args = vec![
            "new-session",
            "-d",
            "-s",
            "arbor",
            "-x",
            &cols,
            "-y",
            &rows,
            "-c",
            &repo,
        ];
        let env = [
            format!("ARBOR_HOME={arbor_home}"),
            format!("HOME={user_home}"),
            "NO_COLOR=1".to_owned(),
        ];
        for e in &env {
            args.extend(["-e", e.as_str()]);
        }
        args.extend_from_slice(command);
        assert!(self.run(&args).await.0, "tmux started {command:?}");
    }

    /// `arbor --model mock/mock-model EXTRA…` (the binary under test).
    pub(super) async fn open_arbor(&self, repo: &Path, home: &Path, extra: &[&str]) {
        let mut command = vec![env!("CARGO_BIN_EXE_arbor"), "--model", "mock/mock-model"];
        command.extend_from_slice(extra);
        self.open(repo, home, (100, 30), &command).await;
    }

    pub(super) async fn run(&self, args: &[&str]) -> (bool, String) {
        let out = tokio::process::Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .await
            .expect("tmux runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    pub(super) async fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "arbor"]).await.1
    }

    pub(super) async fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "arbor"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).await.0, "send-keys {keys:?}");
    }

    pub(super) async fn literal(&self, text: &str) {
        assert!(
            self.run(&["send-keys", "-t", "arbor", "-l", text]).await.0,
            "send-keys -l {text}"
        );
    }

    /// Types `text` and presses Enter.
    pub(super) async fn type_line(&self, text: &str) {
        self.literal(text).await;
        self.keys(&["Enter"]).await;
    }

    /// Waits until the pane shows `needle`, returning the screen.
    pub(super) async fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture().await;
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "the screen never showed {needle:?}; it shows:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(super) async fn alive(&self) -> bool {
        self.run(&["has-session", "-t", "arbor"]).await.0
    }

    /// Waits until the pane's program has exited (and the session with it).
    pub(super) async fn wait_gone(&self) {
        let start = Instant::now();
        while self.alive().await {
            assert!(start.elapsed() < PATIENCE, "arbor did not quit");
            tokio::time::sleep(Duration::from_millis(50)).await;
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

/// Whether tmux is installed; when it is not, says the test is skipped (or fails when
/// `ARBOR_TEST_TMUX_REQUIRE=1`, as CI sets).
pub(super) fn tmux_or_skip(test: &str) -> bool {
    let there = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !there {
        assert!(
            std::env::var("ARBOR_TEST_TMUX_REQUIRE").as_deref() != Ok("1"),
            "tmux is required (ARBOR_TEST_TMUX_REQUIRE=1) but not installed"
        );
        eprintln!("{test}: tmux is not installed; skipping the real-terminal test");
    }
    there
}
