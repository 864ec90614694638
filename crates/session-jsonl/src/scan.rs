//! Reading a log: a bounded line reader that never buffers more than one record
//! plus one byte, and the committed-boundary analysis that decides between repair and refusal.

use std::io::{self, BufRead};
use std::sync::Arc;

use dsh_session::{EventType, MAX_EVENT_BYTES, SessionEvent};

/// One physical record.
pub enum Record {
    /// A `\n`-terminated line (without the `\n`).
    Line(Vec<u8>),
    /// A line longer than the limit; its bytes were skipped.
    TooLong,
    /// Bytes at the end without a terminating `\n`.
    Incomplete,
}

/// Reads the next record and its length in bytes (including the `\n`); `None` at the end.
pub fn next_record(reader: &mut impl BufRead) -> io::Result<Option<(Record, u64)>> {
    let mut line = Vec::new();
    let mut consumed = 0u64;
    let mut too_long = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(match (consumed, too_long) {
                (0, _) => None,
                (_, _) => Some((Record::Incomplete, consumed)),
            });
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_EVENT_BYTES {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        consumed += used as u64;
        reader.consume(used);
        if done.is_some() {
            let record = if too_long {
                Record::TooLong
            } else {
                Record::Line(line)
            };
            return Ok(Some((record, consumed)));
        }
    }
}

/// The load verdict over the event records: intact, repairable tail, or corrupt.
pub struct Analysis {
    /// Events before the first defective record.
    pub kept: Vec<Arc<SessionEvent>>,
    /// Byte offset where the kept region ends.
    pub kept_end: u64,
    /// First defective record: (1-based line, reason).
    pub defect: Option<(u64, String)>,
    /// Line of the last complete record that decodes as a `turn/end`.
    pub last_turn_end: Option<u64>,
    /// Records from the first defect on.
    pub dropped_records: u64,
    /// Bytes from the first defect on.
    pub dropped_bytes: u64,
    /// A complete record whose envelope decodes but whose payload breaks what repair relies
    /// on (a `turn/start` without a `u32` turn): never truncated away, always refused.
    pub invalid: Option<(u64, String)>,
}

/// Whether a `turn/start` carries the turn number crash repair needs to close it.
fn turn_start_is_closable(event: &SessionEvent) -> bool {
    #[derive(serde::Deserialize)]
    struct TurnOnly {
        #[allow(dead_code)] // Only its presence and type are checked.
        turn: u32,
    }
    serde_json::from_str::<TurnOnly>(event.data.get()).is_ok()
}

/// Analyses the records after the header (which ended at `offset`, on line 1). The file is
/// streamed in bounded batches, never read into one buffer; each batch is decoded on every
/// core, and the verdict stays sequential, so the result is that of a one-record-at-a-time
/// reader.
pub fn analyse(reader: &mut impl BufRead, offset: u64) -> io::Result<Analysis> {
    let mut analysis = Analysis {
        kept: Vec::new(),
        kept_end: offset,
        defect: None,
        last_turn_end: None,
        dropped_records: 0,
        dropped_bytes: 0,
        invalid: None,
    };
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let mut offset = offset;
    let mut line_no = 1u64;
    let mut batch: Vec<(Record, u64)> = Vec::new();
    let mut at_end = false;
    while !at_end {
        batch.clear();
        let mut batch_bytes = 0u64;
        while batch.len() < BATCH_RECORDS && batch_bytes < BATCH_BYTES {
            match next_record(reader)? {
                Some(item) => {
                    batch_bytes += item.1;
                    batch.push(item);
                }
                None => {
                    at_end = true;
                    break;
                }
            }
        }
        let decoded = decode_all(&batch, workers);
        for ((record, len), decoded) in batch.iter().zip(decoded) {
            line_no += 1;
            judge(&mut analysis, record, decoded, line_no, offset, *len);
            offset += *len;
        }
    }
    Ok(analysis)
}

/// Records per decoding batch, and the bytes that end a batch early.
const BATCH_RECORDS: usize = 8192;
const BATCH_BYTES: u64 = 8 << 20;

fn decode_one(record: &Record) -> Result<Arc<SessionEvent>, String> {
    match record {
        Record::Line(bytes) => SessionEvent::decode(bytes).map(Arc::new).map_err(|e| e.0),
        Record::TooLong => Err(format!("line longer than {MAX_EVENT_BYTES} bytes")),
        Record::Incomplete => Err("incomplete final line".into()),
    }
}

/// Decodes every record in order, split across `workers` threads when it is worth it.
fn decode_all(records: &[(Record, u64)], workers: usize) -> Vec<Result<Arc<SessionEvent>, String>> {
    if workers < 2 || records.len() < 256 {
        return records.iter().map(|(r, _)| decode_one(r)).collect();
    }
    let per = records.len().div_ceil(workers);
    std::thread::scope(|scope| {
        let parts: Vec<_> = records
            .chunks(per)
            .map(|part| {
                let handle = scope
                    .spawn(move || part.iter().map(|(r, _)| decode_one(r)).collect::<Vec<_>>());
                (part.len(), handle)
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|(len, handle)| {
                handle.join().unwrap_or_else(|_| {
                    (0..len)
                        .map(|_| Err("the decoder panicked".to_owned()))
                        .collect()
                })
            })
            .collect()
    })
}

/// One record's part of the verdict.
fn judge(
    analysis: &mut Analysis,
    record: &Record,
    decoded: Result<Arc<SessionEvent>, String>,
    line_no: u64,
    offset: u64,
    len: u64,
) {
    {
        if let (Record::Line(_), Ok(event)) = (record, &decoded)
            && event.kind.as_str() == EventType::TURN_END
        {
            analysis.last_turn_end = Some(line_no);
        }
        if let (Record::Line(_), Ok(event)) = (record, &decoded)
            && event.kind.as_str() == EventType::TURN_START
            && !turn_start_is_closable(event)
            && analysis.invalid.is_none()
        {
            analysis.invalid = Some((
                line_no,
                "a turn/start whose turn is not an unsigned 32-bit number".to_owned(),
            ));
        }
        if analysis.defect.is_none() {
            let expected = analysis.kept.len() as u64;
            match decoded {
                Ok(event) if event.seq == expected => {
                    analysis.kept.push(event);
                    analysis.kept_end = offset + len;
                }
                Ok(event) => {
                    analysis.defect = Some((
                        line_no,
                        format!("seq {} where {expected} was expected", event.seq),
                    ));
                }
                Err(reason) => analysis.defect = Some((line_no, reason)),
            }
        }
        if analysis.defect.is_some() {
            analysis.dropped_records += 1;
            analysis.dropped_bytes += len;
        }
    }
}
