//! Configuration. The provider never reads the environment:
//! the CLI resolves the key, so tests never mutate process state.

use std::fmt;
use std::time::Duration;

use url::Url;

use crate::encode::MaxTokensField;

/// An API key. Its `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> ApiKey {
        ApiKey(secret.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// When and how long to wait before retrying.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff delay.
    pub initial: Duration,
    /// The longest backoff delay.
    pub cap: Duration,
    /// A server asking to wait longer than this is not retried.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 4,
            initial: Duration::from_millis(500),
            cap: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// The provider's configuration.
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// The API's base URL; requests go to `<base>/chat/completions`.
    pub base_url: String,
    /// The model name, passed through unchanged.
    pub model: String,
    /// The key; optional only for loopback hosts.
    pub api_key: Option<ApiKey>,
    /// Extra request headers (not the reserved ones).
    pub extra_headers: Vec<(String, String)>,
    /// TCP and TLS establishment.
    pub connect_timeout: Duration,
    /// The longest wait for the first byte of an answer (its headers and first chunk): a
    /// local model reads a long prompt before it says anything, and a thinking model may too.
    pub first_byte_timeout: Duration,
    /// The longest gap between received bytes once the answer started.
    pub idle_timeout: Duration,
    /// Retries.
    pub retry: RetryPolicy,
    /// Send recorded reasoning back (DeepSeek's thinking mode needs it on tool-call turns).
    pub send_reasoning_content: bool,
    /// Which field carries the output limit.
    pub max_tokens_field: MaxTokensField,
    /// Ask for usage in the stream (`stream_options`); turn it off for a server that refuses
    /// the field. Usage is then reported only if the server sends it anyway.
    pub stream_usage: bool,
    /// The server needs no key: a server on another machine is accepted without one (and no
    /// `Authorization` header is sent).
    pub keyless: bool,
}

impl OpenAiConfig {
    /// DeepSeek's defaults with `api_key`.
    pub fn deepseek(api_key: Option<ApiKey>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: "https://api.deepseek.com".into(),
            model: "deepseek-flash".into(),
            api_key,
            extra_headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            send_reasoning_content: true,
            max_tokens_field: MaxTokensField::MaxTokens,
            stream_usage: true,
            keyless: false,
        }
    }
}

/// Why a configuration was refused. No message ever contains the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenAiConfigError {
    /// Not an http(s) URL, or it has a query, fragment or user info.
    #[error(
        "invalid base URL {0:?}: use http(s)://host[:port][/path] without query, fragment or user info"
    )]
    InvalidBaseUrl(String),
    /// An extra header dsh sets itself.
    #[error("header {0:?} is set by dsh and cannot be overridden")]
    ReservedHeader(String),
    /// An extra header that is not valid HTTP.
    #[error("header {0:?} is not a valid HTTP header")]
    InvalidHeader(String),
    /// A non-loopback server without a key.
    #[error("an API key is required for a server that is not on this machine")]
    MissingApiKey,
    /// The key holds whitespace or control characters.
    #[error("the API key contains whitespace or control characters")]
    InvalidApiKey,
    /// A key would travel unencrypted to another machine.
    #[error("refusing to send the API key over plain http to {0}; use https")]
    InsecureKeyTransport(String),
    /// A timeout of zero.
    #[error("timeouts must be greater than zero")]
    ZeroTimeout,
}

const RESERVED: [&str; 5] = [
    "authorization",
    "content-type",
    "content-length",
    "host",
    "accept",
];

/// True for `localhost`, 127.0.0.0/8 and `::1`.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Validates the configuration; returns the chat-completions URL.
pub(crate) fn validate(config: &OpenAiConfig) -> Result<Url, OpenAiConfigError> {
    let bad = || OpenAiConfigError::InvalidBaseUrl(config.base_url.clone());
    let base = Url::parse(&config.base_url).map_err(|_| bad())?;
    if !matches!(base.scheme(), "http" | "https")
        || base.query().is_some()
        || base.fragment().is_some()
        || !base.username().is_empty()
        || base.password().is_some()
        || base.host().is_none()
    {
        return Err(bad());
    }
    for (name, value) in &config.extra_headers {
        if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(OpenAiConfigError::ReservedHeader(name.clone()));
        }
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
            || reqwest::header::HeaderValue::from_str(value).is_err()
        {
            return Err(OpenAiConfigError::InvalidHeader(name.clone()));
        }
    }
    if config.connect_timeout.is_zero()
        || config.idle_timeout.is_zero()
        || config.first_byte_timeout.is_zero()
    {
        return Err(OpenAiConfigError::ZeroTimeout);
    }
    match &config.api_key {
        None if !is_loopback(&base) && !config.keyless => {
            return Err(OpenAiConfigError::MissingApiKey);
        }
        Some(key)
            if key.expose().is_empty()
                || key
                    .expose()
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control()) =>
        {
            return Err(OpenAiConfigError::InvalidApiKey);
        }
        Some(_) if base.scheme() == "http" && !is_loopback(&base) => {
            return Err(OpenAiConfigError::InsecureKeyTransport(
                base.host_str().unwrap_or("").to_owned(),
            ));
        }
        _ => {}
    }
    let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
    Url::parse(&url).map_err(|_| bad())
}
