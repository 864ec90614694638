//! Hostile bodies fed straight to the decoder: a byte-order mark, invalid UTF-8, floods
//! without a newline, and answers that are not event streams at all.

use bytes::Bytes;
use dsh_llm::{FinishReason, ModelError, ModelErrorKind, ModelEvent};
use dsh_llm_openai::decode_body;
use dsh_test_support::sse::fixture;
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};

use crate::decode::texts;

type Item = Result<ModelEvent, ModelError>;

async fn decode_all(bytes: Vec<u8>) -> Vec<Item> {
    decode_body(futures::stream::iter(vec![Ok(Bytes::from(bytes))]))
        .collect()
        .await
}

#[tokio::test]
async fn a_body_opening_with_a_byte_order_mark_decodes_normally() {
    let mut body = b"\xEF\xBB\xBF".to_vec();
    body.extend(fixture("text_basic"));
    let items = decode_all(body).await;
    assert_eq!(texts(&items), "Hello, world!");
    assert!(items.iter().all(Result::is_ok), "{items:?}");
}

/// A body that stays open: chunks are sent by the test, and the decoder must answer each
/// before the body ends.
struct Open {
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    events: std::pin::Pin<Box<dyn futures::Stream<Item = Item> + Send>>,
}

impl Open {
    fn new() -> Open {
        let (tx, rx) = mpsc::channel(4);
        Open {
            tx,
            events: Box::pin(decode_body(rx)),
        }
    }

    async fn send(&mut self, bytes: impl Into<Bytes>) {
        self.tx.send(Ok(bytes.into())).await.unwrap();
    }
}

#[tokio::test]
async fn invalid_utf8_is_replaced_and_the_events_after_it_arrive_while_the_body_is_open() {
    let mut open = Open::new();
    open.send(&b"data: {\"choices\":[{\"delta\":{\"content\":\"a\xFFb\"}}]}\n\n"[..])
        .await;
    assert_eq!(
        open.events.next().await,
        Some(Ok(ModelEvent::TextDelta("a\u{FFFD}b".into())))
    );
    open.send(&b"data: {\"choices\":[{\"delta\":{\"content\":\"next\"}}]}\n\n"[..])
        .await;
    assert_eq!(
        open.events.next().await,
        Some(Ok(ModelEvent::TextDelta("next".into())))
    );
}

#[tokio::test]
async fn a_flood_without_a_newline_is_refused_at_the_event_limit_before_the_body_ends() {
    let Open { mut tx, mut events } = Open::new();
    let piece = Bytes::from(vec![b'x'; 64 * 1024]);
    let sender = tokio::spawn(async move {
        // 32 MiB, twice the limit; the decoder must refuse before the sender runs out.
        for _ in 0..512 {
            if tx.send(Ok(piece.clone())).await.is_err() {
                return true;
            }
        }
        false
    });
    let first = events.next().await.unwrap();
    let error = first.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert!(error.message.contains("16 MiB"), "{error}");
    assert_eq!(events.next().await, None);
    drop(events);
    assert!(
        sender.await.unwrap(),
        "the body was dropped before it ended"
    );
}

#[tokio::test]
async fn one_long_line_split_into_many_chunks_decodes() {
    let text = "y".repeat(8 * 1024 * 1024);
    let body = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    );
    let chunks: Vec<std::io::Result<Bytes>> = body
        .as_bytes()
        .chunks(4096)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let items: Vec<Item> = decode_body(futures::stream::iter(chunks)).collect().await;
    assert_eq!(texts(&items).len(), text.len());
}

#[tokio::test]
async fn a_complete_json_answer_is_decoded_like_a_stream() {
    let answer = serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "hello",
                "reasoning_content": "think",
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}
                }]
            },
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    });
    let items = decode_all(format!("\n{answer}\n").into_bytes()).await;
    let events: Vec<ModelEvent> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(events[0], ModelEvent::ReasoningDelta("think".into()));
    assert_eq!(events[1], ModelEvent::TextDelta("hello".into()));
    assert!(events.contains(&ModelEvent::ToolCallEnd {
        index: 0,
        id: "call_1".into(),
        name: "bash".into(),
        arguments: "{\"command\":\"ls\"}".into(),
    }));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ModelEvent::Usage(u) if u.input_tokens == 5))
    );
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finish {
            reason: FinishReason::ToolCalls
        })
    );
}

#[tokio::test]
async fn json_that_is_no_answer_or_an_error_is_reported_as_such() {
    let error =
        decode_all(br#"{"error":{"message":"busy","code":"rate_limit_exceeded"}}"#.to_vec()).await;
    let error = error[0].as_ref().unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert_eq!(error.message, "busy");
    let other = decode_all(br#"{"hello":1}"#.to_vec()).await;
    assert_eq!(other.len(), 1);
    assert_eq!(
        other[0].as_ref().unwrap_err().kind,
        ModelErrorKind::Protocol
    );
    let cut = decode_all(br#"{"choices":[{"mess"#.to_vec()).await;
    assert!(
        cut[0]
            .as_ref()
            .unwrap_err()
            .message
            .contains("invalid JSON answer")
    );
}

#[tokio::test]
async fn an_html_page_in_an_event_stream_is_one_protocol_error_quoting_its_title() {
    let page =
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>x</body></html>";
    let items = decode_all(page.as_bytes().to_vec()).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let error = items[0].as_ref().unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert!(error.message.contains("502 Bad Gateway"), "{error}");
    assert!(!error.message.contains("<body>"), "{error}");
}
