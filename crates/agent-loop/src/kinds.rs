//! The session event types the loop writes, validated once.

use dsh_session::{EventType, SessionError};

pub(crate) struct Kinds {
    pub(crate) turn_start: EventType,
    pub(crate) turn_end: EventType,
    pub(crate) step_start: EventType,
    pub(crate) step_end: EventType,
    pub(crate) user_message: EventType,
    pub(crate) chunk: EventType,
    pub(crate) assistant: EventType,
    pub(crate) tool_call: EventType,
    pub(crate) tool_result: EventType,
    pub(crate) instructions: EventType,
    pub(crate) compacted: EventType,
    pub(crate) compacting: EventType,
    pub(crate) progress: EventType,
    pub(crate) model_progress: EventType,
    pub(crate) title: EventType,
    pub(crate) config: EventType,
    pub(crate) plan: EventType,
    pub(crate) permission_rule: EventType,
    pub(crate) hook_ran: EventType,
}

impl Kinds {
    pub(crate) fn new() -> Result<Kinds, SessionError> {
        Ok(Kinds {
            turn_start: EventType::new(EventType::TURN_START)?,
            turn_end: EventType::new(EventType::TURN_END)?,
            step_start: EventType::new(EventType::STEP_START)?,
            step_end: EventType::new(EventType::STEP_END)?,
            user_message: EventType::new(EventType::USER_MESSAGE)?,
            chunk: EventType::new(EventType::ASSISTANT_CHUNK)?,
            assistant: EventType::new(EventType::ASSISTANT_MESSAGE)?,
            tool_call: EventType::new(EventType::TOOL_CALL)?,
            tool_result: EventType::new(EventType::TOOL_RESULT)?,
            instructions: EventType::new(dsh_agent::record::CONTEXT_INSTRUCTIONS)?,
            compacted: EventType::new(dsh_agent::record::CONTEXT_COMPACTED)?,
            compacting: EventType::new(dsh_agent::record::CONTEXT_COMPACTING)?,
            progress: EventType::new(dsh_agent::record::TOOL_PROGRESS)?,
            model_progress: EventType::new(dsh_agent::record::MODEL_PROGRESS)?,
            title: EventType::new(dsh_session::SESSION_TITLE)?,
            config: EventType::new(dsh_agent::CONFIG_CHANGED)?,
            plan: EventType::new(dsh_agent::record::PLAN_UPDATED)?,
            permission_rule: EventType::new(dsh_agent::record::PERMISSION_RULE)?,
            hook_ran: EventType::new(dsh_agent::record::HOOK_RAN)?,
        })
    }
}
