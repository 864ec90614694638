//! A stdio server's stderr, a line at a time, to dsh's log. A server may write anything
//! there — 256 MiB without a newline — so a line keeps its head and counts the rest: what is
//! held never grows past [`LINE_BYTES`].

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The most of one line kept.
pub(crate) const LINE_BYTES: usize = 8 * 1024;

/// A line as logged: its head, and how many bytes of it were not kept.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub head: String,
    pub dropped: u64,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.dropped {
            0 => f.write_str(&self.head),
            n => write!(f, "{}… [{n} more bytes of this line not kept]", self.head),
        }
    }
}

/// Reads `input` to its end, handing each line (the last one even without a newline) to
/// `emit`. Stops at the first read error.
pub(crate) async fn lines(mut input: impl AsyncBufRead + Unpin, mut emit: impl FnMut(Line)) {
    let mut head: Vec<u8> = Vec::new();
    let mut dropped = 0u64;
    let mut pending = false;
    while let Ok(buf) = input.fill_buf().await {
        if buf.is_empty() {
            break;
        }
        let (piece, ends, used) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..at], true, at + 1),
            None => (buf, false, buf.len()),
        };
        let room = LINE_BYTES.saturating_sub(head.len());
        let kept = piece.len().min(room);
        head.extend_from_slice(&piece[..kept]);
        dropped += (piece.len() - kept) as u64;
        pending = true;
        input.consume(used);
        if ends {
            emit(finish(&mut head, &mut dropped));
            pending = false;
        }
    }
    if pending {
        emit(finish(&mut head, &mut dropped));
    }
}

fn finish(head: &mut Vec<u8>, dropped: &mut u64) -> Line {
    let text = String::from_utf8_lossy(head);
    let text = text.strip_suffix('\r').unwrap_or(&text).to_owned();
    head.clear();
    Line {
        head: text,
        dropped: std::mem::take(dropped),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(bytes: Vec<u8>) -> Vec<Line> {
        let mut out = Vec::new();
        // A small buffer, so a line spans many reads as a flood's does.
        let reader = tokio::io::BufReader::with_capacity(64, std::io::Cursor::new(bytes));
        lines(reader, |line| out.push(line)).await;
        out
    }

    #[tokio::test]
    async fn a_line_without_end_keeps_its_head_and_counts_the_rest() {
        let mut flood = vec![b'e'; 3 * LINE_BYTES];
        flood.extend_from_slice(b"\nnext line\r\nlast");
        let got = read(flood).await;
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].head.len(), LINE_BYTES);
        assert_eq!(got[0].dropped, 2 * LINE_BYTES as u64);
        assert!(
            got[0]
                .to_string()
                .ends_with("more bytes of this line not kept]")
        );
        assert_eq!(
            got[1],
            Line {
                head: "next line".into(),
                dropped: 0
            }
        );
        assert_eq!(got[2].to_string(), "last");
    }
}
