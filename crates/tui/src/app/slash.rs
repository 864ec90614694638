//! The slash commands: the front end's own (`/model`, `/mode`, `/new` …) and the session's
//! (`/compact`, `/init`, the user's from `.dsh/commands/`), one menu for both.

use std::time::Instant;

use dsh_agent::ConfigChange;
use dsh_agent::commands::Invocation;
use dsh_llm::ReasoningEffort;
use dsh_tools::PermissionMode;
use dsh_tools::safe_text::SafeText;

use super::{App, Effect, Pick, Popup};
use crate::menu::{Entry, Menu};
use crate::transcript::prompt_lines;

/// The front end's own commands, with what the menu says of them.
const OWN: &[(&str, &str)] = &[
    ("help", "the keys and the commands"),
    ("model", "choose the model, from the next request on"),
    ("reasoning", "how hard the model thinks"),
    (
        "mode",
        "when edits and commands ask first: ask, accept-edits, allow",
    ),
    ("new", "start a new session here"),
    ("resume", "open another session of this directory"),
    ("cost", "what the session used and cost so far"),
    ("quit", "end dsh (Ctrl-D does too)"),
];

/// The reasoning levels a picker offers.
const LEVELS: [ReasoningEffort; 5] = [
    ReasoningEffort::Off,
    ReasoningEffort::Low,
    ReasoningEffort::Medium,
    ReasoningEffort::High,
    ReasoningEffort::Max,
];

fn level_word(level: ReasoningEffort) -> &'static str {
    match level {
        ReasoningEffort::Off => "off",
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
        ReasoningEffort::Max => "max",
    }
}

/// The keys, for `/help`.
const KEYS: &[&str] = &[
    "Enter sends (while a turn runs: steers it) · Alt+Enter, Shift+Enter or a trailing \\ adds a line",
    "Up/Down walk this project's prompts · @ completes a path and attaches the file · / opens the commands",
    "Esc cancels the turn · Ctrl-C cancels, twice quits · Ctrl-D on an empty line quits",
];

impl App {
    /// The menu's entries: the front end's commands, then the session's.
    pub(super) fn menu_entries(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = OWN.iter().map(|(n, d)| Entry::plain(*n, *d)).collect();
        for command in self.commands.list() {
            if !OWN.iter().any(|(n, _)| *n == command.name) {
                entries.push(Entry::plain(
                    command.name.clone(),
                    SafeText::plain(&command.description),
                ));
            }
        }
        entries
    }

    /// Runs the command `text` (it starts with `/`).
    pub(super) fn slash(&mut self, text: &str, now: Instant, effects: &mut Vec<Effect>) {
        let rest = text.trim_start().trim_start_matches('/');
        let (name, argument) = match rest.split_once(char::is_whitespace) {
            Some((name, argument)) => (name, argument.trim()),
            None => (rest.trim_end(), ""),
        };
        // The scrollback says what was asked: a command of the front end's, or a compaction
        // (a command that sends a prompt shows itself as the prompt it sends).
        if OWN.iter().any(|(own, _)| *own == name) || name == "exit" || name == "compact" {
            self.collect();
            self.scrollback
                .extend(prompt_lines(&SafeText::plain(text.trim())));
        }
        match (name, argument) {
            ("help", _) => {
                for line in KEYS {
                    self.say(line);
                }
                let names: Vec<String> = self
                    .menu_entries()
                    .iter()
                    .map(|e| format!("/{} {}", e.value, e.note))
                    .collect();
                for line in names {
                    self.say(&line);
                }
            }
            ("quit" | "exit", _) => {
                self.quit = true;
                effects.push(Effect::Quit);
            }
            ("model", "") => effects.push(Effect::ListModels),
            ("model", model) => self.picked(Pick::Model, model, effects),
            ("reasoning", "") => {
                let entries = LEVELS
                    .iter()
                    .map(|l| Entry::plain(level_word(*l), ""))
                    .collect();
                self.popup = Some(Popup::Picker(Pick::Reasoning, Menu::new(entries)));
            }
            ("reasoning", level) => self.picked(Pick::Reasoning, level, effects),
            ("mode", "") => {
                let entries = PermissionMode::ALL
                    .iter()
                    .map(|m| Entry::plain(m.as_str(), mode_note(*m)))
                    .collect();
                self.popup = Some(Popup::Picker(Pick::Mode, Menu::new(entries)));
            }
            ("mode", mode) => self.picked(Pick::Mode, mode, effects),
            ("new", _) if self.turn.is_some() => self.say("a turn is running: Esc cancels it"),
            ("new", _) => effects.push(Effect::NewSession),
            ("resume", _) if self.turn.is_some() => self.say("a turn is running: Esc cancels it"),
            ("resume", "") => effects.push(Effect::ListSessions),
            ("resume", id) => effects.push(Effect::Resume(id.to_owned())),
            ("cost", _) => {
                let mut parts = self.tally.footer();
                if parts.is_empty() {
                    parts.push("nothing used yet".into());
                }
                let line = format!("{} · {}", self.tally.steps, parts.join(" · "));
                let line = format!("model calls: {line}");
                self.say(&line);
            }
            _ => match self.commands.invoke(text) {
                Some(Invocation::Compact) if self.turn.is_some() => {
                    self.say("a turn is running: compact once it ended");
                }
                Some(Invocation::Compact) => {
                    effects.push(Effect::Compact);
                    self.ticket(now);
                }
                Some(Invocation::Prompt(prompt)) => self.send(text, &prompt, now, effects),
                None => match self.commands.unknown(text) {
                    Some(_) => {
                        let known: Vec<String> = self
                            .menu_entries()
                            .iter()
                            .map(|e| format!("/{}", e.value))
                            .collect();
                        let line = format!(
                            "there is no command /{}; the commands are {}",
                            SafeText::plain(name),
                            known.join(", ")
                        );
                        self.error(&line);
                    }
                    // `/usr/bin is missing` is a question, not a command.
                    None => self.send(text, text, now, effects),
                },
            },
        }
    }

    /// The user chose `value` in a picker (or gave it after the command).
    pub(super) fn picked(&mut self, pick: Pick, value: &str, effects: &mut Vec<Effect>) {
        match pick {
            Pick::Model => {
                self.status.model = SafeText::plain(value);
                effects.push(Effect::Configure(ConfigChange::Model(value.to_owned())));
                let line = format!("model: {} from the next request on", self.status.model);
                self.say(&line);
            }
            Pick::Reasoning => match LEVELS.iter().find(|l| level_word(**l) == value) {
                Some(level) => {
                    self.status.reasoning = Some(level_word(*level).to_owned());
                    effects.push(Effect::Configure(ConfigChange::ThoughtLevel(*level)));
                    self.say(&format!("reasoning: {}", level_word(*level)));
                }
                None => self.error(&format!(
                    "no reasoning level {}; the levels are off, low, medium, high, max",
                    SafeText::plain(value)
                )),
            },
            Pick::Mode => match value.parse::<PermissionMode>() {
                Ok(mode) => {
                    self.status.mode = mode.as_str().to_owned();
                    effects.push(Effect::Configure(ConfigChange::Mode(mode)));
                    self.say(&format!("mode: {} ({})", mode.as_str(), mode_note(mode)));
                }
                Err(_) => self.error(&format!(
                    "no mode {}; the modes are ask, accept-edits, allow",
                    SafeText::plain(value)
                )),
            },
            Pick::Session => effects.push(Effect::Resume(value.to_owned())),
        }
    }
}

fn mode_note(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Ask => "edits and commands ask first",
        PermissionMode::AcceptEdits => "edits in the project run, commands ask first",
        PermissionMode::Allow => "tools run without asking",
    }
}
