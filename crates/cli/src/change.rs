//! How `dsh run` shows a file tool's result: its one-line summary and, for an edit or a
//! write, the changed lines as a compact unified diff (numbered, `-` red and `+` green when
//! colour is on), computed with `similar` from the region the result's `meta` keeps.

use dsh_tools::safe_text::SafeText;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

/// The most diff lines shown; the rest is counted.
const SHOWN: usize = 60;

/// The summary and diff of a file tool's result `meta`, already safe for the terminal; `None`
/// for a result that is not a file tool's.
pub fn shown(meta: &Value, color: bool) -> Option<String> {
    let summary = meta.get("summary")?.as_str()?;
    let (Some(old), Some(new)) = (
        meta.get("old_text").and_then(Value::as_str),
        meta.get("new_text").and_then(Value::as_str),
    ) else {
        return Some(summary_line(summary, color));
    };
    let first = meta.get("first_line").and_then(Value::as_u64).unwrap_or(1) as usize;
    Some(diff(summary, first, old, new, color))
}

/// The summary line alone of a file tool's result `meta` (its diff was shown already).
pub fn summary(meta: &Value, color: bool) -> Option<String> {
    Some(summary_line(meta.get("summary")?.as_str()?, color))
}

/// The summary line.
fn summary_line(summary: &str, color: bool) -> String {
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
    use serde_json::json;

    #[test]
    fn an_edit_shows_its_summary_and_numbered_changed_lines() {
        let meta = json!({
            "summary": "edited a.rs: 1 replacement at line 11",
            "first_line": 10,
            "old_text": "a\nb\nc\n",
            "new_text": "a\nB\nc\n",
        });
        assert_eq!(
            shown(&meta, false).unwrap(),
            "  edited a.rs: 1 replacement at line 11\n    10   a\n    11 - b\n    11 + B\n    12   c\n"
        );
        let coloured = shown(&meta, true).unwrap();
        assert!(coloured.contains("\x1b[31m    11 - b\x1b[0m"));
        assert!(coloured.contains("\x1b[32m    11 + B\x1b[0m"));
        assert_eq!(
            shown(&json!({"summary": "read a.rs: 3 lines"}), false).unwrap(),
            "  read a.rs: 3 lines\n"
        );
        assert_eq!(shown(&json!({"exit_code": 0}), false), None);
    }

    #[test]
    fn escape_sequences_in_the_file_never_reach_the_terminal() {
        let meta = json!({"summary": "wrote x", "first_line": 1, "old_text": "", "new_text": "\u{1b}]2;pwned\u{7}\u{1b}[2J\n"});
        let text = shown(&meta, true).unwrap();
        assert!(!text.contains("\u{1b}]"), "{text:?}");
        assert!(!text.contains("\u{1b}[2J"), "{text:?}");
    }
}
