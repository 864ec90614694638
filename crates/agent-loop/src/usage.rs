//! How full the context is after a model call: the server's own count when it gave one, else
//! an estimate from the bytes that went each way, so a server that reports nothing never
//! reads as an empty context.

use dsh_agent::record::ContextUsage;
use dsh_llm::{Message, ModelRequest, ToolCall, Usage};

/// The text bytes of a request: every message and every tool schema.
pub(crate) fn request_bytes(request: &ModelRequest) -> u64 {
    let messages: usize = request.messages.iter().map(message_bytes).sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
        .sum();
    (messages + tools) as u64
}

fn message_bytes(message: &Message) -> usize {
    match message {
        Message::System { content } | Message::User { content } => content.len(),
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => content.len() + reasoning.as_ref().map_or(0, String::len) + calls_bytes(tool_calls),
        Message::Tool { call_id, content } => call_id.len() + content.len(),
    }
}

/// The text bytes of tool calls.
pub(crate) fn calls_bytes(calls: &[ToolCall]) -> usize {
    calls
        .iter()
        .map(|c| c.id.len() + c.name.len() + c.arguments.len())
        .sum()
}

/// The context after a call that sent `sent` bytes and got `received` back, with the server's
/// `usage` when it reported any (a usage of zero prompt tokens is no report: no request is
/// empty).
pub(crate) fn context_usage(
    usage: Option<&Usage>,
    sent: u64,
    received: u64,
    window: u64,
) -> ContextUsage {
    match usage.filter(|u| u.input_tokens > 0) {
        Some(usage) => ContextUsage {
            used: usage.input_tokens + usage.output_tokens,
            window,
            estimated: false,
        },
        None => ContextUsage {
            used: (sent + received).div_ceil(ContextUsage::BYTES_PER_TOKEN),
            window,
            estimated: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    #[test]
    fn the_server_count_wins_and_nothing_reported_is_estimated() {
        let cases = [
            (Some(usage(1000, 50)), 1050, false),
            (None, 251, true),
            // Zero prompt tokens is a server that counts nothing.
            (Some(usage(0, 0)), 251, true),
        ];
        for (reported, used, estimated) in cases {
            let got = context_usage(reported.as_ref(), 900, 101, 8192);
            assert_eq!(
                got,
                ContextUsage {
                    used,
                    window: 8192,
                    estimated
                },
                "{reported:?}"
            );
        }
    }
}
