//! Finding and listing logs: by file name across project directories, and by
//! header line only for listings.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use dsh_session::{PersistenceError, SessionId, SessionListing, SessionSummary, SkippedLog};

use crate::index;
use crate::layout::{file_name, project_dir};
use crate::open::location;
use dsh_session::log_format::header::{self, HeaderProblem};

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
    let mut found_all: Vec<SessionSummary> = Vec::new();
    for dir in dirs {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                unreadable(&mut listing, &dir, e);
                continue;
            }
        };
        let logs: Vec<Log> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let path = entry.path();
                let wanted = !hidden(&path) && path.extension().is_some_and(|e| e == "jsonl");
                wanted.then(|| Log {
                    name: entry.file_name().to_string_lossy().into_owned(),
                    path,
                    entry,
                })
            })
            .collect();
        let (mut indexed, lines) = index::read(&dir);
        let mut missing = Vec::new();
        for outcome in examine(&logs, &indexed) {
            let found = match outcome {
                Examined::Known(summary) => summary,
                Examined::Read(summary, line) => {
                    missing.push(line);
                    summary
                }
                Examined::Skipped(skipped) => {
                    listing.skipped.push(skipped);
                    continue;
                }
            };
            if cwd.is_none_or(|c| c == found.header.cwd) {
                found_all.push(found);
            }
        }
        // Keeping the index true is best effort: a listing never fails for it.
        if index::overgrown(lines + missing.len(), logs.len()) {
            for line in missing {
                indexed.insert(line.file.clone(), line);
            }
            let _ = index::rewrite(&dir, &indexed);
        } else {
            let _ = index::append(&dir, &missing);
        }
    }
    // An id stored more than once is listed nowhere: which log is the session is unknowable.
    let mut seen: HashMap<&SessionId, usize> = HashMap::with_capacity(found_all.len());
    for summary in &found_all {
        *seen.entry(&summary.header.id).or_default() += 1;
    }
    let twice: std::collections::HashSet<SessionId> = seen
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(id, _)| id.clone())
        .collect();
    for summary in found_all {
        if twice.contains(&summary.header.id) {
            listing.skipped.push(SkippedLog {
                reason: format!("session {} is stored more than once", summary.header.id),
                location: summary.location,
            });
        } else {
            listing.sessions.push(summary);
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

/// What the listing learned of one log.
enum Examined {
    /// The index describes it.
    Known(SessionSummary),
    /// It was read, and the index misses this line.
    Read(SessionSummary, index::Line),
    /// It could not be listed.
    Skipped(SkippedLog),
}

/// Below this many logs a directory is examined on the calling thread.
const PARALLEL_FROM: usize = 512;

/// A log a directory listing found.
struct Log {
    path: PathBuf,
    name: String,
    entry: std::fs::DirEntry,
}

/// Examines `logs`, in order: a `stat` each, and a read of those the index does not
/// describe. A stat costs microseconds on a slow disk, so a large directory is split across
/// the machine's cores.
fn examine(logs: &[Log], indexed: &HashMap<String, index::Line>) -> Vec<Examined> {
    let one = |log: &Log| examine_one(log, indexed);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if logs.len() < PARALLEL_FROM || threads < 2 {
        return logs.iter().map(one).collect();
    }
    let chunk = logs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = logs
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(one).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .zip(logs.chunks(chunk))
            .flat_map(|(part, logs)| {
                // A panicked examiner costs its part a second, sequential try.
                part.join()
                    .unwrap_or_else(|_| logs.iter().map(one).collect())
            })
            .collect()
    })
}

fn examine_one(log: &Log, indexed: &HashMap<String, index::Line>) -> Examined {
    let (path, name) = (log.path.as_path(), log.name.as_str());
    // Relative to the directory (one name to resolve, not the whole path), following a
    // symbolic link as opening the log would.
    let stat = match log.entry.file_type() {
        Ok(kind) if !kind.is_symlink() => log.entry.metadata(),
        Ok(_) | Err(_) => std::fs::metadata(path),
    };
    let meta = match stat {
        Ok(meta) => meta,
        Err(e) => {
            return Examined::Skipped(SkippedLog {
                location: location(path),
                reason: format!("cannot stat: {e}"),
            });
        }
    };
    if let Some(known) = indexed
        .get(name)
        .filter(|known| known.describes(meta.ino(), meta.len()))
    {
        return Examined::Known(indexed_summary(path, &meta, known.clone()));
    }
    match summary(path) {
        Ok((summary, meta)) => {
            let line = index::Line {
                file: name.to_owned(),
                ino: meta.ino(),
                len: meta.len(),
                header: summary.header.clone(),
                title: summary.title.clone(),
            };
            Examined::Read(summary, line)
        }
        Err(reason) => Examined::Skipped(SkippedLog {
            location: location(path),
            reason,
        }),
    }
}

/// A listed log the index describes: nothing of it is read.
fn indexed_summary(path: &Path, meta: &std::fs::Metadata, known: index::Line) -> SessionSummary {
    SessionSummary {
        header: known.header,
        location: location(path),
        updated_at: updated_at(meta),
        title: known.title,
    }
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
