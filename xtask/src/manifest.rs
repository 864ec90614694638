//! Finding lines in `Cargo.toml` text, so diagnostics point at the declaration a reader has to
//! change. A line-level scan is enough: the manifest already parsed (cargo read it), and we
//! only need to locate keys and section headers.

/// The leading key of a `key = …` or `key.sub = …` line (bare or quoted), if any.
pub fn key_of(line: &str) -> Option<&str> {
    let line = line.trim_start();
    if let Some(rest) = line.strip_prefix('"') {
        let end = rest.find('"')?;
        return Some(&rest[..end]);
    }
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(line.len());
    let (key, rest) = line.split_at(end);
    let rest = rest.trim_start();
    (!key.is_empty() && (rest.starts_with('=') || rest.starts_with('.'))).then_some(key)
}

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

/// Classifies a table header (`[...]` already stripped): the section it opens and, for a
/// `[dependencies.<key>]` header, the key it declares.
fn section_of(header: &str) -> Option<(Section, Option<&str>)> {
    // Split off a trailing `.<key>` after a dependency table name.
    for (name, section) in [
        ("dev-dependencies", Section::Dev),
        ("dev_dependencies", Section::Dev),
        ("build-dependencies", Section::Build),
        ("build_dependencies", Section::Build),
        ("dependencies", Section::Normal),
    ] {
        if let Some(pos) = header.find(name) {
            let before = &header[..pos];
            if !(before.is_empty() || before.ends_with('.')) {
                continue;
            }
            if before.starts_with("workspace") {
                return None;
            }
            let after = &header[pos + name.len()..];
            if after.is_empty() {
                return Some((section, None));
            }
            if let Some(key) = after.strip_prefix('.') {
                return Some((section, Some(key.trim().trim_matches('"'))));
            }
        }
    }
    None
}

/// The 1-based line declaring dependency `key` (its name or rename), preferring a section of
/// the given kind and falling back to the first dependency section that declares it.
pub fn dependency_line(manifest: &str, key: &str, kind: Section) -> Option<u32> {
    let mut section: Option<Section> = None;
    let mut fallback = None;
    for (index, raw) in manifest.lines().enumerate() {
        let line = raw.trim();
        let hit = if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_start_matches('[').trim_end_matches(']').trim();
            match section_of(header) {
                Some((s, Some(declared))) => {
                    section = None;
                    (declared == key).then_some(s)
                }
                Some((s, None)) => {
                    section = Some(s);
                    None
                }
                None => {
                    section = None;
                    None
                }
            }
        } else {
            section.filter(|_| key_of(line) == Some(key))
        };
        if let Some(found) = hit {
            let number = crate::roles::line_number(index);
            if found == kind {
                return number;
            }
            fallback = fallback.or(number);
        }
    }
    fallback
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(key_of("dsh-shell.workspace = true"), Some("dsh-shell"));
        assert_eq!(key_of("  sh = { package = \"x\" }"), Some("sh"));
        assert_eq!(key_of("\"quoted-name\" = \"1\""), Some("quoted-name"));
        assert_eq!(key_of("# dsh-shell = 1"), None);
        assert_eq!(key_of("[dependencies]"), None);
        assert_eq!(key_of("version"), None);
    }

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
