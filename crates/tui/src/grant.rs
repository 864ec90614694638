//! What answering "always" allows: a tool, or for a command the program and subcommand it
//! starts with — never more than the question said.
//!
//! A command grant covers only plain commands: one that chains, pipes, substitutes or
//! redirects (`git status; rm -rf ~`) could hide anything behind an allowed start, so it is
//! asked about again. A chained command asked about is granted exactly, as written.

use dsh_tools::ToolCallView;

/// One grant of the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Every call of this tool.
    Tool(String),
    /// This tool's plain commands whose first words are these.
    Starting {
        /// The tool (a terminal tool: bash).
        tool: String,
        /// The program, and its subcommand when it has one.
        words: Vec<String>,
    },
    /// This tool's command, exactly as written.
    Exactly {
        /// The tool.
        tool: String,
        /// The command line.
        command: String,
    },
}

/// Characters that make a command more than one plain program call.
const CONTROL: &[char] = &[
    ';', '&', '|', '`', '$', '<', '>', '(', ')', '{', '}', '\n', '\\',
];

/// The program and its subcommand: the second word counts when it reads as a subcommand
/// (`git commit`, `cargo test`), not as an option or a path (`ls -la`, `cat src/a.rs`).
fn leading_words(command: &str) -> Option<Vec<String>> {
    if command.contains(CONTROL) {
        return None;
    }
    let mut words = command.split_whitespace();
    let program = words.next()?;
    let mut leading = vec![program.to_owned()];
    if let Some(sub) = words.next()
        && sub
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && sub.starts_with(|c: char| c.is_ascii_alphabetic())
    {
        leading.push(sub.to_owned());
    }
    Some(leading)
}

impl Grant {
    /// What "always" grants for a call of `tool` shown as `shown`.
    pub fn for_call(tool: &str, shown: Option<&ToolCallView>) -> Grant {
        match shown {
            Some(ToolCallView::Terminal { command, .. }) => match leading_words(command) {
                Some(words) => Grant::Starting {
                    tool: tool.to_owned(),
                    words,
                },
                None => Grant::Exactly {
                    tool: tool.to_owned(),
                    command: command.clone(),
                },
            },
            Some(ToolCallView::Generic { .. }) | None => Grant::Tool(tool.to_owned()),
        }
    }

    /// Whether the grant allows a call of `tool` shown as `shown`.
    pub fn covers(&self, tool: &str, shown: Option<&ToolCallView>) -> bool {
        let command = match shown {
            Some(ToolCallView::Terminal { command, .. }) => Some(command.as_str()),
            Some(ToolCallView::Generic { .. }) | None => None,
        };
        match self {
            Grant::Tool(granted) => granted == tool,
            Grant::Starting {
                tool: granted,
                words,
            } => {
                granted == tool
                    && command.is_some_and(|command| {
                        !command.contains(CONTROL)
                            && command
                                .split_whitespace()
                                .take(words.len())
                                .eq(words.iter().map(String::as_str))
                    })
            }
            Grant::Exactly {
                tool: granted,
                command: exactly,
            } => granted == tool && command == Some(exactly.as_str()),
        }
    }

    /// The grant in words, for the question (its words are the model's: the caller makes
    /// the line safe).
    pub fn describe(&self) -> String {
        match self {
            Grant::Tool(tool) => format!("every {tool} call"),
            Grant::Starting { tool, words } => {
                format!("{tool} commands starting with `{}`", words.join(" "))
            }
            // The command is shown just above, whole: it is not quoted again.
            Grant::Exactly { tool, .. } => format!("{tool} running this exact command"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn terminal(command: &str) -> ToolCallView {
        ToolCallView::Terminal {
            command: command.into(),
            description: None,
            cwd: None,
            raw_input: Value::Null,
        }
    }

    #[test]
    fn a_grant_never_covers_more_than_its_words() {
        let grant = Grant::for_call("bash", Some(&terminal("cargo test -p x")));
        assert_eq!(grant.describe(), "bash commands starting with `cargo test`");
        assert!(grant.covers("bash", Some(&terminal("cargo test --workspace"))));
        assert!(!grant.covers("bash", Some(&terminal("cargo testx"))));
        assert!(!grant.covers("bash", Some(&terminal("cargo test | sh"))));
        assert!(!grant.covers("other", Some(&terminal("cargo test"))));
        let ls = Grant::for_call("bash", Some(&terminal("ls -la")));
        assert_eq!(ls.describe(), "bash commands starting with `ls`");
        assert!(ls.covers("bash", Some(&terminal("ls src"))));
        let chained = Grant::for_call("bash", Some(&terminal("make && make install")));
        assert_eq!(chained.describe(), "bash running this exact command");
        assert!(chained.covers("bash", Some(&terminal("make && make install"))));
        assert!(!chained.covers("bash", Some(&terminal("make"))));
        let edit = Grant::for_call("edit", None);
        assert_eq!(edit.describe(), "every edit call");
        assert!(edit.covers("edit", None));
        assert!(!edit.covers("write", None));
    }
}
