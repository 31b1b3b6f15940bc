//! Search over the PostgreSQL store the agent runs on (DECISIONS §34.9, §34.20–§34.22): RPC
//! `search` with `--session-store` finds hits in the store and in the session files, and
//! `switch_session` opens a store hit's session; a store that cannot be reached leaves the
//! files' hits with a warning naming it. The store tests need `ARBOR_TEST_POSTGRES_URL`
//! (skipped with a visible line without it, failing when `ARBOR_TEST_POSTGRES_REQUIRE` is set).

use std::path::Path;

use arbor_session_postgres::scratch::ScratchSchema;
use arbor_session_postgres::PostgresRepository;
use serde_json::{json, Value};

use super::rpc_replay::Rpc;
use super::session_search::{session, user};

/// A session line: a user message `id` under `parent` at minute `minute`.
pub(super) fn user_line(id: &str, parent: Option<&str>, minute: u32, text: &str) -> String {
    json!({"type": "message", "id": id, "parentId": parent,
        "timestamp": format!("2026-06-20T15:{minute:02}:00.000Z"),
        "message": {"role": "user", "content": text, "timestamp": 1}})
    .to_string()
}

/// Imports a session of `entries` (lines after the header) made in `cwd` into the store's
/// scratch schema; returns its id.
pub(super) async fn import_session(
    schema: &ScratchSchema,
    dir: &Path,
    id: &str,
    cwd: &str,
    entries: &[String],
) -> String {
    let header = json!({"type": "session", "version": 3, "id": id,
        "timestamp": "2026-06-20T15:00:00.000Z", "cwd": cwd})
    .to_string();
    let file = dir.join(format!("{id}.jsonl"));
    let mut text = header + "\n";
    for line in entries {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&file, text).unwrap();
    let repo = PostgresRepository::connect_with(&schema.url, schema.options())
        .await
        .unwrap();
    let imported = repo.import_jsonl(&file).await.unwrap();
    std::fs::remove_file(&file).unwrap();
    imported.id
}

#[tokio::test]
async fn rpc_search_with_a_session_store_finds_store_and_file_hits_and_opens_a_store_hit() {
    let Some(url) = super::postgres::server() else {
        return;
    };
    let schema = ScratchSchema::new(&url);
    let server = arbor_test_support::MockServer::start().await.unwrap();
    let lab = super::agent_e2e::lab(&server);
    // A session file of this project (switching to it needs its folder to exist).
    session(
        &lab.home,
        lab.repo.to_str().unwrap(),
        "019a0000-0000-7000-8000-0000000000f1",
        &[("f1", None, user("the flamingo file note"))],
    );
    // In the store: the flamingo idea was tried (s2) and left for s3.
    let id = import_session(
        &schema,
        &lab.home,
        "019a0000-0000-7000-8000-0000000000f2",
        "/work/zoo",
        &[
            user_line("s1", None, 1, "plan the cache"),
            user_line("s2", Some("s1"), 2, "the flamingo store idea"),
            user_line("s3", Some("s1"), 3, "the plain cache"),
        ],
    )
    .await;
    let mut rpc = Rpc::start_with_env(
        &lab,
        &["--session-store", &url],
        &[("ARBOR_POSTGRES_SCHEMA", &schema.name)],
    );
    let v = rpc
        .call(r#"{"type":"search","id":"s1","query":"flamingo"}"#)
        .await;
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["data"]["warnings"], json!([]), "{v}");
    let hits = v["data"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{v}");
    let (stored, filed): (Vec<&Value>, Vec<&Value>) =
        hits.iter().partition(|h| h.get("store").is_some());
    let (stored, filed) = (stored[0], filed[0]);
    assert_eq!(stored["sessionId"], id.as_str(), "{v}");
    assert_eq!(stored["entryId"], "s2");
    assert_eq!(stored["branch"], "abandoned");
    assert_eq!(stored["snippet"], "the flamingo store idea");
    let store = stored["store"].as_str().unwrap();
    assert!(
        store.ends_with(&format!("(schema {})", schema.name)),
        "{store}"
    );
    let location = stored["path"].as_str().unwrap();
    assert!(location.ends_with(&format!("#{id}")), "{location}");
    assert!(!location.contains("password"), "{location}");
    assert_eq!(filed["entryId"], "f1");
    assert_eq!(filed["branch"], "active");
    assert_eq!(filed["snippet"], "the flamingo file note");
    assert!(filed["path"].as_str().unwrap().ends_with(".jsonl"), "{v}");

    // The filters reach the store's hits too.
    let active = rpc
        .call(r#"{"type":"search","id":"s2","query":"flamingo","branch":"active"}"#)
        .await;
    let active = active["data"]["hits"].as_array().unwrap();
    assert_eq!(active.len(), 1, "{active:?}");
    assert_eq!(active[0]["entryId"], "f1");

    // A store hit's location opens its session (DECISIONS §34.22)…
    let switched = rpc
        .call(&json!({"type": "switch_session", "id": "w1", "sessionPath": location}).to_string())
        .await;
    assert_eq!(switched["success"], true, "{switched}");
    let state = rpc.call(r#"{"type":"get_state","id":"g1"}"#).await;
    assert_eq!(state["data"]["sessionId"], id.as_str(), "{state}");
    assert_eq!(state["data"]["sessionFile"], Value::Null, "{state}");
    let entries = rpc.call(r#"{"type":"get_entries","id":"g2"}"#).await;
    assert_eq!(entries["data"]["leafId"], "s3", "{entries}");
    // … its id names it too (already open: nothing to switch) …
    let again = rpc
        .call(&json!({"type": "switch_session", "id": "w2", "sessionPath": id}).to_string())
        .await;
    assert_eq!(again["success"], true, "{again}");
    // … a file hit's path opens the file, store or not …
    let file = filed["path"].as_str().unwrap();
    let to_file = rpc
        .call(&json!({"type": "switch_session", "id": "w3", "sessionPath": file}).to_string())
        .await;
    assert_eq!(to_file["success"], true, "{to_file}");
    let state = rpc.call(r#"{"type":"get_state","id":"g3"}"#).await;
    assert_eq!(state["data"]["sessionFile"], file, "{state}");
    // … and a name that is neither is an error naming it.
    let unknown = rpc
        .call(r#"{"type":"switch_session","id":"w4","sessionPath":"no-such-session"}"#)
        .await;
    assert_eq!(unknown["success"], false, "{unknown}");
    let error = unknown["error"].as_str().unwrap();
    assert!(error.contains("no-such-session"), "{error}");
    rpc.finish().await;
}

#[test]
fn an_unreachable_store_leaves_the_file_hits_with_a_warning_naming_it() {
    let home = tempfile::tempdir().unwrap();
    session(
        home.path(),
        "/work/project",
        "019a0000-0000-7000-8000-0000000000f3",
        &[("a1", None, user("the walrus plan"))],
    );
    let out = super::run_in(
        home.path(),
        &[
            "session",
            "search",
            "--store",
            "postgres://eve:s3cr3t-pw@127.0.0.1:1/x",
            "walrus",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!(out.stdout, @r"
    2026-06-20 15:00  active     019a0000  entry a1  user
        the walrus plan
    ");
    assert!(
        out.stderr
            .starts_with("arbor: warning: the session store (schema "),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("postgres://eve@127.0.0.1:1/x"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .ends_with("; the hits are from session files only\n"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("s3cr3t"), "{}", out.stderr);
}

/// A TCP port in front of the test server's Unix socket whose door can be closed: new
/// connections are refused from then on while those already open (the agent's own) carry on,
/// so the store becomes unreachable in the middle of a run.
struct Doorway {
    /// The store's connection string through the door (no password).
    url: String,
    accept: tokio::task::JoinHandle<()>,
}

impl Doorway {
    /// `None` (with a line saying so) when the test server is not on a Unix socket
    /// (`postgresql:///DB?host=/DIR&user=USER`, what `.ci/postgres.sh` gives).
    async fn open(url: &str) -> Option<Doorway> {
        let socket = unix_socket_of(url);
        let Some((socket, user, db)) = socket else {
            eprintln!("SKIPPED unreachable-store RPC test: {url} is not a Unix-socket URL");
            return None;
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accept = tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let socket = socket.clone();
                tokio::spawn(async move {
                    if let Ok(mut unix) = tokio::net::UnixStream::connect(&socket).await {
                        let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                    }
                });
            }
        });
        Some(Doorway {
            url: format!("postgres://{user}@127.0.0.1:{port}/{db}"),
            accept,
        })
    }

    /// Stops accepting: the port refuses every new connection.
    async fn close(self) {
        self.accept.abort();
        let _ = self.accept.await;
    }
}

/// The socket file, user and database of `postgresql:///DB?host=/DIR&user=USER[&port=N]`.
fn unix_socket_of(url: &str) -> Option<(std::path::PathBuf, String, String)> {
    let rest = url
        .strip_prefix("postgresql:///")
        .or_else(|| url.strip_prefix("postgres:///"))?;
    let (db, query) = rest.split_once('?')?;
    let param = |name: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .map(str::to_owned)
    };
    let dir = param("host").filter(|h| h.starts_with('/'))?;
    let port = param("port").unwrap_or_else(|| "5432".into());
    let socket = Path::new(&dir).join(format!(".s.PGSQL.{port}"));
    Some((socket, param("user")?, db.to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_search_when_the_store_becomes_unreachable_answers_the_file_hits_and_a_warning() {
    let Some(url) = super::postgres::server() else {
        return;
    };
    let Some(door) = Doorway::open(&url).await else {
        return;
    };
    let schema = ScratchSchema::new(&url);
    let server = arbor_test_support::MockServer::start().await.unwrap();
    let lab = super::agent_e2e::lab(&server);
    session(
        &lab.home,
        lab.repo.to_str().unwrap(),
        "019a0000-0000-7000-8000-0000000000f4",
        &[("f1", None, user("the heron file note"))],
    );
    import_session(
        &schema,
        &lab.home,
        "019a0000-0000-7000-8000-0000000000f5",
        "/work/zoo",
        &[user_line("s1", None, 1, "the heron store note")],
    )
    .await;
    let store = door.url.clone();
    let mut rpc = Rpc::start_with_env(
        &lab,
        &["--session-store", &store],
        &[("ARBOR_POSTGRES_SCHEMA", &schema.name)],
    );
    let both = rpc
        .call(r#"{"type":"search","id":"s1","query":"heron"}"#)
        .await;
    assert_eq!(both["data"]["hits"].as_array().unwrap().len(), 2, "{both}");
    door.close().await;
    let files = rpc
        .call(r#"{"type":"search","id":"s2","query":"heron"}"#)
        .await;
    assert_eq!(files["success"], true, "{files}");
    let hits = files["data"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{files}");
    assert_eq!(hits[0]["entryId"], "f1");
    assert_eq!(hits[0].get("store"), None, "{files}");
    let warnings = files["data"]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{files}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.starts_with(&format!(
            "the session store (schema {}) was not searched: ",
            schema.name
        )),
        "{warning}"
    );
    assert!(warning.contains(&store), "{warning}");
    assert!(
        warning.ends_with("; the hits are from session files only"),
        "{warning}"
    );
    rpc.finish().await;
}
