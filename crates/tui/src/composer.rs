//! The composer: the multi-line prompt being written.
//!
//! It is pure state, changed by [`Edit`]s. A large paste is shown collapsed, as one
//! placeholder (`[pasted 120 lines]`), and sent whole: the placeholder stands for the pasted
//! text only while it is intact, so editing it turns it into what it now says.

use crate::history::History;

/// One change to the composer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Types a character (a newline is [`Edit::NewLine`]).
    Insert(char),
    /// Breaks the line at the cursor.
    NewLine,
    /// Deletes the character before the cursor, joining lines at a line's start.
    Backspace,
    /// Deletes the character under the cursor, joining lines at a line's end.
    Delete,
    /// Moves one character left, to the previous line's end at a line's start.
    Left,
    /// Moves one character right, to the next line's start at a line's end.
    Right,
    /// Moves to the line's start.
    Home,
    /// Moves to the line's end.
    End,
    /// Moves a line up; on the first line, shows the previous prompt of the history.
    Up,
    /// Moves a line down; on the last line, shows the next prompt of the history.
    Down,
    /// Inserts pasted text, collapsed when it is large.
    Paste(String),
    /// Empties the composer.
    Clear,
}

/// What Enter does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enter {
    /// Sends this prompt; the composer is empty again.
    Send(String),
    /// The line ended in `\`: it was replaced by a line break.
    NewLine,
    /// Nothing to send.
    Nothing,
}

/// A paste of more lines than this is shown collapsed.
const PASTE_LINES: usize = 10;
/// A paste of more characters than this is shown collapsed, however many lines it has.
const PASTE_CHARS: usize = 1000;

/// The prompt being written, its cursor, its collapsed pastes and the history it browses.
#[derive(Clone, Debug)]
pub struct Composer {
    /// At least one line; the cursor's line and character index (not byte) in it.
    lines: Vec<String>,
    row: usize,
    col: usize,
    /// Placeholders shown for large pastes, and what each stands for.
    pastes: Vec<(String, String)>,
    history: History,
}

impl Composer {
    /// An empty composer over a project's prompt `history`.
    pub fn new(history: History) -> Composer {
        Composer {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            pastes: Vec::new(),
            history,
        }
    }

    /// The lines as shown, placeholders and all.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The cursor: its line, and its character index in the line.
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// Whether nothing is written.
    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// The history, with the prompts sent from this composer.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The prompt as it would be sent: what was typed, each intact placeholder replaced by
    /// the paste it stands for.
    pub fn text(&self) -> String {
        let mut text = self.lines.join("\n");
        for (placeholder, pasted) in &self.pastes {
            if let Some(at) = text.find(placeholder.as_str()) {
                text.replace_range(at..at + placeholder.len(), pasted);
            }
        }
        text
    }

    /// Records `prompt` in the history as if it was sent from here (a command chosen in
    /// the menu).
    pub fn history_record(&mut self, prompt: &str) {
        self.history.record(prompt);
    }

    /// Enter: sends the prompt, or, after a trailing `\` at the end of a line, breaks it.
    pub fn enter(&mut self) -> Enter {
        let line = &self.lines[self.row];
        if self.col == line.chars().count() && line.ends_with('\\') {
            self.lines[self.row].pop();
            self.col -= 1;
            self.apply(Edit::NewLine);
            return Enter::NewLine;
        }
        let text = self.text();
        if text.trim().is_empty() {
            return Enter::Nothing;
        }
        self.history.record(&text);
        self.apply(Edit::Clear);
        Enter::Send(text)
    }

    /// Applies one edit.
    pub fn apply(&mut self, edit: Edit) {
        match edit {
            Edit::Insert('\n') | Edit::NewLine => {
                let at = self.byte(self.row, self.col);
                let rest = self.lines[self.row].split_off(at);
                self.lines.insert(self.row + 1, rest);
                self.row += 1;
                self.col = 0;
            }
            Edit::Insert(c) => {
                let at = self.byte(self.row, self.col);
                self.lines[self.row].insert(at, c);
                self.col += 1;
            }
            Edit::Backspace if self.col > 0 => {
                let at = self.byte(self.row, self.col - 1);
                self.lines[self.row].remove(at);
                self.col -= 1;
            }
            Edit::Backspace if self.row > 0 => {
                let line = self.lines.remove(self.row);
                self.row -= 1;
                self.col = self.width(self.row);
                self.lines[self.row].push_str(&line);
            }
            Edit::Delete if self.col < self.width(self.row) => {
                let at = self.byte(self.row, self.col);
                self.lines[self.row].remove(at);
            }
            Edit::Delete if self.row + 1 < self.lines.len() => {
                let next = self.lines.remove(self.row + 1);
                self.lines[self.row].push_str(&next);
            }
            Edit::Left if self.col > 0 => self.col -= 1,
            Edit::Left if self.row > 0 => {
                self.row -= 1;
                self.col = self.width(self.row);
            }
            Edit::Right if self.col < self.width(self.row) => self.col += 1,
            Edit::Right if self.row + 1 < self.lines.len() => {
                self.row += 1;
                self.col = 0;
            }
            Edit::Home => self.col = 0,
            Edit::End => self.col = self.width(self.row),
            Edit::Up if self.row > 0 => {
                self.row -= 1;
                self.col = self.col.min(self.width(self.row));
            }
            Edit::Up => {
                let current = self.text();
                if let Some(older) = self.history.older(&current).map(str::to_owned) {
                    self.show(&older);
                }
            }
            Edit::Down if self.row + 1 < self.lines.len() => {
                self.row += 1;
                self.col = self.col.min(self.width(self.row));
            }
            Edit::Down => {
                if let Some(newer) = self.history.newer().map(str::to_owned) {
                    self.show(&newer);
                }
            }
            Edit::Paste(text) => self.paste(&text),
            Edit::Clear => {
                self.lines = vec![String::new()];
                self.row = 0;
                self.col = 0;
                self.pastes.clear();
            }
            // At an edge: nothing to do.
            Edit::Backspace | Edit::Delete | Edit::Left | Edit::Right => {}
        }
    }

    /// Pasted text, its line endings made `\n`: typed in when small, a placeholder when
    /// large.
    fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines <= PASTE_LINES && text.chars().count() <= PASTE_CHARS {
            for c in text.chars() {
                self.apply(Edit::Insert(c));
            }
            return;
        }
        let what = match lines {
            1 => format!("{} characters", text.chars().count()),
            n => format!("{n} lines"),
        };
        // Placeholders are unique, so each intact one stands for one paste.
        let placeholder = match self.pastes.len() {
            0 => format!("[pasted {what}]"),
            n => format!("[pasted {what} #{}]", n + 1),
        };
        for c in placeholder.chars() {
            self.apply(Edit::Insert(c));
        }
        self.pastes.push((placeholder, text));
    }

    /// Shows `text` in place of what is written (a prompt of the history), cursor at its
    /// end.
    fn show(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        self.pastes.clear();
        self.row = self.lines.len() - 1;
        self.col = self.width(self.row);
    }

    fn width(&self, row: usize) -> usize {
        self.lines[row].chars().count()
    }

    /// The byte offset of character `col` of line `row`.
    fn byte(&self, row: usize, col: usize) -> usize {
        let line = &self.lines[row];
        line.char_indices()
            .nth(col)
            .map_or(line.len(), |(at, _)| at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(text: &str) -> Composer {
        let mut composer = Composer::new(History::default());
        for c in text.chars() {
            composer.apply(Edit::Insert(c));
        }
        composer
    }

    #[test]
    fn typing_breaking_and_joining_lines_keeps_the_cursor_inside() {
        let mut composer = typed("héllo\nwörld");
        assert_eq!(composer.lines(), ["héllo", "wörld"]);
        assert_eq!(composer.cursor(), (1, 5));
        composer.apply(Edit::Home);
        composer.apply(Edit::Backspace);
        assert_eq!(composer.lines(), ["héllowörld"]);
        assert_eq!(composer.cursor(), (0, 5));
        composer.apply(Edit::Right);
        composer.apply(Edit::Delete);
        assert_eq!(composer.text(), "héllowrld");
        composer.apply(Edit::End);
        composer.apply(Edit::Delete);
        composer.apply(Edit::Right);
        assert_eq!(composer.cursor(), (0, 9), "nothing past the end");
        composer.apply(Edit::Clear);
        assert!(composer.is_empty());
        composer.apply(Edit::Backspace);
        composer.apply(Edit::Left);
        assert_eq!(composer.cursor(), (0, 0));
    }

    #[test]
    fn enter_sends_the_prompt_or_breaks_a_line_after_a_backslash() {
        let mut composer = typed("first \\");
        assert_eq!(composer.enter(), Enter::NewLine);
        assert_eq!(composer.lines(), ["first ", ""]);
        for c in "second".chars() {
            composer.apply(Edit::Insert(c));
        }
        assert_eq!(composer.enter(), Enter::Send("first \nsecond".into()));
        assert!(composer.is_empty());
        assert_eq!(composer.enter(), Enter::Nothing);
        assert_eq!(composer.history().entries(), ["first \nsecond"]);
    }

    #[test]
    fn up_and_down_move_between_lines_then_through_the_history() {
        let mut composer = Composer::new(History::new(vec!["old one".into(), "old\ntwo".into()]));
        for c in "a\nbc".chars() {
            composer.apply(Edit::Insert(c));
        }
        composer.apply(Edit::Up);
        assert_eq!(composer.cursor(), (0, 1), "a line up first");
        composer.apply(Edit::Up);
        assert_eq!(composer.text(), "old\ntwo");
        composer.apply(Edit::Up);
        composer.apply(Edit::Up);
        assert_eq!(composer.text(), "old one");
        composer.apply(Edit::Down);
        composer.apply(Edit::Down);
        composer.apply(Edit::Down);
        assert_eq!(composer.text(), "a\nbc", "the draft comes back");
    }

    #[test]
    fn a_large_paste_is_shown_collapsed_and_sent_whole() {
        let mut composer = typed("see ");
        let big: String = (0..120).map(|i| format!("line {i}\r\n")).collect();
        composer.apply(Edit::Paste(big.clone()));
        composer.apply(Edit::Paste("x".repeat(2000)));
        assert_eq!(
            composer.lines(),
            ["see [pasted 120 lines][pasted 2000 characters #2]"]
        );
        let sent = big.replace("\r\n", "\n") + &"x".repeat(2000);
        assert_eq!(composer.enter(), Enter::Send(format!("see {sent}")));
        // A small paste is typed in, line breaks and all.
        composer.apply(Edit::Paste("a\r\nb".into()));
        assert_eq!(composer.lines(), ["a", "b"]);
    }

    #[test]
    fn an_edited_placeholder_stands_for_nothing() {
        let mut composer = typed("");
        composer.apply(Edit::Paste("y\n".repeat(50)));
        composer.apply(Edit::Backspace);
        assert_eq!(composer.text(), "[pasted 50 lines");
    }
}
