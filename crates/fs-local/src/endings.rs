//! Line endings and the final newline: what a file has, so a write can keep it.

/// The shape of a file's text that a rewrite keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Every line break is CRLF (and there is at least one).
    pub crlf: bool,
    /// Whether the text ends with a line break; `None` for an empty file, which has no
    /// habit to keep.
    pub final_newline: Option<bool>,
}

impl Shape {
    /// The shape of `raw`, as stored.
    pub(crate) fn of(raw: &str) -> Shape {
        let bytes = raw.as_bytes();
        // One pass over the bytes, stopping at the first lone LF: most files have one at
        // their first line break.
        let mut breaks = 0usize;
        let mut crlf = true;
        for (i, &byte) in bytes.iter().enumerate() {
            if byte == b'\n' {
                breaks += 1;
                if i == 0 || bytes[i - 1] != b'\r' {
                    crlf = false;
                    break;
                }
            }
        }
        let crlf = crlf && breaks > 0;
        Shape {
            crlf,
            final_newline: (!raw.is_empty()).then(|| raw.ends_with('\n')),
        }
    }

    /// `raw` as readers see it: CRLF turned into LF when every break is CRLF; a file with
    /// mixed breaks is left exactly as it is.
    pub(crate) fn to_lf(self, raw: &str) -> String {
        if self.crlf {
            raw.replace("\r\n", "\n")
        } else {
            raw.to_owned()
        }
    }

    /// [`Shape::to_lf`] of an owned text, which an LF file gives back without a copy.
    pub(crate) fn into_lf(self, raw: String) -> String {
        if self.crlf {
            raw.replace("\r\n", "\n")
        } else {
            raw
        }
    }

    /// `text` as it will be stored over a file of this shape.
    pub(crate) fn to_disk(self, text: &str) -> String {
        let mut text = if self.crlf {
            text.replace("\r\n", "\n").replace('\n', "\r\n")
        } else {
            text.to_owned()
        };
        let ends = text.ends_with('\n');
        if self.final_newline == Some(true) && !ends && !text.is_empty() {
            text.push_str(if self.crlf { "\r\n" } else { "\n" });
        } else if self.final_newline == Some(false) && ends {
            text.pop();
            if text.ends_with('\r') && self.crlf {
                text.pop();
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_of_a_file_is_kept_through_a_rewrite() {
        // (stored, what readers see, text written back, stored after)
        let cases = [
            ("a\r\nb\r\n", "a\nb\n", "a\nc\n", "a\r\nc\r\n"),
            ("a\r\nb", "a\nb", "a\nc", "a\r\nc"),
            ("a\nb\n", "a\nb\n", "a\nc", "a\nc\n"),
            ("a\nb", "a\nb", "a\nc\n", "a\nc"),
            ("a\r\nb\n", "a\r\nb\n", "x\r\ny\n", "x\r\ny\n"),
            ("", "", "new\n", "new\n"),
            ("", "", "new", "new"),
            ("a\r\n", "a\n", "", ""),
            ("one line", "one line", "two\nlines", "two\nlines"),
        ];
        for (stored, seen, written, after) in cases {
            let shape = Shape::of(stored);
            assert_eq!(shape.to_lf(stored), seen, "{stored:?}");
            assert_eq!(shape.to_disk(written), after, "{stored:?} ← {written:?}");
        }
    }
}
