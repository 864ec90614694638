//! Every setting dsh reads, in one table: its name (also its key in the configuration file,
//! dotted for a table: `http.max_retries` is `max_retries` under `[http]`), its flag, its
//! environment variable, what its text may be, and its default. Resolution and `dsh config`
//! both iterate this table, so a setting added here is read, checked and shown everywhere.

/// What a setting's text may be; also the TOML type the file must give it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// Any text (a TOML string); empty text means unset unless `empty_ok`.
    Text { empty_ok: bool },
    /// A whole number in `min..=max` (a TOML integer).
    Int { min: u64, max: u64 },
    /// A number in `min..=max` (a TOML float or integer).
    Float { min: f64, max: f64 },
    /// `true` or `false` (a TOML boolean).
    Bool,
    /// One of these words (a TOML string).
    Choice(&'static [&'static str]),
}

/// What a setting is when nothing sets it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Default {
    /// This text, read as the setting's kind.
    Is(&'static str),
    /// Nothing: the setting is optional.
    Unset,
    /// Worked out when everything else is known (the data directory from `XDG_DATA_HOME` or
    /// `HOME`; the key's variable from the server's host).
    Derived,
}

/// One setting.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    pub name: &'static str,
    pub flag: Option<&'static str>,
    pub env: Option<&'static str>,
    /// Whether the configuration file may set it.
    pub in_file: bool,
    pub kind: Kind,
    pub default: Default,
}

/// DeepSeek, the default server.
pub const DEEPSEEK_URL: &str = "https://api.deepseek.com";

const fn key(name: &'static str, kind: Kind, default: Default) -> Key {
    Key {
        name,
        flag: None,
        env: None,
        in_file: true,
        kind,
        default,
    }
}

const fn flag(mut key: Key, flag: &'static str) -> Key {
    key.flag = Some(flag);
    key
}

const fn env(mut key: Key, env: &'static str) -> Key {
    key.env = Some(env);
    key
}

const fn not_in_file(mut key: Key) -> Key {
    key.in_file = false;
    key
}

const TEXT: Kind = Kind::Text { empty_ok: false };
const LEVELS: &[&str] = &["default", "off", "low", "medium", "high", "max"];
const PERMISSIONS: &[&str] = &["ask", "accept-edits", "allow"];

/// Every setting, in the order `dsh config` shows them. One row a setting: kept on one line
/// each (not as rustfmt would spread them), so the table reads as a table.
#[rustfmt::skip]
pub const KEYS: &[Key] = &[
    env(flag(key("model", TEXT, Default::Is("deepseek-flash")), "--model"), "DSH_MODEL"),
    env(flag(key("base_url", TEXT, Default::Is(DEEPSEEK_URL)), "--base-url"), "DSH_BASE_URL"),
    // `""` declares a server that needs no key, so empty text is a value here.
    env(key("api_key_env", Kind::Text { empty_ok: true }, Default::Derived), "DSH_API_KEY_ENV"),
    env(flag(key("reasoning", Kind::Choice(LEVELS), Default::Is("default")), "--reasoning"), "DSH_REASONING"),
    env(flag(key("max_tokens", Kind::Int { min: 1, max: u32::MAX as u64 }, Default::Derived), "--max-tokens"), "DSH_MAX_TOKENS"),
    env(flag(key("temperature", Kind::Float { min: 0.0, max: 2.0 }, Default::Unset), "--temperature"), "DSH_TEMPERATURE"),
    env(flag(key("max_steps", Kind::Int { min: 1, max: 10_000 }, Default::Unset), "--max-steps"), "DSH_MAX_STEPS"),
    env(key("max_tool_calls", Kind::Int { min: 1, max: 1000 }, Default::Is("16")), "DSH_MAX_TOOL_CALLS"),
    env(flag(key("permission", Kind::Choice(PERMISSIONS), Default::Is("allow")), "--permission"), "DSH_PERMISSION"),
    env(key("search_timeout_secs", Kind::Int { min: 1, max: 3600 }, Default::Is("30")), "DSH_SEARCH_TIMEOUT_SECS"),
    env(key("compact_at", Kind::Float { min: 0.0, max: 1.0 }, Default::Is("0.8")), "DSH_COMPACT_AT"),
    env(key("keep_tool_output", Kind::Int { min: 0, max: 100_000_000 }, Default::Is("40000")), "DSH_KEEP_TOOL_OUTPUT"),
    env(flag(key("context_window", Kind::Int { min: 1024, max: 100_000_000 }, Default::Derived), "--context-window"), "DSH_CONTEXT_WINDOW"),
    env(flag(key("data_dir", TEXT, Default::Derived), "--data-dir"), "DSH_DATA_DIR"),
    not_in_file(env(flag(key("replay", TEXT, Default::Unset), "--replay"), "DSH_REPLAY")),
    env(flag(key("system_prompt_file", TEXT, Default::Unset), "--system-prompt-file"), "DSH_SYSTEM_PROMPT_FILE"),
    env(flag(key("project_instructions", Kind::Bool, Default::Is("true")), "--no-project-instructions"), "DSH_PROJECT_INSTRUCTIONS"),
    env(key("price.input", Kind::Float { min: 0.0, max: 1_000_000.0 }, Default::Unset), "DSH_PRICE_INPUT"),
    env(key("price.cached_input", Kind::Float { min: 0.0, max: 1_000_000.0 }, Default::Unset), "DSH_PRICE_CACHED_INPUT"),
    env(key("price.output", Kind::Float { min: 0.0, max: 1_000_000.0 }, Default::Unset), "DSH_PRICE_OUTPUT"),
    env(key("price.currency", TEXT, Default::Is("USD")), "DSH_PRICE_CURRENCY"),
    key("http.connect_timeout_secs", Kind::Int { min: 1, max: 3600 }, Default::Is("10")),
    key("http.first_byte_timeout_secs", Kind::Int { min: 1, max: 3600 }, Default::Is("300")),
    key("http.idle_timeout_secs", Kind::Int { min: 1, max: 3600 }, Default::Is("120")),
    key("http.max_retries", Kind::Int { min: 0, max: 10 }, Default::Is("4")),
    key("http.send_reasoning_content", Kind::Bool, Default::Derived),
    key("http.max_tokens_field", Kind::Choice(&["max_tokens", "max_completion_tokens"]), Default::Is("max_tokens")),
    flag(key("acp.permission", Kind::Choice(PERMISSIONS), Default::Is("ask")), "--permission"),
    key("acp.max_line_bytes", Kind::Int { min: 1024, max: 1 << 30 }, Default::Is("33554432")),
    key("acp.cancel_grace_ms", Kind::Int { min: 1, max: 600_000 }, Default::Is("5000")),
    key("acp.teardown_deadline_ms", Kind::Int { min: 1, max: 600_000 }, Default::Is("10000")),
];

/// The file tables a setting may sit in, besides the top level; `[http.headers]` holds
/// free-form header names. `[price]` gives the model's prices per million tokens, for costs.
pub const TABLES: &[&str] = &["http", "acp", "price"];

impl Kind {
    /// Checks `text` against the kind; `Err` says what was expected, as a phrase that reads
    /// after "expected" and after "<name> must be".
    pub fn check(self, text: &str) -> Result<(), String> {
        let ok = match self {
            Kind::Text { .. } => true,
            Kind::Int { min, max } => text.parse::<u64>().is_ok_and(|n| (min..=max).contains(&n)),
            Kind::Float { min, max } => text
                .parse::<f64>()
                .is_ok_and(|n| n.is_finite() && (min..=max).contains(&n)),
            Kind::Bool => matches!(text, "true" | "false"),
            Kind::Choice(words) => words.contains(&text),
        };
        if ok { Ok(()) } else { Err(self.expected()) }
    }

    /// What the kind accepts, in words.
    pub fn expected(self) -> String {
        match self {
            Kind::Text { .. } => "text".to_owned(),
            Kind::Int { min, max } if max == u64::from(u32::MAX) => {
                format!("a whole number of at least {min}")
            }
            Kind::Int { min, max } => format!("{min} to {max}"),
            Kind::Float { min, max } => format!("a number from {min} to {max}"),
            Kind::Bool => "true or false".to_owned(),
            Kind::Choice(words) => match words.split_last() {
                Some((last, [])) => format!("\"{last}\""),
                Some((last, rest)) => format!(
                    "{} or \"{last}\"",
                    rest.iter()
                        .map(|w| format!("\"{w}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => "nothing".to_owned(),
            },
        }
    }

    /// The value as JSON, for `dsh config --json` (checked text only).
    pub fn json(self, text: &str) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Kind::Int { .. } => text.parse::<u64>().map(Value::from).unwrap_or(Value::Null),
            Kind::Float { .. } => text.parse::<f64>().map(Value::from).unwrap_or(Value::Null),
            Kind::Bool => Value::Bool(text == "true"),
            Kind::Text { .. } | Kind::Choice(_) => Value::from(text),
        }
    }
}

/// The setting named `name`.
pub fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_flags_and_variables_are_unique_and_every_file_key_has_a_known_table() {
        let mut names = std::collections::HashSet::new();
        let mut envs = std::collections::HashSet::new();
        for key in KEYS {
            assert!(names.insert(key.name), "{} twice", key.name);
            if let Some(env) = key.env {
                assert!(envs.insert(env), "{env} twice");
            }
            if let Some((table, _)) = key.name.split_once('.') {
                assert!(TABLES.contains(&table), "{}", key.name);
            }
            if let Default::Is(text) = key.default {
                assert_eq!(key.kind.check(text), Ok(()), "the default of {}", key.name);
            }
        }
    }

    #[test]
    fn each_kind_accepts_what_it_says_and_names_what_it_expects() {
        let cases: &[(Kind, &str, bool)] = &[
            (Kind::Int { min: 1, max: 3 }, "3", true),
            (Kind::Int { min: 1, max: 3 }, "0", false),
            (Kind::Int { min: 1, max: 3 }, "-1", false),
            (Kind::Int { min: 1, max: 3 }, "2.0", false),
            (Kind::Float { min: 0.0, max: 2.0 }, "1.5", true),
            (Kind::Float { min: 0.0, max: 2.0 }, "NaN", false),
            (Kind::Float { min: 0.0, max: 2.0 }, "9", false),
            (Kind::Bool, "true", true),
            (Kind::Bool, "yes", false),
            (Kind::Choice(&["ask", "allow"]), "allow", true),
            (Kind::Choice(&["ask", "allow"]), "Allow", false),
            (TEXT, "", true),
        ];
        for (kind, text, ok) in cases {
            assert_eq!(kind.check(text).is_ok(), *ok, "{kind:?} {text:?}");
        }
        assert_eq!(Kind::Int { min: 0, max: 10 }.expected(), "0 to 10");
        assert_eq!(
            Kind::Choice(&["ask", "allow"]).expected(),
            "\"ask\" or \"allow\""
        );
        assert_eq!(
            Kind::Choice(&["a", "b", "c"]).expected(),
            "\"a\", \"b\" or \"c\""
        );
        assert_eq!(
            find("max_tokens").map(|k| k.kind.expected()).as_deref(),
            Some("a whole number of at least 1")
        );
    }
}
