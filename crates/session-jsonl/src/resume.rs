//! Reading a stored header, and reopening a stored log for appending after checking it is
//! the one the caller loaded.

use dsh_session::{PersistenceError, SessionHeader, SessionId};

use crate::load;
use crate::open::{location, on_pool};

pub(crate) fn read_header_only(
    id: &SessionId,
    path: &std::path::Path,
) -> Result<SessionHeader, PersistenceError> {
    let file = std::fs::File::open(path).map_err(|e| PersistenceError::Io {
        id: Some(id.clone()),
        location: path.display().to_string(),
        op: "open",
        source: e,
    })?;
    let mut reader = std::io::BufReader::new(&file);
    load::read_header(id, path, &mut reader).map(|(h, _)| h)
}

/// Opens a stored log for appending after checking it is the one the caller loaded.
pub(crate) async fn resume_file(
    id: &SessionId,
    path: &std::path::Path,
    header: &SessionHeader,
    revision: &dsh_session::StoreRevision,
) -> Result<(std::fs::File, u64), PersistenceError> {
    let shown = path.display().to_string();
    let owned = id.clone();
    let (id, path, header, revision) = (
        id.clone(),
        path.to_path_buf(),
        header.clone(),
        revision.clone(),
    );
    let opened = on_pool(
        Some(&owned),
        "resume",
        move || -> std::io::Result<Result<(std::fs::File, u64), PersistenceError>> {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .append(true)
                .open(&path)?;
            if file.try_lock().is_err() {
                return Ok(Err(PersistenceError::Locked {
                    id,
                    location: location(&path),
                }));
            }
            let stored = {
                let mut reader = std::io::BufReader::new(&file);
                load::read_header(&id, &path, &mut reader)
            };
            let conflict = |reason: &str| PersistenceError::Conflict {
                id: id.clone(),
                location: location(&path),
                reason: reason.into(),
            };
            match stored {
                Err(err) => return Ok(Err(err)),
                Ok((stored, _)) if stored != header => {
                    return Ok(Err(conflict(
                        "the stored header differs from the session's",
                    )));
                }
                Ok(_) => {}
            }
            if load::revision(&file)? != revision {
                return Ok(Err(conflict("log changed since it was loaded")));
            }
            let len = file.metadata()?.len();
            Ok(Ok((file, len)))
        },
    )
    .await?;
    opened.map_err(|source| PersistenceError::Io {
        id: Some(owned),
        location: shown,
        op: "resume",
        source,
    })?
}
