//! Seam role: definition (layer 0) — the runtime every dsh seam is built on: the scope tree,
//! typed services, contained events, plugins and scope-owned tasks.
//!
//! dsh is a set of plugins over this small runtime. A [`Plugin`] receives a [`Scope`] and
//! registers everything it does on it; unloading the plugin disposes that scope, which undoes
//! every effect in a fixed order. Seams meet through services: a provider calls
//! `scope.provide::<dyn ShellExecutor>(arc)`, a consumer calls `scope.get::<dyn ShellExecutor>()`.
//! Neither names the other's crate.
//!
//! # Invariants
//!
//! - **Disposal order.** Disposing a scope disposes its child scopes first (newest first),
//!   then runs its own effects last-in-first-out. Effects of one scope never run concurrently.
//! - **Disposal is idempotent and memoised.** Every caller of [`Scope::dispose`], concurrent or
//!   later, resolves when the one disposal has completed; dropping a caller's future does not
//!   stop it.
//! - **Containment.** A disposer, listener, task or plugin `apply` that returns an error or
//!   panics is logged through `tracing`; the remaining disposers and listeners still run, and
//!   the caller sees a value, never an unwind.
//! - **Closed scopes accept nothing.** Once disposal has begun, adding a disposer, service,
//!   listener, task or child fails with [`KernelError::ScopeClosed`] and registers nothing.
//! - **One provider per service.** A second `provide` of the same service type fails with
//!   [`KernelError::DuplicateService`]; a service disappears when its providing scope is
//!   disposed, after which [`Scope::require`] fails with [`KernelError::MissingService`].
//! - **Plugins are all-or-nothing.** A plugin whose `apply` fails or panics leaves nothing
//!   registered. [`Runtime::reload`] disposes the old instance's scope before applying the new
//!   one; [`Runtime::shutdown`] disposes plugins in reverse load order.
//! - **State that must survive a reload lives in providers.** The runtime keeps no per-plugin
//!   state besides its scope, so reloading a consumer cannot change what a provider owns.
//!
//! The rationale and the alternatives (a statically wired struct of `Arc`s, dynamic libraries)
//! are recorded in docs/rfc/implemented/architecture/2026-11-30-runtime-and-plugins.md.
#![deny(missing_docs)]

mod contain;
mod error;
mod events;
mod plugin;
mod runtime;
mod scope;
mod services;
mod tasks;

pub use async_trait::async_trait;
pub use contain::panic_message;
pub use error::{BoxError, KernelError, Outcome, TaskError};
pub use plugin::Plugin;
pub use runtime::Runtime;
pub use scope::{DisposerKey, Scope, ScopePhase};
pub use tasks::TaskHandle;
