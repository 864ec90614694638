//! The provider's configuration: where the database is, which schema holds dsh's tables, and
//! the lease's timing.

use std::time::Duration;

/// How the PostgreSQL provider connects and keeps its leases.
#[derive(Clone, Debug)]
pub struct PostgresConfig {
    /// A libpq connection string or URL (`postgres://user@host:5432/db?sslmode=require`).
    /// A password is taken from it, else from `PGPASSWORD`, else from the `.pgpass` file
    /// (`PGPASSFILE` or `~/.pgpass`).
    pub url: String,
    /// The schema dsh's tables live in (created when missing); `dsh` by default.
    pub schema: String,
    /// How long a writer's lease lasts without renewal: a crashed holder's session can be
    /// taken over this long after its last renewal.
    pub lease_ttl: Duration,
    /// How long accepted events may wait before a write without a flush (write-behind).
    pub write_window: Duration,
    /// The name this machine's leases give, for "open in another dsh process" messages.
    pub host: String,
}

impl PostgresConfig {
    /// The configuration of `url` with the defaults: schema `dsh`, 30 s leases, 200 ms
    /// write-behind, the machine's host name.
    pub fn new(url: impl Into<String>) -> PostgresConfig {
        PostgresConfig {
            url: url.into(),
            schema: "dsh".into(),
            lease_ttl: Duration::from_secs(30),
            write_window: Duration::from_millis(200),
            host: host_name(),
        }
    }
}

/// This machine's name (`/proc/sys/kernel/hostname`, else `HOSTNAME`, else `unknown`).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// Whether `schema` is a plain identifier dsh can name unquoted: a lower-case letter or `_`,
/// then lower-case letters, digits and `_`, at most 63 bytes.
pub(crate) fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && schema.len() <= 63
}
