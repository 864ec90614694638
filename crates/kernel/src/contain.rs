//! Failure containment: run foreign code (disposers, listeners, observers, plugin `apply`,
//! tasks) so that its panic or error becomes a value the caller logs, never an unwind through
//! the caller. Every crate that calls code it does not own uses these, so a contained panic
//! reads the same everywhere.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

use futures::FutureExt;

use crate::error::BoxError;

/// Why a piece of contained code did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The code returned an error.
    #[error("failed: {0}")]
    Error(BoxError),
    /// The code panicked; the payload's text, when it had one.
    #[error("panicked: {0}")]
    Panic(String),
}

/// The text of a panic payload; panics carry `&str` or `String` in practice.
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
pub fn call<F>(f: F) -> Result<(), Failure>
where
    F: FnOnce() -> Result<(), BoxError>,
{
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(Failure::Error(err)),
        Err(payload) => Err(Failure::Panic(panic_message(payload.as_ref()))),
    }
}

/// Awaits `fut`, turning a panic during any poll, or an error, into a [`Failure`].
pub async fn poll<F>(fut: F) -> Result<(), Failure>
where
    F: Future<Output = Result<(), BoxError>>,
{
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(Failure::Error(err)),
        Err(payload) => Err(Failure::Panic(panic_message(payload.as_ref()))),
    }
}

/// Calls `f` and returns its value, or the text of its panic: for foreign code whose result
/// the caller needs (an agent's `send`, a tool's presenter, a listener).
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_message(payload.as_ref()))
}

/// Awaits `fut` and returns its output, or the text of a panic during any poll: for foreign
/// futures whose output the caller needs (a model's stream, a tool's body).
pub async fn catch_future<T>(fut: impl Future<Output = T>) -> Result<T, String> {
    AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .map_err(|payload| panic_message(payload.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_passes_and_a_panic_becomes_its_text() {
        assert_eq!(catch(|| 7), Ok(7));
        assert_eq!(catch(|| -> u8 { panic!("boom") }), Err("boom".to_owned()));
        let polled = futures::executor::block_on(catch_future(async { "fine" }));
        assert_eq!(polled, Ok("fine"));
        let panicked = futures::executor::block_on(catch_future(async {
            if true {
                panic!("in a poll");
            }
        }));
        assert_eq!(panicked, Err("in a poll".to_owned()));
    }
}
