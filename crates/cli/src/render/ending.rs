//! The last line under a call: how it ended, in dsh's words, styled.

use dsh_tools::safe_text::SafeText;

/// How a call ended, as its last line shows it.
#[derive(Debug, PartialEq)]
pub enum Ending {
    Exit {
        code: i32,
        secs: f64,
    },
    TimedOut {
        secs: f64,
    },
    Killed {
        signal: String,
        secs: f64,
    },
    /// The tool's own words for how it ended (`[cancelled by the user after 5.2 s; …]`).
    Said(String),
    Error(String),
    /// A summary line and diff, already safe for the terminal.
    Change(String),
    /// The output says it all.
    Nothing,
}

impl Ending {
    /// The line, styled when `color`: failures red, a clean exit dim. What it quotes of the
    /// tool's text is made safe first.
    pub fn line(&self, color: bool) -> String {
        let (text, style) = match self {
            Ending::Exit { code: 0, secs } => (format!("[exit 0 · {secs:.1} s]"), "2"),
            Ending::Exit { code, secs } => (format!("[exit {code} · {secs:.1} s]"), "31"),
            Ending::TimedOut { secs } => (format!("[timed out after {secs:.0} s]"), "31"),
            Ending::Killed { signal, secs } => {
                (format!("[killed by {signal} · {secs:.1} s]"), "31")
            }
            Ending::Said(line) => (SafeText::plain(line), "33"),
            Ending::Error(message) => (format!("[error: {}]", SafeText::plain(message)), "31"),
            Ending::Change(text) => return text.clone(),
            Ending::Nothing => return String::new(),
        };
        if color {
            format!("\x1b[{style}m{text}\x1b[0m\n")
        } else {
            format!("{text}\n")
        }
    }
}
