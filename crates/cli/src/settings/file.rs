//! The configuration file: TOML, read strictly against the settings table. A key the table
//! does not know, a value of the wrong TOML type or out of its range, and a literal API key
//! are refused with `<file>:<line>:<col>: <message>`, and every value keeps the line it came
//! from so `dsh config` can say where each setting was set.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use toml_edit::{ImDocument, Item, TableLike};

use super::table::{KEYS, Kind, TABLES, find};
use crate::exit::Failure;

/// One value the file sets: its text (checked against its kind) and its line.
#[derive(Clone, Debug)]
pub struct FileValue {
    pub text: String,
    pub line: usize,
}

/// A loaded file.
#[derive(Debug)]
pub struct Loaded {
    pub path: PathBuf,
    /// By setting name.
    pub values: HashMap<&'static str, FileValue>,
    /// `[http.headers]`, in the file's order.
    pub headers: Vec<(String, String)>,
    /// `[mcp_servers.<name>]`, in the file's order.
    pub mcp_servers: Vec<super::mcp::McpServerEntry>,
    /// `[permissions]`: the `allow`, `ask` and `deny` patterns.
    pub permissions: Permissions,
    /// `[sandbox] writable_roots`: directories sandboxed commands may write besides the
    /// session's, absolute (`~` expanded).
    pub writable_roots: Vec<PathBuf>,
}

/// The permission rules of the file, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
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
    Some((config_dir()?.join("config.toml"), false))
}

/// dsh's directory of user configuration: `$XDG_CONFIG_HOME/dsh`, else `~/.config/dsh`.
pub fn config_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(xdg) if Path::new(&xdg).is_absolute() => PathBuf::from(xdg),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".config"),
    };
    Some(base.join("dsh"))
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
    let reader = Reader { path, text: &text };
    let document = ImDocument::parse(text.as_str()).map_err(|e| {
        let at = e.span().map_or(0, |span| span.start);
        reader.refuse(at, e.message().trim())
    })?;
    let mut loaded = Loaded {
        path: path.to_path_buf(),
        values: HashMap::new(),
        headers: Vec::new(),
        mcp_servers: Vec::new(),
        permissions: Permissions::default(),
        writable_roots: Vec::new(),
    };
    reader.table(document.as_table(), None, &mut loaded)?;
    Ok(Some(loaded))
}

/// The file's text, to turn byte offsets into positions.
struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Reader<'_> {
    /// `(line, column)`, both from 1, of byte `offset`.
    fn position(&self, offset: usize) -> (usize, usize) {
        let before = self.text.get(..offset.min(self.text.len())).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    fn refuse(&self, offset: usize, message: &str) -> Failure {
        let (line, column) = self.position(offset);
        Failure::config(format!(
            "{}:{line}:{column}: {message}",
            self.path.display()
        ))
    }

    fn table(
        &self,
        table: &dyn TableLike,
        prefix: Option<&str>,
        loaded: &mut Loaded,
    ) -> Result<(), Failure> {
        for (name, item) in table.iter() {
            let key_at = table
                .key(name)
                .and_then(|k| k.span())
                .map_or(0, |span| span.start);
            let value_at = item.span().map_or(key_at, |span| span.start);
            let full = match prefix {
                Some(prefix) => format!("{prefix}.{name}"),
                None => name.to_owned(),
            };
            if full == "api_key" {
                return Err(self.refuse(
                    value_at,
                    "dsh does not read API keys from the config file; set DEEPSEEK_API_KEY (or \
                     the variable named by api_key_env)",
                ));
            }
            if full == "http.headers" {
                self.headers(item, value_at, loaded)?;
                continue;
            }
            if full == "sandbox.writable_roots" {
                loaded.writable_roots = self.writable_roots(item, value_at)?;
                continue;
            }
            if full == "permissions" {
                loaded.permissions = self.permissions(item, value_at)?;
                continue;
            }
            // The user's hooks, read whole by the hooks provider's own parser.
            if full == "hooks" {
                continue;
            }
            if full == "mcp_servers" {
                let servers =
                    super::mcp::read(item, value_at).map_err(|(at, m)| self.refuse(at, &m))?;
                loaded.mcp_servers = servers
                    .into_iter()
                    .map(|(at, mut server)| {
                        server.line = self.position(at).0;
                        server
                    })
                    .collect();
                continue;
            }
            if prefix.is_none() && TABLES.contains(&name) {
                let Some(inner) = item.as_table_like() else {
                    return Err(self.refuse(
                        value_at,
                        &format!("invalid type: {}, expected a table", item.type_name()),
                    ));
                };
                self.table(inner, Some(name), loaded)?;
                continue;
            }
            let Some(key) = find(&full).filter(|k| k.in_file) else {
                return Err(self.refuse(key_at, &unknown(name, prefix)));
            };
            let text = scalar(item, key.kind).ok_or_else(|| {
                self.refuse(
                    value_at,
                    &format!(
                        "invalid type: {}, expected {}",
                        item.type_name(),
                        toml_type(key.kind)
                    ),
                )
            })?;
            let leaf = full.rsplit('.').next().unwrap_or(&full);
            key.kind
                .check(&text)
                .map_err(|expected| self.refuse(value_at, &format!("{leaf} must be {expected}")))?;
            let line = self.position(value_at).0;
            loaded.values.insert(key.name, FileValue { text, line });
        }
        Ok(())
    }

    fn headers(&self, item: &Item, at: usize, loaded: &mut Loaded) -> Result<(), Failure> {
        let Some(headers) = item.as_table_like() else {
            return Err(self.refuse(at, "invalid type: headers must be a table"));
        };
        for (name, value) in headers.iter() {
            let value_at = value.span().map_or(at, |span| span.start);
            let Some(text) = value.as_str() else {
                return Err(self.refuse(value_at, &format!("header {name:?} must be a string")));
            };
            if !header_ok(name, text) {
                return Err(self.refuse(
                    value_at,
                    &format!("header {name:?} is not a valid HTTP header"),
                ));
            }
            loaded.headers.push((name.to_owned(), text.to_owned()));
        }
        Ok(())
    }

    /// `[sandbox] writable_roots`: a list of absolute directories (or `~/…`).
    fn writable_roots(&self, item: &Item, at: usize) -> Result<Vec<PathBuf>, Failure> {
        let Some(list) = item.as_array() else {
            return Err(self.refuse(at, "sandbox.writable_roots must be a list of directories"));
        };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut roots = Vec::new();
        for value in list.iter() {
            let Some(text) = value.as_str() else {
                return Err(self.refuse(at, "sandbox.writable_roots: a directory must be a string"));
            };
            let path = match (text.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(text),
            };
            if !path.is_absolute() {
                return Err(self.refuse(
                    at,
                    &format!("sandbox.writable_roots: {text:?} is not an absolute path (or ~/…)"),
                ));
            }
            roots.push(path);
        }
        Ok(roots)
    }

    /// `[permissions]`: `allow`, `ask` and `deny`, each a list of patterns; each pattern is
    /// checked here, so a typo is refused with its line, not met at the first call.
    fn permissions(&self, item: &Item, at: usize) -> Result<Permissions, Failure> {
        let Some(table) = item.as_table_like() else {
            return Err(self.refuse(at, "invalid type: permissions must be a table"));
        };
        let mut permissions = Permissions::default();
        for (name, value) in table.iter() {
            let value_at = value.span().map_or(at, |span| span.start);
            let list = match name {
                "allow" => &mut permissions.allow,
                "ask" => &mut permissions.ask,
                "deny" => &mut permissions.deny,
                other => {
                    return Err(self.refuse(
                        value_at,
                        &format!("unknown field `{other}`, expected one of `allow`, `ask`, `deny`"),
                    ));
                }
            };
            let Some(patterns) = value.as_array() else {
                return Err(self.refuse(
                    value_at,
                    &format!("permissions.{name} must be a list of patterns such as \"bash(cargo test*)\""),
                ));
            };
            for pattern in patterns.iter() {
                let Some(text) = pattern.as_str() else {
                    return Err(self.refuse(
                        value_at,
                        &format!("permissions.{name}: a pattern must be a string"),
                    ));
                };
                if let Err(e) = dsh_tools::Rule::parse(text) {
                    return Err(self.refuse(value_at, &e.to_string()));
                }
                list.push(text.to_owned());
            }
        }
        Ok(permissions)
    }
}

/// The message for a key the table does not know, listing what that table does hold.
fn unknown(name: &str, table: Option<&str>) -> String {
    let known: Vec<String> = KEYS
        .iter()
        .filter(|k| k.in_file)
        .filter_map(|k| match (table, k.name.split_once('.')) {
            (None, None) => Some(k.name.to_owned()),
            (Some(t), Some((kt, leaf))) if t == kt => Some(leaf.to_owned()),
            _ => None,
        })
        .chain(match table {
            None => TABLES
                .iter()
                .map(|t| (*t).to_owned())
                .chain(["mcp_servers".to_owned(), "permissions".to_owned()])
                .collect::<Vec<_>>(),
            Some("http") => vec!["headers".to_owned()],
            Some(_) => Vec::new(),
        })
        .map(|k| format!("`{k}`"))
        .collect();
    format!(
        "unknown field `{name}`, expected one of {}",
        known.join(", ")
    )
}

/// A scalar's text when the TOML type fits `kind`.
fn scalar(item: &Item, kind: Kind) -> Option<String> {
    match kind {
        Kind::Text { .. } | Kind::Choice(_) => item.as_str().map(str::to_owned),
        Kind::Int { .. } => item.as_integer().map(|n| n.to_string()),
        Kind::Float { .. } => item
            .as_float()
            .or_else(|| item.as_integer().map(|n| n as f64))
            .map(|n| n.to_string()),
        Kind::Bool => item.as_bool().map(|b| b.to_string()),
    }
}

fn toml_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Text { .. } | Kind::Choice(_) => "a string",
        Kind::Int { .. } => "an integer",
        Kind::Float { .. } => "a number",
        Kind::Bool => "a boolean",
    }
}

/// A header name is a token; a value is visible ASCII, spaces and tabs.
fn header_ok(name: &str, value: &str) -> bool {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    !name.is_empty()
        && name.bytes().all(token)
        && value
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}
