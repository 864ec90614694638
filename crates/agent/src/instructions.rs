//! `context/instructions`: what the model was told as its system message, with what it was
//! built from, so that what is model-visible is also on record.
//!
//! The record carries the whole text sent, the environment it describes and one entry per
//! source (the built-in prompt, a prompt file, each instruction file, the caller's own text)
//! with a content hash. A resumed agent compares a freshly built record with the last one in
//! its log ([`InstructionsRecord::still_current`]) and sends the recorded text unchanged while
//! it is, so the prompt prefix — and a provider's cache of it — survives a resume.

use serde::{Deserialize, Serialize};

/// Who reads the agent's answers: one sentence of the built-in prompt depends on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Audience {
    /// A terminal (`dsh run`): plain text.
    #[default]
    Terminal,
    /// An editor over ACP: Markdown is rendered.
    Editor,
}

/// How a caller's own instructions combine with the built-in prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptMode {
    /// After the project instructions, as the last part of the system message.
    #[default]
    Append,
    /// In place of the built-in prompt (or the prompt file); the environment and the project
    /// instructions are still sent.
    Replace,
}

/// Instructions a caller gives for one session (an editor's `systemPrompt`, an embedder's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallerPrompt {
    /// How it combines with the built-in text.
    #[serde(default)]
    pub mode: PromptMode,
    /// The text.
    pub text: String,
}

impl CallerPrompt {
    /// Text appended after the project instructions.
    pub fn append(text: impl Into<String>) -> CallerPrompt {
        CallerPrompt {
            mode: PromptMode::Append,
            text: text.into(),
        }
    }
}

impl From<&str> for CallerPrompt {
    fn from(text: &str) -> CallerPrompt {
        CallerPrompt::append(text)
    }
}

impl From<String> for CallerPrompt {
    fn from(text: String) -> CallerPrompt {
        CallerPrompt::append(text)
    }
}

/// The git work tree the working directory is in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitState {
    /// The work tree's root.
    pub root: String,
    /// The checked-out branch, or `detached at <short id>`; absent when unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// Whether `git status` showed changes; absent when it could not tell (no git binary,
    /// a timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty: Option<bool>,
}

/// What the environment block says. Nothing in it changes within a day but the git head and
/// dirtiness, which [`InstructionsRecord::still_current`] therefore ignores.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// The session's working directory.
    pub cwd: String,
    /// The git work tree, when the cwd is in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitState>,
    /// The operating system (`linux`, `macos`).
    #[serde(default)]
    pub os: String,
    /// The CPU architecture (`x86_64`, `aarch64`).
    #[serde(default)]
    pub arch: String,
    /// The shell commands run in.
    #[serde(default)]
    pub shell: String,
    /// The local date, `YYYY-MM-DD`: day precision keeps the prefix cacheable for a day.
    #[serde(default)]
    pub date: String,
    /// The model's id.
    #[serde(default)]
    pub model: String,
    /// Who reads the answers.
    #[serde(default)]
    pub audience: Audience,
    /// The tools offered, by name.
    #[serde(default)]
    pub tools: Vec<String>,
}

impl Environment {
    /// Equal but for what may change within a day (the git head and dirtiness).
    fn same_day_and_place(&self, other: &Environment) -> bool {
        let root = |e: &Environment| e.git.as_ref().map(|g| g.root.clone());
        self.cwd == other.cwd
            && root(self) == root(other)
            && self.os == other.os
            && self.arch == other.arch
            && self.shell == other.shell
            && self.date == other.date
            && self.model == other.model
            && self.audience == other.audience
            && self.tools == other.tools
    }
}

/// What a source of the system text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// The built-in prompt with the registered tools' guidance.
    Builtin,
    /// The configured `system_prompt_file`, in place of the built-in prompt.
    PromptFile,
    /// The user's own instruction file.
    User,
    /// A project instruction file (`AGENTS.md`, or `CLAUDE.md` where there is none).
    Project,
    /// The caller's instructions.
    Caller,
}

/// One source of the system text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionSource {
    /// What it is.
    pub kind: SourceKind,
    /// Its path (`builtin` and `caller` for those without one).
    pub path: String,
    /// The SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Only its head was sent: the instructions' size limit was reached.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// It was not sent, and why (not UTF-8, unreadable, over the limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `context/instructions`: the system message sent from this point of the log on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionsRecord {
    /// The whole system message.
    pub text: String,
    /// The environment it describes; absent when no context service built it (the text is
    /// then the caller's prompt alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Environment>,
    /// What it was built from, in the order it was read.
    #[serde(default)]
    pub sources: Vec<InstructionSource>,
    /// The caller's instructions it includes, kept so that a resume without them (a reload
    /// by a client that does not resend them) keeps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerPrompt>,
    /// What the user was warned about while building it (a skipped or cut file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl InstructionsRecord {
    /// Whether this recorded text may still be sent in place of `fresh`, a record just built
    /// for the same session: every source is byte-identical (same paths, same hashes, same
    /// cuts), the caller's instructions are the same, and the environment differs at most in
    /// what changes within a day. Otherwise `fresh` is recorded and sent.
    pub fn still_current(&self, fresh: &InstructionsRecord) -> bool {
        let environment = match (&self.environment, &fresh.environment) {
            (Some(recorded), Some(now)) => recorded.same_day_and_place(now),
            (None, None) => true,
            (Some(_), None) | (None, Some(_)) => false,
        };
        environment && self.sources == fresh.sources && self.caller == fresh.caller
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> InstructionsRecord {
        InstructionsRecord {
            text: "system".into(),
            environment: Some(Environment {
                cwd: "/w".into(),
                git: Some(GitState {
                    root: "/w".into(),
                    head: Some("main".into()),
                    dirty: Some(false),
                }),
                os: "linux".into(),
                arch: "x86_64".into(),
                shell: "bash".into(),
                date: "2026-12-04".into(),
                model: "deepseek-chat".into(),
                audience: Audience::Terminal,
                tools: vec!["bash".into()],
            }),
            sources: vec![InstructionSource {
                kind: SourceKind::Project,
                path: "/w/AGENTS.md".into(),
                sha256: "aa".into(),
                bytes: 2,
                truncated: false,
                skipped: None,
            }],
            caller: None,
            warnings: Vec::new(),
        }
    }

    type Change = fn(&mut InstructionsRecord);

    fn env(r: &mut InstructionsRecord) -> &mut Environment {
        r.environment.get_or_insert_with(Environment::default)
    }

    fn git(r: &mut InstructionsRecord) -> &mut GitState {
        env(r).git.get_or_insert_with(GitState::default)
    }

    #[test]
    fn only_what_changes_within_a_day_keeps_the_recorded_text() {
        let table: [(&str, Change, bool); 12] = [
            ("nothing", |_| {}, true),
            ("the branch", |r| git(r).head = Some("fix".into()), true),
            ("dirtiness", |r| git(r).dirty = Some(true), true),
            ("the text alone", |r| r.text = "other".into(), true),
            ("the day", |r| env(r).date = "2026-12-05".into(), false),
            (
                "a source's hash",
                |r| r.sources[0].sha256 = "bb".into(),
                false,
            ),
            (
                "a new source",
                |r| r.sources.push(r.sources[0].clone()),
                false,
            ),
            ("a cut", |r| r.sources[0].truncated = true, false),
            (
                "the model",
                |r| env(r).model = "deepseek-reasoner".into(),
                false,
            ),
            (
                "the audience",
                |r| env(r).audience = Audience::Editor,
                false,
            ),
            ("the tools", |r| env(r).tools.push("read".into()), false),
            (
                "the caller's text",
                |r| r.caller = Some("be brief".into()),
                false,
            ),
        ];
        let recorded = record();
        for (what, change, kept) in table {
            let mut fresh = record();
            change(&mut fresh);
            assert_eq!(recorded.still_current(&fresh), kept, "{what}");
        }
        let mut bare = record();
        bare.environment = None;
        assert!(
            !recorded.still_current(&bare),
            "an environment appearing or going"
        );
    }

    #[test]
    fn a_minimal_payload_reads_with_defaults() {
        let record: InstructionsRecord = serde_json::from_str(r#"{"text":"t"}"#).unwrap();
        assert_eq!(record.text, "t");
        assert!(record.environment.is_none() && record.sources.is_empty());
        let caller: CallerPrompt = serde_json::from_str(r#"{"text":"x"}"#).unwrap();
        assert_eq!(caller.mode, PromptMode::Append);
    }
}
