//! Which model a run talks to: a replay script (offline, labelled as scripted everywhere), or
//! an OpenAI-compatible server with the key from the environment.

use std::path::Path;
use std::sync::Arc;

use dsh_kernel::Plugin;
use dsh_llm_openai::{ApiKey, OpenAiConfig, OpenAiConfigError, OpenAiModel, OpenAiPlugin};
use dsh_llm_replay::{ReplayModel, ReplayPlugin, ReplayScript};

use crate::exit::Failure;
use crate::settings::{Settings, Source, is_deepseek};
use dsh_llm::CancellationToken;
use dsh_tools::safe_text::SafeText;

/// The chosen model: its plugin, the banner label, and the script's default prompt.
pub struct Chosen {
    pub plugin: Box<dyn Plugin>,
    pub label: String,
    pub script_prompt: Option<String>,
    pub replay: Option<Arc<ReplayModel>>,
    /// The replay script's name, when the model is scripted.
    pub replay_name: Option<String>,
    /// The server's model, when the model is a server's.
    pub server: Option<OpenAiModel>,
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
        server: None,
    })
}

/// The OpenAI-compatible model the settings describe, or why they are refused.
pub fn server_model(settings: &Settings) -> Result<OpenAiModel, Failure> {
    let mut config = OpenAiConfig::deepseek(None);
    config.base_url = settings.base_url.value.clone();
    config.model = settings.model.value.clone();
    config.connect_timeout = settings.connect_timeout.value;
    config.first_byte_timeout = settings.first_byte_timeout.value;
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
    let model = server_model(settings)?;
    let plugin = OpenAiPlugin::from_model(model.clone());
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
        server: Some(model),
    })
}

/// Refuses, before any request, a server that is not DeepSeek and does not offer the model
/// nobody chose (dsh's default, DeepSeek's): its list is the answer, not a 404 mid-turn. A
/// server without a list (or one that fails to give it) is tried as it is.
pub async fn check_offered(settings: &Settings, model: &OpenAiModel) -> Result<(), Failure> {
    let chosen = !matches!(settings.model.source, Source::Default);
    if chosen || is_deepseek(&settings.base_url.value) {
        return Ok(());
    }
    let listed = match model.list_models(CancellationToken::new()).await {
        Ok(listed) if !listed.is_empty() => listed,
        Ok(_) => return Ok(()),
        Err(e) => {
            tracing::debug!("the server's models are not known: {e}");
            return Ok(());
        }
    };
    let wanted = &settings.model.value;
    if listed.iter().any(|m| m == wanted) {
        return Ok(());
    }
    let shown: Vec<String> = listed.iter().take(20).map(|m| SafeText::plain(m)).collect();
    Err(Failure::config(format!(
        "{} does not offer the model {wanted} (dsh's default): choose one with --model (or `model` in the configuration): {}{}",
        settings.base_url.value,
        shown.join(", "),
        if listed.len() > shown.len() {
            ", …"
        } else {
            ""
        }
    )))
}

fn missing_key(settings: &Settings) -> Failure {
    let var = &settings.api_key_env.value;
    let mut text = key_needed(settings);
    text.push_str(&format!(
        "\n  Set it for this shell:  export {var}=<your key>"
    ));
    text.push_str(&get_a_key(settings));
    text.push_str("\n  Or run the offline demo, which needs no key:  dsh run --replay demo");
    Failure {
        status: crate::exit::CONFIG,
        code: MISSING_API_KEY,
        message: text,
    }
}

/// The code of the failure [`choose`] returns when the key's variable is not set.
pub const MISSING_API_KEY: &str = "missing_api_key";

/// What an editor user must do when the key is missing: the same diagnosis as `dsh run`
/// gives, with where an editor takes environment variables from.
pub fn missing_key_for_editor(settings: &Settings) -> String {
    let var = &settings.api_key_env.value;
    let mut text = key_needed(settings);
    text.push_str(&format!(
        "\n  In Zed, set it in settings.json under the agent server:  \"agent_servers\": {{\"dsh\": {{\"env\": {{\"{var}\": \"<your key>\"}}}}}}, then restart the agent."
    ));
    text.push_str(&get_a_key(settings));
    text.push_str(
        "\n  Or try dsh offline, with no key:  \"args\": [\"--replay\", \"demo\", \"acp\"]",
    );
    text
}

/// What to check when the server refuses the key (HTTP 401 or 403): where the key came
/// from, or that none was sent and how to send one.
pub fn auth_hint(settings: &Settings) -> String {
    let var = &settings.api_key_env.value;
    let host = url::Url::parse(&settings.base_url.value)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| settings.base_url.value.clone());
    let set = !var.is_empty() && std::env::var_os(var).is_some_and(|v| !v.is_empty());
    if var.is_empty() {
        format!(
            "dsh sent no key to {host}: api_key_env is empty ({}). If the server needs one, put it in DSH_API_KEY and set api_key_env to DSH_API_KEY (or to the variable that holds it).",
            settings.api_key_env.source
        )
    } else if !set {
        // A server on this machine is tried without a key; it wanted one.
        format!(
            "no key was set, so dsh sent none to {host}: set {var}=<the key for {host}> (or api_key_env to the variable that holds it)."
        )
    } else {
        format!(
            "the key came from the environment variable {var}; check that it is a valid key for {host}."
        )
    }
}

fn key_needed(settings: &Settings) -> String {
    format!(
        "no API key for {} (model {})\n  dsh reads the key from the environment variable {}, which is not set.",
        settings.base_url.value, settings.model.value, settings.api_key_env.value
    )
}

fn get_a_key(settings: &Settings) -> String {
    if is_deepseek(&settings.base_url.value) {
        "\n  Get a key at https://platform.deepseek.com/api_keys".to_owned()
    } else {
        String::new()
    }
}
