//! Where sessions are stored: JSONL files under the data directory (the embedded default), or
//! a PostgreSQL database (`sessions_url`, or `DSH_SESSIONS_URL`) that a team's machines share.

use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;

use dsh_kernel::Plugin;
use dsh_session::SessionPersistence;
use dsh_session_jsonl::{JsonlConfig, JsonlPersistence, JsonlPlugin};
use dsh_session_postgres::{PostgresConfig, PostgresPersistence, PostgresPlugin};

use crate::exit::Failure;
use crate::settings::Settings;

/// The session store the settings name.
#[derive(Clone, Debug)]
pub enum Store {
    /// `<data_dir>/sessions`.
    Jsonl(PathBuf),
    /// A PostgreSQL database.
    Postgres {
        /// The connection string, as given (a password in it only from the environment).
        url: String,
        /// What it names, without a password (`postgres://user@host:port/db`).
        shown: String,
        /// The schema dsh's tables live in.
        schema: String,
    },
}

impl Store {
    /// The store of `settings`, touching nothing.
    pub fn of(settings: &Settings) -> Result<Store, Failure> {
        match &settings.sessions_url {
            None => Ok(Store::Jsonl(settings.sessions_dir())),
            Some(url) => {
                let (shown, _) = dsh_session_postgres::describe(&url.value)
                    .map_err(|e| Failure::config(e.to_string()))?;
                Ok(Store::Postgres {
                    url: url.value.clone(),
                    shown,
                    schema: settings.sessions_schema.value.clone(),
                })
            }
        }
    }

    /// The store of `settings`, ready to be written: a JSONL directory is created (private
    /// to the user) if it is missing.
    pub fn prepared(settings: &Settings) -> Result<Store, Failure> {
        let store = Store::of(settings)?;
        if let Store::Jsonl(dir) = &store {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| Failure::internal(format!("cannot create {}: {e}", dir.display())))?;
        }
        Ok(store)
    }

    /// Where the sessions are, for messages.
    pub fn shown(&self) -> String {
        match self {
            Store::Jsonl(dir) => dir.display().to_string(),
            Store::Postgres { shown, .. } => shown.clone(),
        }
    }

    /// The data directory of a JSONL store (`dsh run --json` names it).
    pub fn data_dir(&self) -> Option<String> {
        match self {
            Store::Jsonl(dir) => dir.parent().map(|p| p.display().to_string()),
            Store::Postgres { .. } => None,
        }
    }

    /// Whether nothing can be stored yet: a JSONL directory that does not exist. (A database
    /// is asked.)
    pub fn surely_empty(&self) -> bool {
        match self {
            Store::Jsonl(dir) => !dir.is_dir(),
            Store::Postgres { .. } => false,
        }
    }

    /// The plugin that provides it.
    pub fn plugin(&self) -> Box<dyn Plugin> {
        match self {
            Store::Jsonl(dir) => Box::new(JsonlPlugin {
                config: JsonlConfig::new(dir),
            }),
            Store::Postgres { url, schema, .. } => Box::new(PostgresPlugin {
                config: postgres(url, schema),
            }),
        }
    }

    /// The provider on its own, for a read before anything is composed.
    pub async fn open(&self) -> Result<Arc<dyn SessionPersistence>, Failure> {
        match self {
            Store::Jsonl(dir) => JsonlPersistence::new(JsonlConfig::new(dir))
                .map(|p| p as Arc<dyn SessionPersistence>)
                .map_err(|e| Failure::internal(e.to_string())),
            Store::Postgres { url, schema, .. } => {
                PostgresPersistence::connect(postgres(url, schema))
                    .await
                    .map(|p| p as Arc<dyn SessionPersistence>)
                    .map_err(|e| Failure::internal(e.to_string()))
            }
        }
    }
}

fn postgres(url: &str, schema: &str) -> PostgresConfig {
    PostgresConfig {
        schema: schema.to_owned(),
        ..PostgresConfig::new(url)
    }
}
