//! Store observers: the store's notifications `session/created`, `session/event`,
//! `session/flush` and `session/disposed`, delivered to subscribers in subscription order and
//! contained so that one failing observer never breaks the others or the appender.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use dsh_kernel::{BoxError, CowList};

use crate::ephemeral::Ephemeral;
use crate::event::SessionEvent;
use crate::id::SessionId;
use crate::session::Session;

/// Why a session left the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisposeReason {
    /// `SessionStore::detach`.
    Detached,
    /// An observer vetoed its announcement.
    RolledBack,
}

/// Which sessions an observer hears about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interest {
    /// Every session.
    All,
    /// One session id.
    Session(SessionId),
}

impl Interest {
    fn covers(&self, id: &SessionId) -> bool {
        match self {
            Interest::All => true,
            Interest::Session(wanted) => wanted == id,
        }
    }
}

/// Something that follows sessions: the persistence bridge, the ACP renderer, tests.
#[async_trait]
pub trait SessionObserver: Send + Sync + 'static {
    /// The observer's name, for logs and errors.
    fn name(&self) -> &str;

    /// `session/created`: the session was announced; events with `seq < published_from` are
    /// read from `events()`, later ones arrive through `on_append`. An `Err` (or panic) vetoes
    /// the announcement.
    async fn on_created(&self, session: &Session, published_from: u64) -> Result<(), BoxError> {
        let _ = (session, published_from);
        Ok(())
    }

    /// `session/event`: called under the session's publication lock, so it must not block or
    /// do I/O, and must not append (that fails with `ReentrantAppend`). Panics are contained.
    fn on_append(&self, session: &Session, event: &Arc<SessionEvent>) {
        let _ = (session, event);
    }

    /// An [`Ephemeral`] notice: called as `on_append` is (under the publication lock, in order
    /// with the events), so the same rules hold, and it must be cheaper still: a publisher
    /// such as a running command's output never waits for an observer.
    fn on_ephemeral(&self, session: &Session, note: &Ephemeral) {
        let _ = (session, note);
    }

    /// `session/flush`: make everything appended so far durable. An `Err` fails the flush.
    async fn on_flush(&self, session: &Session) -> Result<(), BoxError> {
        let _ = session;
        Ok(())
    }

    /// `session/disposed`: delivered exactly once per announced session.
    async fn on_disposed(&self, session: &Session, why: DisposeReason) -> Result<(), BoxError> {
        let _ = (session, why);
        Ok(())
    }
}

/// One subscription.
#[derive(Clone)]
pub(crate) struct Subscriber {
    pub(crate) id: u64,
    pub(crate) interest: Interest,
    pub(crate) observer: Arc<dyn SessionObserver>,
}

/// The store's subscribers, shared with its sessions (which publish `on_append` themselves).
/// The kernel's copy-on-write list: readers take a snapshot and call observers with no lock
/// held, and a removed observer is dropped outside the list's lock.
#[derive(Default)]
pub(crate) struct Observers {
    list: CowList<Subscriber>,
    next: AtomicU64,
}

impl Observers {
    pub(crate) fn add(&self, interest: Interest, observer: Arc<dyn SessionObserver>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.list.push(Subscriber {
            id,
            interest,
            observer,
        });
        id
    }

    pub(crate) fn remove(&self, id: u64) {
        self.list.retain(|s| s.id != id);
    }

    /// The subscribers interested in `id`, in subscription order.
    pub(crate) fn interested(&self, id: &SessionId) -> Vec<Subscriber> {
        self.list
            .snapshot()
            .iter()
            .filter(|s| s.interest.covers(id))
            .cloned()
            .collect()
    }

    /// Calls `f` for each subscriber interested in `id`, on a snapshot (no allocation; the
    /// append hot path uses this).
    pub(crate) fn each_interested(&self, id: &SessionId, mut f: impl FnMut(&Subscriber)) {
        for sub in self
            .list
            .snapshot()
            .iter()
            .filter(|s| s.interest.covers(id))
        {
            f(sub);
        }
    }
}
