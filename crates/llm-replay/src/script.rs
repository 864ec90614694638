//! The replay script format, version 1. Parsing is strict: unknown fields,
//! empty strings, `repeat: 0` and contradictory endings are refused with a position.

use std::path::{Path, PathBuf};

use dsh_llm::{FinishReason, ModelError, ModelErrorKind, Usage};
use serde::Deserialize;

/// Why a script was refused. (`Display` and `Error` are written by hand: a field named
/// `source` would otherwise be taken for the error's cause.)
#[derive(Debug)]
pub struct ScriptError {
    /// The file, or `<string>`.
    pub source: String,
    /// 1-based line (0 when not known).
    pub line: usize,
    /// 1-based column (0 when not known).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.source, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ScriptError {}

/// A parsed script.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayScript {
    /// The script's name (used in labels: `replay:<name>`).
    pub name: String,
    /// The default prompt of `dsh run`.
    pub prompt: Option<String>,
    /// The entries, in order.
    pub entries: Vec<Entry>,
}

/// One scripted model call.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawEntry")]
pub struct Entry {
    /// Which requests it accepts.
    pub matcher: Matcher,
    /// Items emitted in order.
    pub stream: Vec<Item>,
    /// How the call ends after the items.
    pub ending: Ending,
    /// Token accounting emitted before `Finish`.
    pub usage: Option<Usage>,
    /// Default delay before each item, in ms.
    pub item_delay_ms: u64,
    /// Created once the items were emitted.
    pub ready_file: Option<PathBuf>,
}

/// Conditions a request must meet (all that are given).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matcher {
    /// The request's session id.
    pub session_id: Option<String>,
    /// A substring of the last user message.
    pub last_user_contains: Option<String>,
    /// A substring of any message.
    pub any_contains: Option<String>,
}

/// What one item emits.
#[derive(Clone, Debug, PartialEq)]
pub enum ItemKind {
    /// One `ReasoningDelta` per string.
    Reasoning(Vec<String>),
    /// One `TextDelta` per string.
    Text(Vec<String>),
    /// `ToolCallStart`, one arguments delta, `ToolCallEnd`.
    ToolCall {
        /// The tool.
        name: String,
        /// The raw arguments text.
        arguments: String,
        /// The call id, when scripted.
        id: Option<String>,
    },
}

/// One stream item with its options.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawItem")]
pub struct Item {
    /// What it emits.
    pub kind: ItemKind,
    /// Delay before it, overriding the entry's default.
    pub delay_ms: Option<u64>,
    /// How many times it is emitted.
    pub repeat: u32,
}

/// How an entry ends after its items.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    /// `Usage?`, then `Finish`.
    Finish(FinishReason),
    /// The call fails with this error.
    Error(ModelError),
    /// Wait until cancelled, then `Err(Cancelled)`.
    Hang,
    /// Never yield again.
    HangIgnoringAbort,
    /// Pause without observing cancellation, then end with `inner` (or `Cancelled` if the
    /// token fired).
    Stall {
        /// The pause.
        ms: u64,
        /// The ending after it.
        then: Box<Ending>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    version: u32,
    name: Option<String>,
    prompt: Option<String>,
    entries: Vec<Entry>,
    /// Free text for the script's reader; checked to be a string, then ignored.
    #[serde(default, rename = "comment")]
    _comment: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(default)]
    stream: Vec<Item>,
    finish: Option<String>,
    usage: Option<RawUsage>,
    error: Option<RawError>,
    #[serde(default)]
    hang: bool,
    #[serde(default)]
    hang_ignoring_abort: bool,
    stall_ms: Option<u64>,
    #[serde(rename = "match")]
    matcher: Option<Matcher>,
    item_delay_ms: Option<u64>,
    ready_file: Option<PathBuf>,
    /// Free text for the script's reader; checked to be a string, then ignored.
    #[serde(default, rename = "comment")]
    _comment: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_hit_tokens: Option<u64>,
    cache_miss_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
}

/// An `error` entry: a message string, or an object with exactly the known keys. Decoded by
/// hand so an unknown key (`stauts`) is named instead of "did not match any variant".
enum RawError {
    Message(String),
    Full {
        kind: ModelErrorKind,
        message: String,
        status: Option<u16>,
        retry_after_ms: Option<u64>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawErrorObject {
    kind: ModelErrorKind,
    message: String,
    status: Option<u16>,
    retry_after_ms: Option<u64>,
}

impl<'de> Deserialize<'de> for RawError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(message) => Ok(RawError::Message(message)),
            object @ serde_json::Value::Object(_) => {
                let full: RawErrorObject = serde_json::from_value(object).map_err(|e| {
                    D::Error::custom(format!(
                        "`error` {{kind, message, status?, retry_after_ms?}}: {e}"
                    ))
                })?;
                Ok(RawError::Full {
                    kind: full.kind,
                    message: full.message,
                    status: full.status,
                    retry_after_ms: full.retry_after_ms,
                })
            }
            _ => Err(D::Error::custom(
                "`error` is a message string or an object {kind, message, status?, retry_after_ms?}",
            )),
        }
    }
}

/// A string, or a list of strings.
enum Strings {
    One(String),
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let expected = "expected a string or a list of strings";
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Strings::One(s)),
            serde_json::Value::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    serde_json::Value::String(s) => Ok(s),
                    _ => Err(D::Error::custom(expected)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Strings::Many),
            _ => Err(D::Error::custom(expected)),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    name: String,
    arguments: Option<serde_json::Value>,
    args: Option<serde_json::Value>,
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawItem {
    reasoning: Option<Strings>,
    text: Option<Strings>,
    tool_call: Option<RawCall>,
    delay_ms: Option<u64>,
    repeat: Option<u32>,
}

fn strings(s: Strings) -> Result<Vec<String>, String> {
    let list = match s {
        Strings::One(s) => vec![s],
        Strings::Many(list) => list,
    };
    if list.is_empty() || list.iter().any(String::is_empty) {
        return Err("an empty string (or list) in a stream item".into());
    }
    Ok(list)
}

impl TryFrom<RawItem> for Item {
    type Error = String;

    fn try_from(raw: RawItem) -> Result<Item, String> {
        item(raw)
    }
}

impl TryFrom<RawEntry> for Entry {
    type Error = String;

    fn try_from(raw: RawEntry) -> Result<Entry, String> {
        entry(raw)
    }
}

fn item(raw: RawItem) -> Result<Item, String> {
    let kind = match (raw.reasoning, raw.text, raw.tool_call) {
        (Some(r), None, None) => ItemKind::Reasoning(strings(r)?),
        (None, Some(t), None) => ItemKind::Text(strings(t)?),
        (None, None, Some(call)) => {
            if call.name.is_empty() {
                return Err("a tool_call with an empty name".into());
            }
            if call.id.as_deref() == Some("") {
                return Err("a tool_call with an empty `id`".into());
            }
            let arguments = match (call.arguments, call.args) {
                (Some(a), None) | (None, Some(a)) => a,
                _ => return Err("a tool_call needs exactly one of `arguments` and `args`".into()),
            };
            let arguments = match arguments {
                serde_json::Value::String(raw) => raw,
                other => other.to_string(),
            };
            ItemKind::ToolCall {
                name: call.name,
                arguments,
                id: call.id,
            }
        }
        _ => {
            return Err(
                "a stream item needs exactly one of `reasoning`, `text` and `tool_call`".into(),
            );
        }
    };
    let repeat = raw.repeat.unwrap_or(1);
    if repeat == 0 {
        return Err("`repeat` must be at least 1".into());
    }
    // Items are expanded before the call streams; a bound keeps a typo from allocating
    // hundreds of MiB.
    if repeat > MAX_REPEAT {
        return Err(format!("`repeat` is at most {MAX_REPEAT}, got {repeat}"));
    }
    Ok(Item {
        kind,
        delay_ms: raw.delay_ms,
        repeat,
    })
}

fn finish_reason(name: &str) -> Result<FinishReason, String> {
    Ok(match name {
        "stop" => FinishReason::Stop,
        "tool_calls" => FinishReason::ToolCalls,
        "length" | "max_tokens" => FinishReason::Length,
        "content_filter" | "refusal" => FinishReason::ContentFilter,
        other => return Err(format!("unknown finish {other:?}")),
    })
}

fn entry(raw: RawEntry) -> Result<Entry, String> {
    let stream = raw.stream;
    let endings = [
        raw.finish.is_some(),
        raw.error.is_some(),
        raw.hang,
        raw.hang_ignoring_abort,
    ];
    if endings.iter().filter(|e| **e).count() > 1 {
        return Err("at most one of `finish`, `error`, `hang` and `hang_ignoring_abort`".into());
    }
    if raw.stall_ms.is_some() && (raw.hang || raw.hang_ignoring_abort) {
        return Err("`stall_ms` cannot be combined with `hang` or `hang_ignoring_abort`".into());
    }
    let has_call = stream
        .iter()
        .any(|i| matches!(i.kind, ItemKind::ToolCall { .. }));
    if let Some(m) = &raw.matcher {
        for (key, value) in [
            ("session_id", &m.session_id),
            ("last_user_contains", &m.last_user_contains),
            ("any_contains", &m.any_contains),
        ] {
            if value.as_deref() == Some("") {
                return Err(format!(
                    "`match.{key}` is empty; leave it out to match anything"
                ));
            }
        }
    }
    if let Some(RawError::Message(m) | RawError::Full { message: m, .. }) = &raw.error
        && m.is_empty()
    {
        return Err("an `error` with an empty message".into());
    }
    let mut ending = if let Some(error) = raw.error {
        Ending::Error(match error {
            RawError::Message(message) => ModelError::new(ModelErrorKind::Server, message),
            RawError::Full {
                kind: ModelErrorKind::Cancelled,
                ..
            } => {
                return Err("an error entry cannot be of kind `cancelled`".into());
            }
            RawError::Full {
                kind,
                message,
                status,
                retry_after_ms,
            } => ModelError {
                kind,
                message,
                status,
                retry_after: retry_after_ms.map(std::time::Duration::from_millis),
                request_id: None,
            },
        })
    } else if raw.hang {
        Ending::Hang
    } else if raw.hang_ignoring_abort {
        Ending::HangIgnoringAbort
    } else {
        Ending::Finish(match raw.finish {
            Some(name) => finish_reason(&name)?,
            None if has_call => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        })
    };
    if let Some(ms) = raw.stall_ms {
        ending = Ending::Stall {
            ms,
            then: Box::new(ending),
        };
    }
    Ok(Entry {
        matcher: raw.matcher.unwrap_or_default(),
        stream,
        ending,
        usage: match raw.usage {
            None => None,
            Some(u) => Some(Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                total_tokens: Some(
                    u.input_tokens
                        .checked_add(u.output_tokens)
                        .ok_or("`usage`: input_tokens + output_tokens overflows a 64-bit count")?,
                ),
                cache_hit_tokens: u.cache_hit_tokens,
                cache_miss_tokens: u.cache_miss_tokens,
                reasoning_tokens: u.reasoning_tokens,
            }),
        },
        item_delay_ms: raw.item_delay_ms.unwrap_or(0),
        ready_file: raw.ready_file,
    })
}

/// The largest `repeat` of one item.
pub const MAX_REPEAT: u32 = 100_000;

const DEMO: &str = include_str!("../scripts/demo.json");

impl ReplayScript {
    /// Parses a script; `source` names it in errors and is the default name's stem.
    pub fn from_json_str(text: &str, source: &str) -> Result<ReplayScript, ScriptError> {
        let fail = |line, column, message: String| ScriptError {
            source: source.to_owned(),
            line,
            column,
            message,
        };
        let (name, prompt, entries) = if text.trim_start().starts_with('[') {
            let entries: Vec<Entry> = serde_json::from_str(text)
                .map_err(|e| fail(e.line(), e.column(), e.to_string()))?;
            (None, None, entries)
        } else {
            let script: RawScript = serde_json::from_str(text)
                .map_err(|e| fail(e.line(), e.column(), e.to_string()))?;
            if script.version != 1 {
                return Err(fail(
                    1,
                    1,
                    format!("version {} is not supported (only 1)", script.version),
                ));
            }
            for (key, value) in [("name", &script.name), ("prompt", &script.prompt)] {
                if value.as_deref() == Some("") {
                    return Err(fail(
                        1,
                        1,
                        format!("`{key}` is empty; leave it out instead"),
                    ));
                }
            }
            (script.name, script.prompt, script.entries)
        };
        let stem = Path::new(source)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "script".into());
        Ok(ReplayScript {
            name: name.unwrap_or(stem),
            prompt,
            entries,
        })
    }

    /// Reads and parses a script file.
    pub fn from_path(path: &Path) -> Result<ReplayScript, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScriptError {
            source: path.display().to_string(),
            line: 0,
            column: 0,
            message: e.to_string(),
        })?;
        ReplayScript::from_json_str(&text, &path.display().to_string())
    }

    /// A script bundled with dsh (`demo`), if one has that name.
    pub fn builtin(name: &str) -> Option<ReplayScript> {
        match name {
            "demo" => ReplayScript::from_json_str(DEMO, "demo.json").ok(),
            _ => None,
        }
    }
}
