//! Text from outside dsh — tool output, the model's answer, a file's contents, a stored
//! session — made safe to show on a terminal or as Markdown in an editor.
//!
//! Such text can carry control sequences that drive the terminal showing it: clear the
//! screen (`CSI 2J`), rename the window (`OSC 0`/`OSC 2`), write the clipboard (`OSC 52`),
//! switch character sets or answer back. [`SafeText`] removes every escape sequence (CSI,
//! OSC, DCS, SOS/PM/APC, plain `ESC` sequences) and every C0 and C1 control except newline
//! and tab, whether the control arrives as a raw byte or as a UTF-8 character. With colour
//! on it may keep SGR sequences (`CSI … m`, colours and weights), the one kind that only
//! styles text; [`SafeText::finish`] then resets the style, so a colour a command left on
//! does not leak into the lines after it.
//!
//! The filter is a state machine (`vte`, the parser of Alacritty): a sequence split across
//! chunks is recognised as one, so a stream can be filtered piece by piece. Invalid UTF-8
//! becomes U+FFFD.
//!
//! ```
//! use dsh_tools::safe_text::SafeText;
//!
//! let hostile = "ok\x1b]2;pwned\x07\x1b[2J\x1b[31m red\x1b[0m\r\n";
//! assert_eq!(SafeText::plain(hostile), "ok red\n");
//! assert_eq!(SafeText::coloured(hostile), "ok\x1b[31m red\x1b[0m\n");
//! ```

use vte::{Params, Parser, Perform};

/// A stateful filter for one stream of untrusted text.
pub struct SafeText {
    parser: Parser,
    sink: Sink,
}

struct Sink {
    keep_sgr: bool,
    /// An SGR other than a plain reset was kept since the last reset.
    styled: bool,
    out: String,
}

impl SafeText {
    /// A filter that keeps SGR sequences when `keep_sgr`.
    pub fn new(keep_sgr: bool) -> SafeText {
        SafeText {
            parser: Parser::new(),
            sink: Sink {
                keep_sgr,
                styled: false,
                out: String::new(),
            },
        }
    }

    /// The safe text of the next piece of the stream. A sequence still open at the piece's
    /// end is held until the next piece.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.parser.advance(&mut self.sink, bytes);
        std::mem::take(&mut self.sink.out)
    }

    /// Ends the stream: what resets a style the stream left on (empty when none is on).
    pub fn finish(&mut self) -> String {
        self.parser = Parser::new();
        if std::mem::take(&mut self.sink.styled) {
            "\x1b[0m".to_owned()
        } else {
            String::new()
        }
    }

    /// `text` with every escape sequence and control but newline and tab removed.
    pub fn plain(text: &str) -> String {
        if already_safe(text) {
            return text.to_owned();
        }
        let mut filter = SafeText::new(false);
        filter.push(text.as_bytes())
    }

    /// [`SafeText::plain`] of text already owned: returned as it is (no copy) when there is
    /// nothing in it to filter.
    pub fn plain_owned(text: String) -> String {
        if already_safe(&text) {
            return text;
        }
        SafeText::plain(&text)
    }

    /// [`SafeText::coloured`] of text already owned: returned as it is (no copy) when there
    /// is nothing in it to filter.
    pub fn coloured_owned(text: String) -> String {
        if already_safe(&text) {
            return text;
        }
        SafeText::coloured(&text)
    }

    /// `text` as [`SafeText::plain`], keeping colours, and reset at its end if it set one.
    pub fn coloured(text: &str) -> String {
        if already_safe(text) {
            return text.to_owned();
        }
        let mut filter = SafeText::new(true);
        let mut out = filter.push(text.as_bytes());
        out.push_str(&filter.finish());
        out
    }
}

/// Whether `text` holds nothing the filter would change: no C0 control but newline and tab,
/// no DEL, and no C1 control (U+0080..U+009F, `C2 80`..`C2 9F` in UTF-8). Most text is such,
/// and is then returned as it is without running the state machine.
fn already_safe(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().all(|(i, &b)| match b {
        b'\n' | b'\t' => true,
        0..0x20 | 0x7f => false,
        0xc2 => !bytes
            .get(i + 1)
            .is_some_and(|next| (0x80..=0x9f).contains(next)),
        _ => true,
    })
}

impl Default for SafeText {
    /// A filter that keeps no colour.
    fn default() -> SafeText {
        SafeText::new(false)
    }
}

impl Perform for Sink {
    fn print(&mut self, c: char) {
        // vte hands DEL and the C1 controls that arrive UTF-8 encoded (U+0080..U+009F) to
        // `print`.
        if !('\u{7f}'..='\u{9f}').contains(&c) {
            self.out.push(c);
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => self.out.push('\n'),
            b'\t' => self.out.push('\t'),
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], ignore: bool, action: char) {
        if !self.keep_sgr || action != 'm' || ignore || !intermediates.is_empty() {
            return;
        }
        let mut sgr = String::from("\x1b[");
        let mut reset = true;
        for (i, param) in params.iter().enumerate() {
            if i > 0 {
                sgr.push(';');
            }
            for (j, value) in param.iter().enumerate() {
                if j > 0 {
                    sgr.push(':');
                }
                sgr.push_str(&value.to_string());
                reset &= *value == 0;
            }
        }
        sgr.push('m');
        self.styled = !reset;
        self.out.push_str(&sgr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_taken_as_already_safe_is_what_the_filter_would_give() {
        let samples = [
            "plain words",
            "tabs\tand\nlines\n",
            "日本語 and émoji 🌍",
            "\u{a0}\u{a0}after C1",
            "ÿ\u{c0}",
            "",
            "a\rb",
            "\u{1b}[2J",
            "\u{85}next line",
            "\u{9b}31m",
            "del\u{7f}",
        ];
        for text in samples {
            let mut filter = SafeText::new(false);
            let filtered = filter.push(text.as_bytes());
            if already_safe(text) {
                assert_eq!(filtered, text, "{text:?} was taken as safe");
            } else {
                assert_ne!(filtered, text, "{text:?} was needlessly filtered");
            }
            assert_eq!(SafeText::plain(text), filtered, "{text:?}");
            assert_eq!(SafeText::plain_owned(text.to_owned()), filtered, "{text:?}");
            let coloured = SafeText::coloured(text);
            assert_eq!(
                SafeText::coloured_owned(text.to_owned()),
                coloured,
                "{text:?}"
            );
        }
    }

    #[test]
    fn every_hostile_sequence_is_removed_and_text_and_layout_kept() {
        let table: &[(&str, &[u8], &str)] = &[
            ("clear screen", b"a\x1b[2Jb", "ab"),
            ("cursor moves", b"\x1b[10;20Hx\x1b[Ay", "xy"),
            ("window title, BEL", b"\x1b]0;owned\x07t", "t"),
            ("window title, ST", b"\x1b]2;owned\x1b\\t", "t"),
            ("clipboard write", b"\x1b]52;c;ZWNobyBoaQ==\x07t", "t"),
            ("DCS", b"\x1bP1$r0m\x1b\\t", "t"),
            ("APC", b"\x1b_Gf=100;AAAA\x1b\\t", "t"),
            ("charset switch", b"\x1b(0q\x1b(B", "q"),
            ("C1 CSI as a raw byte", b"a\x9b2Jb", "a2Jb"),
            ("C1 CSI as UTF-8", "a\u{9b}2Jb".as_bytes(), "a2Jb"),
            ("C0 controls", b"a\x07\x08\x0b\x0c\rb", "ab"),
            ("delete", b"a\x7fb", "ab"),
            ("newline and tab", b"a\tb\nc", "a\tb\nc"),
            ("invalid UTF-8", b"a\xffb", "a\u{fffd}b"),
            ("plain unicode", "é → ✓".as_bytes(), "é → ✓"),
            ("colours, off", b"\x1b[1;31mred\x1b[0m", "red"),
        ];
        for (what, input, want) in table {
            assert_eq!(SafeText::new(false).push(input), *want, "{what}");
        }
    }

    #[test]
    fn colours_are_kept_when_on_and_reset_at_the_end() {
        assert_eq!(
            SafeText::coloured("\x1b[1;38;5;196mred"),
            "\x1b[1;38;5;196mred\x1b[0m"
        );
        assert_eq!(
            SafeText::coloured("\x1b[38:2:1:2:3mx\x1b[0m"),
            "\x1b[38:2:1:2:3mx\x1b[0m",
            "sub-parameters survive, and a stream that reset itself needs no reset"
        );
        assert_eq!(SafeText::coloured("\x1b[?25l\x1b[2Kx"), "x", "only SGR");
    }

    #[test]
    fn a_sequence_split_across_pieces_is_still_one_sequence() {
        let input = b"before\x1b]2;a title that is long\x07after\x1b[2Jend";
        for split in 0..input.len() {
            let mut filter = SafeText::new(false);
            let mut out = filter.push(&input[..split]);
            out.push_str(&filter.push(&input[split..]));
            assert_eq!(out, "beforeafterend", "split at {split}");
        }
    }
}
