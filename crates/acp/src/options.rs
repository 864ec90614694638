//! A session's config options as ACP shows them — `model` (category `model`, which is what
//! makes Zed show its model picker), `thought_level` and `mode` — and the mode list of
//! ACP's older session modes, which name the same permission modes.
//!
//! One total function builds the option set from the session's settings, one reads a
//! client's choice back into a change: a value that is not on offer is `-32602` naming the
//! ones that are.

use agent_client_protocol_schema::v1::{
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelect,
    SessionConfigSelectOption, SessionMode, SessionModeState,
};
use dsh_agent::{ConfigChange, ConfigKey};
use dsh_llm::ReasoningEffort;
use dsh_tools::PermissionMode;

use crate::rpc::RpcError;

/// The value `thought_level` shows while no level is chosen: the server decides.
const SERVER_DEFAULT: &str = "default";

/// What a session's options are built from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Settings {
    /// The models the server offers, the session's own among them.
    pub models: Vec<String>,
    /// The model the next request goes to.
    pub model: String,
    /// The reasoning level the next request asks for; `None` leaves it to the server.
    pub thought_level: Option<ReasoningEffort>,
    /// The permission mode in force.
    pub mode: PermissionMode,
}

impl Settings {
    /// The models to offer: the server's, with the session's own first when the server
    /// does not list it (a listing that failed, or a model the server hides).
    fn model_values(&self) -> Vec<String> {
        let mut values = self.models.clone();
        if !values.contains(&self.model) {
            values.insert(0, self.model.clone());
        }
        values
    }

    /// The reasoning levels to offer: every level dsh can ask for, after "the server's
    /// default" while no level is chosen.
    fn thought_values(&self) -> Vec<&'static str> {
        let levels = ReasoningEffort::ALL
            .into_iter()
            .map(ReasoningEffort::as_str);
        match self.thought_level {
            Some(_) => levels.collect(),
            None => std::iter::once(SERVER_DEFAULT).chain(levels).collect(),
        }
    }

    /// The session's config options, in the order a client shows them.
    pub(crate) fn options(&self) -> Vec<SessionConfigOption> {
        let model = select(
            ConfigKey::Model,
            "Model",
            SessionConfigOptionCategory::Model,
            &self.model,
            self.model_values()
                .into_iter()
                .map(|m| SessionConfigSelectOption::new(m.clone(), m))
                .collect(),
        );
        let current_level = self
            .thought_level
            .map_or(SERVER_DEFAULT, ReasoningEffort::as_str);
        let levels = self
            .thought_values()
            .into_iter()
            .map(|level| SessionConfigSelectOption::new(level, level_name(level)))
            .collect();
        let thought = select(
            ConfigKey::ThoughtLevel,
            "Reasoning",
            SessionConfigOptionCategory::ThoughtLevel,
            current_level,
            levels,
        );
        let modes = PermissionMode::ALL
            .into_iter()
            .map(|mode| {
                SessionConfigSelectOption::new(mode.as_str(), mode_name(mode))
                    .description(mode_description(mode).to_owned())
            })
            .collect();
        let mode = select(
            ConfigKey::Mode,
            "Permissions",
            SessionConfigOptionCategory::Mode,
            self.mode.as_str(),
            modes,
        );
        vec![model, thought, mode]
    }

    /// The same permission modes as ACP's session modes (`session/set_mode`).
    pub(crate) fn modes(&self) -> SessionModeState {
        let available = PermissionMode::ALL
            .into_iter()
            .map(|mode| {
                SessionMode::new(mode.as_str(), mode_name(mode))
                    .description(mode_description(mode).to_owned())
            })
            .collect();
        SessionModeState::new(self.mode.as_str(), available)
    }

    /// The change a client's choice of `value` for `config_id` asks for; `Ok(None)` when it
    /// is the value the option has.
    pub(crate) fn change(
        &self,
        config_id: &str,
        value: &str,
    ) -> Result<Option<ConfigChange>, RpcError> {
        let key = ConfigKey::ALL
            .into_iter()
            .find(|key| key.as_str() == config_id)
            .ok_or_else(|| {
                RpcError::bad_field(
                    "configId",
                    format!(
                        "unknown config option {config_id:?}: the options are model, \
                         thought_level and mode"
                    ),
                )
            })?;
        let unknown = |valid: Vec<String>| {
            RpcError::bad_field(
                "value",
                format!(
                    "{value:?} is not a value of {config_id}: expected one of {}",
                    valid.join(", ")
                ),
            )
        };
        match key {
            ConfigKey::Model => {
                let valid = self.model_values();
                if !valid.iter().any(|m| m == value) {
                    return Err(unknown(valid));
                }
                Ok((value != self.model).then(|| ConfigChange::Model(value.to_owned())))
            }
            ConfigKey::ThoughtLevel => {
                let valid = self.thought_values();
                if !valid.contains(&value) {
                    return Err(unknown(valid.into_iter().map(str::to_owned).collect()));
                }
                let level = ReasoningEffort::parse(value);
                Ok((level != self.thought_level)
                    .then_some(level)
                    .flatten()
                    .map(ConfigChange::ThoughtLevel))
            }
            ConfigKey::Mode => {
                let mode = value.parse::<PermissionMode>().map_err(|_| {
                    unknown(
                        PermissionMode::ALL
                            .iter()
                            .map(|m| m.as_str().to_owned())
                            .collect(),
                    )
                })?;
                Ok((mode != self.mode).then_some(ConfigChange::Mode(mode)))
            }
            // Not in `ALL`: no client can name it.
            ConfigKey::Server => Err(RpcError::bad_field(
                "configId",
                "the server is not a session option",
            )),
        }
    }

    /// The settings after `change`.
    pub(crate) fn apply(&mut self, change: &ConfigChange) {
        match change {
            ConfigChange::Model(model) => self.model = model.clone(),
            ConfigChange::ThoughtLevel(level) => self.thought_level = Some(*level),
            ConfigChange::Mode(mode) => self.mode = *mode,
            // The editor's connection has one server; a session's record of another changes
            // no picker.
            ConfigChange::Server(_) => {}
        }
    }
}

fn select(
    key: ConfigKey,
    name: &str,
    category: SessionConfigOptionCategory,
    current: &str,
    options: Vec<SessionConfigSelectOption>,
) -> SessionConfigOption {
    SessionConfigOption::new(
        key.as_str(),
        name,
        SessionConfigKind::Select(SessionConfigSelect::new(current.to_owned(), options)),
    )
    .category(category)
}

fn level_name(level: &str) -> String {
    match level {
        SERVER_DEFAULT => "Server default".to_owned(),
        other => {
            let mut chars = other.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        }
    }
}

fn mode_name(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Ask => "Ask",
        PermissionMode::AcceptEdits => "Accept edits",
        PermissionMode::Allow => "Allow all",
    }
}

fn mode_description(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Ask => "Edits and commands ask first; reads never do",
        PermissionMode::AcceptEdits => {
            "Edits inside the project run; commands and edits outside it ask"
        }
        PermissionMode::Allow => "Nothing asks",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            models: vec!["deepseek-chat".into(), "deepseek-reasoner".into()],
            model: "deepseek-chat".into(),
            thought_level: None,
            mode: PermissionMode::Ask,
        }
    }

    #[test]
    fn each_choice_reads_as_its_change_and_a_value_not_on_offer_names_those_that_are() {
        use ConfigChange as C;
        let s = settings();
        // (option, value, the change or a piece of the refusal's message)
        type Row<'a> = (&'a str, &'a str, Result<Option<ConfigChange>, &'a str>);
        let table: [Row; 10] = [
            (
                "model",
                "deepseek-reasoner",
                Ok(Some(C::Model("deepseek-reasoner".into()))),
            ),
            ("model", "deepseek-chat", Ok(None)),
            (
                "model",
                "gpt-9",
                Err("expected one of deepseek-chat, deepseek-reasoner"),
            ),
            (
                "thought_level",
                "low",
                Ok(Some(C::ThoughtLevel(ReasoningEffort::Low))),
            ),
            ("thought_level", "default", Ok(None)),
            (
                "thought_level",
                "extreme",
                Err("default, off, low, medium, high, max"),
            ),
            (
                "mode",
                "accept-edits",
                Ok(Some(C::Mode(PermissionMode::AcceptEdits))),
            ),
            ("mode", "ask", Ok(None)),
            (
                "mode",
                "acceptEdits",
                Err("expected one of ask, accept-edits, allow"),
            ),
            ("speed", "fast", Err("unknown config option \"speed\"")),
        ];
        for (id, value, want) in table {
            match (s.change(id, value), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{id}={value}"),
                (Err(got), Err(needle)) => {
                    assert_eq!(got.code, crate::rpc::code::INVALID_PARAMS);
                    assert!(
                        got.message.contains(needle),
                        "{id}={value}: {}",
                        got.message
                    );
                }
                (got, want) => panic!("{id}={value}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn the_options_show_the_current_values_and_a_model_the_server_does_not_list() {
        let mut s = settings();
        s.model = "local-only".into();
        s.apply(&ConfigChange::ThoughtLevel(ReasoningEffort::High));
        let options = serde_json::to_value(s.options()).unwrap();
        assert_eq!(options[0]["id"], "model");
        assert_eq!(options[0]["category"], "model");
        assert_eq!(options[0]["currentValue"], "local-only");
        assert_eq!(options[0]["options"][0]["value"], "local-only");
        assert_eq!(options[0]["options"].as_array().unwrap().len(), 3);
        assert_eq!(options[1]["currentValue"], "high");
        // Once a level is chosen, "the server's default" is no longer on offer.
        assert_eq!(options[1]["options"].as_array().unwrap().len(), 5);
        assert_eq!(options[2]["category"], "mode");
        assert_eq!(options[2]["currentValue"], "ask");
        let modes = serde_json::to_value(s.modes()).unwrap();
        assert_eq!(modes["currentModeId"], "ask");
        assert_eq!(modes["availableModes"].as_array().unwrap().len(), 3);
    }
}
