//! Classifying one input line: a request, a notification, a response to one of the
//! bridge's own requests, or something to refuse.
//!
//! The rules are JSON-RPC 2.0's, applied strictly so that a client bug gets a precise answer
//! instead of a silent drop, and the connection always stays up.

use serde_json::{Map, Value};

use crate::rpc::{RpcError, code};

/// What one line is.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// A call that must be answered.
    Request {
        /// Echoed exactly.
        id: Value,
        /// The method name.
        method: String,
        /// An object (absent and `null` params become `{}`).
        params: Value,
    },
    /// A call that is never answered.
    Notification {
        /// The method name.
        method: String,
        /// An object, or `None` when the params were not an object.
        params: Option<Value>,
    },
    /// The client's answer to a request the bridge sent.
    Response {
        /// The id of the bridge's request.
        id: Value,
        /// `result`, or `error`.
        outcome: Result<Value, Value>,
    },
    /// A line to answer with this error.
    Refuse {
        /// The id to answer with (`null` when none could be read).
        id: Value,
        /// The error.
        error: RpcError,
    },
}

/// Classifies one line (without its newline).
pub(crate) fn classify(line: &[u8]) -> Incoming {
    let Ok(text) = std::str::from_utf8(line) else {
        return refuse(
            Value::Null,
            code::PARSE,
            "Parse error: the line is not valid UTF-8",
        );
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => return refuse(Value::Null, code::PARSE, "Parse error"),
    };
    match value {
        Value::Object(object) => classify_object(object),
        Value::Array(_) => refuse(
            Value::Null,
            code::INVALID_REQUEST,
            "Invalid request: batches are not supported",
        ),
        _ => refuse(
            Value::Null,
            code::INVALID_REQUEST,
            "Invalid request: not an object",
        ),
    }
}

fn classify_object(mut object: Map<String, Value>) -> Incoming {
    let id = object.remove("id");
    let valid_id = id.as_ref().is_some_and(valid_id);
    let echoed = match &id {
        Some(id) if valid_id => id.clone(),
        _ => Value::Null,
    };
    let echo = || echoed.clone();
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return refuse(
            echo(),
            code::INVALID_REQUEST,
            "Invalid request: jsonrpc must be \"2.0\"",
        );
    }
    match object.remove("method") {
        Some(Value::String(method)) => {
            let params = match object.remove("params") {
                None | Some(Value::Null) => Some(Value::Object(Map::new())),
                Some(params @ Value::Object(_)) => Some(params),
                Some(_) => None,
            };
            match (id, params) {
                (None, params) => Incoming::Notification { method, params },
                (Some(_), _) if !valid_id => refuse(
                    Value::Null,
                    code::INVALID_REQUEST,
                    "Invalid request: an id is a string, an integer or null",
                ),
                (Some(id), Some(params)) => Incoming::Request { id, method, params },
                (Some(id), None) => refuse(
                    id,
                    code::INVALID_PARAMS,
                    "Invalid params: params must be an object",
                ),
            }
        }
        Some(_) => refuse(
            echo(),
            code::INVALID_REQUEST,
            "Invalid request: method must be a string",
        ),
        None => {
            let result = object.remove("result");
            let error = object.remove("error");
            match (id, result, error) {
                (Some(id), Some(result), None) if valid_id => Incoming::Response {
                    id,
                    outcome: Ok(result),
                },
                (Some(id), None, Some(error)) if valid_id => Incoming::Response {
                    id,
                    outcome: Err(error),
                },
                _ => refuse(
                    echo(),
                    code::INVALID_REQUEST,
                    "Invalid request: no method, and not a response",
                ),
            }
        }
    }
}

/// The id of a request whose line was cut at the line limit, read from the part kept: the
/// value of a top-level `"id"` that ends within `head` and is a valid id (`null` otherwise —
/// no id to echo). The JSON is read by serde_json's own tokenizer, key by key, skipping every
/// other value unparsed, so an id after a 30 MiB prompt is as unreadable as the JSON-RPC spec
/// expects and one before it is always found.
pub(crate) fn id_of_head(head: &[u8]) -> Value {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    use serde_json::value::RawValue;

    /// Reads the top-level map up to its `id`, leaving the id's text in `found` even though
    /// the truncated input makes the whole read fail afterwards.
    struct FindId<'a, 'de>(&'a mut Option<&'de RawValue>);

    impl<'de> Visitor<'de> for FindId<'_, 'de> {
        type Value = ();

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON-RPC object")
        }

        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "id" {
                    *self.0 = Some(map.next_value::<&'de RawValue>()?);
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }

    let Ok(text) = std::str::from_utf8(head).or_else(|e| {
        // A multi-byte character cut at the limit: what precedes it is still text.
        std::str::from_utf8(&head[..e.valid_up_to()])
    }) else {
        return Value::Null;
    };
    let mut found = None;
    let mut reader = serde_json::Deserializer::from_str(text);
    let _ = (&mut reader).deserialize_map(FindId(&mut found));
    let Some(raw) = found else {
        return Value::Null;
    };
    // A number that ends where the kept part ends may have lost digits (`12` of `123`).
    let end = (raw.get().as_ptr() as usize - text.as_ptr() as usize) + raw.get().len();
    if end == text.len()
        && raw
            .get()
            .starts_with(|c: char| c == '-' || c.is_ascii_digit())
    {
        return Value::Null;
    }
    serde_json::from_str::<Value>(raw.get())
        .ok()
        .filter(valid_id)
        .unwrap_or(Value::Null)
}

/// A string, an integer in the i64 range, or null.
fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) | Value::Null => true,
        Value::Number(n) => n.is_i64(),
        _ => false,
    }
}

fn refuse(id: Value, code: i32, message: &str) -> Incoming {
    Incoming::Refuse {
        id,
        error: RpcError::new(code, message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(line: &str) -> Incoming {
        classify(line.as_bytes())
    }

    fn refused(line: &str) -> (Value, i32) {
        match class(line) {
            Incoming::Refuse { id, error } => (id, error.code),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        assert_eq!(
            class(r#"{"jsonrpc":"2.0","id":"a-1","method":"initialize"}"#),
            Incoming::Request {
                id: json!("a-1"),
                method: "initialize".into(),
                params: json!({})
            }
        );
        assert!(matches!(
            class(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}"#),
            Incoming::Notification {
                params: Some(_),
                ..
            }
        ));
        assert!(matches!(
            class(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Incoming::Response { outcome: Ok(_), .. }
        ));
        assert!(matches!(
            class(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#),
            Incoming::Response {
                outcome: Err(_),
                ..
            }
        ));
    }

    #[test]
    fn a_null_id_is_a_request_and_null_params_are_an_empty_object() {
        assert_eq!(
            class(r#"{"jsonrpc":"2.0","id":null,"method":"m","params":null}"#),
            Incoming::Request {
                id: Value::Null,
                method: "m".into(),
                params: json!({})
            }
        );
    }

    #[test]
    fn malformed_envelopes_are_refused_with_the_right_code() {
        assert_eq!(refused("not json"), (Value::Null, code::PARSE));
        assert_eq!(refused("[]"), (Value::Null, code::INVALID_REQUEST));
        assert_eq!(
            refused("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}]").1,
            code::INVALID_REQUEST
        );
        assert_eq!(refused("42"), (Value::Null, code::INVALID_REQUEST));
        assert_eq!(refused(r#"{"id":5}"#), (json!(5), code::INVALID_REQUEST));
        assert_eq!(
            refused(r#"{"jsonrpc":"1.0","id":6,"method":"initialize"}"#),
            (json!(6), code::INVALID_REQUEST)
        );
        assert_eq!(
            refused(r#"{"jsonrpc":"2.0","id":7,"method":42}"#),
            (json!(7), code::INVALID_REQUEST)
        );
        assert_eq!(
            refused(r#"{"jsonrpc":"2.0","id":8,"result":1,"error":{}}"#),
            (json!(8), code::INVALID_REQUEST)
        );
        assert_eq!(
            refused(r#"{"jsonrpc":"2.0","id":9,"method":"m","params":[1]}"#),
            (json!(9), code::INVALID_PARAMS)
        );
        assert_eq!(refused("\u{1}\u{2}").1, code::PARSE);
    }

    #[test]
    fn fractional_and_out_of_range_ids_are_invalid() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1e30,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
        ] {
            assert_eq!(
                refused(line),
                (Value::Null, code::INVALID_REQUEST),
                "{line}"
            );
        }
        assert!(matches!(
            class(r#"{"jsonrpc":"2.0","id":9007199254740991,"method":"m"}"#),
            Incoming::Request { .. }
        ));
    }

    #[test]
    fn a_notification_with_params_that_are_not_an_object_carries_none() {
        assert_eq!(
            class(r#"{"jsonrpc":"2.0","method":"session/cancel","params":"x"}"#),
            Incoming::Notification {
                method: "session/cancel".into(),
                params: None
            }
        );
    }

    #[test]
    fn the_id_of_a_cut_line_is_read_from_the_part_kept() {
        let cut = |line: &str, keep: usize| id_of_head(&line.as_bytes()[..keep.min(line.len())]);
        let prompt = r#"{"jsonrpc":"2.0","id":"p-7","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxx"}]}}"#;
        assert_eq!(cut(prompt, 80), json!("p-7"));
        assert_eq!(cut(prompt, 27), json!("p-7"), "the id just fits");
        assert_eq!(cut(prompt, 26), Value::Null, "the id is cut: unreadable");
        let numbered = r#"{"jsonrpc":"2.0","id":123,"method":"m"}"#;
        assert_eq!(cut(numbered, 24), Value::Null, "12 of 123 is not the id");
        assert_eq!(cut(numbered, 25), Value::Null, "nor is 123 that may go on");
        assert_eq!(cut(numbered, 26), json!(123));
        let late = r#"{"jsonrpc":"2.0","method":"session/prompt","params":{"id":5,"text":"xxxxxxxxxxxx"},"id":9}"#;
        assert_eq!(
            cut(late, 70),
            Value::Null,
            "a nested id is not the request's"
        );
        assert_eq!(cut(late, late.len()), json!(9));
        assert_eq!(
            cut(r#"{"id":12,"method":"m","params":{"t":"éé"#, 40),
            json!(12)
        );
        assert_eq!(
            cut("{\"id\":3,\"x\":\"\u{e9}", 14),
            json!(3),
            "a character cut in two"
        );
        for bad in [
            r#"{"id":1.5,"#,
            r#"{"id":{"a":1},"#,
            r#"[{"id":1}"#,
            "garbage",
            "",
        ] {
            assert_eq!(cut(bad, 100), Value::Null, "{bad}");
        }
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        match classify(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}") {
            Incoming::Refuse { id, error } => {
                assert_eq!(id, Value::Null);
                assert_eq!(error.code, code::PARSE);
            }
            other => panic!("{other:?}"),
        }
    }
}
