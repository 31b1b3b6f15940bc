//! `arbor session import/export` and `--store` against a PostgreSQL server
//! (`ARBOR_TEST_POSTGRES_URL`; skipped with a visible line when unset, failing when
//! `ARBOR_TEST_POSTGRES_REQUIRE` is set). Each test uses a scratch schema
//! (`ARBOR_POSTGRES_SCHEMA`).

use arbor_session_postgres::scratch::ScratchSchema;

use super::{arbor, fixture_files, Run};

pub(super) fn server() -> Option<String> {
    match std::env::var("ARBOR_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var_os("ARBOR_TEST_POSTGRES_REQUIRE").is_none(),
                "ARBOR_TEST_POSTGRES_URL is not set but ARBOR_TEST_POSTGRES_REQUIRE is"
            );
            eprintln!("SKIPPED postgres CLI tests: ARBOR_TEST_POSTGRES_URL is not set");
            None
        }
    }
}

fn run(home: &std::path::Path, schema: &ScratchSchema, args: &[&str]) -> Run {
    arbor(home)
        .env("ARBOR_POSTGRES_SCHEMA", &schema.name)
        .args(args)
        .output()
        .expect("running arbor")
        .into()
}

#[test]
fn import_export_and_store_commands_round_trip() {
    let Some(url) = server() else { return };
    let schema = ScratchSchema::new(&url);
    let home = tempfile::tempdir().unwrap();
    let file = fixture_files("pi-sessions")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("v3-generated-branches"))
        .unwrap();
    let f = file.to_str().unwrap();
    let imported = run(
        home.path(),
        &schema,
        &["session", "import", "--to", &url, f],
    );
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    let id = imported.stdout.split('\t').next().unwrap().to_owned();
    assert!(
        imported.stdout.ends_with(&format!("\t{f}\n")),
        "{}",
        imported.stdout
    );

    let out = home.path().join("out.jsonl");
    let o = out.to_str().unwrap();
    let exported = run(
        home.path(),
        &schema,
        &["session", "export", "--from", &url, &id, o],
    );
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&file).unwrap());

    let from_store = run(
        home.path(),
        &schema,
        &["session", "context", "--json", "--store", &url, &id],
    );
    let from_file = run(home.path(), &schema, &["session", "context", "--json", f]);
    assert_eq!(from_store.code, 0, "{}", from_store.stderr);
    assert_eq!(from_store.stdout, from_file.stdout, "same projection");

    let listed = run(
        home.path(),
        &schema,
        &["session", "list", "--all", "--store", &url],
    );
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains(&id), "{}", listed.stdout);

    let forked = run(
        home.path(),
        &schema,
        &["session", "fork", "--store", &url, &id],
    );
    assert_eq!(forked.code, 0, "{}", forked.stderr);
    assert!(forked.stdout.contains('#'), "{}", forked.stdout);
}

#[test]
fn store_errors_never_show_the_password() {
    let home = tempfile::tempdir().unwrap();
    let url = "postgres://bob:pa55word-xyz@127.0.0.1:1/agents";
    let out: Run = arbor(home.path())
        .args(["session", "list", "--store", url])
        .output()
        .unwrap()
        .into();
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("postgres://bob@127.0.0.1:1/agents"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("pa55word"), "{}", out.stderr);
}

/// `arbor ARGS` in `cwd` (async, so the mock model server keeps serving meanwhile).
async fn agent_run(
    home: &std::path::Path,
    cwd: &std::path::Path,
    schema: &ScratchSchema,
    args: &[&str],
) -> Run {
    let mut cmd = arbor(home);
    cmd.current_dir(cwd)
        .env("ARBOR_POSTGRES_SCHEMA", &schema.name)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ARBOR_SESSION_DIR")
        .stdin(std::process::Stdio::null())
        .args(args);
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::from(cmd).output(),
    )
    .await
    .expect("arbor finished in time")
    .expect("running arbor");
    out.into()
}

/// A home whose models.json points at the mock server, and a project folder.
fn agent_lab(server: &arbor_test_support::MockServer) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let models = serde_json::json!({"providers": {
        "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions",
                 "apiKey": "test-key",
                 "models": [{"id": "mock-model", "contextWindow": 32000, "maxTokens": 4096}]}
    }});
    std::fs::write(dir.path().join("models.json"), models.to_string()).unwrap();
    (dir, project)
}

fn llm_roles(projected: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(projected).unwrap();
    v["llm"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

fn jsonl_files(home: &std::path::Path) -> usize {
    walk_count(&home.join("sessions"))
}

fn walk_count(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                walk_count(&p)
            } else {
                usize::from(p.extension().is_some_and(|x| x == "jsonl"))
            }
        })
        .sum()
}

#[tokio::test]
async fn print_mode_with_session_store_writes_and_continues_in_postgres() {
    let Some(url) = server() else { return };
    let schema = ScratchSchema::new(&url);
    let mock = arbor_test_support::MockServer::start().await.unwrap();
    let (home, project) = agent_lab(&mock);
    let h = home.path();
    mock.push(arbor_test_support::scripts::openai_text("first answer"));
    let first = agent_run(
        h,
        &project,
        &schema,
        &[
            "-p",
            "--session-store",
            &url,
            "--model",
            "mock/mock-model",
            "first",
        ],
    )
    .await;
    assert_eq!(
        (first.code, first.stdout.as_str()),
        (0, "first answer\n"),
        "{}",
        first.stderr
    );

    // `-c` finds the newest session of this cwd in the store and sends the earlier exchange.
    mock.push(arbor_test_support::scripts::openai_text("second answer"));
    let second = agent_run(
        h,
        &project,
        &schema,
        &["-c", "-p", "--session-store", &url, "second"],
    )
    .await;
    assert_eq!(
        (second.code, second.stdout.as_str()),
        (0, "second answer\n"),
        "{}",
        second.stderr
    );
    let roles: Vec<String> = mock.requests()[1].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(jsonl_files(h), 0, "no session file is written with a store");

    let listed = run(h, &schema, &["session", "list", "--all", "--store", &url]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let ids: Vec<&str> = listed
        .stdout
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.len() == 36 && w.contains('-'))
        })
        .collect();
    assert_eq!(ids.len(), 1, "one session in the store: {}", listed.stdout);
    let ctx = run(
        h,
        &schema,
        &["session", "context", "--json", "--store", &url, ids[0]],
    );
    assert_eq!(ctx.code, 0, "{}", ctx.stderr);
    assert_eq!(
        llm_roles(&ctx.stdout),
        ["user", "assistant", "user", "assistant"]
    );
    assert!(ctx.stdout.contains("second answer"), "{}", ctx.stdout);

    // Exported, the store's session is a pi v3 file with the same projection.
    let out = h.join("exported.jsonl");
    let exported = run(
        h,
        &schema,
        &[
            "session",
            "export",
            "--from",
            &url,
            ids[0],
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let from_file = run(
        h,
        &schema,
        &["session", "context", "--json", out.to_str().unwrap()],
    );
    assert_eq!(from_file.stdout, ctx.stdout);
}

#[tokio::test]
async fn session_store_setting_is_used_and_session_id_opens_in_the_store() {
    let Some(url) = server() else { return };
    let schema = ScratchSchema::new(&url);
    let mock = arbor_test_support::MockServer::start().await.unwrap();
    let (home, project) = agent_lab(&mock);
    let h = home.path();
    std::fs::write(
        h.join("settings.json"),
        serde_json::json!({"sessionStore": url, "defaultProvider": "mock",
                           "defaultModel": "mock-model"})
        .to_string(),
    )
    .unwrap();
    let id = "0190f5b0-0000-7000-8000-00000000abcd";
    mock.push(arbor_test_support::scripts::openai_text("one"));
    let a = agent_run(h, &project, &schema, &["-p", "--session-id", id, "hello"]).await;
    assert_eq!((a.code, a.stdout.as_str()), (0, "one\n"), "{}", a.stderr);
    assert!(
        a.stderr.contains("creating a new session with that id"),
        "{}",
        a.stderr
    );
    mock.push(arbor_test_support::scripts::openai_text("two"));
    let b = agent_run(h, &project, &schema, &["-p", "--session", id, "again"]).await;
    assert_eq!((b.code, b.stdout.as_str()), (0, "two\n"), "{}", b.stderr);
    assert_eq!(jsonl_files(h), 0);
    let ctx = run(
        h,
        &schema,
        &["session", "context", "--json", "--store", &url, id],
    );
    assert_eq!(ctx.code, 0, "{}", ctx.stderr);
    assert_eq!(
        llm_roles(&ctx.stdout),
        ["user", "assistant", "user", "assistant"]
    );

    // An explicit session folder wins over the setting.
    let dir = h.join("files");
    mock.push(arbor_test_support::scripts::openai_text("three"));
    let c = agent_run(
        h,
        &project,
        &schema,
        &["-p", "--session-dir", dir.to_str().unwrap(), "in a file"],
    )
    .await;
    assert_eq!((c.code, c.stdout.as_str()), (0, "three\n"), "{}", c.stderr);
    assert_eq!(walk_count(&dir), 1);

    // A bad store is refused before any model call, without the password.
    let bad = agent_run(
        h,
        &project,
        &schema,
        &[
            "-p",
            "--session-store",
            "postgres://eve:s3cr3t-pw@127.0.0.1:1/x",
            "hi",
        ],
    )
    .await;
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("postgres://eve@127.0.0.1:1/x"),
        "{}",
        bad.stderr
    );
    assert!(!bad.stderr.contains("s3cr3t"), "{}", bad.stderr);
    assert_eq!(
        mock.requests().len(),
        3,
        "the bad store failed before any model call"
    );
}

#[test]
fn session_search_with_store_finds_the_stored_sessions() {
    let Some(url) = server() else { return };
    let schema = ScratchSchema::new(&url);
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("walrus.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"type":"session","version":3,"id":"019a0000-0000-7000-8000-0000000000a1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/work/zoo"}"#,
            "\n",
            r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-06-20T15:01:00.000Z","message":{"role":"user","content":"the walrus migration plan","timestamp":1}}"#,
            "\n",
            r#"{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-06-20T15:02:00.000Z","message":{"role":"user","content":"unrelated","timestamp":1}}"#,
            "\n"
        ),
    )
    .unwrap();
    let imported = run(
        home.path(),
        &schema,
        &["session", "import", "--to", &url, file.to_str().unwrap()],
    );
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    let id = imported.stdout.split('\t').next().unwrap().to_owned();
    std::fs::remove_file(&file).unwrap();
    for round in ["built", "unchanged"] {
        let found = run(
            home.path(),
            &schema,
            &[
                "session",
                "search",
                "--store",
                &url,
                "--json",
                "walrus migration",
            ],
        );
        assert_eq!(found.code, 0, "{round}: {}", found.stderr);
        let hits: serde_json::Value = serde_json::from_str(&found.stdout).unwrap();
        let hits = hits.as_array().unwrap();
        assert_eq!(hits.len(), 1, "{round}: {hits:?}");
        assert_eq!(hits[0]["sessionId"], id.as_str());
        assert_eq!(hits[0]["entryId"], "u1");
        assert_eq!(hits[0]["branch"], "active");
        assert_eq!(hits[0]["snippet"], "the walrus migration plan");
        let store = hits[0]["store"].as_str().unwrap();
        assert!(store.contains(&schema.name), "{store}");
        assert!(
            hits[0]["path"]
                .as_str()
                .unwrap()
                .ends_with(&format!("#{id}")),
            "{hits:?}"
        );
    }
    // The text form marks a store's hit (DECISIONS §34.21).
    let text = run(
        home.path(),
        &schema,
        &["session", "search", "--store", &url, "walrus migration"],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    let heading = text.stdout.lines().next().unwrap_or_default();
    assert!(
        heading.ends_with("entry u1  user  [store]"),
        "{}",
        text.stdout
    );
    // Without the store, its rows kept in the index are not shown (DECISIONS §34.20).
    let files_only = run(
        home.path(),
        &schema,
        &["session", "search", "--json", "walrus migration"],
    );
    assert_eq!(files_only.code, 0, "{}", files_only.stderr);
    assert_eq!(files_only.stdout, "[]\n");
}
