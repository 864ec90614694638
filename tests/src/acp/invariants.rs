//! The protocol invariants every ACP transcript must keep, checked over the whole wire: what
//! the driver wrote and what dsh wrote back, in the order the driver saw them.
//!
//! Reading is lagging, never leading: a frame dsh wrote is recorded when the driver reads it,
//! which is never before the request that caused it was written. So a rule such as "no update
//! after the response that closes the prompt" can miss a late frame that the driver read only
//! after writing the next prompt, but it never blames a correct transcript.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// One frame on the wire.
#[derive(Clone, Debug)]
pub enum Wire {
    /// Written by the driver (client → dsh).
    Out(Value),
    /// Read from dsh's stdout (dsh → client).
    In(Value),
}

/// The five stop reasons a prompt may end with.
const STOP_REASONS: [&str; 5] = [
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];

/// The update variants dsh sends unasked; an opt-in one (`notice`, `compaction_update`) only
/// to a client that advertised it.
const UPDATES: [&str; 11] = [
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "usage_update",
    "available_commands_update",
    "session_info_update",
    "config_option_update",
    "current_mode_update",
    "plan",
];

#[derive(Default)]
struct Checker {
    /// Request ids already answered (null ids excepted: unreadable lines).
    answered: HashSet<String>,
    /// Sessions this connection created or loaded.
    known: HashSet<String>,
    /// Open prompt or load request id → (session, is a prompt).
    open: HashMap<String, (String, bool)>,
    /// `session/new` request ids not yet answered.
    creating: HashSet<String>,
    /// (session, tool call id) → (pending?, finished?).
    calls: HashMap<(String, String), (bool, bool)>,
    /// Agent → client request ids.
    outgoing: HashSet<String>,
    /// Whether the client advertised Zed's terminal-card flag.
    cards: bool,
    /// Requests written with an id dsh must echo (a string or an integer).
    requested: Vec<String>,
    /// The client advertised `session.notices`: `notice` updates may come.
    notices: bool,
    /// The client advertised `session.compaction`: `compaction_update`s may come.
    compaction: bool,
    /// The client advertised `plan`: `plan_update`s may come.
    plan: bool,
    /// The client advertised both `fs.readTextFile` and `fs.writeTextFile`: `fs/*` requests
    /// may come.
    files: bool,
    /// The client advertised `subagents`: `subagent_update`s may come.
    subagents: bool,
    /// Child sessions announced by a `subagent_update`, with the session they were announced
    /// on.
    children: HashMap<String, String>,
}

/// Checks every invariant over `wire`; panics naming the first frame that breaks one.
///
/// `complete` says the whole output was read after a clean end of input: then every request
/// written must have had its response.
pub fn check(wire: &[Wire], complete: bool) {
    let mut checker = Checker::default();
    for frame in wire {
        match frame {
            Wire::Out(frame) => checker.written(frame),
            Wire::In(frame) => {
                assert_eq!(frame["jsonrpc"], "2.0", "not a JSON-RPC 2.0 frame: {frame}");
                checker.read(frame);
            }
        }
    }
    if complete {
        for id in &checker.requested {
            assert!(
                checker.answered.contains(id),
                "request {id} was never answered"
            );
        }
    }
}

impl Checker {
    fn written(&mut self, frame: &Value) {
        let Some(method) = frame["method"].as_str() else {
            return;
        };
        let id = frame["id"].to_string();
        if frame["id"].is_string() || frame["id"].is_i64() || frame["id"].is_u64() {
            self.requested.push(id.clone());
        }
        let session = frame["params"]["sessionId"].as_str().map(str::to_owned);
        match (method, frame.get("id").is_some(), session) {
            ("initialize", _, _) => {
                let caps = &frame["params"]["clientCapabilities"];
                self.cards = caps["_meta"]["terminal_output"] == true;
                self.notices = caps["session"]["notices"].is_object();
                self.compaction = caps["session"]["compaction"].is_object();
                self.plan = caps["plan"].is_object();
                self.subagents = caps["subagents"].is_object();
                self.files =
                    caps["fs"]["readTextFile"] == true && caps["fs"]["writeTextFile"] == true;
            }
            ("session/new", true, _) => {
                self.creating.insert(id);
            }
            // A resume sends no history back, but it is open like a load until answered.
            ("session/load" | "session/resume", true, Some(session)) => {
                self.known.insert(session.clone());
                self.open.insert(id, (session, false));
            }
            ("session/prompt", true, Some(session)) => {
                self.open.insert(id, (session, true));
            }
            _ => {}
        }
    }

    fn read(&mut self, frame: &Value) {
        match frame["method"].as_str() {
            None => self.response(frame),
            Some("session/update") => self.update(frame),
            Some("session/request_permission") => self.permission(frame),
            Some("fs/read_text_file" | "fs/write_text_file") => self.file(frame),
            // Withdrawing a question dsh asked (a cancel while it waits) is a notification.
            Some("$/cancel_request") => assert!(
                frame.get("id").is_none()
                    && self
                        .outgoing
                        .contains(&frame["params"]["requestId"].to_string()),
                "a cancel of a request dsh never sent: {frame}"
            ),
            Some(other) => panic!("dsh sent {other}, which it never may: {frame}"),
        }
    }

    fn response(&mut self, frame: &Value) {
        let id = frame["id"].to_string();
        assert!(
            frame["id"].is_null() || self.answered.insert(id.clone()),
            "two responses for id {id}"
        );
        if self.creating.remove(&id)
            && let Some(session) = frame["result"]["sessionId"].as_str()
        {
            self.known.insert(session.to_owned());
        }
        // A refusal (a busy session, say) closes nothing: another prompt may still run.
        if let Some((session, _)) = self.open.remove(&id)
            && frame.get("result").is_some()
        {
            let unfinished: Vec<&String> = self
                .calls
                .iter()
                .filter(|((s, _), (_, finished))| self.root(s) == session && !finished)
                .map(|((_, call), _)| call)
                .collect();
            assert!(
                unfinished.is_empty(),
                "calls {unfinished:?} had no final status before the response closing {id}"
            );
        }
        if let Some(reason) = frame["result"].get("stopReason") {
            let reason = reason.as_str().unwrap_or("");
            assert!(STOP_REASONS.contains(&reason), "stop reason {reason}");
        }
    }

    /// The session the client opened that `session` is (or is a child of).
    fn root<'a>(&'a self, mut session: &'a str) -> &'a str {
        while let Some(parent) = self.children.get(session) {
            session = parent;
        }
        session
    }

    fn update(&mut self, frame: &Value) {
        let session = frame["params"]["sessionId"].as_str().unwrap_or("");
        assert!(
            self.known.contains(session),
            "an update names a session this connection never created or loaded: {frame}"
        );
        let update = &frame["params"]["update"];
        let kind = update["sessionUpdate"].as_str().unwrap_or("");
        if kind == "subagent_update" {
            assert!(
                self.subagents,
                "a subagent_update to a client that did not advertise subagents: {frame}"
            );
            let child = update["sessionId"].as_str().unwrap_or("").to_owned();
            assert!(!child.is_empty() && child != session, "{frame}");
            self.known.insert(child.clone());
            self.children.insert(child, session.to_owned());
        }
        let session = self.root(session).to_owned();
        let session = session.as_str();
        let own = frame["params"]["sessionId"].as_str().unwrap_or("");
        // The session's commands come once the client knows the session, prompt or not; an
        // option changed through another surface follows the request that changed it.
        assert!(
            matches!(
                kind,
                "available_commands_update" | "config_option_update" | "current_mode_update"
            ) || self.open.values().any(|(s, _)| s == session),
            "an update while no prompt or load of its session is open: {frame}"
        );
        let opted_in = (kind == "notice" && self.notices)
            || (kind == "compaction_update" && self.compaction)
            || (kind == "plan_update" && self.plan);
        assert!(
            UPDATES.contains(&kind) || opted_in || (kind == "subagent_update" && self.subagents),
            "update variant {kind}: {frame}"
        );
        if !self.cards {
            assert!(
                !frame.to_string().contains("\"terminal_"),
                "a terminal-card key without the client's flag: {frame}"
            );
        }
        let Some(id) = update["toolCallId"].as_str() else {
            return;
        };
        let key = (own.to_owned(), id.to_owned());
        if kind == "tool_call" {
            let pending = update.get("status").is_none_or(|s| s == "pending");
            assert!(
                self.calls.insert(key, (pending, false)).is_none(),
                "{id} announced twice"
            );
            return;
        }
        let call = self
            .calls
            .get_mut(&key)
            .unwrap_or_else(|| panic!("{id} updated before it was announced"));
        assert!(!call.1, "{id} updated after its final status");
        // Back to waiting when something (a hook of the user's) asks about it after all.
        call.0 = update["status"] == "pending";
        if matches!(update["status"].as_str(), Some("completed" | "failed")) {
            call.1 = true;
        }
    }

    /// A file request: only to a client that offered both, with a fresh id, for a session
    /// with an open prompt (a tool call is running).
    fn file(&mut self, frame: &Value) {
        assert!(
            self.files,
            "a file request to a client that did not offer fs: {frame}"
        );
        let id = frame["id"].to_string();
        assert!(
            !frame["id"].is_null() && self.outgoing.insert(id),
            "a file request without a fresh id: {frame}"
        );
        let session = frame["params"]["sessionId"].as_str().unwrap_or("");
        assert!(
            self.open
                .values()
                .any(|(s, prompt)| s == session && *prompt),
            "a file request while its session has no open prompt: {frame}"
        );
        assert!(
            frame["params"]["path"]
                .as_str()
                .is_some_and(|p| p.starts_with('/')),
            "a file request without an absolute path: {frame}"
        );
    }

    fn permission(&mut self, frame: &Value) {
        let id = frame["id"].to_string();
        assert!(
            !frame["id"].is_null() && self.outgoing.insert(id),
            "a permission request without a fresh id: {frame}"
        );
        let own = frame["params"]["sessionId"].as_str().unwrap_or("");
        let session = self.root(own);
        assert!(
            self.open
                .values()
                .any(|(s, prompt)| s == session && *prompt),
            "a permission request while its session has no open prompt: {frame}"
        );
        let session = own;
        let call = frame["params"]["toolCall"]["toolCallId"]
            .as_str()
            .unwrap_or("");
        assert!(
            self.calls
                .get(&(session.to_owned(), call.to_owned()))
                .is_some_and(|(pending, _)| *pending),
            "a permission request for a call not announced pending: {frame}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn out(frame: Value) -> Wire {
        Wire::Out(frame)
    }

    fn inn(frame: Value) -> Wire {
        Wire::In(frame)
    }

    /// A session created and one prompt open on it.
    fn opened() -> Vec<Wire> {
        vec![
            out(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}})),
            inn(json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}})),
            out(
                json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                       "params": {"sessionId": "s"}}),
            ),
        ]
    }

    fn update(update: Value) -> Wire {
        inn(json!({"jsonrpc": "2.0", "method": "session/update",
                   "params": {"sessionId": "s", "update": update}}))
    }

    fn end() -> Wire {
        inn(json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}))
    }

    fn fails(wire: Vec<Wire>, complete: bool) -> bool {
        std::panic::catch_unwind(|| check(&wire, complete)).is_err()
    }

    #[test]
    fn a_well_formed_turn_with_a_call_passes() {
        let mut wire = opened();
        wire.push(update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c"}),
        ));
        wire.push(update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed"}),
        ));
        wire.push(end());
        check(&wire, true);
    }

    #[test]
    fn each_broken_rule_is_caught() {
        let broken: Vec<(&str, Vec<Wire>, bool)> = vec![
            (
                "two responses",
                [opened(), vec![end(), end()]].concat(),
                false,
            ),
            (
                "an update after the response",
                [
                    opened(),
                    vec![
                        end(),
                        update(json!({"sessionUpdate": "agent_message_chunk"})),
                    ],
                ]
                .concat(),
                false,
            ),
            ("an unanswered request", opened(), true),
            (
                "a call left open",
                [
                    opened(),
                    vec![
                        update(json!({"sessionUpdate": "tool_call", "toolCallId": "c"})),
                        end(),
                    ],
                ]
                .concat(),
                false,
            ),
            (
                "an update before its announcement",
                [
                    opened(),
                    vec![update(
                        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c"}),
                    )],
                ]
                .concat(),
                false,
            ),
            (
                "a terminal key without the flag",
                [
                    opened(),
                    vec![update(
                        json!({"sessionUpdate": "tool_call", "toolCallId": "c",
                                       "_meta": {"terminal_info": {}}}),
                    )],
                ]
                .concat(),
                false,
            ),
            (
                "an unknown stop reason",
                [
                    opened(),
                    vec![inn(
                        json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "done"}}),
                    )],
                ]
                .concat(),
                false,
            ),
            (
                "a request other than a permission question",
                vec![inn(
                    json!({"jsonrpc": "2.0", "id": 0, "method": "fs/read_text_file"}),
                )],
                false,
            ),
        ];
        for (rule, wire, complete) in broken {
            assert!(fails(wire, complete), "{rule} passed");
        }
    }
}
