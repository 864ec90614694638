//! What `dsh sessions list` says of a session besides its header: a title (the first
//! prompt's first line), how many turns it had, the model that last answered, and whether
//! any model answered at all (a run that failed before one did leaves a session nobody
//! wants to see by default).

use std::sync::Arc;

use dsh_agent::record::Record;
use dsh_session::SessionEvent;

/// A stored session at a glance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Digest {
    pub title: Option<String>,
    pub turns: u32,
    pub model: Option<String>,
    /// Some model answered in it.
    pub answered: bool,
}

/// The digest of a session's events.
pub fn digest(events: &[Arc<SessionEvent>]) -> Digest {
    let mut digest = Digest::default();
    for event in events {
        match Record::decode(event) {
            Ok(Record::TurnStart(_)) => digest.turns += 1,
            // The session's title: its last `session/title`, else (a log of a dsh that
            // wrote none) what its first prompt gives.
            Ok(Record::Title(title)) => digest.title = Some(title.title),
            Ok(Record::UserMessage(user)) if digest.title.is_none() => {
                digest.title = dsh_session::title_of(&user.message.text);
            }
            Ok(Record::AssistantMessage(answer)) => {
                digest.answered = true;
                if !answer.model.is_empty() {
                    digest.model = Some(answer.model);
                }
            }
            Ok(_) | Err(_) => {}
        }
    }
    digest
}

/// `text` cut to `width` characters, with an ellipsis when cut.
pub fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_test_support::stored;

    #[test]
    fn a_stored_session_reads_as_title_turns_and_model() {
        let events = stored::events(stored::BEFORE_TYPED_RECORDS);
        let seen = digest(&events);
        assert_eq!(seen.title.as_deref(), Some("Look at this"));
        assert!(seen.turns >= 4, "{seen:?}");
        assert!(seen.answered);
        assert!(seen.model.is_some());
        assert_eq!(digest(&[]), Digest::default());
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}
