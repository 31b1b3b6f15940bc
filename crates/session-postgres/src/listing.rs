//! Listing sessions a page at a time: the query, the cursor that continues it and the page.

use arbor_session::ListResult;

/// Which sessions [`crate::PostgresRepository::list_page`] returns.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Only sessions of this working directory.
    pub cwd: Option<String>,
    /// Only sessions whose name or first message contains this text (case-insensitive).
    pub search: Option<String>,
    /// Page size (`None`: everything).
    pub limit: Option<usize>,
    /// Continue after the last session of a previous page.
    pub after: Option<ListCursor>,
}

/// Where a listing page ended (newest-first order is `(modified, sid)` descending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    pub(crate) modified_us: i64,
    pub(crate) sid: i32,
}

/// One listing page and the cursor of the next (`None` at the end).
#[derive(Debug, Clone)]
pub struct ListPage {
    /// This page's sessions, newest first.
    pub result: ListResult,
    /// Pass as [`ListQuery::after`] to get the next page; `None` when this page is the last.
    pub next: Option<ListCursor>,
}
