//! A toy provider in the test directory: it honours the trait's contract (validation before
//! any work, cancellation before and after acceptance) and its output passes the checker.

use dsh_llm::{
    CancellationToken, FinishReason, Message, Model, ModelError, ModelErrorKind, ModelEvent,
    ModelInfo, ModelParams, ModelRequest, ModelStream, StreamChecker,
};
use futures::StreamExt;
use futures::future::BoxFuture;

struct Echo {
    info: ModelInfo,
}

impl Model for Echo {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn stream(
        &self,
        request: ModelRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<ModelStream, ModelError>> {
        Box::pin(async move {
            request.validate()?;
            if cancel.is_cancelled() {
                return Err(ModelError::cancelled());
            }
            let last = match request.messages.last() {
                Some(Message::User { content }) => content.clone(),
                _ => String::from("?"),
            };
            let events: Vec<Result<ModelEvent, ModelError>> = last
                .split_inclusive(' ')
                .map(|w| Ok(ModelEvent::TextDelta(w.to_owned())))
                .chain([Ok(ModelEvent::Finish {
                    reason: FinishReason::Stop,
                })])
                .collect();
            let stream = futures::stream::iter(events).take_until(cancel.clone().cancelled_owned());
            let cancelled = futures::stream::once(async move { Err(ModelError::cancelled()) })
                .filter(move |_| {
                    let c = cancel.is_cancelled();
                    async move { c }
                });
            Ok(stream.chain(cancelled).boxed())
        })
    }
}

fn echo() -> Echo {
    Echo {
        info: ModelInfo {
            provider: "toy".into(),
            model: "echo".into(),
            endpoint: None,
            replay: false,
        },
    }
}

fn request(text: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![Message::User {
            content: text.into(),
        }],
        tools: vec![],
        params: ModelParams::default(),
        session_id: None,
    }
}

#[tokio::test]
async fn a_toy_stream_passes_the_checker() {
    let model: std::sync::Arc<dyn Model> = std::sync::Arc::new(echo());
    let mut stream = model
        .stream(request("hello there model"), CancellationToken::new())
        .await
        .unwrap();
    let mut checker = StreamChecker::new();
    let mut text = String::new();
    while let Some(item) = stream.next().await {
        checker.observe(&item).unwrap();
        if let Ok(ModelEvent::TextDelta(t)) = &item {
            text.push_str(t);
        }
    }
    checker.end().unwrap();
    assert_eq!(text, "hello there model");
}

#[tokio::test]
async fn invalid_requests_and_early_cancels_fail_before_any_work() {
    let model = echo();
    let err = model
        .stream(
            ModelRequest {
                messages: vec![],
                ..request("")
            },
            CancellationToken::new(),
        )
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ModelErrorKind::BadRequest);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = model.stream(request("hi"), cancel).await.err().unwrap();
    assert_eq!(err.kind, ModelErrorKind::Cancelled);
}
