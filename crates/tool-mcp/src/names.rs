//! The names a model sees: `<server>__<tool>`, made acceptable to OpenAI-compatible APIs.

/// The longest tool name the APIs accept.
const MAX: usize = 64;

fn clean(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The model-facing names of `server`'s `tools`, in their order: `<server>__<tool>` with
/// every character outside `A-Za-z0-9_-` replaced by `_`, cut to 64 characters; a name
/// already taken (by an earlier tool, or in `taken`) gets `_2`, `_3`, … within the limit.
pub fn tool_names(server: &str, tools: &[String], taken: &[String]) -> Vec<String> {
    let mut used: std::collections::HashSet<String> = taken.iter().cloned().collect();
    let prefix = clean(server);
    tools
        .iter()
        .map(|tool| {
            let full = format!("{prefix}__{}", clean(tool));
            let base: String = full.chars().take(MAX).collect();
            let mut name = base.clone();
            let mut n = 2u32;
            while used.contains(&name) {
                let suffix = format!("_{n}");
                let keep = MAX - suffix.len();
                name = format!("{}{suffix}", base.chars().take(keep).collect::<String>());
                n += 1;
            }
            used.insert(name.clone());
            name
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_cleaned_cut_and_unique() {
        let long = "x".repeat(80);
        let tools: Vec<String> = [
            "echo",
            "get sum",
            "a.b/c",
            long.as_str(),
            long.as_str(),
            "echo",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let names = tool_names("every thing", &tools, &["every_thing__a_b_c".to_owned()]);
        assert_eq!(names[0], "every_thing__echo");
        assert_eq!(names[1], "every_thing__get_sum");
        assert_eq!(names[2], "every_thing__a_b_c_2");
        assert_eq!(names[3].len(), 64);
        assert!(
            names[4].ends_with("_2") && names[4].len() == 64,
            "{}",
            names[4]
        );
        assert_eq!(names[5], "every_thing__echo_2");
        assert!(names.iter().all(|n| dsh_tools::valid_tool_name(n)));
        // The same input gives the same names.
        assert_eq!(
            names,
            tool_names("every thing", &tools, &["every_thing__a_b_c".to_owned()])
        );
    }
}
