//! Finding and listing logs: by file name across project directories, and by
//! header line only for listings.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use dsh_session::{PersistenceError, SessionId, SessionListing, SessionSummary, SkippedLog};

use crate::header::{self, HeaderProblem};
use crate::layout::{file_name, project_dir};
use crate::open::location;

fn hidden(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

/// The non-hidden project directories under `root` (none when `root` does not exist).
pub(crate) fn projects(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !hidden(p))
        .collect();
    dirs.sort();
    dirs
}

/// Every stored log of `id`.
pub(crate) fn find(root: &Path, id: &SessionId) -> Vec<PathBuf> {
    let name = file_name(id.as_str());
    projects(root)
        .into_iter()
        .map(|dir| dir.join(&name))
        .filter(|p| p.is_file())
        .collect()
}

/// The one stored log of `id`, `None` when absent, `Ambiguous` when two claim it.
pub(crate) fn find_one(root: &Path, id: &SessionId) -> Result<Option<PathBuf>, PersistenceError> {
    let mut found = find(root, id);
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(PersistenceError::Ambiguous {
            id: id.clone(),
            locations: found.iter().map(|p| location(p)).collect(),
        }),
    }
}

/// Lists materialized sessions, reading at most 64 KiB of each file (its header line).
pub(crate) fn list(root: &Path, cwd: Option<&str>) -> SessionListing {
    let dirs = match cwd {
        Some(cwd) => vec![root.join(project_dir(cwd))],
        None => projects(root),
    };
    let mut listing = SessionListing::default();
    let mut by_id: HashMap<SessionId, Vec<SessionSummary>> = HashMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            if hidden(&path) || path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            match summary(&path) {
                Ok(summary) if cwd.is_none_or(|c| c == summary.header.cwd) => {
                    by_id
                        .entry(summary.header.id.clone())
                        .or_default()
                        .push(summary);
                }
                Ok(_) => {}
                Err(reason) => listing.skipped.push(SkippedLog {
                    location: location(&path),
                    reason,
                }),
            }
        }
    }
    for (id, mut found) in by_id {
        if found.len() == 1 {
            listing.sessions.append(&mut found);
        } else {
            for summary in found {
                listing.skipped.push(SkippedLog {
                    location: summary.location,
                    reason: format!("session {id} is stored more than once"),
                });
            }
        }
    }
    listing.sessions.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then_with(|| a.header.id.cmp(&b.header.id))
    });
    listing
        .skipped
        .sort_by(|a, b| a.location.display.cmp(&b.location.display));
    listing
}

fn summary(path: &Path) -> Result<SessionSummary, String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot stat: {e}"))?;
    let mut head = Vec::new();
    BufReader::new(&file)
        .take(64 * 1024)
        .read_to_end(&mut head)
        .map_err(|e| format!("cannot read: {e}"))?;
    let line = head
        .split(|b| *b == b'\n')
        .next()
        .filter(|_| head.contains(&b'\n'))
        .ok_or("no complete header line in the first 64 KiB")?;
    let header = header::decode(line).map_err(|p| match p {
        HeaderProblem::Corrupt(reason) => reason,
        HeaderProblem::Version(v) => format!("format version {v} is not supported"),
    })?;
    // Saturating: a far-future mtime (tmpfs stores 64-bit seconds) must not overflow.
    let updated_at = meta
        .mtime()
        .saturating_mul(1000)
        .saturating_add(meta.mtime_nsec() / 1_000_000);
    Ok(SessionSummary {
        header,
        location: location(path),
        updated_at,
    })
}
