//! Seam role: definition (layer 3) — agents: the [`Agent`] trait and its verbs, [`TurnTicket`]s,
//! the memoised [`AgentHandle`] teardown, creation requests, the [`AgentRegistry`] service, the
//! [`ContextBuilder`] service that says what the model is told, the durable [`record`]s a
//! turn writes, and the slash [`commands`] both front ends expand alike (here because a
//! consumer may depend only on definitions).
//!
//! An agent is a live object bound to exactly one live session; its id *is* the session id,
//! and that id is also the owner token of whatever its tools start. Consumers (the ACP bridge,
//! `dsh run`, the bash tools' notices) use these traits only; the agent loop provides them.
//!
//! # Invariants
//!
//! - A ticket resolves exactly once: the provider resolves it, or dropping its sender resolves
//!   it `Failed` with code `internal`, so no caller waits forever.
//! - `AgentHandle::dispose` is memoised and shared: every clone, every owner scope and the
//!   plugin's unload run one teardown; dropping a dispose future never interrupts it; dropping
//!   handles disposes nothing.
//! - Delivery verbs only enqueue: they never await, never wait for a turn and never append to
//!   the session.
//! - This crate holds no consumer vocabulary: how a turn end is reported (an ACP stop reason,
//!   an exit status) is each front end's own mapping of [`TurnEndReason`].
#![deny(missing_docs)]

mod agent;
pub mod commands;
mod compacted;
mod config;
mod context;
mod error;
mod event;
mod factory;
mod handle;
mod instructions;
mod message;
mod options;
pub mod record;
mod ticket;

pub use agent::{Agent, AgentStatus};
pub use config::{
    CONFIG_CHANGED, ConfigChange, ConfigChangedRecord, ConfigKey, ConfigOrigin, SessionConfig,
};
pub use context::{ContextBuilder, ContextError, ContextRequest, ToolBrief};
pub use error::AgentError;
pub use event::AgentEvent;
pub use factory::{AgentFactory, AgentRegistry, AgentSetup, CreateAgent, ResumeAgent};
pub use handle::AgentHandle;
pub use instructions::{Audience, CallerPrompt, PromptMode};
pub use message::{MessageId, MessageSource, UserMessage, fenced};
pub use options::{
    AgentOptions, AgentOverrides, DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOOL_CALLS,
    MAX_TOOL_CALLS_LIMIT,
};
pub use ticket::{TicketSender, TurnOutcome, TurnTicket};

pub use dsh_session::{CancelCause, Failure, Session, SessionId, TurnEndReason};
