//! Connecting: the connection string parsed, the password found, TLS by rustls as the model
//! client does (`sslmode` decides whether it is used), a small pool, and what the user is
//! shown of the database (never a password).

use std::str::FromStr;
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use dsh_session::PersistenceError;
use tokio_postgres::config::Host;

use crate::config::PostgresConfig;

/// Connections one provider keeps at most.
const POOL_SIZE: usize = 8;

/// The pool, and the database as messages name it.
pub(crate) struct Connected {
    pub pool: Pool,
    pub shown: String,
}

/// A configuration error.
pub(crate) fn config_error(reason: impl Into<String>) -> PersistenceError {
    PersistenceError::Config {
        reason: reason.into(),
    }
}

/// What `url` names, as messages show it (`postgres://user@host:port/db`, never a password),
/// and whether it holds a password; a connection string that does not parse is an error.
pub fn describe(url: &str) -> Result<(String, bool), PersistenceError> {
    let parsed = parse(url)?;
    Ok((parsed.shown(), parsed.pg.get_password().is_some()))
}

/// A connection string parsed, with libpq's defaults filled in for what it leaves out.
struct Parsed {
    pg: tokio_postgres::Config,
    user: String,
    database: String,
    host: String,
    port: u16,
}

impl Parsed {
    /// How messages name the database.
    fn shown(&self) -> String {
        let Parsed {
            user,
            host,
            port,
            database,
            ..
        } = self;
        format!("postgres://{user}@{host}:{port}/{database}")
    }
}

fn parse(url: &str) -> Result<Parsed, PersistenceError> {
    let mut pg = tokio_postgres::Config::from_str(url)
        .map_err(|e| config_error(format!("sessions_url: {e}")))?;
    if pg.get_user().is_none() {
        let user = std::env::var("PGUSER")
            .or_else(|_| std::env::var("USER"))
            .unwrap_or_else(|_| "postgres".into());
        pg.user(user);
    }
    let user = pg.get_user().unwrap_or_default().to_owned();
    if pg.get_dbname().is_none() {
        pg.dbname(user.clone());
    }
    let database = pg.get_dbname().unwrap_or_default().to_owned();
    let host = match pg.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => {
            pg.host("/var/run/postgresql");
            "/var/run/postgresql".into()
        }
    };
    let port = pg.get_ports().first().copied().unwrap_or(5432);
    Ok(Parsed {
        pg,
        user,
        database,
        host,
        port,
    })
}

/// Builds the pool for `config` (connecting lazily).
pub(crate) fn pool(config: &PostgresConfig) -> Result<Connected, PersistenceError> {
    if !crate::config::valid_schema(&config.schema) {
        return Err(config_error(format!(
            "schema `{}` is not a plain lower-case identifier",
            config.schema
        )));
    }
    let parsed = parse(&config.url)?;
    let shown = parsed.shown();
    let Parsed {
        mut pg,
        user,
        database,
        host,
        port,
    } = parsed;
    if pg.get_password().is_none()
        && let Some(password) = crate::password::lookup(&host, port, &database, &user)
    {
        pg.password(password);
    }
    pg.application_name("dsh");
    // dsh's tables are named unqualified: the schema is every connection's search path.
    let options = format!(
        "{} -c search_path={}",
        pg.get_options().unwrap_or_default(),
        config.schema
    );
    pg.options(options.trim());
    let recycling = ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    // TLS is for the network: a Unix socket never takes it (as libpq does), nor does
    // `sslmode=disable`.
    let local = pg
        .get_hosts()
        .iter()
        .all(|host| matches!(host, Host::Unix(_)));
    let manager = match local || pg.get_ssl_mode() == tokio_postgres::config::SslMode::Disable {
        true => Manager::from_config(pg, tokio_postgres::NoTls, recycling),
        false => Manager::from_config(pg, tls()?, recycling),
    };
    let pool = Pool::builder(manager)
        .max_size(POOL_SIZE)
        .build()
        .map_err(|e| config_error(format!("the connection pool: {e}")))?;
    Ok(Connected { pool, shown })
}

/// The TLS connector: the public web's roots, as the model client trusts.
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, PersistenceError> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| config_error(format!("TLS: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}
