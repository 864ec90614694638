//! `dsh permissions`: the "always" answers remembered for this project (or every project's),
//! and `dsh permissions rm` to forget one. The rules of the configuration are `dsh config`'s.

use dsh_tools::safe_text::SafeText;

use crate::args::{Global, PermissionsCommand};
use crate::exit::Failure;
use crate::remembered::{RuleFile, project_of};
use crate::settings::{CommandFlags, Settings};

/// Runs `dsh permissions …`; returns the exit status.
pub fn permissions(
    global: &Global,
    command: Option<&PermissionsCommand>,
    all: bool,
    json: bool,
) -> u8 {
    crate::exit::status(run(global, command, all, json))
}

fn run(
    global: &Global,
    command: Option<&PermissionsCommand>,
    all: bool,
    json: bool,
) -> Result<(), Failure> {
    let settings = Settings::resolve(global, CommandFlags::default())?;
    let file = RuleFile::new(&settings.data_dir.value);
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::internal(format!("the current directory is unknown: {e}")))?;
    let project = project_of(&cwd);
    match command {
        Some(PermissionsCommand::Rm { rule }) => forget(&file, &project, rule),
        None => {
            let shown = match all {
                true => file.all(),
                false => vec![(
                    project.to_string_lossy().into_owned(),
                    file.of_project(&project),
                )],
            };
            list(&shown, json);
            Ok(())
        }
    }
}

/// Forgets a rule of `project`: its number in the list, or its text.
fn forget(file: &RuleFile, project: &std::path::Path, which: &str) -> Result<(), Failure> {
    let rules = file.of_project(project);
    let rule = match which.parse::<usize>() {
        Ok(n) if (1..=rules.len()).contains(&n) => rules[n - 1].clone(),
        Ok(_) | Err(_) => rules
            .iter()
            .find(|rule| *rule == which)
            .cloned()
            .ok_or_else(|| {
                Failure::usage(format!(
                    "no remembered rule {} for {}; see `dsh permissions`",
                    SafeText::plain(which),
                    project.display()
                ))
            })?,
    };
    file.forget(project, &rule).map_err(Failure::internal)?;
    say(&format!("forgot {}\n", SafeText::plain(&rule)));
    Ok(())
}

fn list(projects: &[(String, Vec<String>)], json: bool) {
    if json {
        let value: serde_json::Map<String, serde_json::Value> = projects
            .iter()
            .map(|(project, rules)| (project.clone(), serde_json::json!(rules)))
            .collect();
        say(&format!("{}\n", serde_json::Value::Object(value)));
        return;
    }
    for (project, rules) in projects {
        let project = SafeText::plain(project);
        if rules.is_empty() {
            say(&format!("no \"always\" answers remembered for {project}\n"));
            continue;
        }
        say(&format!("\"always\" answers remembered for {project}:\n"));
        for (n, rule) in rules.iter().enumerate() {
            say(&format!("{:>4}  {}\n", n + 1, SafeText::plain(rule)));
        }
    }
    if projects.iter().any(|(_, rules)| !rules.is_empty()) {
        say("forget one with `dsh permissions rm N`\n");
    }
}

fn say(text: &str) {
    let _ = crate::output::write(text.as_bytes());
}
