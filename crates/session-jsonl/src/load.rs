//! Cold reads: stream a log, apply the committed-boundary
//! rule, and, for `load`, repair the torn tail durably under the single-writer lock.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use dsh_session::log_format::verdict::judge;
use dsh_session::{
    EventVocabulary, LoadedSession, PersistenceError, SessionEvent, SessionHeader, SessionId,
    StoreRevision,
};

use crate::fsops::FsOps;
use crate::open::location;
use dsh_session::log_format::header;
use dsh_session::log_format::scan::{Record, analyse, next_record};

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
    let header = header::read(id, &bytes, &location(path))?;
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
    let verdict =
        judge(analysis, known).map_err(|refusal| refusal.into_error(id, location(path)))?;
    if mode == Mode::Load && verdict.repairs() {
        repair(fs, id, path, &file, verdict.kept_end, &verdict.closers)?;
        tracing::warn!(
            session = %id,
            location = %path.display(),
            report = ?verdict.report,
            "repaired a session log left by a process that stopped mid-turn"
        );
    }
    let revision = revision(&file).map_err(|e| io_err(id, path, "stat", e))?;
    Ok(LoadedSession {
        header,
        events: verdict.events,
        repair: verdict.report,
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
    closers: &[Arc<SessionEvent>],
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
