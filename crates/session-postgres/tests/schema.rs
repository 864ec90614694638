//! dsh's own tables: created on first use, refused when a newer dsh migrated them, and a
//! database that cannot be reached said so, naming it and never a password.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_session::{ListQuery, SessionPersistence};
use dsh_session_postgres::{PostgresConfig, PostgresPersistence};

fn config(url: &str, schema: &str) -> PostgresConfig {
    PostgresConfig {
        schema: schema.into(),
        ..PostgresConfig::new(url)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_a_newer_dsh_migrated_is_refused_and_left_as_it_is() {
    let Some(url) = dsh_test_support::postgres::test_url() else {
        return;
    };
    let schema = format!("newer_{}", std::process::id());
    let first = PostgresPersistence::connect(config(&url, &schema))
        .await
        .unwrap();
    assert!(
        first
            .list(&ListQuery::default())
            .await
            .unwrap()
            .sessions
            .is_empty()
    );
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .execute(
            &format!("INSERT INTO {schema}.dsh_migrations (version) VALUES (99)"),
            &[],
        )
        .await
        .unwrap();
    let Err(refused) = PostgresPersistence::connect(config(&url, &schema)).await else {
        panic!("a schema at version 99 was accepted");
    };
    let said = refused.to_string();
    assert!(
        said.contains("at version 99, newer than this dsh knows"),
        "{said}"
    );
    assert!(said.contains("upgrade dsh"), "{said}");
    let row = client
        .query_one(
            &format!("SELECT max(version) FROM {schema}.dsh_migrations"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<i32>>(0), Some(99), "left as it is");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_cannot_be_reached_is_named_without_its_password() {
    let nowhere = std::env::temp_dir().join(format!("no-postgres-{}", std::process::id()));
    let url = format!(
        "host={} port=5432 user=ana password=s3cret dbname=team",
        nowhere.display()
    );
    let Err(failed) = PostgresPersistence::connect(config(&url, "dsh")).await else {
        panic!("connected to nothing");
    };
    let said = failed.to_string();
    assert!(
        said.contains(&format!("postgres://ana@{}:5432/team", nowhere.display())),
        "{said}"
    );
    assert!(!said.contains("s3cret"), "{said}");
}

#[test]
fn a_schema_name_that_is_not_a_plain_identifier_is_refused() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Err(refused) = runtime.block_on(PostgresPersistence::connect(config(
        "host=/nowhere user=ana dbname=team",
        "dsh; DROP TABLE x",
    ))) else {
        panic!("accepted");
    };
    assert!(
        refused
            .to_string()
            .contains("not a plain lower-case identifier"),
        "{refused}"
    );
}
