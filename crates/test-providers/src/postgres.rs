//! A database of a test's own on the tests' PostgreSQL (`dsh_test_support::postgres`), so a
//! suite that lists sessions sees only its own.

use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh empty database's connection string; `None` (after the one line saying why) when
/// there is no PostgreSQL to test with.
pub async fn fresh_database() -> Option<String> {
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let url = dsh_test_support::postgres::test_url()?;
    let name = format!(
        "t_{}_{}_{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    Some(format!("{url} dbname={name}"))
}

/// Ends every writer's lease in `schema` of the database at `url` now, as if their holders
/// had stopped renewing them a lease's life ago: the server's clock, moved past them.
pub async fn expire_leases(url: &str, schema: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .execute(
            &format!(
                "UPDATE {schema}.dsh_leases SET expires_at = clock_timestamp() - interval '1 s'"
            ),
            &[],
        )
        .await
        .unwrap();
}
