//! Seam role: definition (layer 1) — the model seam: the `Model` trait, `ModelRequest`, the
//! `ModelEvent` stream, typed `ModelError` kinds and the stream contract.
//!
//! A provider turns a [`ModelRequest`] into a pull-based stream of [`ModelEvent`]s. Pull-based
//! because the agent pulls one event at a time and checks cancellation between them; a push
//! callback would need its own back-pressure and cancellation story.
//!
//! The stream contract, checked by [`StreamChecker`]:
//! - a stream is `Item* Usage? Finish` or `Item* Err`, and yields nothing after its terminal
//!   item;
//! - deltas are non-empty and keep provider order;
//! - tool calls are indexed densely from 0, each with one start, argument fragments and one
//!   end whose arguments equal the fragments, all before `Usage`/`Finish`;
//! - cancellation before acceptance resolves `stream()` to `Err(Cancelled)`; after it, the
//!   stream yields one `Err(Cancelled)`; dropping a stream releases everything it holds;
//! - a failure is either the `Err` of `stream()` or the one terminal `Err` item.
//!
//! Every provider calls [`ModelRequest::validate`] before any I/O, and retries happen inside
//! providers. [`StepOutcome`] says what a model result means for the step that asked for it;
//! how a front end reports a turn end is each consumer's own table. The design is
//! recorded in docs/rfc/implemented/architecture/2026-11-30-model-seam.md.
#![deny(missing_docs)]

mod checker;
mod error;
mod notice;
mod outcome;
mod price;
mod types;
mod validate;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
pub use tokio_util::sync::CancellationToken;

pub use checker::{ContractRule, ContractViolation, StreamChecker};
pub use error::{ModelError, ModelErrorKind};
pub use notice::RetryNotice;
pub use outcome::StepOutcome;
pub use price::Prices;
pub use types::{
    FinishReason, Message, ModelEvent, ModelInfo, ModelParams, ModelRequest, ReasoningEffort,
    ToolCall, ToolSpec, Usage,
};

/// The events of one model call.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A language model. Safe for concurrent `stream()` calls (one per session).
pub trait Model: Send + Sync + 'static {
    /// Static facts for labelling, logging and the `model` field of `assistant/message`.
    fn info(&self) -> &ModelInfo;

    /// Starts one call. Resolves `Ok` once the provider accepted the request (HTTP: a 2xx
    /// status line, after any retries); failures before acceptance resolve `Err`.
    fn stream(
        &self,
        request: ModelRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<ModelStream, ModelError>>;

    /// The model names a request's `params.model` may choose from (a server's `GET /models`).
    /// The default offers the configured model alone, which is also what a provider that
    /// cannot list answers.
    fn models(
        &self,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        let _ = cancel;
        let only = vec![self.info().model.clone()];
        Box::pin(async move { Ok(only) })
    }
}
