//! Tool arguments: unknown fields are refused (a misspelt `timeout` silently ignored would
//! change behaviour, and model-supplied `env` or `stdin` must never reach the executor), then
//! each field is checked with the exact text the model reads.

use dsh_tools::ToolError;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::config::MAX_TIMEOUT_MS;
use crate::errors::invalid;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    pub command: String,
    #[serde(default)]
    #[allow(dead_code)] // For display and logs only: it never reaches the executor.
    pub description: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<i64>,
    #[serde(default)]
    pub run_in_background: bool,
    #[serde(default)]
    pub workdir: Option<String>,
    /// Why the command must run outside the sandbox: present, it asks the user to let it.
    #[serde(default)]
    pub outside_sandbox: Option<String>,
}

/// The longest reason for leaving the sandbox, in characters: one line the user reads.
pub const MAX_REASON_CHARS: usize = 200;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputArgs {
    pub task_id: String,
    #[serde(default)]
    pub offset: u64,
    #[serde(default)]
    pub wait_ms: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillArgs {
    pub task_id: String,
}

pub fn parse<T: DeserializeOwned>(args: serde_json::Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| invalid(format!("invalid arguments: {e}")))
}

impl BashArgs {
    pub fn check(&self) -> Result<(), ToolError> {
        if self.command.trim().is_empty() {
            return Err(invalid("invalid command: expected a non-empty string"));
        }
        if let Some(ms) = self.timeout_ms
            && !(1..=MAX_TIMEOUT_MS).contains(&ms)
        {
            return Err(invalid(format!(
                "invalid timeout_ms: expected an integer between 1 and {MAX_TIMEOUT_MS}, got {ms}"
            )));
        }
        if self.workdir.as_deref() == Some("") {
            return Err(invalid("invalid workdir: expected a non-empty path"));
        }
        if let Some(reason) = &self.outside_sandbox
            && (reason.trim().is_empty()
                || reason.contains('\n')
                || reason.chars().count() > MAX_REASON_CHARS)
        {
            return Err(invalid(format!(
                "invalid outside_sandbox: expected one line of at most {MAX_REASON_CHARS} characters saying why the command cannot run in the sandbox"
            )));
        }
        Ok(())
    }
}

pub fn check_task_id(raw: &str) -> Result<(), ToolError> {
    if raw.is_empty() {
        return Err(invalid("invalid task_id: expected a non-empty string"));
    }
    Ok(())
}

impl OutputArgs {
    pub fn check(&self, max_wait_ms: u64) -> Result<(), ToolError> {
        check_task_id(&self.task_id)?;
        let max = i64::try_from(max_wait_ms).unwrap_or(i64::MAX);
        if !(0..=max).contains(&self.wait_ms) {
            return Err(invalid(format!(
                "invalid wait_ms: expected an integer between 0 and {max_wait_ms}, got {}",
                self.wait_ms
            )));
        }
        Ok(())
    }
}
