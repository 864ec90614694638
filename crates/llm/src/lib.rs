//! Seam role: definition (layer 1) — the model seam: the `Model` trait, `ModelRequest`, the
//! `ModelEvent` stream and typed `ModelError` kinds.
//!
//! Providers stream reasoning, text, tool-call fragments, usage and one finish (or one error) per
//! request; the agent loop consumes that stream without knowing which provider produced it.
//!
//! Invariants this crate will hold (llm spec LLM-*): request validation is shared by every
//! provider; one table maps finish reasons and errors to turn end reasons; dropping a stream
//! releases its request; retries happen inside providers.
//!
//! Status: not implemented yet. The issue "Model seam and providers" fills this crate; until then
//! it exports nothing.
#![deny(missing_docs)]
