//! The tools' arguments. Unknown fields are refused (a misspelt `replace_all` silently
//! ignored would change what is written), then each field is checked with the text the
//! model reads.

use dsh_tools::ToolError;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::errors::invalid;

/// `read`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadArgs {
    pub path: String,
    /// The first line shown, 1-based.
    #[serde(default)]
    pub offset: Option<i64>,
    /// How many lines.
    #[serde(default)]
    pub limit: Option<i64>,
}

/// One replacement.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OneEdit {
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

/// `edit`: one replacement, or several in `edits`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditArgs {
    pub path: String,
    #[serde(default)]
    pub old_string: Option<String>,
    #[serde(default)]
    pub new_string: Option<String>,
    #[serde(default)]
    pub replace_all: bool,
    #[serde(default)]
    pub edits: Option<Vec<OneEdit>>,
}

/// `write`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArgs {
    pub path: String,
    pub content: String,
}

/// `grep`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepArgs {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    #[serde(default)]
    pub output_mode: Option<String>,
    #[serde(default)]
    pub case_insensitive: bool,
    #[serde(default)]
    pub context: Option<i64>,
    #[serde(default)]
    pub limit: Option<i64>,
}

/// `glob`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobArgs {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
}

/// The arguments as `T`, or an error naming what is wrong.
pub(crate) fn parse<T: DeserializeOwned>(args: serde_json::Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| invalid(format!("invalid arguments: {e}")))
}

/// `name` must not be empty.
pub(crate) fn non_empty(name: &str, value: &str) -> Result<(), ToolError> {
    if value.trim().is_empty() {
        return Err(invalid(format!(
            "invalid {name}: expected a non-empty string"
        )));
    }
    Ok(())
}

/// `name` must be at most `max` bytes.
pub(crate) fn at_most(name: &str, value: &str, max: usize) -> Result<(), ToolError> {
    if value.len() > max {
        return Err(invalid(format!(
            "invalid {name}: {} bytes is over the {max}-byte limit; write large files in parts or with bash",
            value.len()
        )));
    }
    Ok(())
}

/// A count the model gave: positive and at most `max`.
pub(crate) fn count(
    name: &str,
    value: Option<i64>,
    max: usize,
) -> Result<Option<usize>, ToolError> {
    match value {
        None => Ok(None),
        Some(n) if n >= 1 && (n as u64) <= max as u64 => Ok(Some(n as usize)),
        Some(n) => Err(invalid(format!(
            "invalid {name}: expected an integer between 1 and {max}, got {n}"
        ))),
    }
}

impl EditArgs {
    /// The replacements, in order, checked.
    pub(crate) fn replacements(self, max: usize) -> Result<(String, Vec<OneEdit>), ToolError> {
        non_empty("path", &self.path)?;
        let edits = match (self.old_string, self.new_string, self.edits) {
            (Some(old_string), Some(new_string), None) => vec![OneEdit {
                old_string,
                new_string,
                replace_all: self.replace_all,
            }],
            (None, None, Some(edits)) if !edits.is_empty() => edits,
            (None, None, Some(_)) => {
                return Err(invalid("invalid edits: expected at least one edit"));
            }
            (None, None, None) => {
                return Err(invalid(
                    "invalid arguments: give old_string and new_string, or edits",
                ));
            }
            (Some(_), None, _) | (None, Some(_), _) => {
                return Err(invalid(
                    "invalid arguments: old_string and new_string go together",
                ));
            }
            (Some(_), Some(_), Some(_)) => {
                return Err(invalid(
                    "invalid arguments: give old_string and new_string, or edits, not both",
                ));
            }
        };
        for (i, edit) in edits.iter().enumerate() {
            let which = if edits.len() > 1 {
                format!(" (edit {})", i + 1)
            } else {
                String::new()
            };
            if edit.old_string.is_empty() {
                return Err(invalid(format!(
                    "invalid old_string{which}: it is empty; to create a file or replace all of it, use write"
                )));
            }
            if edit.old_string == edit.new_string {
                return Err(invalid(format!(
                    "invalid new_string{which}: it is the same as old_string, so the edit changes nothing"
                )));
            }
            at_most("old_string", &edit.old_string, max)?;
            at_most("new_string", &edit.new_string, max)?;
        }
        Ok((self.path, edits))
    }
}
