//! The keyboard: one thread reads the terminal's input with crossterm and hands each event to
//! the loop over a channel.
//!
//! A thread of its own rather than crossterm's async `EventStream`: after a resize the
//! viewport must ask the terminal where the cursor is, and crossterm answers that only to a
//! reader that holds its input lock. `EventStream` keeps a thread parked in a poll that holds
//! that lock, so a cursor query beside it either times out or, when the poll takes the lock
//! between the query's wait and its read, blocks until the next key. Here the one reader
//! asks, between two reads.
//!
//! It asks only when the loop says so: the answer is the cursor of the frame on the screen,
//! so the loop draws nothing between asking and taking the answer. A burst of resizes (a
//! window dragged) is then answered one at a time, each against the frame it moved.

use std::time::Duration;

use crossterm::event::{Event, read};
use tokio::sync::{mpsc, oneshot};

/// How long the loop waits for the terminal to say where its cursor is.
const ANSWER: Duration = Duration::from_secs(1);

/// What the keyboard thread read.
#[derive(Debug)]
pub enum Read {
    /// A key, a paste, a focus change.
    Event(Event),
    /// The terminal was resized.
    Resized(Resize),
}

/// A resize, and the way to ask where the cursor went.
#[derive(Debug)]
pub struct Resize {
    ask: std::sync::mpsc::Sender<oneshot::Sender<Option<(u16, u16)>>>,
}

impl Resize {
    /// Where the terminal's cursor is now (column, row); `None` when it did not say in time.
    pub async fn cursor(self) -> Option<(u16, u16)> {
        let (answer, answered) = oneshot::channel();
        self.ask.send(answer).ok()?;
        tokio::time::timeout(ANSWER, answered).await.ok()?.ok()?
    }
}

/// Starts the reader; the channel closes when the terminal's input ends or fails.
pub fn start() -> std::io::Result<mpsc::UnboundedReceiver<Read>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("dsh-keyboard".into())
        .spawn(move || {
            loop {
                let read = match read() {
                    Ok(Event::Resize(..)) => {
                        let (ask, asked) = std::sync::mpsc::channel();
                        if tx.send(Read::Resized(Resize { ask })).is_err() {
                            return;
                        }
                        // Until the loop asks (or drops the resize), nothing else is read.
                        if let Ok(answer) = asked.recv() {
                            let _ = answer.send(crossterm::cursor::position().ok());
                        }
                        continue;
                    }
                    Ok(event) => Read::Event(event),
                    Err(e) => {
                        tracing::debug!("the terminal's input ended: {e}");
                        return;
                    }
                };
                if tx.send(read).is_err() {
                    return;
                }
            }
        })?;
    Ok(rx)
}
