//! A real HTTP/1.1 model server on 127.0.0.1: scripted responses
//! replayed byte for byte, in segments, with delays, abrupt endings and hangs, recording every
//! request and when each connection closed — so a test can prove that a cancelled client
//! really closed its connection.
//!
//! Connections are kept alive as a real server keeps them: a response that ends normally
//! leaves its connection open for the next request, and the server counts the connections it
//! accepted, so a test can prove the client reuses them. A response can ask to close instead.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// How a response body is cut into writes.
#[derive(Clone, Debug)]
pub enum Split {
    /// One write.
    Whole,
    /// Writes of `n` bytes.
    Every(usize),
    /// One write per line.
    PerLine,
    /// One write per server-sent event (up to and including its blank line).
    PerEvent,
}

/// How a response ends after its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Finish the chunked body and close.
    Normal,
    /// Close without the final chunk.
    Close,
    /// Keep the connection open and send nothing more.
    Hang,
}

/// One scripted response.
#[derive(Clone, Debug)]
pub struct MockResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    split: Split,
    delay_between: Duration,
    ending: Ending,
    hang_before_headers: bool,
    close: bool,
    trailing_delay: Duration,
    first_byte_delay: Duration,
    held_by: Option<Arc<Notify>>,
}

impl MockResponse {
    /// A 200 SSE response replaying `bytes`.
    pub fn sse_bytes(bytes: impl Into<Vec<u8>>) -> MockResponse {
        MockResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: bytes.into(),
            split: Split::Whole,
            delay_between: Duration::ZERO,
            ending: Ending::Normal,
            hang_before_headers: false,
            close: false,
            trailing_delay: Duration::ZERO,
            first_byte_delay: Duration::ZERO,
            held_by: None,
        }
    }

    /// A 200 SSE answer of plain text that finishes `stop`.
    pub fn text(text: &str) -> MockResponse {
        let delta = serde_json::json!({"content": text});
        MockResponse::sse_bytes(chunks(&[delta], "stop"))
    }

    /// A 200 SSE answer streamed as one delta per piece, finishing `stop` (with
    /// [`Split::PerEvent`] each piece is a write of its own).
    pub fn pieces(pieces: &[&str]) -> MockResponse {
        let deltas: Vec<serde_json::Value> = pieces
            .iter()
            .map(|p| serde_json::json!({"content": p}))
            .collect();
        MockResponse::sse_bytes(chunks(&deltas, "stop")).segments(Split::PerEvent)
    }

    /// A 200 SSE answer of plain text that finishes `stop`, then reports its usage in a last
    /// chunk with no choices, as DeepSeek and OpenAI do with `include_usage`.
    pub fn text_with_usage(
        text: &str,
        prompt: u64,
        completion: u64,
        cache_hit: u64,
    ) -> MockResponse {
        let delta = serde_json::json!({"content": text});
        let mut body = chunks(&[delta], "stop");
        let done = b"data: [DONE]\n\n";
        body.truncate(body.len() - done.len());
        let usage = serde_json::json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk",
            "created": 1767225600, "model": "mock", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion,
                      "prompt_cache_hit_tokens": cache_hit,
                      "prompt_cache_miss_tokens": prompt - cache_hit}});
        body.extend_from_slice(format!("data: {usage}\n\n").as_bytes());
        body.extend_from_slice(done);
        MockResponse::sse_bytes(body)
    }

    /// A 200 SSE answer asking for one tool call (`arguments` as JSON) that finishes
    /// `tool_calls`.
    pub fn tool_call(name: &str, arguments: &serde_json::Value) -> MockResponse {
        let delta = serde_json::json!({"tool_calls": [{"index": 0, "id": format!("call_{name}"),
            "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]});
        MockResponse::sse_bytes(chunks(&[delta], "tool_calls"))
    }

    /// A 200 SSE answer asking for several tool calls at once (ids `call_0`, `call_1` …)
    /// that finishes `tool_calls`.
    pub fn tool_calls(calls: &[(&str, serde_json::Value)]) -> MockResponse {
        let calls: Vec<serde_json::Value> = calls
            .iter()
            .enumerate()
            .map(|(index, (name, arguments))| {
                serde_json::json!({"index": index, "id": format!("call_{index}"),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()}})
            })
            .collect();
        let delta = serde_json::json!({ "tool_calls": calls });
        MockResponse::sse_bytes(chunks(&[delta], "tool_calls"))
    }

    /// A 200 SSE response replaying fixture `name` of `fixtures/sse/`.
    pub fn sse_fixture(name: &str) -> MockResponse {
        MockResponse::sse_bytes(dsh_test_support::sse::fixture(name))
    }

    /// A response with `code` and an empty body.
    pub fn status(code: u16) -> MockResponse {
        MockResponse {
            status: code,
            headers: Vec::new(),
            ..MockResponse::sse_bytes(Vec::new())
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> MockResponse {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Replaces the body.
    pub fn body(mut self, bytes: impl Into<Vec<u8>>) -> MockResponse {
        self.body = bytes.into();
        self
    }

    /// Cuts the body into writes.
    pub fn segments(mut self, split: Split) -> MockResponse {
        self.split = split;
        self
    }

    /// Waits between writes.
    pub fn delay_between(mut self, delay: Duration) -> MockResponse {
        self.delay_between = delay;
        self
    }

    /// How the response ends.
    pub fn ending(mut self, ending: Ending) -> MockResponse {
        self.ending = ending;
        self
    }

    /// Answers with `Connection: close` and closes after the body.
    pub fn close_after(mut self) -> MockResponse {
        self.close = true;
        self
    }

    /// Waits before the body's final (empty) chunk, after everything else was written.
    pub fn trailing_delay(mut self, delay: Duration) -> MockResponse {
        self.trailing_delay = delay;
        self
    }

    /// Sends the headers at once, then waits before the body's first write: a server reading
    /// a long prompt.
    pub fn first_byte_delay(mut self, delay: Duration) -> MockResponse {
        self.first_byte_delay = delay;
        self
    }

    /// Answers only once `release` is notified (`notify_one`, before or after the request
    /// arrives): a model that takes as long as the test needs.
    pub fn held_by(mut self, release: Arc<Notify>) -> MockResponse {
        self.held_by = Some(release);
        self
    }

    /// Accepts the request and never answers.
    pub fn hang_before_headers(mut self) -> MockResponse {
        self.hang_before_headers = true;
        self
    }
}

/// One received request.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// Request line method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
    /// When it arrived.
    pub at: Instant,
    /// When the client closed the connection, once it did.
    pub closed: Option<Instant>,
    /// Which accepted connection (counted from 0) carried it.
    pub connection: usize,
}

impl Recorded {
    /// The body parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Answers a request the script has no response for: for benchmarks whose requests are too
/// many, or too dependent on what dsh sends, to script.
pub type Responder = dyn Fn(&Recorded) -> MockResponse + Send + Sync;

#[derive(Default)]
struct Shared {
    responses: Mutex<Vec<MockResponse>>,
    responder: Mutex<Option<Arc<Responder>>>,
    requests: Mutex<Vec<Recorded>>,
    failures: Mutex<Vec<String>>,
    connections: std::sync::atomic::AtomicUsize,
    changed: Notify,
    /// The answer to `GET …/models` (404 when unset), served apart from the script.
    models: Mutex<Option<MockResponse>>,
    /// Every request for the model list.
    listings: Mutex<Vec<Recorded>>,
}

/// The server. Dropping it stops accepting.
pub struct MockModelServer {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

impl MockModelServer {
    /// Binds 127.0.0.1:0 and serves `responses`, one per request, in order.
    pub async fn start(responses: Vec<MockResponse>) -> MockModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared::default());
        shared
            .responses
            .lock()
            .unwrap()
            .extend(responses.into_iter().rev());
        let accept_shared = shared.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let connection = accept_shared
                    .connections
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(serve(stream, connection, accept_shared.clone()));
            }
        });
        MockModelServer {
            addr,
            shared,
            accept,
        }
    }

    /// Answers every later `GET …/models` with `ids` as an OpenAI model list. The model
    /// list is served apart from the script: a client may ask for it at any time (an ACP
    /// session's model picker does), and that must not take a scripted answer.
    pub fn serve_models(&self, ids: &[&str]) {
        let data: Vec<serde_json::Value> = ids
            .iter()
            .map(|id| serde_json::json!({"id": id, "object": "model"}))
            .collect();
        let body = serde_json::json!({"object": "list", "data": data}).to_string();
        self.serve_models_with(
            MockResponse::status(200)
                .header("content-type", "application/json")
                .body(body),
        );
    }

    /// Answers every later `GET …/models` with `response`.
    pub fn serve_models_with(&self, response: MockResponse) {
        *self.shared.models.lock().unwrap() = Some(response);
    }

    /// Every request for the model list, in order.
    pub fn model_listings(&self) -> Vec<Recorded> {
        self.shared.listings.lock().unwrap().clone()
    }

    /// Binds 127.0.0.1:0 and answers every request with what `responder` makes of it.
    pub async fn responding(
        responder: impl Fn(&Recorded) -> MockResponse + Send + Sync + 'static,
    ) -> MockModelServer {
        let server = MockModelServer::start(Vec::new()).await;
        *server.shared.responder.lock().unwrap() = Some(Arc::new(responder));
        server
    }

    /// Queues `response` after every one not yet served: for a test that learns what to
    /// answer (an id, say) from what dsh already did.
    pub fn push(&self, response: MockResponse) {
        self.shared.responses.lock().unwrap().insert(0, response);
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `127.0.0.1:<port>`, as dsh names the server in its errors.
    pub fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// How many connections were accepted so far.
    pub fn connections(&self) -> usize {
        self.shared
            .connections
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Waits until request `index` has arrived.
    pub async fn wait_arrival(&self, index: usize) {
        loop {
            let notified = self.shared.changed.notified();
            if self.shared.requests.lock().unwrap().len() > index {
                return;
            }
            notified.await;
        }
    }

    /// Waits until the connection of request `index` is closed by the client, or `timeout`.
    pub async fn wait_closed(&self, index: usize, timeout: Duration) -> Option<Instant> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.changed.notified();
            if let Some(at) = self
                .shared
                .requests
                .lock()
                .unwrap()
                .get(index)
                .and_then(|r| r.closed)
            {
                return Some(at);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }

    /// Panics on an unscripted request or unconsumed responses.
    pub fn verify(&self) {
        let failures = self.shared.failures.lock().unwrap().clone();
        assert!(failures.is_empty(), "mock model server: {failures:?}");
        let left = self.shared.responses.lock().unwrap().len();
        assert_eq!(
            left, 0,
            "mock model server: {left} response(s) were never requested"
        );
    }
}

impl Drop for MockModelServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn serve(mut stream: TcpStream, connection: usize, shared: Arc<Shared>) {
    let mut served = Vec::new();
    // Requests follow one another on the connection until one side closes it.
    while let Some(mut request) = read_request(&mut stream).await {
        request.connection = connection;
        if request.method == "GET" && request.path.ends_with("/models") {
            shared.listings.lock().unwrap().push(request.clone());
            let response = shared.models.lock().unwrap().clone().unwrap_or_else(|| {
                MockResponse::status(404).body(r#"{"error":{"message":"no model list"}}"#)
            });
            shared.changed.notify_waiters();
            match respond(&mut stream, &response).await {
                After::Open => continue,
                After::Closed | After::Hanging => break,
            }
        }
        let responder = shared.responder.lock().unwrap().clone();
        let made = responder.map(|responder| responder(&request));
        let index = {
            let mut requests = shared.requests.lock().unwrap();
            // A responder's requests are not kept: a soak sends thousands.
            match made {
                Some(_) => requests.push(Recorded {
                    body: Vec::new(),
                    ..request
                }),
                None => requests.push(request),
            }
            requests.len() - 1
        };
        served.push(index);
        shared.changed.notify_waiters();
        let response = made.or_else(|| shared.responses.lock().unwrap().pop());
        let response = match response {
            Some(r) => r,
            None => {
                let message = format!("mock: no response scripted for request #{}", index + 1);
                shared.failures.lock().unwrap().push(message.clone());
                MockResponse::status(500).body(message).close_after()
            }
        };
        match respond(&mut stream, &response).await {
            After::Closed => break,
            After::Open => {}
            After::Hanging => {
                // Wait for the client to close (EOF or reset), which cancellation tests watch.
                let mut buf = [0u8; 1024];
                loop {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                break;
            }
        }
    }
    let now = Instant::now();
    let mut requests = shared.requests.lock().unwrap();
    for index in served {
        if let Some(r) = requests.get_mut(index) {
            r.closed = Some(now);
        }
    }
    drop(requests);
    shared.changed.notify_waiters();
}

/// What the connection is after a response.
enum After {
    /// The server closed it (or writing failed).
    Closed,
    /// Ready for the next request.
    Open,
    /// The response hangs; only the client can end it.
    Hanging,
}

/// Writes the response.
async fn respond(stream: &mut TcpStream, response: &MockResponse) -> After {
    if response.hang_before_headers {
        return After::Hanging;
    }
    if let Some(release) = &response.held_by {
        release.notified().await;
    }
    let connection = if response.close {
        "close"
    } else {
        "keep-alive"
    };
    let mut head = format!(
        "HTTP/1.1 {} Mock\r\nconnection: {connection}\r\ntransfer-encoding: chunked\r\n",
        response.status
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    if stream.write_all(head.as_bytes()).await.is_err() {
        return After::Closed;
    }
    let body = &response.body;
    let pieces: Vec<&[u8]> = match response.split {
        Split::Whole => vec![&body[..]],
        Split::Every(n) => body.chunks(n.max(1)).collect(),
        Split::PerLine => body.split_inclusive(|b| *b == b'\n').collect(),
        Split::PerEvent => {
            let mut events = Vec::new();
            let mut rest = &body[..];
            while let Some(at) = rest.windows(2).position(|w| w == b"\n\n") {
                events.push(&rest[..at + 2]);
                rest = &rest[at + 2..];
            }
            if !rest.is_empty() {
                events.push(rest);
            }
            events
        }
    };
    if !response.first_byte_delay.is_zero() {
        let _ = stream.flush().await;
        tokio::time::sleep(response.first_byte_delay).await;
    }
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 && !response.delay_between.is_zero() {
            tokio::time::sleep(response.delay_between).await;
        }
        if piece.is_empty() {
            continue;
        }
        let chunk = [format!("{:x}\r\n", piece.len()).as_bytes(), piece, b"\r\n"].concat();
        if stream.write_all(&chunk).await.is_err() || stream.flush().await.is_err() {
            return After::Closed;
        }
    }
    match response.ending {
        Ending::Normal => {
            if !response.trailing_delay.is_zero() {
                tokio::time::sleep(response.trailing_delay).await;
            }
            if stream.write_all(b"0\r\n\r\n").await.is_err() {
                return After::Closed;
            }
            if response.close {
                let _ = stream.shutdown().await;
                return After::Closed;
            }
            After::Open
        }
        Ending::Close => {
            let _ = stream.shutdown().await;
            After::Closed
        }
        Ending::Hang => After::Hanging,
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(pos) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
    };
    let head = String::from_utf8_lossy(&data[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[header_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body,
        at: Instant::now(),
        closed: None,
        connection: 0,
    })
}

/// The SSE bytes of one chat-completion stream: a chunk per delta, then the finish and
/// `[DONE]`.
fn chunks(deltas: &[serde_json::Value], finish: &str) -> Vec<u8> {
    let chunk = |delta: &serde_json::Value, finish: Option<&str>| {
        let body = serde_json::json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk",
            "created": 1767225600, "model": "mock",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {body}\n\n")
    };
    let mut out = String::new();
    for delta in deltas {
        out.push_str(&chunk(delta, None));
    }
    out.push_str(&chunk(&serde_json::json!({}), Some(finish)));
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}
