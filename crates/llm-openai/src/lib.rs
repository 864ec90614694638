//! Seam role: provider of dsh_llm::Model — OpenAI-compatible chat completions over
//! server-sent events, DeepSeek by default.
//!
//! The only crate of the workspace with an HTTP client (architecture invariant 5). The wire
//! codec is public only under the `wire-internals` feature, which the package's own tests and
//! benches turn on.
//!
//! Invariants:
//! - the decoder's output is identical for every split of the same response bytes, and it
//!   never holds more than one event's worth (16 MiB) of pending bytes;
//! - tool-call fragments are reassembled by index (a new id at a reused index opens a new
//!   call), renumbered densely, and their arguments concatenated byte-exact;
//! - the API key never appears in `Debug` output, errors or logs;
//! - retries (with backoff and jitter, honouring Retry-After) happen only before the first
//!   model event was yielded; cancellation drops the response, closing the connection at once.
#![deny(missing_docs)]

mod body;
mod config;
mod decode;
mod encode;
mod model;
mod models;
mod overflow;
mod plugin;
mod sse;
mod unknown_model;
mod words;

#[cfg(feature = "wire-internals")]
pub use body::decode_body;
pub use config::{ApiKey, OpenAiConfig, OpenAiConfigError, RetryPolicy};
pub use decode::MAX_EVENT_BYTES;
pub use encode::MaxTokensField;
#[cfg(feature = "wire-internals")]
pub use encode::encode_request;
pub use model::OpenAiModel;
pub use plugin::OpenAiPlugin;
