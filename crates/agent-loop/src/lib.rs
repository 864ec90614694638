//! Seam role: provider of `dsh_agent::AgentRegistry` — the agent loop: inbox, turns, steps,
//! cancel and teardown.
//!
//! Invariants this crate will hold (agent spec AG-*): every turn opened is closed in the log on
//! every path; a cancelled queued prompt never runs; teardown flushes the closing `turn/end`
//! before the session detaches.
//!
//! Status: not implemented yet. A later issue fills this crate; until then it exports nothing.
#![deny(missing_docs)]
