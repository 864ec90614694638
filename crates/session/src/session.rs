//! `Session`: a header plus an append-only, in-memory log. Appends are synchronous and
//! totally ordered; once the session is announced every append is published to the store's
//! observers under the session's publication lock.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use dsh_kernel::contain;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Notify;

use crate::ephemeral::Ephemeral;
use crate::error::SessionError;
use crate::event::{EventType, MAX_EVENT_BYTES, SessionEvent};
use crate::header::SessionHeader;
use crate::id::SessionId;
use crate::observer::Observers;
use crate::observer::SessionObserver;
use crate::persistence::StoreRevision;
use crate::vocabulary::{EventClass, EventVocabulary};

/// Where a session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionState {
    /// Built by `prepare`, not in the store.
    Prepared,
    /// Live in the store, not announced.
    Entered,
    /// Announced: observers hear its appends.
    Announced,
    /// Removed from its store; appends fail.
    Detached,
}

/// How a restored session continues its stored log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restored {
    /// How many events came from storage.
    pub len: u64,
    /// The stored log's revision when it was loaded.
    pub revision: StoreRevision,
}

/// A session: cheap to clone (handles to one log), `Send + Sync`.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    header: SessionHeader,
    vocabulary: Arc<EventVocabulary>,
    observers: Arc<Observers>,
    restored: Option<Restored>,
    /// The publication lock.
    pub(crate) log: Mutex<Log>,
    /// Woken when an announcement ends.
    pub(crate) announced: Notify,
}

pub(crate) struct Log {
    events: Vec<Arc<SessionEvent>>,
    snapshot: Option<Arc<[Arc<SessionEvent>]>>,
    pub(crate) state: SessionState,
    /// Fixed when `announce` starts; events from here on are published.
    pub(crate) published_from: Option<u64>,
    pub(crate) announcing: bool,
    pub(crate) detach_requested: bool,
    /// Withdrawn while announcing: hidden from lookups, rolled back when announcing ends.
    pub(crate) withdrawn: bool,
    last_time: i64,
}

thread_local! {
    /// Set while this thread runs an `on_append` callback (of any session): appends from here
    /// would deadlock or reorder publication, so they are refused.
    static IN_ON_APPEND: Cell<bool> = const { Cell::new(false) };
}

/// Wall-clock epoch milliseconds, clamped to ≥ 0.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// An upper bound of the envelope around `data`, with 20-digit `seq` and `time`.
fn envelope_bound(kind: &EventType, ignorable: bool, data: &str) -> usize {
    let fixed = r#"{"seq":,"type":"","time":,"data":}"#.len() + 2 * 20;
    fixed + kind.as_str().len() + data.len() + if ignorable { 17 } else { 0 }
}

impl Session {
    pub(crate) fn new(
        header: SessionHeader,
        events: Vec<Arc<SessionEvent>>,
        restored: Option<Restored>,
        vocabulary: Arc<EventVocabulary>,
        observers: Arc<Observers>,
    ) -> Session {
        let last_time = events.last().map(|e| e.time).unwrap_or(0);
        Session {
            inner: Arc::new(Inner {
                header,
                vocabulary,
                observers,
                restored,
                log: Mutex::new(Log {
                    events,
                    snapshot: None,
                    state: SessionState::Prepared,
                    published_from: None,
                    announcing: false,
                    detach_requested: false,
                    withdrawn: false,
                    last_time,
                }),
                announced: Notify::new(),
            }),
        }
    }

    /// The session id (also the agent id and the shell owner token).
    pub fn id(&self) -> &SessionId {
        &self.inner.header.id
    }

    /// The immutable header.
    pub fn header(&self) -> &SessionHeader {
        &self.inner.header
    }

    /// How a restored session continues its stored log; `None` for a new one.
    pub fn restored(&self) -> Option<&Restored> {
        self.inner.restored.as_ref()
    }

    /// Where the session is in its life.
    pub fn state(&self) -> SessionState {
        self.inner.log.lock().state
    }

    /// The seq the next append will get.
    pub fn next_seq(&self) -> u64 {
        self.inner.log.lock().events.len() as u64
    }

    /// True when both handles name the same session object.
    pub fn ptr_eq(&self, other: &Session) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Appends an event: validates the type, serializes `data` once, checks the size, refuses a
    /// reentrant or detached append, then assigns the seq and time, commits and publishes. A
    /// refusal leaves the log unchanged and consumes no seq.
    pub fn append<T: Serialize + ?Sized>(
        &self,
        kind: &EventType,
        data: &T,
    ) -> Result<Arc<SessionEvent>, SessionError> {
        let ignorable = match self.inner.vocabulary.class(kind) {
            None => {
                return Err(SessionError::UnknownEventType {
                    kind: kind.to_string(),
                });
            }
            Some(class) => class == EventClass::Ignorable,
        };
        let invalid = |reason: String| SessionError::InvalidData {
            kind: kind.to_string(),
            reason,
        };
        // Serialized once, straight into the raw value (no second parse to validate it).
        let raw = serde_json::value::to_raw_value(data).map_err(|e| invalid(e.to_string()))?;
        // serde_json writes NaN and infinities as `null`; only then is the value walked again,
        // to tell a real `null` from a non-finite float.
        if raw.get().contains("null") {
            crate::finite::check(data).map_err(|e| invalid(e.to_string()))?;
        }
        let data = raw;
        let bytes = envelope_bound(kind, ignorable, data.get());
        if bytes > MAX_EVENT_BYTES {
            return Err(SessionError::EventTooLarge {
                kind: kind.to_string(),
                bytes,
                limit: MAX_EVENT_BYTES,
            });
        }
        if IN_ON_APPEND.get() {
            return Err(SessionError::ReentrantAppend {
                id: self.id().clone(),
            });
        }
        let mut log = self.inner.log.lock();
        if log.state == SessionState::Detached {
            return Err(SessionError::Detached {
                id: self.id().clone(),
            });
        }
        let time = now_ms().max(log.last_time);
        let event = Arc::new(SessionEvent {
            seq: log.events.len() as u64,
            kind: kind.clone(),
            time,
            ignorable,
            data,
        });
        log.last_time = time;
        log.events.push(event.clone());
        log.snapshot = None;
        if log.published_from.is_some() {
            self.publish(&event);
        }
        drop(log);
        Ok(event)
    }

    /// Tells the live session's observers `data` as an ephemeral `kind`, in order with its
    /// events, without storing it. Nothing is told before the session is announced or after it
    /// is detached (`Ok(false)`); a reentrant call, from an observer, is refused as an append
    /// would be.
    pub fn notify<T: Serialize + ?Sized>(
        &self,
        kind: &EventType,
        data: &T,
    ) -> Result<bool, SessionError> {
        let data =
            serde_json::value::to_raw_value(data).map_err(|e| SessionError::InvalidData {
                kind: kind.to_string(),
                reason: e.to_string(),
            })?;
        if IN_ON_APPEND.get() {
            return Err(SessionError::ReentrantAppend {
                id: self.id().clone(),
            });
        }
        let log = self.inner.log.lock();
        if log.state == SessionState::Detached || log.published_from.is_none() {
            return Ok(false);
        }
        let note = Ephemeral {
            kind: kind.clone(),
            before_seq: log.events.len() as u64,
            data: data.into(),
        };
        self.each_observer(note.kind.as_str(), |observer| {
            observer.on_ephemeral(self, &note);
        });
        drop(log);
        Ok(true)
    }

    /// Delivers `event` to every interested observer; called with the publication lock held.
    fn publish(&self, event: &Arc<SessionEvent>) {
        self.each_observer(event.kind.as_str(), |observer| {
            observer.on_append(self, event)
        });
    }

    /// Calls `deliver` for every interested observer with appends refused and panics
    /// contained; called with the publication lock held.
    fn each_observer(&self, what: &str, deliver: impl Fn(&dyn SessionObserver)) {
        self.inner.observers.each_interested(self.id(), |sub| {
            IN_ON_APPEND.set(true);
            let outcome = contain::call(|| {
                deliver(&*sub.observer);
                Ok(())
            });
            IN_ON_APPEND.set(false);
            if let Err(failure) = outcome {
                tracing::warn!(
                    session = %self.id(),
                    observer = sub.observer.name(),
                    event = what,
                    "session observer {failure}"
                );
            }
        });
    }

    /// A snapshot of the log that never changes; two calls with no append between return the
    /// same allocation.
    pub fn events(&self) -> Arc<[Arc<SessionEvent>]> {
        let mut log = self.inner.log.lock();
        if let Some(snapshot) = &log.snapshot {
            return snapshot.clone();
        }
        let snapshot: Arc<[Arc<SessionEvent>]> = log.events.as_slice().into();
        log.snapshot = Some(snapshot.clone());
        snapshot
    }

    /// The events from seq `seq` on, in order (none when `seq` is past the end): what a reader
    /// that keeps its own incremental view needs, without the whole-log copy a fresh
    /// [`Session::events`] snapshot costs after an append.
    pub fn events_from(&self, seq: u64) -> Vec<Arc<SessionEvent>> {
        let log = self.inner.log.lock();
        let start = usize::try_from(seq).unwrap_or(usize::MAX);
        log.events
            .get(start..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }
}

impl Log {
    pub(crate) fn len(&self) -> u64 {
        self.events.len() as u64
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", self.id())
            .field("state", &self.state())
            .finish()
    }
}
