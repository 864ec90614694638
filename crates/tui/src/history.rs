//! The prompts sent before, newest last, as Up and Down walk them.
//!
//! Walking away from the prompt being written keeps it as the draft, and walking back past
//! the newest entry gives it back, so browsing never loses what was typed.
//!
//! The history is kept in the data directory, one file for every project: each line a JSON
//! object `{"dir": …, "text": …}`, appended as prompts are sent (so two terminals in one
//! project both keep theirs) and read filtered by the project's directory. A line that does
//! not parse is skipped: a torn write never loses the rest.

use std::io::Write;
use std::path::Path;

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

/// The prompts of `dir` in the history file `file`, oldest first; none when it cannot be read.
pub fn load(file: &Path, dir: &str) -> History {
    let Ok(text) = std::fs::read_to_string(file) else {
        return History::default();
    };
    let entries = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|entry| entry["dir"] == dir)
        .filter_map(|entry| entry["text"].as_str().map(str::to_owned))
        .collect();
    History::new(entries)
}

/// Appends a prompt of `dir` to the history file `file`. A failure costs the entry only, and
/// is logged.
pub fn append(file: &Path, dir: &str, text: &str) {
    let line = serde_json::json!({"dir": dir, "text": text}).to_string() + "\n";
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
        })
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        tracing::warn!(file = %file.display(), "the prompt history was not saved: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_keeps_each_project_s_prompts_and_skips_torn_lines() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data/history.jsonl");
        append(&file, "/a", "first");
        append(&file, "/b", "other");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(b"{\"dir\": \"/a\", \"te\n").unwrap();
        append(&file, "/a", "second\nline");
        assert_eq!(load(&file, "/a").entries(), ["first", "second\nline"]);
        assert_eq!(load(&file, "/b").entries(), ["other"]);
        assert!(load(&dir.path().join("none"), "/a").entries().is_empty());
    }

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
