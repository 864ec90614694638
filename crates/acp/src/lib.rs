//! Seam role: consumer of `dsh_agent::AgentRegistry` and `dsh_session::SessionStore` — the Agent
//! Client Protocol bridge over stdio JSON-RPC.
//!
//! The only crate that depends on the ACP schema crate (architecture invariant 5), with its own
//! tokio transport; stdout carries protocol frames and nothing else.
//!
//! Status: not implemented yet. A later issue fills this crate; until then it exports nothing.
#![deny(missing_docs)]
