//! The SSE decoder on the wire fixtures, decoded in memory.

use bytes::Bytes;
use dsh_llm::{FinishReason, ModelError, ModelErrorKind, ModelEvent, StreamChecker};
use dsh_llm_openai::decode_body;
use dsh_test_support::sse::{FIXTURES, fixture};
use futures::StreamExt;

type Item = Result<ModelEvent, ModelError>;

/// Decodes `bytes` delivered in the given pieces, checking the stream contract.
async fn decode_split(bytes: &[u8], cuts: &[usize]) -> Vec<Item> {
    let mut pieces = Vec::new();
    let mut at = 0;
    for &cut in cuts {
        pieces.push(Ok(Bytes::copy_from_slice(&bytes[at..cut])));
        at = cut;
    }
    pieces.push(Ok(Bytes::copy_from_slice(&bytes[at..])));
    let items: Vec<Item> = decode_body(futures::stream::iter(pieces)).collect().await;
    let mut checker = StreamChecker::new();
    for item in &items {
        checker
            .observe(item)
            .unwrap_or_else(|v| panic!("{v}: {items:?}"));
    }
    checker.end().unwrap();
    // Random ids differ between runs; compare the rest.
    items
        .into_iter()
        .map(|i| {
            i.map(|e| match e {
                ModelEvent::ToolCallStart { index, id, name }
                    if id.starts_with("call_") && id.len() == 29 =>
                {
                    ModelEvent::ToolCallStart {
                        index,
                        id: "generated".into(),
                        name,
                    }
                }
                other => other,
            })
        })
        .collect()
}

async fn decode(name: &str) -> Vec<Item> {
    decode_split(&fixture(name), &[]).await
}

pub(crate) fn texts(items: &[Item]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(ModelEvent::TextDelta(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_basic() {
    let items = decode("text_basic").await;
    assert_eq!(texts(&items), "Hello, world!");
    let n = items.len();
    assert!(
        matches!(&items[n - 2], Ok(ModelEvent::Usage(u)) if u.input_tokens == 5 && u.output_tokens == 3)
    );
    assert_eq!(
        items[n - 1],
        Ok(ModelEvent::Finish {
            reason: FinishReason::Stop
        })
    );
    assert_eq!(n, 5);
}

#[tokio::test]
async fn reasoning_then_text_with_usage() {
    for name in ["reasoning_then_text", "usage_on_finish_chunk"] {
        let items = decode(name).await;
        assert_eq!(
            items[0],
            Ok(ModelEvent::ReasoningDelta("Let me ".into())),
            "{name}: the empty opener is skipped"
        );
        assert_eq!(items[2], Ok(ModelEvent::TextDelta("Answer.".into())));
        match &items[3] {
            Ok(ModelEvent::Usage(u)) => {
                assert_eq!(
                    (u.cache_hit_tokens, u.cache_miss_tokens, u.reasoning_tokens),
                    (Some(100), Some(20), Some(12)),
                    "{name}"
                );
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(
            items[4],
            Ok(ModelEvent::Finish {
                reason: FinishReason::Stop
            })
        );
    }
}

#[tokio::test]
async fn parallel_tool_calls_are_reassembled_byte_exact() {
    let items = decode("tool_call_fragments").await;
    let ends: Vec<(u32, String, String)> = items
        .iter()
        .filter_map(|i| match i {
            Ok(ModelEvent::ToolCallEnd {
                index,
                id,
                arguments,
                ..
            }) => Some((*index, id.clone(), arguments.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0].0, 0);
    assert_eq!(ends[0].1, "call_a");
    assert_eq!(
        ends[0].2,
        "{\"command\":\"echo \\\"h\u{e9}llo\\\"\",\"description\":\"Say hi\"}"
    );
    assert_eq!(ends[1].2, "{\"path\":\"/tmp/\u{6587}\u{4ef6}.txt\"}");
    let parsed: serde_json::Value = serde_json::from_str(&ends[0].2).unwrap();
    assert_eq!(parsed["command"], "echo \"h\u{e9}llo\"");
    assert_eq!(
        items.last().unwrap(),
        &Ok(ModelEvent::Finish {
            reason: FinishReason::ToolCalls
        })
    );
}

#[tokio::test]
async fn a_reused_index_with_a_new_id_opens_a_new_call() {
    let items = decode("tool_call_index_reuse").await;
    let starts: Vec<(u32, String)> = items
        .iter()
        .filter_map(|i| match i {
            Ok(ModelEvent::ToolCallStart { index, id, .. }) => Some((*index, id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [(0, "call_x".to_owned()), (1, "call_y".to_owned())]);
    let args: Vec<String> = items
        .iter()
        .filter_map(|i| match i {
            Ok(ModelEvent::ToolCallEnd { arguments, .. }) => Some(arguments.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(args, ["{\"command\":\"ls\"}", "{\"command\":\"pwd\"}"]);
}

#[tokio::test]
async fn endings() {
    let last = |items: Vec<Item>| items.last().cloned().unwrap();
    assert_eq!(
        last(decode("finish_length").await),
        Ok(ModelEvent::Finish {
            reason: FinishReason::Length
        })
    );
    assert_eq!(
        last(decode("finish_content_filter").await),
        Ok(ModelEvent::Finish {
            reason: FinishReason::ContentFilter
        })
    );
    assert_eq!(
        last(decode("finish_without_done").await),
        Ok(ModelEvent::Finish {
            reason: FinishReason::Stop
        })
    );
    let resource = decode("finish_insufficient_resource").await;
    assert_eq!(resource[0], Ok(ModelEvent::TextDelta("partial".into())));
    assert_eq!(
        resource[1].as_ref().unwrap_err().kind,
        ModelErrorKind::Server
    );
    let truncated = decode("truncated_no_finish").await;
    assert_eq!(
        truncated.last().unwrap().as_ref().unwrap_err().kind,
        ModelErrorKind::Transport
    );
    let malformed = decode("malformed_json").await;
    assert_eq!(malformed[0], Ok(ModelEvent::TextDelta("ok so far".into())));
    let err = malformed[1].as_ref().unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::Protocol);
    assert!(
        err.message.contains("broken"),
        "an excerpt is quoted: {err}"
    );
    let in_stream = decode("in_stream_error").await;
    assert_eq!(
        in_stream[1].as_ref().unwrap_err().kind,
        ModelErrorKind::RateLimited
    );
}

#[tokio::test]
async fn unknown_fields_comments_and_crlf_are_tolerated() {
    assert_eq!(texts(&decode("unknown_fields").await), "x");
    assert_eq!(
        texts(&decode("keepalive_then_text").await),
        "after the queue"
    );
    assert_eq!(texts(&decode("crlf").await), "line ends");
}

#[tokio::test]
async fn a_known_field_with_the_wrong_type_is_a_protocol_error_naming_its_path() {
    let body = b"data: {\"choices\":[{\"delta\":{\"content\":42}}]}\n\n".to_vec();
    let items = decode_split(&body, &[]).await;
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::Protocol);
    assert!(err.message.contains("choices[0].delta.content"), "{err}");
    let empty = decode_split(b"data: [DONE]\n\n", &[]).await;
    assert!(
        empty[0]
            .as_ref()
            .unwrap_err()
            .message
            .contains("empty response")
    );
}

#[tokio::test]
async fn every_split_decodes_the_same() {
    let mut rng = fastrand::Rng::with_seed(7);
    for name in FIXTURES {
        let bytes = fixture(name);
        let whole = decode_split(&bytes, &[]).await;
        for cut in 1..bytes.len() {
            assert_eq!(
                decode_split(&bytes, &[cut]).await,
                whole,
                "{name} split at {cut}"
            );
        }
        for _ in 0..200 {
            let k = rng.usize(1..8.min(bytes.len()));
            let mut cuts: Vec<usize> = (0..k).map(|_| rng.usize(1..bytes.len())).collect();
            cuts.sort_unstable();
            cuts.dedup();
            assert_eq!(
                decode_split(&bytes, &cuts).await,
                whole,
                "{name} split at {cuts:?}"
            );
        }
    }
}

fn sse(chunks: &[serde_json::Value]) -> Vec<u8> {
    let mut out = String::new();
    for c in chunks {
        out.push_str(&format!("data: {c}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

/// Reassembly corner cases.
#[tokio::test]
async fn reassembly_corner_cases() {
    use serde_json::json;
    let call =
        |fragment: serde_json::Value| json!({"choices": [{"delta": {"tool_calls": [fragment]}}]});
    // Arguments before the name are buffered and emitted as one delta after the start; a
    // missing id is generated; `stop` with a streamed call finishes `ToolCalls`.
    let body = sse(&[
        call(json!({"index": 0, "function": {"arguments": "{\"a\""}})),
        call(json!({"index": 0, "function": {"name": "bash", "arguments": ":1}"}})),
        json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
    ]);
    let items = decode_split(&body, &[]).await;
    assert_eq!(
        items[0],
        Ok(ModelEvent::ToolCallStart {
            index: 0,
            id: "generated".into(),
            name: "bash".into()
        })
    );
    assert_eq!(
        items[1],
        Ok(ModelEvent::ToolCallArgumentsDelta {
            index: 0,
            fragment: "{\"a\":1}".into()
        })
    );
    assert!(
        matches!(&items[2], Ok(ModelEvent::ToolCallEnd { arguments, .. }) if arguments == "{\"a\":1}")
    );
    assert_eq!(
        items[3],
        Ok(ModelEvent::Finish {
            reason: FinishReason::ToolCalls
        })
    );

    // No index: the array position keys the call.
    let body = sse(&[
        json!({"choices": [{"delta": {"tool_calls": [{"id": "p", "function": {"name": "a", "arguments": "{}"}}, {"id": "q", "function": {"name": "b", "arguments": "[]"}}]}}]}),
        json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    let names: Vec<String> = decode_split(&body, &[])
        .await
        .into_iter()
        .filter_map(|i| match i {
            Ok(ModelEvent::ToolCallEnd { name, .. }) => Some(name),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["a", "b"]);

    // A call that never gets a name is a protocol error.
    let body = sse(&[
        call(json!({"index": 0, "id": "x", "function": {"arguments": "{}"}})),
        json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    let mut checker_free: Vec<Item> =
        decode_body(futures::stream::iter(vec![Ok(Bytes::from(body))]))
            .collect()
            .await;
    let err = checker_free.pop().unwrap().unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::Protocol);
    assert!(err.message.contains("never received a name"), "{err}");
}

/// In-stream error codes.
#[tokio::test]
async fn in_stream_error_kinds() {
    use serde_json::json;
    for (code, kind) in [
        ("rate_limit_exceeded", ModelErrorKind::RateLimited),
        ("insufficient_quota", ModelErrorKind::InsufficientBalance),
        ("invalid_request_error", ModelErrorKind::BadRequest),
        ("something_else", ModelErrorKind::Server),
    ] {
        let body = format!(
            "data: {}\n\n",
            json!({"error": {"message": "m", "code": code}})
        );
        let items = decode_split(body.as_bytes(), &[]).await;
        assert_eq!(items[0].as_ref().unwrap_err().kind, kind, "{code}");
    }
    let event_error =
        b"event: error\ndata: {\"error\":{\"message\":\"m\",\"type\":\"rate_limit_error\"}}\n\n";
    assert_eq!(
        decode_split(event_error, &[]).await[0]
            .as_ref()
            .unwrap_err()
            .kind,
        ModelErrorKind::RateLimited
    );
}

/// One event over 16 MiB is refused.
#[tokio::test]
async fn an_oversized_event_is_a_protocol_error() {
    let mut body = b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec();
    body.extend(std::iter::repeat_n(b'x', 17 * 1024 * 1024));
    body.extend_from_slice(b"\"}}]}\n\n");
    let items: Vec<Item> = decode_body(futures::stream::iter(vec![Ok(Bytes::from(body))]))
        .collect()
        .await;
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::Protocol);
    assert!(err.message.contains("16 MiB"), "{err}");
}

#[tokio::test]
async fn a_finish_reason_of_error_or_abort_is_a_server_failure_not_a_completion() {
    use serde_json::json;
    for reason in ["error", "abort"] {
        let body = sse(&[
            json!({"choices": [{"delta": {"content": "partial"}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": reason}]}),
        ]);
        let items = decode_split(&body, &[]).await;
        let last = items.last().unwrap();
        match last {
            Err(e) => {
                assert_eq!(e.kind, ModelErrorKind::Server, "{reason}");
                assert!(e.message.contains(reason), "{e:?}");
            }
            Ok(other) => panic!("{reason}: ended with {other:?}"),
        }
        assert!(
            !items
                .iter()
                .any(|i| matches!(i, Ok(ModelEvent::Finish { .. })))
        );
    }
}

#[tokio::test]
async fn tgi_and_vllm_in_stream_errors_surface_the_server_s_message() {
    use serde_json::json;
    for (chunk, message) in [
        (
            json!({"error": "Input validation error: too many tokens", "error_type": "validation"}),
            "Input validation error: too many tokens",
        ),
        (
            json!({"object": "error", "message": "This model's maximum context length is 8192", "type": "BadRequestError", "code": 400}),
            "This model's maximum context length is 8192",
        ),
    ] {
        let body = sse(&[json!({"choices": [{"delta": {"content": "a"}}]}), chunk]);
        let items = decode_split(&body, &[]).await;
        match items.last().unwrap() {
            Err(e) => assert_eq!(e.message, message),
            other => panic!("expected the server's error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_late_or_changing_tool_call_id_keeps_one_call_and_the_first_id() {
    use serde_json::json;
    let call =
        |fragment: serde_json::Value| json!({"choices": [{"delta": {"tool_calls": [fragment]}}]});
    // The id arrives after the name; then another id arrives with more arguments.
    let body = sse(&[
        call(json!({"index": 0, "function": {"name": "bash", "arguments": "{\"a\""}})),
        call(json!({"index": 0, "id": "call_late", "function": {"arguments": ":1"}})),
        call(json!({"index": 0, "id": "call_other", "function": {"arguments": "}"}})),
        json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    let items = decode_split(&body, &[]).await;
    let ends: Vec<(String, String)> = items
        .iter()
        .filter_map(|i| match i {
            Ok(ModelEvent::ToolCallEnd {
                name, arguments, ..
            }) => Some((name.clone(), arguments.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [("bash".to_owned(), "{\"a\":1}".to_owned())],
        "{items:?}"
    );
    // A server id first, then a different one without a name: still the first id.
    let body = sse(&[
        call(
            json!({"index": 0, "id": "call_first", "function": {"name": "bash", "arguments": "{}"}}),
        ),
        call(json!({"index": 0, "id": "call_second", "function": {"arguments": ""}})),
        json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    let items = decode_split(&body, &[]).await;
    let ids: Vec<String> = items
        .iter()
        .filter_map(|i| match i {
            Ok(ModelEvent::ToolCallEnd { id, .. }) => Some(id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_first"]);
}
