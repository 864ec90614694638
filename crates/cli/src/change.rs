//! How `dsh run` shows a change to a file: its one-line summary and the changed lines as a
//! compact unified diff (numbered, `-` red and `+` green when colour is on), computed with
//! `similar` from the region the tool's result view gives.

use dsh_tools::safe_text::SafeText;
use similar::{ChangeTag, TextDiff};

/// The most diff lines shown; the rest is counted.
const SHOWN: usize = 60;

/// A change's summary line, as a result shows it.
pub fn summary_line(summary: &str, color: bool) -> String {
    match color {
        true => format!("\x1b[2m  {}\x1b[0m\n", SafeText::plain(summary)),
        false => format!("  {}\n", SafeText::plain(summary)),
    }
}

/// The summary and the changed lines of `old` becoming `new`, the region starting at line
/// `first`.
pub fn diff(summary: &str, first: usize, old: &str, new: &str, color: bool) -> String {
    let mut out = summary_line(summary, color);
    let diff = TextDiff::from_lines(old, new);
    let mut lines = 0;
    let mut hidden = 0;
    for group in diff.grouped_ops(3) {
        for op in group {
            for change in diff.iter_changes(&op) {
                let (sign, style, index) = match change.tag() {
                    ChangeTag::Delete => ('-', "31", change.old_index()),
                    ChangeTag::Insert => ('+', "32", change.new_index()),
                    ChangeTag::Equal => (' ', "2", change.new_index()),
                };
                if lines >= SHOWN {
                    hidden += 1;
                    continue;
                }
                lines += 1;
                let number = index.map_or(String::new(), |i| (first + i).to_string());
                let text = SafeText::plain(change.value().trim_end_matches(['\n', '\r']));
                out.push_str(&match color {
                    true => format!("\x1b[{style}m{number:>6} {sign} {text}\x1b[0m\n"),
                    false => format!("{number:>6} {sign} {text}\n"),
                });
            }
        }
    }
    if hidden > 0 {
        out.push_str(&format!("       … {hidden} more diff lines\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_shows_its_summary_and_numbered_changed_lines() {
        let summary = "edited a.rs: 1 replacement at line 11";
        assert_eq!(
            diff(summary, 10, "a\nb\nc\n", "a\nB\nc\n", false),
            "  edited a.rs: 1 replacement at line 11\n    10   a\n    11 - b\n    11 + B\n    12   c\n"
        );
        let coloured = diff(summary, 10, "a\nb\nc\n", "a\nB\nc\n", true);
        assert!(coloured.contains("\x1b[31m    11 - b\x1b[0m"));
        assert!(coloured.contains("\x1b[32m    11 + B\x1b[0m"));
        assert_eq!(
            summary_line("read a.rs: 3 lines", false),
            "  read a.rs: 3 lines\n"
        );
    }

    #[test]
    fn escape_sequences_in_the_file_never_reach_the_terminal() {
        let text = diff("wrote x", 1, "", "\u{1b}]2;pwned\u{7}\u{1b}[2J\n", true);
        assert!(!text.contains("\u{1b}]"), "{text:?}");
        assert!(!text.contains("\u{1b}[2J"), "{text:?}");
    }
}
