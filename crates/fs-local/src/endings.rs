//! Line endings: what a file has, so a write can keep them.

/// The shape of a file's text that a rewrite keeps: its line breaks, which readers never
/// see (they read LF). The final newline is not part of it: readers see it, so a writer that
/// gives text ending one way means it (`edit`, which changes only part of a file, keeps the
/// old ending itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Every line break is CRLF (and there is at least one).
    pub crlf: bool,
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
        Shape {
            crlf: crlf && breaks > 0,
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
        if self.crlf {
            text.replace("\r\n", "\n").replace('\n', "\r\n")
        } else {
            text.to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_are_kept_through_a_rewrite_and_the_final_newline_is_the_writer_s() {
        // (stored, what readers see, text written back, stored after)
        let cases = [
            ("a\r\nb\r\n", "a\nb\n", "a\nc\n", "a\r\nc\r\n"),
            ("a\r\nb", "a\nb", "a\nc", "a\r\nc"),
            // The final newline is what the writer gave, either way.
            ("a\nb\n", "a\nb\n", "a\nc", "a\nc"),
            ("a\nb", "a\nb", "a\nc\n", "a\nc\n"),
            ("a\r\nb", "a\nb", "a\nc\n", "a\r\nc\r\n"),
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
