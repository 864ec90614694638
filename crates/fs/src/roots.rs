//! The path rules: where a path given by the model points, and whether that is inside the
//! session's directories.

use std::path::{Component, Path, PathBuf};

use crate::error::FsError;

/// A session's directories: its working directory and any additional ones (an editor's other
/// workspace folders). Relative paths resolve against the working directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    cwd: PathBuf,
    extra: Vec<PathBuf>,
}

/// A path made absolute, and where it really points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute, with `.` and `..` taken out (lexically: the path the model named).
    pub path: PathBuf,
    /// Whether the file it reaches — after following every symlink that exists — is inside
    /// one of the roots. A link inside the project pointing out of it is outside.
    pub inside: bool,
}

impl Roots {
    /// The roots `cwd` and `extra`, each absolute.
    pub fn new(cwd: impl Into<PathBuf>, extra: Vec<PathBuf>) -> Roots {
        Roots {
            cwd: cwd.into(),
            extra,
        }
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The working directory, then the additional directories.
    pub fn all(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.cwd.as_path()).chain(self.extra.iter().map(PathBuf::as_path))
    }

    /// Resolves `path` (absolute, or relative to the working directory). Reads the disk to
    /// follow symlinks; a path that does not exist yet is judged by its deepest existing
    /// ancestor.
    pub fn resolve(&self, path: &str) -> Result<Resolved, FsError> {
        if path.trim().is_empty() {
            return Err(FsError::InvalidPath {
                path: path.into(),
                reason: "the path is empty".into(),
            });
        }
        if path.contains('\0') {
            return Err(FsError::InvalidPath {
                path: path.into(),
                reason: "the path contains a NUL byte".into(),
            });
        }
        let given = Path::new(path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.cwd.join(given)
        };
        let path = normalise(&joined);
        let real = real_path(&path);
        let inside = self
            .all()
            .any(|root| real.starts_with(real_path(&normalise(root))));
        Ok(Resolved { path, inside })
    }
}

/// `path` without `.` and `..` components, lexically.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => {
                out.push(component.as_os_str());
            }
        }
    }
    out
}

/// Where `path` really is: its deepest existing ancestor with symlinks followed, then the
/// rest as named.
fn real_path(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut head = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(head) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalise(&out);
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                head = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_test_support::tree::write;

    #[test]
    fn relative_paths_resolve_against_the_cwd_and_dots_are_taken_out() {
        let roots = Roots::new("/nonexistent/p", vec![PathBuf::from("/nonexistent/q")]);
        let cases = [
            ("a.rs", "/nonexistent/p/a.rs", true),
            ("./src/../a.rs", "/nonexistent/p/a.rs", true),
            ("/nonexistent/q/b", "/nonexistent/q/b", true),
            ("../p2/x", "/nonexistent/p2/x", false),
            ("/etc/passwd", "/etc/passwd", false),
            ("../../../../..", "/", false),
        ];
        for (given, path, inside) in cases {
            let resolved = roots.resolve(given).unwrap();
            assert_eq!(resolved.path, Path::new(path), "{given}");
            assert_eq!(resolved.inside, inside, "{given}");
        }
    }

    #[test]
    fn empty_and_nul_paths_are_invalid() {
        let roots = Roots::new("/p", Vec::new());
        for bad in ["", "  ", "a\0b"] {
            let err = roots.resolve(bad).unwrap_err();
            assert_eq!(err.code(), "invalid_path", "{bad:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_roots_is_outside_and_one_within_is_inside() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let project = dir.join("project");
        let elsewhere = dir.join("elsewhere");
        write(project.join("src/lib.rs"), "");
        write(elsewhere.join("secret"), "");
        std::os::unix::fs::symlink(&elsewhere, project.join("out")).unwrap();
        std::os::unix::fs::symlink(project.join("src"), project.join("in")).unwrap();
        let roots = Roots::new(&project, Vec::new());
        assert!(!roots.resolve("out/secret").unwrap().inside);
        assert!(!roots.resolve("out/new-file").unwrap().inside);
        assert!(roots.resolve("in/lib.rs").unwrap().inside);
        assert!(roots.resolve("src/new/deeper.rs").unwrap().inside);
        // The lexical path is what the model named, not where the link leads.
        assert_eq!(
            roots.resolve("out/secret").unwrap().path,
            project.join("out/secret")
        );
    }
}
