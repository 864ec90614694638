//! The event vocabulary: which types this build can write and reload, and which of them
//! an older or newer dsh may skip.

use std::collections::BTreeMap;
use std::sync::RwLock;

use crate::error::SessionError;
use crate::event::EventType;

/// Whether a dsh that does not know a type must refuse the log (`Required`) or may skip the
/// event (`Ignorable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventClass {
    /// Unknown to a reader: the log is unloadable.
    Required,
    /// Unknown to a reader: the event is skipped.
    Ignorable,
}

/// A concurrent, grow-only set of event types with their class.
#[derive(Debug)]
pub struct EventVocabulary {
    types: RwLock<BTreeMap<EventType, EventClass>>,
}

impl Default for EventVocabulary {
    fn default() -> Self {
        Self::new()
    }
}

impl EventVocabulary {
    /// The core vocabulary, every type `Required`.
    pub fn new() -> EventVocabulary {
        let types = EventType::CORE
            .iter()
            .filter_map(|kind| EventType::new(kind).ok())
            .map(|kind| (kind, EventClass::Required))
            .collect();
        EventVocabulary {
            types: RwLock::new(types),
        }
    }

    /// Registers `kind`; registering a known type again with the same class is a no-op, with a
    /// different class a `VocabularyConflict`.
    pub fn register(&self, kind: &EventType, class: EventClass) -> Result<(), SessionError> {
        let mut types = self
            .types
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match types.get(kind) {
            Some(existing) if *existing != class => Err(SessionError::VocabularyConflict {
                kind: kind.to_string(),
            }),
            Some(_) => Ok(()),
            None => {
                types.insert(kind.clone(), class);
                Ok(())
            }
        }
    }

    /// A copy of the vocabulary as it is now (for work on other threads).
    pub fn snapshot(&self) -> EventVocabulary {
        let types = self
            .types
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        EventVocabulary {
            types: RwLock::new(types),
        }
    }

    /// The class of `kind`, if registered.
    pub fn class(&self, kind: &EventType) -> Option<EventClass> {
        self.types
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(kind)
            .copied()
    }
}
