//! Shared helpers: the server, a fresh schema per test, entry drafts.

mod basics;
mod cluster;
mod concurrency;
mod conformance;
mod faults;
mod migration;
mod restart;
mod tls;
mod transfer;

use arbor_ai::types::{Content, Message, UserMessage};
use arbor_session::{CreateOptions, CustomEntry, EntryDraft, EntryKind, SessionRepository};
use arbor_session_postgres::{PostgresOptions, PostgresRepository, PostgresStorage};

/// The test server's URL, or `None` after printing a visible skip line. With
/// `ARBOR_TEST_POSTGRES_REQUIRE` set a missing URL panics (CI must not skip silently).
pub fn url(test: &str) -> Option<String> {
    match std::env::var("ARBOR_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            if std::env::var_os("ARBOR_TEST_POSTGRES_REQUIRE").is_some() {
                panic!(
                    "{test}: ARBOR_TEST_POSTGRES_URL is not set but ARBOR_TEST_POSTGRES_REQUIRE is"
                );
            }
            eprintln!(
                "SKIPPED {test}: ARBOR_TEST_POSTGRES_URL is not set (start a server with `eval \"$(.ci/postgres.sh start)\"`)"
            );
            None
        }
    }
}

/// `let url = pg!();` — the server URL, or return from the test after a skip line.
#[macro_export]
macro_rules! pg {
    () => {
        match $crate::suite::url(module_path!()) {
            Some(u) => u,
            None => return,
        }
    };
}

/// A schema of its own for one test, dropped (with everything in it) when this is dropped.
pub use arbor_session_postgres::scratch::ScratchSchema as Schema;

/// A plain connection (another client's view), with `search_path` unset.
pub async fn admin(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// A connection whose `search_path` is the test's schema.
pub async fn raw(schema: &Schema) -> tokio_postgres::Client {
    let c = admin(&schema.url).await.expect("admin connection");
    c.batch_execute(&format!("SET search_path = {}", schema.name))
        .await
        .unwrap();
    c
}

pub async fn repo(url: &str) -> (Schema, PostgresRepository) {
    let schema = Schema::new(url);
    let repo = PostgresRepository::connect_with(url, schema.options())
        .await
        .expect("connect");
    (schema, repo)
}

pub async fn repo_with(
    url: &str,
    f: impl FnOnce(&mut PostgresOptions),
) -> (Schema, PostgresRepository) {
    let schema = Schema::new(url);
    let mut o = schema.options();
    f(&mut o);
    let repo = PostgresRepository::connect_with(url, o)
        .await
        .expect("connect");
    (schema, repo)
}

pub async fn session(repo: &PostgresRepository) -> PostgresStorage {
    repo.create(CreateOptions::new("/work/project"))
        .await
        .expect("create session")
}

pub fn user(text: &str) -> EntryDraft {
    EntryDraft::new(EntryKind::message(Message::User(UserMessage {
        content: Content::text(text),
        timestamp: 1.into(),
        extra: Default::default(),
    })))
}

pub fn custom(kind: &str, data: serde_json::Value) -> EntryDraft {
    EntryDraft::new(EntryKind::Custom(CustomEntry {
        custom_type: kind.into(),
        data: Some(data),
        extra: Default::default(),
    }))
}

pub fn name_draft(text: &str) -> EntryDraft {
    EntryDraft::new(EntryKind::SessionInfo(arbor_session::SessionInfoEntry {
        name: arbor_ai::json::Nullable::Value(text.into()),
        extra: Default::default(),
    }))
}

pub fn label_draft(target: &str, text: &str) -> EntryDraft {
    EntryDraft::new(EntryKind::Label(arbor_session::LabelEntry {
        target_id: target.into(),
        label: arbor_ai::json::Nullable::Value(text.into()),
        extra: Default::default(),
    }))
}
