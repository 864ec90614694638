//! The built-in prompt: one text file, one sentence that depends on who reads the answers,
//! and the guidance of the tools that are registered.

use dsh_agent::{Audience, ToolBrief};

/// The built-in system prompt as shipped, before its audience sentence is filled in.
pub const BUILTIN_PROMPT: &str = include_str!("../prompts/system.md");

const AUDIENCE_SLOT: &str = "{{audience}}";

fn audience_sentence(audience: Audience) -> &'static str {
    match audience {
        Audience::Terminal => {
            "Your answers are read in a terminal: write plain text with short paragraphs; no Markdown tables or headings."
        }
        Audience::Editor => {
            "Your answers are read in the user's editor, which renders Markdown: use fenced code blocks and lists where they help."
        }
    }
}

/// The built-in prompt for `audience`, with a Tools section holding the guidance of each tool
/// in `tools` that has some (none when no tool has).
pub(crate) fn builtin(audience: Audience, tools: &[ToolBrief]) -> String {
    let mut text = BUILTIN_PROMPT
        .trim_end()
        .replace(AUDIENCE_SLOT, audience_sentence(audience));
    let guidance: Vec<&str> = tools
        .iter()
        .filter_map(|tool| tool.guidance.as_deref())
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .collect();
    if !guidance.is_empty() {
        text.push_str("\n\n# Tools\n");
        for paragraph in guidance {
            text.push('\n');
            text.push_str(paragraph);
            text.push('\n');
        }
    }
    text.truncate(text.trim_end().len());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_audience_changes_one_sentence_and_tools_bring_their_guidance() {
        let terminal = builtin(Audience::Terminal, &[]);
        let editor = builtin(Audience::Editor, &[]);
        assert!(!terminal.contains(AUDIENCE_SLOT) && !editor.contains(AUDIENCE_SLOT));
        let differing: Vec<_> = terminal
            .lines()
            .zip(editor.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(differing.len(), 1, "{differing:?}");
        assert!(!terminal.contains("# Tools"), "no tool, no Tools section");
        let tools = [
            ToolBrief {
                name: "quiet".into(),
                guidance: None,
            },
            ToolBrief {
                name: "loud".into(),
                guidance: Some("Use `loud` to shout.\n".into()),
            },
        ];
        let with = builtin(Audience::Terminal, &tools);
        assert!(with.ends_with("# Tools\n\nUse `loud` to shout."), "{with}");
    }

    #[test]
    fn the_builtin_prompt_stays_well_under_two_thousand_tokens() {
        // About four bytes a token for English prose: 4,000 bytes is about 1,000 tokens.
        assert!(
            BUILTIN_PROMPT.len() < 4_000,
            "{} bytes",
            BUILTIN_PROMPT.len()
        );
    }

    #[test]
    fn the_builtin_prompt_names_no_path_a_model_could_take_for_the_project_s() {
        // A weak model took an example path (`src/main.rs:42`) for a file of the project it
        // worked in, three tasks out of six: examples stay placeholders.
        for word in BUILTIN_PROMPT.split(|c: char| c.is_whitespace() || c == '`') {
            let word = word.trim_matches(|c: char| ",.;:()".contains(c));
            let looks_like_a_file = word.contains('/')
                || [".rs", ".py", ".js", ".ts", ".go", ".md", ".toml"]
                    .iter()
                    .any(|ext| word.contains(ext));
            assert!(!looks_like_a_file, "the prompt names {word:?}");
        }
    }
}
