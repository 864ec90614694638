//! The envelope codec and the type grammar.

use dsh_session::{EventType, SessionError, SessionEvent};
use serde_json::value::RawValue;

fn event(seq: u64, kind: &str, ignorable: bool, data: &str) -> SessionEvent {
    SessionEvent {
        seq,
        kind: EventType::new(kind).unwrap(),
        time: 1_767_225_600_100,
        ignorable,
        data: RawValue::from_string(data.to_owned()).unwrap(),
    }
}

#[test]
fn encode_is_canonical_and_round_trips_byte_for_byte() {
    let e = event(
        6,
        "turn/end",
        false,
        r#"{"turn":1,"reason":{"kind":"completed"}}"#,
    );
    let bytes = e.encode();
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        r#"{"seq":6,"type":"turn/end","time":1767225600100,"data":{"turn":1,"reason":{"kind":"completed"}}}"#
    );
    let back = SessionEvent::decode(&bytes).unwrap();
    assert_eq!(back.encode(), bytes);

    let ignorable = event(7, "todo/write", true, r#"["x",1,null]"#);
    let bytes = ignorable.encode();
    assert!(
        String::from_utf8_lossy(&bytes)
            .contains(r#""time":1767225600100,"ignorable":true,"data":"#)
    );
    let back = SessionEvent::decode(&bytes).unwrap();
    assert!(back.ignorable);
    assert_eq!(back.encode(), bytes);
}

#[test]
fn keys_may_come_in_any_order() {
    let e = SessionEvent::decode(br#"{"data":{"turn":1},"time":5,"type":"turn/start","seq":0}"#)
        .unwrap();
    assert_eq!((e.seq, e.time, e.kind.as_str()), (0, 5, "turn/start"));
    assert_eq!(e.data.get(), r#"{"turn":1}"#);
}

#[test]
fn malformed_envelopes_are_refused() {
    let bad: [&[u8]; 11] = [
        br#"{"type":"turn/start","time":5,"data":{}}"#,
        br#"{"seq":0,"type":"turn/start","time":5,"data":{},"extra":1}"#,
        br#"{"seq":0,"seq":1,"type":"turn/start","time":5,"data":{}}"#,
        br#"{"seq":-1,"type":"turn/start","time":5,"data":{}}"#,
        br#"{"seq":0,"type":"turn/start","time":5.5,"data":{}}"#,
        br#"{"seq":0,"type":"Turn/Start","time":5,"data":{}}"#,
        br#"{"seq":0,"type":"turn/start","time":-5,"data":{}}"#,
        br#"{"seq":0,"type":"turn/start","time":5,"ignorable":false,"data":{}}"#,
        b"{\"seq\":0,\"type\":\"turn/start\",\"time\":5,\"data\":\"\xff\"}",
        br#"{"seq":0,"type":"turn/start","time":5,"data":{}"#,
        br#"[0,"turn/start",5,{}]"#,
    ];
    for bytes in bad {
        assert!(
            SessionEvent::decode(bytes).is_err(),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn type_names_follow_the_grammar() {
    for good in ["turn/start", "todo/write", "a/b", "x.y-z_1/q/r"] {
        assert_eq!(EventType::new(good).unwrap().as_str(), good);
    }
    let long = format!("a/{}", "b".repeat(63));
    for bad in [
        "",
        "Turn/start",
        "turn",
        "/x",
        "a//b",
        "x/",
        "a b/c",
        long.as_str(),
    ] {
        assert!(
            matches!(
                EventType::new(bad),
                Err(SessionError::InvalidEventType { .. })
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn a_refused_envelope_says_which_way_it_is_wrong() {
    use dsh_session::EnvelopeError;
    let not_utf8 = SessionEvent::decode(b"{\"seq\":0,\"data\":\"\xff\"}").unwrap_err();
    assert!(
        matches!(not_utf8, EnvelopeError::NotUtf8(_)),
        "{not_utf8:?}"
    );
    assert!(not_utf8.detail().starts_with("not UTF-8"), "{not_utf8}");
    let missing = SessionEvent::decode(br#"{"type":"turn/start","time":5,"data":{}}"#).unwrap_err();
    assert!(matches!(missing, EnvelopeError::Invalid(_)), "{missing:?}");
    assert_eq!(
        missing.to_string(),
        format!("invalid event record: {}", missing.detail())
    );
}
