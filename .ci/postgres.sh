#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the session-postgres tests (CI and local use).
#
#   eval "$(.ci/postgres.sh start)"   # prints `export ARBOR_TEST_POSTGRES_URL=...` (and PGDATA dir)
#   .ci/postgres.sh stop DIR          # stops the cluster started in DIR and removes DIR
#   .ci/postgres.sh restart DIR       # `pg_ctl restart -m fast` of that cluster (fault tests)
#
# `start` installs PostgreSQL from the distribution's packages when `initdb` is missing, creates
# a cluster in a fresh temporary directory owned by the `postgres` user, listens only on a Unix
# socket in that directory (no TCP port, nothing reachable from outside) and trusts local
# connections. Everything the cluster writes stays in that directory.
set -euo pipefail

pg_bin() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
    return 1
}

as_postgres() {
    if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}

start() {
    local bin dir
    if ! bin="$(pg_bin)"; then
        echo "postgres.sh: installing PostgreSQL (apt)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq postgresql >&2
        bin="$(pg_bin)"
    fi
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
    dir="$(mktemp -d /tmp/arbor-pg.XXXXXX)"
    chown postgres "$dir"
    chmod 700 "$dir"
    as_postgres "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    # Unix socket only; enough connections for the load benchmark (one held per open writer).
    local listen="''" tls=""
    if [ -n "${ARBOR_PG_TLS_PORT:-}" ]; then
        # TLS tests: also 127.0.0.1:PORT with a certificate for 127.0.0.1 signed by a fresh CA.
        make_certs "$dir"
        listen="'127.0.0.1' -c port=$ARBOR_PG_TLS_PORT"
        tls="-c ssl=on -c ssl_cert_file='$dir/server.crt' -c ssl_key_file='$dir/server.key'"
    fi
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=$listen -c unix_socket_directories='$dir' -c max_connections=300 -c fsync=on $tls" \
        start >&2 || { cat "$dir/server.log" >&2; exit 1; }
    if [ -n "${ARBOR_PG_TLS_PORT:-}" ]; then
        echo "export ARBOR_TEST_POSTGRES_URL='postgresql:///postgres?host=$dir&user=postgres&port=$ARBOR_PG_TLS_PORT'"
        echo "export ARBOR_TEST_POSTGRES_TLS_URL='postgres://postgres@127.0.0.1:$ARBOR_PG_TLS_PORT/postgres?sslmode=require'"
        echo "export ARBOR_TEST_POSTGRES_CA='$dir/ca.crt'"
    else
        echo "export ARBOR_TEST_POSTGRES_URL='postgresql:///postgres?host=$dir&user=postgres'"
    fi
    echo "export ARBOR_TEST_POSTGRES_DIR='$dir'"
}

# A throwaway CA and a server certificate for 127.0.0.1/localhost (openssl), owned by postgres.
make_certs() {
    local dir="$1"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=arbor test CA" \
        -keyout "$dir/ca.key" -out "$dir/ca.crt" >/dev/null 2>&1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$dir/server.key" -out "$dir/server.csr" >/dev/null 2>&1
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' \
        >"$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
        -CAcreateserial -days 2 -extfile "$dir/server.ext" -out "$dir/server.crt" >/dev/null 2>&1
    chown postgres "$dir/server.key" "$dir/server.crt"
    chmod 600 "$dir/server.key"
    chmod 644 "$dir/ca.crt"
}

stop() {
    local dir="${1:?usage: postgres.sh stop DIR}" bin
    bin="$(pg_bin)" || return 0
    if [ -d "$dir/data" ]; then
        as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    fi
    rm -rf "$dir"
}

restart() {
    local dir="${1:?usage: postgres.sh restart DIR}" bin
    bin="$(pg_bin)"
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart >&2 \
        || { cat "$dir/server.log" >&2; exit 1; }
}

case "${1:-}" in
    start) start ;;
    stop) shift; stop "$@" ;;
    restart) shift; restart "$@" ;;
    *) echo "usage: $0 start | stop DIR | restart DIR" >&2; exit 2 ;;
esac
