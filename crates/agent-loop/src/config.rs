//! The loop's configuration.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use dsh_agent::{AgentError, AgentOptions, AgentOverrides};
use dsh_session::SessionId;

/// An agent started when the plugin applies, owned by the plugin alone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfiguredAgent {
    /// Resumes this session if it is stored, creates it otherwise; `None` mints a fresh id at
    /// every apply.
    pub session_id: Option<SessionId>,
    /// The working directory of a created session; `None` is the process's.
    pub cwd: Option<PathBuf>,
    /// Overrides of [`LoopConfig::defaults`], field by field.
    pub options: AgentOverrides,
}

/// How the loop runs agents.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopConfig {
    /// Options for agents created without their own.
    pub defaults: AgentOptions,
    /// How many parallel-safe tool bodies run at once, 1 ..= 64 (1 is serial).
    pub max_parallel_tools: NonZeroU32,
    /// How long a cancelled tool body may take to return before it is aborted, ≤ 60 s.
    pub tool_cancel_grace: Duration,
    /// Agents started at apply.
    pub agents: Vec<ConfiguredAgent>,
    /// The user's permission rules: a call they deny does not run, one they ask about is
    /// asked in every mode, one they allow runs unasked.
    pub rules: std::sync::Arc<dsh_tools::PermissionRules>,
    /// Where "always" answers are remembered per project (none: for the session only).
    pub remembered: Remembered,
}

/// Where "always" answers are remembered, if anywhere. Two are equal when they are the
/// same provider.
#[derive(Clone, Default)]
pub struct Remembered(pub Option<std::sync::Arc<dyn dsh_tools::RememberedRules>>);

impl std::fmt::Debug for Remembered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Some(_) => "Remembered(Some(..))",
            None => "Remembered(None)",
        })
    }
}

impl PartialEq for Remembered {
    fn eq(&self, other: &Remembered) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
            (None, None) => true,
            (Some(_), None) | (None, Some(_)) => false,
        }
    }
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            defaults: AgentOptions::default(),
            max_parallel_tools: NonZeroU32::MIN.saturating_add(7),
            tool_cancel_grace: Duration::from_secs(2),
            agents: Vec::new(),
            rules: std::sync::Arc::new(dsh_tools::PermissionRules::none()),
            remembered: Remembered::default(),
        }
    }
}

impl LoopConfig {
    /// Checks every range and that configured ids are unique; the error names the key.
    pub fn validate(&self) -> Result<(), AgentError> {
        self.defaults.validate().map_err(|err| match err {
            AgentError::InvalidRequest { field, reason } => AgentError::InvalidRequest {
                field: format!("defaults.{}", field.trim_start_matches("options.")),
                reason,
            },
            other => other,
        })?;
        if self.max_parallel_tools.get() > 64 {
            return Err(invalid(
                "max_parallel_tools",
                format!("{} is over 64", self.max_parallel_tools),
            ));
        }
        if self.tool_cancel_grace > Duration::from_secs(60) {
            return Err(invalid(
                "tool_cancel_grace_ms",
                format!("{} ms is over 60000", self.tool_cancel_grace.as_millis()),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, agent) in self.agents.iter().enumerate() {
            if let Some(id) = &agent.session_id
                && !seen.insert(id.clone())
            {
                return Err(invalid(
                    &format!("agents[{i}].session_id"),
                    format!("\"{id}\" is configured twice"),
                ));
            }
            agent.options.validate()?;
        }
        Ok(())
    }
}

fn invalid(field: &str, reason: String) -> AgentError {
    AgentError::InvalidRequest {
        field: field.to_owned(),
        reason,
    }
}
