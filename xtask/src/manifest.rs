//! Finding a dependency's declaration in `Cargo.toml` text, so diagnostics point at the line
//! a reader has to change, in whichever section and spelling it is declared.

use crate::toml_lines::TomlLines;

/// Which dependency section a header opens, if it opens one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// `[dependencies]` or `[target.….dependencies]`.
    Normal,
    /// `[dev-dependencies]`, also `dev_dependencies`.
    Dev,
    /// `[build-dependencies]`, also `build_dependencies`.
    Build,
}

/// The dependency tables of a manifest, with the section each opens.
const SECTIONS: [(&str, Section); 5] = [
    ("dependencies", Section::Normal),
    ("dev-dependencies", Section::Dev),
    ("dev_dependencies", Section::Dev),
    ("build-dependencies", Section::Build),
    ("build_dependencies", Section::Build),
];

/// The 1-based line declaring dependency `key` (its name or rename), preferring a section of
/// the given kind and falling back to the first dependency section that declares it.
pub fn dependency_line(manifest: &str, key: &str, kind: Section) -> Option<u32> {
    let toml = TomlLines::parse(manifest)?;
    let mut found: Vec<(u32, Section)> = Vec::new();
    for prefix in [&[][..], &["target", "*"][..]] {
        for (name, section) in SECTIONS {
            let path: Vec<&str> = prefix.iter().copied().chain([name]).collect();
            for (_, table) in toml.tables(&path) {
                if let Some(line) = toml.key_line(table, key) {
                    found.push((line, section));
                }
            }
        }
    }
    found.sort_by_key(|(line, _)| *line);
    found
        .iter()
        .find(|(_, section)| *section == kind)
        .or(found.first())
        .map(|(line, _)| *line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependency_lines_prefer_the_kind_section() {
        let manifest = "[package]\nname = \"a\"\n\n[dependencies]\nserde = \"1\"\nx.workspace = true\n\n[dev-dependencies]\nx = { path = \"../x\" }\n\n[target.'cfg(unix)'.build-dependencies]\ny = \"1\"\n\n[dependencies.z]\npath = \"../z\"\n";
        assert_eq!(dependency_line(manifest, "x", Section::Normal), Some(6));
        assert_eq!(dependency_line(manifest, "x", Section::Dev), Some(9));
        assert_eq!(dependency_line(manifest, "x", Section::Build), Some(6));
        assert_eq!(dependency_line(manifest, "y", Section::Build), Some(12));
        assert_eq!(dependency_line(manifest, "z", Section::Normal), Some(14));
        assert_eq!(dependency_line(manifest, "name", Section::Normal), None);
        assert_eq!(dependency_line(manifest, "absent", Section::Normal), None);
    }
}
