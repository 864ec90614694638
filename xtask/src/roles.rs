//! Seam roles, read from `[workspace.metadata.dsh.roles]` in the root manifest.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::XtaskError;

/// The seam role of a workspace member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A service definition; it may use only definitions of a lower layer.
    Definition {
        /// Its layer in the definition stack (`dsh-kernel` is 0).
        layer: i64,
    },
    /// Implements a definition.
    Provider,
    /// Uses a definition.
    Consumer,
    /// The composition root (the `dsh` binary).
    Root,
    /// Test support and tooling.
    Support,
}

impl Role {
    /// The role word as written in the table and in `Seam role:` lines.
    pub fn word(self) -> &'static str {
        match self {
            Role::Definition { .. } => "definition",
            Role::Provider => "provider",
            Role::Consumer => "consumer",
            Role::Root => "root",
            Role::Support => "support",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Definition { layer } => write!(f, "definition, layer {layer}"),
            other => f.write_str(other.word()),
        }
    }
}

/// Where the roles table lives, for error messages.
const TABLE: &str = "workspace.metadata.dsh.roles";

/// Parses the roles table out of `cargo metadata`'s `metadata` value. A missing table means no
/// member is classified; a malformed one is a configuration error naming the key.
pub fn parse(workspace_metadata: &serde_json::Value) -> Result<BTreeMap<String, Role>, XtaskError> {
    let err =
        |key: &str, message: String| XtaskError::config("Cargo.toml", format!("{key}: {message}"));
    let Some(table) = workspace_metadata
        .get("dsh")
        .and_then(|dsh| dsh.get("roles"))
    else {
        return Ok(BTreeMap::new());
    };
    let table = table.as_object().ok_or_else(|| {
        err(
            TABLE,
            "must be a table of `<package> = { role = \"…\" }`".into(),
        )
    })?;
    let mut roles = BTreeMap::new();
    for (package, entry) in table {
        let key = format!("{TABLE}.{package}");
        let entry = entry.as_object().ok_or_else(|| {
            err(
                &key,
                "must be an inline table such as { role = \"provider\" }".into(),
            )
        })?;
        if let Some(unknown) = entry.keys().find(|k| *k != "role" && *k != "layer") {
            return Err(err(
                &key,
                format!("unknown key `{unknown}`; only `role` and `layer` are allowed"),
            ));
        }
        let word = entry
            .get("role")
            .and_then(|r| r.as_str())
            .ok_or_else(|| err(&key, "missing string key `role`".into()))?;
        let layer = entry.get("layer");
        let role = match word {
            "definition" => {
                let layer = layer
                    .and_then(|l| l.as_i64())
                    .filter(|l| *l >= 0)
                    .ok_or_else(|| {
                        err(
                            &key,
                            "a definition needs an integer `layer` of 0 or more".into(),
                        )
                    })?;
                Role::Definition { layer }
            }
            "provider" | "consumer" | "root" | "support" if layer.is_some() => {
                return Err(err(
                    &key,
                    format!("`layer` is only for definitions, not for a {word}"),
                ));
            }
            "provider" => Role::Provider,
            "consumer" => Role::Consumer,
            "root" => Role::Root,
            "support" => Role::Support,
            other => {
                return Err(err(
                    &key,
                    format!(
                        "unknown role {other:?}; use definition, provider, consumer, root or support"
                    ),
                ));
            }
        };
        roles.insert(package.clone(), role);
    }
    Ok(roles)
}

/// The 1-based line of `package`'s entry in the root manifest's roles table, if it can be
/// found, however the entry is spelled.
pub fn entry_line(root_manifest: &str, package: &str) -> Option<u32> {
    crate::toml_lines::TomlLines::parse(root_manifest)?.line(&[
        "workspace",
        "metadata",
        "dsh",
        "roles",
        package,
    ])
}

pub(crate) fn line_number(index: usize) -> Option<u32> {
    u32::try_from(index + 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_role() {
        let roles = parse(&json!({"dsh": {"roles": {
            "k": {"role": "definition", "layer": 0},
            "p": {"role": "provider"}, "c": {"role": "consumer"},
            "r": {"role": "root"}, "s": {"role": "support"},
        }}}))
        .unwrap();
        assert_eq!(roles["k"], Role::Definition { layer: 0 });
        assert_eq!(roles["p"], Role::Provider);
        assert_eq!(roles["s"].to_string(), "support");
        assert_eq!(roles["k"].to_string(), "definition, layer 0");
    }

    #[test]
    fn malformed_tables_are_configuration_errors() {
        for bad in [
            json!({"dsh": {"roles": 3}}),
            json!({"dsh": {"roles": {"a": "provider"}}}),
            json!({"dsh": {"roles": {"a": {"role": "adapter"}}}}),
            json!({"dsh": {"roles": {"a": {"role": "definition"}}}}),
            json!({"dsh": {"roles": {"a": {"role": "definition", "layer": "1"}}}}),
            json!({"dsh": {"roles": {"a": {"role": "provider", "layer": 1}}}}),
            json!({"dsh": {"roles": {"a": {"role": "provider", "colour": 1}}}}),
        ] {
            let err = parse(&bad).unwrap_err();
            assert!(matches!(err, XtaskError::Config { .. }), "{bad}: {err}");
            assert!(
                err.to_string()
                    .starts_with("Cargo.toml: workspace.metadata.dsh.roles")
            );
        }
        assert!(parse(&serde_json::Value::Null).unwrap().is_empty());
    }

    #[test]
    fn finds_entry_lines() {
        let manifest = "[workspace]\n\n[workspace.metadata.dsh.roles]\ndsh-a = { role = \"root\" }\n\"dsh-b\" = { role = \"support\" }\n\n[workspace.metadata.dsh.roles.dsh-c]\nrole = \"provider\"\n";
        assert_eq!(entry_line(manifest, "dsh-a"), Some(4));
        assert_eq!(entry_line(manifest, "dsh-b"), Some(5));
        assert_eq!(entry_line(manifest, "dsh-c"), Some(7));
        assert_eq!(entry_line(manifest, "role"), None);
    }
}
