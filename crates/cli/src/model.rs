//! Which model a run talks to: a replay script (offline, labelled as scripted everywhere), or
//! an OpenAI-compatible server with the key from the environment.

use std::path::Path;
use std::sync::Arc;

use dsh_kernel::Plugin;
use dsh_llm_openai::{ApiKey, OpenAiConfig, OpenAiConfigError, OpenAiModel, OpenAiPlugin};
use dsh_llm_replay::{ReplayModel, ReplayPlugin, ReplayScript};

use crate::exit::Failure;
use crate::settings::{Settings, is_deepseek};

/// The chosen model: its plugin, the banner label, and the script's default prompt.
pub struct Chosen {
    pub plugin: Box<dyn Plugin>,
    pub label: String,
    pub script_prompt: Option<String>,
    pub replay: Option<Arc<ReplayModel>>,
    /// The replay script's name, when the model is scripted.
    pub replay_name: Option<String>,
}

/// The built-in replay scripts.
pub const BUILTINS: &[&str] = &["demo"];

/// Resolves `settings` into a model.
pub fn choose(settings: &Settings) -> Result<Chosen, Failure> {
    match &settings.replay {
        Some(name) => replay(&name.value),
        None => server(settings),
    }
}

fn replay(name: &str) -> Result<Chosen, Failure> {
    let looks_like_path = name.contains('/') || name.ends_with(".json");
    let script = match ReplayScript::builtin(name) {
        Some(script) if !looks_like_path => script,
        _ if Path::new(name).is_file() => {
            ReplayScript::from_path(Path::new(name)).map_err(|e| Failure::config(format!("{e}")))?
        }
        _ => {
            return Err(Failure::config(format!(
                "no replay script '{name}' (not a file; built-ins: {})",
                BUILTINS.join(", ")
            )));
        }
    };
    let label = format!(
        "REPLAY '{}' — scripted offline model, not a real LLM",
        script.name
    );
    let script_prompt = script.prompt.clone();
    let replay_name = Some(script.name.clone());
    let mut model = ReplayModel::new(script);
    // Every call the script answers, for black-box tests of what dsh sent.
    if let Some(log) = std::env::var_os("DSH_REPLAY_LOG").filter(|v| !v.is_empty()) {
        model = model.with_call_log(log);
    }
    let model = Arc::new(model);
    Ok(Chosen {
        plugin: Box::new(ReplayPlugin::new(model.clone())),
        label,
        script_prompt,
        replay: Some(model),
        replay_name,
    })
}

/// The OpenAI-compatible model the settings describe, or why they are refused.
pub fn server_model(settings: &Settings) -> Result<OpenAiModel, Failure> {
    let mut config = OpenAiConfig::deepseek(None);
    config.base_url = settings.base_url.value.clone();
    config.model = settings.model.value.clone();
    config.connect_timeout = settings.connect_timeout.value;
    config.idle_timeout = settings.idle_timeout.value;
    config.retry.max_retries = settings.max_retries.value;
    config.send_reasoning_content = settings.send_reasoning_content.value;
    config.max_tokens_field = settings.max_tokens_field.value;
    config.extra_headers = settings.headers.clone();
    let var = &settings.api_key_env.value;
    config.keyless = var.is_empty();
    if !var.is_empty() {
        config.api_key = std::env::var(var)
            .ok()
            .filter(|k| !k.is_empty())
            .map(ApiKey::new);
    }
    OpenAiModel::new(config).map_err(|e| match e {
        OpenAiConfigError::MissingApiKey if !var.is_empty() => missing_key(settings),
        other => Failure::config(format!(
            "{} ({}): {other}",
            settings.base_url.value, settings.base_url.source
        )),
    })
}

fn server(settings: &Settings) -> Result<Chosen, Failure> {
    let plugin = OpenAiPlugin::from_model(server_model(settings)?);
    let host = url::Url::parse(&settings.base_url.value)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    Ok(Chosen {
        plugin: Box::new(plugin),
        label: format!("{} @ {host}", settings.model.value),
        script_prompt: None,
        replay: None,
        replay_name: None,
    })
}

fn missing_key(settings: &Settings) -> Failure {
    let var = &settings.api_key_env.value;
    let mut text = format!(
        "no API key for {} (model {})\n  dsh reads the key from the environment variable {var}, which is not set.\n  Set it for this shell:  export {var}=<your key>\n",
        settings.base_url.value, settings.model.value
    );
    if is_deepseek(&settings.base_url.value) {
        text.push_str("  Get a key at https://platform.deepseek.com/api_keys\n");
    }
    text.push_str("  Or run the offline demo, which needs no key:  dsh run --replay demo");
    Failure {
        status: crate::exit::CONFIG,
        code: "missing_api_key",
        message: text,
    }
}
