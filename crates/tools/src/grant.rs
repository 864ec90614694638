//! What answering "always" allows, as a permission rule: a tool, or for a command the
//! program and subcommand it starts with — never more than the question said.
//!
//! A command grant covers only plain commands: one that chains, pipes, substitutes or
//! redirects (`git status; rm -rf ~`) could hide anything behind an allowed start, so it is
//! asked about again (an allow rule's wildcards never stand for those characters). A
//! chained command asked about is granted exactly, as written.

use serde_json::Value;

use crate::rules::{Rule, SHELL_CONTROL};

/// What "always" grants for one call.
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

/// The program and its subcommand: the second word counts when it reads as a subcommand
/// (`git commit`, `cargo test`), not as an option or a path (`ls -la`, `cat src/a.rs`).
fn leading_words(command: &str) -> Option<Vec<String>> {
    if command.contains(SHELL_CONTROL) {
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
    /// What "always" grants for a call of `tool` with `args`: by its `command` when it has
    /// one, else the whole tool.
    pub fn for_call(tool: &str, args: &Value) -> Grant {
        let Some(command) = args.get("command").and_then(Value::as_str) else {
            return Grant::Tool(tool.to_owned());
        };
        match leading_words(command) {
            Some(words) => Grant::Starting {
                tool: tool.to_owned(),
                words,
            },
            None => Grant::Exactly {
                tool: tool.to_owned(),
                command: command.to_owned(),
            },
        }
    }

    /// The grant as an allow rule (`bash(cargo test:*)`, `bash(make && make install)`,
    /// `edit`), remembered for the project.
    pub fn rule(&self) -> String {
        match self {
            Grant::Tool(tool) => tool.clone(),
            // A `prefix:*` rule is literal: its words need no escaping.
            Grant::Starting { tool, words } => format!("{tool}({}:*)", words.join(" ")),
            Grant::Exactly { tool, command } => Rule::exact_command(tool, command),
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
    use crate::{PermissionRules, Roots, Verdict};
    use serde_json::json;

    fn allowed(grant: &Grant, tool: &str, args: Value) -> bool {
        let rule = Rule::parse(&grant.rule()).unwrap();
        let roots = Roots::new("/work/project", Vec::new());
        let (none, rules) = (PermissionRules::none(), [rule]);
        let verdict = none.verdict_with(tool, &args, &roots, &rules);
        verdict.map(|(v, _)| v) == Some(Verdict::Allow)
    }

    fn bash(command: &str) -> Value {
        json!({ "command": command })
    }

    #[test]
    fn a_grant_never_covers_more_than_its_words() {
        let grant = Grant::for_call("bash", &bash("cargo test -p x"));
        assert_eq!(grant.describe(), "bash commands starting with `cargo test`");
        assert_eq!(grant.rule(), "bash(cargo test:*)");
        assert!(allowed(&grant, "bash", bash("cargo test --workspace")));
        assert!(allowed(&grant, "bash", bash("cargo test")));
        assert!(!allowed(&grant, "bash", bash("cargo testx")));
        assert!(!allowed(&grant, "bash", bash("cargo test | sh")));
        assert!(!allowed(&grant, "bash", bash("cargo test; rm -rf ~")));
        assert!(!allowed(&grant, "other", bash("cargo test")));
        let ls = Grant::for_call("bash", &bash("ls -la"));
        assert_eq!(ls.describe(), "bash commands starting with `ls`");
        assert!(allowed(&ls, "bash", bash("ls src")));
        let chained = Grant::for_call("bash", &bash("make && make install"));
        assert_eq!(chained.describe(), "bash running this exact command");
        assert!(allowed(&chained, "bash", bash("make && make install")));
        assert!(!allowed(&chained, "bash", bash("make")));
        let globby = Grant::for_call("bash", &bash("rm -rf build/* | tee log"));
        assert!(allowed(&globby, "bash", bash("rm -rf build/* | tee log")));
        assert!(!allowed(
            &globby,
            "bash",
            bash("rm -rf build/../.. | tee log")
        ));
        let edit = Grant::for_call("edit", &json!({"path": "src/a.rs"}));
        assert_eq!(edit.describe(), "every edit call");
        assert!(allowed(&edit, "edit", json!({"path": "src/b.rs"})));
        assert!(!allowed(&edit, "write", json!({"path": "src/b.rs"})));
    }
}
