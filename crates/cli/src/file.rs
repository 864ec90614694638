//! The configuration file: TOML, read strictly. Unknown keys, wrong types, values out of range
//! and a literal API key are refused with `<file>:<line>:<col>: <message>`, and every value
//! keeps the line it came from so `dsh config` can say where each setting was set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::exit::Failure;

/// The file's contents; every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub model: Option<Spanned<String>>,
    pub base_url: Option<Spanned<String>>,
    pub api_key_env: Option<Spanned<String>>,
    pub reasoning: Option<Spanned<String>>,
    pub max_tokens: Option<Spanned<u32>>,
    pub temperature: Option<Spanned<f64>>,
    pub max_steps: Option<Spanned<u32>>,
    pub data_dir: Option<Spanned<String>>,
    /// Refused with a pointer to the environment: keys never live in files dsh reads.
    pub api_key: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub http: Http,
    #[serde(default)]
    pub acp: Acp,
}

/// `[http]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Http {
    pub connect_timeout_secs: Option<Spanned<u64>>,
    pub idle_timeout_secs: Option<Spanned<u64>>,
    pub max_retries: Option<Spanned<u32>>,
    pub send_reasoning_content: Option<Spanned<bool>>,
    pub max_tokens_field: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<String>>,
}

/// `[acp]`: how `dsh acp` serves an editor.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Acp {
    pub permission: Option<Spanned<String>>,
    pub max_line_bytes: Option<Spanned<u64>>,
    pub cancel_grace_ms: Option<Spanned<u64>>,
    pub teardown_deadline_ms: Option<Spanned<u64>>,
}

/// A loaded file and its text, to turn spans into lines.
#[derive(Debug)]
pub struct Loaded {
    pub path: PathBuf,
    pub text: String,
    pub file: ConfigFile,
}

impl Loaded {
    /// `(line, column)`, both from 1, of byte `offset`.
    pub fn position(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    /// The line of a spanned value.
    pub fn line<T>(&self, value: &Spanned<T>) -> usize {
        self.position(value.span().start).0
    }

    /// A refusal pointing at `value`.
    pub fn refuse<T>(&self, value: &Spanned<T>, message: &str) -> Failure {
        let (line, column) = self.position(value.span().start);
        Failure::config(format!(
            "{}:{line}:{column}: {message}",
            self.path.display()
        ))
    }
}

/// Which file, if any, and whether it must exist: `--config`, else `DSH_CONFIG`, else the XDG
/// location (which may be absent).
pub fn locate(flag: Option<&Path>) -> Option<(PathBuf, bool)> {
    if let Some(path) = flag {
        return Some((path.to_path_buf(), true));
    }
    if let Some(path) = std::env::var_os("DSH_CONFIG").filter(|v| !v.is_empty()) {
        return Some((PathBuf::from(path), true));
    }
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(xdg) if Path::new(&xdg).is_absolute() => PathBuf::from(xdg),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".config"),
    };
    Some((base.join("dsh").join("config.toml"), false))
}

/// Reads and checks the file at `path`; `Ok(None)` when an optional file is absent.
pub fn load(path: &Path, required: bool) -> Result<Option<Loaded>, Failure> {
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            Failure::config(format!(
                "{}: the configuration file is not UTF-8",
                path.display()
            ))
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
        Err(e) => {
            return Err(Failure::config(format!(
                "{}: cannot read the configuration file: {e}",
                path.display()
            )));
        }
    };
    let parsed: Result<ConfigFile, toml::de::Error> = toml::from_str(&text);
    let mut loaded = Loaded {
        path: path.to_path_buf(),
        text,
        file: ConfigFile::default(),
    };
    match parsed {
        Ok(file) => loaded.file = file,
        Err(e) => {
            let (line, column) = e.span().map_or((1, 1), |span| loaded.position(span.start));
            let message = e.message().trim().to_owned();
            return Err(Failure::config(format!(
                "{}:{line}:{column}: {message}",
                path.display()
            )));
        }
    }
    check(&loaded)?;
    Ok(Some(loaded))
}

fn check(loaded: &Loaded) -> Result<(), Failure> {
    let f = &loaded.file;
    if let Some(key) = &f.api_key {
        return Err(loaded.refuse(
            key,
            "dsh does not read API keys from the config file; set DEEPSEEK_API_KEY (or the \
             variable named by api_key_env)",
        ));
    }
    let within =
        |v: &Option<Spanned<u64>>, low: u64, high: u64, what: &str| -> Result<(), Failure> {
            match v {
                Some(s) if !(low..=high).contains(s.get_ref()) => {
                    Err(loaded.refuse(s, &format!("{what} must be {low} to {high}")))
                }
                _ => Ok(()),
            }
        };
    within(
        &f.http.connect_timeout_secs,
        1,
        3600,
        "connect_timeout_secs",
    )?;
    within(&f.http.idle_timeout_secs, 1, 3600, "idle_timeout_secs")?;
    if let Some(n) = &f.http.max_retries
        && *n.get_ref() > 10
    {
        return Err(loaded.refuse(n, "max_retries must be 0 to 10"));
    }
    if let Some(field) = &f.http.max_tokens_field
        && !matches!(
            field.get_ref().as_str(),
            "max_tokens" | "max_completion_tokens"
        )
    {
        return Err(loaded.refuse(
            field,
            "max_tokens_field must be \"max_tokens\" or \"max_completion_tokens\"",
        ));
    }
    if let Some(steps) = &f.max_steps
        && !(1..=10_000).contains(steps.get_ref())
    {
        return Err(loaded.refuse(steps, "max_steps must be 1 to 10000"));
    }
    if let Some(tokens) = &f.max_tokens
        && *tokens.get_ref() == 0
    {
        return Err(loaded.refuse(tokens, "max_tokens must be at least 1"));
    }
    if let Some(t) = &f.temperature
        && !(0.0..=2.0).contains(t.get_ref())
    {
        return Err(loaded.refuse(t, "temperature must be 0 to 2"));
    }
    if let Some(level) = &f.reasoning
        && !matches!(
            level.get_ref().as_str(),
            "default" | "off" | "low" | "medium" | "high" | "max"
        )
    {
        return Err(loaded.refuse(
            level,
            "reasoning must be default, off, low, medium, high or max",
        ));
    }
    if let Some(p) = &f.acp.permission
        && !matches!(p.get_ref().as_str(), "ask" | "allow")
    {
        return Err(loaded.refuse(p, "permission must be \"ask\" or \"allow\""));
    }
    if let Some(n) = &f.acp.max_line_bytes
        && !(1024..=1024 * 1024 * 1024).contains(n.get_ref())
    {
        return Err(loaded.refuse(n, "max_line_bytes must be 1024 to 1073741824"));
    }
    for (n, what) in [
        (&f.acp.cancel_grace_ms, "cancel_grace_ms"),
        (&f.acp.teardown_deadline_ms, "teardown_deadline_ms"),
    ] {
        if let Some(n) = n
            && !(1..=600_000).contains(n.get_ref())
        {
            return Err(loaded.refuse(n, &format!("{what} must be 1 to 600000")));
        }
    }
    for (name, value) in &f.http.headers {
        if reqwest_like_header_ok(name, value.get_ref()).is_err() {
            return Err(loaded.refuse(
                value,
                &format!("header {name:?} is not a valid HTTP header"),
            ));
        }
    }
    Ok(())
}

/// A header name is a token; a value is visible ASCII, spaces and tabs.
fn reqwest_like_header_ok(name: &str, value: &str) -> Result<(), ()> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(());
    }
    if !value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return Err(());
    }
    Ok(())
}
