//! Seam role: provider of dsh_llm::Model — OpenAI-compatible chat completions over
//! server-sent events, DeepSeek by default.
//!
//! The only crate of the workspace with an HTTP client (architecture invariant 5).
//!
//! Invariants:
//! - the decoder's output is identical for every split of the same response bytes;
//! - tool-call fragments are reassembled by index (a new id at a reused index opens a new
//!   call), renumbered densely, and their arguments concatenated byte-exact;
//! - the API key never appears in `Debug` output, errors or logs.
//!
//! Status: the response decoder and the request encoding are built; the HTTP transport (retries,
//! timeouts, cancellation) is the next increment of the issue "Model seam and providers".
#![deny(missing_docs)]

mod decode;
mod encode;

pub use decode::{MAX_EVENT_BYTES, decode_body};
pub use encode::{MaxTokensField, encode_request};
