//! Which stored session an argument names: a full id, or a unique prefix of one (at least
//! [`MIN_PREFIX`] characters), as `dsh sessions` and `dsh run --session` take them.

use dsh_session::{ListQuery, SessionId, SessionPersistence, SessionSummary};

use crate::exit::Failure;

/// The shortest prefix an argument may name a session by.
pub const MIN_PREFIX: usize = 8;

/// The session an argument names: a full id directly, else a unique prefix.
pub async fn resolve(
    persistence: &dyn SessionPersistence,
    store: &crate::store::Store,
    arg: &str,
) -> Result<SessionId, Failure> {
    let unknown = || Failure {
        status: 1,
        code: "unknown_session",
        message: format!(
            "no session '{arg}' in {}; see `dsh sessions list`",
            store.shown()
        ),
    };
    if let Ok(id) = SessionId::parse(arg)
        && persistence
            .header(&id)
            .await
            .map_err(|e| Failure::internal(e.to_string()))?
            .is_some()
    {
        return Ok(id);
    }
    if arg.len() < MIN_PREFIX {
        return Err(unknown());
    }
    let listing = persistence
        .list(&ListQuery::default())
        .await
        .map_err(|e| Failure::internal(e.to_string()))?;
    let matches: Vec<&SessionSummary> = listing
        .sessions
        .iter()
        .filter(|s| s.header.id.to_string().starts_with(arg))
        .collect();
    match matches.as_slice() {
        [] => Err(unknown()),
        [one] => Ok(one.header.id.clone()),
        many => Err(Failure {
            status: 1,
            code: "ambiguous_session",
            message: format!(
                "'{arg}' matches {} sessions: {}",
                many.len(),
                many.iter()
                    .map(|s| s.header.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}
