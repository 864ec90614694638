//! The persistence bridge: the one store observer that feeds a
//! `SessionPersistence` provider. `on_append` only queues (it runs under the publication lock);
//! a per-session pump task hands queued events to the provider in order, coalescing whatever
//! queued meanwhile into one `append` call.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Scope};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::event::SessionEvent;
use crate::id::SessionId;
use crate::observer::{DisposeReason, SessionObserver};
use crate::persistence::{CloseIntent, Origin, SessionPersistence};
use crate::session::Session;

/// Feeds a persistence provider from the store's notifications. Subscribe exactly one, with
/// `Interest::All`, before any session is created.
///
/// Each session is bound, when it is announced, to the provider instance current at that
/// moment, and keeps it until it leaves the store. A bridge made with
/// [`PersistenceBridge::resolving`] looks the provider up as a kernel service for every new
/// session, so after the provider plugin is reloaded new sessions reach the new instance;
/// the JSONL provider refuses to unload while it still has open sessions, so no live session
/// ever loses the instance it is bound to.
pub struct PersistenceBridge {
    source: Source,
    pumps: Mutex<HashMap<SessionId, Arc<Pump>>>,
}

enum Source {
    /// One provider for every session.
    Fixed(Arc<dyn SessionPersistence>),
    /// Whatever provides `dyn SessionPersistence` when a session is announced.
    Lookup(Scope),
}

struct Pump {
    state: Mutex<PumpState>,
    /// Woken when events are queued or the pump should stop.
    work: Notify,
    /// Woken when events were handed over (or handing failed).
    progress: Notify,
}

#[derive(Default)]
struct PumpState {
    queue: Vec<Arc<SessionEvent>>,
    /// Every event below this seq was handed to the provider.
    handed: u64,
    /// Set once `create` succeeded; events queued before wait for it.
    created: bool,
    /// The provider instance this session is bound to, from `create` on.
    persistence: Option<Arc<dyn SessionPersistence>>,
    stopping: bool,
    /// A failed `append`: sticky, so no later barrier reports durability it does not have.
    failure: Option<PersistenceFailed>,
}

/// Why a session's events could not be persisted. It is sticky: every later barrier and the
/// detach of that session report this same failure.
#[derive(Clone, Debug, thiserror::Error)]
#[error("persisting the events of session {session} failed: {cause}")]
pub struct PersistenceFailed {
    /// The session.
    pub session: SessionId,
    /// What the provider's `append` did: an error it returned, or a panic.
    #[source]
    pub cause: Arc<dsh_kernel::contain::Failure>,
}

impl PersistenceBridge {
    /// A bridge to one fixed `persistence` instance.
    pub fn new(persistence: Arc<dyn SessionPersistence>) -> Arc<PersistenceBridge> {
        Arc::new(PersistenceBridge {
            source: Source::Fixed(persistence),
            pumps: Mutex::new(HashMap::new()),
        })
    }

    /// A bridge that binds each new session to the `dyn SessionPersistence` service provided
    /// when the session is announced, looked up through `scope`. Without a provider the
    /// announcement is vetoed with [`dsh_kernel::KernelError::MissingService`].
    pub fn resolving(scope: Scope) -> Arc<PersistenceBridge> {
        Arc::new(PersistenceBridge {
            source: Source::Lookup(scope),
            pumps: Mutex::new(HashMap::new()),
        })
    }

    fn resolve(&self) -> Result<Arc<dyn SessionPersistence>, BoxError> {
        match &self.source {
            Source::Fixed(persistence) => Ok(persistence.clone()),
            Source::Lookup(scope) => Ok(scope.require::<dyn SessionPersistence>()?),
        }
    }

    /// The instance a created session is bound to.
    fn bound(pump: &Pump) -> Option<Arc<dyn SessionPersistence>> {
        pump.state.lock().persistence.clone()
    }

    fn pump(&self, id: &SessionId) -> Arc<Pump> {
        self.pumps
            .lock()
            .entry(id.clone())
            .or_insert_with(|| {
                Arc::new(Pump {
                    state: Mutex::new(PumpState::default()),
                    work: Notify::new(),
                    progress: Notify::new(),
                })
            })
            .clone()
    }

    /// Hands queued events to the provider until told to stop with an empty queue.
    async fn run(persistence: Arc<dyn SessionPersistence>, id: SessionId, pump: Arc<Pump>) {
        loop {
            let notified = pump.work.notified();
            let batch = {
                let mut state = pump.state.lock();
                if state.queue.is_empty() && state.stopping {
                    return;
                }
                std::mem::take(&mut state.queue)
            };
            if batch.is_empty() {
                notified.await;
                continue;
            }
            let last = batch.last().map(|e| e.seq + 1).unwrap_or(0);
            // Contained: a provider that panics fails this session's persistence (sticky),
            // and every later barrier and detach reports it instead of waiting forever.
            let result = dsh_kernel::contain::poll(async {
                persistence
                    .append(&id, &batch)
                    .await
                    .map_err(BoxError::from)
            })
            .await;
            {
                let mut state = pump.state.lock();
                match result {
                    Ok(()) => state.handed = last,
                    Err(err) => {
                        if state.failure.is_none() {
                            tracing::warn!(session = %id, "persisting events failed: {err}");
                            state.failure = Some(PersistenceFailed {
                                session: id.clone(),
                                cause: Arc::new(err),
                            });
                        }
                        // Count them as handled so barriers stop waiting; the failure is sticky.
                        state.handed = last;
                    }
                }
            }
            pump.progress.notify_waiters();
        }
    }

    /// Waits until every event below `target` was handed over; returns the sticky failure.
    async fn drained(pump: &Pump, target: u64) -> Result<(), BoxError> {
        loop {
            let notified = pump.progress.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let state = pump.state.lock();
                if let Some(failure) = &state.failure {
                    return Err(Box::new(failure.clone()));
                }
                if state.handed >= target || !state.created {
                    return Ok(());
                }
            }
            notified.await;
        }
    }
}

#[async_trait]
impl SessionObserver for PersistenceBridge {
    fn name(&self) -> &str {
        "persistence-bridge"
    }

    async fn on_created(&self, session: &Session, published_from: u64) -> Result<(), BoxError> {
        let id = session.id().clone();
        let (origin, restored_len) = match session.restored() {
            Some(r) => (
                Origin::Resume {
                    next_seq: r.len,
                    revision: r.revision.clone(),
                },
                r.len,
            ),
            None => (Origin::New, 0),
        };
        let persistence = self.resolve()?;
        if let Err(err) = persistence.create(session.header(), origin).await {
            self.pumps.lock().remove(&id);
            return Err(err.into());
        }
        let pump = self.pump(&id);
        {
            let events = session.events();
            let mut state = pump.state.lock();
            let earlier: Vec<Arc<SessionEvent>> = events
                .iter()
                .filter(|e| e.seq >= restored_len && e.seq < published_from)
                .cloned()
                .collect();
            let mut queue = earlier;
            queue.append(&mut state.queue);
            state.queue = queue;
            state.handed = restored_len;
            state.created = true;
            state.persistence = Some(persistence.clone());
        }
        tokio::spawn(Self::run(persistence, id, pump.clone()));
        pump.work.notify_one();
        Ok(())
    }

    fn on_append(&self, session: &Session, event: &Arc<SessionEvent>) {
        let pump = self.pump(session.id());
        let was_empty = {
            let mut state = pump.state.lock();
            state.queue.push(event.clone());
            state.queue.len() == 1
        };
        // A busy pump takes the whole queue on its next round; only an idle one needs waking.
        if was_empty {
            pump.work.notify_one();
        }
    }

    async fn on_flush(&self, session: &Session) -> Result<(), BoxError> {
        let Some(pump) = self.pumps.lock().get(session.id()).cloned() else {
            return Ok(());
        };
        let Some(persistence) = Self::bound(&pump) else {
            return Ok(());
        };
        Self::drained(&pump, session.next_seq()).await?;
        persistence.flush(session.id()).await?;
        Ok(())
    }

    async fn on_disposed(&self, session: &Session, why: DisposeReason) -> Result<(), BoxError> {
        let Some(pump) = self.pumps.lock().remove(session.id()) else {
            return Ok(());
        };
        if !pump.state.lock().created {
            return Ok(());
        }
        let drained = Self::drained(&pump, session.next_seq()).await;
        pump.state.lock().stopping = true;
        pump.work.notify_one();
        let intent = match why {
            DisposeReason::Detached => CloseIntent::Flush,
            DisposeReason::RolledBack => CloseIntent::Abandon,
        };
        let closed = match Self::bound(&pump) {
            Some(persistence) => persistence.close(session.id(), intent).await,
            None => Ok(()),
        };
        drained?;
        closed?;
        Ok(())
    }
}
