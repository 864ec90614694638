//! dsh's tables, created and migrated by dsh itself: each migration a version, applied in
//! order under an advisory lock (two processes starting at once do not both apply one), and a
//! database whose schema is newer than this dsh knows is refused, never written.
//!
//! The log is kept in the format every provider stores (`dsh_session::log_format`): the
//! header record in `dsh_sessions`, the event records in `dsh_chunks`, one chunk a flush,
//! keyed by its first byte's offset so a write is never stored twice.

use deadpool_postgres::Pool;
use dsh_session::PersistenceError;

use crate::connect::config_error;

/// The migrations, in order; the schema's version is how many were applied.
const MIGRATIONS: &[&str] = &[r"
CREATE SEQUENCE dsh_revision;
CREATE TABLE dsh_sessions (
    id text PRIMARY KEY,
    header bytea NOT NULL,
    cwd text NOT NULL,
    project text NOT NULL DEFAULT '',
    parent text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    title text,
    bytes bigint NOT NULL,
    revision bigint NOT NULL
);
CREATE INDEX dsh_sessions_by_time ON dsh_sessions (updated_at DESC, id);
CREATE INDEX dsh_sessions_by_cwd ON dsh_sessions (cwd, updated_at DESC);
CREATE INDEX dsh_sessions_by_project ON dsh_sessions (project, updated_at DESC);
CREATE TABLE dsh_chunks (
    session_id text NOT NULL REFERENCES dsh_sessions (id) ON DELETE CASCADE,
    start_byte bigint NOT NULL,
    records bytea NOT NULL,
    PRIMARY KEY (session_id, start_byte)
);
CREATE TABLE dsh_leases (
    session_id text PRIMARY KEY,
    token bigint NOT NULL,
    holder text NOT NULL,
    host text NOT NULL,
    expires_at timestamptz NOT NULL
);
"];

/// The schema version this dsh writes.
pub(crate) const VERSION: i32 = MIGRATIONS.len() as i32;

/// An arbitrary constant naming dsh's migration lock among advisory locks.
const LOCK: i64 = 0x6473_685f_6d69_6772;

/// Creates or migrates the tables in `schema`; refuses a schema newer than [`VERSION`].
pub(crate) async fn migrate(
    pool: &Pool,
    schema: &str,
    shown: &str,
) -> Result<(), PersistenceError> {
    let failed = |e: &dyn std::fmt::Display| {
        config_error(format!("{shown}: preparing the sessions schema: {e}"))
    };
    let mut client = pool.get().await.map_err(|e| failed(&e))?;
    let tx = client.transaction().await.map_err(|e| failed(&e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await
        .map_err(|e| failed(&e))?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.dsh_migrations (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(|e| failed(&e))?;
    let row = tx
        .query_one(
            &format!("SELECT coalesce(max(version), 0) FROM {schema}.dsh_migrations"),
            &[],
        )
        .await
        .map_err(|e| failed(&e))?;
    let at: i32 = row.get(0);
    if at > VERSION {
        return Err(config_error(format!(
            "{shown}: the sessions schema `{schema}` is at version {at}, newer than this dsh \
             knows ({VERSION}); it was migrated by a newer dsh: upgrade dsh"
        )));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(at as usize) {
        let version = index as i32 + 1;
        tx.batch_execute(&format!("SET LOCAL search_path TO {schema}; {migration}"))
            .await
            .map_err(|e| failed(&e))?;
        tx.execute(
            &format!("INSERT INTO {schema}.dsh_migrations (version) VALUES ($1)"),
            &[&version],
        )
        .await
        .map_err(|e| failed(&e))?;
    }
    tx.commit().await.map_err(|e| failed(&e))
}
