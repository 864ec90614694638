//! A session's settings that a person changes while it runs — the model, the reasoning level
//! and the permission mode — and the server its requests went to, and the `config/changed`
//! record that makes each change durable.
//!
//! A session starts from what the front end was configured with (flags, environment, config
//! file); a change made later (an editor's picker, a command) is recorded, and a loaded or
//! resumed session is back where it was left: [`SessionConfig::replay`] folds the records.

use dsh_llm::ReasoningEffort;
use dsh_session::SessionEvent;
use dsh_tools::PermissionMode;
use serde::{Deserialize, Serialize};

/// The kind of [`ConfigChangedRecord`]. Ignorable: an older dsh loads the log and runs with
/// its configured settings.
pub const CONFIG_CHANGED: &str = "config/changed";

/// Which setting a change is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigKey {
    /// The model the next requests go to.
    Model,
    /// The reasoning level.
    ThoughtLevel,
    /// The permission mode.
    Mode,
    /// The model server (its base URL, never a key) the front end sent the session's
    /// requests to: a session continued elsewhere goes back to it. Not a picker: a process
    /// talks to one server, so only the front end that chose it records it.
    Server,
}

impl ConfigKey {
    /// Every key a person picks, in the order a front end shows them ([`ConfigKey::Server`]
    /// is not one).
    pub const ALL: [ConfigKey; 3] = [ConfigKey::Model, ConfigKey::ThoughtLevel, ConfigKey::Mode];

    /// The key's name, as ACP's config options and the log spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigKey::Model => "model",
            ConfigKey::ThoughtLevel => "thought_level",
            ConfigKey::Mode => "mode",
            ConfigKey::Server => "server",
        }
    }
}

/// Who made a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigOrigin {
    /// A command-line flag.
    Flag,
    /// An ACP client (an editor's picker).
    Acp,
    /// A slash command.
    Command,
}

/// One change of one setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigChange {
    /// Another model of the same provider.
    Model(String),
    /// Another reasoning level.
    ThoughtLevel(ReasoningEffort),
    /// Another permission mode.
    Mode(PermissionMode),
    /// Another model server (a base URL).
    Server(String),
}

impl ConfigChange {
    /// The setting it changes.
    pub fn key(&self) -> ConfigKey {
        match self {
            ConfigChange::Model(_) => ConfigKey::Model,
            ConfigChange::ThoughtLevel(_) => ConfigKey::ThoughtLevel,
            ConfigChange::Mode(_) => ConfigKey::Mode,
            ConfigChange::Server(_) => ConfigKey::Server,
        }
    }

    /// The new value as the log spells it.
    pub fn value(&self) -> String {
        match self {
            ConfigChange::Model(model) => model.clone(),
            ConfigChange::ThoughtLevel(level) => level.as_str().to_owned(),
            ConfigChange::Mode(mode) => mode.as_str().to_owned(),
            ConfigChange::Server(url) => url.clone(),
        }
    }
}

/// `config/changed`: a setting took a new value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigChangedRecord {
    /// The setting.
    pub key: ConfigKey,
    /// Its value before, when the session had one recorded or configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// Its value from now on.
    pub new: String,
    /// Who changed it.
    pub origin: ConfigOrigin,
}

impl ConfigChangedRecord {
    /// The change the record holds; `None` for a value this dsh does not know (a reasoning
    /// level or mode of a newer dsh), which a replay then skips.
    pub fn change(&self) -> Option<ConfigChange> {
        match self.key {
            ConfigKey::Model => Some(ConfigChange::Model(self.new.clone())),
            ConfigKey::ThoughtLevel => {
                ReasoningEffort::parse(&self.new).map(ConfigChange::ThoughtLevel)
            }
            ConfigKey::Mode => self.new.parse().ok().map(ConfigChange::Mode),
            ConfigKey::Server => Some(ConfigChange::Server(self.new.clone())),
        }
    }
}

/// The settings a session's log has recorded; `None` is "as configured".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionConfig {
    /// The model chosen for the session.
    pub model: Option<String>,
    /// The reasoning level chosen.
    pub thought_level: Option<ReasoningEffort>,
    /// The permission mode chosen.
    pub mode: Option<PermissionMode>,
    /// The server the front end last sent requests to.
    pub server: Option<String>,
}

impl SessionConfig {
    /// Applies one change.
    pub fn apply(&mut self, change: &ConfigChange) {
        match change {
            ConfigChange::Model(model) => self.model = Some(model.clone()),
            ConfigChange::ThoughtLevel(level) => self.thought_level = Some(*level),
            ConfigChange::Mode(mode) => self.mode = Some(*mode),
            ConfigChange::Server(url) => self.server = Some(url.clone()),
        }
    }

    /// The value of `key` as the log spells it, when one was chosen.
    pub fn value(&self, key: ConfigKey) -> Option<String> {
        match key {
            ConfigKey::Model => self.model.clone(),
            ConfigKey::ThoughtLevel => self.thought_level.map(|l| l.as_str().to_owned()),
            ConfigKey::Mode => self.mode.map(|m| m.as_str().to_owned()),
            ConfigKey::Server => self.server.clone(),
        }
    }

    /// The settings `events` leave: every `config/changed` in order, unreadable ones skipped.
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a SessionEvent>) -> SessionConfig {
        let mut config = SessionConfig::default();
        for event in events {
            if event.kind.as_str() != CONFIG_CHANGED {
                continue;
            }
            if let Some(change) = serde_json::from_str::<ConfigChangedRecord>(event.data.get())
                .ok()
                .and_then(|record| record.change())
            {
                config.apply(&change);
            }
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_its_change_and_an_unknown_value_as_none() {
        let record = |key, new: &str| ConfigChangedRecord {
            key,
            old: None,
            new: new.into(),
            origin: ConfigOrigin::Acp,
        };
        let cases = [
            (
                record(ConfigKey::Model, "m2"),
                Some(ConfigChange::Model("m2".into())),
            ),
            (
                record(ConfigKey::ThoughtLevel, "low"),
                Some(ConfigChange::ThoughtLevel(ReasoningEffort::Low)),
            ),
            (
                record(ConfigKey::Mode, "accept-edits"),
                Some(ConfigChange::Mode(PermissionMode::AcceptEdits)),
            ),
            (record(ConfigKey::ThoughtLevel, "extreme"), None),
            (record(ConfigKey::Mode, "yolo"), None),
        ];
        for (record, want) in cases {
            assert_eq!(record.change(), want, "{record:?}");
            if let Some(change) = want {
                assert_eq!(change.key(), record.key);
                assert_eq!(change.value(), record.new);
            }
        }
    }
}
