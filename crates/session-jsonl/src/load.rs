//! Cold reads: stream a log, apply the committed-boundary
//! rule, and, for `load`, repair the torn tail durably under the single-writer lock.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use dsh_session::repair::interrupted_turn_closers;
use dsh_session::{
    EventType, EventVocabulary, LoadedSession, PersistenceError, RepairReport,
    SESSION_FORMAT_VERSION, SessionEvent, SessionHeader, SessionId, StoreRevision,
};

use crate::fsops::FsOps;
use crate::header::{self, HeaderProblem};
use crate::open::location;
use crate::scan::{Record, analyse, next_record};

/// Whether a read may change the file.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `load`: lock, repair durably.
    Load,
    /// `inspect`: no lock, no write.
    Inspect,
}

fn io_err(
    id: &SessionId,
    path: &Path,
    op: &'static str,
    source: std::io::Error,
) -> PersistenceError {
    PersistenceError::Io {
        id: Some(id.clone()),
        location: path.display().to_string(),
        op,
        source,
    }
}

/// The revision of a file: `"<dev>:<ino>:<len>:<mtime ns>"`.
pub(crate) fn revision(file: &File) -> std::io::Result<StoreRevision> {
    let m = file.metadata()?;
    let mtime = m.mtime() as i128 * 1_000_000_000 + i128::from(m.mtime_nsec());
    Ok(StoreRevision(format!(
        "{}:{}:{}:{mtime}",
        m.dev(),
        m.ino(),
        m.len()
    )))
}

/// Reads and checks the header line of `file`; returns it and the offset after it.
pub(crate) fn read_header(
    id: &SessionId,
    path: &Path,
    reader: &mut impl std::io::BufRead,
) -> Result<(SessionHeader, u64), PersistenceError> {
    let corrupt = |reason: String| PersistenceError::Corrupt {
        id: id.clone(),
        location: location(path),
        line: Some(1),
        reason,
    };
    let (record, len) = next_record(reader)
        .map_err(|e| io_err(id, path, "read", e))?
        .ok_or_else(|| corrupt("empty file".into()))?;
    let Record::Line(bytes) = record else {
        return Err(corrupt("incomplete header line".into()));
    };
    let header = header::decode(&bytes).map_err(|problem| match problem {
        HeaderProblem::Corrupt(reason) => corrupt(reason),
        HeaderProblem::Version(found) => PersistenceError::UnsupportedVersion {
            id: id.clone(),
            location: location(path),
            found,
            supported: SESSION_FORMAT_VERSION,
        },
    })?;
    if &header.id != id {
        return Err(PersistenceError::IdMismatch {
            requested: id.clone(),
            found: header.id,
            location: location(path),
        });
    }
    Ok((header, len))
}

/// Loads (or inspects) the log at `path`.
pub(crate) fn read(
    fs: &dyn FsOps,
    id: &SessionId,
    path: &Path,
    known: &EventVocabulary,
    mode: Mode,
) -> Result<LoadedSession, PersistenceError> {
    let file = OpenOptions::new()
        .read(true)
        .append(mode == Mode::Load)
        .open(path)
        .map_err(|e| io_err(id, path, "open", e))?;
    if mode == Mode::Load && file.try_lock().is_err() {
        return Err(PersistenceError::Locked {
            id: id.clone(),
            location: location(path),
        });
    }
    let mut reader = BufReader::with_capacity(64 * 1024, &file);
    let (header, header_len) = read_header(id, path, &mut reader)?;
    let analysis = analyse(&mut reader, header_len).map_err(|e| io_err(id, path, "read", e))?;
    drop(reader);
    if let Some((line, reason)) = &analysis.invalid {
        // Repair could not close such a turn, so the session would load and never resume.
        return Err(PersistenceError::Corrupt {
            id: id.clone(),
            location: location(path),
            line: Some(*line),
            reason: reason.clone(),
        });
    }
    if let (Some((line, reason)), Some(last_end)) = (&analysis.defect, analysis.last_turn_end)
        && *line <= last_end
    {
        return Err(PersistenceError::Corrupt {
            id: id.clone(),
            location: location(path),
            line: Some(*line),
            reason: format!("{reason}; the damage lies before the last completed turn"),
        });
    }
    // A log holds few distinct types: each is looked up once.
    let mut known_kinds: Vec<&EventType> = Vec::new();
    for event in &analysis.kept {
        if event.ignorable || known_kinds.contains(&&event.kind) {
            continue;
        }
        if known.class(&event.kind).is_some() {
            known_kinds.push(&event.kind);
        } else {
            return Err(PersistenceError::UnsupportedEvent {
                id: id.clone(),
                location: location(path),
                seq: event.seq,
                kind: event.kind.to_string(),
            });
        }
    }
    let closers = interrupted_turn_closers(&analysis.kept);
    let report = RepairReport {
        dropped_records: analysis.dropped_records,
        dropped_bytes: analysis.dropped_bytes,
        first_dropped: analysis.defect.as_ref().map(|(line, _)| *line),
        closers: closers.len() as u64,
    };
    if mode == Mode::Load && (report.dropped_records > 0 || !closers.is_empty()) {
        repair(fs, id, path, &file, analysis.kept_end, &closers)?;
        tracing::warn!(
            session = %id,
            location = %path.display(),
            ?report,
            "repaired a session log left by a process that stopped mid-turn"
        );
    }
    let mut events = analysis.kept;
    events.extend(closers.into_iter().map(Arc::new));
    let revision = revision(&file).map_err(|e| io_err(id, path, "stat", e))?;
    Ok(LoadedSession {
        header,
        events,
        repair: report,
        revision,
        location: location(path),
    })
}

/// Removes the torn tail durably, then appends the closers durably. A crash between
/// the two is harmless: the next load computes the same closers.
fn repair(
    fs: &dyn FsOps,
    id: &SessionId,
    path: &Path,
    file: &File,
    kept_end: u64,
    closers: &[SessionEvent],
) -> Result<(), PersistenceError> {
    let len = file
        .metadata()
        .map_err(|e| io_err(id, path, "stat", e))?
        .len();
    if len != kept_end {
        fs.set_len(file, kept_end)
            .and_then(|()| fs.sync_all(file))
            .map_err(|e| io_err(id, path, "truncating the torn tail", e))?;
    }
    if !closers.is_empty() {
        let mut bytes = Vec::new();
        for closer in closers {
            closer.encode_into(&mut bytes);
            bytes.push(b'\n');
        }
        let mut handle = file;
        handle
            .seek(SeekFrom::End(0))
            .map_err(|e| io_err(id, path, "seek", e))?;
        fs.write(file, &bytes)
            .and_then(|()| fs.sync_data(file))
            .map_err(|e| io_err(id, path, "appending closers", e))?;
    }
    Ok(())
}
