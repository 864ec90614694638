//! Finding and listing logs: by file name across project directories, and by
//! header line only for listings.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use dsh_session::{PersistenceError, SessionId, SessionListing, SessionSummary, SkippedLog};

use crate::header::{self, HeaderProblem};
use crate::index;
use crate::layout::{file_name, project_dir};
use crate::open::location;

fn hidden(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

/// The non-hidden project directories under `root` (none when `root` does not exist). An
/// unreadable root is an error, never "no sessions".
pub(crate) fn projects(root: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !hidden(p))
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Every stored log of `id`; an entry that cannot be examined (EACCES on a project
/// directory) is an error naming it, never "absent".
pub(crate) fn find(root: &Path, id: &SessionId) -> Result<Vec<PathBuf>, PersistenceError> {
    let name = file_name(id.as_str());
    let failed = |path: &Path, source: io::Error| PersistenceError::Io {
        id: Some(id.clone()),
        location: path.display().to_string(),
        op: "search for the session's log",
        source,
    };
    let mut found = Vec::new();
    for dir in projects(root).map_err(|e| failed(root, e))? {
        let path = dir.join(&name);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => found.push(path),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(failed(&path, e)),
        }
    }
    Ok(found)
}

/// The one stored log of `id`, `None` when absent, `Ambiguous` when two claim it.
pub(crate) fn find_one(root: &Path, id: &SessionId) -> Result<Option<PathBuf>, PersistenceError> {
    let mut found = find(root, id)?;
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
    let mut listing = SessionListing::default();
    let unreadable = |listing: &mut SessionListing, dir: &Path, e: io::Error| {
        listing.skipped.push(SkippedLog {
            location: location(dir),
            reason: format!("cannot read the directory: {e}"),
        });
    };
    let dirs = match cwd {
        Some(cwd) => vec![root.join(project_dir(cwd))],
        None => match projects(root) {
            Ok(dirs) => dirs,
            Err(e) => {
                unreadable(&mut listing, root, e);
                Vec::new()
            }
        },
    };
    let mut by_id: HashMap<SessionId, Vec<SessionSummary>> = HashMap::new();
    for dir in dirs {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                unreadable(&mut listing, &dir, e);
                continue;
            }
        };
        let (mut indexed, lines) = index::read(&dir);
        let mut missing = Vec::new();
        let mut logs = 0usize;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if hidden(&path) || path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            logs += 1;
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                Err(e) => {
                    listing.skipped.push(SkippedLog {
                        location: location(&path),
                        reason: format!("cannot stat: {e}"),
                    });
                    continue;
                }
            };
            let known = indexed
                .get(&name)
                .filter(|known| known.describes(meta.ino(), meta.len()))
                .cloned();
            let found = match known {
                Some(known) => Ok(indexed_summary(&path, &meta, known)),
                None => summary(&path).inspect(|(summary, meta)| {
                    missing.push(index::Line {
                        file: name.clone(),
                        ino: meta.ino(),
                        len: meta.len(),
                        header: summary.header.clone(),
                        title: summary.title.clone(),
                    });
                }),
            };
            match found {
                Ok((summary, _)) if cwd.is_none_or(|c| c == summary.header.cwd) => {
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
        // Keeping the index true is best effort: a listing never fails for it.
        if index::overgrown(lines + missing.len(), logs) {
            for line in missing {
                indexed.insert(
                    line.file,
                    index::Entry {
                        ino: line.ino,
                        len: line.len,
                        header: line.header,
                        title: line.title,
                    },
                );
            }
            let _ = index::rewrite(&dir, &indexed);
        } else {
            let _ = index::append(&dir, &missing);
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

/// A listed log the index describes: nothing of it is read.
fn indexed_summary(
    path: &Path,
    meta: &std::fs::Metadata,
    known: index::Entry,
) -> (SessionSummary, std::fs::Metadata) {
    (
        SessionSummary {
            header: known.header,
            location: location(path),
            updated_at: updated_at(meta),
            title: known.title,
        },
        meta.clone(),
    )
}

/// A listed log the index does not describe: its header line, then its title from the log.
fn summary(path: &Path) -> Result<(SessionSummary, std::fs::Metadata), String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot stat: {e}"))?;
    // The header line only: a log's first event (the system text) is often tens of KiB that
    // reading to the 64 KiB bound would cost each time.
    let mut head = Vec::new();
    BufReader::with_capacity(1024, &file)
        .take(64 * 1024)
        .read_until(b'\n', &mut head)
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
    let title = File::open(path)
        .ok()
        .and_then(|file| index::title_from_log(&file));
    Ok((
        SessionSummary {
            header,
            location: location(path),
            updated_at: updated_at(&meta),
            title,
        },
        meta,
    ))
}

/// Epoch ms of a log's last write. Saturating: a far-future mtime (tmpfs stores 64-bit
/// seconds) must not overflow.
fn updated_at(meta: &std::fs::Metadata) -> i64 {
    meta.mtime()
        .saturating_mul(1000)
        .saturating_add(meta.mtime_nsec() / 1_000_000)
}
