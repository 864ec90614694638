//! Named agent definitions: Markdown files with a `---`-fenced front matter (`name`,
//! `description`, `tools`, `model`) whose body is added to the child's system prompt. They
//! are read from `.dsh/agents/` of the project (the nearest such directory from the
//! session's directory up) and from the user's `agents` directory; a project's definition
//! wins over the user's of the same name. The format is Claude Code's, so a team's existing
//! definitions work unchanged (its tool names, `Read` or `Bash`, match dsh's whatever their
//! case).
//!
//! Four plain keys need no YAML parser: a line `key: value`, and for `tools` a list written
//! `a, b` or `[a, b]`. A file that cannot be a definition (an unusable name, not UTF-8, too
//! large, no body) is skipped with a warning naming it.

use std::path::{Path, PathBuf};

/// The largest definition file read.
pub const MAX_DEFINITION_BYTES: u64 = 64 * 1024;

/// One agent definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    /// What the model names it by.
    pub name: String,
    /// One line: what it is for.
    pub description: String,
    /// The only tools it gets (of its caller's), when it names some.
    pub tools: Option<Vec<String>>,
    /// The model it runs on, when not its caller's.
    pub model: Option<String>,
    /// Added to its system prompt.
    pub prompt: String,
}

/// The definitions seen from `cwd` (the project's first, then the user's), and a warning
/// for each file skipped.
pub fn discover(cwd: &Path, user_dir: Option<&Path>) -> (Vec<Definition>, Vec<String>) {
    let mut found: Vec<Definition> = Vec::new();
    let mut warnings = Vec::new();
    let project = cwd
        .ancestors()
        .map(|dir| dir.join(".dsh").join("agents"))
        .find(|dir| dir.is_dir());
    for dir in project.iter().map(PathBuf::as_path).chain(user_dir) {
        for definition in read_dir(dir, &mut warnings) {
            if !found.iter().any(|d| d.name == definition.name) {
                found.push(definition);
            }
        }
    }
    (found, warnings)
}

fn read_dir(dir: &Path, warnings: &mut Vec<String>) -> Vec<Definition> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|path| match read(path) {
            Ok(definition) => Some(definition),
            Err(why) => {
                warnings.push(format!(
                    "the agent definition {} was skipped: {why}",
                    path.display()
                ));
                None
            }
        })
        .collect()
}

fn read(path: &Path) -> Result<Definition, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_DEFINITION_BYTES {
        return Err(format!("it is larger than {MAX_DEFINITION_BYTES} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8".to_owned())?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    parse(stem, &text)
}

/// The definition in `text`, named `stem` unless its front matter names it.
pub fn parse(stem: &str, text: &str) -> Result<Definition, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = split(text);
    let value = |key: &str| {
        front.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key).then(|| unquote(v.trim()).to_owned())
        })
    };
    let name = value("name")
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| stem.to_owned());
    if !is_name(&name) {
        return Err(format!(
            "its name {name:?} may hold only letters, digits, - and _ (at most 64)"
        ));
    }
    if body.trim().is_empty() {
        return Err("it has no instructions after its front matter".into());
    }
    let tools = value("tools").map(|list| {
        list.trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .map(|t| unquote(t.trim()).to_owned())
            .filter(|t| !t.is_empty())
            .collect()
    });
    Ok(Definition {
        name,
        description: value("description").unwrap_or_default(),
        tools,
        model: value("model").filter(|m| !m.is_empty() && m != "inherit"),
        prompt: body.trim().to_owned(),
    })
}

/// The front matter and the body after it (no front matter: all is body).
fn split(text: &str) -> (&str, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return ("", text);
    };
    match rest.find("\n---") {
        Some(end) => {
            let after = &rest[end + 4..];
            // The fence's own line ends here.
            let body = after.split_once('\n').map_or("", |(_, body)| body);
            (&rest[..end], body)
        }
        None => ("", text),
    }
}

fn unquote(value: &str) -> &str {
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(value)
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_definition_reads_as_it_is_written() {
        let text = "---\nname: code-reviewer\ndescription: \"Reviews a diff\"\ntools: Read, Grep, Glob\nmodel: inherit\n---\nYou review code.\n";
        let definition = parse("file", text).unwrap();
        assert_eq!(definition.name, "code-reviewer");
        assert_eq!(definition.description, "Reviews a diff");
        assert_eq!(
            definition.tools.as_deref(),
            Some(&["Read".to_owned(), "Grep".into(), "Glob".into()][..])
        );
        assert_eq!(definition.model, None, "inherit is the caller's model");
        assert_eq!(definition.prompt, "You review code.");
        let listed = parse("x", "---\ntools: [read, 'bash']\nmodel: fast\n---\nGo.").unwrap();
        assert_eq!(
            (listed.name.as_str(), listed.model.as_deref()),
            ("x", Some("fast"))
        );
        assert_eq!(listed.tools.unwrap(), ["read", "bash"]);
    }

    #[test]
    fn an_unusable_definition_is_refused_with_its_reason() {
        assert!(parse("a b", "text").unwrap_err().contains("may hold only"));
        assert!(
            parse("ok", "---\nname: x\n---\n  \n")
                .unwrap_err()
                .contains("no instructions")
        );
        // No front matter: the file's name, and all of it is the prompt.
        assert_eq!(parse("plain", "Just do it.").unwrap().prompt, "Just do it.");
    }

    #[test]
    fn the_project_s_definitions_win_over_the_user_s_and_bad_files_are_named() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("p");
        let deep = project.join("src");
        std::fs::create_dir_all(&deep).unwrap();
        let agents = project.join(".dsh/agents");
        std::fs::create_dir_all(&agents).unwrap();
        let user = root.path().join("user");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(
            agents.join("review.md"),
            "---\ndescription: project's\n---\nP",
        )
        .unwrap();
        std::fs::write(user.join("review.md"), "---\ndescription: user's\n---\nU").unwrap();
        std::fs::write(user.join("docs.md"), "---\ndescription: docs\n---\nD").unwrap();
        std::fs::write(user.join("bad name.md"), "x").unwrap();
        std::fs::write(user.join("binary.md"), [0xff, 0xfe]).unwrap();
        let (found, warnings) = discover(&deep, Some(&user));
        let names: Vec<(&str, &str)> = found
            .iter()
            .map(|d| (d.name.as_str(), d.description.as_str()))
            .collect();
        assert_eq!(names, [("review", "project's"), ("docs", "docs")]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("bad name.md")));
    }
}
