//! Applying a replacement to a text, and saying where the model went wrong when it cannot.

use dsh_tools::ToolError;

use crate::args::OneEdit;
use crate::errors::no_match;

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Applies `edit` to `text`: the new text, the number of replacements and the offset of the
/// first. `which` names the edit in messages (" (edit 2)") when there are several.
pub(crate) fn apply(
    text: &str,
    edit: &OneEdit,
    path: &str,
    which: &str,
) -> Result<(String, usize, usize), ToolError> {
    let at: Vec<usize> = text
        .match_indices(edit.old_string.as_str())
        .map(|(i, _)| i)
        .collect();
    match at.len() {
        0 => Err(no_match(not_found(text, &edit.old_string, path, which))),
        n if n == 1 || edit.replace_all => {
            // Built from the matches already found, not by searching again.
            let mut out = String::with_capacity(
                text.len() + n * edit.new_string.len().saturating_sub(edit.old_string.len()),
            );
            let mut from = 0;
            for &i in &at {
                out.push_str(&text[from..i]);
                out.push_str(&edit.new_string);
                from = i + edit.old_string.len();
            }
            out.push_str(&text[from..]);
            Ok((out, n, at[0]))
        }
        n => {
            let lines: Vec<String> = at
                .iter()
                .take(10)
                .map(|&i| line_of(text, i).to_string())
                .collect();
            let more = if n > 10 { ", …" } else { "" };
            Err(no_match(format!(
                "old_string{which} matches {n} times in {path} (at lines {}{more}). Include more surrounding lines to make it unique, or set replace_all to change every one.",
                lines.join(", ")
            )))
        }
    }
}

/// Why `needle` was not found: the place that differs only in whitespace, or the lines most
/// like its first line, so the model can correct itself without reading the file again.
fn not_found(text: &str, needle: &str, path: &str, which: &str) -> String {
    let head = format!("old_string{which} was not found in {path}.");
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let lines: Vec<&str> = text.lines().collect();
    let wanted: Vec<String> = needle
        .lines()
        .map(squash)
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(first) = wanted.first() {
        // A window of the file whose non-blank lines equal the needle's, whitespace aside.
        for start in 0..lines.len() {
            if squash(lines[start]) != *first {
                continue;
            }
            let mut got = Vec::new();
            let mut end = start;
            while end < lines.len() && got.len() < wanted.len() {
                let line = squash(lines[end]);
                if !line.is_empty() {
                    got.push(line);
                }
                end += 1;
            }
            if got == wanted {
                return format!(
                    "{head} The text at lines {}–{} differs from it only in whitespace (indentation or line breaks); copy it exactly:\n{}",
                    start + 1,
                    end,
                    numbered(&lines, start, end)
                );
            }
        }
        // The lines most like its first line.
        let mut best: Vec<(f32, usize)> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                let ratio =
                    similar::TextDiff::from_chars(squash(l).as_str(), first.as_str()).ratio();
                (ratio, i)
            })
            .filter(|(ratio, _)| *ratio >= 0.6)
            .collect();
        best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        if !best.is_empty() {
            let shown: Vec<String> = best
                .iter()
                .take(3)
                .map(|&(_, i)| numbered(&lines, i, i + 1))
                .collect();
            return format!(
                "{head} The lines most like its first line are:\n{}\nRead the file again if it may have changed.",
                shown.join("\n")
            );
        }
    }
    format!("{head} Read the file again to see its current text.")
}

/// Lines `start..end` (0-based) with their 1-based numbers.
fn numbered(lines: &[&str], start: usize, end: usize) -> String {
    lines[start..end.min(lines.len())]
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}", start + i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str, all: bool) -> OneEdit {
        OneEdit {
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn a_unique_match_is_replaced_and_several_need_replace_all() {
        let text = "a x\nb x\nc\n";
        assert_eq!(
            apply(text, &edit("c", "C", false), "f", "").unwrap(),
            ("a x\nb x\nC\n".into(), 1, 8)
        );
        let err = apply(text, &edit("x", "y", false), "f", "").unwrap_err();
        assert!(
            err.message.contains("matches 2 times in f (at lines 1, 2)"),
            "{}",
            err.message
        );
        assert_eq!(
            apply(text, &edit("x", "y", true), "f", "").unwrap(),
            ("a y\nb y\nc\n".into(), 2, 2)
        );
    }

    #[test]
    fn a_whitespace_only_mismatch_shows_the_lines_to_copy() {
        let text = "fn main() {\n    let x = 1;\n    let y = 2;\n}\n";
        let err = apply(
            text,
            &edit("let x = 1;\nlet y = 2;", "z", false),
            "m.rs",
            "",
        )
        .unwrap_err();
        assert_eq!(err.code, "no_match");
        assert!(
            err.message
                .contains("lines 2–3 differs from it only in whitespace"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains("     2\t    let x = 1;"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_near_miss_names_the_most_similar_lines() {
        let text = "fn alpha() {}\nfn beta() {}\n";
        let err = apply(
            text,
            &edit("fn betta() {}", "z", false),
            "m.rs",
            " (edit 2)",
        )
        .unwrap_err();
        assert!(
            err.message
                .starts_with("old_string (edit 2) was not found in m.rs.")
        );
        assert!(
            err.message.contains("     2\tfn beta() {}"),
            "{}",
            err.message
        );
        let err = apply(text, &edit("nothing like it", "z", false), "m.rs", "").unwrap_err();
        assert!(
            err.message.contains("Read the file again"),
            "{}",
            err.message
        );
    }
}
