//! A handler's answer, read from its exit code, stdout and stderr as Claude Code reads them —
//! and failing closed where the handler's author asked for it.
//!
//! - exit 0: stdout may hold a JSON answer; for `UserPromptSubmit` and `SessionStart`, plain
//!   stdout is context for the model;
//! - exit 2: a block, stderr the reason the model reads;
//! - any other end (another code, a signal, a timeout, a handler that could not start, JSON
//!   that does not parse): an error shown to the person, and a block when the handler says
//!   `on_error = "deny"`.

use serde_json::Value;

use crate::event::HookEvent;

/// What a handler's failure means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnError {
    /// The event goes on; the failure is shown (Claude Code's behaviour).
    #[default]
    Allow,
    /// The failure blocks, as exit 2 would: a guard that crashed lets nothing through.
    Deny,
}

/// How a handler's run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HandlerRun {
    /// Its command, for the messages that name it.
    pub command: String,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// Its timeout ended it.
    pub timed_out: bool,
    /// Why it could not start, when it could not.
    pub not_started: Option<String>,
    /// What it wrote to stdout (lossily decoded).
    pub stdout: String,
    /// What it wrote to stderr (lossily decoded).
    pub stderr: String,
    /// How long it ran, in milliseconds.
    pub elapsed_ms: u64,
}

/// A permission decision for a tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PermissionDecision {
    /// Run it without asking.
    Allow,
    /// Ask the person, whatever the mode.
    Ask,
    /// Refuse it.
    Deny,
}

/// One handler's answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HandlerAnswer {
    /// It blocks, with the reason the model reads.
    pub block: Option<String>,
    /// Its decision on a tool call, with its reason.
    pub permission: Option<(PermissionDecision, Option<String>)>,
    /// The arguments the call runs with instead.
    pub updated_input: Option<Value>,
    /// Context for the model.
    pub context: Option<String>,
    /// A message for the person.
    pub message: Option<String>,
    /// It stops the agent (`continue: false`), with the reason shown.
    pub stop: Option<String>,
    /// It failed, in words for the person.
    pub error: Option<String>,
}

impl HandlerAnswer {
    /// What it decided, in a word: `blocked`, `denied`, `asked`, `allowed`, `failed` (a
    /// failure that let the event go on), or `ok`.
    pub fn decision(&self) -> &'static str {
        match (&self.block, &self.permission, &self.error) {
            (Some(_), _, _) => "blocked",
            (None, Some((PermissionDecision::Deny, _)), _) => "denied",
            (None, Some((PermissionDecision::Ask, _)), _) => "asked",
            (None, Some((PermissionDecision::Allow, _)), _) => "allowed",
            (None, None, Some(_)) => "failed",
            (None, None, None) => "ok",
        }
    }

    /// The answer of `run`, a handler of `event`.
    pub fn read(event: HookEvent, run: &HandlerRun, on_error: OnError) -> HandlerAnswer {
        let failure = match (&run.not_started, run.timed_out, run.exit_code) {
            (Some(why), _, _) => Some(format!("could not start: {why}")),
            (None, true, _) => Some("timed out".to_owned()),
            (None, false, None) => Some("was killed by a signal".to_owned()),
            (None, false, Some(0 | 2)) => None,
            (None, false, Some(code)) => Some(match first_line(&run.stderr) {
                "" => format!("exited {code}"),
                said => format!("exited {code}: {said}"),
            }),
        };
        if let Some(failure) = failure {
            return HandlerAnswer::failed(run, failure, on_error);
        }
        if run.exit_code == Some(2) {
            let reason = match run.stderr.trim() {
                "" => format!("blocked by the hook `{}`", run.command),
                said => said.to_owned(),
            };
            return HandlerAnswer {
                block: Some(reason),
                ..HandlerAnswer::default()
            };
        }
        let said = run.stdout.trim();
        if said.is_empty() {
            return HandlerAnswer::default();
        }
        match serde_json::from_str::<Value>(said) {
            Ok(Value::Object(answer)) => HandlerAnswer::from_json(event, &Value::Object(answer)),
            // Plain text is context where Claude Code takes it as such; elsewhere it is only
            // the handler talking.
            _ if !said.starts_with('{') => match event {
                HookEvent::UserPromptSubmit | HookEvent::SessionStart => HandlerAnswer {
                    context: Some(said.to_owned()),
                    ..HandlerAnswer::default()
                },
                HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::Stop
                | HookEvent::SubagentStop
                | HookEvent::PreCompact
                | HookEvent::Notification => HandlerAnswer::default(),
            },
            Ok(_) | Err(_) => HandlerAnswer::failed(
                run,
                "answered with JSON that does not parse".to_owned(),
                on_error,
            ),
        }
    }

    fn failed(run: &HandlerRun, failure: String, on_error: OnError) -> HandlerAnswer {
        let error = format!("the hook `{}` {failure}", run.command);
        HandlerAnswer {
            block: match on_error {
                OnError::Deny => Some(format!("{error}, and it says on_error = \"deny\"")),
                OnError::Allow => None,
            },
            error: Some(error),
            ..HandlerAnswer::default()
        }
    }

    fn from_json(event: HookEvent, answer: &Value) -> HandlerAnswer {
        let text = |value: &Value| value.as_str().map(str::to_owned);
        let specific = &answer["hookSpecificOutput"];
        let reason = text(&answer["reason"]);
        let mut out = HandlerAnswer {
            message: text(&answer["systemMessage"]),
            context: text(&specific["additionalContext"]),
            updated_input: specific
                .get("updatedInput")
                .filter(|v| v.is_object())
                .cloned(),
            ..HandlerAnswer::default()
        };
        if answer["continue"] == Value::Bool(false) {
            out.stop = Some(
                text(&answer["stopReason"]).unwrap_or_else(|| "a hook stopped the agent".into()),
            );
        }
        let decision = specific["permissionDecision"]
            .as_str()
            .or_else(|| answer["decision"].as_str());
        let why = text(&specific["permissionDecisionReason"]).or_else(|| reason.clone());
        match (event, decision) {
            (HookEvent::PreToolUse, Some("allow" | "approve")) => {
                out.permission = Some((PermissionDecision::Allow, why));
            }
            (HookEvent::PreToolUse, Some("ask")) => {
                out.permission = Some((PermissionDecision::Ask, why));
            }
            (HookEvent::PreToolUse, Some("deny" | "block")) => {
                out.permission = Some((PermissionDecision::Deny, why));
            }
            (_, Some("block")) => {
                out.block = Some(reason.unwrap_or_else(|| "blocked by a hook".into()));
            }
            _ => {}
        }
        out
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(code: Option<i32>, stdout: &str, stderr: &str) -> HandlerRun {
        HandlerRun {
            command: "guard.sh".into(),
            exit_code: code,
            stdout: stdout.into(),
            stderr: stderr.into(),
            ..HandlerRun::default()
        }
    }

    #[test]
    fn exit_two_blocks_with_stderr_as_the_reason() {
        let answer = HandlerAnswer::read(
            HookEvent::PreToolUse,
            &run(Some(2), "", "rm -rf is not allowed here\n"),
            OnError::Allow,
        );
        assert_eq!(answer.block.as_deref(), Some("rm -rf is not allowed here"));
        assert_eq!(answer.error, None);
    }

    #[test]
    fn a_crash_is_an_error_that_blocks_only_a_guard_that_says_deny() {
        for failed in [
            run(Some(1), "", "jq: command not found"),
            run(None, "", ""),
            HandlerRun {
                timed_out: true,
                ..run(None, "", "")
            },
            HandlerRun {
                not_started: Some("no such file".into()),
                ..run(None, "", "")
            },
            run(Some(0), "{\"decision\": ", ""),
        ] {
            let lenient = HandlerAnswer::read(HookEvent::PreToolUse, &failed, OnError::Allow);
            assert!(lenient.block.is_none(), "{failed:?}");
            assert!(
                lenient
                    .error
                    .as_deref()
                    .is_some_and(|e| e.contains("`guard.sh`"))
            );
            let strict = HandlerAnswer::read(HookEvent::PreToolUse, &failed, OnError::Deny);
            assert!(
                strict
                    .block
                    .as_deref()
                    .is_some_and(|b| b.contains("on_error = \"deny\"")),
                "{failed:?}: {strict:?}"
            );
        }
        let said = HandlerAnswer::read(
            HookEvent::Stop,
            &run(Some(1), "", "\nboom\nmore"),
            OnError::Allow,
        );
        assert_eq!(
            said.error.as_deref(),
            Some("the hook `guard.sh` exited 1: boom")
        );
    }

    #[test]
    fn json_answers_read_as_claude_code_documents_them() {
        let pre = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "no pushes",
            "updatedInput": {"command": "git status"}}, "systemMessage": "checked"});
        let answer = HandlerAnswer::read(
            HookEvent::PreToolUse,
            &run(Some(0), &pre.to_string(), ""),
            OnError::Allow,
        );
        assert_eq!(
            answer.permission,
            Some((PermissionDecision::Deny, Some("no pushes".into())))
        );
        assert_eq!(answer.updated_input, Some(json!({"command": "git status"})));
        assert_eq!(answer.message.as_deref(), Some("checked"));
        // The older top-level form.
        let old = HandlerAnswer::read(
            HookEvent::PreToolUse,
            &run(Some(0), r#"{"decision":"approve","reason":"fine"}"#, ""),
            OnError::Allow,
        );
        assert_eq!(
            old.permission,
            Some((PermissionDecision::Allow, Some("fine".into())))
        );
        let stop = HandlerAnswer::read(
            HookEvent::Stop,
            &run(Some(0), r#"{"decision":"block","reason":"tests fail"}"#, ""),
            OnError::Allow,
        );
        assert_eq!(stop.block.as_deref(), Some("tests fail"));
        let halt = HandlerAnswer::read(
            HookEvent::PostToolUse,
            &run(Some(0), r#"{"continue":false,"stopReason":"enough"}"#, ""),
            OnError::Allow,
        );
        assert_eq!(halt.stop.as_deref(), Some("enough"));
        let context = json!({"hookSpecificOutput": {"additionalContext": "branch: main"}});
        let start = HandlerAnswer::read(
            HookEvent::SessionStart,
            &run(Some(0), &context.to_string(), ""),
            OnError::Allow,
        );
        assert_eq!(start.context.as_deref(), Some("branch: main"));
    }

    #[test]
    fn plain_stdout_is_context_only_where_claude_code_takes_it() {
        let prompt = HandlerAnswer::read(
            HookEvent::UserPromptSubmit,
            &run(Some(0), "today is Monday\n", ""),
            OnError::Deny,
        );
        assert_eq!(prompt.context.as_deref(), Some("today is Monday"));
        let tool = HandlerAnswer::read(
            HookEvent::PostToolUse,
            &run(Some(0), "formatted 1 file", ""),
            OnError::Deny,
        );
        assert_eq!(tool, HandlerAnswer::default());
    }
}
