//! The head of a long text a tool returned, for a live run's transcript: the model got the
//! whole text (within the tool's own cap), but a person following the run reads a screen, and
//! a thousand lines from an MCP server would scroll everything else away.

/// How many lines of a plain-text result a live run shows.
pub const SHOWN_LINES: usize = 20;

/// `text` cut to its first `lines` lines (each kept whole, ending in a newline), and how many
/// lines were left out.
pub fn head(text: &str, lines: usize) -> (String, usize) {
    let total = text.lines().count();
    if total <= lines {
        let mut shown = text.to_owned();
        if !shown.is_empty() && !shown.ends_with('\n') {
            shown.push('\n');
        }
        return (shown, 0);
    }
    let mut shown = String::new();
    for line in text.lines().take(lines) {
        shown.push_str(line);
        shown.push('\n');
    }
    (shown, total - lines)
}

#[cfg(test)]
mod tests {
    use super::head;

    #[test]
    fn a_text_is_cut_after_whole_lines_and_says_how_many_are_left() {
        for (text, lines, shown, left) in [
            ("", 2, "", 0),
            ("one", 2, "one\n", 0),
            ("one\ntwo\n", 2, "one\ntwo\n", 0),
            ("one\ntwo\nthree", 2, "one\ntwo\n", 1),
            ("a\nb\nc\nd\n", 1, "a\n", 3),
            ("a\r\nb\r\nc", 2, "a\nb\n", 1),
        ] {
            assert_eq!(head(text, lines), (shown.to_owned(), left), "{text:?}");
        }
    }
}
