//! The first prompt of a session whose project has hook files the user has not trusted:
//! before the prompt reaches the agent, the client is asked about each file (see
//! `crate::path::trust`), so that a file trusted now runs in this very turn. A cancel of the
//! prompt withdraws the question; the files are asked about again at the next prompt.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use dsh_hooks::{HookSource, ProjectFile};
use tokio::sync::oneshot;

use crate::conn::Conn;
use crate::live_session::LiveSession;
use crate::path::Item;
use crate::path::trust::{answered, card_id, unanswered};

/// Asks about each of `files` in turn; false when the prompt was cancelled meanwhile.
pub(super) async fn ask(
    conn: &Arc<Conn>,
    record: &Arc<LiveSession>,
    files: Vec<ProjectFile>,
) -> bool {
    let (Some(source), Some(cancelled)) = (
        conn.scope().get::<dyn HookSource>(),
        record.prompt.cancellation(),
    ) else {
        return true;
    };
    for (at, file) in files.iter().enumerate() {
        let (reply, asked) = oneshot::channel();
        let card = card_id(file, record.trust_asked.fetch_add(1, Ordering::Relaxed));
        record.push(Item::TrustHooks {
            file: file.clone(),
            card: card.clone(),
            reply,
        });
        let put_back = || {
            record
                .hooks_to_ask
                .lock()
                .extend(files[at..].iter().cloned())
        };
        let (id, answer) = tokio::select! {
            biased;
            () = cancelled.cancelled() => {
                put_back();
                return false;
            }
            asked = asked => match asked {
                Ok(Some(sent)) => sent,
                // The session's path is gone: nobody to ask.
                Ok(None) | Err(_) => return true,
            },
        };
        let update = tokio::select! {
            biased;
            () = cancelled.cancelled() => {
                conn.outgoing().withdraw(conn.out(), id);
                record.push(Item::Update(Box::new(unanswered(&card))));
                put_back();
                return false;
            }
            answer = answer => answered(&source, file, &card, answer.ok()),
        };
        record.push(Item::Update(Box::new(update)));
    }
    true
}
