//! A model name the server does not serve — misspelt, or retired as DeepSeek retired
//! `deepseek-chat` and `deepseek-reasoner` — is the most common first-run failure. Servers word
//! it differently (DeepSeek: "Model Not Exist"; OpenAI: `model_not_found`; vLLM: "The model
//! `x` does not exist"), so the answer is recognised by its status and wording and rewritten to
//! name the model, the server and how to find another. dsh keeps no model catalog: what a
//! server serves is the server's to say.

/// Phrases (lowercase) by which servers say a model is unknown.
const UNKNOWN_MODEL: [&str; 6] = [
    "model not exist",
    "model_not_found",
    "model does not exist",
    "no such model",
    "unknown model",
    "invalid model",
];

/// Names DeepSeek retired, with what replaced them.
const RETIRED: [(&str, &str); 2] = [
    ("deepseek-chat", "deepseek-flash with thinking off"),
    ("deepseek-reasoner", "deepseek-flash"),
];

/// The message for an error answer that says the model is unknown, or `None` for any other.
pub(crate) fn explain(
    model: &str,
    base_url: &str,
    status: u16,
    code: Option<&str>,
    message: &str,
) -> Option<String> {
    if !matches!(status, 400 | 404 | 422) {
        return None;
    }
    let said = format!("{} {}", code.unwrap_or(""), message).to_ascii_lowercase();
    let names_it = UNKNOWN_MODEL.iter().any(|p| said.contains(p))
        || (said.contains("model") && said.contains("does not exist"));
    if !names_it {
        return None;
    }
    let base = base_url.trim_end_matches('/');
    let mut out = format!(
        "the model {model:?} is not served by {base} (the server said: {message}); choose another \
         model name — the server lists its models at {base}/models"
    );
    if let Some((_, instead)) = RETIRED.iter().find(|(name, _)| *name == model) {
        out.push_str(&format!(
            "; {model} was retired on 2026-07-24, use {instead}"
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::explain;

    #[test]
    fn the_wordings_of_real_servers_are_recognised_and_others_left_alone() {
        let deepseek = explain(
            "deepseek-chat",
            "https://api.deepseek.com/",
            400,
            Some("invalid_request_error"),
            "Model Not Exist",
        )
        .unwrap();
        assert!(deepseek.contains("\"deepseek-chat\""), "{deepseek}");
        assert!(
            deepseek.contains("https://api.deepseek.com/models"),
            "{deepseek}"
        );
        assert!(deepseek.contains("retired"), "{deepseek}");
        assert!(explain("gpt-x", "http://h/v1", 404, Some("model_not_found"), "nope").is_some());
        assert!(explain("m", "http://h", 404, None, "The model `m` does not exist.").is_some());
        assert!(explain("m", "http://h", 400, None, "messages must not be empty").is_none());
        assert!(explain("m", "http://h", 500, None, "Model Not Exist").is_none());
    }
}
