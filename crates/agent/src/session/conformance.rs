//! The storage conformance suite: every backend must pass these cases.
//!
//! Reusable by third-party backends: give [`run_all`] (or [`run_case`]) a factory that builds a
//! fresh, empty repository per case, or expand [`crate::session_conformance_tests!`] inside a
//! test module to get one named `#[tokio::test]` per case.
//!
//! ```ignore
//! arbor_agent::session_conformance_tests!(|| async {
//!     let dir = tempfile::tempdir().unwrap();
//!     let repo = MyRepository::open(dir.path()).unwrap();
//!     arbor_agent::session::conformance::Fixture::new(repo, dir)
//! });
//! ```
//!
//! Cases use only the public trait surface. They drop a storage handle before reopening the same
//! session, because file backends allow one writer per session.

use super::entry::{EntryKind, LabelEntry, LeafEntry, SessionEntry, SessionInfoEntry};
use super::storage::{
    CreateOptions, EntryDraft, ForkOptions, ForkPosition, SessionRepository, SessionStorage,
};
use crate::error::SessionError;
use crate::message::AgentMessage;
use arbor_ai::json::Nullable;
use serde_json::{json, Map, Value};
use std::any::Any;
use std::future::Future;
use std::time::Instant;

/// One fresh repository plus whatever must outlive it (a temporary directory, a database file).
pub struct Fixture<R> {
    pub repo: R,
    _guard: Box<dyn Any + Send>,
}

impl<R> Fixture<R> {
    pub fn new(repo: R, guard: impl Any + Send) -> Self {
        Fixture {
            repo,
            _guard: Box::new(guard),
        }
    }

    /// A fixture with nothing to keep alive (in-memory backends).
    pub fn bare(repo: R) -> Self {
        Self::new(repo, ())
    }
}

/// What one case returned: `Err` carries a readable failure.
pub type CaseResult = Result<(), String>;

/// The outcome of one case, for tables and reports.
#[derive(Debug, Clone)]
pub struct CaseOutcome {
    pub group: &'static str,
    pub name: &'static str,
    pub result: CaseResult,
    pub millis: u128,
}

/// Runs one case by name against a fresh fixture. Unknown names are an `Err`.
pub async fn run_case<R, F, Fut>(factory: &F, name: &str) -> CaseResult
where
    R: SessionRepository,
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture<R>>,
{
    let fixture = factory().await;
    match dispatch(&fixture.repo, name).await {
        Some(result) => result,
        None => Err(format!("no conformance case named {name}")),
    }
}

/// Runs every case, each against its own fresh fixture, in suite order.
pub async fn run_all<R, F, Fut>(factory: F) -> Vec<CaseOutcome>
where
    R: SessionRepository,
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture<R>>,
{
    let mut out = Vec::with_capacity(CASES.len());
    for (group, name) in CASES {
        let started = Instant::now();
        let result = run_case(&factory, name).await;
        out.push(CaseOutcome {
            group,
            name,
            result,
            millis: started.elapsed().as_millis(),
        });
    }
    out
}

/// Asserts one case (for the generated `#[tokio::test]`s).
pub async fn assert_case<R, F, Fut>(factory: F, name: &str)
where
    R: SessionRepository,
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture<R>>,
{
    if let Err(e) = run_case(&factory, name).await {
        panic!("conformance case {name} failed: {e}");
    }
}

/// The case list, shared by the dispatcher and the test macro. Invokes `$cb! { $($args)* ; list }`.
#[doc(hidden)]
#[macro_export]
macro_rules! __session_conformance_list {
    (($($cb:tt)*) ($($args:tt)*)) => {
        $($cb)* ! { $($args)* ;
            entries_and_leaf: [
                append_assigns_parent_and_moves_leaf,
                append_keeps_given_id_and_timestamp,
                generated_ids_are_short_hex_and_unused,
                set_leaf_appends_leaf_entry_and_branches,
                set_leaf_null_starts_a_new_root,
                set_leaf_unknown_target_changes_nothing,
                leaf_entries_stay_off_paths,
                duplicate_id_rejected_without_state_change,
                failed_append_does_not_block_later_appends,
                concurrent_appends_serialize,
                append_entry_keeps_envelope_verbatim,
                append_entry_unknown_parent_rejected,
                append_entry_moves_leaf_by_recovery_rule,
                get_entry_missing_is_none,
                entry_count_counts_every_entry,
                save_point_keeps_state
            ],
            persistence: [
                leaf_recovered_after_reopen,
                null_leaf_recovered_after_reopen,
                every_known_kind_round_trips,
                unknown_entry_types_round_trip,
                unknown_fields_survive_reopen,
                open_by_id_and_by_location
            ],
            labels_and_names: [
                labels_set_clear_and_trim,
                latest_label_wins,
                label_on_unknown_target_is_not_found,
                session_name_normalizes_newlines,
                session_name_latest_wins_and_clears,
                labels_and_names_survive_reopen
            ],
            stats: [
                stats_count_messages_and_assistant_usage,
                stats_include_summaries_and_usage_entries,
                stats_skip_incomplete_usage,
                stats_survive_reopen
            ],
            paths_and_queries: [
                ancestry_follows_the_active_branch,
                path_stops_at_first_kept_entry,
                path_starts_at_compaction_with_retained_tail,
                path_ignores_older_compactions,
                path_from_explicit_leaf_and_unknown_leaf,
                path_of_empty_session_is_empty,
                entries_page_with_cursor,
                find_entries_by_type_in_log_order,
                children_list_branches_in_log_order,
                context_edit_targets_are_checked,
                derived_settings_replay_the_full_ancestry
            ],
            repository: [
                create_list_and_open,
                create_with_caller_id,
                create_rejects_invalid_or_duplicate_id,
                header_keeps_cwd_parent_and_metadata,
                open_missing_is_not_found,
                list_is_newest_first,
                list_shows_name_and_first_message,
                delete_is_idempotent
            ],
            forks: [
                fork_without_entry_copies_whole_tree,
                fork_before_user_copies_path_to_parent,
                fork_before_non_user_is_invalid_target,
                fork_at_copies_path_including_target,
                fork_missing_target_is_invalid_target,
                fork_before_first_message_is_empty,
                fork_with_caller_id_and_cwd,
                forked_session_accepts_appends
            ]
        }
    };
}

macro_rules! define_dispatch {
    ( ; $($group:ident : [$($name:ident),* $(,)?]),* $(,)?) => {
        /// Every case as `(group, name)`, in suite order.
        pub const CASES: &[(&str, &str)] = &[
            $($( (stringify!($group), stringify!($name)), )*)*
        ];

        async fn dispatch<R: SessionRepository>(repo: &R, name: &str) -> Option<CaseResult> {
            match name {
                $($( stringify!($name) => Some(cases::$name(repo).await), )*)*
                _ => None,
            }
        }
    };
}

__session_conformance_list!((define_dispatch)());

/// Expands to one `#[tokio::test]` per conformance case, each building its own fixture with
/// `$factory` (an expression of type `Fn() -> impl Future<Output = Fixture<R>>`).
#[macro_export]
macro_rules! session_conformance_tests {
    ($factory:expr) => {
        $crate::__session_conformance_list!(($crate::__session_conformance_emit)($factory));
    };
    // Backends other processes can open also run the two-process case
    // ([`crate::session::conformance_process`]); `$reopen` maps a location to a repository.
    ($factory:expr, second_process: $reopen:expr) => {
        $crate::__session_conformance_list!(($crate::__session_conformance_emit)($factory));
        #[::tokio::test]
        async fn second_writer_from_another_process_is_refused() {
            $crate::session::conformance_process::run($factory, module_path!(), $reopen).await;
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __session_conformance_emit {
    ($factory:expr ; $($group:ident : [$($name:ident),* $(,)?]),* $(,)?) => {
        $($(
            #[::tokio::test]
            async fn $name() {
                $crate::session::conformance::assert_case($factory, stringify!($name)).await;
            }
        )*)*
    };
}

// ---------------------------------------------------------------------------------------------
// Builders and checks used by the cases.

const CWD: &str = "/work/conformance";

fn create_opts() -> CreateOptions {
    CreateOptions {
        cwd: CWD.into(),
        ..CreateOptions::default()
    }
}

fn msg(v: Value) -> EntryKind {
    match serde_json::from_value::<AgentMessage>(v) {
        Ok(m) => EntryKind::message(m),
        Err(e) => EntryKind::Other {
            entry_type: format!("broken-test-message: {e}"),
            fields: Map::new(),
        },
    }
}

fn user(text: &str) -> EntryKind {
    msg(json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}))
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64, cost: f64) -> Value {
    json!({
        "input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}
    })
}

fn assistant_with(text: &str, usage: Value) -> EntryKind {
    msg(json!({
        "role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": usage, "stopReason": "stop", "timestamp": 1
    }))
}

fn assistant(text: &str) -> EntryKind {
    assistant_with(text, usage(0, 0, 0, 0, 0.0))
}

fn kind(entry_type: &str, fields: Value) -> EntryKind {
    let map = match fields {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    match EntryKind::from_fields(entry_type, map) {
        Ok(k) => k,
        Err(e) => EntryKind::Other {
            entry_type: format!("broken-test-kind: {e}"),
            fields: Map::new(),
        },
    }
}

fn custom(custom_type: &str, data: Value) -> EntryKind {
    kind("custom", json!({"customType": custom_type, "data": data}))
}

fn label(target: &str, text: Option<&str>) -> EntryKind {
    EntryKind::Label(LabelEntry {
        target_id: target.into(),
        label: text.map(str::to_owned).into(),
        extra: Map::new(),
    })
}

fn name(text: &str) -> EntryKind {
    EntryKind::SessionInfo(SessionInfoEntry {
        name: Nullable::Value(text.into()),
        extra: Map::new(),
    })
}

fn compaction(first_kept: Option<&str>, retained_tail: bool) -> EntryKind {
    let mut fields = json!({"summary": "summary", "tokensBefore": 10});
    if let Some(k) = first_kept {
        fields["firstKeptEntryId"] = json!(k);
    }
    if retained_tail {
        fields["retainedTail"] = json!([]);
    }
    kind("compaction", fields)
}

fn with_id(kind: EntryKind, id: &str) -> EntryDraft {
    EntryDraft {
        kind,
        id: Some(id.into()),
        timestamp: None,
    }
}

trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T, String>;
}

impl<T> Ctx<T> for Result<T, SessionError> {
    fn ctx(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: unexpected error [{}] {e}", e.code()))
    }
}

fn expect_code<T: std::fmt::Debug>(
    r: Result<T, SessionError>,
    code: &str,
    what: &str,
) -> CaseResult {
    match r {
        Ok(v) => Err(format!("{what}: expected a {code} error, got Ok({v:?})")),
        Err(e) if e.code() == code => Ok(()),
        Err(e) => Err(format!("{what}: expected {code}, got [{}] {e}", e.code())),
    }
}

/// Checks `[message_count, cached_tokens, uncached_tokens, total_tokens]` and the cost.
async fn expect_stats<S: SessionStorage>(s: &S, counts: [u64; 4], cost: f64) -> CaseResult {
    let st = s.stats().await.ctx("stats")?;
    let got = [
        st.message_count,
        st.cached_tokens,
        st.uncached_tokens,
        st.total_tokens,
    ];
    if got != counts || (st.cost_total - cost).abs() >= 1e-9 {
        return Err(format!(
            "stats [messages, cached, uncached, total] = {got:?}, cost {}; expected {counts:?}, cost {cost}",
            st.cost_total
        ));
    }
    Ok(())
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        let ok: bool = $cond;
        if !ok {
            return Err(format!("{} (line {})", format!($($fmt)+), line!()));
        }
    };
}

macro_rules! ensure_eq {
    ($a:expr, $b:expr) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err(format!(
                "{} != {}\n  left: {:?}\n right: {:?}\n (line {})",
                stringify!($a),
                stringify!($b),
                a,
                b,
                line!()
            ));
        }
    }};
}

fn ids(path: Vec<SessionEntry>) -> Vec<String> {
    path.into_iter().map(|e| e.id).collect()
}

async fn all_entries<S: SessionStorage>(s: &S) -> Result<Vec<SessionEntry>, String> {
    let page = s.entries(None, None).await.ctx("entries")?;
    Ok(page.entries.into_iter().map(|(_, e)| e).collect())
}

async fn append<S: SessionStorage>(s: &S, kind: EntryKind) -> Result<String, String> {
    Ok(s.append(EntryDraft::new(kind)).await.ctx("append")?.id)
}

mod cases {
    use super::*;

    // ---- entries and leaf --------------------------------------------------------------------

    pub async fn append_assigns_parent_and_moves_leaf<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, None::<String>);
        let a = s
            .append(EntryDraft::new(user("one")))
            .await
            .ctx("append a")?;
        ensure_eq!(a.parent_id, None::<String>);
        ensure!(
            crate::time::iso_to_ms(&a.timestamp).is_some(),
            "timestamp {} is not ISO-8601 with ms",
            a.timestamp
        );
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a.id.clone()));
        let b = s
            .append(EntryDraft::new(assistant("two")))
            .await
            .ctx("append b")?;
        ensure_eq!(b.parent_id, Some(a.id.clone()));
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(b.id.clone()));
        ensure_eq!(s.get_entry(&b.id).await.ctx("get")?, Some(b.clone()));
        Ok(())
    }

    pub async fn append_keeps_given_id_and_timestamp<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let e = s
            .append(EntryDraft {
                kind: user("x"),
                id: Some("given-1".into()),
                timestamp: Some("2026-06-20T15:00:00.000Z".into()),
            })
            .await
            .ctx("append")?;
        ensure_eq!(e.id, "given-1");
        ensure_eq!(e.timestamp, "2026-06-20T15:00:00.000Z");
        let got = s.get_entry("given-1").await.ctx("get")?;
        ensure_eq!(got, Some(e));
        Ok(())
    }

    pub async fn generated_ids_are_short_hex_and_unused<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let mut seen = std::collections::HashSet::new();
        for i in 0..20 {
            let id = append(&s, custom("n", json!(i))).await?;
            ensure!(
                id.len() == 8 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "generated id {id:?} is not 8 lowercase hex"
            );
            ensure!(seen.insert(id.clone()), "id {id} generated twice");
        }
        let fresh = s.create_entry_id().await.ctx("create_entry_id")?;
        ensure!(!seen.contains(&fresh), "create_entry_id returned a used id");
        ensure_eq!(s.get_entry(&fresh).await.ctx("get")?, None::<SessionEntry>);
        Ok(())
    }

    pub async fn set_leaf_appends_leaf_entry_and_branches<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let b = append(&s, assistant("b")).await?;
        let leaf = s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
        ensure_eq!(leaf.entry_type(), "leaf");
        ensure_eq!(leaf.parent_id, Some(b.clone()));
        ensure_eq!(leaf.kind.target_id(), Some(a.as_str()));
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a.clone()));
        let c = s.append(EntryDraft::new(user("c"))).await.ctx("append c")?;
        ensure_eq!(c.parent_id, Some(a.clone()));
        let kids = s.children(Some(&a)).await.ctx("children")?;
        let kid_ids: Vec<_> = kids.iter().map(|e| e.id.clone()).collect();
        ensure_eq!(kid_ids, vec![b.clone(), c.id.clone()]);
        ensure_eq!(s.entry_count().await.ctx("count")?, 4);
        Ok(())
    }

    pub async fn set_leaf_null_starts_a_new_root<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let leaf = s.set_leaf(None).await.ctx("set_leaf(None)")?;
        ensure_eq!(leaf.parent_id, Some(a.clone()));
        ensure_eq!(leaf.kind.target_id(), None);
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, None::<String>);
        ensure_eq!(
            s.path_to_root_or_compaction(None).await.ctx("path")?.len(),
            0
        );
        let b = s.append(EntryDraft::new(user("b"))).await.ctx("append")?;
        ensure_eq!(b.parent_id, None::<String>);
        let roots = ids(s.children(None).await.ctx("roots")?);
        ensure_eq!(roots, vec![a, b.id]);
        Ok(())
    }

    pub async fn set_leaf_unknown_target_changes_nothing<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        expect_code(
            s.set_leaf(Some("missing")).await,
            "not_found",
            "set_leaf(missing)",
        )?;
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a.clone()));
        ensure_eq!(s.entry_count().await.ctx("count")?, 1);
        let b = s.append(EntryDraft::new(user("b"))).await.ctx("append")?;
        ensure_eq!(b.parent_id, Some(a));
        Ok(())
    }

    pub async fn leaf_entries_stay_off_paths<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let _b = append(&s, assistant("b")).await?;
        let leaf = s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
        let c = append(&s, user("c")).await?;
        let path = ids(s.ancestry(None).await.ctx("ancestry")?);
        ensure_eq!(path, vec![a.clone(), c.clone()]);
        ensure!(!path.contains(&leaf.id), "leaf entry on the path");
        let leaves = s.find_entries("leaf").await.ctx("find leaf")?;
        ensure_eq!(leaves, vec![leaf]);
        Ok(())
    }

    pub async fn duplicate_id_rejected_without_state_change<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        s.append(with_id(user("a"), "shared")).await.ctx("append")?;
        let b = append(&s, assistant("b")).await?;
        expect_code(
            s.append(with_id(user("again"), "shared")).await,
            "invalid_entry",
            "duplicate append",
        )?;
        let copy = SessionEntry::new("shared", None, "2026-06-20T15:00:00.000Z", user("c"));
        expect_code(
            s.append_entry(copy).await,
            "invalid_entry",
            "duplicate append_entry",
        )?;
        ensure_eq!(s.entry_count().await.ctx("count")?, 2);
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(b));
        let first = s.get_entry("shared").await.ctx("get")?;
        ensure!(
            first.is_some_and(|e| e.parent_id.is_none()),
            "the original entry changed"
        );
        Ok(())
    }

    pub async fn failed_append_does_not_block_later_appends<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        for _ in 0..3 {
            expect_code(
                s.append(with_id(user("dup"), &a)).await,
                "invalid_entry",
                "duplicate",
            )?;
            expect_code(
                s.append(EntryDraft::new(label("nope", Some("x")))).await,
                "not_found",
                "label on missing",
            )?;
        }
        let b = s
            .append(EntryDraft::new(assistant("b")))
            .await
            .ctx("append after failures")?;
        ensure_eq!(b.parent_id, Some(a));
        ensure_eq!(s.entry_count().await.ctx("count")?, 2);
        Ok(())
    }

    pub async fn concurrent_appends_serialize<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let root = append(&s, user("root")).await?;
        let futs = (0..32).map(|i| s.append(EntryDraft::new(custom("c", json!(i)))));
        let results = futures::future::join_all(futs).await;
        for r in &results {
            if let Err(e) = r {
                return Err(format!("concurrent append failed: {e}"));
            }
        }
        let log = all_entries(&s).await?;
        ensure_eq!(log.len(), 33);
        let mut prev = root;
        for e in &log[1..] {
            ensure_eq!(e.parent_id.as_deref(), Some(prev.as_str()));
            prev = e.id.clone();
        }
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(prev));
        let kids = s.children(Some(&log[0].id)).await.ctx("children")?;
        ensure_eq!(kids.len(), 1);
        Ok(())
    }

    pub async fn append_entry_keeps_envelope_verbatim<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = SessionEntry::new("aaaa0001", None, "2020-01-01T00:00:00.000Z", user("a"));
        let b = SessionEntry::new(
            "aaaa0002",
            Some("aaaa0001".into()),
            "2020-01-01T00:00:01.000Z",
            assistant("b"),
        );
        s.append_entry(a.clone()).await.ctx("append_entry a")?;
        s.append_entry(b.clone()).await.ctx("append_entry b")?;
        ensure_eq!(all_entries(&s).await?, vec![a, b]);
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some("aaaa0002".to_owned()));
        Ok(())
    }

    pub async fn append_entry_unknown_parent_rejected<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let orphan = SessionEntry::new(
            "orphan01",
            Some("missing".into()),
            "2020-01-01T00:00:00.000Z",
            user("x"),
        );
        expect_code(
            s.append_entry(orphan).await,
            "invalid_entry",
            "orphan append_entry",
        )?;
        ensure_eq!(s.entry_count().await.ctx("count")?, 1);
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a));
        ensure_eq!(
            s.get_entry("orphan01").await.ctx("get")?,
            None::<SessionEntry>
        );
        Ok(())
    }

    pub async fn append_entry_moves_leaf_by_recovery_rule<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = SessionEntry::new("e1", None, "2020-01-01T00:00:00.000Z", user("a"));
        let b = SessionEntry::new(
            "e2",
            Some("e1".into()),
            "2020-01-01T00:00:00.000Z",
            user("b"),
        );
        let jump = SessionEntry::new(
            "e3",
            Some("e2".into()),
            "2020-01-01T00:00:00.000Z",
            EntryKind::Leaf(LeafEntry {
                target_id: Some("e1".into()),
                extra: Map::new(),
            }),
        );
        for e in [a, b, jump] {
            s.append_entry(e).await.ctx("append_entry")?;
        }
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some("e1".to_owned()));
        let c = s.append(EntryDraft::new(user("c"))).await.ctx("append")?;
        ensure_eq!(c.parent_id, Some("e1".to_owned()));
        Ok(())
    }

    pub async fn get_entry_missing_is_none<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        ensure_eq!(s.get_entry("nope").await.ctx("get")?, None::<SessionEntry>);
        append(&s, user("a")).await?;
        ensure_eq!(s.get_entry("nope").await.ctx("get")?, None::<SessionEntry>);
        Ok(())
    }

    pub async fn entry_count_counts_every_entry<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        ensure_eq!(s.entry_count().await.ctx("count")?, 0);
        let a = append(&s, user("a")).await?;
        append(&s, label(&a, Some("x"))).await?;
        s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
        append(&s, name("n")).await?;
        ensure_eq!(s.entry_count().await.ctx("count")?, 4);
        Ok(())
    }

    pub async fn save_point_keeps_state<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        s.save_point().await.ctx("save_point on empty")?;
        let a = append(&s, user("a")).await?;
        s.save_point().await.ctx("save_point")?;
        s.save_point().await.ctx("second save_point")?;
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a));
        ensure_eq!(s.entry_count().await.ctx("count")?, 1);
        Ok(())
    }

    // ---- persistence -------------------------------------------------------------------------

    pub async fn leaf_recovered_after_reopen<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        append(&s, assistant("b")).await?;
        s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
        let loc = s.location();
        let before = all_entries(&s).await?;
        drop(s);
        let s = r.open(&loc).await.ctx("reopen")?;
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a.clone()));
        ensure_eq!(all_entries(&s).await?, before);
        let c = s.append(EntryDraft::new(user("c"))).await.ctx("append")?;
        ensure_eq!(c.parent_id, Some(a.clone()));
        drop(s);
        let s = r.open(&loc).await.ctx("reopen 2")?;
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(c.id));
        Ok(())
    }

    pub async fn null_leaf_recovered_after_reopen<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        append(&s, user("a")).await?;
        s.set_leaf(None).await.ctx("set_leaf(None)")?;
        let loc = s.location();
        drop(s);
        let s = r.open(&loc).await.ctx("reopen")?;
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, None::<String>);
        let b = s.append(EntryDraft::new(user("b"))).await.ctx("append")?;
        ensure_eq!(b.parent_id, None::<String>);
        Ok(())
    }

    pub async fn every_known_kind_round_trips<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("hello")).await?;
        let kinds = vec![
            assistant_with("hi", usage(10, 5, 3, 2, 0.5)),
            msg(
                json!({"role": "toolResult", "toolCallId": "t1", "toolName": "read",
                "content": [{"type": "text", "text": "file"}], "details": {"lines": 3},
                "isError": false, "timestamp": 2}),
            ),
            msg(
                json!({"role": "bashExecution", "command": "ls", "output": "a\n", "exitCode": 0,
                "cancelled": false, "truncated": false, "timestamp": 3}),
            ),
            msg(
                json!({"role": "custom", "customType": "note", "content": "c", "display": true,
                "timestamp": 4}),
            ),
            msg(
                json!({"role": "system", "content": "", "sections": {"base": "x"}, "timestamp": 5}),
            ),
            kind("thinking_level_change", json!({"thinkingLevel": "high"})),
            kind(
                "model_change",
                json!({"provider": "openai", "modelId": "gpt-5"}),
            ),
            kind(
                "active_tools_change",
                json!({"activeToolNames": ["read", "bash"]}),
            ),
            kind(
                "compaction",
                json!({"summary": "s", "firstKeptEntryId": a, "tokensBefore": 100,
                    "details": {"readFiles": ["a"], "modifiedFiles": []},
                    "usage": usage(1, 1, 0, 0, 0.25), "fromHook": false}),
            ),
            kind(
                "branch_summary",
                json!({"fromId": "root", "summary": "s", "details": {"x": 1}}),
            ),
            custom("state", json!({"nested": {"value": 1}})),
            kind(
                "custom_message",
                json!({"customType": "m", "content": [{"type": "text", "text": "t"}],
                    "display": false, "details": {"d": true}}),
            ),
            label(&a, Some("mark")),
            name("Session name"),
            kind(
                "context_edit",
                json!({"targetId": a, "replacement": {"content": "edited"}}),
            ),
            kind(
                "usage",
                json!({"kind": "cache_warm", "provider": "anthropic", "model": "m",
                    "usage": usage(1, 0, 0, 0, 0.01), "note": "warm"}),
            ),
        ];
        for k in kinds {
            if let EntryKind::Other { entry_type, .. } = &k {
                return Err(format!("test builder failed: {entry_type}"));
            }
            append(&s, k).await?;
        }
        let before = all_entries(&s).await?;
        let loc = s.location();
        drop(s);
        let s = r.open(&loc).await.ctx("reopen")?;
        let after = all_entries(&s).await?;
        ensure_eq!(after.len(), before.len());
        for (x, y) in before.iter().zip(after.iter()) {
            ensure_eq!(x, y);
        }
        Ok(())
    }

    pub async fn unknown_entry_types_round_trip<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        append(&s, user("a")).await?;
        let mut fields = Map::new();
        fields.insert("payload".into(), json!({"deep": [1, 2.5, "x", null]}));
        fields.insert("flag".into(), json!(true));
        let future = EntryKind::Other {
            entry_type: "from_the_future".into(),
            fields,
        };
        let e = s
            .append(EntryDraft::new(future.clone()))
            .await
            .ctx("append")?;
        ensure_eq!(e.kind, future);
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(e.id.clone()));
        let found = s.find_entries("from_the_future").await.ctx("find")?;
        ensure_eq!(found, vec![e.clone()]);
        let loc = s.location();
        drop(s);
        let s = r.open(&loc).await.ctx("reopen")?;
        ensure_eq!(s.get_entry(&e.id).await.ctx("get")?, Some(e));
        Ok(())
    }

    pub async fn unknown_fields_survive_reopen<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let k = msg(json!({
            "role": "assistant", "content": [{"type": "text", "text": "x", "futureBlockField": 1}],
            "api": "openai-responses", "provider": "openai", "model": "gpt-5",
            "usage": usage(1, 1, 0, 0, 0.0), "stopReason": "stop", "timestamp": 1,
            "responseId": "resp_1", "durationMs": 1234, "diagnostics": {"retries": [1, 2]}
        }));
        let e = s.append(EntryDraft::new(k)).await.ctx("append")?;
        let line = serde_json::to_value(&e).map_err(|x| x.to_string())?;
        ensure_eq!(line["message"]["responseId"], json!("resp_1"));
        ensure_eq!(line["message"]["diagnostics"]["retries"], json!([1, 2]));
        ensure_eq!(line["message"]["content"][0]["futureBlockField"], json!(1));
        let loc = s.location();
        drop(s);
        let s = r.open(&loc).await.ctx("reopen")?;
        let back = s.get_entry(&e.id).await.ctx("get")?;
        let back = serde_json::to_value(&back).map_err(|x| x.to_string())?;
        ensure_eq!(back, line);
        Ok(())
    }

    pub async fn open_by_id_and_by_location<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let id = s.header().await.ctx("header")?.id;
        let loc = s.location();
        drop(s);
        let by_id = r.open(&id).await.ctx("open by id")?;
        ensure_eq!(by_id.leaf_id().await.ctx("leaf")?, Some(a.clone()));
        ensure_eq!(by_id.location(), loc.clone());
        drop(by_id);
        let by_loc = r.open(&loc).await.ctx("open by location")?;
        ensure_eq!(by_loc.header().await.ctx("header")?.id, id);
        Ok(())
    }

    // ---- labels and names --------------------------------------------------------------------

    pub async fn labels_set_clear_and_trim<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        ensure_eq!(s.get_label(&a).await.ctx("label")?, None::<String>);
        append(&s, label(&a, Some("  keep  "))).await?;
        ensure_eq!(s.get_label(&a).await.ctx("label")?, Some("keep".to_owned()));
        append(&s, label(&a, None)).await?;
        ensure_eq!(s.get_label(&a).await.ctx("label")?, None::<String>);
        append(&s, label(&a, Some("again"))).await?;
        append(&s, label(&a, Some("   "))).await?;
        ensure_eq!(s.get_label(&a).await.ctx("label")?, None::<String>);
        Ok(())
    }

    pub async fn latest_label_wins<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let b = append(&s, assistant("b")).await?;
        append(&s, label(&a, Some("first"))).await?;
        append(&s, label(&b, Some("other"))).await?;
        append(&s, label(&a, Some("second"))).await?;
        ensure_eq!(
            s.get_label(&a).await.ctx("label")?,
            Some("second".to_owned())
        );
        ensure_eq!(
            s.get_label(&b).await.ctx("label")?,
            Some("other".to_owned())
        );
        ensure_eq!(s.get_label("missing").await.ctx("label")?, None::<String>);
        Ok(())
    }

    pub async fn label_on_unknown_target_is_not_found<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        expect_code(
            s.append(EntryDraft::new(label("missing", Some("x")))).await,
            "not_found",
            "label missing target",
        )?;
        ensure_eq!(s.entry_count().await.ctx("count")?, 1);
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a));
        Ok(())
    }

    pub async fn session_name_normalizes_newlines<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        ensure_eq!(s.session_name().await.ctx("name")?, None::<String>);
        let e = s
            .append(EntryDraft::new(name("  first\r\n\nsecond\nthird  ")))
            .await
            .ctx("append")?;
        let stored = match &e.kind {
            EntryKind::SessionInfo(i) => i.name.get().cloned(),
            _ => None,
        };
        ensure_eq!(stored, Some("first second third".to_owned()));
        ensure_eq!(
            s.session_name().await.ctx("name")?,
            Some("first second third".to_owned())
        );
        Ok(())
    }

    pub async fn session_name_latest_wins_and_clears<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        append(&s, name("First")).await?;
        append(&s, name("Second")).await?;
        ensure_eq!(
            s.session_name().await.ctx("name")?,
            Some("Second".to_owned())
        );
        append(&s, name("\n")).await?;
        ensure_eq!(s.session_name().await.ctx("name")?, None::<String>);
        Ok(())
    }

    pub async fn labels_and_names_survive_reopen<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        append(&s, label(&a, Some("bookmark"))).await?;
        append(&s, name("Named")).await?;
        let loc = s.location();
        drop(s);
        let s = r.open(&loc).await.ctx("reopen")?;
        ensure_eq!(
            s.get_label(&a).await.ctx("label")?,
            Some("bookmark".to_owned())
        );
        ensure_eq!(
            s.session_name().await.ctx("name")?,
            Some("Named".to_owned())
        );
        Ok(())
    }

    // ---- stats -------------------------------------------------------------------------------

    pub async fn stats_count_messages_and_assistant_usage<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let st = s.stats().await.ctx("stats")?;
        ensure_eq!(st, super::super::storage::SessionStats::default());
        append(&s, user("a")).await?;
        append(&s, assistant_with("b", usage(10, 5, 3, 2, 0.5))).await?;
        append(&s, custom("not-a-message", json!(1))).await?;
        append(&s, assistant_with("c", usage(1, 1, 1, 1, 0.25))).await?;
        expect_stats(&s, [3, 4, 14, 24], 0.75).await
    }

    pub async fn stats_include_summaries_and_usage_entries<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        append(
            &s,
            kind(
                "compaction",
                json!({"summary": "s", "firstKeptEntryId": a, "tokensBefore": 1,
                    "usage": usage(100, 10, 0, 0, 1.0)}),
            ),
        )
        .await?;
        append(
            &s,
            kind(
                "branch_summary",
                json!({"fromId": "root", "summary": "s", "usage": usage(0, 5, 20, 0, 0.5)}),
            ),
        )
        .await?;
        append(
            &s,
            kind(
                "usage",
                json!({"kind": "cache_warm", "provider": "p", "model": "m",
                    "usage": usage(0, 0, 0, 7, 0.25)}),
            ),
        )
        .await?;
        expect_stats(&s, [1, 20, 107, 142], 1.75).await
    }

    pub async fn stats_skip_incomplete_usage<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        append(&s, user("a")).await?;
        // A user message's usage never counts; an assistant usage without cost.total is skipped.
        append(
            &s,
            msg(json!({"role": "user", "content": "x", "timestamp": 1,
                "usage": usage(50, 50, 50, 50, 1.0)})),
        )
        .await?;
        append(&s, custom("u", json!({"usage": usage(9, 9, 9, 9, 9.0)}))).await?;
        let st = s.stats().await.ctx("stats")?;
        ensure_eq!(st.message_count, 2);
        ensure_eq!(st.total_tokens, 0);
        ensure_eq!(st.cost_total, 0.0);
        Ok(())
    }

    pub async fn stats_survive_reopen<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        append(&s, user("a")).await?;
        append(&s, assistant_with("b", usage(10, 5, 3, 2, 0.5))).await?;
        let before = s.stats().await.ctx("stats")?;
        let loc = s.location();
        drop(s);
        let s = r.open(&loc).await.ctx("reopen")?;
        ensure_eq!(s.stats().await.ctx("stats")?, before);
        Ok(())
    }

    // ---- paths and queries -------------------------------------------------------------------

    pub async fn ancestry_follows_the_active_branch<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let b = append(&s, assistant("b")).await?;
        let c = append(&s, user("c")).await?;
        s.set_leaf(Some(&b)).await.ctx("set_leaf")?;
        let d = append(&s, user("d")).await?;
        ensure_eq!(
            ids(s.ancestry(None).await.ctx("ancestry")?),
            vec![a.clone(), b.clone(), d.clone()]
        );
        ensure_eq!(
            ids(s.ancestry(Some(&c)).await.ctx("ancestry c")?),
            vec![a, b, c]
        );
        Ok(())
    }

    pub async fn path_stops_at_first_kept_entry<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let b = append(&s, assistant("b")).await?;
        let c = append(&s, user("c")).await?;
        let k = append(&s, compaction(Some(&b), false)).await?;
        let d = append(&s, user("d")).await?;
        ensure_eq!(
            ids(s.path_to_root_or_compaction(None).await.ctx("path")?),
            vec![b.clone(), c.clone(), k.clone(), d.clone()]
        );
        ensure_eq!(
            ids(s.ancestry(None).await.ctx("ancestry")?),
            vec![a, b, c, k, d]
        );
        Ok(())
    }

    pub async fn path_starts_at_compaction_with_retained_tail<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        append(&s, assistant("b")).await?;
        let k = append(&s, compaction(Some(&a), true)).await?;
        let d = append(&s, user("d")).await?;
        ensure_eq!(
            ids(s.path_to_root_or_compaction(None).await.ctx("path")?),
            vec![k.clone(), d]
        );
        ensure_eq!(
            ids(s
                .path_to_root_or_compaction(Some(&k))
                .await
                .ctx("path at k")?),
            vec![k]
        );
        Ok(())
    }

    pub async fn path_ignores_older_compactions<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let b = append(&s, assistant("b")).await?;
        let old = append(&s, compaction(Some(&b), true)).await?;
        let c = append(&s, user("c")).await?;
        // The newest compaction keeps from `a`, reaching past the older one.
        let new = append(&s, compaction(Some(&a), false)).await?;
        let d = append(&s, user("d")).await?;
        ensure_eq!(
            ids(s.path_to_root_or_compaction(None).await.ctx("path")?),
            vec![a, b, old, c, new, d]
        );
        Ok(())
    }

    pub async fn path_from_explicit_leaf_and_unknown_leaf<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let b = append(&s, assistant("b")).await?;
        append(&s, user("c")).await?;
        ensure_eq!(
            ids(s.path_to_root_or_compaction(Some(&b)).await.ctx("path")?),
            vec![a, b]
        );
        expect_code(
            s.path_to_root_or_compaction(Some("missing")).await,
            "not_found",
            "path from missing",
        )?;
        expect_code(
            s.ancestry(Some("missing")).await,
            "not_found",
            "ancestry missing",
        )?;
        Ok(())
    }

    pub async fn path_of_empty_session_is_empty<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        ensure_eq!(
            s.path_to_root_or_compaction(None).await.ctx("path")?.len(),
            0
        );
        ensure_eq!(s.ancestry(None).await.ctx("ancestry")?.len(), 0);
        ensure_eq!(all_entries(&s).await?.len(), 0);
        ensure_eq!(s.children(None).await.ctx("children")?.len(), 0);
        Ok(())
    }

    pub async fn entries_page_with_cursor<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let mut want = Vec::new();
        for i in 0..5 {
            want.push(append(&s, custom("n", json!(i))).await?);
        }
        let p1 = s.entries(None, Some(2)).await.ctx("page 1")?;
        let seqs: Vec<u64> = p1.entries.iter().map(|(q, _)| *q).collect();
        ensure_eq!(seqs, vec![1, 2]);
        ensure_eq!(p1.next_after_seq, Some(2));
        let p2 = s.entries(p1.next_after_seq, Some(2)).await.ctx("page 2")?;
        ensure_eq!(
            p2.entries.iter().map(|(q, _)| *q).collect::<Vec<_>>(),
            vec![3, 4]
        );
        let p3 = s.entries(p2.next_after_seq, Some(2)).await.ctx("page 3")?;
        ensure_eq!(p3.entries.len(), 1);
        ensure_eq!(p3.entries[0].1.id, want[4].clone());
        ensure_eq!(p3.next_after_seq, None);
        let past = s.entries(Some(99), None).await.ctx("past end")?;
        ensure_eq!(past.entries.len(), 0);
        ensure_eq!(past.next_after_seq, None);
        let all = s.entries(None, None).await.ctx("all")?;
        let got: Vec<String> = all.entries.into_iter().map(|(_, e)| e.id).collect();
        ensure_eq!(got, want);
        Ok(())
    }

    pub async fn find_entries_by_type_in_log_order<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, custom("x", json!(1))).await?;
        append(&s, user("u")).await?;
        let b = append(&s, custom("y", json!(2))).await?;
        s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
        let c = append(&s, custom("z", json!(3))).await?;
        let found = ids(s.find_entries("custom").await.ctx("find")?);
        ensure_eq!(found, vec![a, b, c]);
        ensure_eq!(s.find_entries("nothing").await.ctx("find none")?.len(), 0);
        Ok(())
    }

    pub async fn children_list_branches_in_log_order<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let b = append(&s, assistant("b")).await?;
        s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
        let c = append(&s, assistant("c")).await?;
        s.set_leaf(Some(&a)).await.ctx("set_leaf 2")?;
        let d = append(&s, assistant("d")).await?;
        ensure_eq!(
            ids(s.children(Some(&a)).await.ctx("children")?),
            vec![b.clone(), c, d]
        );
        ensure_eq!(s.children(Some(&b)).await.ctx("children b")?.len(), 1);
        ensure_eq!(ids(s.children(None).await.ctx("roots")?), vec![a]);
        expect_code(
            s.children(Some("missing")).await,
            "not_found",
            "children missing",
        )?;
        Ok(())
    }

    pub async fn context_edit_targets_are_checked<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("a")).await?;
        let m = append(
            &s,
            kind("model_change", json!({"provider": "p", "modelId": "m"})),
        )
        .await?;
        let b = append(&s, assistant("b")).await?;
        let edit =
            |t: &str, rep: Value| kind("context_edit", json!({"targetId": t, "replacement": rep}));
        expect_code(
            s.append(EntryDraft::new(edit(&m, Value::Null))).await,
            "invalid_entry",
            "edit of model_change",
        )?;
        expect_code(
            s.append(EntryDraft::new(edit("missing", Value::Null)))
                .await,
            "not_found",
            "edit of missing",
        )?;
        expect_code(
            s.append(EntryDraft::new(edit(&a, json!("bare string"))))
                .await,
            "invalid_entry",
            "replacement without content",
        )?;
        s.append(EntryDraft::new(edit(&b, json!({"content": "short"}))))
            .await
            .ctx("valid edit")?;
        s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
        expect_code(
            s.append(EntryDraft::new(edit(&b, Value::Null))).await,
            "invalid_entry",
            "edit off the active branch",
        )?;
        s.append(EntryDraft::new(edit(&a, Value::Null)))
            .await
            .ctx("null edit on branch")?;
        Ok(())
    }

    pub async fn derived_settings_replay_the_full_ancestry<R: SessionRepository>(
        r: &R,
    ) -> CaseResult {
        use super::super::storage::DerivedSettings;
        let s = r.create(create_opts()).await.ctx("create")?;
        ensure_eq!(
            s.derived_settings(None).await.ctx("empty")?,
            DerivedSettings::default()
        );
        append(
            &s,
            kind(
                "model_change",
                json!({"provider": "openai", "modelId": "gpt-5"}),
            ),
        )
        .await?;
        append(
            &s,
            kind("thinking_level_change", json!({"thinkingLevel": "high"})),
        )
        .await?;
        append(
            &s,
            kind("active_tools_change", json!({"activeToolNames": ["read"]})),
        )
        .await?;
        let u = append(&s, user("a")).await?;
        let a = append(&s, assistant("b")).await?;
        // A compaction must not make the replay forget earlier settings.
        append(&s, compaction(Some(&a), true)).await?;
        let tip = append(&s, user("c")).await?;
        let want = DerivedSettings {
            model: Some(("anthropic".into(), "claude-sonnet-4-5".into())),
            thinking_level: Some("high".into()),
            active_tool_names: Some(vec!["read".into()]),
        };
        ensure_eq!(s.derived_settings(None).await.ctx("derived")?, want);
        // A branch from `u` sees the model_change, not the later assistant message.
        s.set_leaf(Some(&u)).await.ctx("set_leaf")?;
        append(
            &s,
            kind("active_tools_change", json!({"activeToolNames": null})),
        )
        .await?;
        append(
            &s,
            kind("thinking_level_change", json!({"thinkingLevel": "low"})),
        )
        .await?;
        let got = s.derived_settings(None).await.ctx("derived branch")?;
        ensure_eq!(
            got,
            DerivedSettings {
                model: Some(("openai".into(), "gpt-5".into())),
                thinking_level: Some("low".into()),
                active_tool_names: None,
            }
        );
        for leaf in [None, Some(tip.as_str()), Some(u.as_str())] {
            let replay = DerivedSettings::from_entries(&s.ancestry(leaf).await.ctx("ancestry")?);
            ensure_eq!(s.derived_settings(leaf).await.ctx("derived")?, replay);
        }
        expect_code(
            s.derived_settings(Some("missing")).await,
            "not_found",
            "missing leaf",
        )?;
        Ok(())
    }

    // ---- repository --------------------------------------------------------------------------

    pub async fn create_list_and_open<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        let a = append(&s, user("hello")).await?;
        let h = s.header().await.ctx("header")?;
        ensure_eq!(h.version, Some(3));
        ensure_eq!(h.cwd, CWD);
        ensure!(!h.id.is_empty(), "empty session id");
        let loc = s.location();
        drop(s);
        let list = r.list().await.ctx("list")?;
        ensure_eq!(list.sessions.len(), 1);
        ensure_eq!(list.sessions[0].id, h.id.clone());
        ensure_eq!(list.sessions[0].location, loc.clone());
        ensure_eq!(list.sessions[0].cwd, CWD);
        ensure_eq!(list.sessions[0].created, h.timestamp.clone());
        ensure!(list.skipped.is_empty(), "skipped: {:?}", list.skipped);
        let s = r.open(&list.sessions[0].location).await.ctx("open")?;
        ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a));
        ensure_eq!(s.header().await.ctx("header")?, h);
        Ok(())
    }

    pub async fn create_with_caller_id<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r
            .create(CreateOptions {
                id: Some("my-session.1".into()),
                ..create_opts()
            })
            .await
            .ctx("create")?;
        ensure_eq!(s.header().await.ctx("header")?.id, "my-session.1");
        drop(s);
        let s = r.open("my-session.1").await.ctx("open by id")?;
        ensure_eq!(s.header().await.ctx("header")?.id, "my-session.1");
        Ok(())
    }

    pub async fn create_rejects_invalid_or_duplicate_id<R: SessionRepository>(r: &R) -> CaseResult {
        for bad in ["", "-x", "a/b", "../escape", "x."] {
            let res = r
                .create(CreateOptions {
                    id: Some(bad.into()),
                    ..create_opts()
                })
                .await;
            ensure!(res.is_err(), "id {bad:?} was accepted");
        }
        let s = r
            .create(CreateOptions {
                id: Some("taken".into()),
                ..create_opts()
            })
            .await
            .ctx("create")?;
        append(&s, user("a")).await?;
        drop(s);
        let again = r
            .create(CreateOptions {
                id: Some("taken".into()),
                ..create_opts()
            })
            .await;
        ensure!(
            again.is_err(),
            "a second session with id `taken` was created"
        );
        let s = r.open("taken").await.ctx("open")?;
        ensure_eq!(s.entry_count().await.ctx("count")?, 1);
        Ok(())
    }

    pub async fn header_keeps_cwd_parent_and_metadata<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r
            .create(CreateOptions {
                id: None,
                cwd: "/srv/other".into(),
                parent_session: Some("/x/parent.jsonl".into()),
                metadata: Some(json!({"tag": "t", "n": 1})),
            })
            .await
            .ctx("create")?;
        let loc = s.location();
        drop(s);
        let s = r.open(&loc).await.ctx("open")?;
        let h = s.header().await.ctx("header")?;
        ensure_eq!(h.cwd, "/srv/other");
        ensure_eq!(h.parent_session, Some("/x/parent.jsonl".to_owned()));
        ensure_eq!(h.metadata, Some(json!({"tag": "t", "n": 1})));
        ensure!(
            crate::time::iso_to_ms(&h.timestamp).is_some(),
            "bad header timestamp {}",
            h.timestamp
        );
        Ok(())
    }

    pub async fn open_missing_is_not_found<R: SessionRepository>(r: &R) -> CaseResult {
        expect_code(
            r.open("no-such-session").await.map(|_| ()),
            "not_found",
            "open id",
        )?;
        let s = r.create(create_opts()).await.ctx("create")?;
        let loc = s.location();
        drop(s);
        r.delete(&loc).await.ctx("delete")?;
        expect_code(r.open(&loc).await.map(|_| ()), "not_found", "open deleted")?;
        Ok(())
    }

    pub async fn list_is_newest_first<R: SessionRepository>(r: &R) -> CaseResult {
        let mut made = Vec::new();
        for i in 0..3 {
            let s = r.create(create_opts()).await.ctx("create")?;
            append(&s, user(&format!("m{i}"))).await?;
            made.push(s.header().await.ctx("header")?.id);
            drop(s);
            tokio::time::sleep(std::time::Duration::from_millis(15)).await;
        }
        // Touch the oldest: it becomes the newest.
        let s = r.open(&made[0]).await.ctx("open")?;
        append(&s, assistant("later")).await?;
        drop(s);
        let list = r.list().await.ctx("list")?;
        let order: Vec<String> = list.sessions.iter().map(|i| i.id.clone()).collect();
        ensure_eq!(
            order,
            vec![made[0].clone(), made[2].clone(), made[1].clone()]
        );
        for w in list.sessions.windows(2) {
            ensure!(
                w[0].modified_ms >= w[1].modified_ms,
                "list not sorted by modified_ms"
            );
        }
        Ok(())
    }

    pub async fn list_shows_name_and_first_message<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        append(
            &s,
            kind("model_change", json!({"provider": "p", "modelId": "m"})),
        )
        .await?;
        append(
            &s,
            msg(
                json!({"role": "user", "content": [{"type": "text", "text": "first"},
                {"type": "text", "text": "prompt"}], "timestamp": 1}),
            ),
        )
        .await?;
        append(&s, assistant("reply")).await?;
        append(&s, user("second prompt")).await?;
        append(&s, name("My work")).await?;
        drop(s);
        let list = r.list().await.ctx("list")?;
        ensure_eq!(list.sessions.len(), 1);
        let info = &list.sessions[0];
        ensure_eq!(info.name, Some("My work".to_owned()));
        ensure_eq!(info.first_message, Some("first prompt".to_owned()));
        if let Some(n) = info.entry_count {
            ensure_eq!(n, 5);
        }
        Ok(())
    }

    pub async fn delete_is_idempotent<R: SessionRepository>(r: &R) -> CaseResult {
        let s = r.create(create_opts()).await.ctx("create")?;
        append(&s, user("a")).await?;
        let id = s.header().await.ctx("header")?.id;
        let keep = r.create(create_opts()).await.ctx("create other")?;
        let keep_id = keep.header().await.ctx("header")?.id;
        drop(s);
        drop(keep);
        r.delete(&id).await.ctx("delete")?;
        expect_code(r.open(&id).await.map(|_| ()), "not_found", "open deleted")?;
        r.delete(&id).await.ctx("delete again")?;
        r.delete("never-existed").await.ctx("delete unknown")?;
        let list = r.list().await.ctx("list")?;
        let ids: Vec<String> = list.sessions.into_iter().map(|i| i.id).collect();
        ensure_eq!(ids, vec![keep_id]);
        Ok(())
    }

    // ---- forks -------------------------------------------------------------------------------

    /// root(user) → a1(assistant) → u2(user) → a2(assistant); leaf moved back to a1; u3 branch.
    async fn forkable<R: SessionRepository>(r: &R) -> Result<(R::Storage, Vec<String>), String> {
        let s = r.create(create_opts()).await.ctx("create")?;
        let u1 = append(&s, user("u1")).await?;
        let a1 = append(&s, assistant("a1")).await?;
        let u2 = append(&s, user("u2")).await?;
        let a2 = append(&s, assistant("a2")).await?;
        append(&s, label(&a1, Some("mark"))).await?;
        s.set_leaf(Some(&a1)).await.ctx("set_leaf")?;
        let u3 = append(&s, user("u3")).await?;
        Ok((s, vec![u1, a1, u2, a2, u3]))
    }

    fn parent_ok(parent: &Option<String>, location: &str, id: &str) -> bool {
        parent.as_deref() == Some(location) || parent.as_deref() == Some(id)
    }

    pub async fn fork_without_entry_copies_whole_tree<R: SessionRepository>(r: &R) -> CaseResult {
        let (s, _) = forkable(r).await?;
        let src_entries = all_entries(&s).await?;
        let src_leaf = s.leaf_id().await.ctx("leaf")?;
        let src_header = s.header().await.ctx("header")?;
        let f = r
            .fork(&s.location(), ForkOptions::default())
            .await
            .ctx("fork")?;
        ensure_eq!(all_entries(&f).await?, src_entries.clone());
        ensure_eq!(f.leaf_id().await.ctx("leaf")?, src_leaf);
        let h = f.header().await.ctx("header")?;
        ensure!(h.id != src_header.id, "fork reused the source id");
        ensure!(
            parent_ok(&h.parent_session, &s.location(), &src_header.id),
            "parentSession {:?} names neither {} nor {}",
            h.parent_session,
            s.location(),
            src_header.id
        );
        ensure_eq!(h.cwd, src_header.cwd);
        ensure_eq!(all_entries(&s).await?, src_entries);
        ensure_eq!(
            f.get_label(&src_entries[1].id).await.ctx("label")?,
            Some("mark".to_owned())
        );
        Ok(())
    }

    pub async fn fork_before_user_copies_path_to_parent<R: SessionRepository>(r: &R) -> CaseResult {
        let (s, e) = forkable(r).await?;
        let before = all_entries(&s).await?;
        let f = r
            .fork(
                &s.location(),
                ForkOptions {
                    entry_id: Some(e[2].clone()),
                    ..ForkOptions::default()
                },
            )
            .await
            .ctx("fork before u2")?;
        let got = ids(all_entries(&f).await?);
        ensure_eq!(got, vec![e[0].clone(), e[1].clone()]);
        ensure_eq!(f.leaf_id().await.ctx("leaf")?, Some(e[1].clone()));
        let copied = f.get_entry(&e[1]).await.ctx("get")?;
        let original = s.get_entry(&e[1]).await.ctx("get src")?;
        ensure_eq!(copied, original);
        ensure_eq!(all_entries(&s).await?, before);
        Ok(())
    }

    pub async fn fork_before_non_user_is_invalid_target<R: SessionRepository>(r: &R) -> CaseResult {
        let (s, e) = forkable(r).await?;
        let loc = s.location();
        let res = r
            .fork(
                &loc,
                ForkOptions {
                    entry_id: Some(e[1].clone()),
                    position: ForkPosition::Before,
                    ..ForkOptions::default()
                },
            )
            .await;
        expect_code(
            res.map(|_| ()),
            "invalid_fork_target",
            "fork before assistant",
        )?;
        let n = r.list().await.ctx("list")?.sessions.len();
        ensure_eq!(n, 1);
        Ok(())
    }

    pub async fn fork_at_copies_path_including_target<R: SessionRepository>(r: &R) -> CaseResult {
        let (s, e) = forkable(r).await?;
        let f = r
            .fork(
                &s.location(),
                ForkOptions {
                    entry_id: Some(e[3].clone()),
                    position: ForkPosition::At,
                    ..ForkOptions::default()
                },
            )
            .await
            .ctx("fork at a2")?;
        let got = ids(all_entries(&f).await?);
        ensure_eq!(got, e[0..4].to_vec());
        ensure_eq!(f.leaf_id().await.ctx("leaf")?, Some(e[3].clone()));
        ensure_eq!(s.leaf_id().await.ctx("source leaf")?, Some(e[4].clone()));
        Ok(())
    }

    pub async fn fork_missing_target_is_invalid_target<R: SessionRepository>(r: &R) -> CaseResult {
        let (s, _) = forkable(r).await?;
        for position in [ForkPosition::Before, ForkPosition::At] {
            let res = r
                .fork(
                    &s.location(),
                    ForkOptions {
                        entry_id: Some("missing".into()),
                        position,
                        ..ForkOptions::default()
                    },
                )
                .await;
            expect_code(res.map(|_| ()), "invalid_fork_target", "fork missing")?;
        }
        expect_code(
            r.fork("no-such-session", ForkOptions::default())
                .await
                .map(|_| ()),
            "not_found",
            "fork of a missing session",
        )?;
        Ok(())
    }

    pub async fn fork_before_first_message_is_empty<R: SessionRepository>(r: &R) -> CaseResult {
        let (s, e) = forkable(r).await?;
        let f = r
            .fork(
                &s.location(),
                ForkOptions {
                    entry_id: Some(e[0].clone()),
                    ..ForkOptions::default()
                },
            )
            .await
            .ctx("fork before root")?;
        ensure_eq!(f.entry_count().await.ctx("count")?, 0);
        ensure_eq!(f.leaf_id().await.ctx("leaf")?, None::<String>);
        Ok(())
    }

    pub async fn fork_with_caller_id_and_cwd<R: SessionRepository>(r: &R) -> CaseResult {
        let (s, e) = forkable(r).await?;
        let f = r
            .fork(
                &s.location(),
                ForkOptions {
                    entry_id: Some(e[4].clone()),
                    position: ForkPosition::At,
                    cwd: Some("/srv/elsewhere".into()),
                    id: Some("fork-1".into()),
                },
            )
            .await
            .ctx("fork")?;
        let h = f.header().await.ctx("header")?;
        ensure_eq!(h.id, "fork-1");
        ensure_eq!(h.cwd, "/srv/elsewhere");
        drop(f);
        let f = r.open("fork-1").await.ctx("open fork by id")?;
        let got = ids(all_entries(&f).await?);
        ensure_eq!(got, vec![e[0].clone(), e[1].clone(), e[4].clone()]);
        Ok(())
    }

    pub async fn forked_session_accepts_appends<R: SessionRepository>(r: &R) -> CaseResult {
        let (s, e) = forkable(r).await?;
        let src_count = s.entry_count().await.ctx("count")?;
        let f = r
            .fork(
                &s.location(),
                ForkOptions {
                    entry_id: Some(e[2].clone()),
                    ..ForkOptions::default()
                },
            )
            .await
            .ctx("fork")?;
        let n = f
            .append(EntryDraft::new(user("edited u2")))
            .await
            .ctx("append")?;
        ensure_eq!(n.parent_id, Some(e[1].clone()));
        let loc = f.location();
        drop(f);
        let f = r.open(&loc).await.ctx("reopen fork")?;
        ensure_eq!(f.leaf_id().await.ctx("leaf")?, Some(n.id));
        ensure_eq!(s.entry_count().await.ctx("source count")?, src_count);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_names_are_unique_and_plenty() {
        let mut names: Vec<&str> = CASES.iter().map(|(_, n)| *n).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate case names");
        assert!(n >= 40, "only {n} cases");
    }
}
