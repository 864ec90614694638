//! Recognising a request refused for being longer than the model's context. Servers say it
//! in their own words, and the loop can only recover (compact, then retry) if it knows; so
//! each known shape is matched here, and anything else stays a plain bad request.
//!
//! - OpenAI: code `context_length_exceeded`, "This model's maximum context length is …".
//! - DeepSeek and vLLM: "This model's maximum context length is … tokens. However, you
//!   requested …" (vLLM without an `error` wrapper).
//! - llama.cpp's server: type `exceed_context_size_error`, "the request exceeds the available
//!   context size".
//! - Ollama: "prompt too long; exceeded max context length by … tokens".

/// Whether a 4xx answer with `code` (or type) and `text` (the message, else the body) says
/// the request was too long for the context.
pub(crate) fn is_context_overflow(status: u16, code: Option<&str>, text: &str) -> bool {
    if !(400..500).contains(&status) {
        return false;
    }
    if matches!(
        code,
        Some("context_length_exceeded" | "exceed_context_size_error")
    ) {
        return true;
    }
    let text = text.to_ascii_lowercase();
    [
        "maximum context length",
        "exceeds the available context size",
        "exceeded max context length",
        "context_length_exceeded",
        "exceed_context_size_error",
    ]
    .iter()
    .any(|phrase| text.contains(phrase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_s_words_for_too_long_are_recognised() {
        let cases = [
            (
                400,
                Some("context_length_exceeded"),
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
                true,
            ),
            (
                400,
                Some("invalid_request_error"),
                "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (69000 in the messages, 1000 in the completion).",
                true,
            ),
            (
                400,
                None,
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens","type":"BadRequestError","code":400}"#,
                true,
            ),
            (
                400,
                Some("exceed_context_size_error"),
                "the request exceeds the available context size, try increasing it",
                true,
            ),
            (
                400,
                None,
                "the request exceeds the available context size, try increasing it",
                true,
            ),
            (
                400,
                Some("api_error"),
                "prompt too long; exceeded max context length by 4 tokens",
                true,
            ),
            (
                400,
                Some("invalid_request_error"),
                "Invalid value for temperature",
                false,
            ),
            (500, None, "maximum context length is 10", false),
            (
                404,
                Some("model_not_found"),
                "The model does not exist",
                false,
            ),
        ];
        for (status, code, text, want) in cases {
            assert_eq!(is_context_overflow(status, code, text), want, "{text}");
        }
    }
}
