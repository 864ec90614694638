//! The events, named as Claude Code names them.

use std::fmt;
use std::str::FromStr;

/// A point in the agent's life where hooks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    /// A session started, was resumed, or goes on after a compaction.
    SessionStart,
    /// The person submitted a prompt; before the model sees it.
    UserPromptSubmit,
    /// A tool call is about to run (after the model asked for it, before any question).
    PreToolUse,
    /// A tool call ran; its result is known.
    PostToolUse,
    /// The agent is about to end its turn.
    Stop,
    /// A subagent is about to end its turn.
    SubagentStop,
    /// A compaction is about to summarise the conversation.
    PreCompact,
    /// Something waits for the person: a permission question, or the agent went idle.
    Notification,
}

/// Every event, in the order Claude Code's documentation lists them.
pub const ALL: [HookEvent; 8] = [
    HookEvent::SessionStart,
    HookEvent::UserPromptSubmit,
    HookEvent::PreToolUse,
    HookEvent::PostToolUse,
    HookEvent::Stop,
    HookEvent::SubagentStop,
    HookEvent::PreCompact,
    HookEvent::Notification,
];

impl HookEvent {
    /// Its name in a configuration and in `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
        }
    }

    /// Whether its matcher is about a tool's name (the tool events); the others match on
    /// their own subject (`SessionStart`'s source, `PreCompact`'s trigger) or on nothing.
    pub fn about_tools(self) -> bool {
        match self {
            HookEvent::PreToolUse | HookEvent::PostToolUse => true,
            HookEvent::SessionStart
            | HookEvent::UserPromptSubmit
            | HookEvent::Stop
            | HookEvent::SubagentStop
            | HookEvent::PreCompact
            | HookEvent::Notification => false,
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A configuration named an event dsh does not have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook event `{name}`; the events are: {}", ALL.map(HookEvent::as_str).join(", "))]
pub struct UnknownEvent {
    /// The name as written.
    pub name: String,
}

impl FromStr for HookEvent {
    type Err = UnknownEvent;

    fn from_str(name: &str) -> Result<HookEvent, UnknownEvent> {
        ALL.into_iter()
            .find(|event| event.as_str() == name)
            .ok_or_else(|| UnknownEvent {
                name: name.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_reads_back_from_its_name_and_a_stranger_is_named() {
        for event in ALL {
            assert_eq!(event.as_str().parse::<HookEvent>(), Ok(event));
        }
        let error = "PostToolUseFailure".parse::<HookEvent>().unwrap_err();
        assert!(error.to_string().contains("`PostToolUseFailure`"));
        assert!(error.to_string().contains("PreToolUse, PostToolUse"));
    }
}
