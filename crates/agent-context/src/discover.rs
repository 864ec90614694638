//! Instruction files: which are read, in which order, and how the shared budget cuts them.
//!
//! The user's own file comes first, then one file per directory from the git root (or the
//! cwd when there is no git) down to the cwd, outermost first: `AGENTS.md`, or `CLAUDE.md`
//! where a directory has no `AGENTS.md`. A deeper file refines the ones above it, so it comes
//! later, where the model weighs it more.

use std::path::{Path, PathBuf};

use dsh_agent::record::{InstructionSource, SourceKind};

use crate::source::{describe, read_bounded};

/// One instruction file's part of the text.
pub(crate) struct Section {
    pub(crate) path: String,
    pub(crate) kind: SourceKind,
    /// What is sent: the file, or its head followed by a cut note, or only a note.
    pub(crate) body: String,
}

/// The instruction files found, as sections, sources and warnings.
#[derive(Default)]
pub(crate) struct Found {
    pub(crate) sections: Vec<Section>,
    pub(crate) sources: Vec<InstructionSource>,
    pub(crate) warnings: Vec<String>,
}

/// The candidate files, in the order they are read.
pub(crate) fn candidates(
    user: Option<&Path>,
    project: bool,
    root: &Path,
    cwd: &Path,
) -> Vec<(SourceKind, PathBuf)> {
    let mut files = Vec::new();
    if let Some(user) = user
        && user.is_file()
    {
        files.push((SourceKind::User, user.to_path_buf()));
    }
    if !project {
        return files;
    }
    let mut dirs = vec![root.to_path_buf()];
    if let Ok(below) = cwd.strip_prefix(root) {
        let mut dir = root.to_path_buf();
        for part in below.components() {
            dir.push(part);
            dirs.push(dir.clone());
        }
    }
    for dir in dirs {
        let agents = dir.join("AGENTS.md");
        let claude = dir.join("CLAUDE.md");
        if agents.is_file() {
            files.push((SourceKind::Project, agents));
        } else if claude.is_file() {
            files.push((SourceKind::Project, claude));
        }
    }
    files
}

/// Reads `files` within `limit` bytes of instructions in all.
pub(crate) fn read(files: Vec<(SourceKind, PathBuf)>, limit: usize) -> Found {
    let mut found = Found::default();
    let mut left = limit;
    for (kind, path) in files {
        let shown = path.display().to_string();
        let head = match read_bounded(&path) {
            Ok(head) => head,
            Err(err) => {
                found
                    .warnings
                    .push(format!("{shown} was skipped: it could not be read ({err})"));
                continue;
            }
        };
        let mut source = describe(kind, &shown, &head.bytes, head.len);
        let text = match std::str::from_utf8(&head.bytes) {
            Ok(text) => text,
            // A file over the read limit may end inside a character.
            Err(err) if head.len > head.bytes.len() as u64 && err.error_len().is_none() => {
                std::str::from_utf8(&head.bytes[..err.valid_up_to()]).unwrap_or_default()
            }
            Err(_) => {
                source.skipped = Some("not UTF-8".to_owned());
                found.sources.push(source);
                found
                    .warnings
                    .push(format!("{shown} was skipped: it is not UTF-8 text"));
                continue;
            }
        };
        let text = text.trim_end();
        let whole = head.len as usize;
        let body = if text.len() <= left {
            left -= text.len();
            text.to_owned()
        } else if left == 0 {
            source.skipped = Some(format!("over the {} KiB limit", limit / 1024));
            found.warnings.push(format!(
                "{shown} was not sent: instruction files are limited to {} KiB in all",
                limit / 1024
            ));
            format!(
                "[dsh: this file ({whole} bytes) was not sent: instruction files are limited to {} KiB in all]",
                limit / 1024
            )
        } else {
            let kept = cut(text, left);
            left = 0;
            source.truncated = true;
            found.warnings.push(format!(
                "{shown} was cut to its first {} of {whole} bytes: instruction files are limited to {} KiB in all",
                kept.len(),
                limit / 1024
            ));
            format!(
                "{}\n\n[dsh: the rest of this file was cut here: instruction files are limited to {} KiB in all]",
                kept.trim_end(),
                limit / 1024
            )
        };
        found.sources.push(source);
        found.sections.push(Section {
            path: shown,
            kind,
            body,
        });
    }
    found
}

/// The longest head of `text` of at most `budget` bytes that ends at a line end (or at a
/// character boundary when its first line alone is longer).
fn cut(text: &str, budget: usize) -> &str {
    let mut end = budget.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    match head.rfind('\n') {
        Some(line_end) if line_end > 0 => &head[..line_end],
        _ => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_ends_at_a_line_or_a_character_boundary() {
        assert_eq!(cut("one\ntwo\nthree", 9), "one\ntwo");
        assert_eq!(cut("ééé", 3), "é");
        assert_eq!(cut("short", 99), "short");
    }

    #[test]
    fn each_directory_contributes_agents_md_or_else_claude_md() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let deep = root.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "shadowed").unwrap();
        std::fs::write(root.join("a/CLAUDE.md"), "fallback").unwrap();
        std::fs::write(deep.join("AGENTS.md"), "deep").unwrap();
        let files = candidates(None, true, root, &deep);
        let names: Vec<_> = files
            .iter()
            .map(|(_, p)| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["AGENTS.md", "a/CLAUDE.md", "a/b/AGENTS.md"]);
        assert!(candidates(None, false, root, &deep).is_empty());
    }
}
