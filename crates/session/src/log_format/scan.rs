//! Reading a log: a bounded line reader that never buffers more than one record
//! plus one byte, and the committed-boundary analysis that decides between repair and refusal.

use std::io::{self, BufRead};
use std::sync::Arc;

use crate::{EventType, MAX_EVENT_BYTES, SessionEvent};

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
    // No shared buffer: every line gets its own allocation.
    let mut none = Vec::new();
    Ok(next_into(reader, &mut none)?.map(|(slot, len)| {
        let record = match slot {
            Slot::Line(_) => Record::Line(Vec::new()),
            Slot::Owned(line) => Record::Line(line),
            Slot::TooLong => Record::TooLong,
            Slot::Incomplete => Record::Incomplete,
        };
        (record, len)
    }))
}

/// One physical record, its bytes in a shared batch buffer when they fit there.
enum Slot {
    /// A `\n`-terminated line whose bytes are in the batch buffer.
    Line(std::ops::Range<usize>),
    /// A `\n`-terminated line too big for what the batch buffer had left.
    Owned(Vec<u8>),
    TooLong,
    Incomplete,
}

/// Appends the next record's bytes to `buf` while they fit in its capacity, so a batch of
/// records shares one allocation that never grows; a record that does not fit gets its own.
/// Returns where the bytes are and the record's length (including the `\n`).
fn next_into(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<Option<(Slot, u64)>> {
    let start = buf.len();
    let mut own: Option<Vec<u8>> = None;
    let mut consumed = 0u64;
    let mut too_long = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            buf.truncate(start);
            return Ok((consumed > 0).then_some((Slot::Incomplete, consumed)));
        }
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !too_long {
            let held = own.as_ref().map_or(buf.len() - start, Vec::len);
            if held + part.len() > MAX_EVENT_BYTES {
                too_long = true;
                buf.truncate(start);
                own = None;
            } else if let Some(own) = own.as_mut() {
                own.extend_from_slice(part);
            } else if buf.len() + part.len() > buf.capacity() {
                let mut moved = buf.split_off(start);
                moved.extend_from_slice(part);
                own = Some(moved);
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = done.unwrap_or(chunk.len());
        consumed += used as u64;
        reader.consume(used);
        if done.is_some() {
            let slot = match (too_long, own) {
                (true, _) => Slot::TooLong,
                (false, Some(own)) => Slot::Owned(own),
                (false, None) => Slot::Line(start..buf.len()),
            };
            return Ok(Some((slot, consumed)));
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
    serde_json::from_str::<crate::TurnStart>(event.data.get()).is_ok()
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
    let mut batch: Vec<(Slot, u64)> = Vec::new();
    let mut bytes: Vec<u8> = Vec::with_capacity(BATCH_BYTES as usize);
    let mut at_end = false;
    while !at_end {
        batch.clear();
        bytes.clear();
        let mut batch_bytes = 0u64;
        while batch.len() < BATCH_RECORDS && batch_bytes < BATCH_BYTES {
            match next_into(reader, &mut bytes)? {
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
        let decoded = decode_all(&batch, &bytes, workers);
        for ((slot, len), decoded) in batch.iter().zip(decoded) {
            line_no += 1;
            judge(&mut analysis, slot, decoded, line_no, offset, *len);
            offset += *len;
        }
    }
    Ok(analysis)
}

/// Records per decoding batch, and the bytes that end a batch early.
const BATCH_RECORDS: usize = 8192;
const BATCH_BYTES: u64 = 8 << 20;

fn decode_one(slot: &Slot, bytes: &[u8]) -> Result<Arc<SessionEvent>, String> {
    match slot {
        Slot::Line(range) => bytes
            .get(range.clone())
            .ok_or_else(|| "a record outside its batch".to_owned())
            .and_then(|line| {
                SessionEvent::decode(line)
                    .map(Arc::new)
                    .map_err(|e| e.detail())
            }),
        Slot::Owned(line) => SessionEvent::decode(line)
            .map(Arc::new)
            .map_err(|e| e.detail()),
        Slot::TooLong => Err(format!("line longer than {MAX_EVENT_BYTES} bytes")),
        Slot::Incomplete => Err("incomplete final line".into()),
    }
}

/// Decodes every record in order, split across `workers` threads when it is worth it.
fn decode_all(
    records: &[(Slot, u64)],
    bytes: &[u8],
    workers: usize,
) -> Vec<Result<Arc<SessionEvent>, String>> {
    if workers < 2 || records.len() < 256 {
        return records.iter().map(|(r, _)| decode_one(r, bytes)).collect();
    }
    let per = records.len().div_ceil(workers);
    std::thread::scope(|scope| {
        let parts: Vec<_> = records
            .chunks(per)
            .map(|part| {
                let handle = scope.spawn(move || {
                    part.iter()
                        .map(|(r, _)| decode_one(r, bytes))
                        .collect::<Vec<_>>()
                });
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
    record: &Slot,
    decoded: Result<Arc<SessionEvent>, String>,
    line_no: u64,
    offset: u64,
    len: u64,
) {
    {
        if let (Slot::Line(_) | Slot::Owned(_), Ok(event)) = (record, &decoded)
            && event.kind.as_str() == EventType::TURN_END
        {
            analysis.last_turn_end = Some(line_no);
        }
        if let (Slot::Line(_) | Slot::Owned(_), Ok(event)) = (record, &decoded)
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
