//! The crate-graph gate (`deps`): every declared edge of every member is checked against the
//! seam matrix and the restricted third-party list (`restricted.rs`), so the architecture
//! invariants 1–5 of `docs/architecture.md` hold in every section of every manifest — also
//! for what a member reaches through path crates outside the workspace.

use std::collections::BTreeMap;

use crate::cargo::{Dependency, Metadata, Package, relative};
use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::manifest::{Section, dependency_line};
use crate::repo::Repo;
use crate::roles::{self, Role};

/// The verdict on one internal edge: the rule it breaks and why, or `None` when allowed.
pub fn edge_verdict(from: Role, to: Role, dev: bool) -> Option<(Rule, &'static str)> {
    use Role::*;
    const DEV: &str = "a crate's tests reach providers, consumers and the binary only through the support crates, dsh-test-providers for providers (architecture invariant 4)";
    let definition_or_support = matches!(to, Definition { .. } | Support);
    match (from, dev) {
        (Support, _) | (Root, true) => None,
        (Root, false) => matches!(to, Support | Root)
            .then_some((Rule::DepsRoot, "test support must not ship in the binary")),
        (Definition { .. } | Provider | Consumer, true) => {
            (!definition_or_support).then_some((Rule::DepsDevEdge, DEV))
        }
        (Definition { layer }, false) => match to {
            Definition { layer: to_layer } if to_layer < layer => None,
            Definition { .. } => Some((
                Rule::DepsLayer,
                "a definition may use only definitions of a lower layer (definitions are layered, `docs/architecture.md`)",
            )),
            _ => Some((
                Rule::DepsDefinition,
                "a definition depends only on definitions of a lower layer (architecture invariant 1)",
            )),
        },
        (Provider, false) => (!matches!(to, Definition { .. })).then_some((
            Rule::DepsProvider,
            "a provider may depend only on definition crates (architecture invariant 2)",
        )),
        (Consumer, false) => (!matches!(to, Definition { .. })).then_some((
            Rule::DepsConsumer,
            "a consumer may depend only on definition crates (architecture invariant 3)",
        )),
    }
}

/// Runs the `deps` gate. Returns the diagnostics and the number of manifests checked.
pub fn check(metadata: &Metadata, repo: &Repo) -> Result<(Vec<Diagnostic>, usize), XtaskError> {
    let roles = roles::parse(&metadata.metadata)?;
    let members = metadata.members();
    let mut diagnostics = Vec::new();

    let root_manifest = repo.text_or_empty("Cargo.toml")?;
    for package in roles.keys() {
        if !members.iter().any(|m| &m.name == package) {
            diagnostics.push(Diagnostic::new(
                Rule::DepsUnknownCrate,
                "Cargo.toml",
                roles::entry_line(&root_manifest, package),
                format!(
                    "role given for {package}, which is no workspace member; remove the entry from [workspace.metadata.dsh.roles]"
                ),
            ));
        }
    }

    let member_roles: BTreeMap<&str, Option<Role>> = members
        .iter()
        .map(|m| (m.name.as_str(), roles.get(&m.name).copied()))
        .collect();

    // Member directories (root-relative, ending in `/`, empty for a package at the root), so a
    // member's sources exclude another member nested inside it.
    let dir_of = |m: &Package| {
        let dir = relative(repo.root(), m.manifest_path.parent().unwrap_or(repo.root()));
        if dir.is_empty() {
            dir
        } else {
            format!("{dir}/")
        }
    };
    let member_dirs: Vec<String> = members.iter().map(|m| dir_of(m)).collect();
    for member in &members {
        let manifest_path = relative(repo.root(), &member.manifest_path);
        let Some(from) = roles.get(&member.name).copied() else {
            diagnostics.push(Diagnostic::new(
                Rule::DepsUnclassified,
                manifest_path,
                None,
                format!(
                    "{} has no role; add it to [workspace.metadata.dsh.roles] in the root Cargo.toml",
                    member.name
                ),
            ));
            continue;
        };
        let text = repo.text_or_empty(&manifest_path)?;
        let own_dir = dir_of(member);
        let nested: Vec<String> = member_dirs
            .iter()
            .filter(|d| d.len() > own_dir.len() && d.starts_with(&own_dir))
            .cloned()
            .collect();
        let mentions = crate::unused::Mentions::of(repo, &own_dir, &nested)?;
        let feature_only = crate::unused::feature_only(member);
        for dep in &member.dependencies {
            let kind = EdgeKind::of(dep);
            // A dev edge to the package itself only turns on its own test features
            // (such as a fault-injection seam); it crosses no seam.
            if dep.name == member.name && kind.section == Section::Dev {
                continue;
            }
            let dev = kind.section == Section::Dev;
            let verdict = |package: &str| match member_roles.get(package) {
                // An unclassified target already has its own diagnostic.
                Some(to) => to.and_then(|to| {
                    edge_verdict(from, to, dev)
                        .map(|(rule, why)| (rule, format!("{package} ({to})"), why))
                }),
                None => restricted(from, &member.name, package, kind.section)
                    .map(|why| (Rule::DepsRestricted, package.to_owned(), why)),
            };
            let mut found: Vec<(Rule, String, &'static str)> =
                verdict(&dep.name).into_iter().collect();
            // A path crate outside the workspace ships what it depends on: judge that as if
            // this member named it, on this member's line.
            if !member_roles.contains_key(dep.name.as_str())
                && let Some(dir) = &dep.path
            {
                let is_member = |name: &str| member_roles.contains_key(name);
                for reached in crate::path_crates::reach(dir, &dep.name, &is_member)? {
                    if let Some((rule, target, why)) = verdict(&reached.package) {
                        let through = reached.through.join(" -> ");
                        found.push((rule, format!("{through} -> {target}"), why));
                    }
                }
            }
            let key = dep.rename.as_deref().unwrap_or(&dep.name);
            if dep.name != member.name
                && !mentions.names(key)
                && !feature_only.iter().any(|f| f == key)
            {
                found.push((
                    Rule::DepsUnused,
                    key.to_owned(),
                    "no source file of the crate names it; remove it, or list a dependency declared for its features alone under [package.metadata.dsh] feature-only",
                ));
            }
            for (rule, target, why) in found {
                diagnostics.push(Diagnostic::new(
                    rule,
                    manifest_path.clone(),
                    dependency_line(&text, key, kind.section),
                    format!("{} ({from}) -> {target}, {kind}: {why}", member.name),
                ));
            }
        }
    }
    Ok((diagnostics, members.len() + 1))
}

/// The reason a normal or build edge to a restricted package is refused, if it is.
fn restricted(from: Role, member: &str, package: &str, section: Section) -> Option<&'static str> {
    if from == Role::Support || section == Section::Dev {
        return None;
    }
    crate::restricted::lookup(package)
        .filter(|r| !r.allowed.contains(&member))
        .map(|r| r.why)
}

/// The kind of a declared edge, for messages and line lookup.
struct EdgeKind<'a> {
    section: Section,
    target: Option<&'a str>,
}

impl<'a> EdgeKind<'a> {
    fn of(dep: &'a Dependency) -> Self {
        let section = match dep.kind.as_deref() {
            Some("dev") => Section::Dev,
            Some("build") => Section::Build,
            _ => Section::Normal,
        };
        EdgeKind {
            section,
            target: dep.target.as_deref(),
        }
    }
}

impl std::fmt::Display for EdgeKind<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = match self.section {
            Section::Normal => "normal",
            Section::Dev => "dev",
            Section::Build => "build",
        };
        write!(f, "{word} dependency")?;
        if let Some(target) = self.target {
            write!(f, " for target {target}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Role::*;

    const L0: Role = Definition { layer: 0 };
    const L1: Role = Definition { layer: 1 };
    const L2: Role = Definition { layer: 2 };

    fn rule(from: Role, to: Role, dev: bool) -> Option<&'static str> {
        edge_verdict(from, to, dev).map(|(rule, _)| rule.id())
    }

    #[test]
    fn definitions_use_only_lower_layers() {
        assert_eq!(rule(L1, L0, false), None);
        assert_eq!(rule(L2, L1, false), None);
        assert_eq!(rule(L1, L1, false), Some("deps/layer"));
        assert_eq!(rule(L1, L2, false), Some("deps/layer"));
        for to in [Provider, Consumer, Root, Support] {
            assert_eq!(rule(L1, to, false), Some("deps/definition"));
        }
    }

    #[test]
    fn providers_and_consumers_use_only_definitions() {
        for (from, id) in [(Provider, "deps/provider"), (Consumer, "deps/consumer")] {
            assert_eq!(rule(from, L2, false), None);
            for to in [Provider, Consumer, Root, Support] {
                assert_eq!(rule(from, to, false), Some(id));
            }
        }
    }

    #[test]
    fn dev_edges_reach_only_definitions_and_support() {
        for from in [L1, Provider, Consumer] {
            assert_eq!(rule(from, L2, true), None, "any layer is fine in tests");
            assert_eq!(rule(from, Support, true), None);
            for to in [Provider, Consumer, Root] {
                assert_eq!(rule(from, to, true), Some("deps/dev-edge"));
            }
        }
    }

    #[test]
    fn root_ships_no_test_support_and_support_is_free() {
        for to in [L0, Provider, Consumer] {
            assert_eq!(rule(Root, to, false), None);
        }
        assert_eq!(rule(Root, Support, false), Some("deps/root"));
        assert_eq!(rule(Root, Support, true), None);
        for to in [L0, Provider, Consumer, Root, Support] {
            assert_eq!(rule(Support, to, false), None);
            assert_eq!(rule(Support, to, true), None);
        }
    }

    #[test]
    fn restricted_packages() {
        let n = Section::Normal;
        assert!(restricted(Provider, "dsh-llm-openai", "reqwest", n).is_none());
        assert!(restricted(Provider, "dsh-agent-loop", "reqwest", n).is_some());
        assert!(restricted(Root, "dsh", "agent-client-protocol-schema", n).is_some());
        assert!(restricted(Consumer, "dsh-acp", "agent-client-protocol-schema", n).is_none());
        assert!(restricted(Consumer, "dsh-acp", "agent-client-protocol", n).is_some());
        assert!(restricted(Consumer, "dsh-acp", "agent-client-protocol", Section::Dev).is_none());
        assert!(restricted(Support, "dsh-test-support", "reqwest", n).is_none());
        assert!(restricted(Provider, "dsh-x", "reqwest", Section::Build).is_some());
        assert!(restricted(Consumer, "dsh-acp", "tonic", n).is_some());
        assert!(restricted(Root, "dsh", "axum", n).is_some());
        assert!(restricted(Provider, "dsh-llm-openai", "hyper-rustls", n).is_none());
    }
}
