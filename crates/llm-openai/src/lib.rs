//! Seam role: provider of `dsh_llm::Model` — OpenAI-compatible chat completions, DeepSeek by
//! default.
//!
//! The only crate of the workspace with an HTTP client (architecture invariant 5). Streams server-
//! sent events, reassembles tool-call fragments, retries with backoff only before the first model
//! event, and never logs the API key.
//!
//! Status: not implemented yet. The issue "Model seam and providers" fills this crate; until then
//! it exports nothing.
#![deny(missing_docs)]
