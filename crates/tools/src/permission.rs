//! Permission modes: which calls ask first. One vocabulary for `dsh run`, `dsh acp`, the
//! config file and an editor's mode picker; one total function decides.

use std::fmt;
use std::str::FromStr;

/// What a call would do, as far as asking first is concerned. A tool says it from the call's
/// arguments ([`crate::Tool::effect`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Reads or searches inside the session's directories; changes nothing.
    Read,
    /// Reads or searches outside the session's directories: `ask` asks first.
    ReadOutside,
    /// Changes files inside the session's directories.
    Edit,
    /// Changes files outside the session's directories.
    EditOutside,
    /// Runs a program or reaches another system (bash, an MCP tool): anything may happen.
    Execute,
    /// Runs a program in the kernel's sandbox: it may write only the session's directories
    /// and reach no network unless allowed (a sandboxed bash command).
    Confined,
    /// Runs a program outside the sandbox the session's commands are confined to, for a
    /// reason the model gave: asked about in every mode, and refused where nobody can answer.
    Escalate,
    /// Runs a program the session's sandbox would confine, where the kernel cannot: asked
    /// about in every mode, as `ask` mode asks before a command, unless a rule allows it
    /// (an earlier "always" among them); refused where nobody can answer.
    Unconfined,
}

/// Which calls ask first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PermissionMode {
    /// Edits and commands ask; reads never do.
    Ask,
    /// Edits inside the session's directories (and sandboxed commands, which can only write
    /// there) run; other commands and edits outside ask.
    AcceptEdits,
    /// Nothing asks.
    Allow,
}

impl PermissionMode {
    /// Every mode, in the order a picker lists them.
    pub const ALL: [PermissionMode; 3] = [
        PermissionMode::Ask,
        PermissionMode::AcceptEdits,
        PermissionMode::Allow,
    ];

    /// Whether a call with `effect` asks first in this mode.
    pub fn asks(self, effect: Effect) -> bool {
        match (self, effect) {
            (_, Effect::Escalate | Effect::Unconfined) => true,
            (_, Effect::Read) | (PermissionMode::Allow, _) => false,
            (PermissionMode::Ask, Effect::ReadOutside) => true,
            (PermissionMode::AcceptEdits, Effect::ReadOutside) => false,
            (
                PermissionMode::Ask,
                Effect::Edit | Effect::EditOutside | Effect::Execute | Effect::Confined,
            ) => true,
            // What the sandbox keeps inside the session's directories is an edit there.
            (PermissionMode::AcceptEdits, Effect::Edit | Effect::Confined) => false,
            (PermissionMode::AcceptEdits, Effect::EditOutside | Effect::Execute) => true,
        }
    }

    /// Whether a call with `effect` asks first in this mode when the permission rules said
    /// `verdict` of it: leaving the sandbox always asks, a rule's ask asks and its allow
    /// does not, whatever the mode; a call a rule denies is never asked about (it does not
    /// run). The loop decides with this, and a front end predicts with it.
    pub fn asks_under(self, effect: Effect, verdict: Option<crate::Verdict>) -> bool {
        match (effect, verdict) {
            (Effect::Escalate, _) | (_, Some(crate::Verdict::Ask)) => true,
            (_, Some(crate::Verdict::Allow | crate::Verdict::Deny)) => false,
            (_, None) => self.asks(effect),
        }
    }

    /// The mode's name in flags, config files and ACP: `ask`, `accept-edits`, `allow`.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Ask => "ask",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Allow => "allow",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a mode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode {0:?}: expected ask, accept-edits or allow")]
pub struct UnknownMode(pub String);

impl FromStr for PermissionMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<PermissionMode, UnknownMode> {
        PermissionMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == s)
            .ok_or_else(|| UnknownMode(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_decides_before_the_mode_except_for_leaving_the_sandbox() {
        use crate::Verdict;
        for mode in PermissionMode::ALL {
            assert!(mode.asks_under(Effect::Escalate, Some(Verdict::Allow)));
            assert!(mode.asks_under(Effect::Read, Some(Verdict::Ask)));
            assert!(!mode.asks_under(Effect::Unconfined, Some(Verdict::Allow)));
            assert!(!mode.asks_under(Effect::Execute, Some(Verdict::Deny)));
            assert!(mode.asks_under(Effect::Unconfined, None));
            assert_eq!(
                mode.asks_under(Effect::Confined, None),
                mode.asks(Effect::Confined)
            );
        }
    }

    #[test]
    fn each_mode_asks_for_exactly_its_effects() {
        use Effect::*;
        use PermissionMode::*;
        // (mode, [Read, ReadOutside, Edit, EditOutside, Execute, Confined, Escalate,
        // Unconfined])
        let table = [
            (Ask, [false, true, true, true, true, true, true, true]),
            (
                AcceptEdits,
                [false, false, false, true, true, false, true, true],
            ),
            (
                Allow,
                [false, false, false, false, false, false, true, true],
            ),
        ];
        for (mode, row) in table {
            let effects = [
                Read,
                ReadOutside,
                Edit,
                EditOutside,
                Execute,
                Confined,
                Escalate,
                Unconfined,
            ];
            for (effect, want) in effects.into_iter().zip(row) {
                assert_eq!(mode.asks(effect), want, "{mode} {effect:?}");
            }
        }
    }

    #[test]
    fn names_round_trip_and_a_wrong_one_lists_the_right_ones() {
        for mode in PermissionMode::ALL {
            assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
        }
        let err = "acceptEdits".parse::<PermissionMode>().unwrap_err();
        assert!(err.to_string().contains("ask, accept-edits or allow"));
    }
}
