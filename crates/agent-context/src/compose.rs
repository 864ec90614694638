//! The system message, part by part: the base prompt, the environment block, the instruction
//! files, the caller's appended text. Pure: everything read from disk arrives as arguments.

use dsh_agent::record::{Environment, SourceKind};

use crate::discover::Section;
use crate::environment::render;

/// The parts of one system message.
pub(crate) struct Parts<'a> {
    /// The built-in prompt, the prompt file or the caller's replacement.
    pub(crate) base: &'a str,
    pub(crate) environment: &'a Environment,
    pub(crate) sections: &'a [Section],
    /// The caller's appended text.
    pub(crate) appended: Option<&'a str>,
}

/// The whole text, with one blank line between parts.
pub(crate) fn compose(parts: &Parts<'_>) -> String {
    let mut text = parts.base.trim_end().to_owned();
    text.push_str("\n\n");
    text.push_str(&render(parts.environment));
    if !parts.sections.is_empty() {
        text.push_str(
            "\n\n# Instructions\n\nThese come from the user's and the project's instruction files, outermost first: a file deeper in the tree refines the ones above it.",
        );
        for section in parts.sections {
            let whose = match section.kind {
                SourceKind::User => " (the user's own)",
                SourceKind::Project
                | SourceKind::Builtin
                | SourceKind::PromptFile
                | SourceKind::Caller => "",
            };
            text.push_str(&format!(
                "\n\n## {}{whose}\n\n{}",
                section.path, section.body
            ));
        }
    }
    if let Some(appended) = parts.appended.map(str::trim_end).filter(|t| !t.is_empty()) {
        text.push_str("\n\n# Additional instructions\n\n");
        text.push_str(appended);
    }
    text.push('\n');
    text
}
