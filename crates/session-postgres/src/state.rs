//! Writing the materialized state (the fold is shared: `arbor_session::MaterializedState`)
//! into the state columns of a `sessions` row.

use arbor_session::MaterializedState;

/// Writes the state columns of a session row (fork and import of a whole session).
pub(crate) async fn write(
    client: &impl deadpool_postgres::GenericClient,
    s: &crate::ops::Sid,
    st: &MaterializedState,
) -> Result<u64, tokio_postgres::Error> {
    use crate::ops::to_i64;
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
