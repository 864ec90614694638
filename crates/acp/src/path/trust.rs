//! The editor's question about a project's hook files that are not trusted, in the window of
//! the session's first prompt before it reaches the agent: one card a file showing what it
//! would run, with "trust" and "don't run" answers; the card ends with the answer (completed:
//! trusted; failed: not), so no card is left open when the prompt is answered.

use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionUpdate, ToolCall, ToolCallContent,
    ToolCallId, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use dsh_hooks::{HookSource, ProjectFile};
use dsh_tools::safe_text::SafeText;
use tokio::sync::oneshot;

use super::OrderedPath;
use crate::outgoing::Answer;

/// The answer that trusts the file.
const TRUST: &str = "trust";

/// The card of the `nth` question of a session about `file`: a card id is never reused.
pub(crate) fn card_id(file: &ProjectFile, nth: u32) -> String {
    let short: String = file.sha256.chars().take(12).collect();
    format!("dsh-hooks-trust-{short}-{nth}")
}

fn text(text: String) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::from(text))
}

impl OrderedPath {
    /// Announces `file`'s card and asks about it; its request's id and answer go to `reply`.
    pub(super) async fn ask_trust(
        &mut self,
        file: &ProjectFile,
        card: &str,
        reply: oneshot::Sender<Option<(i64, Answer)>>,
    ) {
        let path = SafeText::plain(&file.path.display().to_string()).to_string();
        let mut runs = String::from("They would run:\n");
        for line in &file.runs {
            runs.push_str(&format!("- `{}`\n", SafeText::plain(line)));
        }
        runs.push_str(
            "\nA project's hooks run only once you trust the file as it is now; \
             a change needs trust again.",
        );
        let id = ToolCallId::new(card);
        let card = ToolCall::new(id.clone(), format!("Trust the hooks of {path}?"))
            .kind(ToolKind::Other)
            .status(ToolCallStatus::Pending)
            .content(vec![text(runs)])
            .locations(vec![ToolCallLocation::new(file.path.clone())]);
        self.send(vec![SessionUpdate::ToolCall(card)]).await;
        let options = vec![
            PermissionOption::new(
                TRUST,
                "Trust and run them",
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new("skip", "Don't run them", PermissionOptionKind::RejectOnce),
        ];
        let request = RequestPermissionRequest::new(
            self.session.id.as_str().to_owned(),
            ToolCallUpdate::new(id, ToolCallUpdateFields::new()),
            options,
        );
        self.ask(request, reply).await;
    }
}

/// What the editor's answer did to `file`: its card's closing update. Only the "trust"
/// answer trusts; a dismissed dialog, another answer or none leaves it untrusted.
pub(crate) fn answered(
    source: &Arc<dyn HookSource>,
    file: &ProjectFile,
    card: &str,
    answer: Option<Result<serde_json::Value, serde_json::Value>>,
) -> SessionUpdate {
    let chosen = match answer {
        Some(Ok(result)) => serde_json::from_value::<RequestPermissionResponse>(result)
            .ok()
            .map(|response| response.outcome),
        Some(Err(_)) | None => None,
    };
    let trust = matches!(
        &chosen,
        Some(RequestPermissionOutcome::Selected(selected)) if selected.option_id.0.as_ref() == TRUST
    );
    let (status, said) = match trust {
        true => match source.trust(file) {
            Ok(()) => (ToolCallStatus::Completed, "Trusted: they run.".to_owned()),
            Err(e) => (ToolCallStatus::Failed, format!("Not trusted: {e}.")),
        },
        false => (
            ToolCallStatus::Failed,
            "Not trusted: they do not run (`dsh hooks trust` trusts them later).".to_owned(),
        ),
    };
    let fields = ToolCallUpdateFields::new()
        .status(status)
        .content(vec![text(said)]);
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(ToolCallId::new(card), fields))
}

/// The closing update of `file`'s card when its question was withdrawn (the prompt was
/// cancelled): asked again at the next prompt.
pub(crate) fn unanswered(card: &str) -> SessionUpdate {
    let fields = ToolCallUpdateFields::new()
        .status(ToolCallStatus::Failed)
        .content(vec![text(
            "Not answered: they do not run; asked again at the next prompt.".to_owned(),
        )]);
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(ToolCallId::new(card), fields))
}
