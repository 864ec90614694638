//! A parent resumed after a crash: the child agents its calls had started died with it, their
//! turns left open in their logs. Resuming the parent ends each such child's turn in its own
//! log (the same repair a load does: `turn/end` with reason `interrupted`), so no child is
//! left looking as if it still ran, and tells the parent's model which of its subagents were
//! cut off, in a notice that rides with its next step.

use dsh_agent::UserMessage;
use dsh_session::{EventVocabulary, ListQuery, SessionId, SessionPersistence, SessionStore};

/// The notice's sender.
const SENDER: &str = "subagents";

/// Ends the open turns of `parent`'s stored children (never a live one); returns each child
/// whose turn was ended now, with the call that had started it.
pub(crate) async fn end_orphans(
    persistence: &dyn SessionPersistence,
    store: &SessionStore,
    vocabulary: &EventVocabulary,
    parent: &SessionId,
    cwd: &str,
) -> Vec<(SessionId, String)> {
    let query = ListQuery {
        cwd: Some(cwd.to_owned()),
        project: None,
    };
    let listing = match persistence.list(&query).await {
        Ok(listing) => listing,
        Err(err) => {
            tracing::warn!(%parent, "the subagents of a resumed session were not checked: {err}");
            return Vec::new();
        }
    };
    let mut ended = Vec::new();
    for summary in &listing.sessions {
        let header = &summary.header;
        let (Some(of), Some(call)) = (&header.parent, &header.parent_call) else {
            continue;
        };
        if of != parent || store.get(&header.id).is_some() {
            continue;
        }
        match persistence.load(&header.id, vocabulary).await {
            Ok(loaded) if loaded.repair.closers > 0 => {
                ended.push((header.id.clone(), call.clone()))
            }
            Ok(_) => {}
            Err(err) => {
                tracing::warn!(child = %header.id, "a subagent's session was not repaired: {err}")
            }
        }
    }
    ended
}

/// What the parent's model is told of the children whose turns a crash cut off.
pub(crate) fn notice(ended: &[(SessionId, String)]) -> UserMessage {
    let list: Vec<String> = ended
        .iter()
        .map(|(child, call)| format!("`{child}` (started by your call `{call}`)"))
        .collect();
    UserMessage::plugin(
        SENDER,
        format!(
            "dsh stopped while subagents were working, so their answers never reached you: {}. \
             Their work may be partial; their sessions are ended. Run the tasks again if you \
             still need them.",
            list.join(", ")
        ),
    )
}
