//! The front ends only map the turn view: none names a built-in tool. How a call looks is
//! the tool's to say (`dsh_tools::ToolCallView`), so a front end that special-cases `bash`
//! or `todo` by name is one that a new tool, an MCP tool or a child agent's card breaks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// The crates that show sessions to people and clients.
const FRONT_ENDS: [&str; 2] = ["crates/cli/src", "crates/acp/src"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The built-in tools' names, as each tool crate declares them (`fn name(&self) -> String`).
fn tool_names() -> Vec<String> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("tool-") {
            rust_files(&entry.path().join("src"), &mut files);
        }
    }
    let mut names = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("fn name(&self) -> String {") {
            rest = &rest[at..];
            let quoted = rest.split('"').nth(1).unwrap();
            names.push(quoted.to_owned());
            rest = &rest[1..];
        }
    }
    names.sort();
    names
}

/// The code of `file` that ships: everything before its first inline test module, none of
/// a file that is a test module.
fn shipped(file: &Path) -> String {
    let name = file.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name == "props.rs" {
        return String::new();
    }
    let text = std::fs::read_to_string(file).unwrap();
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]\nmod ") {
        let start = from + at;
        let line_end = text[start..]
            .match_indices('\n')
            .nth(1)
            .map_or(text.len(), |(i, _)| start + i);
        if text[start..line_end].trim_end().ends_with('{') {
            return text[..start].to_owned();
        }
        from = line_end;
    }
    text
}

#[test]
fn no_front_end_names_a_tool() {
    let names = tool_names();
    for expected in ["bash", "bash_output", "edit", "read", "todo", "write"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not found in {names:?}"
        );
    }
    let mut hits = Vec::new();
    for dir in FRONT_ENDS {
        let mut files = Vec::new();
        rust_files(&root().join(dir), &mut files);
        for file in files {
            let code = shipped(&file);
            for (number, line) in code.lines().enumerate() {
                for name in &names {
                    if line.contains(&format!("\"{name}\"")) {
                        hits.push(format!(
                            "{}:{}: {}",
                            file.display(),
                            number + 1,
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "front ends naming tools:\n{}",
        hits.join("\n")
    );
}
