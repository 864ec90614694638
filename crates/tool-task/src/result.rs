//! What the caller's model reads when a child is done: the child's last answer, cut to a
//! bound, and one line saying which session it was and how its turn ended.

use dsh_agent::TurnOutcome;
use dsh_agent::record::Record;
use dsh_session::{Session, TurnEndReason};

/// The longest answer handed back, in bytes: a child's summary, not its whole transcript
/// (the child's session keeps that).
pub const RESULT_CAP: usize = 32 * 1024;

/// The child's last answer in `session`, or `None` when it gave none.
pub fn last_answer(session: &Session) -> Option<String> {
    session.events().iter().rev().find_map(|event| {
        let Ok(Record::AssistantMessage(record)) = Record::decode(event) else {
            return None;
        };
        (!record.message.content.trim().is_empty()).then_some(record.message.content)
    })
}

/// What the child's model calls used, in one line: `3 model calls, 5210 tokens in, 340 out`.
pub fn usage_line(session: &Session) -> String {
    let (mut calls, mut reported, mut input, mut output) = (0u64, false, 0u64, 0u64);
    for event in session.events().iter() {
        if let Ok(Record::AssistantMessage(record)) = Record::decode(event) {
            calls += 1;
            if let Some(usage) = record.usage {
                reported = true;
                input += usage.input_tokens;
                output += usage.output_tokens;
            }
        }
    }
    let calls = match calls {
        1 => "1 model call".to_owned(),
        n => format!("{n} model calls"),
    };
    match reported {
        true => format!("{calls}, {input} tokens in, {output} out"),
        false => format!("{calls}, usage not reported"),
    }
}

/// `answer` cut to [`RESULT_CAP`] bytes at a character boundary, saying so when cut.
pub fn capped(answer: &str) -> String {
    if answer.len() <= RESULT_CAP {
        return answer.to_owned();
    }
    let mut end = RESULT_CAP;
    while !answer.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[cut: the answer was {} bytes; the whole of it is in the child's session]",
        &answer[..end],
        answer.len()
    )
}

/// How a child's turn ended, in words, and whether that is an error for the caller.
pub fn ending(outcome: &TurnOutcome) -> (String, bool) {
    match outcome {
        TurnOutcome::Ended { reason, .. } => match reason {
            TurnEndReason::Completed => ("completed".into(), false),
            TurnEndReason::MaxTokens => ("stopped at its output limit".into(), true),
            TurnEndReason::MaxSteps => ("stopped at its step limit".into(), true),
            TurnEndReason::RepeatedCall { tool } => {
                (format!("stopped repeating a `{tool}` call"), true)
            }
            TurnEndReason::Refusal => ("refused".into(), true),
            TurnEndReason::Aborted { cause } => {
                (format!("cancelled ({})", cause_word(*cause)), true)
            }
            TurnEndReason::Error { failure } => (format!("failed: {}", failure.message), true),
            TurnEndReason::Interrupted => ("interrupted".into(), true),
            TurnEndReason::Unknown => ("ended for a reason this dsh does not know".into(), true),
        },
        TurnOutcome::Discarded { cause } => (
            format!("cancelled before it began ({})", cause_word(*cause)),
            true,
        ),
        TurnOutcome::Failed { failure } => (format!("failed: {}", failure.message), true),
    }
}

fn cause_word(cause: dsh_session::CancelCause) -> &'static str {
    match cause {
        dsh_session::CancelCause::User => "by the user",
        dsh_session::CancelCause::Parent => "with its parent",
        dsh_session::CancelCause::Disposed => "as it was closed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_answer_is_cut_at_a_character_and_says_so() {
        let long = "é".repeat(RESULT_CAP);
        let cut = capped(&long);
        assert!(cut.len() < long.len() + 100);
        assert!(cut.contains("[cut: the answer was"));
        assert_eq!(capped("short"), "short");
    }
}
