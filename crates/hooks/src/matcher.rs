//! Which handlers an event runs: a matcher group's pattern over the event's subject (a tool's
//! name, in Claude Code's naming and in dsh's).

use regex::Regex;

/// A matcher group's pattern. `*`, an empty one, or none matches every subject; any other is a
/// regular expression that must match the whole subject (`Edit|Write`, `mcp__github__.*`).
#[derive(Clone, Debug)]
pub struct Matcher(Option<Regex>);

/// A pattern that is not a regular expression.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the matcher `{pattern}` is not a regular expression: {reason}")]
pub struct BadMatcher {
    /// The pattern as written.
    pub pattern: String,
    /// Why.
    pub reason: String,
}

impl Matcher {
    /// The matcher of `pattern`.
    pub fn new(pattern: Option<&str>) -> Result<Matcher, BadMatcher> {
        let pattern = pattern.map(str::trim).unwrap_or_default();
        if pattern.is_empty() || pattern == "*" {
            return Ok(Matcher(None));
        }
        // Whole-subject matching: `Edit` is not to match `NotebookEdit`.
        Regex::new(&format!("^(?:{pattern})$"))
            .map(|regex| Matcher(Some(regex)))
            .map_err(|e| BadMatcher {
                pattern: pattern.to_owned(),
                reason: e.to_string(),
            })
    }

    /// Whether it matches any of `subjects` (a tool's Claude Code name and its dsh name); an
    /// event without a subject is matched by every pattern.
    pub fn matches(&self, subjects: &[&str]) -> bool {
        match &self.0 {
            None => true,
            Some(_) if subjects.is_empty() => true,
            Some(regex) => subjects.iter().any(|s| regex.is_match(s)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_names_in_either_naming() {
        let all = Matcher::new(Some("*")).unwrap();
        assert!(all.matches(&["Bash", "bash"]));
        assert!(Matcher::new(None).unwrap().matches(&["x"]));
        let edits = Matcher::new(Some("Edit|Write")).unwrap();
        assert!(edits.matches(&["Write", "write"]));
        assert!(!edits.matches(&["NotebookEdit"]));
        let native = Matcher::new(Some("bash")).unwrap();
        assert!(native.matches(&["Bash", "bash"]));
        let mcp = Matcher::new(Some("mcp__github__.*")).unwrap();
        assert!(mcp.matches(&["mcp__github__create_issue", "github__create_issue"]));
        // An event without a subject (a prompt) runs every group.
        assert!(edits.matches(&[]));
        let bad = Matcher::new(Some("Edit(")).unwrap_err();
        assert!(bad.to_string().contains("`Edit(`"));
    }
}
