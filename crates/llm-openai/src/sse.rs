//! The server-sent-events splitter: response bytes in, whole events out.
//!
//! Hand-written rather than taken from `eventsource-stream`, which panics on a body that
//! opens with a byte-order mark, holds everything after one invalid UTF-8 byte until the body
//! ends, and lets a line without a newline grow without bound while rescanning it on every
//! chunk (see the model-seam RFC). This one scans every byte exactly once, keeps at most one
//! event's worth of pending bytes, and decodes each line on its own, replacing invalid UTF-8
//! with U+FFFD as the event-stream standard does — so the events are the same for every way
//! the same bytes are split into chunks.

use std::collections::VecDeque;

/// One dispatched event: its type (empty when the server named none) and its data lines,
/// joined by `\n`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or empty.
    pub event: String,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

/// Pending bytes beyond this (one incomplete line plus the event being built) are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oversized {
    /// The limit that was passed.
    pub limit: usize,
}

/// Splits a byte stream into events; feed it chunks with [`Splitter::push`].
#[derive(Debug)]
pub struct Splitter {
    limit: usize,
    /// The current line, without its terminator.
    line: Vec<u8>,
    /// The previous chunk ended in CR, so a leading LF belongs to that line end.
    after_cr: bool,
    /// Whether the first bytes (where a BOM may stand) were looked at.
    started: bool,
    event: String,
    data: String,
    /// Whether any `data:` line was seen for the event being built.
    has_data: bool,
    ready: VecDeque<SseEvent>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Splitter {
    /// A splitter refusing more than `limit` pending bytes.
    pub fn new(limit: usize) -> Splitter {
        Splitter {
            limit,
            line: Vec::new(),
            after_cr: false,
            started: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            ready: VecDeque::new(),
        }
    }

    /// Consumes `chunk`; whole events become available through [`Splitter::next_event`].
    pub fn push(&mut self, mut chunk: &[u8]) -> Result<(), Oversized> {
        if !self.started {
            // A BOM may be split across chunks: wait until three bytes are known.
            let have = self.line.len() + chunk.len();
            if have < BOM.len() && BOM.starts_with(&[&self.line[..], chunk].concat()) {
                self.line.extend_from_slice(chunk);
                return Ok(());
            }
            self.started = true;
            let mut head = std::mem::take(&mut self.line);
            head.extend_from_slice(chunk);
            let body = head.strip_prefix(BOM).unwrap_or(&head).to_vec();
            return self.push(&body);
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            match chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.line.extend_from_slice(chunk);
                    return self.check();
                }
                Some(at) => {
                    self.line.extend_from_slice(&chunk[..at]);
                    self.check()?;
                    let cr = chunk[at] == b'\r';
                    chunk = &chunk[at + 1..];
                    if cr {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                    let line = std::mem::take(&mut self.line);
                    self.line_complete(&line)?;
                    self.line = line;
                    self.line.clear();
                }
            }
        }
        Ok(())
    }

    /// The body ended: an event whose lines were all complete is dispatched (a server may
    /// close without the final blank line); a line cut off mid-way is dropped.
    pub fn finish(&mut self) {
        if !self.started && !self.line.is_empty() {
            self.started = true;
        }
        self.line.clear();
        self.dispatch();
    }

    /// The next whole event, if one is ready.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    fn check(&self) -> Result<(), Oversized> {
        if self.line.len() + self.data.len() > self.limit {
            return Err(Oversized { limit: self.limit });
        }
        Ok(())
    }

    fn line_complete(&mut self, line: &[u8]) -> Result<(), Oversized> {
        if line.is_empty() {
            self.dispatch();
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(Oversized { limit: self.limit });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(&String::from_utf8_lossy(value));
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            // `id` and `retry` steer reconnection, which a model call never does; other
            // fields are ignored, as the standard says.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self) {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        let data = std::mem::take(&mut self.data);
        self.ready.push_back(SseEvent { event, data });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Result<Vec<SseEvent>, Oversized> {
        let mut s = Splitter::new(64);
        let mut out = Vec::new();
        for chunk in chunks {
            s.push(chunk)?;
            out.extend(std::iter::from_fn(|| s.next_event()));
        }
        s.finish();
        out.extend(std::iter::from_fn(|| s.next_event()));
        Ok(out)
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn lines_end_with_lf_crlf_or_cr_even_across_chunks() {
        let want = vec![ev("", "a"), ev("", "b"), ev("", "c")];
        assert_eq!(
            split(&[b"data: a\n\ndata: b\r\n\r\ndata: c\r\r"]),
            Ok(want.clone())
        );
        assert_eq!(
            split(&[b"data: a\n\ndata: b\r", b"\n\r", b"\ndata: c\r", b"\r"]),
            Ok(want)
        );
    }

    #[test]
    fn a_bom_is_skipped_even_when_split() {
        assert_eq!(split(&[b"\xEF\xBB\xBFdata: x\n\n"]), Ok(vec![ev("", "x")]));
        assert_eq!(
            split(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]),
            Ok(vec![ev("", "x")])
        );
        assert_eq!(split(&[b"\xEF"]), Ok(vec![]));
    }

    #[test]
    fn fields_comments_and_multi_line_data() {
        assert_eq!(
            split(&[b": ping\nevent: error\ndata:one\ndata: two\nid: 7\nretry: 5\n\n"]),
            Ok(vec![ev("error", "one\ntwo")])
        );
        assert_eq!(split(&[b"event: x\n\n"]), Ok(vec![]), "no data, no event");
        assert_eq!(split(&[b"data\n\n"]), Ok(vec![ev("", "")]));
    }

    #[test]
    fn invalid_utf8_is_replaced_and_later_events_survive() {
        assert_eq!(
            split(&[b"data: a\xFFb\n\ndata: next\n\n"]),
            Ok(vec![ev("", "a\u{FFFD}b"), ev("", "next")])
        );
    }

    #[test]
    fn pending_bytes_are_bounded() {
        assert_eq!(split(&[&[b'x'; 65]]), Err(Oversized { limit: 64 }));
        assert_eq!(
            split(&[b"data: ", &[b'x'; 40], b"\ndata: ", &[b'y'; 30], b"\n"]),
            Err(Oversized { limit: 64 })
        );
    }

    #[test]
    fn at_the_end_complete_lines_are_dispatched_and_a_cut_line_is_dropped() {
        assert_eq!(split(&[b"data: a\n"]), Ok(vec![ev("", "a")]));
        assert_eq!(split(&[b"data: a\n\ndata: b"]), Ok(vec![ev("", "a")]));
    }
}
