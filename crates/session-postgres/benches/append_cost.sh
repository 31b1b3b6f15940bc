#!/usr/bin/env bash
# Server CPU per append, by schema variant (DECISIONS §24.50): pgbench runs the append statement
# of `writer.rs` (session-row update + entry insert in one CTE, `synchronous_commit = off`) from
# 64 clients on 4 threads (or CLIENTS), one session per client, against a private cluster, and
# reads the cumulative CPU of the postmaster and all its children from /proc before and after
# each run. Variants: v2 and v3 as schema.rs ships them; v2 without one index or the key
# (v2_no_parent, v2_no_type, v2_no_fk); v3 without the parent index (v3_no_parent) and that
# with one change taken back (v3_no_parent_with_fk, v3_no_parent_with_full_type) or the state
# columns in a table of their own (v3_no_parent_narrow); v2_no_update (the entry insert alone).
# Variants are run in interleaved rounds, so machine load drifts over all of them alike.
#
#   crates/session-postgres/benches/append_cost.sh [ROUNDS] [APPENDS_PER_CLIENT] [VARIANTS...]
#
# Needs root (or the postgres user) for `.ci/postgres.sh start` and /proc of the server.
set -euo pipefail
rounds="${1:-3}"
per="${2:-400}"
shift 2 || true
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(v2 v3 v3_no_parent v3_no_parent_with_fk v3_no_parent_with_full_type)
root="$(cd "$(dirname "$0")/../../.." && pwd)"
eval "$("$root/.ci/postgres.sh" start)"
trap '"$root/.ci/postgres.sh" stop "$ARBOR_TEST_POSTGRES_DIR"' EXIT
dir="$ARBOR_TEST_POSTGRES_DIR"
psql=(psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -U postgres postgres)
clients="${CLIENTS:-64}"   # CLIENTS=1: the work of one append without contention
threads=$(( clients < 4 ? clients : 4 ))

# Schema of each variant: version 2 (schema.rs V1 + V2) and what each variant leaves out.
schema_sql() {
    local v="$1" fk="REFERENCES sessions (sid) ON DELETE CASCADE"
    local parent="CREATE INDEX entries_parent ON entries (sid, parent_id);"
    local type="CREATE INDEX entries_type ON entries (sid, type, seq);"
    local partial="CREATE INDEX entries_type ON entries (sid, type, seq) WHERE type <> 'message';"
    case "$v" in
        v2_no_parent) parent="" ;;
        v2_no_type) type="" ;;
        v2_no_fk) fk="" ;;
        v3) fk=""; type="$partial" ;;
        v3_no_parent|v3_no_parent_narrow) parent=""; fk=""; type="$partial" ;;
        # one change taken back (what each is worth next to the others)
        v3_no_parent_with_fk) parent=""; type="$partial" ;;
        v3_no_parent_with_full_type) parent=""; fk="" ;;
    esac
    cat <<SQL
DROP SCHEMA IF EXISTS bench CASCADE;
CREATE SCHEMA bench;
SET search_path = bench;
CREATE TABLE sessions (
    sid integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id text NOT NULL UNIQUE,
    cwd text NOT NULL, created text NOT NULL, parent_session text, header text NOT NULL,
    name text, leaf_id text, entry_count bigint NOT NULL DEFAULT 0,
    message_count bigint NOT NULL DEFAULT 0, cached_tokens bigint NOT NULL DEFAULT 0,
    uncached_tokens bigint NOT NULL DEFAULT 0, total_tokens bigint NOT NULL DEFAULT 0,
    cost_total double precision NOT NULL DEFAULT 0, latest_compaction_id text,
    first_message text, updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
) WITH (fillfactor = 20);
CREATE INDEX sessions_cwd ON sessions (cwd);
CREATE TABLE entries (
    sid integer NOT NULL $fk, seq bigint NOT NULL, id text NOT NULL, parent_id text,
    type text NOT NULL, role text, target_id text, timestamp text NOT NULL,
    payload json NOT NULL, PRIMARY KEY (sid, seq), UNIQUE (sid, id)
);
$parent
$type
CREATE INDEX entries_target ON entries (sid, target_id) WHERE target_id IS NOT NULL;
-- Only for the informational v3_no_parent_narrow variant: the state columns in a table of their own.
CREATE TABLE state (
    sid integer PRIMARY KEY, name text, leaf_id text, entry_count bigint NOT NULL DEFAULT 0,
    message_count bigint NOT NULL DEFAULT 0, cached_tokens bigint NOT NULL DEFAULT 0,
    uncached_tokens bigint NOT NULL DEFAULT 0, total_tokens bigint NOT NULL DEFAULT 0,
    cost_total double precision NOT NULL DEFAULT 0, latest_compaction_id text,
    first_message text, updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
) WITH (fillfactor = 20);
INSERT INTO state (sid) SELECT g FROM generate_series(1, $clients) g;
INSERT INTO sessions (id, cwd, created, header)
SELECT 'bench-' || g, '/bench', '2026-01-01T00:00:00.000Z',
       '{"type":"session","version":3,"id":"bench-' || g || '","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/bench"}'
FROM generate_series(1, $clients) g;
ALTER ROLE postgres SET search_path = bench;
ALTER ROLE postgres SET synchronous_commit = off;
CHECKPOINT;
SQL
}

# The append (writer.rs APPEND_SQL) with the client's values computed on the server: ids are
# random 8-hex strings as `ids::random_entry_id` draws them; the payload is the load bench's.
cat >"$dir/append.sql" <<'SQL'
\set sid :client_id + 1
WITH st AS (
    UPDATE sessions SET leaf_id = substr(md5(random()::text), 1, 8), name = NULL,
        entry_count = entry_count + 1, message_count = message_count + 1, cached_tokens = 0,
        uncached_tokens = 0, total_tokens = 0, cost_total = 0, latest_compaction_id = NULL,
        first_message = 'append 0: please look at src/lib.rs', updated_at = clock_timestamp()
    WHERE sid = :sid
    RETURNING sid, entry_count, leaf_id
)
INSERT INTO entries (sid, seq, id, parent_id, type, role, target_id, timestamp, payload)
SELECT sid, entry_count, substr(md5(random()::text), 1, 8), leaf_id, 'message', 'user', NULL,
       '2026-12-02T00:00:00.000Z',
       CAST('{"type":"message","id":"0123abcd","parentId":"89abcdef","timestamp":"2026-12-02T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"append 17: please look at src/lib.rs and tell me what the parser does"}],"timestamp":1}}'::text AS json)
FROM st;
SQL
sed 's/UPDATE sessions SET/UPDATE state SET/' "$dir/append.sql" >"$dir/append_narrow.sql"
# Informational: the entry insert alone, no session-row update (what that update costs).
cat >"$dir/insert_only.sql" <<'SQL'
\set sid :client_id + 1
\set seq :seq + 1
INSERT INTO entries (sid, seq, id, parent_id, type, role, target_id, timestamp, payload)
VALUES (:sid, :seq, substr(md5(random()::text), 1, 8), substr(md5(random()::text), 1, 8),
        'message', 'user', NULL, '2026-12-02T00:00:00.000Z',
        CAST('{"type":"message","id":"0123abcd","parentId":"89abcdef","timestamp":"2026-12-02T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"append 17: please look at src/lib.rs and tell me what the parser does"}],"timestamp":1}}'::text AS json));
SQL

# Ticks (1/100 s) of the postmaster and every child: own time plus reaped children's time.
server_ticks() {
    local pm total=0 pid f
    pm="$(head -1 "$dir/data/postmaster.pid")"
    for pid in "$pm" $(ps -o pid= --ppid "$pm"); do
        [ -r "/proc/$pid/stat" ] || continue
        f="$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null)" || continue
        # after ") ": field 3 is state, so utime..cstime are fields 12..15 of the remainder
        total=$((total + $(echo "$f" | awk '{print $12 + $13 + $14 + $15}')))
    done
    echo "$total"
}

for round in $(seq 1 "$rounds"); do
    for v in "${variants[@]}"; do
        script="$dir/append.sql"
        base="$v"
        if [ "$v" = v2_no_update ]; then script="$dir/insert_only.sql"; base=v2; fi
        if [ "$v" = v3_no_parent_narrow ]; then script="$dir/append_narrow.sql"; fi
        schema_sql "$base" | "${psql[@]}" >/dev/null
        before="$(server_ticks)"
        out="$(pgbench -n -h "$dir" -U postgres -M prepared -c "$clients" -j "$threads" -t "$per" -D seq=0 \
            -f "$script" postgres 2>&1)"
        after="$(server_ticks)"
        tps="$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
        lat="$(echo "$out" | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')"
        n=$((clients * per))
        us=$(( (after - before) * 10000 / n ))
        load="$(cut -d' ' -f1 /proc/loadavg)"
        echo "round $round $v: ${us} µs server CPU per append ($((after - before)) ticks / $n), ${tps} tps, latency avg ${lat} ms, load $load"
    done
done
