//! The prompts sent before, newest last, as Up and Down walk them.
//!
//! Walking away from the prompt being written keeps it as the draft, and walking back past
//! the newest entry gives it back, so browsing never loses what was typed.

/// A project's prompt history and where the composer is in it.
#[derive(Clone, Debug, Default)]
pub struct History {
    entries: Vec<String>,
    /// The entry shown, counted from the oldest; `None` while the draft is shown.
    at: Option<usize>,
    /// What was being written when browsing began.
    draft: String,
}

/// How many prompts a history keeps; older ones are dropped.
pub const KEPT: usize = 1000;

impl History {
    /// A history of `entries`, oldest first (at most [`KEPT`] of the newest are kept).
    pub fn new(mut entries: Vec<String>) -> History {
        if entries.len() > KEPT {
            entries.drain(..entries.len() - KEPT);
        }
        History {
            entries,
            at: None,
            draft: String::new(),
        }
    }

    /// The prompts, oldest first.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Records a prompt that was sent and stops browsing. A prompt equal to the newest entry
    /// is not recorded twice; an empty one is not recorded.
    pub fn record(&mut self, prompt: &str) {
        self.at = None;
        self.draft.clear();
        if prompt.trim().is_empty() || self.entries.last().is_some_and(|last| last == prompt) {
            return;
        }
        self.entries.push(prompt.to_owned());
        if self.entries.len() > KEPT {
            self.entries.remove(0);
        }
    }

    /// The entry before the one shown, given what the composer holds now; `None` at the
    /// oldest (or with no history).
    pub fn older(&mut self, current: &str) -> Option<&str> {
        let next = match self.at {
            None if self.entries.is_empty() => return None,
            None => {
                self.draft = current.to_owned();
                self.entries.len() - 1
            }
            Some(0) => return None,
            Some(at) => at - 1,
        };
        self.at = Some(next);
        self.entries.get(next).map(String::as_str)
    }

    /// The entry after the one shown, or the draft past the newest; `None` when not
    /// browsing.
    pub fn newer(&mut self) -> Option<&str> {
        let at = self.at?;
        if at + 1 < self.entries.len() {
            self.at = Some(at + 1);
            return self.entries.get(at + 1).map(String::as_str);
        }
        self.at = None;
        Some(&self.draft)
    }

    /// Whether an entry (not the draft) is shown.
    pub fn browsing(&self) -> bool {
        self.at.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_walks_back_and_down_returns_to_the_draft() {
        let mut history = History::new(vec!["one".into(), "two".into()]);
        assert_eq!(history.older("draft"), Some("two"));
        assert_eq!(history.older("two"), Some("one"));
        assert_eq!(history.older("one"), None, "the oldest stays");
        assert_eq!(history.newer(), Some("two"));
        assert_eq!(history.newer(), Some("draft"), "past the newest: the draft");
        assert!(!history.browsing());
        assert_eq!(history.newer(), None);
    }

    #[test]
    fn a_sent_prompt_is_recorded_once_and_empty_ones_never() {
        let mut history = History::default();
        assert_eq!(history.older("x"), None);
        for prompt in ["a", "a", " ", "b"] {
            history.record(prompt);
        }
        assert_eq!(history.entries(), ["a", "b"]);
        let many: Vec<String> = (0..KEPT + 5).map(|i| i.to_string()).collect();
        let history = History::new(many);
        assert_eq!(history.entries().len(), KEPT);
        assert_eq!(history.entries()[0], "5");
    }
}
