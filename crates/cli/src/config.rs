//! `dsh config`: every effective value with where it came from. The API key itself is never
//! printed, only whether it is set and how long it is.

use serde_json::{Value, json};

use crate::args::Global;
use crate::exit::Failure;
use crate::settings::{CommandFlags, Settings};

/// Runs `dsh config`; returns the exit status.
pub fn config(global: &Global, as_json: bool) -> u8 {
    match render(global, as_json) {
        Ok(text) => {
            let _ = crate::output::write(text.as_bytes());
            0
        }
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            failure.status
        }
    }
}

fn render(global: &Global, as_json: bool) -> Result<String, Failure> {
    let s = Settings::resolve(global, CommandFlags::default())?;
    let rows = s.resolved.iter().map(|r| {
        let value = match (r.key.name, r.text.as_deref()) {
            // What the database is, never its password.
            ("sessions_url", Some(url)) => dsh_session_postgres::describe(url)
                .map_or(Value::Null, |(shown, _)| Value::String(shown)),
            (_, text) => text.map_or(Value::Null, |text| r.key.kind.json(text)),
        };
        (r.key.name.to_owned(), value, r.source.clone())
    });
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
    let kernel = crate::compose::sandbox_kernel();
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
        out.insert(
            "sandbox.kernel".into(),
            json!({"value": kernel, "source": "kernel"}),
        );
        if !s.writable_roots.is_empty() {
            out.insert(
                "sandbox.writable_roots".into(),
                json!({"value": s.writable_roots, "source": "file"}),
            );
        }
        for (name, list) in permission_lists(&s) {
            out.insert(
                format!("permissions.{name}"),
                json!({"value": list, "source": "file"}),
            );
        }
        for (server, path) in &s.mcp_servers {
            out.insert(
                format!("mcp_servers.{}", server.name),
                json!({"value": server.summary(),
                       "source": format!("file {}:{}", path.display(), server.line)}),
            );
        }
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
    text.push_str(&format!("sandbox.kernel = {kernel:?}  # kernel\n"));
    if !s.writable_roots.is_empty() {
        text.push_str(&format!(
            "sandbox.writable_roots = {:?}  # file\n",
            s.writable_roots
        ));
    }
    for (name, list) in permission_lists(&s) {
        text.push_str(&format!("permissions.{name} = {list:?}  # file\n"));
    }
    // How each server is reached and which variables and headers it gets, never their values.
    for (server, path) in &s.mcp_servers {
        text.push_str(&format!(
            "mcp_servers.{} = {:?}  # file {}:{}\n",
            server.name,
            server.summary(),
            path.display(),
            server.line
        ));
    }
    Ok(text)
}

/// The user's permission rules that the file set, by list.
fn permission_lists(s: &Settings) -> Vec<(&'static str, &Vec<String>)> {
    let p = &s.permissions;
    [("allow", &p.allow), ("ask", &p.ask), ("deny", &p.deny)]
        .into_iter()
        .filter(|(_, list)| !list.is_empty())
        .collect()
}
