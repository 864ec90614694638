//! Messages given to an agent.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A message's id: a UUID v7 string, unique per message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(Arc<str>);

impl MessageId {
    /// A fresh id.
    pub fn mint() -> MessageId {
        MessageId(uuid::Uuid::now_v7().hyphenated().to_string().into())
    }

    /// An id with a chosen text (tests, replays, clients that bring their own ids).
    pub fn from_string(id: impl Into<String>) -> MessageId {
        MessageId(id.into().into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for MessageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

// Written by hand: the workspace's serde has no `rc` feature for `Arc<str>`.
impl Serialize for MessageId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for MessageId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(MessageId(text.into()))
    }
}

/// Who a message comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MessageSource {
    /// A person, through a front end.
    User,
    /// A plugin (a background task's completion notice, for example).
    Plugin {
        /// The plugin's name.
        name: String,
    },
}

/// A message for the agent: what `user/message` records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Its id.
    pub id: MessageId,
    /// The text.
    pub text: String,
    /// Who sent it.
    pub source: MessageSource,
    /// The resources the text embeds (an editor's @-mentioned files), by URI: what the user
    /// pointed at, kept apart from the text that quotes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
}

impl UserMessage {
    /// A message from the user, with a fresh id.
    pub fn user(text: impl Into<String>) -> UserMessage {
        UserMessage {
            id: MessageId::mint(),
            text: text.into(),
            source: MessageSource::User,
            resources: Vec::new(),
        }
    }

    /// A message from the plugin `name`, with a fresh id.
    pub fn plugin(name: impl Into<String>, text: impl Into<String>) -> UserMessage {
        UserMessage {
            id: MessageId::mint(),
            text: text.into(),
            source: MessageSource::Plugin { name: name.into() },
            resources: Vec::new(),
        }
    }

    /// Embeds a text resource (a file the user pointed at) in the message: its text under
    /// its URI, fenced so the file's own code fences cannot end the block, and the URI
    /// recorded among the message's resources. Every front end embeds alike, so the model
    /// reads an editor's @-mention and a terminal's the same way.
    pub fn embed(&mut self, uri: &str, text: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(&fenced(uri, text));
        self.resources.push(uri.to_owned());
    }
}

/// `text` under its URI in a fence longer than any run of backticks inside it.
pub fn fenced(uri: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{uri}\n{fence}\n{body}\n{fence}")
}
