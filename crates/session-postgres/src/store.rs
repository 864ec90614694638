//! What every operation of one provider instance shares: the pool, the database as messages
//! name it, and who this instance is as a lease holder.

use std::time::Duration;

use deadpool_postgres::{Object, Pool};
use dsh_session::{PersistenceError, SessionId, SessionLocation};

/// One provider instance's connection and identity.
pub(crate) struct Store {
    pub pool: Pool,
    /// `postgres://user@host:port/db`, never with a password.
    pub shown: String,
    /// This instance as a lease holder: `host:pid:random`, unique to the instance.
    pub holder: String,
    /// This machine's name.
    pub host: String,
    pub ttl: Duration,
    pub window: Duration,
}

impl Store {
    pub(crate) fn ttl_secs(&self) -> f64 {
        self.ttl.as_secs_f64()
    }

    /// A pooled connection; failing to get one is an I/O failure of `op`.
    pub(crate) async fn client(
        &self,
        id: Option<&SessionId>,
        op: &'static str,
    ) -> Result<Object, PersistenceError> {
        self.pool.get().await.map_err(|e| PersistenceError::Io {
            id: id.cloned(),
            location: self.shown.clone(),
            op,
            source: std::io::Error::other(e.to_string()),
        })
    }

    /// Where `id` is stored, for messages.
    pub(crate) fn location(&self, id: &SessionId) -> SessionLocation {
        SessionLocation {
            provider: crate::NAME,
            display: format!("{} session {id}", self.shown),
            path: None,
        }
    }
}

/// A database failure of `op`, as the persistence seam reports storage failures.
pub(crate) fn io(
    id: Option<&SessionId>,
    shown: &str,
    op: &'static str,
    error: tokio_postgres::Error,
) -> PersistenceError {
    PersistenceError::Io {
        id: id.cloned(),
        location: shown.to_owned(),
        op,
        source: std::io::Error::other(describe(&error)),
    }
}

/// What went wrong, in the server's words when it answered (tokio-postgres alone says only
/// "db error").
pub(crate) fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            text
        }
    }
}
