//! `dsh run --permission ask`: the user approves each gated tool call on the controlling
//! terminal.
//!
//! The question goes to `/dev/tty`, not to stdout or stderr, so it reaches the person even
//! when the output is piped (`dsh run --permission ask "…" > answer.md`), and it never
//! mixes into what a script reads. Without a terminal there is nobody to ask, and the call
//! is denied: a gate that cannot ask must never allow.
//!
//! The terminal is read without blocking a thread (a non-blocking descriptor of its own,
//! polled by the reactor), so a cancelled turn withdraws the question at once and no reader
//! is left behind to swallow the next line the user types.

use dsh_tools::safe_text::SafeText;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;

use async_trait::async_trait;
use dsh_tools::{
    ApprovalDecision, ApprovalGate, ApprovalRequest, PermissionMode, ToolCallView, ToolResultView,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::Mutex;

/// The longest rendering of a call shown in the question; the rest is elided.
const SHOWN: usize = 2000;
/// The longest answer line read; a longer one is a "no".
const ANSWER_LIMIT: usize = 4096;

/// Told the id of a call: as the user is asked about it, or once they allowed it.
pub type OnCall = Box<dyn Fn(&str) + Send + Sync>;

/// Asks on the controlling terminal before each gated call, one question at a time.
pub struct TerminalGate {
    mode: PermissionMode,
    /// Whether the diff in a question is coloured.
    colour: bool,
    /// Questions never interleave, even if two agents asked at once.
    one_at_a_time: Mutex<()>,
    /// The renderer, which clears what it draws in place before a question is written.
    on_ask: std::sync::OnceLock<OnCall>,
    /// The renderer, which shows an allowed call as running only once it is allowed.
    on_allow: std::sync::OnceLock<OnCall>,
}

impl TerminalGate {
    /// A gate asking for what `mode` asks for, its diffs coloured when `colour`.
    pub fn new(mode: PermissionMode, colour: bool) -> TerminalGate {
        TerminalGate {
            mode,
            colour,
            one_at_a_time: Mutex::default(),
            on_ask: std::sync::OnceLock::new(),
            on_allow: std::sync::OnceLock::new(),
        }
    }

    /// Calls `hook` with the id of each call about to be asked about (the first hook set
    /// stays).
    pub fn on_ask(&self, hook: OnCall) {
        let _ = self.on_ask.set(hook);
    }

    /// Calls `hook` with the id of each call allowed from now on (the first hook set stays).
    pub fn on_allow(&self, hook: OnCall) {
        let _ = self.on_allow.set(hook);
    }
}

#[async_trait]
impl ApprovalGate for TerminalGate {
    fn mode(&self) -> PermissionMode {
        self.mode
    }

    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        let _turn = self.one_at_a_time.lock().await;
        let question = question(&request, self.colour);
        if let Some(hook) = self.on_ask.get() {
            hook(&request.call_id);
        }
        tokio::select! {
            biased;
            () = request.cancel.cancelled() => ApprovalDecision::Cancelled,
            answer = ask(&question) => match answer {
                Ok(true) => {
                    if let Some(hook) = self.on_allow.get() {
                        hook(&request.call_id);
                    }
                    ApprovalDecision::Allow
                }
                Ok(false) => ApprovalDecision::Reject {
                    reason: "they answered no on the terminal".into(),
                },
                Err(e) => {
                    tracing::debug!(error = %e, "no terminal to ask on; the call is denied");
                    ApprovalDecision::Reject {
                        reason: format!(
                            "dsh runs in the {} permission mode and there is no terminal to ask on",
                            self.mode.as_str()
                        ),
                    }
                }
            },
        }
    }
}

/// `dsh · allow bash: ls -la  [y/N] `: a call the tool presents as a terminal shows its
/// command, a previewed change its path, other calls their arguments, apart from the
/// answer's brackets so nothing reads as part of the command.
fn question(request: &ApprovalRequest, colour: bool) -> String {
    let args = &request.arguments;
    let shown = match (&request.shown, args["path"].as_str()) {
        (Some(ToolCallView::Terminal { command, .. }), _) => command.clone(),
        (_, Some(path)) if request.preview.is_some() => path.to_owned(),
        _ => args.to_string(),
    };
    // The command comes from the model: it must not drive the terminal it is shown on.
    let shown = elide(SafeText::plain(&shown).trim_end());
    // An edit shows what it would change above the question.
    let change = match &request.preview {
        Some(ToolResultView::Diff {
            old_text,
            new_text,
            first_line,
            summary,
            path: _,
            created: _,
        }) => crate::change::diff(summary, *first_line as usize, old_text, new_text, colour),
        Some(ToolResultView::Generic { .. } | ToolResultView::Terminal { .. }) | None => {
            String::new()
        }
    };
    // The tool's name is the model's too.
    let tool = SafeText::plain(&request.tool);
    // A subagent's call says whose it is: the person answers for a child they did not start.
    let who = match &request.subagent {
        Some(label) => format!("subagent \u{201c}{}\u{201d} · ", SafeText::plain(label)),
        None => String::new(),
    };
    format!("{change}dsh · {who}allow {tool}: {shown}  [y/N] ")
}

fn elide(text: &str) -> String {
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}… ({} more bytes)", &text[..at], text.len() - at),
        None => text.to_owned(),
    }
}

/// Writes the question and reads one line; `y` or `yes` (any case) allows.
pub(crate) async fn ask(question: &str) -> io::Result<bool> {
    let (mut to_user, mut from_user) = terminal()?;
    to_user.write_all(question.as_bytes()).await?;
    let line = read_line(&mut from_user).await?;
    let answer = String::from_utf8_lossy(&line).trim().to_ascii_lowercase();
    if line.is_empty() {
        // End of input (Ctrl-D) left the cursor after the question.
        to_user.write_all(b"\n").await?;
    }
    Ok(answer == "y" || answer == "yes")
}

/// The controlling terminal, opened twice without blocking and registered with the reactor.
/// tokio's pipe ends are its safe wrapper for any pollable descriptor that is not a socket;
/// the unchecked constructors skip only the FIFO check, which a terminal would fail.
fn terminal() -> io::Result<(pipe::Sender, pipe::Receiver)> {
    let open = |read: bool| {
        OpenOptions::new()
            .read(read)
            .write(!read)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open("/dev/tty")
    };
    let to_user = pipe::Sender::from_file_unchecked(open(false)?)?;
    let from_user = pipe::Receiver::from_file_unchecked(open(true)?)?;
    Ok((to_user, from_user))
}

/// Reads up to the first newline, or to end of input; a terminal in canonical mode hands
/// over whole lines, but a read may still stop short of one.
async fn read_line(from_user: &mut pipe::Receiver) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let n = from_user.read(&mut buf).await?;
        if n == 0 {
            return Ok(line);
        }
        if let Some(end) = buf[..n].iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&buf[..end]);
            return Ok(line);
        }
        line.extend_from_slice(&buf[..n]);
        if line.len() > ANSWER_LIMIT {
            return Ok(Vec::from(&b"no"[..]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_kernel::CancellationToken;

    /// A request for `tool`, presented as a terminal when its arguments hold a command.
    fn request(tool: &str, arguments: serde_json::Value) -> ApprovalRequest {
        let shown = arguments["command"]
            .as_str()
            .map(|command| ToolCallView::Terminal {
                command: command.to_owned(),
                description: None,
                cwd: None,
                raw_input: arguments.clone(),
            });
        ApprovalRequest {
            session_id: dsh_session::SessionId::mint(),
            turn: 1,
            step: 1,
            call_id: "c1".into(),
            tool: tool.into(),
            arguments,
            effect: dsh_tools::Effect::Execute,
            preview: None,
            shown,
            cancel: CancellationToken::new(),
            subagent: None,
        }
    }

    #[test]
    fn a_command_is_asked_about_by_itself_and_other_calls_by_their_arguments() {
        let bash = request("bash", serde_json::json!({"command": "ls -la\n"}));
        assert_eq!(question(&bash, false), "dsh · allow bash: ls -la  [y/N] ");
        let other = request("bash_kill", serde_json::json!({"id": "t1"}));
        assert_eq!(
            question(&other, false),
            "dsh · allow bash_kill: {\"id\":\"t1\"}  [y/N] "
        );
        let hostile = request("x\x1b]2;pwned\x07\x1b[2J", serde_json::json!({}));
        assert_eq!(question(&hostile, false), "dsh · allow x: {}  [y/N] ");
    }

    #[test]
    fn a_subagents_question_names_the_subagent() {
        let mut bash = request("bash", serde_json::json!({"command": "make"}));
        bash.subagent = Some("run the \x1b[2Jtests".into());
        assert_eq!(
            question(&bash, false),
            "dsh · subagent \u{201c}run the tests\u{201d} · allow bash: make  [y/N] "
        );
    }

    #[test]
    fn a_long_command_is_elided_on_a_character_boundary() {
        let long = "é".repeat(SHOWN + 10);
        let shown = elide(&long);
        assert!(shown.starts_with(&"é".repeat(SHOWN)));
        assert!(shown.ends_with("… (20 more bytes)"), "{shown}");
    }

    #[tokio::test]
    async fn a_cancelled_turn_withdraws_the_question() {
        let gate = TerminalGate::new(PermissionMode::Ask, false);
        let asked = request("bash", serde_json::json!({"command": "true"}));
        asked.cancel.cancel();
        assert_eq!(gate.decide(asked).await, ApprovalDecision::Cancelled);
    }
}
