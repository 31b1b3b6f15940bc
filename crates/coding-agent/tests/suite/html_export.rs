//! The HTML export in a real browser: headless Chromium loads the exported page, runs its
//! script, and the test reads back the DOM (which branch is shown, what the tree holds, that
//! nothing of the session became markup) and a screenshot (that the page is drawn: tree
//! sidebar, message backgrounds, the selected row).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

/// A 40×40 red PNG, as a tool result's image.
const RED_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAACgAAAAoCAIAAAADnC86AAAALElEQVR42u3NsQkAAAjAsP7/tD4huASyp6kXicVisVgsFovFYrFYLBaLxXcWqvU6G92VM/sAAAAASUVORK5CYII=";

/// Chromium on PATH (Debian's `chromium`), or `ARBOR_TEST_CHROMIUM`; `None` skips unless
/// `ARBOR_TEST_CHROMIUM_REQUIRE=1` (CI installs it).
fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let candidates = std::env::var_os("ARBOR_TEST_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            ["chromium", "chromium-browser", "google-chrome"]
                .iter()
                .map(PathBuf::from),
        );
    for candidate in candidates {
        let found = std::process::Command::new(&candidate)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            return Some(candidate);
        }
    }
    assert!(
        std::env::var("ARBOR_TEST_CHROMIUM_REQUIRE").as_deref() != Ok("1"),
        "Chromium is required (ARBOR_TEST_CHROMIUM_REQUIRE=1) but not installed"
    );
    eprintln!("{test}: Chromium is not installed; skipping the browser test");
    None
}

fn line(entry: Value) -> String {
    let mut s = entry.to_string();
    s.push('\n');
    s
}

fn message(id: &str, parent: Option<&str>, message: Value) -> String {
    line(json!({"type": "message", "id": id, "parentId": parent,
        "timestamp": "2026-12-01T10:00:00.000Z", "message": message}))
}

fn assistant(content: Value) -> Value {
    json!({"role": "assistant", "content": content, "api": "openai-completions",
        "provider": "mock", "model": "mock-model", "stopReason": "stop",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "timestamp": 1_764_583_200_000_i64})
}

/// A session with two branches after the first answer: `plan A` (abandoned, with a tool call,
/// its result with an image, and hostile text) and `plan B` (the active path, with Markdown).
fn write_session(dir: &Path) -> PathBuf {
    let mut log = line(
        json!({"type": "session", "version": 3, "id": "0190a0a0-0000-7000-8000-000000000001",
        "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/work/project"}),
    );
    log += &message(
        "aaaa0001",
        None,
        json!({"role": "user", "content": "Fix the login timeout", "timestamp": 1}),
    );
    log += &message(
        "aaaa0002",
        Some("aaaa0001"),
        assistant(json!([{"type": "text", "text": "Two ways to go."}])),
    );
    log += &message(
        "aaaa0003",
        Some("aaaa0002"),
        json!({"role": "user", "content": "plan A: try <script>alert('pwned')</script> caching", "timestamp": 2}),
    );
    log += &message(
        "aaaa0004",
        Some("aaaa0003"),
        assistant(json!([
            {"type": "thinking", "thinking": "Look at the config first."},
            {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "grep -rn timeout src/"}}
        ])),
    );
    log += &message(
        "aaaa0005",
        Some("aaaa0004"),
        json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "bash",
            "content": [{"type": "text", "text": "src/login.rs:12: TIMEOUT_SECS = 5"},
                        {"type": "image", "mimeType": "image/png", "data": RED_PNG}],
            "isError": false, "timestamp": 3}),
    );
    log += &message(
        "aaaa0006",
        Some("aaaa0002"),
        json!({"role": "user", "content": "plan B: raise the limit", "timestamp": 4}),
    );
    log += &message(
        "aaaa0007",
        Some("aaaa0006"),
        assistant(json!([{"type": "text", "text":
            "Raised it in **login.rs**:\n\n```rust\nconst TIMEOUT_SECS: u64 = 30;\n```\n\n| before | after |\n|---|---|\n| 5 | 30 |"}])),
    );
    log += &line(
        json!({"type": "label", "id": "aaaa0008", "parentId": "aaaa0007",
        "timestamp": "2026-12-01T10:01:00.000Z", "targetId": "aaaa0006", "label": "chosen"}),
    );
    let file = dir.join("session.jsonl");
    std::fs::write(&file, log).unwrap();
    file
}

async fn export(home: &Path, file: &Path, out: &Path) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .env("ARBOR_HOME", home)
        .arg("--export")
        .arg(file)
        .arg(out)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs Chromium headless on `url` with `args`, bounded in time; returns stdout.
async fn chromium(bin: &Path, profile: &Path, url: &str, args: &[&str]) -> String {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--allow-file-access-from-files",
        "--virtual-time-budget=3000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(url)
    .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("Chromium finished within 90 s")
        .unwrap();
    assert!(
        output.status.success(),
        "chromium {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The `class` attribute of the element whose `id` is `id`, in a dumped DOM.
fn class_of(dom: &str, id: &str) -> String {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("{id} not in the DOM"));
    let start = dom[..at].rfind('<').unwrap();
    let tag = &dom[start..at + dom[at..].find('>').unwrap()];
    let class_at = tag.find("class=\"").unwrap() + 7;
    tag[class_at..class_at + tag[class_at..].find('"').unwrap()].to_owned()
}

#[tokio::test]
async fn the_export_renders_the_conversation_and_switches_branches_in_chromium() {
    let Some(bin) = chromium_or_skip("html_export") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let file = write_session(tmp.path());
    let page = tmp.path().join("page.html");
    export(&home, &file, &page).await;
    let url = format!("file://{}", page.display());
    let profile = tmp.path().join("chromium-profile");

    // As opened: the active path (plan B) shows, plan A is folded away.
    let dom = chromium(&bin, &profile, &url, &["--dump-dom"]).await;
    for id in ["e-aaaa0001", "e-aaaa0002", "e-aaaa0006", "e-aaaa0007"] {
        assert!(!class_of(&dom, id).contains("off"), "{id} shows: {dom}");
    }
    for id in ["e-aaaa0003", "e-aaaa0004", "e-aaaa0005"] {
        assert!(class_of(&dom, id).contains("off"), "{id} is hidden");
    }
    // The tree: every entry a row, the leaf selected, the label shown.
    assert_eq!(dom.matches("<li class=").count(), 8, "{dom}");
    assert!(dom.contains("[chosen]"), "label in the tree");
    assert!(
        dom.contains("<strong>login.rs</strong>"),
        "Markdown rendered"
    );
    assert!(dom.contains("<code class=\"language-rust\">"), "code block");
    assert!(dom.contains("<table>"), "table");
    // Nothing of the session became markup: only the page's own script exists.
    assert_eq!(dom.matches("<script").count(), 1, "one script, the page's");
    assert!(dom.contains("&lt;script&gt;alert('pwned')&lt;/script&gt;"));

    // `#leaf=ID` (what a click on a tree row sets) shows that branch instead.
    let dom = chromium(
        &bin,
        &profile,
        &format!("{url}#leaf=aaaa0005"),
        &["--dump-dom"],
    )
    .await;
    assert!(
        dom.contains("data-selected=\"aaaa0005\""),
        "selected by the address"
    );
    for id in [
        "e-aaaa0001",
        "e-aaaa0002",
        "e-aaaa0003",
        "e-aaaa0004",
        "e-aaaa0005",
    ] {
        assert!(!class_of(&dom, id).contains("off"), "{id} shows on plan A");
    }
    for id in ["e-aaaa0006", "e-aaaa0007"] {
        assert!(class_of(&dom, id).contains("off"), "{id} hidden on plan A");
    }
    assert!(dom.contains("<div class=\"tool-name\">bash</div><pre>$ grep -rn timeout src/</pre>"));
    assert!(
        dom.contains("src=\"data:image/png;base64,"),
        "the tool's image inline"
    );

    // The screenshot: the page is drawn, with the tree beside the conversation.
    let shot = tmp.path().join("shot.png");
    chromium(
        &bin,
        &profile,
        &format!("{url}#leaf=aaaa0005"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,900",
        ],
    )
    .await;
    let image = image::open(&shot).unwrap().to_rgb8();
    assert_eq!((image.width(), image.height()), (1280, 900));
    let count = |x0: u32, x1: u32, rgb: [u8; 3]| {
        (0..image.height())
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let p = image.get_pixel(x, y).0;
                p.iter().zip(rgb).all(|(a, b)| a.abs_diff(b) <= 6)
            })
            .count()
    };
    let sidebar = count(0, 370, [0xf6, 0xf8, 0xfa]);
    let user_bubbles = count(390, 1280, [0xdd, 0xf4, 0xff]);
    let selected_row = count(0, 370, [0x09, 0x69, 0xda]);
    let red_image = count(390, 1280, [0xff, 0x00, 0x00]);
    let dark_text = (0..image.height())
        .flat_map(|y| (0..1280).map(move |x| (x, y)))
        .filter(|&(x, y)| image.get_pixel(x, y).0.iter().all(|&c| c < 90))
        .count();
    assert!(sidebar > 100_000, "sidebar background: {sidebar} px");
    assert!(
        user_bubbles > 5_000,
        "user messages drawn: {user_bubbles} px"
    );
    assert!(selected_row > 200, "selected tree row: {selected_row} px");
    assert!(red_image >= 1_000, "the tool's image drawn: {red_image} px");
    assert!(dark_text > 2_000, "text drawn: {dark_text} px");
}
