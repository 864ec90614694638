//! The writer's lease: one row a session naming its holder (this provider instance), the
//! holder's host, an expiry the holder renews, and a fencing token that grows with each new
//! holder. Every write checks the token inside its own statement, so a holder whose lease
//! was taken over (it stalled past the expiry, its network dropped) has its late writes
//! refused, never interleaved with the new holder's.

use deadpool_postgres::Pool;
use dsh_session::{PersistenceError, SessionId, SessionLocation};

use crate::store::{Store, io};

/// A new lease, or one that expired or is this holder's already, taken: its token.
const TAKE: &str = "INSERT INTO dsh_leases (session_id, token, holder, host, expires_at)
             VALUES ($1, 1, $2, $3, clock_timestamp() + make_interval(secs => $4))
             ON CONFLICT (session_id) DO UPDATE
                SET token = dsh_leases.token + 1, holder = EXCLUDED.holder,
                    host = EXCLUDED.host, expires_at = EXCLUDED.expires_at
                WHERE dsh_leases.expires_at < clock_timestamp()
                   OR dsh_leases.holder = EXCLUDED.holder
             RETURNING token";

/// Takes the lease of `id`: a new one, one that expired, or this holder's own. The token,
/// or `Locked` naming the live holder's host.
pub(crate) async fn take(store: &Store, id: &SessionId) -> Result<i64, PersistenceError> {
    let op = "taking the session's lease";
    let client = store.client(Some(id), op).await?;
    let statement = client
        .prepare_cached(TAKE)
        .await
        .map_err(|e| io(Some(id), &store.shown, op, e))?;
    let row = client
        .query_opt(
            &statement,
            &[&id.as_str(), &store.holder, &store.host, &store.ttl_secs()],
        )
        .await
        .map_err(|e| io(Some(id), &store.shown, "taking the session's lease", e))?;
    match row {
        Some(row) => Ok(row.get(0)),
        None => Err(locked(store, id).await),
    }
}

/// `Locked`, naming the host that holds `id` (as far as it can still be read).
pub(crate) async fn locked(store: &Store, id: &SessionId) -> PersistenceError {
    let host = match store.client(Some(id), "reading the lease").await {
        Ok(client) => client
            .query_opt(
                "SELECT host FROM dsh_leases WHERE session_id = $1",
                &[&id.as_str()],
            )
            .await
            .ok()
            .flatten()
            .map(|row| row.get::<_, String>(0)),
        Err(_) => None,
    };
    PersistenceError::Locked {
        id: id.clone(),
        location: SessionLocation {
            provider: crate::NAME,
            display: format!(
                "{} on host {}",
                store.location(id),
                host.as_deref().unwrap_or("unknown")
            ),
            path: None,
        },
    }
}

/// Gives the lease of `id` up, if this holder still has it. The row stays, expired: its
/// token must only grow, or a stale holder's token could come round again. Only a session
/// nothing was stored of (`forget`) loses its row.
pub(crate) async fn release(
    store: &Store,
    id: &SessionId,
    forget: bool,
) -> Result<(), PersistenceError> {
    let client = store
        .client(Some(id), "releasing the session's lease")
        .await?;
    let statement = match forget {
        true => "DELETE FROM dsh_leases WHERE session_id = $1 AND holder = $2",
        false => {
            "UPDATE dsh_leases SET expires_at = '-infinity'
              WHERE session_id = $1 AND holder = $2"
        }
    };
    client
        .execute(statement, &[&id.as_str(), &store.holder])
        .await
        .map_err(|e| io(Some(id), &store.shown, "releasing the session's lease", e))?;
    Ok(())
}

/// Renews every lease this holder has, in one statement; how many it still holds.
pub(crate) async fn renew(pool: &Pool, holder: &str, ttl_secs: f64) -> Option<u64> {
    let client = pool.get().await.ok()?;
    client
        .execute(
            "UPDATE dsh_leases SET expires_at = clock_timestamp() + make_interval(secs => $2)
             WHERE holder = $1",
            &[&holder, &ttl_secs],
        )
        .await
        .ok()
}
