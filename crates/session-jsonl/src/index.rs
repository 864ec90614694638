//! The listing index: one hidden file per project directory, `.index.jsonl`, holding each
//! log's header and title so that a listing reads one small file per directory instead of
//! every log.
//!
//! The index is a cache of what the logs say, never a source of truth:
//! - a line is appended (one `write`, `O_APPEND`) when a log is first written and whenever a
//!   batch holds a `session/title`; it is not synced, because a lost line costs only speed;
//! - a line names its log by file name and inode, and holds the log's length when it was
//!   written: a log deleted and written again, or cut shorter than it was (a log only grows),
//!   is read again rather than described by a line about what it was;
//! - later lines of a log override earlier ones, except that a line without a title keeps
//!   the title before it;
//! - a log the index does not describe (written by an older dsh, or its line lost) is read
//!   once by the listing, and the line it was missing is appended then;
//! - an unreadable line is skipped; an index grown well past its logs is rewritten whole
//!   (temp file and rename), and a line a concurrent writer appended to the old file in that
//!   moment is simply read from its log again at the next listing.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use dsh_session::{SESSION_TITLE, SessionEvent, SessionHeader, TitleRecord};
use serde::{Deserialize, Serialize};

/// The index's file name in a project directory (hidden, so no listing takes it for a log).
pub(crate) const INDEX_FILE: &str = ".index.jsonl";

/// One index line: what a listing needs of one log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Line {
    /// The log's file name in the directory.
    pub file: String,
    /// The log's inode when the line was written.
    pub ino: u64,
    /// The log's length in bytes when the line was written.
    #[serde(default)]
    pub len: u64,
    /// The log's header.
    pub header: SessionHeader,
    /// The title from then on; absent keeps the one before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// The index of `dir`: each log's entry by file name, and how many lines it holds. A missing
/// or unreadable index is an empty one.
pub(crate) fn read(dir: &Path) -> (HashMap<String, Line>, usize) {
    let mut entries: HashMap<String, Line> = HashMap::new();
    let Ok(bytes) = std::fs::read(dir.join(INDEX_FILE)) else {
        return (entries, 0);
    };
    let mut lines = 0;
    for parsed in parse(&bytes) {
        lines += 1;
        let Some(mut line) = parsed else { continue };
        if line.title.is_none() {
            line.title = entries
                .get(&line.file)
                .filter(|old| old.ino == line.ino && old.header == line.header)
                .and_then(|old| old.title.clone());
        }
        entries.insert(line.file.clone(), line);
    }
    (entries, lines)
}

/// Below this many bytes an index is parsed on the calling thread.
const PARALLEL_FROM: usize = 256 * 1024;

/// Every line of `bytes`, in order, `None` for one that is not an index line. A large index
/// is cut at line ends into one part per core, parsed side by side.
fn parse(bytes: &[u8]) -> Vec<Option<Line>> {
    let parse_part = |part: &[u8]| -> Vec<Option<Line>> {
        part.split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice::<Line>(line).ok())
            .collect()
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if bytes.len() < PARALLEL_FROM || threads < 2 {
        return parse_part(bytes);
    }
    let mut parts = Vec::with_capacity(threads);
    let mut rest = bytes;
    for i in (1..threads).rev() {
        let target = rest.len() / (i + 1);
        let cut = rest[target..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(rest.len(), |at| target + at + 1);
        let (part, after) = rest.split_at(cut);
        parts.push(part);
        rest = after;
    }
    parts.push(rest);
    std::thread::scope(|scope| {
        let parsing: Vec<_> = parts
            .iter()
            .map(|part| scope.spawn(move || parse_part(part)))
            .collect();
        parsing
            .into_iter()
            .zip(&parts)
            .flat_map(|(parsed, part)| parsed.join().unwrap_or_else(|_| parse_part(part)))
            .collect()
    })
}

/// Appends `lines` to the index of `dir` in one write.
pub(crate) fn append(dir: &Path, lines: &[Line]) -> io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut bytes = Vec::new();
    for line in lines {
        serde_json::to_writer(&mut bytes, line).map_err(io::Error::other)?;
        bytes.push(b'\n');
    }
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(dir.join(INDEX_FILE))?
        .write_all(&bytes)
}

/// Replaces the index of `dir` with one line per entry of `entries`.
pub(crate) fn rewrite(dir: &Path, entries: &HashMap<String, Line>) -> io::Result<()> {
    let temp = dir.join(format!("{INDEX_FILE}.{}.tmp", std::process::id()));
    let mut bytes = Vec::new();
    let mut names: Vec<&String> = entries.keys().collect();
    names.sort();
    for name in names {
        serde_json::to_writer(&mut bytes, &entries[name]).map_err(io::Error::other)?;
        bytes.push(b'\n');
    }
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .and_then(|mut file| file.write_all(&bytes))
        .and_then(|()| std::fs::rename(&temp, dir.join(INDEX_FILE)));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

impl Line {
    /// Whether the entry still describes a log with this inode and length.
    pub(crate) fn describes(&self, ino: u64, len: u64) -> bool {
        self.ino == ino && self.len <= len
    }
}

/// Whether an index of `lines` lines describing `logs` logs is worth rewriting.
pub(crate) fn overgrown(lines: usize, logs: usize) -> bool {
    lines > 2 * logs + 64
}

/// The last title a batch of events sets, when one does.
pub(crate) fn title_in(events: &[std::sync::Arc<SessionEvent>]) -> Option<String> {
    events
        .iter()
        .rev()
        .filter(|e| e.kind.as_str() == SESSION_TITLE)
        .find_map(|e| serde_json::from_str::<TitleRecord>(e.data.get()).ok())
        .map(|record| record.title)
}

/// The title of a log the index does not describe, read from the log itself: its last
/// `session/title`, or else (a log of a dsh that wrote no titles) the title its first
/// user message gives. Lines are matched on their type before any is parsed.
pub(crate) fn title_from_log(file: &File) -> Option<String> {
    // The envelope's fixed opening: `{"seq":N,"type":"<kind>",…`.
    let title_tag = format!("\"type\":\"{SESSION_TITLE}\"");
    let user_tag = "\"type\":\"user/message\"";
    let (mut title, mut first_prompt) = (None, None);
    for line in BufReader::new(file).split(b'\n').skip(1) {
        let Ok(line) = line else { break };
        let head = &line[..line.len().min(96)];
        let head = String::from_utf8_lossy(head);
        if head.contains(&title_tag) {
            if let Some(record) = SessionEvent::decode(&line)
                .ok()
                .and_then(|e| serde_json::from_str::<TitleRecord>(e.data.get()).ok())
            {
                title = Some(record.title);
            }
        } else if first_prompt.is_none() && head.contains(user_tag) {
            first_prompt = SessionEvent::decode(&line)
                .ok()
                .and_then(|e| serde_json::from_str::<LegacyPrompt>(e.data.get()).ok())
                .and_then(|p| dsh_session::title_of(&p.message.text));
        }
    }
    title.or(first_prompt)
}

/// The part of an old `user/message` payload a title is made from.
#[derive(Deserialize)]
struct LegacyPrompt {
    message: LegacyText,
}

#[derive(Deserialize)]
struct LegacyText {
    text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(file: &str, title: Option<&str>) -> Line {
        Line {
            file: file.to_owned(),
            ino: 7,
            len: 100,
            header: SessionHeader {
                version: 1,
                id: dsh_session::SessionId::parse("s").unwrap_or_else(|_| unreachable!()),
                created_at: 0,
                cwd: "/w".into(),
                parent: None,
                seed_len: None,
                parent_call: None,
            },
            title: title.map(str::to_owned),
        }
    }

    #[test]
    fn a_large_index_parsed_in_parts_reads_as_one_in_order() {
        let mut bytes = Vec::new();
        // Enough lines to be cut into parts; every log's last line is the one that counts,
        // and a line without a title keeps the title before it.
        for i in 0..4_000 {
            let name = format!("log-{}.jsonl", i % 1_000);
            let title = format!("title {i}");
            let written = line(&name, (i < 3_000).then_some(title.as_str()));
            serde_json::to_writer(&mut bytes, &written).unwrap_or_else(|_| unreachable!());
            bytes.push(b'\n');
            if i == 1_234 {
                bytes.extend_from_slice(b"{not a line\n");
            }
        }
        assert!(bytes.len() > PARALLEL_FROM);
        let parsed = parse(&bytes);
        assert_eq!(parsed.len(), 4_001);
        assert_eq!(parsed.iter().filter(|l| l.is_none()).count(), 1);
        let dir = tempfile::tempdir().unwrap_or_else(|_| unreachable!());
        std::fs::write(dir.path().join(INDEX_FILE), &bytes).unwrap_or_else(|_| unreachable!());
        let (entries, lines) = read(dir.path());
        assert_eq!(lines, 4_001);
        assert_eq!(entries.len(), 1_000);
        assert_eq!(
            entries["log-7.jsonl"].title.as_deref(),
            Some("title 2007"),
            "the last titled line of log 7"
        );
    }
}
