//! A running call's output on the terminal, as it arrives: made safe, carriage returns kept
//! as what they mean, and cut at a limit (the result shows the rest when the call ends).

use dsh_tools::safe_text::SafeText;

/// How much of one call's output is shown while it runs; the result (its head and tail) is
/// shown when it ends if the command printed more.
const LIVE_LIMIT: usize = 64 * 1024;

/// A running call whose output is on the screen.
pub struct LiveCall {
    filter: SafeText,
    shown: usize,
    /// The live view stopped at [`LIVE_LIMIT`]; the result is shown whole at the end.
    pub cut: bool,
    pub ends_line: bool,
    /// The last piece ended with a carriage return: the next decides whether it was a line
    /// end (`\r\n`) or a return to the line's start (a progress counter).
    pending_return: bool,
}

impl LiveCall {
    pub fn new(color: bool) -> LiveCall {
        LiveCall {
            filter: SafeText::new(color),
            shown: 0,
            cut: false,
            ends_line: true,
            pending_return: false,
        }
    }

    /// What to write for the next piece of output; `in_place` when the terminal redraws a
    /// line a lone carriage return went back to.
    pub fn piece(&mut self, output: &str, in_place: bool) -> String {
        if self.cut {
            return String::new();
        }
        let mut text = returns(self, output, in_place);
        if self.shown + text.len() > LIVE_LIMIT {
            let mut keep = LIVE_LIMIT.saturating_sub(self.shown);
            while !text.is_char_boundary(keep) {
                keep -= 1;
            }
            // Never inside dsh's own erase-line sequence.
            if let Some(esc) = text[..keep].rfind('\x1b')
                && keep - esc < "\x1b[2K".len()
            {
                keep = esc;
            }
            text.truncate(keep);
            text.push_str(&self.filter.finish());
            text.push_str("\n[… more output; shown when the command ends …]\n");
            self.cut = true;
        }
        self.shown += text.len();
        if !text.is_empty() {
            self.ends_line = text.ends_with('\n');
        }
        text
    }

    /// What is left to write when the call ends: a held escape sequence's end, a newline.
    pub fn finish(&mut self) -> String {
        let mut text = self.filter.finish();
        if !self.ends_line {
            text.push('\n');
        }
        text
    }
}

/// A piece of a command's output made safe, with its carriage returns kept as what they
/// mean: `\r\n` ends a line, and a lone `\r` (pip's, cargo's, curl's progress) goes back to
/// the start of the line — on a terminal dsh erases the line for the next state (its own
/// sequence, never the command's), elsewhere each state gets a line of its own.
fn returns(live: &mut LiveCall, piece: &str, in_place: bool) -> String {
    let mut text = String::new();
    let mut rest = piece;
    if std::mem::take(&mut live.pending_return) && !rest.starts_with('\n') {
        text.push_str(if in_place { "\r\x1b[2K" } else { "\n" });
    }
    while let Some(at) = rest.find('\r') {
        text.push_str(&live.filter.push(&rest.as_bytes()[..at]));
        rest = &rest[at + 1..];
        if rest.is_empty() {
            live.pending_return = true;
        } else if !rest.starts_with('\n') {
            text.push_str(if in_place { "\r\x1b[2K" } else { "\n" });
        }
    }
    text.push_str(&live.filter.push(rest.as_bytes()));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_carriage_return_erases_the_line_on_a_terminal_and_breaks_it_elsewhere() {
        // (pieces, on a terminal, elsewhere)
        let cases: &[(&[&str], &str, &str)] = &[
            (&["a\r\n"], "a\n", "a\n"),
            (&["10%\r20%\r\n"], "10%\r\x1b[2K20%\n", "10%\n20%\n"),
            // A return at a piece's end waits for the next piece to say what it was.
            (&["a\r", "\nb"], "a\nb", "a\nb"),
            (&["10%\r", "20%"], "10%\r\x1b[2K20%", "10%\n20%"),
            // The command's own escape sequences are still removed.
            (&["x\x1b]2;t\x07\ry"], "x\r\x1b[2Ky", "x\ny"),
        ];
        for (pieces, terminal, elsewhere) in cases {
            for (in_place, want) in [(true, terminal), (false, elsewhere)] {
                let mut call = LiveCall::new(false);
                let got: String = pieces
                    .iter()
                    .map(|p| returns(&mut call, p, in_place))
                    .collect();
                assert_eq!(&got, want, "{pieces:?} in place: {in_place}");
            }
        }
    }
}
