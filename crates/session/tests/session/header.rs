//! The header's working directory.

use dsh_session::{SessionError, SessionHeader, SessionId, normalize_cwd};

#[test]
fn cwd_is_normalized_lexically() {
    assert_eq!(normalize_cwd("/a//b/./").unwrap(), "/a/b");
    assert_eq!(normalize_cwd("/").unwrap(), "/");
    assert_eq!(normalize_cwd("/a/../b").unwrap(), "/a/../b", "`..` is kept");
    assert_eq!(normalize_cwd("//x///").unwrap(), "/x");
}

#[test]
fn relative_or_nul_cwd_is_refused() {
    for bad in ["rel/dir", "", "./x", "/a\0b"] {
        match normalize_cwd(bad) {
            Err(SessionError::InvalidHeader { field, .. }) => assert_eq!(field, "cwd"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
}

#[test]
fn optional_header_fields_are_omitted() {
    let header = SessionHeader {
        version: 1,
        id: SessionId::parse("s1").unwrap(),
        created_at: 5,
        cwd: "/w".into(),
        parent: None,
        seed_len: None,
        parent_call: None,
    };
    let json = serde_json::to_string(&header).unwrap();
    assert_eq!(json, r#"{"version":1,"id":"s1","created_at":5,"cwd":"/w"}"#);
    let back: SessionHeader = serde_json::from_str(&json).unwrap();
    assert_eq!(back, header);
}

#[test]
fn a_child_session_names_its_parent_and_the_call_and_inherits_nothing() {
    let store = dsh_session::SessionStore::new();
    let parent = SessionId::parse("parent-1").unwrap();
    let child = store
        .prepare(dsh_session::SessionSpec::new("/w").child_of(parent.clone(), "call_7"))
        .unwrap();
    let header = child.header();
    assert_eq!(header.parent, Some(parent));
    assert_eq!(header.parent_call.as_deref(), Some("call_7"));
    assert_eq!(header.seed_len, None);
    let json = serde_json::to_string(header).unwrap();
    assert!(
        json.contains(r#""parent":"parent-1","parent_call":"call_7""#),
        "{json}"
    );
    let back: SessionHeader = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, header);
}
