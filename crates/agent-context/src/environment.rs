//! The environment block: where the session is and what it runs on, at day precision.

use dsh_agent::record::{Environment, GitState};
use dsh_agent::{Audience, ContextRequest};

use crate::config::Today;

/// The date `today` names, `YYYY-MM-DD`.
pub(crate) fn date(today: &Today) -> String {
    match today {
        Today::Fixed(date) => date.clone(),
        Today::Local => jiff::Zoned::now().date().to_string(),
    }
}

/// The environment of `request`.
pub(crate) fn environment(
    request: &ContextRequest,
    git: Option<GitState>,
    shell: &str,
    date: String,
) -> Environment {
    Environment {
        cwd: request.cwd.display().to_string(),
        git,
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        shell: shell.to_owned(),
        date,
        model: request.model.clone(),
        audience: request.audience,
        tools: request.tools.iter().map(|t| t.name.clone()).collect(),
    }
}

/// The block as the model reads it.
pub(crate) fn render(env: &Environment) -> String {
    let mut lines = vec![format!("- Working directory: {}", env.cwd)];
    lines.push(match &env.git {
        None => "- Git: not a git repository".to_owned(),
        Some(git) => {
            let mut line = format!("- Git: repository at {}", git.root);
            if let Some(head) = &git.head {
                line.push_str(&format!(", {}", branch_words(head)));
            }
            match git.dirty {
                Some(true) => line.push_str(", with uncommitted changes"),
                Some(false) => line.push_str(", clean"),
                None => {}
            }
            line
        }
    });
    lines.push(format!("- Platform: {} {}", env.os, env.arch));
    lines.push(format!("- Shell: {}", env.shell));
    lines.push(format!("- Date: {}", env.date));
    if !env.model.is_empty() {
        lines.push(format!("- Model: {}", env.model));
    }
    lines.push(format!(
        "- Interface: {}",
        match env.audience {
            Audience::Terminal => "terminal (dsh run)",
            Audience::Editor => "editor (ACP)",
        }
    ));
    if !env.tools.is_empty() {
        lines.push(format!("- Tools: {}", env.tools.join(", ")));
    }
    format!("# Environment\n\n{}", lines.join("\n"))
}

fn branch_words(head: &str) -> String {
    if head.starts_with("detached at ") {
        head.to_owned()
    } else {
        format!("branch {head}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_date_has_day_precision() {
        let today = date(&Today::Local);
        assert_eq!(today.len(), 10, "{today}");
        assert_eq!(today.as_bytes()[4], b'-');
        assert_eq!(date(&Today::Fixed("2026-12-04".into())), "2026-12-04");
    }
}
