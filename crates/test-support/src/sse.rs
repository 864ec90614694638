//! The recorded-shape SSE fixtures of `fixtures/sse/`, for the decoder's
//! in-memory tests and the mock model server.

/// Every fixture name.
pub const FIXTURES: [&str; 15] = [
    "text_basic",
    "reasoning_then_text",
    "tool_call_fragments",
    "tool_call_index_reuse",
    "keepalive_then_text",
    "usage_on_finish_chunk",
    "finish_length",
    "finish_content_filter",
    "finish_insufficient_resource",
    "malformed_json",
    "unknown_fields",
    "truncated_no_finish",
    "finish_without_done",
    "in_stream_error",
    "crlf",
];

/// The bytes of fixture `name`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/sse")
        .join(format!("{name}.sse"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}
