//! The vocabulary grows and refuses conflicts.

use dsh_session::{EventClass, EventType, EventVocabulary, SessionError};

#[test]
fn core_types_are_required_and_new_types_register_once() {
    let vocabulary = EventVocabulary::new();
    for core in EventType::CORE {
        assert_eq!(
            vocabulary.class(&EventType::new(core).unwrap()),
            Some(EventClass::Required)
        );
    }
    let todo = EventType::new("todo/write").unwrap();
    assert_eq!(vocabulary.class(&todo), None);
    vocabulary.register(&todo, EventClass::Ignorable).unwrap();
    vocabulary.register(&todo, EventClass::Ignorable).unwrap();
    assert_eq!(vocabulary.class(&todo), Some(EventClass::Ignorable));
    assert!(matches!(
        vocabulary.register(&todo, EventClass::Required),
        Err(SessionError::VocabularyConflict { .. })
    ));
    let turn_start = EventType::new(EventType::TURN_START).unwrap();
    assert!(
        vocabulary
            .register(&turn_start, EventClass::Ignorable)
            .is_err()
    );
}
