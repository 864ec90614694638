//! `[mcp_servers.<name>]` tables of the configuration file: the MCP servers every session of
//! the process may use. A server is `command` (with `args`, `env`, `cwd`) or `url` (with
//! `headers`), plus `enabled`, `startup_timeout_ms` and `tool_timeout_ms`; a stdio server
//! with `sandbox = true` starts in the kernel's sandbox, as commands do. A value of `env`
//! or `headers` may be a reference, `"$NAME"`, read from dsh's environment when the server
//! starts, so a secret need not be in the file; values are never printed.

use std::path::PathBuf;
use std::time::Duration;

use dsh_mcp::{ServerSpec, Transport};
use toml_edit::{Item, TableLike};

/// One configured server, as the file says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerEntry {
    pub name: String,
    /// The line of its table.
    pub line: usize,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    pub headers: Vec<(String, String)>,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Started in the kernel's sandbox (stdio only).
    pub sandbox: bool,
}

const FIELDS: &str = "`command`, `args`, `env`, `cwd`, `url`, `headers`, `enabled`, \
                      `startup_timeout_ms`, `tool_timeout_ms`, `sandbox`";

/// Reads the `mcp_servers` table: each server with the byte offset of its table; an error is
/// `(byte offset, message)`.
pub fn read(item: &Item, at: usize) -> Result<Vec<(usize, McpServerEntry)>, (usize, String)> {
    let Some(servers) = item.as_table_like() else {
        return Err((
            at,
            "invalid type: mcp_servers must be a table of tables".into(),
        ));
    };
    let mut entries = Vec::new();
    for (name, server) in servers.iter() {
        let server_at = server.span().map_or(at, |s| s.start);
        let Some(table) = server.as_table_like() else {
            return Err((server_at, format!("mcp_servers.{name} must be a table")));
        };
        entries.push((server_at, entry(name, table, server_at)?));
    }
    Ok(entries)
}

fn entry(name: &str, table: &dyn TableLike, at: usize) -> Result<McpServerEntry, (usize, String)> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err((
            at,
            format!("mcp_servers.{name}: a server name is letters, digits, `_` and `-`"),
        ));
    }
    let mut entry = McpServerEntry {
        name: name.to_owned(),
        line: 0,
        command: None,
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
        url: None,
        headers: Vec::new(),
        enabled: true,
        startup_timeout: ServerSpec::STARTUP_TIMEOUT,
        tool_timeout: ServerSpec::TOOL_TIMEOUT,
        sandbox: false,
    };
    for (key, value) in table.iter() {
        let value_at = value.span().map_or(at, |s| s.start);
        let wrong = |expected: &str| {
            (
                value_at,
                format!("mcp_servers.{name}.{key} must be {expected}"),
            )
        };
        match key {
            "command" => entry.command = Some(text(value).ok_or_else(|| wrong("a string"))?),
            "url" => {
                let url = text(value).ok_or_else(|| wrong("a string"))?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(wrong("an http:// or https:// URL (MCP's streamable HTTP)"));
                }
                entry.url = Some(url);
            }
            "cwd" => entry.cwd = Some(PathBuf::from(text(value).ok_or_else(|| wrong("a string"))?)),
            "args" => {
                let list = value
                    .as_array()
                    .ok_or_else(|| wrong("an array of strings"))?;
                for arg in list.iter() {
                    let arg = arg.as_str().ok_or_else(|| wrong("an array of strings"))?;
                    entry.args.push(arg.to_owned());
                }
            }
            "env" | "headers" => {
                let map = value
                    .as_table_like()
                    .ok_or_else(|| wrong("a table of strings"))?;
                let mut pairs = Vec::new();
                for (k, v) in map.iter() {
                    let v = v.as_str().ok_or_else(|| wrong("a table of strings"))?;
                    pairs.push((k.to_owned(), v.to_owned()));
                }
                if key == "env" {
                    entry.env = pairs;
                } else {
                    entry.headers = pairs;
                }
            }
            "enabled" => entry.enabled = value.as_bool().ok_or_else(|| wrong("a boolean"))?,
            "sandbox" => entry.sandbox = value.as_bool().ok_or_else(|| wrong("a boolean"))?,
            "startup_timeout_ms" | "tool_timeout_ms" => {
                let ms = value
                    .as_integer()
                    .filter(|n| (1..=3_600_000).contains(n))
                    .ok_or_else(|| wrong("an integer from 1 to 3600000"))?;
                let limit = Duration::from_millis(ms.unsigned_abs());
                if key == "startup_timeout_ms" {
                    entry.startup_timeout = limit;
                } else {
                    entry.tool_timeout = limit;
                }
            }
            other => {
                return Err((
                    value_at,
                    format!(
                        "unknown field `{other}` in mcp_servers.{name}, expected one of {FIELDS}"
                    ),
                ));
            }
        }
    }
    match (&entry.command, &entry.url) {
        (Some(_), Some(_)) => Err((
            at,
            format!("mcp_servers.{name} has both `command` and `url`: choose one"),
        )),
        (None, None) => Err((
            at,
            format!("mcp_servers.{name} needs `command` (stdio) or `url` (streamable HTTP)"),
        )),
        (None, Some(_)) if entry.sandbox => Err((
            at,
            format!(
                "mcp_servers.{name}: `sandbox` confines a server dsh starts (`command`), not \
                 one it reaches at a `url`"
            ),
        )),
        _ => Ok(entry),
    }
}

fn text(item: &Item) -> Option<String> {
    item.as_str().map(str::to_owned)
}

/// `"$NAME"` read from the environment; anything else as written.
fn resolve(server: &str, key: &str, value: &str) -> Result<String, String> {
    match value.strip_prefix('$') {
        Some(var)
            if !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            std::env::var(var).map_err(|_| {
                format!("mcp_servers.{server}: {key} refers to ${var}, which is not set")
            })
        }
        _ => Ok(value.to_owned()),
    }
}

impl McpServerEntry {
    /// The server as the MCP seam takes it, its references read from the environment.
    pub fn spec(&self) -> Result<ServerSpec, String> {
        let pairs = |key: &str, pairs: &[(String, String)]| {
            pairs
                .iter()
                .map(|(k, v)| resolve(&self.name, &format!("{key}.{k}"), v).map(|v| (k.clone(), v)))
                .collect::<Result<Vec<_>, String>>()
        };
        let transport = match (&self.command, &self.url) {
            (Some(command), _) => Transport::Stdio {
                command: command.clone(),
                args: self.args.clone(),
                env: pairs("env", &self.env)?,
                cwd: self.cwd.clone(),
            },
            (None, Some(url)) => Transport::Http {
                url: url.clone(),
                headers: pairs("headers", &self.headers)?,
            },
            (None, None) => return Err(format!("mcp_servers.{} has no command or url", self.name)),
        };
        Ok(ServerSpec {
            name: self.name.clone(),
            transport,
            startup_timeout: self.startup_timeout,
            tool_timeout: self.tool_timeout,
            // Its directories are the composition's to fill in (`compose`).
            sandbox: self.sandbox.then(dsh_mcp::Sandbox::default),
        })
    }

    /// What `dsh config` shows: how it is reached, never a value of `env` or `headers`.
    pub fn summary(&self) -> String {
        let how = match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut shown = command.clone();
                for arg in &self.args {
                    shown.push(' ');
                    shown.push_str(arg);
                }
                format!("stdio: {shown}")
            }
            (None, Some(url)) => format!("http: {url}"),
            (None, None) => String::new(),
        };
        let names = |pairs: &[(String, String)]| {
            pairs
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut summary = how;
        if self.sandbox {
            summary.push_str("; sandboxed");
        }
        if !self.env.is_empty() {
            summary.push_str(&format!("; env {}", names(&self.env)));
        }
        if !self.headers.is_empty() {
            summary.push_str(&format!("; headers {}", names(&self.headers)));
        }
        if !self.enabled {
            summary.push_str("; disabled");
        }
        summary
    }
}
