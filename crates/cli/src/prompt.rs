//! The prompt of `dsh run`: the argument, stdin, both (`git diff | dsh run "review this"`), or
//! the replay script's own prompt — checked before anything is created.

use std::io::{IsTerminal, Read};

use crate::exit::Failure;

/// The largest prompt read from stdin.
pub const MAX_STDIN: usize = 1024 * 1024;

/// Resolves the prompt from `arg`, stdin and the script's default.
pub fn resolve(arg: Option<&str>, script_prompt: Option<&str>) -> Result<String, Failure> {
    let stdin = std::io::stdin();
    let piped = !stdin.is_terminal();
    let prompt = match arg {
        Some("-") => read_stdin()?,
        Some(text) if piped => {
            let extra = read_stdin()?;
            if extra.trim().is_empty() {
                text.to_owned()
            } else {
                format!("{text}\n\n{extra}")
            }
        }
        Some(text) => text.to_owned(),
        None if piped => {
            let text = read_stdin()?;
            match (text.trim().is_empty(), script_prompt) {
                (true, Some(script)) => script.to_owned(),
                _ => text,
            }
        }
        None => match script_prompt {
            Some(script) => script.to_owned(),
            None => {
                return Err(Failure::usage(
                    "no prompt: give one as an argument (dsh run \"…\") or on stdin",
                ));
            }
        },
    };
    if prompt.trim().is_empty() {
        return Err(Failure::usage("the prompt is empty"));
    }
    Ok(prompt)
}

fn read_stdin() -> Result<String, Failure> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_STDIN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::usage(format!("cannot read the prompt from stdin: {e}")))?;
    if bytes.len() > MAX_STDIN {
        return Err(Failure::usage(format!(
            "the prompt on stdin is longer than {MAX_STDIN} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        Failure::usage(format!(
            "the prompt on stdin is not UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}
