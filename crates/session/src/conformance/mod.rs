//! The storage conformance suite: every backend must pass these cases.
//!
//! Reusable by third-party backends: give [`run_all`] (or [`run_case`]) a factory that builds a
//! fresh, empty repository per case, or expand [`crate::session_conformance_tests!`] inside a
//! test module to get one named `#[tokio::test]` per case.
//!
//! ```ignore
//! arbor_session::session_conformance_tests!(|| async {
//!     let dir = tempfile::tempdir().unwrap();
//!     let repo = MyRepository::open(dir.path()).unwrap();
//!     arbor_session::conformance::Fixture::new(repo, dir)
//! });
//! ```
//!
//! Cases use only the public trait surface. They drop a storage handle before reopening the same
//! session, because file backends allow one writer per session.
//!
//! One file per group of the case list (`__session_conformance_list!`); `support` holds the
//! builders and checks they share.

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

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        let ok: bool = $cond;
        if !ok {
            return Err(format!("{} (line {})", format!($($fmt)+), line!()).into());
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
            )
            .into());
        }
    }};
}

mod entries_and_leaf;
mod forks;
mod labels_and_names;
mod paths_and_queries;
mod persistence;
pub mod process;
mod repository;
mod stats;
mod support;

/// One fresh repository plus whatever must outlive it (a temporary directory, a database file).
pub struct Fixture<R> {
    /// The repository the case runs against; it must start empty.
    pub repo: R,
    _guard: Box<dyn Any + Send>,
}

impl<R> Fixture<R> {
    /// `repo`, with `guard` (a temporary directory, a database handle) dropped only after
    /// the case is done with it.
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

impl<R: std::fmt::Debug> std::fmt::Debug for Fixture<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixture")
            .field("repo", &self.repo)
            .finish_non_exhaustive()
    }
}

/// Why a case failed: a readable account naming the call and the values seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseFailure(String);

impl CaseFailure {
    /// The account of the failure: the call that failed, or the values compared and the line
    /// of the case.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for CaseFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaseFailure {}

impl From<String> for CaseFailure {
    fn from(message: String) -> Self {
        CaseFailure(message)
    }
}

/// What one case returned.
pub type CaseResult = Result<(), CaseFailure>;

/// The outcome of one case, for tables and reports.
#[derive(Debug, Clone)]
pub struct CaseOutcome {
    /// The group of the case list the case belongs to (`entries_and_leaf`, `forks`, ...).
    pub group: &'static str,
    /// The case's name, as [`run_case`] takes it.
    pub name: &'static str,
    /// Whether it passed, and why not.
    pub result: CaseResult,
    /// Wall-clock time of the case, fixture creation included, in milliseconds.
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
        None => Err(format!("no conformance case named {name}").into()),
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
                $($( stringify!($name) => Some($group::$name(repo).await), )*)*
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
    // Backends other processes can open also run the two-process case ([`process`]);
    // `$reopen` maps a location to a repository that can open it.
    ($factory:expr, second_process: $reopen:expr) => {
        $crate::__session_conformance_list!(($crate::__session_conformance_emit)($factory));
        #[::tokio::test]
        async fn second_writer_from_another_process_is_refused() {
            $crate::conformance::process::run($factory, module_path!(), $reopen).await;
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
                $crate::conformance::assert_case($factory, stringify!($name)).await;
            }
        )*)*
    };
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
