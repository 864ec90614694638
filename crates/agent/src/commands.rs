//! Slash commands: what a prompt that starts with `/` and names a command does, for every
//! front end alike (`dsh run "/compact"`, a command picked in an editor's menu).
//!
//! Two are built in: `/compact` compacts the session ([`crate::Agent::compact`]) and `/init`
//! asks the model to write or update the project's `AGENTS.md`, with a prompt kept in this
//! repository. The user's own are Markdown files: `<name>.md` in `.dsh/commands/` of the
//! project (the nearest such directory from the session's directory up) and in the user's
//! `$XDG_CONFIG_HOME/dsh/commands/`; the project's win over the user's, and neither can
//! replace a built-in. The body, with `$ARGUMENTS` replaced by what follows the name (or the
//! arguments appended when it has no `$ARGUMENTS`), is sent as the prompt. A file that cannot
//! be a command (an unusable name, not UTF-8, larger than [`MAX_COMMAND_BYTES`]) is skipped
//! with a warning naming it; a prompt that starts with `/` but names no command is an
//! ordinary prompt (`/usr/bin is missing` is a question, not a command).

use std::path::{Path, PathBuf};

/// The text `/init` sends.
pub const INIT_PROMPT: &str = include_str!("../prompts/init.md");

/// The largest command file read.
pub const MAX_COMMAND_BYTES: u64 = 64 * 1024;

/// One command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// Its name, without the `/`.
    pub name: String,
    /// One line for a menu.
    pub description: String,
    /// What it does.
    pub action: Action,
}

/// What a command does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Compact the session.
    Compact,
    /// Send a prompt built from this body; `takes_arguments` when it has `$ARGUMENTS`.
    Prompt {
        /// The text, `$ARGUMENTS` still in it.
        body: String,
        /// Whether the body places the arguments itself.
        takes_arguments: bool,
    },
}

/// What a prompt turned out to ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invocation {
    /// A compaction.
    Compact,
    /// This prompt for the model.
    Prompt(String),
}

/// The commands of one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commands {
    list: Vec<Command>,
}

impl Commands {
    /// The built-ins, then the project's commands (found from `cwd` up), then the user's
    /// from `user_dir`; the warnings name each file skipped and why.
    pub fn discover(cwd: &Path, user_dir: Option<&Path>) -> (Commands, Vec<String>) {
        let mut list = built_in();
        let mut warnings = Vec::new();
        let project = cwd
            .ancestors()
            .map(|dir| dir.join(".dsh").join("commands"))
            .find(|dir| dir.is_dir());
        for dir in project.iter().map(PathBuf::as_path).chain(user_dir) {
            for command in read_dir(dir, &mut warnings) {
                if !list.iter().any(|c| c.name == command.name) {
                    list.push(command);
                }
            }
        }
        (Commands { list }, warnings)
    }

    /// Every command, built-ins first.
    pub fn list(&self) -> &[Command] {
        &self.list
    }

    /// What `text` asks for, when it starts with `/` and a command's name.
    pub fn invoke(&self, text: &str) -> Option<Invocation> {
        let rest = text.trim_start().strip_prefix('/')?;
        let (name, arguments) = match rest.split_once(char::is_whitespace) {
            Some((name, arguments)) => (name, arguments.trim()),
            None => (rest.trim_end(), ""),
        };
        let command = self.list.iter().find(|c| c.name == name)?;
        Some(match &command.action {
            Action::Compact => Invocation::Compact,
            Action::Prompt {
                body,
                takes_arguments: true,
            } => Invocation::Prompt(body.replace("$ARGUMENTS", arguments)),
            Action::Prompt { body, .. } if arguments.is_empty() => Invocation::Prompt(body.clone()),
            Action::Prompt { body, .. } => {
                Invocation::Prompt(format!("{}\n\n{arguments}", body.trim_end()))
            }
        })
    }
}

impl Commands {
    /// What to answer when `text` names a command there is not (`/deploy`, a typo of
    /// `/compact`): the name and the commands there are. A prompt that only starts with a
    /// slash (`/usr/bin/python fails`) names no command.
    pub fn unknown(&self, text: &str) -> Option<String> {
        let rest = text.trim_start().strip_prefix('/')?;
        let name = rest.split(char::is_whitespace).next().unwrap_or_default();
        if !is_command_name(name) || self.list.iter().any(|c| c.name == name) {
            return None;
        }
        let known: Vec<String> = self.list.iter().map(|c| format!("/{}", c.name)).collect();
        Some(format!(
            "there is no command /{name}; the commands here are {}",
            known.join(", ")
        ))
    }
}

/// Letters, digits, `-` and `_`, at most 64: what a command file may be named.
fn is_command_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn built_in() -> Vec<Command> {
    vec![
        Command {
            name: "compact".into(),
            description:
                "Summarise the conversation so far, so the model continues from the summary".into(),
            action: Action::Compact,
        },
        Command {
            name: "init".into(),
            description: "Write or update AGENTS.md for this project".into(),
            action: Action::Prompt {
                body: INIT_PROMPT.into(),
                takes_arguments: false,
            },
        },
    ]
}

/// The commands of one directory, by name.
fn read_dir(dir: &Path, warnings: &mut Vec<String>) -> Vec<Command> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| match read_command(&path) {
            Ok(command) => Some(command),
            Err(why) => {
                warnings.push(format!("command {} skipped: {why}", path.display()));
                None
            }
        })
        .collect()
}

fn read_command(path: &Path) -> Result<Command, String> {
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|n| is_command_name(n))
        .ok_or("its name may hold only letters, digits, - and _ (at most 64)")?
        .to_owned();
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_COMMAND_BYTES {
        return Err(format!("it is larger than {MAX_COMMAND_BYTES} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8".to_owned())?;
    let (description, body) = split_front_matter(&text);
    if body.trim().is_empty() {
        return Err("it is empty".into());
    }
    let description = description
        .or_else(|| {
            body.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_owned)
        })
        .map(|d| d.trim_start_matches('#').trim().chars().take(80).collect())
        .unwrap_or_default();
    Ok(Command {
        name,
        description,
        action: Action::Prompt {
            takes_arguments: body.contains("$ARGUMENTS"),
            body: body.to_owned(),
        },
    })
}

/// `---`-fenced front matter's `description:`, and the body after it.
fn split_front_matter(text: &str) -> (Option<String>, &str) {
    let Some(rest) = text.strip_prefix("---\n") else {
        return (None, text);
    };
    let Some(end) = rest.find("\n---") else {
        return (None, text);
    };
    let description = rest[..end]
        .lines()
        .find_map(|l| l.strip_prefix("description:"))
        .map(|d| d.trim().trim_matches('"').to_owned());
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']);
    (description, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn project_commands_win_over_the_user_s_and_nobody_replaces_a_built_in() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        let deep = project.join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        let user = root.path().join("user");
        write(
            &project.join(".dsh/commands"),
            "review.md",
            "---\ndescription: Review the diff\n---\nReview $ARGUMENTS carefully.\n",
        );
        write(
            &project.join(".dsh/commands"),
            "compact.md",
            "not the built-in",
        );
        write(&user, "review.md", "the user's review");
        write(
            &user,
            "standup.md",
            "# Write my standup\nSummarise today's commits.",
        );
        write(&user, "bad name.md", "x");
        write(&user, "binary.md", "");
        std::fs::write(user.join("latin1.md"), [0xff, 0xfe]).unwrap();
        let (commands, warnings) = Commands::discover(&deep, Some(&user));
        let names: Vec<&str> = commands.list().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["compact", "init", "review", "standup"]);
        assert_eq!(commands.list()[2].description, "Review the diff");
        assert_eq!(commands.list()[3].description, "Write my standup");
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(
            warnings.iter().any(|w| w.contains("bad name.md")),
            "{warnings:?}"
        );

        assert_eq!(commands.invoke("/compact"), Some(Invocation::Compact));
        assert_eq!(
            commands.invoke("/review src/lib.rs and tests"),
            Some(Invocation::Prompt(
                "Review src/lib.rs and tests carefully.\n".into()
            ))
        );
        assert_eq!(
            commands.invoke("/standup for Friday"),
            Some(Invocation::Prompt(
                "# Write my standup\nSummarise today's commits.\n\nfor Friday".into()
            ))
        );
        assert_eq!(
            commands.invoke("/init"),
            Some(Invocation::Prompt(INIT_PROMPT.into()))
        );
        assert_eq!(commands.invoke("/usr/bin is missing"), None);
        assert_eq!(commands.invoke("compact"), None);
    }

    #[test]
    fn an_unknown_command_is_answered_with_those_there_are_and_a_path_is_no_command() {
        let root = tempfile::tempdir().unwrap();
        let (commands, _) = Commands::discover(root.path(), None);
        let said = commands.unknown("/deploy now").unwrap();
        assert!(said.starts_with("there is no command /deploy;"), "{said}");
        assert!(
            said.contains("/compact") && said.contains("/init"),
            "{said}"
        );
        assert_eq!(commands.unknown("/compact"), None);
        assert_eq!(commands.unknown("/usr/bin/python fails"), None);
        assert_eq!(commands.unknown("fix /deploy"), None);
    }
}
