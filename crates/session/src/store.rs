//! `SessionStore`: the live sessions of one runtime and the
//! `prepare` → `enter` → `announce` transaction that publishes one.
//!
//! Lock order: the store's live table, then a session's publication lock. Observer callbacks
//! other than `on_append` run with no lock held.

use std::collections::HashMap;
use std::sync::Arc;

use dsh_kernel::{BoxError, Scope, contain};
use futures::future::join_all;
use parking_lot::Mutex;

use crate::error::SessionError;
use crate::event::{EventType, SessionEvent};
use crate::header::{SESSION_FORMAT_VERSION, SessionHeader, normalize_cwd};
use crate::id::SessionId;
use crate::observer::{DisposeReason, Interest, Observers, SessionObserver, Subscriber};
use crate::persistence::LoadedSession;
use crate::session::{Restored, Session, SessionState, now_ms};
use crate::vocabulary::{EventClass, EventVocabulary};

/// What `prepare` builds.
pub struct SessionSpec {
    cwd: String,
    id: Option<SessionId>,
    origin: SpecOrigin,
}

enum SpecOrigin {
    Fresh,
    Fork {
        parent: SessionId,
        seed: Vec<Arc<SessionEvent>>,
    },
    Child {
        parent: SessionId,
        call: String,
    },
    Restore(Box<LoadedSession>),
}

impl SessionSpec {
    /// A fresh session in `cwd` with a minted id.
    pub fn new(cwd: impl Into<String>) -> Self {
        SessionSpec {
            cwd: cwd.into(),
            id: None,
            origin: SpecOrigin::Fresh,
        }
    }

    /// Uses `id` instead of a minted one.
    pub fn with_id(mut self, id: SessionId) -> Self {
        self.id = Some(id);
        self
    }

    /// Forks `parent`: the new session starts with `seed` (a closed prefix of its log).
    pub fn fork(mut self, parent: SessionId, seed: Vec<Arc<SessionEvent>>) -> Self {
        self.origin = SpecOrigin::Fork { parent, seed };
        self
    }

    /// A fresh session started by `parent`'s tool call `call` (a subagent's): its header
    /// links both, and it inherits no events.
    pub fn child_of(mut self, parent: SessionId, call: impl Into<String>) -> Self {
        self.origin = SpecOrigin::Child {
            parent,
            call: call.into(),
        };
        self
    }

    /// Continues a loaded session with its stored header and events.
    pub fn restore(loaded: LoadedSession) -> Self {
        SessionSpec {
            cwd: loaded.header.cwd.clone(),
            id: Some(loaded.header.id.clone()),
            origin: SpecOrigin::Restore(Box::new(loaded)),
        }
    }
}

/// The live sessions of one runtime. Provided as a kernel service
/// (`scope.provide::<SessionStore>(store)`).
pub struct SessionStore {
    vocabulary: Arc<EventVocabulary>,
    observers: Arc<Observers>,
    live: Mutex<Live>,
}

#[derive(Default)]
struct Live {
    next_order: u64,
    sessions: HashMap<SessionId, (u64, Session)>,
}

impl Live {
    fn holds(&self, session: &Session) -> bool {
        self.sessions
            .get(session.id())
            .is_some_and(|(_, s)| s.ptr_eq(session))
    }
}

tokio::task_local! {
    /// The session whose `on_created` callbacks this task is running.
    static ANNOUNCING: usize;
}

fn key(session: &Session) -> usize {
    Arc::as_ptr(&session.inner) as usize
}

impl SessionStore {
    /// An empty store with the core vocabulary.
    pub fn new() -> Arc<SessionStore> {
        Arc::new(SessionStore {
            vocabulary: Arc::new(EventVocabulary::new()),
            observers: Arc::new(Observers::default()),
            live: Mutex::new(Live::default()),
        })
    }

    /// The store's event vocabulary.
    pub fn vocabulary(&self) -> &EventVocabulary {
        &self.vocabulary
    }

    /// Builds an unpublished session without touching the store, observers or persistence.
    pub fn prepare(&self, spec: SessionSpec) -> Result<Session, SessionError> {
        let cwd = normalize_cwd(&spec.cwd)?;
        let id = spec.id.unwrap_or_else(SessionId::mint);
        if self.live.lock().sessions.contains_key(&id) {
            return Err(SessionError::AlreadyExists { id });
        }
        let (header, events, restored) = match spec.origin {
            SpecOrigin::Fresh => (self.header(id, cwd, None, None), Vec::new(), None),
            SpecOrigin::Fork { parent, seed } => {
                self.check_seed(&seed)?;
                let len = seed.len() as u64;
                (self.header(id, cwd, Some(parent), Some(len)), seed, None)
            }
            SpecOrigin::Child { parent, call } => {
                let mut header = self.header(id, cwd, Some(parent), None);
                header.parent_call = Some(call);
                (header, Vec::new(), None)
            }
            SpecOrigin::Restore(loaded) => {
                let loaded = *loaded;
                if loaded.header.version != SESSION_FORMAT_VERSION {
                    return Err(SessionError::InvalidHeader {
                        field: "version",
                        reason: format!(
                            "version {} cannot be continued by this dsh (version {SESSION_FORMAT_VERSION})",
                            loaded.header.version
                        ),
                    });
                }
                self.check_seed(&loaded.events)?;
                let restored = Restored {
                    len: loaded.events.len() as u64,
                    revision: loaded.revision,
                };
                (loaded.header, loaded.events, Some(restored))
            }
        };
        Ok(Session::new(
            header,
            events,
            restored,
            self.vocabulary.clone(),
            self.observers.clone(),
        ))
    }

    fn header(
        &self,
        id: SessionId,
        cwd: String,
        parent: Option<SessionId>,
        seed_len: Option<u64>,
    ) -> SessionHeader {
        SessionHeader {
            version: SESSION_FORMAT_VERSION,
            id,
            created_at: now_ms(),
            cwd,
            parent,
            seed_len,
            parent_call: None,
        }
    }

    /// A seed is contiguous from 0, uses known or ignorable types and ends outside a turn.
    fn check_seed(&self, seed: &[Arc<SessionEvent>]) -> Result<(), SessionError> {
        let mut open_turn: Option<usize> = None;
        for (index, event) in seed.iter().enumerate() {
            let bad = |reason: String| Err(SessionError::InvalidSeed { index, reason });
            if event.seq != index as u64 {
                return bad(format!("seq {} where {index} was expected", event.seq));
            }
            if self.vocabulary.class(&event.kind).is_none() && !event.ignorable {
                return bad(format!("unregistered required type {}", event.kind));
            }
            match event.kind.as_str() {
                EventType::TURN_START => open_turn = Some(index),
                EventType::TURN_END => open_turn = None,
                _ => {}
            }
        }
        match open_turn {
            Some(index) => Err(SessionError::InvalidSeed {
                index,
                reason: "the seed ends inside the turn opened here".into(),
            }),
            None => Ok(()),
        }
    }

    /// The authoritative duplicate check: inserts the session atomically or refuses it.
    pub fn enter(&self, session: &Session) -> Result<(), SessionError> {
        let mut live = self.live.lock();
        let mut log = session.inner.log.lock();
        let id = session.id().clone();
        match log.state {
            SessionState::Detached => return Err(SessionError::Detached { id }),
            SessionState::Entered | SessionState::Announced => {
                return Err(SessionError::AlreadyEntered { id });
            }
            SessionState::Prepared => {}
        }
        if live.sessions.contains_key(&id) {
            return Err(SessionError::AlreadyExists { id });
        }
        let order = live.next_order;
        live.next_order += 1;
        live.sessions.insert(id, (order, session.clone()));
        log.state = SessionState::Entered;
        Ok(())
    }

    /// Publishes a live session: fixes `published_from`, then awaits every interested
    /// observer's `on_created` in subscription order. The first failure rolls the session back
    /// (removed, detached, `on_disposed(RolledBack)` delivered) and returns `Vetoed`.
    pub async fn announce(&self, session: &Session) -> Result<(), SessionError> {
        let id = session.id().clone();
        let published_from = {
            let live = self.live.lock();
            if !live.holds(session) {
                return Err(SessionError::NotLive { id });
            }
            let mut log = session.inner.log.lock();
            if log.published_from.is_some() {
                return Err(SessionError::AlreadyAnnounced { id });
            }
            let from = log.len();
            log.published_from = Some(from);
            log.announcing = true;
            from
        };
        let subscribers = self.observers.interested(&id);
        let veto = ANNOUNCING
            .scope(key(session), async {
                for sub in &subscribers {
                    let call = sub.observer.on_created(session, published_from);
                    if let Err(cause) = contained(call).await {
                        return Some((sub.observer.name().to_owned(), cause));
                    }
                }
                None
            })
            .await;
        if let Some((observer, cause)) = veto {
            self.remove(session);
            self.end_announcement(session, None);
            for sub in self.observers.interested(&id) {
                // Logged inside; a rollback reports the veto, not the disposal.
                let _ = self
                    .dispose_one(&sub, session, DisposeReason::RolledBack)
                    .await;
            }
            return Err(SessionError::Vetoed {
                id,
                observer,
                cause,
            });
        }
        if session.inner.log.lock().withdrawn {
            self.remove(session);
            self.end_announcement(session, None);
            for sub in self.observers.interested(&id) {
                let _ = self
                    .dispose_one(&sub, session, DisposeReason::RolledBack)
                    .await;
            }
            return Err(SessionError::Detached { id });
        }
        let detach_requested = self.end_announcement(session, Some(SessionState::Announced));
        if detach_requested {
            let _ = self.detach_now(session).await;
            return Err(SessionError::Detached { id });
        }
        Ok(())
    }

    /// Clears the announcing flag (setting `state` when given) and wakes waiting detaches;
    /// returns whether a detach was requested meanwhile.
    fn end_announcement(&self, session: &Session, state: Option<SessionState>) -> bool {
        let requested = {
            let mut log = session.inner.log.lock();
            log.announcing = false;
            if let Some(state) = state
                && log.state != SessionState::Detached
            {
                log.state = state;
            }
            std::mem::take(&mut log.detach_requested)
        };
        session.inner.announced.notify_waiters();
        requested
    }

    /// `prepare`, `enter` and `announce`; on any failure nothing stays live.
    pub async fn create(&self, spec: SessionSpec) -> Result<Session, SessionError> {
        let session = self.prepare(spec)?;
        self.enter(&session)?;
        self.announce(&session).await?;
        Ok(session)
    }

    /// The barrier: every interested observer's `on_flush`, concurrently; the first failure in
    /// subscription order is returned.
    pub async fn flush(&self, id: &SessionId) -> Result<(), SessionError> {
        let session = self
            .get(id)
            .ok_or_else(|| SessionError::NotLive { id: id.clone() })?;
        if ANNOUNCING
            .try_with(|k| *k == key(&session))
            .unwrap_or(false)
        {
            // From inside its own announcement: waiting for it would never end.
            return Err(SessionError::NotAnnounced { id: id.clone() });
        }
        // A barrier either makes what was appended durable or fails: before the announcement
        // no observer holds the events. One that is under way is waited for.
        loop {
            let notified = session.inner.announced.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let (announcing, state) = {
                let log = session.inner.log.lock();
                (log.announcing, log.state)
            };
            match (announcing, state) {
                (true, _) => notified.await,
                (false, SessionState::Entered) => {
                    return Err(SessionError::NotAnnounced {
                        id: session.id().clone(),
                    });
                }
                _ => break,
            }
        }
        self.flush_session(&session).await
    }

    async fn flush_session(&self, session: &Session) -> Result<(), SessionError> {
        let subscribers = self.observers.interested(session.id());
        let results = join_all(
            subscribers
                .iter()
                .map(|s| contained(s.observer.on_flush(session))),
        )
        .await;
        for (sub, result) in subscribers.iter().zip(results) {
            if let Err(cause) = result {
                return Err(SessionError::FlushFailed {
                    id: session.id().clone(),
                    observer: sub.observer.name().to_owned(),
                    cause,
                });
            }
        }
        Ok(())
    }

    /// Flushes, removes exactly this session (never a successor with its id) and delivers
    /// `on_disposed(Detached)` if it was announced. Idempotent. Called from inside the
    /// session's own `on_created`, it records the request and returns at once; `announce`
    /// completes it.
    pub async fn detach(&self, session: &Session) -> Result<(), SessionError> {
        if ANNOUNCING.try_with(|k| *k == key(session)).unwrap_or(false) {
            session.inner.log.lock().detach_requested = true;
            return Ok(());
        }
        loop {
            let notified = session.inner.announced.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if !session.inner.log.lock().announcing {
                break;
            }
            notified.await;
        }
        self.detach_now(session).await
    }

    async fn detach_now(&self, session: &Session) -> Result<(), SessionError> {
        if !self.live.lock().holds(session) {
            return Ok(());
        }
        let flushed = self.flush_session(session).await;
        let was_announced = self.remove(session);
        let mut disposed = Ok(());
        if was_announced {
            for sub in self.observers.interested(session.id()) {
                if let Err(err) = self
                    .dispose_one(&sub, session, DisposeReason::Detached)
                    .await
                    && disposed.is_ok()
                {
                    disposed = Err(err);
                }
            }
        }
        flushed.and(disposed)
    }

    /// Removes the session if it is the live one and marks it detached; returns whether it had
    /// been announced.
    fn remove(&self, session: &Session) -> bool {
        let mut live = self.live.lock();
        if live.holds(session) {
            live.sessions.remove(session.id());
        }
        let mut log = session.inner.log.lock();
        let was_announced = log.state == SessionState::Announced;
        log.state = SessionState::Detached;
        was_announced
    }

    async fn dispose_one(
        &self,
        sub: &Subscriber,
        session: &Session,
        why: DisposeReason,
    ) -> Result<(), SessionError> {
        contained(sub.observer.on_disposed(session, why))
            .await
            .map_err(|cause| {
                tracing::warn!(
                    session = %session.id(),
                    observer = sub.observer.name(),
                    "session/disposed observer failed: {cause}"
                );
                SessionError::DisposeFailed {
                    id: session.id().clone(),
                    observer: sub.observer.name().to_owned(),
                    cause,
                }
            })
    }

    /// Withdraws a session whose announcement is still running (its creator gave up while an
    /// observer, such as a persistence provider, had not answered yet): from now on `get` and
    /// `list_live` no longer show it, and when its observers return the announcement rolls
    /// back (`on_disposed(RolledBack)`) and `announce` fails with `Detached`. False, and
    /// nothing done, when the session is not announcing.
    pub fn withdraw(&self, session: &Session) -> bool {
        let mut log = session.inner.log.lock();
        if !log.announcing {
            return false;
        }
        log.withdrawn = true;
        true
    }

    /// The live session with `id`.
    pub fn get(&self, id: &SessionId) -> Option<Session> {
        self.live
            .lock()
            .sessions
            .get(id)
            .map(|(_, s)| s.clone())
            .filter(|s| !s.inner.log.lock().withdrawn)
    }

    /// The live sessions, in enter order.
    pub fn list_live(&self) -> Vec<Session> {
        let live = self.live.lock();
        let mut all: Vec<&(u64, Session)> = live
            .sessions
            .values()
            .filter(|(_, s)| !s.inner.log.lock().withdrawn)
            .collect();
        all.sort_by_key(|(order, _)| *order);
        all.into_iter().map(|(_, s)| s.clone()).collect()
    }

    /// Registers `observer` until `scope` is disposed. An observer subscribed after a session
    /// was announced hears only that session's later events.
    pub fn subscribe(
        &self,
        scope: &Scope,
        interest: Interest,
        observer: Arc<dyn SessionObserver>,
    ) -> Result<(), SessionError> {
        let id = self.observers.add(interest, observer);
        let observers = self.observers.clone();
        if let Err(err) = scope.add_disposer(move || {
            observers.remove(id);
            async {}
        }) {
            self.observers.remove(id);
            return Err(err.into());
        }
        Ok(())
    }

    /// Registers an event type (shorthand for `vocabulary().register`).
    pub fn register(&self, kind: &EventType, class: EventClass) -> Result<(), SessionError> {
        self.vocabulary.register(kind, class)
    }
}

/// Awaits an observer callback with the kernel's containment, so a panic becomes an error.
async fn contained(
    call: impl std::future::Future<Output = Result<(), BoxError>>,
) -> Result<(), BoxError> {
    match contain::poll(call).await {
        Ok(()) => Ok(()),
        Err(contain::Failure::Error(err)) => Err(err),
        Err(panic) => Err(Box::new(panic)),
    }
}
