//! Seam role: definition (layer 0) — the runtime every dsh seam is built on: the scope tree,
//! typed services, contained events, plugins, scope-owned tasks and owner links.
//!
//! dsh is a set of plugins over this small runtime. A [`Plugin`] receives a [`Scope`] and
//! registers everything it does on it; unloading the plugin disposes that scope, which undoes
//! every effect in a fixed order. Seams meet through services: a provider calls
//! `scope.provide::<dyn ShellExecutor>(arc)`, a consumer calls `scope.get::<dyn ShellExecutor>()`.
//! Neither names the other's crate.
//!
//! # Invariants
//!
//! - **Disposal order.** Disposing a scope first fires its [`Scope::token`]; then disposes
//!   everything it owns — child scopes and owner links — concurrently, each in its own order;
//!   then runs its own effects last-in-first-out, one at a time.
//! - **Disposal is idempotent, memoised and never waits for itself.** Every caller of
//!   [`Scope::dispose`], concurrent or later, resolves when the one disposal has completed;
//!   dropping a caller's future does not stop it. A call from inside the disposal, or from a
//!   task the disposal will stop, returns at once; a task that disposes its own scope is
//!   spared and the call returns to it.
//! - **Containment.** A disposer, listener, task or plugin `apply` that returns an error or
//!   panics is logged through `tracing`; the remaining disposers and listeners still run, and
//!   the caller sees a value, never an unwind.
//! - **Closed scopes accept nothing and serve nothing.** Once disposal has begun, adding a
//!   disposer, service, listener, task, child or owner link fails with
//!   [`KernelError::ScopeClosed`] and registers nothing; lookups through it fail too.
//! - **Nothing foreign is dropped under a kernel lock.** Services, listeners and effects are
//!   taken out of their tables and dropped after the lock is released, so their `Drop` may
//!   call back into the kernel.
//! - **Events keep order and stop with their scope.** An event emitted while another is being
//!   delivered reaches every listener after the current one; once a scope's `dispose()` has
//!   returned, none of its listeners is called again.
//! - **One provider per service.** A second `provide` of the same service type fails with
//!   [`KernelError::DuplicateService`]; a service disappears when its providing scope is
//!   disposed, after which [`Scope::require`] fails with [`KernelError::MissingService`].
//! - **Plugins are all-or-nothing.** A plugin whose `apply` fails or panics leaves nothing
//!   registered. [`Runtime::reload`] disposes the old instance's scope before applying the new
//!   one; [`Runtime::shutdown`] disposes plugins in reverse load order, then what lives
//!   outside the tree, then the root; dropping an unshut runtime aborts every task.
//! - **State that must survive a reload lives in providers.** The runtime keeps no per-plugin
//!   state besides its scope, so reloading a consumer cannot change what a provider owns.
//!
//! # Example
//!
//! A provider keeps a counter; a consumer uses it through the service. Reloading the consumer
//! leaves the provider's state alone.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use async_trait::async_trait;
//! use dsh_kernel::{BoxError, Plugin, Runtime, Scope};
//!
//! /// The seam: a trait used as `Arc<dyn Counter>`.
//! trait Counter: Send + Sync {
//!     fn bump(&self) -> u64;
//! }
//!
//! struct Memory(AtomicU64);
//! impl Counter for Memory {
//!     fn bump(&self) -> u64 {
//!         self.0.fetch_add(1, Ordering::SeqCst) + 1
//!     }
//! }
//!
//! struct Provider;
//! #[async_trait]
//! impl Plugin for Provider {
//!     fn name(&self) -> &str { "counter-memory" }
//!     async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
//!         scope.provide::<dyn Counter>(Arc::new(Memory(AtomicU64::new(0))))?;
//!         Ok(())
//!     }
//! }
//!
//! struct Consumer;
//! #[async_trait]
//! impl Plugin for Consumer {
//!     fn name(&self) -> &str { "bumper" }
//!     async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
//!         // Looked up per use, never cached: a reloaded provider is found.
//!         let counter = scope.require::<dyn Counter>()?;
//!         counter.bump();
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let runtime = Runtime::new();
//! runtime.load(Provider).await?;
//! runtime.load(Consumer).await?;
//! runtime.reload(Consumer).await?; // the consumer's scope is disposed and applied anew
//! let counter = runtime.scope().require::<dyn Counter>()?;
//! assert_eq!(counter.bump(), 3, "the provider kept its state across the consumer's reload");
//! runtime.shutdown().await;
//! assert_eq!(runtime.live_scopes(), 0);
//! # Ok::<(), BoxError>(())
//! # }).unwrap();
//! ```
//!
//! The rationale, the alternatives and the pitfalls (what a task or a disposer may await, why
//! lookups are per use) are recorded in
//! docs/rfc/implemented/architecture/2026-11-30-runtime-and-plugins.md.
#![deny(missing_docs)]

pub mod contain;
mod cow;
mod dispose;
mod error;
mod events;
mod owner;
mod plugin;
mod runtime;
mod scope;
mod services;
mod tasks;
mod teardown;

pub use contain::panic_message;
pub use cow::{CowList, Snapshot};
pub use error::{BoxError, KernelError, Outcome, TaskError};
pub use owner::{Ownable, Owned};
pub use plugin::Plugin;
pub use runtime::Runtime;
pub use scope::{DisposerKey, Scope, ScopePhase, WeakScope};
pub use tasks::TaskHandle;
pub use teardown::Teardown;
pub use tokio_util::sync::CancellationToken;
