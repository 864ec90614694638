//! Hook configuration: dsh's TOML (`[[hooks.<Event>]]` in `config.toml`, the same or
//! `[[<Event>]]` in `.dsh/hooks.toml`) and Claude Code's JSON (`.claude/settings.json`'s
//! `hooks`), read into one list per event.
//!
//! ```toml
//! [[hooks.PreToolUse]]
//! matcher = "Bash"
//! hooks = [{ command = "~/bin/guard.sh", timeout_ms = 5000, on_error = "deny" }]
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use dsh_hooks::{BadMatcher, HookEvent, Matcher, OnError, UnknownEvent};
use serde_json::Value as Json;
use toml::Value as Toml;

/// A handler's timeout when it names none (Claude Code's default is a minute; a hook that
/// runs at every tool call should be quick).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest timeout a handler may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// Where a hook was configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The user's own configuration file.
    User(PathBuf),
    /// A project's `.dsh/hooks.toml`.
    Project(PathBuf),
    /// A project's `.claude/settings.json`.
    Claude(PathBuf),
}

impl Source {
    /// The file.
    pub fn path(&self) -> &PathBuf {
        match self {
            Source::User(path) | Source::Project(path) | Source::Claude(path) => path,
        }
    }

    /// Whether it is a project's file (run only once trusted).
    pub fn is_project(&self) -> bool {
        match self {
            Source::User(_) => false,
            Source::Project(_) | Source::Claude(_) => true,
        }
    }
}

/// One handler.
#[derive(Clone, Debug)]
pub struct Handler {
    /// The `bash -c` text.
    pub command: String,
    /// Its deadline.
    pub timeout: Duration,
    /// What its failure means.
    pub on_error: OnError,
    /// Whether it runs in the sandbox (only the user's own file may say no).
    pub sandbox: bool,
    /// Where it was configured.
    pub source: Source,
}

/// A matcher and its handlers.
#[derive(Clone, Debug)]
pub struct Group {
    /// Which subjects it runs for.
    pub matcher: Matcher,
    /// The matcher as written, for listings.
    pub pattern: String,
    /// Its handlers, in order.
    pub handlers: Vec<Handler>,
}

/// Every configured group, by event, in configuration order.
#[derive(Clone, Debug, Default)]
pub struct HookConfig {
    /// The groups of each event.
    pub events: BTreeMap<HookEvent, Vec<Group>>,
}

/// A configuration that cannot be used, naming the file and the place.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// An event dsh does not have.
    #[error("{file}: {source}")]
    Event {
        /// The file.
        file: String,
        /// The event.
        source: UnknownEvent,
    },
    /// A matcher that is not a regular expression.
    #[error("{file}: {event}: {source}")]
    Matcher {
        /// The file.
        file: String,
        /// The event.
        event: HookEvent,
        /// Why.
        source: BadMatcher,
    },
    /// A file that cannot be read, or is not TOML or JSON.
    #[error("{file}: {reason}")]
    File {
        /// The file.
        file: String,
        /// Why.
        reason: String,
    },
    /// Anything else of the wrong shape.
    #[error("{file}: {at}: {what}")]
    Shape {
        /// The file.
        file: String,
        /// Where in it.
        at: String,
        /// What is wrong.
        what: String,
    },
}

impl HookConfig {
    /// Adds the groups of another file after these (a project's after the user's).
    pub fn extend(&mut self, other: HookConfig) {
        for (event, groups) in other.events {
            self.events.entry(event).or_default().extend(groups);
        }
    }

    /// Every handler, with its event and group, for listings.
    pub fn handlers(&self) -> impl Iterator<Item = (HookEvent, &Group, &Handler)> {
        self.events.iter().flat_map(|(event, groups)| {
            groups
                .iter()
                .flat_map(move |group| group.handlers.iter().map(move |h| (*event, group, h)))
        })
    }

    /// Whether no handler is configured.
    pub fn is_empty(&self) -> bool {
        self.events
            .values()
            .all(|groups| groups.iter().all(|g| g.handlers.is_empty()))
    }

    /// The hooks of a TOML table whose keys are event names (`[hooks]` of `config.toml`, or a
    /// whole `.dsh/hooks.toml`, which may also nest them under `[hooks]`).
    pub fn from_toml(table: &Toml, source: &Source) -> Result<HookConfig, ConfigError> {
        let file = source.path().display().to_string();
        let table = match table.get("hooks") {
            Some(inner @ Toml::Table(_)) => inner,
            Some(_) | None => table,
        };
        let Some(events) = table.as_table() else {
            return Err(shape(&file, "hooks", "is not a table"));
        };
        let mut config = HookConfig::default();
        for (name, groups) in events {
            // A project file's own settings (none yet) live beside the events.
            let event: HookEvent = name.parse().map_err(|source| ConfigError::Event {
                file: file.clone(),
                source,
            })?;
            let Some(groups) = groups.as_array() else {
                return Err(shape(
                    &file,
                    name,
                    "is not a list of matcher groups ([[hooks.Event]])",
                ));
            };
            for (at, group) in groups.iter().enumerate() {
                let at = format!("{name}[{at}]");
                let pattern = match group.get("matcher") {
                    None => None,
                    Some(Toml::String(p)) => Some(p.as_str()),
                    Some(_) => return Err(shape(&file, &at, "matcher is not a string")),
                };
                let matcher = matcher(&file, event, pattern)?;
                let Some(list) = group.get("hooks").and_then(Toml::as_array) else {
                    return Err(shape(&file, &at, "has no `hooks` list of handlers"));
                };
                let mut handlers = Vec::new();
                for (n, handler) in list.iter().enumerate() {
                    let at = format!("{at}.hooks[{n}]");
                    handlers.push(toml_handler(&file, &at, event, handler, source)?);
                }
                config.events.entry(event).or_default().push(Group {
                    matcher,
                    pattern: pattern.unwrap_or_default().to_owned(),
                    handlers,
                });
            }
        }
        Ok(config)
    }

    /// The hooks of Claude Code's settings (`{"hooks": {"PreToolUse": [{"matcher": …,
    /// "hooks": [{"type": "command", "command": …, "timeout": seconds}]}]}}`), as written.
    /// Events dsh does not have are skipped with a warning: the file is Claude Code's.
    pub fn from_claude(
        settings: &Json,
        source: &Source,
    ) -> Result<(HookConfig, Vec<String>), ConfigError> {
        let file = source.path().display().to_string();
        let mut config = HookConfig::default();
        let mut warnings = Vec::new();
        let Some(events) = settings.get("hooks") else {
            return Ok((config, warnings));
        };
        let Some(events) = events.as_object() else {
            return Err(shape(&file, "hooks", "is not an object"));
        };
        for (name, groups) in events {
            let Ok(event) = name.parse::<HookEvent>() else {
                warnings.push(format!("{file}: the hook event `{name}` is Claude Code's alone; its hooks do not run in dsh"));
                continue;
            };
            let Some(groups) = groups.as_array() else {
                return Err(shape(&file, name, "is not a list of matcher groups"));
            };
            for (at, group) in groups.iter().enumerate() {
                let at = format!("{name}[{at}]");
                let matcher = matcher(&file, event, group.get("matcher").and_then(Json::as_str))?;
                let mut handlers = Vec::new();
                for (n, handler) in group
                    .get("hooks")
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let at = format!("{at}.hooks[{n}]");
                    if handler
                        .get("type")
                        .and_then(Json::as_str)
                        .unwrap_or("command")
                        != "command"
                    {
                        warnings.push(format!("{file}: {at}: only command hooks run in dsh"));
                        continue;
                    }
                    let Some(command) = handler.get("command").and_then(Json::as_str) else {
                        return Err(shape(&file, &at, "has no command"));
                    };
                    let timeout = match handler.get("timeout").and_then(Json::as_f64) {
                        Some(secs) if secs > 0.0 => {
                            Duration::from_secs_f64(secs.min(MAX_TIMEOUT.as_secs_f64()))
                        }
                        Some(_) | None => DEFAULT_TIMEOUT,
                    };
                    handlers.push(Handler {
                        command: command.to_owned(),
                        timeout,
                        on_error: OnError::Allow,
                        sandbox: true,
                        source: source.clone(),
                    });
                }
                config.events.entry(event).or_default().push(Group {
                    matcher,
                    pattern: group
                        .get("matcher")
                        .and_then(Json::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    handlers,
                });
            }
        }
        Ok((config, warnings))
    }
}

fn matcher(file: &str, event: HookEvent, pattern: Option<&str>) -> Result<Matcher, ConfigError> {
    Matcher::new(pattern).map_err(|source| ConfigError::Matcher {
        file: file.to_owned(),
        event,
        source,
    })
}

fn shape(file: &str, at: &str, what: &str) -> ConfigError {
    ConfigError::Shape {
        file: file.to_owned(),
        at: at.to_owned(),
        what: what.to_owned(),
    }
}

fn toml_handler(
    file: &str,
    at: &str,
    event: HookEvent,
    handler: &Toml,
    source: &Source,
) -> Result<Handler, ConfigError> {
    let Some(command) = handler.get("command").and_then(Toml::as_str) else {
        return Err(shape(file, at, "has no `command`"));
    };
    if command.trim().is_empty() {
        return Err(shape(file, at, "`command` is empty"));
    }
    let timeout = match handler.get("timeout_ms") {
        None => DEFAULT_TIMEOUT,
        Some(Toml::Integer(ms)) if *ms > 0 => Duration::from_millis(*ms as u64).min(MAX_TIMEOUT),
        Some(_) => return Err(shape(file, at, "`timeout_ms` is not a positive number")),
    };
    // A guard from a project's own file fails closed unless it says otherwise.
    let default = match (event, source) {
        (HookEvent::PreToolUse, Source::Project(_)) => OnError::Deny,
        _ => OnError::Allow,
    };
    let on_error = match handler.get("on_error").and_then(Toml::as_str) {
        None => default,
        Some("allow") => OnError::Allow,
        Some("deny") => OnError::Deny,
        Some(other) => {
            return Err(shape(
                file,
                at,
                &format!("`on_error` is `{other}`; it is \"allow\" or \"deny\""),
            ));
        }
    };
    let sandbox = match handler.get("sandbox") {
        None => true,
        Some(Toml::Boolean(sandboxed)) => *sandboxed,
        Some(_) => return Err(shape(file, at, "`sandbox` is not true or false")),
    };
    if !sandbox && source.is_project() {
        return Err(shape(
            file,
            at,
            "`sandbox = false` is honoured only in your own configuration, never in a project's file",
        ));
    }
    Ok(Handler {
        command: command.to_owned(),
        timeout,
        on_error,
        sandbox,
        source: source.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> Source {
        Source::User("/home/u/.config/dsh/config.toml".into())
    }

    fn project() -> Source {
        Source::Project("/p/.dsh/hooks.toml".into())
    }

    #[test]
    fn a_toml_file_reads_into_groups_with_defaults_by_source() {
        let text = r#"
            [[PreToolUse]]
            matcher = "Bash"
            hooks = [{ command = "guard.sh" }, { command = "audit.sh", on_error = "allow", timeout_ms = 500 }]

            [[Stop]]
            hooks = [{ command = "make check" }]
        "#;
        let table: Toml = toml::from_str(text).unwrap();
        let config = HookConfig::from_toml(&table, &project()).unwrap();
        let pre = &config.events[&HookEvent::PreToolUse][0];
        assert!(pre.matcher.matches(&["Bash", "bash"]));
        assert_eq!(
            pre.handlers[0].on_error,
            OnError::Deny,
            "a project's guard fails closed"
        );
        assert_eq!(pre.handlers[1].on_error, OnError::Allow);
        assert_eq!(pre.handlers[1].timeout, Duration::from_millis(500));
        assert_eq!(
            config.events[&HookEvent::Stop][0].handlers[0].timeout,
            DEFAULT_TIMEOUT
        );
        // The user's own guard does not, unless it says so; `[hooks]` nests the same.
        let nested: Toml =
            toml::from_str("[[hooks.PreToolUse]]\nhooks = [{ command = \"g\", sandbox = false }]")
                .unwrap();
        let mine = HookConfig::from_toml(&nested, &user()).unwrap();
        let handler = &mine.events[&HookEvent::PreToolUse][0].handlers[0];
        assert_eq!((handler.on_error, handler.sandbox), (OnError::Allow, false));
    }

    #[test]
    fn a_bad_file_is_refused_naming_the_place() {
        let refused = |text: &str, source: Source| {
            let table: Toml = toml::from_str(text).unwrap();
            HookConfig::from_toml(&table, &source)
                .unwrap_err()
                .to_string()
        };
        assert!(
            refused("[[PreToolUze]]\nhooks = []", user())
                .contains("unknown hook event `PreToolUze`")
        );
        assert!(
            refused("[[Stop]]\nmatcher = \"(\"\nhooks = []", user())
                .contains("is not a regular expression")
        );
        assert!(
            refused(
                "[[Stop]]\nhooks = [{ command = \"x\", on_error = \"maybe\" }]",
                user()
            )
            .contains("Stop[0].hooks[0]: `on_error` is `maybe`")
        );
        assert!(
            refused(
                "[[Stop]]\nhooks = [{ command = \"x\", sandbox = false }]",
                project()
            )
            .contains("never in a project's file")
        );
        assert!(refused("[[Stop]]\nmatcher = \"x\"", user()).contains("has no `hooks` list"));
    }

    #[test]
    fn claude_code_s_settings_read_as_documented() {
        let settings: Json = serde_json::from_str(
            r#"{"hooks": {
                "PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/check.py", "timeout": 30}]}],
                "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}],
                "SessionEnd": [{"hooks": [{"type": "command", "command": "bye"}]}]
            }, "permissions": {"allow": []}}"#,
        )
        .unwrap();
        let source = Source::Claude("/p/.claude/settings.json".into());
        let (config, warnings) = HookConfig::from_claude(&settings, &source).unwrap();
        let pre = &config.events[&HookEvent::PreToolUse][0];
        assert!(pre.matcher.matches(&["Write", "write"]));
        assert_eq!(pre.handlers[0].timeout, Duration::from_secs(30));
        assert_eq!(
            pre.handlers[0].on_error,
            OnError::Allow,
            "as Claude Code runs it"
        );
        assert_eq!(
            config.events[&HookEvent::UserPromptSubmit][0].handlers[0].command,
            "date"
        );
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("`SessionEnd`"), "{warnings:?}");
        assert_eq!(config.handlers().count(), 2);
    }
}
