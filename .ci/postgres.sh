# Sourced by .ci/run: a private PostgreSQL for the run's tests of the PostgreSQL session
# store. The machine's newest PostgreSQL (installed with apt-get when it is absent) runs from
# a directory of the run's own, on a Unix socket there and no TCP port, as the `postgres`
# user when the run is root (PostgreSQL refuses root). `pg_start` exports where the tests
# find it (DSH_TEST_POSTGRES_URL) and the binaries for tests that start their own server;
# `pg_stop` stops it and removes the directory.

pg_bin() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

pg_as() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_start() {
    PG_BIN=$(pg_bin)
    if [ -z "$PG_BIN" ]; then
        echo "ci: PostgreSQL is not installed; installing it with apt-get" >&2
        apt-get update -qq >/dev/null && apt-get install -y -qq postgresql >/dev/null
        PG_BIN=$(pg_bin)
    fi
    if [ -z "$PG_BIN" ]; then
        echo "ci: no PostgreSQL: the session store's PostgreSQL tests cannot run" >&2
        return 1
    fi
    PG_DIR=$(mktemp -d /tmp/dsh-ci-pg.XXXXXX)
    chmod 755 "$PG_DIR"
    if [ "$(id -u)" = 0 ]; then
        chown postgres:postgres "$PG_DIR"
    fi
    pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U dsh -A trust -E UTF8 --locale=C --no-sync >/dev/null
    pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
        -o "-k $PG_DIR -p 5432 -c listen_addresses= -c fsync=off -c max_connections=200" \
        start >/dev/null
    "$PG_BIN/createdb" -h "$PG_DIR" -p 5432 -U dsh dsh_test
    export DSH_TEST_POSTGRES_URL="host=$PG_DIR port=5432 user=dsh dbname=dsh_test"
    export DSH_TEST_POSTGRES_BIN="$PG_BIN"
    echo "ci: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on $PG_DIR" >&2
}

pg_stop() {
    if [ -n "${PG_DIR:-}" ]; then
        pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "$PG_DIR"
        PG_DIR=
    fi
}
