//! The built-in tools on a temp git repository: pi's texts, limits and error results, and the
//! awkward inputs (binary and non-UTF-8 files, huge files, long lines, missing paths).

use std::path::Path;
use std::time::{Duration, Instant};

use arbor_ai::ContentBlock;
use arbor_tools::{self as tools, BuiltinToolError, ToolEnv, ToolOutput, ToolSettings};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn repo() -> (tempfile::TempDir, ToolEnv) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(root.join("src/nested")).unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    println!(\"needle\");\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/nested/lib.rs"),
        "// needle here\npub fn f() {}\n",
    )
    .unwrap();
    std::fs::write(root.join("target/built.rs"), "needle in ignored dir\n").unwrap();
    std::fs::write(root.join("debug.log"), "needle in ignored file\n").unwrap();
    std::fs::write(root.join(".hidden"), "needle hidden\n").unwrap();
    std::fs::write(root.join("README.md"), "Readme\n").unwrap();
    let env = ToolEnv::new(root.to_path_buf(), ToolSettings::default());
    (dir, env)
}

async fn call(env: &ToolEnv, name: &str, args: Value) -> Result<ToolOutput, BuiltinToolError> {
    tools::run(name, env, args, CancellationToken::new(), None).await
}

fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("")
}

async fn ok_text(env: &ToolEnv, name: &str, args: Value) -> String {
    text(
        &call(env, name, args)
            .await
            .unwrap_or_else(|e| panic!("{name} failed: {e}")),
    )
}

async fn err_text(env: &ToolEnv, name: &str, args: Value) -> String {
    match call(env, name, args).await {
        Ok(out) => panic!("{name} should fail, got {:?}", text(&out)),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn read_pages_through_a_big_file_with_pis_notes() {
    let (dir, env) = repo();
    let seq: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    std::fs::write(dir.path().join("seq.txt"), &seq).unwrap();
    let t = ok_text(&env, "read", json!({"path": "seq.txt"})).await;
    assert!(t.starts_with("1\n2\n"));
    assert!(
        t.ends_with("\n2000\n\n[Showing lines 1-2000 of 3001. Use offset=2001 to continue.]"),
        "{}",
        &t[t.len() - 80..]
    );
    let t = ok_text(
        &env,
        "read",
        json!({"path": "seq.txt", "offset": 501, "limit": 10}),
    )
    .await;
    assert_eq!(t, "501\n502\n503\n504\n505\n506\n507\n508\n509\n510\n\n[2491 more lines in file. Use offset=511 to continue.]");
    let t = ok_text(&env, "read", json!({"path": "seq.txt", "offset": 2999})).await;
    assert_eq!(t, "2999\n3000\n");
    assert_eq!(
        err_text(&env, "read", json!({"path": "seq.txt", "offset": 5000})).await,
        "Offset 5000 is beyond end of file (3001 lines total)"
    );
}

#[tokio::test]
async fn read_cuts_by_bytes_and_points_at_sed_for_a_giant_line() {
    let (dir, env) = repo();
    let line = "x".repeat(100);
    let many = vec![line.as_str(); 1000].join("\n");
    std::fs::write(dir.path().join("wide.txt"), &many).unwrap();
    let t = ok_text(&env, "read", json!({"path": "wide.txt"})).await;
    assert!(
        t.ends_with(
            "\n\n[Showing lines 1-506 of 1000 (50.0KB limit). Use offset=507 to continue.]"
        ),
        "{}",
        &t[t.len() - 90..]
    );
    std::fs::write(dir.path().join("one.txt"), "y".repeat(200_000)).unwrap();
    let out = call(&env, "read", json!({"path": "one.txt"}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "[Line 1 is 195.3KB, exceeds 50.0KB limit. Use bash: sed -n '1p' one.txt | head -c 51200]"
    );
    assert_eq!(
        out.details.unwrap()["truncation"]["firstLineExceedsLimit"],
        true
    );
}

#[tokio::test]
async fn read_streams_a_huge_file_quickly() {
    let (dir, env) = repo();
    let path = dir.path().join("huge.txt");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for i in 0..2_000_000 {
            writeln!(f, "line {i} with some padding text").unwrap();
        }
    }
    let started = Instant::now();
    let t = ok_text(
        &env,
        "read",
        json!({"path": "huge.txt", "offset": 1_999_990, "limit": 5}),
    )
    .await;
    assert!(t.starts_with("line 1999989 with"), "{t}");
    assert!(
        t.ends_with("[7 more lines in file. Use offset=1999995 to continue.]"),
        "{t}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn read_survives_binary_and_non_utf8_bytes_and_missing_paths() {
    let (dir, env) = repo();
    std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\nok\n").unwrap();
    assert_eq!(
        ok_text(&env, "read", json!({"path": "latin1.txt"})).await,
        "caf\u{FFFD}\nok\n"
    );
    std::fs::write(dir.path().join("blob.bin"), [0u8, 1, 2, 255, 254, b'\n', 0]).unwrap();
    let t = ok_text(&env, "read", json!({"path": "blob.bin"})).await;
    assert!(t.contains('\u{FFFD}'));
    let missing = dir.path().join("missing.txt");
    assert_eq!(
        err_text(&env, "read", json!({"path": "missing.txt"})).await,
        format!(
            "ENOENT: no such file or directory, access '{}'",
            missing.display()
        )
    );
    assert!(err_text(&env, "read", json!({"path": "src"}))
        .await
        .starts_with("EISDIR"));
    assert_eq!(
        err_text(&env, "read", json!({"nopath": 1})).await,
        "Validation failed for tool \"read\":\n  - path: missing\n\nReceived arguments:\n{\n  \"nopath\": 1\n}"
    );
    assert_eq!(
        err_text(&env, "nosuchtool", json!({})).await,
        "Tool nosuchtool not found"
    );
}

#[tokio::test]
async fn read_attaches_images_by_magic_bytes() {
    let (dir, env) = repo();
    let mut png = Vec::new();
    image::DynamicImage::new_rgb8(4, 3)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    // The extension lies; the bytes decide.
    std::fs::write(dir.path().join("shot.dat"), &png).unwrap();
    let out = call(&env, "read", json!({"path": "@shot.dat"}))
        .await
        .unwrap();
    assert_eq!(out.content.len(), 2);
    assert_eq!(
        out.content[0].as_text(),
        Some("Read image file [image/png]")
    );
    assert!(matches!(&out.content[1], ContentBlock::Image(i) if i.mime_type == "image/png"));
}

#[tokio::test]
async fn write_creates_parents_and_reports_the_path_as_given() {
    let (dir, env) = repo();
    let t = ok_text(
        &env,
        "write",
        json!({"path": "new/deep/file.txt", "content": "hello\n"}),
    )
    .await;
    assert_eq!(t, "Successfully wrote to new/deep/file.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new/deep/file.txt")).unwrap(),
        "hello\n"
    );
    let t = ok_text(
        &env,
        "write",
        json!({"path": "new/deep/file.txt", "content": ""}),
    )
    .await;
    assert_eq!(t, "Successfully wrote to new/deep/file.txt");
    assert_eq!(
        std::fs::read(dir.path().join("new/deep/file.txt")).unwrap(),
        b""
    );
    std::fs::write(dir.path().join("afile"), "x").unwrap();
    let e = err_text(
        &env,
        "write",
        json!({"path": "afile/below.txt", "content": "x"}),
    )
    .await;
    assert!(e.contains("afile"), "{e}");
}

#[tokio::test]
async fn edit_keeps_crlf_and_bom_and_returns_a_diff() {
    let (dir, env) = repo();
    let p = dir.path().join("win.txt");
    std::fs::write(&p, "\u{FEFF}line one\r\nline two\r\nline three\r\n").unwrap();
    let out = call(
        &env,
        "edit",
        json!({"path": "win.txt", "edits": [{"oldText": "line one", "newText": "line 1"}]}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "Successfully replaced 1 block(s) in win.txt.");
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "\u{FEFF}line 1\r\nline two\r\nline three\r\n"
    );
    let d = out.details.unwrap();
    assert_eq!(
        d["diff"],
        "-1 line one\n+1 line 1\n 2 line two\n 3 line three"
    );
    assert_eq!(d["firstChangedLine"], 1);
    assert_eq!(
        d["patch"],
        "--- win.txt\n+++ win.txt\n@@ -1,3 +1,3 @@\n-line one\n+line 1\n line two\n line three\n"
    );
    // Multi-line new text takes the file's line ending.
    call(
        &env,
        "edit",
        json!({"path": "win.txt", "oldText": "line two", "newText": "a\nb"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "\u{FEFF}line 1\r\na\r\nb\r\nline three\r\n"
    );
}

#[tokio::test]
async fn edit_errors_are_clear_and_change_nothing() {
    let (dir, env) = repo();
    let p = dir.path().join("hello.txt");
    std::fs::write(&p, "line one\nline two\n").unwrap();
    assert_eq!(
        err_text(&env, "edit", json!({"path": "hello.txt", "edits": [{"oldText": "nope", "newText": "x"}]})).await,
        "Could not find the exact text in hello.txt. The old text must match exactly including all whitespace and newlines."
    );
    assert_eq!(
        err_text(
            &env,
            "edit",
            json!({"path": "gone.txt", "edits": [{"oldText": "a", "newText": "b"}]})
        )
        .await,
        "Could not edit file: gone.txt. Error code: ENOENT."
    );
    assert_eq!(
        err_text(&env, "edit", json!({"path": "hello.txt", "edits": []})).await,
        "Edit tool input is invalid. edits must contain at least one replacement."
    );
    std::fs::write(dir.path().join("bin.dat"), b"ab\xffcd").unwrap();
    let e = err_text(
        &env,
        "edit",
        json!({"path": "bin.dat", "edits": [{"oldText": "ab", "newText": "x"}]}),
    )
    .await;
    assert!(
        e.starts_with("Could not edit file: bin.dat. It is not UTF-8 text"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("bin.dat")).unwrap(),
        b"ab\xffcd"
    );
    let ro = dir.path().join("ro.txt");
    std::fs::write(&ro, "abc").unwrap();
    let mut perm = std::fs::metadata(&ro).unwrap().permissions();
    perm.set_readonly(true);
    std::fs::set_permissions(&ro, perm).unwrap();
    assert_eq!(
        err_text(
            &env,
            "edit",
            json!({"path": "ro.txt", "edits": [{"oldText": "a", "newText": "b"}]})
        )
        .await,
        "Could not edit file: ro.txt. Error code: EACCES."
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "line one\nline two\n");
}

#[tokio::test]
async fn file_tools_refuse_devices_and_fifos_at_once() {
    let (dir, env) = repo();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let started = Instant::now();
    let within = |f| tokio::time::timeout(Duration::from_secs(10), f);
    let read_zero = within(err_text(&env, "read", json!({"path": "/dev/zero"})))
        .await
        .expect("read /dev/zero must not hang");
    assert_eq!(
        read_zero,
        "Cannot read /dev/zero: it is a device, not a regular file"
    );
    let read_fifo = within(err_text(&env, "read", json!({"path": "pipe"})))
        .await
        .expect("read of a FIFO must not hang");
    assert_eq!(
        read_fifo,
        format!(
            "Cannot read {}: it is a FIFO, not a regular file",
            fifo.display()
        )
    );
    let edit_zero = within(err_text(
        &env,
        "edit",
        json!({"path": "/dev/zero", "edits": [{"oldText": "a", "newText": "b"}]}),
    ))
    .await
    .expect("edit of /dev/zero must not hang");
    assert_eq!(
        edit_zero,
        "Could not edit file: /dev/zero. It is a device, not a regular file."
    );
    let write_fifo = within(err_text(
        &env,
        "write",
        json!({"path": "pipe", "content": "x"}),
    ))
    .await
    .expect("write to a FIFO must not hang");
    assert_eq!(
        write_fifo,
        "Cannot write pipe: it is a FIFO, not a regular file"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // Regular files are untouched by the check.
    assert!(ok_text(&env, "read", json!({"path": "README.md"}))
        .await
        .contains("Readme"));
}

#[tokio::test]
async fn parallel_edits_of_one_file_all_land() {
    let (dir, env) = repo();
    let p = dir.path().join("counter.txt");
    let body: String = (0..20).map(|i| format!("item{i}\n")).collect();
    std::fs::write(&p, &body).unwrap();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let env = env.clone();
        tasks.push(tokio::spawn(async move {
            call(&env, "edit", json!({"path": "./counter.txt", "edits": [{"oldText": format!("item{i}\n"), "newText": format!("done{i}\n")}]})).await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let after = std::fs::read_to_string(&p).unwrap();
    assert_eq!(
        after,
        (0..20).map(|i| format!("done{i}\n")).collect::<String>()
    );
}

#[tokio::test]
async fn bash_reports_exit_codes_output_and_timeouts() {
    let (_dir, env) = repo();
    assert_eq!(
        ok_text(&env, "bash", json!({"command": "true"})).await,
        "(no output)"
    );
    assert_eq!(
        ok_text(&env, "bash", json!({"command": "echo out; echo err >&2"})).await,
        "out\nerr\n"
    );
    // A non-zero exit is a failed result that keeps its output and code (pi's bash returns it,
    // DECISIONS §31.14).
    let failed = call(&env, "bash", json!({"command": "echo failing; exit 3"}))
        .await
        .unwrap();
    assert!(failed.is_error);
    assert_eq!(text(&failed), "failing\n\n\nCommand exited with code 3");
    let structured = failed.structured_content.clone().unwrap();
    assert_eq!(structured["output"], "failing\n");
    assert_eq!(structured["exit_code"], 3);
    assert_eq!(structured["truncated"], false);
    assert!(structured["wall_time_seconds"].as_f64().unwrap() < 10.0);
    let killed = call(&env, "bash", json!({"command": "kill -9 $$"}))
        .await
        .unwrap();
    assert!(killed.is_error);
    assert_eq!(text(&killed), "(no output)\n\nCommand exited with code 137");
    assert_eq!(killed.structured_content.unwrap()["exit_code"], 137);
    let ok = call(&env, "bash", json!({"command": "echo fine"}))
        .await
        .unwrap();
    assert!(!ok.is_error);
    let mut structured = ok.structured_content.unwrap();
    let wall = structured["wall_time_seconds"].take().as_f64().unwrap();
    // Tenths of a second, as pi rounds it.
    assert_eq!((wall * 10.0).round() / 10.0, wall);
    assert_eq!(
        structured,
        json!({"output": "fine\n", "truncated": false, "exit_code": 0, "wall_time_seconds": null})
    );
    let started = Instant::now();
    assert_eq!(
        err_text(&env, "bash", json!({"command": "sleep 30", "timeout": 0.5})).await,
        "Command timed out after 0.5 seconds; process group ended by SIGTERM"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        err_text(&env, "bash", json!({"command": "true", "timeout": -1})).await,
        "Invalid timeout: must be a finite number of seconds"
    );
    assert_eq!(
        ok_text(&env, "bash", json!({"command": "pwd"}))
            .await
            .trim(),
        env.cwd.canonicalize().unwrap().display().to_string()
    );
}

#[tokio::test]
async fn bash_keeps_the_tail_and_saves_the_full_output() {
    let (_dir, env) = repo();
    let out = call(&env, "bash", json!({"command": "seq 1 5000"}))
        .await
        .unwrap();
    let t = text(&out);
    let details = out.details.unwrap();
    let full = details["fullOutputPath"].as_str().unwrap().to_owned();
    assert!(t.starts_with("3001\n"), "{}", &t[..20]);
    assert!(
        t.ends_with(&format!(
            "5000\n\n[Showing lines 3001-5000 of 5000. Full output: {full}]"
        )),
        "{}",
        &t[t.len() - 120..]
    );
    let saved = std::fs::read_to_string(&full).unwrap();
    assert_eq!(saved.lines().count(), 5000);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&full).unwrap().permissions().mode() & 0o777,
        0o600
    );
    std::fs::remove_file(&full).unwrap();
    // One giant line: the end of it.
    let out = call(
        &env,
        "bash",
        json!({"command": "head -c 200000 /dev/zero | tr '\\0' x"}),
    )
    .await
    .unwrap();
    let t = text(&out);
    assert!(
        t.contains("[Showing last 50.0KB of line 1 (line is 195.3KB). Full output: "),
        "{}",
        &t[t.len() - 150..]
    );
    if let Some(p) = out.details.unwrap()["fullOutputPath"].as_str() {
        let _ = std::fs::remove_file(p);
    }
}

#[tokio::test]
async fn bash_abort_kills_the_whole_process_group() {
    let (dir, env) = repo();
    let marker = dir.path().join("survivor");
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    let cmd = format!("(sleep 2; touch {}) & sleep 30", marker.display());
    let task = tokio::spawn({
        let env = env.clone();
        async move { tools::run("bash", &env, json!({"command": cmd}), c2, None).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    let res = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        res.unwrap_err().to_string(),
        "Command aborted; process group ended by SIGTERM"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!marker.exists(), "the background child outlived the abort");
}

#[tokio::test]
async fn bash_streams_partial_output() {
    let (_dir, env) = repo();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let s2 = seen.clone();
    let progress: tools::Progress = std::sync::Arc::new(move |o: ToolOutput| {
        s2.lock().unwrap().push(serde_json::to_value(&o).unwrap())
    });
    tools::run(
        "bash",
        &env,
        json!({"command": "echo first; sleep 0.4; echo second"}),
        CancellationToken::new(),
        Some(progress.clone()),
    )
    .await
    .unwrap();
    // pi's sequence: an empty partial result first, then the output so far with `details`
    // whenever the 100 ms throttle allows (DECISIONS §31.14).
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            json!({"content": []}),
            json!({"content": [{"type": "text", "text": "first\n"}], "details": {}}),
            json!({"content": [{"type": "text", "text": "first\nsecond\n"}], "details": {}}),
        ]
    );
    // Output held back by the throttle still arrives before the result.
    seen.lock().unwrap().clear();
    let out = tools::run(
        "bash",
        &env,
        json!({"command": "echo a; echo b >&2"}),
        CancellationToken::new(),
        Some(progress),
    )
    .await
    .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(text(&out).len(), 4);
    assert_eq!(
        seen.last().unwrap()["content"][0]["text"],
        text(&out).as_str(),
        "{seen:?}"
    );
}

#[tokio::test]
async fn grep_honours_gitignore_and_shows_hidden_files() {
    let (_dir, env) = repo();
    let t = ok_text(&env, "grep", json!({"pattern": "needle"})).await;
    assert_eq!(t, ".hidden:1: needle hidden\nsrc/main.rs:2:     println!(\"needle\");\nsrc/nested/lib.rs:1: // needle here");
    let t = ok_text(
        &env,
        "grep",
        json!({"pattern": "NEEDLE", "ignoreCase": true, "glob": "*.rs", "limit": 1}),
    )
    .await;
    assert_eq!(t, "src/main.rs:2:     println!(\"needle\");\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]");
    let t = ok_text(
        &env,
        "grep",
        json!({"pattern": "println", "context": 1, "path": "src/main.rs"}),
    )
    .await;
    assert_eq!(
        t,
        "main.rs-1- fn main() {\nmain.rs:2:     println!(\"needle\");\nmain.rs-3- }"
    );
    assert_eq!(
        ok_text(&env, "grep", json!({"pattern": "(", "literal": true}))
            .await
            .lines()
            .count(),
        3
    );
    assert_eq!(
        ok_text(&env, "grep", json!({"pattern": "zzz_absent"})).await,
        "No matches found"
    );
    let e = err_text(&env, "grep", json!({"pattern": "x", "path": "nope"})).await;
    assert_eq!(
        e,
        format!("Path not found: {}", env.cwd.join("nope").display())
    );
}

#[tokio::test]
async fn grep_cuts_long_lines_and_skips_binary_files() {
    let (dir, env) = repo();
    std::fs::write(
        dir.path().join("long.txt"),
        format!("needle {}\n", "x".repeat(900)),
    )
    .unwrap();
    std::fs::write(dir.path().join("bin.dat"), b"needle\0\x01\x02").unwrap();
    std::fs::write(dir.path().join("latin.txt"), b"needle caf\xe9\n").unwrap();
    let out = call(&env, "grep", json!({"pattern": "needle", "path": "."}))
        .await
        .unwrap();
    let t = text(&out);
    assert!(!t.contains("bin.dat"), "{t}");
    assert!(t.contains("latin.txt:1: needle caf\u{FFFD}"), "{t}");
    assert!(t.contains("... [truncated]"));
    assert!(t.ends_with("[Some lines truncated to 500 chars. Use read tool to see full lines]"));
    assert_eq!(out.details.unwrap()["linesTruncated"], true);
}

#[tokio::test]
async fn find_matches_names_and_paths_like_fd() {
    let (_dir, env) = repo();
    assert_eq!(
        ok_text(&env, "find", json!({"pattern": "*.rs"})).await,
        "src/main.rs\nsrc/nested/lib.rs"
    );
    assert_eq!(
        ok_text(&env, "find", json!({"pattern": "src/*.rs"})).await,
        "src/main.rs"
    );
    assert_eq!(
        ok_text(&env, "find", json!({"pattern": "./src/**/*.rs"})).await,
        "src/main.rs\nsrc/nested/lib.rs"
    );
    assert_eq!(
        ok_text(&env, "find", json!({"pattern": "readme*"})).await,
        "README.md"
    );
    assert_eq!(
        ok_text(&env, "find", json!({"pattern": "Readme*"})).await,
        "No files found matching pattern"
    );
    assert_eq!(
        ok_text(&env, "find", json!({"pattern": "*", "limit": 2})).await,
        ".gitignore\n.hidden\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    );
}

#[tokio::test]
async fn ls_sorts_case_insensitively_and_marks_directories() {
    let (dir, env) = repo();
    assert_eq!(
        ok_text(&env, "ls", json!({})).await,
        ".git/\n.gitignore\n.hidden\ndebug.log\nREADME.md\nsrc/\ntarget/"
    );
    assert_eq!(
        ok_text(&env, "ls", json!({"limit": 3})).await,
        ".git/\n.gitignore\n.hidden\n\n[3 entries limit reached. Use limit=6 for more]"
    );
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    assert_eq!(
        ok_text(&env, "ls", json!({"path": "empty"})).await,
        "(empty directory)"
    );
    assert_eq!(
        err_text(&env, "ls", json!({"path": "README.md"})).await,
        format!(
            "Not a directory: {}",
            dir.path().join("README.md").display()
        )
    );
    assert!(err_text(&env, "ls", json!({"path": "nope"}))
        .await
        .starts_with("Path not found: "));
}

#[test]
fn paths_resolve_against_the_session_cwd() {
    let cwd = Path::new("/w/p");
    assert_eq!(
        tools::path::resolve("@a\u{202F}b", cwd),
        Path::new("/w/p/a b")
    );
}
