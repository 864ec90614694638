//! The byte level: input split into bounded lines, and the one writer task that owns the
//! output stream.
//!
//! Lines are bounded without buffering past the limit, so a client that sends a gigabyte
//! without a newline costs dsh at most `max_line_bytes` of memory; of an over-long line only
//! its first `max_line_bytes` are kept, to read the request id from. Every frame goes through
//! one writer, so lines are never torn or interleaved, whatever the number of producers.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// How many frames may wait for the writer; producers wait beyond that, so a slow client
/// slows dsh down instead of growing its memory.
pub(crate) const QUEUE: usize = 1024;

/// One input line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// The line's bytes, without `\n` and one trailing `\r`.
    Text(Vec<u8>),
    /// The line was longer than the limit and was skipped to its newline; `head` is its first
    /// `limit` bytes (what a reply may read the request's id from).
    TooLong { head: Vec<u8> },
}

/// Reads bounded lines from `input`.
pub(crate) struct LineReader<R> {
    input: BufReader<R>,
    limit: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(input: BufReader<R>, limit: usize) -> LineReader<R> {
        LineReader { input, limit }
    }

    /// Whether a whole line is already read into the buffer, so `next` will not wait.
    pub(crate) fn has_buffered_line(&self) -> bool {
        self.input.buffer().contains(&b'\n')
    }

    /// The next line; `None` at end of input. A last line without a newline is served.
    pub(crate) async fn next(&mut self) -> io::Result<Option<Line>> {
        let mut line = Vec::new();
        let mut too_long = false;
        let mut seen_any = false;
        loop {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                if !seen_any {
                    return Ok(None);
                }
                break;
            }
            seen_any = true;
            let (take, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(at) => (at, true),
                None => (buf.len(), false),
            };
            if !too_long {
                if line.len() + take > self.limit {
                    // Keep what fits: the id is usually near the start of the line.
                    too_long = true;
                    let room = self.limit - line.len();
                    line.extend_from_slice(&buf[..room]);
                } else {
                    line.extend_from_slice(&buf[..take]);
                }
            }
            self.input.consume(if done { take + 1 } else { take });
            if done {
                break;
            }
        }
        if too_long {
            return Ok(Some(Line::TooLong { head: line }));
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(Some(Line::Text(line)))
    }
}

/// What the writer is handed.
pub(crate) enum Outgoing {
    /// One frame, without its newline.
    Frame(String),
    /// Flush what is queued, acknowledge, and stop.
    Close(oneshot::Sender<()>),
}

/// The sending side every part of the bridge holds.
#[derive(Clone)]
pub(crate) struct FrameSender(mpsc::Sender<Outgoing>);

impl FrameSender {
    /// Queues a frame, waiting while the queue is full. A frame sent after the output broke
    /// is dropped: nobody can read it.
    pub(crate) async fn send(&self, frame: String) {
        let _ = self.0.send(Outgoing::Frame(frame)).await;
    }

    /// Queues a frame without waiting; from code that cannot wait (a `Drop`). A full queue
    /// hands the frame to a task instead.
    pub(crate) fn send_now(&self, frame: String) {
        match self.0.try_send(Outgoing::Frame(frame)) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            Err(mpsc::error::TrySendError::Full(item)) => {
                let tx = self.0.clone();
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        let _ = tx.send(item).await;
                    });
                }
            }
        }
    }

    /// Asks the writer to flush and stop; returns when it has, or at once if it is gone.
    pub(crate) async fn close(&self) {
        let (ack, done) = oneshot::channel();
        if self.0.send(Outgoing::Close(ack)).await.is_ok() {
            let _ = done.await;
        }
    }
}

/// Starts the writer loop over `output`; `broken` fires on a write or flush error.
pub(crate) fn writer<W>(
    output: W,
    broken: CancellationToken,
) -> (FrameSender, impl Future<Output = ()> + Send + 'static)
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (tx, rx) = mpsc::channel(QUEUE);
    (FrameSender(tx), write_loop(output, rx, broken))
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut output: W,
    mut rx: mpsc::Receiver<Outgoing>,
    broken: CancellationToken,
) {
    while let Some(item) = rx.recv().await {
        match item {
            Outgoing::Frame(mut frame) => {
                frame.push('\n');
                let written = output.write_all(frame.as_bytes()).await;
                // Batch while frames are queued; flush as soon as the queue is empty.
                let flushed = match written {
                    Ok(()) if rx.is_empty() => output.flush().await,
                    other => other,
                };
                if let Err(e) = flushed {
                    tracing::info!(error = %e, "the output stream is broken");
                    broken.cancel();
                    return;
                }
            }
            Outgoing::Close(ack) => {
                let _ = output.flush().await;
                let _ = ack.send(());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], limit: usize) -> Vec<Line> {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(7, input), limit);
        let mut out = Vec::new();
        while let Some(line) = reader.next().await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_are_split_on_newlines_with_one_carriage_return_stripped() {
        let got = lines(b"abc\r\n\ndef\r\r\nlast", 100).await;
        assert_eq!(
            got,
            vec![
                Line::Text(b"abc".to_vec()),
                Line::Text(Vec::new()),
                Line::Text(b"def\r".to_vec()),
                Line::Text(b"last".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn an_over_long_line_is_skipped_to_its_newline_and_the_next_is_served() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        let got = lines(&input, 10).await;
        assert_eq!(
            got,
            vec![
                Line::TooLong {
                    head: vec![b'x'; 10]
                },
                Line::Text(b"ok".to_vec())
            ]
        );
        let exact = lines(b"0123456789\n", 10).await;
        assert_eq!(exact, vec![Line::Text(b"0123456789".to_vec())]);
    }

    #[tokio::test]
    async fn frames_from_many_producers_are_never_interleaved() {
        let (client, server) = tokio::io::duplex(64);
        let (sender, run) = writer(server, CancellationToken::new());
        let writer = tokio::spawn(run);
        let mut producers = Vec::new();
        for p in 0..8u8 {
            let sender = sender.clone();
            producers.push(tokio::spawn(async move {
                for _ in 0..20 {
                    let frame = String::from(char::from(b'a' + p)).repeat(10_000);
                    sender.send(frame).await;
                }
            }));
        }
        let reader = tokio::spawn(async move {
            let mut reader = LineReader::new(tokio::io::BufReader::new(client), 1 << 20);
            let mut count = 0;
            while let Some(Line::Text(line)) = reader.next().await.unwrap() {
                assert_eq!(line.len(), 10_000);
                assert!(line.iter().all(|&b| b == line[0]), "a torn line");
                count += 1;
                if count == 160 {
                    break;
                }
            }
            count
        });
        for p in producers {
            p.await.unwrap();
        }
        sender.close().await;
        writer.await.unwrap();
        assert_eq!(reader.await.unwrap(), 160);
    }

    #[tokio::test]
    async fn a_broken_output_fires_the_token_instead_of_panicking() {
        let (client, server) = tokio::io::duplex(8);
        drop(client);
        let broken = CancellationToken::new();
        let (sender, run) = writer(server, broken.clone());
        let writer = tokio::spawn(run);
        sender.send("{}".into()).await;
        broken.cancelled().await;
        writer.await.unwrap();
        sender.send("{}".into()).await;
    }
}
