//! A copy-on-write list for subscriber tables read on hot paths: readers take a snapshot
//! without a lock and call into it with nothing held; writers build a new list and swap it in.
//!
//! What a writer replaces or removes is dropped only after the writer's own lock is released,
//! because dropping a subscriber can run foreign code (a captured value's `Drop`) that may call
//! back into the list.

use std::ops::Deref;
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};
use parking_lot::Mutex;

/// A list of subscribers: lock-free snapshots for readers, serialised copy-on-write edits.
pub struct CowList<T> {
    items: ArcSwap<Vec<T>>,
    /// Serialises edits, so two concurrent edits never lose one another.
    edit: Mutex<()>,
}

/// A read-only view of a [`CowList`] as it was when the snapshot was taken. Hold it only for
/// the length of one delivery: it pins that version of the list.
pub struct Snapshot<T>(Guard<Arc<Vec<T>>>);

impl<T> Deref for Snapshot<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.0.as_slice()
    }
}

impl<T> Default for CowList<T> {
    fn default() -> Self {
        CowList {
            items: ArcSwap::from_pointee(Vec::new()),
            edit: Mutex::new(()),
        }
    }
}

impl<T: Clone> CowList<T> {
    /// Appends `item`; later snapshots see it last.
    pub fn push(&self, item: T) {
        let guard = self.edit.lock();
        let old = self.items.load_full();
        let mut next = Vec::with_capacity(old.len() + 1);
        next.extend(old.iter().cloned());
        next.push(item);
        let replaced = self.items.swap(Arc::new(next));
        drop(guard);
        drop((old, replaced));
    }

    /// Removes every item for which `keep` returns false, and returns how many were removed.
    /// The removed items are dropped after the edit lock is released.
    pub fn retain(&self, mut keep: impl FnMut(&T) -> bool) -> usize {
        let guard = self.edit.lock();
        let old = self.items.load_full();
        let (kept, removed): (Vec<T>, Vec<T>) = old.iter().cloned().partition(|item| keep(item));
        let count = removed.len();
        let replaced = (count > 0).then(|| self.items.swap(Arc::new(kept)));
        drop(guard);
        drop((old, replaced, removed));
        count
    }

    /// Removes every item and returns them, so the caller decides where they are dropped.
    pub fn take_all(&self) -> Vec<T> {
        let guard = self.edit.lock();
        let old = self.items.swap(Arc::new(Vec::new()));
        drop(guard);
        Arc::unwrap_or_clone(old)
    }
}

impl<T> CowList<T> {
    /// The list as it is now. Cheap: no lock, no allocation.
    pub fn snapshot(&self) -> Snapshot<T> {
        Snapshot(self.items.load())
    }

    /// True when the list holds nothing.
    pub fn is_empty(&self) -> bool {
        self.items.load().is_empty()
    }

    /// How many items the list holds.
    pub fn len(&self) -> usize {
        self.items.load().len()
    }
}
