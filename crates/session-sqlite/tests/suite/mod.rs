//! Shared helpers; each topic lives in its own module.

mod basics;
mod concurrency;
mod conformance;
mod crash;
mod faults;
mod fidelity;
mod forks;
mod migration;

use std::path::Path;

use arbor_ai::json::Nullable;
use arbor_ai::types::{AssistantMessage, Content, Cost, Message, Usage, UserMessage};
use arbor_session::{
    CompactionEntry, CreateOptions, CustomEntry, EntryDraft, EntryKind, LabelEntry,
    SessionInfoEntry, SessionRepository,
};
use arbor_session_sqlite::{SqliteOptions, SqliteRepository, SqliteStorage};
use tempfile::TempDir;

pub use arbor_test_support::fixtures::testdata_dir;

/// A fresh database in a temporary directory (kept alive by the returned guard).
pub async fn repo() -> (TempDir, SqliteRepository) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = SqliteRepository::open(dir.path().join("sessions.db"))
        .await
        .expect("open repo");
    (dir, repo)
}

pub async fn repo_with(options: SqliteOptions) -> (TempDir, SqliteRepository) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = SqliteRepository::open_with(dir.path().join("sessions.db"), options)
        .await
        .expect("open repo");
    (dir, repo)
}

pub async fn session(repo: &SqliteRepository) -> SqliteStorage {
    repo.create(CreateOptions::new("/work/project"))
        .await
        .expect("create session")
}

/// A second, raw connection to the same file (another process's view).
pub fn raw(path: &Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(path).expect("raw open");
    c.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    c
}

pub fn user(text: &str) -> EntryDraft {
    EntryDraft::new(EntryKind::message(Message::User(UserMessage {
        content: Content::text(text),
        timestamp: 1.into(),
        extra: Default::default(),
    })))
}

pub fn assistant(
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
) -> EntryDraft {
    EntryDraft::new(EntryKind::message(Message::Assistant(AssistantMessage {
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        usage: (Usage {
            input,
            output,
            cache_read,
            cache_write,
            cost: Cost {
                total: cost.into(),
                ..Default::default()
            },
            ..Default::default()
        })
        .into(),
        timestamp: 2.into(),
        ..Default::default()
    })))
}

pub fn custom(kind: &str, data: serde_json::Value) -> EntryDraft {
    EntryDraft::new(EntryKind::Custom(CustomEntry {
        custom_type: kind.into(),
        data: Some(data),
        extra: Default::default(),
    }))
}

pub fn label(target: &str, text: Option<&str>) -> EntryDraft {
    EntryDraft::new(EntryKind::Label(LabelEntry {
        target_id: target.into(),
        label: text.map(str::to_owned).into(),
        extra: Default::default(),
    }))
}

pub fn name(text: &str) -> EntryDraft {
    EntryDraft::new(EntryKind::SessionInfo(SessionInfoEntry {
        name: Nullable::Value(text.into()),
        extra: Default::default(),
    }))
}

pub fn compaction(first_kept: Option<&str>, retained_tail: bool) -> EntryDraft {
    EntryDraft::new(EntryKind::Compaction(Box::new(CompactionEntry {
        summary: "summary".into(),
        first_kept_entry_id: first_kept.map(str::to_owned),
        tokens_before: 100,
        retained_tail: retained_tail.then(Vec::new),
        ..Default::default()
    })))
}

pub fn ids(entries: &[arbor_session::SessionEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.id.as_str()).collect()
}
