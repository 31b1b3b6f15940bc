//! The materialized state columns of a `sessions` row (the fold itself is shared:
//! `arbor_session::MaterializedState`): reading them and writing them back.

use arbor_session::MaterializedState;
use tokio_postgres::Row;

use crate::sid::Sid;

/// Writes the state columns of a session row (fork and import of a whole session).
pub(crate) async fn write(
    client: &impl deadpool_postgres::GenericClient,
    s: &Sid,
    st: &MaterializedState,
) -> Result<u64, tokio_postgres::Error> {
    client
        .execute(
            "UPDATE sessions SET leaf_id = $2, name = $3, entry_count = $4, message_count = $5,
                 cached_tokens = $6, uncached_tokens = $7, total_tokens = $8, cost_total = $9,
                 latest_compaction_id = $10, first_message = $11, updated_at = clock_timestamp()
             WHERE sid = $1",
            &[
                &s.sid,
                &st.leaf_id,
                &st.name,
                &to_i64(st.entry_count),
                &to_i64(st.stats.message_count),
                &to_i64(st.stats.cached_tokens),
                &to_i64(st.stats.uncached_tokens),
                &to_i64(st.stats.total_tokens),
                &st.stats.cost_total,
                &st.latest_compaction_id,
                &st.first_message,
            ],
        )
        .await
}

/// The state columns, in the order [`state_from_row`] reads them.
pub(crate) const STATE_COLUMNS: &str = "leaf_id, name, entry_count, message_count, cached_tokens,
    uncached_tokens, total_tokens, cost_total, latest_compaction_id, first_message";

/// The materialized state from a row that selected [`STATE_COLUMNS`].
pub(crate) fn state_from_row(r: &Row) -> MaterializedState {
    let count = |i: usize| r.get::<_, i64>(i).max(0) as u64;
    MaterializedState {
        leaf_id: r.get(0),
        name: r.get(1),
        entry_count: count(2),
        stats: arbor_session::SessionStats {
            message_count: count(3),
            cached_tokens: count(4),
            uncached_tokens: count(5),
            total_tokens: count(6),
            cost_total: r.get(7),
        },
        latest_compaction_id: r.get(8),
        first_message: r.get(9),
    }
}

/// A count as a BIGINT column value (saturating; counts never get near it).
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
