//! The effective configuration: each value from its flag, else its environment variable, else
//! its default, computed once for every command. Configuration files are not read yet: a file
//! named by `DSH_CONFIG` is refused as unsupported rather than silently ignored.

use std::num::NonZeroU32;
use std::path::PathBuf;

use crate::args::{Global, Reasoning};
use crate::exit::Failure;

/// DeepSeek, the default server.
pub const DEEPSEEK_URL: &str = "https://api.deepseek.com";
/// The default model.
pub const DEFAULT_MODEL: &str = "deepseek-flash";

/// What every command runs with.
#[derive(Debug)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub model: String,
    pub base_url: String,
    /// The variable holding the key; empty when the server needs none.
    pub api_key_env: String,
    pub replay: Option<String>,
    pub reasoning: Option<dsh_llm::ReasoningEffort>,
    pub max_tokens: Option<NonZeroU32>,
    pub temperature: Option<f32>,
    pub max_steps: Option<u32>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn bad_env(name: &str, value: &str, want: &str) -> Failure {
    Failure::config(format!("environment variable {name}={value:?}: {want}"))
}

fn effort(level: Reasoning) -> Option<dsh_llm::ReasoningEffort> {
    use dsh_llm::ReasoningEffort as E;
    match level {
        Reasoning::Default => None,
        Reasoning::Off => Some(E::Off),
        Reasoning::Low => Some(E::Low),
        Reasoning::Medium => Some(E::Medium),
        Reasoning::High => Some(E::High),
        Reasoning::Max => Some(E::Max),
    }
}

impl Settings {
    /// Flags over environment over defaults.
    pub fn resolve(global: &Global, max_steps: Option<u32>) -> Result<Settings, Failure> {
        if let Some(file) = env("DSH_CONFIG") {
            return Err(Failure::config(format!(
                "DSH_CONFIG={file:?}: unsupported: this dsh does not read configuration files \
                 yet; use flags and DSH_* environment variables"
            )));
        }
        let data_dir = match global
            .data_dir
            .clone()
            .or_else(|| env("DSH_DATA_DIR").map(PathBuf::from))
        {
            Some(dir) => dir,
            None => match env("XDG_DATA_HOME") {
                Some(xdg) if xdg.starts_with('/') => PathBuf::from(xdg).join("dsh"),
                _ => match env("HOME") {
                    Some(home) => PathBuf::from(home).join(".local/share/dsh"),
                    None => {
                        return Err(Failure::config(
                            "no data directory: HOME is not set; pass --data-dir or set DSH_DATA_DIR",
                        ));
                    }
                },
            },
        };
        let model = global
            .model
            .clone()
            .or_else(|| env("DSH_MODEL"))
            .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let base_url = global
            .base_url
            .clone()
            .or_else(|| env("DSH_BASE_URL"))
            .unwrap_or_else(|| DEEPSEEK_URL.to_owned());
        // A DeepSeek key is only ever sent to DeepSeek.
        let api_key_env = match std::env::var("DSH_API_KEY_ENV") {
            Ok(name) => name,
            Err(_) if is_deepseek(&base_url) => "DEEPSEEK_API_KEY".to_owned(),
            Err(_) => "DSH_API_KEY".to_owned(),
        };
        let reasoning = match global.reasoning {
            Some(level) => effort(level),
            None => match env("DSH_REASONING") {
                None => None,
                Some(value) => effort(
                    <Reasoning as clap::ValueEnum>::from_str(&value, true).map_err(|_| {
                        bad_env(
                            "DSH_REASONING",
                            &value,
                            "expected default, off, low, medium, high or max",
                        )
                    })?,
                ),
            },
        };
        let max_tokens = match global.max_tokens {
            Some(n) => Some(n),
            None => match env("DSH_MAX_TOKENS") {
                None => None,
                Some(v) => Some(v.parse::<NonZeroU32>().map_err(|_| {
                    bad_env("DSH_MAX_TOKENS", &v, "expected a positive whole number")
                })?),
            },
        };
        let temperature = match env("DSH_TEMPERATURE") {
            None => None,
            Some(v) => Some(
                v.parse::<f32>()
                    .ok()
                    .filter(|t| (0.0..=2.0).contains(t))
                    .ok_or_else(|| {
                        bad_env("DSH_TEMPERATURE", &v, "expected a number from 0 to 2")
                    })?,
            ),
        };
        let max_steps = match max_steps {
            Some(n) => Some(n),
            None => match env("DSH_MAX_STEPS") {
                None => None,
                Some(v) => Some(
                    v.parse::<u32>()
                        .ok()
                        .filter(|n| (1..=10_000).contains(n))
                        .ok_or_else(|| bad_env("DSH_MAX_STEPS", &v, "expected 1 to 10000"))?,
                ),
            },
        };
        Ok(Settings {
            data_dir,
            model,
            base_url,
            api_key_env,
            replay: global.replay.clone().or_else(|| env("DSH_REPLAY")),
            reasoning,
            max_tokens,
            temperature,
            max_steps,
        })
    }

    /// `<data_dir>/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }
}

/// Whether `url`'s host is DeepSeek's API.
pub fn is_deepseek(url: &str) -> bool {
    url::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| h.eq_ignore_ascii_case("api.deepseek.com"))
        })
        .unwrap_or(false)
}
