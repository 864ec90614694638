//! Session ids.

use std::collections::HashSet;

use dsh_session::{SessionId, SessionIdProblem};

#[test]
fn bad_ids_get_the_matching_error() {
    let long = "a".repeat(129);
    let cases: [(&str, SessionIdProblem); 6] = [
        ("", SessionIdProblem::Empty),
        (&long, SessionIdProblem::TooLong { len: 129 }),
        ("a\nb", SessionIdProblem::ControlChar { index: 1 }),
        ("a\u{7f}", SessionIdProblem::ControlChar { index: 1 }),
        ("a/b", SessionIdProblem::PathSeparator { index: 1 }),
        ("a\\b", SessionIdProblem::PathSeparator { index: 1 }),
    ];
    for (id, problem) in cases {
        let err = SessionId::parse(id).unwrap_err();
        assert_eq!(err.reason, problem, "{id:?}");
        assert!(
            err.to_string().starts_with("invalid session id \""),
            "{err}"
        );
    }
    let shown = SessionId::parse("a\nb").unwrap_err().to_string();
    assert_eq!(
        shown,
        "invalid session id \"a\\nb\": it holds a control character at byte 1"
    );
}

#[test]
fn good_ids_are_accepted_and_round_trip() {
    for id in [
        "a".repeat(128).as_str(),
        ".",
        "セッション-1",
        "0190f3c2-7b1e",
    ] {
        let parsed = SessionId::parse(id).unwrap();
        assert_eq!(parsed.as_str(), id);
        let json = serde_json::to_string(&parsed).unwrap();
        let back: SessionId = serde_json::from_str(&json).unwrap();
        assert_eq!(back, parsed);
        assert_eq!(id.parse::<SessionId>().unwrap(), parsed);
    }
}

#[test]
fn deserializing_an_invalid_id_fails_like_parse() {
    let err = serde_json::from_str::<SessionId>("\"a/b\"").unwrap_err();
    let parse = SessionId::parse("a/b").unwrap_err();
    assert!(err.to_string().contains(&parse.to_string()), "{err}");
}

#[test]
fn minted_ids_are_distinct_lowercase_uuid_v7() {
    let ids: HashSet<SessionId> = (0..10_000).map(|_| SessionId::mint()).collect();
    assert_eq!(ids.len(), 10_000);
    for id in ids.iter().take(100) {
        let text = id.as_str();
        assert_eq!(text.len(), 36);
        assert_eq!(text, text.to_lowercase());
        let uuid = uuid::Uuid::parse_str(text).unwrap();
        assert_eq!(uuid.get_version_num(), 7);
        assert!(SessionId::parse(text).is_ok());
    }
}
