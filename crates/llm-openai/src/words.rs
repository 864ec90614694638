//! Failures in words a person can act on: what failed, the HTTP status with its reason, and
//! the host — `connection refused by 127.0.0.1:8765`, `api.deepseek.com answered HTTP 503
//! Service Unavailable: …` — instead of a client library's debug text.

use std::error::Error as _;

use dsh_llm::{ModelError, ModelErrorKind};
use url::Url;

/// The host, with its port when it is not the scheme's default.
pub(crate) fn endpoint(url: &Url) -> String {
    let host = url.host_str().unwrap_or("the server");
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// Why `endpoint` could not be reached.
pub(crate) fn unreachable(endpoint: &str, err: &reqwest::Error) -> String {
    let mut source = err.source();
    let mut innermost = err.to_string();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    return format!("connection refused by {endpoint}");
                }
                std::io::ErrorKind::ConnectionReset => {
                    return format!("the connection to {endpoint} was reset");
                }
                std::io::ErrorKind::TimedOut => return format!("no answer from {endpoint}"),
                _ => {}
            }
        }
        innermost = cause.to_string();
        source = cause.source();
    }
    if err.is_timeout() {
        return format!("no answer from {endpoint}");
    }
    let lower = innermost.to_ascii_lowercase();
    if lower.contains("dns") || lower.contains("lookup") || lower.contains("resolve") {
        let host = endpoint.split(':').next().unwrap_or(endpoint);
        return format!("cannot resolve the host {host}: {innermost}");
    }
    format!("cannot reach {endpoint}: {innermost}")
}

/// `endpoint answered HTTP 503 Service Unavailable: message`.
pub(crate) fn answered(endpoint: &str, status: u16, message: &str) -> String {
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .map(|r| format!(" {r}"))
        .unwrap_or_default();
    format!("{endpoint} answered HTTP {status}{reason}: {message}")
}

/// Why an attempt failed, short enough for a status line.
pub(crate) fn retry_reason(error: &ModelError) -> String {
    match (error.kind, error.status) {
        (ModelErrorKind::RateLimited, Some(status)) => format!("server busy (HTTP {status})"),
        (ModelErrorKind::Server, Some(status)) => format!("server error (HTTP {status})"),
        (_, Some(status)) => format!("{} (HTTP {status})", error.kind.code().replace('_', " ")),
        (_, None) => error.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_statuses_and_reasons_read_as_words() {
        let url = |u: &str| Url::parse(u).unwrap();
        assert_eq!(
            endpoint(&url("https://api.deepseek.com/v1")),
            "api.deepseek.com"
        );
        assert_eq!(endpoint(&url("http://127.0.0.1:8765/v1")), "127.0.0.1:8765");
        assert_eq!(
            answered("h", 503, "down"),
            "h answered HTTP 503 Service Unavailable: down"
        );
        assert_eq!(answered("h", 599, "odd"), "h answered HTTP 599: odd");
        let mut busy = ModelError::new(ModelErrorKind::RateLimited, "slow down");
        busy.status = Some(429);
        assert_eq!(retry_reason(&busy), "server busy (HTTP 429)");
        let refused = ModelError::new(ModelErrorKind::Transport, "connection refused by h:1");
        assert_eq!(retry_reason(&refused), "connection refused by h:1");
    }
}
