//! `dsh config`: every effective value with where it came from. The API key itself is never
//! printed, only whether it is set and how long it is.

use std::io::Write;

use serde_json::{Value, json};

use crate::args::Global;
use crate::exit::Failure;
use crate::settings::{Set, Settings, Source};

fn row<T: serde::Serialize>(name: &str, set: &Set<T>) -> (String, Value, Source) {
    (name.to_owned(), json!(set.value), set.source.clone())
}

/// Runs `dsh config`; returns the exit status.
pub fn config(global: &Global, as_json: bool) -> u8 {
    match render(global, as_json) {
        Ok(text) => {
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            0
        }
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            failure.status
        }
    }
}

fn render(global: &Global, as_json: bool) -> Result<String, Failure> {
    let s = Settings::resolve(global, None)?;
    let reasoning = s.reasoning.value.map_or("default".to_owned(), |r| {
        json!(r).as_str().unwrap_or("default").to_owned()
    });
    let mut rows = vec![
        row("model", &s.model),
        row("base_url", &s.base_url),
        row("api_key_env", &s.api_key_env),
        (
            "reasoning".to_owned(),
            json!(reasoning),
            s.reasoning.source.clone(),
        ),
        row("max_tokens", &s.max_tokens),
        row("temperature", &s.temperature),
        row("max_steps", &s.max_steps),
        row("data_dir", &s.data_dir),
        row("http.connect_timeout_secs", &s.connect_timeout_secs),
        row("http.idle_timeout_secs", &s.idle_timeout_secs),
        row("http.max_retries", &s.max_retries),
        row("http.send_reasoning_content", &s.send_reasoning_content),
        row("http.max_tokens_field", &s.max_tokens_field),
        row("acp.permission", &s.acp_permission),
        row("acp.max_line_bytes", &s.acp_max_line_bytes),
        row("acp.cancel_grace_ms", &s.acp_cancel_grace_ms),
        row("acp.teardown_deadline_ms", &s.acp_teardown_deadline_ms),
    ];
    if let Some(replay) = &s.replay {
        rows.push(row("replay", replay));
    }
    let var = &s.api_key_env.value;
    let key = match std::env::var(var)
        .ok()
        .filter(|k| !k.is_empty() && !var.is_empty())
    {
        Some(key) => format!("<set, {} chars>", key.chars().count()),
        None if var.is_empty() => "<not needed>".to_owned(),
        None => "<not set>".to_owned(),
    };
    let file = match &s.config_file {
        Some((path, true)) => format!("{} (present)", path.display()),
        Some((path, false)) => format!("{} (not present)", path.display()),
        None => "(none)".to_owned(),
    };
    if as_json {
        let mut out = serde_json::Map::new();
        out.insert(
            "config_file".into(),
            json!({"value": file, "source": "default"}),
        );
        for (name, value, source) in rows {
            out.insert(name, json!({"value": value, "source": source.to_string()}));
        }
        out.insert(
            "api_key".into(),
            json!({"value": key, "source": format!("env {var}")}),
        );
        return Ok(format!("{}\n", Value::Object(out)));
    }
    let mut text = format!("config_file = {file}\n");
    for (name, value, source) in rows {
        let shown = match value {
            Value::Null => "(unset)".to_owned(),
            Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        };
        text.push_str(&format!("{name} = {shown}  # {source}\n"));
    }
    text.push_str(&format!("api_key = {key}  # env {var}\n"));
    Ok(text)
}
