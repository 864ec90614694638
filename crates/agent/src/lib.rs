//! Seam role: definition (layer 3) — agents: `Agent`, `AgentHandle`, `AgentFactory`,
//! `AgentRegistry`, turn tickets and agent events.
//!
//! Invariants this crate will hold (agent spec AG-*): `cancel(cause)` is the only public stop
//! verb; `AgentHandle::dispose()` is the only teardown, in the order stop and await the loop,
//! unregister, detach the session; the agent id is the session id.
//!
//! Status: not implemented yet. A later issue fills this crate; until then it exports nothing.
#![deny(missing_docs)]
