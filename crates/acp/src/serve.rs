//! Serving one connection: the read loop, the triggers that end it, and the one teardown.

use dsh_agent::record::{CompactingRecord, ToolProgressRecord};
use dsh_llm::RetryNotice;
use dsh_session::Ephemeral;
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use dsh_agent::CancelCause;
use dsh_session::{Interest, Session, SessionEvent, SessionObserver};
use futures::future::join_all;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio_util::sync::CancellationToken;

use crate::conn::Conn;
use crate::envelope::{Incoming, classify, id_of_head};
use crate::path::Item;
use crate::rpc::{RpcError, code};
use crate::transport::{Line, LineReader, writer};
use crate::{AcpBridge, AcpError};

/// How long the writer may take to flush what is queued at the end.
const FINAL_FLUSH: Duration = Duration::from_secs(1);

/// What ended a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownReason {
    /// The client closed its end of the input.
    InputClosed,
    /// Reading the input failed.
    InputError,
    /// Writing the output failed (the client went away).
    OutputBroken,
    /// A signal, by name.
    Signal(&'static str),
}

impl std::fmt::Display for ShutdownReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShutdownReason::InputClosed => f.write_str("input-closed"),
            ShutdownReason::InputError => f.write_str("input-error"),
            ShutdownReason::OutputBroken => f.write_str("output-broken"),
            ShutdownReason::Signal(name) => f.write_str(name),
        }
    }
}

/// How a connection ended.
#[derive(Clone, Debug)]
pub struct ServeReport {
    /// The first trigger.
    pub reason: ShutdownReason,
    /// Agents still registered after the teardown (0 unless the deadline was hit).
    pub agents_left: usize,
    /// Sessions still live after the teardown (0 unless the deadline was hit).
    pub sessions_left: usize,
    /// The teardown deadline passed before everything had stopped.
    pub deadline_hit: bool,
    /// From the trigger to `serve` returning: what is left of the deadline is the caller's.
    pub teardown: Duration,
}

/// Forwards every appended event of a session this connection serves to its ordered path.
struct Watcher(Weak<Conn>);

#[async_trait]
impl SessionObserver for Watcher {
    fn name(&self) -> &str {
        "acp"
    }

    /// A child agent started by a call of a served session (or of one of its children) is
    /// followed on that session's path from its first event.
    async fn on_created(
        &self,
        session: &Session,
        published_from: u64,
    ) -> Result<(), dsh_kernel::BoxError> {
        let header = session.header();
        let (Some(parent), Some(_)) = (&header.parent, &header.parent_call) else {
            return Ok(());
        };
        if let Some(conn) = self.0.upgrade()
            && let Some(root) = conn
                .state()
                .adopt_child(header.id.as_str(), parent.as_str())
        {
            let earlier = session
                .events()
                .iter()
                .filter(|event| event.seq < published_from)
                .cloned()
                .collect();
            root.push(Item::ChildCreated {
                header: Box::new(header.clone()),
                earlier,
            });
        }
        Ok(())
    }

    fn on_append(&self, session: &Session, event: &Arc<SessionEvent>) {
        let Some(conn) = self.0.upgrade() else {
            return;
        };
        let id = session.id().as_str();
        if let Some(record) = conn.state().record(id) {
            record.push(Item::Event(event.clone()));
        } else if let Some(root) = conn.state().child_root(id) {
            root.push(Item::ChildEvent {
                session: session.id().clone(),
                event: event.clone(),
            });
        }
    }

    fn on_ephemeral(&self, session: &Session, note: &Ephemeral) {
        let item = if let Some(piece) = ToolProgressRecord::decode(note) {
            Item::Progress(piece)
        } else if let Some(compacting) = CompactingRecord::decode(note) {
            Item::Compacting(compacting)
        } else {
            return;
        };
        let Some(conn) = self.0.upgrade() else {
            return;
        };
        let id = session.id().as_str();
        if let Some(record) = conn.state().record(id) {
            record.push(item);
        } else if let Some(root) = conn.state().child_root(id)
            && let Item::Progress(piece) = item
        {
            // A child's running output, for a client that shows its session.
            root.push(Item::ChildProgress {
                session: session.id().clone(),
                piece,
            });
        }
    }
}

impl AcpBridge {
    /// Serves one connection until a shutdown trigger (end or failure of the input, a broken
    /// output, or `shutdown`), runs the teardown, and returns.
    pub async fn serve<R, W>(
        self,
        input: R,
        output: W,
        shutdown: impl Future<Output = ShutdownReason> + Send + 'static,
    ) -> Result<ServeReport, AcpError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let scope = self.scope.child("acp")?;
        let broken = CancellationToken::new();
        let (out, write_loop) = writer(output, broken.clone());
        scope.spawn(write_loop)?;
        let conn = Arc::new(Conn::new(self.config, self.services, out, scope.clone()));
        if let Err(e) = conn.services().store.subscribe(
            &scope,
            Interest::All,
            Arc::new(Watcher(Arc::downgrade(&conn))),
        ) {
            tracing::error!(error = %e, "cannot follow sessions");
            scope.dispose().await;
            return Err(AcpError::MissingService("SessionStore subscription"));
        }
        // Retries of a session's model requests, for a client that shows notices; others
        // learn the number of attempts from the final error.
        let weak = Arc::downgrade(&conn);
        let listening = scope.on(move |retry: &RetryNotice| {
            if let Some(conn) = weak.upgrade()
                && conn.state().notices()
                && let Some(id) = &retry.session_id
                && let Some(record) = conn.state().record(id)
            {
                record.push(Item::Notice(retry.line()));
            }
        });
        if let Err(e) = listening {
            tracing::debug!("retries will not be announced: {e}");
        }
        let reason = read_until_trigger(&conn, input, &broken, shutdown).await;
        tracing::info!(%reason, "connection ending");
        let triggered = std::time::Instant::now();
        let deadline = conn.config().teardown_deadline;
        let finished = tokio::time::timeout(deadline, teardown(&conn))
            .await
            .is_ok();
        if !finished {
            let open = conn.state().session_ids();
            tracing::error!(sessions = ?open, "teardown deadline reached before every session stopped");
        }
        let agents_left = conn.services().registry.list().len();
        let sessions_left = conn.services().store.list_live().len();
        conn.state().clear();
        if finished {
            let left = deadline.saturating_sub(triggered.elapsed());
            let _ = tokio::time::timeout(left, scope.dispose()).await;
        }
        tracing::info!(
            "teardown complete reason={reason} agents={agents_left} sessions={sessions_left}"
        );
        Ok(ServeReport {
            reason,
            agents_left,
            sessions_left,
            deadline_hit: !finished,
            teardown: triggered.elapsed(),
        })
    }
}

async fn read_until_trigger<R: AsyncRead + Unpin>(
    conn: &Arc<Conn>,
    input: R,
    broken: &CancellationToken,
    shutdown: impl Future<Output = ShutdownReason>,
) -> ShutdownReason {
    let limit = conn.config().max_line_bytes;
    let mut lines = LineReader::new(BufReader::with_capacity(64 * 1024, input), limit);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let first = tokio::select! {
            biased;
            () = broken.cancelled() => return ShutdownReason::OutputBroken,
            reason = &mut shutdown => return reason,
            line = lines.next() => line,
        };
        // Every line already read goes in one batch, so a cancel written together with its
        // prompt is seen before the prompt reaches the agent.
        let mut read = vec![first];
        while lines.has_buffered_line() {
            read.push(lines.next().await);
        }
        let mut frames = Vec::with_capacity(read.len());
        let mut ended = None;
        for line in read {
            match line {
                Ok(None) => ended = Some(ShutdownReason::InputClosed),
                Err(e) => {
                    tracing::info!(error = %e, "reading the input failed");
                    ended = Some(ShutdownReason::InputError);
                }
                Ok(Some(Line::TooLong { head })) => frames.push(Incoming::Refuse {
                    // Answered with its id when the part kept shows it, so a client waiting
                    // for that request's answer gets it.
                    id: id_of_head(&head),
                    error: RpcError::new(code::PARSE, "message exceeds the line limit")
                        .with_data(json!({ "limit": limit })),
                }),
                Ok(Some(Line::Text(bytes))) if bytes.iter().all(u8::is_ascii_whitespace) => {}
                Ok(Some(Line::Text(bytes))) => frames.push(classify(&bytes)),
            }
            if ended.is_some() {
                break;
            }
        }
        conn.dispatch_all(frames);
        if let Some(reason) = ended {
            return reason;
        }
    }
}

/// Stops everything in order: cancel every turn, let prompts settle, let setups finish,
/// dispose every agent, fail what still waits for the client, flush.
async fn teardown(conn: &Arc<Conn>) {
    conn.closing().cancel();
    let records = conn.state().close();
    for record in &records {
        crate::handlers::cancel_record(conn, record);
        record.agent.cancel(CancelCause::User);
    }
    let grace = conn.config().cancel_grace;
    join_all(records.iter().map(|record| record.wait_idle(grace))).await;
    conn.setups().close();
    conn.setups().wait().await;
    // A prompt whose turn never settled is answered as the session goes, while the writer
    // still runs.
    join_all(records.iter().map(|record| record.dispose())).await;
    conn.outgoing().fail_all();
    let _ = tokio::time::timeout(FINAL_FLUSH, conn.out().close()).await;
}
