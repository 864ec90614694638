//! Failure containment: run foreign code (disposers, listeners, plugin `apply`, tasks) so that
//! its panic or error becomes a value the kernel logs, never an unwind through the kernel.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

use futures::FutureExt;

use crate::error::BoxError;

/// Why a piece of contained code did not succeed.
#[derive(Debug)]
pub(crate) enum Failure {
    Error(BoxError),
    Panic(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Error(err) => write!(f, "failed: {err}"),
            Failure::Panic(msg) => write!(f, "panicked: {msg}"),
        }
    }
}

/// The text of a panic payload; panics carry `&str` or `String` in practice. Shared so that
/// every crate that contains foreign code reports panics the same way.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

/// Calls `f`, turning a panic or an error into a [`Failure`].
pub(crate) fn call<F>(f: F) -> Result<(), Failure>
where
    F: FnOnce() -> Result<(), BoxError>,
{
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(Failure::Error(err)),
        Err(payload) => Err(Failure::Panic(panic_message(payload.as_ref()))),
    }
}

/// Awaits `fut`, turning a panic during any poll or an error into a [`Failure`].
pub(crate) async fn poll<F>(fut: F) -> Result<(), Failure>
where
    F: Future<Output = Result<(), BoxError>>,
{
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(Failure::Error(err)),
        Err(payload) => Err(Failure::Panic(panic_message(payload.as_ref()))),
    }
}
