//! Seam role: definition (layer 1) — the shell executor seam: [`ShellExecutor`], exec requests
//! and specs, task ids, opaque owner tokens and the outcome vocabulary.
//!
//! Every execution is a task in the executor's table, foreground or background. Design
//! decisions this crate fixes for every provider and consumer:
//!
//! - **One read path for owners.** A task's owner is a string the executor stores verbatim at
//!   spawn and never interprets; [`ShellExecutor::owner_of`] is the only way to read it, and no
//!   output type carries it. Ownership *policy* (who may read or kill what) lives in consumers,
//!   which compare tokens; the executor holds no agent, session or tool type.
//! - **Ids are never reused.** [`TaskId`]s come from one process-wide counter, so a consumer's
//!   "check the owner, then act" can only race with the task disappearing, never with a
//!   different task taking its id.
//! - **Defaults are applied once.** [`resolve`] turns a sparse [`ShellExecRequest`] into a fully
//!   explicit [`ShellExecSpec`]; `run` and `start` use a spec as given. A spec has no `Default`
//!   and no constructor that omits a field, so a missing owner is a visible `None`.
//! - **A command's own outcome is never an error.** Exit codes, signals, timeouts and kills are
//!   [`ExitInfo`]; [`ShellError`] means bad input or infrastructure.
//! - **Output is one merged byte stream** per task, addressed by offset; lossy text rendering
//!   happens only at the consumer boundary, through [`text::decode_chunk`].
//!
//! - **A sandbox is asked for, never assumed.** Every request carries a [`SandboxPolicy`]; a
//!   provider applies it or refuses the command, and never runs it less confined.
//! - **Containment reaches past the executor.** A process started elsewhere (an MCP server)
//!   is enrolled through [`ProcessContainment`] and ended, with what it started, like a task.
//!
//! Disposal is deliberately not on the trait: only the provider's scope may end every task.
#![deny(missing_docs)]

mod containment;
mod error;
mod executor;
mod id;
mod outcome;
mod request;
mod sandbox;
pub mod text;

pub use containment::{Confined, Enrolment, ProcessContainment};
pub use error::ShellError;
pub use executor::{OutputSink, ShellExecutor, TaskDoneListener, TaskDoneSubscription};
pub use id::{TaskId, TaskIdError};
pub use outcome::{
    EndCause, ExitInfo, KillCause, OutputChunk, OutputStats, RunOutput, SignalInfo, Spill,
    SpillStop, TaskDone, TaskInfo, TaskState,
};
pub use request::{MAX_COMMAND_BYTES, ResolveLimits, ShellExecRequest, ShellExecSpec, resolve};
pub use sandbox::SandboxPolicy;
