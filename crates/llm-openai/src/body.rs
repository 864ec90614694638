//! The response body: what kind of answer it is, and its events in order.
//!
//! A streaming request is normally answered with server-sent events, but real servers also
//! answer with one complete JSON completion (the request's `stream` ignored), or with an HTML
//! page from a proxy under the event-stream content type. The first bytes tell them apart:
//! a complete answer is decoded like a stream of one chunk, and an HTML page is reported once
//! as a protocol error instead of being retried as a dropped connection.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use dsh_llm::{ModelError, ModelErrorKind, ModelEvent};
use futures::{Stream, StreamExt};
use serde_json::{Value, json};

use crate::decode::{Decoder, MAX_EVENT_BYTES, Step, protocol};
use crate::sse::Splitter;

type Item = Result<ModelEvent, ModelError>;

/// How much of an HTML page is read to quote its title.
const HTML_LIMIT: usize = 64 * 1024;
/// What is read after `[DONE]` so the connection can go back to the pool: the end is
/// awaited this long before the final events are given out, then in the background.
const DRAIN_LIMIT: usize = 1024 * 1024;
const DRAIN_INLINE: Duration = Duration::from_millis(250);
const DRAIN_BACKGROUND: Duration = Duration::from_secs(5);

enum Mode {
    /// Nothing but whitespace (and a BOM) so far.
    Sniff(Vec<u8>),
    Sse,
    Json(Vec<u8>),
    Html(Vec<u8>),
}

type Body = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

struct State {
    body: Option<Body>,
    splitter: Splitter,
    mode: Mode,
    decoder: Decoder,
    queue: VecDeque<Item>,
    /// The body ended; what the splitter holds is all there is.
    eof: bool,
    ended: bool,
}

/// Decodes a response body into model events.
pub fn decode_body<S>(body: S) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send
where
    S: Stream<Item = io::Result<Bytes>> + Send + 'static,
{
    let state = State {
        body: Some(Box::pin(body)),
        splitter: Splitter::new(MAX_EVENT_BYTES),
        mode: Mode::Sniff(Vec::new()),
        decoder: Decoder::default(),
        queue: VecDeque::new(),
        eof: false,
        ended: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some((item, state));
            }
            if state.ended {
                return None;
            }
            if let Some(event) = state.splitter.next_event() {
                let step = state.decoder.event(&event);
                if state.absorb(step) && !state.eof {
                    state.drain().await;
                }
                continue;
            }
            if state.eof {
                let step = state.at_end();
                state.absorb(step);
                state.ended = true;
                continue;
            }
            let next = match state.body.as_mut() {
                Some(body) => body.next().await,
                None => None,
            };
            match next {
                Some(Ok(bytes)) => {
                    if let Err(error) = state.feed(&bytes) {
                        state.absorb(Err(error));
                    }
                }
                Some(Err(e)) => {
                    state.absorb(Err(ModelError::new(
                        ModelErrorKind::Transport,
                        format!("reading the response failed: {e}"),
                    )));
                }
                None => {
                    state.eof = true;
                    if matches!(state.mode, Mode::Sse | Mode::Sniff(_)) {
                        state.splitter.finish();
                    }
                }
            }
        }
    })
}

impl State {
    /// Queues what a step yields; true when the stream is complete.
    fn absorb(&mut self, step: Result<Step, ModelError>) -> bool {
        match step {
            Ok(Step::Events(events)) => {
                self.queue.extend(events.into_iter().map(Ok));
                false
            }
            Ok(Step::Done(events, error)) => {
                self.queue.extend(events.into_iter().map(Ok));
                self.queue.extend(error.map(Err));
                self.ended = true;
                true
            }
            Err(error) => {
                self.queue.push_back(Err(error));
                self.ended = true;
                // A failed stream's connection is not worth keeping: drop it now.
                self.body = None;
                true
            }
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), ModelError> {
        let oversized = || protocol("an event exceeds the 16 MiB limit");
        match &mut self.mode {
            Mode::Sse => self.splitter.push(bytes).map_err(|_| oversized()),
            Mode::Json(buf) => {
                buf.extend_from_slice(bytes);
                if buf.len() > MAX_EVENT_BYTES {
                    return Err(oversized());
                }
                Ok(())
            }
            Mode::Html(buf) => {
                buf.extend_from_slice(bytes);
                if buf.len() >= HTML_LIMIT {
                    return Err(html_error(buf));
                }
                Ok(())
            }
            Mode::Sniff(buf) => {
                buf.extend_from_slice(bytes);
                let start = buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(buf);
                let first = start.iter().find(|b| !b.is_ascii_whitespace()).copied();
                let buf = std::mem::take(buf);
                match first {
                    Some(b'{') => self.mode = Mode::Json(buf),
                    Some(b'<') => self.mode = Mode::Html(buf),
                    None if buf.len() < HTML_LIMIT => {
                        self.mode = Mode::Sniff(buf);
                        return Ok(());
                    }
                    _ => {
                        self.mode = Mode::Sse;
                        return self.splitter.push(&buf).map_err(|_| oversized());
                    }
                }
                // The new mode may already hold enough to decide.
                self.feed(&[])
            }
        }
    }

    /// The body ended and every event was handled.
    fn at_end(&mut self) -> Result<Step, ModelError> {
        match std::mem::replace(&mut self.mode, Mode::Sse) {
            Mode::Sse | Mode::Sniff(_) => self.decoder.complete(false),
            Mode::Html(page) => Err(html_error(&page)),
            Mode::Json(text) => self.complete_answer(&text),
        }
    }

    /// A complete (non-streaming) answer, decoded as one chunk whose delta is the message.
    fn complete_answer(&mut self, text: &[u8]) -> Result<Step, ModelError> {
        let value: Value = serde_json::from_slice(text).map_err(|e| {
            protocol(format!(
                "invalid JSON answer ({e}): {}",
                excerpt(text).chars().take(200).collect::<String>()
            ))
        })?;
        let Some(choice) = value
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            // An error object, or something that is not an answer at all.
            self.decoder.chunk(&value)?;
            return Err(protocol(
                "a JSON answer without choices instead of an event stream",
            ));
        };
        let message = choice.get("message").cloned().unwrap_or(Value::Null);
        let mut chunk = json!({
            "choices": [{
                "delta": message,
                "finish_reason": choice.get("finish_reason").cloned().unwrap_or(Value::Null),
            }],
        });
        if let (Some(usage), Some(fields)) = (value.get("usage"), chunk.as_object_mut()) {
            fields.insert("usage".into(), usage.clone());
        }
        match self.decoder.chunk(&chunk)? {
            Step::Events(events) => self.queue.extend(events.into_iter().map(Ok)),
            Step::Done(..) => {}
        }
        self.decoder.complete(true)
    }

    /// Reads what follows `[DONE]` to the end of the body, so the connection goes back to
    /// the pool (an unread body closes it): briefly before the final events are given out,
    /// then in the background, so a server that keeps the body open costs at most a moment.
    async fn drain(&mut self) {
        let Some(mut body) = self.body.take() else {
            return;
        };
        let mut read = 0usize;
        let ended = tokio::time::timeout(DRAIN_INLINE, read_to_end(&mut body, &mut read)).await;
        if ended.is_ok() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let _ = tokio::time::timeout(DRAIN_BACKGROUND, read_to_end(&mut body, &mut read)).await;
        });
    }
}

/// Reads `body` to its end, or until more than [`DRAIN_LIMIT`] bytes were read in all.
async fn read_to_end(body: &mut Body, read: &mut usize) {
    while let Some(Ok(chunk)) = body.next().await {
        *read += chunk.len();
        if *read > DRAIN_LIMIT {
            tracing::debug!("more than 1 MiB after the end of the stream; closing");
            return;
        }
    }
}

fn html_error(page: &[u8]) -> ModelError {
    protocol(format!(
        "the server answered with {} instead of an event stream",
        excerpt(page)
    ))
}

/// A short, readable excerpt of a body: an HTML page (a proxy's 502) by its title, anything
/// else by its first 300 characters.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim_start_matches('\u{FEFF}').trim();
    let lower = trimmed.to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        let title = lower
            .find("<title>")
            .and_then(|start| {
                let from = start + "<title>".len();
                lower[from..]
                    .find("</title>")
                    .map(|end| trimmed[from..from + end].trim())
            })
            .filter(|t| !t.is_empty());
        return match title {
            Some(title) => format!(
                "an HTML error page: {}",
                title.chars().take(200).collect::<String>()
            ),
            None => "an HTML error page".to_owned(),
        };
    }
    let mut out: String = trimmed.chars().take(300).collect();
    if trimmed.chars().count() > 300 {
        out.push('…');
    }
    out
}
