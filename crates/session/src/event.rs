//! The event envelope and its one codec: every provider stores event records in
//! exactly this encoding, so a log written by one provider reads the same in another.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::error::SessionError;

/// The largest encoded envelope of one event.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// A validated event type name: 3..=64 bytes of `[a-z0-9_.-]` segments joined by `/`, at least
/// two non-empty segments (`turn/start`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventType(Arc<str>);

impl EventType {
    /// `turn/start`.
    pub const TURN_START: &'static str = "turn/start";
    /// `turn/end`.
    pub const TURN_END: &'static str = "turn/end";
    /// `step/start`.
    pub const STEP_START: &'static str = "step/start";
    /// `step/end`.
    pub const STEP_END: &'static str = "step/end";
    /// `user/message`.
    pub const USER_MESSAGE: &'static str = "user/message";
    /// `assistant/chunk`.
    pub const ASSISTANT_CHUNK: &'static str = "assistant/chunk";
    /// `assistant/message`.
    pub const ASSISTANT_MESSAGE: &'static str = "assistant/message";
    /// `tool/call`.
    pub const TOOL_CALL: &'static str = "tool/call";
    /// `tool/result`.
    pub const TOOL_RESULT: &'static str = "tool/result";
    /// The core vocabulary, every type `Required`.
    pub const CORE: [&'static str; 9] = [
        Self::TURN_START,
        Self::TURN_END,
        Self::STEP_START,
        Self::STEP_END,
        Self::USER_MESSAGE,
        Self::ASSISTANT_CHUNK,
        Self::ASSISTANT_MESSAGE,
        Self::TOOL_CALL,
        Self::TOOL_RESULT,
    ];

    /// Checks a type name against the grammar.
    pub fn new(kind: &str) -> Result<EventType, SessionError> {
        if valid_type(kind) {
            Ok(EventType(kind.into()))
        } else {
            Err(SessionError::InvalidEventType {
                kind: kind.to_owned(),
            })
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The event type grammar: 3 to 64 bytes of `[a-z0-9_.-]` segments joined by `/`.
pub fn valid_type(kind: &str) -> bool {
    (3..=64).contains(&kind.len())
        && kind.split('/').count() >= 2
        && kind.split('/').all(|segment| {
            !segment.is_empty()
                && segment
                    .bytes()
                    .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-'))
        })
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventType({:?})", &*self.0)
    }
}

/// One event of a session log.
#[derive(Debug)]
pub struct SessionEvent {
    /// Index in the log, contiguous from 0.
    pub seq: u64,
    /// The event's type.
    pub kind: EventType,
    /// Epoch milliseconds at append, ≥ 0.
    pub time: i64,
    /// Whether a dsh that does not know the type may skip it.
    pub ignorable: bool,
    /// The payload as compact JSON text.
    pub data: Box<RawValue>,
}

/// Why an encoded envelope was refused.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// The record is not UTF-8.
    #[error("invalid event record: not UTF-8 ({0})")]
    NotUtf8(#[source] std::str::Utf8Error),
    /// The record is not a valid envelope: not JSON, or a key missing, unknown, repeated or
    /// of the wrong type.
    #[error("invalid event record: {0}")]
    Invalid(#[source] std::sync::Arc<serde_json::Error>),
}

impl EnvelopeError {
    /// What is wrong, without the "invalid event record" prefix (for a message that names
    /// the record itself).
    pub fn detail(&self) -> String {
        match self {
            EnvelopeError::NotUtf8(e) => format!("not UTF-8 ({e})"),
            EnvelopeError::Invalid(e) => e.to_string(),
        }
    }
}

impl SessionEvent {
    /// Writes `{"seq":S,"type":"T","time":M,["ignorable":true,]"data":D}`: no whitespace
    /// outside `data`, no newline.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        // Writing into a Vec cannot fail; the type name needs no escaping.
        let _ = write!(
            out,
            "{{\"seq\":{},\"type\":\"{}\",\"time\":{},",
            self.seq, self.kind, self.time
        );
        if self.ignorable {
            out.extend_from_slice(b"\"ignorable\":true,");
        }
        out.extend_from_slice(b"\"data\":");
        out.extend_from_slice(self.data.get().as_bytes());
        out.push(b'}');
    }

    /// The encoded envelope as a `Vec`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data.get().len() + 64);
        self.encode_into(&mut out);
        out
    }

    /// Decodes one envelope: keys in any order; a missing, unknown or duplicate key, a negative
    /// or fractional `seq`/`time`, an invalid type, `"ignorable": false` and non-UTF-8 input are
    /// refused.
    pub fn decode(bytes: &[u8]) -> Result<SessionEvent, EnvelopeError> {
        let text = std::str::from_utf8(bytes).map_err(EnvelopeError::NotUtf8)?;
        serde_json::from_str::<SessionEvent>(text)
            .map_err(|e| EnvelopeError::Invalid(std::sync::Arc::new(e)))
    }
}

impl<'de> Deserialize<'de> for SessionEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

/// How many distinct type names each decoding thread remembers.
const RECENT_TYPES: usize = 32;

thread_local! {
    static RECENT: std::cell::RefCell<Vec<EventType>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `EventType::new(name)`, sharing one allocation per name per thread: a log holds a handful
/// of types over many thousands of records, and a cold load decodes them all.
fn interned(name: &str) -> Result<EventType, SessionError> {
    RECENT.with(|recent| {
        let mut recent = recent.borrow_mut();
        if let Some(kind) = recent.iter().find(|k| k.as_str() == name) {
            return Ok(kind.clone());
        }
        let kind = EventType::new(name)?;
        if recent.len() < RECENT_TYPES {
            recent.push(kind.clone());
        }
        Ok(kind)
    })
}

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = SessionEvent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event envelope object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SessionEvent, A::Error> {
        let mut seq: Option<u64> = None;
        let mut kind: Option<EventType> = None;
        let mut time: Option<u64> = None;
        let mut ignorable: Option<bool> = None;
        let mut data: Option<Box<RawValue>> = None;
        fn twice<E: de::Error>(key: &str) -> E {
            E::custom(format!("duplicate key `{key}`"))
        }
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "seq" if seq.is_some() => return Err(twice("seq")),
                "seq" => seq = Some(map.next_value()?),
                "type" if kind.is_some() => return Err(twice("type")),
                "type" => {
                    let name = map.next_value::<std::borrow::Cow<'de, str>>()?;
                    kind = Some(interned(&name).map_err(de::Error::custom)?);
                }
                "time" if time.is_some() => return Err(twice("time")),
                "time" => time = Some(map.next_value()?),
                "ignorable" if ignorable.is_some() => return Err(twice("ignorable")),
                "ignorable" => match map.next_value()? {
                    true => ignorable = Some(true),
                    false => {
                        return Err(de::Error::custom("`ignorable` is written only when true"));
                    }
                },
                "data" if data.is_some() => return Err(twice("data")),
                "data" => data = Some(map.next_value()?),
                other => return Err(de::Error::custom(format!("unknown key `{other}`"))),
            }
        }
        let missing = |key: &'static str| de::Error::custom(format!("missing key `{key}`"));
        let time = time.ok_or_else(|| missing("time"))?;
        Ok(SessionEvent {
            seq: seq.ok_or_else(|| missing("seq"))?,
            kind: kind.ok_or_else(|| missing("type"))?,
            time: i64::try_from(time).map_err(|_| de::Error::custom("`time` is out of range"))?,
            ignorable: ignorable.unwrap_or(false),
            data: data.ok_or_else(|| missing("data"))?,
        })
    }
}
