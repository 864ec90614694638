//! The persistence contract every provider passes, run unchanged against a real PostgreSQL:
//! each storage directory of the suite is a schema of its own, and the suite's damage to
//! stored records is done to the rows that hold them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

use dsh_session::{SessionId, SessionPersistence};
use dsh_session_postgres::{PostgresConfig, PostgresPersistence};
use dsh_test_providers::persistence_contract::{Harness, run};

struct Postgres {
    url: String,
}

/// The schema standing for a storage directory.
fn schema(dir: &Path) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    dir.hash(&mut hasher);
    format!("contract_{:016x}", hasher.finish())
}

/// Runs `future` to its end from the suite's synchronous harness calls.
fn block<T>(future: impl Future<Output = T>) -> T {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(future))
}

impl Postgres {
    fn client(&self, dir: &Path) -> tokio_postgres::Client {
        block(async {
            let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .batch_execute(&format!("SET search_path TO {}", schema(dir)))
                .await
                .unwrap();
            client
        })
    }
}

impl Harness for Postgres {
    fn provider(&self, dir: &Path) -> Arc<dyn SessionPersistence> {
        let mut config = PostgresConfig::new(self.url.clone());
        config.schema = schema(dir);
        block(PostgresPersistence::connect(config)).unwrap()
    }

    fn records(&self, dir: &Path, id: &SessionId) -> Option<(Vec<Vec<u8>>, Vec<u8>)> {
        let client = self.client(dir);
        let row = block(client.query_opt(
            "SELECT s.header, coalesce((SELECT string_agg(c.records, ''::bytea ORDER BY
                    c.start_byte) FROM dsh_chunks c WHERE c.session_id = s.id), ''::bytea)
               FROM dsh_sessions s WHERE s.id = $1",
            &[&id.as_str()],
        ))
        .unwrap()?;
        let mut records = vec![row.get::<_, Vec<u8>>(0)];
        let body: Vec<u8> = row.get(1);
        let mut rest = &body[..];
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            records.push(rest[..end].to_vec());
            rest = &rest[end + 1..];
        }
        Some((records, rest.to_vec()))
    }

    fn write_records(&self, dir: &Path, id: &SessionId, records: &[Vec<u8>], trailing: &[u8]) {
        let client = self.client(dir);
        let mut body = Vec::new();
        for record in &records[1..] {
            body.extend_from_slice(record);
            body.push(b'\n');
        }
        body.extend_from_slice(trailing);
        block(async {
            client
                .execute(
                    "DELETE FROM dsh_chunks WHERE session_id = $1",
                    &[&id.as_str()],
                )
                .await
                .unwrap();
            client
                .execute(
                    "UPDATE dsh_sessions SET header = $2, bytes = length($3::bytea),
                            revision = nextval('dsh_revision') WHERE id = $1",
                    &[&id.as_str(), &records[0], &body],
                )
                .await
                .unwrap();
            client
                .execute(
                    "INSERT INTO dsh_chunks (session_id, start_byte, records) VALUES ($1, 0, $2)",
                    &[&id.as_str(), &body],
                )
                .await
                .unwrap();
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_provider_keeps_the_persistence_contract() {
    let Some(url) = dsh_test_support::postgres::test_url() else {
        return;
    };
    run(&Postgres { url }).await;
}
