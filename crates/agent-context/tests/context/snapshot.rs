//! The built-in prompt and environment block as the model reads them, for a fixed
//! environment: every change to the text is reviewed as a snapshot change.

use dsh_agent::{Audience, ContextRequest, ToolBrief};

use super::{build_with, config};

#[tokio::test]
async fn the_builtin_prompt_with_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = ContextRequest::new(dir.path());
    request.model = "deepseek-chat".into();
    request.audience = Audience::Terminal;
    request.tools = ["bash", "bash_kill", "bash_output"]
        .into_iter()
        .map(|name| ToolBrief {
            name: name.into(),
            // The bash tool's own guidance file, as `dsh-tool-bash` ships it.
            guidance: (name == "bash").then(|| {
                include_str!("../../../tool-bash/prompts/bash.md")
                    .trim_end()
                    .to_owned()
            }),
        })
        .collect();
    let record = build_with(config(), request).await;
    let cwd = dir.path().display().to_string();
    insta::with_settings!({filters => vec![
        (regex_escape(&cwd).as_str(), "[CWD]"),
        (r"Platform: \S+ \S+", "Platform: [OS] [ARCH]"),
    ]}, {
        insta::assert_snapshot!(record.text);
    });
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}
