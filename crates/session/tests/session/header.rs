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
    };
    let json = serde_json::to_string(&header).unwrap();
    assert_eq!(json, r#"{"version":1,"id":"s1","created_at":5,"cwd":"/w"}"#);
    let back: SessionHeader = serde_json::from_str(&json).unwrap();
    assert_eq!(back, header);
}
