//! `@path`: completing a path under the project, and attaching the files a prompt names
//! the way an editor's @-mention embeds them (a text resource under its `file://` URI).
//!
//! The project's files are listed once, in the background, with ripgrep's `ignore` walker:
//! `.gitignore` and hidden files are honoured, so `target/` and `.git/` are never offered.

use std::path::{Path, PathBuf};

use dsh_agent::UserMessage;

/// The most paths listed: a huge tree is completed from its first ones.
const LISTED: usize = 20_000;
/// The largest file attached whole.
const ATTACHED_BYTES: u64 = 256 * 1024;

/// The `@word` the cursor is in or just after: its first character's index in `line` and
/// the text after `@`.
pub fn at_word(line: &str, col: usize) -> Option<(usize, String)> {
    let before: Vec<char> = line.chars().take(col).collect();
    let start = before
        .iter()
        .rposition(|c| c.is_whitespace())
        .map_or(0, |i| i + 1);
    let word: String = before[start..].iter().collect();
    let rest = word.strip_prefix('@')?;
    Some((start, rest.to_owned()))
}

/// The project's files under `root`, relative, sorted.
pub fn list_files(root: &Path) -> Vec<String> {
    let mut files: Vec<String> = ignore::WalkBuilder::new(root)
        .require_git(false)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(root).ok()?;
            relative.to_str().map(str::to_owned)
        })
        .take(LISTED)
        .collect();
    files.sort();
    files
}

/// What attaching a prompt's `@path`s gave: the message, and what to tell the user about
/// paths that were not attached.
pub struct Attached {
    /// The message: the prompt, then each file embedded.
    pub message: UserMessage,
    /// The files attached, as the prompt named them.
    pub files: Vec<String>,
    /// Why a named file was left out (safe text).
    pub skipped: Vec<String>,
}

/// The prompt `text` as a message with every `@path` that names a file under `root`
/// embedded; a word that names no file (an email address, `@team`) stays text.
pub fn attach(text: &str, root: &Path) -> Attached {
    let mut message = UserMessage::user(text);
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for word in text.split_whitespace() {
        let Some(name) = word.strip_prefix('@').filter(|n| !n.is_empty()) else {
            continue;
        };
        let Some(path) = inside(root, name) else {
            continue;
        };
        if files.iter().any(|f| f == name) {
            continue;
        }
        match read(&path) {
            Ok(body) => {
                let uri = format!("file://{}", path.display());
                message.embed(&uri, &body);
                files.push(name.to_owned());
            }
            Err(why) => skipped.push(format!(
                "@{} was not attached: {why}",
                dsh_tools::safe_text::SafeText::plain(name)
            )),
        }
    }
    Attached {
        message,
        files,
        skipped,
    }
}

/// `name` as a file under `root`; `None` when it is no file there (or leaves the project).
fn inside(root: &Path, name: &str) -> Option<PathBuf> {
    let root = root.canonicalize().ok()?;
    let path = root.join(name).canonicalize().ok()?;
    (path.starts_with(&root) && path.is_file()).then_some(path)
}

fn read(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > ATTACHED_BYTES {
        return Err(format!(
            "it has {size} bytes, more than the {ATTACHED_BYTES} a prompt attaches"
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_at_the_cursor_is_found() {
        assert_eq!(at_word("see @src/ma", 11), Some((4, "src/ma".into())));
        assert_eq!(at_word("see @src/ma now", 8), Some((4, "src".into())));
        assert_eq!(at_word("mail a@b", 8), None);
        assert_eq!(at_word("@", 1), Some((0, String::new())));
    }

    #[test]
    fn named_files_are_embedded_and_others_left_as_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(dir.path().join("bin"), [0xff, 0xfe]).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "ignored/\n").unwrap();
        std::fs::create_dir(dir.path().join("ignored")).unwrap();
        std::fs::write(dir.path().join("ignored/x"), "x").unwrap();
        let attached = attach(
            "explain @src/a.rs to @team, not @bin or @../etc",
            dir.path(),
        );
        assert_eq!(attached.files, ["src/a.rs"]);
        assert_eq!(attached.message.resources.len(), 1);
        assert!(
            attached
                .message
                .text
                .starts_with("explain @src/a.rs to @team")
        );
        assert!(
            attached
                .message
                .text
                .ends_with("src/a.rs\n```\nfn a() {}\n```"),
            "{}",
            attached.message.text
        );
        assert_eq!(
            attached.skipped,
            ["@bin was not attached: it is not UTF-8 text"]
        );
        let listed = list_files(dir.path());
        assert!(listed.contains(&"src/a.rs".to_owned()), "{listed:?}");
        assert!(
            !listed.iter().any(|f| f.starts_with("ignored")),
            "{listed:?}"
        );
    }
}
