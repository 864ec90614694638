//! The HTTP transport: one `reqwest::Client` per model,
//! retries with backoff before the first model event only, an idle timeout reset by every
//! received chunk, and cancellation that drops the response (closing the connection) at once.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dsh_llm::{
    CancellationToken, Model, ModelError, ModelErrorKind, ModelInfo, ModelRequest, ModelStream,
    RetryNotice,
};
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

use crate::body::{decode_body, excerpt};
use crate::config::{OpenAiConfig, OpenAiConfigError, validate};
use crate::decode::error_from;
use crate::encode::encode_request;
use crate::words;

/// The OpenAI-compatible model.
#[derive(Clone)]
pub struct OpenAiModel {
    inner: Arc<Inner>,
}

struct Inner {
    config: OpenAiConfig,
    url: Url,
    client: reqwest::Client,
    headers: HeaderMap,
    info: ModelInfo,
    /// Where retry notices go: the scope of the plugin that provides the model (weak: the
    /// scope holds the model, not the other way round).
    notices: parking_lot::Mutex<Option<dsh_kernel::WeakScope>>,
}

impl std::fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("url", &self.inner.url.as_str())
            .field("model", &self.inner.config.model)
            .finish()
    }
}

/// One failed attempt: the error and whether another attempt may follow.
struct Attempt {
    error: ModelError,
    retry: bool,
}

impl OpenAiModel {
    /// Validates `config` and builds the client.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiModel, OpenAiConfigError> {
        let url = validate(&config)?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                .map_err(|_| OpenAiConfigError::InvalidApiKey)?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        for (name, value) in &config.extra_headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| OpenAiConfigError::InvalidHeader(name.clone()))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| OpenAiConfigError::InvalidHeader(name.to_string()))?;
            headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("dsh/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|_| OpenAiConfigError::InvalidBaseUrl(config.base_url.clone()))?;
        let endpoint = format!("{}://{}", url.scheme(), url.host_str().unwrap_or(""))
            + &url.port().map(|p| format!(":{p}")).unwrap_or_default();
        let info = ModelInfo {
            provider: "openai-compatible".into(),
            model: config.model.clone(),
            endpoint: Some(endpoint),
            replay: false,
        };
        Ok(OpenAiModel {
            inner: Arc::new(Inner {
                config,
                url,
                client,
                headers,
                info,
                notices: parking_lot::Mutex::new(None),
            }),
        })
    }

    /// Sends retry notices to `scope`'s event bus from now on (the plugin does this at apply).
    pub fn notify_on(&self, scope: &dsh_kernel::Scope) {
        *self.inner.notices.lock() = Some(scope.downgrade());
    }
}

impl OpenAiModel {
    /// `GET <base>/models` with the model's headers (the key included).
    pub(crate) fn models_request(&self) -> reqwest::RequestBuilder {
        let base = self.inner.config.base_url.trim_end_matches('/');
        let mut headers = self.inner.headers.clone();
        headers.remove(reqwest::header::CONTENT_TYPE);
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        self.inner
            .client
            .get(format!("{base}/models"))
            .headers(headers)
    }

    pub(crate) fn idle_timeout(&self) -> Duration {
        self.inner.config.idle_timeout
    }

    pub(crate) fn scrub_error(&self, error: ModelError) -> ModelError {
        self.inner.scrub(error)
    }
}

fn transport(message: impl Into<String>) -> ModelError {
    ModelError::new(ModelErrorKind::Transport, message)
}

pub(crate) fn kind_for_status(status: u16, body_code: Option<&str>) -> ModelErrorKind {
    match status {
        401 | 403 => ModelErrorKind::Auth,
        402 => ModelErrorKind::InsufficientBalance,
        429 if body_code == Some("insufficient_quota") => ModelErrorKind::InsufficientBalance,
        429 => ModelErrorKind::RateLimited,
        408 | 500..=599 => ModelErrorKind::Server,
        _ => ModelErrorKind::BadRequest,
    }
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_millis(ms));
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    // The other form the header allows: an HTTP date; a date in the past means "now".
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Yields the body's chunks, failing with `transport` when the first does not arrive within
/// `first` or a later one within `idle`.
fn with_idle_timeout(
    body: impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
    first: Duration,
    idle: Duration,
    host: String,
) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static {
    futures::stream::unfold(
        (Box::pin(body), false, true),
        move |(mut body, failed, waiting)| {
            let host = host.clone();
            async move {
                if failed {
                    return None;
                }
                let limit = if waiting { first } else { idle };
                match tokio::time::timeout(limit, body.next()).await {
                    Ok(Some(Ok(bytes))) => Some((Ok(bytes), (body, false, false))),
                    Ok(Some(Err(e))) => {
                        Some((Err(io::Error::other(e.to_string())), (body, true, false)))
                    }
                    Ok(None) => None,
                    Err(_) => Some((
                        Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            silence(&host, limit, waiting),
                        )),
                        (body, true, false),
                    )),
                }
            }
        },
    )
}

/// How a timeout is told: the wait for the first byte has its own setting.
fn silence(host: &str, limit: Duration, first: bool) -> String {
    let secs = limit.as_secs_f64();
    if first {
        format!(
            "no answer from {host} within {secs} s of the request (http.first_byte_timeout_secs)"
        )
    } else {
        format!("no data from {host} for {secs} s (http.idle_timeout_secs)")
    }
}

impl Inner {
    /// Emits `notice` where [`OpenAiModel::notify_on`] said; listeners are contained by the
    /// kernel and run synchronously, so they must be quick (a status line is).
    fn notify(&self, notice: RetryNotice) {
        let scope = self.notices.lock().as_ref().and_then(|weak| weak.upgrade());
        if let Some(scope) = scope {
            scope.emit(notice);
        }
    }

    /// `error` with the API key (and `Bearer <key>`) replaced wherever the server echoed it.
    fn scrub(&self, mut error: ModelError) -> ModelError {
        if let Some(key) = &self.config.api_key
            && !key.expose().is_empty()
            && error.message.contains(key.expose())
        {
            error.message = error
                .message
                .replace(&format!("Bearer {}", key.expose()), "Bearer [redacted]")
                .replace(key.expose(), "[redacted]");
        }
        error
    }

    /// One attempt: send, check the status, and wait for the first item of the stream.
    async fn attempt(
        &self,
        body: Bytes,
        cancel: &CancellationToken,
    ) -> Result<ModelStream, Attempt> {
        let host = words::endpoint(&self.url);
        let send = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body)
            .send();
        let response = tokio::select! {
            r = tokio::time::timeout(self.config.first_byte_timeout, send) => r,
            _ = cancel.cancelled() => return Err(Attempt { error: ModelError::cancelled(), retry: false }),
        };
        let response = match response {
            Err(_) => {
                return Err(Attempt {
                    error: transport(silence(&host, self.config.first_byte_timeout, true)),
                    retry: true,
                });
            }
            Ok(Err(e)) => {
                return Err(Attempt {
                    error: transport(words::unreachable(&host, &e.without_url())),
                    retry: true,
                });
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let request_id = response
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if (300..400).contains(&status) {
            let to = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("?")
                .to_owned();
            let mut error = ModelError::new(
                ModelErrorKind::Protocol,
                format!("unexpected redirect to {to}; check base_url"),
            );
            error.status = Some(status);
            return Err(Attempt {
                error,
                retry: false,
            });
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        // Media types are case-insensitive (`Text/Event-Stream` is an event stream).
        let media = content_type.to_ascii_lowercase();
        // A complete JSON answer to a streaming request is decoded, not thrown away.
        let decodable =
            media.starts_with("text/event-stream") || media.starts_with("application/json");
        if !(200..300).contains(&status) || !decodable {
            let after = retry_after(response.headers());
            // A stalled error body must not hold a cancel for a whole idle timeout.
            let text = tokio::select! {
                text = read_limited(response, self.config.idle_timeout) => text,
                _ = cancel.cancelled() => return Err(Attempt { error: ModelError::cancelled(), retry: false }),
            };
            let json: Option<serde_json::Value> = serde_json::from_slice(&text).ok();
            let error_obj = json
                .as_ref()
                .and_then(|j| j.get("error"))
                .filter(|e| e.is_object());
            if (200..300).contains(&status) {
                let error = match error_obj {
                    Some(obj) => error_from(obj),
                    None => ModelError::new(
                        ModelErrorKind::Protocol,
                        format!("expected an event stream, got content type {content_type:?}"),
                    ),
                };
                return Err(Attempt {
                    error,
                    retry: false,
                });
            }
            let code = error_obj
                .and_then(|e| e.get("code").or_else(|| e.get("type")))
                .and_then(|c| c.as_str());
            let message = error_obj
                .and_then(|e| e.get("message"))
                .and_then(|m| m.as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| excerpt(&text));
            let kind = if crate::overflow::is_context_overflow(status, code, &message) {
                ModelErrorKind::ContextOverflow
            } else {
                kind_for_status(status, code)
            };
            let message = crate::unknown_model::explain(
                &self.config.model,
                &self.config.base_url,
                status,
                code,
                &message,
            )
            .unwrap_or(message);
            let error = ModelError {
                kind,
                message: words::answered(&host, status, &message),
                status: Some(status),
                retry_after: after,
                request_id,
            };
            let retry = matches!(kind, ModelErrorKind::RateLimited | ModelErrorKind::Server);
            return Err(Attempt { error, retry });
        }
        let bytes = with_idle_timeout(
            response.bytes_stream(),
            self.config.first_byte_timeout,
            self.config.idle_timeout,
            host,
        );
        let mut events = decode_body(bytes).boxed();
        let first = tokio::select! {
            item = events.next() => item,
            _ = cancel.cancelled() => return Err(Attempt { error: ModelError::cancelled(), retry: false }),
        };
        match first {
            // Nothing was streamed yet, so a server-side failure or a rate limit reported as
            // the first event (`insufficient_system_resource`, a 200 carrying a rate-limit
            // error) is retried like the same failure given as a status.
            Some(Err(error))
                if matches!(
                    error.kind,
                    ModelErrorKind::Transport
                        | ModelErrorKind::Server
                        | ModelErrorKind::RateLimited
                ) =>
            {
                Err(Attempt { error, retry: true })
            }
            Some(Err(error)) => Err(Attempt {
                error,
                retry: false,
            }),
            None => Err(Attempt {
                error: transport("the response ended without events"),
                retry: true,
            }),
            Some(Ok(event)) => Ok(cancellable(
                futures::stream::once(async move { Ok(event) })
                    .chain(events)
                    .boxed(),
                cancel.clone(),
            )),
        }
    }

    fn delay(&self, attempt: u32, after: Option<Duration>) -> Option<Duration> {
        let policy = &self.config.retry;
        match after {
            Some(wait) if wait > policy.max_retry_after => None,
            Some(wait) => Some(wait),
            None => {
                let d = policy
                    .initial
                    .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
                    .min(policy.cap);
                let low = d / 2;
                let jitter = fastrand::u64(0..=(d - low).as_millis() as u64);
                Some(low + Duration::from_millis(jitter))
            }
        }
    }
}

/// Ends the stream with `Err(Cancelled)` as soon as `cancel` fires, dropping the response.
fn cancellable(events: ModelStream, cancel: CancellationToken) -> ModelStream {
    futures::stream::unfold((Some(events), cancel), |(events, cancel)| async move {
        let mut events = events?;
        tokio::select! {
            item = events.next() => item.map(|i| (i, (Some(events), cancel))),
            _ = cancel.cancelled() => {
                drop(events);
                Some((Err(ModelError::cancelled()), (None, cancel)))
            }
        }
    })
    .boxed()
}

async fn read_limited(response: reqwest::Response, idle: Duration) -> Vec<u8> {
    let mut body = response.bytes_stream();
    let mut out = Vec::new();
    while out.len() < 64 * 1024 {
        match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(Ok(chunk))) => out.extend_from_slice(&chunk),
            _ => break,
        }
    }
    out.truncate(64 * 1024);
    out
}

impl Model for OpenAiModel {
    fn info(&self) -> &ModelInfo {
        &self.inner.info
    }

    fn models(
        &self,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        let model = self.clone();
        Box::pin(async move { model.list_models(cancel).await })
    }

    fn stream(
        &self,
        request: ModelRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<ModelStream, ModelError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            request.validate()?;
            let request_session = request.session_id.clone();
            let mut body = encode_request(
                request
                    .params
                    .model
                    .as_deref()
                    .unwrap_or(&inner.config.model),
                &request,
                inner.config.send_reasoning_content,
                inner.config.max_tokens_field,
            );
            if !inner.config.stream_usage
                && let Some(fields) = body.as_object_mut()
            {
                fields.remove("stream_options");
            }
            tracing::trace!(body = %body, "model request");
            let body = Bytes::from(body.to_string());
            let mut attempt = 0u32;
            loop {
                if cancel.is_cancelled() {
                    return Err(ModelError::cancelled());
                }
                let failed = match inner.attempt(body.clone(), &cancel).await {
                    Ok(stream) => {
                        // Server-provided texts may echo the key; none leaves unscrubbed.
                        let scrubber = inner.clone();
                        let scrubbed = stream.map(move |item| item.map_err(|e| scrubber.scrub(e)));
                        return Ok(Box::pin(scrubbed) as ModelStream);
                    }
                    Err(mut failed) => {
                        failed.error = inner.scrub(failed.error);
                        failed
                    }
                };
                attempt += 1;
                let delay = if failed.retry && attempt <= inner.config.retry.max_retries {
                    inner.delay(attempt, failed.error.retry_after)
                } else {
                    None
                };
                let Some(delay) = delay else {
                    let mut error = failed.error;
                    if attempt > 1 {
                        error.message =
                            format!("{} (gave up after {attempt} attempts)", error.message);
                    }
                    return Err(error);
                };
                tracing::debug!(
                    attempt,
                    max = inner.config.retry.max_retries,
                    delay_ms = delay.as_millis() as u64,
                    "model request failed ({}); retrying",
                    failed.error
                );
                inner.notify(RetryNotice {
                    session_id: request_session.clone(),
                    reason: words::retry_reason(&failed.error),
                    retry: attempt,
                    max_retries: inner.config.retry.max_retries,
                    delay,
                });
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = cancel.cancelled() => return Err(ModelError::cancelled()),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use reqwest::header::{HeaderMap, HeaderValue};

    use super::retry_after;

    fn with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        assert_eq!(retry_after(&with("3")), Some(Duration::from_secs(3)));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(100));
        let wait = retry_after(&with(&later)).unwrap();
        assert!(
            wait > Duration::from_secs(90) && wait <= Duration::from_secs(100),
            "{wait:?}"
        );
        let past = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(100));
        assert_eq!(retry_after(&with(&past)), Some(Duration::ZERO));
        assert_eq!(retry_after(&with("soon")), None);
    }
}
