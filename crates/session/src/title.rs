//! A session's title: what a listing shows for it. Defined here, below the agent
//! vocabulary, because the persistence provider's listing index reads it.
//!
//! The title is its first prompt's first line, cut at [`MAX_TITLE_CHARS`] characters, until a
//! person renames the session. Both are the same durable `session/title` event, so a log
//! alone says what the session is called; an index a provider keeps is a cache of it.

use serde::{Deserialize, Serialize};

/// The kind of [`TitleRecord`]. Ignorable: a dsh that predates titles loads the log unchanged.
pub const SESSION_TITLE: &str = "session/title";

/// The longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 80;

/// Where a title came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TitleSource {
    /// The first prompt's first line.
    Prompt,
    /// A person named the session.
    Rename,
}

/// `session/title`: the session's title from here on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TitleRecord {
    /// The title: one line, at most [`MAX_TITLE_CHARS`] characters.
    pub title: String,
    /// Where it came from.
    pub source: TitleSource,
}

/// The title a prompt gives a session: its first line that holds more than whitespace,
/// trimmed, control characters dropped, cut at [`MAX_TITLE_CHARS`] characters (the last of
/// them an ellipsis when it was cut). `None` for a prompt with no such line.
pub fn title_of(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    let clean: String = line.chars().filter(|c| !c.is_control()).collect();
    if clean.trim().is_empty() {
        return None;
    }
    if clean.chars().count() <= MAX_TITLE_CHARS {
        return Some(clean);
    }
    let mut cut: String = clean.chars().take(MAX_TITLE_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    Some(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_the_first_line_with_text_cut_at_eighty_characters() {
        let long = "é".repeat(100);
        let cases: [(&str, Option<String>); 7] = [
            (
                "Fix the parser\nand the lexer",
                Some("Fix the parser".into()),
            ),
            (
                "\n\n   \n  Why is CI red?  \n",
                Some("Why is CI red?".into()),
            ),
            ("", None),
            (" \n\t\n", None),
            ("a\x1b[31mred\x07", Some("a[31mred".into())),
            (&long, Some(format!("{}…", "é".repeat(79)))),
            (&"x".repeat(80), Some("x".repeat(80))),
        ];
        for (text, want) in cases {
            assert_eq!(title_of(text), want, "{text:?}");
        }
        assert_eq!(title_of(&long).unwrap().chars().count(), MAX_TITLE_CHARS);
    }
}
